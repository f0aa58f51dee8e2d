"""One pydantic model per data file of ``rules/data/``: what :func:`torchdoctor.tables.load`
validates a file against before the file is used or cached.

A model checks what the lookups rely on: types (a compute capability is a number, a version
parses, a specifier is a specifier), closed sets of keys where a file is closed (an entry with a
misspelt key is an error, not a silently ignored field), and cross-references (a platform row
names a block of builds that exists). Files of open shape (a top level that other areas add
sections to) allow extra keys there and close their entries.

Validation runs only when a file is parsed, i.e. not on a warm start (the rule cache keeps
validated tables), and this module is imported only then; its schemas are built on first use
(``defer_build``), so a run pays only for the files it parses. The lookups read the plain data;
the models are the contract.

An error names ``path:line`` of the innermost mapping that holds the bad value (the loader's
second, line-tracking parse), and says what is wrong in one line:
``gpu_models.yaml:24: 'cc' must be a number, got 'twelve'``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version
from pydantic import (
    AfterValidator, BaseModel, ConfigDict, StrictBool, StrictInt, StrictStr, ValidationError,
    model_validator,
)

from torchdoctor.safeio import clip
from torchdoctor.tables._parse import _ARCH_RE, _cuda, _tokens


class Bad(ValueError):
    """A value its field cannot hold; the message follows the field's name ("'cc' must be ...")."""


class Wrong(ValueError):
    """A whole-sentence problem, optionally at ``at`` (a location below the model that raised it)."""

    def __init__(self, text: str, at: tuple = ()):
        super().__init__(text)
        self.at = at


# ----------------------------------------------------------------------------------------
# value types
# ----------------------------------------------------------------------------------------


def _number(value: Any) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise Bad(f"must be a number, got {clip(value)}")
    return value


def _version(value: Any) -> Any:
    if value is not None:
        try:
            Version(str(value))
        except ValueError:  # InvalidVersion, or a release number over 4300 digits
            raise Bad(f"is not a version: {clip(value)}") from None
    return value


def _specifier(value: Any) -> Any:
    try:
        SpecifierSet(str(value))
    except InvalidSpecifier:
        raise Bad(f"is not a version specifier: {clip(value)}") from None
    return value


def _cuda_version(value: Any) -> Any:
    if value is not None and _cuda(value) is None:
        raise Bad(f"must be a CUDA version, got {clip(value)}")
    return value


def _arch(value: Any) -> Any:
    if not isinstance(value, str) or not _ARCH_RE.match(value):
        raise Wrong(f"bad arch {clip(value)} (expected sm_XY or compute_XY)")
    return value


def _gfx(value: Any) -> Any:
    if not re.fullmatch(r"gfx[0-9a-f]{3,4}", str(value)):
        raise Bad(f"is not a gfx target: {clip(value)}")
    return value


def _pattern(value: Any) -> Any:
    try:
        re.compile(value)
    except (re.error, TypeError) as exc:
        raise Wrong(f"bad pattern {clip(value)}: {exc}") from None
    return value


def _match_text(value: Any) -> Any:
    if not isinstance(value, str) or not _tokens(value):
        raise Wrong(f"bad match string {clip(value)}")
    return value


Number = Annotated[Any, AfterValidator(_number)]
"""An int or float (not a bool, not a string); None where the field is optional."""
VersionText = Annotated[Any, AfterValidator(_version)]
"""Anything ``packaging`` reads as a version ("2.7", 12.8 as YAML writes it)."""
Specifier = Annotated[Any, AfterValidator(_specifier)]
CudaVersion = Annotated[Any, AfterValidator(_cuda_version)]
Arch = Annotated[Any, AfterValidator(_arch)]
Gfx = Annotated[Any, AfterValidator(_gfx)]
Pattern = Annotated[Any, AfterValidator(_pattern)]
MatchText = Annotated[Any, AfterValidator(_match_text)]


class Closed(BaseModel):
    """An entry whose keys are all known: a misspelt key is an error."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class Open(BaseModel):
    """A mapping other areas may extend (only the keys the lookups read are checked)."""

    model_config = ConfigDict(extra="allow", defer_build=True)


class Sourced(Closed):
    """The bookkeeping keys every entry may carry."""

    source: Any = None
    sources: Optional[list[Any]] = None
    note: Any = None
    notes: Any = None
    verified: Optional[StrictBool] = None


# ----------------------------------------------------------------------------------------
# gpu_archs.yaml, gpu_models.yaml, driver_min.yaml
# ----------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------
# wheel_archs.yaml, torch_releases.yaml, rocm_archs.yaml, sdpa_backends.yaml
# ----------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------
# torch_ecosystem.yaml, cpu_stacks.yaml, python_wheels.yaml, import_failures.yaml, platforms.yaml
# ----------------------------------------------------------------------------------------


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


# ----------------------------------------------------------------------------------------
# allow-lists and small tables of other areas (closed where their readers expect it)
# ----------------------------------------------------------------------------------------


class AllowEntry(BaseModel):
    """An allow-list entry; that it gives `reason` and `source` is checked by
    ``tables.sourced_entries``, whose message the probes' tests pin."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    name: Optional[StrictStr] = None
    prefix: Optional[StrictStr] = None
    reason: Any = None
    source: Any = None


class AllowList(Open):
    names: list[AllowEntry] = []
    prefixes: list[AllowEntry] = []


class CpuVendors(Closed):
    source: StrictStr
    arm_implementers: dict[StrictStr, StrictStr]


class Pci(Closed):
    source: StrictStr
    nvidia_vendor: StrictStr
    gpu_classes: list[StrictStr]


class FakeFlag(Sourced):
    did_you_mean: StrictStr
    by_value: Optional[dict[Any, StrictStr]] = None  # keys: the value assigned (True, False)
    category: Optional[StrictStr] = None
    references: list[StrictStr] = []


class EnvReadAt(Sourced):
    when: StrictStr
    references: list[StrictStr] = []


class BackendsFakeFlags(Open):
    fakes: dict[StrictStr, FakeFlag]
    env_read_at: dict[StrictStr, EnvReadAt] = {}


class WhyWhen(Closed):
    why: StrictStr
    either_side: Any = None
    one_side: Any = None


class Noise(Closed):
    path: StrictStr
    why: StrictStr


class Relevant(Closed):
    path: StrictStr
    why: StrictStr
    source: Any = None
    why_when: list[WhyWhen] = []


class DiffRelevance(Closed):
    noise: list[Noise]
    relevant: list[Relevant]


# The three files below belong to the report importers, which check what they read on first use
# (patterns linear, labels translated); their models hold the shape only and stay open, so
# those readers can grow them without a change here.


class LscpuLanguage(Open):
    language: StrictStr
    labels: dict[StrictStr, StrictStr]


class LscpuLabels(Open):
    languages: list[LscpuLanguage]


class VendorWords(Open):
    words: list[StrictStr]


class GpuNameVendors(Open):
    amd: VendorWords
    not_nvidia: VendorWords


class PastePatterns(Open):
    labels: list[dict[StrictStr, Any]] = []
    sections: list[dict[StrictStr, Any]] = []
    scoped_labels: list[dict[StrictStr, Any]] = []
    messages: list[dict[StrictStr, Any]] = []
    paths: list[dict[StrictStr, Any]] = []


MODELS: dict[str, type[BaseModel]] = {
    "backends_fake_flags": BackendsFakeFlags,
    "diff_relevance": DiffRelevance,
    "lscpu_labels": LscpuLabels,
    "gpu_name_vendors": GpuNameVendors,
    "paste_patterns": PastePatterns,
    "gpu_archs": GpuArchs,
    "gpu_models": GpuModels,
    "driver_min": DriverMin,
    "wheel_archs": WheelArchs,
    "torch_releases": TorchReleases,
    "rocm_archs": RocmArchs,
    "sdpa_backends": SdpaBackends,
    "torch_ecosystem": TorchEcosystem,
    "cpu_stacks": CpuStacks,
    "python_wheels": PythonWheelsFile,
    "import_failures": ImportFailures,
    "platforms": PlatformsFile,
    "env_allowlist": AllowList,
    "packages_of_interest": AllowList,
    "cpu_vendors": CpuVendors,
    "pci": Pci,
}
"""The model of each data file (tests/test_typed_tables.py: every file of rules/data/ has one).
A file added without a model loads unchecked, as before, until it is given one."""


# ----------------------------------------------------------------------------------------
# errors: the first problem, as one line at the line of its innermost mapping
# ----------------------------------------------------------------------------------------


def problem(name: str, data: Any) -> Optional[tuple[tuple, str]]:
    """(location, what) of the first problem of data file ``name`` against its model; None
    when it is valid or the file has no model."""
    model = MODELS.get(name)
    if model is None:
        return None
    try:
        model.model_validate(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        return _describe(error)
    return None


def _describe(error: dict) -> tuple[tuple, str]:
    loc = tuple(error.get("loc") or ())
    field = next((str(p) for p in reversed(loc) if isinstance(p, str)), None)
    named = f"'{field}'" if field else "the file"
    cause = (error.get("ctx") or {}).get("error")
    if isinstance(cause, Wrong):
        return loc + cause.at, str(cause)
    if isinstance(cause, Bad):
        return loc, f"{named} {cause}"
    kind = error.get("type")
    what = {
        "missing": "is missing",
        "extra_forbidden": "is not a known key",
        "list_type": "must be a list",
        "dict_type": "must be a mapping",
        "model_type": "must be a mapping",
        "model_attributes_type": "must be a mapping",
        "string_type": "must be a string",
        "bool_type": "must be true or false",
        "int_type": "must be an integer",
    }.get(kind)
    if what is None:
        return loc, f"{named}: {clip(error.get('msg'))}"
    if kind == "missing" and field == "cc":
        what += " (use null for an ambiguous name)"
    if kind not in ("missing", "extra_forbidden") and "input" in error:
        what += f", got {clip(error['input'])}"
    return loc, f"{named} {what}"


def locate(path: Path, lined: Any, found: tuple[tuple, str]) -> str:
    """``path:line: what``, the line being that of the innermost mapping on the problem's
    location in ``lined`` (the file parsed with line numbers); ``path: what`` without one."""
    loc, what = found
    node, line = lined, getattr(lined, "line", 0)
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            break
        line = getattr(node, "line", 0) or line
    return f"{path}:{line}: {what}" if line else f"{path}: {what}"
