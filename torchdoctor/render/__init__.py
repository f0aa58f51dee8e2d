"""Renderers: pure functions from a Report to text. Only cli.py writes anything."""

from __future__ import annotations

import functools
from typing import Any

FORMATS = ("terminal", "json", "markdown")


@functools.lru_cache(maxsize=1)
def templates():
    """The one jinja2 environment for every template (snippet, Markdown, ticket)."""
    import jinja2

    return jinja2.Environment(
        loader=jinja2.PackageLoader("torchdoctor.render", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # Markdown and Python, not HTML: values are escaped by filters
    )


def show_value(value: Any) -> str:
    """A fact value as a person reads it (shared by terminal, ticket and diff)."""
    from torchdoctor.facts import Unavailable

    if isinstance(value, Unavailable):
        return f"unknown ({value.unavailable})"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.1f}" if value.is_integer() else f"{value:g}"  # compute capability 8.0
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) if value else "(empty)"
    if isinstance(value, dict):
        return "(empty)" if not value else ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def render(report, fmt: str, **options) -> str:
    if fmt == "json":
        from torchdoctor.render.json import render as r
    elif fmt == "markdown":
        from torchdoctor.render.markdown import render as r
    elif fmt == "terminal":
        from torchdoctor.render.terminal import render as r
    else:  # pragma: no cover - click restricts the choice
        raise ValueError(fmt)
    return r(report, **options)
