"""A notebook cell read as IPython reads it (``IPython.core.inputtransformer2``, IPython 9.16),
turned into plain Python with every line where it was, so that ``ast`` can parse it and every
position still points at the cell's own text.

What IPython transforms, and what it becomes here:

- a cell magic (``%%name`` on the first non-blank line of the cell, ``cell_magic``): the
  magic's line is blanked; its body is Python only when the magic runs it as Python in the
  notebook (``%%time``, ``%%capture``...: the knowledge's ``python_cell_magics``), and then it is
  read as a cell of its own (IPython transforms it again); any other body (``%%bash``,
  ``%%writefile``, an unknown magic) is blanked. ``%%`` anywhere else is a line magic.
- an escaped line (``EscapedCommand``): a logical line whose first token is ``!``, ``!!``,
  ``%``, ``?``, ``??``, ``,``, ``;`` or ``/``, with its backslash-continued lines, stands for
  one statement: ``pass`` at its indentation, the continuation lines blank (so ``!cmd`` as the
  whole body of a ``for`` keeps the block's shape).
- ``var = !cmd`` / ``var = %magic args`` (``SystemAssign``/``MagicAssign``, the first ``=``
  outside brackets): the assignment stays, its value becomes ``...``.
- ``obj?`` / ``obj??`` (``HelpEnd``: a logical line that ends with ``?`` after a name,
  ``_help_end_re``): ``pass``; ``f(x)?`` stays (IPython rejects it too).
- the cell's common indentation is removed (``leading_indent``); the width removed is returned
  so that columns can be given back.

Strings (also triple-quoted ones over several lines), comments and brackets are followed, so
``!`` in a string or an expression continued inside brackets is not an escape. The scan is one
pass over the text (linear). Not handled: ``>>>``/``In [1]:`` prompts pasted into a cell
(IPython strips them), line magics whose argument is Python (``%time f()``: blanked, so the
call is not linted).
"""

from __future__ import annotations

import re
from typing import Iterable

from torchdoctor.lint.lines import split as split_lines

ESCAPES = ("!", "%", "?", ",", ";", "/")
"""IPython's ESCAPE_SINGLES (``!!``/``??`` start with them): fixed IPython syntax, "these can
NOT be just changed here" (inputtransformer2.py)."""
_CELL_MAGIC = re.compile(r"%%([^\s?]*)(\?)?")
_PLAIN = re.compile(r"[^'\"#()\[\]{}\\=?]+")
_EOL = re.compile(r"(\r\n|\r|\n)\Z")
_ASSIGN_BEFORE = set("=<>!+-*/%&|^@:~")
_HELP_END = re.compile(r"%{0,2}(?!\d)[\w*]+(?:\.(?!\d)[\w*]+|\[-?[0-9]+\])*\?\??$")
"""IPython's _help_end_re (searched): ``obj?``, ``obj.attr??``, ``x[0]?``; ``f(x)?`` is not help."""
MAX_NESTED_MAGICS = 20


def _eol(line: str) -> str:
    m = _EOL.search(line)
    return m.group(1) if m else ""


def _body(line: str) -> str:
    return line[:len(line) - len(_eol(line))]


def _common_indent(lines: list) -> str:
    """textwrap.dedent's margin: the longest whitespace prefix of every non-blank line."""
    margin = None
    for ln in lines:
        body = _body(ln)
        if not body.strip():
            continue
        ws = body[:len(body) - len(body.lstrip(" \t"))]
        if margin is None:
            margin = ws
        else:
            n = 0
            while n < min(len(margin), len(ws)) and margin[n] == ws[n]:
                n += 1
            margin = margin[:n]
        if not margin:
            return ""
    return margin or ""


def _dedent(lines: list) -> tuple:
    margin = _common_indent(lines)
    if not margin:
        return lines, 0
    return [ln[len(margin):] if ln.startswith(margin) else _eol(ln) for ln in lines], len(margin)


def mask_cell(src: str, python_cell_magics: Iterable = ()) -> tuple:
    """(text, shifts): ``src`` as the plain Python that IPython would run, with the same lines
    (and line ends) as ``src``; ``shifts[i]``: the indentation removed from line ``i + 1``
    (add it to a column of the text to get the column in ``src``)."""
    lines, shift = _dedent(split_lines(src, keepends=True))
    out, shifts = _mask(lines, frozenset(python_cell_magics), 0)
    return "".join(out), [s + shift for s in shifts]


def _mask(lines: list, magics: frozenset, depth: int) -> tuple:
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is not None and lines[first].startswith("%%"):
        m = _CELL_MAGIC.match(lines[first])
        head = [_eol(ln) for ln in lines[:first + 1]]
        rest = lines[first + 1:]
        if m and m.group(2):  # %%name? : help on the magic; the rest is code
            body, shifts = _mask(rest, magics, depth)
        elif m and m.group(1) in magics and depth < MAX_NESTED_MAGICS:
            rest, shift = _dedent(rest)  # IPython transforms the body as a cell again
            body, shifts = _mask(rest, magics, depth + 1)
            shifts = [s + shift for s in shifts]
        else:
            body, shifts = [_eol(ln) for ln in rest], [0] * len(rest)
        return head + body, [0] * len(head) + shifts
    return _Scanner(lines).run(), [0] * len(lines)


class _Scanner:
    """Logical lines of Python with IPython's escapes, one pass."""

    def __init__(self, lines: list) -> None:
        self.lines = lines
        self.out = list(lines)
        self.depth = 0
        self.quote = ""  # the open string's quote ('', ', ", ''' or \"\"\")

    def run(self) -> list:
        i = 0
        n = len(self.lines)
        while i < n:
            i = self._logical(i)
        return self.out

    def _continued_end(self, i: int) -> int:
        """IPython's find_end_of_continued_line: the last line of a backslash run."""
        while i < len(self.lines) - 1 and _body(self.lines[i]).endswith("\\") and _eol(self.lines[i]):
            i += 1
        return i

    def _statement(self, start: int, end: int, indent: str) -> None:
        self.out[start] = indent + "pass" + _eol(self.lines[start])
        for j in range(start + 1, end + 1):
            self.out[j] = _eol(self.lines[j])

    def _logical(self, start: int) -> int:
        """Handle the logical line that starts at ``start``; the index after it."""
        line = self.lines[start]
        body = _body(line)
        stripped = body.lstrip(" \t\f")
        indent = body[:len(body) - len(stripped)]
        if stripped.startswith(ESCAPES):
            end = self._continued_end(start)
            self._statement(start, end, indent)
            return end + 1
        assign = self._magic_assign(body)
        if assign is not None:
            end = self._continued_end(start)
            self.out[start] = body[:assign] + "..." + _eol(line)
            for j in range(start + 1, end + 1):
                self.out[j] = _eol(self.lines[j])
            return end + 1
        i = start
        last = ""
        while True:
            last, cont = self._scan(_body(self.lines[i]), last)
            i += 1
            if i >= len(self.lines) or not (self.depth > 0 or self.quote or cont):
                break
        if self.quote and self.quote in ("'", '"'):
            self.quote = ""  # an unclosed one-line string: Python's error, not ours
        if last == "?" and not self.quote and _HELP_END.search("".join(self.lines[start:i]).rstrip("\r\n")):
            self.depth = 0
            self._statement(start, i - 1, indent)
        if i >= len(self.lines):
            self.depth, self.quote = 0, ""
        return i

    def _magic_assign(self, body: str):
        """Column of the ``!``/``%`` of ``x = !cmd`` / ``x = %magic``, else None."""
        if "=" not in body or not any(c in body for c in "!%"):
            return None
        depth = 0
        quote = ""
        j = 0
        n = len(body)
        while j < n:
            c = body[j]
            if quote:
                if c == "\\":
                    j += 2
                    continue
                if body.startswith(quote, j):
                    j += len(quote)
                    quote = ""
                    continue
                j += 1
                continue
            if c == "#":
                return None
            if c in "'\"":
                quote = c * 3 if body.startswith(c * 3, j) else c
                j += len(quote)
                continue
            if c in "([{":
                depth += 1
            elif c in ")]}":
                depth = max(0, depth - 1)
            elif c == "=" and depth == 0:
                if (j > 0 and body[j - 1] in _ASSIGN_BEFORE) or body[j + 1:j + 2] == "=" \
                        or not body[:j].strip():
                    return None  # ==, <=, +=, ...: not the assignment IPython looks for
                k = j + 1
                while k < n and body[k] in " \t":
                    k += 1
                if body[k:k + 1] == "!":
                    return k
                if body[k:k + 1] == "%" and k + 1 < n and (body[k + 1].isalpha() or body[k + 1] == "_"):
                    return k
                return None
            j += 1
        return None

    def _scan(self, body: str, last: str) -> tuple:
        """Follow strings, comments and brackets through one physical line: (last significant
        character, ends with a line-continuation backslash)."""
        j = 0
        n = len(body)
        while j < n:
            if self.quote:
                q = self.quote
                k = j
                while k < n:
                    c = body[k]
                    if c == "\\":
                        k += 2
                        continue
                    if body.startswith(q, k):
                        break
                    k += 1
                if k >= n:
                    if len(q) == 1 and not body.endswith("\\"):
                        self.quote = ""  # an unterminated one-line string ends at the line end
                    return "s", body.endswith("\\") and len(q) == 1
                j = k + len(q)
                self.quote = ""
                last = "s"
                continue
            m = _PLAIN.match(body, j)
            if m:
                text = m.group(0).rstrip()
                if text:
                    last = text[-1]
                j = m.end()
                continue
            c = body[j]
            if c == "#":
                break
            if c in "'\"":
                self.quote = c * 3 if body.startswith(c * 3, j) else c
                j += len(self.quote)
                continue
            if c == "\\":
                if j == n - 1:
                    return last, True
                j += 1
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            last = c
            j += 1
        return last, False
