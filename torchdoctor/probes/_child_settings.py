"""Read torch settings back through the settings registry (``rules/settings.yaml``).

A sibling of ``_torch_child.py`` with the same constraints: standard library only, Python >=
3.8, never imports torchdoctor (it runs under the *target* interpreter). The torch child
loads it by path; in-process code imports it as ``torchdoctor.probes._child_settings``.

Every entry of the registry (``settings:`` and ``observed:``) names its getter as data, on one
line: ``getter: {attribute: torch.a.b}``, ``{call: torch.get_x}`` (no arguments) or
``{env: NAME}``, optionally with ``result: enum-name`` (an enum read as its lower-case member
name, the string the setter accepts) and ``probe: false`` (read back by ``apply()`` only, not
reported among the torch facts). :func:`scan` reads exactly that line without a YAML parser;
``torchdoctor.settings`` checks at load that the scan equals what YAML parsed, so the two can
never disagree. :func:`read` evaluates getters with attribute look-ups on the torch module
only: names are validated identifiers, nothing from the file is executed.

A ``call`` getter is read only where the setting's own function (its key, when the key is a
``torch.`` path: the setter) exists too, so a getter without its setter is not a setting.
"""

import math
import os
import re
import sys
import types

ABSENT = object()
_ABSENT = ABSENT
GETTER_KINDS = ("attribute", "call", "env")
MAX_REGISTRY = 1024 * 1024
"""Largest settings file read (the shipped one is ~30 kB)."""

_SECTION = re.compile(r"([A-Za-z_]\w*):")
_ENTRY = re.compile(r"  ([A-Za-z_][\w.]*):[ \t]*$")
_GETTER = re.compile(r"    getter:[ \t]*\{([^{}\n]*)\}[ \t]*(?:#.*)?$")
_PAIR = re.compile(r"\s*([a-z_]+):\s*([A-Za-z_][\w.-]*)\s*$")
_PATH = re.compile(r"torch(\.[A-Za-z_]\w*)+$")
_ENV = re.compile(r"[A-Za-z_]\w*$")
SECTIONS = ("settings", "observed")


def _unavailable(reason):
    return {"unavailable": reason}


def _first_line(exc):
    """``Type: first line of the message`` (torch appends C++ stack traces to messages)."""
    text = str(exc).strip().splitlines()
    return "{}: {}".format(type(exc).__name__, text[0].strip() if text else "")


def _try(what, fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - one failure costs one field
        return _unavailable(f"{what} failed: {_first_line(exc)}")


def _jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, float) and math.isnan(value):  # NaN is not JSON
            return str(value)
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict) or hasattr(value, "items"):
        return {str(k): _jsonable(v) for k, v in value.items()}
    name = getattr(value, "name", None)  # pybind11 / Python enums
    if isinstance(name, str):
        return name.lower()
    return str(value)


def _enum_name(value):
    """``_LinalgBackend.Default`` -> ``"default"`` (the string the setter accepts)."""
    name = getattr(value, "name", None)
    if not isinstance(name, str):
        name = str(value).rsplit(".", 1)[-1]
    return name.lower()


def _is_plain_module(obj):
    return type(obj) is types.ModuleType


def _lookup(obj, name):
    """The real attribute ``name`` of ``obj``: its value, ``_ABSENT``, or raises (getter failed).

    ``torch.backends`` modules silently accept any assignment, so existence is judged
    without trusting ``hasattr``: on the PropModule-style modules (cudnn, mkldnn,
    opt_einsum, quantized, backends itself) a name is real when the class defines it or the
    original module (``.m``) does; on the attribute controllers (``cuda.matmul``,
    ``cudnn.conv``) an unknown name raises AttributeError (AssertionError before 1.12).
    """
    if isinstance(obj, types.ModuleType):
        if not _is_plain_module(obj):
            defined = any(
                name in vars(k) for k in type(obj).__mro__ if k not in (types.ModuleType, object)
            )
            inner = obj.__dict__.get("m")
            if not defined and isinstance(inner, types.ModuleType):
                defined = name in vars(inner)
            if not defined:
                return _ABSENT
            return getattr(obj, name)
        if name in vars(obj):
            return getattr(obj, name)
        return _ABSENT
    try:
        return getattr(obj, name)
    except AttributeError:
        return _ABSENT
    except AssertionError as exc:
        if "Unknown attribute" in str(exc):
            return _ABSENT
        raise


def _resolve(torch, path):
    """Object at ``torch.a.b`` (``_ABSENT`` when a component does not exist); may raise."""
    obj = torch
    parts = path.split(".")[1:]
    for i, part in enumerate(parts):
        value = _lookup(obj, part)
        if (
            value is _ABSENT
            and isinstance(obj, types.ModuleType)
            and i < len(parts) - 1
            and sys.modules.get("torch") is torch
        ):
            # a submodule the running version has but did not bind as an attribute
            modname = "torch." + ".".join(parts[: i + 1])
            mod = sys.modules.get(modname)
            value = mod if mod is not None else _ABSENT
        if value is _ABSENT:
            return _ABSENT
        obj = value
    return obj


# --------------------------------------------------------------------------------------
# the registry's getters, as data
# --------------------------------------------------------------------------------------


def check_getter(getter):
    """The getter if it is well formed (one kind, a torch path or a variable name), else raise
    ValueError saying what is wrong."""
    if not isinstance(getter, dict):
        raise ValueError("a getter is a mapping such as {attribute: torch.a.b}")
    kinds = [k for k in GETTER_KINDS if k in getter]
    if len(kinds) != 1:
        raise ValueError("a getter names exactly one of attribute, call, env")
    unknown = set(getter) - set(GETTER_KINDS) - {"result", "probe"}
    if unknown:
        raise ValueError(f"unknown getter field {sorted(unknown)[0]!r}")
    target = getter[kinds[0]]
    pattern = _ENV if kinds[0] == "env" else _PATH
    if not isinstance(target, str) or len(target) > 200 or not pattern.match(target):
        what = "a variable name" if kinds[0] == "env" else "a dotted path on torch (torch.a.b)"
        raise ValueError(f"{kinds[0]}: expects {what}")
    if getter.get("result", "enum-name") != "enum-name":
        raise ValueError("result: only enum-name")
    if getter.get("probe", False) not in (True, False):
        raise ValueError("probe: true or false")
    return getter


def scan(text):
    """``[(key, getter)]`` of every entry of ``settings:`` and ``observed:`` with a getter, in
    file order, read line by line (no YAML parser in the target interpreter)."""
    out = []
    section = key = None
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            section, key = m.group(1), None
            continue
        if section not in SECTIONS:
            continue
        m = _ENTRY.match(line)
        if m:
            key = m.group(1)
            continue
        m = _GETTER.match(line)
        if m and key is not None:
            getter = {}
            for pair in m.group(1).split(","):
                p = _PAIR.match(pair)
                if not p:
                    raise ValueError(f"settings registry: getter of {key} is not `name: value` pairs")
                value = p.group(2)
                getter[p.group(1)] = {"true": True, "false": False}.get(value, value)
            out.append((key, check_getter(getter)))
            key = None
    return out


def registry_path():
    """The shipped settings registry, found like ``torchdoctor.paths.default_rules_dir``."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    installed = os.path.join(package, "_rules", "settings.yaml")
    if os.path.isfile(installed):
        return installed
    return os.path.join(os.path.dirname(package), "rules", "settings.yaml")


def default_getters(path=None):
    """The getters of the settings registry at ``path`` (default: the shipped one)."""
    path = path or registry_path()
    with open(path, "rb") as f:
        data = f.read(MAX_REGISTRY + 1)
    if len(data) > MAX_REGISTRY:
        raise ValueError(f"{path}: settings registry over {MAX_REGISTRY} bytes")
    return scan(data.decode("utf-8"))


def read_one(torch, key, getter):
    """The current value of one setting as JSON data, ``{"unavailable": reason}`` when its
    getter raised, or ``ABSENT`` when the running torch (or environment) does not have it."""
    if "env" in getter:
        value = os.environ.get(getter["env"])
        return ABSENT if value is None else value
    if "attribute" in getter:
        path = getter["attribute"]
        try:
            value = _resolve(torch, path)
        except Exception as exc:  # noqa: BLE001 - e.g. the mixed legacy/new TF32 API state
            return _unavailable(f"reading {path} failed: {_first_line(exc)}")
        return value if value is ABSENT else _jsonable(value)
    path = getter["call"]
    has_setter = key.startswith("torch.")  # the key names the setting's own function
    try:
        set_fn = _resolve(torch, key) if has_setter else None
        get_fn = _resolve(torch, path)
    except Exception:  # noqa: BLE001 - a module that fails to resolve has no such setting
        return ABSENT
    if get_fn is ABSENT or not callable(get_fn):
        return ABSENT
    if has_setter and (set_fn is ABSENT or not callable(set_fn)):
        return ABSENT
    try:
        value = get_fn()
    except Exception as exc:  # noqa: BLE001
        return _unavailable(f"{path}() failed: {_first_line(exc)}")
    if getter.get("result") == "enum-name":
        value = _enum_name(value)
    return _jsonable(value)


def read(torch, getters=None):
    """Current value of every setting the running torch has, by registry key: the entries
    whose getter reads torch (``attribute``/``call``) and that are probed."""
    if getters is None:
        getters = default_getters()
    settings = {}
    for key, getter in getters:
        if "env" in getter or getter.get("probe", True) is False:
            continue
        value = read_one(torch, key, getter)
        if value is not ABSENT:
            settings[key] = value
    return settings
