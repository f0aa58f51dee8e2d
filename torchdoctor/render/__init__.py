"""Renderers: pure functions from a Report to text. Only cli.py writes anything.

``render(report, fmt)`` picks the renderer; the helpers they share live in
:mod:`torchdoctor.render.text` (re-exported here for callers outside the package)."""

from __future__ import annotations

from torchdoctor.render.text import (  # noqa: F401 - re-exported
    CODE,
    ZWSP,
    first_sentence,
    md_cell,
    md_code,
    md_code_cell,
    md_text,
    no_mentions,
    reflow,
    show_value,
    templates,
)

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
