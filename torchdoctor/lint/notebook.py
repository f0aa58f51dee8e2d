"""A Jupyter notebook as lint reads it: its code cells joined in order (IPython syntax made
plain Python by :mod:`torchdoctor.lint.ipython`), and where each character of a cell's source
is in the raw ``.ipynb`` text, so that SARIF and GitHub annotations point at the right line of
the file.

The positions come from scanning the JSON itself (:func:`scan`: every string value of the
document carries the offset of its opening quote), not from guessing the layout: a ``source``
that is one string or a list of strings, on one line or many, indented in any way, with any
escapes (``\\n``, ``\\"``, ``\\u00e9``, surrogate pairs), maps exactly. Nesting is bounded."""

from __future__ import annotations

import bisect
import json
import re
from json.decoder import scanstring
from typing import Any, Optional

from torchdoctor.lint.lines import split as split_lines

MAX_DEPTH = 200
_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?")
_LITERALS = (("true", True), ("false", False), ("null", None), ("NaN", float("nan")),
             ("Infinity", float("inf")), ("-Infinity", float("-inf")))
_RAW_EOL = re.compile(r"\r\n|\r|\n")


class NotJSON(ValueError):
    pass


class PosStr(str):
    """A decoded JSON string that knows where its opening quote is in the raw text."""

    start: int = 0


def scan(text: str) -> Any:
    """``json.loads(text)`` with every string a :class:`PosStr`; NotJSON when it is not JSON
    (or nested deeper than :data:`MAX_DEPTH`)."""
    value, end = _value(text, 0, 0)
    if _WS.match(text, end).end() != len(text):
        raise NotJSON("extra data after the document")
    return value


def _value(s: str, i: int, depth: int) -> tuple:
    if depth > MAX_DEPTH:
        raise NotJSON("nested too deeply")
    i = _WS.match(s, i).end()
    c = s[i:i + 1]
    if c == '"':
        try:
            text, end = scanstring(s, i + 1, True)
        except ValueError as exc:
            raise NotJSON(str(exc)) from None
        out = PosStr(text)
        out.start = i
        return out, end
    if c == "{":
        obj: dict = {}
        i = _WS.match(s, i + 1).end()
        if s[i:i + 1] == "}":
            return obj, i + 1
        while True:
            i = _WS.match(s, i).end()
            if s[i:i + 1] != '"':
                raise NotJSON(f"expected a key at {i}")
            key, i = _value(s, i, depth + 1)
            i = _WS.match(s, i).end()
            if s[i:i + 1] != ":":
                raise NotJSON(f"expected ':' at {i}")
            obj[str(key)], i = _value(s, i + 1, depth + 1)
            i = _WS.match(s, i).end()
            if s[i:i + 1] == ",":
                i += 1
                continue
            if s[i:i + 1] == "}":
                return obj, i + 1
            raise NotJSON(f"expected ',' or '}}' at {i}")
    if c == "[":
        arr: list = []
        i = _WS.match(s, i + 1).end()
        if s[i:i + 1] == "]":
            return arr, i + 1
        while True:
            item, i = _value(s, i, depth + 1)
            arr.append(item)
            i = _WS.match(s, i).end()
            if s[i:i + 1] == ",":
                i += 1
                continue
            if s[i:i + 1] == "]":
                return arr, i + 1
            raise NotJSON(f"expected ',' or ']' at {i}")
    for word, val in _LITERALS:
        if s.startswith(word, i):
            return val, i + len(word)
    m = _NUMBER.match(s, i)
    if m and m.group(0):
        num = m.group(0)
        return (float(num) if any(ch in num for ch in ".eE") else int(num)), m.end()
    raise NotJSON(f"unexpected character at {i}")


def _raw_offsets(raw: str, start: int, decoded: str) -> list:
    """Offset in ``raw`` of each character of the JSON string whose quote is at ``start``,
    and of its closing quote last."""
    out = []
    j = start + 1
    k = 0
    while k < len(decoded):
        out.append(j)
        if raw[j] == "\\":
            if raw[j + 1] == "u":
                cp = int(raw[j + 2:j + 6], 16)
                if 0xD800 <= cp <= 0xDBFF and raw.startswith("\\u", j + 6) and len(decoded) > k \
                        and ord(decoded[k]) > 0xFFFF:
                    j += 12
                else:
                    j += 6
            else:
                j += 2
        else:
            j += 1
        k += 1
    out.append(j)
    return out


class Cell:
    """One code cell: its source pieces (the JSON strings) and how its lines map to the raw
    text."""

    def __init__(self, number: int, pieces: list, shifts: list, nb: "Notebook") -> None:
        self.number = number
        self.pieces = pieces
        self.shifts = shifts
        self.nb = nb
        source = "".join(pieces)
        self.line_starts = [0]
        for ln in split_lines(source, keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(ln))
        self.piece_starts = [0]
        for p in pieces:
            self.piece_starts.append(self.piece_starts[-1] + len(p))
        self._offsets: dict = {}

    def shift(self, line: int) -> int:
        return self.shifts[line - 1] if 1 <= line <= len(self.shifts) else 0

    def file_pos(self, line: int, col: int) -> Optional[tuple]:
        """(line, col) in the raw ``.ipynb`` text (1-based, characters) of a cell-relative
        position (columns as in the cell's source), or None when the cell has no source."""
        if not self.pieces:
            return None
        line = min(max(line, 1), len(self.line_starts) - 1) if len(self.line_starts) > 1 else 1
        base = self.line_starts[line - 1]
        end_of_line = self.line_starts[line] if line < len(self.line_starts) else base
        at = min(base + max(col, 1) - 1, max(base, end_of_line))
        total = self.piece_starts[-1]
        at = min(at, total)
        idx = bisect.bisect_right(self.piece_starts, at) - 1
        idx = min(idx, len(self.pieces) - 1)
        piece = self.pieces[idx]
        offsets = self._offsets.get(idx)
        if offsets is None:
            offsets = self._offsets[idx] = _raw_offsets(self.nb.raw, piece.start, piece)
        raw = offsets[min(at - self.piece_starts[idx], len(offsets) - 1)]
        return self.nb.raw_pos(raw)


class Notebook:
    def __init__(self, raw: str) -> None:
        self.raw = raw
        self.cells: dict = {}
        self._line_starts: Optional[list] = None

    def raw_pos(self, offset: int) -> tuple:
        if self._line_starts is None:
            self._line_starts = [0] + [m.end() for m in _RAW_EOL.finditer(self.raw)]
        i = bisect.bisect_right(self._line_starts, offset) - 1
        return i + 1, offset - self._line_starts[i] + 1

    def cell(self, number: Optional[int]) -> Optional[Cell]:
        return self.cells.get(number)

    def region(self, cell: Optional[int], line: int, col: int, end_line: int, end_col: int,
               end_cell: Optional[int] = None) -> Optional[dict]:
        """The finding's place in the raw file: {line, col, end_line, end_col}."""
        c = self.cell(cell)
        e = self.cell(end_cell if end_cell is not None else cell)
        start = c.file_pos(line, col) if c else None
        end = e.file_pos(end_line, end_col) if e else None
        if start is None:
            return None
        if end is None or end < start:
            end = start
        return {"line": start[0], "col": start[1], "end_line": end[0], "end_col": end[1]}


def read(text: str, python_cell_magics=()) -> tuple:
    """(joined code, [(first line, cell number)], Notebook) of a notebook's text; NotJSON when
    it is not JSON, ValueError (with the reason) when it is not a notebook."""
    from torchdoctor.lint.ipython import mask_cell

    try:
        nb = scan(text)
    except RecursionError:
        raise NotJSON("nested too deeply") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ValueError("no `cells` list")
    book = Notebook(text)
    parts: list = []
    starts: list = []
    line = 1
    index = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        index += 1
        src = cell.get("source", "")
        pieces = [s for s in src if isinstance(s, PosStr)] if isinstance(src, list) else (
            [src] if isinstance(src, PosStr) else None)
        if pieces is None:
            continue
        joined = "".join(pieces)
        code, shifts = mask_cell(joined, python_cell_magics)
        if not code.endswith("\n"):
            code += "\n"
        book.cells[index] = Cell(index, pieces, shifts, book)
        starts.append((line, index))
        parts.append(code)
        line += len(split_lines(code))
    return "".join(parts), starts, book


__all__ = ["read", "scan", "Notebook", "NotJSON", "json"]
