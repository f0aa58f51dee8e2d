"""``gpu`` facts of a collect_env report: the GPU line (nvidia-smi -L, or torch's current
device on ROCm and macOS), the Intel GPU lists of XPU builds, and the drivers. Which words of a
GPU name tell its vendor is data (``rules/data/gpu_name_vendors.yaml``), read the first time a
report names a GPU."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Optional, Union

from torchdoctor import tables
from torchdoctor.facts import GpuDevice, GpuFacts, Unavailable
from torchdoctor.gpusummary import SUMMARY_FIELDS, architecture, gpu_summary
from torchdoctor.importers.collect_env.common import (
    COULD_NOT_COLLECT,
    MAX_GPUS,
    MAX_NAME_CHARS,
    NOT_STATED,
    Value,
    _model,
    _said,
    _special,
    _u,
)
from torchdoctor.importers.collect_env.context import _Ctx
from torchdoctor.importers.collect_env.pytorch import _hip_build
from torchdoctor.importers.collect_env.scan import _GPU_LINE, driver_cuda_version

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
VENDOR_FILE = "gpu_name_vendors"
"""rules/data/gpu_name_vendors.yaml: words of a GPU name that tell its vendor."""
_VENDOR_WORD = re.compile(r"[a-z0-9 ]{1,40}(?:\[[0-9a-z-]{1,20}\]\+)?")
"""What one entry of ``words`` may be: letters, digits and spaces, optionally ending in one
repeated character class ("gfx[0-9a-f]+"), so the pattern built from them stays linear."""


@functools.lru_cache(maxsize=4)
def vendor_patterns(directory: Optional[str] = None) -> tuple[re.Pattern, re.Pattern]:
    """(AMD names, names that are not NVIDIA's), each a case-insensitive whole-word pattern
    built from ``rules/data/gpu_name_vendors.yaml``."""
    data = tables.load(VENDOR_FILE, directory)
    where = f"{directory or 'rules/data'}/{VENDOR_FILE}.yaml"
    out = []
    for group in ("amd", "not_nvidia"):
        entry = data.get(group) if isinstance(data, dict) else None
        if not isinstance(entry, dict) or not isinstance(entry.get("source"), str):
            raise tables.DataFileError(f"{where}: `{group}` needs `words` and a `source`")
        words = entry.get("words")
        if not isinstance(words, list) or not words:
            raise tables.DataFileError(f"{where}: {group}.words must be a non-empty list")
        for word in words:
            if not isinstance(word, str) or not _VENDOR_WORD.fullmatch(word):
                raise tables.DataFileError(f"{where}: {group}.words: {word!r} is not a word")
        out.append(re.compile(r"\b(?:" + "|".join(words) + r")\b", re.I))
    return out[0], out[1]


def _amd_name(name: str) -> bool:
    return bool(vendor_patterns()[0].search(name))


def _not_nvidia_name(name: str) -> bool:
    """A GPU name with a word that is never in an NVIDIA GPU's name (Apple, Intel)."""
    return bool(vendor_patterns()[1].search(name))
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
        dev.update(compute_capability=cc, architecture=architecture(cc), gfx_target=None)
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
        if any(_not_nvidia_name(e.name) and not _amd_name(e.name) for e in listed):
            listed = _u(
                "the report's GPU line names a non-NVIDIA GPU as torch sees it; "
                "NVIDIA GPUs are not listed"
            )
        else:
            rocm = isinstance(_hip_build(ctx), str)
            for e in listed:
                if rocm or _amd_name(e.name):
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
        values.update(gpu_summary(nvidia))
    elif devices:
        no_cc = _not_cuda(vendors)
        for k in SUMMARY_FIELDS:
            values[k] = no_cc if not isinstance(listed, Unavailable) else listed
    elif not isinstance(listed, Unavailable):
        values.update(gpu_summary([]))
    return _model(GpuFacts, NOT_STATED, **values)
