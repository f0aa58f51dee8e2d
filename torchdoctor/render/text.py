"""What every renderer shares: showing a value as text or Markdown (escaped, one line, no
@mention), reflowing a rule's fix, and the one sandboxed jinja2 environment of the templates.

Its own module, not the package's __init__: the renderers import it, and the package's
``render()`` imports the renderers (a cycle otherwise)."""

from __future__ import annotations

import functools
import re
from typing import Any


def html_escape(text: str, quote: bool = True) -> str:
    """``html.escape`` as the standard library writes it, without importing ``html`` (whose ``html.entities``
    table costs 1.4 ms of a triage)."""
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if quote:
        text = text.replace('"', "&quot;").replace("'", "&#x27;")
    return text


@functools.lru_cache(maxsize=1)
def templates():
    """The one jinja2 environment for every template (snippet, Markdown, ticket). Sandboxed
    although the templates are ours: the values they show come from hostile inputs (reports,
    facts files, rule messages), and the sandbox costs nothing at this size."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    return ImmutableSandboxedEnvironment(
        loader=jinja2.PackageLoader("torchdoctor.render", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,  # Markdown and Python, not HTML: values are escaped by filters
    )


def md_text(text: str) -> str:
    """Plain text inside Markdown: HTML-escaped (so a redaction mark such as ``<user>`` stays
    visible instead of becoming an unknown tag), on one line, mentions neutralised."""
    return no_mentions(html_escape(" ".join(str(text).split()), quote=False))


def md_cell(text: str) -> str:
    """:func:`md_text` inside a table cell (pipes escaped)."""
    return md_text(text).replace("|", "\\|")


# an @ that GitHub reads as the start of a mention: not after a letter, digit or _
_MENTION = re.compile(r"(?<![A-Za-z0-9_])@(?=[A-Za-z0-9])")
ZWSP = "\u200b"


def no_mentions(text: str) -> str:
    """``@user`` -> ``@\u200buser``: reads the same, but GitHub notifies no one (it links a
    mention only where a name character follows the ``@`` at once). Idempotent."""
    return _MENTION.sub("@" + ZWSP, text) if "@" in text else text


def md_code(text: str) -> str:
    """Inline code for any value: on one line, pipes escaped (a table cell keeps its place),
    mentions neutralised, fenced with one backtick more than the longest run in the value
    (so the value cannot close the span)."""
    text = no_mentions(" ".join(str(text).split()).replace("|", "\\|"))
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if longest else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def md_code_cell(code: str) -> str:
    """Code for a Markdown table cell: one line as inline code (:func:`md_code`); several lines
    as ``<code>`` with ``<br>`` between them and their indentation kept (GitHub renders both in a
    cell; a code span would join the lines and break the Python)."""

    lines = str(code).splitlines() or [""]
    if len(lines) == 1:
        return md_code(lines[0])
    out = []
    for line in lines:
        body = line.lstrip(" ")
        out.append("&nbsp;" * (len(line) - len(body)) + html_escape(no_mentions(body)).replace("|", "&#124;"))
    return "<code>" + "<br>".join(out) + "</code>"


def show_value(value: Any, ranges: bool = False) -> str:
    """A fact value as a person reads it: the one helper of every view (terminal, Markdown,
    ticket, diff). ``ranges``: a list of more than four integers as ranges (``0-63``: CPU
    affinity lists have hundreds of entries). A compared path present on one side only
    (``report.ABSENT``) is "(not present)"."""
    from torchdoctor.facts import Unavailable
    from torchdoctor.report import ABSENT

    if isinstance(value, Unavailable):
        return f"unknown ({value.unavailable})"
    if value is ABSENT:
        return "(not present)"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.1f}" if value.is_integer() else f"{value:g}"  # compute capability 8.0
    if isinstance(value, list):
        if ranges and len(value) > 4 and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return compress_ints(value)
        return ", ".join(str(v) for v in value) if value else "(empty)"
    if isinstance(value, dict):
        return "(empty)" if not value else ", ".join(f"{k}={v}" for k, v in value.items())
    return str(value)


def compress_ints(values: list) -> str:
    """``[0, 1, 2, 3, 8]`` -> ``0-3,8``."""
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return ", ".join(str(v) for v in values)
    out = []
    nums = sorted(set(values))
    start = prev = nums[0]
    for n in nums[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ",".join(out)


def md_prose(text: str) -> str:
    """A rule's Markdown prose (its fix): `code spans` kept as they are, ``<``/``>``/``&``
    outside them escaped so GitHub shows them rather than eating them as HTML."""
    parts = str(text).split("`")
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = no_mentions(html_escape(parts[i], quote=False))
    if len(parts) % 2 == 0:  # an unbalanced backtick: leave the tail as text
        parts[-2:] = [parts[-2] + "`" + no_mentions(html_escape(parts[-1], quote=False))]
    return "`".join(parts)


def namespace(facts: Any, name: str) -> Any:
    """A namespace of the facts (``facts.torch``), or None when it is unknown as a whole."""
    from torchdoctor.facts import Unavailable

    value = getattr(facts, name)
    return None if isinstance(value, Unavailable) else value


def known(value: Any) -> bool:
    """A value that is neither unavailable nor None."""
    from torchdoctor.facts import Unavailable

    return value is not None and not isinstance(value, Unavailable)


def reflow(text: str) -> list[str]:
    """A rule's hard-wrapped ``fix`` text as paragraphs and list items, one string each
    (GitHub issues turn single newlines into line breaks; terminals wrap by themselves).
    An indented code block (4 spaces, after a blank line) stays one block of its lines,
    dedented and prefixed with ``CODE``."""
    import re

    blocks: list[str] = []
    joinable = in_code = False
    for raw in str(text).strip("\n").splitlines():
        line = raw.strip()
        if not line:
            joinable = False
            continue
        if raw.startswith("    ") and (in_code or not joinable):
            if in_code:
                blocks[-1] += "\n" + raw[4:].rstrip()
            else:
                blocks.append(CODE + raw[4:].rstrip())
            in_code, joinable = True, False
            continue
        in_code = False
        if re.match(r"^([-*]|\d+[.)])\s", line) or not joinable or not blocks:
            blocks.append(line)
        else:
            blocks[-1] += " " + line
        joinable = True
    return blocks


CODE = "\x00code\x00"
"""Prefix reflow() gives an indented code block."""


_ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.")


def first_sentence(text: str) -> tuple[str, bool]:
    """The first sentence of a rule's fix (periods inside `code` and after e.g./i.e. do not
    end it), and whether anything follows it."""
    import re

    blocks = reflow(text)
    if not blocks:
        return "", False
    if blocks[0].startswith(CODE):
        return blocks[0][len(CODE):].splitlines()[0], True
    first = re.sub(r"^([-*]|\d+[.)])\s+", "", blocks[0])  # a list's first item
    in_code = False
    for i, ch in enumerate(first):
        if ch == "`":
            in_code = not in_code
        elif ch == "." and not in_code and (i + 1 == len(first) or first[i + 1] == " "):
            if any(first[: i + 1].endswith(a) for a in _ABBREVIATIONS):
                continue
            head = first[: i + 1]
            return head, len(head) < len(first) or len(blocks) > 1
    return first, len(blocks) > 1
