"""The vocabulary of rule conditions and messages: the functions they may call (``v``,
``vmajmin``, builtins, and every public lookup of the ``tables`` package) and the exception an
unavailable fact raises inside an expression.

Its own module so that ``rules.py`` (which checks the names a message may use when a rule
loads) and ``engine.py`` (which evaluates) share it without importing each other.
"""

from __future__ import annotations

import math
from typing import Any

from packaging.version import Version

from torchdoctor import tables
from torchdoctor.safeio import clip


class FactUnavailable(Exception):
    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason




def v(text: Any) -> Version:
    """Parse a version for comparison; local labels (+cu121) and pre-releases are ignored."""
    if text is None:
        raise TypeError("v(None): the version is known to be absent")
    try:
        parsed = Version(str(text).strip())
    except ValueError:  # InvalidVersion, or a release number over 4300 digits
        raise FactUnavailable("version", f"unparseable version {clip(text)}") from None
    return Version(parsed.base_version)


def vmajmin(text: Any) -> Version:
    """Major.minor of a version (``12.4.131`` -> 12.4)."""
    parsed = v(text)
    return Version(f"{parsed.major}.{parsed.minor}")




JOB_FUNCTIONS = ("differs", "odd_ones", "odd_ranks", "keys_differing")
"""Functions over the ranks of a job (``check --distributed``), bound to the job by the engine
(engine.job_functions): each takes a fact path of one rank's facts as a string."""

NOT_FOR_RULES = frozenset({"load", "sourced_entries", "allow_list", "name_tokens"})
"""Public functions of the tables package that are loaders, not lookups for rules."""


def _table_functions() -> tuple:
    """Every public lookup of the tables package (the plain functions its modules define and
    the package exports, minus the loaders):
    a new table function is available to conditions and messages without a second list to
    keep in step (a rule naming a function that does not exist fails when it loads)."""
    import types

    return tuple(sorted(
        name for name, value in vars(tables).items()
        if type(value) is types.FunctionType
        and (value.__module__ == tables.__name__ or value.__module__.startswith(tables.__name__ + "."))
        and not name.startswith("_") and name not in NOT_FOR_RULES
    ))


TABLE_FUNCTIONS = _table_functions()

BASE_FUNCTIONS: dict[str, Any] = {
    "v": v,
    "vmajmin": vmajmin,
    "len": len,
    "min": min,
    "max": max,
    "any": any,
    "all": all,
    "sum": sum,
    "abs": abs,
    "int": int,
    "float": float,
    "str": str,
    "round": round,
    "floor": math.floor,
    "ceil": math.ceil,
    "sorted": sorted,
    "set": set,
    "list": list,
    "bool": bool,
}


def _outside_a_job(name: str) -> Any:
    def unbound(*_: Any, **__: Any) -> Any:
        raise FactUnavailable("job", f"{name}() compares the ranks of a job: not a distributed job "
                                     "(run `torchrun ... -m torchdoctor check --distributed`)")
    return unbound


def functions() -> dict[str, Any]:
    """Every function a condition or message may call. The job functions here skip the rule;
    the engine binds them to the job's ranks when it evaluates one (engine.job_functions)."""
    out = dict(BASE_FUNCTIONS)
    for name in TABLE_FUNCTIONS:
        out[name] = getattr(tables, name)
    out.update({name: _outside_a_job(name) for name in JOB_FUNCTIONS})
    return out
