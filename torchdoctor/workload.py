"""What the user is going to run: the workload model and the task presets (rules/tasks.yaml)."""

from __future__ import annotations

import difflib
import functools
from pathlib import Path
from typing import Any, Callable, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, ValidationError

from torchdoctor import yamlio
from torchdoctor.errors import WorkloadError
from torchdoctor.paths import default_rules_dir

InputShapes = Literal["fixed", "multiscale", "variable-length"]
Precision = Literal["auto", "fp32", "tf32", "bf16", "fp16", "fp8"]
ModelFamily = Literal["conv", "transformer", "mixed"]
Mode = Literal["training", "inference"]
Distributed = Literal["none", "ddp", "fsdp"]
Reproducibility = Literal["none", "seeded", "bitwise"]


SEED_MAX = 2**32 - 1
"""numpy.random.seed accepts 0 .. 2**32-1; torch.manual_seed wraps or raises beyond it."""


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
    compile: StrictBool = False
    """Whether the model is run through torch.compile."""
    dataloader_workers: Optional[StrictInt] = Field(None, ge=0)
    """DataLoader worker processes the user wants; None lets torchdoctor recommend."""
    local_world_size: Optional[StrictInt] = Field(None, ge=1)
    """Processes per node for DDP/FSDP; None means one per GPU."""
    seed: StrictInt = Field(0, ge=0, le=SEED_MAX)
    """Seed used by the reproducibility settings (0 .. 2**32-1: numpy's and torch's range)."""


FIELDS = tuple(Workload.model_fields)

EXPECTED = {
    "seed": f"an integer from 0 to {SEED_MAX} (the seed range of numpy and torch)",
    "dataloader_workers": "an integer >= 0",
    "local_world_size": "an integer >= 1",
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
    return _describe(exc.errors()[0])


def _describe(err: dict) -> str:
    loc = ".".join(str(x) for x in err["loc"]) or "(top level)"
    field = str(err["loc"][0]) if err["loc"] else ""
    if err["type"] == "extra_forbidden":
        return f"unknown field '{loc}' (valid: {', '.join(FIELDS)})"
    if err["type"] == "literal_error":
        return f"{loc}: {err['msg']}, got {err['input']!r}"
    if field in EXPECTED:
        return f"{loc}: must be {EXPECTED[field]}, got {err['input']!r}"
    return f"{loc}: {err['msg']}"


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
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    flag_names = flag_names or {}
    file_task = base.pop("task", None)
    if task is not None and file_task is not None and file_task != task and notices is not None:
        notices.append(f"--task {task} replaces task: {file_task} of {source}")
    for key, value in overrides.items():
        if key in base and base[key] != value and notices is not None:
            flag = flag_names.get(key, key)
            notices.append(f"{flag} {_show(value)} replaces {key}: {_show(base[key])} of {source}")
    task = task if task is not None else file_task
    if task is not None:
        tasks = load_tasks()
        if task not in tasks:
            close = difflib.get_close_matches(str(task), list(tasks), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            origin = f"{where('task')}: " if where and file_task is not None and task == file_task else ""
            raise WorkloadError(f"{origin}unknown task {task!r}{hint}; valid tasks: {', '.join(sorted(tasks))}")
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


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def load_workload_file(path: str, task: Optional[str] = None,
                       overrides: Optional[dict[str, Any]] = None,
                       flag_names: Optional[dict[str, str]] = None,
                       notices: Optional[list[str]] = None,
                       override_source: Optional[str] = None) -> Workload:
    raw = yamlio.read_file(path, WorkloadError)
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise WorkloadError(f"{path}: expected a mapping of workload fields, got {type(raw).__name__}")
    nested = isinstance(raw.get("workload"), dict)
    raw = raw["workload"] if nested else raw

    def where(field: str) -> str:
        """``path:line`` of a field (the YAML node tree is composed on this error path only)."""
        return f"{path}:{_line_of(path, ('workload', field) if nested else (field,))}"

    return build_workload(task=task, overrides=overrides, base=raw, source=path,
                          override_source=override_source, flag_names=flag_names, where=where,
                          notices=notices)


def _line_of(path: str, keys: tuple) -> int:
    import yaml

    try:
        node = yaml.compose(Path(path).read_text(encoding="utf-8"), Loader=yamlio.SafeLoader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return 1
    line = 1
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            break
        for k, v in node.value:
            if k.value == key:
                node, line = v, k.start_mark.line + 1
                break
        else:
            break
    return line
