"""Report -> Markdown (templates/report.md.j2). The `report` command extends this for tickets."""

from __future__ import annotations

import functools

import jinja2

from torchdoctor.render.summary import environment_line, recognised_messages, tally, verdict
from torchdoctor.render.text import first_sentence, md_code, md_code_cell, md_prose, md_text, templates
from torchdoctor.report import Report


@functools.lru_cache(maxsize=1)
def env() -> jinja2.Environment:
    e = templates().overlay()
    # HTML-escaped (redaction markers such as <user> stay visible), one line, no @mention
    e.filters["md"] = md_text
    e.filters["code"] = md_code
    e.filters["code_cell"] = md_code_cell
    return e


def render(report: Report, explain: bool = False, **_: object) -> str:
    """The report as GitHub Markdown; ``explain`` adds the recommendations that lost to
    another (under the setting that won) and the rules skipped for unknown facts."""
    from torchdoctor.facts import Unavailable

    findings = report.displayed_findings()
    fixes = []
    for f in findings:
        if f.fix and f.severity != "info":
            head, rest = first_sentence(f.fix)
            fixes.append((f.id, md_prose(head) + (" …" if rest else "")))
    # findings not listed are the notes that became rows of the settings table
    as_settings = len(report.findings) - len(findings)
    summary = environment_line(report.facts)  # the verdict is in the heading
    counts = md_text(tally(report, explain=True).replace("\n", "; "))
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
        verdict=verdict(report), planned_for=md_text(report.planned_for or ""), tally=counts, explain=explain, skipped=skipped,
        as_settings=as_settings, planned=planned,
        recognised=[md_text(line) for line in recognised_messages(report.facts)])
