"""Published builds: torch releases and their CUDA variants (torch_releases.yaml), the archs each
wheel was compiled for and which GPUs can run them (wheel_archs.yaml), ROCm targets
(rocm_archs.yaml) and SDPA backends (sdpa_backends.yaml)."""

from __future__ import annotations

import re
from typing import Any, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from torchdoctor.tables import _load
from torchdoctor.tables._parse import CC, _ARCH_RE, _arch_cc, _cc, _cuda, _local, _majmin, _version
from torchdoctor.tables.gpu import arch_info, driver_compat_floor, driver_min, integrated_gpu



def _releases() -> list:
    return _load.load("torch_releases")["releases"]


def latest_release() -> Optional[str]:
    """The newest published torch release in the table (announced ones excluded), e.g. "2.13"."""
    published = [r["version"] for r in _releases() if r.get("status") != "announced"]
    return str(max(published, key=lambda x: Version(str(x)))) if published else None


def _release(torch_version: Any) -> Optional[dict]:
    """The torch_releases entry for a version, with its patch-level overrides merged in."""
    version = _version(torch_version)
    if version is None:
        return None
    for entry in _releases():
        if Version(str(entry["version"])).release[:2] == version.release[:2]:
            merged = dict(entry)
            for key, change in (entry.get("overrides") or {}).items():
                if Version(str(key)) == version:
                    for field, value in change.items():
                        base = merged.get(field)
                        merged[field] = {**base, **value} if isinstance(base, dict) else value
            return _with_wheels(merged, version)
    return None


@_load.derived("pypi_wheels")
def _pypi_rows(data: Any) -> dict:
    return {Version(str(r["version"])).release: r for r in (data or {}).get("releases") or []}


def _with_wheels(merged: dict, version: Version) -> dict:
    """What the published wheels of the release say (rules/data/pypi_wheels.yaml, generated from
    them) replaces the typed values: the Python range and free-threaded builds, the local label of
    the PyPI Linux x86_64 wheel (default_cuda) and the cuDNN it pins."""
    row = _pypi_rows().get((version.release + (0, 0))[:3])
    if row is None:
        return merged
    if row.get("python"):
        merged["python"] = {"min": row["python"]["min"], "max": row["python"]["max"],
                            "experimental": list(row.get("free_threaded") or [])}
    build = row.get("linux_x86_64") or {}
    if build.get("local") and build["local"] != "cpu":
        merged["default_cuda"] = build["local"]
        if build.get("cudnn"):
            merged["cudnn"] = {**(merged.get("cudnn") or {}), build["local"]: build["cudnn"]}
    merged["wheels_source"] = row.get("source")
    return merged


def sdpa_backends(cc: Any, torch_version: Any) -> Optional[dict]:
    """What each SDPA CUDA backend does on a GPU with a torch release (sdpa_backends.yaml):
    {"flash": "yes (fp16/bf16 inputs)" | "no (needs sm80-sm121)" | "not in this release" |
    "unknown for this release", ...}; None when the CC or the version cannot be read."""
    device, version = _cc(cc), _version(torch_version)
    if device is None or version is None:
        return None
    out: dict = {}
    for entry in _load.load("sdpa_backends")["backends"]:
        name = entry["backend"]
        if name in out or not SpecifierSet(str(entry["torch"])).contains(version, prereleases=True):
            continue
        low, high = _cc(entry.get("cc_min")), _cc(entry.get("cc_max"))
        if low is None or high is None:
            out[name] = "not in this release"
        elif low <= device <= high:
            extra = entry.get("dtypes") or (f"with {entry['needs']}" if entry.get("needs") else "")
            out[name] = f"yes ({extra})" if extra else "yes"
        else:
            out[name] = f"no (needs sm{low[0]}{low[1]}-sm{high[0]}{high[1]})"
    for name in ("flash", "mem_efficient", "cudnn"):
        out.setdefault(name, "unknown for this release")
    return out


def release_variants(torch_version: Any) -> Optional[list]:
    """The pip variants (cu126, cu128, ...) a torch release was published with, from
    torch_releases.yaml; None for a release the table does not know (or one only announced)."""
    release = _release(torch_version)
    if release is None or release.get("status") == "announced":
        return None
    return list(release.get("cuda_variants") or [])


def pypi_default_cuda(torch_version: Any) -> Optional[str]:
    """The CUDA version ("10.1") of the Linux x86_64 wheel PyPI served for a torch release
    (torch_releases.yaml ``default_cuda``), for a plain ``pip install torch==X`` without an index;
    None where the table has none (or the default is a CPU build)."""
    release = _release(torch_version)
    label = (release or {}).get("default_cuda")
    m = re.fullmatch(r"cu(\d{1,2})(\d)", str(label or ""))
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _variant(torch_version: Any, cuda: Any) -> Optional[str]:
    """cuda as given, else the +cuXXX / +cpu label of the version; "default" = the PyPI default."""
    if cuda is None:
        local = _local(torch_version) or ""
        cuda = local if re.fullmatch(r"cu\d+|cpu", local) else None
    if isinstance(cuda, str) and cuda.strip().lower() == "default":
        release = _release(torch_version)
        cuda = release.get("default_cuda") if release else None
    return None if cuda is None else str(cuda).strip().lower()


def same_build_family(torch_version: Any, other_version: Any) -> Optional[bool]:
    """Whether two local version labels name builds for the same accelerator stack: "+cu121" and
    "+cu124" yes (one CUDA major), "+cu113" and "+rocm4.2" or "+cpu" no, "+cu118" and "+cu121"
    no (torchvision refuses different CUDA majors). None when either has no label or one that
    names no published stack (a source build's git hash)."""
    labels = [(_local(v) or "").lower() for v in (torch_version, other_version)]
    if not all(labels):
        return None
    families = []
    for label in labels:
        cuda = re.match(r"cu(\d+)\d(?!\d)", label)
        if cuda:
            families.append(("cuda", cuda.group(1)))
        elif re.match(r"rocm\d", label) or label in ("cpu", "xpu"):
            families.append((label.rstrip("0123456789.") or label,))
        else:  # a source build's git hash (+de394b6, +gitd54be1a), a vendor tag: not judged
            return None
    return families[0] == families[1]


def _rocm_line(torch_version: Any) -> Optional[Version]:
    """The ROCm version of an official ROCm wheel's label ("2.3.0+rocm5.7" -> 5.7, "+rocm6.2.4"
    -> 6.2.4); None without one, or for labels of other builds (TheRock's "+rocm7.10.0a2025...",
    "+rocmsdk...", a source build's "+git...")."""
    label = re.fullmatch(r"rocm(\d{1,4}(?:\.\d{1,4}){0,3})", _local(torch_version) or "")
    return Version(label.group(1)) if label else None


def _rocm_wheel_carries(gfx: str, version: Version, rocm: Version) -> tuple[bool, Optional[bool]]:
    """(found, carried) from rocm_archs.yaml `wheels`: whether the official wheel of release
    ``version`` built for ROCm ``rocm`` carries ``gfx`` (the entry's list plus its `by_rocm`
    additions for that ROCm line); carried is None where `by_rocm` records the target as
    `unknown` for that line. found is False when no entry covers the release (or one is unreadable)."""
    for entry in _load.load("rocm_archs").get("wheels") or []:
        try:
            if not SpecifierSet(str(entry["torch"])).contains(version, prereleases=True):
                continue
            extras = [x for x in entry.get("by_rocm") or []
                      if SpecifierSet(str(x["rocm"])).contains(rocm, prereleases=True)]
        except (InvalidSpecifier, KeyError, TypeError):
            return False, None
        if gfx in (entry.get("archs") or []) or any(gfx in (x.get("add") or []) for x in extras):
            return True, True
        return True, (None if any(gfx in (x.get("unknown") or []) for x in extras) else False)
    return False, None


def rocm_gfx_support(gfx_target: Any, torch_version: Any = None) -> Optional[dict]:
    """What rocm_archs.yaml says of an AMD target for a torch release: {"gfx", "family",
    "in_wheels": bool or None, "first_torch", "first_rocm", "rocm", "needs_rocm", "override"};
    None for a target the file does not list (not judged). ``gfx_target`` may carry ROCm's
    feature suffix ("gfx1010:xnack-").

    Without a ``+rocmX.Y`` label, in_wheels says whether the release is at least the target's
    first_torch. With one ("2.3.0+rocm5.7"), the per-release lists decide for that ROCm line:
    gfx942 is in 2.3's rocm6.0 wheels, not its rocm5.7 ones (in_wheels False, needs_rocm "6.0");
    in_wheels is None where the file records the target as unknown for the line (gfx1151 in 2.9's
    rocm7.0 wheels). ``rocm`` is the label's ROCm version, ``needs_rocm`` the first ROCm line of
    this release that carries the target when only the line is missing it."""
    if not isinstance(gfx_target, str):
        return None
    base = gfx_target.strip().lower().split(":", 1)[0]
    for target in _load.load("rocm_archs")["targets"]:
        if target["gfx"] == base:
            first, version = _version(target.get("first_torch")), _version(torch_version)
            in_wheels = first is not None and version is not None and version >= first
            rocm, needs_rocm = _rocm_line(torch_version), None
            if rocm is not None and version is not None:
                found, carried = _rocm_wheel_carries(base, version, rocm)
                if found:
                    in_wheels = carried
                    first_rocm = _version(target.get("first_rocm"))
                    if carried is False and first is not None and version >= first \
                            and first_rocm is not None and rocm < first_rocm:
                        needs_rocm = str(target["first_rocm"])
            return {"gfx": base, "family": target.get("family"), "in_wheels": in_wheels,
                    "first_torch": target.get("first_torch"), "first_rocm": target.get("first_rocm"),
                    "rocm": str(rocm) if rocm is not None else None, "needs_rocm": needs_rocm,
                    "override": target.get("override")}
    return None


def wheel_archs(
    torch_version: Any, cuda: Any = None, platform: str = "linux_x86_64"
) -> Optional[list]:
    """Arch list of the published build (("2.7.0", "12.8") -> [..., "sm_120", "compute_120"]).

    ``cuda``: "12.8", "cu128", "cpu" (-> []), "default" (PyPI's default variant), or None to take the
    version's own +cuXXX label. ``platform``: a block of wheel_archs.yaml (linux_x86_64, linux_aarch64,
    windows_x86_64, conda_linux_64). None when the build is unknown.
    """
    version, variant = _version(torch_version), _variant(torch_version, cuda)
    if version is None or variant is None:
        return None
    if variant == "cpu":
        return []
    wanted = _cuda(variant)
    builds = _load.load("wheel_archs")["builds"]
    block = builds.get(platform)
    if wanted is None:
        return None
    while block is not None:
        for entry in block["entries"]:
            cudas = entry["cuda"] if isinstance(entry["cuda"], list) else [entry["cuda"]]
            if wanted in (_cuda(c) for c in cudas) and SpecifierSet(str(entry["torch"])).contains(
                version, prereleases=True
            ):
                return list(entry["archs"])
        block = builds.get(block.get("fallback") or "")
    return None


def wheel_platform(os: Any = None, machine: Any = None) -> Optional[str]:
    """The block of wheel_archs.yaml that describes this machine's CUDA wheels
    (("Linux", "aarch64") -> "linux_aarch64"); None where no CUDA wheels are published (macOS).
    Unknown values (None, or anything not a string) match the table's null entries."""
    os_name = os.strip().lower() if isinstance(os, str) and os.strip() else None
    arch = machine.strip().lower() if isinstance(machine, str) and machine.strip() else None
    for row in _load.load("wheel_archs")["platforms"]["map"]:
        oses = [o.lower() if isinstance(o, str) else None for o in row["os"]]
        machines = [m.lower() if isinstance(m, str) else None for m in row["machines"]]
        if os_name in oses and arch in machines:
            return row["block"]
    return None


def _code_runs_on(kind: str, code: CC, suffix: str, device: CC) -> bool:
    compat = _load.load("wheel_archs")["compatibility"]
    rule = compat["suffix_rules"].get(suffix) if suffix else None
    same_major = device[0] == code[0] and device[1] >= code[1]
    if rule == "exact":
        return device == code
    if rule == "family":
        return same_major
    if kind == "compute":
        return device >= code
    for exact in compat["exact_only"]:
        if _cc(exact["code"]) == code:
            return device in {_cc(c) for c in exact["runs_on"]}
    if device != code and device in {_cc(c) for c in compat["excluded_devices"]}:
        return False
    return same_major


def arch_list_supports(arch_list: Any, cc: Any) -> Optional[bool]:
    """Whether a compiled arch list has code a GPU of compute capability ``cc`` can run.

    Applies exact matches, same-major binary compatibility (sm_80 runs on 8.6), PTX JIT to newer
    GPUs (compute_90 runs on 10.0) and the Jetson exceptions from wheel_archs.yaml. None when the
    list or the CC cannot be read.
    """
    device = _cc(cc)
    if device is None or arch_list is None or isinstance(arch_list, (str, bytes)):
        return None
    try:
        archs = [str(a).strip().lower() for a in arch_list]
    except TypeError:
        return None
    for arch in archs:
        match = _ARCH_RE.match(arch)
        if match and _code_runs_on(
            match.group(1), _arch_cc(match.group(2)), match.group(3), device
        ):
            return True
    return False


def wheels_supporting(
    cc: Any, torch_version: Any = None, platform: str = "linux_x86_64"
) -> Optional[list]:
    """Published builds whose arch list runs on ``cc``, newest first, as "2.13+cu126".

    With ``torch_version``, only that release's variants. Announced (unreleased) versions are left
    out, and so are builds of a CUDA older than the architecture (``cuda_first`` in gpu_archs.yaml).
    None when the CC cannot be read.
    """
    if _cc(cc) is None:
        return None
    if platform is None:  # no CUDA wheels for this platform (macOS)
        return []
    only = _version(torch_version).release[:2] if _version(torch_version) else None
    # A build whose toolkit predates the architecture reaches it only through PTX JIT of old
    # code (torch 1.3's compute_50 "runs" on Thor): never a build to recommend.
    first = _majmin(_cuda((arch_info(cc) or {}).get("cuda_first")))
    found = []
    for release in reversed(_releases()):
        if release.get("status") == "announced":
            continue
        rel = Version(str(release["version"]))
        if only is not None and rel.release[:2] != only:
            continue
        variants = sorted(
            release.get("cuda_variants") or [],
            key=lambda v: _majmin(_cuda(v)) or (0, 0),
            reverse=True,
        )
        for variant in variants:
            if first is not None and (_majmin(_cuda(variant)) or (0, 0)) < first:
                continue
            archs = wheel_archs(f"{rel}.0", variant, platform)
            if archs and arch_list_supports(archs, cc):
                found.append(f"{release['version']}+{variant}")
    return found


def wheel_for(
    cc: Any, driver: Any = None, torch_version: Any = None, os: Any = None, machine: Any = None
) -> Optional[dict]:
    """The published build to recommend for a GPU, or None when no build runs on ``cc``:
    {"build": "2.1+cu118", "torch": "2.1", "variant": "cu118", "index_url": ..., "driver_min": ...,
    "compat_floor": ..., "compat": bool, "runs": bool}.

    Order: the user's own release first (its variants the driver runs natively, then through
    CUDA minor-version compatibility), then the newest release the driver can run either way.
    ``compat``: the pick needs minor-version compatibility (driver below the toolkit's minimum,
    above its major's floor). ``runs``: False when the driver is known and runs no build (the
    newest is named; the driver must be updated). With no driver known, the first build found.
    """
    platform = wheel_platform(os, machine)
    if platform is None:
        return None
    os = os if isinstance(os, str) else "Linux"  # driver rows: Linux unless the OS is known
    own = (wheels_supporting(cc, torch_version, platform) or []) if _version(torch_version) else []
    others = [w for w in (wheels_supporting(cc, None, platform) or []) if w not in own]
    # a Jetson driver is numbered apart from the tables: judge it as unknown
    drv = _version(driver) if isinstance(driver, str) and not integrated_gpu(cc) else None

    def needs(build: str, compat: bool) -> Optional[str]:
        variant = build.split("+")[1]
        return driver_compat_floor(variant, os) if compat else driver_min(variant, os)

    def runs(build: str, compat: bool) -> bool:
        need = needs(build, compat)
        return need is not None and drv is not None and drv >= _version(need)

    def pick(build: str, compat: bool = False, ok: bool = True) -> dict:
        release, variant = build.split("+")
        return {"build": build, "torch": release, "variant": variant,
                "index_url": wheel_index_url(variant), "driver_min": needs(build, False),
                "compat_floor": needs(build, True), "compat": compat, "runs": ok}

    candidates = [(b, c) for c in (False, True) for b in own]
    candidates += [(b, c) for b in others for c in (False, True)]
    if not candidates:
        return None
    if drv is None:
        return pick(candidates[0][0])
    for build, compat in candidates:
        if runs(build, compat):
            return pick(build, compat)
    return pick(candidates[0][0], ok=False)


def wheel_index_url(variant: Any) -> Optional[str]:
    """pip index URL of a build variant ("cu128" or "12.8" -> https://download.pytorch.org/whl/cu128)."""
    text = str(variant or "").strip().lower()
    cuda = _cuda(text)
    if cuda is not None:
        major, minor = cuda.split(".")
        text = f"cu{major}{minor}"
    elif not re.fullmatch(r"cpu|rocm\d+(\.\d+)*", text):
        return None
    return _load.load("wheel_archs")["index_url"]["pattern"].format(variant=text)


def cuda_for_conda_build(build_string: Any) -> Optional[tuple]:
    """(cuda, cudnn) from a conda build string ("py3.7_cuda10.1.243_cudnn7.6.3_0" -> ("10.1.243", "7.6.3")).

    (None, None) for a CPU build ("py3.7_cpu_0"); None when the string is not recognised.
    """
    if not isinstance(build_string, str):
        return None
    for pattern in _load.load("wheel_archs")["conda_build_patterns"]["patterns"]:
        match = re.search(pattern, build_string.lower())
        if not match:
            continue
        groups = match.groupdict()
        if groups.get("cpu"):
            return (None, None)
        cuda = groups.get("cuda") or (
            _cuda("cu" + groups["cuda_nodot"]) if groups.get("cuda_nodot") else None
        )
        return (cuda, groups.get("cudnn"))
    return None
