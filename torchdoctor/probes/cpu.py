"""CPU facts: model, ISA features, cores, NUMA, affinity and the cgroup CPU quota.

On Linux everything comes from files (``/proc/cpuinfo``, ``/sys/devices/system``, the cgroup
hierarchy); ``lscpu`` runs only when those lack the model name or the topology (ARM
``/proc/cpuinfo`` has neither). py-cpuinfo is used only on other systems: on Linux it costs
over a second and a subprocess for what ``/proc/cpuinfo`` says directly.

Parsing is done by pure functions (text in, values out) so tests replay recorded files. The
cgroup helpers here are shared with the memory probe.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Callable, Optional, Union

from torchdoctor.facts import CpuFacts, Unavailable, unavailable
from torchdoctor.probes import ProbeContext, _sys

LSCPU_TIMEOUT_S = 5.0

# ISA features PyTorch kernels dispatch on, as /proc/cpuinfo names them.
X86_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8")
ARM_FLAGS = ("neon", "sve", "sve2")
POWER_FLAGS = ("vsx",)
ALL_FLAGS = X86_FLAGS + ARM_FLAGS + POWER_FLAGS

def _arm_implementers() -> dict:
    """ARM implementer code -> vendor name (rules/data/cpu_vendors.yaml)."""
    from torchdoctor import tables

    return {int(k, 16): v for k, v in tables.load("cpu_vendors")["arm_implementers"].items()}


AT_HWCAP = 16  # getauxval(3) type, <elf.h>
PPC_FEATURE_HAS_VSX = 0x00000080  # arch/powerpc/include/uapi/asm/cputable.h


# --------------------------------------------------------------------------------------
# /proc/cpuinfo
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuInfo:
    """What a /proc/cpuinfo text says."""

    family: Optional[str]
    """x86 | arm | power (from the fields present), None when unrecognised."""
    vendor: Optional[str]
    model: Optional[str]
    features: frozenset[str]
    """ISA feature words of the first processor ("flags" on x86, "Features" on ARM)."""
    processors: int
    """Number of processor entries (logical CPUs listed)."""
    sockets: Optional[int]
    """Distinct "physical id" values; None when the text has none."""
    physical_cores: Optional[int]
    """Distinct ("physical id", "core id") pairs; None when the text has none."""


def parse_cpuinfo(text: str) -> CpuInfo:
    """Parse /proc/cpuinfo (x86, ARM, POWER layouts)."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep:
            if not line.strip() and current:
                blocks.append(current)
                current = {}
            continue
        key = key.strip().lower()
        if key == "processor" and "processor" in current:
            blocks.append(current)  # no blank line between entries
            current = {}
        current.setdefault(key, value.strip())
    if current:
        blocks.append(current)
    cpus = [b for b in blocks if "processor" in b and b["processor"].isdigit()]
    merged: dict[str, str] = {}
    for block in blocks:  # platform lines of POWER follow the last processor
        for key, value in block.items():
            merged.setdefault(key, value)

    family: Optional[str] = None
    vendor: Optional[str] = None
    model: Optional[str] = merged.get("model name") or None
    features: frozenset[str] = frozenset()
    if "flags" in merged or "vendor_id" in merged:
        family = "x86"
        vendor = merged.get("vendor_id") or None
        features = frozenset(merged.get("flags", "").split())
    elif "features" in merged or "cpu implementer" in merged:
        family = "arm"
        vendor = _arm_vendor(merged.get("cpu implementer"))
        features = frozenset(merged.get("features", "").split())
    elif merged.get("cpu", "").upper().startswith("POWER"):
        family = "power"
        vendor = "IBM"
        model = model or merged["cpu"]

    ids = [(b.get("physical id"), b.get("core id")) for b in cpus]
    sockets = physical = None
    if cpus and all(p is not None for p, _ in ids):
        sockets = len({p for p, _ in ids})
        if all(c is not None for _, c in ids):
            physical = len(set(ids))
    return CpuInfo(
        family=family,
        vendor=vendor,
        model=" ".join(model.split()) if model else None,
        features=features,
        processors=len(cpus),
        sockets=sockets,
        physical_cores=physical,
    )


def _arm_vendor(code: Optional[str]) -> Optional[str]:
    if not code:
        return None
    try:
        number = int(code, 16)
    except ValueError:
        return None
    return _arm_implementers().get(number, f"implementer {code}")


def isa_flags(
    family: Optional[str], features: Iterable[str], hwcap: Optional[int] = None
) -> dict[str, bool]:
    """The ISA features that matter to PyTorch, for a CPU family and its feature words.

    Flags of other families are False (an ARM CPU has no AVX2). A flag that cannot be known
    is left out (POWER's VSX without AT_HWCAP).
    """
    words = {_norm(w) for w in features}
    flags = {name: False for name in ALL_FLAGS}
    if family == "x86":
        for name in X86_FLAGS:
            flags[name] = _norm(name) in words
    elif family == "arm":
        # AdvSIMD is "asimd" on AArch64 kernels and "neon" on 32-bit ARM.
        flags["neon"] = "asimd" in words or "neon" in words
        flags["sve"] = "sve" in words
        flags["sve2"] = "sve2" in words
    elif family == "power":
        if hwcap is None:
            del flags["vsx"]
        else:
            flags["vsx"] = bool(hwcap & PPC_FEATURE_HAS_VSX)
    else:
        return {}
    return flags


def _norm(word: str) -> str:
    # py-cpuinfo and the kernel disagree on underscores (avx512bf16 vs avx512_bf16).
    return word.lower().replace("_", "")


def family_of_machine(machine: str) -> Optional[str]:
    m = machine.lower()
    if m in ("x86_64", "amd64", "i386", "i686", "x86"):
        return "x86"
    if m.startswith(("aarch64", "arm")):
        return "arm"
    if m.startswith(("ppc", "powerpc")):
        return "power"
    return None


# --------------------------------------------------------------------------------------
# lscpu
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lscpu:
    """What an lscpu text says (old flat and new nested layouts, wrapped lines joined)."""

    fields: dict[str, str]
    architecture: Optional[str]
    cpus: Optional[int]
    threads_per_core: Optional[int]
    cores_per_socket: Optional[int]
    sockets: Optional[int]
    numa_nodes: Optional[int]
    """NUMA nodes that have CPUs (memory-only nodes, e.g. GPU memory on GH200, left out)."""
    vendor: Optional[str]
    model: Optional[str]
    flags: frozenset[str]

    @property
    def physical_cores(self) -> Optional[int]:
        if self.cores_per_socket is None or self.sockets is None:
            return None
        return self.cores_per_socket * self.sockets


_LSCPU_KEY = re.compile(r"^(\s*)([^:]+?):(\s*)(.*)$")


def parse_lscpu_fields(text: str) -> dict[str, str]:
    """Key -> value of ``lscpu`` output, continuation lines joined.

    lscpu wraps long values (Flags, vulnerabilities) at the terminal width and continues
    them at the value column, splitting words: "rd" + "tscp". A continuation line is one
    blank up to that column; its text from the column on is appended as is, so a leading
    space there is a real word boundary.
    """
    fields: dict[str, str] = {}
    last_key: Optional[str] = None
    column = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        if last_key is not None and len(line) > column and not line[:column].strip():
            fields[last_key] += line[column:].rstrip("\n")
            continue
        match = _LSCPU_KEY.match(line)
        if not match:
            last_key = None
            continue
        indent, key, gap, value = match.groups()
        fields[key] = value
        if value.strip():
            last_key = key
            column = len(indent) + len(key) + 1 + len(gap)
        else:
            last_key = None
    return {k: v.strip() for k, v in fields.items()}


def parse_lscpu(text: str) -> Lscpu:
    fields = parse_lscpu_fields(text)
    numa_with_cpus = [
        k for k, v in fields.items() if re.fullmatch(r"NUMA node\d+ CPU\(s\)", k) and v
    ]
    numa = len(numa_with_cpus) if numa_with_cpus else _int_or_none(fields.get("NUMA node(s)"))
    model = fields.get("Model name")
    return Lscpu(
        fields=fields,
        architecture=fields.get("Architecture") or None,
        cpus=_int_or_none(fields.get("CPU(s)")),
        threads_per_core=_int_or_none(fields.get("Thread(s) per core")),
        cores_per_socket=_int_or_none(fields.get("Core(s) per socket")),
        sockets=_int_or_none(fields.get("Socket(s)")),
        numa_nodes=numa,
        vendor=fields.get("Vendor ID") or None,
        model=None if model in (None, "", "-") else model,
        flags=frozenset(fields.get("Flags", "").split()),
    )


def _int_or_none(text: Optional[str]) -> Optional[int]:
    if text is None:
        return None
    try:
        return int(text.strip())
    except ValueError:
        return None


def parse_cpulist(text: str) -> list[int]:
    """A kernel CPU list ("0-15,128-143", "0,2,4", "") as sorted CPU numbers."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        low, sep, high = part.partition("-")
        start, end = int(low), int(high) if sep else int(low)
        if end < start:
            raise ValueError(f"bad CPU range {part!r}")
        cpus.update(range(start, end + 1))
    return sorted(cpus)


# --------------------------------------------------------------------------------------
# sysfs topology and NUMA
# --------------------------------------------------------------------------------------

SYS_CPU = "/sys/devices/system/cpu"
SYS_NODE = "/sys/devices/system/node"


def read_sysfs_topology(root: str = SYS_CPU) -> Optional[tuple[int, Optional[int]]]:
    """(physical cores, sockets) from /sys/devices/system/cpu/cpu*/topology, or None.

    A physical core is a distinct set of hardware-thread siblings; a socket a distinct
    physical_package_id (-1, "unknown", on some ARM firmware, gives no socket count).
    """
    try:
        entries = [e for e in _sys.listdir(root) if re.fullmatch(r"cpu\d+", e)]
    except OSError:
        return None
    cores: set[tuple[int, ...]] = set()
    packages: set[str] = set()
    unknown_package = False
    for entry in entries:
        topology = f"{root}/{entry}/topology"
        siblings = _first_readable(f"{topology}/core_cpus_list", f"{topology}/thread_siblings_list")
        if siblings is None:
            continue  # offline CPUs have no topology
        try:
            cores.add(tuple(parse_cpulist(siblings)))
        except ValueError:
            return None
        package = _first_readable(f"{topology}/physical_package_id")
        if package is None or package.strip() == "-1":
            unknown_package = True
        else:
            packages.add(package.strip())
    if not cores:
        return None
    return len(cores), (None if unknown_package or not packages else len(packages))


def read_numa_nodes(root: str = SYS_NODE) -> Optional[int]:
    """NUMA nodes with CPUs (``has_cpu``), else all node* entries; None when not readable."""
    has_cpu = _first_readable(f"{root}/has_cpu")
    if has_cpu is not None:
        try:
            nodes = parse_cpulist(has_cpu)
        except ValueError:
            nodes = []
        if nodes:
            return len(nodes)
    try:
        entries = _sys.listdir(root)
    except OSError:
        return None
    count = sum(1 for e in entries if re.fullmatch(r"node\d+", e))
    return count or None


def _first_readable(*paths: str) -> Optional[str]:
    for path in paths:
        try:
            return _sys.read_text(path)
        except OSError:
            continue
    return None


# --------------------------------------------------------------------------------------
# cgroups (shared with the memory probe)
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Mount:
    """One line of /proc/<pid>/mountinfo."""

    root: str
    mount_point: str
    fstype: str
    super_options: frozenset[str]


@dataclass(frozen=True)
class CgroupEntry:
    """One line of /proc/<pid>/cgroup: hierarchy id, controllers, path."""

    hierarchy: int
    controllers: frozenset[str]
    path: str


@dataclass(frozen=True)
class CgroupDir:
    """Where this process's cgroup for a controller is, as seen in this mount namespace."""

    version: int
    path: str
    mount_point: str
    """Top of the hierarchy visible here; limits are read from ``path`` up to it."""


def _unescape(field: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields[6:]:
            continue
        sep = fields.index("-", 6)
        if len(fields) < sep + 3 or sep < 5:
            continue
        options = fields[sep + 3] if len(fields) > sep + 3 else ""
        mounts.append(
            Mount(
                root=_unescape(fields[3]),
                mount_point=_unescape(fields[4]),
                fstype=fields[sep + 1],
                super_options=frozenset(options.split(",")),
            )
        )
    return mounts


def parse_proc_cgroup(text: str) -> list[CgroupEntry]:
    entries = []
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3 or not parts[0].isdigit():
            continue
        controllers = frozenset(c for c in parts[1].split(",") if c)
        entries.append(CgroupEntry(int(parts[0]), controllers, parts[2]))
    return entries


def locate_cgroup(proc_cgroup: str, mountinfo: str, controller: str) -> Optional[CgroupDir]:
    """The cgroup directory holding ``controller``'s files for this process.

    cgroup v1 is used when a v1 hierarchy carries the controller (also on hybrid hosts,
    where the v2 tree holds no controllers); otherwise the unified v2 hierarchy.
    """
    entries = parse_proc_cgroup(proc_cgroup)
    mounts = parse_mountinfo(mountinfo)
    mounts.sort(key=lambda m: not m.mount_point.startswith("/sys/fs/cgroup"))
    for entry in entries:
        if entry.hierarchy != 0 and controller in entry.controllers:
            for mount in mounts:
                if mount.fstype == "cgroup" and controller in mount.super_options:
                    return CgroupDir(1, _cgroup_path(mount, entry.path), mount.mount_point)
    for entry in entries:
        if entry.hierarchy == 0 and not entry.controllers:
            for mount in mounts:
                if mount.fstype == "cgroup2":
                    return CgroupDir(2, _cgroup_path(mount, entry.path), mount.mount_point)
    return None


def _cgroup_path(mount: Mount, path: str) -> str:
    """Directory of cgroup ``path`` under ``mount``.

    The mount shows the hierarchy from ``mount.root`` down. When the process's path is not
    below that root (a container without its own cgroup namespace, or a path seen from
    another namespace, "/../docker-….scope"), the mount point itself is the process's
    cgroup: containers mount their own cgroup there.
    """
    root = mount.root.rstrip("/")
    if not root:
        relative = path
    elif path == mount.root or path.startswith(root + "/"):
        relative = path[len(root) :]
    else:
        return mount.mount_point
    relative = relative.strip("/")
    if not relative or relative.split("/")[0] == "..":
        return mount.mount_point
    return posixpath.join(mount.mount_point, relative)


def cgroup_ancestors(location: CgroupDir) -> Iterator[str]:
    """The cgroup directory and its parents up to the visible top of the hierarchy."""
    path = location.path
    top = location.mount_point.rstrip("/") or "/"
    yield path
    while path != top and path.startswith(top + "/"):
        path = posixpath.dirname(path)
        yield path


def parse_cpu_max(text: str) -> Optional[float]:
    """cgroup v2 cpu.max ("max 100000" = no quota, "600000 100000" = 6 CPUs)."""
    parts = text.split()
    if not parts or len(parts) > 2:
        raise ValueError(f"unexpected cpu.max {text!r}")
    if parts[0] == "max":
        return None
    try:
        period = int(parts[1]) if len(parts) == 2 else 100000
        quota = int(parts[0])
    except ValueError:
        raise ValueError(f"unexpected cpu.max {text!r}") from None
    if quota <= 0 or period <= 0:
        raise ValueError(f"unexpected cpu.max {text!r}")
    return quota / period


def parse_cfs_quota(quota_text: str, period_text: Optional[str]) -> Optional[float]:
    """cgroup v1 cpu.cfs_quota_us / cpu.cfs_period_us (quota -1 = no quota)."""
    try:
        quota = int(quota_text.strip())
        if quota < 0:
            return None
        period = int(period_text.strip()) if period_text is not None else 100000
    except ValueError:
        raise ValueError(f"unexpected CFS quota {quota_text!r} / period {period_text!r}") from None
    if quota == 0 or period <= 0:
        raise ValueError(f"unexpected CFS quota {quota_text!r} / period {period_text!r}")
    return quota / period


def read_optional(path: str) -> Optional[str]:
    """A cgroup/proc file's text; None when it does not exist (other OSErrors propagate)."""
    try:
        return _sys.read_text(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def read_cgroup_location(controller: str) -> Union[CgroupDir, Unavailable, None]:
    """This process's cgroup for ``controller`` (Linux); None when there are no cgroups."""
    try:
        proc_cgroup = read_optional("/proc/self/cgroup")
        mountinfo = read_optional("/proc/self/mountinfo")
    except OSError as exc:
        return unavailable(f"cannot read /proc/self cgroup information: {exc.strerror or exc}")
    if proc_cgroup is None or mountinfo is None:
        return None
    return locate_cgroup(proc_cgroup, mountinfo, controller)


def cgroup_limit(location: CgroupDir, read_level: Callable[[str], Optional[float]]) -> Any:
    """The tightest limit over the cgroup and its ancestors; None = no limit anywhere.

    ``read_level(directory)`` returns the limit set there (None: none set or no file) and
    may raise OSError or ValueError, which make the result Unavailable.
    """
    limits = []
    for directory in cgroup_ancestors(location):
        try:
            limit = read_level(directory)
        except OSError as exc:
            return unavailable(f"cannot read {directory}: {exc.strerror or exc}")
        except ValueError as exc:
            return unavailable(f"cannot use the limit in {directory}: {exc}")
        if limit is not None:
            limits.append(limit)
    return min(limits) if limits else None


def read_cpu_quota(location: CgroupDir) -> Any:
    """CPU quota in CPUs for this cgroup (v1 CFS or v2 cpu.max); None = no quota."""

    def level(directory: str) -> Optional[float]:
        if location.version == 2:
            text = read_optional(f"{directory}/cpu.max")
            return None if text is None else parse_cpu_max(text)
        quota = read_optional(f"{directory}/cpu.cfs_quota_us")
        if quota is None:
            return None
        return parse_cfs_quota(quota, read_optional(f"{directory}/cpu.cfs_period_us"))

    return cgroup_limit(location, level)


# --------------------------------------------------------------------------------------
# the probe
# --------------------------------------------------------------------------------------


def probe(ctx: ProbeContext) -> CpuFacts:
    """CPU facts of this machine and this process's share of it."""
    system = _sys.platform_system()
    machine = _sys.platform_machine()
    if system == "Linux":
        facts = _linux_hardware(machine)
    else:
        facts = _other_hardware(machine)
    affinity = _affinity()
    affinity_count = len(affinity) if isinstance(affinity, list) else affinity
    if system == "Linux":
        cgroup_version, quota = _cgroup_cpu()
    else:
        cgroup_version, quota = None, None
    return CpuFacts(
        **facts,
        affinity=affinity,
        affinity_count=affinity_count,
        cgroup_version=cgroup_version,
        quota_cpus=quota,
        effective_cpus=_effective(affinity_count, facts["logical_cores"], quota),
    )


def _linux_hardware(machine: str) -> dict[str, Any]:
    try:
        info: Optional[CpuInfo] = parse_cpuinfo(_sys.read_text("/proc/cpuinfo"))
        cpuinfo_problem = None
    except OSError as exc:
        info = None
        cpuinfo_problem = f"cannot read /proc/cpuinfo: {exc.strerror or exc}"

    lscpu_cache: list[Optional[Lscpu]] = []

    def lscpu() -> Optional[Lscpu]:
        if not lscpu_cache:
            lscpu_cache.append(_run_lscpu())
        return lscpu_cache[0]

    family = (info.family if info else None) or family_of_machine(machine)
    vendor: Any = info.vendor if info else None
    model: Any = info.model if info else None
    if vendor is None or model is None:
        ls = lscpu()
        vendor = vendor or (ls.vendor if ls else None)
        model = model or (ls.model if ls else None)
    missing = cpuinfo_problem or "/proc/cpuinfo does not say and lscpu is not available"
    if vendor is None:
        vendor = unavailable(f"CPU vendor unknown: {missing}")
    if model is None:
        model = unavailable(f"CPU model unknown: {missing}")

    features: Iterable[str] = info.features if info else ()
    if not features and family != "power":
        ls = lscpu()
        features = ls.flags if ls is not None else ()
    flags: Any
    if family == "power":  # POWER lists no features in /proc/cpuinfo: ask the aux vector
        flags = isa_flags(family, (), _sys.getauxval(AT_HWCAP))
    elif family is not None and features:
        flags = isa_flags(family, features)
    else:
        flags = unavailable(
            f"ISA features unknown: {cpuinfo_problem or '/proc/cpuinfo lists none'}"
            " and lscpu is not available"
        )

    logical: Any = info.processors if info and info.processors else _sys.cpu_count()
    if logical is None:
        logical = unavailable("the number of logical CPUs is unknown")

    physical: Any = info.physical_cores if info else None
    sockets: Any = info.sockets if info else None
    if physical is None or sockets is None:
        topology = read_sysfs_topology()
        if topology is not None:
            physical = physical if physical is not None else topology[0]
            sockets = sockets if sockets is not None else topology[1]
    if physical is None or sockets is None:
        ls = lscpu()
        if ls is not None:
            physical = physical if physical is not None else ls.physical_cores
            sockets = sockets if sockets is not None else ls.sockets
    if physical is None:
        physical = _psutil_physical()
    if sockets is None:
        sockets = unavailable("the socket count is not in /proc/cpuinfo, sysfs or lscpu")

    numa: Any = read_numa_nodes()
    if numa is None:
        ls = lscpu()
        numa = ls.numa_nodes if ls is not None else None
    if numa is None:
        numa = unavailable(f"{SYS_NODE} is not readable and lscpu is not available")

    return {
        "vendor": vendor,
        "model": model,
        "architecture": machine or None,
        "flags": flags,
        "physical_cores": physical,
        "logical_cores": logical,
        "sockets": sockets,
        "numa_nodes": numa,
    }


def _run_lscpu() -> Optional[Lscpu]:
    path = _sys.getenv("PATH") or "/usr/bin:/bin"
    done = _sys.run(["lscpu"], timeout=LSCPU_TIMEOUT_S, env={"LC_ALL": "C", "PATH": path})
    if not done.ok:
        return None
    return parse_lscpu(done.stdout)


def _psutil_physical() -> Any:
    psutil = _sys.import_optional("psutil")
    if psutil is None:
        return unavailable("physical cores unknown: psutil is not installed")
    try:
        count = psutil.cpu_count(logical=False)
    except Exception as exc:  # noqa: BLE001 - psutil raises its own errors on odd systems
        return unavailable(f"physical cores unknown: psutil failed: {exc}")
    if not isinstance(count, int) or count <= 0:
        return unavailable("physical cores unknown: psutil cannot tell on this system")
    return count


def _other_hardware(machine: str) -> dict[str, Any]:
    """macOS, Windows, BSD: py-cpuinfo for the model and ISA, psutil for core counts."""
    family = family_of_machine(machine)
    info: dict[str, Any] = {}
    cpuinfo = _sys.import_optional("cpuinfo")
    problem = "py-cpuinfo is not installed"
    if cpuinfo is not None:
        try:
            info = dict(cpuinfo.get_cpu_info())
            problem = ""
        except Exception as exc:  # noqa: BLE001 - py-cpuinfo shells out and can fail
            problem = f"py-cpuinfo failed: {exc}"
    vendor = info.get("vendor_id_raw") or None
    model = info.get("brand_raw") or None
    features = [str(f) for f in info.get("flags") or []]
    flags: Any = isa_flags(family, features) if info else {}
    if flags and family == "arm" and machine.lower() in ("arm64", "aarch64"):
        flags["neon"] = True  # AdvSIMD is mandatory in AArch64
    logical: Any = _sys.cpu_count()
    return {
        "vendor": vendor
        if vendor or not problem
        else unavailable(f"CPU vendor unknown: {problem}"),
        "model": model if model or not problem else unavailable(f"CPU model unknown: {problem}"),
        "architecture": machine or None,
        "flags": flags
        or unavailable(f"ISA features unknown: {problem or 'py-cpuinfo did not say'}"),
        "physical_cores": _psutil_physical(),
        "logical_cores": logical
        if logical
        else unavailable("the number of logical CPUs is unknown"),
        "sockets": unavailable("the socket count is only read on Linux"),
        "numa_nodes": unavailable("NUMA nodes are only read on Linux"),
    }


def _affinity() -> Any:
    try:
        cpus = _sys.sched_getaffinity()
    except OSError as exc:
        return unavailable(f"sched_getaffinity failed: {exc.strerror or exc}")
    if cpus is not None:
        return cpus
    psutil = _sys.import_optional("psutil")  # Windows has affinity, through psutil
    if psutil is not None and hasattr(psutil.Process, "cpu_affinity"):
        try:
            return sorted(psutil.Process().cpu_affinity())
        except Exception:  # noqa: BLE001 - unsupported here after all
            return None
    return None


def _cgroup_cpu() -> tuple[Any, Any]:
    location = read_cgroup_location("cpu")
    if location is None or isinstance(location, Unavailable):
        return location, location
    return location.version, read_cpu_quota(location)


def _effective(affinity_count: Any, logical: Any, quota: Any) -> Any:
    cpus = affinity_count if affinity_count is not None else logical
    for value in (cpus, quota):
        if isinstance(value, Unavailable):
            return value
    if cpus is None:
        return quota
    return float(cpus) if quota is None else min(float(cpus), quota)
