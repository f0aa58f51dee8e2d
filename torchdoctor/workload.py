"""What the user is going to run: the workload model and the task presets (rules/tasks.yaml)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Literal, Optional

from torchdoctor.model import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from torchdoctor import yamlio
from torchdoctor.errors import WorkloadError
from torchdoctor.paths import default_rules_dir
from torchdoctor.safeio import clip

InputShapes = Literal["fixed", "multiscale", "variable-length"]
Precision = Literal["auto", "fp32", "tf32", "bf16", "fp16", "fp8"]
ModelFamily = Literal["conv", "transformer", "mixed"]
Mode = Literal["training", "inference"]
Distributed = Literal["none", "ddp", "fsdp"]
Reproducibility = Literal["none", "seeded", "bitwise"]


SEED_MAX = 2**32 - 1
"""numpy.random.seed accepts 0 .. 2**32-1; torch.manual_seed wraps or raises beyond it."""
PROCESS_MAX = 4096
"""Most DataLoader workers or processes per node a workload may declare (the rules divide
CPU counts by these: a 4000-digit value is an error, not an OverflowError)."""
MAX_WORKLOAD_BYTES = 64 * 1024
"""Size cap of a --workload file (a real one is a dozen lines)."""
MAX_TASK_NAME = 100


class Workload(BaseModel):
    """A declared workload. Every field has a default so a preset or flags may fill any subset."""

    model_config = ConfigDict(frozen=True, extra="forbid")  # no attribute docstrings: 30 ms a run

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
    compile: StrictBool = False
    """Whether the model is run through torch.compile."""
    dataloader_workers: Optional[StrictInt] = Field(None, ge=0, le=PROCESS_MAX)
    """DataLoader worker processes the user wants; None lets torchdoctor recommend."""
    local_world_size: Optional[StrictInt] = Field(None, ge=1, le=PROCESS_MAX)
    """Processes per node for DDP/FSDP; None means one per GPU."""
    seed: StrictInt = Field(0, ge=0, le=SEED_MAX)
    """Seed used by the reproducibility settings (0 .. 2**32-1: numpy's and torch's range)."""


FIELDS = tuple(Workload.model_fields)

EXPECTED = {
    "seed": f"an integer from 0 to {SEED_MAX} (the seed range of numpy and torch)",
    "dataloader_workers": f"an integer from 0 to {PROCESS_MAX}",
    "local_world_size": f"an integer from 1 to {PROCESS_MAX}",
    "compile": "true or false",
}
"""What a field accepts, in words: pydantic's own messages ("Input should be a valid
integer") do not say the range, and strict types reject bools and strings."""


class Task(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    description: str
    workload: dict[str, Any]
    references: list[str] = []


@functools.lru_cache(maxsize=4)
def load_tasks(path: Optional[str] = None) -> dict[str, Task]:
    p = Path(path) if path else default_rules_dir() / "tasks.yaml"
    # parsed once, then from the rule cache; every task is validated on each load
    _, raw = yamlio.read_cached(p, WorkloadError, what="tasks file", kind="tasks")
    table = raw.get("tasks") if isinstance(raw, dict) else None
    if not isinstance(table, dict):
        raise WorkloadError(f"{p}: expected a mapping with a 'tasks' table")
    tasks = {}
    for name, body in table.items():
        try:
            task = Task.model_validate(body)
            Workload.model_validate({**task.workload, "task": name})
        except ValidationError as exc:
            raise WorkloadError(f"{p}: task {name}: {_first_error(exc)}") from None
        tasks[name] = task
    return tasks


def _first_error(exc: ValidationError) -> str:
    return _describe(exc.errors()[0])


def _describe(err: dict) -> str:
    """One error of pydantic's in words; every user value through ``clip`` (it may be an
    integer over 4300 digits or a huge structure)."""
    loc = ".".join(str(x)[:80] for x in err["loc"]) or "(top level)"
    field = str(err["loc"][0]) if err["loc"] else ""
    if err["type"] == "extra_forbidden":
        return f"unknown field '{loc}' (valid: {', '.join(FIELDS)})"
    if err["type"] == "literal_error":
        return f"{loc}: {err['msg']}, got {clip(err.get('input'))}"
    if field in EXPECTED:
        return f"{loc}: must be {EXPECTED[field]}, got {clip(err.get('input'))}"
    return f"{loc}: {err['msg'][:200]}"


def build_workload(task: Optional[str] = None, overrides: Optional[dict[str, Any]] = None,
                   base: Optional[dict[str, Any]] = None, source: str = "workload",
                   override_source: Optional[str] = None,
                   flag_names: Optional[dict[str, str]] = None,
                   where: Optional[Callable[[str], str]] = None,
                   notices: Optional[list[str]] = None) -> Workload:
    """Preset (if any) < file values (``base``) < explicit flags (``overrides``).

    An invalid value is reported where it came from: ``override_source`` (e.g. "command
    line") for an override, ``where(field)`` (a file's ``path:line``) for a file value, else
    ``source``. A file value that a flag replaces is described in ``notices`` (``flag_names``
    maps a field to its option, e.g. ``--workers``)."""
    values: dict[str, Any] = {}
    base = dict(base or {})
    _check_task_name(task, lambda: override_source or source)
    if "task" in base:
        _check_task_name(base["task"], lambda: where("task") if where else source)
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    flag_names = flag_names or {}
    file_task = base.pop("task", None)
    if task is not None and file_task is not None and file_task != task and notices is not None:
        notices.append(f"--task {_show(task)} replaces task: {_show(file_task)} of {source}")
    for key, value in overrides.items():
        if key in base and base[key] != value and notices is not None:
            flag = flag_names.get(key, key)
            notices.append(f"{flag} {_show(value)} replaces {key}: {_show(base[key])} of {source}")
    task = task if task is not None else file_task
    if task is not None:
        tasks = load_tasks()
        if task not in tasks:
            import difflib

            close = difflib.get_close_matches(task, list(tasks), n=3) if len(task) <= MAX_TASK_NAME else []
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            origin = f"{where('task')}: " if where and file_task is not None and task == file_task else ""
            raise WorkloadError(f"{origin}unknown task {clip(task)}{hint}; valid tasks: {', '.join(sorted(tasks))}")
        values.update(tasks[task].workload)
        values["task"] = task
    values.update(base)
    values.update(overrides)
    try:
        return Workload.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else ""
        if field in overrides and override_source:
            origin = override_source
        elif field in base and where is not None:
            origin = where(field)
        else:
            origin = source
        raise WorkloadError(f"{origin}: {_describe(err)}") from None


def _check_task_name(task: Any, origin: Callable[[], str]) -> None:
    """A task is a preset's name: text of reasonable length (a list or a mapping there is a
    mistake in the file, not an unhashable-type crash). ``origin()`` says where it came from."""
    if task is None:
        return
    if not isinstance(task, str):
        raise WorkloadError(f"{origin()}: task: must be a task name (text), got {clip(task)}")


def _show(value: Any) -> str:
    """A value in a notice: as typed when it is short printable text or a small number."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str) and len(value) <= 80 and value.isprintable():
        return value
    if isinstance(value, int) and value.bit_length() <= 64:
        return str(value)
    return clip(value)


def load_workload_file(path: str, task: Optional[str] = None,
                       overrides: Optional[dict[str, Any]] = None,
                       flag_names: Optional[dict[str, str]] = None,
                       notices: Optional[list[str]] = None,
                       override_source: Optional[str] = None) -> Workload:
    """A --workload file: read bounded (a regular file of at most MAX_WORKLOAD_BYTES: a FIFO
    or /dev/zero is one line), parsed without aliases (a nested-alias "billion laughs" is
    refused at its line) and with bounded numbers; then validated like the flags."""
    text = yamlio.read_text(path, WorkloadError, what="workload", limit=MAX_WORKLOAD_BYTES)
    raw = yamlio.load_text(text, path, WorkloadError, aliases="none")
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise WorkloadError(f"{path}: expected a mapping of workload fields, got {type(raw).__name__}")
    nested = isinstance(raw.get("workload"), dict)
    raw = raw["workload"] if nested else raw
    for key in raw:
        if not isinstance(key, str):
            line = yamlio.line_of_key(text, ("workload",) if nested else ())
            raise WorkloadError(f"{path}:{line}: field names are text, got {clip(key)}")

    def where(field: str) -> str:
        """``path:line`` of a field (the YAML node tree is composed on this error path only)."""
        return f"{path}:{yamlio.line_of_key(text, ('workload', field) if nested else (field,))}"

    return build_workload(task=task, overrides=overrides, base=raw, source=path,
                          override_source=override_source, flag_names=flag_names, where=where,
                          notices=notices)
