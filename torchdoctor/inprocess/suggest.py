"""What to tell about a dead ``torch.backends`` attribute: the problem, and a "did you mean"
that is safe to paste.

Beyond the registry's fake names (``rules/settings.yaml``), a suggestion is made only
when its target exists, is not deprecated and takes the assigned value; a close match by name
is only a match when the attribute's own name is close.
"""

from __future__ import annotations

import builtins
import difflib
import functools
import inspect
import math
import sys
import types
from typing import Any, Optional

from torchdoctor.facts import DeadAttribute
from torchdoctor.inprocess.names import Dead, class_names, describe, own_classes, scan
from torchdoctor.inprocess.results import IgnoredAttribute

NO_SUCH_SETTING = "PyTorch has no such setting: the assignment is silently ignored"


@functools.lru_cache(maxsize=1)
def fake_table() -> dict[str, Any]:
    """The registry's fake names (rules/settings.yaml) -> did_you_mean, by_value, note, category."""
    from torchdoctor.settings import load_registry

    try:
        return load_registry().fake_table()
    except Exception:  # noqa: BLE001 - the audit works without suggestions
        return {}




def value_text(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - the user's object; its repr must not break the audit
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 80 else text[:77] + "..."


def _suggest(d: Dead, candidates: list[str]) -> tuple[Optional[str], Optional[str]]:
    """(did_you_mean, note) for a dead attribute.

    Beyond the curated table, a suggestion is only made when it is safe to paste: its target
    exists, is not deprecated, and takes the assigned value (an attribute holding a value of
    the same type, a function whose parameter admits it); and a close match by name is only a
    match when the attribute's own name is close, not merely its long shared prefix
    (``quantized.enabled`` is not ``quantized.engine``)."""
    known = fake_table().get(d.path)
    if isinstance(known, dict):
        by_value = known.get("by_value") or {}
        text = by_value.get(d.value) if isinstance(d.value, bool) and d.value in by_value else None
        text = text or known.get("did_you_mean")
        if text:
            text = str(text).replace("{value}", value_text(d.value))
        return text, known.get("note")
    if d.expected is not None:
        if d.expected.tag == "function" and d.expected.arity >= 1:
            # the function itself was replaced: judge the value by its source annotation
            first = d.expected.params[0] if d.expected.params else ""
            if _fits_annotation(first, d.value, {}) is False:
                return None, None
            return f"{d.path}({value_text(d.value)})", None
        if d.expected.tag == "module" and f"{d.path}.enabled" in candidates:
            return _safe_statement(f"{d.path}.enabled", d.value), None
        if d.replaced_class is not None:  # an object with one settable attribute (cudnn.conv)
            _, instance, virtual = class_names(d.replaced_class)
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
    for klass in own_classes(obj):
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
        return f"{target}({value_text(value)})" if _call_fits(obj, value) else None
    if obj is None or not _fits_type(type(obj), value):
        return None  # nothing to compare the value with, or a value of another type
    parent = _resolve_target(target.rsplit(".", 1)[0])
    try:
        choices = getattr(parent, f"supported_{leaf}s", None)
    except Exception:  # noqa: BLE001
        choices = None
    if isinstance(choices, (list, tuple)) and value not in choices:
        return None  # quantized.engine takes one of quantized.supported_engines
    return f"{target} = {value_text(value)}"


def dead_attributes() -> list[IgnoredAttribute]:
    """Attributes under torch.backends that PyTorch does not have, or that replaced a real
    function/object with a plain value, sorted by attribute path (none without torch)."""
    return [ignored for ignored, _ in observe_dead()]


def observe_dead() -> list[tuple[IgnoredAttribute, DeadAttribute]]:
    """Each dead attribute as audit() returns it and as the fact the rules judge
    (``torch.dead_attributes``: ``backends-setting-ignored``, ``backends-attribute-replaced``)."""
    if "torch" not in sys.modules:
        return []
    dead, candidates = scan()
    out = []
    for d in sorted(dead, key=lambda x: x.path):
        if d.expected is None:
            problem = NO_SUCH_SETTING
        else:
            problem = (
                f"replaced PyTorch's {describe(d.expected)} with {_a(type(d.value).__name__)}: "
                f"nothing was set, and code that uses {d.name} now breaks"
            )
        did_you_mean, note = _suggest(d, candidates)
        known = fake_table().get(d.path)
        category = (known.get("category") if isinstance(known, dict) else None) or "performance"
        ignored = IgnoredAttribute(
            attribute=d.path,
            value=_jsonable(d.value),
            problem=problem,
            did_you_mean=did_you_mean,
            note=note,
            replaced=d.expected is not None,
            category=str(category),
        )
        fact = DeadAttribute(
            attribute=d.path,
            value=value_text(d.value),
            value_type=type(d.value).__name__,
            replaced=None if d.expected is None else describe(d.expected),
            did_you_mean=did_you_mean,
            note=note,
            category=str(category),
        )
        out.append((ignored, fact))
    return out


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and not math.isnan(value):
        return value
    return value_text(value)
