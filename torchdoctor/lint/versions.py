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


def is_line(text: Optional[str]) -> bool:
    """``"2.9"`` names a minor line (every 2.9.x), ``"2.9.0"`` one release."""
    m = _NUM.match(str(text or ""))
    return bool(m) and m.group(2) is not None and m.group(3) is None


def covers(version: tuple, text: Optional[str], since: Optional[str], until: Optional[str]) -> bool:
    """``since <= target < until`` for every release the target names: a target written as a
    minor line (``"2.9"``) is all of 2.9.x, so a span that ends inside the line (deprecated in
    2.9.0 only, ``until`` 2.9.1) does not cover it; a full version is checked as itself."""
    if not is_line(text):
        return in_range(version, since, until)
    lo, hi = parse(since), parse(until)
    first, next_line = (version[0], version[1], 0), (version[0], version[1] + 1, 0)
    return (lo is None or first >= lo) and (hi is None or hi >= next_line)


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
