"""One issue in, the triage result out (:func:`triage_issue`): read the body with the paste importer
(``check --from-report``'s reader), evaluate the rules, redact, name the junk and what the body does not say, map
the findings to the repository's labels, and render the comment. A pure function: no network, no file written."""

from __future__ import annotations

from typing import Any, Optional, Sequence

from torchdoctor.triage.issue import Issue, parse_issue
from torchdoctor.triage.junk import data, find_junk

SEVERITY_ORDER = {"error": 0, "warning": 1, "info": 2}
KNOWN_MESSAGE_RULES = ("known-message-error", "known-message-warning", "known-message-info")
"""The for_each rules that judge Facts.paste.messages: shown one item per message, from the message itself (so
they are not evaluated: their findings would say the same, and rendering their messages costs a template engine)."""
MAX_VALUE_CHARS = 120
"""Characters of one fact value shown in the comment's details."""


def _fact(facts: Any, path: str) -> tuple[bool, Any]:
    """(known, value) of a dotted fact path; a namespace or field that is Unavailable is unknown."""
    from torchdoctor.facts import Unavailable

    value = facts
    for part in path.split("."):
        if isinstance(value, Unavailable) or value is None:
            return False, None
        value = getattr(value, part, Unavailable(unavailable="no such fact"))
    return not isinstance(value, Unavailable), value


def _redacted(text: str, redact: bool) -> str:
    """A value read from the body itself (a field's heading), redacted as the facts are."""
    if not redact:
        return text
    from torchdoctor.redact import redact_text

    return redact_text(text)


def _findings(report: Any) -> list[dict]:
    out = []
    for m in (report.facts.paste.messages if report.facts.paste else []):
        out.append({"id": f"known-message-{m.severity}", "message_id": m.id, "severity": m.severity,
                    "category": m.category, "title": m.meaning, "fix": m.fix, "lines": list(m.lines[:5]),
                    "references": list(m.references[:3])})
    for f in report.findings:
        if f.id in KNOWN_MESSAGE_RULES or f.category == "probe":
            continue
        out.append({"id": f.id, "severity": f.severity, "category": f.category, "title": f.message,
                    "fix": f.fix, "references": list(f.references[:3])})
    out.sort(key=lambda f: SEVERITY_ORDER.get(f["severity"], 3))
    return out


def evaluate_body(body: str, *, rules_dirs: Sequence[str] = (), redact: bool = True) -> Optional[Any]:
    """The redacted Report of a body read as a pasted report; None when it is not text at all."""
    from torchdoctor.engine import evaluate
    from torchdoctor.importers import ReportError, load_report
    from torchdoctor.rules import load_rules

    if not body.strip():
        return None
    try:
        facts = load_report(body, "issue body")
    except ReportError:
        return None
    report = evaluate(load_rules(list(rules_dirs), examples=False), facts, None, command="check",
                      ignore=KNOWN_MESSAGE_RULES)
    if redact:
        from torchdoctor.redact import redact_report

        report = redact_report(report)
    return report


def triage_issue(issue: Any, *, labels: Optional[dict] = None, always_comment: bool = False,
                 rules_dirs: Sequence[str] = (), redact: bool = True) -> dict:
    """The triage of one issue: ``issue`` is a body (str), an issue JSON or an Actions event (dict); ``labels``
    an already-loaded label mapping (:func:`torchdoctor.triage.labels.load_mapping`'s result, or the plain
    dict of a mapping file, which is checked here) or None for no labels. JSON-serialisable; see
    docs/schemas/triage.schema.json."""
    from torchdoctor.triage.comment import MARKER, render_comment, verdict_line
    from torchdoctor.triage.labels import check_mapping, labels_for

    parsed: Issue = issue if isinstance(issue, Issue) else parse_issue(issue)
    mapping = check_mapping(labels, "labels") if labels is not None else None
    report = evaluate_body(parsed.body, rules_dirs=rules_dirs, redact=redact)
    ask = data()["ask"]
    read_as = None
    findings: list[dict] = []
    missing: list[dict] = []
    facts_read: list[dict] = []
    notes: list[str] = []
    if report is not None:
        facts = report.facts
        read_as = facts.paste.read_as if facts.paste else None
        findings = _findings(report)
        notes = [f.message for f in report.findings if f.category == "probe"][:5]
        for item in ask["facts"]:
            known, value = _fact(facts, item["path"])
            if known:
                shown = "none" if value is None else str(value)
                facts_read.append({"path": item["path"], "words": item["words"], "value": shown[:MAX_VALUE_CHARS],
                                   "where": str(facts.sources.get(item["path"], "collect_env" if read_as == "collect_env"
                                                                  else ""))[:MAX_VALUE_CHARS]})
            else:
                missing.append({"path": item["path"], "words": item["words"]})
        read = bool(facts.sources or (facts.paste and facts.paste.messages) or read_as == "collect_env")
    else:
        read = False
        missing = [{"path": i["path"], "words": i["words"]} for i in ask["facts"]]
    junk = find_junk(parsed.body, env_read=bool(facts_read), collect_env=read_as == "collect_env")
    from torchdoctor.triage.projects import choose_command

    command = choose_command(mapping, parsed.repository, missing)  # mapping > the project's own > ask.command
    result: dict = {
        "verdict": "",
        "comment": "",
        "labels": [],
        "findings": findings,
        "read": read,
        "read_as": read_as,
        "junk": [j.kind for j in junk],
        "junk_details": [{"kind": j.kind, "what": _redacted(j.what, redact), "says": _redacted(j.says, redact)}
                         for j in junk],
        "missing": missing,
        "facts_read": facts_read,
        **command,  # command, command_source, command_fallback
        "notes": notes,
        "issue": {"number": parsed.number, "repository": parsed.repository, "action": parsed.action,
                  "cut": parsed.cut, "size": parsed.size, "pull_request": parsed.pull_request},
        "marker": MARKER,
    }
    result["labels"] = labels_for(result, mapping) if mapping is not None else []
    result["verdict"] = verdict_line(result)
    says = any(f["severity"] in ("error", "warning") for f in findings) or bool(junk)
    result["says_something"] = says
    if says or always_comment:
        result["comment"] = render_comment(result)
    return result
