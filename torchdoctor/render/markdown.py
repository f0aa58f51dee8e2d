"""Report -> Markdown (templates/report.md.j2). The `report` command extends this for tickets."""

from __future__ import annotations

import functools

import jinja2

from torchdoctor.render.terminal import fmt
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
    return env().get_template("check.md.j2").render(r=report, counts=report.counts())
