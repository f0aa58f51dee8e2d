"""Memory facts: RAM and swap (psutil), the cgroup memory limit, and /dev/shm.

/dev/shm matters because DataLoader worker processes hand tensors to the main process
through shared memory; Docker's default 64 MiB is a classic cause of "bus error" crashes.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from torchdoctor.facts import MemoryFacts, Unavailable, unavailable
from torchdoctor.probes import ProbeContext, _sys
from torchdoctor.probes.cpu import cgroup_limit, read_cgroup_location, read_optional

SHM = "/dev/shm"

# cgroup v1 reports "no limit" as the largest page-aligned counter (0x7FFFFFFFFFFFF000 with
# 4 KiB pages); anything this large is no limit.
V1_UNLIMITED = 1 << 62

_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4, "p": 1024**5}


def probe(ctx: ProbeContext) -> MemoryFacts:
    """RAM, swap, cgroup limit and /dev/shm of this machine and process."""
    total, available, swap = _ram()
    shm_total, shm_free = read_shm()
    return MemoryFacts(
        total_bytes=total,
        available_bytes=available,
        swap_total_bytes=swap,
        cgroup_limit_bytes=_cgroup_memory_limit(),
        shm_total_bytes=shm_total,
        shm_free_bytes=shm_free,
    )


def _ram() -> tuple[Any, Any, Any]:
    psutil = _sys.import_optional("psutil")
    if psutil is None:
        missing = unavailable("psutil is not installed")
        return missing, missing, missing
    try:
        vm = psutil.virtual_memory()
        total, available = _bytes(vm.total), _bytes(vm.available)
    except Exception as exc:  # noqa: BLE001 - psutil raises its own errors on odd systems
        total = available = unavailable(f"psutil could not read memory: {exc}")
    try:
        swap = _bytes(psutil.swap_memory().total)
    except Exception as exc:  # noqa: BLE001
        swap = unavailable(f"psutil could not read swap: {exc}")
    return total, available, swap


def _bytes(value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return unavailable(f"psutil returned an unusable value: {value!r}")
    return value


# --------------------------------------------------------------------------------------
# cgroup limit
# --------------------------------------------------------------------------------------


def parse_memory_max(text: str) -> Optional[int]:
    """cgroup v2 memory.max: "max" = no limit, else bytes."""
    value = text.strip()
    if value == "max":
        return None
    if not value.isdigit():
        raise ValueError(f"unexpected memory.max {text!r}")
    return int(value)


def parse_limit_in_bytes(text: str) -> Optional[int]:
    """cgroup v1 memory.limit_in_bytes: a huge value (or -1) = no limit, else bytes."""
    try:
        number = int(text.strip())
    except ValueError:
        raise ValueError(f"unexpected memory.limit_in_bytes {text!r}") from None
    if number < 0 or number >= V1_UNLIMITED:
        return None
    return number


def _cgroup_memory_limit() -> Any:
    if _sys.platform_system() != "Linux":
        return None
    location = read_cgroup_location("memory")
    if location is None or isinstance(location, Unavailable):
        return location

    def level(directory: str) -> Optional[int]:
        if location.version == 2:
            text = read_optional(f"{directory}/memory.max")
            return None if text is None else parse_memory_max(text)
        text = read_optional(f"{directory}/memory.limit_in_bytes")
        return None if text is None else parse_limit_in_bytes(text)

    return cgroup_limit(location, level)


# --------------------------------------------------------------------------------------
# /dev/shm
# --------------------------------------------------------------------------------------


def read_shm(path: str = SHM) -> tuple[Any, Any]:
    """(size, free bytes) of /dev/shm: None, None where there is none; Unavailable if unreadable."""
    if _sys.platform_system() == "Windows":
        return None, None
    try:
        st = _sys.statvfs(path)
    except FileNotFoundError:
        return None, None
    except OSError as exc:
        reason = f"cannot stat {path}: {exc.strerror or exc}"
        size = _shm_size_from_mountinfo(path)
        return (size if size is not None else unavailable(reason)), unavailable(reason)
    frsize = st.f_frsize or st.f_bsize
    return st.f_blocks * frsize, st.f_bavail * frsize


def _shm_size_from_mountinfo(path: str) -> Optional[int]:
    try:
        text = read_optional("/proc/self/mountinfo")
    except OSError:
        return None
    return None if text is None else shm_size_from_mountinfo(text, path)


def parse_size(text: str) -> int:
    """A size as df -h or mount options write it: "64M", "65536k", "6144000k", "1.5G"."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgtpb]?)(?:i?b)?\s*", text, re.IGNORECASE)
    if not match:
        raise ValueError(f"not a size: {text!r}")
    number, unit = match.groups()
    return int(float(number) * _UNITS[unit.lower()])


def shm_size_from_mount_options(options: str) -> Optional[int]:
    """The size= option of a tmpfs mount ("rw,nosuid,size=65536k"); None without one."""
    for option in options.split(","):
        key, sep, value = option.partition("=")
        if sep and key.strip() == "size" and not value.endswith("%"):
            return parse_size(value)
    return None


def shm_size_from_mount_line(line: str) -> Optional[int]:
    """Size of /dev/shm from a ``mount`` line: "shm on /dev/shm type tmpfs (rw,...,size=65536k)"."""
    match = re.search(r"\son\s+/dev/shm\s+type\s+\S+\s+\(([^)]*)\)", line)
    return None if match is None else shm_size_from_mount_options(match.group(1))


def shm_size_from_mountinfo(text: str, path: str = SHM) -> Optional[int]:
    """Size of the tmpfs mounted at ``path`` from /proc/self/mountinfo (last mount wins)."""
    size = None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 5 or fields[4] != path or "-" not in fields[6:]:
            continue
        sep = fields.index("-", 6)
        if len(fields) > sep + 3:
            size = shm_size_from_mount_options(fields[sep + 3])
    return size


def shm_from_df_line(line: str) -> tuple[int, int]:
    """(size, available) bytes from a ``df -h`` line for /dev/shm."""
    fields = line.split()
    if len(fields) < 6 or fields[-1] != SHM:
        raise ValueError(f"not a df line for {SHM}: {line!r}")
    return parse_size(fields[1]), parse_size(fields[3])
