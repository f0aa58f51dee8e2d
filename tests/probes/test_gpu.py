"""The gpu probe (NVML) replayed against real ``nvidia-smi -q -x`` reports.

There is no GPU here: ``fakenvml.FakeNvml`` answers the NVML calls from the recorded reports in
tests/data/machines/nvidia-smi-q-xml (sources in tests/data/machines/SOURCES.md). Expected
values below are read off those XML files by hand, or (for the sweep over every file) with a
few lines of ElementTree that share nothing with the fake.
"""

from __future__ import annotations

import ctypes.util
import re
import threading
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Optional

import pytest

from torchdoctor.facts import GpuFacts, Unavailable
from torchdoctor.probes import ProbeContext, ProbeUnavailable, _sys, gpu

from . import fakenvml
from .fakenvml import FakeNvml

XML_DIR = fakenvml.XML_DIR
ALL_XML = sorted(p.name for p in XML_DIR.glob("*.xml"))


def facts_for(
    name: str, monkeypatch: pytest.MonkeyPatch, **options: Any
) -> tuple[GpuFacts, FakeNvml]:
    fake = FakeNvml.from_report(name, **options)
    monkeypatch.setattr(
        _sys, "import_optional", lambda module: fake if module == "pynvml" else None
    )
    facts = gpu.probe(ProbeContext())
    return facts, fake


def device_dict(facts: GpuFacts, index: int = 0) -> dict[str, Any]:
    assert isinstance(facts.devices, list)
    return facts.devices[index].model_dump()


def is_unavailable(value: Any, *words: str) -> bool:
    if not isinstance(value, Unavailable):
        return False
    return all(w in value.reason for w in words)


# --------------------------------------------------------------------------------------
# named machines: every fact checked against the report
# --------------------------------------------------------------------------------------

# memory_used_mib: NVML's (v1) nvmlDeviceGetMemoryInfo counts the driver-reserved memory as
# used (used = total - free), which nvidia-smi >= 510 lists apart as "Reserved".
EXPECTED: dict[str, dict[str, Any]] = {
    "a100-sxm4-40gb-mig.xml": {
        "driver_version": "510.47.03",
        "cuda_driver_version": "11.6",
        "device": {
            "name": "NVIDIA A100-SXM4-40GB",
            "compute_capability": 8.0,
            "architecture": "Ampere",
            "uuid": "GPU-27b94a00-ed54-5c24-b1fd-1054085de32a",
            "serial": "1324321002473",
            "pci_bus_id": "00000000:00:04.0",
            "memory_total_mib": 40960,
            "memory_used_mib": 40960 - 40315,
            "pcie_gen_current": 4,
            "pcie_gen_max": 4,
            "pcie_width_current": 16,
            "pcie_width_max": 16,
            "persistence_mode": False,
            "compute_mode": "Default",
            "mig_mode": True,
            "ecc_mode": True,
            "ecc_errors_uncorrected": None,  # N/A at GPU level while MIG is on
            "ecc_errors_corrected": None,
            "retired_pages_pending": None,  # pending_retirement N/A, remapped_rows N/A
            "throttle_reasons": [],
            "power_limit_w": 400.0,
            "power_default_limit_w": 400.0,
            "temperature_c": 36,
            "virtualization_mode": "Pass-Through",
        },
    },
    "rtx-4090.xml": {
        "driver_version": "535.86.05",
        "cuda_driver_version": "12.2",
        "device": {
            "name": "NVIDIA GeForce RTX 4090",
            "compute_capability": 8.9,
            "architecture": "Ada",
            "uuid": "GPU-71d1acc2-662d-2166-bf9f-65272d2fc437",
            "serial": None,
            "pci_bus_id": "00000000:84:00.0",
            "memory_total_mib": 24564,
            "memory_used_mib": 24564 - 24214,
            "pcie_gen_current": 1,
            "pcie_gen_max": 3,
            "pcie_width_current": 16,
            "pcie_width_max": 16,
            "persistence_mode": True,
            "compute_mode": "Default",
            "mig_mode": None,
            "ecc_mode": False,
            "ecc_errors_uncorrected": None,
            "ecc_errors_corrected": None,
            "retired_pages_pending": False,  # remapped_row_pending No
            "throttle_reasons": [],  # only gpu_idle is active
            "power_limit_w": 450.0,
            "power_default_limit_w": 450.0,
            "temperature_c": 40,
            "virtualization_mode": "None",
        },
    },
    "tesla-p100-pcie-16gb.xml": {
        "driver_version": "510.47.03",
        "cuda_driver_version": "11.6",
        "device": {
            "name": "Tesla P100-PCIE-16GB",
            "compute_capability": 6.0,
            "architecture": "Pascal",
            "uuid": "GPU-d3da8716-eaab-75db-efc1-60e88e1cd55e",
            "serial": "0324217145110",
            "pci_bus_id": "00000000:00:04.0",
            "memory_total_mib": 16384,
            "memory_used_mib": 16384 - 16280,
            "pcie_gen_current": 3,
            "pcie_gen_max": 3,
            "pcie_width_current": 16,
            "pcie_width_max": 16,
            "persistence_mode": False,
            "compute_mode": "Default",
            "mig_mode": None,
            "ecc_mode": True,
            "ecc_errors_uncorrected": 0,
            "ecc_errors_corrected": 0,
            "retired_pages_pending": False,  # pending_retirement No
            "throttle_reasons": [],
            "power_limit_w": 250.0,
            "power_default_limit_w": 250.0,
            "temperature_c": 38,
            "virtualization_mode": "Pass-Through",
        },
    },
    "gt-1030.xml": {
        "driver_version": "470.74",
        "cuda_driver_version": "11.4",
        "device": {
            "name": "NVIDIA GeForce GT 1030",
            "compute_capability": 6.1,
            "architecture": "Pascal",
            "uuid": "GPU-857c6374-f681-cf3a-f99f-9063a87b8ac0",
            "serial": None,
            "pci_bus_id": "00000000:2D:00.0",
            "memory_total_mib": 1998,
            "memory_used_mib": 1998 - 1123,
            "pcie_gen_current": 3,
            "pcie_gen_max": 3,
            "pcie_width_current": 4,
            "pcie_width_max": 4,
            "persistence_mode": False,
            "compute_mode": "Default",
            "mig_mode": None,
            "ecc_mode": None,
            "ecc_errors_uncorrected": None,
            "ecc_errors_corrected": None,
            "retired_pages_pending": None,
            "throttle_reasons": [],
            "power_limit_w": 30.0,
            "power_default_limit_w": 30.0,
            "temperature_c": 36,
            "virtualization_mode": "None",
        },
    },
    "rtx-pro-6000-blackwell-maxq.xml": {
        "driver_version": "590.44.01",
        "cuda_driver_version": "13.1",
        "device": {
            "name": "NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition",
            "compute_capability": 12.0,
            "architecture": "Blackwell",
            "uuid": "GPU-12345678-aaaa-bbbb-cccc-0123456789ab",
            "serial": "0123456789012",
            "pci_bus_id": "00000000:61:00.0",
            "memory_total_mib": 97887,
            "memory_used_mib": 97887 - 31531,
            "pcie_gen_current": 1,
            "pcie_gen_max": 4,
            "pcie_width_current": 16,
            "pcie_width_max": 16,
            "persistence_mode": True,
            "compute_mode": "Default",
            "mig_mode": None,
            "ecc_mode": False,
            "ecc_errors_uncorrected": None,
            "ecc_errors_corrected": None,
            "retired_pages_pending": False,
            "throttle_reasons": [],
            "power_limit_w": 300.0,
            "power_default_limit_w": 300.0,
            "temperature_c": 24,
            "virtualization_mode": "None",
        },
    },
    "tesla-t4.xml": {
        "driver_version": "515.105.01",
        "cuda_driver_version": "11.7",
        "device": {
            "name": "Tesla T4",
            "compute_capability": 7.5,
            "architecture": "Turing",
            "uuid": "GPU-d37e67a5-91dd-3774-a5cb-99096249601a",
            "serial": "0000000000000",
            "pci_bus_id": "00000000:00:1E.0",
            "memory_total_mib": 15360,
            "memory_used_mib": 15360 - 13939,
            "pcie_gen_current": 3,
            "pcie_gen_max": 3,
            "pcie_width_current": 8,
            "pcie_width_max": 16,
            "persistence_mode": False,
            "compute_mode": "Default",
            "mig_mode": None,
            "ecc_mode": True,
            "ecc_errors_uncorrected": 0,
            "ecc_errors_corrected": 0,
            "retired_pages_pending": False,
            "throttle_reasons": [],
            "power_limit_w": 70.0,
            "power_default_limit_w": 70.0,
            "temperature_c": 40,
            "virtualization_mode": "Pass-Through",
        },
    },
    "rtx-3080-windows.xml": {
        "driver_version": "536.40",
        "cuda_driver_version": "12.2",
        "device": {
            "name": "NVIDIA GeForce RTX 3080",
            "compute_capability": 8.6,
            "architecture": "Ampere",
            "uuid": "GPU-19d6d965-2acc-f646-00f8-4c76979aabb4",
            "serial": None,
            "pci_bus_id": "00000000:04:00.0",
            "memory_total_mib": 10240,
            "memory_used_mib": 10240 - 8938,
            "pcie_gen_current": 4,
            "pcie_gen_max": 4,
            "pcie_width_current": 16,
            "pcie_width_max": 16,
            "persistence_mode": None,  # Windows: no persistence mode
            "compute_mode": "Default",
            "mig_mode": None,
            "ecc_mode": None,
            "ecc_errors_uncorrected": None,
            "ecc_errors_corrected": None,
            "retired_pages_pending": None,
            "throttle_reasons": [],
            "power_limit_w": 336.0,  # raised above the 320 W default
            "power_default_limit_w": 320.0,
            "temperature_c": 31,
            "virtualization_mode": "Pass-Through",
        },
    },
    "grid-p4-1q-vgpu-windows.xml": {
        "driver_version": "513.46",
        "cuda_driver_version": "11.6",
        "device": {
            "name": "GRID P4-1Q",
            "compute_capability": 6.1,
            "architecture": "Pascal",
            "uuid": "GPU-1b1ea7c7-1c4b-ed49-1c72-26c65f2dd207",
            "serial": None,
            "pci_bus_id": "00000000:00:0B.0",
            "memory_total_mib": 1024,
            "memory_used_mib": 1024 - 106,
            "pcie_gen_current": None,  # a vGPU sees no PCIe link
            "pcie_gen_max": None,
            "pcie_width_current": None,
            "pcie_width_max": None,
            "persistence_mode": None,
            "compute_mode": "Default",
            "mig_mode": None,
            "ecc_mode": None,
            "ecc_errors_uncorrected": None,
            "ecc_errors_corrected": None,
            "retired_pages_pending": None,
            # every throttle reason N/A: unknown, not "none active"
            "throttle_reasons": {
                "unavailable": "NVML does not support reading the clock "
                "throttle reasons on this GPU"
            },
            "power_limit_w": None,
            "power_default_limit_w": None,
            "temperature_c": 0,
            "virtualization_mode": "VGPU",
        },
    },
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_named_machine_facts_match_the_report(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    facts, fake = facts_for(name, monkeypatch)
    expected = EXPECTED[name]
    assert facts.source == "nvml"
    assert facts.driver_version == expected["driver_version"]
    assert facts.cuda_driver_version == expected["cuda_driver_version"]
    assert facts.count == 1
    # NVML reads NVIDIA GPUs only: every device says so, with no ROCm gfx target
    assert device_dict(facts) == {"index": 0, "vendor": "nvidia", "gfx_target": None, **expected["device"]}
    assert facts.vendors == ["nvidia"]
    assert facts.links == []
    assert facts.name == expected["device"]["name"]
    cc = expected["device"]["compute_capability"]
    assert facts.min_compute_capability == cc
    assert facts.max_compute_capability == cc
    assert facts.architectures == [expected["device"]["architecture"]]
    assert fake.initialised == 0 and fake.shutdowns == 1


def test_dual_rtx_2080_has_two_devices_and_a_link(monkeypatch: pytest.MonkeyPatch) -> None:
    facts, _ = facts_for("dual-rtx-2080.xml", monkeypatch)
    assert facts.count == 2
    buses = [d.pci_bus_id for d in facts.devices]
    assert buses == ["00000000:01:00.0", "00000000:02:00.0"]
    for device in facts.devices:
        assert device.name == "NVIDIA GeForce RTX 2080"
        assert device.compute_capability == 7.5
        assert device.memory_total_mib == 8192
        assert device.pcie_gen_current == 1 and device.pcie_gen_max == 3
        assert device.pcie_width_current == 8 and device.pcie_width_max == 16
        assert device.persistence_mode is True
        assert device.power_limit_w == 215.0
        assert device.throttle_reasons == []  # gpu_idle is active on both, and excluded
    assert facts.architectures == ["Turing"]
    assert facts.min_compute_capability == facts.max_compute_capability == 7.5
    # The report does not record P2P, so the fake answers NVML_P2P_STATUS_UNKNOWN.
    [link] = facts.links
    assert (link.a, link.b) == (0, 1)
    assert link.p2p_read == "unknown"
    assert is_unavailable(link.nvlink, "unknown NVLink status")


@pytest.mark.parametrize(
    "statuses, p2p_read, nvlink",
    [
        ((0, 0), "OK", True),
        (
            (1, fakenvml.NVMLError(fakenvml.NVML_ERROR_NOT_SUPPORTED)),
            "chipset not supported",
            False,
        ),
        ((2, 5), "GPU not supported", False),
        ((4, 5), "disabled by regkey", False),
        ((3, 5), "IOH topology not supported", False),
        ((fakenvml.NVMLError(fakenvml.NVML_ERROR_NOT_SUPPORTED), 5), None, False),
    ],
)
def test_p2p_and_nvlink_status_are_named(
    statuses: tuple, p2p_read: Optional[str], nvlink: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts, _ = facts_for("dual-rtx-a5000.xml", monkeypatch, links={(0, 1): statuses})
    [link] = facts.links
    assert link.p2p_read == p2p_read
    assert link.nvlink is nvlink


def test_p2p_error_is_unavailable_for_that_link_only(monkeypatch: pytest.MonkeyPatch) -> None:
    error = fakenvml.NVMLError(fakenvml.NVML_ERROR_UNKNOWN)
    facts, _ = facts_for("dual-rtx-a5000.xml", monkeypatch, links={(0, 1): (error, 0)})
    [link] = facts.links
    assert is_unavailable(link.p2p_read, "P2P read status of GPUs 0 and 1", "Unknown Error")
    assert link.nvlink is True


def test_throttle_reasons_from_the_event_reason_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    # rtx-3090-590.xml: clocks_event_reason_sw_power_cap Active (power limit reached).
    facts, fake = facts_for("rtx-3090-590.xml", monkeypatch)
    assert facts.devices[0].throttle_reasons == ["sw_power_cap"]
    assert "nvmlDeviceGetCurrentClocksEventReasons" in fake.calls


def test_older_pynvml_without_the_new_names_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    removed = ["nvmlDeviceGetCurrentClocksEventReasons", "nvmlSystemGetCudaDriverVersion_v2"]
    facts, fake = facts_for("rtx-3090-590.xml", monkeypatch, remove=removed)
    assert facts.devices[0].throttle_reasons == ["sw_power_cap"]
    assert facts.cuda_driver_version == "13.1"
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" in fake.calls
    assert "nvmlSystemGetCudaDriverVersion" in fake.calls


def test_older_driver_without_the_new_function_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    errors = {"nvmlDeviceGetCurrentClocksEventReasons": fakenvml.NVML_ERROR_FUNCTION_NOT_FOUND}
    facts, fake = facts_for("rtx-3090-590.xml", monkeypatch, errors=errors)
    assert facts.devices[0].throttle_reasons == ["sw_power_cap"]
    assert "nvmlDeviceGetCurrentClocksThrottleReasons" in fake.calls


def test_bytes_from_old_pynvml_are_decoded(monkeypatch: pytest.MonkeyPatch) -> None:
    facts, _ = facts_for("tesla-t4.xml", monkeypatch, strings_as_bytes=True)
    device = facts.devices[0]
    assert facts.driver_version == "515.105.01"
    assert device.name == "Tesla T4"
    assert device.serial == "0000000000000"
    assert device.uuid == "GPU-d37e67a5-91dd-3774-a5cb-99096249601a"


# --------------------------------------------------------------------------------------
# every recorded report
# --------------------------------------------------------------------------------------


def _xml_text(gpu_el: ET.Element, *paths: str) -> Optional[str]:
    for path in paths:
        node = gpu_el.find(path)
        if node is not None:
            text = (node.text or "").strip()
            return None if text == "N/A" else text
    return None


def _lead_number(text: Optional[str]) -> Optional[float]:
    return None if text is None else float(text.split()[0].rstrip("x"))


@pytest.mark.parametrize("name", ALL_XML)
def test_every_report_replays_to_matching_facts(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    root = ET.parse(XML_DIR / name).getroot()
    facts, fake = facts_for(name, monkeypatch)
    GpuFacts.model_validate_json(facts.model_dump_json())  # JSON round trip
    gpus = root.findall("gpu")
    assert facts.driver_version == root.findtext("driver_version").strip()
    assert facts.cuda_driver_version == root.findtext("cuda_version").strip()
    assert facts.count == len(gpus)  # not attached_gpus: a100-sxm4-80gb-mig-1of4 holds 1 of 4
    assert len(facts.links) == len(gpus) * (len(gpus) - 1) // 2
    for device, el in zip(facts.devices, gpus):
        assert device.name == _xml_text(el, "product_name")
        assert device.uuid == _xml_text(el, "uuid")
        assert device.serial == _xml_text(el, "serial")
        assert device.pci_bus_id == _xml_text(el, "pci/pci_bus_id")
        assert device.memory_total_mib == _lead_number(_xml_text(el, "fb_memory_usage/total"))
        assert device.temperature_c == _lead_number(_xml_text(el, "temperature/gpu_temp"))
        assert device.pcie_width_max == _lead_number(
            _xml_text(el, "pci/pci_gpu_link_info/link_widths/max_link_width")
        )
        assert device.compute_mode == _xml_text(el, "compute_mode")
        assert device.virtualization_mode == _xml_text(
            el, "gpu_virtualization_mode/virtualization_mode"
        )
        assert device.power_default_limit_w == _lead_number(
            _xml_text(
                el, "power_readings/default_power_limit", "gpu_power_readings/default_power_limit"
            )
        )
        # Where the report names the architecture, the compute capability maps to it.
        arch = _xml_text(el, "product_architecture")
        if arch is not None:
            assert device.architecture == {"Ada Lovelace": "Ada"}.get(arch, arch)
        assert isinstance(device.throttle_reasons, (list, Unavailable))
        if isinstance(device.throttle_reasons, list):
            assert "gpu_idle" not in device.throttle_reasons
    assert fake.shutdowns == 1


# --------------------------------------------------------------------------------------
# failure paths
# --------------------------------------------------------------------------------------


def test_pynvml_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_sys, "import_optional", lambda module: None)
    with pytest.raises(ProbeUnavailable, match=r"nvidia-ml-py \(module pynvml\) is not installed"):
        gpu.probe(ProbeContext())


@pytest.mark.parametrize(
    "code, reason",
    [
        (12, "NVML library not found: no NVIDIA driver installed"),
        (9, "NVIDIA driver not loaded (NVML: Driver Not Loaded)"),
        (
            18,
            "NVML library and NVIDIA kernel driver versions differ (driver updated without a reboot?)",
        ),
        (4, "no permission to use the NVIDIA driver (NVML: Insufficient Permissions)"),
        (999, "NVML could not start: Unknown Error"),
    ],
)
def test_nvml_init_failure_names_the_reason(
    code: int, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeNvml.from_report("tesla-t4.xml", init_error=code)
    with pytest.raises(ProbeUnavailable) as info:
        gpu.read_nvml(fake)
    assert info.value.reason == reason
    assert fake.calls == ["nvmlInit"]


def test_the_real_pynvml_without_a_driver() -> None:
    """On a machine without the NVIDIA driver the installed nvidia-ml-py reports it."""
    pynvml = pytest.importorskip("pynvml")
    if ctypes.util.find_library("nvidia-ml") or Path("/usr/lib/wsl/lib/libnvidia-ml.so.1").exists():
        pytest.skip("libnvidia-ml is installed here")
    with pytest.raises(ProbeUnavailable) as info:
        gpu.read_nvml(pynvml)
    assert info.value.reason == "NVML library not found: no NVIDIA driver installed"


def test_no_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    report = fakenvml.Report.parse(XML_DIR / "tesla-t4.xml")
    report.gpus = []  # the driver is there, the GPU is not (unplugged, passed to a VM)
    fake = FakeNvml(report)
    monkeypatch.setattr(_sys, "import_optional", lambda module: fake)
    facts = gpu.probe(ProbeContext())
    assert facts.count == 0
    assert facts.devices == [] and facts.links == []
    assert facts.driver_version == "515.105.01"
    assert facts.name is None
    assert facts.min_compute_capability is None and facts.max_compute_capability is None
    assert facts.architectures == []
    assert fake.shutdowns == 1


def test_a_hanging_driver_times_out(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeNvml.from_report("tesla-t4.xml", hang="nvmlDeviceGetName")
    monkeypatch.setattr(_sys, "import_optional", lambda module: fake)
    monkeypatch.setattr(gpu, "NVML_TIMEOUT_S", 0.5)
    try:
        with pytest.raises(ProbeUnavailable) as info:
            gpu.probe(ProbeContext())
        assert info.value.reason == "NVML did not answer within 0.5 s"
        assert fake.hanging.is_set()
    finally:
        fake.release()
    # Once the driver answers, the abandoned worker still shuts NVML down.
    worker = next(t for t in threading.enumerate() if t.name == "torchdoctor-nvml")
    worker.join(10)
    assert fake.shutdowns == 1


def test_one_failing_call_costs_one_fact(monkeypatch: pytest.MonkeyPatch) -> None:
    errors = {"nvmlDeviceGetEccMode": 4, "nvmlDeviceGetTemperature": 15}
    facts, fake = facts_for("tesla-t4.xml", monkeypatch, errors=errors)
    device = facts.devices[0]
    assert is_unavailable(device.ecc_mode, "the ECC mode", "Insufficient Permissions")
    assert is_unavailable(device.temperature_c, "the GPU temperature", "GPU is lost")
    assert device.name == "Tesla T4" and device.ecc_errors_uncorrected == 0
    assert fake.shutdowns == 1


def test_a_gpu_that_cannot_be_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    errors = {("nvmlDeviceGetHandleByIndex", 1): 4}  # e.g. not in this container's cgroup
    facts, _ = facts_for("dual-rtx-2080.xml", monkeypatch, errors=errors)
    first, second = facts.devices
    assert first.name == "NVIDIA GeForce RTX 2080"
    assert second.index == 1
    assert (second.vendor, second.gfx_target) == ("nvidia", None)  # NVML lists NVIDIA GPUs only
    for field, value in second.model_dump().items():
        if field not in ("index", "vendor", "gfx_target"):
            assert value == {"unavailable": "NVML could not read GPU 1: Insufficient Permissions"}
    [link] = facts.links
    assert is_unavailable(link.p2p_read, "GPU 1") and is_unavailable(link.nvlink, "GPU 1")
    # With one GPU unknown, the summaries over all GPUs are unknown too; GPU 0's name is not.
    assert facts.name == "NVIDIA GeForce RTX 2080"
    assert is_unavailable(facts.min_compute_capability, "GPU 1")
    assert is_unavailable(facts.architectures, "GPU 1")


def test_count_failure_keeps_the_driver_version(monkeypatch: pytest.MonkeyPatch) -> None:
    facts, fake = facts_for("tesla-t4.xml", monkeypatch, errors={"nvmlDeviceGetCount": 999})
    assert facts.driver_version == "515.105.01"
    for field in ("count", "devices", "links", "name", "architectures"):
        assert is_unavailable(getattr(facts, field), "the GPU count", "Unknown Error")
    assert fake.shutdowns == 1


class _Struct:
    pass


GARBAGE = {
    "nvmlDeviceGetName": (lambda h: 12345, "name"),
    "nvmlDeviceGetCudaComputeCapability": (lambda h: (None, 0), "compute_capability"),
    "nvmlDeviceGetMemoryInfo": (lambda h: _Struct(), "memory_total_mib"),
    "nvmlDeviceGetTemperature": (lambda h, sensor: "hot", "temperature_c"),
    "nvmlDeviceGetCurrentClocksEventReasons": (lambda h: -1, "throttle_reasons"),
    "nvmlDeviceGetPersistenceMode": (lambda h: 7, "persistence_mode"),
    "nvmlDeviceGetComputeMode": (lambda h: 42, "compute_mode"),
    "nvmlDeviceGetMigMode": (lambda h: None, "mig_mode"),
    "nvmlDeviceGetMaxPcieLinkWidth": (lambda h: 0, "pcie_width_max"),
    "nvmlDeviceGetPciInfo": (lambda h: "00:1E.0", "pci_bus_id"),
    "nvmlDeviceGetEnforcedPowerLimit": (lambda h: -70000, "power_limit_w"),
}


@pytest.mark.parametrize("function", sorted(GARBAGE))
def test_garbage_from_nvml_is_unavailable(function: str, monkeypatch: pytest.MonkeyPatch) -> None:
    answer, field = GARBAGE[function]
    facts, _ = facts_for("tesla-t4.xml", monkeypatch, overrides={function: answer})
    device = facts.devices[0]
    assert is_unavailable(getattr(device, field), "NVML returned an unusable value")
    assert device.uuid == "GPU-d37e67a5-91dd-3774-a5cb-99096249601a"  # the rest is intact


def test_garbage_compute_capability_leaves_architecture_and_summaries_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    overrides = {"nvmlDeviceGetCudaComputeCapability": lambda h: (75, "x")}
    facts, _ = facts_for("tesla-t4.xml", monkeypatch, overrides=overrides)
    assert isinstance(facts.devices[0].architecture, Unavailable)
    assert isinstance(facts.min_compute_capability, Unavailable)
    assert isinstance(facts.architectures, Unavailable)


@pytest.mark.parametrize(
    "function, answer, field",
    [
        ("nvmlSystemGetCudaDriverVersion_v2", 0, "cuda_driver_version"),
        ("nvmlSystemGetCudaDriverVersion_v2", "12.4", "cuda_driver_version"),
        ("nvmlSystemGetCudaDriverVersion_v2", None, "cuda_driver_version"),
        ("nvmlSystemGetDriverVersion", 550, "driver_version"),
        ("nvmlSystemGetDriverVersion", b"\x00\x00", "driver_version"),
        ("nvmlSystemGetDriverVersion", None, "driver_version"),
    ],
)
def test_garbage_system_answers(
    function: str, answer: Any, field: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    facts, fake = facts_for("tesla-t4.xml", monkeypatch, overrides={function: lambda: answer})
    assert is_unavailable(getattr(facts, field), "unusable value")
    assert facts.devices[0].name == "Tesla T4"
    assert fake.shutdowns == 1


@pytest.mark.parametrize("answer", [-1, "2", None, True, 2**31])
def test_garbage_gpu_count(answer: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    facts, fake = facts_for(
        "tesla-t4.xml", monkeypatch, overrides={"nvmlDeviceGetCount": lambda: answer}
    )
    for field in ("count", "devices", "links", "min_compute_capability"):
        assert is_unavailable(getattr(facts, field), "unusable value for the GPU count")
    assert facts.driver_version == "515.105.01"
    assert fake.shutdowns == 1


def test_unknown_compute_capability_has_no_architecture(monkeypatch: pytest.MonkeyPatch) -> None:
    overrides = {"nvmlDeviceGetCudaComputeCapability": lambda h: (9, 9)}
    facts, _ = facts_for("tesla-t4.xml", monkeypatch, overrides=overrides)
    device = facts.devices[0]
    assert device.compute_capability == 9.9
    assert is_unavailable(device.architecture, "no architecture known for compute capability 9.9")


def test_unknown_throttle_bits_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    overrides = {"nvmlDeviceGetCurrentClocksEventReasons": lambda h: 0x001 | 0x040 | 0x400}
    facts, _ = facts_for("tesla-t4.xml", monkeypatch, overrides=overrides)
    assert facts.devices[0].throttle_reasons == ["hw_thermal_slowdown", "unknown_0x400"]


def test_remapping_pending_counts_as_pending(monkeypatch: pytest.MonkeyPatch) -> None:
    overrides = {"nvmlDeviceGetRemappedRows": lambda h: (0, 1, 1, 0)}
    facts, _ = facts_for("rtx-4090.xml", monkeypatch, overrides=overrides)
    assert facts.devices[0].retired_pages_pending is True


# --------------------------------------------------------------------------------------
# text reports (nvidia-smi -q / -a): Hopper, Volta, Kepler, many-GPU machines
# --------------------------------------------------------------------------------------

TEXT_DIR = fakenvml.TEXT_DIR
ALL_TEXT = sorted(p.name for p in TEXT_DIR.glob("*.txt"))


def _text_value(block: str, label: str) -> Optional[str]:
    match = re.search(rf"^\s+{re.escape(label)}\s+: (.*)$", block, re.MULTILINE)
    if match is None or match.group(1).strip() == "N/A":
        return None
    return match.group(1).strip()


@pytest.mark.parametrize("name", ALL_TEXT)
def test_every_text_report_replays_to_matching_facts(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (TEXT_DIR / name).read_text()
    blocks = re.split(r"^GPU [0-9A-F]{8}:", text, flags=re.MULTILINE)[1:]
    facts, fake = facts_for(name, monkeypatch)
    GpuFacts.model_validate_json(facts.model_dump_json())
    assert facts.driver_version == re.search(
        r"^Driver Version\s+: (\S+)", text, re.MULTILINE
    ).group(1)
    assert facts.cuda_driver_version == re.search(
        r"^CUDA Version\s+: (\S+)", text, re.MULTILINE
    ).group(1)
    assert (
        facts.count
        == len(blocks)
        == int(re.search(r"^Attached GPUs\s+: (\d+)", text, re.MULTILINE).group(1))
    )
    assert len(facts.links) == len(blocks) * (len(blocks) - 1) // 2
    for device, block in zip(facts.devices, blocks):
        assert device.name == _text_value(block, "Product Name")
        assert device.uuid == _text_value(block, "GPU UUID")
        assert device.pci_bus_id == _text_value(block, "Bus Id")
        temperature = _text_value(block, "GPU Current Temp")
        assert device.temperature_c == (
            None if temperature is None else int(temperature.split()[0])
        )
        arch = _text_value(block, "Product Architecture")
        if arch is not None:
            assert device.architecture == {"Ada Lovelace": "Ada"}.get(arch, arch)
    assert fake.shutdowns == 1


def test_eight_h100_with_nvlink_everywhere(monkeypatch: pytest.MonkeyPatch) -> None:
    topo = (fakenvml.DATA / "topo" / "h100-sxm-8gpu-nv18-6nic-della.txt").read_text()
    links = fakenvml.topology_links(topo)
    facts, _ = facts_for("h100-sxm5-80gb-x8.txt", monkeypatch, links=links)
    assert facts.count == 8
    assert facts.name == "NVIDIA H100 80GB HBM3"
    assert facts.architectures == ["Hopper"]
    assert facts.min_compute_capability == facts.max_compute_capability == 9.0
    assert len({d.pci_bus_id for d in facts.devices}) == 8
    assert len(facts.links) == 28
    assert all(link.nvlink is True and link.p2p_read == "OK" for link in facts.links)
    first = facts.devices[0]
    assert first.pci_bus_id == "00000000:18:00.0"
    assert first.serial == "1654423001593"
    assert (first.memory_total_mib, first.memory_used_mib) == (81559, 81559 - 81106)
    assert (first.pcie_gen_current, first.pcie_gen_max, first.pcie_width_max) == (5, 5, 16)
    assert first.mig_mode is False and first.ecc_mode is True
    assert first.ecc_errors_uncorrected == 0 and first.retired_pages_pending is False
    assert first.power_limit_w == 700.0 and first.throttle_reasons == []


@pytest.mark.parametrize(
    "name, expected",
    [
        # Grace Hopper: the GPU hangs off the CPU by NVLink-C2C, PCIe is a x1 stub
        (
            "gh200-480gb.txt",
            {"compute_capability": 9.0, "architecture": "Hopper", "pcie_width_max": 1,
             "power_limit_w": 700.0, "power_default_limit_w": 900.0, "memory_total_mib": 97871},
        ),
        ("h200.txt", {"architecture": "Hopper", "memory_total_mib": 143771, "pcie_gen_max": 5}),
        ("l4.txt", {"architecture": "Ada", "pcie_width_current": 8, "pcie_width_max": 16}),
        ("v100-sxm2-16gb-x8.txt", {"compute_capability": 7.0, "architecture": "Volta",
                                   "retired_pages_pending": False, "ecc_errors_corrected": 0}),
        ("rtx-5090.txt", {"compute_capability": 12.0, "architecture": "Blackwell",
                          "throttle_reasons": ["sw_power_cap"], "pcie_gen_max": 5}),
        # Kepler on driver 470: nothing about the link, clocks or power is reported
        ("gtx-680.txt", {"compute_capability": 3.0, "architecture": "Kepler",
                         "pcie_gen_current": None, "power_limit_w": None}),
    ],
)  # fmt: skip
def test_text_report_details(name: str, expected: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    facts, _ = facts_for(name, monkeypatch)
    device = device_dict(facts)
    assert {k: device[k] for k in expected} == expected


def test_the_test_compute_capabilities_agree_with_the_gpu_name_table() -> None:
    """Two sources for one fact: the fake's table and rules/data/gpu_models.yaml."""
    from torchdoctor import tables

    checked = 0
    for name, cc in fakenvml.load_cc_table().items():
        known = tables.cc_for_gpu_name(name)
        if known is not None:
            assert known == cc, name
            checked += 1
    assert checked >= 30


# --------------------------------------------------------------------------------------
# no NVIDIA driver: the PCI bus still tells whether NVIDIA GPUs are there
# --------------------------------------------------------------------------------------

# sysfs as a machine shows it: (vendor, class) per PCI function. 10de:0302xx is an NVIDIA 3D
# controller (datacenter GPU), 10de:0403xx the HDMI audio function of a GeForce card (not a GPU),
# 1234:0300xx the emulated VGA adapter of a QEMU VM.
SYSFS = {
    "0000:00:02.0": ("0x1234", "0x030000"),
    "0000:00:05.0": ("0x10de", "0x030200"),
    "0000:01:00.0": ("0x10de", "0x030000"),
    "0000:01:00.1": ("0x10de", "0x040300"),
    "0000:00:1f.0": ("0x8086", "0x060100"),
}


def _fake_sysfs(monkeypatch, devices):
    def listdir(path):
        if path == gpu.PCI_DEVICES:
            return sorted(devices)
        raise FileNotFoundError(path)

    def read_text(path, limit=None):
        bus, name = path[len(gpu.PCI_DEVICES) + 1:].split("/")
        vendor, klass = devices[bus]
        return {"vendor": vendor, "class": klass}[name] + "\n"

    monkeypatch.setattr(_sys, "listdir", listdir)
    monkeypatch.setattr(_sys, "read_text", read_text)


def _no_driver_nvml(monkeypatch):
    report = fakenvml.Report.parse(XML_DIR / "tesla-t4.xml")
    fake = FakeNvml(report, init_error=12)  # NVML_ERROR_LIBRARY_NOT_FOUND
    monkeypatch.setattr(_sys, "import_optional", lambda module: fake)


def test_gpus_without_driver_are_counted_on_the_pci_bus(monkeypatch):
    _no_driver_nvml(monkeypatch)
    _fake_sysfs(monkeypatch, SYSFS)
    facts = gpu.probe(ProbeContext())
    assert facts.source == "pci" and facts.count == 2
    assert [d.pci_bus_id for d in facts.devices] == ["0000:00:05.0", "0000:01:00.0"]
    assert facts.driver_version is None
    assert "no NVIDIA driver" in facts.devices[0].name.unavailable


def test_no_driver_and_no_nvidia_device_means_no_gpu(monkeypatch):
    _no_driver_nvml(monkeypatch)
    _fake_sysfs(monkeypatch, {k: v for k, v in SYSFS.items() if v[0] != "0x10de"})
    facts = gpu.probe(ProbeContext())
    assert (facts.source, facts.count, facts.name, facts.min_compute_capability) == ("pci", 0, None, None)


def test_no_driver_and_no_sysfs_stays_unavailable(monkeypatch):
    _no_driver_nvml(monkeypatch)

    def listdir(path):
        raise FileNotFoundError(path)

    monkeypatch.setattr(_sys, "listdir", listdir)
    with pytest.raises(ProbeUnavailable, match="NVML library not found"):
        gpu.probe(ProbeContext())


def test_gpu_without_driver_is_diagnosed(monkeypatch):
    from torchdoctor.engine import evaluate
    from torchdoctor.facts import Facts
    from torchdoctor.rules import load_rules

    _no_driver_nvml(monkeypatch)
    _fake_sysfs(monkeypatch, SYSFS)
    report = evaluate(load_rules(), Facts(gpu=gpu.probe(ProbeContext())))
    found = {f.id: f for f in report.findings}
    assert found["nvidia-gpu-without-driver"].severity == "error"
    assert "0000:00:05.0, 0000:01:00.0" in found["nvidia-gpu-without-driver"].message
