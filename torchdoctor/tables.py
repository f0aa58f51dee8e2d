"""Reference tables from ``rules/data/*.yaml`` exposed as plain functions.

Knowledge (which compute capability is which architecture, which driver a CUDA version
needs, which archs a wheel was compiled for) lives in the YAML files, each entry with its
source; this module only loads and looks up. The same functions are given to rule
conditions by the engine (see ``FUNCTIONS``).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Optional

import yaml

from torchdoctor.paths import data_dir


class DataFileError(Exception):
    """A malformed data file: carries ``path:line: what``."""


@functools.lru_cache(maxsize=None)
def load(name: str, directory: Optional[str] = None) -> Any:
    """Load ``rules/data/<name>.yaml`` (cached)."""
    path = Path(directory) if directory else data_dir()
    path = path / f"{name}.yaml"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DataFileError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise DataFileError(f"{path}{line}: invalid YAML: {getattr(exc, 'problem', exc)}") from None


def arch_for_cc(cc: Optional[float]) -> Optional[str]:
    """Architecture name for a compute capability (8.6 -> "Ampere"), None if unknown."""
    if cc is None:
        return None
    for entry in load("gpu_archs")["architectures"]:
        if any(abs(float(c) - float(cc)) < 1e-6 for c in entry["compute_capabilities"]):
            return entry["name"]
    return None
