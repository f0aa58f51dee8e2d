"""Known messages in pasted text: ``rules/data/known_messages.yaml`` loaded, checked and compiled
once, and :func:`find_messages`, which finds them wherever they stand.

A message is evidence in a code fence, a ``> `` quote, the middle of a traceback or wrapped over
several lines, so the text is *squeezed* first: quote marks at the start of each line removed,
lower-cased, every whitespace character dropped, the lines joined (a table of line starts maps a
position back to its line). Each entry's needle is then a plain substring search (``str.find``)
over the squeezed text, and its regex (linear, checked at load) runs only on a bounded window
around each occurrence. The cost is linear in the text: one pass to squeeze, and per entry one
``find`` pass plus at most ``MAX_HITS`` bounded regex searches.
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import Any, NamedTuple, Optional

from torchdoctor import tables
from torchdoctor.importers.paste.evidence import MAX_LINE_CHARS, MAX_LINES
from torchdoctor.importers.paste.wording import _compile, linear_known, remember_linear

MESSAGES_FILE = "known_messages"
MAX_HITS = 50
"""Occurrences of one needle looked at; a log that repeats a line thousands of times says it once."""
MAX_LINES_KEPT = 5
"""Lines of the paste recorded per message."""
BEFORE, AFTER = 300, 600
"""The window (squeezed characters) around a needle that its regex reads."""
MAX_VALUE_CHARS = 80
_QUOTE = re.compile(r"^[ \t]{0,8}(?:>[ \t]{0,4}){1,8}")
_SPACE = re.compile(r"\s+")
_PLACEHOLDER = re.compile(r"\{([a-z_]{1,40})\}")


class _Entry(NamedTuple):
    id: str
    needle: str
    regex: Optional[Any]  # re.Pattern or wording.LazyPattern
    category: str
    severity: str
    meaning: str
    fix: str
    references: tuple[str, ...]
    superseded_by: tuple[str, ...] = ()


class Hit(NamedTuple):
    """One known message found: its entry, the paste's lines, what its pattern read."""

    entry: _Entry
    lines: tuple[int, ...]
    values: dict

    def fill(self, text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: self.values.get(m.group(1)) or "?", text)


def squeeze(text: str) -> str:
    """The squeezed form a needle is written for (lower case, no whitespace)."""
    return _SPACE.sub("", text.lower())


@functools.lru_cache(maxsize=4)
def entries(directory: Optional[str] = None) -> tuple[_Entry, ...]:
    """The checked, compiled messages of ``rules/data/known_messages.yaml``: every regex
    linear, every placeholder of ``meaning``/``fix`` a group of the entry's regex, every
    category one of the rules' categories."""
    from torchdoctor.report import CATEGORIES

    data = tables.load(MESSAGES_FILE, directory)
    where = f"{directory or 'rules/data'}/{MESSAGES_FILE}.yaml"
    out = []
    seen = set()
    # the shipped file's regexes an earlier run checked are compiled when first used; another directory's always now
    known, used = (linear_known(), {}) if directory is None else (None, None)
    for i, item in enumerate(data["messages"]):
        w = f"{where}: messages[{i}] ({item['id']})"
        if item["id"] in seen:
            raise tables.DataFileError(f"{w}: duplicate id")
        seen.add(item["id"])
        if item["category"] not in CATEGORIES:
            raise tables.DataFileError(f"{w}: unknown category {item['category']!r}")
        needle = squeeze(item["needle"])
        if len(needle) < 6:
            raise tables.DataFileError(f"{w}: needle too short to be specific")
        regex = _compile(item["regex"], w, known, used) if item.get("regex") else None
        groups = set(regex.groupindex) if regex is not None else set()
        for name in _PLACEHOLDER.findall(item["meaning"] + item["fix"]):
            if name not in groups:
                raise tables.DataFileError(f"{w}: placeholder {{{name}}} is not a group of its regex")
        out.append(_Entry(item["id"], needle, regex, item["category"], item["severity"],
                          " ".join(item["meaning"].split()), " ".join(item["fix"].split()),
                          tuple(item["sources"]), tuple(item.get("superseded_by") or ())))
    for e in out:
        for other in e.superseded_by:
            if other not in seen:
                raise tables.DataFileError(f"{where}: {e.id}: superseded_by names no entry: {other!r}")
    if used:
        remember_linear(used)
    return tuple(out)


def _squeezed_lines(text: str) -> tuple[str, list[int]]:
    """The squeezed text and the offset where each line starts in it."""
    parts: list[str] = []
    starts: list[int] = []
    pos = 0
    for n, line in enumerate(text.splitlines()):
        if n >= MAX_LINES:
            break
        line = _QUOTE.sub("", line[:MAX_LINE_CHARS])
        s = squeeze(line)
        starts.append(pos)
        parts.append(s)
        pos += len(s)
    return "".join(parts), starts


def find_messages(text: str, directory: Optional[str] = None) -> list[Hit]:
    """Every known message in ``text``, in the order of its first line."""
    flat, starts = _squeezed_lines(text)
    hits = []
    for entry in entries(directory):
        lines: list[int] = []
        values: dict = {}
        at = flat.find(entry.needle)
        looked = 0
        while at != -1 and looked < MAX_HITS:
            looked += 1
            ok = True
            if entry.regex is not None:
                window = flat[max(0, at - BEFORE): at + len(entry.needle) + AFTER]
                m = entry.regex.search(window)
                ok = m is not None
                if m is not None and not values:
                    values = {k: v[:MAX_VALUE_CHARS] for k, v in m.groupdict().items() if v}
            if ok:
                line = bisect.bisect_right(starts, at)  # 1-based: the line holding position ``at``
                if line not in lines and len(lines) < MAX_LINES_KEPT:
                    lines.append(line)
            at = flat.find(entry.needle, at + len(entry.needle))
        if lines:
            hits.append(Hit(entry, tuple(lines), values))
    found = {h.entry.id for h in hits}
    hits = [h for h in hits if not found.intersection(h.entry.superseded_by)]
    hits.sort(key=lambda h: (h.lines[0], h.entry.id))
    return hits
