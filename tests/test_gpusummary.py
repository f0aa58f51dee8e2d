"""One GPU summary for every source of facts (issue 10): the NVML probe, the collect_env
importer and the synthetic machine of ``recommend --gpu`` derive a device's architecture and
the machine's min/max compute capability and architectures with :mod:`torchdoctor.gpusummary`,
so a rule reads the same summary whatever the facts came from."""

from __future__ import annotations

import pytest

from torchdoctor import tables
from torchdoctor.facts import GpuDevice, Unavailable, unavailable
from torchdoctor.gpusummary import SUMMARY_FIELDS, architecture, gpu_summary
from torchdoctor.importers.collect_env import parse_collect_env
from torchdoctor.importers.synthetic import facts_for_gpu

A100_REPORT = (
    "PyTorch version: 2.3.1+cu121\nCUDA used to build PyTorch: 12.1\n"
    "Is CUDA available: True\nGPU models and configuration:\nGPU 0: NVIDIA A100-SXM4-80GB\n"
    "GPU 1: NVIDIA A100-SXM4-80GB\nNvidia driver version: 550.54.15\n"
)


def _device(index: int, cc: object) -> GpuDevice:
    return GpuDevice(index=index, name=f"GPU {index}", compute_capability=cc,
                     architecture=architecture(cc), vendor="nvidia", gfx_target=None)


def test_summary_of_mixed_devices_is_the_range_and_the_distinct_architectures_in_order():
    devices = [_device(0, 8.6), _device(1, 7.5), _device(2, 8.0)]
    assert gpu_summary(devices) == {
        "min_compute_capability": 7.5,
        "max_compute_capability": 8.6,
        "architectures": ["Ampere", "Turing"],
    }
    assert set(gpu_summary(devices)) == set(SUMMARY_FIELDS)


def test_no_devices_is_a_known_absence():
    assert gpu_summary([]) == {"min_compute_capability": None, "max_compute_capability": None,
                               "architectures": []}


def test_one_unknown_capability_makes_the_range_unknown_not_a_guess():
    lost = unavailable("NVML could not read the compute capability: GPU is lost")
    summary = gpu_summary([_device(0, 9.0), _device(1, lost)])
    assert summary["min_compute_capability"] == lost
    assert summary["max_compute_capability"] == lost
    assert summary["architectures"] == lost  # the unknown device's architecture is unknown too


def test_a_capability_the_table_does_not_know_has_an_unknown_architecture_in_every_source(
    monkeypatch: pytest.MonkeyPatch,
):
    """Before issue 10 the synthetic machine set architecture None, which GpuDevice refuses:
    `recommend --gpu` for a model whose capability gpu_archs.yaml lacks ended in a pydantic
    traceback, where the probe and the importer say the architecture is unknown."""
    monkeypatch.setattr(tables, "arch_for_cc", lambda cc: None)
    reason = "no architecture known for compute capability 8.0"
    synthetic = facts_for_gpu("2x A100", "2.5.0").gpu
    report = parse_collect_env(A100_REPORT).gpu
    for gpu in (synthetic, report):
        assert gpu.min_compute_capability == gpu.max_compute_capability == 8.0
        assert isinstance(gpu.architectures, Unavailable)
        assert gpu.architectures.unavailable == reason
        assert [d.architecture.unavailable for d in gpu.devices] == [reason, reason]
