"""Read the text of ``python -m torch.utils.collect_env`` into :class:`~torchdoctor.facts.Facts`.

The report format changed many times between PyTorch 0.4 and 2.x (fields were added, the
package rows went from ``[pip] numpy (1.15.0)`` to ``[pip3] numpy==1.24.1``, a ``CPU:``
section appeared), and people paste it into tickets in every possible way: inside Markdown
fences, quoted, indented, with CRLF endings, with full-width colons, hand-edited, cut short,
twice. This module reads all of that, line by line, with anchored regular expressions only
(no pattern here can backtrack badly, and every line is cut at :data:`MAX_LINE_CHARS`).

What the report does not say is ``Unavailable("not stated in the report")``; nothing is
guessed. A few collect_env conventions *are* statements and are read as such:

- ``PyTorch version: N/A`` means ``import torch`` failed in the interpreter that ran the
  script (collect_env catches ImportError/OSError and prints N/A everywhere torch would have
  answered). If the pip or conda section still lists a distribution that provides torch, the
  import status is ``import-error`` (installed but not importable, corpus case025); if a
  package section was collected and lists none, ``not-installed`` (case027); otherwise
  ``unknown-from-report`` (the import failed, and the report does not say whether torch is
  installed: IPEX's variant without package rows, cases2/case213). An ImportError pasted with
  the report decides instead (cases2/case232: a traceback through site-packages/torch beside a
  pip list without torch).
- ``CUDA used to build PyTorch: None`` / ``Could not collect`` / ``No CUDA`` while torch
  imported means ``torch.version.cuda`` is ``None``: collect_env prints ``Could not collect``
  for every ``None`` and only sometimes rewrites it to ``None`` (corpus case006 and this
  machine's own 2.13.0+cpu report), so ``cuda_build`` is ``None`` (a CPU or ROCm build).
- ``ROCM used to build PyTorch: N/A`` while torch imported means ``torch.version.hip`` is
  ``None``.
- ``GPU models and configuration: No CUDA`` is printed only when nvidia-smi found nothing and
  torch sees no CUDA, so it is read as "no NVIDIA GPU" (``gpu.count == 0``);
  ``Could not collect`` stays unavailable (nvidia-smi may just be missing, e.g. in a container).
- The ``cuDNN version`` line lists libraries found on the system library path, which torch
  wheels and conda packages do not use (they bundle their own; corpus cases 009, 039, 040).
  It is kept as ``system.cudnn_version``. ``torch.cudnn_version`` is taken only from what
  says which cuDNN torch itself uses: the conda build string of the running torch
  (``py3.7_cuda10.1.243_cudnn7.6.3_0``) or the pip ``nvidia-cudnn-cu*`` wheel next to a
  pip-installed torch on Linux.
- torch's own warning ``CUDA initialization: <reason>`` pasted with the report (collect_env's
  stderr) is ``torch.cuda_init_error``. torch prints it when its device count failed, and then
  counts 0 devices (c10 ``device_count()``), so ``is_available()`` was False: where the report
  has no ``Is CUDA available`` line, ``cuda_available`` is False. ``The NVIDIA driver on your
  system is too old (found version 11040)`` states the driver's CUDA version (11.4,
  ``gpu.cuda_driver_version``).
- On a ROCm build (and on macOS) collect_env's GPU line is ``torch.cuda.get_device_name()`` of
  the current device, plus its gcnArchName in parentheses on ROCm
  (``AMD Instinct MI300X (gfx942:sramecc+:xnack-)``): one GPU is named and the count is not
  stated. AMD and Intel GPUs (the ``Intel GPU models onboard`` list of XPU builds) are kept in
  ``gpu.devices`` with their vendor; compute capability and NVIDIA driver are CUDA notions and
  stay unavailable for them.
- On macOS the ``Nvidia driver version`` line is the version of the CUDA kernel extension
  (``kextstat``: com.nvidia.CUDA), not of the NVIDIA display driver, so it is not a
  ``gpu.driver_version``.
- ``Libc version`` comes from ``platform.libc_ver()``, which before Python 3.8 scanned the
  interpreter binary instead of asking the C library (corpus case038 shows glibc-2.3.4 on
  CentOS 7); it is trusted only for Python >= 3.8. The ``-with-glibcX`` of ``Python platform``
  is ``libc_ver(sys.executable)`` on Python 3.8/3.9, again a scan of the binary (a conda
  Python says glibc2.17 on a glibc 2.30 system, cases 115 and 122), so the ``Libc version``
  line wins over it.
- The ``CPU:`` section is ``lscpu`` run under the user's locale, so its labels may be
  translated (``架构：``, ``Processeur(s) :``): they are read through util-linux's own
  translations (``_LSCPU_LABELS``, a table, not patterns).
- ``NCCL version`` is not printed by torch's collect_env; adapted copies of it that print it
  (vectorch-ai/ScaleLLM#288) state ``torch.nccl_version``.

Numbers are read only where they are plausible: a count is at most 9 digits (``_int``), and a
version with a run of more than ``sanitize.MAX_DIGITS`` digits (``PyTorch version: 1000…0``,
5000 digits, which Python and packaging refuse to convert) is not a version. Such a field
becomes unknown with what the report said; it never rejects the whole report.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from packaging.version import InvalidVersion, Version

from torchdoctor import tables
from torchdoctor.sanitize import too_many_digits
from torchdoctor.facts import (
    CpuFacts,
    Distribution,
    Facts,
    GpuDevice,
    GpuFacts,
    PackagesFacts,
    SystemFacts,
    TorchFacts,
    Unavailable,
)

NOT_STATED = "not stated in the report"
IMPLAUSIBLE_VERSION = "the report's version is not plausible (a number of more than 32 digits)"
COULD_NOT_COLLECT = "report says: could not collect"
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
# field labels
# --------------------------------------------------------------------------------------

# canonical key (collect_env's own SystemEnv names where it has one) -> accepted labels,
# compared after lower-casing and dropping everything but letters and digits, so
# "PyTorch version", "Pytorch Version" and "PyTorch  version：" are one label.
_LABELS: dict[str, tuple[str, ...]] = {
    "torch_version": ("pytorchversion", "torchversion"),
    "is_debug_build": ("isdebugbuild", "debugbuild"),
    "cuda_compiled_version": ("cudausedtobuildpytorch", "cudausedtobuildtorch"),
    "hip_compiled_version": ("rocmusedtobuildpytorch", "hipusedtobuildpytorch"),
    "os": ("os", "operatingsystem"),
    "gcc_version": ("gccversion",),
    "clang_version": ("clangversion",),
    "cmake_version": ("cmakeversion",),
    "libc_version": ("libcversion",),
    "python_version": ("pythonversion",),
    "python_platform": ("pythonplatform",),
    "is_cuda_available": ("iscudaavailable", "cudaavailable"),
    "cuda_runtime_version": ("cudaruntimeversion",),
    "cuda_module_loading": ("cudamoduleloadingsetto",),
    "nvidia_gpu_models": (
        "gpumodelsandconfiguration",
        "gpumodelandconfiguration",
        "gpumodels",
        "gpumodel",
    ),
    "nvidia_driver_version": ("nvidiadriverversion", "driverversion"),
    "cudnn_version": ("cudnnversion",),
    "is_xpu_available": ("isxpuavailable",),
    "xpu_compiled_version": ("xpuusedtobuildpytorch",),
    "intel_gpu_driver_version": ("intelgpudriverversion",),
    "intel_gpu_models_onboard": ("intelgpumodelsonboard",),
    "intel_gpu_models_detected": ("intelgpumodelsdetected",),
    "hip_runtime_version": ("hipruntimeversion",),
    "miopen_runtime_version": ("miopenruntimeversion",),
    "is_xnnpack_available": ("isxnnpackavailable",),
    "caching_allocator_config": ("cachingallocatorconfig",),
    "cpu_info": ("cpu",),
    # not in torch's collect_env: printed by adapted copies of it (vectorch-ai/ScaleLLM#288)
    "nccl_version": ("ncclversion",),
    "libraries": ("versionsofrelevantlibraries", "versionofrelevantlibraries"),
}
_LABEL_INDEX = {norm: key for key, norms in _LABELS.items() for norm in norms}

# Hand-edited reports sometimes drop the colon ("PyTorch version 1.5.0", corpus case004).
_COLONLESS = (
    ("torch_version", re.compile(r"py ?torch\s+version\s+(?=\d)(.*)", re.I)),
    ("python_version", re.compile(r"python\s+version\s+(?=\d)(.*)", re.I)),
    (
        "cuda_compiled_version",
        re.compile(r"cuda\s+used\s+to\s+build\s+py ?torch\s+(?=\d)(.*)", re.I),
    ),
    ("nvidia_driver_version", re.compile(r"nvidia\s+driver\s+version\s+(?=\d)(.*)", re.I)),
)

_NON_ALNUM = re.compile(r"[^a-z0-9]+")
# JSON keys, YAML flow, tables, dotted fact paths ("torch.version"): not report labels
_NOT_LABEL = re.compile(r"[\"'{}\[\]=<>|.]")
_PARENS = re.compile(r"\([^()]*\)")


def _norm_label(label: str) -> str:
    return _NON_ALNUM.sub("", label.lower())


# --------------------------------------------------------------------------------------
# line clean-up
# --------------------------------------------------------------------------------------

_CHAR_MAP: dict[int, Optional[str]] = {c: chr(c - 0xFEE0) for c in range(0xFF01, 0xFF5F)}
_CHAR_MAP.update(
    {
        0x3000: " ",  # ideographic space
        0x00A0: " ",
        0x2007: " ",
        0x202F: " ",
        0xFE55: ":",  # small colon
        0x200B: None,  # zero-width space
        0x200C: None,
        0x200D: None,
        0xFEFF: None,
        0x09: "    ",
    }
)
# UTF-8 full-width colon / no-break space read as cp1252 or latin-1.
_MOJIBAKE = (("\u00ef\u00bc\u0161", ":"), ("\u00ef\u00bc\u009a", ":"), ("\u00c2\u00a0", " "))

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_HTML_TAG = re.compile(
    r"</?(?:details|summary|pre|code|br|p|div|b|i|em|strong|sup|sub|hr|span|kbd|tt)\b[^<>]{0,200}>",
    re.I,
)
# A run of 2+ spaces followed by something that starts a new line of the report: a terminal
# or editor merged lines (corpus case030). Lookbehind keeps the scan linear.
_MERGED = re.compile(
    r"(?<=\S) {2,}(?=\[(?:pip\d?|conda)\]|GPU \d+ ?:|(?:PyTorch version|Is debug build|"
    r"CUDA used to build|ROCM used to build|GCC version|Clang version|CMake version|"
    r"Libc version|Python version|Python platform|Is CUDA available|CUDA runtime version|"
    r"CUDA_MODULE_LOADING|GPU models and configuration|Nvidia driver version|cuDNN version|"
    r"HIP runtime version|MIOpen runtime version|Is XNNPACK available|Is XPU available|"
    r"Versions of relevant libraries) ?:)",
    re.I,
)


def _clean_line(line: str) -> Optional[str]:
    """Markdown and terminal debris off one line; None for a line that is only debris."""
    if len(line) > MAX_LINE_CHARS:
        line = line[:MAX_LINE_CHARS]
    if "\x1b" in line:
        line = _ANSI.sub("", line)
    for bad, good in _MOJIBAKE:
        if bad in line:
            line = line.replace(bad, good)
    line = line.translate(_CHAR_MAP)
    line = line.rstrip()
    # "> " quote prefixes (any depth), then one list bullet
    while True:
        stripped = line.lstrip(" ")
        if stripped.startswith(">"):
            line = stripped[1:]
            if line.startswith(" "):
                line = line[1:]
            continue
        break
    stripped = line.lstrip(" ")
    if stripped[:2] in ("- ", "* ", "+ "):
        line = stripped[2:]
        stripped = line.lstrip(" ")
    if stripped.startswith(("```", "~~~")):
        return None
    if "<" in line and not stripped.startswith("[conda]"):
        line = _HTML_TAG.sub("", line)
    if "`" in line:
        line = line.replace("`", "")
    if "**" in line:
        line = line.replace("**", "")
    if not line.strip():
        return None
    return line


def _logical_lines(text: str):
    """Yield cleaned lines (None for blank/debris), splitting lines a terminal merged."""
    count = 0
    for raw in text.splitlines():
        count += 1
        if count > MAX_LINES:
            return
        line = _clean_line(raw)
        if line is None:
            yield None
            continue
        if "  " in line:
            pieces = _MERGED.split(line)
            if len(pieces) > 1:
                yield from pieces
                continue
        yield line


# --------------------------------------------------------------------------------------
# scanning: text -> raw fields
# --------------------------------------------------------------------------------------

_GPU_LINE = re.compile(r"GPU\s*(\d{1,4})\s*:\s*(.*)")
_ROW = re.compile(r"\[(pip\d?|conda)\]\s*(.*)", re.I)


# Multi-line sections of XPU builds: a label line, then one "* item" line per entry.
_INTEL_SECTIONS = (
    "intel_gpu_driver_version",
    "intel_gpu_models_onboard",
    "intel_gpu_models_detected",
)


@dataclass
class _Scan:
    fields: dict[str, str] = field(default_factory=dict)
    gpu_lines: list[str] = field(default_factory=list)
    intel_lines: dict[str, list[str]] = field(default_factory=dict)
    cudnn_lines: list[str] = field(default_factory=list)
    cpu_lines: list[str] = field(default_factory=list)
    pip_rows: list[tuple[str, str]] = field(default_factory=list)
    conda_rows: list[str] = field(default_factory=list)
    several_reports: bool = False


def _match_field(stripped: str) -> Optional[tuple[str, str]]:
    idx = stripped.find(":")
    if 0 < idx <= 100 and not _NOT_LABEL.search(_PARENS.sub("", stripped[:idx])):
        label = stripped[:idx]
        key = _LABEL_INDEX.get(_norm_label(label))
        if key is None and "(" in label:
            # the issue template's "PyTorch Version (e.g., 1.0): 1.4"
            key = _LABEL_INDEX.get(_norm_label(_PARENS.sub("", label)))
        if key is not None:
            value = stripped[idx + 1 :].strip()
            if key == "cpu_info" and value:
                return None  # "CPU: 8" is not the section header
            return key, value
    for key, pattern in _COLONLESS:
        m = pattern.match(stripped)
        if m:
            return key, m.group(1).strip()
    return None


def _cudnn_value_continues(value: str) -> bool:
    low = value.lower()
    if not value or low.startswith("probably one of the following"):
        return True
    # a single path that a ticket wrapped ("...\CUDA\v10.0\bin\cudn" + "n64_7.dll")
    return _looks_like_path(value) and not _ends_like_library(value)


MIN_REPORT_FIELDS = 5
"""A run of fields this long is a report; shorter runs before it are taken for issue text
that happens to look like a field ("- torch.version: ..."), or a filled-in issue template."""
MAX_SEGMENTS = 50


def _scan(text: str) -> _Scan:
    """The report in the text: the first run of fields (a new run starts where a field
    repeats) that has at least MIN_REPORT_FIELDS fields, else the longest run."""
    segments = [_Scan()]
    scan = segments[0]
    state = "top"  # top | gpu | cudnn | cpu | pyver | one of _INTEL_SECTIONS

    def new_segment() -> bool:
        nonlocal scan, state
        if scan.fields and len(scan.fields) >= MIN_REPORT_FIELDS:
            return False  # the report is complete: what follows is another one
        if len(segments) >= MAX_SEGMENTS:
            return False
        scan = _Scan()
        segments.append(scan)
        state = "top"
        return True

    stopped = False
    for line in _logical_lines(text):
        if line is None:
            if state in ("gpu", "cudnn") or state in _INTEL_SECTIONS:
                state = "top"
            continue
        stripped = line.strip()
        if stripped.lower().startswith("collecting environment information"):
            if scan.fields and not new_segment():
                stopped = True
                break
            continue
        row = _ROW.match(stripped)
        if row:
            if state != "top":
                state = "top"
            if row.group(1).lower() == "conda":
                if len(scan.conda_rows) < MAX_ROWS:
                    scan.conda_rows.append(row.group(2).strip())
            elif len(scan.pip_rows) < MAX_ROWS:
                scan.pip_rows.append((row.group(1).lower(), row.group(2).strip()))
            continue
        matched = _match_field(stripped)
        if matched is not None:
            key, value = matched
            if key in scan.fields and not new_segment():
                stopped = True
                break
            scan.fields[key] = value
            if key == "nvidia_gpu_models":
                state = "gpu"
                if _GPU_LINE.match(value):
                    scan.gpu_lines.append(value)
            elif key == "cudnn_version":
                state = "cudnn" if _cudnn_value_continues(value) else "top"
            elif key == "cpu_info":
                state = "cpu"
            elif key in _INTEL_SECTIONS:
                state = key
                if value and _special(value) is None:
                    scan.intel_lines.setdefault(key, []).append(value)
            elif key == "python_version" and value.count("[") > value.count("]"):
                # an e-mail reply wrapped the compiler part: "[Clang 15.0.0" + next line
                # "(clang-1500.1.0.2.5)] (64-bit runtime)" (pytorch#121067)
                state = "pyver"
            else:
                state = "top"
            continue
        if state == "pyver":
            state = "top"
            if "]" in stripped:
                scan.fields["python_version"] += " " + stripped
                continue
        if state == "gpu":
            if _GPU_LINE.match(stripped) or stripped.startswith("MIG "):
                if len(scan.gpu_lines) < MAX_SECTION_LINES:
                    scan.gpu_lines.append(stripped)
                continue
            state = "top"
        elif state == "cudnn":
            if len(scan.cudnn_lines) < MAX_SECTION_LINES:
                scan.cudnn_lines.append(stripped)
            continue
        elif state == "cpu":
            if len(scan.cpu_lines) < MAX_SECTION_LINES:
                scan.cpu_lines.append(line)
            continue
        elif state in _INTEL_SECTIONS:
            items = scan.intel_lines.setdefault(state, [])
            if len(items) < MAX_SECTION_LINES:
                items.append(stripped)
            continue
        # anything else (issue text around the report, trailing junk) is not ours

    best = next((seg for seg in segments if len(seg.fields) >= MIN_REPORT_FIELDS), None)
    if best is None:
        best = max(
            segments, key=lambda seg: (len(seg.fields), len(seg.pip_rows) + len(seg.conda_rows))
        )
    best.several_reports = stopped
    return best


def parse_fields(text: str) -> dict[str, str]:
    """The report's raw fields by collect_env's names (``torch_version``, ``os``, ...).

    Multi-line values (``nvidia_gpu_models``, ``cudnn_version``, ``cpu_info``,
    ``pip_packages``, ``conda_packages``) are joined with newlines. Only the first report
    of several pasted ones is read. A field the report does not have is absent.
    """
    scan = _scan(text)
    out = {k: v for k, v in scan.fields.items() if k != "libraries"}
    if scan.gpu_lines:
        head = out.get("nvidia_gpu_models", "")
        lines = scan.gpu_lines if _GPU_LINE.match(head) else [head, *scan.gpu_lines]
        out["nvidia_gpu_models"] = "\n".join(x for x in lines if x)
    if scan.cudnn_lines:
        out["cudnn_version"] = "\n".join(
            x for x in [out.get("cudnn_version", ""), *scan.cudnn_lines] if x
        )
    if scan.cpu_lines:
        out["cpu_info"] = "\n".join(x.strip() for x in scan.cpu_lines)
    for key, items in scan.intel_lines.items():
        out[key] = "\n".join(items)
    if scan.pip_rows:
        out["pip_packages"] = "\n".join(f"[{tag}] {rest}" for tag, rest in scan.pip_rows)
    if scan.conda_rows:
        out["conda_packages"] = "\n".join(f"[conda] {rest}" for rest in scan.conda_rows)
    return out


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
# conda build strings
# --------------------------------------------------------------------------------------


_CONDA_PY = re.compile(r"py(\d)\.?(\d{1,2})")


def conda_python(build: str) -> Optional[tuple[int, int]]:
    """The Python a conda build string was built for: ``py3.7_cuda10.1.243_cudnn7.6.3_0``,
    ``cuda112py39h0bbbad9_1`` -> (3, 7), (3, 9). The CUDA and cuDNN in the string are
    knowledge of the channels' naming and are read by ``tables.cuda_for_conda_build``
    (patterns in rules/data/wheel_archs.yaml)."""
    py = _CONDA_PY.search(build.lower()[:200])
    return (int(py.group(1)), int(py.group(2))) if py else None


# --------------------------------------------------------------------------------------
# package rows
# --------------------------------------------------------------------------------------

_TORCH_PROVIDER = re.compile(r"(?:py)?torch(?:-nightly)?(?:-(?:cpu|cuda\d+|cu\d+|rocm[\d.]*))?")
_NAME_NORM = re.compile(r"[-_.]+")


def _norm_name(name: str) -> str:
    return _NAME_NORM.sub("-", name.strip().lower()).strip("-")


def provides_torch(name: str) -> bool:
    """Whether a distribution of this (normalised) name installs the ``torch`` module.
    Metapackages such as ``pytorch-cuda``, ``pytorch-mutex`` or ``cpuonly`` do not."""
    return bool(_TORCH_PROVIDER.fullmatch(name))


@dataclass
class _Row:
    name: str
    version: Optional[str]
    source: str  # report-pip | report-conda
    build: Optional[str] = None
    channel: Optional[str] = None
    pip_like: bool = True  # a pip-installed distribution (pip row, or conda's <pip>/pypi)
    note: Optional[str] = None  # why the version is missing


def _listing_state(rows: list[str]) -> str:
    """absent | cnc | empty | rows — what one package section says."""
    if not rows:
        return "absent"
    real = [r for r in rows if _special(r) is None and r.lower() != "no relevant packages"]
    if real:
        return "rows"
    if any(r.lower() == "no relevant packages" for r in rows):
        return "empty"
    return "cnc"


def _pip_row(rest: str) -> Optional[_Row]:
    text = rest.strip()
    if not text or _special(text) is not None or text.lower() == "no relevant packages":
        return None
    if text.startswith("-e "):
        egg = text.rsplit("#egg=", 1)
        if len(egg) == 2 and egg[1]:
            return _Row(
                _norm_name(egg[1].split("&")[0]), None, "report-pip", note="editable install"
            )
        return None
    if " @ " in text:
        name = text.split(" @ ", 1)[0]
        return _Row(
            _norm_name(name),
            None,
            "report-pip",
            note="the report lists a direct reference, not a version",
        )
    if "==" in text:
        name, _, version = text.partition("==")
        version = version.lstrip("=").strip().split(" ", 1)[0]
        return _Row(_norm_name(name), version or None, "report-pip")
    if text.endswith(")") and " (" in text:  # 0.4-era "numpy (1.15.0)"
        name, _, version = text[:-1].partition(" (")
        return _Row(_norm_name(name), version.strip() or None, "report-pip")
    words = text.split()
    if len(words) == 2:  # "numpy 1.15.0"
        return _Row(_norm_name(words[0]), words[1], "report-pip")
    if len(words) == 1:
        return _Row(_norm_name(words[0]), None, "report-pip", note=NOT_STATED)
    return None


def _conda_row(rest: str) -> Optional[_Row]:
    text = rest.strip()
    if not text or _special(text) is not None or text.lower() == "no relevant packages":
        return None
    words = [w for w in text.split() if not (w.startswith("[") and w.endswith("]"))]
    if not words:
        return None
    name = _norm_name(words[0])
    version = words[1] if len(words) > 1 else None
    tail = words[2:]
    if tail and tail[0] == "<pip>":
        return _Row(name, version, "report-conda", build=None, channel="pypi", pip_like=True)
    build = tail[0] if tail else None
    channel = tail[1] if len(tail) > 1 else None
    return _Row(
        name,
        version,
        "report-conda",
        build=build,
        channel=channel,
        pip_like=(channel == "pypi"),
        note=None if version else NOT_STATED,
    )


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


@dataclass
class _Ctx:
    scan: _Scan
    fields: dict[str, str]
    torch_imported: Optional[bool] = None
    torch_version: Optional[str] = None
    python_version: Optional[str] = None
    os_family: Optional[str] = None
    pip: list[_Row] = field(default_factory=list)
    conda: list[_Row] = field(default_factory=list)
    pip_state: str = "absent"
    conda_state: str = "absent"
    conda_other_env: bool = False
    import_error: Optional[tuple[str, str]] = None  # (exception type, message) pasted nearby
    cuda_init_warning: Optional[str] = None  # torch's "CUDA initialization: ..." pasted nearby


def parse_collect_env(text: str) -> Facts:
    """Facts (``origin="report"``) from the text of a collect_env report.

    Raises :class:`NotAReport` when the text has no collect_env field at all.
    """
    scan = _scan(text)
    if not scan.fields and not scan.pip_rows and not scan.conda_rows:
        raise NotAReport("no known field found")
    return _build(scan, _import_error_line(text), cuda_init_warning(text))


# An exception line as Python prints it, e.g. from the traceback users paste above the
# report: "ImportError: libcudnn.so.9: cannot open shared object file: ...". Anchored and
# bounded, so it cannot backtrack.
_EXC_LINE = re.compile(r"[ \t>]{0,40}(ImportError|ModuleNotFoundError|OSError): ([^\r\n]{1,500})")


def _import_error_line(text: str) -> Optional[tuple[str, str]]:
    for line in text.splitlines():
        if "Error: " in line:  # cheap filter; each line is matched once, anchored at its start
            m = _EXC_LINE.match(line)
            if m:
                return m.group(1), m.group(2).strip()
    return None


CUDA_INIT_PREFIX = "CUDA initialization:"
"""How torch starts the warning it prints when CUDA cannot initialise (c10 ``device_count()``:
``TORCH_WARN("CUDA initialization: ", ...)``), e.g. "CUDA initialization: Found no NVIDIA driver
on your system", "... The NVIDIA driver on your system is too old (found version 11040)",
"... CUDA driver initialization failed, you might not have a CUDA gpu"."""
MAX_INIT_ERROR_CHARS = 1_000
"""The warning is cut at this length (torch's longest variant is about 450 characters)."""


def cuda_init_warning(text: str) -> Optional[str]:
    """torch's "CUDA initialization: ..." warning in the pasted text (its first occurrence,
    from the prefix to the end of its line, trimmed and bounded), or None."""
    at = text.find(CUDA_INIT_PREFIX)
    if at < 0:
        return None
    end = text.find("\n", at, at + MAX_LINE_CHARS)
    line = text[at : end if end >= 0 else at + MAX_LINE_CHARS]
    line = _clean_line(line) or ""
    line = " ".join(line.split())
    if len(line) <= len(CUDA_INIT_PREFIX):
        return None
    if len(line) > MAX_INIT_ERROR_CHARS:
        line = line[: MAX_INIT_ERROR_CHARS - 3].rstrip() + "..."
    return line


_FOUND_DRIVER = re.compile(r"too old \(found version (\d{4,6})\)")


def driver_cuda_version(warning: Optional[str]) -> Optional[str]:
    """The CUDA version the driver supports as torch's "driver ... too old (found version
    11040)" states it (cudaDriverGetVersion: 1000 * major + 10 * minor): "11.4"."""
    if not warning:
        return None
    m = _FOUND_DRIVER.search(warning)
    if not m:
        return None
    n = int(m.group(1))
    return f"{n // 1000}.{n % 1000 // 10}"


def _build(
    scan: _Scan,
    import_error: Optional[tuple[str, str]] = None,
    init_warning: Optional[str] = None,
) -> Facts:
    f = scan.fields
    ctx = _Ctx(scan=scan, fields=f, import_error=import_error, cuda_init_warning=init_warning)
    _read_torch_presence(ctx)
    ctx.python_version = _python_version(f.get("python_version"))
    ctx.os_family = _os_family(f)
    _read_packages(ctx)

    notes = []
    if scan.several_reports:
        notes.append("report: several reports were pasted; only the first complete one was read")
    return Facts(
        origin="report",
        torch=_torch_facts(ctx),
        gpu=_gpu_facts(ctx),
        cpu=_cpu_facts(ctx),
        memory=_u(NOT_STATED),
        env=_u(NOT_STATED),
        packages=_packages_facts(ctx),
        system=_system_facts(ctx),
        notes=notes,
    )


# ---------------------------------------------------------------------------- torch


def _read_torch_presence(ctx: _Ctx) -> None:
    f = ctx.fields
    raw = f.get("torch_version")
    if raw is not None:
        kind = _special(raw)
        if kind in ("na", "none"):
            ctx.torch_imported = False
            return
        token = raw.strip().split()[0] if raw.strip() else ""
        if token[:1] in ("v", "V") and token[1:2].isdigit():
            token = token[1:]  # hand-edited "v1.13.1"
        if token[:1].isdigit():
            ctx.torch_imported = True
            if not too_many_digits(token):  # else the version is unknown: "report says: ..."
                ctx.torch_version = token.rstrip(",;")
            return
    # The header may be cut off (corpus case031): torch-answered fields still tell.
    for key in ("is_debug_build", "is_cuda_available"):
        value = f.get(key)
        if value is None:
            continue
        if _special(value) == "na":
            ctx.torch_imported = False
            return
        if _bool(value) is not None:
            ctx.torch_imported = True
            return


def _torch_facts(ctx: _Ctx) -> Value:
    f = ctx.fields
    torch_keys = (
        "torch_version",
        "is_debug_build",
        "cuda_compiled_version",
        "is_cuda_available",
        "hip_compiled_version",
    )
    if not any(k in f for k in torch_keys) and ctx.torch_imported is None:
        return _u(NOT_STATED)

    if ctx.torch_imported is False:
        status, default = _import_failure_status(ctx), TORCH_NOT_IMPORTED
        if ctx.import_error is not None:
            # the pasted traceback says why: that is the import failure, even where a filtered pip
            # list shows no torch (pytorch#90692: a traceback through site-packages/torch beside
            # `[pip3] mypy-e`); "No module named 'torch'" reads as not-installed
            from torchdoctor.probes._torch_child import failure_from_text

            return _model(TorchFacts, default, **failure_from_text(*ctx.import_error))
        values: dict[str, Any] = {"import_status": status}
        if status == "not-installed":
            for k in ("import_error", "missing_library", "missing_symbol", "signal"):
                values[k] = None
        elif status in ("import-error", "unknown-from-report"):
            for k in ("import_error", "missing_library", "missing_symbol", "signal"):
                values[k] = _u("the report does not show the import error")
        return _model(TorchFacts, default, **values)

    values = {}
    if ctx.torch_imported:
        values["import_status"] = "ok"
        for k in ("import_error", "missing_library", "missing_symbol", "signal"):
            values[k] = None
    raw = f.get("torch_version")
    if ctx.torch_version:
        values["version"] = ctx.torch_version
    elif raw is not None and _special(raw) != "empty":
        values["version"] = _u(_said(raw))

    debug = f.get("is_debug_build")
    if debug is not None:
        b = _bool(debug)
        values["debug_build"] = b if b is not None else _u(_said(debug))

    avail = f.get("is_cuda_available")
    if avail is not None:
        b = _bool(avail)
        values["cuda_available"] = b if b is not None else _u(_said(avail))
    elif ctx.cuda_init_warning is not None and ctx.torch_imported is not False:
        values["cuda_available"] = False  # torch counted 0 devices after that warning
    if ctx.cuda_init_warning is not None and ctx.torch_imported is not False:
        values["cuda_init_error"] = ctx.cuda_init_warning
    xpu = f.get("is_xpu_available")
    if xpu is not None:
        b = _bool(xpu)
        values["xpu_available"] = b if b is not None else _u(_said(xpu))

    values["hip_build"] = _hip_build(ctx)
    values["cuda_build"] = _cuda_build(ctx, values["hip_build"])
    if isinstance(values["hip_build"], Unavailable) and isinstance(values["cuda_build"], str):
        values["hip_build"] = None  # a CUDA build is not a ROCm build
    for key, name in (("hip_runtime_version", "hip_runtime_version"),
                      ("miopen_runtime_version", "miopen_version")):
        if key in f:
            values[name] = _hip_config_version(ctx, f[key], values["hip_build"])
    if "xpu_compiled_version" in f:
        values["xpu_build"] = _xpu_build(ctx, f["xpu_compiled_version"])
    values.update(_torch_cudnn(ctx, values["cuda_build"]))
    nccl = f.get("nccl_version")
    if nccl is not None and _special(nccl) != "empty":
        version = _leading_version(nccl)
        values["nccl_version"] = version if version else _u(_said(nccl))
    return _model(TorchFacts, NOT_STATED, **values)


def _hip_config_version(ctx: _Ctx, raw: str, hip_build: Value) -> Value:
    """"HIP runtime version" / "MIOpen runtime version": read from torch.__config__.show() of a
    ROCm build; collect_env prints N/A for other builds (and where the config names none)."""
    kind = _special(raw)
    if kind in ("na", "none"):
        if hip_build is None and ctx.torch_imported:
            return None
        return _u(_said(raw))
    if kind == "cnc":
        return _u(COULD_NOT_COLLECT)
    if kind == "empty":
        return _u(NOT_STATED)
    version = _leading_version(raw)
    return version if version else _u(_said(raw))


def _xpu_build(ctx: _Ctx, raw: str) -> Value:
    kind = _special(raw)
    if kind in ("na", "none", "cnc"):
        return None if ctx.torch_imported else _u(_said(raw))
    if kind == "empty":
        return _u(NOT_STATED)
    version = _leading_version(raw)
    return version if version else _u(_said(raw))


def _import_failure_status(ctx: _Ctx) -> Value:
    providers = [
        r for r in ctx.pip + ([] if ctx.conda_other_env else ctx.conda) if provides_torch(r.name)
    ]
    if providers:
        return "import-error"
    collected = "rows" in (ctx.pip_state, ctx.conda_state) or "empty" in (
        ctx.pip_state,
        ctx.conda_state,
    )
    if collected:
        return "not-installed"
    return "unknown-from-report"  # the import failed; whether torch is installed is not said


def _hip_build(ctx: _Ctx) -> Value:
    raw = ctx.fields.get("hip_compiled_version")
    if raw is None:
        return _u(NOT_STATED)
    kind = _special(raw)
    if kind in ("na", "none", "cnc"):
        return None if ctx.torch_imported else _u(_said(raw))
    version = _leading_version(raw)
    return version if version else _u(_said(raw))


def _cuda_build(ctx: _Ctx, hip_build: Value) -> Value:
    raw = ctx.fields.get("cuda_compiled_version")
    if raw is None:
        return _u(NOT_STATED)
    kind = _special(raw)
    if kind in ("none", "cnc", "nocuda"):
        # torch.version.cuda is None; collect_env prints "Could not collect" for it
        return None if ctx.torch_imported is not False else _u(_said(raw))
    if kind == "na":
        if ctx.torch_imported or isinstance(hip_build, str):
            return None  # a ROCm build: collect_env prints N/A for the CUDA version
        return _u(_said(raw))
    if kind == "empty":
        return _u(NOT_STATED)
    if _several_values(raw):
        return _u(f"report states several values: {raw.strip()[:80]!r}")
    version = _leading_version(raw)
    return version if version else _u(_said(raw))


def _is_running(ctx: _Ctx, row: _Row) -> bool:
    """Whether a listed torch provider is the torch that was imported. A conda package's
    __version__ equals its version; a pip wheel's may add a local label (1.8.1+cu102)."""
    if not (ctx.torch_version and row.version and provides_torch(row.name)):
        return False
    if row.pip_like:
        return same_release(row.version, ctx.torch_version)
    a, b = _release(row.version), _release(ctx.torch_version)
    if a is None or b is None:
        return row.version.strip().lower() == ctx.torch_version.strip().lower()
    return a == b


def _running_conda_row(ctx: _Ctx) -> Optional[_Row]:
    if ctx.conda_other_env:
        return None
    for row in ctx.conda:
        if not row.pip_like and _is_running(ctx, row):
            return row
    return None


def _conda_cudnn(build: str) -> Optional[str]:
    """cuDNN a conda pytorch build bundles, when its build string names it."""
    found = tables.cuda_for_conda_build(build[:200])
    return found[1] if found is not None else None


def _torch_cudnn(ctx: _Ctx, cuda_build: Value) -> dict[str, Value]:
    if cuda_build is None and ctx.torch_imported:
        return {"cudnn_version": None, "cudnn_compiled_version": None}  # no CUDA, no cuDNN
    out: dict[str, Value] = {}
    conda_row = _running_conda_row(ctx)
    if conda_row is not None and conda_row.build:
        cudnn = _conda_cudnn(conda_row.build)
        if cudnn:
            out["cudnn_version"] = cudnn
            out["cudnn_compiled_version"] = cudnn
            return out
    if ctx.os_family == "Linux" and ctx.torch_version:
        pip_torch = [r for r in ctx.pip if provides_torch(r.name) and r.version]
        wheel = [r for r in ctx.pip if r.name.startswith("nvidia-cudnn-cu") and r.version]
        if wheel and any(same_release(r.version, ctx.torch_version) for r in pip_torch):
            parts = wheel[0].version.split(".")
            if all(p.isdigit() for p in parts[:3]):
                out["cudnn_version"] = ".".join(parts[:3])
                return out
    system = ctx.fields.get("cudnn_version")
    if system is not None and _special(system) is None:
        found = cudnn_versions(_cudnn_text(ctx))
        if found:
            out["cudnn_version"] = _u(
                f"the report lists cuDNN libraries on the system (highest {found[0]}), "
                "not the cuDNN torch loaded"
            )
    return out


# ---------------------------------------------------------------------------- gpu

_GPU_LIST_FIELDS = (
    "vendors",
    "count",
    "devices",
    "links",
    "name",
    "min_compute_capability",
    "max_compute_capability",
    "architectures",
)
_AMD_NAME = re.compile(r"\b(?:amd|radeon|instinct|gfx[0-9a-f]+)\b", re.I)
_NON_NVIDIA = re.compile(r"\b(?:apple|intel)\b", re.I)  # never on collect_env's GPU line
_COUNT_PREFIX = re.compile(r"(\d{1,3})\s*[x×]\s+(.+)")
_NO_GCN_ARCH = "NoGCNArchNameOnOldPyTorch"
"""What collect_env appends, without a space, where torch has no gcnArchName."""
ROCM_ONE_GPU = (
    "a ROCm report names only the GPU torch uses (torch.cuda.get_device_name), "
    "not how many there are"
)


@dataclass
class _GpuEntry:
    index: int
    name: str
    mig: bool = False
    vendor: str = "nvidia"
    gfx_target: Optional[str] = None


def _gpu_entries(ctx: _Ctx) -> Optional[tuple[list[_GpuEntry], bool]]:
    """The GPUs the GPU line names, and whether it states how many there are (a bare name
    does not: on ROCm and macOS it is torch's current device); None when the value is not a
    GPU list."""
    head = ctx.fields.get("nvidia_gpu_models", "")
    lines = list(ctx.scan.gpu_lines)
    entries: list[_GpuEntry] = []
    for line in lines:
        m = _GPU_LINE.match(line)
        if m:
            if len(entries) >= MAX_GPUS:
                break
            name = m.group(2)
            cut = name.find("(UUID:")
            if cut >= 0:
                name = name[:cut]
            entries.append(_GpuEntry(int(m.group(1)), name.strip()[:MAX_NAME_CHARS]))
        elif line.startswith("MIG ") and entries:
            entries[-1].mig = True
    if entries:
        return entries, True
    if head and not _GPU_LINE.match(head) and _special(head) is None:
        name = head.split("(UUID:", 1)[0].strip()[:MAX_NAME_CHARS]
        m = _COUNT_PREFIX.fullmatch(name)
        if m:  # hand-edited "2x TITAN RTX"
            count = min(int(m.group(1)), 64)
            return [_GpuEntry(i, m.group(2).strip()) for i in range(count)], True
        return [_GpuEntry(0, name)], False
    return None


def _split_gfx(name: str) -> tuple[str, Optional[str]]:
    """"AMD Instinct MI300X (gfx942:sramecc+:xnack-)" -> (name, "gfx942:sramecc+:xnack-")."""
    if name.endswith(_NO_GCN_ARCH):
        return name[: -len(_NO_GCN_ARCH)].strip(), None
    if name.endswith(")"):
        at = name.rfind("(")
        inner = name[at + 1 : -1].strip()
        if at > 0 and inner[:3].lower() == "gfx" and " " not in inner:
            return name[:at].strip(), inner
    return name, None


def _intel_items(ctx: _Ctx, key: str) -> list[str]:
    return [x for x in ctx.scan.intel_lines.get(key, []) if x and _special(x) is None]


def _intel_entries(ctx: _Ctx) -> Optional[list[_GpuEntry]]:
    """Intel GPUs of an XPU build's report: the "Intel GPU models onboard" list (xpu-smi on
    Linux, the display drivers on Windows), else the names torch detected
    ("[0] _XpuDeviceProperties(name='...', ...)")."""
    names = _intel_items(ctx, "intel_gpu_models_onboard")
    if not names:
        for item in _intel_items(ctx, "intel_gpu_models_detected"):
            at = item.find("name='")
            end = item.find("'", at + 6) if at >= 0 else -1
            if end > at:
                names.append(item[at + 6 : end])
    names = [n.strip()[:MAX_NAME_CHARS] for n in names if n.strip()][:MAX_GPUS]
    if not names:
        return None
    return [_GpuEntry(i, name, vendor="intel") for i, name in enumerate(names)]


def _intel_driver(ctx: _Ctx) -> Value:
    """"32.0.101.8826 (date)" (Windows), "libze1:  1.21.9.0-1136~22.04" (Linux packages)."""
    if "intel_gpu_driver_version" not in ctx.fields:
        return _u(NOT_STATED)
    pieces = []
    for item in _intel_items(ctx, "intel_gpu_driver_version")[:20]:
        name, sep, rest = item.partition(":")
        if sep and rest.strip() and not name.strip()[:1].isdigit():
            pieces.append(f"{name.strip()} {rest.split()[0]}")
        else:
            pieces.append(item.split()[0])
    if pieces:
        return "; ".join(pieces)
    raw = ctx.fields["intel_gpu_driver_version"]
    return _u(_said(raw) if raw else NOT_STATED)


def _cc_for(name: str) -> Value:
    try:
        cc = tables.cc_for_gpu_name(name)
    except tables.DataFileError:
        raise
    except Exception as exc:  # noqa: BLE001 - a table bug must not sink a pasted report
        return _u(f"GPU-name table lookup failed for {name!r}: {exc}")
    if cc is None:
        return _u(f"compute capability of {name!r} is not in torchdoctor's GPU table")
    return float(cc)


def _arch_for(cc: Value) -> Value:
    if isinstance(cc, Unavailable):
        return cc
    arch = tables.arch_for_cc(cc)
    return arch if arch else _u(f"no architecture known for compute capability {cc}")


_VENDOR_WORDS = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}


def _not_cuda(vendors: list[str]) -> Unavailable:
    words = " and ".join(_VENDOR_WORDS[v] for v in vendors)
    return _u(f"{words} GPU: compute capability and architecture are NVIDIA (CUDA) notions")


def _device(entry: _GpuEntry, looked_up: dict[str, Value]) -> GpuDevice:
    dev: dict[str, Value] = {"index": entry.index, "name": entry.name, "vendor": entry.vendor}
    if entry.vendor == "nvidia":
        if entry.name not in looked_up:
            looked_up[entry.name] = _cc_for(entry.name)
        cc = looked_up[entry.name]
        dev.update(compute_capability=cc, architecture=_arch_for(cc), gfx_target=None)
        if entry.mig:
            dev["mig_mode"] = True
    else:
        no_cc = _not_cuda([entry.vendor])
        dev.update(compute_capability=no_cc, architecture=no_cc)
        if entry.vendor == "amd":
            dev["gfx_target"] = (
                entry.gfx_target
                if entry.gfx_target
                else _u("the report does not state the GPU's gfx target")
            )
        else:
            dev["gfx_target"] = None
    return _model(GpuDevice, NOT_STATED, **dev)


def _nvidia_driver(ctx: _Ctx, driver_raw: Optional[str]) -> Value:
    if driver_raw is None:
        return _u(NOT_STATED)
    kind = _special(driver_raw)
    if kind == "nocuda":
        return None
    if kind == "cnc":
        return _u(COULD_NOT_COLLECT)
    token = driver_raw.strip().split()[0] if driver_raw.strip() else ""
    if not token[:1].isdigit():
        return _u(_said(driver_raw))
    if ctx.os_family == "Darwin":
        return _u(
            f"on macOS collect_env's 'Nvidia driver version' ({token}) is the CUDA kernel "
            "extension's version (com.nvidia.CUDA), not the NVIDIA display driver's"
        )
    return token


def _gpu_facts(ctx: _Ctx) -> Value:
    f = ctx.fields
    models = f.get("nvidia_gpu_models")
    driver_raw = f.get("nvidia_driver_version")
    intel = _intel_entries(ctx)
    found_cuda = driver_cuda_version(ctx.cuda_init_warning)
    if (
        models is None
        and driver_raw is None
        and not ctx.scan.gpu_lines
        and intel is None
        and "intel_gpu_driver_version" not in f
        and found_cuda is None
    ):
        return _u(NOT_STATED)
    values: dict[str, Value] = {"source": "report"}
    values["driver_version"] = _nvidia_driver(ctx, driver_raw)
    if found_cuda is not None:
        values["cuda_driver_version"] = found_cuda
    values["intel_driver_version"] = _intel_driver(ctx)

    # the GPU line: NVIDIA GPUs (nvidia-smi -L), or torch's current GPU on ROCm and macOS
    kind = _special(models) if models is not None else None
    found = _gpu_entries(ctx)
    listed: Union[list[_GpuEntry], Unavailable]
    count_stated: Union[bool, Unavailable] = True
    if found is None:
        if kind == "nocuda":
            listed = []
        else:
            listed = _u(
                COULD_NOT_COLLECT if kind == "cnc" else (_said(models) if models else NOT_STATED)
            )
    else:
        listed, stated = found
        if any(_NON_NVIDIA.search(e.name) and not _AMD_NAME.search(e.name) for e in listed):
            listed = _u(
                "the report's GPU line names a non-NVIDIA GPU as torch sees it; "
                "NVIDIA GPUs are not listed"
            )
        else:
            rocm = isinstance(_hip_build(ctx), str)
            for e in listed:
                if rocm or _AMD_NAME.search(e.name):
                    e.vendor = "amd"
                    e.name, e.gfx_target = _split_gfx(e.name)
            if not stated:
                amd = listed[0].vendor == "amd"
                # a bare NVIDIA name is read as one GPU (hand-edited, or a Mac with one GPU)
                count_stated = _u(ROCM_ONE_GPU) if amd else True

    if isinstance(listed, Unavailable) and intel is None:
        for k in _GPU_LIST_FIELDS:
            values[k] = listed
        return _model(GpuFacts, NOT_STATED, **values)

    entries = (listed if isinstance(listed, list) else []) + (intel or [])
    looked_up: dict[str, Value] = {}
    devices = [_device(e, looked_up) for e in entries]
    values["devices"] = devices
    vendors = list(dict.fromkeys(e.vendor for e in entries))
    if isinstance(listed, Unavailable):
        # Intel GPUs listed, but whether there are NVIDIA GPUs too is not known
        for k in ("vendors", "count", "name", "links"):
            values[k] = listed
    else:
        values["vendors"] = vendors
        # count = NVIDIA GPUs, as every rule reads it; AMD and Intel ones are in devices/vendors
        nvidia_count = sum(1 for e in entries if e.vendor == "nvidia")
        values["count"] = nvidia_count if count_stated is True else count_stated
        values["name"] = devices[0].name if devices else None
        if not devices:
            values["links"] = []
    nvidia = [d for d in devices if d.vendor == "nvidia"]
    if nvidia:
        ccs = [d.compute_capability for d in nvidia]
        unknown = [c for c in ccs if isinstance(c, Unavailable)]
        if unknown:
            values["min_compute_capability"] = unknown[0]
            values["max_compute_capability"] = unknown[0]
        else:
            values["min_compute_capability"] = min(ccs)
            values["max_compute_capability"] = max(ccs)
        archs = [d.architecture for d in nvidia]
        bad = [a for a in archs if isinstance(a, Unavailable)]
        values["architectures"] = bad[0] if bad else list(dict.fromkeys(archs))
    elif devices:
        no_cc = _not_cuda(vendors)
        for k in ("min_compute_capability", "max_compute_capability", "architectures"):
            values[k] = no_cc if not isinstance(listed, Unavailable) else listed
    elif not isinstance(listed, Unavailable):
        values.update(min_compute_capability=None, max_compute_capability=None, architectures=[])
    return _model(GpuFacts, NOT_STATED, **values)


# ---------------------------------------------------------------------------- cpu

_FLAG_KEYS = (
    "avx2",
    "avx512f",
    "avx512_bf16",
    "avx512_vnni",
    "amx_bf16",
    "amx_tile",
    "amx_int8",
    "neon",
    "sve",
    "sve2",
    "vsx",
)
# Win32_Processor.Architecture codes (Microsoft Learn, "Win32_Processor class").
_WIN_ARCH = {"0": "x86", "5": "arm", "6": "ia64", "9": "x86_64", "12": "arm64"}


# lscpu prints its summary labels in the user's language (collect_env runs it under the user's
# locale). Localized label -> the English label in lower case, which is the key _cpu_facts reads.
# These are the msgstr of util-linux's own translations (sys-utils/lscpu.c, po/<lang>.po of
# util-linux/util-linux), less the trailing colon: the po files of util-linux 2.38.1 as
# compiled into Debian 12's util-linux-locales 2.38.1-5+deb12u3, non-fuzzy entries only; zh_CN
# checked against util-linux/util-linux po/zh_CN.po at 047eb14630a0 (same strings). Typos are
# util-linux's and kept ("ID прроизводителя", tr "Modem ismi"). Left out: translations that
# equal the English label (de, es, pt, pt_BR "CPU(s)"), and the two printed without a colon,
# which this reader does not split (es "Lista de la(s) CPU(s) fuera de línea", hr "CPU(-a)").
# Locales seen in real reports: zh_CN (vllm-project/vllm#13980, case149) and fr
# (pytorch/pytorch#109929, case150). A label is looked up after NFC normalization, case folding
# and collapsing whitespace; full-width colons and no-break spaces were already mapped by
# _clean_line, and the space French puts before the colon is stripped with the label.
_LSCPU_LABELS: dict[str, dict[str, str]] = {
    "cs": {
        "Architektura": "architecture",
        "Počet CPU": "cpu(s)",
        "Seznam zapnutých CPU": "on-line cpu(s) list",
        "Seznam vypnutých CPU": "off-line cpu(s) list",
        "ID výrobce": "vendor id",
        "Název modelu": "model name",
        "Vláken na jádro": "thread(s) per core",
        "Jader na patici": "core(s) per socket",
        "Patic": "socket(s)",
        "Uzly NUMA": "numa node(s)",
        "Příznaky": "flags",
    },
    "da": {
        "Arkitektur": "architecture",
        "CPU'er": "cpu(s)",
        "Tilkoblet cpu(er) liste": "on-line cpu(s) list",
        "Frakoblet cpu(er) liste": "off-line cpu(s) list",
        "Leverandør-id": "vendor id",
        "Modelnavn": "model name",
        "Tråde per kerne": "thread(s) per core",
        "Kerner per sokkel": "core(s) per socket",
        "Sokler": "socket(s)",
        "NUMA-knuder": "numa node(s)",
        "Flag": "flags",
    },
    "de": {
        "Architektur": "architecture",
        "Liste der Online-CPU(s)": "on-line cpu(s) list",
        "Liste der Offline-CPU(s)": "off-line cpu(s) list",
        "Anbieterkennung": "vendor id",
        "Modellname": "model name",
        "Thread(s) pro Kern": "thread(s) per core",
        "Kern(e) pro Sockel": "core(s) per socket",
        "Sockel": "socket(s)",
        "NUMA-Knoten": "numa node(s)",
        "Markierungen": "flags",
    },
    "es": {
        "Arquitectura": "architecture",
        "Lista de la(s) CPU(s) en línea": "on-line cpu(s) list",
        "ID de fabricante": "vendor id",
        "Nombre del modelo": "model name",
        "Hilo(s) de procesamiento por núcleo": "thread(s) per core",
        "Núcleo(s) por «socket»": "core(s) per socket",
        "«Socket(s)»": "socket(s)",
        "Modo(s) NUMA": "numa node(s)",
        "Indicadores": "flags",
    },
    "eu": {
        "Fabrikatzailearen IDa": "vendor id",
        "Core bakoitzeko hari kopurua": "thread(s) per core",
        "Socket bakoitzeko core kopurua": "core(s) per socket",
        "NUMA noduak": "numa node(s)",
    },
    "fi": {
        "Mallinimi": "model name",
        "Liput": "flags",
    },
    "fr": {
        "Architecture": "architecture",
        "Processeur(s)": "cpu(s)",
        "Liste de processeur(s) en ligne": "on-line cpu(s) list",
        "Liste de processeur(s) hors ligne": "off-line cpu(s) list",
        "Identifiant constructeur": "vendor id",
        "Nom de modèle": "model name",
        "Thread(s) par cœur": "thread(s) per core",
        "Cœur(s) par socket": "core(s) per socket",
        "Socket(s)": "socket(s)",
        "Nœud(s) NUMA": "numa node(s)",
        "Drapeaux": "flags",
    },
    "gl": {
        "Arquitectura": "architecture",
        "ID do fabricante": "vendor id",
        "Nodo(s) NUMA": "numa node(s)",
    },
    "hr": {
        "Arhitektura": "architecture",
        "Popis online CPU-a": "on-line cpu(s) list",
        "Popis offline CPU-a": "off-line cpu(s) list",
        "ID proizvođača": "vendor id",
        "Ime modela": "model name",
        "Dretva po jezgri": "thread(s) per core",
        "Jezgra po podnožju": "core(s) per socket",
        "CPU podnožja": "socket(s)",
        "NUMA čvor(ovi)": "numa node(s)",
        "Flagovi": "flags",
    },
    "id": {
        "ID Pembuat": "vendor id",
        "Thread(s) setiap inti": "thread(s) per core",
        "Inti setiap soket": "core(s) per socket",
        "Titik NUMA": "numa node(s)",
    },
    "ja": {
        "アーキテクチャ": "architecture",
        "CPU": "cpu(s)",
        "オンラインになっている CPU のリスト": "on-line cpu(s) list",
        "オフラインになっている CPU のリスト": "off-line cpu(s) list",
        "ベンダー ID": "vendor id",
        "モデル名": "model name",
        "コアあたりのスレッド数": "thread(s) per core",
        "ソケットあたりのコア数": "core(s) per socket",
        "ソケット数": "socket(s)",
        "NUMA ノード数": "numa node(s)",
        "フラグ": "flags",
    },
    "nl": {
        "Architectuur": "architecture",
        "CPU's": "cpu(s)",
        "Online CPU's-lijst": "on-line cpu(s) list",
        "Offline CPU's-lijst": "off-line cpu(s) list",
        "Producent-ID": "vendor id",
        "Modelnaam": "model name",
        "Draden per kern": "thread(s) per core",
        "Kernen per voet": "core(s) per socket",
        "CPU-voeten": "socket(s)",
        "NUMA-nodes": "numa node(s)",
        "Vlaggen": "flags",
    },
    "pl": {
        "Architektura": "architecture",
        "CPU": "cpu(s)",
        "Lista aktywnych CPU": "on-line cpu(s) list",
        "Lista nieaktywnych CPU": "off-line cpu(s) list",
        "ID producenta": "vendor id",
        "Nazwa modelu": "model name",
        "Wątków na rdzeń": "thread(s) per core",
        "Rdzeni na gniazdo": "core(s) per socket",
        "Gniazd": "socket(s)",
        "Węzłów NUMA": "numa node(s)",
        "Flagi": "flags",
    },
    "pt": {
        "Arquitectura": "architecture",
        "Lista das CPUs online": "on-line cpu(s) list",
        "Lista das CPUs offline": "off-line cpu(s) list",
        "ID de fornecedor": "vendor id",
        "Nome do modelo": "model name",
        "Tópicos por núcleo": "thread(s) per core",
        "Núcleos por socket": "core(s) per socket",
        "Sockets": "socket(s)",
        "Nós NUMA": "numa node(s)",
        "Bandeiras": "flags",
    },
    "pt_BR": {
        "Arquitetura": "architecture",
        "Lista de CPU(s) on-line": "on-line cpu(s) list",
        "Lista de CPU(s) off-line": "off-line cpu(s) list",
        "ID de fornecedor": "vendor id",
        "Nome do modelo": "model name",
        "Thread(s) per núcleo": "thread(s) per core",
        "Núcleo(s) por soquete": "core(s) per socket",
        "Soquete(s)": "socket(s)",
        "Nó(s) de NUMA": "numa node(s)",
        "Opções": "flags",
    },
    "ru": {
        "Архитектура": "architecture",
        "ID прроизводителя": "vendor id",
        "Имя модели": "model name",
        "Ядер на сокет": "core(s) per socket",
        "Сокетов": "socket(s)",
        "Флаги": "flags",
    },
    "sv": {
        "Arkitektur": "architecture",
        "CPU(er)": "cpu(s)",
        "Lista över aktiva CPU(er)": "on-line cpu(s) list",
        "Lista över inaktiva CPU(er)": "off-line cpu(s) list",
        "Tillverkar-ID": "vendor id",
        "Modellnamn": "model name",
        "Tråd(ar) per kärna": "thread(s) per core",
        "Kärn(or) per uttag": "core(s) per socket",
        "Uttag": "socket(s)",
        "NUMA nod(er)": "numa node(s)",
        "Flaggor": "flags",
    },
    "tr": {
        "Mimari": "architecture",
        "İşlemciler": "cpu(s)",
        "Çevrimiçi işlemci(ler) listesi": "on-line cpu(s) list",
        "Çevrimiçi işlemci listesi": "off-line cpu(s) list",
        "Sağlayıcı Kimliği": "vendor id",
        "Modem ismi": "model name",
        "Çekirdek başına iş parçacığı": "thread(s) per core",
        "Soket başına çekirdek": "core(s) per socket",
        "Soket(ler)": "socket(s)",
        "NUMA düğümü(leri)": "numa node(s)",
        "Bayraklar": "flags",
    },
    "uk": {
        "Архітектура": "architecture",
        "Процесори": "cpu(s)",
        "Список робочих ЦП": "on-line cpu(s) list",
        "Список вимкнених ЦП": "off-line cpu(s) list",
        "Ідентифікатор виробника": "vendor id",
        "Назва моделі": "model name",
        "Потоків на ядро": "thread(s) per core",
        "Ядер на сокет": "core(s) per socket",
        "Сокети": "socket(s)",
        "Вузли NUMA": "numa node(s)",
        "Прапорці": "flags",
    },
    "vi": {
        "Kiến trúc": "architecture",
        "CPU": "cpu(s)",
        "Danh sách CPU trực tuyến": "on-line cpu(s) list",
        "Danh sách CPU ngoại tuyến": "off-line cpu(s) list",
        "ID nhà sản xuất": "vendor id",
        "Tên mô hình": "model name",
        "Số tuyến mỗi lõi": "thread(s) per core",
        "Số lõi mỗi đế cắm": "core(s) per socket",
        "Số đế cắm": "socket(s)",
        "Nút NUMA": "numa node(s)",
    },
    "zh_CN": {
        "架构": "architecture",
        "CPU": "cpu(s)",
        "在线 CPU 列表": "on-line cpu(s) list",
        "离线 CPU 列表": "off-line cpu(s) list",
        "厂商 ID": "vendor id",
        "型号名称": "model name",
        "每个核的线程数": "thread(s) per core",
        "每个座的核数": "core(s) per socket",
        "座": "socket(s)",
        "NUMA 节点": "numa node(s)",
        "标记": "flags",
    },
    "zh_TW": {
        "架構": "architecture",
        "供應商識別號": "vendor id",
        "每核心執行緒數": "thread(s) per core",
        "每通訊端核心數": "core(s) per socket",
        "NUMA 節點": "numa node(s)",
    },
}


def _lscpu_norm(label: str) -> str:
    return " ".join(unicodedata.normalize("NFC", label).split()).casefold()


_LSCPU_INDEX: dict[str, str] = {
    _lscpu_norm(label): key for labels in _LSCPU_LABELS.values() for label, key in labels.items()
}


def _lscpu_key(label: str) -> str:
    """The key of one CPU-section label: the English lscpu label in lower case for a known
    translation, else the label itself in lower case (English lscpu, Windows' wmic names)."""
    norm = _lscpu_norm(label)
    return _LSCPU_INDEX.get(norm, norm)


def _join_flags(first_raw: str, continuation: list[str]) -> str:
    """Join lscpu's Flags value with its wrapped continuation lines. lscpu on a terminal
    wraps at the column limit, even inside a word (corpus-style "... nx rd" / "tscp lm")."""
    col = first_raw.find(":") + 1
    col += len(first_raw[col:]) - len(first_raw[col:].lstrip(" "))
    pieces = [first_raw[col:]]
    raws = [first_raw, *continuation]
    width = max(len(r) for r in raws)
    for prev_raw, raw in zip(raws, continuation):
        body = raw[col:] if raw[:col].strip() == "" else raw.lstrip(" ")
        mid_word = (
            len(prev_raw) == width and not pieces[-1].endswith(" ") and not body.startswith(" ")
        )
        pieces.append(body if mid_word else " " + body)
    return "".join(pieces)


def _cpu_list_count(value: Optional[str]) -> Optional[int]:
    """How many CPUs a Linux CPU list names ("0-79", "0-3,8-11", "0,2,4"); None if it is not
    one (too long, malformed)."""
    if not value or len(value) > 2000:
        return None
    total = 0
    for part in value.strip().split(","):
        lo, dash, hi = part.strip().partition("-")
        a, b = _int(lo), (_int(hi) if dash else _int(lo))
        if a is None or b is None or b < a:
            return None
        total += b - a + 1
    return total if 0 < total <= 1_000_000 else None


def _cpu_facts(ctx: _Ctx) -> Value:
    lines = ctx.scan.cpu_lines
    if "cpu_info" not in ctx.fields:
        return _u(NOT_STATED)
    kv: dict[str, str] = {}
    devices: set[str] = set()
    brand: Optional[str] = None
    flags_text: Optional[str] = None
    i = 0
    while i < len(lines):
        raw = lines[i]
        s = raw.strip()
        i += 1
        if not s or set(s) <= {"-"}:
            continue
        sep = ":" if ":" in s else ("=" if "=" in s else None)
        if sep is None:
            if brand is None and not kv:
                brand = s
            continue
        label, _, value = s.partition(sep)
        key = _lscpu_key(label)
        value = value.strip()
        if key == "flags":
            cont = []
            while (
                i < len(lines)
                and lines[i].strip()
                and ":" not in lines[i]
                and (lines[i][:1] == " ")
            ):
                cont.append(lines[i])
                i += 1
            flags_text = _join_flags(raw, cont) if cont else value
            continue
        if key == "deviceid":
            devices.add(value)
        kv.setdefault(key, value)

    if not kv and brand is None:
        if len(lines) == 1 and lines[0].strip().lower() == "none":
            return _u(COULD_NOT_COLLECT)
        return _u(NOT_STATED)

    values: dict[str, Value] = {}
    model = kv.get("model name") or kv.get("name") or brand
    if model and model not in ("-", "None"):
        values["model"] = model
    vendor = kv.get("vendor id") or kv.get("manufacturer")
    if vendor and vendor != "-":
        values["vendor"] = vendor
    elif brand and brand.startswith("Apple"):
        values["vendor"] = "Apple"
    arch = kv.get("architecture")
    if arch:
        values["architecture"] = _WIN_ARCH.get(arch, arch) if arch.isdigit() else arch
    logical = _int(kv.get("cpu(s)"))
    online = _cpu_list_count(kv.get("on-line cpu(s) list"))
    if online is not None:
        values["logical_cores"] = online  # lscpu's CPU(s) counts offline CPUs too
    elif logical is not None:
        values["logical_cores"] = logical
    sockets = _int(kv.get("socket(s)"))
    if sockets is None and devices:
        sockets = len(devices)
    if sockets is not None:
        values["sockets"] = sockets
    per_socket = _int(kv.get("core(s) per socket"))
    if per_socket is not None and _int(kv.get("socket(s)")) is not None:
        values["physical_cores"] = per_socket * _int(kv.get("socket(s)"))
    numa = _int(kv.get("numa node(s)"))
    if numa is not None:
        values["numa_nodes"] = numa
    if flags_text is not None:
        present = set(flags_text.split())
        flags = {k: k in present for k in _FLAG_KEYS}
        flags["neon"] = "asimd" in present or "neon" in present
        values["flags"] = flags
    return _model(CpuFacts, NOT_STATED, **values)


# ---------------------------------------------------------------------------- packages


def _read_packages(ctx: _Ctx) -> None:
    scan = ctx.scan
    ctx.pip_state = _listing_state([rest for _, rest in scan.pip_rows])
    ctx.conda_state = _listing_state(scan.conda_rows)
    ctx.pip = [r for r in (_pip_row(rest) for _, rest in scan.pip_rows) if r is not None]
    ctx.conda = [r for r in (_conda_row(rest) for rest in scan.conda_rows) if r is not None]
    for row in ctx.pip + ctx.conda:
        if row.version and too_many_digits(row.version):
            row.version, row.note = None, IMPLAUSIBLE_VERSION
    running = _python_tuple(ctx.python_version)
    if running is not None:
        tags = [conda_python(r.build) for r in ctx.conda if r.build]
        tags = [t for t in tags if t is not None]
        # conda rows built for another Python describe another environment (corpus case017)
        ctx.conda_other_env = bool(tags) and running not in tags


def _distribution(row: _Row) -> Distribution:
    version: Value = row.version if row.version else _u(row.note or NOT_STATED)
    return _model(
        Distribution,
        NOT_STATED,
        name=row.name,
        version=version,
        source=row.source,
        build=row.build,
        channel=row.channel,
        provides_torch=provides_torch(row.name),
    )


def _packages_facts(ctx: _Ctx) -> Value:
    states = (ctx.pip_state, ctx.conda_state)
    if states == ("absent", "absent"):
        return _u(NOT_STATED)
    values: dict[str, Value] = {}
    values["distributions"] = [_distribution(r) for r in ctx.pip + ctx.conda]

    versions: dict[str, str] = {}
    for row in ctx.pip:
        if row.version:
            versions.setdefault(row.name, row.version)
    if not ctx.conda_other_env:
        for row in ctx.conda:
            if row.version:
                versions.setdefault(row.name, row.version)
                if row.name == "pytorch":
                    versions.setdefault("torch", row.version)
    values["versions"] = versions

    collected = "rows" in states or "empty" in states
    if not collected:
        values["torch_providers"] = _u(COULD_NOT_COLLECT)
    else:
        groups: list[tuple[str, Optional[str]]] = []
        keys: set = set()

        def key(version: str) -> str:
            parsed = _release(version)
            return str(parsed) if parsed is not None else version.strip().lower()

        # Rows name one install each, except the same version listed twice (by pip and by
        # conda's pip view, or conda's `pytorch` seen by pip as `torch`).
        candidates = ctx.pip + ([] if ctx.conda_other_env else ctx.conda)
        for row in candidates:
            if not provides_torch(row.name):
                continue
            if row.version is None:
                if not any(name == row.name for name, _ in groups):
                    groups.append((row.name, None))
            elif key(row.version) not in keys:
                keys.add(key(row.version))
                groups.append((row.name, row.version))
        # The imported torch is an install too, listed or not (corpus case035). Its
        # __version__ may carry a local label its metadata lacks (PyPI 1.8.1 says 1.8.1+cu102).
        running = ctx.torch_version
        versions_known = all(v is not None for _, v in groups)
        if running and versions_known and not any(same_release(running, v) for _, v in groups):
            groups.append(("torch", running))
        values["torch_providers"] = [name for name, _ in groups]
    return _model(PackagesFacts, NOT_STATED, **values)


# ---------------------------------------------------------------------------- system

_LINUX_WORDS = re.compile(
    r"\b(?:linux|ubuntu|debian|centos|red ?hat|rhel|fedora|arch|manjaro|suse|opensuse|sles|"
    r"amazon|rocky|almalinux|alma|oracle|pop!_os|mint|gentoo|alpine|elementary|kali|nixos|"
    r"void|slackware|raspbian|deepin|kylin|uos|anolis|openeuler|tencentos|alibaba|"
    r"clear linux|scientific|endeavouros|garuda|zorin|neon|mx|wsl)\b",
    re.I,
)
_MACHINES = {
    "x86_64",
    "amd64",
    "aarch64",
    "arm64",
    "i386",
    "i686",
    "x86",
    "ppc64le",
    "ppc64",
    "s390x",
    "armv7l",
    "armv6l",
    "riscv64",
    "loongarch64",
}
_MSC = re.compile(r"\[MSC v\.\d{1,9} (\d{1,3}) bit \((\w{1,40})\)\]")


def _python_version(raw: Optional[str]) -> Optional[str]:
    if raw is None or _special(raw) is not None:
        return None
    value = raw.strip()
    if value[:6].lower() == "python":  # hand-edited "Python 3.8.5"
        value = value[6:].strip()
    return _leading_version(value)


def _os_family(f: dict[str, str]) -> Optional[str]:
    plat = f.get("python_platform", "")
    if plat.startswith("Linux-"):
        return "Linux"
    if plat.startswith("Windows-"):
        return "Windows"
    if plat.startswith(("macOS-", "Darwin-")):
        return "Darwin"
    os_line = f.get("os", "")
    low = os_line.lower()
    if "windows" in low:
        return "Windows"
    if low.startswith(("macos", "mac osx", "mac os x", "os x", "darwin")):
        return "Darwin"
    if os_line and _special(os_line) is None and _LINUX_WORDS.search(os_line):
        return "Linux"
    libc = f.get("libc_version", "").lower()
    if libc.startswith(("glibc", "musl")):
        return "Linux"
    return None


def _split_os_line(os_line: str) -> tuple[str, Optional[str], Optional[str]]:
    """(name, machine, windows version) from "Ubuntu 20.04 LTS (x86_64)",
    "macOS 13.4 (arm64)", "Microsoft Windows 11 Pro (10.0.22631 64-bit)"."""
    name = os_line.strip()
    machine = win_version = None
    if name.endswith(")") and " (" in name:
        head, _, last = name[:-1].rpartition(" (")
        if last.lower() in _MACHINES:
            name, machine = head.strip(), last
        elif "windows" in head.lower() and ("bit" in last or re.match(r"\d+\.\d+\.\d+ ", last)):
            # "(10.0.22631 64-bit)", or localised: "(10.0.26100 64 位)" (pytorch#157775)
            name, win_version = head.strip(), last.split()[0]
    return name, machine, win_version


def _platform_parts(plat: str) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """(kernel or OS release, machine, libc) from platform.platform()."""
    if not plat or _special(plat) is not None:
        return None, None, None
    head, _, libc_part = plat.partition("-with-")
    libc = None
    if libc_part.startswith("glibc"):
        libc = "glibc " + libc_part[5:].split("-", 1)[0]
    system, _, rest = head.partition("-")
    if system in ("Linux", "Darwin"):
        release, _, machine = rest.rpartition("-")
        if machine.lower() not in _MACHINES:
            # Darwin/macOS add processor and bits: Darwin-19.6.0-x86_64-i386-64bit
            bits = rest.split("-")
            machines = [b for b in bits if b.lower() in _MACHINES]
            if machines:
                machine = machines[0]
                release = rest[: rest.index(machine) - 1] if rest.index(machine) else ""
            else:
                machine, release = None, rest
        return release or None, machine, libc
    if system == "macOS":
        bits = rest.split("-")
        machine = bits[1] if len(bits) > 1 and bits[1].lower() in _MACHINES else None
        return bits[0] or None, machine, libc
    if system == "Windows":
        bits = rest.split("-")
        return (bits[1] if len(bits) > 1 else None), None, libc
    return None, None, libc


def _system_facts(ctx: _Ctx) -> Value:
    f = ctx.fields
    keys = ("os", "python_version", "python_platform", "libc_version")
    if not any(k in f for k in keys) and ctx.os_family is None:
        return _u(NOT_STATED)
    values: dict[str, Value] = {}
    family = ctx.os_family
    os_line = f.get("os")
    plat = f.get("python_platform", "")
    release, plat_machine, plat_libc = _platform_parts(plat)

    if family:
        values["os"] = family
    elif os_line and _special(os_line) is None:
        values["os"] = _u(f"OS not recognised: {os_line.strip()[:80]!r}")
    elif os_line:
        values["os"] = _u(COULD_NOT_COLLECT if _special(os_line) == "cnc" else _said(os_line))

    os_machine = None
    if os_line is not None:
        if _special(os_line) is not None:
            values["os_name"] = _u(
                COULD_NOT_COLLECT if _special(os_line) == "cnc" else _said(os_line)
            )
        else:
            name, os_machine, win_version = _split_os_line(os_line)
            values["os_name"] = name
            version = None
            if family == "Windows":
                version = win_version or release
            elif family == "Darwin" and plat.startswith("macOS-"):
                # the OS line wins: an x86_64 Python under Rosetta sees the compatibility
                # version 10.16 in its platform string ("macOS 15.3 (x86_64)" vs macOS-10.16)
                numbers = _numeric_tokens(name)
                version = numbers[0] if numbers else release
            if version is None:
                numbers = _numeric_tokens(name)
                version = numbers[0] if numbers else None
            values["os_version"] = (
                version if version else _u("the report states no OS version number")
            )
    elif family == "Windows" and release:
        values["os_version"] = release

    if family == "Linux" and plat.startswith("Linux-") and release:
        values["kernel"] = release
        low = release.lower()
        values["wsl"] = 2 if "wsl2" in low else (1 if low.endswith("-microsoft") else None)
    elif family == "Darwin" and plat.startswith("Darwin-") and release:
        values["kernel"] = release
    if family in ("Windows", "Darwin"):
        values["wsl"] = None

    # libc: platform.libc_ver() read the interpreter binary before Python 3.8
    py = _python_tuple(ctx.python_version) or (
        (_int(ctx.python_version), 0)
        if _int(ctx.python_version) is not None
        else None
    )
    libc_raw = f.get("libc_version")
    libc_line_usable = (
        libc_raw is not None and _special(libc_raw) is None and py is not None and py >= (3, 8)
    )
    if family in ("Windows", "Darwin"):
        values["libc"] = None
    elif libc_line_usable:
        # Python >= 3.8 answers libc_ver() from the running C library (confstr); the platform
        # string's "-with-glibcX" comes from libc_ver(sys.executable) on Python 3.8/3.9, a scan
        # of the interpreter binary that gives the newest glibc symbol it links (a conda Python
        # built for CentOS 7 says glibc2.17 on a glibc 2.30 system), so the Libc line wins.
        lib, _, ver = libc_raw.strip().partition("-")
        values["libc"] = f"{lib} {ver}".strip()
    elif plat_libc and py is not None and (3, 8) <= py < (3, 10):
        values["libc"] = _u(
            f"the report's platform string ({plat_libc}) comes from libc_ver(sys.executable) "
            "under Python 3.8/3.9, which reads the interpreter binary, not the C library"
        )
    elif plat_libc:
        values["libc"] = plat_libc
    elif libc_raw is not None:
        if _special(libc_raw) in ("na", "none"):
            values["libc"] = None if family not in (None, "Linux") else _u(_said(libc_raw))
        elif _special(libc_raw) == "cnc":
            values["libc"] = _u(COULD_NOT_COLLECT)
        elif py is not None and py >= (3, 8):
            lib, _, ver = libc_raw.strip().partition("-")
            values["libc"] = f"{lib} {ver}".strip()
        elif py is not None:
            values["libc"] = _u(
                f"the report's libc ({libc_raw.strip()[:40]}) comes from platform.libc_ver() "
                "under Python < 3.8, which reads the interpreter binary, not the C library"
            )
        else:
            values["libc"] = _u(
                f"the report's libc ({libc_raw.strip()[:40]}) is reliable only under "
                "Python >= 3.8, and the report does not state the Python version"
            )

    raw_py = f.get("python_version")
    if raw_py is not None:
        if ctx.python_version:
            values["python_version"] = ctx.python_version
        else:
            values["python_version"] = _u(_said(raw_py))
        m = re.search(r"\((\d{2})-bit runtime\)", raw_py)
        msc = _MSC.search(raw_py)
        if m:
            values["python_bits"] = int(m.group(1))
        elif msc:
            values["python_bits"] = int(msc.group(1))
        if "[PyPy" in raw_py:
            values["python_implementation"] = "PyPy"
        elif re.search(r"\[(?:GCC|Clang|MSC)\b", raw_py):
            values["python_implementation"] = "CPython"
    else:
        msc = None

    machine = os_machine or plat_machine or (msc.group(2) if msc else None)
    if machine:
        values["machine"] = machine
    if family in ("Linux", "Windows"):
        values["translated"] = None
    elif family == "Darwin" and machine:
        brand = _cpu_brand(ctx)
        if machine.lower() == "arm64":
            values["translated"] = False
        elif brand is not None:
            values["translated"] = brand.startswith(("Apple", "VirtualApple"))

    values["env_manager"] = _env_manager(ctx, raw_py)
    values["cuda_toolkit_version"] = _toolkit(ctx)
    values["cudnn_version"] = _system_cudnn(ctx)
    return _model(SystemFacts, NOT_STATED, **values)


def _cpu_brand(ctx: _Ctx) -> Optional[str]:
    for line in ctx.scan.cpu_lines:
        s = line.strip()
        if s:
            return s if ":" not in s and "=" not in s else None
    return None


def _env_manager(ctx: _Ctx, raw_py: Optional[str]) -> Value:
    if raw_py and re.search(r"conda|Anaconda|Continuum Analytics", raw_py):
        return "conda"
    if not ctx.conda_other_env and any(_is_running(ctx, row) for row in ctx.conda):
        return "conda"  # the imported torch is in the active conda environment
    return _u(NOT_STATED)


def _toolkit(ctx: _Ctx) -> Value:
    raw = ctx.fields.get("cuda_runtime_version")
    if raw is None:
        return _u(NOT_STATED)
    kind = _special(raw)
    if kind == "nocuda":
        return None
    if kind == "cnc":
        return _u(COULD_NOT_COLLECT)
    version = _leading_version(raw)
    return version if version else _u(_said(raw))


def _cudnn_text(ctx: _Ctx) -> str:
    return "\n".join([ctx.fields.get("cudnn_version", ""), *ctx.scan.cudnn_lines])


def _system_cudnn(ctx: _Ctx) -> Value:
    raw = ctx.fields.get("cudnn_version")
    if raw is None:
        return _u(NOT_STATED)
    kind = _special(raw)
    if kind == "cnc":
        return _u(COULD_NOT_COLLECT)
    if kind == "nocuda":
        return _u("report says: No CUDA (collect_env does not list cuDNN then)")
    if kind is not None and kind != "empty":
        return _u(_said(raw))
    found = cudnn_versions(_cudnn_text(ctx))
    return found[0] if found else _u(_said(_cudnn_text(ctx).strip() or raw))
