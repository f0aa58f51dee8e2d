"""The base of torchdoctor's models: pydantic's, or :mod:`torchdoctor.lean`'s, chosen once per process.

facts.py, report.py, rules.py, settings.py and workload.py import ``BaseModel``, ``Field``, ``ConfigDict``,
``ValidationError``, ``field_validator``, ``PrivateAttr`` and the strict types from here. A process gets
pydantic's (JSON schemas, every command) unless it asked for :func:`use_lean` before the first of those names was
read: ``torchdoctor triage`` does for a plain-text body, and ``check --from-report`` for a text report with the
shipped rules (torchdoctor's facts JSON and a user's rule pack are validated by pydantic), because importing pydantic
and building the model classes cost more than triage's whole speed budget (issue 20). Both validate the same
declarations; tests/test_lean.py checks they agree.

``TORCHDOCTOR_LEAN=0`` in the environment turns the lean backend off (pydantic everywhere), for debugging.
"""

from __future__ import annotations

import os
from typing import Any

NAMES = ("BaseModel", "ConfigDict", "Field", "PrivateAttr", "StrictBool", "StrictFloat", "StrictInt", "StrictStr",
         "ValidationError", "field_validator")
_state = {"want_lean": False, "backend": None}


def use_lean() -> bool:
    """Ask for the lean backend; True if this process will use it (no model name was read yet, and
    TORCHDOCTOR_LEAN is not 0)."""
    if os.environ.get("TORCHDOCTOR_LEAN", "").strip() == "0":
        return False
    if _state["backend"] is None:
        _state["want_lean"] = True
        return True
    return _state["backend"] == "lean"


def backend() -> str:
    """'lean' or 'pydantic' (choosing now if nothing chose yet)."""
    if _state["backend"] is None:
        _load()
    return _state["backend"]


def is_lean() -> bool:
    """True when the lean backend was chosen (never chooses one)."""
    return _state["backend"] == "lean"


def _load() -> None:
    if _state["want_lean"]:
        from torchdoctor import lean as source

        _state["backend"] = "lean"
    else:
        import pydantic as source

        _state["backend"] = "pydantic"
    globals().update({name: getattr(source, name) for name in NAMES})


def __getattr__(name: str) -> Any:
    if name not in NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _load()
    return globals()[name]
