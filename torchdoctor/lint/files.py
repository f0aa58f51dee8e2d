"""Which files to lint and how to read them: folders recursively (honouring ``.gitignore``
files and a few always-skipped folders), ``-`` for stdin, ``.ipynb`` notebooks cell by cell.
Every read is bounded; symlinked folders are not followed (no loops), a file is linted once."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Iterator, Optional

MAX_FILE_BYTES = 4 * 1024 * 1024
"""A larger source file is reported (parse-error), not read."""
MAX_FILES = 100_000
SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules",
             ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages", ".ipynb_checkpoints",
             "build", "dist", ".eggs"}
SUFFIXES = (".py", ".pyi", ".ipynb")


class InputProblem(Exception):
    """A file that cannot be read as source: reported as a finding for that file."""


@dataclass
class Source:
    path: str
    text: str
    cells: Optional[list] = None
    """A notebook: its code cells joined in order (so imports of one cell hold in the next),
    with ``[(first line, cell number)]`` to make positions cell-relative again."""

    def locate(self, line: int) -> tuple:
        """(cell number or None, line within it) of a line of :attr:`text`."""
        if not self.cells:
            return None, line
        first, number = self.cells[0]
        for f, n in self.cells:
            if f > line:
                break
            first, number = f, n
        return number, line - first + 1


def _ignore_spec(directory: str):
    path = os.path.join(directory, ".gitignore")
    try:
        if not os.path.isfile(path) or os.path.getsize(path) > 1024 * 1024:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None
    import pathspec

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except Exception:  # noqa: BLE001 - a malformed .gitignore ignores nothing
        return None


def discover(paths: list, exclude: list = ()) -> Iterator[str]:
    """Files to lint, in a stable order; a missing path raises FileNotFoundError."""
    seen: set = set()
    count = 0
    exclude_spec = None
    if exclude:
        import pathspec

        exclude_spec = pathspec.GitIgnoreSpec.from_lines(list(exclude))
    for p in paths:
        if p == "-":
            yield p
            continue
        if not os.path.lexists(p):
            raise FileNotFoundError(p)
        if os.path.isdir(p):
            for f in _walk(p, exclude_spec):
                real = os.path.realpath(f)
                if real not in seen:
                    seen.add(real)
                    count += 1
                    if count > MAX_FILES:
                        return
                    yield f
        else:
            real = os.path.realpath(p)
            if real not in seen:
                seen.add(real)
                yield p


def _walk(root: str, exclude_spec) -> Iterator[str]:
    specs: list = []  # (dir, spec) of every .gitignore above the current folder, within root
    for here, dirs, files in os.walk(root, followlinks=False):
        specs = [(d, s) for d, s in specs if here == d or here.startswith(d.rstrip(os.sep) + os.sep)]
        spec = _ignore_spec(here)
        if spec is not None:
            specs.append((here, spec))

        def ignored(name: str, is_dir: bool) -> bool:
            full = os.path.join(here, name)
            for d, s in specs:
                rel = os.path.relpath(full, d).replace(os.sep, "/") + ("/" if is_dir else "")
                if s.match_file(rel):
                    return True
            if exclude_spec is not None:
                rel = os.path.relpath(full, root).replace(os.sep, "/") + ("/" if is_dir else "")
                if exclude_spec.match_file(rel):
                    return True
            return False

        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                         and not os.path.islink(os.path.join(here, d)) and not ignored(d, True))
        for name in sorted(files):
            if name.endswith(SUFFIXES) and not ignored(name, False):
                full = os.path.join(here, name)
                if os.path.isfile(full):
                    yield full


def read(path: str) -> list:
    """The sources of a file (a notebook gives one per code cell)."""
    from torchdoctor.safeio import InputError, read_bounded

    try:
        data = read_bounded(path, MAX_FILE_BYTES, what="source file")
    except InputError as exc:
        raise InputProblem(str(exc).replace("; pipe it to stdin and pass '-' instead", "")) from None
    except OSError as exc:
        raise InputProblem(f"{path}: cannot read ({exc.strerror or exc})") from None
    if b"\x00" in data[:8192]:
        raise InputProblem("binary file (it holds NUL bytes), not Python source")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputProblem(f"not UTF-8 text (byte {exc.start})") from None
    shown = "<stdin>" if path == "-" else path
    if path.endswith(".ipynb"):
        return notebook_cells(shown, text)
    return [Source(shown, text)]


def notebook_cells(path: str, text: str) -> list:
    try:
        nb = json.loads(text)
    except (ValueError, RecursionError):
        raise InputProblem("not a Jupyter notebook (invalid JSON)") from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise InputProblem("not a Jupyter notebook (no `cells` list)")
    parts: list = []
    starts: list = []
    line = 1
    index = 0
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        index += 1
        src = cell.get("source", "")
        if isinstance(src, list):
            src = "".join(s for s in src if isinstance(s, str))
        if not isinstance(src, str):
            continue
        src = _mask_magics(src)
        if not src.endswith("\n"):
            src += "\n"
        starts.append((line, index))
        parts.append(src)
        line += src.count("\n")
    return [Source(path, "".join(parts), cells=starts)]


def _mask_magics(src: str) -> str:
    """IPython magics and shell escapes (``%time``, ``!pip``, ``%%bash`` cells) are not Python:
    blank them, keeping every line where it is."""
    lines = src.split("\n")
    if lines and lines[0].lstrip().startswith("%%"):
        return "\n" * (len(lines) - 1)
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)
