"""gitignore-style patterns (``.gitignore`` files and ``[tool.torchdoctor.lint] exclude``) matched
in time bounded by the pattern's and the path's length, whatever the pattern.

Semantics are git's (``gitignore(5)``, ``dir.c`` and ``wildmatch.c`` with ``WM_PATHNAME``):

- blank lines and lines starting with ``#`` are skipped; trailing spaces are stripped unless
  escaped with ``\\``; a trailing ``\\r`` (a CRLF file) is dropped;
- ``!`` negates; within one list the last matching pattern wins;
- a trailing ``/`` matches directories only;
- a ``/`` at the start or in the middle anchors the pattern to the list's folder; otherwise it
  matches the last component at any depth;
- ``*``, ``?`` and ``[...]`` (``[!...]``/``[^...]``, ranges, ``[:alpha:]``-style classes, ``\\``
  escapes) match within one component; a component that is only ``*`` s (two or more) is ``**``:
  zero or more components, one or more at the end (``foo/**`` matches what is in ``foo``, not
  ``foo`` itself); ``**`` next to other characters is a plain ``*``;
- a pattern git can never match (an unclosed ``[``, a trailing lone ``\\``, ``!`` alone, ``/``)
  matches nothing and never raises.

Why not regular expressions: translating ``a/**/a/**/…/b`` or ``*a*a*a*b`` into Python ``re``
gives nested or repeated quantifiers that backtrack exponentially (``pathspec`` hangs on such a
line in a hostile repository's ``.gitignore``). Here a pattern is a list of components matched
by simulating its automaton over the path's components (each state visited once per
component), and a component glob is matched by the greedy leftmost search for the pieces
between its ``*`` s, which is correct for ``*`` and needs no backtracking: one component
costs O(len(glob) x len(name)), a path O(len(pattern) x len(path)). The regexes used inside a
piece hold no quantifier at all. The number and length of patterns are bounded; the rest are
skipped and listed in :attr:`IgnoreList.problems`.
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional, Sequence, Tuple

MAX_PATTERNS = 5000
"""Patterns kept from one list; the rest are skipped (and said)."""
MAX_PATTERN_CHARS = 1024
"""A longer pattern is skipped (and said). git's own paths are at most PATH_MAX (4096)."""

_STAR = "*"
_GLOBSTAR = object()
_ANY_ONE = object()  # one whole component (what a trailing ``**`` must match at least)
_NEVER = object()  # a component no name can match

_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "blank": " \\t", "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9", "graph": "!-~", "lower": "a-z", "print": " -~",
    "punct": "!-/:-@\\[-`{-~", "space": " \\t\\n\\r\\f\\v", "upper": "A-Z", "xdigit": "0-9A-Fa-f",
}


class _Unmatchable(Exception):
    """The pattern can never match (git aborts or fails on it whatever the path)."""


def _trim_trailing_spaces(line: str) -> str:
    """git's ``trim_trailing_spaces``: drop the trailing run of spaces unless it is escaped."""
    last_space = None
    i = 0
    n = len(line)
    while i < n:
        c = line[i]
        if c == " ":
            if last_space is None:
                last_space = i
        elif c == "\\":
            i += 1
            if i >= n:
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def _bracket(text: str, i: int) -> Tuple[str, int]:
    """The ``[...]`` starting at ``text[i] == '['`` as a Python character class (no quantifier),
    and the index after it. Raises _Unmatchable if it is not closed (git: WM_ABORT_ALL)."""
    n = len(text)
    i += 1
    negated = False
    if i < n and text[i] in "!^":
        negated = True
        i += 1
    items: List[str] = []
    first = True
    prev: Optional[str] = None  # the last single character, for a following range
    while True:
        if i >= n:
            raise _Unmatchable("unclosed [")
        c = text[i]
        if c == "]" and not first:
            i += 1
            break
        first = False
        if c == "\\":
            i += 1
            if i >= n:
                raise _Unmatchable("unclosed [")
            c = text[i]
            items.append(re.escape(c))
            prev = c
            i += 1
        elif c == "-" and prev is not None and i + 1 < n and text[i + 1] != "]":
            hi = text[i + 1]
            i += 2
            if hi == "\\":
                if i >= n:
                    raise _Unmatchable("unclosed [")
                hi = text[i]
                i += 1
            items.pop()
            if prev <= hi:  # git: a reversed range matches nothing
                items.append(re.escape(prev) + "-" + re.escape(hi))
            prev = None
        elif c == "[" and i + 1 < n and text[i + 1] == ":":
            close = text.find("]", i + 2)
            if close < 0:
                raise _Unmatchable("unclosed [")
            if close - 1 < i + 2 or text[close - 1] != ":":  # git: not a class, a literal '['
                items.append(re.escape(c))
                prev = c
                i += 1
                continue
            name = text[i + 2:close - 1]
            if name not in _POSIX:  # git: a malformed [:class:] aborts the match
                raise _Unmatchable("unknown character class")
            items.append(_POSIX[name])
            prev = None
            i = close + 1
        else:
            items.append(re.escape(c))
            prev = c
            i += 1
    items = [it for it in items if it != re.escape("/")]  # never matches '/' (WM_PATHNAME)
    if not items:
        return ("[^/]" if negated else "(?!)"), i
    return "[" + ("^/" if negated else "") + "".join(items) + "]", i


def _tokens(text: str) -> List[object]:
    """Characters of a pattern as tokens: '/', '*', a literal str of length 1 (tagged ``L``),
    or a compiled one-character class (``?``/``[...]``)."""
    out: List[object] = []
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            if i + 1 >= n:
                raise _Unmatchable("trailing backslash")
            out.append(("L", text[i + 1]))
            i += 2
        elif c == "*":
            out.append(_STAR)
            i += 1
        elif c == "?":
            out.append(("C", "[^/]"))
            i += 1
        elif c == "[":
            cls, i = _bracket(text, i)
            out.append(("C", cls))
        elif c == "/":
            out.append("/")
            i += 1
        else:
            out.append(("L", c))
            i += 1
    return out


class _Glob:
    """One component's glob, split at its ``*`` s into pieces of one-character atoms. A piece is
    a literal string or a quantifier-free compiled regex of fixed width."""

    __slots__ = ("pieces", "stars", "literal")

    def __init__(self, toks: Sequence[object]):
        pieces: List[list] = [[]]
        for t in toks:
            if t is _STAR:
                if pieces[-1] or len(pieces) == 1:
                    pieces.append([])
            else:
                pieces[-1].append(t)
        # consecutive stars collapse; pieces[0] is before the first star, pieces[-1] after the last
        self.stars = len(pieces) > 1
        compiled = [self._piece(p) for p in pieces]
        self.pieces = compiled
        self.literal = compiled[0] if not self.stars and isinstance(compiled[0], str) else None

    @staticmethod
    def _piece(atoms: list):
        if all(kind == "L" for kind, _ in atoms):
            return "".join(ch for _, ch in atoms)
        rx = "".join(re.escape(v) if kind == "L" else v for kind, v in atoms)
        return (re.compile(rx, re.DOTALL), len(atoms))

    def match(self, name: str) -> bool:
        if self.literal is not None:
            return name == self.literal
        pieces = self.pieces
        if not self.stars:
            rx, width = pieces[0]
            return len(name) == width and rx.match(name) is not None
        first, last = pieces[0], pieces[-1]
        # the text before the first star and after the last one have fixed widths
        if isinstance(first, str):
            if not name.startswith(first):
                return False
            lo = len(first)
        else:
            rx, lo = first
            if len(name) < lo or rx.match(name) is None:
                return False
        if isinstance(last, str):
            hi = len(name) - len(last)
            if hi < lo or not name.endswith(last):
                return False
        else:
            rx, width = last
            hi = len(name) - width
            if hi < lo or rx.match(name, hi) is None:
                return False
        # the pieces between stars: leftmost occurrence of each, in order (no backtracking is
        # needed: a later occurrence can only leave less room for the rest)
        pos = lo
        for piece in pieces[1:-1]:
            if isinstance(piece, str):
                at = name.find(piece, pos, hi)
                if at < 0:
                    return False
                pos = at + len(piece)
            else:
                rx, width = piece
                m = rx.search(name, pos, hi)
                if m is None:
                    return False
                pos = m.start() + width
        return True


class Pattern:
    """One parsed line: :attr:`negated`, :attr:`dir_only`, :attr:`anchored`, and the components
    (``_GLOBSTAR``, ``_ANY_ONE`` or a :class:`_Glob`)."""

    __slots__ = ("text", "negated", "dir_only", "anchored", "parts", "basename_glob")

    def __init__(self, text: str, negated: bool, dir_only: bool, anchored: bool, parts: list):
        self.text = text
        self.negated = negated
        self.dir_only = dir_only
        self.anchored = anchored
        self.parts = parts
        # the common case, a pattern without '/', is one glob on the last component
        self.basename_glob = parts[1] if (not anchored and len(parts) == 2
                                          and isinstance(parts[1], _Glob)) else None

    def matches(self, comps: Sequence[str], is_dir: bool, counter: Optional[list] = None) -> bool:
        if self.dir_only and not is_dir:
            return False
        if not comps:
            return False
        if self.basename_glob is not None:
            return self.basename_glob.match(comps[-1])
        return _run(self.parts, comps, counter)


def _closure(parts: list, states: set) -> set:
    """Add the states reached by letting a ``**`` match zero components."""
    todo = list(states)
    while todo:
        s = todo.pop()
        if s < len(parts) and parts[s] is _GLOBSTAR and s + 1 not in states:
            states.add(s + 1)
            todo.append(s + 1)
    return states


def _run(parts: list, comps: Sequence[str], counter: Optional[list] = None) -> bool:
    """Simulate the pattern's automaton over the components: states are indices into parts,
    each visited at most once per component, so the work is O(len(parts) x len(comps)) glob
    matches."""
    end = len(parts)
    states = _closure(parts, {0})
    for name in comps:
        nxt: set = set()
        for s in states:
            if counter is not None:
                counter[0] += 1
            if s == end:
                continue
            part = parts[s]
            if part is _GLOBSTAR:
                nxt.add(s)
            elif part is _ANY_ONE or (part is not _NEVER and part.match(name)):
                nxt.add(s + 1)
        if not nxt:
            return False
        states = _closure(parts, nxt)
    return end in states


def parse(line: str) -> Optional[Pattern]:
    """A pattern line as git reads it; None for a blank line, a comment, or a pattern git can
    never match. Raises nothing."""
    if line.endswith("\r"):
        line = line[:-1]
    if not line or line.startswith("#"):
        return None
    line = _trim_trailing_spaces(line)
    negated = line.startswith("!")
    body = line[1:] if negated else line
    dir_only = body.endswith("/")
    if dir_only:
        body = body[:-1]
    if not body:
        return None
    anchored = "/" in body
    if body.startswith("/"):
        body = body[1:]
    try:
        toks = _tokens(body)
    except _Unmatchable:
        return None
    comps: List[list] = [[]]
    for t in toks:
        if t == "/":
            comps.append([])
        else:
            comps[-1].append(t)
    parts: list = []
    for c in comps:
        if c and all(t is _STAR for t in c) and len(c) >= 2:
            if not (parts and parts[-1] is _GLOBSTAR):  # '**/**' is one '**'
                parts.append(_GLOBSTAR)
        elif not c:
            parts.append(_NEVER)  # 'a//b': no component is empty
        else:
            parts.append(_Glob(c))
    if not anchored:
        parts.insert(0, _GLOBSTAR)
        if len(parts) > 1 and parts[1] is _GLOBSTAR:
            del parts[1]
    if parts[-1] is _GLOBSTAR:  # a trailing '**' needs at least one component
        parts[-1:] = [_ANY_ONE, _GLOBSTAR]
    return Pattern(line, negated, dir_only, anchored, parts)


def split_lines(text: str) -> List[str]:
    """Lines as git splits a .gitignore: at ``\\n`` only (a ``\\r`` before it is dropped by
    :func:`parse`), not at the other characters ``str.splitlines`` knows."""
    return text.split("\n")


class IgnoreList:
    """The patterns of one ``.gitignore`` (or the ``exclude`` list), relative to one folder.

    :attr:`problems` lists ``(where, reason)`` for each pattern skipped for a limit."""

    def __init__(self, lines: Iterable[str], source: str = "patterns"):
        self.source = source
        self.patterns: List[Pattern] = []
        self.problems: List[Tuple[str, str]] = []
        self._literal_names: dict = {}  # name -> indices of unanchored literal patterns
        self._others: List[int] = []  # indices of every other pattern
        for number, line in enumerate(lines, 1):
            if not isinstance(line, str):
                self.problems.append((f"{source}: entry {number}", "not a string; skipped"))
                continue
            if len(line) > MAX_PATTERN_CHARS:
                self.problems.append((f"{source}: line {number}",
                                      f"pattern longer than {MAX_PATTERN_CHARS} characters; skipped"))
                continue
            pat = parse(line)
            if pat is None:
                continue
            if len(self.patterns) >= MAX_PATTERNS:
                self.problems.append((f"{source}: line {number}",
                                      f"more than {MAX_PATTERNS} patterns; this one and the rest skipped"))
                break
            index = len(self.patterns)
            self.patterns.append(pat)
            glob = pat.basename_glob
            if glob is not None and glob.literal is not None:
                self._literal_names.setdefault(glob.literal, []).append(index)
            else:
                self._others.append(index)

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def decide(self, comps: Sequence[str], is_dir: bool, counter: Optional[list] = None) -> Optional[bool]:
        """The verdict of the last pattern matching this path itself (the folders above it are
        not looked at): True ignored, False re-included by a ``!`` pattern, None no match."""
        if not comps:
            return None
        patterns = self.patterns
        candidates = self._literal_names.get(comps[-1])
        best = -1
        if candidates:
            for i in reversed(candidates):
                if not patterns[i].dir_only or is_dir:
                    best = i
                    break
        for i in reversed(self._others):
            if i <= best:
                break
            if patterns[i].matches(comps, is_dir, counter):
                best = i
                break
        if best < 0:
            return None
        return not patterns[best].negated

    def ignored(self, path: str, is_dir: Optional[bool] = None) -> bool:
        """git's verdict for a ``/``-separated relative path in a walk: ignored when a folder
        above it is (git does not descend there), else by :meth:`decide`. A trailing ``/``
        means a folder."""
        if is_dir is None:
            is_dir = path.endswith("/")
        comps = [c for c in path.split("/") if c]
        for k in range(1, len(comps)):
            if self.decide(comps[:k], True):
                return True
        return bool(self.decide(comps, is_dir))
