"""What `check --distributed` produces: the job's facts and findings placed on nodes/ranks.
Pure data, like :mod:`torchdoctor.report`; the renderers (render/distributed.py) take it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from torchdoctor.facts import SCHEMA_VERSION, JobFacts
from torchdoctor.report import SEVERITY_RANK, Finding, Skipped


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlacedFinding(_Model):
    finding: Finding
    ranks: list[int] = []
    """Ranks where the rule fired with this message; empty for a rule over the whole job."""
    where: str = "job"
    """``job``, ``every rank``, or the nodes/ranks by name (``node 1 (ranks 4-7)``)."""


class JobReport(_Model):
    schema_version: int = SCHEMA_VERSION
    tool_version: str
    command: str = "check --distributed"
    job: JobFacts
    findings: list[PlacedFinding] = []
    """Job rules first, then each rank's `check` findings merged by rule and message."""
    skipped: list[Skipped] = []
    """Rules over the job that could not be evaluated (a fact unknown everywhere)."""
    rules_evaluated: int = 0
    seconds: float = 0.0
    """Wall time of rank 0, from start to the report."""

    def exit_code(self, fail_on: str) -> int:
        if fail_on == "never":
            return 0
        limit = SEVERITY_RANK[fail_on]
        return int(any(SEVERITY_RANK[p.finding.severity] <= limit for p in self.findings))
