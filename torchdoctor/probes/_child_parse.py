"""Parsing the text torch prints: import failures and version strings.

A sibling of ``_torch_child.py`` with the same constraints: standard library only, Python >=
3.8, never imports torchdoctor (it runs under the *target* interpreter). The torch child
loads it by path; in-process code imports it as ``torchdoctor.probes._child_parse``.
"""

import re
import traceback


def _dotted_version(parts):
    return ".".join(str(p) for p in parts)


def _cudnn_int_version(v):
    """cuDNN version integer -> "9.10.2" (cuDNN >= 9: M*10000+m*100+p; before: M*1000+m*100+p)."""
    v = int(v)
    if v >= 90000:
        return f"{v // 10000}.{(v % 10000) // 100}.{v % 100}"
    return f"{v // 1000}.{(v % 1000) // 100}.{v % 100}"


def _nccl_int_version(v):
    """NCCL_VERSION_CODE -> "2.27.3" (>= 2.9: M*10000+m*100+p; before: M*1000+m*100+p)."""
    v = int(v)
    if v >= 10000:
        return f"{v // 10000}.{(v % 10000) // 100}.{v % 100}"
    return f"{v // 1000}.{(v % 1000) // 100}.{v % 100}"


def _config_version(prefix):
    """The last word of the first line of torch.__config__.show() naming ``prefix``, the way
    collect_env reads "HIP Runtime" and "MIOpen" on ROCm builds."""
    def parse(show):
        for line in show.splitlines():
            if prefix in line and line.split():
                return line.rsplit(None, 1)[-1]
        return None
    return parse


def _mkl_version(show):
    m = re.search(r"Math Kernel Library Version ([\d.]+\d)", show)
    return m.group(1) if m else None


def _mkldnn_version(show):
    m = re.search(r"(?:MKL-DNN|oneDNN|Deep Neural Network Library)[^\n]*?\bv(\d+(?:\.\d+)+)", show)
    return m.group(1) if m else None


def _openmp_version(info):
    m = re.search(r"^\s*OpenMP (\d+)(?: \(a\.k\.a\. OpenMP ([\d.]+)\))?", info, re.MULTILINE)
    if not m:
        return None
    return m.group(2) or m.group(1)


def _missing_library(message):
    m = re.search(r"([\w.+-]+\.so(?:\.\d+)*)\s*:\s*cannot open shared object file", message)
    if m:
        return m.group(1)
    m = re.search(r"Library not loaded:\s*(\S+)", message)
    if m:
        return m.group(1).rsplit("/", 1)[-1]
    m = re.search(r"([\w.+-]+\.dll)\b", message, re.IGNORECASE)
    if m:
        return m.group(1)
    if re.search(r"undefined symbol|Symbol not found|not found \(required by", message):
        return None  # the library named there is present; a symbol in it is not
    m = re.search(r"lib[\w.+-]+\.so(?:\.\d+)*", message)
    return m.group(0) if m else None


def _missing_symbol(message):
    for pattern in (
        r"undefined symbol:\s*(\S+)",
        r"Symbol not found:\s*(\S+)",
        r"version [`'](\S+?)' not found",
    ):
        m = re.search(pattern, message)
        if m:
            return m.group(1)
    return None


def import_failure(exc):
    """The status fields for an exception ``import torch`` raised."""
    line = traceback.format_exception_only(type(exc), exc)[-1].strip()
    message = str(exc)
    not_installed = isinstance(exc, ImportError) and (
        getattr(exc, "name", None) == "torch"
        or (getattr(exc, "name", None) is None and message.strip() == "No module named 'torch'")
    )
    if not_installed and isinstance(exc, ModuleNotFoundError):
        return {
            "import_status": "not-installed",
            "import_error": line,
            "missing_library": None,
            "missing_symbol": None,
            "signal": None,
        }
    return {
        "import_status": "import-error",
        "import_error": line,
        "missing_library": _missing_library(message),
        "missing_symbol": _missing_symbol(message),
        "signal": None,
    }


def failure_from_text(kind, message):
    """Status fields from an exception's printed form (``ImportError: libcudnn.so.9: ...``),
    as found in a traceback pasted next to a report."""
    if kind == "ModuleNotFoundError" and message.strip() in ("No module named 'torch'", 'No module named "torch"'):
        return {"import_status": "not-installed", "import_error": kind + ": " + message,
                "missing_library": None, "missing_symbol": None, "signal": None}
    return {
        "import_status": "import-error",
        "import_error": kind + ": " + message,
        "missing_library": _missing_library(message),
        "missing_symbol": _missing_symbol(message),
        "signal": None,
    }


def namespace_failure(torch):
    """Status fields when ``torch`` imported as an empty namespace package (leftover dir)."""
    if getattr(torch, "__file__", None) is not None:
        return None
    where = ", ".join(list(getattr(torch, "__path__", []) or []))
    return {
        "import_status": "import-error",
        "import_error": f"torch imported as an empty namespace package from {where or '?'} "
        "(a directory left behind by an incomplete install or uninstall)",
        "missing_library": None,
        "missing_symbol": None,
        "signal": None,
    }
