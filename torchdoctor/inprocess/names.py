"""Which names under ``torch.backends`` are real: derived from PyTorch itself.

The source file of each loaded ``torch.backends`` module, parsed with ``ast``, says how
every module-level and class-level name is bound (:class:`Kind`); the classes of the module
objects (PropModule replacements, cuBLASModule) add what their methods set and what their
``__getattr__``/``__setattr__`` accept. :func:`scan` compares that model with what the
modules and their objects hold now: an attribute PyTorch does not have, or a value of the
wrong kind where PyTorch has a function, class or object, is dead (:class:`Dead`). Never a
list of known fakes. torch is never imported here: only modules already loaded are read.
"""

from __future__ import annotations

import ast
import builtins
import functools
import os
import pkgutil
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

# --------------------------------------------------------------------------------------
# which names are real: derived from PyTorch's source
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Kind:
    """How a name is bound in source: function (with its positional arity), class, the
    result of calling ``callee``, a module, or anything else."""

    tag: str  # function | class | call | module | import | any
    arity: int = 0
    callee: str = ""
    params: tuple[str, ...] = field(default=(), compare=False)
    """A function's positional parameter annotations as written in source ("bool"; "" when
    none), so that a "did you mean f(value)" is only offered for a value f takes. Not part of
    the kind's identity (how the name is bound)."""


ANY = Kind("any")
IMPORTED = Kind("import")
NOT_SETTINGS = {"module", "import", "class"}


@dataclass(frozen=True)
class ClassInfo:
    names: dict[str, frozenset[Kind]]
    """Names bound in the class body."""
    instance: frozenset[str]
    """Attributes its methods set on instances (self.x, setattr(self, "x")), mangled."""
    virtual: frozenset[str]
    """Names a __getattr__/__setattr__ compares against (cuBLASModule's attributes)."""


@dataclass(frozen=True)
class SourceInfo:
    names: dict[str, frozenset[Kind]]
    """Module-level bindings, `global` names and __all__ entries."""
    classes: dict[str, ClassInfo]
    star_imports: tuple[str, ...]


def _block_bindings(stmts: Iterable[ast.stmt], bind: Any, star: list) -> None:
    for node in stmts:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            positional = list(getattr(args, "posonlyargs", [])) + list(args.args)
            bind(node.name, Kind("function", arity=len(positional), params=_annotations(positional)))
        elif isinstance(node, ast.ClassDef):
            bind(node.name, Kind("class"))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                _bind_target(target, _value_kind(node.value), bind)
        elif isinstance(node, ast.AnnAssign):
            _bind_target(node.target, _value_kind(node.value) if node.value else ANY, bind)
        elif isinstance(node, ast.AugAssign):
            _bind_target(node.target, ANY, bind)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                bind(alias.asname or alias.name.split(".")[0], Kind("module"))
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    star.append(("." * node.level) + (node.module or ""))
                else:
                    bind(alias.asname or alias.name, IMPORTED)
        else:
            if isinstance(node, (ast.For, ast.AsyncFor)):
                _bind_target(node.target, ANY, bind)
            if isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    if item.optional_vars is not None:
                        _bind_target(item.optional_vars, ANY, bind)
            for field in ("body", "orelse", "finalbody"):
                sub = getattr(node, field, None)
                if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                    _block_bindings(sub, bind, star)
            for handler in getattr(node, "handlers", None) or []:
                if handler.name:
                    bind(handler.name, ANY)
                _block_bindings(handler.body, bind, star)
            for case in getattr(node, "cases", None) or []:  # match (3.10+)
                _block_bindings(case.body, bind, star)


def _annotations(positional: list) -> tuple[str, ...]:
    """Source text of the first two positional parameters' annotations ("" for none)."""
    texts = []
    for arg in positional[:2]:
        try:
            texts.append(ast.unparse(arg.annotation) if arg.annotation is not None else "")
        except Exception:  # noqa: BLE001 - an annotation we cannot print checks nothing
            texts.append("")
    return tuple(texts)


def _bind_target(target: ast.expr, kind: Kind, bind: Any) -> None:
    if isinstance(target, ast.Name):
        bind(target.id, kind)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for elt in target.elts:
            _bind_target(elt, ANY, bind)
    elif isinstance(target, ast.Starred):
        _bind_target(target.value, ANY, bind)


def _value_kind(value: Optional[ast.expr]) -> Kind:
    if isinstance(value, ast.Lambda):
        return Kind("function", arity=len(value.args.args))
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return Kind("call", callee=value.func.id)
    return ANY


def _mangle(cls_name: str, attr: str) -> str:
    if attr.startswith("__") and not attr.endswith("__"):
        return f"_{cls_name.lstrip('_')}{attr}"
    return attr


def _class_info(node: ast.ClassDef) -> ClassInfo:
    names: dict[str, set[Kind]] = {}
    # a `global x` in the class body makes `x = ...` there a module global (opt_einsum)
    module_level = {n for stmt in node.body if isinstance(stmt, ast.Global) for n in stmt.names}

    def bind(name: str, kind: Kind) -> None:
        if name in module_level:
            return
        if kind.tag == "function" and kind.arity:  # a method: the instance is not an argument
            kind = Kind("function", arity=kind.arity - 1, params=kind.params[1:])
        names.setdefault(_mangle(node.name, name), set()).add(kind)

    _block_bindings(node.body, bind, [])
    instance: set[str] = set()
    virtual: set[str] = set()
    for fn in node.body:  # methods (a nested function is walked with its method)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
            continue
        self_name = fn.args.args[0].arg
        for sub in ast.walk(fn):
            targets: list[ast.expr] = []
            if isinstance(sub, ast.Assign):
                targets = list(sub.targets)
            elif isinstance(sub, (ast.AnnAssign, ast.AugAssign)):
                targets = [sub.target]
            for t in targets:
                for el in ast.walk(t):
                    if (
                        isinstance(el, ast.Attribute)
                        and isinstance(el.value, ast.Name)
                        and el.value.id == self_name
                    ):
                        instance.add(_mangle(node.name, el.attr))
            if isinstance(sub, ast.Call) and len(sub.args) >= 2:
                f = sub.func
                fname = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
                first, second = sub.args[0], sub.args[1]
                if (
                    fname in ("setattr", "__setattr__")
                    and isinstance(first, ast.Name)
                    and first.id == self_name
                    and isinstance(second, ast.Constant)
                    and isinstance(second.value, str)
                ):
                    instance.add(second.value)
            if fn.name in ("__getattr__", "__setattr__", "__getattribute__") and isinstance(
                sub, ast.Compare
            ):
                for c in [sub.left, *sub.comparators]:
                    for el in ast.walk(c):
                        if (
                            isinstance(el, ast.Constant)
                            and isinstance(el.value, str)
                            and el.value.isidentifier()
                        ):
                            virtual.add(el.value)
    return ClassInfo(
        {k: frozenset(v) for k, v in names.items()}, frozenset(instance), frozenset(virtual)
    )


@functools.lru_cache(maxsize=128)
def _parse_source(path: str, mtime_ns: int, size: int) -> Optional[SourceInfo]:
    try:
        with open(path, "rb") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError):
        return None
    names: dict[str, set[Kind]] = {}
    star: list[str] = []

    def bind(name: str, kind: Kind) -> None:
        names.setdefault(name, set()).add(kind)

    _block_bindings(tree.body, bind, star)
    classes: dict[str, ClassInfo] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):  # a function or class body writing a module global
            for name in node.names:
                bind(name, ANY)
        elif isinstance(node, ast.ClassDef) and node.name not in classes:
            classes[node.name] = _class_info(node)
    all_names = _dunder_all(tree)
    for name in all_names:
        names.setdefault(name, {ANY})
    return SourceInfo({k: frozenset(v) for k, v in names.items()}, classes, tuple(star))


def _dunder_all(tree: ast.Module) -> list[str]:
    out: list[str] = []
    for node in tree.body:
        target = value = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            target, value = node.target, node.value
        if (
            isinstance(target, ast.Name)
            and target.id == "__all__"
            and isinstance(value, (ast.List, ast.Tuple))
        ):
            out += [
                e.value
                for e in value.elts
                if isinstance(e, ast.Constant) and isinstance(e.value, str)
            ]
    return out


def source_info(path: Optional[str]) -> Optional[SourceInfo]:
    """Bindings of a Python source file (cached on path, mtime and size)."""
    if not path or not path.endswith(".py"):
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return _parse_source(path, st.st_mtime_ns, st.st_size)


# --------------------------------------------------------------------------------------
# the scan
# --------------------------------------------------------------------------------------


def _is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def original(mod: types.ModuleType) -> types.ModuleType:
    """The module a sys.modules-replacement object (PropModule) wraps, else the module itself."""
    if type(mod) is types.ModuleType:
        return mod
    own_name = vars(mod).get("__name__")
    for value in vars(mod).values():
        if (
            isinstance(value, types.ModuleType)
            and type(value) is types.ModuleType
            and vars(value).get("__name__") == own_name
        ):
            return value
    return mod


def _module_file(name: str, orig: types.ModuleType) -> Optional[str]:
    path = vars(orig).get("__file__")
    if isinstance(path, str):
        return path
    torch = sys.modules.get("torch")
    base = os.path.dirname(getattr(torch, "__file__", "") or "")
    if not base or not name.startswith("torch."):
        return None
    rel = os.path.join(base, *name.split(".")[1:])
    for candidate in (os.path.join(rel, "__init__.py"), rel + ".py"):
        if os.path.isfile(candidate):
            return candidate
    return None


def _class_source(cls: type) -> Optional[ClassInfo]:
    mod = sys.modules.get(getattr(cls, "__module__", "") or "")
    if mod is None:
        return None
    info = source_info(_module_file(cls.__module__, original(mod)))
    if info is None:
        return None
    return info.classes.get(cls.__name__)


def own_classes(obj: Any) -> list[type]:
    cls = obj if isinstance(obj, type) else type(obj)
    return [k for k in cls.__mro__ if k not in (types.ModuleType, object)]


@dataclass
class _Names:
    """What is real on one object: names with their kinds, and a resolver for callees."""

    kinds: dict[str, frozenset[Kind]]
    plain: set[str]
    namespace: dict[str, Any]

    def real(self, name: str) -> bool:
        return _is_dunder(name) or name in self.kinds or name in self.plain


def class_names(obj: Any) -> tuple[dict[str, frozenset[Kind]], set[str], set[str]]:
    """Names an instance of ``obj`` (or of the class ``obj``) really has: class-body names
    with kinds, other names (runtime class dicts, attributes set in methods), and names its
    __getattr__/__setattr__ accept."""
    kinds: dict[str, frozenset[Kind]] = {}
    plain: set[str] = set()
    virtual: set[str] = set()
    for cls in own_classes(obj):
        info = _class_source(cls)
        plain.update(vars(cls))
        if info is None:
            continue
        for name, k in info.names.items():
            kinds.setdefault(name, k)
        plain.update(info.instance)
        virtual.update(info.virtual)
    return kinds, plain, virtual


def _namespace(mod_name: str) -> dict[str, Any]:
    mod = sys.modules.get(mod_name)
    return dict(vars(original(mod))) if isinstance(mod, types.ModuleType) else {}


def _kind_ok(kinds: frozenset[Kind], value: Any, namespace: dict[str, Any]) -> Optional[Kind]:
    """None when ``value`` fits one of the ways the name is bound in source, else the
    expected kind (for the message)."""
    expected: Optional[Kind] = None
    for k in kinds:
        if k.tag in ("any", "module", "import"):
            return None
        if k.tag == "function":
            if callable(value):
                return None
        elif k.tag == "class":
            if isinstance(value, type):
                return None
        elif k.tag == "call":
            cls = namespace.get(k.callee, getattr(builtins, k.callee, None))
            if not isinstance(cls, type) or not str(getattr(cls, "__module__", "")).startswith(
                "torch"
            ):
                return None  # a factory function or a builtin: nothing to compare
            if isinstance(value, cls):
                return None
        expected = expected or k
    return expected


def describe(kind: Kind) -> str:
    if kind.tag in ("function", "class", "module"):
        return kind.tag
    return f"{kind.callee} object"


@dataclass
class Dead:
    path: str
    name: str
    value: Any
    expected: Optional[Kind]  # None: no such name; else the real thing it replaced
    replaced_class: Optional[type] = None


def _backends_modules() -> list[tuple[str, types.ModuleType]]:
    mods = []
    for name, mod in list(sys.modules.items()):
        if (name == "torch.backends" or name.startswith("torch.backends.")) and isinstance(
            mod, types.ModuleType
        ):
            mods.append((name, mod))
    return sorted(mods)


def scan() -> tuple[list[Dead], list[str]]:
    """Every dead or replacing attribute under torch.backends, and the real public paths
    (candidates for suggestions)."""
    dead: list[Dead] = []
    candidates: set[str] = set()
    loaded = dict(_backends_modules())
    seen_objects: set[int] = set()
    for name, mod in loaded.items():
        orig = original(mod)
        info = source_info(_module_file(name, orig))
        if info is None:
            continue  # no source to compare with: say nothing rather than guess
        namespace = dict(vars(orig))
        plain: set[str] = set()
        for ref in info.star_imports:
            plain.update(_star_names(ref, name, orig))
        submodules: set[str] = set()
        path = vars(orig).get("__path__")
        if path:
            try:
                submodules.update(m.name for m in pkgutil.iter_modules(list(path)))
            except Exception:  # noqa: BLE001, S110 - loaded submodules are still added below
                pass
        prefix = name + "."
        submodules.update(
            n[len(prefix) :] for n in loaded if n.startswith(prefix) and "." not in n[len(prefix) :]
        )
        plain |= submodules
        module_names = _Names(dict(info.names), plain, namespace)
        ckinds, cplain, cvirtual = class_names(mod) if mod is not orig else ({}, set(), set())
        cls_module = type(mod).__module__ if mod is not orig else name
        replacement_names = _Names(ckinds, cplain | set(info.names) | plain, _namespace(cls_module))

        for n, k in list(info.names.items()) + list(ckinds.items()):
            if not n.startswith("_") and not {x.tag for x in k} <= NOT_SETTINGS:
                candidates.add(f"{name}.{n}")
        candidates.update(f"{name}.{n}" for n in cvirtual if not n.startswith("_"))
        # the replacement object's own namespace (PropModule instance) and the module's
        layers = [(vars(orig), module_names)]
        if mod is not orig:
            layers.insert(0, (vars(mod), replacement_names))
        for space, names in layers:
            for attr, value in list(space.items()):
                if value is orig or (attr in submodules and isinstance(value, types.ModuleType)):
                    continue
                full = f"{name}.{attr}"
                if attr in submodules:  # `torch.backends.cudnn = False`
                    dead.append(Dead(full, attr, value, Kind("module")))
                    continue
                if not names.real(attr):
                    dead.append(Dead(full, attr, value, None))
                    continue
                kinds = (
                    ckinds.get(attr)
                    if names is replacement_names and attr in ckinds
                    else info.names.get(attr)
                )
                if kinds:
                    ns = (
                        replacement_names.namespace
                        if names is replacement_names and attr in ckinds
                        else namespace
                    )
                    expected = _kind_ok(kinds, value, ns)
                    if expected is not None:
                        cls = ns.get(expected.callee) if expected.tag == "call" else None
                        dead.append(
                            Dead(
                                full, attr, value, expected, cls if isinstance(cls, type) else None
                            )
                        )
                        continue
                if id(value) not in seen_objects:
                    seen_objects.add(id(value))
                    dead += _scan_object(full, value, candidates)
        # objects that live in the replacement class body (cudnn.conv, mkldnn.matmul)
        if mod is not orig:
            for cls in own_classes(mod):
                for attr, value in list(vars(cls).items()):
                    if attr in vars(mod) or id(value) in seen_objects:
                        continue
                    seen_objects.add(id(value))
                    dead += _scan_object(f"{name}.{attr}", value, candidates)
    return dead, sorted(candidates)


def _star_names(ref: str, name: str, orig: types.ModuleType) -> set[str]:
    level = len(ref) - len(ref.lstrip("."))
    target = ref.lstrip(".")
    if level:
        package = name if getattr(orig, "__path__", None) else name.rsplit(".", 1)[0]
        for _ in range(level - 1):
            package = package.rsplit(".", 1)[0]
        target = f"{package}.{target}" if target else package
    mod = sys.modules.get(target)
    if mod is None:
        return set()
    exported = getattr(mod, "__all__", None)
    if exported is not None:
        return set(exported)
    return {n for n in vars(original(mod)) if not n.startswith("_")}


def _scan_object(path: str, obj: Any, candidates: set[str]) -> list[Dead]:
    """Instance attributes of an object of a torch.backends class (cufft_plan_cache,
    cuda.matmul, cudnn.conv) that its class does not define."""
    if isinstance(obj, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
        return []
    if not str(getattr(type(obj), "__module__", "")).startswith("torch.backends"):
        return []
    kinds, plain, virtual = class_names(obj)
    for n in [n for n, k in kinds.items() if not {x.tag for x in k} <= NOT_SETTINGS] + sorted(
        virtual
    ):
        if not n.startswith("_"):
            candidates.add(f"{path}.{n}")
    try:
        space = object.__getattribute__(obj, "__dict__")
    except (AttributeError, TypeError):
        return []
    out = []
    for attr, value in list(space.items()):
        if _is_dunder(attr) or attr in kinds or attr in plain or attr in virtual:
            continue
        out.append(Dead(f"{path}.{attr}", attr, value, None))
    return out
