"""Models of torch_ecosystem.yaml, cpu_stacks.yaml, python_wheels.yaml, import_failures.yaml
and platforms.yaml."""

from __future__ import annotations

from typing import Any, Optional

from pydantic import StrictBool, StrictStr, model_validator

from torchdoctor.tables.models._base import (
    Closed, CudaVersion, Number, Open, Pattern, Sourced, Specifier, VersionText, Wrong,
)


class XformersRelease(Sourced):
    xformers: VersionText
    torch: VersionText
    later_torch: Optional[StrictBool] = None


class FlashAttnWheel(Sourced):
    flash_attn: VersionText
    torch_builds: list[VersionText]


class FlashAttnGpu(Sourced):
    flash_attn: Specifier
    min_cc: Number
    max_cc: Optional[Number] = None
    check: Any = None


class TritonRelease(Sourced):
    triton: VersionText
    ptxas: CudaVersion
    ptxas_blackwell: CudaVersion = None


class TritonSelection(Sourced):
    triton: Specifier
    blackwell_from_cc: Optional[Number] = None
    env: Optional[StrictStr] = None
    env_blackwell: Optional[StrictStr] = None


class Mitigation(Closed):
    var: StrictStr
    equals: Any = None
    protocol_off: Optional[StrictStr] = None

    @model_validator(mode="after")
    def _one(self) -> "Mitigation":
        if self.equals is None and self.protocol_off is None:
            raise Wrong("a mitigated_by entry needs `equals` or `protocol_off`")
        return self


class NcclDefect(Sourced):
    id: StrictStr
    nccl: Specifier
    compute_capabilities: list[Number]
    what: StrictStr
    when: Any = None
    workaround: Any = None
    fixed_in: Any = None
    mitigated_by: list[Mitigation] = []


class Xformers(Open):
    releases: list[XformersRelease]


class FlashAttn(Open):
    wheels: list[FlashAttnWheel]
    gpu_support: list[FlashAttnGpu]


class Triton(Open):
    releases: list[TritonRelease]
    selection: list[TritonSelection]


class Nccl(Open):
    defects: list[NcclDefect]


class TorchEcosystem(Open):
    xformers: Xformers
    flash_attn: FlashAttn
    triton: Triton
    nccl: Nccl


class CpuStack(Closed):
    name: Optional[StrictStr] = None
    prefix: Optional[StrictStr] = None
    what: StrictStr
    reason: StrictStr
    source: StrictStr
    version_contains: Optional[StrictStr] = None
    version_excludes: Optional[StrictStr] = None

    @model_validator(mode="after")
    def _named(self) -> "CpuStack":
        if not (self.name or self.prefix):
            raise Wrong("a stack needs `name` or `prefix`")
        return self


class CpuStacks(Closed):
    stacks: list[CpuStack]


class FirstWheel(Sourced):
    torch: VersionText
    released: StrictStr
    platforms: list[StrictStr]


class PythonWheels(Sourced):
    python: StrictStr
    patches: dict[StrictStr, StrictStr]
    first_wheels: list[FirstWheel]


class PythonWheelsFile(Closed):
    pythons: list[PythonWheels]


class ImportSignature(Sourced):
    id: StrictStr
    rule: StrictStr
    library: StrictStr
    explain: StrictStr
    all: list[StrictStr] = []
    any: list[StrictStr] = []
    version: Optional[Pattern] = None


class ImportFailures(Closed):
    signatures: list[ImportSignature]


class GlibcMin(Sourced):
    torch: Specifier
    glibc: VersionText


class PlatformFact(Sourced):
    id: StrictStr
    statement: StrictStr
    first_torch: VersionText = None
    last_torch: VersionText = None
    min_macos: VersionText = None
    mps_min_macos: VersionText = None
    glibc_min: list[GlibcMin] = []


class PlatformsFile(Closed):
    facts: list[PlatformFact]
