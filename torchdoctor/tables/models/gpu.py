"""Models of gpu_archs.yaml, gpu_models.yaml and driver_min.yaml."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import StrictBool, StrictInt, StrictStr

from torchdoctor.tables.models._base import Closed, MatchText, Number, Open, Sourced, VersionText


class TensorCores(Closed):
    """Tensor-core (matrix) support per format, following PyTorch's own gates."""

    fp16: Optional[StrictBool] = None
    bf16: Optional[StrictBool] = None
    tf32: Optional[StrictBool] = None
    fp8: Optional[StrictBool] = None
    fp4: Optional[StrictBool] = None


class Capability(Sourced):
    cc: Number
    segment: Optional[StrictStr] = None
    examples: Any = None
    cuda_first: VersionText = None
    cuda_last: VersionText = None
    tensor_cores: Optional[TensorCores] = None


class Architecture(Sourced):
    name: StrictStr
    compute_capabilities: list[Number]
    tensor_cores: Optional[TensorCores] = None
    unverified: Optional[list[StrictStr]] = None
    cuda_first: VersionText = None
    cuda_last: VersionText = None
    supported_by_current_torch: Optional[StrictBool] = None
    torch: Any = None
    examples: Any = None
    capabilities: list[Capability] = []


class GpuArchs(Closed):
    architectures: list[Architecture]


class ModelGroup(Sourced):
    cc: Optional[Number]  # required: null for a name shared by GPUs of different capabilities
    family: Any = None
    match: list[MatchText]


class GpuModels(Closed):
    groups: list[ModelGroup]


class DriverRelease(Closed):
    release: Any = None
    toolkit_version: VersionText = None
    linux: VersionText = None
    windows: VersionText = None


class Toolkit(Sourced):
    cuda: VersionText
    releases: list[DriverRelease]


class Floor(Sourced):
    major: StrictInt
    linux: VersionText = None
    windows: VersionText = None
    upper_exclusive: VersionText = None


class MinorVersionCompatibility(Open):
    floors: list[Floor]


class DriverMin(Open):
    toolkits: list[Toolkit]
    minor_version_compatibility: MinorVersionCompatibility
