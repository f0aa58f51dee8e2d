"""Torch version numbers as tuples (no packaging import on lint's path)."""

from __future__ import annotations

import re
from typing import Optional

_NUM = re.compile(r"^\s*v?(\d{1,4})(?:\.(\d{1,4}))?(?:\.(\d{1,4}))?")


def parse(text: Optional[str]) -> Optional[tuple]:
    """``"2.13.0+cpu"`` -> (2, 13, 0); None when it is not a version."""
    m = _NUM.match(str(text or ""))
    if not m:
        return None
    return tuple(int(g) if g is not None else 0 for g in m.groups())


def in_range(version: tuple, since: Optional[str], until: Optional[str]) -> bool:
    """``since <= version < until`` (a bound that is absent or unreadable does not limit)."""
    lo, hi = parse(since), parse(until)
    return (lo is None or version >= lo) and (hi is None or version < hi)


def target_torch(requested: Optional[str], newest: str) -> tuple[str, str]:
    """(version, where it came from): --torch-version, else the torch installed for this
    interpreter (read from its metadata, never imported), else the newest release known."""
    if requested:
        if parse(requested) is None:
            raise ValueError(f"--torch-version {requested[:40]!r} is not a version such as 2.4")
        return requested, "--torch-version"
    try:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("torch")
            if parse(found) is not None:
                return found, "installed torch"
        except PackageNotFoundError:
            pass
    except Exception:  # noqa: BLE001 - broken metadata: fall back to the newest known
        pass
    return newest, "newest torch torchdoctor knows"
