"""Report -> Markdown (templates/report.md.j2). The `report` command extends this for tickets."""

from __future__ import annotations

import functools

import jinja2

from torchdoctor.render.terminal import fmt
from torchdoctor.report import Report
from torchdoctor.ticket import md_text


@functools.lru_cache(maxsize=1)
def env() -> jinja2.Environment:
    from torchdoctor.render.text import md_code, md_code_cell, no_mentions, templates
    from torchdoctor.ticket import md_text

    e = templates().overlay()
    e.filters["fmt"] = fmt
    # HTML-escaped (redaction markers such as <user> stay visible), one line, no @mention
    e.filters["md"] = lambda text: no_mentions(md_text(text))
    e.filters["code"] = md_code
    e.filters["code_cell"] = md_code_cell
    return e


def render(report: Report, explain: bool = False, **_: object) -> str:
    """The report as GitHub Markdown; ``explain`` adds the recommendations that lost to
    another (under the setting that won) and the rules skipped for unknown facts."""
    from torchdoctor.facts import Unavailable
    from torchdoctor.render.text import first_sentence
    from torchdoctor.render.terminal import summary_text
    from torchdoctor.render.text import md_code
    from torchdoctor.ticket import md_prose, summary_line, verdict

    findings = report.displayed_findings()
    fixes = []
    for f in findings:
        if f.fix and f.severity != "info":
            head, rest = first_sentence(f.fix)
            fixes.append((f.id, md_prose(head) + (" …" if rest else "")))
    # findings not listed are the notes that became rows of the settings table
    as_settings = len(report.findings) - len(findings)
    summary = summary_line(report).split(" — **")[0]  # the verdict is in the heading
    tally = md_text(summary_text(report, explain=True).replace("\n", "; "))
    skipped: list[tuple[str, list[str]]] = []
    if explain:
        groups: dict[str, list[str]] = {}
        listed = report.fact_skipped() + ([] if report.command == "check" else report.workload_skipped())
        for s in listed:
            groups.setdefault(s.reason, []).append(f"`{s.id}` ({md_code(s.needs)})")
        skipped = [(md_prose(k), v) for k, v in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]
    cpu = report.facts.cpu
    planned = (md_prose(cpu.unavailable) if report.facts.origin == "synthetic" and isinstance(cpu, Unavailable)
               else None)
    return env().get_template("check.md.j2").render(
        r=report, counts=report.counts(), findings=findings, fixes=fixes, summary=summary,
        verdict=verdict(report), tally=tally, explain=explain, skipped=skipped,
        as_settings=as_settings, planned=planned)
