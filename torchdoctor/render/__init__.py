"""Renderers: the one home of output. Pure functions of a Report, a diff result or rules to
text (a view's module names its own ``render``), with no file or registry access; only ``cli``
writes anything.

- ``terminal``, ``json``, ``markdown``: a Report (``check``, ``recommend``);
- ``ticket``: a Report as GitHub-issue Markdown (``report``), with ``collect_env`` (the facts
  in the layout of ``python -m torch.utils.collect_env``: the reverse of the importer);
- ``snippet``: the plan's statements arranged as a Python file;
- ``diff``: a DiffResult as terminal text, JSON or Markdown;
- ``rules``: the rule listing and a rule explained (``rules list`` / ``rules explain``);
- ``summary``: the verdict, status and summary lines every view shares;
- ``text``: the helpers they share (showing a value, Markdown escaping, reflowing a fix, the
  template environment), re-exported here for callers outside the package.

``render(report, fmt)`` picks a Report's renderer."""

from __future__ import annotations

from torchdoctor.render.text import (  # noqa: F401 - re-exported
    CODE,
    ZWSP,
    first_sentence,
    md_cell,
    md_code,
    md_code_cell,
    md_prose,
    md_text,
    no_mentions,
    reflow,
    show_value,
    templates,
)
from torchdoctor.render.text import compress_ints  # noqa: F401 - re-exported

FORMATS = ("terminal", "json", "markdown")


def render(report, fmt: str, **options) -> str:
    if fmt == "json":
        from torchdoctor.render.json import render as r
    elif fmt == "markdown":
        from torchdoctor.render.markdown import render as r
    elif fmt == "terminal":
        from torchdoctor.render.terminal import render as r
    elif fmt == "ticket":
        from torchdoctor.render.ticket import render as r
    else:  # pragma: no cover - click restricts the choice
        raise ValueError(fmt)
    return r(report, **options)
