"""The in-process side: what torchdoctor does inside the user's running Python process.

- :mod:`~torchdoctor.inprocess.apply`: ``apply_plan()`` executes the plan's statements
  (``SettingRec.code``, written once by the engine) here and reads each value back;
- :mod:`~torchdoctor.inprocess.audit`: ``audit_process()`` judges this process's torch
  settings with the rules about process state (the engine, as ``check``);
- :mod:`~torchdoctor.inprocess.names`: which names under ``torch.backends`` are real,
  derived from PyTorch's own source (``ast``) and classes;
- :mod:`~torchdoctor.inprocess.suggest`: the dead attributes and a safe "did you mean";
- :mod:`~torchdoctor.inprocess.results`: the typed (frozen pydantic) results.

Nothing here imports the API module (``torchdoctor.api`` imports this package), and torch
is imported only by ``apply_plan`` (and ``audit_process(import_torch=True)``).
"""

from __future__ import annotations

from torchdoctor.inprocess.apply import apply_plan
from torchdoctor.inprocess.audit import audit_process, tf32_api_state
from torchdoctor.inprocess.results import (
    ApplyResult,
    AuditResult,
    Change,
    IgnoredAttribute,
    NotedChange,
    ProcessFinding,
    SkippedSetting,
    Tf32ApiState,
)
from torchdoctor.inprocess.suggest import dead_attributes

__all__ = [
    "apply_plan", "audit_process", "tf32_api_state", "dead_attributes", "ApplyResult",
    "AuditResult", "Change", "IgnoredAttribute", "NotedChange", "ProcessFinding",
    "SkippedSetting", "Tf32ApiState",
]
