"""torch.cuda of torch 2.5.1, cut to what torchdoctor reads (same names, same behaviour):
lazy initialisation that runs the queued capability checks, whose warnings are the ones
torch prints for a GPU the build has no code for."""

import os
import threading
import warnings

import torch
import torch._C

_initialized = False
_tls = threading.local()
_initialization_lock = threading.Lock()
_queued_calls = []
_is_in_bad_fork = getattr(torch._C, "_cuda_isInBadFork", lambda: False)
_cudart = torch._C._cudart


def _is_compiled():
    return hasattr(torch._C, "_cuda_getDeviceCount")


def is_available():
    if not _is_compiled():
        return False
    return torch._C._cuda_getDeviceCount() > 0


def device_count():
    if not _is_compiled():
        return 0
    return torch._C._cuda_getDeviceCount()


def get_arch_list():
    if not is_available():
        return []
    arch_flags = torch._C._cuda_getArchFlags()
    if arch_flags is None:
        return []
    return arch_flags.split()


def _extract_arch_version(arch_string):
    base = arch_string.split("_")[1]
    if base.endswith("a"):
        base = base[:-1]
    return int(base)


def _check_capability():
    old_gpu_warn = """
    Found GPU%d %s which is of cuda capability %d.%d.
    PyTorch no longer supports this GPU because it is too old.
    The minimum cuda capability supported by this library is %d.%d.
    """
    if torch.version.cuda is not None:  # on ROCm we don't want this check
        for d in range(device_count()):
            major, minor = get_device_capability(d)
            name = get_device_name(d)
            current_arch = major * 10 + minor
            min_arch = min((_extract_arch_version(a) for a in get_arch_list()), default=35)
            if current_arch < min_arch:
                warnings.warn(old_gpu_warn % (d, name, major, minor, min_arch // 10, min_arch % 10))


def _check_cubins():
    incompatible_device_warn = """
{} with CUDA capability sm_{} is not compatible with the current PyTorch installation.
The current PyTorch install supports CUDA capabilities {}.
If you want to use the {} GPU with PyTorch, please check the instructions at https://pytorch.org/get-started/locally/
"""
    if torch.version.cuda is None:  # on ROCm we don't want this check
        return
    arch_list = get_arch_list()
    if len(arch_list) == 0:
        return
    supported_sm = [_extract_arch_version(arch) for arch in arch_list if "sm_" in arch]
    for idx in range(device_count()):
        cap_major, cap_minor = get_device_capability(idx)
        # NVIDIA GPU compute architectures are backward compatible within major version
        supported = any(sm // 10 == cap_major for sm in supported_sm)
        if not supported:
            device_name = get_device_name(idx)
            capability = cap_major * 10 + cap_minor
            warnings.warn(
                incompatible_device_warn.format(
                    device_name, capability, " ".join(arch_list), device_name
                )
            )


def is_initialized():
    return _initialized and not _is_in_bad_fork()


def _lazy_call(callable, **kwargs):
    if is_initialized():
        callable()
    else:
        _queued_calls.append((callable, []))


_lazy_call(_check_capability)
_lazy_call(_check_cubins)


class DeferredCudaCallError(Exception):
    pass


def init():
    _lazy_init()


def _lazy_init():
    global _initialized, _queued_calls
    if is_initialized() or hasattr(_tls, "is_initializing"):
        return
    with _initialization_lock:
        if is_initialized():
            return
        if _is_in_bad_fork():
            raise RuntimeError("Cannot re-initialize CUDA in forked subprocess.")
        if not hasattr(torch._C, "_cuda_getDeviceCount"):
            raise AssertionError("Torch not compiled with CUDA enabled")
        if "CUDA_MODULE_LOADING" not in os.environ:
            os.environ["CUDA_MODULE_LOADING"] = "LAZY"
        torch._C._cuda_init()
        _tls.is_initializing = True
        try:
            for queued_call, orig_traceback in _queued_calls:
                try:
                    queued_call()
                except Exception as e:
                    raise DeferredCudaCallError(
                        f"CUDA call failed lazily at initialization with error: {str(e)}"
                    ) from e
        finally:
            delattr(_tls, "is_initializing")
        _initialized = True


def _get_device_index(device, optional=False):
    if device is None:
        return 0
    if isinstance(device, str) and device.startswith("cuda:"):
        return int(device[5:])
    return int(device)


def get_device_properties(device=None):
    _lazy_init()
    device = _get_device_index(device, optional=True)
    if device < 0 or device >= device_count():
        raise AssertionError("Invalid device id")
    return torch._C._get_device_properties(device)


def get_device_capability(device=None):
    prop = get_device_properties(device)
    return prop.major, prop.minor


def get_device_name(device=None):
    return get_device_properties(device).name


def current_device():
    _lazy_init()
    return 0
