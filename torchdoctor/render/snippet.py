"""Report.settings -> a Python setup snippet that runs as pasted (templates/setup.py.j2).

The statements are the plan's own (``SettingRec.code``: written once by the engine from the
settings registry's typed rendering, never from user text); this renderer only arranges them
and tags each with the rule that asked for it. It imports nothing but the Report model.
"""

from __future__ import annotations

import ast
import builtins
import sys
import textwrap
from typing import Optional

from torchdoctor.report import Report

_DEFINED = {"torch", "DATALOADER_KWARGS"}
"""Names the template itself imports or defines."""
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ())) or frozenset(
    {"os", "random", "warnings", "sys", "math", "functools", "contextlib"})  # Python 3.9


def _template():
    from torchdoctor.render.text import templates

    return templates().get_template("setup.py.j2")


def _tag(code: str, rule: str, indent: str = "") -> list[str]:
    lines = code.splitlines()
    out = [f"{indent}{lines[0]}  # {rule}"]
    out += [f"{indent}{line}" if line else "" for line in lines[1:]]
    return out


def statements(report: Report) -> dict[str, list[str]]:
    """The plan's code (``SettingRec.code``, written by the engine) grouped as the snippet
    arranges it: environment first, then torch calls, CUDA-only calls, values for user code."""
    groups: dict[str, list[str]] = {"env": [], "torch": [], "cuda": [], "code": []}
    for rec in report.settings:
        code, kind, guard = rec.code, rec.kind, rec.guard
        if kind == "env":
            groups["env"] += _tag(code, rec.rule)
        elif kind == "code":
            groups["code"] += _tag(code, rec.rule)
        elif guard == "cuda":
            groups["cuda"] += _tag(code, rec.rule, indent="    ")
        else:
            groups["torch"] += _tag(code, rec.rule)
    return groups


def render(report: Report) -> str:
    from torchdoctor.version import __version__

    groups = statements(report)
    workload = report.workload.model_dump(exclude_defaults=True) if report.workload else {}
    described = ", ".join(f"{k}={v}" for k, v in sorted(workload.items())) or "none declared"
    return _template().render(
        version=__version__,
        torch_version=safe_version(report.torch_version),
        workload=described,
        groups=groups,
        imports=imports(groups),
        import_torch=bool(groups["torch"] or groups["cuda"]) or "torch" in used_names(groups),
        code_names=_code_names(groups["code"]),
        code_help=_code_help(report, groups["code"]),
    )


def imports(groups: dict[str, list[str]]) -> list[str]:
    """The standard-library modules the statements use and do not import themselves, read from
    their syntax tree (``os.environ[...]`` needs ``import os``; a ``random.seed`` inside a
    function too; ``import warnings`` inside a statement needs nothing more), sorted."""
    return sorted(name for name in used_names(groups) if name in _STDLIB)


def used_names(groups: dict[str, list[str]]) -> set[str]:
    """Names the statements read and do not bind themselves (nor the template, nor builtins)."""
    loaded: set[str] = set()
    bound: set[str] = set()
    for lines in groups.values():
        if not lines:
            continue
        try:
            tree = ast.parse(textwrap.dedent("\n".join(lines)))
        except SyntaxError:  # the registry's code is checked to parse; never guess past it
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                (loaded if isinstance(node.ctx, ast.Load) else bound).add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.add(node.name)
            elif isinstance(node, ast.arg):
                bound.add(node.arg)
            elif isinstance(node, ast.ExceptHandler) and node.name:
                bound.add(node.name)
    return loaded - bound - (_DEFINED - {"torch"}) - set(dir(builtins))


def safe_version(text: Optional[str]) -> str:
    """A version for the snippet's comment: parsed and re-printed, so a version string from a
    pasted report or --facts file can never smuggle a newline (and code) into the snippet."""
    from packaging.version import InvalidVersion, Version

    try:
        return str(Version(str(text))) if text else "unknown"
    except InvalidVersion:
        return "unknown"


def _code_names(lines: list[str]) -> dict[str, bool]:
    text = "\n".join(lines)
    return {"DATALOADER_KWARGS": "DATALOADER_KWARGS[" in text}


def _code_help(report: Report, lines: list[str]) -> list[str]:
    """The comment above the code values: how the user's code takes each constant the plan's
    settings define (their registry ``uses``, carried in the plan), once each, in plan order
    (wrapped between uses, never inside one)."""
    text = "\n".join(lines)
    uses = list(dict.fromkeys(use for rec in report.settings for use in rec.uses))
    if "torch.cuda.amp.autocast()" in text:  # torch < 1.10: no torch.autocast(dtype=...)
        uses = ["torch.cuda.amp.autocast() (float16 only)" if u.startswith("torch.autocast") else u
                for u in uses]
    if not uses:
        return []
    out, line = [], "# Values for your own code:"
    for i, use in enumerate(uses):
        piece = f" {use}" + ("." if i == len(uses) - 1 else ",")
        if len(line) + len(piece) > 100:
            out.append(line)
            line = "#"
        line += piece
    return out + [line]
