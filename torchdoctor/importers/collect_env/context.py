"""The context one collect_env report is read in: its scan and what the namespace readers
decided before (torch imported?, the Python version, the OS family, the package rows)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from torchdoctor.importers.collect_env.common import _Row
from torchdoctor.importers.collect_env.scan import _Scan


@dataclass
class _Ctx:
    scan: _Scan
    fields: dict[str, str]
    torch_imported: Optional[bool] = None
    torch_version: Optional[str] = None
    python_version: Optional[str] = None
    os_family: Optional[str] = None
    pip: list[_Row] = field(default_factory=list)
    conda: list[_Row] = field(default_factory=list)
    pip_state: str = "absent"
    conda_state: str = "absent"
    conda_other_env: bool = False
    import_error: Optional[tuple[str, str]] = None  # (exception type, message) pasted nearby
    cuda_init_warning: Optional[str] = None  # torch's "CUDA initialization: ..." pasted nearby


def _cudnn_text(ctx: _Ctx) -> str:
    return "\n".join([ctx.fields.get("cudnn_version", ""), *ctx.scan.cudnn_lines])
