"""The line scanner: the text of a pasted collect_env report -> its raw fields, GPU, cuDNN, CPU
and package lines (``_Scan``), and torch's messages pasted around it. Every line is cleaned of
Markdown and terminal debris and cut at ``MAX_LINE_CHARS``; every pattern is anchored."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional

from torchdoctor.importers.collect_env.common import (
    MAX_LINE_CHARS,
    MAX_LINES,
    MAX_ROWS,
    MAX_SECTION_LINES,
    _ends_like_library,
    _looks_like_path,
    _special,
)

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
# torch's messages pasted with the report
# --------------------------------------------------------------------------------------

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
