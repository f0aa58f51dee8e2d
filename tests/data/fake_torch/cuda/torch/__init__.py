"""Fake torch 2.5.1+cu124 (the PyPI CUDA 12.4 wheel), for the torch probe's CUDA path.

The machine it runs on (its GPUs, the cuDNN and NCCL the loader found) is the module
``fake_cuda_machine``, which the test puts on PYTHONPATH before this package: see
``tests/data/fake_torch/README.md``. The Python layer is modelled on torch 2.5.1's own
(torch/cuda/__init__.py, torch/cuda/nccl.py, torch/backends/...); ``torch._C`` stands in for
the native extension. Imports in milliseconds; never touches a GPU.
"""

from torch import _C
from torch._C import (  # noqa: F401 - re-exported as torch.<name>, like `from torch._C import *`
    are_deterministic_algorithms_enabled,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    get_num_interop_threads,
    get_num_threads,
    is_anomaly_enabled,
    is_deterministic_algorithms_warn_only_enabled,
    set_float32_matmul_precision,
    set_num_interop_threads,
    set_num_threads,
)
from torch.version import __version__  # noqa: F401
from torch import version  # noqa: F401
from torch import __config__  # noqa: F401
from torch import autograd  # noqa: F401
from torch import cuda  # noqa: F401
from torch import backends  # noqa: F401
from torch import xpu  # noqa: F401


def use_deterministic_algorithms(mode, *, warn_only=False):
    _C._set_deterministic_algorithms(mode, warn_only=warn_only)


def set_deterministic_debug_mode(debug_mode):
    _C._set_deterministic_debug_mode({"default": 0, "warn": 1, "error": 2}.get(debug_mode, debug_mode))


def _nnpack_available():
    return True
