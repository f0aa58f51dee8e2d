"""Stand-in for torch's native extension (torch/_C.so) of a CUDA 12.4 build.

Only the names the Python layer of this fake (and torchdoctor's torch child) call are here,
with torch 2.5.1's signatures and return conventions: ``_nccl_version()`` is NCCL's version
packed as ``major << 32 | minor << 16 | patch``, ``_cudnn.getRuntimeVersion()`` a tuple,
``_cuda_getArchFlags()`` the space-separated arch list, ``_get_device_properties(i)`` a
``_CudaDeviceProperties``. The hardware answers come from ``fake_cuda_machine``.
"""

import enum
import os
import types

import fake_cuda_machine as _machine

# --- CUDA runtime ----------------------------------------------------------------------


def _visible():
    """Devices cudaGetDeviceCount sees: CUDA_VISIBLE_DEVICES filters and reorders them; the
    list ends at the first entry that is not a valid index (as the CUDA runtime does)."""
    devices = list(_machine.DEVICES)
    spec = os.environ.get("CUDA_VISIBLE_DEVICES")
    if spec is None:
        return devices
    out = []
    for item in spec.split(","):
        item = item.strip()
        if not item.isdigit() or int(item) >= len(devices):
            break
        out.append(devices[int(item)])
    return out


def _cuda_getDeviceCount():
    return len(_visible())


def _cuda_getArchFlags():
    return " ".join(_machine.ARCH_LIST)


def _cuda_getCompiledVersion():
    return 12040


def _cuda_init():
    if not _visible():
        raise RuntimeError("No CUDA GPUs are available")


def _cuda_isInBadFork():
    return False


class _CudaDeviceProperties:
    def __init__(self, d):
        self.name = d["name"]
        self.major = d["major"]
        self.minor = d["minor"]
        self.total_memory = d["total_memory"]
        self.multi_processor_count = d["multi_processor_count"]
        self.is_integrated = 0
        self.is_multi_gpu_board = 0
        self.L2_cache_size = d["L2_cache_size"]

    def __repr__(self):
        return (
            f"_CudaDeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // 2**20}MB, "
            f"multi_processor_count={self.multi_processor_count}, "
            f"L2_cache_size={self.L2_cache_size // 2**20}MB)"
        )


def _get_device_properties(index):
    return _CudaDeviceProperties(_visible()[index])


_cudart = types.ModuleType("torch._C._cudart")

# --- NCCL --------------------------------------------------------------------------------


def _nccl_version():
    major, minor, patch = _machine.NCCL
    return major << 32 | minor << 16 | patch


def _nccl_version_suffix():
    return b""


# --- cuDNN -------------------------------------------------------------------------------

_has_cudnn = True
_cudnn = types.ModuleType("torch._C._cudnn")
_cudnn.is_cuda = True
_cudnn.getCompileVersion = lambda: (9, 1, 0)
_cudnn.getRuntimeVersion = lambda: tuple(_machine.CUDNN_RUNTIME)
_cudnn.getVersionInt = lambda: (
    _machine.CUDNN_RUNTIME[0] * 10000 + _machine.CUDNN_RUNTIME[1] * 100 + _machine.CUDNN_RUNTIME[2]
)

# --- global flags (torch's defaults) -------------------------------------------------------

_flags = {
    "cudnn_enabled": True,
    "cudnn_benchmark": False,
    "cudnn_benchmark_limit": 10,
    "cudnn_deterministic": False,
    "cudnn_allow_tf32": True,
    "cublas_allow_tf32": False,
    "cublas_fp16_reduced": True,
    "cublas_bf16_reduced": True,
    "mkldnn_enabled": True,
    "mkldnn_deterministic": False,
    "nnpack_enabled": True,
    "flash_sdp": True,
    "mem_efficient_sdp": True,
    "math_sdp": True,
    "cudnn_sdp": True,
    "float32_matmul_precision": "highest",
    "deterministic": False,
    "deterministic_warn_only": False,
    "deterministic_debug_mode": 0,
    "anomaly": False,
    "num_threads": _machine.CPU_THREADS,
    "num_interop_threads": _machine.CPU_THREADS,
    "qengine": 3,  # at::QEngine::X86
}


def _getter(key):
    return lambda: _flags[key]


def _setter(key):
    def set_flag(value):
        _flags[key] = value

    return set_flag


for _name, _key in (
    ("cudnn_enabled", "cudnn_enabled"),
    ("cudnn_benchmark", "cudnn_benchmark"),
    ("cudnn_deterministic", "cudnn_deterministic"),
    ("cudnn_allow_tf32", "cudnn_allow_tf32"),
    ("cublas_allow_tf32", "cublas_allow_tf32"),
    ("mkldnn_enabled", "mkldnn_enabled"),
    ("mkldnn_deterministic", "mkldnn_deterministic"),
    ("nnpack_enabled", "nnpack_enabled"),
):
    globals()["_get_" + _name] = _getter(_key)
    globals()["_set_" + _name] = _setter(_key)
_cuda_get_cudnn_benchmark_limit = _getter("cudnn_benchmark_limit")
_cuda_set_cudnn_benchmark_limit = _setter("cudnn_benchmark_limit")
_get_cublas_allow_fp16_reduced_precision_reduction = _getter("cublas_fp16_reduced")
_set_cublas_allow_fp16_reduced_precision_reduction = _setter("cublas_fp16_reduced")
_get_cublas_allow_bf16_reduced_precision_reduction = _getter("cublas_bf16_reduced")
_set_cublas_allow_bf16_reduced_precision_reduction = _setter("cublas_bf16_reduced")
_get_flash_sdp_enabled = _getter("flash_sdp")
_set_sdp_use_flash = _setter("flash_sdp")
_get_mem_efficient_sdp_enabled = _getter("mem_efficient_sdp")
_set_sdp_use_mem_efficient = _setter("mem_efficient_sdp")
_get_math_sdp_enabled = _getter("math_sdp")
_set_sdp_use_math = _setter("math_sdp")
_get_cudnn_sdp_enabled = _getter("cudnn_sdp")
_set_sdp_use_cudnn = _setter("cudnn_sdp")
get_float32_matmul_precision = _getter("float32_matmul_precision")
set_float32_matmul_precision = _setter("float32_matmul_precision")
are_deterministic_algorithms_enabled = _getter("deterministic")
is_deterministic_algorithms_warn_only_enabled = _getter("deterministic_warn_only")
get_deterministic_debug_mode = _getter("deterministic_debug_mode")
_set_deterministic_debug_mode = _setter("deterministic_debug_mode")
is_anomaly_enabled = _getter("anomaly")
_set_anomaly_enabled = _setter("anomaly")
get_num_threads = _getter("num_threads")
set_num_threads = _setter("num_threads")
get_num_interop_threads = _getter("num_interop_threads")
set_num_interop_threads = _setter("num_interop_threads")
_get_qengine = _getter("qengine")
_set_qengine = _setter("qengine")


def _set_deterministic_algorithms(mode, warn_only=False):
    _flags["deterministic"] = bool(mode)
    _flags["deterministic_warn_only"] = bool(warn_only)


class _LinalgBackend(enum.Enum):  # a pybind11 enum in torch: `.name` is "Default"
    Default = 0
    Cusolver = 1
    Magma = 2


class _BlasBackend(enum.Enum):
    Cublas = 0
    Cublaslt = 1


_linalg = [_LinalgBackend.Default]
_blas = [_BlasBackend.Cublas]
_get_linalg_preferred_backend = lambda: _linalg[0]  # noqa: E731
_get_blas_preferred_backend = lambda: _blas[0]  # noqa: E731


def _supported_qengines():
    return [0, 3, 1, 2]  # none, x86, fbgemm, qnnpack
