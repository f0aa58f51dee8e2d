"""Releases and what they support: Python versions, macOS for MPS, torchvision/torchaudio
(torch_releases.yaml), torch.compile's Python and Windows support, CPU inference stacks
(cpu_stacks.yaml), and a torch that cannot be imported (python_wheels.yaml,
import_failures.yaml)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from torchdoctor.tables import _load
from torchdoctor.tables._load import DataFileError
from torchdoctor.tables._parse import _majmin, _version
from torchdoctor.tables.wheels import _release



def _minors(values: Optional[Iterable]) -> set:
    return {_majmin(str(v).rstrip("t")) for v in (values or [])}


def python_supported(torch_version: Any, python_version: Any) -> Optional[bool]:
    """Whether the torch release published wheels for this Python minor (experimental ones count)."""
    release, python = _release(torch_version), _majmin(python_version)
    spec = release.get("python") if release else None
    if python is None or not spec:
        return None
    if _majmin(spec["min"]) <= python <= _majmin(spec["max"]):
        return True
    return python in _minors(spec.get("also")) | _minors(spec.get("experimental"))


def mps_min_macos(torch_version: Any) -> Optional[str]:
    """Minimum macOS for the MPS backend of a torch release ("2.9.0" -> "14.0"); None if the
    release has no MPS or is unknown."""
    release = _release(torch_version)
    value = release.get("mps_min_macos") if release else None
    return str(value) if value is not None else None


def torchvision_for(torch_version: Any) -> Optional[str]:
    """The torchvision release matching a torch release ("2.13.0" -> "0.28"); None if unknown."""
    release = _release(torch_version)
    value = release.get("torchvision") if release else None
    return str(value) if value is not None else None


def torchaudio_for(torch_version: Any) -> Optional[str]:
    """The torchaudio release matching a torch release ("2.5.1" -> "2.5"); None if unknown.

    From torch 2.11 on this is the oldest compatible torchaudio (built on the stable ABI).
    """
    release = _release(torch_version)
    value = release.get("torchaudio") if release else None
    return str(value) if value is not None else None


# ----------------------------------------------------------------------------------------
# torch.compile support (torch_releases.yaml `compile`) and CPU inference stacks
# (cpu_stacks.yaml). Self-contained: new table functions for rule conditions.
# ----------------------------------------------------------------------------------------


def _compile_table() -> dict:
    data = _load.load("torch_releases").get("compile")
    return data if isinstance(data, dict) else {}


def _message_for(rows: Any, version: Version) -> Optional[str]:
    """The ``message`` of the first row whose ``torch`` specifier contains ``version``."""
    for row in rows if isinstance(rows, list) else []:
        try:
            if SpecifierSet(str(row["torch"])).contains(version, prereleases=True):
                return str(row["message"])
        except (InvalidSpecifier, KeyError, TypeError):
            raise DataFileError(f"rules/data/torch_releases.yaml: compile: bad row {row!r}") from None
    return None


def compile_python_support(torch_version: Any, python_version: Any) -> Optional[dict]:
    """Whether ``torch.compile`` (TorchDynamo) of a torch release accepts a Python minor:
    {"supported": bool, "python": "3.12", "first_torch": "2.4" (None: no release yet),
    "max_python": newest minor this release compiles on, "error": the RuntimeError text it raises}.

    None (not judged) when a version cannot be read, the release predates torch.compile (< 2.0),
    the minor is not in the table, or the release is newer than the table was checked through and
    no row says it supports the minor."""
    version, python = _version(torch_version), _majmin(python_version)
    if version is None or python is None or version < Version("2.0"):
        return None
    table = _compile_table()
    rows = [r for r in table.get("python") or [] if isinstance(r, dict) and _majmin(r.get("python"))]
    row = next((r for r in rows if _majmin(r["python"]) == python), None)
    if row is None:
        return None
    first = _version(row.get("first_torch"))
    supported = first is not None and version >= first
    checked = _version(table.get("checked_through"))
    if not supported and (checked is None or version.release[:2] > checked.release[:2]):
        return None
    ok = [r["python"] for r in rows
          if _version(r.get("first_torch")) is not None and version >= _version(r["first_torch"])]
    return {
        "supported": supported,
        "python": f"{python[0]}.{python[1]}",
        "first_torch": str(row["first_torch"]) if row.get("first_torch") is not None else None,
        "max_python": str(max(ok, key=_majmin)) if ok else None,
        "error": None if supported else _message_for(table.get("errors"), version),
    }


def compile_windows_support(torch_version: Any) -> Optional[dict]:
    """What ``torch.compile`` of a torch release does on Windows: {"supported": bool,
    "first_torch": first release whose default (inductor) backend runs there, "error": the
    RuntimeError text it raises, "scope": which backends it refuses}. None when the version
    cannot be read or predates torch.compile (< 2.0)."""
    version = _version(torch_version)
    windows = _compile_table().get("windows")
    if version is None or version < Version("2.0") or not isinstance(windows, dict):
        return None
    first = str(windows.get("first_torch"))
    supported = _version(first) is not None and version >= _version(first)
    rows = [] if supported else [r for r in windows.get("errors") or [] if _message_for([r], version)]
    row = rows[0] if rows else None
    return {"supported": supported, "first_torch": first,
            "error": str(row["message"]) if row else None,
            "scope": str(row.get("scope")) if row and row.get("scope") else None}


@_load.derived("cpu_stacks")
def _cpu_stacks(data: Any) -> tuple:
    where = "rules/data/cpu_stacks.yaml"
    entries = data.get("stacks") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise DataFileError(f"{where}: expected a mapping with a `stacks` list")
    out = []
    for i, entry in enumerate(entries):
        key = (entry.get("name") or entry.get("prefix")) if isinstance(entry, dict) else None
        if not isinstance(key, str) or not all(entry.get(k) for k in ("what", "reason", "source")):
            raise DataFileError(
                f"{where}: stacks[{i}] needs `name` or `prefix`, `what`, `reason` and `source`"
            )
        out.append(entry)
    return tuple(out)


def cpu_inference_stacks(versions: Any) -> list:
    """The CPU inference stacks of cpu_stacks.yaml among installed distributions (``versions``:
    packages.versions, normalised name -> version; a dict or the rule engine's read-only mapping
    view): ["intel-extension-for-pytorch 2.5.0", ...], sorted; [] when none is installed or
    ``versions`` is not a mapping (unknown)."""
    items = getattr(versions, "items", None)
    if isinstance(versions, (str, bytes)) or not callable(items):
        return []
    found = set()
    for name, installed in items():
        if not isinstance(name, str):
            continue
        text = str(installed or "").lower()
        for entry in _cpu_stacks():
            prefix = entry.get("prefix")
            if name != entry.get("name") and not (prefix and name.startswith(prefix)):
                continue
            if entry.get("version_contains") and entry["version_contains"] not in text:
                continue
            if entry.get("version_excludes") and entry["version_excludes"] in text:
                continue
            found.add(f"{name} {installed}" if installed else name)
    return sorted(found)


# ----------------------------------------------------------------------------------------
# torch that cannot be imported: python_wheels.yaml, import_failures.yaml (rules/install:
# python-newer-than-torch-wheels, cuda-library-from-other-release, conda-mkl-breaks-torch-import,
# torch-import-failed). Self-contained block.
# ----------------------------------------------------------------------------------------

_PLATFORM_KEYS = {("linux", "x86_64"): "linux-x86_64", ("linux", "amd64"): "linux-x86_64",
                  ("linux", "aarch64"): "linux-aarch64", ("linux", "arm64"): "linux-aarch64",
                  ("darwin", "arm64"): "macos-arm64", ("darwin", "x86_64"): "macos-x86_64",
                  ("windows", "amd64"): "windows-x86_64", ("windows", "x86_64"): "windows-x86_64"}


def python_predates_torch_wheels(python_version: Any, os: Any = None, machine: Any = None) -> Optional[dict]:
    """When a CPython release came out before torch published any wheel for its minor on this
    platform (python_wheels.yaml): {"python": "3.12.0", "minor": "3.12", "previous": "3.11",
    "python_released": "2023-10-02", "torch": "2.2.0", "torch_released": "2024-01-30",
    "platform": "linux-x86_64" or None}; else None (a later release, a minor or platform not in
    the table, an unreadable version). Pre-releases count as released before X.Y.0. Where the
    platform is unknown, the earliest first-wheel date of any platform is used (the statement then
    holds everywhere)."""
    try:
        version = Version(str(python_version).strip()) if isinstance(python_version, str) else None
    except ValueError:
        version = None
    if version is None or len(version.release) < 2 or any(n > 999 for n in version.release):
        return None
    major, minor = version.release[:2]
    patch = version.release[2] if len(version.release) > 2 else 0
    key = f"{major}.{minor}"
    row = next((r for r in _load.load("python_wheels").get("pythons") or []
                if isinstance(r, dict) and str(r.get("python")) == key), None)
    if row is None:
        return None
    patches = {str(k): str(v) for k, v in (row.get("patches") or {}).items()}
    name = f"{major}.{minor}.{0 if version.pre else patch}"
    released = patches.get(name)
    if released is None:
        return None
    platform = None
    if isinstance(os, str) and isinstance(machine, str):
        platform = _PLATFORM_KEYS.get((os.strip().lower(), machine.strip().lower()))
        if platform is None:
            return None  # a platform torch publishes no wheels for (ppc64le, 32-bit): not judged
    firsts = [f for f in row.get("first_wheels") or [] if isinstance(f, dict)]
    if platform is not None:
        firsts = [f for f in firsts if platform in (f.get("platforms") or [])]
    if not firsts:
        return None
    first = min(firsts, key=lambda f: str(f.get("released")))
    if not released < str(first.get("released")):
        return None
    return {"python": str(python_version).strip()[:40], "minor": key, "previous": f"{major}.{minor - 1}",
            "python_released": released, "torch": str(first.get("torch")),
            "torch_released": str(first.get("released")), "platform": platform}


MAX_IMPORT_ERROR_SCAN = 4_000
"""import_failure reads at most this many characters of an error text."""


def import_failure(error: Any) -> Optional[dict]:
    """The first signature of import_failures.yaml whose text appears in an ``import torch``
    error: {"id", "rule", "library", "explain", "needs": "12.4" or None}; None when none
    matches or ``error`` is not a string."""
    if not isinstance(error, str):
        return None
    text = error[:MAX_IMPORT_ERROR_SCAN]
    for entry in _load.load("import_failures").get("signatures") or []:
        if not isinstance(entry, dict):
            continue
        if not all(s in text for s in entry.get("all") or []):
            continue
        if entry.get("any") and not any(s in text for s in entry["any"]):
            continue
        needs = None
        if entry.get("version"):
            m = re.search(str(entry["version"]), text)
            needs = f"{int(m.group(1))}.{int(m.group(2))}" if m else None
        return {"id": str(entry.get("id")), "rule": str(entry.get("rule")),
                "library": str(entry.get("library")), "explain": " ".join(str(entry.get("explain")).split()),
                "needs": needs}
    return None
