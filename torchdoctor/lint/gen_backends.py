"""Regenerate ``rules/lint/data/torch_backends.yaml`` from an installed torch (run it with torch).

    python -m torchdoctor.lint.gen_backends > rules/lint/data/torch_backends.yaml

It imports every ``torch.backends`` submodule and records every public attribute it has (what
``dir()`` lists, so that no real name is ever reported as missing) with how it behaves under
assignment:

  flag      a settable value (ContextProp, property with a setter, plain data attribute)
  readonly  a value whose setter refuses assignment (raises), or a computed one
  function  a function: assigning to it replaces it
  class     a class
  object    an object with its own attributes (cufft_plan_cache, cuda.matmul, cudnn.conv)
  constant  a module constant (mkl.VERBOSE_ON)
  module    a submodule
  import    a helper the module imports for its own use (``torch``, ``contextlib``, ``typing.Any``,
            a PropModule's ``m``): it exists, but it is no API, so it is never a typo target and
            its own attributes are not checked

Classes and functions torch defines elsewhere and imports into a backends module
(``torch.backends.cuda.SDPBackend`` is ``torch._C._SDPBackend``, documented as
``torch.nn.attention.SDPBackend``) are ``class``/``function`` like the module's own.

``since`` is not introspected: it is kept from the current table, where
``python scripts/gen_release_tables.py build`` writes it from the published wheels' own
torch/backends sources (each name's first release, never its parent's). Run that build after
this one. Never imported by torchdoctor itself.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import types
from pathlib import Path

import yaml

KNOWLEDGE_FILE = Path(__file__).resolve().parents[2] / "rules" / "lint" / "data" / "backends_knowledge.yaml"
"""What introspection cannot tell (since, readonly, cuda.matmul's virtual attributes), with
its references: data, not code (a checkout's rules/; the generator is a development tool)."""
_KNOWLEDGE = yaml.safe_load(KNOWLEDGE_FILE.read_text(encoding="utf-8"))
TABLE_FILE = KNOWLEDGE_FILE.with_name("torch_backends.yaml")
SINCE: dict = {str(k): str(v["since"]) for k, v in
               ((yaml.safe_load(TABLE_FILE.read_text(encoding="utf-8")) or {}).get("names") or {}).items()
               if isinstance(v, dict) and v.get("since")}
"""The wheel-generated ``since`` of the table this run replaces (scripts/gen_release_tables.py)."""
MATMUL: dict = {str(k): str(v) for k, v in (_KNOWLEDGE.get("matmul_attributes") or {}).items()}
READONLY = frozenset(str(x) for x in _KNOWLEDGE.get("readonly") or ())
PRECISION_OBJECTS = tuple(str(x) for x in _KNOWLEDGE.get("object_classes") or ())


def _kind(qual: str, value, owner_cls) -> str | None:
    if qual in READONLY:
        return "readonly"
    if isinstance(value, types.ModuleType):  # a submodule, not a module imported under another name
        return "module" if value.__name__ == "torch.backends." + qual else None
    if inspect.isclass(value):
        return "class" if _torch_defined(value) else None
    if callable(value) and not hasattr(value, "__dict__") or inspect.isroutine(value):
        return "function" if _torch_defined(value) else None
    return None


def _torch_defined(value) -> bool:
    """Defined by torch (in torch.backends, torch._C, torch.nn.attention...), not by the stdlib,
    typing or typing_extensions."""
    mod = str(getattr(value, "__module__", "") or "")
    return mod == "torch" or mod.startswith("torch.")


def _defined_in_source(path) -> set:
    """Names a module's own source binds by assignment (not by import); callers keep only
    those that are module attributes."""
    import ast

    if not path or not str(path).endswith(".py"):
        return set()
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError):
        return set()
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
    return out


def collect(torch) -> dict[str, str]:
    import torch.backends as backends
    from torch.backends import ContextProp, PropModule

    out: dict[str, str] = {}
    names = ["torch.backends"] + ["torch.backends." + m.name for m in pkgutil.iter_modules(backends.__path__)
                                  if not m.name.startswith("_")]
    for name in names:
        try:
            mod = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module this build cannot import is left out
            continue
        short = name[len("torch.backends."):] if name != "torch.backends" else ""
        prefix = short + "." if short else ""
        if short:
            out[short] = "module"
        orig = getattr(mod, "m", mod) if isinstance(mod, PropModule) else mod
        cls_vars = dict(vars(type(mod))) if type(mod) is not types.ModuleType else {}
        defined = _defined_in_source(getattr(orig, "__file__", None))
        for attr, value in list(vars(orig).items()) + list(cls_vars.items()):
            if attr.startswith("_"):
                continue
            qual = prefix + attr
            if isinstance(value, (ContextProp, property)) or hasattr(type(value), "__set__"):
                if isinstance(value, property):
                    setter = value.fset
                elif isinstance(value, ContextProp):
                    setter = value.setter
                else:
                    setter = getattr(type(value), "__set__", None)
                kind = "flag" if setter is not None else "readonly"
                if qual in READONLY:
                    kind = "readonly"
            elif type(value).__name__ in PRECISION_OBJECTS or type(value).__name__.endswith(("Manager", "Module", "Controller")):
                kind = "object"
            elif isinstance(value, (bool, int, float, str, type(None))):
                if attr in cls_vars and attr not in vars(orig):
                    kind = "flag"  # a plain class attribute of a PropModule (benchmark_limit on CPU)
                elif attr.isupper():
                    kind = "constant"
                else:
                    kind = "flag"  # module-level data people assign (opt_einsum.enabled)
            else:
                kind = _kind(qual, value, type(mod))
                if kind is None and type(value).__module__.startswith("torch.backends"):
                    kind = "object"
            if kind is None and attr in defined and not isinstance(value, types.ModuleType) and attr != "m":
                kind = "constant" if attr.isupper() else "object"  # data defined in the module (a set, a dict)
            if kind is None:
                kind = "import"  # typing.Any, contextlib, the torch module: real, not an API
            if qual in out and out[qual] == "flag":
                continue
            out[qual] = kind
            if qual in ("cudnn.conv", "cudnn.rnn", "mkldnn.matmul", "mkldnn.conv", "mkldnn.rnn"):
                out[qual + ".fp32_precision"] = "flag"
        for attr in dir(mod):  # anything else the module answers (nothing on 2.13; kept honest)
            if not attr.startswith("_") and prefix + attr not in out:
                out[prefix + attr] = "import"
    for attr, kind in MATMUL.items():
        out["cuda.matmul." + attr] = kind
    out["cuda.matmul"] = "object"
    for attr in ("triton", "cutedsl"):  # DSL controllers answered by PythonNativeModule.__getattr__
        if "python_native" in out:
            out["python_native." + attr] = "object"
    return out


def main() -> int:
    import torch

    names = collect(torch)
    version = torch.__version__
    print("# GENERATED by `python -m torchdoctor.lint.gen_backends` (do not edit by hand; edit rules/lint/data/backends_knowledge.yaml),")
    print("# then `python scripts/gen_release_tables.py build` (the `since` of every name, from the wheels).")
    print(f"# The public names PyTorch defines under torch.backends, introspected on torch {version}")
    print("# (CPU build: names that exist only on CUDA/ROCm/Mac builds are what the CPU build's module")
    print("# source defines too, since every torch.backends module is pure Python and imports on any build).")
    print("# `since`: written by scripts/gen_release_tables.py build from the wheels.")
    print("references:")
    for ref in _KNOWLEDGE.get("references") or ():
        print(f"  - {ref}")
    print(f'introspected: "{version}"')
    print("names:")
    for qual in sorted(names):
        since = SINCE.get(qual)  # the name's own first release, never its parent's
        extra = f', since: "{since}"' if since else ""
        print(f"  {qual}: {{kind: {names[qual]}{extra}}}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
