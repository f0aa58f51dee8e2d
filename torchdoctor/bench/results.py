"""What `bench` measured: pure data (pydantic), the JSON schema of ``--format json``.

Renderers (``torchdoctor.render.bench``) read these and nothing else; ``recommend --measured``
reads them back from the JSON file.
"""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, computed_field, model_validator

BENCH_SCHEMA = "torchdoctor-bench/1"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BenchConfig(_Model):
    id: str
    label: str
    """Knob choices, ``precision=bf16-autocast · channels_last=on``."""
    roles: list[str]
    """defaults (torch's own) | plan | neighbour (one knob changed from the plan) | grid."""
    knobs: dict[str, str]
    changed: Optional[str] = None
    """For a neighbour: the knob and option it changed from the plan (``precision=fp32``)."""
    settings: dict[str, Any]
    """Registry settings the configuration sets (key -> value)."""
    code: dict[str, str]
    """The statements that set them (``env``: before ``import torch``; ``torch``: after)."""
    numerics: list[str] = []
    """Numerics changes it makes (bf16, fp16, tf32, medium): never silently traded."""
    compile: bool = False


class SkippedConfig(_Model):
    label: str
    reason: str


class Unmeasured(_Model):
    key: str
    value: Any
    reason: str


Status = Literal["ok", "failed", "timeout", "interrupted", "not-run"]


class Measurement(_Model):
    config: BenchConfig
    status: Status = "not-run"
    error: Optional[str] = None
    """Why a configuration has no timing (its child crashed, hung, or was interrupted)."""
    times_s: list[float] = []
    """Every timed step, in the order measured (all rounds)."""
    rounds: int = 0
    batch_rounds: list[int] = []
    """The round of each batch of steps (``times_s`` in order, ``batch_sizes`` steps each): the
    verdict compares configurations round by round, so drift between rounds cancels."""
    batch_sizes: list[int] = []
    median_s: Optional[float] = None
    q1_s: Optional[float] = None
    q3_s: Optional[float] = None
    iqr_s: Optional[float] = None
    mad_s: Optional[float] = None
    warmup_steps: int = 0
    warmup_s: float = 0.0
    first_step_s: Optional[float] = None
    """The first step (with torch.compile: the compile time, reported apart)."""
    startup_s: float = 0.0
    """Process start to ready: import torch, build the model, warm up."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def reps(self) -> int:
        """Timed repetitions (written to the JSON; recomputed from ``times_s`` when read)."""
        return len(self.times_s)

    @model_validator(mode="before")
    @classmethod
    def _derived_fields(cls, data: Any) -> Any:
        if isinstance(data, dict) and "reps" in data:
            data = {k: v for k, v in data.items() if k != "reps"}
        return data


class Verdict(_Model):
    plan: Optional[str] = None
    best: Optional[str] = None
    defaults: Optional[str] = None
    regret: Optional[float] = None
    """(plan - best) / best of the median step times."""
    noise: Optional[float] = None
    """The band within which a regret is noise: two standard errors of the difference of the
    medians (each from its MAD), relative to the best."""
    beyond_noise: bool = False
    difference: list[str] = []
    """Knobs in which the best configuration differs from the plan, each with the one-knob
    neighbour's own effect where it was measured."""
    speedup_plan: Optional[float] = None
    """defaults / plan."""
    summary: str = ""


class MachineSummary(_Model):
    cpu: Optional[str] = None
    cores: Optional[int] = None
    threads: Optional[int] = None
    isa: list[str] = []
    gpus: list[str] = []
    python: Optional[str] = None


class BenchResult(_Model):
    schema_id: str = BENCH_SCHEMA
    tool_version: str
    torch_version: Optional[str] = None
    task: Optional[str] = None
    workload: dict[str, Any]
    """The workload the plan was made for (task preset plus flags)."""
    machine: MachineSummary
    device: str
    family: str
    """Micro-workload: conv | transformer | mlp | speech."""
    description: str
    mode: str
    sizes: dict[str, int]
    budget_s: float
    elapsed_s: float = 0.0
    interrupted: bool = False
    plan_source: str = "rules"
    """rules (recommend's plan) or measured:FILE (recommend --measured)."""
    measurements: list[Measurement]
    skipped: list[SkippedConfig] = []
    unmeasured: list[Unmeasured] = []
    pinned: list[str] = []
    notes: list[str] = []
    load_average: list[Optional[float]] = []
    """1-minute load average before and after measuring (other processes competing for CPUs)."""
    verdict: Verdict = Verdict()
