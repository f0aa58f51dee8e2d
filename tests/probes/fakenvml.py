"""A fake ``pynvml`` that answers NVML calls from a real nvidia-smi report (XML or text).

There is no GPU on the development machines, so the gpu probe is tested against this module:
``FakeNvml.from_report(path)`` parses a recorded report (``nvidia-smi -q -x`` XML from
tests/data/machines/nvidia-smi-q-xml, or ``nvidia-smi -q``/``-a`` text from
tests/data/machines/nvidia-smi-q, turned into the same elements; sources in
tests/data/machines/SOURCES.md) and answers the same functions, with the same argument and
return conventions, as nvidia-ml-py 13 (``pynvml``):

- values come back in NVML's units (bytes, milliwatts, ``[current, pending]`` lists,
  ``nvmlEnableState_t`` ints, bit masks), never in nvidia-smi's text;
- a field the report shows as ``N/A`` raises ``NVMLError_NotSupported``, which is what NVML
  itself returns for such fields (nvidia-smi prints N/A for NOT_SUPPORTED);
- errors are ``NVMLError`` subclasses carrying real ``nvmlReturn_t`` codes, mapped to their
  subclass by ``NVMLError.__new__`` exactly like pynvml does;
- ``NVML_P2P_CAPS_INDEX_READ`` is the tuple ``(0,)`` as in pynvml, and a non-int P2P index
  raises ``ctypes.ArgumentError`` as ctypes does.

The report does not hold the compute capability (taken from
tests/data/machines/gpu-compute-capability.yaml) nor P2P/NVLink status between GPUs (given
per test through ``links``, e.g. from an ``nvidia-smi topo -m`` matrix with
``topology_links``; without it NVML's ``NVML_P2P_STATUS_UNKNOWN`` is answered).

Knobs for failure paths: ``init_error`` (nvmlInit raises that code), ``errors`` (a function,
or ``(function, gpu index)``, raises that code), ``remove`` (functions an older pynvml lacks),
``overrides`` (replace a function, e.g. to return garbage) and ``hang`` (a function that
blocks until ``release()``).
"""

from __future__ import annotations

import ctypes
import threading
import types
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Callable, ClassVar, Optional, Union

import yaml

DATA = Path(__file__).resolve().parent.parent / "data" / "machines"
XML_DIR = DATA / "nvidia-smi-q-xml"
TEXT_DIR = DATA / "nvidia-smi-q"
CC_TABLE = DATA / "gpu-compute-capability.yaml"

# --- constants, as pynvml (nvml.h) defines them -------------------------------------------

CONSTANTS: dict[str, Any] = {
    "NVML_SUCCESS": 0,
    "NVML_FEATURE_DISABLED": 0,
    "NVML_FEATURE_ENABLED": 1,
    "NVML_TEMPERATURE_GPU": 0,
    "NVML_COMPUTEMODE_DEFAULT": 0,
    "NVML_COMPUTEMODE_EXCLUSIVE_THREAD": 1,
    "NVML_COMPUTEMODE_PROHIBITED": 2,
    "NVML_COMPUTEMODE_EXCLUSIVE_PROCESS": 3,
    "NVML_VOLATILE_ECC": 0,
    "NVML_AGGREGATE_ECC": 1,
    "NVML_MEMORY_ERROR_TYPE_CORRECTED": 0,
    "NVML_MEMORY_ERROR_TYPE_UNCORRECTED": 1,
    "NVML_DEVICE_MIG_DISABLE": 0,
    "NVML_DEVICE_MIG_ENABLE": 1,
    "NVML_GPU_VIRTUALIZATION_MODE_NONE": 0,
    "NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH": 1,
    "NVML_GPU_VIRTUALIZATION_MODE_VGPU": 2,
    "NVML_GPU_VIRTUALIZATION_MODE_HOST_VGPU": 3,
    "NVML_GPU_VIRTUALIZATION_MODE_HOST_VSGA": 4,
    # pynvml really defines READ with a trailing comma, i.e. as a tuple.
    "NVML_P2P_CAPS_INDEX_READ": (0,),
    "NVML_P2P_CAPS_INDEX_WRITE": 1,
    "NVML_P2P_CAPS_INDEX_NVLINK": 2,
    "NVML_P2P_CAPS_INDEX_ATOMICS": 3,
    "NVML_P2P_CAPS_INDEX_PCI": 4,
    "NVML_P2P_STATUS_OK": 0,
    "NVML_P2P_STATUS_CHIPSET_NOT_SUPPORTED": 1,
    "NVML_P2P_STATUS_GPU_NOT_SUPPORTED": 2,
    "NVML_P2P_STATUS_IOH_TOPOLOGY_NOT_SUPPORTED": 3,
    "NVML_P2P_STATUS_DISABLED_BY_REGKEY": 4,
    "NVML_P2P_STATUS_NOT_SUPPORTED": 5,
    "NVML_P2P_STATUS_UNKNOWN": 6,
}

# nvmlReturn_t: code -> (constant, pynvml class suffix, message)
ERRORS: dict[int, tuple[str, str, str]] = {
    1: ("NVML_ERROR_UNINITIALIZED", "Uninitialized", "Uninitialized"),
    2: ("NVML_ERROR_INVALID_ARGUMENT", "InvalidArgument", "Invalid Argument"),
    3: ("NVML_ERROR_NOT_SUPPORTED", "NotSupported", "Not Supported"),
    4: ("NVML_ERROR_NO_PERMISSION", "NoPermission", "Insufficient Permissions"),
    5: ("NVML_ERROR_ALREADY_INITIALIZED", "AlreadyInitialized", "Already Initialized"),
    6: ("NVML_ERROR_NOT_FOUND", "NotFound", "Not Found"),
    9: ("NVML_ERROR_DRIVER_NOT_LOADED", "DriverNotLoaded", "Driver Not Loaded"),
    10: ("NVML_ERROR_TIMEOUT", "Timeout", "Timeout"),
    12: ("NVML_ERROR_LIBRARY_NOT_FOUND", "LibraryNotFound", "NVML Shared Library Not Found"),
    13: ("NVML_ERROR_FUNCTION_NOT_FOUND", "FunctionNotFound", "Function Not Found"),
    15: ("NVML_ERROR_GPU_IS_LOST", "GpuIsLost", "GPU is lost"),
    18: (
        "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
        "LibRmVersionMismatch",
        "RM has detected an NVML/RM version mismatch.",
    ),
    999: ("NVML_ERROR_UNKNOWN", "Unknown", "Unknown Error"),
}
for _code, (_const, _suffix, _msg) in ERRORS.items():
    CONSTANTS[_const] = _code
    globals()[_const] = _code

NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_UNINITIALIZED = 1
NVML_ERROR_UNKNOWN = 999
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_P2P_STATUS_UNKNOWN = 6


class NVMLError(Exception):
    """Like pynvml.NVMLError: ``NVMLError(code)`` builds the matching subclass."""

    _valClassMapping: ClassVar[dict[int, type]] = {}

    def __new__(cls, value: int):
        subclass = NVMLError._valClassMapping.get(value, cls) if cls is NVMLError else cls
        obj = Exception.__new__(subclass)
        obj.value = value
        return obj

    def __init__(self, value: int):
        super().__init__(value)

    def __str__(self) -> str:
        entry = ERRORS.get(self.value)
        return entry[2] if entry else f"NVML Error with code {self.value}"


ERROR_CLASSES: dict[str, type] = {}
for _code, (_const, _suffix, _msg) in ERRORS.items():
    _cls = type(f"NVMLError_{_suffix}", (NVMLError,), {})
    NVMLError._valClassMapping[_code] = _cls
    ERROR_CLASSES[_cls.__name__] = _cls
    globals()[_cls.__name__] = _cls

# nvmlClocksEventReason* bits, by the names nvidia-smi uses in its XML.
CLOCK_EVENT_BITS = {
    "gpu_idle": 0x001,
    "applications_clocks_setting": 0x002,
    "sw_power_cap": 0x004,
    "hw_slowdown": 0x008,
    "sync_boost": 0x010,
    "sw_thermal_slowdown": 0x020,
    "hw_thermal_slowdown": 0x040,
    "hw_power_brake_slowdown": 0x080,
    "display_clocks_setting": 0x100,
}
COMPUTE_MODES = {"Default": 0, "Exclusive_Thread": 1, "Prohibited": 2, "Exclusive_Process": 3}
VIRTUALIZATION_MODES = {
    "None": 0,
    "Pass-Through": 1,
    "VGPU": 2,
    "Host VGPU": 3,
    "Host VSGA": 4,
}
# What nvidia-smi prints for a field NVML does not support.
NOT_SUPPORTED_TEXTS = {
    "N/A",
    "[N/A]",
    "Not Supported",
    "Requested functionality has been deprecated",
}


def load_cc_table(path: Path = CC_TABLE) -> dict[str, float]:
    return {str(k): float(v) for k, v in yaml.safe_load(path.read_text()).items()}


# --- the report -----------------------------------------------------------------------------


class XmlGpu:
    """One <gpu> element of an nvidia-smi -q -x report."""

    def __init__(self, element: ET.Element):
        self.element = element

    def text(self, *paths: str) -> Optional[str]:
        """Stripped text of the first path present (None when none is present)."""
        for path in paths:
            node = self.element.find(path)
            if node is not None:
                return (node.text or "").strip()
        return None

    def supported(self, *paths: str) -> str:
        """Text of a field; raises NVMLError_NotSupported for N/A or a missing field."""
        value = self.text(*paths)
        if value is None or value in NOT_SUPPORTED_TEXTS:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return value

    def number(self, *paths: str) -> float:
        """Leading number of a field such as "400.00 W", "36 C", "16x", "40960 MiB"."""
        value = self.supported(*paths)
        token = value.split()[0].rstrip("x")
        return float(token)

    def enabled(self, *paths: str) -> int:
        value = self.supported(*paths)
        return {"Enabled": 1, "Disabled": 0, "Yes": 1, "No": 0}[value]


class Report:
    """An nvidia-smi -q -x report: driver, CUDA version and GPUs."""

    def __init__(self, root: ET.Element):
        self.root = root
        self.driver_version = (root.findtext("driver_version") or "").strip()
        self.cuda_version = (root.findtext("cuda_version") or "").strip()
        self.gpus = [XmlGpu(g) for g in root.findall("gpu")]

    @classmethod
    def parse(cls, path: Union[str, Path]) -> Report:
        """An XML report (``nvidia-smi -q -x``) or a text one (``nvidia-smi -q``, ``-a``)."""
        path = Path(path)
        if path.suffix == ".xml":
            return cls(ET.parse(str(path)).getroot())
        return cls(text_report_to_xml(path.read_text()))


# --- the text report, turned into the XML report's elements ---------------------------------

# Text label path -> XML element path, for the fields the fake answers from.
TEXT_FIELDS: dict[tuple[str, ...], str] = {
    ("Product Name",): "product_name",
    ("Product Architecture",): "product_architecture",
    ("Persistence Mode",): "persistence_mode",
    ("MIG Mode", "Current"): "mig_mode/current_mig",
    ("MIG Mode", "Pending"): "mig_mode/pending_mig",
    ("Serial Number",): "serial",
    ("GPU UUID",): "uuid",
    (
        "GPU Virtualization Mode",
        "Virtualization Mode",
    ): "gpu_virtualization_mode/virtualization_mode",
    ("PCI", "Bus Id"): "pci/pci_bus_id",
    ("PCI", "Device Id"): "pci/pci_device_id",
    (
        "PCI",
        "GPU Link Info",
        "PCIe Generation",
        "Max",
    ): "pci/pci_gpu_link_info/pcie_gen/max_link_gen",
    ("PCI", "GPU Link Info", "PCIe Generation", "Current"): (
        "pci/pci_gpu_link_info/pcie_gen/current_link_gen"
    ),
    (
        "PCI",
        "GPU Link Info",
        "Link Width",
        "Max",
    ): "pci/pci_gpu_link_info/link_widths/max_link_width",
    ("PCI", "GPU Link Info", "Link Width", "Current"): (
        "pci/pci_gpu_link_info/link_widths/current_link_width"
    ),
    ("FB Memory Usage", "Total"): "fb_memory_usage/total",
    ("FB Memory Usage", "Reserved"): "fb_memory_usage/reserved",
    ("FB Memory Usage", "Used"): "fb_memory_usage/used",
    ("FB Memory Usage", "Free"): "fb_memory_usage/free",
    ("Compute Mode",): "compute_mode",
    ("ECC Mode", "Current"): "ecc_mode/current_ecc",
    ("ECC Mode", "Pending"): "ecc_mode/pending_ecc",
    ("Retired Pages", "Pending Page Blacklist"): "retired_pages/pending_retirement",
    ("Retired Pages", "Pending Page Retirement"): "retired_pages/pending_retirement",
    ("Remapped Rows",): "remapped_rows",
    ("Remapped Rows", "Correctable Error"): "remapped_rows/remapped_row_corr",
    ("Remapped Rows", "Uncorrectable Error"): "remapped_rows/remapped_row_unc",
    ("Remapped Rows", "Pending"): "remapped_rows/remapped_row_pending",
    ("Remapped Rows", "Remapping Failure Occurred"): "remapped_rows/remapped_row_failure",
    ("Temperature", "GPU Current Temp"): "temperature/gpu_temp",
    ("Power Readings", "Enforced Power Limit"): "power_readings/enforced_power_limit",
    ("Power Readings", "Default Power Limit"): "power_readings/default_power_limit",
    ("GPU Power Readings", "Current Power Limit"): "gpu_power_readings/current_power_limit",
    ("GPU Power Readings", "Default Power Limit"): "gpu_power_readings/default_power_limit",
    ("Clocks Event Reasons",): "clocks_event_reasons",
    ("Clocks Throttle Reasons",): "clocks_throttle_reasons",
}
TEXT_CLOCK_REASONS = {
    "Idle": "gpu_idle",
    "Applications Clocks Setting": "applications_clocks_setting",
    "SW Power Cap": "sw_power_cap",
    "HW Slowdown": "hw_slowdown",
    "HW Thermal Slowdown": "hw_thermal_slowdown",
    "HW Power Brake Slowdown": "hw_power_brake_slowdown",
    "Sync Boost": "sync_boost",
    "SW Thermal Slowdown": "sw_thermal_slowdown",
    "Display Clock Setting": "display_clocks_setting",
}


def _text_lines(text: str) -> list[tuple[int, str, Optional[str]]]:
    """(indent, label, value or None for a section head) per meaningful line."""
    lines = []
    for raw in text.splitlines():
        if not raw.strip() or raw.startswith("="):
            continue
        indent = len(raw) - len(raw.lstrip(" "))
        label, sep, value = raw.strip().partition(" : ")
        if not sep and raw.rstrip().endswith(" :"):
            label, value, sep = raw.strip()[:-1], "", " : "
        lines.append((indent, label.strip(), value.strip() if sep else None))
    return lines


def _xml_path(path: tuple[str, ...]) -> Optional[str]:
    if path in TEXT_FIELDS:
        return TEXT_FIELDS[path]
    if path[0] in ("Clocks Event Reasons", "Clocks Throttle Reasons") and len(path) > 1:
        kind = "event" if path[0].startswith("Clocks Event") else "throttle"
        name = TEXT_CLOCK_REASONS.get(path[-1])
        return None if name is None else f"clocks_{kind}_reasons/clocks_{kind}_reason_{name}"
    if path[:2] == ("ECC Errors", "Volatile") and len(path) > 2:
        tags = [p.lower().replace("sec-ded", "secded").replace(" ", "_") for p in path[2:]]
        return "ecc_errors/volatile/" + "/".join(tags)
    return None


def _put(parent: ET.Element, path: str, value: Optional[str]) -> None:
    node = parent
    for tag in path.split("/"):
        child = node.find(tag)
        if child is None:
            child = ET.SubElement(node, tag)
        node = child
    if value is not None:
        node.text = value


def text_report_to_xml(text: str) -> ET.Element:
    """Turn an ``nvidia-smi -q`` text report into the element tree of its XML form."""
    root = ET.Element("nvidia_smi_log")
    gpu: Optional[ET.Element] = None
    stack: list[tuple[int, str]] = []
    for indent, label, value in _text_lines(text):
        if indent == 0:
            stack = []
            if label.startswith("GPU ") and value is None:
                gpu = ET.SubElement(root, "gpu", id=label[4:])
                continue
            gpu = None
            tag = {"Driver Version": "driver_version", "CUDA Version": "cuda_version",
                   "Attached GPUs": "attached_gpus"}.get(label)  # fmt: skip
            if tag is not None:
                _put(root, tag, value)
            continue
        if gpu is None:
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = tuple(s for _, s in stack) + (label,)
        stack.append((indent, label))
        target = _xml_path(path)
        if target is not None:
            _put(gpu, target, value)
    return root


def _report_path(name: Union[str, Path]) -> Path:
    path = Path(name)
    if not path.is_absolute() and not path.exists():
        folder = XML_DIR if str(name).endswith(".xml") else TEXT_DIR
        path = folder / str(name)
    return path


# --- the fake module ------------------------------------------------------------------------


class Handle:
    """nvmlDevice_t stand-in."""

    def __init__(self, index: int):
        self.index = index

    def __repr__(self) -> str:
        return f"<fake nvmlDevice_t {self.index}>"


class PciInfo:
    """nvmlPciInfo_t stand-in (busId is bytes, as ctypes returns c_char arrays)."""

    def __init__(self, bus_id: str):
        self.busId = bus_id.encode()
        self.busIdLegacy = bus_id.encode()


class Memory:
    """nvmlMemory_t (v1): bytes; ``used`` includes the driver-reserved memory."""

    def __init__(self, total: int, free: int):
        self.total = total
        self.free = free
        self.used = total - free


LinkStatus = Union[int, BaseException]


class FakeNvml(types.ModuleType):
    """A ``pynvml`` module answering from a recorded report."""

    def __init__(
        self,
        report: Report,
        *,
        cc_table: Optional[Mapping[str, float]] = None,
        init_error: Optional[int] = None,
        errors: Optional[Mapping[Union[str, tuple[str, int]], int]] = None,
        remove: Iterable[str] = (),
        overrides: Optional[Mapping[str, Callable[..., Any]]] = None,
        links: Optional[Mapping[tuple[int, int], tuple[LinkStatus, LinkStatus]]] = None,
        hang: Optional[str] = None,
        strings_as_bytes: bool = False,
    ):
        super().__init__("pynvml", "fake pynvml replaying an nvidia-smi -q -x report")
        self.report = report
        self.cc_table = dict(load_cc_table() if cc_table is None else cc_table)
        self.init_error = init_error
        self.errors = dict(errors or {})
        self.links = dict(links or {})
        self.hang = hang
        self.strings_as_bytes = strings_as_bytes
        self.calls: list[str] = []
        self.initialised = 0
        self.shutdowns = 0
        self.hanging = threading.Event()
        self._release = threading.Event()
        for name, value in CONSTANTS.items():
            setattr(self, name, value)
        self.NVMLError = NVMLError
        for name, cls in ERROR_CLASSES.items():
            setattr(self, name, cls)
        for name in API:
            setattr(self, name, self._wrap(name, getattr(self, "_" + name)))
        for name in remove:
            delattr(self, name)
        for name, fn in (overrides or {}).items():
            setattr(self, name, fn)

    @classmethod
    def from_report(cls, name: Union[str, Path], **options: Any) -> FakeNvml:
        return cls(Report.parse(_report_path(name)), **options)

    def release(self) -> None:
        """Let a hanging call return (tests call this when they are done)."""
        self._release.set()

    # -- plumbing --

    def _wrap(self, name: str, impl: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            self.calls.append(name)
            if name not in ("nvmlInit", "nvmlInitWithFlags") and not self.initialised:
                raise NVMLError(NVML_ERROR_UNINITIALIZED)
            if name == self.hang:
                self.hanging.set()
                self._release.wait(60)
            code = self.errors.get(name)
            if code is None and args:
                index = args[0].index if isinstance(args[0], Handle) else args[0]
                code = self.errors.get((name, index))
            if code is not None:
                raise NVMLError(code)
            return impl(*args)

        call.__name__ = name
        return call

    def _gpu(self, handle: Any) -> XmlGpu:
        if not isinstance(handle, Handle) or not 0 <= handle.index < len(self.report.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return self.report.gpus[handle.index]

    def _string(self, value: str) -> Union[str, bytes]:
        return value.encode() if self.strings_as_bytes else value

    # -- system --

    def _nvmlInit(self) -> None:
        if self.init_error is not None:
            raise NVMLError(self.init_error)
        self.initialised += 1

    def _nvmlShutdown(self) -> None:
        self.initialised -= 1
        self.shutdowns += 1

    def _nvmlSystemGetDriverVersion(self) -> Union[str, bytes]:
        if not self.report.driver_version:
            raise NVMLError(NVML_ERROR_UNKNOWN)
        return self._string(self.report.driver_version)

    def _nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        text = self.report.cuda_version
        if not text or text in NOT_SUPPORTED_TEXTS:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        major, minor = text.split(".")[:2]
        return int(major) * 1000 + int(minor) * 10

    def _nvmlSystemGetCudaDriverVersion(self) -> int:
        return self._nvmlSystemGetCudaDriverVersion_v2()

    def _nvmlDeviceGetCount(self) -> int:
        return len(self.report.gpus)

    def _nvmlDeviceGetHandleByIndex(self, index: int) -> Handle:
        if not isinstance(index, int) or not 0 <= index < len(self.report.gpus):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return Handle(index)

    # -- identity --

    def _nvmlDeviceGetName(self, h: Handle) -> Union[str, bytes]:
        return self._string(self._gpu(h).supported("product_name"))

    def _nvmlDeviceGetUUID(self, h: Handle) -> Union[str, bytes]:
        return self._string(self._gpu(h).supported("uuid"))

    def _nvmlDeviceGetSerial(self, h: Handle) -> Union[str, bytes]:
        return self._string(self._gpu(h).supported("serial"))

    def _nvmlDeviceGetPciInfo(self, h: Handle) -> PciInfo:
        gpu = self._gpu(h)
        bus_id = gpu.text("pci/pci_bus_id") or gpu.element.get("id") or ""
        return PciInfo(bus_id)

    def _nvmlDeviceGetCudaComputeCapability(self, h: Handle) -> tuple[int, int]:
        name = self._gpu(h).supported("product_name")
        if name not in self.cc_table:
            raise NVMLError(NVML_ERROR_UNKNOWN)
        major, minor = f"{self.cc_table[name]:.1f}".split(".")
        return int(major), int(minor)

    # -- memory, PCIe --

    def _nvmlDeviceGetMemoryInfo(self, h: Handle) -> Memory:
        gpu = self._gpu(h)
        mib = 1024 * 1024
        total = int(gpu.number("fb_memory_usage/total"))
        free = int(gpu.number("fb_memory_usage/free"))
        return Memory(total * mib, free * mib)

    def _nvmlDeviceGetCurrPcieLinkGeneration(self, h: Handle) -> int:
        return int(self._gpu(h).number("pci/pci_gpu_link_info/pcie_gen/current_link_gen"))

    def _nvmlDeviceGetMaxPcieLinkGeneration(self, h: Handle) -> int:
        return int(self._gpu(h).number("pci/pci_gpu_link_info/pcie_gen/max_link_gen"))

    def _nvmlDeviceGetCurrPcieLinkWidth(self, h: Handle) -> int:
        return int(self._gpu(h).number("pci/pci_gpu_link_info/link_widths/current_link_width"))

    def _nvmlDeviceGetMaxPcieLinkWidth(self, h: Handle) -> int:
        return int(self._gpu(h).number("pci/pci_gpu_link_info/link_widths/max_link_width"))

    # -- modes --

    def _nvmlDeviceGetPersistenceMode(self, h: Handle) -> int:
        return self._gpu(h).enabled("persistence_mode")

    def _nvmlDeviceGetComputeMode(self, h: Handle) -> int:
        return COMPUTE_MODES[self._gpu(h).supported("compute_mode")]

    def _nvmlDeviceGetMigMode(self, h: Handle) -> list[int]:
        gpu = self._gpu(h)
        return [gpu.enabled("mig_mode/current_mig"), gpu.enabled("mig_mode/pending_mig")]

    def _nvmlDeviceGetEccMode(self, h: Handle) -> list[int]:
        gpu = self._gpu(h)
        return [gpu.enabled("ecc_mode/current_ecc"), gpu.enabled("ecc_mode/pending_ecc")]

    def _nvmlDeviceGetVirtualizationMode(self, h: Handle) -> int:
        text = self._gpu(h).supported("gpu_virtualization_mode/virtualization_mode")
        return VIRTUALIZATION_MODES[text]

    # -- health --

    def _nvmlDeviceGetTotalEccErrors(self, h: Handle, error_type: int, counter_type: int) -> int:
        gpu = self._gpu(h)
        counter = {0: "volatile", 1: "aggregate"}.get(counter_type)
        if counter is None or error_type not in (0, 1):
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        section = gpu.element.find(f"ecc_errors/{counter}")
        if section is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        if section.find("single_bit") is not None:  # reports before driver ~470
            names = ["double_bit/total"] if error_type == 1 else ["single_bit/total"]
        elif error_type == 1:
            names = [
                "sram_uncorrectable",
                "sram_uncorrectable_parity",
                "sram_uncorrectable_secded",
                "dram_uncorrectable",
            ]
        else:
            names = ["sram_correctable", "dram_correctable"]
        values = [(section.findtext(n) or "").strip() for n in names if section.find(n) is not None]
        numbers = [int(v) for v in values if v.isdigit()]
        if not numbers:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return sum(numbers)

    def _nvmlDeviceGetRetiredPagesPendingStatus(self, h: Handle) -> int:
        return self._gpu(h).enabled("retired_pages/pending_retirement")

    def _nvmlDeviceGetRemappedRows(self, h: Handle) -> tuple[int, int, int, int]:
        gpu = self._gpu(h)
        if gpu.element.find("remapped_rows/remapped_row_pending") is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return (
            int(gpu.number("remapped_rows/remapped_row_corr")),
            int(gpu.number("remapped_rows/remapped_row_unc")),
            gpu.enabled("remapped_rows/remapped_row_pending"),
            gpu.enabled("remapped_rows/remapped_row_failure"),
        )

    def _nvmlDeviceGetCurrentClocksEventReasons(self, h: Handle) -> int:
        gpu = self._gpu(h)
        section = gpu.element.find("clocks_event_reasons")
        prefix = "clocks_event_reason_"
        if section is None:
            section = gpu.element.find("clocks_throttle_reasons")
            prefix = "clocks_throttle_reason_"
        if section is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        mask = 0
        seen = False
        for child in section:
            value = (child.text or "").strip()
            if value in NOT_SUPPORTED_TEXTS:
                continue
            seen = True
            if value == "Active":
                mask |= CLOCK_EVENT_BITS[child.tag[len(prefix) :]]
        if not seen:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        return mask

    def _nvmlDeviceGetCurrentClocksThrottleReasons(self, h: Handle) -> int:
        return self._nvmlDeviceGetCurrentClocksEventReasons(h)

    # -- power, thermals --

    def _nvmlDeviceGetEnforcedPowerLimit(self, h: Handle) -> int:
        watts = self._gpu(h).number(
            "power_readings/enforced_power_limit", "gpu_power_readings/current_power_limit"
        )
        return round(watts * 1000)

    def _nvmlDeviceGetPowerManagementDefaultLimit(self, h: Handle) -> int:
        watts = self._gpu(h).number(
            "power_readings/default_power_limit", "gpu_power_readings/default_power_limit"
        )
        return round(watts * 1000)

    def _nvmlDeviceGetTemperature(self, h: Handle, sensor: int) -> int:
        if sensor != 0:
            raise NVMLError(NVML_ERROR_INVALID_ARGUMENT)
        return int(self._gpu(h).number("temperature/gpu_temp"))

    # -- topology --

    def _nvmlDeviceGetP2PStatus(self, h1: Handle, h2: Handle, index: Any) -> int:
        self._gpu(h1), self._gpu(h2)
        if not isinstance(index, int):  # what ctypes says to pynvml's tuple constant
            raise ctypes.ArgumentError(
                "argument 3: TypeError: Don't know how to convert parameter 3"
            )
        pair = self.links.get((h1.index, h2.index)) or self.links.get((h2.index, h1.index))
        if pair is None:
            return NVML_P2P_STATUS_UNKNOWN  # the report does not record P2P
        status = {0: pair[0], 2: pair[1]}.get(index)
        if status is None:
            raise NVMLError(NVML_ERROR_NOT_SUPPORTED)
        if isinstance(status, BaseException):
            raise status
        return status


API = sorted(
    name[1:]
    for name in vars(FakeNvml)
    if name.startswith("_nvml") and callable(vars(FakeNvml)[name])
)


def topology_links(text: str) -> dict[tuple[int, int], tuple[LinkStatus, LinkStatus]]:
    """P2P answers from an ``nvidia-smi topo -m`` matrix: "NV#" pairs are NVLink-connected
    (and so P2P-capable); for other pairs NVLink is not supported and P2P read is unknown."""
    rows = [line.split() for line in text.splitlines() if line.startswith("GPU")]
    links: dict[tuple[int, int], tuple[LinkStatus, LinkStatus]] = {}
    for a, row in enumerate(rows):
        for b in range(len(rows)):
            if a < b:
                nvlink = row[1 + b].startswith("NV")
                links[(a, b)] = (0, 0) if nvlink else (NVML_P2P_STATUS_UNKNOWN, 5)
    return links
