"""GPU architectures and what their tensor cores do (gpu_archs.yaml), GPU names
(gpu_models.yaml) and NVIDIA drivers (driver_min.yaml)."""

from __future__ import annotations

import re
from typing import Any, Optional

from torchdoctor.tables import _load
from torchdoctor.tables._parse import CC, _as_float, _cc, _cuda, _majmin, _tokens, _version

def _arch_entry(cc: Any) -> Optional[tuple[dict, CC]]:
    wanted = _cc(cc)
    if wanted is None:
        return None
    for entry in _load.load("gpu_archs")["architectures"]:
        if any(_cc(c) == wanted for c in entry["compute_capabilities"]):
            return entry, wanted
    return None



def arch_for_cc(cc: Any) -> Optional[str]:
    """Architecture name for a compute capability (8.6 -> "Ampere"), None if unknown."""
    found = _arch_entry(cc)
    return found[0]["name"] if found else None


def arch_info(cc: Any) -> Optional[dict]:
    """Everything gpu_archs.yaml says about one compute capability, per-CC details merged in."""
    found = _arch_entry(cc)
    if found is None:
        return None
    entry, wanted = found
    info = {k: v for k, v in entry.items() if k not in ("compute_capabilities", "capabilities")}
    info["cc"] = _as_float(wanted)
    info["tensor_cores"] = dict(entry.get("tensor_cores") or {})
    for cap in entry.get("capabilities") or []:
        if _cc(cap.get("cc")) == wanted:
            for key, value in cap.items():
                if key == "tensor_cores":
                    info["tensor_cores"].update(value)
                elif key != "cc":
                    info[key] = value
    return info


def integrated_gpu(cc: Any) -> bool:
    """Whether gpu_archs.yaml marks this CC as an integrated (Jetson) GPU (segment: embedded).
    Their driver ships with JetPack/L4T and is numbered apart from the desktop and datacenter
    drivers (Thor: 580.00 with CUDA 13.0), so driver_min.yaml's minimums do not apply."""
    info = arch_info(cc)
    return bool(info) and info.get("segment") == "embedded"

MAX_CAPABILITY_DEVICES = 64
"""Compute capabilities one capability question reads (a machine has at most a few dozen GPUs)."""


def _tensor_cores(cc: Any, fmt: str) -> Optional[bool]:
    """Whether every GPU in ``cc`` (one compute capability, or a list of them) has tensor-core
    support for ``fmt`` (gpu_archs.yaml `tensor_cores`, per-CC overrides applied); None when a
    capability cannot be read or is not in the table, or the list is empty."""
    values = list(cc[:MAX_CAPABILITY_DEVICES]) if isinstance(cc, (list, tuple)) else [cc]
    if not values:
        return None
    answers = []
    for value in values:
        info = arch_info(value)
        flag = (info or {}).get("tensor_cores", {}).get(fmt)
        if not isinstance(flag, bool):
            return None
        answers.append(flag)
    return all(answers)


def has_tf32(cc: Any) -> Optional[bool]:
    """Whether the GPU (every GPU of a list) of this compute capability has TF32 tensor cores,
    so ``allow_tf32`` / ``set_float32_matmul_precision("high")`` changes float32 matmuls
    (Ampere and later: 8.6 -> True, 7.5 -> False); None when the capability is not in the table."""
    return _tensor_cores(cc, "tf32")


def has_bf16_tensor_cores(cc: Any) -> Optional[bool]:
    """Whether the GPU (every GPU of a list) runs bfloat16 on tensor cores (PyTorch's
    SM80OrLater gate: 8.0 -> True, 7.0 -> False, where bf16 is emulated); None when unknown."""
    return _tensor_cores(cc, "bf16")


def has_fp16_tensor_cores(cc: Any) -> Optional[bool]:
    """Whether the GPU (every GPU of a list) has float16 tensor cores (Volta and later:
    7.0 -> True, 6.1 -> False); None when unknown."""
    return _tensor_cores(cc, "fp16")


def has_fp8_tensor_cores(cc: Any) -> Optional[bool]:
    """Whether the GPU (every GPU of a list) has float8 tensor cores (``torch._scaled_mm``:
    SM89 or SM90 and later: 8.9 -> True, 8.6 -> False); None when unknown."""
    return _tensor_cores(cc, "fp8")


@_load.derived("gpu_models")
def _model_patterns(data: Any) -> tuple:
    return tuple(
        (_tokens(text), group["cc"])
        for group in data["groups"]
        for text in group["match"]
    )


MAX_NAME = 256
"""Longest GPU name looked up (matching is words x patterns; real names are under 80)."""


def cc_for_gpu_name(name: Any) -> Optional[float]:
    """Compute capability for a GPU name ("NVIDIA GeForce RTX 4090 Laptop GPU" -> 8.9); None if unknown."""
    if not isinstance(name, str) or len(name) > MAX_NAME:
        return None
    words = _tokens(name)
    matches = [
        (start, start + len(tokens), cc)
        for tokens, cc in _model_patterns()
        for start in range(len(words) - len(tokens) + 1)
        if words[start : start + len(tokens)] == tokens
    ]
    if not matches:
        return None
    best = max(matches, key=lambda m: m[1] - m[0])
    for start, end, cc in matches:
        inside = best[0] <= start and end <= best[1] and (end - start) < (best[1] - best[0])
        if not inside and cc != best[2]:
            return None  # another GPU in the same string, or two names of equal weight disagree
    return float(best[2]) if best[2] is not None else None


# ----------------------------------------------------------------------------------------
# drivers
# ----------------------------------------------------------------------------------------


def _os_key(os: Any) -> Optional[str]:
    text = str(os or "").strip().lower()
    if text.startswith("linux"):
        return "linux"
    if text.startswith("win"):
        return "windows"
    return None


def driver_min(cuda_version: Any, os: str = "Linux") -> Optional[str]:
    """Minimum driver NVIDIA lists for a toolkit (GA row; the update row when a full version matches)."""
    wanted, key = _cuda(cuda_version), _os_key(os)
    if wanted is None or key is None:
        return None
    full = (
        _version(cuda_version)
        if re.fullmatch(r"\d+\.\d+\.\d+", str(cuda_version).strip())
        else None
    )
    for toolkit in _load.load("driver_min")["toolkits"]:
        if _cuda(toolkit["cuda"]) != wanted:
            continue
        releases = toolkit["releases"]
        exact = [
            r for r in releases if full is not None and _version(r.get("toolkit_version")) == full
        ]
        row = (exact or [r for r in releases if r.get("release") == "GA"] or releases)[0]
        return row.get(key)
    return None


def driver_compat_floor(cuda_version: Any, os: str = "Linux") -> Optional[str]:
    """Lowest driver that runs a build of this CUDA major through minor-version compatibility."""
    wanted, key = _majmin(_cuda(cuda_version)), _os_key(os)
    if wanted is None or key is None:
        return None
    for floor in _load.load("driver_min")["minor_version_compatibility"]["floors"]:
        if floor["major"] == wanted[0]:
            return floor.get(key)
    return None
