"""Report -> Markdown (templates/report.md.j2). The `report` command extends this for tickets."""

from __future__ import annotations

import functools

import jinja2

from torchdoctor.render.terminal import fmt
from torchdoctor.ticket import md_text
from torchdoctor.report import Report


@functools.lru_cache(maxsize=1)
def env() -> jinja2.Environment:
    from torchdoctor.render import templates
    from torchdoctor.ticket import md_code, md_text

    e = templates().overlay()
    e.filters["fmt"] = fmt
    e.filters["md"] = md_text  # HTML-escaped: redaction markers such as <user> stay visible
    e.filters["code"] = md_code
    return e


def render(report: Report, **_: object) -> str:
    from torchdoctor.render import first_sentence
    from torchdoctor.render.terminal import summary_text
    from torchdoctor.ticket import md_prose, summary_line, verdict

    findings = report.displayed_findings()
    fixes = []
    for f in findings:
        if f.fix and f.severity != "info":
            head, rest = first_sentence(f.fix)
            fixes.append((f.id, md_prose(head) + (" …" if rest else "")))
    summary = summary_line(report).split(" — **")[0]  # the verdict is in the heading
    tally = md_text(summary_text(report, explain=True).replace("\n", "; "))
    return env().get_template("check.md.j2").render(
        r=report, counts=report.counts(), findings=findings, fixes=fixes, summary=summary,
        verdict=verdict(report), tally=tally)
