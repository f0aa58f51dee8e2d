"""The memory probe, on recorded cgroup and /dev/shm data (tests/data/machines)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Union

import pytest

from torchdoctor.facts import MemoryFacts, Unavailable
from torchdoctor.probes import ProbeContext, _sys, memory

from .test_cpu import FakeFS

DATA = Path(__file__).resolve().parent.parent / "data" / "machines"
CGROUP = DATA / "cgroup"
SHM = DATA / "shm"
MIB = 1024 * 1024


def read(path: Path) -> str:
    return path.read_text()


def statvfs_result(total: int, free: int, frsize: int = 4096) -> os.statvfs_result:
    blocks = total // frsize
    return os.statvfs_result(
        (frsize, frsize, blocks, free // frsize, free // frsize, 0, 0, 0, 0, 255)
    )


def install(
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, Union[str, OSError]],
    *,
    system: str = "Linux",
    psutil: Any = None,
    statvfs: Union[os.statvfs_result, OSError, None] = None,
) -> FakeFS:
    fs = FakeFS(files)
    monkeypatch.setattr(_sys, "read_text", fs.read_text)
    monkeypatch.setattr(_sys, "listdir", fs.listdir)
    monkeypatch.setattr(_sys, "platform_system", lambda: system)
    monkeypatch.setattr(_sys, "import_optional", lambda name: psutil if name == "psutil" else None)

    def fake_statvfs(path: str) -> os.statvfs_result:
        assert path == "/dev/shm"
        if statvfs is None:
            raise FileNotFoundError(2, "No such file or directory", path)
        if isinstance(statvfs, OSError):
            raise statvfs
        return statvfs

    monkeypatch.setattr(_sys, "statvfs", fake_statvfs)
    return fs


# --------------------------------------------------------------------------------------
# pure parsers
# --------------------------------------------------------------------------------------


def test_parse_memory_max() -> None:
    assert memory.parse_memory_max(read(CGROUP / "v2-memory.max-42m-podman.txt")) == 42 * MIB
    assert memory.parse_memory_max("max\n") is None
    for garbage in ("", "lots", "-1", "12.5"):
        with pytest.raises(ValueError):
            memory.parse_memory_max(garbage)


def test_parse_limit_in_bytes() -> None:
    unlimited = read(CGROUP / "v1-memory.limit_in_bytes-unlimited-devbox.txt")
    assert int(unlimited) == 0x7FFFFFFFFFFFF000
    assert memory.parse_limit_in_bytes(unlimited) is None
    assert memory.parse_limit_in_bytes("-1") is None
    assert memory.parse_limit_in_bytes(read(CGROUP / "v2-memory.max-42m-podman.txt")) == 42 * MIB
    with pytest.raises(ValueError):
        memory.parse_limit_in_bytes("max")


@pytest.mark.parametrize(
    "name, size",
    [
        ("mount-grep-dev-shm-default-64m.txt", 64 * MIB),  # size=65536k, Docker's default
        ("mount-grep-dev-shm-6g.txt", 6144000 * 1024),  # size=6144000k
    ],
)
def test_shm_size_from_mount_line(name: str, size: int) -> None:
    assert memory.shm_size_from_mount_line(read(SHM / name)) == size


def test_shm_from_df_line() -> None:
    assert memory.shm_from_df_line(read(SHM / "df-h-grep-shm-docker-default.txt")) == (
        64 * MIB,
        64 * MIB,
    )
    with pytest.raises(ValueError):
        memory.shm_from_df_line("tmpfs 24G 0 24G 0% /tmp")


@pytest.mark.parametrize(
    "name, size",
    [
        ("v1-docker-container-proc-mountinfo.txt", 64 * MIB),
        ("v2-docker-container-pid-mountinfo-seen-from-other-cgroupns.txt", 64 * MIB),
        ("v2-k8s-docker-pod-proc-self-mountinfo.txt", 64 * MIB),
        ("hybrid-host-proc-mountinfo-fedora.txt", None),  # tmpfs without size=: half of RAM
    ],
)
def test_shm_size_from_mountinfo(name: str, size: Optional[int]) -> None:
    assert memory.shm_size_from_mountinfo(read(CGROUP / name)) == size


@pytest.mark.parametrize(
    "text, size", [("64M", 64 * MIB), ("65536k", 64 * MIB), ("1.5G", 3 * 512 * MIB), ("0", 0)]
)
def test_parse_size(text: str, size: int) -> None:
    assert memory.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "lots", "64X", "-5M"])
def test_parse_size_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        memory.parse_size(text)


# --------------------------------------------------------------------------------------
# the probe
# --------------------------------------------------------------------------------------


class FakePsutil:
    """Stands in for psutil's RAM numbers (the real ones are checked on this machine below)."""

    def __init__(self, total: Any, available: Any, swap: Any):
        self._vm = type("svmem", (), {"total": total, "available": available})()
        self._swap = type("sswap", (), {"total": swap})()

    def virtual_memory(self) -> Any:
        return self._vm

    def swap_memory(self) -> Any:
        return self._swap


def test_podman_container_with_a_42m_limit_and_default_shm(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "/proc/self/cgroup": read(CGROUP / "v2-docker-proc-self-cgroup.txt"),
        "/proc/self/mountinfo": read(CGROUP / "v2-k8s-docker-pod-proc-self-mountinfo.txt"),
        "/sys/fs/cgroup/memory.max": read(CGROUP / "v2-memory.max-42m-podman.txt"),
    }
    df_total, df_free = memory.shm_from_df_line(read(SHM / "df-h-grep-shm-docker-default.txt"))
    psutil = FakePsutil(16 * 1024 * MIB, 12 * 1024 * MIB, 0)
    install(monkeypatch, files, psutil=psutil, statvfs=statvfs_result(df_total, df_free))
    facts = memory.probe(ProbeContext())
    assert facts.cgroup_limit_bytes == 42 * MIB
    assert facts.shm_total_bytes == 64 * MIB and facts.shm_free_bytes == 64 * MIB
    assert facts.total_bytes == 16 * 1024 * MIB
    assert facts.available_bytes == 12 * 1024 * MIB
    assert facts.swap_total_bytes == 0
    MemoryFacts.model_validate_json(facts.model_dump_json())


def test_v1_docker_container_without_a_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "/proc/self/cgroup": read(CGROUP / "v1-docker-cgroupfs-proc-cgroup.txt"),
        "/proc/self/mountinfo": read(CGROUP / "v1-docker-container-proc-mountinfo.txt"),
        "/sys/fs/cgroup/memory/memory.limit_in_bytes": read(
            CGROUP / "v1-memory.limit_in_bytes-unlimited-devbox.txt"
        ),
    }
    fs = install(monkeypatch, files, statvfs=statvfs_result(64 * MIB, 60 * MIB))
    facts = memory.probe(ProbeContext())
    assert facts.cgroup_limit_bytes is None
    assert "/sys/fs/cgroup/memory/memory.limit_in_bytes" in fs.reads
    assert facts.shm_total_bytes == 64 * MIB and facts.shm_free_bytes == 60 * MIB
    assert isinstance(facts.total_bytes, Unavailable)  # no psutil
    assert facts.total_bytes.reason == "psutil is not installed"


def test_limit_on_a_parent_cgroup_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "/proc/self/cgroup": read(CGROUP / "v1-host-proc-self-cgroup-user-slice.txt"),
        "/proc/self/mountinfo": read(CGROUP / "hybrid-host-proc-mountinfo-fedora.txt"),
        "/sys/fs/cgroup/memory/user.slice/memory.limit_in_bytes": read(
            CGROUP / "v1-memory.limit_in_bytes-unlimited-devbox.txt"
        ),
        "/sys/fs/cgroup/memory/memory.limit_in_bytes": read(
            CGROUP / "v2-memory.max-42m-podman.txt"
        ),
    }
    install(monkeypatch, files)
    assert memory.probe(ProbeContext()).cgroup_limit_bytes == 42 * MIB


def test_no_cgroups_and_no_dev_shm(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, {}, statvfs=None)
    facts = memory.probe(ProbeContext())
    assert facts.cgroup_limit_bytes is None
    assert facts.shm_total_bytes is None and facts.shm_free_bytes is None


def test_unreadable_dev_shm_falls_back_to_the_mount_size(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"/proc/self/mountinfo": read(CGROUP / "v1-docker-container-proc-mountinfo.txt")}
    install(monkeypatch, files, statvfs=PermissionError(13, "Permission denied"))
    facts = memory.probe(ProbeContext())
    assert facts.shm_total_bytes == 64 * MIB
    assert isinstance(facts.shm_free_bytes, Unavailable)
    assert facts.shm_free_bytes.reason == "cannot stat /dev/shm: Permission denied"


def test_unreadable_dev_shm_without_mountinfo(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, {}, statvfs=PermissionError(13, "Permission denied"))
    facts = memory.probe(ProbeContext())
    assert isinstance(facts.shm_total_bytes, Unavailable)
    assert isinstance(facts.shm_free_bytes, Unavailable)


@pytest.mark.parametrize(
    "content, words",
    [
        ("lots of memory\n", "unexpected memory.max"),
        (PermissionError(13, "Permission denied"), "Permission denied"),
    ],
)
def test_broken_memory_max(
    content: Union[str, OSError], words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = {
        "/proc/self/cgroup": read(CGROUP / "v2-docker-proc-self-cgroup.txt"),
        "/proc/self/mountinfo": read(CGROUP / "v2-k8s-docker-pod-proc-self-mountinfo.txt"),
        "/sys/fs/cgroup/memory.max": content,
    }
    install(monkeypatch, files)
    limit = memory.probe(ProbeContext()).cgroup_limit_bytes
    assert isinstance(limit, Unavailable) and words in limit.reason


@pytest.mark.parametrize("system", ["Darwin", "Windows"])
def test_other_systems(system: str, monkeypatch: pytest.MonkeyPatch) -> None:
    install(
        monkeypatch,
        {},
        system=system,
        psutil=FakePsutil(8 * 1024 * MIB, 4 * 1024 * MIB, 1024 * MIB),
    )
    facts = memory.probe(ProbeContext())
    assert facts.cgroup_limit_bytes is None
    assert facts.shm_total_bytes is None and facts.shm_free_bytes is None
    assert facts.swap_total_bytes == 1024 * MIB


@pytest.mark.parametrize("value", [-1, "8G", None, True])
def test_garbage_from_psutil(value: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, {}, psutil=FakePsutil(value, value, value))
    facts = memory.probe(ProbeContext())
    for field in ("total_bytes", "available_bytes", "swap_total_bytes"):
        assert isinstance(getattr(facts, field), Unavailable)


def test_psutil_raising(monkeypatch: pytest.MonkeyPatch) -> None:
    class Broken:
        def virtual_memory(self) -> Any:
            raise OSError("sysinfo failed")

        def swap_memory(self) -> Any:
            raise RuntimeError("no swap info")

    install(monkeypatch, {}, psutil=Broken())
    facts = memory.probe(ProbeContext())
    assert "sysinfo failed" in facts.total_bytes.reason
    assert "no swap info" in facts.swap_total_bytes.reason


def test_probe_on_this_machine() -> None:
    psutil = pytest.importorskip("psutil")
    facts = memory.probe(ProbeContext())
    MemoryFacts.model_validate_json(facts.model_dump_json())
    assert facts.total_bytes == psutil.virtual_memory().total
    assert 0 < facts.available_bytes <= facts.total_bytes
    if Path("/dev/shm").is_dir():
        st = os.statvfs("/dev/shm")
        assert facts.shm_total_bytes == st.f_blocks * st.f_frsize
