"""`torchdoctor lint`: the command's work (cli.py only registers it). Exit codes: 0 nothing at
or above --fail-on, 1 findings at or above it (or fixes to show with --diff), 2 usage or tool
error."""

from __future__ import annotations

import difflib
import os
import sys
from typing import Optional

from torchdoctor.lint import engine, files, output, writeback
from torchdoctor.lint.lines import split as split_lines
from torchdoctor.lint.knowledge import KINDS, Knowledge, load
from torchdoctor.lint.versions import parse, target_torch

CONFIG_KEYS = {"select", "ignore", "extend-select", "fail-on", "torch-version", "exclude", "format"}
MAX_PATTERN = 1000
"""The longest ``exclude`` pattern a config may hold."""
MAX_VERSION = 64
"""The longest ``torch-version`` a config (or ``--torch-version``) may give."""


MAX_SKIPPED_SHOWN = 50
"""The skipped paths (symlinks out of the folder, unreadable .gitignore files) named on stderr."""


class UsageError(Exception):
    pass


def find_config(start: str) -> Optional[str]:
    here = os.path.abspath(start if os.path.isdir(start) else os.path.dirname(start) or ".")
    for _ in range(64):
        cand = os.path.join(here, "pyproject.toml")
        if os.path.isfile(cand):
            return cand
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return None


def read_config(path: Optional[str]) -> dict:
    """``[tool.torchdoctor.lint]`` of ``path``, every value checked here (a hostile or broken
    pyproject.toml is one UsageError line, exit 2): the tables on the way are tables, lists are
    lists of strings, ``format``/``fail-on`` name a choice, ``torch-version`` is a short
    version, ``exclude`` patterns are not empty and hold no control characters."""
    if not path:
        return {}
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    from torchdoctor.safeio import InputError, clip, read_bounded

    try:
        data = tomllib.loads(read_bounded(path, 1024 * 1024, what="config").decode("utf-8"))
    except RecursionError:  # a 100k-deep array: tomllib recurses per level
        raise UsageError(f"{path}: cannot read [tool.torchdoctor.lint]: nested too deeply") from None
    except (InputError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise UsageError(f"{path}: cannot read [tool.torchdoctor.lint]: {str(exc)[:200]}") from None
    section: object = data
    for name in ("tool", "torchdoctor", "lint"):
        section = section.get(name, {})  # type: ignore[union-attr]
        if not isinstance(section, dict):
            where = {"tool": "[tool]", "torchdoctor": "[tool.torchdoctor]"}.get(name, "[tool.torchdoctor.lint]")
            raise UsageError(f"{path}: {where} must be a table, not {clip(section, 40)}")
    assert isinstance(section, dict)
    unknown = set(section) - CONFIG_KEYS
    if unknown:
        raise UsageError(f"{path}: [tool.torchdoctor.lint]: unknown key(s) {', '.join(sorted(unknown))[:200]} "
                         f"(known: {', '.join(sorted(CONFIG_KEYS))})")
    for key in ("select", "ignore", "extend-select", "exclude"):
        if key in section and not (isinstance(section[key], list) and all(isinstance(x, str) for x in section[key])):
            raise UsageError(f"{path}: [tool.torchdoctor.lint] {key} must be a list of strings")
    for pattern in section.get("exclude") or []:
        if not pattern.strip() or pattern.strip() == "!" or len(pattern) > MAX_PATTERN \
                or any(ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0 for c in pattern):
            raise UsageError(f"{path}: [tool.torchdoctor.lint] exclude: {clip(pattern)} is not a path "
                             f"pattern (empty, a bare '!', a control character, or over {MAX_PATTERN} characters)")
    from torchdoctor.lint.versions import parse

    choices = {"format": output.FORMATS, "fail-on": ("error", "warning", "info", "never")}
    for key, allowed in choices.items():
        if key in section and section[key] not in allowed:  # a list, a number: not one of them
            raise UsageError(f"{path}: [tool.torchdoctor.lint] {key} = {clip(section[key])} is not one of "
                             f"{', '.join(allowed)}")
    if "torch-version" in section:
        tv = section["torch-version"]
        if not isinstance(tv, str) or len(tv) > MAX_VERSION or parse(tv) is None:
            raise UsageError(f"{path}: [tool.torchdoctor.lint] torch-version = {clip(tv)} is not a version "
                             f"such as 2.4 (at most {MAX_VERSION} characters)")
    return section


def select_rules(know: Knowledge, select: list, ignore: list, extend: list) -> list:
    ids = {r.id for r in know.rules}
    tags = {t for r in know.rules for t in r.all_tags}
    for item in list(select) + list(ignore) + list(extend):
        if item != "ALL" and item not in ids and item not in tags:
            import difflib as _d

            close = _d.get_close_matches(item, sorted(ids | tags), n=2)
            raise UsageError(f"unknown lint rule or tag '{item[:80]}'" +
                             (f" (did you mean {', '.join(close)}?)" if close else ""))

    def matches(rule, items) -> bool:
        if "ALL" in items or rule.id in items:
            return True  # an off-by-default rule runs only when named (or ALL)
        return rule.default and any(t in items for t in rule.all_tags)

    chosen = [r for r in know.rules if (matches(r, select) if select else r.default) or matches(r, extend)]
    return [r for r in chosen if not matches(r, ignore)]


def run(paths: tuple, fmt: Optional[str], fail_on: Optional[str], select: tuple, ignore: tuple,
        extend_select: tuple, fix: bool, diff: bool, unsafe_fixes: bool, torch_version: Optional[str],
        config: Optional[str], write, err) -> int:
    paths = list(paths) or ["."]
    cfg_path = config or find_config(paths[0] if paths[0] != "-" else ".")
    cfg = read_config(cfg_path)
    fmt = fmt or cfg.get("format") or "full"
    if fmt not in output.FORMATS:
        raise UsageError(f"format {fmt!r} is not one of {', '.join(output.FORMATS)}")
    fail_on = fail_on or cfg.get("fail-on") or "warning"
    if fail_on not in ("error", "warning", "info", "never"):
        raise UsageError(f"fail-on {fail_on!r} is not one of error, warning, info, never")
    know = load()
    try:
        version_text, origin = target_torch(torch_version or cfg.get("torch-version"), know.newest_torch)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    version = parse(version_text)
    rules = select_rules(know, list(select) or list(cfg.get("select") or []),
                         list(ignore) + list(cfg.get("ignore") or []),
                         list(extend_select) + list(cfg.get("extend-select") or []))
    skipped: list = []
    try:
        targets = list(files.discover(paths, cfg.get("exclude") or [], skipped=skipped))
    except FileNotFoundError as exc:
        raise UsageError(f"{_shown(str(exc.args[0]))}: no such file or directory") from None
    for path, why in skipped[:MAX_SKIPPED_SHOWN]:  # said, never silently dropped
        err(f"torchdoctor lint: {_shown(path)}: {why}")
    if len(skipped) > MAX_SKIPPED_SHOWN:
        err(f"torchdoctor lint: {len(skipped) - MAX_SKIPPED_SHOWN} more path(s) skipped")
    findings: list = []
    sources: dict = {}
    diffs: list = []
    fixed_total = 0
    not_written = 0
    for target in targets:
        try:
            srcs = files.read(target, know.python_cell_magics)
        except files.InputProblem as exc:
            findings.append(engine.parse_error("<stdin>" if target == "-" else target, (1, 1, str(exc)), know, rules))
            continue
        srcs = [piece for src in srcs for piece in _cells_if_broken(src)]
        for src in srcs:
            def lint(text: str, src=src) -> list:
                out = engine.lint_source(text, src.path, know, rules, version, version_text)
                if src.cells:
                    for f in out:
                        _in_notebook(src, f)
                return out

            text = src.text
            if (fix or diff) and not src.cells:
                new, n = engine.fix_source(text, lint, unsafe_fixes)
                if n and diff:
                    fixed_total += n
                    diffs.append("".join(difflib.unified_diff(
                        split_lines(text, keepends=True), split_lines(new, keepends=True),
                        f"a/{src.path}", f"b/{src.path}")))
                elif n and target == "-":
                    fixed_total += n
                    text = new
                elif n:
                    try:
                        writeback.write_fixed(target, text, new)
                    except writeback.NotWritten as exc:
                        not_written += 1
                        err(f"torchdoctor lint: {_shown(target)}: not fixed: {exc}")
                    else:
                        fixed_total += n
                        text = new
                if fix and not diff and target == "-":
                    write(text)  # stdin: the (fixed) source to stdout
            found = lint(text)
            if src.cells:
                lines = split_lines(text)
                bounds = [f for f, _ in src.cells] + [len(lines) + 1]
                for (first, number), end in zip(src.cells, bounds[1:]):
                    sources[(src.path, number)] = lines[first - 1:end - 1]
            else:
                sources[(src.path, None)] = split_lines(text)
            findings.extend(found)
    if diff:
        write("".join(diffs))
        err(f"torchdoctor lint: {fixed_total} fix(es) would be applied")
        return 1 if fixed_total else 0
    if not (fix and targets == ["-"]):
        write(output.render(fmt, findings, rules, sources))
    if fmt in ("full", "concise"):
        fixable = sum(1 for f in findings if f.fix and (f.fix["applicability"] == "safe" or unsafe_fixes))
        summary = (f"torchdoctor lint: {len(findings)} finding(s) in {len(targets)} file(s) "
                   f"(target torch {version_text}: {origin})")
        if fix:
            summary += f", {fixed_total} fixed"
            if not_written:
                summary += f", {not_written} file(s) left unchanged (see above)"
        elif fixable:
            summary += f", {fixable} fixable with --fix"
        err(summary)
    if not_written:
        return 2  # a fix that could not be written is a tool error, whatever the findings
    if fail_on == "never":
        return 0
    rank = engine.SEVERITY_RANK[fail_on]
    return 1 if any(engine.SEVERITY_RANK[f.severity] >= rank for f in findings) else 0


def _in_notebook(src: "files.Source", f: "engine.Finding") -> None:
    """A finding of a notebook's joined cells, placed in its cell (cell-relative line, the
    column in the cell's own text) and in the raw .ipynb file (``file_region``: SARIF and
    GitHub annotations point there)."""
    f.cell, f.line = src.locate(f.line)
    end_cell, f.end_line = src.locate(f.end_line)
    book = src.notebook
    if book is not None:
        first, last = book.cell(f.cell), book.cell(end_cell)
        f.col += first.shift(f.line) if first else 0
        f.end_col += last.shift(f.end_line) if last else 0
        f.file_region = book.region(f.cell, f.line, f.col, f.end_line, f.end_col, end_cell)
    f.fix = None  # notebooks are reported, not rewritten
    f.edits, f.expect = [], []


def _cells_if_broken(src: "files.Source") -> list:
    """A notebook whose joined cells do not parse: each cell that does not parse on its own is
    its own parse-error, and the other cells are linted joined as before."""
    if not src.cells or engine.parse_source(src.text, src.path)[0] is not None:
        return [src]
    lines = split_lines(src.text, keepends=True)
    bounds = [f for f, _ in src.cells] + [len(lines) + 1]
    good_text, good_cells, broken = [], [], []
    line = 1
    for (first, number), end in zip(src.cells, bounds[1:]):
        text = "".join(lines[first - 1:end - 1])
        if engine.parse_source(text, src.path)[0] is None:
            broken.append(files.Source(src.path, text, cells=[(1, number)], notebook=src.notebook))
        else:
            good_cells.append((line, number))
            good_text.append(text)
            line += len(split_lines(text))
    good = [files.Source(src.path, "".join(good_text), cells=good_cells, notebook=src.notebook)] if good_cells else []
    return broken + good


def _shown(path: str) -> str:
    from torchdoctor.sanitize import one_line

    return one_line(path)[:300]


def main(**kw) -> None:
    """Entry from the click command."""
    from torchdoctor.errors import UserError

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def err(text: str) -> None:
        sys.stderr.write(text + "\n")

    try:
        code = run(write=write, err=err, **kw)
    except UsageError as exc:
        raise UserError(f"lint: {exc}") from None
    sys.exit(code)


__all__ = ["run", "main", "KINDS"]
