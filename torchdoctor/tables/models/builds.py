"""Models of wheel_archs.yaml, torch_releases.yaml, rocm_archs.yaml and sdpa_backends.yaml."""

from __future__ import annotations

from typing import Annotated, Any, Optional

from pydantic import AfterValidator, StrictBool, StrictStr, model_validator

from torchdoctor.safeio import clip
from torchdoctor.tables.models._base import (
    Arch, Closed, CudaVersion, Gfx, Number, Open, Pattern, Sourced, Specifier, VersionText, Wrong, _version,
)


class BuildEntry(Sourced):
    torch: Specifier
    cuda: Any
    archs: list[Arch]

    @model_validator(mode="after")
    def _cudas(self) -> "BuildEntry":
        for cuda in self.cuda if isinstance(self.cuda, list) else [self.cuda]:
            if cuda is None:
                raise Wrong("'cuda' is missing")
            _version(cuda)
        return self


class BuildBlock(Open):
    entries: list[BuildEntry]
    fallback: Optional[StrictStr] = None


class ExactOnly(Sourced):
    code: Number
    runs_on: list[Number]


class Compatibility(Open):
    exact_only: list[ExactOnly]
    excluded_devices: list[Number]
    suffix_rules: dict[StrictStr, StrictStr] = {}


class PlatformRow(Closed):
    os: list[Optional[StrictStr]]
    machines: list[Optional[StrictStr]]
    block: StrictStr


class Platforms(Open):
    map: list[PlatformRow]


class CondaBuildPatterns(Open):
    patterns: list[Pattern]


class IndexUrl(Open):
    pattern: StrictStr


class WheelArchs(Open):
    index_url: IndexUrl
    compatibility: Compatibility
    platforms: Platforms
    builds: dict[StrictStr, BuildBlock]
    conda_build_patterns: CondaBuildPatterns

    @model_validator(mode="after")
    def _blocks_exist(self) -> "WheelArchs":
        for i, row in enumerate(self.platforms.map):
            if row.block not in self.builds:
                raise Wrong(f"'block' names no block of builds: {clip(row.block)}", ("platforms", "map", i))
        for name, block in self.builds.items():
            if block.fallback is not None and block.fallback not in self.builds:
                raise Wrong(f"'fallback' names no block of builds: {clip(block.fallback)}", ("builds", name))
        return self


class PythonRange(Closed):
    min: VersionText
    max: VersionText
    also: Optional[list[Any]] = None
    experimental: Optional[list[Any]] = None


class Release(Sourced):
    version: VersionText
    status: Optional[StrictStr] = None
    released: Any = None
    python: Optional[PythonRange] = None
    cuda_variants: Optional[list[StrictStr]] = None
    cuda_variants_dropped: Any = None
    default_cuda: Optional[StrictStr] = None
    cudnn: Optional[dict[StrictStr, Any]] = None
    mps_min_macos: VersionText = None
    torchvision: VersionText = None
    torchaudio: VersionText = None
    overrides: Optional[dict[Annotated[Any, AfterValidator(_version)], dict[StrictStr, Any]]] = None

    @model_validator(mode="after")
    def _needed(self) -> "Release":
        if self.version is None:
            raise Wrong("'version' is missing")
        return self


class CompileRow(Closed):
    torch: Specifier
    message: StrictStr
    scope: Optional[StrictStr] = None


class CompilePython(Closed):
    python: VersionText
    first_torch: VersionText = None


class CompileWindows(Sourced):
    first_torch: VersionText
    errors: list[CompileRow] = []


class Compile(Sourced):
    checked_through: VersionText = None
    python: list[CompilePython] = []
    errors: list[CompileRow] = []
    windows: Optional[CompileWindows] = None


class TorchReleases(Open):
    releases: list[Release]
    compile: Optional[Compile] = None


class ByRocm(Closed):
    rocm: Any  # a malformed specifier leaves the release's own list in charge (tests/test_rocm_tables.py)
    add: Optional[list[StrictStr]] = None
    unknown: Optional[list[StrictStr]] = None


class RocmWheels(Sourced):
    torch: Specifier
    archs: list[StrictStr]
    by_rocm: list[ByRocm] = []


class RocmTarget(Sourced):
    gfx: Gfx
    family: Any = None
    first_torch: VersionText = None
    first_rocm: VersionText = None
    override: VersionText = None

    @model_validator(mode="after")
    def _sourced(self) -> "RocmTarget":
        if not self.source:
            raise Wrong("every target names its source")
        return self


class RocmArchs(Open):
    wheels: list[RocmWheels] = []
    targets: list[RocmTarget]


def _backend(value: Any) -> Any:
    if value not in ("flash", "mem_efficient", "cudnn"):
        raise Wrong(f"unknown backend {clip(value)}")
    return value


class SdpaBackend(Sourced):
    backend: Annotated[Any, AfterValidator(_backend)]
    torch: Specifier
    cc_min: Optional[Number] = None
    cc_max: Optional[Number] = None
    dtypes: Optional[StrictStr] = None
    needs: Optional[StrictStr] = None


class SdpaBackends(Closed):
    backends: list[SdpaBackend]


class PypiBuild(Closed):
    wheel: StrictStr
    version: VersionText
    local: StrictStr
    cuda: Optional[CudaVersion] = None
    cuda_pin: Optional[StrictStr] = None
    cudnn: Optional[VersionText] = None
    cudnn_pin: Optional[StrictStr] = None
    archs: Optional[list[Arch]] = None
    archs_source: Optional[StrictStr] = None


class PypiRelease(Closed):
    version: VersionText
    uploaded: StrictStr
    requires_python: Optional[StrictStr] = None
    python: Optional[dict[str, VersionText]] = None
    free_threaded: list[StrictStr]
    mps_message_macos: Optional[VersionText] = None
    mps_source: Optional[StrictStr] = None
    pythons: dict[str, list[StrictStr]]
    linux_x86_64: Optional[PypiBuild] = None
    linux_aarch64: Optional[PypiBuild] = None
    source: StrictStr


class PypiWheels(Closed):
    """pypi_wheels.yaml, generated by scripts/gen_release_tables.py from the published wheels."""

    releases: list[PypiRelease]
