"""What every part of the collect_env importer shares: the reasons it gives, its bounds, the
value helpers (collect_env's special words, numbers, versions), cuDNN library names, one package
row, and the helper that builds a facts model with every unstated field unavailable."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Optional, Union

from packaging.version import InvalidVersion, Version

from torchdoctor.facts import Unavailable
from torchdoctor.sanitize import too_many_digits
from torchdoctor.unknowns import COULD_NOT_COLLECT  # noqa: F401 - one definition (renderers read it too)

NOT_STATED = "not stated in the report"
IMPLAUSIBLE_VERSION = "the report's version is not plausible (a number of more than 32 digits)"
TORCH_NOT_IMPORTED = "torch could not be imported when the report was made (PyTorch version: N/A)"

MAX_LINE_CHARS = 10_000
"""Longer lines are cut (a full lscpu Flags line is about 1,500 characters)."""
MAX_LINES = 100_000
"""Lines after this many are not read (a collect_env report has under 200)."""
MAX_SECTION_LINES = 2_000
"""At most this many lines are kept for one multi-line field (GPU list, cuDNN list, CPU)."""
MAX_ROWS = 1_000
"""Package rows after this many per section are not read (collect_env filters its lists to
the few dozen distributions that matter)."""
MAX_GPUS = 256
"""GPU lines after this many are not read (nvidia-smi -L of one node lists at most dozens)."""
MAX_NAME_CHARS = 200
"""A GPU name is cut at this length before it is looked up."""


class NotAReport(ValueError):
    """The text contains no collect_env field at all."""


# --------------------------------------------------------------------------------------
# value helpers
# --------------------------------------------------------------------------------------

_VERSION_AT = re.compile(r"\d+(?:\.\d+)*")
_SPECIAL = {
    "could not collect": "cnc",
    "n/a": "na",
    "na": "na",
    "none": "none",
    "no cuda": "nocuda",
    "": "empty",
}
_TRUE = {"yes", "true", "1"}
_FALSE = {"no", "false", "0"}


def _special(value: Optional[str]) -> Optional[str]:
    if value is None:
        return None
    return _SPECIAL.get(value.strip().strip(".").strip().lower())


def _bool(value: str) -> Optional[bool]:
    v = value.strip().strip(".").lower()
    first = v.split(" ", 1)[0] if v else ""
    if v in _TRUE or first in _TRUE:
        return True
    if v in _FALSE or first in _FALSE:
        return False
    return None


def _numeric_tokens(text: str) -> list[str]:
    """Whole whitespace-separated words that are dotted numbers ("22.04", "7")."""
    out = []
    for word in text.replace(",", " ").split():
        word = word.strip("()[]{};:'\"")
        m = _VERSION_AT.fullmatch(word)
        if m:
            out.append(word)
    return out


def _leading_version(value: str) -> Optional[str]:
    """The dotted number a value starts with ("3.9.9+ (heads/3.9...)" -> "3.9.9"); None when
    there is none or it has an implausibly long number (more than sanitize.MAX_DIGITS digits)."""
    m = _VERSION_AT.match(value.strip())
    return m.group(0) if m and not too_many_digits(m.group(0)) else None


def _several_values(value: str) -> bool:
    """A hand-edited value naming two versions before any remark ("10.1 & 10.2 (NGC)")."""
    head = value.split("(", 1)[0]
    return len(_numeric_tokens(head.replace("&", " ").replace("/", " "))) > 1


MAX_INT_DIGITS = 9
"""A count or number in a report has at most this many digits (anything longer is garbage,
and Python refuses to convert over 4300)."""


def _int(value: Optional[str]) -> Optional[int]:
    if value is None:
        return None
    v = value.strip()
    if v.isdigit() and len(v) <= MAX_INT_DIGITS:
        return int(v)
    return None


def _u(reason: str) -> Unavailable:
    return Unavailable(unavailable=reason)


def _said(value: str) -> str:
    shown = value if len(value) <= 80 else value[:77] + "..."
    return f"report says: {shown!r}"


@functools.lru_cache(maxsize=4096)
def _release(version: str) -> Optional[Version]:
    if not isinstance(version, str) or too_many_digits(version):
        return None  # packaging would raise ValueError past 4300 digits
    try:
        return Version(version)
    except (InvalidVersion, TypeError, ValueError):
        return None


def same_release(a: str, b: str) -> bool:
    """Whether two version strings name one release: equal, or equal public versions when
    only one carries a local label (PyPI's torch 1.8.1 reports itself as 1.8.1+cu102)."""
    va, vb = _release(a), _release(b)
    if va is None or vb is None:
        return a.strip().lower() == b.strip().lower()
    if va == vb:
        return True
    if (va.local is None) != (vb.local is None):
        return va.public == vb.public
    return False


def _python_tuple(version: Optional[str]) -> Optional[tuple[int, int]]:
    if not version:
        return None
    parts = version.split(".")
    if len(parts) < 2:
        return None
    major, minor = _int(parts[0]), _int(parts[1])
    return None if major is None or minor is None else (major, minor)


# --------------------------------------------------------------------------------------
# cuDNN library names
# --------------------------------------------------------------------------------------

_LIB_SUFFIX = re.compile(r".*\.(?:dll|a|lib|dylib|so(?:\.\d+)*)", re.I)
_CUDNN_SO = re.compile(r"libcudnn(?:_[a-z_]+)?\.so\.(\d+(?:\.\d+)*)", re.I)
_CUDNN_DYLIB = re.compile(r"libcudnn(?:_[a-z_]+)?\.(\d+(?:\.\d+)*)\.dylib", re.I)
_CUDNN_DLL = re.compile(r"cudnn(?:_[a-z_]+)?64_(\d+)\.dll", re.I)


def _looks_like_path(text: str) -> bool:
    t = text.strip()
    return t.startswith(("/", "\\", "~")) or (len(t) > 2 and t[1] == ":" and t[2] in "\\/")


def _ends_like_library(text: str) -> bool:
    base = re.split(r"[\\/]", text.strip())[-1]
    return bool(_LIB_SUFFIX.fullmatch(base))


def _join_wrapped_paths(lines: list[str]) -> list[str]:
    """Undo a ticket's line wrapping inside library paths."""
    out: list[str] = []
    for piece in lines:
        piece = piece.strip()
        if not piece:
            continue
        if out and not _ends_like_library(out[-1]) and not _looks_like_path(piece):
            out[-1] += piece
        else:
            out.append(piece)
    return out


def _cudnn_version_of(path_or_value: str) -> Optional[tuple[int, ...]]:
    text = path_or_value.strip()
    if too_many_digits(text):
        return None
    base = re.split(r"[\\/]", text)[-1]
    for pattern in (_CUDNN_SO, _CUDNN_DYLIB, _CUDNN_DLL):
        m = pattern.fullmatch(base)
        if m:
            return tuple(int(p) for p in m.group(1).split(".")[:3])
    m = _VERSION_AT.fullmatch(text)
    if m:
        if "." not in text and len(text) in (4, 5):  # cudnn.version() style: 8700, 90100
            n = int(text)
            return (
                (n // 1000, n % 1000 // 100, n % 100)
                if n < 10000
                else (
                    n // 10000,
                    n % 10000 // 100,
                    n % 100,
                )
            )
        return tuple(int(p) for p in text.split(".")[:3])
    return None


def cudnn_versions(value: str) -> list[str]:
    """cuDNN versions named by a report's ``cuDNN version`` field (one path, a plain
    version, or ``Probably one of the following:`` and a list), highest first; complete
    versions (major.minor.patch) before partial ones (``cudnn64_8.dll`` says only 8)."""
    lines = [x for x in value.splitlines() if x.strip()]
    if lines and lines[0].strip().lower().startswith("probably one of the following"):
        lines = lines[1:]
    found = set()
    for item in _join_wrapped_paths(lines):
        version = _cudnn_version_of(item)
        if version:
            found.add(version)
    ordered = sorted(found, key=lambda v: (len(v) >= 3, v), reverse=True)
    return [".".join(str(p) for p in v) for v in ordered]


# --------------------------------------------------------------------------------------
# one package row of the report (read by .packages)
# --------------------------------------------------------------------------------------


@dataclass
class _Row:
    name: str
    version: Optional[str]
    source: str  # report-pip | report-conda
    build: Optional[str] = None
    channel: Optional[str] = None
    pip_like: bool = True  # a pip-installed distribution (pip row, or conda's <pip>/pypi)
    note: Optional[str] = None  # why the version is missing


# --------------------------------------------------------------------------------------
# building the facts
# --------------------------------------------------------------------------------------

Value = Union[Unavailable, Any]


def _model(cls, default_reason: str, **values: Any):
    data: dict[str, Any] = {}
    for name in cls.model_fields:
        if name in values:
            data[name] = values[name]
        elif name not in ("index", "name"):
            data[name] = _u(default_reason)
    return cls(**data)
