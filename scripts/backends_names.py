"""The names a release's ``torch.backends`` defines, read from its Python sources by ``ast``
(nothing imported): what ``torch.backends.<module>.<name>`` resolves to in that release.

Counted: a package's module-level bindings (def, class, assignment, import, including inside
top-level if/try blocks); the class body of the ``sys.modules[__name__] = X(...)`` replacement
(ContextProp flags such as ``cudnn.benchmark``); the attributes an object built at module level
answers through ``__getattr__`` (``name == "allow_tf32"`` in cuBLASModule gives
``cuda.matmul.allow_tf32``); and each submodule file (``cudnn/rnn.py`` is ``cudnn.rnn``) with its
own bindings. Pure functions of source text: scripts/gen_release_tables.py records their output,
tests/test_release_generator.py runs them on recorded sources."""

from __future__ import annotations

import ast
from typing import Iterable


def _top(body: Iterable[ast.stmt]) -> Iterable[ast.stmt]:
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top(node.body)
            yield from _top(node.orelse)
        elif isinstance(node, ast.Try):
            for part in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _top(part)
        elif isinstance(node, (ast.With,)):
            yield from _top(node.body)


def _bound(node: ast.stmt) -> list[str]:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.Assign):
        out = []
        for target in node.targets:
            elts = target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]
            out += [t.id for t in elts if isinstance(t, ast.Name)]
        return out
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"]
    return []


def _getattr_names(cls: ast.ClassDef) -> list[str]:
    """Strings compared with ``==`` against the attribute name in __getattr__ / __setattr__."""
    out = []
    for fn in cls.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in ("__getattr__", "__setattr__") and fn.args.args[1:]:
            arg = fn.args.args[1].arg
            for node in ast.walk(fn):
                if (isinstance(node, ast.Compare) and isinstance(node.left, ast.Name) and node.left.id == arg
                        and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)
                        and isinstance(node.comparators[0], ast.Constant)
                        and isinstance(node.comparators[0].value, str)):
                    out.append(node.comparators[0].value)
    return out


def _self_attributes(cls: ast.ClassDef, known: dict) -> set:
    """``self.X = ...`` in __init__ of a class and its bases among ``known`` (PropModule's ``m``)."""
    out: set = set()
    for klass in [cls] + [known[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in known]:
        for fn in klass.body:
            if isinstance(fn, ast.FunctionDef) and fn.name == "__init__":
                for node in ast.walk(fn):
                    if isinstance(node, ast.Assign):
                        out.update(t.attr for t in node.targets if isinstance(t, ast.Attribute)
                                   and isinstance(t.value, ast.Name) and t.value.id == "self")
    return out


def _call_class(value: ast.AST) -> str | None:
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value.func.id
    return None


def module_names(source: str, classes: dict | None = None) -> tuple[set, dict]:
    """(names a module's source binds, its classes by name). ``classes``: classes visible from
    elsewhere (torch/backends/__init__.py's, imported into every submodule)."""
    tree = ast.parse(source)
    own = {n.name: n for n in _top(tree.body) if isinstance(n, ast.ClassDef)}
    known = {**(classes or {}), **own}
    names: set = set()
    objects: list = []
    for node in _top(tree.body):
        names.update(_bound(node))
        if isinstance(node, ast.Assign) and _call_class(node.value) in known:
            objects += [(t.id, known[_call_class(node.value)]) for t in node.targets if isinstance(t, ast.Name)]
        # sys.modules[__name__] = CudnnModule(sys.modules[__name__], __name__)
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript)
                and ast.unparse(node.targets[0].value) == "sys.modules" and _call_class(node.value) in known):
            cls = known[_call_class(node.value)]
            names.update(_self_attributes(cls, known))
            for item in _top(cls.body):
                names.update(_bound(item))
                if isinstance(item, ast.Assign) and _call_class(item.value) in known:
                    objects += [(t.id, known[_call_class(item.value)]) for t in item.targets
                                if isinstance(t, ast.Name)]
    for attr, cls in objects:
        names.update(f"{attr}.{child}" for child in _getattr_names(cls))
    return {n for n in names if not n.startswith("_")}, own


def release_names(sources: dict[str, str]) -> list[str]:
    """Every dotted name under torch.backends (without the prefix) of one release, from its
    ``torch/backends/**.py`` sources ({member path: text}); private modules left out."""
    root = sources.get("torch/backends/__init__.py", "")
    names, root_classes = module_names(root) if root else (set(), {})
    for path in sorted(sources):
        parts = path[len("torch/backends/"):].split("/")
        if path == "torch/backends/__init__.py" or any(p.startswith("_") and p != "__init__.py" for p in parts):
            continue
        if len(parts) == 2 and parts[1] == "__init__.py":
            dotted = parts[0]
        elif len(parts) == 2 and parts[1].endswith(".py"):
            dotted = f"{parts[0]}.{parts[1][:-3]}"
        elif len(parts) == 1 and parts[0].endswith(".py"):
            dotted = parts[0][:-3]
        else:
            continue
        names.add(dotted)
        try:
            own, _ = module_names(sources[path], root_classes)
        except SyntaxError:
            continue
        names.update(f"{dotted}.{n}" for n in own)
    return sorted(names)
