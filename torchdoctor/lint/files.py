"""Which files to lint and how to read them: folders recursively (honouring ``.gitignore``
files and a few always-skipped folders), ``-`` for stdin, ``.ipynb`` notebooks cell by cell.
Every read is bounded; symlinked folders are not followed (no loops), a symlinked file only
when its target is inside the folder walked, a file is linted once. Patterns are matched by
:mod:`torchdoctor.lint.ignore` (bounded time, whatever the pattern)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterator, Optional

from torchdoctor.lint.ignore import IgnoreList, split_lines

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
    notebook: Optional[object] = None
    """A notebook's :class:`torchdoctor.lint.notebook.Notebook` (raw-file positions)."""

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


MAX_IGNORE_BYTES = 1024 * 1024
"""A larger ``.gitignore`` is skipped (and said)."""


def _inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _ignore_list(directory: str, real_root: str, say) -> Optional[IgnoreList]:
    """The ``.gitignore`` of a folder, read bounded; one that is not a regular file inside the
    walked root (a symlink out of it, a FIFO) is skipped and said."""
    path = os.path.join(directory, ".gitignore")
    if not os.path.lexists(path):
        return None
    if os.path.islink(path) and not _inside(os.path.realpath(path), real_root):
        say(path, "a symlink to a file outside the folder being linted; not read")
        return None
    try:
        if not os.path.isfile(path):
            say(path, "not a regular file; not read")
            return None
        with open(path, "rb") as fh:
            data = fh.read(MAX_IGNORE_BYTES + 1)
    except OSError as exc:
        say(path, f"cannot read ({exc.strerror or exc}); not used")
        return None
    if len(data) > MAX_IGNORE_BYTES:
        say(path, f"larger than {MAX_IGNORE_BYTES} bytes; not used")
        return None
    spec = IgnoreList(split_lines(data.decode("utf-8", errors="replace")), source=path)
    for where, why in spec.problems:
        say(where, why)
    return spec or None


def discover(paths: list, exclude: list = (), skipped: Optional[list] = None) -> Iterator[str]:
    """Files to lint, in a stable order; a missing path raises FileNotFoundError.

    ``exclude``: gitignore-style patterns relative to each folder walked. ``skipped``: when a
    list, what was left out and why is appended to it as ``(path, reason)`` pairs: a file
    reached through a symlink that leaves the walked folder or dangles, a non-regular file, a
    ``.gitignore`` or pattern that was not used, the walk stopping at :data:`MAX_FILES`. A path
    named on the command line is read as given (a symlink there is the user's choice)."""
    def say(path: str, reason: str) -> None:
        if skipped is not None:
            skipped.append((path, reason))

    seen: set = set()
    count = 0
    exclude_list = None
    if exclude:
        exclude_list = IgnoreList(list(exclude), source="exclude") or None
        for where, why in (exclude_list.problems if exclude_list is not None else []):
            say(where, why)
    for p in paths:
        if p == "-":
            yield p
            continue
        if not os.path.lexists(p):
            raise FileNotFoundError(p)
        if os.path.isdir(p):
            for f in _walk(p, exclude_list, say):
                real = os.path.realpath(f)
                if real not in seen:
                    seen.add(real)
                    count += 1
                    if count > MAX_FILES:
                        say(p, f"more than {MAX_FILES} files; the rest are not linted")
                        return
                    yield f
        else:
            real = os.path.realpath(p)
            if real not in seen:
                seen.add(real)
                yield p


def _walk(root: str, exclude_list: Optional[IgnoreList], say=lambda path, reason: None) -> Iterator[str]:
    """Files under root. ``.gitignore`` files apply to their folder and below, the deepest one
    with a matching pattern deciding (git's precedence); ``exclude_list`` (relative to root) is
    applied on top. Symlinked folders are not entered; a symlinked file is linted only when its
    target is inside root."""
    real_root = os.path.realpath(root)
    specs: list = []  # (its folder's components below root, IgnoreList), this folder and above
    for here, dirs, files in os.walk(root, followlinks=False):
        rel = os.path.relpath(here, root)
        rel_parts = [] if rel == os.curdir else rel.split(os.sep)
        specs = [(p, s) for p, s in specs if len(p) < len(rel_parts) and rel_parts[:len(p)] == p]
        spec = _ignore_list(here, real_root, say)
        if spec is not None:
            specs.append((rel_parts, spec))

        def ignored(name: str, is_dir: bool) -> bool:
            comps = rel_parts + [name]
            for p, s in reversed(specs):
                verdict = s.decide(comps[len(p):], is_dir)
                if verdict is not None:
                    if verdict:
                        return True
                    break
            return exclude_list is not None and bool(exclude_list.decide(comps, is_dir))

        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.endswith(".egg-info")
                         and not os.path.islink(os.path.join(here, d)) and not ignored(d, True))
        for name in sorted(files):
            if not name.endswith(SUFFIXES) or ignored(name, False):
                continue
            full = os.path.join(here, name)
            if os.path.islink(full):
                target = os.path.realpath(full)
                if not os.path.exists(full):
                    say(full, "a dangling (or looping) symlink; not linted")
                    continue
                if not _inside(target, real_root):
                    say(full, "a symlink to a file outside the folder being linted; not linted")
                    continue
            if os.path.isfile(full):
                yield full
            else:
                say(full, "not a regular file; not linted")


def read(path: str, python_cell_magics=()) -> list:
    """The sources of a file (a notebook gives one, its code cells joined; ``python_cell_magics``:
    the cell magics whose body is Python, from the lint knowledge)."""
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
        return notebook_cells(shown, text, python_cell_magics)
    return [Source(shown, text)]


def notebook_cells(path: str, text: str, python_cell_magics=()) -> list:
    """A notebook as one source (its code cells joined, read as IPython reads them: see
    :mod:`torchdoctor.lint.ipython`), with where each cell is in the raw file
    (:mod:`torchdoctor.lint.notebook`)."""
    from torchdoctor.lint import notebook

    try:
        code, starts, book = notebook.read(text, python_cell_magics)
    except notebook.NotJSON:
        raise InputProblem("not a Jupyter notebook (invalid JSON)") from None
    except ValueError:
        raise InputProblem("not a Jupyter notebook (no `cells` list)") from None
    return [Source(path, code, cells=starts, notebook=book)]
