"""Read torchdoctor's own JSON back into :class:`~torchdoctor.facts.Facts`.

Two shapes are accepted: a report (``{"schema_version", "tool_version", "facts": {...},
...}``, what ``--format json`` writes) and a bare facts object (what ``torchdoctor probe``
writes). The facts must carry the :data:`~torchdoctor.facts.SCHEMA_VERSION` this
torchdoctor reads; anything the model does not know is an error (``extra="forbid"``), so a
stale or hand-edited file fails loudly instead of being half-read.
"""

from __future__ import annotations

import json
from typing import Any

from torchdoctor.model import BaseModel, ValidationError

from torchdoctor import facts as facts_module
from torchdoctor.facts import NAMESPACES, SCHEMA_VERSION, Facts


class JsonReportError(ValueError):
    """The JSON is not torchdoctor facts; the message says what is wrong (no file name)."""


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _facts_object(obj: Any) -> dict:
    if not isinstance(obj, dict):
        raise JsonReportError(f"JSON {type(obj).__name__}, not a torchdoctor facts object")
    facts = obj.get("facts")
    if isinstance(facts, dict):
        if "schema_version" not in facts and "schema_version" in obj:
            facts = {**facts, "schema_version": obj["schema_version"]}
        return facts
    if "facts" in obj:
        raise JsonReportError("'facts' is not an object")
    if any(k in obj for k in (*NAMESPACES, "origin", "schema_version")):
        return obj  # a bare facts object
    raise JsonReportError("JSON, but not torchdoctor facts (no 'facts' object, no fact namespaces)")


# Union branches pydantic names in an error location; a field or key never looks like these.
_BRANCHES = {
    name
    for name, obj in vars(facts_module).items()
    if isinstance(obj, type) and issubclass(obj, BaseModel)
} | {"str", "int", "float", "bool", "none", "dict", "list", "any", "literal"}


def _clean_loc(loc: tuple) -> tuple:
    return tuple(
        p
        for p in loc
        if not (isinstance(p, str) and (p in _BRANCHES or "[" in p or p.startswith("function-")))
    )


def _first_error(exc: ValidationError) -> tuple[str, str, int]:
    """The most telling error: not the "is it {'unavailable': ...}?" branch of a union, the
    deepest location; plus how many other places are wrong."""
    errors = exc.errors()
    if not errors:
        return "facts", str(exc), 0
    real = [e for e in errors if "Unavailable" not in e.get("loc", ())] or errors
    pick = max(real, key=lambda e: len(e.get("loc", ())))
    places = {_clean_loc(tuple(e.get("loc", ()))) for e in real}
    where = ".".join(str(p) for p in _clean_loc(tuple(pick.get("loc", ())))) or "facts"
    return where, str(pick.get("msg", "")), len(places) - 1


MAX_INT_DIGITS = 20
"""Integers in the JSON with more digits are read as a marker beyond 64 bits (the sanitiser
makes that fact unknown): Python refuses to convert over 4300 digits, and no fact has 20."""
_TOO_BIG = 1 << 64


def _parse_int(digits: str) -> int:
    if len(digits) <= MAX_INT_DIGITS:
        return int(digits)
    return -_TOO_BIG if digits.startswith("-") else _TOO_BIG


def facts_from_json(text: str) -> Facts:
    """Facts (``origin="json"``) from torchdoctor JSON text; raises :class:`JsonReportError`."""
    try:
        obj = json.loads(text, parse_int=_parse_int)
    except RecursionError:
        raise JsonReportError("JSON nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, or an integer too long to convert
        raise JsonReportError(f"invalid JSON: {_one_line(exc)}") from None
    facts = _facts_object(obj)
    version = facts.get("schema_version")
    if version is None:
        raise JsonReportError("no schema_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise JsonReportError(f"schema_version {_one_line(repr(version), 40)} is not an integer")
    if version != SCHEMA_VERSION:
        raise JsonReportError(
            f"schema_version {version} is not supported (this torchdoctor reads {SCHEMA_VERSION})"
        )
    try:
        parsed = Facts.model_validate(facts)
    except RecursionError:
        raise JsonReportError("facts nested too deeply") from None
    except ValidationError as exc:
        where, msg, more = _first_error(exc)
        extra = f" (and {more} more)" if more else ""
        raise JsonReportError(
            f"not valid torchdoctor facts: {_one_line(where, 80)}: {_one_line(msg, 120)}{extra}"
        ) from None
    return parsed.model_copy(update={"origin": "json"})
