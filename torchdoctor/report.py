"""What an evaluation produced (findings, skipped rules, the settings plan) and what a
comparison of two environments produced (:class:`DiffResult`). Pure data: the renderers take
these, and nothing else."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any, Literal, Optional

from torchdoctor.model import BaseModel, ConfigDict

from torchdoctor.facts import SCHEMA_VERSION, Facts
from torchdoctor.workload import Workload

Severity = Literal["error", "warning", "info"]
SEVERITY_RANK = {"error": 0, "warning": 1, "info": 2}

CATEGORIES = (
    "gpu-arch-unsupported",
    "driver-too-old",
    "cpu-only-build",
    "multiple-installs",
    "python-unsupported",
    "os-unsupported",
    "torch-import-failure",
    "cudnn-mismatch",
    "cuda-unavailable",
    "platform-mismatch",
    "threads",
    "shared-memory",
    "gpu-health",
    "deprecated-package",
    "debug-setting",
    "reproducibility",
    "performance",
    "distributed",
    "package-mismatch",
    "probe",
)


class ExitCode(IntEnum):
    OK = 0
    """No finding at or above --fail-on."""
    FINDINGS = 1
    """At least one finding at or above --fail-on."""
    ERROR = 2
    """Bad arguments, unreadable or malformed input/rule files, internal error."""
    INTERRUPTED = 130
    """Ctrl-C."""


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Finding(_Model):
    id: str
    """Rule id (names the problem)."""
    severity: Severity
    category: str
    message: str
    """One line, specific to these facts."""
    summary: str = ""
    fix: str = ""
    references: list[str] = []


class Skipped(_Model):
    id: str
    needs: str
    """The fact path the rule needed."""
    reason: str
    """Why that fact is unavailable."""


class Overridden(_Model):
    rule: str
    value: Any
    reason: str


class SettingRec(_Model):
    key: str
    value: Any
    rule: str
    """Rule that decided the value."""
    reason: str
    """Why (the rule's message)."""
    kind: str
    precedence: str
    also: list[str] = []
    """Other rules that asked for the same value."""
    overrides: list[Overridden] = []
    """Lower-precedence recommendations this one won over."""
    code: str = ""
    """The Python statement(s) that apply it for the plan's torch version (from the settings
    registry, when the plan is resolved); every view shows this, never ``key = value``."""
    guard: Optional[str] = None
    """``cuda``: the code runs only where CUDA is available (the snippet guards it)."""
    uses: list[str] = []
    """How the user's own code takes the constants this code defines (the registry's ``uses``:
    ``DataLoader(**DATALOADER_KWARGS)``); empty for settings that apply themselves."""


class DroppedSetting(_Model):
    key: str
    value: Any
    rule: str
    reason: str
    """Why it is not in the plan (e.g. does not exist in the target torch version)."""


class Report(_Model):
    schema_version: int = SCHEMA_VERSION
    tool_version: str
    command: str
    torch_version: Optional[str] = None
    """The torch version settings were written for."""
    facts: Facts
    workload: Optional[Workload] = None
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    settings: list[SettingRec] = []
    dropped: list[DroppedSetting] = []
    snippet: Optional[str] = None
    rules_evaluated: int = 0
    planned_for: Optional[str] = None
    """`recommend --gpu`: the machine and torch the plan is for, and where that torch version
    came from (``plan for A100, torch 2.13.0 (installed for /usr/bin/python3)``)."""

    def setting_rules(self) -> set[str]:
        """Rules whose advice is already shown as a row of the settings plan."""
        out = set()
        for s in self.settings:
            out.add(s.rule)
            out.update(s.also)
            out.update(o.rule for o in s.overrides)
        return out

    def displayed_findings(self) -> list[Finding]:
        """Findings to list beside the plan: info-level advice that became a setting is shown
        once, in the settings table, not twice."""
        shown = self.setting_rules()
        kept = [f for f in self.findings if not (f.severity == "info" and f.id in shown)]
        return sorted(kept, key=lambda f: SEVERITY_RANK[f.severity])  # errors first, stable

    def workload_skipped(self) -> list[Skipped]:
        """Rules skipped because no workload was declared (``check``): not evaluated by
        design rather than for a missing fact."""
        return [s for s in self.skipped if s.needs.startswith("workload")]

    def fact_skipped(self) -> list[Skipped]:
        """Rules skipped because a fact of the machine is unknown."""
        return [s for s in self.skipped if not s.needs.startswith("workload")]

    def counts(self) -> dict[str, int]:
        out = {"error": 0, "warning": 0, "info": 0}
        for f in self.findings:
            out[f.severity] += 1
        return out


def exit_code(report: Report, fail_on: str = "error") -> ExitCode:
    if fail_on == "never":
        return ExitCode.OK
    threshold = SEVERITY_RANK[fail_on]
    if any(SEVERITY_RANK[f.severity] <= threshold for f in report.findings):
        return ExitCode.FINDINGS
    return ExitCode.OK


def sort_findings(findings: list[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (SEVERITY_RANK[f.severity], f.id))




Plan = Report
"""What `recommend()` returns: a Report whose `settings`, `dropped` and `snippet` are filled."""


# ----------------------------------------------------------------------------------------
# a comparison (torchdoctor diff; computed by diff.py, shown by render/diff.py)
# ----------------------------------------------------------------------------------------


class _Absent:
    """A path present on one side only (the container is known on both)."""

    _instance: Optional["_Absent"] = None

    def __new__(cls) -> "_Absent":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()


@dataclass(frozen=True)
class Difference:
    path: str
    left: Any
    right: Any
    relevant: bool
    """The path is one that matters (rules/data/diff_relevance.yaml)."""
    unknown: bool
    """One side could not determine the value: not compared."""
    rank: int = 10**6
    why: str = ""
    pattern: str = ""
    """The diff_relevance.yaml path pattern that classified it ("" for noise)."""


@dataclass
class DiffResult:
    left_name: str
    right_name: str
    left_origin: str
    right_origin: str
    relevant: list[Difference] = field(default_factory=list)
    """Known on both sides, different, and it matters: most important first."""
    unknown: list[Difference] = field(default_factory=list)
    """Relevant paths known on one side only (not compared)."""
    noise: list[Difference] = field(default_factory=list)
    """Differences that do not matter."""
    unknown_noise: list[Difference] = field(default_factory=list)
    """Noise paths known on one side only."""
    identical: int = 0
    """Paths with the same value on both sides."""

    @property
    def exit_code(self) -> int:
        return 1 if self.relevant else 0
