"""Junk in an issue body, named: the template's instructions pasted instead of the output, an empty environment
field, a screenshot instead of text, a cut collect_env paste. The wordings are data (rules/data/triage.yaml); this
module is the mechanism. Every scan is linear: squeezed substring searches, and one line-anchored heading regex with
bounded repetitions, on a body already cut to MAX_BODY_CHARS."""

from __future__ import annotations

import functools
import re
from typing import NamedTuple, Optional

DATA_FILE = "triage"
MAX_WHAT_CHARS = 60
MAX_EMPTY_CHARS = 40
"""An environment field shorter than this (squeezed) from which no fact was read states nothing."""
"""Characters of a heading echoed in a junk line."""

_HEADING = re.compile(r"^[ ]{0,3}(?:#{1,6}[ \t]{1,8}(?P<h>[^\n]{1,200}?)[ \t#]{0,20}|\*\*(?P<b>[^*\n]{1,200})\*\*:?[ \t]{0,8})$")
_WORD = re.compile(r"[^0-9a-z]+")
_TAGS = re.compile(r"<summary>[^\n]{0,300}?</summary>|</?details>|<!--[^\n]{0,2000}?-->|^[ \t]{0,8}(?:```|~~~)[^\n]{0,40}$",
                   re.IGNORECASE | re.MULTILINE)


class Junk(NamedTuple):
    kind: str
    """template | empty | screenshot | cut"""
    what: str
    """The field's heading, the template's id or the end marker (bounded, from the body or the data file)."""
    says: str
    """The comment's sentence (rules/data/triage.yaml ``says``, with {what} filled)."""


@functools.lru_cache(maxsize=2)
def data(directory: Optional[str] = None) -> dict:
    from torchdoctor import tables

    return tables.load(DATA_FILE, directory)


def squeeze(text: str) -> str:
    return "".join(text.lower().split())


def _label(text: str) -> str:
    return _WORD.sub("", text.lower())


def environment_field(body: str, directory: Optional[str] = None) -> Optional[tuple[str, str]]:
    """(heading, text) of the first environment field of an issue form's rendered body, or None."""
    names = {_label(n) for group in data(directory)["environment_headings"] for n in group["names"]}
    lines = body.splitlines()
    for i, line in enumerate(lines):
        m = _HEADING.match(line[:400])
        if not m or _label(m.group("h") or m.group("b") or "") not in names:
            continue
        heading = " ".join((m.group("h") or m.group("b")).split())[:MAX_WHAT_CHARS]
        rest = []
        for nxt in lines[i + 1:]:
            if _HEADING.match(nxt[:400]) and nxt.lstrip().startswith("#"):
                break
            rest.append(nxt)
        return heading, "\n".join(rest)
    return None


def find_junk(body: str, *, env_read: bool, collect_env: bool, directory: Optional[str] = None) -> list[Junk]:
    """The junk of ``body``. ``env_read``: the importer read environment facts from it; ``collect_env``: it read
    them as a collect_env report. Template text and screenshots are junk only where no environment was read."""
    d = data(directory)
    says = d["says"]
    out: list[Junk] = []
    flat = squeeze(body)
    field = environment_field(body, directory)
    if not env_read:
        for t in d["templates"]:
            if squeeze(t["needle"]) in flat:
                what = f"{t['project']}'s form"
                out.append(Junk("template", t["id"], says["template"].format(what=what)))
                break
    if field is not None and not out:
        heading, text = field
        left = squeeze(_TAGS.sub("", text))
        empty = {squeeze(v) for v in d["empty_answers"]["values"]}
        # a few characters that state nothing ("sss", "big issue") are as empty as no answer
        if not left or left in empty or (not env_read and len(left) < MAX_EMPTY_CHARS):
            out.append(Junk("empty", heading, says["empty"].format(what=heading)))
    if not env_read and not any(j.kind == "empty" for j in out):
        where = field[1] if field is not None else body
        low = where.lower()
        count = sum(low.count(n.lower()) for n in d["screenshots"]["needles"][:2])  # "![" and "<img": one each
        hosts = any(n.lower() in low for n in d["screenshots"]["needles"][2:])
        if count or hosts:
            what = f"in the {field[0]} field" if field is not None else "an image in the issue"
            out.append(Junk("screenshot", what, says["screenshot"].format(what=what)))
    cut = d["cut_collect_env"]
    # the first start line is collect_env's own banner; the others are its field labels, which people also
    # type by hand: they count only where the body was read as a collect_env report
    starts = [squeeze(s) for s in cut["starts"]]
    started = starts[0] in flat or (collect_env and any(s in flat for s in starts[1:]))
    if started and not any(squeeze(e).rstrip(":") in flat for e in cut["ends"]):
        end = cut["ends"][0]
        out.append(Junk("cut", end, says["cut"].format(what=end)))
    return out

