"""`torchdoctor lint` of one text held in memory: the findings `lint --format json` lists for a
file of that name and content. Nothing is read from disk (the name is only shown and says
whether the text is a notebook) and nothing is written (fixes are reported, never applied).

Only lint's public pieces are used: ``knowledge.load``, ``command.select_rules``,
``versions.target_torch``, ``files.Source``/``notebook_cells`` and ``engine.lint_source``."""

from __future__ import annotations

import json
from typing import Optional, Sequence

from torchdoctor.errors import UserError


def lint_text(source: str, filename: str = "<source>", *, torch_version: Optional[str] = None,
              select: Sequence[str] = (), ignore: Sequence[str] = ()) -> dict:
    """``{"path", "torch_version", "torch_version_from", "rules_run", "findings"}``; a bad
    argument (unknown rule, bad version) raises :class:`UserError` with one line."""
    from torchdoctor.lint import engine, files, output
    from torchdoctor.lint.command import UsageError, select_rules
    from torchdoctor.lint.knowledge import load
    from torchdoctor.lint.versions import parse, target_torch

    know = load()
    try:
        version_text, origin = target_torch(torch_version, know.newest_torch)
        rules = select_rules(know, list(select), list(ignore), [])
    except (ValueError, UsageError) as exc:
        raise UserError(f"lint: {str(exc).replace('--torch-version', 'torch_version')}") from None
    version = parse(version_text)
    findings: list = []
    if source.startswith("\ufeff"):
        source = source[1:]  # as a file read with utf-8-sig
    if "\x00" in source[:8192]:
        findings.append(engine.parse_error(filename, (1, 1, "binary text (it holds NUL bytes), not Python source"),
                                           know, rules))
        sources: list = []
    elif filename.endswith(".ipynb"):
        try:
            sources = _split_broken(files.notebook_cells(filename, source)[0], engine)
        except files.InputProblem as exc:
            findings.append(engine.parse_error(filename, (1, 1, str(exc)), know, rules))
            sources = []
    else:
        sources = [files.Source(filename, source)]
    for src in sources:
        found = engine.lint_source(src.text, src.path, know, rules, version, version_text)
        if src.cells:
            for f in found:
                f.cell, f.line = src.locate(f.line)
                _, f.end_line = src.locate(f.end_line)
                f.fix = None  # as lint does: notebooks are reported, not rewritten
        findings.extend(found)
    return {"path": filename, "torch_version": version_text, "torch_version_from": origin,
            "rules_run": len(rules), "findings": json.loads(output.as_json(findings))}


def _split_broken(src, engine) -> list:
    """A notebook whose joined cells do not parse: each cell that does not parse alone is linted
    alone (its parse-error), the others joined (as `torchdoctor lint` reads a notebook)."""
    from torchdoctor.lint import files
    from torchdoctor.lint.lines import split as split_lines

    if not src.cells or engine.parse_source(src.text, src.path)[0] is not None:
        return [src]
    lines = split_lines(src.text, keepends=True)
    bounds = [first for first, _ in src.cells] + [len(lines) + 1]
    good_text: list = []
    good_cells: list = []
    broken: list = []
    line = 1
    for (first, number), end in zip(src.cells, bounds[1:]):
        text = "".join(lines[first - 1:end - 1])
        if engine.parse_source(text, src.path)[0] is None:
            broken.append(files.Source(src.path, text, cells=[(1, number)]))
        else:
            good_cells.append((line, number))
            good_text.append(text)
            line += text.count("\n")
    good = [files.Source(src.path, "".join(good_text), cells=good_cells)] if good_cells else []
    return broken + good
