"""Evidence: what the paste reader found (a value, its line, the kind of line, a rank), before
it becomes facts; and the bounds every part of the reader keeps."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Optional

from torchdoctor.importers import collect_env as ce
from torchdoctor.importers.paste.wording import _of_interest

PASTE_SILENT = "the paste does not say"
"""Why a fact is unknown when the text is not a collect_env report."""

MAX_LINE_CHARS = 2_000
"""Only this much of a line is read (torch's longest warning line is about 450 characters)."""
MAX_LINES = ce.MAX_LINES
MAX_ROWS = 2_000
"""Package rows after this many are not read."""
MAX_GPUS = ce.MAX_GPUS
MAX_VALUE_CHARS = 300
"""A value (a GPU name, an OS line) is cut at this length."""
MAX_MESSAGE_CHARS = ce.MAX_INIT_ERROR_CHARS
MAX_LABEL_CHARS = 60
MAX_NAME_LOOKUPS = 200
"""Lines of prose or bare names looked up in the GPU-name table at most (each lookup compares
the name with every pattern of rules/data/gpu_models.yaml)."""

RANK_TOOL, RANK_LIST, RANK_INSTALL, RANK_PROSE = 1, 2, 3, 4
_NAMED_VERSION = re.compile(r"^(?:py)?torch[ =-]{0,2}v?(?=\d)", re.IGNORECASE)
"""The package name written before a version in a template's value ("torch2.8.0+cu128")."""


# --------------------------------------------------------------------------------------
# evidence
# --------------------------------------------------------------------------------------


class Evidence(NamedTuple):
    value: Any
    line: int
    how: str
    rank: int

    @property
    def where(self) -> str:
        return f"{self.how}, line {self.line}"


@dataclass
class _GpuGroup:
    how: str
    rank: int
    line: int
    names: list[tuple[int, str, Optional[float]]] = field(default_factory=list)  # index, name, cc
    stated_count: bool = True
    last: int = 0  # the line of the latest entry (``line`` is the first's)


@dataclass
class Paste:
    """Everything the reader found, before it becomes facts."""

    fields: dict[str, Evidence] = field(default_factory=dict)
    gpu_groups: list[_GpuGroup] = field(default_factory=list)
    rows: dict[str, tuple[Evidence, Optional[str], Optional[str]]] = field(default_factory=dict)
    arch_list: Optional[Evidence] = None
    init_errors: list[Evidence] = field(default_factory=list)
    cuda_driver: Optional[Evidence] = None
    import_failure: Optional[Evidence] = None  # value: (kind, message)
    cudnn: Optional[Evidence] = None  # value: (built, runtime)
    compile_error: Optional[Evidence] = None
    torch_imported: Optional[Evidence] = None
    cuda_available: Optional[Evidence] = None
    cuda_build_none: Optional[Evidence] = None
    cuda_variant: Optional[Evidence] = None
    extension_archs: dict[str, Evidence] = field(default_factory=dict)
    torch_versions: list[Evidence] = field(default_factory=list)
    installer: Optional[Evidence] = None  # value: "pip" | "conda" (prose, an install command)

    def put(self, key: str, value: Any, line: int, how: str, rank: int) -> None:
        if value is None or value == "":
            return
        if isinstance(value, str):
            value = value.strip()[:MAX_VALUE_CHARS]
            if key == "torch_version":  # "PyTorch version:torch2.8.0+cu128" (pyg-team/pyg-lib#548)
                value = _NAMED_VERSION.sub("", value)
            if not value:
                return
        old = self.fields.get(key)
        if key == "torch_version" and rank == RANK_TOOL:
            self.torch_versions.append(Evidence(value, line, how, rank))
        if old is None or rank < old.rank:
            self.fields[key] = Evidence(value, line, how, rank)

    def first(self, attr: str, value: Any, line: int, how: str, rank: int = RANK_TOOL) -> None:
        old = getattr(self, attr)
        if old is None or rank < old.rank:
            setattr(self, attr, Evidence(value, line, how, rank))

    def add_row(self, name: str, version: str, line: int, how: str, rank: int,
                build: Optional[str] = None, channel: Optional[str] = None) -> None:
        name = ce._norm_name(name)
        if not name or not version or len(self.rows) >= MAX_ROWS:
            return
        if name == "python":
            self.put("python_version", version, line, how, rank)
            return
        if not _of_interest(name):
            return
        old = self.rows.get(name)
        if old is None or rank < old[0].rank:
            self.rows[name] = (Evidence(version[:80], line, how, rank), build, channel)

    def gpus(self, how: str, rank: int, line: int, names: list, stated_count: bool = True) -> None:
        names = [(i, n.strip()[: ce.MAX_NAME_CHARS], cc) for i, n, cc in names if n and n.strip()]
        if names:
            self.gpu_groups.append(_GpuGroup(how, rank, line, names[:MAX_GPUS], stated_count, line))

    @property
    def best_gpus(self) -> Optional[_GpuGroup]:
        if not self.gpu_groups:
            return None
        return min(self.gpu_groups, key=lambda g: (g.rank, g.line))

    def empty(self) -> bool:
        return not (
            self.fields or self.gpu_groups or self.rows or self.arch_list or self.init_errors
            or self.cuda_driver or self.import_failure or self.cudnn or self.compile_error
            or self.cuda_available or self.cuda_build_none or self.extension_archs
        )
