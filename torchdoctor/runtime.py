"""The old name of the in-process side, kept importable: everything lives in
:mod:`torchdoctor.inprocess` now (apply, audit, the torch.backends name model)."""

from __future__ import annotations

from torchdoctor.inprocess import (  # noqa: F401 - re-exported
    ApplyResult,
    AuditResult,
    apply_plan,
    audit_process,
    dead_attributes,
    tf32_api_state,
)
from torchdoctor.inprocess.names import ClassInfo, Kind, SourceInfo, source_info  # noqa: F401
