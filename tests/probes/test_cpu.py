"""The cpu probe, on recorded /proc/cpuinfo, lscpu and cgroup files.

Inputs are in tests/data/machines (sources in tests/data/machines/SOURCES.md). Several
cpuinfo files hold only the first processor block, as published; their counts are those
of the text. Probe-level tests lay the recorded files out in a small in-memory file system
behind the _sys seam.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional, Union

import pytest

from torchdoctor.facts import CpuFacts, Unavailable
from torchdoctor.probes import ProbeContext, _sys, cpu

DATA = Path(__file__).resolve().parent.parent / "data" / "machines"
CPUINFO = DATA / "cpuinfo"
LSCPU = DATA / "lscpu"
CGROUP = DATA / "cgroup"


def read(path: Path) -> str:
    return path.read_text()


class FakeFS:
    """Files (text, or an OSError to raise) behind _sys.read_text / listdir / exists."""

    def __init__(self, files: dict[str, Union[str, OSError]]):
        self.files = dict(files)
        self.reads: list[str] = []

    def read_text(self, path: str, limit: int = 0) -> str:
        self.reads.append(path)
        value = self.files.get(path)
        if value is None:
            raise FileNotFoundError(2, "No such file or directory", path)
        if isinstance(value, OSError):
            raise value
        return value

    def listdir(self, path: str) -> list[str]:
        prefix = path.rstrip("/") + "/"
        value = self.files.get(path)
        if isinstance(value, OSError):
            raise value
        names = {k[len(prefix) :].split("/")[0] for k in self.files if k.startswith(prefix)}
        if not names:
            raise FileNotFoundError(2, "No such file or directory", path)
        return sorted(names)

    def exists(self, path: str) -> bool:
        return path in self.files or any(k.startswith(path.rstrip("/") + "/") for k in self.files)


def install(
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, Union[str, OSError]],
    *,
    system: str = "Linux",
    machine: str = "x86_64",
    affinity: Optional[list[int]] = None,
    cpu_count: Optional[int] = None,
    lscpu: Optional[str] = None,
    psutil: Any = None,
    hwcap: Optional[int] = None,
) -> FakeFS:
    fs = FakeFS(files)
    monkeypatch.setattr(_sys, "read_text", fs.read_text)
    monkeypatch.setattr(_sys, "listdir", fs.listdir)
    monkeypatch.setattr(_sys, "exists", fs.exists)
    monkeypatch.setattr(_sys, "platform_system", lambda: system)
    monkeypatch.setattr(_sys, "platform_machine", lambda: machine)
    monkeypatch.setattr(_sys, "sched_getaffinity", lambda: affinity)
    monkeypatch.setattr(_sys, "cpu_count", lambda: cpu_count)
    monkeypatch.setattr(_sys, "getauxval", lambda kind: hwcap)
    monkeypatch.setattr(_sys, "import_optional", lambda name: psutil if name == "psutil" else None)

    def run(argv, timeout=10.0, env=None, input_text=None):
        assert list(argv) == ["lscpu"] and env is not None and env["LC_ALL"] == "C"
        if lscpu is None:
            return _sys.Completed(
                tuple(argv), None, "", "", error="lscpu: No such file or directory"
            )
        return _sys.Completed(tuple(argv), 0, lscpu, "")

    monkeypatch.setattr(_sys, "run", run)
    return fs


def flags_on(flags: dict[str, bool]) -> set[str]:
    return {k for k, v in flags.items() if v}


# --------------------------------------------------------------------------------------
# /proc/cpuinfo
# --------------------------------------------------------------------------------------

# file: family, vendor, model, processors, sockets, physical cores, ISA flags set
CPUINFO_EXPECTED: dict[str, tuple] = {
    "arm-cortex-a510-a710-a715-x3-mobile.txt": ("arm", "ARM", None, 8, None, None, {"neon"}),
    "aws-graviton2-neoverse-n1.txt": ("arm", "ARM", None, 1, None, None, {"neon"}),
    "aws-graviton3-neoverse-v1.txt": ("arm", "ARM", None, 1, None, None, {"neon", "sve"}),
    "core-i5-m560-laptop.txt": (
        "x86", "GenuineIntel", "Intel(R) Core(TM) i5 CPU M 560 @ 2.67GHz", 4, 1, 2, set(),
    ),
    "core-i7-1165g7-laptop.txt": (
        "x86", "GenuineIntel", "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz", 8, 1, 4,
        {"avx2", "avx512f", "avx512_vnni"},
    ),
    # hybrid: 6 P-cores with two threads + 8 E-cores
    "core-i7-1370p-hybrid-laptop.txt": (
        "x86", "GenuineIntel", "13th Gen Intel(R) Core(TM) i7-1370P", 20, 1, 14, {"avx2"},
    ),
    "epyc-7451-2s-96cpu-zen1.txt": (
        "x86", "AuthenticAMD", "AMD EPYC 7451 24-Core Processor", 96, 2, 48, {"avx2"},
    ),
    "epyc-9654-zen4.txt": (
        "x86", "AuthenticAMD", "AMD EPYC 9654 96-Core Processor", 1, 1, 1,
        {"avx2", "avx512f", "avx512_bf16", "avx512_vnni"},
    ),
    "epyc-9v33x-zen4-azure.txt": (
        "x86", "AuthenticAMD", "AMD EPYC 9V33X 96-Core Processor", 1, 1, 1,
        {"avx2", "avx512f", "avx512_bf16", "avx512_vnni"},
    ),
    "fujitsu-a64fx.txt": ("arm", "FUJITSU", None, 1, None, None, {"neon", "sve"}),
    "gcp-axion-neoverse-v2.txt": ("arm", "ARM", None, 1, None, None, {"neon", "sve", "sve2"}),
    "hisilicon-kunpeng920-2s-128cpu-arm64.txt": ("arm", "HiSilicon", None, 128, None, None, {"neon"}),
    "nvidia-gb10-dgx-spark-arm64.txt": ("arm", "ARM", None, 20, None, None, {"neon", "sve", "sve2"}),
    "nvidia-grace-neoverse-v2-jureca.txt": ("arm", "ARM", None, 1, None, None, {"neon", "sve", "sve2"}),
    "power9-176cpu-gpu-numa.txt": ("power", "IBM", "POWER9, altivec supported", 176, None, None, set()),
    "xeon-e5-2680v3-haswell-no-avx512.txt": (
        "x86", "GenuineIntel", "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz", 1, 1, 1, {"avx2"},
    ),
    "xeon-gold-6132-skylake.txt": (
        "x86", "GenuineIntel", "Intel(R) Xeon(R) Gold 6132 CPU @ 2.60GHz", 1, 1, 1,
        {"avx2", "avx512f"},
    ),
    "xeon-gold-6230-80cpu-cascadelake.txt": (
        "x86", "GenuineIntel", "Intel(R) Xeon(R) Gold 6230 CPU @ 2.10GHz", 80, 2, 40,
        {"avx2", "avx512f", "avx512_vnni"},
    ),
    "xeon-platinum-8488c-sapphirerapids-aws.txt": (
        "x86", "GenuineIntel", "Intel(R) Xeon(R) Platinum 8488C", 1, 1, 1,
        {"avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8"},
    ),
    "xeon-x7550-4s-64cpu-nehalem-ex.txt": (
        "x86", "GenuineIntel", "Intel(R) Xeon(R) CPU X7550 @ 2.00GHz", 64, 4, 32, set(),
    ),
}  # fmt: skip


def test_every_cpuinfo_file_has_an_expectation() -> None:
    assert sorted(p.name for p in CPUINFO.glob("*.txt")) == sorted(CPUINFO_EXPECTED)


@pytest.mark.parametrize("name", sorted(CPUINFO_EXPECTED))
def test_parse_cpuinfo(name: str) -> None:
    family, vendor, model, processors, sockets, physical, on = CPUINFO_EXPECTED[name]
    info = cpu.parse_cpuinfo(read(CPUINFO / name))
    assert (info.family, info.vendor, info.model) == (family, vendor, model)
    assert (info.processors, info.sockets, info.physical_cores) == (processors, sockets, physical)
    flags = cpu.isa_flags(info.family, info.features)
    assert flags_on(flags) == on
    if family == "power":
        assert "vsx" not in flags  # not in /proc/cpuinfo: unknown without AT_HWCAP
    else:
        assert set(flags) == set(cpu.ALL_FLAGS)


def test_power_vsx_comes_from_the_aux_vector() -> None:
    assert cpu.isa_flags("power", (), hwcap=cpu.PPC_FEATURE_HAS_VSX | 0x1)["vsx"] is True
    assert cpu.isa_flags("power", (), hwcap=0x1)["vsx"] is False


@pytest.mark.parametrize("text", ["", "garbage\x00\x01 no colon here\n\n", "processor: x\n"])
def test_parse_cpuinfo_garbage(text: str) -> None:
    info = cpu.parse_cpuinfo(text)
    assert info.family is None and info.processors == 0
    assert info.sockets is None and info.physical_cores is None
    assert cpu.isa_flags(info.family, info.features) == {}


# --------------------------------------------------------------------------------------
# lscpu
# --------------------------------------------------------------------------------------

# file: arch, vendor, model, cpus, threads/core, cores/socket, sockets, NUMA nodes with CPUs,
#       ISA flags set
LSCPU_EXPECTED: dict[str, tuple] = {
    "ampere-altra-neoverse-n1-azure.txt": ("aarch64", "ARM", "Neoverse-N1", 64, 1, 64, 1, 1, {"neon"}),
    "apple-silicon-vm-aarch64-2cpu.txt": ("aarch64", "Apple", None, 2, 1, 2, 1, 1, {"neon"}),
    "epyc-7742-2s-dgx-a100.txt": (
        "x86_64", "AuthenticAMD", "AMD EPYC 7742 64-Core Processor", 256, 2, 64, 2, 8, {"avx2"},
    ),
    "epyc-7h12-2s-2numa-a100-node.txt": (
        "x86_64", "AuthenticAMD", "AMD EPYC 7H12 64-Core Processor", 128, 1, 64, 2, 2, {"avx2"},
    ),
    "epyc-7h12-2s-8numa.txt": (
        "x86_64", "AuthenticAMD", "AMD EPYC 7H12 64-Core Processor", 128, 1, 64, 2, 8, {"avx2"},
    ),
    "epyc-7v12-zen2-azure.txt": (
        "x86_64", "AuthenticAMD", "AMD EPYC 7V12 64-Core Processor", 120, 1, 60, 2, 4, {"avx2"},
    ),
    "epyc-7v73x-zen3-azure.txt": (
        "x86_64", "AuthenticAMD", "AMD EPYC 7V73X 64-Core Processor", 120, 1, 60, 2, 4, {"avx2"},
    ),
    # 9 NUMA nodes, 8 of them GPU memory without CPUs
    "grace-neoverse-v2-gh200.txt": (
        "aarch64", "ARM", "Neoverse-V2", 72, 1, 72, 1, 1, {"neon", "sve", "sve2"},
    ),
    # 6 NUMA nodes, 4 of them GPU memory without CPUs; no Flags line on POWER
    "power9-2s-traverse.txt": ("ppc64le", None, "POWER9, altivec supported", 128, 4, 16, 2, 2, set()),
    "xeon-e5-2680v4-2s-broadwell-no-avx512.txt": (
        "x86_64", "GenuineIntel", "Intel(R) Xeon(R) CPU E5-2680 v4 @ 2.40GHz", 28, 1, 14, 2, 2,
        {"avx2"},
    ),
    "xeon-e5-2686v4-aws-xen-1vcpu-wrapped-80col.txt": (
        "x86_64", "GenuineIntel", "Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz", 1, 1, 1, 1, 1,
        {"avx2"},
    ),
    "xeon-gold-6148-2s-skylake.txt": (
        "x86_64", "GenuineIntel", "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", 40, 1, 20, 2, 2,
        {"avx2", "avx512f"},
    ),
    "xeon-platinum-8259cl-cascadelake-aws.txt": (
        "x86_64", "GenuineIntel", "Intel(R) Xeon(R) Platinum 8259CL CPU @ 2.50GHz", 16, 2, 8, 1, 1,
        {"avx2", "avx512f", "avx512_vnni"},
    ),
    "xeon-platinum-8268-4s-cascadelake.txt": (
        "x86_64", "GenuineIntel", "Intel(R) Xeon(R) Platinum 8268 CPU @ 2.90GHz", 96, 1, 24, 4, 4,
        {"avx2", "avx512f", "avx512_vnni"},
    ),
    "xeon-platinum-8375c-icelake-aws.txt": (
        "x86_64", "GenuineIntel", "Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", 16, 2, 8, 1, 1,
        {"avx2", "avx512f", "avx512_vnni"},
    ),
    "xeon-platinum-8468-2s-sapphirerapids-amx.txt": (
        "x86_64", "GenuineIntel", "Intel(R) Xeon(R) Platinum 8468", 96, 1, 48, 2, 2,
        {"avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8"},
    ),
}  # fmt: skip


def test_every_lscpu_file_has_an_expectation() -> None:
    assert sorted(p.name for p in LSCPU.glob("*.txt")) == sorted(LSCPU_EXPECTED)


@pytest.mark.parametrize("name", sorted(LSCPU_EXPECTED))
def test_parse_lscpu(name: str) -> None:
    arch, vendor, model, cpus, tpc, cps, sockets, numa, on = LSCPU_EXPECTED[name]
    ls = cpu.parse_lscpu(read(LSCPU / name))
    assert (ls.architecture, ls.vendor, ls.model) == (arch, vendor, model)
    assert (ls.cpus, ls.threads_per_core, ls.cores_per_socket) == (cpus, tpc, cps)
    assert (ls.sockets, ls.numa_nodes) == (sockets, numa)
    assert ls.physical_cores == cps * sockets
    assert cpus == tpc * cps * sockets
    family = cpu.family_of_machine(arch)
    flags = cpu.isa_flags(family, ls.flags)
    assert flags_on(flags) == on


@pytest.mark.parametrize(
    "name, words",
    [
        # split mid-word at the wrap: "non" + "stop_tsc", "sti" + "bp", "overflo" + "w_recov"
        ("epyc-7742-2s-dgx-a100.txt", ["nonstop_tsc", "stibp", "overflow_recov", "abm", "smca"]),
        # wrapped at 80 columns: "rd" + "tscp", "tsc_kn" + "own_freq", "fsgsbas" + "e"
        (
            "xeon-e5-2686v4-aws-xen-1vcpu-wrapped-80col.txt",
            ["rdtscp", "tsc_known_freq", "fsgsbase", "rdrand", "cmov", "x2apic", "xsaveopt"],
        ),
        ("grace-neoverse-v2-gh200.txt", ["dit", "uscat", "sve2", "bf16", "dgh"]),
        ("apple-silicon-vm-aarch64-2cpu.txt", ["uscat", "ilrcpc", "afp"]),
    ],
)
def test_wrapped_lscpu_lines_are_joined(name: str, words: list[str]) -> None:
    ls = cpu.parse_lscpu(read(LSCPU / name))
    assert set(words) <= ls.flags
    fragments = {
        "non",
        "stop_tsc",
        "sti",
        "bp",
        "rd",
        "tscp",
        "tsc_kn",
        "own_freq",
        "di",
        "usc",
        "at",
    }
    assert not fragments & ls.flags


def test_wrapped_lscpu_values_other_than_flags() -> None:
    fields = cpu.parse_lscpu_fields(read(LSCPU / "xeon-e5-2686v4-aws-xen-1vcpu-wrapped-80col.txt"))
    assert fields["Mds"] == (
        "Vulnerable: Clear CPU buffers attempted, no microcode; SMT Host state unknown"
    )
    assert fields["Spectre v1"] == (
        "Mitigation; usercopy/swapgs barriers and __user pointer sanitization"
    )
    assert fields["Model name"] == "Intel(R) Xeon(R) CPU E5-2686 v4 @ 2.30GHz"
    assert fields["Hypervisor vendor"] == "Xen"


@pytest.mark.parametrize("text", ["", "no colon\nat all\n", "CPU(s): many\nSocket(s): -\n"])
def test_parse_lscpu_garbage(text: str) -> None:
    ls = cpu.parse_lscpu(text)
    assert ls.cpus is None and ls.sockets is None and ls.physical_cores is None
    assert ls.flags == frozenset()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("0-15,128-143", list(range(16)) + list(range(128, 144))),
        ("0,2,4,6", [0, 2, 4, 6]),
        ("0", [0]),
        ("", []),
        ("0-3\n", [0, 1, 2, 3]),
    ],
)
def test_parse_cpulist(text: str, expected: list[int]) -> None:
    assert cpu.parse_cpulist(text) == expected


def test_parse_cpulist_from_lscpu_numa_lines() -> None:
    fields = cpu.parse_lscpu_fields(read(LSCPU / "epyc-7742-2s-dgx-a100.txt"))
    nodes = [cpu.parse_cpulist(fields[f"NUMA node{i} CPU(s)"]) for i in range(8)]
    assert sorted(c for n in nodes for c in n) == list(range(256))


@pytest.mark.parametrize("text", ["5-3", "a-b", "1,x"])
def test_parse_cpulist_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        cpu.parse_cpulist(text)


# --------------------------------------------------------------------------------------
# cgroups
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "proc_cgroup, mountinfo, controller, expected",
    [
        # cgroup v1 host, controllers mounted as v1 beside a v2 "systemd" tree (hybrid)
        (
            "v1-host-proc-self-cgroup-user-slice.txt",
            "hybrid-host-proc-mountinfo-fedora.txt",
            "cpu",
            cpu.CgroupDir(1, "/sys/fs/cgroup/cpu,cpuacct/user.slice", "/sys/fs/cgroup/cpu,cpuacct"),
        ),
        (
            "v1-host-proc-self-cgroup-user-slice.txt",
            "hybrid-host-proc-mountinfo-fedora.txt",
            "memory",
            cpu.CgroupDir(1, "/sys/fs/cgroup/memory/user.slice", "/sys/fs/cgroup/memory"),
        ),
        # a pod's container on that kind of host: the full kubepods path below the mount
        (
            "v1-k8s-besteffort-cgroupfs-proc-cgroup.txt",
            "hybrid-host-proc-mountinfo-fedora.txt",
            "cpu",
            cpu.CgroupDir(
                1,
                "/sys/fs/cgroup/cpu,cpuacct/kubepods/besteffort/pod74ba62da-1a3d-11e7-bb11-080027cb0e22/"
                "cb1eadb7abe3a6545e9856411207073277838e1bdc003337c2f8685faeedc32c",
                "/sys/fs/cgroup/cpu,cpuacct",
            ),
        ),
        # inside a v1 Docker container the container's own cgroup is mounted at the mount
        # point (its path is not below the mount's root)
        (
            "v1-docker-cgroupfs-proc-cgroup.txt",
            "v1-docker-container-proc-mountinfo.txt",
            "memory",
            cpu.CgroupDir(1, "/sys/fs/cgroup/memory", "/sys/fs/cgroup/memory"),
        ),
        (
            "v1-docker-systemd-driver-proc-cgroup.txt",
            "v1-docker-container-proc-mountinfo.txt",
            "cpu",
            cpu.CgroupDir(1, "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/cpu,cpuacct"),
        ),
        # cgroup v2 container with its own cgroup namespace: "0::/"
        (
            "v2-docker-proc-self-cgroup.txt",
            "v2-k8s-docker-pod-proc-self-mountinfo.txt",
            "cpu",
            cpu.CgroupDir(2, "/sys/fs/cgroup", "/sys/fs/cgroup"),
        ),
        # a container's files read from another cgroup namespace: "/../docker-….scope"
        (
            "v2-docker-container-pid-cgroup-seen-from-other-cgroupns.txt",
            "v2-docker-container-pid-mountinfo-seen-from-other-cgroupns.txt",
            "memory",
            cpu.CgroupDir(2, "/sys/fs/cgroup", "/sys/fs/cgroup"),
        ),
        (
            "v2-k8s-docker-container-pid-cgroup-seen-from-other-cgroupns.txt",
            "v2-k8s-docker-container-pid-mountinfo-seen-from-other-cgroupns.txt",
            "cpu",
            cpu.CgroupDir(2, "/sys/fs/cgroup", "/sys/fs/cgroup"),
        ),
    ],
)
def test_locate_cgroup(proc_cgroup: str, mountinfo: str, controller: str, expected: Any) -> None:
    found = cpu.locate_cgroup(read(CGROUP / proc_cgroup), read(CGROUP / mountinfo), controller)
    assert found == expected


def test_locate_cgroup_without_a_hierarchy() -> None:
    # v1 cgroup lines, but a mount table without any cgroup file system
    mountinfo = read(CGROUP / "v2-k8s-docker-pod-proc-self-mountinfo.txt").replace(
        "cgroup2", "tmpfs"
    )
    assert (
        cpu.locate_cgroup(read(CGROUP / "v1-docker-cgroupfs-proc-cgroup.txt"), mountinfo, "cpu")
        is None
    )
    assert cpu.locate_cgroup("", "", "cpu") is None


def test_mountinfo_fields() -> None:
    mounts = cpu.parse_mountinfo(read(CGROUP / "v1-docker-container-proc-mountinfo.txt"))
    memory = next(m for m in mounts if m.mount_point == "/sys/fs/cgroup/memory")
    assert memory.fstype == "cgroup"
    assert memory.root.startswith("/system.slice/docker-dc4eaa1a34ec")
    assert {"rw", "memory"} <= memory.super_options
    shm = next(m for m in mounts if m.mount_point == "/dev/shm")
    assert shm.fstype == "tmpfs" and "size=65536k" in shm.super_options


@pytest.mark.parametrize(
    "name, cpus",
    [
        ("v2-cpu.max-6cpus-docker.txt", 6.0),
        ("v2-cpu.max-0.42cpu-podman-systemd.txt", 0.42),
        ("v2-cpu.max-unlimited-podman-cgroupfs.txt", None),
    ],
)
def test_parse_cpu_max(name: str, cpus: Optional[float]) -> None:
    assert cpu.parse_cpu_max(read(CGROUP / name)) == cpus


@pytest.mark.parametrize(
    "text", ["", "banana", "max 100000 extra", "0 100000", "100 0", "-5 100000"]
)
def test_parse_cpu_max_garbage(text: str) -> None:
    with pytest.raises(ValueError):
        cpu.parse_cpu_max(text)


def test_parse_cfs_quota() -> None:
    assert (
        cpu.parse_cfs_quota(read(CGROUP / "v1-cpu.cfs_quota_us-unlimited-k8s.txt"), "100000")
        is None
    )
    assert (
        cpu.parse_cfs_quota(
            read(CGROUP / "v1-cpu.cfs_quota_us-unlimited-devbox.txt"),
            read(CGROUP / "v1-cpu.cfs_period_us-devbox.txt"),
        )
        is None
    )
    assert cpu.parse_cfs_quota("150000\n", read(CGROUP / "v1-cpu.cfs_period_us-devbox.txt")) == 1.5
    with pytest.raises(ValueError):
        cpu.parse_cfs_quota("lots", "100000")


# --------------------------------------------------------------------------------------
# the probe on recorded machines
# --------------------------------------------------------------------------------------


def v2_container_files(
    cpu_max: str,
    proc_cgroup: str = "v2-docker-proc-self-cgroup.txt",
    mountinfo: str = "v2-k8s-docker-pod-proc-self-mountinfo.txt",
) -> dict[str, str]:
    return {
        "/proc/self/cgroup": read(CGROUP / proc_cgroup),
        "/proc/self/mountinfo": read(CGROUP / mountinfo),
        "/sys/fs/cgroup/cpu.max": read(CGROUP / cpu_max),
    }  # fmt: skip


def test_probe_sapphire_rapids_container_with_a_six_cpu_quota(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {"/proc/cpuinfo": read(CPUINFO / "xeon-platinum-8488c-sapphirerapids-aws.txt")}
    files.update(v2_container_files("v2-cpu.max-6cpus-docker.txt"))
    install(monkeypatch, files, affinity=list(range(16)), cpu_count=16)
    facts = cpu.probe(ProbeContext())
    assert facts.vendor == "GenuineIntel"
    assert facts.model == "Intel(R) Xeon(R) Platinum 8488C"
    assert facts.architecture == "x86_64"
    assert flags_on(facts.flags) == {
        "avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_tile", "amx_int8",
    }  # fmt: skip
    assert facts.affinity == list(range(16)) and facts.affinity_count == 16
    assert facts.cgroup_version == 2
    assert facts.quota_cpus == 6.0
    assert facts.effective_cpus == 6.0
    # the recorded cpuinfo holds one processor block; no sysfs or lscpu here
    assert facts.logical_cores == 1
    assert isinstance(facts.numa_nodes, Unavailable)
    CpuFacts.model_validate_json(facts.model_dump_json())


def test_probe_fractional_quota_seen_from_another_cgroup_namespace(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    files = {"/proc/cpuinfo": read(CPUINFO / "core-i7-1165g7-laptop.txt")}
    files.update(
        v2_container_files(
            "v2-cpu.max-0.42cpu-podman-systemd.txt",
            "v2-docker-container-pid-cgroup-seen-from-other-cgroupns.txt",
            "v2-docker-container-pid-mountinfo-seen-from-other-cgroupns.txt",
        )
    )
    install(monkeypatch, files, affinity=list(range(8)))
    facts = cpu.probe(ProbeContext())
    assert (facts.logical_cores, facts.physical_cores, facts.sockets) == (8, 4, 1)
    assert facts.quota_cpus == 0.42
    assert facts.effective_cpus == 0.42


def test_probe_unlimited_v2_quota(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"/proc/cpuinfo": read(CPUINFO / "epyc-7451-2s-96cpu-zen1.txt")}
    files.update(v2_container_files("v2-cpu.max-unlimited-podman-cgroupfs.txt"))
    install(monkeypatch, files, affinity=[0, 1, 2, 3])
    facts = cpu.probe(ProbeContext())
    assert (facts.logical_cores, facts.physical_cores, facts.sockets) == (96, 48, 2)
    assert facts.cgroup_version == 2 and facts.quota_cpus is None
    assert facts.effective_cpus == 4.0  # the affinity mask is the limit


def test_probe_the_tightest_quota_up_the_hierarchy_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    # A container cgroup without a quota inside a pod cgroup with one (Kubernetes sets both).
    pod = "/sys/fs/cgroup/kubepods.slice/kubepods-pod1.slice"
    files = {
        "/proc/cpuinfo": read(CPUINFO / "xeon-gold-6230-80cpu-cascadelake.txt"),
        "/proc/self/cgroup": "0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-1.scope\n",
        "/proc/self/mountinfo": read(CGROUP / "v2-k8s-docker-pod-proc-self-mountinfo.txt"),
        f"{pod}/cri-containerd-1.scope/cpu.max": read(CGROUP / "v2-cpu.max-unlimited-podman-cgroupfs.txt"),
        f"{pod}/cpu.max": read(CGROUP / "v2-cpu.max-6cpus-docker.txt"),
    }  # fmt: skip
    install(monkeypatch, files, affinity=list(range(80)))
    facts = cpu.probe(ProbeContext())
    assert facts.quota_cpus == 6.0 and facts.effective_cpus == 6.0


def test_probe_v1_hybrid_host_without_quota(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "/proc/cpuinfo": read(CPUINFO / "xeon-x7550-4s-64cpu-nehalem-ex.txt"),
        "/proc/self/cgroup": read(CGROUP / "v1-host-proc-self-cgroup-user-slice.txt"),
        "/proc/self/mountinfo": read(CGROUP / "hybrid-host-proc-mountinfo-fedora.txt"),
        "/sys/fs/cgroup/cpu,cpuacct/user.slice/cpu.cfs_quota_us": read(
            CGROUP / "v1-cpu.cfs_quota_us-unlimited-k8s.txt"
        ),
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": read(CGROUP / "v1-cpu.cfs_quota_us-unlimited-devbox.txt"),
        "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": read(CGROUP / "v1-cpu.cfs_period_us-devbox.txt"),
    }  # fmt: skip
    fs = install(monkeypatch, files, affinity=list(range(64)))
    facts = cpu.probe(ProbeContext())
    assert (facts.logical_cores, facts.physical_cores, facts.sockets) == (64, 32, 4)
    assert facts.cgroup_version == 1 and facts.quota_cpus is None
    assert facts.effective_cpus == 64.0
    assert "/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us" in fs.reads  # walked up to the top


def test_probe_grace_arm_uses_lscpu_for_model_and_topology(monkeypatch: pytest.MonkeyPatch) -> None:
    # ARM /proc/cpuinfo names neither the model nor the topology; no sysfs here either.
    files = {"/proc/cpuinfo": read(CPUINFO / "nvidia-grace-neoverse-v2-jureca.txt")}
    install(
        monkeypatch, files, machine="aarch64", affinity=list(range(72)),
        lscpu=read(LSCPU / "grace-neoverse-v2-gh200.txt"),
    )  # fmt: skip
    facts = cpu.probe(ProbeContext())
    assert facts.vendor == "ARM"
    assert facts.model == "Neoverse-V2"
    assert facts.architecture == "aarch64"
    assert flags_on(facts.flags) == {"neon", "sve", "sve2"}
    assert (facts.physical_cores, facts.sockets, facts.numa_nodes) == (72, 1, 1)
    assert facts.cgroup_version is None and facts.quota_cpus is None  # no /proc/self/cgroup
    assert facts.effective_cpus == 72.0


def test_probe_arm_topology_from_sysfs(monkeypatch: pytest.MonkeyPatch) -> None:
    # Topology files laid out as the kernel does for a 2-CPU, 1-socket machine, with the
    # values of this development machine (see test_sysfs_topology_of_this_machine).
    files: dict[str, Union[str, OSError]] = {
        "/proc/cpuinfo": read(CPUINFO / "aws-graviton2-neoverse-n1.txt"),
        "/sys/devices/system/node/has_cpu": "0\n",
    }
    for n in range(2):
        files[f"/sys/devices/system/cpu/cpu{n}/topology/core_cpus_list"] = f"{n}\n"
        files[f"/sys/devices/system/cpu/cpu{n}/topology/physical_package_id"] = "0\n"
    files["/sys/devices/system/cpu/cpufreq/policy0"] = ""  # not a cpuN entry
    install(monkeypatch, files, machine="aarch64", affinity=[0, 1],
            lscpu=read(LSCPU / "ampere-altra-neoverse-n1-azure.txt"))  # fmt: skip
    facts = cpu.probe(ProbeContext())
    assert (facts.physical_cores, facts.sockets, facts.numa_nodes) == (2, 1, 1)
    assert facts.model == "Neoverse-N1"  # the model still comes from lscpu


def test_probe_power9_without_lscpu(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"/proc/cpuinfo": read(CPUINFO / "power9-176cpu-gpu-numa.txt")}
    install(monkeypatch, files, machine="ppc64le", affinity=list(range(176)), hwcap=None)
    facts = cpu.probe(ProbeContext())
    assert facts.vendor == "IBM" and facts.model == "POWER9, altivec supported"
    assert facts.logical_cores == 176
    assert "vsx" not in facts.flags and not flags_on(facts.flags)
    assert isinstance(facts.physical_cores, Unavailable)  # no sysfs, lscpu or psutil
    assert isinstance(facts.sockets, Unavailable)
    assert isinstance(facts.numa_nodes, Unavailable)


def test_probe_without_proc_cpuinfo_or_lscpu(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, {"/proc/cpuinfo": PermissionError(13, "Permission denied")},
            affinity=[0, 1], cpu_count=2)  # fmt: skip
    facts = cpu.probe(ProbeContext())
    for field in ("vendor", "model", "flags"):
        value = getattr(facts, field)
        assert isinstance(value, Unavailable) and "Permission denied" in value.reason, field
    assert facts.logical_cores == 2
    assert facts.effective_cpus == 2.0


def test_probe_with_garbage_proc_cpuinfo(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, {"/proc/cpuinfo": "\x7fELF\x02\x01\x01 garbage\n:\n"}, cpu_count=4)
    facts = cpu.probe(ProbeContext())
    assert isinstance(facts.flags, Unavailable)  # never "no AVX2" on a guess
    assert isinstance(facts.vendor, Unavailable)
    assert facts.logical_cores == 4
    assert facts.affinity is None and facts.affinity_count is None
    assert facts.effective_cpus == 4.0


def test_probe_garbage_cpu_max(monkeypatch: pytest.MonkeyPatch) -> None:
    files = {"/proc/cpuinfo": read(CPUINFO / "core-i7-1165g7-laptop.txt")}
    files.update(v2_container_files("v2-cpu.max-6cpus-docker.txt"))
    files["/sys/fs/cgroup/cpu.max"] = "banana\n"
    install(monkeypatch, files, affinity=[0, 1])
    facts = cpu.probe(ProbeContext())
    assert facts.cgroup_version == 2
    assert isinstance(facts.quota_cpus, Unavailable) and "banana" in facts.quota_cpus.reason
    assert isinstance(facts.effective_cpus, Unavailable)


def test_probe_unreadable_cgroup_files(monkeypatch: pytest.MonkeyPatch) -> None:
    files: dict[str, Union[str, OSError]] = {
        "/proc/cpuinfo": read(CPUINFO / "core-i7-1165g7-laptop.txt"),
        "/proc/self/cgroup": read(CGROUP / "v2-docker-proc-self-cgroup.txt"),
        "/proc/self/mountinfo": PermissionError(13, "Permission denied"),
    }
    install(monkeypatch, files, affinity=[0, 1])
    facts = cpu.probe(ProbeContext())
    assert isinstance(facts.cgroup_version, Unavailable)
    assert isinstance(facts.quota_cpus, Unavailable)
    assert "Permission denied" in facts.quota_cpus.reason

    files["/proc/self/mountinfo"] = read(CGROUP / "v2-k8s-docker-pod-proc-self-mountinfo.txt")
    files["/sys/fs/cgroup/cpu.max"] = PermissionError(13, "Permission denied")
    install(monkeypatch, files, affinity=[0, 1])
    facts = cpu.probe(ProbeContext())
    assert facts.cgroup_version == 2
    assert isinstance(facts.quota_cpus, Unavailable) and "/sys/fs/cgroup" in facts.quota_cpus.reason


def test_probe_on_macos_without_py_cpuinfo(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, {}, system="Darwin", machine="arm64", cpu_count=10)
    facts = cpu.probe(ProbeContext())
    assert facts.architecture == "arm64"
    assert isinstance(facts.vendor, Unavailable) and "py-cpuinfo" in facts.vendor.reason
    assert isinstance(facts.flags, Unavailable)
    assert facts.logical_cores == 10
    assert facts.cgroup_version is None and facts.quota_cpus is None
    assert facts.affinity is None
    assert facts.effective_cpus == 10.0
    assert isinstance(facts.numa_nodes, Unavailable) and isinstance(facts.sockets, Unavailable)


def test_probe_elsewhere_uses_py_cpuinfo(monkeypatch: pytest.MonkeyPatch) -> None:
    """The non-Linux path, fed by the real py-cpuinfo on this (Linux) machine."""
    cpuinfo = pytest.importorskip("cpuinfo")
    psutil = pytest.importorskip("psutil")
    here = Path("/proc/cpuinfo")
    if not here.exists():
        pytest.skip("needs /proc/cpuinfo to compare with")
    expected = cpu.parse_cpuinfo(here.read_text())
    install(monkeypatch, {}, system="Windows", machine="AMD64", cpu_count=os.cpu_count())
    monkeypatch.setattr(
        _sys, "import_optional", lambda name: {"cpuinfo": cpuinfo, "psutil": psutil}.get(name)
    )
    facts = cpu.probe(ProbeContext())
    assert facts.vendor == expected.vendor
    assert facts.flags == cpu.isa_flags("x86", expected.features)
    assert facts.physical_cores == psutil.cpu_count(logical=False)


# --------------------------------------------------------------------------------------
# this machine
# --------------------------------------------------------------------------------------


def test_sysfs_topology_of_this_machine() -> None:
    psutil = pytest.importorskip("psutil")
    if not Path(cpu.SYS_CPU).is_dir():
        pytest.skip("no /sys/devices/system/cpu here")
    topology = cpu.read_sysfs_topology()
    assert topology is not None
    assert topology[0] == psutil.cpu_count(logical=False)


def test_sysfs_topology_unreadable(monkeypatch: pytest.MonkeyPatch) -> None:
    install(monkeypatch, {cpu.SYS_CPU: PermissionError(13, "Permission denied")})
    assert cpu.read_sysfs_topology() is None
    assert cpu.read_numa_nodes() is None


def test_probe_on_this_machine() -> None:
    facts = cpu.probe(ProbeContext())
    CpuFacts.model_validate_json(facts.model_dump_json())
    assert isinstance(facts.logical_cores, int) and facts.logical_cores >= 1
    if isinstance(facts.affinity_count, int):
        assert facts.effective_cpus <= facts.affinity_count
