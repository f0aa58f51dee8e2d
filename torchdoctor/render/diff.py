"""A comparison of two environments (:class:`~torchdoctor.report.DiffResult`) as terminal
text, JSON or Markdown: pure functions of the result (``diff.py`` computes it)."""

from __future__ import annotations

import io
import json
import re
from typing import Any, Optional

from torchdoctor.facts import Unavailable
from torchdoctor.render.text import md_cell, md_code, show_value
from torchdoctor.report import ABSENT, Difference, DiffResult


show = show_value
"""A compared value as a person reads it (the one helper of render/text.py; ABSENT is
"(not present)")."""


GROUP_MIN = 4
"""Unknown-on-one-side rows of one pattern are shown as one row from this many on."""


def grouped_unknown(rows: list[Difference]) -> list[tuple[str, str, str]]:
    """(fact, left, right) display rows for facts known on one side only: a pattern that
    covers GROUP_MIN or more paths (every torch.settings key) becomes one row."""
    by_pattern: dict[str, list[Difference]] = {}
    for d in rows:
        by_pattern.setdefault(d.pattern or d.path, []).append(d)
    out: list[tuple[str, str, str]] = []
    done: set[str] = set()
    for d in rows:
        key = d.pattern or d.path
        group = by_pattern[key]
        if len(group) < GROUP_MIN:
            out.append((d.path, show(d.left), show(d.right)))
            continue
        if key in done:
            continue
        done.add(key)
        out.append((f"{key} ({len(group)} facts)", _side(group, "left"), _side(group, "right")))
    return out


def _side(group: list[Difference], side: str) -> str:
    values = [getattr(d, side) for d in group]
    reasons = {v.unavailable for v in values if isinstance(v, Unavailable)}
    if len(reasons) == len(values) or (reasons and all(isinstance(v, Unavailable) for v in values)):
        return f"unknown ({'; '.join(sorted(reasons))})"
    n = sum(1 for v in values if not isinstance(v, Unavailable))
    return f"{n} known value(s)" + (f", {len(values) - n} unknown" if n < len(values) else "")


def to_json_value(value: Any) -> Any:
    if value is ABSENT:
        return {"absent": True}
    if isinstance(value, Unavailable):
        return {"unavailable": value.unavailable}
    return value


def _entry(d: Difference) -> dict[str, Any]:
    out = {"path": d.path, "left": to_json_value(d.left), "right": to_json_value(d.right)}
    if d.why:
        out["why"] = d.why
    return out


def headline(result: DiffResult) -> str:
    n = len(result.relevant)
    if n:
        text = f"{n} difference(s) that matter"
    else:
        text = "no difference that matters"
    extra = []
    if result.unknown:
        extra.append(f"{len(result.unknown)} relevant fact(s) known on one side only")
    if result.noise:
        extra.append(f"{len(result.noise)} other difference(s)")
    return text + (f" ({'; '.join(extra)})" if extra else "")


def render_json(result: DiffResult) -> str:
    data = {
        "left": {"name": result.left_name, "origin": result.left_origin},
        "right": {"name": result.right_name, "origin": result.right_origin},
        "relevant": [_entry(d) for d in result.relevant],
        "unknown": [_entry(d) for d in result.unknown],
        "noise": [_entry(d) for d in result.noise],
        "unknown_noise": [_entry(d) for d in result.unknown_noise],
        "identical": result.identical,
        "summary": headline(result),
        "exit_code": result.exit_code,
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def render_markdown(result: DiffResult, show_all: bool = False) -> str:
    """GitHub Markdown for a ticket. Paths hold keys from the facts (an environment variable's
    name, a package's) and values hold any text: both are escaped so that no ``|`` adds a
    column, no backtick closes a code span and no ``@name`` notifies anyone."""
    a, b = md_cell(result.left_name), md_cell(result.right_name)
    lines = [f"## torchdoctor diff: {a} ↔ {b}", "", f"**{headline(result)}**", ""]

    def table(rows: list[Difference], with_why: bool) -> None:
        head = f"| fact | {a} | {b} |" + (" why |" if with_why else "")
        lines.extend([head, "|---|---|---|" + ("---|" if with_why else "")])
        for d in rows:
            row = f"| {md_code(d.path)} | {md_cell(show(d.left))} | {md_cell(show(d.right))} |"
            lines.append(row + (f" {md_cell(d.why)} |" if with_why else ""))
        lines.append("")

    if result.relevant:
        lines += ["### Differences that matter", ""]
        table(result.relevant, True)
    if result.unknown:
        lines += ["### Known on one side only (not compared)", "",
                  f"| fact | {a} | {b} |", "|---|---|---|"]
        rows = ([(d.path, show(d.left), show(d.right)) for d in result.unknown] if show_all
                else grouped_unknown(result.unknown))
        for fact, left, right in rows:
            lines.append(f"| {md_code(fact)} | {md_cell(left)} | {md_cell(right)} |")
        lines.append("")
    if show_all:
        if result.noise:
            lines += ["### Other differences", ""]
            table(result.noise, False)
        if result.unknown_noise:
            lines += ["### Other facts known on one side only", ""]
            table(result.unknown_noise, False)
    else:
        hidden = len(result.noise) + len(result.unknown_noise)
        if hidden:
            lines += [f"{len(result.noise)} other difference(s) and {len(result.unknown_noise)} other "
                      f"fact(s) known on one side only are not shown (`--all` lists them).", ""]
    lines.append(f"{result.identical} fact(s) are the same on both sides.")
    return "\n".join(lines) + "\n"


_PART = re.compile(r"\[?[^.\[]+\.?|.")
"""One part of a fact name with its trailing dot: ``torch.``, ``versions``, ``["numpy"]``,
``["torch.`` ``autograd.`` ``set_detect_anomaly"]`` (a dotted key breaks at its dots too)."""


def at_parts(name: str, width: int) -> str:
    """A dotted fact name broken into lines of at most ``width`` between its parts (after a
    ``.``, before a ``[``); one part longer than the width stays whole (the table folds it)."""
    parts = _PART.findall(name)
    lines, line = [], ""
    for part in parts:
        if line and len(line) + len(part) > width:
            lines.append(line)
            line = ""
        line += part
    return "\n".join(lines + [line])


def render_terminal(result: DiffResult, show_all: bool = False, color: bool = False,
                    width: int = 100) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="standard" if color else None,
                      force_terminal=color, no_color=not color, highlight=False, emoji=False)
    a, b = result.left_name, result.right_name
    style = "bold red" if result.relevant else "bold green"
    console.print(Text.assemble(("torchdoctor diff: ", "bold"), a, " ↔ ", b))
    console.print(Text(headline(result), style=style))

    # a fact name breaks only between its parts (after a "." or before a "["), never mid-word:
    # the column is as wide as the longest name, up to 2/5 of the width but as wide as the
    # longest part up to half of it (narrower than that, a longer part folds), and never wraps
    # by itself
    facts = [d.path for d in result.relevant + result.unknown
             + (result.noise + result.unknown_noise if show_all else [])]
    longest_part = max((len(p) for f in facts for p in _PART.findall(f)), default=8)
    fact_w = max(8, min(max(map(len, facts), default=8),
                        max(width * 2 // 5, min(longest_part, width // 2))))

    def fact_column(t: Any, style: Optional[str] = "bold") -> None:
        t.add_column("fact", style=style, no_wrap=True, min_width=fact_w, max_width=fact_w,
                     overflow="fold")

    def table(title: str, rows: list[Difference], with_why: bool, dim: bool = False) -> None:
        t = Table(title=title, title_justify="left", expand=False, style="dim" if dim else None)
        fact_column(t)
        t.add_column(escape(a), overflow="fold")
        t.add_column(escape(b), overflow="fold")
        if with_why:
            t.add_column("why", style="dim", overflow="fold")
        for d in rows:
            cells = [escape(at_parts(d.path, fact_w)), escape(show(d.left)), escape(show(d.right))]
            t.add_row(*(cells + [escape(d.why)] if with_why else cells))
        console.print(t)

    if result.relevant:
        table("Differences that matter", result.relevant, True)
    if result.unknown:
        t = Table(title="Known on one side only (not compared)", title_justify="left", style="dim")
        fact_column(t, style=None)
        for col in (a, b):
            t.add_column(escape(col), overflow="fold")
        rows = ([(d.path, show(d.left), show(d.right)) for d in result.unknown] if show_all
                else grouped_unknown(result.unknown))
        for fact, left, right in rows:
            t.add_row(escape(at_parts(fact, fact_w)), escape(left), escape(right))
        console.print(t)
    if show_all:
        if result.noise:
            table("Other differences", result.noise, False, dim=True)
        if result.unknown_noise:
            table("Other facts known on one side only", result.unknown_noise, False, dim=True)
    else:
        hidden = len(result.noise) + len(result.unknown_noise)
        if hidden:
            console.print(Text(f"{len(result.noise)} other difference(s) and {len(result.unknown_noise)} "
                               "other fact(s) known on one side only not shown (--all lists them).",
                               style="dim"))
    console.print(Text(f"{result.identical} fact(s) are the same on both sides.", style="dim"))
    return buf.getvalue()


def render_diff(result: DiffResult, fmt: str = "terminal", show_all: bool = False,
                color: bool = False, width: int = 100) -> str:
    if fmt == "json":
        return render_json(result)
    if fmt == "markdown":
        return render_markdown(result, show_all)
    return render_terminal(result, show_all, color=color, width=width)


render = render_diff
