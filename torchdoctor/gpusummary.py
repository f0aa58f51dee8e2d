"""The GPU summary every source of facts derives the same way: a device's architecture from its
compute capability (``rules/data/gpu_archs.yaml``), and a machine's lowest and highest compute
capability and its distinct architectures from its NVIDIA devices.

Three sources build :class:`~torchdoctor.facts.GpuFacts`: the NVML probe (``probes/gpu.py``),
the collect_env importer (``importers/collect_env/gpu.py``) and the synthetic machine of
``recommend --gpu`` (``importers/synthetic.py``). Each calls these two functions, so a rule
reads the same summary whatever the facts came from. This module imports ``facts`` and
``tables`` only: probes and importers may both use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Union

from torchdoctor import tables
from torchdoctor.facts import GpuDevice, Unavailable, unavailable

Value = Union[Any, Unavailable]

SUMMARY_FIELDS = ("min_compute_capability", "max_compute_capability", "architectures")
"""The :class:`~torchdoctor.facts.GpuFacts` fields :func:`gpu_summary` returns."""


def architecture(cc: Value) -> Value:
    """The architecture name of a compute capability ("Ampere" for 8.0). An unknown capability
    stays unknown with its reason; one the table does not know is Unavailable, never ``None``
    (``None`` would say the GPU has no architecture)."""
    if isinstance(cc, Unavailable):
        return cc
    arch = tables.arch_for_cc(cc)
    if arch is None:
        return unavailable(f"no architecture known for compute capability {cc}")
    return arch


def gpu_summary(devices: Sequence[GpuDevice]) -> dict[str, Value]:
    """``min_compute_capability``, ``max_compute_capability`` and ``architectures`` (distinct,
    in device order) of these NVIDIA devices, as keyword arguments of ``GpuFacts``. No devices:
    known absent (``None``, ``None``, ``[]``). A device whose capability (or architecture) is
    unknown makes the capabilities (or the architectures) unknown, for the first such reason:
    a minimum over the devices that could be read would be a guess."""
    if not devices:
        return {"min_compute_capability": None, "max_compute_capability": None, "architectures": []}
    ccs = [d.compute_capability for d in devices]
    missing_cc = next((c for c in ccs if isinstance(c, Unavailable)), None)
    archs = [d.architecture for d in devices]
    missing_arch = next((a for a in archs if isinstance(a, Unavailable)), None)
    # Unavailable is never truth-tested (it raises): compare with None explicitly.
    return {
        "min_compute_capability": min(ccs) if missing_cc is None else missing_cc,
        "max_compute_capability": max(ccs) if missing_cc is None else missing_cc,
        "architectures": (list(dict.fromkeys(a for a in archs if isinstance(a, str)))
                          if missing_arch is None else missing_arch),
    }
