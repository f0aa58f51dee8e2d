"""One pydantic model per data file of ``rules/data/``: what :func:`torchdoctor.tables.load`
validates a file against before the file is used or cached.

A model checks what the lookups rely on: types (a compute capability is a number, a version
parses, a specifier is a specifier), closed sets of keys where a file is closed (an entry with a
misspelt key is an error, not a silently ignored field), and cross-references (a platform row
names a block of builds that exists). Files of open shape (a top level that other areas add
sections to) allow extra keys there and close their entries.

Validation runs only when a file is parsed, i.e. not on a warm start (the rule cache keeps
validated tables), and only then is this package imported; it imports only the module that
holds the parsed file's model, whose schemas are built on first use (``defer_build``), so a run
pays for the files it parses, not for all of them. The lookups read the plain data;
the models are the contract.

An error names ``path:line`` of the innermost mapping that holds the bad value (the loader's
second, line-tracking parse), and says what is wrong in one line:
``gpu_models.yaml:24: 'cc' must be a number, got 'twelve'``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ValidationError

from torchdoctor.safeio import clip
from torchdoctor.tables.models._base import Bad, Wrong

MODELS: dict[str, str] = {
    "gpu_archs": "gpu.GpuArchs",
    "gpu_models": "gpu.GpuModels",
    "driver_min": "gpu.DriverMin",
    "wheel_archs": "builds.WheelArchs",
    "torch_releases": "builds.TorchReleases",
    "pypi_wheels": "builds.PypiWheels",
    "rocm_archs": "builds.RocmArchs",
    "sdpa_backends": "builds.SdpaBackends",
    "torch_ecosystem": "releases.TorchEcosystem",
    "cpu_stacks": "releases.CpuStacks",
    "python_wheels": "releases.PythonWheelsFile",
    "import_failures": "releases.ImportFailures",
    "platforms": "releases.PlatformsFile",
    "env_allowlist": "other.AllowList",
    "packages_of_interest": "other.AllowList",
    "cpu_vendors": "other.CpuVendors",
    "pci": "other.Pci",
    "diff_relevance": "other.DiffRelevance",
    "lscpu_labels": "other.LscpuLabels",
    "gpu_name_vendors": "other.GpuNameVendors",
    "paste_patterns": "other.PastePatterns",
    "known_messages": "other.KnownMessages",
    "triage": "triage.TriageData",
}
"""The model of each data file, as ``module.Class`` under this package: a run imports only the
modules of the files it parses (tests/test_typed_tables.py: every file of rules/data/ has one).
A file added without a model loads unchecked, as before, until it is given one."""


def model(name: str) -> Optional[type[BaseModel]]:
    """The model class of data file ``name``; None for a file without one."""
    where = MODELS.get(name)
    if where is None:
        return None
    module, cls = where.rsplit(".", 1)
    return getattr(importlib.import_module(f"{__name__}.{module}"), cls)


# ----------------------------------------------------------------------------------------
# errors: the first problem, as one line at the line of its innermost mapping
# ----------------------------------------------------------------------------------------


def problem(name: str, data: Any) -> Optional[tuple[tuple, str]]:
    """(location, what) of the first problem of data file ``name`` against its model; None
    when it is valid or the file has no model."""
    found = model(name)
    if found is None:
        return None
    try:
        found.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        return _describe(error)
    return None


def _describe(error: dict) -> tuple[tuple, str]:
    loc = tuple(error.get("loc") or ())
    field = next((str(p) for p in reversed(loc) if isinstance(p, str)), None)
    named = f"'{field}'" if field else "the file"
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, Wrong):
        return loc + cause.at, str(cause)
    if isinstance(cause, Bad):
        return loc, f"{named} {cause}"
    kind = error.get("type")
    what = {
        "missing": "is missing",
        "extra_forbidden": "is not a known key",
        "list_type": "must be a list",
        "dict_type": "must be a mapping",
        "model_type": "must be a mapping",
        "model_attributes_type": "must be a mapping",
        "string_type": "must be a string",
        "bool_type": "must be true or false",
        "int_type": "must be an integer",
    }.get(kind)
    if what is None:
        return loc, f"{named}: {clip(error.get('msg'))}"
    if kind == "missing" and field == "cc":
        what += " (use null for an ambiguous name)"
    if kind not in ("missing", "extra_forbidden") and "input" in error:
        what += f", got {clip(error['input'])}"
    return loc, f"{named} {what}"


def locate(path: Path, lined: Any, found: tuple[tuple, str]) -> str:
    """``path:line: what``, the line being that of the innermost mapping on the problem's
    location in ``lined`` (the file parsed with line numbers); ``path: what`` without one."""
    loc, what = found
    node, line = lined, getattr(lined, "line", 0)
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        line = getattr(node, "line", 0) or line
    return f"{path}:{line}: {what}" if line else f"{path}: {what}"
