"""The tools of `torchdoctor mcp`, as plain functions: ``call(name, arguments)`` checks the
arguments against the tool's input schema (schemas.py), runs the same pipeline as the CLI
command, and returns the tool's result (a dict following its output schema). Every argument is
hostile: sizes are bounded, types checked, nothing is evaluated, and no path an argument names
is opened. A bad argument or input raises :class:`ToolInputError` with one line; the server
turns it (and any other exception) into an error result and keeps serving."""

from __future__ import annotations

import json
from typing import Any, Callable, Optional

from torchdoctor.mcp_server.schemas import MAX_TEXT, input_schemas

DESCRIPTIONS = {
    "check": (
        "Diagnose a PyTorch environment deterministically (torchdoctor's YAML rules, no guessing): "
        "this machine (probed in a child process, bounded by `timeout`), recorded facts (`facts`: the "
        "JSON of `torchdoctor probe`), or pasted text (`report`: collect_env output or a whole issue "
        "body). Returns the findings with stable rule ids and fixes, the rules skipped for unknown facts, "
        "and the facts read. Redacted (user/host names, tokens)."),
    "recommend": (
        "Plan PyTorch settings for a workload (a `task` preset and/or workload fields) on this machine, "
        "on recorded facts, on a pasted collect_env, or on a named GPU (`gpu`: \"A100\", \"8x H100\", "
        "\"cpu\") for a torch version. Returns each setting with the rule and reason that chose it, and "
        "the Python setup snippet that applies the plan."),
    "lint": (
        "Lint PyTorch code given as text (a .py file or a .ipynb notebook's JSON): settings that do not "
        "exist (torch.backends typos), replaced objects, pitfalls, deprecated APIs for the target torch. "
        "Returns the findings `torchdoctor lint --format json` lists, with the fix each would get; "
        "nothing is read from disk or written."),
    "explain_rule": (
        "Explain a torchdoctor rule by its id (as a finding of check, recommend, lint or triage names it): "
        "its summary, why it matters, the fix, and its references."),
    "triage": (
        "Triage a GitHub issue about a PyTorch environment: its body (text) or the issue/event JSON. "
        "Returns the one-line verdict, the findings, what the paste did not say (and the command that "
        "would), junk named (template text, empty or cut environment, screenshots), the Markdown comment "
        "a bot would post, and labels from the given mapping only. Nothing is posted."),
}

TITLES = {"check": "Check a PyTorch environment", "recommend": "Recommend PyTorch settings",
          "lint": "Lint PyTorch code", "explain_rule": "Explain a torchdoctor rule",
          "triage": "Triage a PyTorch issue"}

MAX_ERROR = 300
"""Characters of an error message (one line)."""


class ToolInputError(Exception):
    """A bad argument or input: ``str()`` is one line naming what and where."""


# ----------------------------------------------------------------------------------------
# arguments
# ----------------------------------------------------------------------------------------

_JSON_TYPES = {"string": str, "object": dict, "array": list, "boolean": bool}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    for name, kind in _JSON_TYPES.items():
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _why(error: Any) -> str:
    """One line for a jsonschema error, in words that never echo the rejected value (it may be
    megabytes, or a secret)."""
    from torchdoctor.safeio import clip

    schema, value, kind = error.schema, error.instance, error.validator
    if kind == "type":
        want = schema.get("type")
        want = " or ".join(want) if isinstance(want, list) else want
        return f"expected {want}, got {_json_type(value)}"
    if kind == "maxLength":
        return f"too long ({len(value)} characters; at most {schema['maxLength']})"
    if kind == "minLength":
        return "empty"
    if kind == "maxItems":
        return f"too many items ({len(value)}; at most {schema['maxItems']})"
    if kind == "enum":
        choices = ", ".join("null" if c is None else str(c) for c in schema["enum"])
        return f"{clip(value, 40)} is not one of {choices}"
    if kind in ("minimum", "maximum"):
        return f"{clip(value, 40)} is out of range ({schema.get('minimum')} to {schema.get('maximum')})"
    if kind == "additionalProperties":
        extra = sorted(set(value) - set(schema.get("properties", {})))
        return (f"unknown argument(s) {', '.join(clip(k, 40) for k in extra[:5])} "
                f"(known: {', '.join(schema.get('properties', {}))})")
    if kind == "required":
        missing = [k for k in schema.get("required", []) if k not in value]
        return f"missing required argument(s) {', '.join(missing)}"
    return f"fails the {kind} constraint of the input schema"


def check_arguments(tool: str, arguments: Any) -> dict:
    """The arguments, checked against the tool's input schema; raises :class:`ToolInputError`."""
    from jsonschema import Draft202012Validator

    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise ToolInputError(f"{tool}: arguments must be an object, got {_json_type(arguments)}")
    validator = Draft202012Validator(input_schemas()[tool])
    errors = sorted(validator.iter_errors(arguments), key=lambda e: (len(e.path), list(map(str, e.path))))
    if errors:
        first = errors[0]
        where = "/".join(str(p) for p in first.path)
        raise ToolInputError(f"{tool}: {'argument ' + where + ': ' if where else ''}{_why(first)}")
    return arguments


def _text_or_json(value: Any, what: str) -> str:
    """An object argument as JSON text, or a text argument, at most MAX_TEXT characters."""
    if isinstance(value, (dict, list)):
        try:
            value = json.dumps(value)
        except (TypeError, ValueError, RecursionError):
            raise ToolInputError(f"{what}: not JSON that can be read back (nested too deeply?)") from None
    if len(value) > MAX_TEXT:
        raise ToolInputError(f"{what}: too long ({len(value)} characters; at most {MAX_TEXT})")
    return value


# ----------------------------------------------------------------------------------------
# the tools
# ----------------------------------------------------------------------------------------


def _facts(args: dict, tool: str):
    """(facts, source) from ``facts`` or ``report``, or from probing this machine."""
    from torchdoctor.importers import ReportError, load_report

    given = [k for k in ("facts", "report") if k in args]
    if len(given) > 1:
        raise ToolInputError(f"{tool}: give facts or report, not both")
    if given:
        name = given[0]
        text = _text_or_json(args[name], f"{tool}: argument {name}")
        try:
            facts = load_report(text, f"argument {name}")
        except ReportError as exc:
            raise ToolInputError(f"{tool}: {exc}") from None
        if name == "facts" and facts.origin != "json":
            raise ToolInputError(f"{tool}: argument facts: not torchdoctor JSON (`torchdoctor probe` writes it); "
                                 "pass pasted text as report")
        return facts, name
    from torchdoctor.api import probe
    from torchdoctor.mcp_server.schemas import DEFAULT_TIMEOUT

    return probe(timeout=float(args.get("timeout", DEFAULT_TIMEOUT))), "machine"


def _worst(report) -> Optional[str]:
    from torchdoctor.report import SEVERITY_RANK

    shown = [f.severity for f in report.findings]
    return min(shown, key=SEVERITY_RANK.__getitem__) if shown else None


def _report_json(report) -> dict:
    return json.loads(report.model_dump_json(exclude_none=False))


def check(args: dict) -> dict:
    from torchdoctor.engine import evaluate
    from torchdoctor.redact import redact_report
    from torchdoctor.render.summary import status_line
    from torchdoctor.rules import load_rules

    facts, source = _facts(args, "check")
    report = redact_report(evaluate(load_rules([]), facts, None, command="check", ignore=args.get("ignore", ())))
    return {"source": source, "summary": status_line(report), "worst": _worst(report),
            "report": _report_json(report)}


_WORKLOAD_ARGS = ("input_shapes", "precision", "model_family", "mode", "distributed", "reproducibility",
                  "compile", "dataloader_workers", "local_world_size", "seed")


def recommend(args: dict) -> dict:
    from torchdoctor.api import plan_report
    from torchdoctor.redact import redact_report
    from torchdoctor.render.summary import status_line
    from torchdoctor.rules import load_rules
    from torchdoctor.synthetic import check_torch_version, facts_for_gpu
    from torchdoctor.workload import build_workload

    torch_version = args.get("torch_version")
    if torch_version is not None:
        check_torch_version(torch_version, known_only=True)
    workload = build_workload(task=args.get("task"), overrides={k: args[k] for k in _WORKLOAD_ARGS if k in args},
                              source="recommend")
    if "gpu" in args:
        if "facts" in args or "report" in args:
            raise ToolInputError("recommend: gpu plans for a machine you are not on; do not combine it "
                                 "with facts or report")
        facts, source = facts_for_gpu(args["gpu"], torch_version), "gpu"
    else:
        facts, source = _facts(args, "recommend")
    report = plan_report(load_rules([]), facts, workload, torch_version=torch_version,
                         ignore=args.get("ignore", ()))
    report = redact_report(report)
    return {"source": source, "summary": status_line(report), "worst": _worst(report),
            "torch_version": report.torch_version, "snippet": report.snippet or "",
            "report": _report_json(report)}


def lint(args: dict) -> dict:
    from torchdoctor.mcp_server.lint_text import lint_text
    from torchdoctor.sanitize import one_line

    filename = one_line(args.get("filename") or "") or "<source>"  # shown in findings: one clean line
    return lint_text(args["source"], filename, torch_version=args.get("torch_version"),
                     select=args.get("select", ()), ignore=args.get("ignore", ()))


def explain_rule(args: dict) -> dict:
    import difflib

    from torchdoctor.lint.knowledge import explain_text, load as load_lint
    from torchdoctor.render.rules import explain
    from torchdoctor.rules import load_rules
    from torchdoctor.safeio import clip

    rule_id = args["rule_id"]
    loaded = {r.id: r for r in load_rules([])}
    if rule_id in loaded:
        r = loaded[rule_id]
        return {"id": r.id, "source": "environment", "severity": r.severity, "category": r.category,
                "tags": list(r.tags), "summary": r.summary, "why": r.why, "fix": r.fix,
                "references": list(r.references), "markdown": explain(r)}
    lint_rule = load_lint().rule(rule_id)
    if lint_rule:
        return {"id": lint_rule.id, "source": "lint", "severity": lint_rule.severity, "category": lint_rule.kind,
                "tags": list(lint_rule.all_tags), "summary": lint_rule.summary, "why": lint_rule.why,
                "fix": lint_rule.fix or "", "references": list(lint_rule.references),
                "markdown": explain_text(lint_rule)}
    known = list(loaded) + [r.id for r in load_lint().rules]
    close = difflib.get_close_matches(rule_id, known, n=3)
    raise ToolInputError(f"explain_rule: unknown rule {clip(rule_id, 80)}"
                         + (f" (did you mean {', '.join(close)}?)" if close else ""))


def triage(args: dict) -> dict:
    try:
        from torchdoctor.triage import triage_issue
    except ImportError:
        raise ToolInputError("triage: this torchdoctor has no triage package (torchdoctor.triage)") from None
    issue = args["issue"]
    if isinstance(issue, str):
        if len(issue) > MAX_TEXT:
            raise ToolInputError(f"triage: argument issue: too long ({len(issue)} characters; at most {MAX_TEXT})")
    else:
        _text_or_json(issue, "triage: argument issue")
    labels = args.get("labels")
    if labels is not None:
        _text_or_json(labels, "triage: argument labels")
    return triage_issue(issue, labels=labels, always_comment=bool(args.get("always_comment", False)))


TOOLS: dict[str, Callable[[dict], dict]] = {
    "check": check, "recommend": recommend, "lint": lint, "explain_rule": explain_rule, "triage": triage,
}
READ_ONLY = {"check", "recommend", "lint", "explain_rule", "triage"}
"""Every tool only reads: none writes a file, posts, or changes a setting."""


def call(name: str, arguments: Any) -> dict:
    """Run tool ``name``; raises :class:`ToolInputError` (one line) for bad input or a user
    error of the pipeline (unknown task, bad version, unreadable report)."""
    from torchdoctor.errors import UserError

    if name not in TOOLS:
        raise ToolInputError(f"unknown tool '{_clip(name)}' (tools: {', '.join(TOOLS)})")
    args = check_arguments(name, arguments)
    try:
        return TOOLS[name](args)
    except UserError as exc:
        raise ToolInputError(f"{name}: {_clip(str(exc))}") from None


def _clip(text: str) -> str:
    from torchdoctor.sanitize import one_line

    text = one_line(" ".join(str(text).splitlines()))
    return text if len(text) <= MAX_ERROR else text[:MAX_ERROR - 3] + "..."


def error_line(exc: BaseException) -> str:
    """The one line an error result carries."""
    if isinstance(exc, ToolInputError):
        return _clip(str(exc))
    return _clip(f"internal error: {type(exc).__name__}: {exc} (the server log on stderr has the traceback)")
