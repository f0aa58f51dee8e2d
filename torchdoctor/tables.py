"""Reference tables from ``rules/data/*.yaml`` exposed as plain functions.

Knowledge (which compute capability is which architecture, which driver a CUDA version
needs, which archs a wheel was compiled for) lives in the YAML files, each entry with its
source; this module only loads, checks the shape and looks up. The same functions are given
to rule conditions by the engine (``engine.TABLE_FUNCTIONS``).

Every lookup is tolerant: input it cannot read, or a value the tables do not know, gives
``None`` (never a guess, never an exception). Versions are compared with ``packaging``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from torchdoctor.errors import RuleFileError
from torchdoctor.paths import data_dir
from torchdoctor.safeio import clip

CC = tuple  # (major, minor)


class DataFileError(RuleFileError):
    """A malformed data file: carries ``path:line: what``."""


# ----------------------------------------------------------------------------------------
# loading (with line numbers, so a malformed entry is reported as path:line)
# ----------------------------------------------------------------------------------------


MAX_TABLE_BYTES = 4 * 1024 * 1024
"""Size cap of one data file (the largest is about 60 kB)."""


class _Map(dict):
    """A YAML mapping that remembers its 1-based line."""

    line = 0


@functools.cache
def _line_loader() -> type:
    import yaml

    class _Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):  # type: ignore[override]
            data = _Map(super().construct_mapping(node, deep=True))
            data.line = node.start_mark.line + 1
            return data

    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _Loader.construct_mapping)
    return _Loader


@functools.cache
def load(name: str, directory: Optional[str] = None) -> Any:
    """Load ``rules/data/<name>.yaml`` (cached) and check its shape when a check exists.

    Read bounded, parsed by the C loader (aliases of scalars only), checked, and kept in the
    on-disk cache of :mod:`torchdoctor.rulecache` keyed by the file's bytes. Line numbers for
    an error come from a second, pure-Python parse that runs only when a check fails."""
    from torchdoctor import rulecache, yamlio

    path = Path(directory) if directory else data_dir()
    path = path / f"{name}.yaml"
    text = yamlio.read_text(path, DataFileError, what="data file", limit=MAX_TABLE_BYTES)
    key = rulecache.make_key([(str(path), text.encode("utf-8"))])
    entry = rulecache.entry_name(f"table-{name}", [str(path)])
    cached = rulecache.load(entry, key)
    if cached is not None:
        return cached
    data = yamlio.load_text(text, str(path), DataFileError, aliases="scalars")
    check = _CHECKS.get(name)
    if check is not None:
        try:
            check(_Checker(path), data)
        except DataFileError:
            import yaml

            check(_Checker(path), yaml.load(text, Loader=_line_loader()))  # noqa: S506 - a SafeLoader
            raise
    rulecache.store(entry, key, data)
    return data


class _Checker:
    """Raises DataFileError at the line of the offending mapping."""

    def __init__(self, path: Path):
        self.path = path

    def fail(self, node: Any, what: str) -> None:
        line = getattr(node, "line", 0)
        where = f"{self.path}:{line}" if line else str(self.path)
        raise DataFileError(f"{where}: {what}")

    def mapping(self, node: Any, what: str) -> None:
        if not isinstance(node, dict):
            self.fail(node, f"{what} must be a mapping")

    def items(self, node: Any, key: str) -> list:
        value = node.get(key) if isinstance(node, dict) else None
        if not isinstance(value, list):
            self.fail(node, f"'{key}' must be a list")
        return value

    def number(self, node: Any, key: str, value: Any, allow_none: bool = False) -> None:
        if value is None and allow_none:
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(node, f"'{key}' must be a number, got {clip(value)}")

    def version(self, node: Any, key: str, value: Any, allow_none: bool = True) -> None:
        if value is None and allow_none:
            return
        try:
            Version(str(value))
        except ValueError:  # InvalidVersion, or a release number over 4300 digits
            self.fail(node, f"'{key}' is not a version: {clip(value)}")


def _check_gpu_archs(c: _Checker, data: Any) -> None:
    c.mapping(data, "the file")
    for arch in c.items(data, "architectures"):
        c.mapping(arch, "an architecture")
        if not isinstance(arch.get("name"), str):
            c.fail(arch, "'name' must be a string")
        for cc in c.items(arch, "compute_capabilities"):
            c.number(arch, "compute_capabilities", cc)
        for key, value in (arch.get("tensor_cores") or {}).items():
            if not isinstance(value, bool):
                c.fail(arch, f"tensor_cores.{key} must be true or false")
        for cap in arch.get("capabilities") or []:
            c.mapping(cap, "a capability")
            c.number(cap, "cc", cap.get("cc"))


def _check_gpu_models(c: _Checker, data: Any) -> None:
    c.mapping(data, "the file")
    for group in c.items(data, "groups"):
        c.mapping(group, "a group")
        if "cc" not in group:
            c.fail(group, "'cc' is missing (use null for an ambiguous name)")
        c.number(group, "cc", group["cc"], allow_none=True)
        for text in c.items(group, "match"):
            if not isinstance(text, str) or not _tokens(text):
                c.fail(group, f"bad match string {clip(text)}")


def _check_driver_min(c: _Checker, data: Any) -> None:
    c.mapping(data, "the file")
    for toolkit in c.items(data, "toolkits"):
        c.mapping(toolkit, "a toolkit")
        c.version(toolkit, "cuda", toolkit.get("cuda"), allow_none=False)
        for rel in c.items(toolkit, "releases"):
            c.mapping(rel, "a release")
            for key in ("linux", "windows", "toolkit_version"):
                c.version(rel, key, rel.get(key))
    compat = data.get("minor_version_compatibility")
    c.mapping(compat, "minor_version_compatibility")
    for floor in c.items(compat, "floors"):
        c.mapping(floor, "a floor")
        if not isinstance(floor.get("major"), int):
            c.fail(floor, "'major' must be an integer")
        for key in ("linux", "windows", "upper_exclusive"):
            c.version(floor, key, floor.get(key))


_ARCH_RE = re.compile(r"^(sm|compute)_(\d{1,6})([a-z]?)$")


def _check_wheel_archs(c: _Checker, data: Any) -> None:
    c.mapping(data, "the file")
    compat = data.get("compatibility")
    c.mapping(compat, "compatibility")
    for rule in c.items(compat, "exact_only"):
        c.number(rule, "code", rule.get("code"))
    c.items(compat, "excluded_devices")
    builds = data.get("builds")
    c.mapping(builds, "builds")
    for block in builds.values():
        c.mapping(block, "a build block")
        for entry in c.items(block, "entries"):
            c.mapping(entry, "a build entry")
            try:
                SpecifierSet(str(entry.get("torch")))
            except InvalidSpecifier:
                c.fail(entry, f"'torch' is not a version specifier: {clip(entry.get('torch'))}")
            cudas = entry.get("cuda")
            for cuda in cudas if isinstance(cudas, list) else [cudas]:
                c.version(entry, "cuda", cuda, allow_none=False)
            for arch in c.items(entry, "archs"):
                if not isinstance(arch, str) or not _ARCH_RE.match(arch):
                    c.fail(entry, f"bad arch {clip(arch)} (expected sm_XY or compute_XY)")
    platforms = data.get("platforms")
    c.mapping(platforms, "platforms")
    for row in c.items(platforms, "map"):
        c.mapping(row, "a platform row")
        for key in ("os", "machines"):
            if not isinstance(row.get(key), list):
                c.fail(row, f"'{key}' must be a list (null = unknown)")
        if row.get("block") not in builds:
            c.fail(row, f"'block' names no block of builds: {clip(row.get('block'))}")
    for block in builds.values():
        if block.get("fallback") is not None and block.get("fallback") not in builds:
            c.fail(block, f"'fallback' names no block of builds: {clip(block.get('fallback'))}")
    patterns = data.get("conda_build_patterns")
    c.mapping(patterns, "conda_build_patterns")
    for pattern in c.items(patterns, "patterns"):
        try:
            re.compile(pattern)
        except (re.error, TypeError) as exc:
            c.fail(patterns, f"bad pattern {clip(pattern)}: {exc}")


def _check_torch_releases(c: _Checker, data: Any) -> None:
    c.mapping(data, "the file")
    for rel in c.items(data, "releases"):
        c.mapping(rel, "a release")
        c.version(rel, "version", rel.get("version"), allow_none=False)
        python = rel.get("python")
        if python is not None:
            c.mapping(python, "'python'")
            for key in ("min", "max"):
                c.version(rel, f"python.{key}", python.get(key), allow_none=False)
        for key in rel.get("overrides") or {}:
            c.version(rel, "overrides key", key, allow_none=False)


def _check_rocm_archs(c: _Checker, data: Any) -> None:
    c.mapping(data, "the file")
    for target in c.items(data, "targets"):
        c.mapping(target, "a target")
        if not re.fullmatch(r"gfx[0-9a-f]{3,4}", str(target.get("gfx"))):
            c.fail(target, f"'gfx' is not a gfx target: {clip(target.get('gfx'))}")
        c.version(target, "first_torch", target.get("first_torch"))
        c.version(target, "override", target.get("override"))
        if not target.get("source"):
            c.fail(target, "every target names its source")


def _check_sdpa_backends(c: _Checker, data: Any) -> None:
    c.mapping(data, "the file")
    for entry in c.items(data, "backends"):
        c.mapping(entry, "a backend entry")
        if entry.get("backend") not in ("flash", "mem_efficient", "cudnn"):
            c.fail(entry, f"unknown backend {clip(entry.get('backend'))}")
        try:
            SpecifierSet(str(entry.get("torch")))
        except InvalidSpecifier:
            c.fail(entry, f"'torch' is not a version specifier: {clip(entry.get('torch'))}")
        for key in ("cc_min", "cc_max"):
            c.number(entry, key, entry.get(key), allow_none=True)


_CHECKS: dict[str, Callable[[_Checker, Any], None]] = {
    "gpu_archs": _check_gpu_archs,
    "gpu_models": _check_gpu_models,
    "driver_min": _check_driver_min,
    "wheel_archs": _check_wheel_archs,
    "torch_releases": _check_torch_releases,
    "rocm_archs": _check_rocm_archs,
    "sdpa_backends": _check_sdpa_backends,
}


# ----------------------------------------------------------------------------------------
# small parsers (tolerant: None when the input cannot be read)
# ----------------------------------------------------------------------------------------


def _cc(value: Any) -> Optional[CC]:
    """(major, minor) from 8.6, "8.6", (8, 6), "sm_86"; None otherwise."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (tuple, list)) and len(value) == 2:
        try:
            return int(value[0]), int(value[1])
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        arch = _ARCH_RE.match(value.strip().lower())
        if arch:
            return _arch_cc(arch.group(2))
    try:
        major, minor = f"{float(value):.1f}".split(".")
    except (TypeError, ValueError):
        return None
    return (int(major), int(minor)) if int(major) >= 0 else None


def _arch_cc(digits: str) -> CC:
    return int(digits[:-1] or 0), int(digits[-1])


def _as_float(cc: CC) -> float:
    return float(f"{cc[0]}.{cc[1]}")


def _version(value: Any) -> Optional[Version]:
    """Release part of a version (2.7.0+cu128 -> 2.7.0, 2.10.0.dev2025 -> 2.10.0); None if unreadable."""
    if value is None:
        return None
    try:
        return Version(Version(str(value).strip()).base_version)
    except ValueError:  # InvalidVersion, or a release number over 4300 digits
        return None


def _local(value: Any) -> Optional[str]:
    try:
        return Version(str(value).strip()).local
    except ValueError:
        return None


def _cuda(value: Any) -> Optional[str]:
    """Toolkit major.minor from "12.8", "12.8.1", "cu128", "cu92", "V12.8.93"; None otherwise."""
    if value is None:
        return None
    text = str(value).strip().lower()
    tag = re.fullmatch(r"cu(?:da)?(\d{2,3})", text)
    if tag:
        digits = tag.group(1)
        return f"{int(digits[:-1])}.{digits[-1]}"
    dotted = re.match(r"v?(\d{1,9})\.(\d{1,9})(?!\d)", text)
    return f"{int(dotted.group(1))}.{int(dotted.group(2))}" if dotted else None


def _majmin(value: Any) -> Optional[tuple]:
    match = re.match(r"\s*(\d{1,9})\.(\d{1,9})(?!\d)", str(value)) if value is not None else None
    return (int(match.group(1)), int(match.group(2))) if match else None


# ----------------------------------------------------------------------------------------
# GPU architectures and models
# ----------------------------------------------------------------------------------------


def _arch_entry(cc: Any) -> Optional[tuple[dict, CC]]:
    wanted = _cc(cc)
    if wanted is None:
        return None
    for entry in load("gpu_archs")["architectures"]:
        if any(_cc(c) == wanted for c in entry["compute_capabilities"]):
            return entry, wanted
    return None


def sourced_entries(data: Any, key: str, field: str, where: str) -> list[str]:
    """The ``field`` of every entry of ``data[key]``, each of which must also give a ``reason``
    and a ``source`` (allow-lists such as env_allowlist.yaml and packages_of_interest.yaml)."""
    out = []
    for i, entry in enumerate(data.get(key) or []):
        if not isinstance(entry, dict) or not isinstance(entry.get(field), str) or not entry[field]:
            raise DataFileError(f"{where}: {key}[{i}] needs a non-empty string `{field}`")
        if not entry.get("reason") or not entry.get("source"):
            raise DataFileError(f"{where}: {key}[{i}] ({entry[field]}) needs `reason` and `source`")
        out.append(entry[field])
    return out


def allow_list(name: str, directory: Optional[str] = None) -> tuple[dict, list[str], list[str], str]:
    """An allow-list file (``names`` and ``prefixes``, each entry with ``reason`` and ``source``):
    (data, names, prefixes, where), checked. Shared by the env and packages probes."""
    data = load(name, directory)
    where = f"{directory or 'rules/data'}/{name}.yaml"
    if not isinstance(data, dict):
        raise DataFileError(f"{where}: expected a mapping with `names` and `prefixes`")
    names = sourced_entries(data, "names", "name", where)
    prefixes = sourced_entries(data, "prefixes", "prefix", where)
    return data, names, prefixes, where


def arch_for_cc(cc: Any) -> Optional[str]:
    """Architecture name for a compute capability (8.6 -> "Ampere"), None if unknown."""
    found = _arch_entry(cc)
    return found[0]["name"] if found else None


def arch_info(cc: Any) -> Optional[dict]:
    """Everything gpu_archs.yaml says about one compute capability, per-CC details merged in."""
    found = _arch_entry(cc)
    if found is None:
        return None
    entry, wanted = found
    info = {k: v for k, v in entry.items() if k not in ("compute_capabilities", "capabilities")}
    info["cc"] = _as_float(wanted)
    info["tensor_cores"] = dict(entry.get("tensor_cores") or {})
    for cap in entry.get("capabilities") or []:
        if _cc(cap.get("cc")) == wanted:
            for key, value in cap.items():
                if key == "tensor_cores":
                    info["tensor_cores"].update(value)
                elif key != "cc":
                    info[key] = value
    return info


def integrated_gpu(cc: Any) -> bool:
    """Whether gpu_archs.yaml marks this CC as an integrated (Jetson) GPU (segment: embedded).
    Their driver ships with JetPack/L4T and is numbered apart from the desktop and datacenter
    drivers (Thor: 580.00 with CUDA 13.0), so driver_min.yaml's minimums do not apply."""
    info = arch_info(cc)
    return bool(info) and info.get("segment") == "embedded"


def _tokens(text: str) -> tuple:
    text = re.sub(r"\([^()]*\)", " ", text.lower())  # [^()]: linear on unclosed '(' runs
    text = re.sub(r"[-_/,:;]+", " ", text)
    text = re.sub(r"(\d)([a-z])", r"\1 \2", text)
    return tuple(text.split())


@functools.cache
def _model_patterns() -> tuple:
    return tuple(
        (_tokens(text), group["cc"])
        for group in load("gpu_models")["groups"]
        for text in group["match"]
    )


MAX_NAME = 256
"""Longest GPU name looked up (matching is words x patterns; real names are under 80)."""


def cc_for_gpu_name(name: Any) -> Optional[float]:
    """Compute capability for a GPU name ("NVIDIA GeForce RTX 4090 Laptop GPU" -> 8.9); None if unknown."""
    if not isinstance(name, str) or len(name) > MAX_NAME:
        return None
    words = _tokens(name)
    matches = [
        (start, start + len(tokens), cc)
        for tokens, cc in _model_patterns()
        for start in range(len(words) - len(tokens) + 1)
        if words[start : start + len(tokens)] == tokens
    ]
    if not matches:
        return None
    best = max(matches, key=lambda m: m[1] - m[0])
    for start, end, cc in matches:
        inside = best[0] <= start and end <= best[1] and (end - start) < (best[1] - best[0])
        if not inside and cc != best[2]:
            return None  # another GPU in the same string, or two names of equal weight disagree
    return float(best[2]) if best[2] is not None else None


# ----------------------------------------------------------------------------------------
# drivers
# ----------------------------------------------------------------------------------------


def _os_key(os: Any) -> Optional[str]:
    text = str(os or "").strip().lower()
    if text.startswith("linux"):
        return "linux"
    if text.startswith("win"):
        return "windows"
    return None


def driver_min(cuda_version: Any, os: str = "Linux") -> Optional[str]:
    """Minimum driver NVIDIA lists for a toolkit (GA row; the update row when a full version matches)."""
    wanted, key = _cuda(cuda_version), _os_key(os)
    if wanted is None or key is None:
        return None
    full = (
        _version(cuda_version)
        if re.fullmatch(r"\d+\.\d+\.\d+", str(cuda_version).strip())
        else None
    )
    for toolkit in load("driver_min")["toolkits"]:
        if _cuda(toolkit["cuda"]) != wanted:
            continue
        releases = toolkit["releases"]
        exact = [
            r for r in releases if full is not None and _version(r.get("toolkit_version")) == full
        ]
        row = (exact or [r for r in releases if r.get("release") == "GA"] or releases)[0]
        return row.get(key)
    return None


def driver_compat_floor(cuda_version: Any, os: str = "Linux") -> Optional[str]:
    """Lowest driver that runs a build of this CUDA major through minor-version compatibility."""
    wanted, key = _majmin(_cuda(cuda_version)), _os_key(os)
    if wanted is None or key is None:
        return None
    for floor in load("driver_min")["minor_version_compatibility"]["floors"]:
        if floor["major"] == wanted[0]:
            return floor.get(key)
    return None


# ----------------------------------------------------------------------------------------
# wheels and their architectures
# ----------------------------------------------------------------------------------------


def _releases() -> list:
    return load("torch_releases")["releases"]


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
            return merged
    return None


def sdpa_backends(cc: Any, torch_version: Any) -> Optional[dict]:
    """What each SDPA CUDA backend does on a GPU with a torch release (sdpa_backends.yaml):
    {"flash": "yes (fp16/bf16 inputs)" | "no (needs sm80-sm121)" | "not in this release" |
    "unknown for this release", ...}; None when the CC or the version cannot be read."""
    device, version = _cc(cc), _version(torch_version)
    if device is None or version is None:
        return None
    out: dict = {}
    for entry in load("sdpa_backends")["backends"]:
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
    for entry in load("rocm_archs").get("wheels") or []:
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
    for target in load("rocm_archs")["targets"]:
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
    builds = load("wheel_archs")["builds"]
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
    for row in load("wheel_archs")["platforms"]["map"]:
        oses = [o.lower() if isinstance(o, str) else None for o in row["os"]]
        machines = [m.lower() if isinstance(m, str) else None for m in row["machines"]]
        if os_name in oses and arch in machines:
            return row["block"]
    return None


def _code_runs_on(kind: str, code: CC, suffix: str, device: CC) -> bool:
    compat = load("wheel_archs")["compatibility"]
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
    return load("wheel_archs")["index_url"]["pattern"].format(variant=text)


def cuda_for_conda_build(build_string: Any) -> Optional[tuple]:
    """(cuda, cudnn) from a conda build string ("py3.7_cuda10.1.243_cudnn7.6.3_0" -> ("10.1.243", "7.6.3")).

    (None, None) for a CPU build ("py3.7_cpu_0"); None when the string is not recognised.
    """
    if not isinstance(build_string, str):
        return None
    for pattern in load("wheel_archs")["conda_build_patterns"]["patterns"]:
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


# ----------------------------------------------------------------------------------------
# releases: Python, domain libraries
# ----------------------------------------------------------------------------------------


def _minors(values: Optional[Iterable]) -> set:
    return {_majmin(str(v).rstrip("t")) for v in (values or [])}


def python_supported(torch_version: Any, python_version: Any) -> Optional[bool]:
    """Whether the torch release published wheels for this Python minor (experimental ones count)."""
    release, python = _release(torch_version), _majmin(python_version)
    spec = release.get("python") if release else None
    if python is None or not spec:
        return None
    if _majmin(spec["min"]) <= python <= _majmin(spec["max"]):
        return True
    return python in _minors(spec.get("also")) | _minors(spec.get("experimental"))


def mps_min_macos(torch_version: Any) -> Optional[str]:
    """Minimum macOS for the MPS backend of a torch release ("2.9.0" -> "14.0"); None if the
    release has no MPS or is unknown."""
    release = _release(torch_version)
    value = release.get("mps_min_macos") if release else None
    return str(value) if value is not None else None


def torchvision_for(torch_version: Any) -> Optional[str]:
    """The torchvision release matching a torch release ("2.13.0" -> "0.28"); None if unknown."""
    release = _release(torch_version)
    value = release.get("torchvision") if release else None
    return str(value) if value is not None else None


def torchaudio_for(torch_version: Any) -> Optional[str]:
    """The torchaudio release matching a torch release ("2.5.1" -> "2.5"); None if unknown.

    From torch 2.11 on this is the oldest compatible torchaudio (built on the stable ABI).
    """
    release = _release(torch_version)
    value = release.get("torchaudio") if release else None
    return str(value) if value is not None else None


# ----------------------------------------------------------------------------------------
# torch.compile support (torch_releases.yaml `compile`) and CPU inference stacks
# (cpu_stacks.yaml). Self-contained: new table functions for rule conditions.
# ----------------------------------------------------------------------------------------


def _compile_table() -> dict:
    data = load("torch_releases").get("compile")
    return data if isinstance(data, dict) else {}


def _message_for(rows: Any, version: Version) -> Optional[str]:
    """The ``message`` of the first row whose ``torch`` specifier contains ``version``."""
    for row in rows if isinstance(rows, list) else []:
        try:
            if SpecifierSet(str(row["torch"])).contains(version, prereleases=True):
                return str(row["message"])
        except (InvalidSpecifier, KeyError, TypeError):
            raise DataFileError(f"rules/data/torch_releases.yaml: compile: bad row {row!r}") from None
    return None


def compile_python_support(torch_version: Any, python_version: Any) -> Optional[dict]:
    """Whether ``torch.compile`` (TorchDynamo) of a torch release accepts a Python minor:
    {"supported": bool, "python": "3.12", "first_torch": "2.4" (None: no release yet),
    "max_python": newest minor this release compiles on, "error": the RuntimeError text it raises}.

    None (not judged) when a version cannot be read, the release predates torch.compile (< 2.0),
    the minor is not in the table, or the release is newer than the table was checked through and
    no row says it supports the minor."""
    version, python = _version(torch_version), _majmin(python_version)
    if version is None or python is None or version < Version("2.0"):
        return None
    table = _compile_table()
    rows = [r for r in table.get("python") or [] if isinstance(r, dict) and _majmin(r.get("python"))]
    row = next((r for r in rows if _majmin(r["python"]) == python), None)
    if row is None:
        return None
    first = _version(row.get("first_torch"))
    supported = first is not None and version >= first
    checked = _version(table.get("checked_through"))
    if not supported and (checked is None or version.release[:2] > checked.release[:2]):
        return None
    ok = [r["python"] for r in rows
          if _version(r.get("first_torch")) is not None and version >= _version(r["first_torch"])]
    return {
        "supported": supported,
        "python": f"{python[0]}.{python[1]}",
        "first_torch": str(row["first_torch"]) if row.get("first_torch") is not None else None,
        "max_python": str(max(ok, key=_majmin)) if ok else None,
        "error": None if supported else _message_for(table.get("errors"), version),
    }


def compile_windows_support(torch_version: Any) -> Optional[dict]:
    """What ``torch.compile`` of a torch release does on Windows: {"supported": bool,
    "first_torch": first release whose default (inductor) backend runs there, "error": the
    RuntimeError text it raises, "scope": which backends it refuses}. None when the version
    cannot be read or predates torch.compile (< 2.0)."""
    version = _version(torch_version)
    windows = _compile_table().get("windows")
    if version is None or version < Version("2.0") or not isinstance(windows, dict):
        return None
    first = str(windows.get("first_torch"))
    supported = _version(first) is not None and version >= _version(first)
    rows = [] if supported else [r for r in windows.get("errors") or [] if _message_for([r], version)]
    row = rows[0] if rows else None
    return {"supported": supported, "first_torch": first,
            "error": str(row["message"]) if row else None,
            "scope": str(row.get("scope")) if row and row.get("scope") else None}


@functools.cache
def _cpu_stacks() -> tuple:
    where = "rules/data/cpu_stacks.yaml"
    data = load("cpu_stacks")
    entries = data.get("stacks") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise DataFileError(f"{where}: expected a mapping with a `stacks` list")
    out = []
    for i, entry in enumerate(entries):
        key = (entry.get("name") or entry.get("prefix")) if isinstance(entry, dict) else None
        if not isinstance(key, str) or not all(entry.get(k) for k in ("what", "reason", "source")):
            raise DataFileError(
                f"{where}: stacks[{i}] needs `name` or `prefix`, `what`, `reason` and `source`"
            )
        out.append(entry)
    return tuple(out)


def cpu_inference_stacks(versions: Any) -> list:
    """The CPU inference stacks of cpu_stacks.yaml among installed distributions (``versions``:
    packages.versions, normalised name -> version; a dict or the rule engine's read-only mapping
    view): ["intel-extension-for-pytorch 2.5.0", ...], sorted; [] when none is installed or
    ``versions`` is not a mapping (unknown)."""
    items = getattr(versions, "items", None)
    if isinstance(versions, (str, bytes)) or not callable(items):
        return []
    found = set()
    for name, installed in items():
        if not isinstance(name, str):
            continue
        text = str(installed or "").lower()
        for entry in _cpu_stacks():
            prefix = entry.get("prefix")
            if name != entry.get("name") and not (prefix and name.startswith(prefix)):
                continue
            if entry.get("version_contains") and entry["version_contains"] not in text:
                continue
            if entry.get("version_excludes") and entry["version_excludes"] in text:
                continue
            found.add(f"{name} {installed}" if installed else name)
    return sorted(found)


# ----------------------------------------------------------------------------------------
# torch that cannot be imported: python_wheels.yaml, import_failures.yaml (rules/install:
# python-newer-than-torch-wheels, cuda-library-from-other-release, conda-mkl-breaks-torch-import,
# torch-import-failed). Self-contained block.
# ----------------------------------------------------------------------------------------

_PLATFORM_KEYS = {("linux", "x86_64"): "linux-x86_64", ("linux", "amd64"): "linux-x86_64",
                  ("linux", "aarch64"): "linux-aarch64", ("linux", "arm64"): "linux-aarch64",
                  ("darwin", "arm64"): "macos-arm64", ("darwin", "x86_64"): "macos-x86_64",
                  ("windows", "amd64"): "windows-x86_64", ("windows", "x86_64"): "windows-x86_64"}


def python_predates_torch_wheels(python_version: Any, os: Any = None, machine: Any = None) -> Optional[dict]:
    """When a CPython release came out before torch published any wheel for its minor on this
    platform (python_wheels.yaml): {"python": "3.12.0", "minor": "3.12", "previous": "3.11",
    "python_released": "2023-10-02", "torch": "2.2.0", "torch_released": "2024-01-30",
    "platform": "linux-x86_64" or None}; else None (a later release, a minor or platform not in
    the table, an unreadable version). Pre-releases count as released before X.Y.0. Where the
    platform is unknown, the earliest first-wheel date of any platform is used (the statement then
    holds everywhere)."""
    try:
        version = Version(str(python_version).strip()) if isinstance(python_version, str) else None
    except ValueError:
        version = None
    if version is None or len(version.release) < 2 or any(n > 999 for n in version.release):
        return None
    major, minor = version.release[:2]
    patch = version.release[2] if len(version.release) > 2 else 0
    key = f"{major}.{minor}"
    row = next((r for r in load("python_wheels").get("pythons") or []
                if isinstance(r, dict) and str(r.get("python")) == key), None)
    if row is None:
        return None
    patches = {str(k): str(v) for k, v in (row.get("patches") or {}).items()}
    name = f"{major}.{minor}.{0 if version.pre else patch}"
    released = patches.get(name)
    if released is None:
        return None
    platform = None
    if isinstance(os, str) and isinstance(machine, str):
        platform = _PLATFORM_KEYS.get((os.strip().lower(), machine.strip().lower()))
        if platform is None:
            return None  # a platform torch publishes no wheels for (ppc64le, 32-bit): not judged
    firsts = [f for f in row.get("first_wheels") or [] if isinstance(f, dict)]
    if platform is not None:
        firsts = [f for f in firsts if platform in (f.get("platforms") or [])]
    if not firsts:
        return None
    first = min(firsts, key=lambda f: str(f.get("released")))
    if not released < str(first.get("released")):
        return None
    return {"python": str(python_version).strip()[:40], "minor": key, "previous": f"{major}.{minor - 1}",
            "python_released": released, "torch": str(first.get("torch")),
            "torch_released": str(first.get("released")), "platform": platform}


MAX_IMPORT_ERROR_SCAN = 4_000
"""import_failure reads at most this many characters of an error text."""


def import_failure(error: Any) -> Optional[dict]:
    """The first signature of import_failures.yaml whose text appears in an ``import torch``
    error: {"id", "rule", "library", "explain", "needs": "12.4" or None}; None when none
    matches or ``error`` is not a string."""
    if not isinstance(error, str):
        return None
    text = error[:MAX_IMPORT_ERROR_SCAN]
    for entry in load("import_failures").get("signatures") or []:
        if not isinstance(entry, dict):
            continue
        if not all(s in text for s in entry.get("all") or []):
            continue
        if entry.get("any") and not any(s in text for s in entry["any"]):
            continue
        needs = None
        if entry.get("version"):
            m = re.search(str(entry["version"]), text)
            needs = f"{int(m.group(1))}.{int(m.group(2))}" if m else None
        return {"id": str(entry.get("id")), "rule": str(entry.get("rule")),
                "library": str(entry.get("library")), "explain": " ".join(str(entry.get("explain")).split()),
                "needs": needs}
    return None


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
    data = load("torch_ecosystem")
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
