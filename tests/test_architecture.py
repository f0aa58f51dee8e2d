"""The shape of the package, enforced (issue 10): no import cycle, and the layers import only
downwards. Imports are read from the source (AST), those inside functions included, so a
lazy import cannot hide a cycle; a module's implicit import of its parent package is not
counted (import-linter's convention).

- no cycle among torchdoctor's modules;
- ``facts.py`` imports no other torchdoctor module (it is the contract every layer shares);
- ``render/`` imports nothing from probes, importers, engine, settings or the in-process side
  (renderers are pure functions of a Report);
- ``probes/`` import nothing from engine, render or importers (probes observe, never judge);
- no source file grows past 800 lines; the few that are still longer may only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "torchdoctor"

# Files still over the limit, with their size when the limit was set (2026-12-01): each may
# only shrink, and leaves this list once it is under 800 lines.
OVERSIZED: dict[str, int] = {}
MAX_LINES = 800


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".") if is_package else name.split(".")[:-1]
                    base = base[: len(base) - (node.level - 1)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                for alias in node.names:  # `from pkg import sub` imports the submodule, not pkg's body
                    full = f"{module}.{alias.name}"
                    targets.add(full if full in modules else module)
        deps = set()
        for target in targets:
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and target != name and target.startswith("torchdoctor"):
                deps.add(target)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle():
    found = cycles(import_graph())
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)


def _imports_of(prefix: str) -> dict[str, set[str]]:
    return {m: deps for m, deps in import_graph().items() if m == prefix or m.startswith(prefix + ".")}


def _violations(prefix: str, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f"{m} -> {d}" for m, deps in _imports_of(prefix).items() for d in deps
                  if any(d == f or d.startswith(f + ".") for f in forbidden))


def test_facts_import_no_other_module():
    """The fact model depends on its model base alone (torchdoctor/model.py: pydantic's or torchdoctor.lean's),
    and that base on nothing of torchdoctor's but torchdoctor.lean, which imports none."""
    graph = import_graph()
    assert graph["torchdoctor.facts"] == {"torchdoctor.model"}
    assert graph["torchdoctor.model"] <= {"torchdoctor.lean"}
    assert graph["torchdoctor.lean"] == set()


def test_renderers_import_no_probe_importer_engine_or_settings():
    forbidden = ("torchdoctor.probes", "torchdoctor.importers", "torchdoctor.engine",
                 "torchdoctor.settings", "torchdoctor.runtime", "torchdoctor.inprocess",
                 "torchdoctor.api")
    assert _violations("torchdoctor.render", forbidden) == []


def test_probes_import_no_engine_renderer_or_importer():
    forbidden = ("torchdoctor.engine", "torchdoctor.render", "torchdoctor.importers",
                 "torchdoctor.rules", "torchdoctor.api")
    assert _violations("torchdoctor.probes", forbidden) == []


def test_no_source_file_grows_past_the_limit():
    too_long = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        limit = OVERSIZED.get(rel, MAX_LINES)
        if lines > limit:
            too_long[rel] = (lines, limit)
    assert not too_long, f"files over their limit (lines, limit): {too_long}"
    for rel in OVERSIZED:
        path = PACKAGE / rel
        if path.exists():
            assert len(path.read_text(encoding="utf-8").splitlines()) > MAX_LINES, (
                f"{rel} is under {MAX_LINES} lines now: remove it from OVERSIZED")
