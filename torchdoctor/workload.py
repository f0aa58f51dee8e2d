"""What the user is going to run: the workload model and the task presets (rules/tasks.yaml)."""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any, Literal, Optional

from torchdoctor import yamlio
from pydantic import BaseModel, ConfigDict, ValidationError

from torchdoctor.errors import WorkloadError
from torchdoctor.paths import default_rules_dir

InputShapes = Literal["fixed", "multiscale", "variable-length"]
Precision = Literal["auto", "fp32", "tf32", "bf16", "fp16", "fp8"]
ModelFamily = Literal["conv", "transformer", "mixed"]
Mode = Literal["training", "inference"]
Distributed = Literal["none", "ddp", "fsdp"]
Reproducibility = Literal["none", "seeded", "bitwise"]


class Workload(BaseModel):
    """A declared workload. Every field has a default so a preset or flags may fill any subset."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    task: Optional[str] = None
    """Preset name from rules/tasks.yaml (classification, detection, llm-training, ...)."""
    input_shapes: InputShapes = "fixed"
    """fixed (same shape every step) | multiscale (a few shapes) | variable-length (many)."""
    precision: Precision = "auto"
    """auto (the best the hardware supports) | fp32 | tf32 | bf16 | fp16 | fp8."""
    model_family: ModelFamily = "mixed"
    """conv | transformer | mixed."""
    mode: Mode = "training"
    """training | inference."""
    distributed: Distributed = "none"
    """none | ddp | fsdp."""
    reproducibility: Reproducibility = "none"
    """none | seeded (same seeds, not bitwise) | bitwise (identical results run to run)."""
    compile: bool = False
    """Whether the model is run through torch.compile."""
    dataloader_workers: Optional[int] = None
    """DataLoader worker processes the user wants; None lets torchdoctor recommend."""
    local_world_size: Optional[int] = None
    """Processes per node for DDP/FSDP; None means one per GPU."""
    seed: int = 0
    """Seed used by the reproducibility settings."""


FIELDS = tuple(Workload.model_fields)


class Task(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    description: str
    workload: dict[str, Any]
    references: list[str] = []


@functools.lru_cache(maxsize=4)
def load_tasks(path: Optional[str] = None) -> dict[str, Task]:
    p = Path(path) if path else default_rules_dir() / "tasks.yaml"
    raw = yamlio.read_file(p, WorkloadError)
    tasks = {}
    for name, body in (raw or {}).get("tasks", {}).items():
        try:
            task = Task.model_validate(body)
            Workload.model_validate({**task.workload, "task": name})
        except ValidationError as exc:
            raise WorkloadError(f"{p}: task {name}: {_first_error(exc)}") from None
        tasks[name] = task
    return tasks


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
    if err["type"] == "extra_forbidden":
        return f"unknown field '{loc}' (valid: {', '.join(FIELDS)})"
    if err["type"] == "literal_error":
        return f"{loc}: {err['msg']}, got {err['input']!r}"
    return f"{loc}: {err['msg']}"


def build_workload(task: Optional[str] = None, overrides: Optional[dict[str, Any]] = None,
                   base: Optional[dict[str, Any]] = None, source: str = "workload") -> Workload:
    """Preset (if any) < file values (``base``) < explicit flags (``overrides``)."""
    values: dict[str, Any] = {}
    base = dict(base or {})
    task = task or base.pop("task", None)
    if task is not None:
        tasks = load_tasks()
        if task not in tasks:
            close = difflib.get_close_matches(task, list(tasks), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise WorkloadError(f"unknown task {task!r}{hint}; valid tasks: {', '.join(sorted(tasks))}")
        values.update(tasks[task].workload)
        values["task"] = task
    base.pop("task", None)
    values.update(base)
    values.update({k: v for k, v in (overrides or {}).items() if v is not None})
    try:
        return Workload.model_validate(values)
    except ValidationError as exc:
        raise WorkloadError(f"{source}: {_first_error(exc)}") from None


def load_workload_file(path: str, task: Optional[str] = None,
                       overrides: Optional[dict[str, Any]] = None) -> Workload:
    raw = yamlio.read_file(path, WorkloadError)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise WorkloadError(f"{path}: expected a mapping of workload fields, got {type(raw).__name__}")
    raw = raw.get("workload", raw) if isinstance(raw.get("workload"), dict) else raw
    return build_workload(task=task, overrides=overrides, base=raw, source=path)
