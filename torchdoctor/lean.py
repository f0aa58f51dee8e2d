"""A small model base with the part of pydantic's API torchdoctor's models use, for the commands whose speed is
the point (``torchdoctor triage``: issue 20's target is 3x ``--help``, and importing pydantic and building its
~50 model classes alone costs more than that).

:mod:`torchdoctor.model` hands out either pydantic's names or these, once per process (:func:`torchdoctor.model.
use_lean`); the model declarations (facts.py, report.py, rules.py, settings.py, workload.py) are the same source
for both. What it does, as pydantic does for these declarations:

- fields from annotations, defaults, ``Field(default=, default_factory=, exclude=, pattern=, min_length=,
  max_length=, ge=, le=, gt=, lt=, union_mode=)``, ``PrivateAttr``, ``ConfigDict(frozen=, extra="forbid")``,
  ``field_validator(..., mode="before"|"after")``, ``StrictBool``/``StrictInt``/``StrictStr``;
- validation on construction and in ``model_validate``: nested dicts become models, each value is checked against
  its type (``str``, ``int``, ``float``, ``bool``, ``None``, ``Literal``, ``list``/``tuple``/``set``/``dict``,
  models, ``Union``/``Optional`` tried left to right with exact types first), with pydantic's lax conversions
  where they are safe (an int, a bool or a decimal string for a float; a bool, an integral float or a decimal
  string for an int; a tuple or set for a list), and a :class:`ValidationError` (a ``ValueError``) naming the
  location otherwise;
- ``model_copy(update=)`` (not validated, as in pydantic), ``model_dump(mode=, exclude_defaults=, exclude_none=,
  exclude=)``, ``model_dump_json``, ``model_fields`` (``FieldInfo.annotation`` with the outer ``Annotated``
  stripped, as pydantic gives it), equality, hashing of frozen models.

What it does not do: JSON schemas, aliases, serializers, computed fields. Whatever needs those runs with pydantic.
Its validation is at least as strict as pydantic's lax mode on these declarations (it refuses some conversions
pydantic accepts, never accepts what pydantic refuses); tests/test_lean.py checks both backends agree on
recorded real facts, reports, rules and the triage of every recorded issue.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import sys
import types
import typing
from typing import Any, Literal, Union

__all__ = ["BaseModel", "ConfigDict", "Field", "FieldInfo", "PrivateAttr", "StrictBool", "StrictFloat",
           "StrictInt", "StrictStr", "ValidationError", "field_validator"]

_MISSING: Any = type("_Missing", (), {"__repr__": lambda self: "<missing>"})()
_NUMBER = re.compile(r"[ \t]{0,8}[+-]?(?:[0-9]{1,300}(?:\.[0-9]{0,300})?|\.[0-9]{1,300})(?:[eE][+-]?[0-9]{1,4})?[ \t]{0,8}")
_INT = re.compile(r"[ \t]{0,8}[+-]?[0-9]{1,4300}[ \t]{0,8}")
_MAX_ERRORS = 20


class ValidationError(ValueError):
    """The values a model refused, each with its location: ``errors()`` as pydantic gives it (loc, msg, type)."""

    def __init__(self, title: str, errors: list[dict]):
        self.title = title
        self._errors = errors[:_MAX_ERRORS]
        super().__init__(str(self))

    def errors(self) -> list[dict]:
        return [dict(e) for e in self._errors]

    def error_count(self) -> int:
        return len(self._errors)

    def __str__(self) -> str:
        n = len(self._errors)
        lines = [f"{n} validation error{'' if n == 1 else 's'} for {self.title}"]
        for e in self._errors:
            lines.append(".".join(str(p) for p in e["loc"]) or "<model>")
            lines.append(f"  {e['msg']} [type={e['type']}]")
        return "\n".join(lines)


class _Invalid(Exception):
    """A refused value below a model: its errors, with locations relative to where it is caught."""

    def __init__(self, loc: tuple, msg: str, kind: str = "value_error"):
        self.items = [{"loc": loc, "msg": msg, "type": kind}]

    def at(self, part: Any) -> "_Invalid":
        for e in self.items:
            e["loc"] = (part,) + tuple(e["loc"])
        return self

    @classmethod
    def of(cls, exc: "ValidationError") -> "_Invalid":
        new = cls((), "")
        new.items = exc.errors()
        return new


def ConfigDict(**kwargs: Any) -> dict:  # noqa: N802 - pydantic's name
    return dict(kwargs)


class FieldInfo:
    """A field: its default (or factory), its constraints, and its annotation (resolved when first asked)."""

    __slots__ = ("default", "default_factory", "exclude", "constraints", "description", "_owner", "_name",
                 "_annotation", "_strict", "_conv")

    def __init__(self, default: Any = _MISSING, default_factory: Any = None, exclude: Any = None,
                 description: Any = None, constraints: Any = None):
        self.default = default
        self.default_factory = default_factory
        self.exclude = exclude
        self.description = description
        self.constraints = constraints or {}
        self._owner: Any = None
        self._name = ""
        self._annotation: Any = _MISSING
        self._strict = False
        self._conv: Any = None

    def is_required(self) -> bool:
        return self.default is _MISSING and self.default_factory is None

    def get_default(self, *, call_default_factory: bool = True) -> Any:
        if self.default_factory is not None:
            return self.default_factory() if call_default_factory else self.default_factory
        if isinstance(self.default, (list, dict, set)):
            return copy.copy(self.default)
        return None if self.default is _MISSING else self.default

    @property
    def annotation(self) -> Any:
        if self._annotation is _MISSING:
            _resolve(self._owner)
        return self._annotation

    def _copy(self) -> "FieldInfo":
        new = FieldInfo(self.default, self.default_factory, self.exclude, self.description, dict(self.constraints))
        return new

    def __repr__(self) -> str:
        return f"FieldInfo(name={self._name!r}, default={self.default!r})"


_CONSTRAINTS = ("pattern", "min_length", "max_length", "ge", "le", "gt", "lt")


def Field(default: Any = _MISSING, *, default_factory: Any = None, exclude: Any = None,  # noqa: N802
          description: Any = None, union_mode: Any = None, **constraints: Any) -> Any:
    unknown = set(constraints) - set(_CONSTRAINTS)
    if unknown:
        raise TypeError(f"Field(): {', '.join(sorted(unknown))} is not supported by torchdoctor.lean")
    return FieldInfo(default, default_factory, exclude, description, constraints)


class _Private:
    __slots__ = ("default", "default_factory")

    def __init__(self, default: Any, default_factory: Any):
        self.default, self.default_factory = default, default_factory

    def value(self) -> Any:
        if self.default_factory is not None:
            return self.default_factory()
        return None if self.default is _MISSING else copy.copy(self.default)


def PrivateAttr(default: Any = _MISSING, *, default_factory: Any = None) -> Any:  # noqa: N802
    return _Private(default, default_factory)


class _Strict:
    """Annotated metadata: no conversion, the exact type only."""

    def __repr__(self) -> str:
        return "Strict()"


_STRICT = _Strict()
StrictBool = typing.Annotated[bool, _STRICT]
StrictInt = typing.Annotated[int, _STRICT]
StrictFloat = typing.Annotated[float, _STRICT]
StrictStr = typing.Annotated[str, _STRICT]


class _Validator:
    __slots__ = ("fields", "mode", "func")

    def __init__(self, fields: tuple, mode: str, func: Any):
        self.fields, self.mode = fields, mode
        self.func = func.__func__ if isinstance(func, (classmethod, staticmethod)) else func


def field_validator(*fields: str, mode: str = "after") -> Any:
    if mode not in ("before", "after"):
        raise TypeError(f"field_validator(mode={mode!r}) is not supported by torchdoctor.lean")

    def deco(func: Any) -> _Validator:
        return _Validator(fields, mode, func)

    return deco


# ------------------------------------------------------------------------------------------------------------
# annotations
# ------------------------------------------------------------------------------------------------------------

_EVAL_CACHE: dict[tuple[str, str], Any] = {}


def _evaluate(text: Any, module: str, owner: type) -> Any:
    if not isinstance(text, str):
        return text
    key = (module, text)
    if key not in _EVAL_CACHE:
        glb = vars(sys.modules[module]) if module in sys.modules else {}
        # our own modules' annotations, never user text; the class itself may be named before the module has it
        _EVAL_CACHE[key] = eval(text, glb, {owner.__name__: owner})  # noqa: S307
    return _EVAL_CACHE[key]


def _resolve(cls: type) -> None:
    """Each field's annotation, evaluated in the module that declared it (``from __future__ import
    annotations`` makes them strings), once per class."""
    if cls.__dict__.get("__lean_resolved__"):
        return
    for base in reversed(cls.__mro__[1:]):
        if isinstance(base, _ModelMeta) and base is not BaseModel:
            _resolve(base)
    declared: dict[str, tuple[str, Any]] = {}
    for klass in reversed(cls.__mro__):
        for name, text in klass.__dict__.get("__annotations__", {}).items():
            declared[name] = (klass.__module__, text, klass)
    for name, fi in cls.__lean_fields__.items():
        module, text, klass = declared[name]
        tp = _evaluate(text, module, klass)
        fi._annotation, fi._strict = _outer(tp)
        fi._conv = _converter(fi._annotation, fi._strict)
    plan = []
    for name, fi in cls.__lean_fields__.items():
        checks = cls.__lean_validators__.get(name, ())
        factory = fi.default_factory
        if factory is None and isinstance(fi.default, (list, dict, set)):
            factory = functools.partial(copy.copy, fi.default)
        plan.append((name, fi.is_required(), factory, None if fi.default is _MISSING else fi.default, fi._conv,
                     fi.constraints or None, tuple(v.func for v in checks if v.mode == "before"),
                     tuple(v.func for v in checks if v.mode == "after")))
    cls.__lean_plan__ = tuple(plan)
    cls.__lean_resolved__ = True


def _outer(tp: Any) -> tuple[Any, bool]:
    """(annotation without its outer Annotated, strict?) as pydantic's FieldInfo.annotation gives it."""
    strict = False
    while typing.get_origin(tp) is typing.Annotated:
        strict = strict or any(m is _STRICT for m in tp.__metadata__)
        tp = tp.__origin__
    return tp, strict


_UNION_TYPES: tuple = (Union, types.UnionType)
_INF = float("inf")


# ------------------------------------------------------------------------------------------------------------
# validation: each (type, strict) compiled once into a converter ``f(value) -> value`` that raises _Invalid with
# the location below it; containers prepend their index or key as the error travels up (nothing is spent on
# locations while values are good)
# ------------------------------------------------------------------------------------------------------------

_COMPILED: dict = {}


def _converter(tp: Any, strict: bool = False) -> Any:
    try:
        key = (tp, strict)
        hash(key)
    except TypeError:
        key = (id(tp), strict)
    conv = _COMPILED.get(key)
    if conv is None:
        conv = _COMPILED[key] = _compile(tp, strict)
    return conv


def _same(value: Any) -> Any:
    return value


def _fail(msg: str, kind: str) -> Any:
    raise _Invalid((), msg, kind)


def _compile(tp: Any, strict: bool) -> Any:
    if tp is Any or tp is object or isinstance(tp, typing.TypeVar):
        return _same
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _converter(tp.__origin__, strict or any(m is _STRICT for m in tp.__metadata__))
    if origin in _UNION_TYPES:
        return _union(typing.get_args(tp), strict)
    if origin is Literal:
        allowed = typing.get_args(tp)
        words = f"Input should be {' or '.join(repr(a) for a in allowed)}"

        def literal(value: Any) -> Any:
            for a in allowed:
                if value == a and type(value) is type(a):
                    return a
            return _fail(words, "literal_error")
        return literal
    if origin in (list, set, frozenset, tuple):
        return _sequence(origin, typing.get_args(tp), strict)
    if origin is dict:
        kt, vt = typing.get_args(tp) or (Any, Any)
        kc, vc = _converter(kt, strict), _converter(vt, strict)

        str_keys = kt is str

        def mapping(value: Any) -> Any:
            if not isinstance(value, dict):
                return _fail("Input should be a valid dictionary", "dict_type")
            if vc is _same and (kc is _same or (str_keys and all(type(k) is str for k in value))):
                return dict(value)  # dict[str, Any]: the keys checked, the values as they are
            out = {}
            for k, v in value.items():
                try:
                    out[kc(k)] = vc(v)
                except _Invalid as exc:
                    raise exc.at(k) from None
            return out
        return mapping
    if tp is None or tp is type(None):
        return lambda value: None if value is None else _fail("Input should be None", "none_required")
    if isinstance(tp, _ModelMeta):
        words = f"Input should be a valid dictionary or instance of {tp.__name__}"

        def model(value: Any) -> Any:
            if isinstance(value, tp):
                return value
            if isinstance(value, dict):
                try:
                    return tp._lean_build(value)
                except ValidationError as exc:
                    raise _Invalid.of(exc) from None
            return _fail(words, "model_type")
        return model
    return _scalar(tp, strict)


def _scalar(tp: Any, strict: bool) -> Any:
    if tp is bool:
        return lambda value: value if type(value) is bool else _fail("Input should be a valid boolean", "bool_type")
    if tp is int:
        def integer(value: Any) -> Any:
            if type(value) is int:
                return value
            if not strict and type(value) is bool:  # pydantic's lax mode: True is 1
                return int(value)
            if not strict and isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
                return int(value)
            if not strict and isinstance(value, str) and _INT.fullmatch(value):
                return int(value)
            return _fail("Input should be a valid integer", "int_type")
        return integer
    if tp is float:
        def number(value: Any) -> Any:
            if type(value) is float:
                return value
            if not strict and type(value) in (int, bool) and -2**1023 < value < 2**1023:
                return float(value)
            if not strict and isinstance(value, str) and _NUMBER.fullmatch(value):
                return float(value)
            return _fail("Input should be a valid number", "float_type")
        return number
    if tp is str:
        def string(value: Any) -> Any:
            if type(value) is str:
                return value
            if isinstance(value, str):  # a str subclass (an Enum of strings): its plain value
                return str.__str__(value)
            return _fail("Input should be a valid string", "string_type")
        return string
    if isinstance(tp, type):
        words = f"Input should be an instance of {tp.__name__}"
        return lambda value: value if isinstance(value, tp) else _fail(words, "is_instance_of")
    raise TypeError(f"torchdoctor.lean cannot check the type {tp!r}")


def _sequence(origin: Any, args: tuple, strict: bool) -> Any:
    words, kind = f"Input should be a valid {origin.__name__}", f"{origin.__name__}_type"
    if origin is tuple and args and args[-1] is not Ellipsis:
        convs = [_converter(t, strict) for t in args]

        def fixed(value: Any) -> Any:
            if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)):
                return _fail(words, kind)
            if len(value) != len(convs):
                return _fail(f"Tuple should have {len(convs)} items", "too_short")
            out = []
            for i, (v, c) in enumerate(zip(value, convs)):
                try:
                    out.append(c(v))
                except _Invalid as exc:
                    raise exc.at(i) from None
            return tuple(out)
        return fixed
    item = _converter(args[0] if args else Any, strict)

    def sequence(value: Any) -> Any:
        if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple, set, frozenset)):
            return _fail(words, kind)
        if item is _same:
            out = list(value)
        else:
            out = []
            for i, v in enumerate(value):
                try:
                    out.append(item(v))
                except _Invalid as exc:
                    raise exc.at(i) from None
        return out if origin is list else origin(out)
    return sequence


def _tag(tp: Any) -> str:
    """The name pydantic gives a union member in an error's location (``Unavailable``, ``str``, ``dict[...]``)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _tag(tp.__origin__)
    if origin is Literal:
        return "literal[" + ",".join(repr(a) for a in typing.get_args(tp)) + "]"
    if origin is not None:
        return f"{getattr(origin, '__name__', 'union')}[...]"
    return getattr(tp, "__name__", repr(tp))


def _union(args: tuple, strict: bool) -> Any:
    real = [tp for tp in args if tp is not type(None)]
    members = [(_exact(tp), _converter(tp, strict), _tag(tp)) for tp in real]
    optional = type(None) in args

    def union(value: Any) -> Any:
        if value is None and optional:
            return None
        # what the value already is first, then each member with conversions, left to right
        for exact, conv, _ in members:
            if exact(value):
                try:
                    return conv(value)
                except _Invalid:
                    break
        problems: list[dict] = []
        for _, conv, tag in members:
            try:
                return conv(value)
            except _Invalid as exc:
                problems += exc.at(tag).items if len(members) > 1 else exc.items
        exc = _Invalid((), "")
        exc.items = problems  # each member's errors, under its name (as pydantic reports a union)
        raise exc
    return union


def _exact(tp: Any) -> Any:
    """A test of whether a value already is ``tp`` (no conversion)."""
    origin = typing.get_origin(tp)
    if origin is typing.Annotated:
        return _exact(tp.__origin__)
    if origin is Literal:
        allowed = typing.get_args(tp)
        return lambda value: any(value == a and type(value) is type(a) for a in allowed)
    if origin in (list, set, frozenset, tuple, dict):
        return lambda value: type(value) is origin
    if isinstance(tp, _ModelMeta):
        def model(value: Any) -> bool:
            if isinstance(value, tp):
                return True
            # a dict that names only this model's fields and all its required ones (``{"unavailable": ...}`` is
            # Unavailable): taken before a dict-typed member of the union, as pydantic's left-to-right does
            if not isinstance(value, dict):
                return False
            fields = tp.__lean_fields__
            return all(k in fields for k in value) and all(k in value for k, f in fields.items() if f.is_required())
        return model
    if tp in (bool, int, float, str):
        return lambda value: type(value) is tp
    return lambda value: False


def _check(value: Any, c: dict) -> None:
    """A field's constraints (pattern, lengths, bounds)."""
    if value is None:
        return
    if "pattern" in c and isinstance(value, str) and not re.search(c["pattern"], value):
        _fail(f"String should match pattern '{c['pattern']}'", "string_pattern_mismatch")
    if isinstance(value, (str, list, tuple, dict, set)):
        if "min_length" in c and len(value) < c["min_length"]:
            _fail(f"Value should have at least {c['min_length']} item(s)", "too_short")
        if "max_length" in c and len(value) > c["max_length"]:
            _fail(f"Value should have at most {c['max_length']} item(s)", "too_long")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        for key, ok, words in (("ge", lambda a, b: a >= b, "greater than or equal to"),
                               ("le", lambda a, b: a <= b, "less than or equal to"),
                               ("gt", lambda a, b: a > b, "greater than"), ("lt", lambda a, b: a < b, "less than")):
            if key in c and not ok(value, c[key]):
                _fail(f"Input should be {words} {c[key]}", key)


# ------------------------------------------------------------------------------------------------------------
# the model
# ------------------------------------------------------------------------------------------------------------

class _ModelMeta(type):
    def __new__(mcs, name: str, bases: tuple, ns: dict, **kwargs: Any) -> Any:
        fields: dict[str, FieldInfo] = {}
        private: dict[str, _Private] = {}
        validators: dict[str, list] = {}
        config: dict = {}
        for base in reversed(bases):
            if isinstance(base, _ModelMeta):
                fields.update({k: v._copy() for k, v in base.__lean_fields__.items()})
                private.update(base.__lean_private__)
                for k, v in base.__lean_validators__.items():
                    validators.setdefault(k, []).extend(v)
                config.update(base.model_config)
        config.update(ns.get("model_config", {}))
        for attr, value in list(ns.items()):
            if isinstance(value, _Validator):
                for f in value.fields:
                    validators.setdefault(f, []).append(value)
                ns[attr] = classmethod(value.func)
        for attr, value in list(ns.items()):
            if isinstance(value, _Private) and attr not in ns.get("__annotations__", {}):
                private[attr] = ns.pop(attr)
        for fname, text in ns.get("__annotations__", {}).items():
            if fname == "model_config" or (isinstance(text, str) and text.startswith(("ClassVar",
                                                                                          "typing.ClassVar"))):
                continue
            value = ns.pop(fname, _MISSING)
            if fname.startswith("_"):
                private[fname] = value if isinstance(value, _Private) else _Private(value, None)
                continue
            fi = value._copy() if isinstance(value, FieldInfo) else FieldInfo(default=value)
            fields[fname] = fi
        ns["model_config"] = config
        cls = super().__new__(mcs, name, bases, ns, **kwargs)
        for fname, fi in fields.items():
            fi._owner, fi._name = cls, fname
        cls.__lean_fields__ = fields
        cls.__lean_private__ = private
        cls.__lean_validators__ = validators
        type.__setattr__(cls, "__lean_resolved__", False)
        cls.__lean_frozen__ = bool(config.get("frozen"))
        cls.__lean_forbid__ = config.get("extra") == "forbid"
        return cls

    @property
    def model_fields(cls) -> dict[str, FieldInfo]:
        if not cls.__lean_resolved__:
            _resolve(cls)
        return cls.__lean_fields__

    def _lean_build(cls, data: dict) -> Any:
        if not cls.__lean_resolved__:
            _resolve(cls)
        errors: list[dict] = []
        values: dict[str, Any] = {}
        fields = cls.__lean_fields__
        if cls.__lean_forbid__:
            for key in data:
                if key not in fields:
                    errors.append({"loc": (key,), "msg": "Extra inputs are not permitted", "type": "extra_forbidden"})
        given = set()
        # one precomputed step per field (_resolve): name, required, default factory, default, converter,
        # constraints, "before" and "after" validators
        for name, required, factory, default, conv, constraints, before, after in cls.__lean_plan__:
            if name not in data:
                if required:
                    errors.append({"loc": (name,), "msg": "Field required", "type": "missing"})
                else:
                    values[name] = factory() if factory is not None else default
                continue
            value = data[name]
            given.add(name)
            try:
                for func in before:
                    value = func(cls, value)
                value = conv(value)
                if constraints:
                    _check(value, constraints)
                for func in after:
                    value = func(cls, value)
            except _Invalid as exc:
                errors += exc.at(name).items
                continue
            except ValidationError as exc:
                errors += _Invalid.of(exc).at(name).items
                continue
            except (ValueError, AssertionError) as exc:
                errors.append({"loc": (name,), "msg": f"Value error, {exc}", "type": "value_error"})
                continue
            values[name] = value
        if errors:
            raise ValidationError(cls.__name__, errors)
        self = cls.__new__(cls)
        _fill(self, values, given, {name: p.value() for name, p in cls.__lean_private__.items()})
        return self


def _dump(value: Any, json_mode: bool, kw: dict) -> Any:
    if isinstance(value, BaseModel):
        return value._lean_dump(json_mode, kw)
    if isinstance(value, dict):
        return {(_dump(k, json_mode, {}) if json_mode else k): _dump(v, json_mode, kw) for k, v in value.items()}
    if isinstance(value, list):
        return [_dump(v, json_mode, kw) for v in value]
    if isinstance(value, tuple):
        items = [_dump(v, json_mode, kw) for v in value]
        return items if json_mode else tuple(items)
    if isinstance(value, (set, frozenset)):
        items = [_dump(v, json_mode, kw) for v in value]
        return items if json_mode else type(value)(items)
    if json_mode and isinstance(value, float) and (value != value or value in (_INF, -_INF)):
        return None  # pydantic's JSON mode writes inf and nan as null
    return value


class _Fields:
    """``model_fields`` read from an instance (the metaclass's property answers for the class)."""

    def __get__(self, obj: Any, owner: Any) -> Any:
        return type(owner).model_fields.fget(owner)


class BaseModel(metaclass=_ModelMeta):
    # the field values are the instance's __dict__ and nothing else (equality, iteration and dumps read it, as
    # pydantic's do); which fields were given and the private attributes live in slots beside it
    __slots__ = ("__dict__", "__weakref__", "_lean_set", "_lean_private")
    model_config: dict = {}
    model_fields = _Fields()

    def __getattr__(self, name: str) -> Any:
        private = type(self).__lean_private__
        if name in private:
            return self._lean_private[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __init__(self, **data: Any) -> None:
        built = type(self)._lean_build(data)
        _fill(self, built.__dict__, built._lean_set, built._lean_private)

    @classmethod
    def model_validate(cls, obj: Any, **_: Any) -> Any:
        if isinstance(obj, cls):
            return obj
        if not isinstance(obj, dict):
            raise ValidationError(cls.__name__, [{"loc": (), "msg": f"Input should be a valid dictionary or "
                                                  f"instance of {cls.__name__}", "type": "model_type"}])
        return cls._lean_build(obj)

    @classmethod
    def model_construct(cls, **values: Any) -> Any:
        self = cls.__new__(cls)
        data = {n: values[n] if n in values else f.get_default() for n, f in cls.__lean_fields__.items()}
        _fill(self, data, set(values), {name: p.value() for name, p in cls.__lean_private__.items()})
        return self

    def model_copy(self, *, update: Any = None, deep: bool = False) -> Any:
        new = type(self).__new__(type(self))
        data = copy.deepcopy(self.__dict__) if deep else dict(self.__dict__)
        data.update(update or {})
        _fill(new, data, set(self._lean_set) | set(update or {}), dict(self._lean_private))
        return new

    def _lean_dump(self, json_mode: bool, kw: dict) -> dict:
        out = {}
        fields = type(self).__lean_fields__
        exclude = kw.get("exclude") or ()
        for name, value in self.__dict__.items():
            fi = fields.get(name)
            if fi is None or fi.exclude or name in exclude:
                continue
            if kw.get("exclude_none") and value is None:
                continue
            if kw.get("exclude_unset") and name not in self._lean_set:
                continue
            if kw.get("exclude_defaults") and not fi.is_required() and value == fi.get_default():
                continue
            out[name] = _dump(value, json_mode, {k: v for k, v in kw.items() if k != "exclude"})
        return out

    def model_dump(self, *, mode: str = "python", exclude: Any = None, exclude_defaults: bool = False,
                   exclude_none: bool = False, exclude_unset: bool = False, **_: Any) -> dict:
        return self._lean_dump(mode == "json", {"exclude": set(exclude or ()), "exclude_defaults": exclude_defaults,
                                                "exclude_none": exclude_none, "exclude_unset": exclude_unset})

    def model_dump_json(self, *, indent: Any = None, **kwargs: Any) -> str:
        data = self.model_dump(mode="json", **kwargs)
        if indent is None:
            return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        return json.dumps(data, ensure_ascii=False, indent=indent)

    @property
    def model_fields_set(self) -> set:
        return set(self._lean_set)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in type(self).__lean_private__:
            self._lean_private[name] = value
            return
        if type(self).__lean_frozen__:
            raise ValidationError(type(self).__name__, [{"loc": (name,), "msg": "Instance is frozen",
                                                         "type": "frozen_instance"}])
        if name not in type(self).__lean_fields__:
            raise ValueError(f'"{type(self).__name__}" object has no field "{name}"')
        self.__dict__[name] = value

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, BaseModel):
            return NotImplemented
        return type(self) is type(other) and self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        if not type(self).__lean_frozen__:
            raise TypeError(f"unhashable type: '{type(self).__name__}'")
        return hash((type(self),) + tuple(self.__dict__.values()))

    def __iter__(self) -> Any:
        yield from self.__dict__.items()

    def __repr__(self) -> str:
        fields = type(self).__lean_fields__
        args = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items() if k in fields)
        return f"{type(self).__name__}({args})"

    def __copy__(self) -> Any:
        return self.model_copy()

    def __deepcopy__(self, memo: Any) -> Any:
        return self.model_copy(deep=True)

    def __reduce__(self) -> Any:
        return (_rebuild, (type(self), self.__dict__))


def _fill(self: Any, values: dict, given: set, private: dict) -> None:
    object.__setattr__(self, "__dict__", values)
    object.__setattr__(self, "_lean_set", given)
    object.__setattr__(self, "_lean_private", private)


def _rebuild(cls: type, data: dict) -> Any:
    return cls.model_construct(**data)
