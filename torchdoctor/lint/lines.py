"""Lines as Python counts them: ``ast``, ``tokenize`` and the interpreter end a line only at
``\\r\\n``, ``\\r`` or ``\\n``. ``str.splitlines()`` also splits at ``\\v \\f \\x1c-\\x1e \\x85
\\u2028 \\u2029``, so a table built with it puts every position after a form feed (a common page
break) or a Unicode line separator on the wrong line: a fix would rewrite another line's text.
Every line table of lint is built here."""

from __future__ import annotations

import re

_EOL = re.compile(r"\r\n|\r|\n")


def split(text: str, keepends: bool = False) -> list:
    """``text`` split at Python's line ends only (like ``splitlines``: no empty last item)."""
    out = []
    start = 0
    for m in _EOL.finditer(text):
        out.append(text[start:m.end() if keepends else m.start()])
        start = m.end()
    if start < len(text):
        out.append(text[start:])
    return out


def starts(lines: list) -> list:
    """Byte offset (UTF-8) of the start of each line of ``split(text, keepends=True)``, and of
    the end of the text last."""
    out = [0]
    for ln in lines:
        out.append(out[-1] + len(ln.encode("utf-8")))
    return out
