"""Where the shipped rules live: inside the wheel, or at the top of a source checkout."""

from __future__ import annotations

from pathlib import Path


def default_rules_dir() -> Path:
    here = Path(__file__).resolve().parent
    installed = here / "_rules"  # hatchling force-include target in the wheel
    if installed.is_dir():
        return installed
    return here.parent / "rules"


def data_dir() -> Path:
    return default_rules_dir() / "data"
