"""The in-process half of the Python API: apply a plan to the running process, audit it.

``apply_plan()`` builds the settings plan for this process (the same rules and registry as
``recommend``) and carries it out here: environment variables into ``os.environ``,
attribute assignments and calls by executing the registry's own typed statement
(``Setting.render``) in a namespace holding only ``torch``, ``os`` and ``random``. User text
never becomes code. Code-level values (DataLoader keywords, autocast dtype) are returned for
the caller's code instead.

``audit_process()`` reports the current settings and every attribute under
``torch.backends`` that PyTorch does not have (silently ignored: the modules accept any
assignment) or that replaced a real object with a value of the wrong kind. Which names are
real is derived from PyTorch itself - the source file of each loaded ``torch.backends``
module, parsed with ``ast``, and the classes of the module objects - never from a list of
known fakes; ``rules/data/backends_fake_flags.yaml`` only supplies the "did you mean".

torch is imported only inside the functions (and only by ``apply_plan``).
"""

from __future__ import annotations

import ast
import builtins
import difflib
import functools
import inspect
import math
import os
import pkgutil
import random
import sys
import types
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence

from torchdoctor.facts import Facts, TorchFacts

DATA_FILE = "backends_fake_flags"

NO_SUCH_SETTING = "PyTorch has no such setting: the assignment is silently ignored"
DEFERRED_NOTE = "set, but takes effect only in new processes ({why})"
_ENV_WHY = {
    "torch-import": "torch reads it when it is imported, and torch is already imported",
    "cuda-init": "it is read when CUDA initialises, and CUDA is already initialised here",
    "distributed-init": "it is read when the first process group is created, and one exists here",
}

# --------------------------------------------------------------------------------------
# apply
# --------------------------------------------------------------------------------------


def apply_plan(
    task: Optional[str] = None,
    *,
    facts: Optional[Facts] = None,
    rules_dirs: Sequence[str] = (),
    **workload: Any,
) -> dict[str, Any]:
    """Build the plan for this process and apply it here.

    Facts: torch is read in-process when it is already imported (the flags as this process
    has them); otherwise in a child of this interpreter, so that environment variables can
    still be set before this function imports torch. Returns::

        {"changed":   [{key, before, after, rule}],   # applied; read back with the probe's getters
         "unchanged": [...],                           # already at the planned value
         "deferred":  [{..., note}],                   # env set, but read only by new processes
         "failed":    [{..., note}],                   # the statement raised or did not stick
         "skipped":   [{key, value, rule, note}],      # not for this process (no CUDA, dropped)
         "for_your_code": {key: value},                # DataLoader/autocast/... values to pass
         "findings":  [{id, severity, category, message}]}
    """
    from torchdoctor.engine import evaluate
    from torchdoctor.rules import load_rules
    from torchdoctor.settings import load_registry
    from torchdoctor.workload import build_workload

    wl = build_workload(task=task, overrides=workload, source="apply()")
    torch_was_imported = "torch" in sys.modules
    if facts is None:
        facts = _probe_facts(torch_was_imported)
    registry = load_registry()
    report = evaluate(load_rules(list(rules_dirs)), facts, wl, command="apply", registry=registry)
    version = report.torch_version

    out: dict[str, Any] = {
        "changed": [],
        "unchanged": [],
        "deferred": [],
        "failed": [],
        "skipped": [],
        "for_your_code": {},
        "findings": [_finding_dict(f) for f in report.findings],
    }
    for d in report.dropped:
        out["skipped"].append({"key": d.key, "value": d.value, "rule": d.rule, "note": d.reason})

    recs = [(rec, registry[rec.key]) for rec in report.settings]
    # 1. environment, before torch is imported here (if it is not yet)
    read_at = _env_read_at()
    for rec, setting in recs:
        if setting.kind == "env":
            _apply_env(rec, setting, version, torch_was_imported, read_at, out)
        elif setting.kind == "code":
            out["for_your_code"][rec.key] = rec.value

    live = [(rec, s) for rec, s in recs if s.kind in ("assign", "call")]
    if not live:
        return _finish(out)
    torch = _import_torch(facts)
    if isinstance(torch, str):
        for rec, _ in live:
            out["skipped"].append(
                {"key": rec.key, "value": rec.value, "rule": rec.rule, "note": torch}
            )
        return _finish(out)

    # 2. assignments and calls, read back through the torch probe's own getters
    from torchdoctor.probes import _torch_child

    cuda_ok: Optional[bool] = None
    for rec, setting in live:
        if setting.guard == "cuda":
            if cuda_ok is None:
                cuda_ok = _cuda_available(torch)
            if not cuda_ok:
                out["skipped"].append(
                    {
                        "key": rec.key,
                        "value": rec.value,
                        "rule": rec.rule,
                        "note": "needs CUDA, which torch cannot use in this process",
                    }
                )
                continue
        before = _current(torch, _torch_child, rec.key)
        target = rec.value
        if _same(before, target):
            out["unchanged"].append(_entry(rec, before, before))
            continue
        try:
            _run_statement(setting.render(target, version), rec.key, torch=torch)
        except Exception as exc:  # noqa: BLE001 - the user's process must survive a bad setting
            out["failed"].append(
                {
                    **_entry(rec, before, _current(torch, _torch_child, rec.key)),
                    "note": f"{type(exc).__name__}: {_first_line(exc)}",
                }
            )
            continue
        after = _current(torch, _torch_child, rec.key)
        if after is _NO_GETTER or _same(after, target):
            out["changed"].append(_entry(rec, before, target if after is _NO_GETTER else after))
        else:
            out["failed"].append(
                {
                    **_entry(rec, before, after),
                    "note": f"set to {target!r}, but it reads back as {after!r}",
                }
            )
    return _finish(out)


def _run_statement(code: str, key: str, torch: Any = None) -> None:
    """Execute a statement the settings registry generated (``Setting.render``: its own
    template with a typed, validated, repr()-written value; never user text)."""
    namespace = {"__builtins__": builtins, "os": os, "random": random}
    if torch is not None:
        namespace["torch"] = torch
    exec(compile(code, f"<torchdoctor {key}>", "exec"), namespace)  # noqa: S102


_NO_GETTER = object()
_SET_TOO_LATE: dict[str, str] = {}
"""Environment variables apply() set in this process after the library had read them."""


def _probe_facts(torch_imported: bool) -> Facts:
    """Facts of this machine; torch facts in-process when torch is already imported."""
    in_process = None
    if torch_imported:
        try:
            from torchdoctor.probes.pytorch import facts_in_process as in_process  # type: ignore
        except ImportError:
            in_process = None
    from torchdoctor.probes import ProbeContext, collect, python_executable, run_one

    if in_process is None:  # what torchdoctor.probe() does (api imports this module)
        return collect(ProbeContext(python=python_executable()))

    def runner(name: str, ctx: ProbeContext) -> object:
        if name == "torch":
            return in_process()
        return run_one(name, ctx)

    return collect(ProbeContext(), runner=runner)


def _apply_env(
    rec: Any,
    setting: Any,
    version: Optional[str],
    torch_was_imported: bool,
    read_at: dict[str, str],
    out: dict[str, Any],
) -> None:
    name = rec.key.split(".", 1)[1]
    before = os.environ.get(name)
    target = str(rec.value)
    if before == target:
        if _SET_TOO_LATE.get(name) == target:  # an earlier apply() set it after torch read it
            out["deferred"].append(
                {
                    **_entry(rec, before, before),
                    "note": DEFERRED_NOTE.format(why="an earlier apply() set it too late"),
                }
            )
        else:
            out["unchanged"].append(_entry(rec, before, before))
        return
    try:
        _run_statement(setting.render(rec.value, version), rec.key)
    except Exception as exc:  # noqa: BLE001
        out["failed"].append(
            {
                **_entry(rec, before, os.environ.get(name)),
                "note": f"{type(exc).__name__}: {_first_line(exc)}",
            }
        )
        return
    after = os.environ.get(name)
    late = _env_too_late(read_at.get(name, "torch-import"), torch_was_imported)
    if late is not None:
        _SET_TOO_LATE[name] = target
        out["deferred"].append(
            {**_entry(rec, before, after), "note": DEFERRED_NOTE.format(why=late)}
        )
    else:
        out["changed"].append(_entry(rec, before, after))


def _env_too_late(when: str, torch_was_imported: bool) -> Optional[str]:
    """Why a variable set now is not seen by this process, or None when it still is."""
    if not torch_was_imported:
        return None
    torch = sys.modules.get("torch")
    if when == "cuda-init":
        try:
            late = bool(torch.cuda.is_initialized())
        except Exception:  # noqa: BLE001 - no torch.cuda: nothing initialised
            late = False
    elif when == "distributed-init":
        try:
            dist = torch.distributed
            late = bool(dist.is_available() and dist.is_initialized())
        except Exception:  # noqa: BLE001
            late = False
    else:
        late = True
    return _ENV_WHY.get(when, _ENV_WHY["torch-import"]) if late else None


def _import_torch(facts: Facts) -> Any:
    """The torch module, importing it when the facts say it imports; else the reason (str)."""
    if "torch" in sys.modules:
        return sys.modules["torch"]
    tf = facts.torch
    status = tf.import_status if isinstance(tf, TorchFacts) else None
    if isinstance(status, str) and status != "ok":  # a known failure: importing could kill us
        error = tf.import_error if isinstance(tf.import_error, str) else None
        return f"not applied: torch does not import here ({status}{': ' + error if error else ''})"
    try:
        import torch
    except Exception as exc:  # noqa: BLE001
        return f"not applied: import torch failed: {type(exc).__name__}: {_first_line(exc)}"
    return torch


def _cuda_available(torch: Any) -> bool:
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def _current(torch: Any, child: Any, key: str) -> Any:
    """The current value of a registry setting, read like the torch probe reads it."""
    if key == "seed":
        try:
            return int(torch.initial_seed())
        except Exception:  # noqa: BLE001
            return _NO_GETTER
    settings = child.read_settings(torch)
    if key not in settings:
        return _NO_GETTER
    return settings[key]


def _same(value: Any, target: Any) -> bool:
    if value is _NO_GETTER or isinstance(value, dict):  # no getter, or {"unavailable": ...}
        return False
    if isinstance(value, bool) or isinstance(target, bool):
        return type(value) is type(target) and value == target
    if isinstance(value, (int, float)) and isinstance(target, (int, float)):
        return value == target
    return type(value) is type(target) and value == target


def _entry(rec: Any, before: Any, after: Any) -> dict[str, Any]:
    return {"key": rec.key, "before": _plain(before), "after": _plain(after), "rule": rec.rule}


def _plain(value: Any) -> Any:
    return None if value is _NO_GETTER else value


def _finding_dict(f: Any) -> dict[str, Any]:
    return {"id": f.id, "severity": f.severity, "category": f.category, "message": f.message}


def _finish(out: dict[str, Any]) -> dict[str, Any]:
    for entry in out["deferred"]:
        out["findings"].append(
            {
                "id": "env-set-too-late",
                "severity": "warning",
                "category": "performance",
                "message": f"{entry['key'].split('.', 1)[1]}={entry['after']} was {entry['note']}; "
                "set it before `import torch` (or in the launching shell).",
            }
        )
    for entry in out["failed"]:
        out["findings"].append(
            {
                "id": "setting-not-applied",
                "severity": "warning",
                "category": "probe",
                "message": f"{entry['key']} was not applied: {entry['note']}",
            }
        )
    return out


# --------------------------------------------------------------------------------------
# audit
# --------------------------------------------------------------------------------------


def audit_process(*, import_torch: bool = False) -> dict[str, Any]:
    """Current torch settings of this process and the attributes under torch.backends that
    do nothing (or broke a real one).

    Returns ``{"torch_imported", "settings", "ignored", "tf32_api", "findings"}`` where each
    ``ignored`` entry is ``{"attribute", "value", "problem", "did_you_mean", "note"}``.
    torch is imported only with ``import_torch=True``: an unimported torch has no state.
    """
    torch = sys.modules.get("torch")
    if torch is None and import_torch:
        import torch
    if torch is None:
        return {
            "torch_imported": False,
            "settings": {},
            "ignored": [],
            "tf32_api": None,
            "findings": [
                {
                    "id": "torch-not-imported",
                    "severity": "info",
                    "category": "probe",
                    "message": "torch is not imported in this process: nothing was set yet",
                }
            ],
        }
    from torchdoctor.probes import _torch_child

    findings: list[dict[str, Any]] = []
    try:
        settings = _torch_child.read_settings(torch)
    except Exception as exc:  # noqa: BLE001 - an audit never takes the user's process down
        settings = {
            "unavailable": f"reading torch settings failed: {type(exc).__name__}: {_first_line(exc)}"
        }
    try:
        ignored = dead_attributes()
    except Exception as exc:  # noqa: BLE001
        ignored = []
        findings.append(
            {
                "id": "audit-incomplete",
                "severity": "warning",
                "category": "probe",
                "message": f"checking torch.backends attributes failed: {type(exc).__name__}: "
                f"{_first_line(exc)}",
            }
        )
    tf32 = tf32_api_state(torch)
    findings = [_dead_finding(e) for e in ignored] + findings
    if tf32["mixed"]:
        raising = ", ".join(tf32["raising"])
        findings.append(
            {
                "id": "tf32-mixed-api",
                "severity": "warning",
                "category": "performance",
                "message": f"The legacy TF32 getters raise ({raising}): this process mixes the legacy "
                "TF32 API (allow_tf32, set_float32_matmul_precision) with the new "
                "fp32_precision attributes. Code that reads the legacy getters (torch.compile "
                "autotuning, cuBLAS matmuls) can fail; use one API only.",
            }
        )
    return {
        "torch_imported": True,
        "settings": settings,
        "ignored": ignored,
        "tf32_api": tf32,
        "findings": findings,
    }


def _dead_finding(e: dict[str, Any]) -> dict[str, Any]:
    replaced = e["problem"] != NO_SUCH_SETTING
    text = f"{e['attribute']} = {e['value']!r}: {e['problem']}"
    if e.get("did_you_mean"):
        text += f"; did you mean `{e['did_you_mean']}`?"
    if e.get("note"):
        text += f" {e['note']}"
    known = _fake_table().get(e["attribute"])
    category = (known.get("category") if isinstance(known, dict) else None) or "performance"
    return {
        "id": "backends-attribute-replaced" if replaced else "backends-setting-ignored",
        "severity": "warning",
        "category": category,
        "message": text,
    }


_LEGACY_TF32_GETTERS = (
    ("torch.get_float32_matmul_precision()", lambda t: t.get_float32_matmul_precision()),
    ("torch.backends.cuda.matmul.allow_tf32", lambda t: t.backends.cuda.matmul.allow_tf32),
    ("torch.backends.cudnn.allow_tf32", lambda t: t.backends.cudnn.allow_tf32),
)


def tf32_api_state(torch: Any) -> dict[str, Any]:
    """Whether the legacy TF32 getters raise because the new fp32_precision API was mixed in.

    PyTorch (2.9+) keeps one TF32 state behind two APIs and raises "mix of the legacy and new
    APIs" from the legacy getters once only the new one was used (flags catalog 1.3)."""
    raising: dict[str, str] = {}
    for name, getter in _LEGACY_TF32_GETTERS:
        try:
            getter(torch)
        except Exception as exc:  # noqa: BLE001
            msg = _first_line(exc)
            if "legacy" in msg and "new" in msg:
                raising[name] = msg
    return {"mixed": bool(raising), "raising": raising}


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
_NOT_SETTINGS = {"module", "import", "class"}


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


def _original(mod: types.ModuleType) -> types.ModuleType:
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
    info = source_info(_module_file(cls.__module__, _original(mod)))
    if info is None:
        return None
    return info.classes.get(cls.__name__)


def _own_classes(obj: Any) -> list[type]:
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


def _class_names(obj: Any) -> tuple[dict[str, frozenset[Kind]], set[str], set[str]]:
    """Names an instance of ``obj`` (or of the class ``obj``) really has: class-body names
    with kinds, other names (runtime class dicts, attributes set in methods), and names its
    __getattr__/__setattr__ accept."""
    kinds: dict[str, frozenset[Kind]] = {}
    plain: set[str] = set()
    virtual: set[str] = set()
    for cls in _own_classes(obj):
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
    return dict(vars(_original(mod))) if isinstance(mod, types.ModuleType) else {}


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


def _describe(kind: Kind) -> str:
    if kind.tag in ("function", "class", "module"):
        return kind.tag
    return f"{kind.callee} object"


@dataclass
class _Dead:
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


def _scan() -> tuple[list[_Dead], list[str]]:
    """Every dead or replacing attribute under torch.backends, and the real public paths
    (candidates for suggestions)."""
    dead: list[_Dead] = []
    candidates: set[str] = set()
    loaded = dict(_backends_modules())
    seen_objects: set[int] = set()
    for name, mod in loaded.items():
        orig = _original(mod)
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
        ckinds, cplain, cvirtual = _class_names(mod) if mod is not orig else ({}, set(), set())
        cls_module = type(mod).__module__ if mod is not orig else name
        class_names = _Names(ckinds, cplain | set(info.names) | plain, _namespace(cls_module))

        for n, k in list(info.names.items()) + list(ckinds.items()):
            if not n.startswith("_") and not {x.tag for x in k} <= _NOT_SETTINGS:
                candidates.add(f"{name}.{n}")
        candidates.update(f"{name}.{n}" for n in cvirtual if not n.startswith("_"))
        # the replacement object's own namespace (PropModule instance) and the module's
        layers = [(vars(orig), module_names)]
        if mod is not orig:
            layers.insert(0, (vars(mod), class_names))
        for space, names in layers:
            for attr, value in list(space.items()):
                if value is orig or (attr in submodules and isinstance(value, types.ModuleType)):
                    continue
                full = f"{name}.{attr}"
                if attr in submodules:  # `torch.backends.cudnn = False`
                    dead.append(_Dead(full, attr, value, Kind("module")))
                    continue
                if not names.real(attr):
                    dead.append(_Dead(full, attr, value, None))
                    continue
                kinds = (
                    ckinds.get(attr)
                    if names is class_names and attr in ckinds
                    else info.names.get(attr)
                )
                if kinds:
                    ns = (
                        class_names.namespace
                        if names is class_names and attr in ckinds
                        else namespace
                    )
                    expected = _kind_ok(kinds, value, ns)
                    if expected is not None:
                        cls = ns.get(expected.callee) if expected.tag == "call" else None
                        dead.append(
                            _Dead(
                                full, attr, value, expected, cls if isinstance(cls, type) else None
                            )
                        )
                        continue
                if id(value) not in seen_objects:
                    seen_objects.add(id(value))
                    dead += _scan_object(full, value, candidates)
        # objects that live in the replacement class body (cudnn.conv, mkldnn.matmul)
        if mod is not orig:
            for cls in _own_classes(mod):
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
    return {n for n in vars(_original(mod)) if not n.startswith("_")}


def _scan_object(path: str, obj: Any, candidates: set[str]) -> list[_Dead]:
    """Instance attributes of an object of a torch.backends class (cufft_plan_cache,
    cuda.matmul, cudnn.conv) that its class does not define."""
    if isinstance(obj, (types.ModuleType, type, types.FunctionType, types.BuiltinFunctionType)):
        return []
    if not str(getattr(type(obj), "__module__", "")).startswith("torch.backends"):
        return []
    kinds, plain, virtual = _class_names(obj)
    for n in [n for n, k in kinds.items() if not {x.tag for x in k} <= _NOT_SETTINGS] + sorted(
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
        out.append(_Dead(f"{path}.{attr}", attr, value, None))
    return out


@functools.lru_cache(maxsize=1)
def _fake_table() -> dict[str, Any]:
    from torchdoctor import tables

    try:
        data = tables.load(DATA_FILE) or {}
    except Exception:  # noqa: BLE001 - the audit works without suggestions
        return {}
    return dict(data.get("fakes") or {})


def _env_read_at() -> dict[str, str]:
    from torchdoctor import tables

    try:
        data = tables.load(DATA_FILE) or {}
    except Exception:  # noqa: BLE001
        return {}
    return {
        k: str((v or {}).get("when", "torch-import"))
        for k, v in (data.get("env_read_at") or {}).items()
    }


def _value_text(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _suggest(d: _Dead, candidates: list[str]) -> tuple[Optional[str], Optional[str]]:
    """(did_you_mean, note) for a dead attribute.

    Beyond the curated table, a suggestion is only made when it is safe to paste: its target
    exists, is not deprecated, and takes the assigned value (an attribute holding a value of
    the same type, a function whose parameter admits it); and a close match by name is only a
    match when the attribute's own name is close, not merely its long shared prefix
    (``quantized.enabled`` is not ``quantized.engine``)."""
    known = _fake_table().get(d.path)
    if isinstance(known, dict):
        by_value = known.get("by_value") or {}
        text = by_value.get(d.value) if isinstance(d.value, bool) and d.value in by_value else None
        text = text or known.get("did_you_mean")
        if text:
            text = str(text).replace("{value}", _value_text(d.value))
        return text, known.get("note")
    if d.expected is not None:
        if d.expected.tag == "function" and d.expected.arity >= 1:
            # the function itself was replaced: judge the value by its source annotation
            first = d.expected.params[0] if d.expected.params else ""
            if _fits_annotation(first, d.value, {}) is False:
                return None, None
            return f"{d.path}({_value_text(d.value)})", None
        if d.expected.tag == "module" and f"{d.path}.enabled" in candidates:
            return _safe_statement(f"{d.path}.enabled", d.value), None
        if d.replaced_class is not None:  # an object with one settable attribute (cudnn.conv)
            _, instance, virtual = _class_names(d.replaced_class)
            settable = sorted(virtual - instance)
            if len(settable) == 1:
                return _safe_statement(f"{d.path}.{settable[0]}", d.value), None
        return None, None
    module, leaf = d.path.rsplit(".", 1)
    same = [c.rsplit(".", 1)[1] for c in candidates if c.rsplit(".", 1)[0] == module]
    tries = [f"{module}.{m}" for m in difflib.get_close_matches(d.name, same, n=3, cutoff=0.75)]
    across = [
        c for c in difflib.get_close_matches(d.path, candidates, n=5, cutoff=0.88)
        if difflib.SequenceMatcher(None, leaf, c.rsplit(".", 1)[1]).ratio() >= 0.75
    ]
    for target in tries + [c for c in across if c not in tries]:
        text = _safe_statement(target, d.value)
        if text is not None:
            return text, None
    return None, None


_MISSING = object()


def _real_attr(obj: Any, name: str) -> Any:
    """``obj.name`` as PyTorch defines it: a submodule from sys.modules and a class-level
    object (PropModule's cudnn.conv) win over a value the user assigned on top of them."""
    if isinstance(obj, types.ModuleType):
        sub = sys.modules.get(f"{vars(obj).get('__name__', '')}.{name}")
        if isinstance(sub, types.ModuleType):
            return sub
    for klass in _own_classes(obj):
        static = vars(klass).get(name, _MISSING)
        if static is not _MISSING and not hasattr(type(static), "__get__"):
            return static
    return getattr(obj, name)


def _resolve_target(path: str) -> Any:
    """The object at a dotted torch path, or _MISSING when it cannot be read (a getter that
    raises, cufft_plan_cache on a CPU build, a name that does not exist)."""
    obj: Any = sys.modules.get("torch")
    if obj is None:
        return _MISSING
    try:
        for part in path.split(".")[1:]:
            obj = _real_attr(obj, part)
    except Exception:  # noqa: BLE001 - whatever the getter raised: not a safe suggestion
        return _MISSING
    return obj


def _deprecated(obj: Any) -> bool:
    """PEP 702 ``@deprecated`` (torch.backends.cuda.sdp_kernel) or a docstring that says so."""
    try:
        if getattr(obj, "__deprecated__", None):
            return True
        doc = getattr(obj, "__doc__", None) if callable(obj) else None
    except Exception:  # noqa: BLE001 - an object whose attributes raise is not suggested
        return True
    head = (doc or "").lstrip()[:300].lower()
    return ".. deprecated::" in head or head.startswith("deprecated") or "is deprecated" in head


_SIMPLE_TYPES = {"bool": bool, "int": int, "float": float, "str": str, "None": type(None)}


def _fits_annotation(annotation: Any, value: Any, namespace: dict) -> Optional[bool]:
    """Whether ``value`` fits a parameter annotation: True / False, None when the annotation
    says nothing checkable (absent, or a type we cannot resolve)."""
    if annotation in ("", None, inspect.Parameter.empty):
        return None
    if isinstance(annotation, str):
        text = annotation.replace("typing.", "").replace(" ", "")
        for wrapper in ("Optional[", "Union["):
            if text.startswith(wrapper) and text.endswith("]"):
                parts = text[len(wrapper):-1].split(",") + (["None"] if wrapper == "Optional[" else [])
                return _fits_any([_SIMPLE_TYPES.get(p.lstrip("_")) for p in parts], value)
        if "|" in text:
            return _fits_any([_SIMPLE_TYPES.get(p.lstrip("_")) for p in text.split("|")], value)
        resolved = _SIMPLE_TYPES.get(text.lstrip("_"), namespace.get(text))
        return _fits_any([resolved], value) if resolved is not None else None
    args = getattr(annotation, "__args__", None)
    if args and getattr(annotation, "__origin__", None) is not None or isinstance(
        annotation, getattr(types, "UnionType", ())
    ):
        return _fits_any(list(args or ()), value)
    return _fits_any([annotation], value)


def _fits_any(types_: list, value: Any) -> Optional[bool]:
    known = [t for t in types_ if isinstance(t, type)]
    if not known or len(known) < len(types_):
        # an unresolvable member (an enum of torch._C) may take the value: say only what we know
        return True if any(_fits_type(t, value) for t in known) else None
    return any(_fits_type(t, value) for t in known)


def _fits_type(t: type, value: Any) -> bool:
    if isinstance(value, bool) and t is not bool:
        return False  # True where an int is expected is a mistake, not a count
    if t is float and isinstance(value, int):
        return True
    return isinstance(value, t)


def _call_fits(fn: Any, value: Any) -> bool:
    try:
        sig = inspect.signature(fn)
        bound = sig.bind(value)
    except (TypeError, ValueError):
        return False
    if not bound.arguments:
        return False
    name = next(iter(bound.arguments))
    param = sig.parameters[name]
    if param.kind is inspect.Parameter.VAR_POSITIONAL:
        return True
    annotation = param.annotation
    if isinstance(annotation, str):
        try:
            import typing

            annotation = typing.get_type_hints(fn).get(name, annotation)
        except Exception:  # noqa: BLE001 - fall back to the annotation's text
            pass
    ns = vars(sys.modules.get(getattr(fn, "__module__", "") or "", builtins))
    return _fits_annotation(annotation, value, ns) is not False


def _safe_statement(target: str, value: Any) -> Optional[str]:
    """The statement that sets ``target`` to ``value``, or None when pasting it would fail,
    warn, or set something else: the target is missing, deprecated, a constant, or does not
    take the value."""
    leaf = target.rsplit(".", 1)[1]
    if leaf.isupper() or leaf.startswith("_"):
        return None  # VERBOSE_ON, CUDNN_TENSOR_DTYPES: constants, not settings
    obj = _resolve_target(target)
    if obj is _MISSING or _deprecated(obj):
        return None
    if isinstance(obj, (types.ModuleType, type)):
        return None
    if callable(obj):
        return f"{target}({_value_text(value)})" if _call_fits(obj, value) else None
    if obj is None or not _fits_type(type(obj), value):
        return None  # nothing to compare the value with, or a value of another type
    parent = _resolve_target(target.rsplit(".", 1)[0])
    try:
        choices = getattr(parent, f"supported_{leaf}s", None)
    except Exception:  # noqa: BLE001
        choices = None
    if isinstance(choices, (list, tuple)) and value not in choices:
        return None  # quantized.engine takes one of quantized.supported_engines
    return f"{target} = {_value_text(value)}"


def dead_attributes() -> list[dict[str, Any]]:
    """Attributes under torch.backends that PyTorch does not have, or that replaced a real
    function/object with a plain value: ``[{attribute, value, problem, did_you_mean, note}]``."""
    if "torch" not in sys.modules:
        return []
    dead, candidates = _scan()
    out = []
    for d in sorted(dead, key=lambda x: x.path):
        if d.expected is None:
            problem = NO_SUCH_SETTING
        else:
            problem = (
                f"replaced PyTorch's {_describe(d.expected)} with {_a(type(d.value).__name__)}: "
                f"nothing was set, and code that uses {d.name} now breaks"
            )
        did_you_mean, note = _suggest(d, candidates)
        out.append(
            {
                "attribute": d.path,
                "value": _jsonable(d.value),
                "problem": problem,
                "did_you_mean": did_you_mean,
                "note": note,
            }
        )
    return out


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and not math.isnan(value):
        return value
    return _value_text(value)


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else ""
