"""Reference tables from ``rules/data/*.yaml`` exposed as plain functions.

Knowledge (which compute capability is which architecture, which driver a CUDA version
needs, which archs a wheel was compiled for) lives in the YAML files, each entry with its
source; this package only loads, validates (one pydantic model per file, :mod:`.models`) and
looks up. Every public lookup is given to rule conditions and messages by the engine
(``vocabulary.TABLE_FUNCTIONS`` collects the functions of this package's modules).

Every lookup is tolerant: input it cannot read, or a value the tables do not know, gives
``None`` (never a guess, never an exception). Versions are compared with ``packaging``.

Modules: ``_load`` (reading, validation, caches), ``_parse`` (tolerant parsers of compute
capabilities, versions, CUDA tags), ``gpu`` (architectures, capabilities, models, drivers),
``wheels`` (published builds and their archs, ROCm, SDPA), ``releases`` (Python, domain
libraries, torch.compile, CPU stacks, unimportable torch), ``ecosystem`` (xformers,
flash-attn, Triton, NCCL).
"""

from __future__ import annotations

import sys
import types

from torchdoctor.tables import _load
from torchdoctor.tables._load import (  # noqa: F401 - the package's API
    MAX_TABLE_BYTES, DataFileError, _line_loader, allow_list, data_dir, load, sourced_entries,
)
from torchdoctor.tables._parse import _cc, _cuda, _majmin, _tokens, _version  # noqa: F401

name_tokens = _tokens
"""Lower-case word tokens of a GPU name, as the GPU tables match them (public for synthetic.py)."""
from torchdoctor.tables.ecosystem import (  # noqa: F401
    MAX_ECOSYSTEM_VERSION, flash_attn_gpu_support, flash_attn_torch_mismatch, nccl_known_defects,
    triton_driver_too_old, triton_ptxas, triton_ptxas_lacks_arch, xformers_torch_mismatch,
)
from torchdoctor.tables.gpu import (  # noqa: F401
    MAX_NAME, arch_for_cc, arch_info, cc_for_gpu_name, driver_compat_floor, driver_min,
    has_bf16_tensor_cores, has_fp8_tensor_cores, has_fp16_tensor_cores, has_tf32, integrated_gpu,
)
from torchdoctor.tables.releases import (  # noqa: F401
    MAX_IMPORT_ERROR_SCAN, compile_python_support, compile_windows_support, cpu_inference_stacks,
    import_failure, mps_min_macos, python_predates_torch_wheels, python_supported, torchaudio_for,
    torchvision_for,
)
from torchdoctor.tables.wheels import (  # noqa: F401
    _release, arch_list_supports, cuda_for_conda_build, latest_release, pypi_default_cuda, release_variants,
    rocm_gfx_support, same_build_family, sdpa_backends, wheel_archs, wheel_for, wheel_index_url,
    wheel_platform, wheels_supporting,
)


class _Tables(types.ModuleType):
    """The package, where a caller (a test) that points the tables elsewhere sets ``load`` or
    ``data_dir``: the change reaches the module every lookup reads them from (``_load``)."""

    def __setattr__(self, name: str, value: object) -> None:
        if name in _load.REPLACEABLE:
            setattr(_load, name, value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Tables
