"""The libraries around torch (torch_ecosystem.yaml): xformers and flash-attn binaries built for
one torch, flash-attn's GPU check, Triton's bundled ptxas, NCCL releases with known defects."""

from __future__ import annotations

import re
from typing import Any, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from torchdoctor.safeio import clip
from torchdoctor.tables import _load
from torchdoctor.tables._load import DataFileError
from torchdoctor.tables._parse import _as_float, _cc, _cuda, _majmin
from torchdoctor.tables.gpu import arch_info, driver_compat_floor

# ----------------------------------------------------------------------------------------
# The libraries around torch (torch_ecosystem.yaml): xformers and flash-attn binaries built
# for one torch, flash-attn's GPU check, Triton's bundled ptxas, NCCL releases with known
# defects. Self-contained block (rules install/xformers-built-for-another-torch,
# install/flash-attn-built-for-another-torch, install/flash-attn-without-kernels-for-gpu,
# gpu/triton-ptxas-lacks-gpu-arch, gpu/triton-ptxas-newer-than-driver,
# distributed/nccl-release-with-known-defect).
# ----------------------------------------------------------------------------------------

_ECOSYSTEM = "rules/data/torch_ecosystem.yaml"
MAX_ECOSYSTEM_VERSION = 80
"""Characters of a package version the ecosystem lookups read (a longer value is unknown)."""


def _eco_rows(section: str, key: str) -> list:
    """The verified rows of ``section.key`` (rows marked ``verified: false`` are never judged)."""
    data = _load.load("torch_ecosystem")
    block = data.get(section) if isinstance(data, dict) else None
    rows = block.get(key) if isinstance(block, dict) else None
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise DataFileError(f"{_ECOSYSTEM}: `{section}.{key}` must be a list of mappings")
    return [r for r in rows if r.get("verified") is not False]


def _eco_version(value: Any) -> Optional[Version]:
    """A package version as pip or a report states it ("0.0.23.post1+cu118"); None if unreadable."""
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_ECOSYSTEM_VERSION:
        return None
    try:
        return Version(value.strip())
    except ValueError:
        return None


def _eco_row_version(row: dict, key: str) -> Version:
    try:
        return Version(str(row[key]))
    except (KeyError, ValueError):
        raise DataFileError(f"{_ECOSYSTEM}: row {clip(row)} needs a version `{key}`") from None


def _eco_spec(row: dict, key: str) -> SpecifierSet:
    try:
        return SpecifierSet(str(row[key]))
    except (KeyError, InvalidSpecifier):
        raise DataFileError(f"{_ECOSYSTEM}: row {clip(row)} needs a version specifier `{key}`") from None


def _minor(version: Version) -> tuple:
    return (version.release + (0,))[:2]


def _wheel_label(local: Optional[str]) -> bool:
    """Whether a local version label is the one of a published wheel (+cu121, +rocm6.1, +cpu)."""
    return local is None or re.fullmatch(r"(cu\d{2,3}|rocm\d+(\.\d+)*|cpu)", local) is not None


def xformers_torch_mismatch(xformers_version: Any, torch_version: Any) -> Optional[dict]:
    """Whether an xformers release's binary wheel cannot load with this torch (torch_ecosystem.yaml
    `xformers`): {"xformers": "0.0.23.post1", "built_for": "2.1.2", "torch": "2.2.0",
    "kind": "other-minor" | "older-torch" | "cpu-torch", "later_torch": bool, "suggest": the
    xformers release built for this torch or None}; None when they fit or when it cannot be told
    (a version not in the table, a source or .dev build of xformers, a nightly torch of the same
    minor). "cpu-torch" (a +cpu torch beside a CUDA wheel) is told for .dev builds too, with
    "built_for" None. Patch releases of one torch minor are not told apart (see the rule's known_problems)."""
    xf, tv = _eco_version(xformers_version), _eco_version(torch_version)
    if xf is None or tv is None or not _wheel_label(xf.local) or xf.local == "cpu":
        return None
    row = next((r for r in _eco_rows("xformers", "releases")
                if _eco_row_version(r, "xformers") == Version(xf.public)), None)
    cuda_wheel = not (xf.local or "").startswith("rocm")
    if tv.local == "cpu" and cuda_wheel and (row is not None or xf.is_devrelease):
        # xformers publishes CUDA (and ROCm) wheels only, its .dev builds included
        return {"xformers": str(xf.public), "built_for": str(row["torch"]) if row else None,
                "torch": str(tv.public)[:40], "kind": "cpu-torch",
                "later_torch": bool(row and row.get("later_torch")), "suggest": None}
    if row is None or xf.is_prerelease:
        return None
    built = _eco_row_version(row, "torch")
    later = bool(row.get("later_torch"))
    torch_pre = tv.is_prerelease or not _wheel_label(tv.local)
    kind = None
    if later:
        kind = "older-torch" if _minor(tv) < _minor(built) else None
    elif _minor(tv) != _minor(built):
        kind = "other-minor"
    if kind is None:
        return None
    suggest = None
    if not torch_pre:
        rows = [r for r in _eco_rows("xformers", "releases")
                if (_minor(_eco_row_version(r, "torch")) == _minor(tv)
                    or (r.get("later_torch") and _minor(_eco_row_version(r, "torch")) <= _minor(tv)))]
        exact = [r for r in rows if Version(_eco_row_version(r, "torch").base_version) == Version(tv.base_version)
                 or r.get("later_torch")]
        pick = (exact or rows)
        if pick:
            suggest = str(max(pick, key=lambda r: _eco_row_version(r, "xformers"))["xformers"])
    return {"xformers": str(xf.public), "built_for": str(built), "torch": str(tv.public)[:40],
            "kind": kind, "later_torch": later, "suggest": suggest}


def flash_attn_torch_mismatch(flash_attn_version: Any, torch_version: Any) -> Optional[dict]:
    """Whether the prebuilt flash-attn wheel that ``pip install flash-attn`` fetches for this torch
    was compiled against another torch (torch_ecosystem.yaml `flash_attn.wheels`):
    {"flash_attn": "2.5.7", "built_with": "2.3.0.dev20240207", "torch": "2.3.0",
    "kind": "nightly-build" | "later-patch" | "other-minor", "suggest": a release whose wheel
    for this torch minor was built against this very torch, or None}. "other-minor": the installed
    version's own label names another torch (2.5.8+cu122torch2.2cxx11abiFALSE). None when they
    fit or it cannot be told (no prebuilt wheel for this torch minor: pip compiled it from source;
    a nightly or source build of torch; a version not in the table)."""
    fa, tv = _eco_version(flash_attn_version), _eco_version(torch_version)
    if fa is None or tv is None or tv.is_prerelease or not _wheel_label(tv.local):
        return None
    if fa.local is not None:
        label = re.search(r"torch(\d{1,3})\.(\d{1,3})", fa.local)
        if label is None:
            return None  # a source build with a label of its own
        minor = (int(label.group(1)), int(label.group(2)))
        if minor != _minor(tv):
            return {"flash_attn": str(fa.public), "built_with": f"{minor[0]}.{minor[1]}",
                    "torch": str(tv.public)[:40], "kind": "other-minor", "suggest": None}
    rows = _eco_rows("flash_attn", "wheels")
    row = next((r for r in rows if _eco_row_version(r, "flash_attn") == Version(fa.public)), None)
    if row is None:
        return None

    def builds(r: dict) -> list:
        out = []
        for b in r.get("torch_builds") or []:
            try:
                version = Version(str(b))
            except ValueError:
                raise DataFileError(f"{_ECOSYSTEM}: flash_attn {r.get('flash_attn')}: bad torch build {clip(b)}") from None
            if _minor(version) == _minor(tv):
                out.append(version)
        return out

    mine = builds(row)
    if len(mine) != 1:
        return None  # no prebuilt wheel for this minor (built from source), or two of one name
    built = mine[0]
    if built.is_prerelease:
        kind = "nightly-build"
    elif built.release > tv.release:
        kind = "later-patch"
    else:
        return None
    exact = [r for r in rows if any(not b.is_prerelease and b.release == tv.release for b in builds(r))]
    suggest = str(max(exact, key=lambda r: _eco_row_version(r, "flash_attn"))["flash_attn"]) if exact else None
    return {"flash_attn": str(fa.public), "built_with": str(built), "torch": str(tv.public)[:40],
            "kind": kind, "suggest": suggest}


def flash_attn_gpu_support(flash_attn_version: Any, cc: Any) -> Optional[dict]:
    """Whether a flash-attn release's kernels accept a GPU (the compute-capability check of its
    csrc/flash_attn/flash_api.cpp; torch_ecosystem.yaml `flash_attn.gpu_support`):
    {"supported": bool, "min_cc": 8.0, "max_cc": 9.0 or None, "flash_attn": "2.6.3"}; None for a
    version or compute capability it cannot read or a release line not in the table."""
    fa, wanted = _eco_version(flash_attn_version), _cc(cc)
    if fa is None or wanted is None:
        return None
    release = Version(fa.base_version)
    for row in _eco_rows("flash_attn", "gpu_support"):
        if not _eco_spec(row, "flash_attn").contains(release, prereleases=True):
            continue
        low, high = _cc(row.get("min_cc")), _cc(row.get("max_cc"))
        if low is None:
            raise DataFileError(f"{_ECOSYSTEM}: flash_attn.gpu_support row {clip(row)} needs `min_cc`")
        ok = wanted >= low and (high is None or wanted <= high)
        return {"supported": ok, "min_cc": _as_float(low), "max_cc": _as_float(high) if high else None,
                "flash_attn": str(fa.public)}
    return None


def triton_ptxas(triton_version: Any, cc: Any = None) -> Optional[dict]:
    """The ptxas a Triton release (or PyTorch's pytorch-triton build of it) bundles and uses for a
    GPU (torch_ecosystem.yaml `triton`): {"triton": "3.2.0", "tool": "ptxas" | "ptxas-blackwell",
    "cuda": "12.4", "env": the variable that points Triton at another ptxas}. Without ``cc`` (or
    below compute capability 10.0) the plain ptxas. None for a release not in the table."""
    tv = _eco_version(triton_version)
    if tv is None:
        return None
    release = Version(tv.base_version)
    row = next((r for r in _eco_rows("triton", "releases") if _eco_row_version(r, "triton") == release), None)
    if row is None:
        return None
    rule = next((s for s in _eco_rows("triton", "selection")
                 if _eco_spec(s, "triton").contains(release, prereleases=True)), None)
    wanted = _cc(cc)
    from_cc = _cc(rule.get("blackwell_from_cc")) if rule else None
    blackwell = (wanted is not None and from_cc is not None and wanted >= from_cc
                 and row.get("ptxas_blackwell") is not None)
    tool = "ptxas-blackwell" if blackwell else "ptxas"
    cuda = row.get("ptxas_blackwell") if blackwell else row.get("ptxas")
    if _cuda(cuda) is None:
        raise DataFileError(f"{_ECOSYSTEM}: triton {row.get('triton')}: `ptxas` must be a CUDA version")
    env = (rule.get("env_blackwell") if blackwell else rule.get("env")) if rule else None
    return {"triton": str(release), "tool": tool, "cuda": _cuda(cuda), "env": str(env) if env else None}


def _env_set(env: Any, name: Any) -> bool:
    """Whether ``env`` (env.variables: a mapping, or None = unknown) sets the variable ``name``."""
    get = getattr(env, "get", None)
    value = get(str(name)) if callable(get) and name else None
    return isinstance(value, str) and bool(value.strip())


def triton_ptxas_lacks_arch(triton_version: Any, cc: Any, env: Any = None) -> Optional[dict]:
    """When the ptxas a Triton release uses for a GPU predates that GPU's architecture (its CUDA is
    older than the first toolkit that compiles for the compute capability, gpu_archs.yaml
    `cuda_first`): {"triton", "tool", "cuda": "12.4", "needs": "12.8", "arch": "sm_120", "env",
    "first_triton": the first release in the table whose ptxas knows it, or None}. None when it
    knows the architecture, either side is unknown, or ``env`` (env.variables) points Triton at
    another ptxas."""
    tool = triton_ptxas(triton_version, cc)
    info = arch_info(cc)
    wanted = _cc(cc)
    first = _cuda(info.get("cuda_first")) if info else None
    if tool is None or first is None or wanted is None or _env_set(env, tool["env"]):
        return None
    if _majmin(tool["cuda"]) >= _majmin(first):
        return None
    later = sorted(_eco_row_version(r, "triton") for r in _eco_rows("triton", "releases"))
    fixed = next((str(t) for t in later
                  if (_majmin((triton_ptxas(str(t), cc) or {}).get("cuda")) or (0, 0)) >= _majmin(first)), None)
    return dict(tool, needs=first, arch=f"sm_{wanted[0]}{wanted[1]}", first_triton=fixed)


def triton_driver_too_old(triton_version: Any, cc: Any, driver_version: Any, env: Any = None) -> Optional[dict]:
    """When the NVIDIA driver (Linux) is older than the CUDA major of the ptxas Triton compiles with
    for a GPU, so every Triton kernel fails to load ("device kernel image is invalid"):
    {"triton", "tool", "cuda": "12.3", "env", "floor": "525.60.13"} (the minor-version-
    compatibility floor of that CUDA major, driver_min.yaml); None otherwise, when unknown, or when
    ``env`` (env.variables) points Triton at another ptxas. Triton wheels are Linux-only, so the
    Linux floor is the one compared."""
    tool = triton_ptxas(triton_version, cc)
    driver = _eco_version(driver_version) if isinstance(driver_version, str) else None
    floor = driver_compat_floor(tool["cuda"], "Linux") if tool else None
    if tool is None or driver is None or floor is None or _env_set(env, tool["env"]):
        return None
    if driver >= Version(str(floor)):
        return None
    return dict(tool, floor=str(floor))


def _env_mitigates(check: dict, env: Any) -> bool:
    get = getattr(env, "get", None)
    value = get(str(check.get("var"))) if callable(get) else None
    if not isinstance(value, str):
        return False
    value = value.strip()
    if "equals" in check:
        return value == str(check["equals"])
    if "protocol_off" in check:
        proto = str(check["protocol_off"]).lower()
        names = [p.strip().lower() for p in value.lstrip("^").split(",") if p.strip()]
        if not names:
            return False  # empty: NCCL's default, every protocol
        return (proto in names) if value.startswith("^") else (proto not in names)
    raise DataFileError(f"{_ECOSYSTEM}: nccl mitigated_by entry {clip(check)} needs `equals` or `protocol_off`")


def nccl_known_defects(nccl_version: Any, compute_capabilities: Any, env: Any = None) -> list:
    """NCCL defects NVIDIA documents for this NCCL release on these GPUs (torch_ecosystem.yaml
    `nccl.defects`): [{"id", "nccl", "what", "when", "workaround", "fixed_in"}], [] when none
    applies or the version cannot be read. ``compute_capabilities``: one value or a list. A defect
    whose documented workaround is already set in ``env`` (env.variables; None = unknown) is left
    out."""
    version = _eco_version(nccl_version)
    if version is None:
        return []
    release = Version(version.base_version)
    values = compute_capabilities if isinstance(compute_capabilities, (list, tuple)) else [compute_capabilities]
    ccs = {c for c in (_cc(v) for v in values[:64]) if c is not None}
    out = []
    for row in _eco_rows("nccl", "defects"):
        if not _eco_spec(row, "nccl").contains(release, prereleases=True):
            continue
        if not ccs & {_cc(c) for c in row.get("compute_capabilities") or []}:
            continue
        if env is not None and any(_env_mitigates(m, env) for m in row.get("mitigated_by") or []):
            continue
        out.append({k: (" ".join(str(row[k]).split()) if row.get(k) is not None else None)
                    for k in ("id", "nccl", "what", "when", "workaround", "fixed_in")})
    return out