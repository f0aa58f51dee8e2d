"""GPU facts from NVML (``nvidia-ml-py``, module ``pynvml``), independent of torch.

NVML is what the driver itself reports: which GPUs exist, what they are, and in which state
(ECC, MIG, throttling, PCIe link). Every per-device question is asked on its own: a question
the GPU does not support (``NVML_ERROR_NOT_SUPPORTED``) is a known absence (``None``), any
other error makes only that one fact :class:`Unavailable`.

NVML can block forever on a wedged driver, so the whole read runs in a daemon thread that is
abandoned after :data:`NVML_TIMEOUT_S`.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import TimeoutError as FuturesTimeout
from typing import Any, Callable, Optional, Union

from torchdoctor import tables
from torchdoctor.facts import GpuDevice, GpuFacts, GpuLink, Unavailable, unavailable
from torchdoctor.gpusummary import architecture, gpu_summary
from torchdoctor.probes import ProbeContext, ProbeUnavailable, _sys, in_daemon_thread

NVML_TIMEOUT_S = 10.0
"""Give up on NVML after this many seconds (tests lower it)."""

# nvmlReturn_t codes (nvml.h). The module's own constants are used when it has them.
_NOT_SUPPORTED = 3
_FUNCTION_NOT_FOUND = 13
_INIT_REASONS = {
    12: "NVML library not found: no NVIDIA driver installed",  # LIBRARY_NOT_FOUND
    9: "NVIDIA driver not loaded (NVML: Driver Not Loaded)",  # DRIVER_NOT_LOADED
    18: (  # LIB_RM_VERSION_MISMATCH
        "NVML library and NVIDIA kernel driver versions differ (driver updated without a reboot?)"
    ),
    4: "no permission to use the NVIDIA driver (NVML: Insufficient Permissions)",  # NO_PERMISSION
}

# nvmlGpuP2PCapsIndex_t. Hard-coded: pynvml defines NVML_P2P_CAPS_INDEX_READ as the tuple
# ``(0,)`` (a stray trailing comma), which ctypes refuses as an argument.
_P2P_CAPS_INDEX_READ = 0
_P2P_CAPS_INDEX_NVLINK = 2
# nvmlGpuP2PStatus_t
_P2P_STATUS = {
    0: "OK",
    1: "chipset not supported",
    2: "GPU not supported",
    3: "IOH topology not supported",
    4: "disabled by regkey",
    5: "not supported",
    6: "unknown",
}
_P2P_STATUS_OK = 0
_P2P_STATUS_UNKNOWN = 6

# nvmlComputeMode_t, named as nvidia-smi names them.
_COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
# nvmlGpuVirtualizationMode_t, named as nvidia-smi names them.
_VIRTUALIZATION_MODES = {
    0: "None",
    1: "Pass-Through",
    2: "VGPU",
    3: "Host VGPU",
    4: "Host VSGA",
}
# nvmlClocksEventReason* bits (nvml.h; formerly nvmlClocksThrottleReason*).
_CLOCK_EVENT_REASONS = (
    (0x001, "gpu_idle"),
    (0x002, "applications_clocks_setting"),
    (0x004, "sw_power_cap"),
    (0x008, "hw_slowdown"),
    (0x010, "sync_boost"),
    (0x020, "sw_thermal_slowdown"),
    (0x040, "hw_thermal_slowdown"),
    (0x080, "hw_power_brake_slowdown"),
    (0x100, "display_clocks_setting"),
)
_NOT_REPORTED_REASONS = {"gpu_idle"}  # idle is not a throttle worth reporting

_TEMPERATURE_GPU = 0  # NVML_TEMPERATURE_GPU
_MEMORY_ERROR_CORRECTED = 0  # NVML_MEMORY_ERROR_TYPE_CORRECTED
_MEMORY_ERROR_UNCORRECTED = 1  # NVML_MEMORY_ERROR_TYPE_UNCORRECTED
_VOLATILE_ECC = 0  # NVML_VOLATILE_ECC

Value = Any  # a converted value, None (not supported) or Unavailable

_GARBAGE = (TypeError, ValueError, AttributeError, IndexError, KeyError, OverflowError)


def probe(ctx: ProbeContext) -> GpuFacts:
    """Read the NVIDIA GPUs through NVML; without an NVIDIA driver, count them on the PCI bus
    (Linux sysfs) so "no GPU" and "a GPU without its driver" are told apart."""
    nvml = _sys.import_optional("pynvml")
    if nvml is None:
        raise ProbeUnavailable("nvidia-ml-py (module pynvml) is not installed")
    try:
        return read_nvml(nvml, timeout_s=NVML_TIMEOUT_S)
    except ProbeUnavailable as exc:
        if exc.reason not in (_INIT_REASONS[12], _INIT_REASONS[9]):  # no driver / not loaded
            raise
        facts = pci_gpus(exc.reason)
        if facts is None:
            raise
        return facts


PCI_DEVICES = "/sys/bus/pci/devices"


def pci_gpus(why_no_nvml: str) -> Optional[GpuFacts]:
    """NVIDIA GPUs on the PCI bus, read from sysfs; None where sysfs cannot be read."""
    ids = tables.load("pci")
    try:
        entries = _sys.listdir(PCI_DEVICES)
    except OSError:
        return None
    found = []
    for entry in entries:
        try:
            vendor = _sys.read_text(f"{PCI_DEVICES}/{entry}/vendor").strip().lower()
            klass = _sys.read_text(f"{PCI_DEVICES}/{entry}/class").strip().lower()
        except OSError:
            continue
        if vendor == ids["nvidia_vendor"] and klass[:6] in ids["gpu_classes"]:
            found.append(entry)
    no_driver = unavailable(f"no NVIDIA driver ({why_no_nvml})")
    devices = [
        GpuDevice(index=i, pci_bus_id=bus, name=no_driver, compute_capability=no_driver,
                  architecture=no_driver, memory_total_mib=no_driver, vendor="nvidia",
                  gfx_target=None)
        for i, bus in enumerate(sorted(found))
    ]
    none_if_empty = None if not devices else no_driver
    return GpuFacts(
        source="pci",
        driver_version=None,  # known absent: there is no driver
        cuda_driver_version=None,
        vendors=["nvidia"] if devices else [],
        count=len(devices),
        devices=devices,
        links=[],
        name=none_if_empty,
        min_compute_capability=none_if_empty,
        max_compute_capability=none_if_empty,
        architectures=[] if not devices else no_driver,
    )


def read_nvml(nvml: Any, timeout_s: float = NVML_TIMEOUT_S) -> GpuFacts:
    """Run the whole NVML read in a daemon thread (one stuck in the driver must not keep
    the interpreter from exiting); give up after ``timeout_s`` seconds."""
    fut = in_daemon_thread("torchdoctor-nvml", _read, nvml)
    try:
        return fut.result(timeout_s)
    except FuturesTimeout:
        if fut.done():  # the read itself raised a TimeoutError
            raise
        raise ProbeUnavailable(f"NVML did not answer within {timeout_s:g} s") from None


# --------------------------------------------------------------------------------------
# the read
# --------------------------------------------------------------------------------------


def _read(nvml: Any) -> GpuFacts:
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - any failure to start NVML is the fact
        raise ProbeUnavailable(_init_reason(nvml, exc)) from None
    try:
        return _read_initialised(nvml)
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:  # noqa: BLE001, S110 - nothing useful to do about a failed shutdown
            pass


def _init_reason(nvml: Any, exc: BaseException) -> str:
    code = _error_code(nvml, exc)
    if code in _INIT_REASONS:
        return _INIT_REASONS[code]
    return f"NVML could not start: {_error_text(exc)}"


def _read_initialised(nvml: Any) -> GpuFacts:
    driver = _query(nvml, "the driver version", ("nvmlSystemGetDriverVersion",), convert=_text)
    cuda = _query(
        nvml,
        "the CUDA driver version",
        ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"),
        convert=_cuda_version,
    )
    count = _required(
        _query(nvml, "the GPU count", ("nvmlDeviceGetCount",), convert=_gpu_count),
        "the GPU count",
    )
    if isinstance(count, Unavailable):
        return GpuFacts(
            source="nvml",
            driver_version=driver,
            cuda_driver_version=cuda,
            vendors=["nvidia"],  # NVML answered: whatever it holds is NVIDIA
            count=count,
            devices=count,
            links=count,
            name=count,
            min_compute_capability=count,
            max_compute_capability=count,
            architectures=count,
        )

    handles: list[Union[Any, Unavailable]] = []
    devices: list[GpuDevice] = []
    for index in range(count):
        handle = _required(
            _query(nvml, f"GPU {index}", ("nvmlDeviceGetHandleByIndex",), index),
            f"GPU {index}",
        )
        handles.append(handle)
        if isinstance(handle, Unavailable):
            devices.append(_unopened_device(index, handle))
        else:
            devices.append(_read_device(nvml, index, handle))
    links = _read_links(nvml, handles)
    return GpuFacts(
        source="nvml",
        driver_version=driver,
        cuda_driver_version=cuda,
        vendors=["nvidia"] if devices else [],
        count=count,
        devices=devices,
        links=links,
        **_summaries(devices),
    )


def _read_device(nvml: Any, index: int, h: Any) -> GpuDevice:
    def q(what: str, names: Union[str, tuple[str, ...]], *args: Any, convert=_same) -> Value:
        names = names if isinstance(names, tuple) else (names,)
        return _query(nvml, what, names, h, *args, convert=convert)

    name = _required(q("the GPU name", "nvmlDeviceGetName", convert=_text), "the GPU name")
    cc = _required(
        q("the compute capability", "nvmlDeviceGetCudaComputeCapability", convert=_cc),
        "the compute capability",
    )
    memory = q("the memory size", "nvmlDeviceGetMemoryInfo")
    pci = q("the PCI bus id", "nvmlDeviceGetPciInfo")
    mig = q("the MIG mode", "nvmlDeviceGetMigMode", convert=_current_enabled)
    ecc = q("the ECC mode", "nvmlDeviceGetEccMode", convert=_current_enabled)
    throttle = _required(
        q(
            "the clock throttle reasons",
            ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"),
            convert=_reasons,
        ),
        "the clock throttle reasons",
    )
    retired = q(
        "the retired-pages status", "nvmlDeviceGetRetiredPagesPendingStatus", convert=_enabled
    )
    remapped = q("the row-remapping status", "nvmlDeviceGetRemappedRows", convert=_remap_pending)
    return GpuDevice(
        index=index,
        vendor="nvidia",
        gfx_target=None,
        name=name,
        compute_capability=cc,
        architecture=architecture(cc),
        uuid=q("the GPU UUID", "nvmlDeviceGetUUID", convert=_text),
        serial=q("the serial number", "nvmlDeviceGetSerial", convert=_text),
        pci_bus_id=_derive(pci, lambda p: _text(p.busId), "the PCI bus id"),
        memory_total_mib=_derive(memory, lambda m: _mib(m.total), "the memory size"),
        memory_used_mib=_derive(memory, lambda m: _mib(m.used), "the memory use"),
        pcie_gen_current=q(
            "the PCIe generation", "nvmlDeviceGetCurrPcieLinkGeneration", convert=_pcie_gen
        ),
        pcie_gen_max=q(
            "the maximum PCIe generation", "nvmlDeviceGetMaxPcieLinkGeneration", convert=_pcie_gen
        ),
        pcie_width_current=q(
            "the PCIe link width", "nvmlDeviceGetCurrPcieLinkWidth", convert=_pcie_width
        ),
        pcie_width_max=q(
            "the maximum PCIe link width", "nvmlDeviceGetMaxPcieLinkWidth", convert=_pcie_width
        ),
        persistence_mode=q(
            "the persistence mode", "nvmlDeviceGetPersistenceMode", convert=_enabled
        ),
        compute_mode=q(
            "the compute mode", "nvmlDeviceGetComputeMode", convert=_named(_COMPUTE_MODES)
        ),
        mig_mode=mig,
        ecc_mode=ecc,
        ecc_errors_uncorrected=q(
            "the uncorrected ECC error count",
            "nvmlDeviceGetTotalEccErrors",
            _MEMORY_ERROR_UNCORRECTED,
            _VOLATILE_ECC,
            convert=_count,
        ),
        ecc_errors_corrected=q(
            "the corrected ECC error count",
            "nvmlDeviceGetTotalEccErrors",
            _MEMORY_ERROR_CORRECTED,
            _VOLATILE_ECC,
            convert=_count,
        ),
        retired_pages_pending=_any_pending(retired, remapped),
        throttle_reasons=throttle,
        power_limit_w=q(
            "the enforced power limit", "nvmlDeviceGetEnforcedPowerLimit", convert=_watts
        ),
        power_default_limit_w=q(
            "the default power limit",
            "nvmlDeviceGetPowerManagementDefaultLimit",
            convert=_watts,
        ),
        temperature_c=q(
            "the GPU temperature", "nvmlDeviceGetTemperature", _TEMPERATURE_GPU, convert=_celsius
        ),
        virtualization_mode=q(
            "the virtualization mode",
            "nvmlDeviceGetVirtualizationMode",
            convert=_named(_VIRTUALIZATION_MODES),
        ),
    )


def _unopened_device(index: int, reason: Unavailable) -> GpuDevice:
    known = {"index", "vendor", "gfx_target"}  # an NVML handle: NVIDIA, so no gfx target
    fields = {name: reason for name in GpuDevice.model_fields if name not in known}
    return GpuDevice(index=index, vendor="nvidia", gfx_target=None, **fields)


def _read_links(nvml: Any, handles: Sequence[Any]) -> list[GpuLink]:
    links = []
    for a in range(len(handles)):
        for b in range(a + 1, len(handles)):
            ha, hb = handles[a], handles[b]
            if isinstance(ha, Unavailable) or isinstance(hb, Unavailable):
                missing = ha if isinstance(ha, Unavailable) else hb
                links.append(GpuLink(a=a, b=b, p2p_read=missing, nvlink=missing))
                continue
            read = _query(
                nvml,
                f"the P2P read status of GPUs {a} and {b}",
                ("nvmlDeviceGetP2PStatus",),
                ha,
                hb,
                _P2P_CAPS_INDEX_READ,
                convert=_named(_P2P_STATUS),
            )
            nvlink = _query(
                nvml,
                f"the NVLink status of GPUs {a} and {b}",
                ("nvmlDeviceGetP2PStatus",),
                ha,
                hb,
                _P2P_CAPS_INDEX_NVLINK,
                convert=_nvlink_status,
            )
            # NOT_SUPPORTED for the NVLink capability means these GPUs have no NVLink.
            links.append(
                GpuLink(a=a, b=b, p2p_read=read, nvlink=False if nvlink is None else nvlink)
            )
    return links


def _summaries(devices: Sequence[GpuDevice]) -> dict[str, Any]:
    return {"name": devices[0].name if devices else None, **gpu_summary(devices)}


# --------------------------------------------------------------------------------------
# calling NVML
# --------------------------------------------------------------------------------------


def _same(value: Any) -> Any:
    return value


def _query(
    nvml: Any,
    what: str,
    names: Sequence[str],
    *args: Any,
    convert: Callable[[Any], Any] = _same,
) -> Value:
    """Call the first of ``names`` that this pynvml and driver have; convert the answer.

    NOT_SUPPORTED -> None; any other error or an unusable answer -> Unavailable.
    """
    last: Optional[Unavailable] = None
    for name in names:
        fn = getattr(nvml, name, None)
        if fn is None:
            last = unavailable(f"NVML could not read {what}: this nvidia-ml-py has no {name}")
            continue
        try:
            raw = fn(*args)
        except Exception as exc:  # noqa: BLE001 - NVML and ctypes errors alike become facts
            code = _error_code(nvml, exc)
            if code == _code(nvml, "NVML_ERROR_NOT_SUPPORTED", _NOT_SUPPORTED):
                return None
            last = unavailable(f"NVML could not read {what}: {_error_text(exc)}")
            if code == _code(nvml, "NVML_ERROR_FUNCTION_NOT_FOUND", _FUNCTION_NOT_FOUND):
                continue  # the driver predates this call: try the older one
            return last
        return _convert(raw, convert, what)
    assert last is not None
    return last


def _convert(raw: Any, convert: Callable[[Any], Any], what: str) -> Value:
    """Apply ``convert`` to an NVML answer; garbage becomes Unavailable."""
    try:
        return convert(raw)
    except _GARBAGE:
        return unavailable(f"NVML returned an unusable value for {what}: {_short(raw)}")


def _derive(value: Value, convert: Callable[[Any], Any], what: str) -> Value:
    """A fact computed from another answer (None and Unavailable pass through)."""
    if value is None or isinstance(value, Unavailable):
        return value
    return _convert(value, convert, what)


def _required(value: Value, what: str) -> Value:
    """For facts that cannot be None: NOT_SUPPORTED becomes Unavailable."""
    if value is None:
        return unavailable(f"NVML does not support reading {what} on this GPU")
    return value


def _code(nvml: Any, name: str, default: int) -> int:
    value = getattr(nvml, name, default)
    return value if isinstance(value, int) else default


def _error_code(nvml: Any, exc: BaseException) -> Optional[int]:
    nvml_error = getattr(nvml, "NVMLError", None)
    if isinstance(nvml_error, type) and isinstance(exc, nvml_error):
        value = getattr(exc, "value", None)
        return value if isinstance(value, int) else None
    return None


def _error_text(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - pynvml's __str__ itself calls into the library
        text = ""
    return text or type(exc).__name__


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# --------------------------------------------------------------------------------------
# converters: NVML's raw answers -> fact values (raise on garbage)
# --------------------------------------------------------------------------------------


def _text(raw: Any) -> str:
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        raise TypeError(raw)
    text = raw.strip("\x00").strip()
    if not text:
        raise ValueError(raw)
    return text


def _int(raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise TypeError(raw)
    return raw


def _count(raw: Any) -> int:
    value = _int(raw)
    if value < 0:
        raise ValueError(raw)
    return value


def _gpu_count(raw: Any) -> int:
    value = _count(raw)
    if value > 1024:  # no machine has that many; do not loop over garbage
        raise ValueError(raw)
    return value


def _cuda_version(raw: Any) -> str:
    value = _int(raw)  # e.g. 12040 -> "12.4"
    if value < 1000:
        raise ValueError(raw)
    return f"{value // 1000}.{(value % 1000) // 10}"


def _cc(raw: Any) -> float:
    major, minor = (_int(x) for x in raw)
    if not (1 <= major <= 99 and 0 <= minor <= 9):
        raise ValueError(raw)
    return float(f"{major}.{minor}")


def _mib(raw: Any) -> int:
    return _count(raw) // (1024 * 1024)


def _pcie_gen(raw: Any) -> int:
    value = _int(raw)
    if not 1 <= value <= 16:
        raise ValueError(raw)
    return value


def _pcie_width(raw: Any) -> int:
    value = _int(raw)
    if not 1 <= value <= 64:
        raise ValueError(raw)
    return value


def _enabled(raw: Any) -> bool:
    value = _int(raw)
    if value not in (0, 1):
        raise ValueError(raw)
    return value == 1


def _current_enabled(raw: Any) -> bool:
    current, _pending = raw  # [current, pending]
    return _enabled(current)


def _remap_pending(raw: Any) -> bool:
    _corrected, _uncorrected, pending, _failure = raw
    return _int(pending) != 0


def _named(names: dict[int, str]) -> Callable[[Any], str]:
    def convert(raw: Any) -> str:
        return names[_int(raw)]

    return convert


def _nvlink_status(raw: Any) -> Value:
    status = _int(raw)
    if status not in _P2P_STATUS:
        raise ValueError(raw)
    if status == _P2P_STATUS_UNKNOWN:
        return unavailable("NVML reported an unknown NVLink status")
    return status == _P2P_STATUS_OK


def _reasons(raw: Any) -> list[str]:
    mask = _count(raw)
    names = []
    known = 0
    for bit, name in _CLOCK_EVENT_REASONS:
        known |= bit
        if mask & bit and name not in _NOT_REPORTED_REASONS:
            names.append(name)
    unknown = mask & ~known
    if unknown:
        names.append(f"unknown_{unknown:#x}")
    return names


def _watts(raw: Any) -> float:
    return _count(raw) / 1000.0  # NVML answers in milliwatts


def _celsius(raw: Any) -> int:
    value = _int(raw)
    if not -100 <= value <= 250:
        raise ValueError(raw)
    return value


def _any_pending(*values: Value) -> Value:
    """Page retirement (pre-Ampere) or row remapping (Ampere+): pending if either says so."""
    if any(v is True for v in values):
        return True
    missing = next((v for v in values if isinstance(v, Unavailable)), None)
    if missing is not None:
        return missing
    if any(v is False for v in values):
        return False
    return None
