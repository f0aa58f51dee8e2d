"""Facts for a machine you are not on (`recommend --gpu NAME`), built from the GPU tables."""

from __future__ import annotations

import difflib
from typing import Optional

from torchdoctor import tables
from torchdoctor.errors import UserError
from torchdoctor.facts import Facts, GpuDevice, GpuFacts, TorchFacts, Unavailable

NOT_HERE = "planning for another machine (--gpu): not known"


def facts_for_gpu(name: str, torch_version: Optional[str] = None) -> Facts:
    """Facts of a machine with this GPU. Without --torch-version the plan is written for the
    newest published torch release, so every emitted setting exists in a named version."""
    off = Unavailable(unavailable=NOT_HERE)
    torch_version = torch_version or tables.latest_release()
    torch = TorchFacts(version=torch_version, import_status="ok") if torch_version else off
    if name.strip().lower() in ("cpu", "none"):
        gpu = GpuFacts(source="synthetic", count=0, devices=[], links=[], name=None, vendors=[],
                       min_compute_capability=None, max_compute_capability=None, architectures=[])
        return Facts(origin="synthetic", torch=torch, gpu=gpu, cpu=off, memory=off, env=off,
                     packages=off, system=off)
    cc = tables.cc_for_gpu_name(name)
    if cc is None:
        names = sorted({m for g in tables.load("gpu_models")["groups"] for m in g.get("match", [])})
        close = difflib.get_close_matches(name.lower(), names, n=4, cutoff=0.6)
        hint = f"; close matches: {', '.join(close)}" if close else ""
        raise UserError(f"--gpu {name!r}: unknown GPU name{hint}")
    arch = tables.arch_for_cc(cc)
    device = GpuDevice(index=0, name=name, compute_capability=cc, architecture=arch,
                       vendor="nvidia", gfx_target=None)
    gpu = GpuFacts(source="synthetic", count=1, devices=[device], links=[], name=name,
                   vendors=["nvidia"],
                   min_compute_capability=cc, max_compute_capability=cc,
                   architectures=[arch] if arch else [], driver_version=off,
                   cuda_driver_version=off)
    return Facts(origin="synthetic", torch=torch, gpu=gpu, cpu=off, memory=off, env=off,
                 packages=off, system=off)
