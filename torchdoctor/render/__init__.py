"""Renderers: pure functions from a Report to text. Only cli.py writes anything."""

from __future__ import annotations

FORMATS = ("terminal", "json", "markdown")


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
