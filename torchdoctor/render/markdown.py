"""Report -> Markdown (templates/report.md.j2). The `report` command extends this for tickets."""

from __future__ import annotations

import functools

import jinja2

from torchdoctor.render.terminal import fmt
from torchdoctor.report import Report


@functools.lru_cache(maxsize=1)
def env() -> jinja2.Environment:
    e = jinja2.Environment(
        loader=jinja2.PackageLoader("torchdoctor.render", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
    )
    e.filters["fmt"] = fmt
    from torchdoctor.ticket import md_code, md_text

    e.filters["md"] = md_text  # HTML-escaped: redaction markers such as <user> stay visible
    e.filters["code"] = md_code
    return e


def render(report: Report, **_: object) -> str:
    return env().get_template("check.md.j2").render(r=report, counts=report.counts())
