"""The fact model: everything torchdoctor knows about a machine, and nothing it judged.

Every value is typed data, ``None`` (known to be absent: the variable is unset, the
machine has no NVLink) or :class:`Unavailable` (could not be determined: torch is not
installed, NVML is missing, the report does not say). Rules that touch an unavailable fact
are *skipped with the reason*; they never fire on a guess.

The field docstrings are the fact reference (``torchdoctor probe --schema`` prints them).
Compute capabilities are floats (``8.6``, ``12.0``) so rules can compare them directly;
versions are strings, compared in rules through ``v()`` (``packaging.version``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Optional, TypeVar, Union

from torchdoctor.model import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1

T = TypeVar("T")


class Unavailable(BaseModel):
    """A fact that could not be determined, with the reason in words a user understands."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    unavailable: str
    """Why the fact is unknown (e.g. "torch is not installed", "NVML library not found")."""

    @property
    def reason(self) -> str:
        return self.unavailable

    def __bool__(self) -> bool:  # an unknown is never truthy by accident
        raise TypeError(f"unavailable fact used as a boolean: {self.unavailable}")


def unavailable(reason: str) -> Unavailable:
    return Unavailable(unavailable=reason)


NOT_RECORDED = "not recorded"

# ``Maybe[T]``: the value, or Unavailable. Unavailable is tried first (left to right) so a
# ``{"unavailable": "..."}`` object is never mistaken for a dict-typed value.
Maybe = Annotated[Union[Unavailable, T], Field(union_mode="left_to_right")]


def _unknown() -> Unavailable:
    return Unavailable(unavailable=NOT_RECORDED)


def _field() -> Any:
    return Field(default_factory=_unknown)


class _Model(BaseModel):
    # Field docstrings are the fact reference, but pydantic's use_attribute_docstrings parses
    # this file's source at every import (about 30 ms of every run): json_schema() reads them
    # only when the schema is asked for.
    model_config = ConfigDict(frozen=True, extra="forbid")


class _JobModel(_Model):
    # `check --distributed` only: its schemas are built when a job is first validated, not by every
    # command that imports the facts (triage, check --from-report)
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


# --------------------------------------------------------------------------------------
# torch (read in a child process of the target interpreter)
# --------------------------------------------------------------------------------------

ImportStatus = Literal[
    "ok", "not-installed", "import-error", "crashed", "timeout", "error", "unknown-from-report"
]


class TorchDevice(_Model):
    index: int
    """Device index as torch numbers it (after CUDA_VISIBLE_DEVICES)."""
    name: Maybe[str] = _field()
    """Device name from torch.cuda.get_device_name."""
    compute_capability: Maybe[float] = _field()
    """Compute capability as major.minor, e.g. 8.6."""
    total_memory_bytes: Maybe[Optional[int]] = _field()
    """Total device memory in bytes (torch.cuda.get_device_properties)."""
    multi_processor_count: Maybe[Optional[int]] = _field()
    """Number of streaming multiprocessors (SMs)."""


LibrarySource = Literal["wheel", "other"]


class DeadAttribute(_Model):
    """An attribute under ``torch.backends`` that PyTorch does not have (a fake or misspelt
    setting: assigning it sets nothing), or one that replaced a real function, class, module
    or object with a plain value (``enable_flash_sdp = True``). Observed by audit() in the
    process that assigned it; the judgement is the rules reading ``torch.dead_attributes``."""

    attribute: str
    """Its dotted path, e.g. torch.backends.cudnn.benchmrk."""
    value: str
    """The assigned value as Python writes it (``True``, ``'tf32'``; cut at 80 characters)."""
    value_type: str
    """The assigned value's type name (``bool``)."""
    replaced: Optional[str] = None
    """What it replaced ("function", "module", "cuFFTPlanCacheManager object"), or None when
    torch has no such name."""
    did_you_mean: Optional[str] = None
    """A statement that is safe to paste instead, or None when nothing is close."""
    note: Optional[str] = None
    """More from the registry (rules/settings.yaml), when the attribute is a fake it lists."""
    category: str = "performance"
    """What a mistake with it costs (the registry can say another category)."""


class LoadedLibrary(_Model):
    """One native library file the torch process had loaded (Linux, from /proc/self/maps)."""

    name: str
    """The library, without directory, version or auditwheel hash: libcudnn_ops, libnvJitLink,
    libgomp (for libgomp-a34b3233.so.1), libtorch_cpu."""
    path: str
    """The file loaded, as the kernel names it (symbolic links resolved), e.g.
    /usr/local/cuda-12.1/targets/x86_64-linux/lib/libnvJitLink.so.12.1.105."""
    source: LibrarySource
    """wheel: loaded from one of torch's own library directories (torch.wheel_library_dirs);
    other: from anywhere else (a system CUDA toolkit, LD_LIBRARY_PATH, a conda environment)."""
    bundled_path: Optional[str] = None
    """The copy of this library torch's wheel directories ship (for a wheel entry, the path
    itself); None when they ship none (conda builds use the environment's libraries)."""
    shadows_bundled: bool = False
    """True when this copy from elsewhere stands in for the wheel's: it has the wheel copy's
    soname (file name, or a longer version of it: libgomp.so.1.0.0 for libgomp.so.1), so the
    dynamic loader binds torch to whichever came first, or it was preloaded (LD_PRELOAD
    symbols come before every library's), and it is not the same build (a file of another
    size or other first 64 KiB than the wheel's copy)."""
    found_via: Optional[Literal["LD_PRELOAD", "LD_LIBRARY_PATH"]] = None
    """LD_PRELOAD when an LD_PRELOAD entry names this file (or this library by name);
    LD_LIBRARY_PATH when an LD_LIBRARY_PATH directory holds it; None otherwise (the loader
    cache /etc/ld.so.conf.d, a default directory, or loaded by path by another library)."""


class TorchFacts(_Model):
    """What the torch of the target interpreter is and what it can use."""

    python_executable: Maybe[str] = _field()
    """The interpreter torch facts were read with (--python, default the running one)."""
    import_status: Maybe[ImportStatus] = _field()
    """ok | not-installed | import-error | crashed (killed by a signal) | timeout | error |
    unknown-from-report (a pasted report says torch could not be imported, collect_env's
    `PyTorch version: N/A`, and shows neither the error nor whether torch is installed)."""
    import_error: Maybe[Optional[str]] = _field()
    """The last line of the error when `import torch` failed, else None."""
    missing_library: Maybe[Optional[str]] = _field()
    """Shared library named in an ImportError (e.g. libcudnn.so.9), else None."""
    missing_symbol: Maybe[Optional[str]] = _field()
    """Undefined symbol named in an ImportError, else None."""
    signal: Maybe[Optional[str]] = _field()
    """Signal that killed the import (SIGILL = illegal instruction, SIGSEGV), else None."""
    version: Maybe[str] = _field()
    """torch.__version__, e.g. 2.13.0+cpu."""
    git_version: Maybe[Optional[str]] = _field()
    """torch.version.git_version."""
    debug_build: Maybe[bool] = _field()
    """torch.version.debug."""
    module_path: Maybe[str] = _field()
    """Directory of the imported torch package."""
    cuda_build: Maybe[Optional[str]] = _field()
    """CUDA version torch was built with (torch.version.cuda); None for CPU/ROCm builds."""
    hip_build: Maybe[Optional[str]] = _field()
    """HIP (ROCm) version torch was built with (torch.version.hip); None otherwise."""
    hip_runtime_version: Maybe[Optional[str]] = _field()
    """HIP runtime version of a ROCm build as torch.__config__.show() states it ("HIP Runtime";
    collect_env's "HIP runtime version"), e.g. 6.2.41134; None for builds without HIP."""
    miopen_version: Maybe[Optional[str]] = _field()
    """MIOpen version of a ROCm build as torch.__config__.show() states it (collect_env's
    "MIOpen runtime version"), e.g. 3.2.0; None for builds without HIP."""
    xpu_build: Maybe[Optional[str]] = _field()
    """SYCL/oneAPI version torch was built with for Intel GPUs (torch.version.xpu, collect_env's
    "XPU used to build PyTorch"), e.g. 20250201; None for builds without XPU support."""
    cudnn_version: Maybe[Optional[str]] = _field()
    """cuDNN runtime version torch loaded, e.g. 9.10.2; None without cuDNN."""
    cudnn_compiled_version: Maybe[Optional[str]] = _field()
    """cuDNN version torch was compiled against; None without cuDNN."""
    nccl_version: Maybe[Optional[str]] = _field()
    """NCCL version, e.g. 2.27.3; None without NCCL."""
    arch_list: Maybe[list[str]] = _field()
    """Compiled GPU architectures (torch.cuda.get_arch_list), e.g. ["sm_80", "sm_90"]."""
    cuda_available: Maybe[bool] = _field()
    """torch.cuda.is_available()."""
    device_count: Maybe[int] = _field()
    """torch.cuda.device_count()."""
    devices: Maybe[list[TorchDevice]] = _field()
    """Per-device properties as torch sees them."""
    cuda_init_error: Maybe[Optional[str]] = _field()
    """Warning or error text CUDA initialisation produced (driver too old, no kernel image).
    From a pasted report: torch's own "CUDA initialization: ..." warning when the text has it
    (one line, at most 1,000 characters)."""
    compile_error: Maybe[Optional[str]] = _field()
    """The error torch.compile raised, where pasted text shows it (one line, at most 1,000
    characters), e.g. "Dynamo is not supported on Python 3.12+": torch's own refusal of the
    interpreter. Never read by the live probe, which does not call torch.compile."""
    mps_built: Maybe[bool] = _field()
    """torch.backends.mps.is_built()."""
    mps_available: Maybe[bool] = _field()
    """torch.backends.mps.is_available()."""
    xpu_available: Maybe[bool] = _field()
    """torch.xpu.is_available() where torch has XPU support, else False."""
    cpu_capability: Maybe[Optional[str]] = _field()
    """torch.backends.cpu.get_cpu_capability(), e.g. AVX512, AVX2, DEFAULT."""
    cpu_capabilities: Maybe[dict[str, Any]] = _field()
    """torch.cpu.get_capabilities() where the version has it (amx_bf16, avx512_bf16, ...)."""
    mkl_available: Maybe[bool] = _field()
    """torch.backends.mkl.is_available()."""
    mkl_version: Maybe[Optional[str]] = _field()
    """MKL version from torch.__config__.show(), if stated."""
    mkldnn_available: Maybe[bool] = _field()
    """torch.backends.mkldnn.is_available() (oneDNN)."""
    mkldnn_version: Maybe[Optional[str]] = _field()
    """oneDNN version from torch.__config__.show(), if stated."""
    openmp_available: Maybe[bool] = _field()
    """torch.backends.openmp.is_available()."""
    openmp_version: Maybe[Optional[str]] = _field()
    """OpenMP version from torch.__config__.parallel_info(), if stated."""
    num_threads: Maybe[int] = _field()
    """torch.get_num_threads() (intra-op)."""
    num_interop_threads: Maybe[int] = _field()
    """torch.get_num_interop_threads()."""
    float32_matmul_precision: Maybe[str] = _field()
    """torch.get_float32_matmul_precision(): highest | high | medium."""
    deterministic_algorithms: Maybe[bool] = _field()
    """torch.are_deterministic_algorithms_enabled()."""
    deterministic_warn_only: Maybe[bool] = _field()
    """torch.is_deterministic_algorithms_warn_only_enabled()."""
    settings: Maybe[dict[str, Maybe[Any]]] = _field()
    """Current value of every real torch.backends setting and SDPA switch, by settings key
    (e.g. "torch.backends.cudnn.benchmark"); a getter that raised is Unavailable."""
    dead_attributes: Maybe[list[DeadAttribute]] = []
    """Attributes under torch.backends that set nothing or replaced a real one, as the running
    process left them: observed by audit(); empty elsewhere, since check's child and the
    interpreter that wrote a pasted report are fresh processes that assigned nothing."""
    wheel_library_dirs: Maybe[list[str]] = _field()
    """torch's own library directories, resolved: torch/lib, torch.libs (auditwheel), and,
    where torch's metadata requires nvidia-* wheels (or it loaded from them), their nvidia/*/lib
    directories on sys.path. Linux only."""
    loaded_libraries: Maybe[list[LoadedLibrary]] = _field()
    """Native libraries the torch process had loaded after `import torch` and CUDA
    initialisation (or when the import failed), read from /proc/self/maps: every library torch's
    wheel directories ship, and cuDNN, cuBLAS, NCCL, nvJitLink, cuSPARSE, cudart, libgomp,
    libiomp5, libomp from wherever they came. Unavailable off Linux."""


# --------------------------------------------------------------------------------------
# gpu (NVML via nvidia-ml-py, independent of torch; or a report's GPU lines)
# --------------------------------------------------------------------------------------


GpuVendor = Literal["nvidia", "amd", "intel"]


class GpuDevice(_Model):
    index: int
    """NVML device index for NVIDIA GPUs (PCI order, ignores CUDA_VISIBLE_DEVICES); for AMD and
    Intel GPUs read from a report, the device's position in the report's list of that vendor."""
    name: Maybe[str] = _field()
    """Product name, e.g. NVIDIA H100 80GB HBM3, AMD Instinct MI300X, Intel(R) Arc(TM) B580 Graphics."""
    vendor: Maybe[GpuVendor] = _field()
    """nvidia | amd | intel. NVML and nvidia-smi list NVIDIA GPUs only; a report names AMD GPUs
    on its GPU line (ROCm builds) and Intel GPUs in its "Intel GPU models" section (XPU builds)."""
    compute_capability: Maybe[float] = _field()
    """Compute capability as major.minor, e.g. 9.0 (from NVML or the GPU-name table). A CUDA
    notion: unavailable for AMD and Intel GPUs."""
    architecture: Maybe[str] = _field()
    """Architecture name: Kepler, Maxwell, Pascal, Volta, Turing, Ampere, Ada, Hopper, Blackwell
    (NVIDIA only: unavailable for AMD and Intel GPUs, see gfx_target)."""
    gfx_target: Maybe[Optional[str]] = _field()
    """AMD GPU target as ROCm names it (gcnArchName), e.g. gfx942:sramecc+:xnack- or gfx1100;
    unavailable for an AMD GPU whose target the report does not state; None for NVIDIA and
    Intel GPUs."""
    uuid: Maybe[Optional[str]] = _field()
    """GPU UUID (redacted in reports)."""
    serial: Maybe[Optional[str]] = _field()
    """Board serial number (redacted in reports)."""
    pci_bus_id: Maybe[Optional[str]] = _field()
    """PCI bus id, e.g. 00000000:3B:00.0."""
    memory_total_mib: Maybe[Optional[int]] = _field()
    """Total framebuffer memory in MiB."""
    memory_used_mib: Maybe[Optional[int]] = _field()
    """Used framebuffer memory in MiB at probe time."""
    pcie_gen_current: Maybe[Optional[int]] = _field()
    """Current PCIe link generation (drops at idle on many GPUs)."""
    pcie_gen_max: Maybe[Optional[int]] = _field()
    """Maximum PCIe link generation of the GPU and host."""
    pcie_width_current: Maybe[Optional[int]] = _field()
    """Current PCIe link width (lanes)."""
    pcie_width_max: Maybe[Optional[int]] = _field()
    """Maximum PCIe link width (lanes)."""
    persistence_mode: Maybe[Optional[bool]] = _field()
    """Persistence mode enabled (Linux); None where not supported."""
    compute_mode: Maybe[Optional[str]] = _field()
    """Default | Exclusive_Process | Prohibited."""
    mig_mode: Maybe[Optional[bool]] = _field()
    """MIG mode currently enabled; None where the GPU has no MIG."""
    ecc_mode: Maybe[Optional[bool]] = _field()
    """ECC currently enabled; None where not supported."""
    ecc_errors_uncorrected: Maybe[Optional[int]] = _field()
    """Volatile (since boot) uncorrected ECC errors."""
    ecc_errors_corrected: Maybe[Optional[int]] = _field()
    """Volatile (since boot) corrected ECC errors."""
    retired_pages_pending: Maybe[Optional[bool]] = _field()
    """Page retirement or row remapping pending a reset."""
    throttle_reasons: Maybe[list[str]] = _field()
    """Active clock throttle reasons, e.g. ["hw_slowdown", "sw_thermal_slowdown"] (idle excluded)."""
    power_limit_w: Maybe[Optional[float]] = _field()
    """Enforced power limit in watts."""
    power_default_limit_w: Maybe[Optional[float]] = _field()
    """Default power limit in watts."""
    temperature_c: Maybe[Optional[int]] = _field()
    """GPU core temperature in degrees Celsius."""
    virtualization_mode: Maybe[Optional[str]] = _field()
    """None | Pass-Through | VGPU | Host VGPU ..."""


class GpuLink(_Model):
    a: int
    """First GPU index."""
    b: int
    """Second GPU index."""
    p2p_read: Maybe[Optional[str]] = _field()
    """NVML P2P read status: OK, chipset not supported, disabled by regkey, ..."""
    nvlink: Maybe[Optional[bool]] = _field()
    """Whether the two GPUs are connected by NVLink."""


class GpuFacts(_Model):
    """GPUs and driver as the hardware and driver report them."""

    source: Maybe[str] = _field()
    """Where these facts came from: nvml | nvidia-smi | pci | report."""
    driver_version: Maybe[Optional[str]] = _field()
    """NVIDIA driver version, e.g. 550.54.15 (NVIDIA only: never an AMD or Intel driver; on
    macOS collect_env's "Nvidia driver version" is the CUDA kernel extension's and is not kept)."""
    cuda_driver_version: Maybe[Optional[str]] = _field()
    """Highest CUDA version the driver supports, e.g. 12.4 (from a report: torch's "driver ...
    too old (found version 11040)" warning, which states it as 11.4)."""
    intel_driver_version: Maybe[Optional[str]] = _field()
    """Intel GPU driver as a report's "Intel GPU driver version" section lists it: the Windows
    display driver version (32.0.101.8826), or the Linux packages with their versions joined by
    "; " (libze1 1.21.9.0-1136~22.04; intel-opencl-icd 25.18.33578.15-1146~22.04)."""
    vendors: Maybe[list[GpuVendor]] = _field()
    """Distinct vendors of the GPUs in devices, in device order ([] without GPUs). The probe
    reads NVIDIA GPUs only (NVML); rules that judge NVIDIA GPUs should check for "nvidia"."""
    count: Maybe[int] = _field()
    """Number of NVIDIA GPUs (0 when none), the ones every CUDA rule is about; AMD and Intel
    GPUs a report lists are in devices and vendors only. A ROCm report names only the GPU torch
    uses and says nothing of NVIDIA GPUs, so there the count is unavailable."""
    devices: Maybe[list[GpuDevice]] = _field()
    """Per-GPU facts (from a ROCm report: the one GPU it names)."""
    links: Maybe[list[GpuLink]] = _field()
    """P2P / NVLink between GPU pairs."""
    name: Maybe[Optional[str]] = _field()
    """Name of GPU 0 (None without GPUs)."""
    min_compute_capability: Maybe[Optional[float]] = _field()
    """Lowest compute capability among the NVIDIA GPUs (None without GPUs; unavailable when
    the GPUs are AMD or Intel only)."""
    max_compute_capability: Maybe[Optional[float]] = _field()
    """Highest compute capability among the NVIDIA GPUs (None without GPUs; unavailable when
    the GPUs are AMD or Intel only)."""
    architectures: Maybe[list[str]] = _field()
    """Distinct architecture names of the NVIDIA GPUs, in device order."""


# --------------------------------------------------------------------------------------
# cpu, memory
# --------------------------------------------------------------------------------------


class CpuFacts(_Model):
    vendor: Maybe[Optional[str]] = _field()
    """GenuineIntel | AuthenticAMD | ARM | Apple | IBM ..."""
    model: Maybe[Optional[str]] = _field()
    """CPU model name."""
    architecture: Maybe[Optional[str]] = _field()
    """Machine architecture of the CPU: x86_64, aarch64, arm64, ppc64le ..."""
    flags: Maybe[dict[str, bool]] = _field()
    """ISA features that matter to PyTorch: avx2, avx512f, avx512_bf16, avx512_vnni,
    amx_bf16, amx_tile, amx_int8, neon, sve, sve2, vsx."""
    physical_cores: Maybe[Optional[int]] = _field()
    """Physical cores across all sockets."""
    logical_cores: Maybe[Optional[int]] = _field()
    """Logical CPUs (hardware threads) online: /proc/cpuinfo and os.cpu_count() list online
    CPUs only; from a report, lscpu's "On-line CPU(s) list" where it has one (CPUs in its
    "Off-line CPU(s) list" are not counted), else its "CPU(s)"."""
    sockets: Maybe[Optional[int]] = _field()
    """CPU sockets."""
    numa_nodes: Maybe[Optional[int]] = _field()
    """NUMA nodes."""
    affinity: Maybe[Optional[list[int]]] = _field()
    """CPUs this process may run on (sched_getaffinity); None where the OS has no such call."""
    affinity_count: Maybe[Optional[int]] = _field()
    """Number of CPUs in the affinity mask."""
    cgroup_version: Maybe[Optional[int]] = _field()
    """1 or 2 when a cgroup hierarchy was found, else None."""
    quota_cpus: Maybe[Optional[float]] = _field()
    """CPU quota of this process's cgroup in CPUs (quota/period); None = no quota."""
    effective_cpus: Maybe[Optional[float]] = _field()
    """CPUs actually usable: min(affinity, quota)."""


class MemoryFacts(_Model):
    total_bytes: Maybe[Optional[int]] = _field()
    """Physical RAM in bytes."""
    available_bytes: Maybe[Optional[int]] = _field()
    """RAM available for new processes, in bytes."""
    swap_total_bytes: Maybe[Optional[int]] = _field()
    """Swap size in bytes."""
    cgroup_limit_bytes: Maybe[Optional[int]] = _field()
    """Memory limit of this process's cgroup in bytes; None = no limit."""
    shm_total_bytes: Maybe[Optional[int]] = _field()
    """Size of /dev/shm in bytes (DataLoader workers share tensors through it)."""
    shm_free_bytes: Maybe[Optional[int]] = _field()
    """Free space in /dev/shm in bytes."""


# --------------------------------------------------------------------------------------
# env, packages, system
# --------------------------------------------------------------------------------------


class EnvFacts(_Model):
    variables: Maybe[dict[str, str]] = _field()
    """Allow-listed environment variables that change PyTorch's behaviour (CUDA_*, NCCL_*,
    OMP_*, MKL_*, KMP_*, PYTORCH_*, TORCH_*, CUBLAS_*, CUDNN_*, NVIDIA_*, LD_PRELOAD,
    LD_LIBRARY_PATH, ...). Nothing outside the allow-list is ever read. Absent = unset."""


class Distribution(_Model):
    name: str
    """Distribution name as listed (normalised lower-case with dashes)."""
    version: Maybe[Optional[str]] = _field()
    """Version string."""
    source: Maybe[str] = _field()
    """pip | conda | report-pip | report-conda."""
    build: Maybe[Optional[str]] = _field()
    """Conda build string (often encodes CUDA and cuDNN, e.g. py3.9_cuda11.3_cudnn8.2.0_0)."""
    channel: Maybe[Optional[str]] = _field()
    """Conda channel, 'pypi' for pip-installed entries in a conda list."""
    location: Maybe[Optional[str]] = _field()
    """Directory the distribution is installed in."""
    provides_torch: Maybe[bool] = _field()
    """Whether this distribution provides the top-level `torch` module."""


class PackagesFacts(_Model):
    versions: Maybe[dict[str, str]] = _field()
    """Versions of the relevant distributions present (torch, torchvision, torchaudio,
    triton, numpy, nvidia-*, pynvml, nvidia-ml-py, accelerate, lightning, transformers,
    deepspeed, xformers, flash-attn, ...), by normalised name."""
    distributions: Maybe[list[Distribution]] = _field()
    """Every relevant distribution entry found (a name may appear twice: pip and conda)."""
    torch_providers: Maybe[list[str]] = _field()
    """Distributions that provide the `torch` module (torch, torch-nightly, pytorch, ...).
    More than one is a fact, not an error."""
    torch_module_path: Maybe[Optional[str]] = _field()
    """Where the imported torch lives (None when torch cannot be found)."""
    extension_archs: Maybe[dict[str, list[str]]] = _field()
    """GPU architectures the CUDA code of a compiled extension beside torch was built for, by
    distribution name, as the paste states them (detectron2's collect_env rows "detectron2 arch
    flags  sm_37", "torchvision arch flags  3.5, 5.0, 6.0"): ["sm_37"], ["sm_35", "sm_50",
    "sm_60"]. From pasted text only."""


class SystemFacts(_Model):
    os: Maybe[str] = _field()
    """Linux | Windows | Darwin."""
    os_name: Maybe[Optional[str]] = _field()
    """Distribution or product name with version, e.g. Ubuntu 22.04.4 LTS, macOS 14.5."""
    os_version: Maybe[Optional[str]] = _field()
    """OS version number (e.g. 22.04, 10.0.19045, 14.5)."""
    kernel: Maybe[Optional[str]] = _field()
    """Kernel release."""
    libc: Maybe[Optional[str]] = _field()
    """C library and version, e.g. glibc 2.35."""
    python_version: Maybe[str] = _field()
    """Python version of the target interpreter, e.g. 3.11.7."""
    python_implementation: Maybe[str] = _field()
    """CPython | PyPy ..."""
    python_bits: Maybe[int] = _field()
    """Pointer size of the interpreter in bits (32 or 64)."""
    machine: Maybe[Optional[str]] = _field()
    """Architecture the interpreter runs as: x86_64, AMD64, arm64, aarch64 ..."""
    translated: Maybe[Optional[bool]] = _field()
    """True when the interpreter runs translated (x86_64 Python under Rosetta 2 on Apple
    Silicon); None where not applicable."""
    container: Maybe[Optional[str]] = _field()
    """docker | podman | kubernetes | lxc | ... when inside a container, else None."""
    wsl: Maybe[Optional[int]] = _field()
    """1 or 2 when running under WSL, else None."""
    env_manager: Maybe[Optional[str]] = _field()
    """conda | venv | uv | virtualenv | None (system interpreter)."""
    cuda_toolkit_version: Maybe[Optional[str]] = _field()
    """Version of the CUDA toolkit's nvcc on PATH, e.g. 12.4.131 (collect_env's "CUDA runtime
    version"); None when there is no nvcc. Matters for building extensions, not for wheels."""
    cudnn_version: Maybe[Optional[str]] = _field()
    """Highest cuDNN library version found on the system library path (collect_env's "cuDNN
    version" line). torch wheels and conda packages bundle their own cuDNN, so this is not
    necessarily the one torch loads (that is torch.cudnn_version)."""


class KnownMessage(_Model):
    """A message of the knowledge base (rules/data/known_messages.yaml) found in pasted text:
    which one, where, and what it means. Only the values its pattern names are kept from the
    text (a GLIBC version, a library's file name), never the line itself."""

    id: str
    """The message's id in rules/data/known_messages.yaml (e.g. glibc-too-old)."""
    lines: list[int]
    """1-based lines of the paste where it was found (the first ones)."""
    category: str
    """The diagnosis category a maintainer would file it under (os-unsupported, ...)."""
    severity: Literal["error", "warning", "info"]
    meaning: str
    """What the message says about the environment, with the pattern's values filled in."""
    fix: str
    values: dict[str, str] = {}
    """What the pattern read from the message (needed: "2.28", library: "c10.dll")."""
    references: list[str] = []
    """Where the message is printed (a library's source line) or a public thread about it."""


class PasteFacts(_Model):
    """What a pasted text said besides environment facts (empty for probes and --gpu)."""

    messages: list[KnownMessage] = []
    """The known error and warning messages recognised in the paste, in the order of their
    first line (rules/data/known_messages.yaml; each one judged by the known-message rules)."""
    environments: list[str] = []
    """When the paste shows more than one environment (two torch builds, two Pythons), one
    line per environment naming it and where it was stated; the facts are the first one's."""
    read_as: Optional[str] = None
    """How the text was read: collect_env, another dump, or prose (None for probes)."""


class Facts(_Model):
    """Everything known about one environment."""

    schema_version: int = SCHEMA_VERSION
    """Version of this fact schema."""
    origin: str = "probe"
    """probe | report (parsed from pasted text) | json | synthetic (--gpu NAME)."""
    torch: Maybe[TorchFacts] = Field(default_factory=TorchFacts)
    """What torch is and what it can use."""
    gpu: Maybe[GpuFacts] = Field(default_factory=GpuFacts)
    """GPUs and driver: NVIDIA GPUs from NVML; from a report also AMD and Intel GPUs."""
    cpu: Maybe[CpuFacts] = Field(default_factory=CpuFacts)
    """CPU model, ISA, cores and quota."""
    memory: Maybe[MemoryFacts] = Field(default_factory=MemoryFacts)
    """RAM, cgroup limit and /dev/shm."""
    env: Maybe[EnvFacts] = Field(default_factory=EnvFacts)
    """Relevant environment variables."""
    packages: Maybe[PackagesFacts] = Field(default_factory=PackagesFacts)
    """Installed distributions that matter."""
    system: Maybe[SystemFacts] = Field(default_factory=SystemFacts)
    """OS, interpreter, container, environment manager."""
    paste: PasteFacts = Field(default_factory=PasteFacts)
    """What pasted text said besides facts: the known messages recognised in it, with their
    lines (empty for probes)."""
    problems: list[str] = Field(default_factory=list)
    """Probe-level problems (a probe crashed or timed out), one line each."""
    notes: list[str] = Field(default_factory=list)
    """How the facts were read, where a reader should know it and nothing is wrong with the
    environment or a probe (e.g. only the first of several pasted reports was read)."""
    sources: dict[str, str] = Field(default_factory=dict)
    """Where each fact read from pasted text outside collect_env's own fields came from, by
    fact path: {"gpu.name": "torch message, line 6", "torch.version": "package list, line 12",
    "system.python_version": "site-packages path, line 7"}; the kind of line and its number,
    never the pasted text. Kinds, strongest first: torch's own warnings and errors
    ("torch message", "traceback"), tool output ("key-value line", "table row", "nvidia-smi",
    "nvcc", "tool banner", "shell output"), "package list"/"pip freeze"/"conda list", paths
    ("site-packages path", "platform string"), install commands ("install command", "wheel
    file name", "index URL"), "bare line", "prose". A fact a paste does not state stays
    unavailable, never guessed. Empty for probes, --gpu, and the fields of a collect_env
    report (the report itself is the source)."""



# --------------------------------------------------------------------------------------
# job (`check --distributed`): every rank's facts, per node, and what the collectives did
# --------------------------------------------------------------------------------------


class RankFacts(_JobModel):
    rank: int
    """Global rank (RANK, SLURM_PROCID)."""
    local_rank: Optional[int] = None
    """Rank on its node (LOCAL_RANK, SLURM_LOCALID)."""
    node: int
    """Node index: the launcher's node rank (GROUP_RANK, SLURM_NODEID), else by host name."""
    host: str
    """Host name of the rank (redacted in every output unless --no-redact)."""
    device: Optional[str] = None
    """The accelerator this rank uses by the launcher convention (cuda:LOCAL_RANK modulo the
    visible devices), None without one."""
    device_id: Optional[str] = None
    """That device's identity on the node: its UUID as torch reports it, else the index after
    CUDA_VISIBLE_DEVICES is applied; equal ids on one node mean two ranks share a GPU."""
    facts: Facts
    """The rank's own facts: the probes of `check`, torch read in the rank's process."""


class MissingRank(_JobModel):
    rank: int
    """A rank of WORLD_SIZE whose facts did not arrive."""
    host: Optional[str] = None
    """Its host, where it said hello before it stopped; None when it never joined."""
    node: Optional[int] = None
    stage: Literal["never-joined", "no-facts", "failed", "stopped"]
    """never-joined: not seen at all; no-facts: joined, then died or hung before sending its
    facts; failed: it reported an error of its own; stopped: the launcher stopped it (SIGTERM)
    because another rank exited."""
    detail: str = ""


class NodeFacts(_JobModel):
    node: int
    """Node index (as RankFacts.node)."""
    host: str
    """Host name (redacted)."""
    ranks: list[int]
    """Global ranks whose facts arrived from this node."""
    local_world_size: Optional[int] = None
    """Ranks the launcher started on this node (LOCAL_WORLD_SIZE, SLURM_NTASKS_PER_NODE)."""
    usable_cpus: Maybe[Optional[float]] = _field()
    """CPUs the node's ranks may use (cpu.effective_cpus of its first rank: quota, affinity)."""
    threads: Maybe[list[int]] = _field()
    """torch.get_num_threads() of each rank on the node, in rank order."""
    threads_total: Maybe[int] = _field()
    """Sum of `threads`: intra-op threads the node's ranks run at once."""
    omp_num_threads: Optional[str] = None
    """OMP_NUM_THREADS as the node's first rank sees it (torchrun sets 1 when unset)."""
    gpus: Maybe[Optional[int]] = _field()
    """GPUs on the node as NVML counts them (None: no NVIDIA GPU)."""
    visible_gpus: Maybe[Optional[int]] = _field()
    """Largest torch.cuda.device_count() seen by a rank of the node."""
    devices: list[str] = []
    """Device ids the node's ranks use (RankFacts.device_id), in rank order."""
    shared_devices: list[str] = []
    """Device ids used by more than one rank of the node."""
    shm_total_bytes: Maybe[Optional[int]] = _field()
    shm_free_bytes: Maybe[Optional[int]] = _field()


class CollectiveResult(_JobModel):
    backend: Literal["gloo", "nccl"]
    op: str
    """all_reduce | gather_object | init_process_group."""
    ok: bool
    seconds: Optional[float] = None
    error: Optional[str] = None
    """What failed (first line of the exception, or the timeout), on the ranks that failed."""
    failed_ranks: list[int] = []


class BandwidthSample(_JobModel):
    size_bytes: int
    """Message size per rank (all_reduce of a float32 tensor of this many bytes)."""
    seconds: float
    """Average time of one all_reduce."""
    algbw_gbps: float
    """size / time, GB/s (10^9 bytes), as NCCL-tests print it."""
    busbw_gbps: float
    """algbw x 2(n-1)/n for all_reduce (NCCL-tests' bus bandwidth)."""


class JobFacts(_JobModel):
    launcher: str
    """torchrun | slurm | env (whatever set the env:// variables)."""
    world_size: int
    ranks: list[RankFacts] = []
    """Every rank whose facts arrived, in rank order."""
    nodes: list[NodeFacts] = []
    missing: list[MissingRank] = []
    collectives: list[CollectiveResult] = []
    bandwidth: list[BandwidthSample] = []
    """NCCL all_reduce bus bandwidth per size (only where CUDA and NCCL work)."""
    timeout_s: float
    """--timeout: how long the run was allowed."""
    stopped_by_launcher: bool = False
    """The launcher stopped rank 0 (SIGTERM) before every rank reported: one exited."""


NAMESPACES = ("torch", "gpu", "cpu", "memory", "env", "packages", "system")
NAMESPACE_MODELS: dict[str, type[BaseModel]] = {
    "paste": PasteFacts,
    "torch": TorchFacts,
    "gpu": GpuFacts,
    "cpu": CpuFacts,
    "memory": MemoryFacts,
    "env": EnvFacts,
    "packages": PackagesFacts,
    "system": SystemFacts,
}


def is_unavailable(value: Any) -> bool:
    return isinstance(value, Unavailable)


def is_xpu_build(torch: Any) -> bool:
    """An Intel XPU build of torch: torch.version.xpu is set, or the version says +xpu."""
    if isinstance(getattr(torch, "xpu_build", None), str):
        return True
    version = getattr(torch, "version", None)
    return isinstance(version, str) and "+xpu" in version


def json_schema() -> dict:
    """The JSON schema of :class:`Facts` with each field's docstring as its description (the
    fact reference that `torchdoctor probe --schema` prints)."""
    import ast
    import inspect
    import sys

    docs: dict[str, dict[str, str]] = {}
    tree = ast.parse(inspect.getsource(sys.modules[__name__]))
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        fields: dict[str, str] = {}
        for stmt, following in zip(node.body, node.body[1:]):
            if (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)
                    and isinstance(following, ast.Expr) and isinstance(following.value, ast.Constant)
                    and isinstance(following.value.value, str)):
                fields[stmt.target.id] = inspect.cleandoc(following.value.value)
        docs[node.name] = fields
    schema = Facts.model_json_schema()
    for name, model in [("Facts", schema), *schema.get("$defs", {}).items()]:
        for field, prop in model.get("properties", {}).items():
            doc = docs.get(name, {}).get(field)
            if doc and not prop.get("description"):
                prop["description"] = doc
    return schema
