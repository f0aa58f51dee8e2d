"""Kept so that ``from torchdoctor.synthetic import facts_for_gpu`` still works: the synthetic
facts of ``recommend --gpu`` are an importer, :mod:`torchdoctor.importers.synthetic`."""

from torchdoctor.importers.synthetic import (  # noqa: F401 - re-exported
    CPU_NOT_HERE,
    MAX_COUNT,
    MAX_SPEC,
    MAX_VERSION,
    NOT_HERE,
    GpuSpec,
    check_torch_version,
    facts_for_gpu,
    parse_gpu,
)

__all__ = ["CPU_NOT_HERE", "MAX_COUNT", "MAX_SPEC", "MAX_VERSION", "NOT_HERE", "GpuSpec",
           "check_torch_version", "facts_for_gpu", "parse_gpu"]
