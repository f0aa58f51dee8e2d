"""system probe: OS identity, kernel, container, WSL, the target interpreter, env manager.

Parsers run over real files in tests/data/system (sources in SOURCES.md there); the probe
runs for real on this machine; macOS and Windows are faked only through the platform seam.
"""

from __future__ import annotations

import os
import platform
import stat
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from torchdoctor.facts import SystemFacts, Unavailable
from torchdoctor.probes import ProbeContext, _interp_child, _sys, system
from torchdoctor.probes._sys import Completed

DATA = Path(__file__).resolve().parents[1] / "data" / "system"


def _read(*parts: str) -> str:
    return (DATA.joinpath(*parts)).read_text(encoding="utf-8")


# --------------------------------------------------------------------------------------
# os-release
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, os_name, os_version",
    [
        ("debian12", "Debian GNU/Linux 12 (bookworm)", "12"),
        ("ubuntu24", "Ubuntu 24.04.3 LTS", "24.04"),
        ("rhel9", "Red Hat Enterprise Linux 9.6 (Plow)", "9.6"),
        ("alpine", "Alpine Linux v3.23", "3.23.2"),
        ("fedora42", "Fedora Linux 42 (Forty Two)", "42"),
    ],
)
def test_os_release(name, os_name, os_version):
    fields = system.parse_os_release(_read("os-release", name))
    assert system.linux_os_name(fields) == (os_name, os_version)


def test_os_release_quotes_escapes_and_fallbacks():
    fields = system.parse_os_release(_read("os-release", "fedora42"))
    assert fields["VERSION_CODENAME"] == ""  # VERSION_CODENAME="" in the file
    assert fields["ID"] == "fedora" and fields["ANSI_COLOR"] == "0;38;2;60;110;180"
    # without PRETTY_NAME the name is NAME + VERSION (os-release(5) defaults)
    fields.pop("PRETTY_NAME")
    assert system.linux_os_name(fields) == ("Fedora Linux 42 (Forty Two)", "42")
    assert system.parse_os_release('NAME="Say \\"hi\\" \\$HOME"\n# comment\n\nbad line\n') == {
        "NAME": 'Say "hi" $HOME'
    }
    assert system.linux_os_name({}) == (None, None)


@pytest.mark.skipif(not hasattr(platform, "freedesktop_os_release"), reason="Python < 3.10")
def test_os_release_parser_agrees_with_the_standard_library():
    try:
        expected = platform.freedesktop_os_release()
    except OSError:
        pytest.skip("no os-release on this machine")
    text = None
    for path in system.OS_RELEASE_FILES:
        if os.path.exists(path):
            text = Path(path).read_text()
            break
    ours = system.parse_os_release(text)
    for key, value in ours.items():
        assert expected[key] == value


# --------------------------------------------------------------------------------------
# WSL
# --------------------------------------------------------------------------------------

WSL_CASES = yaml.safe_load(_read("wsl-kernel-releases.yaml"))


@pytest.mark.parametrize("case", WSL_CASES, ids=[c["release"] for c in WSL_CASES])
def test_wsl_version_from_kernel_release(case):
    assert system.wsl_version(case["release"]) == case["wsl"]


# --------------------------------------------------------------------------------------
# containers
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        ("v1-docker-cgroupfs-proc-cgroup.txt", "docker"),
        ("v1-docker-systemd-driver-proc-cgroup.txt", "docker"),
        ("v1-host-proc-self-cgroup-user-slice.txt", None),
        ("v1-k8s-besteffort-cgroupfs-proc-cgroup.txt", "kubernetes"),
        ("v1-k8s-besteffort-systemd-driver-proc-cgroup.txt", "kubernetes"),
        ("v2-docker-container-pid-cgroup-seen-from-other-cgroupns.txt", "docker"),
        ("v2-docker-proc-self-cgroup.txt", None),  # "0::/" inside a cgroup namespace says nothing
        ("v2-k8s-docker-container-pid-cgroup-seen-from-other-cgroupns.txt", "kubernetes"),
    ],
)
def test_container_from_cgroup(name, expected):
    assert system.container_from_cgroup(_read("cgroup", name)) == expected


@pytest.mark.parametrize(
    "name, expected",
    [
        ("hybrid-host-proc-mountinfo-fedora.txt", None),
        ("v1-docker-container-proc-mountinfo.txt", "docker"),
        ("v2-docker-container-pid-mountinfo-seen-from-other-cgroupns.txt", "docker"),
        ("v2-k8s-docker-container-pid-mountinfo-seen-from-other-cgroupns.txt", "kubernetes"),
        ("v2-k8s-docker-pod-proc-self-mountinfo.txt", "kubernetes"),
    ],
)
def test_container_from_mountinfo(name, expected):
    assert system.container_from_mountinfo(_read("cgroup", name)) == expected


def test_docker_daemon_and_user_sessions_are_not_containers():
    # the host's own services: the docker daemon's cgroup is not a container's
    text = "1:name=systemd:/system.slice/docker.service\n0::/system.slice/containerd.service\n"
    assert system.container_from_cgroup(text) is None
    assert system.container_from_cgroup("") is None
    assert system.container_from_mountinfo("garbage\n1 2 3\n") is None


class FakeMachine:
    """Files and environment names served through the _sys seam."""

    def __init__(self, monkeypatch, files=None, existing=(), env=None):
        self.files = files or {}
        self.existing = set(existing)
        self.env = env or {}
        self.read_values: list[str] = []
        monkeypatch.setattr(_sys, "read_text", self.read_text)
        monkeypatch.setattr(
            _sys, "exists", lambda path: path in self.existing or path in self.files
        )
        monkeypatch.setattr(_sys, "environ_names", lambda: sorted(self.env))
        monkeypatch.setattr(_sys, "getenv", self.getenv)

    def read_text(self, path, limit=_sys.MAX_READ_BYTES):
        if path not in self.files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return self.files[path]

    def getenv(self, name):
        self.read_values.append(name)
        return self.env.get(name)


def test_detect_container_kubernetes_from_mountinfo_beats_dockerenv(monkeypatch):
    FakeMachine(
        monkeypatch,
        files={
            "/proc/self/cgroup": _read("cgroup", "v2-docker-proc-self-cgroup.txt"),
            "/proc/self/mountinfo": _read("cgroup", "v2-k8s-docker-pod-proc-self-mountinfo.txt"),
        },
        existing={"/.dockerenv"},
    )
    assert system.detect_container() == "kubernetes"


def test_detect_container_kubernetes_from_env_name_without_reading_it(monkeypatch):
    machine = FakeMachine(monkeypatch, env={"KUBERNETES_SERVICE_HOST": "10.0.0.1"})
    assert system.detect_container() == "kubernetes"
    assert machine.read_values == []


def test_detect_container_marker_files(monkeypatch):
    FakeMachine(monkeypatch, existing={"/run/.containerenv"})
    assert system.detect_container() == "podman"
    FakeMachine(monkeypatch, existing={"/.dockerenv"})
    assert system.detect_container() == "docker"


def test_detect_container_from_pid1_cgroup(monkeypatch):
    FakeMachine(
        monkeypatch, files={"/proc/1/cgroup": _read("cgroup", "v1-docker-cgroupfs-proc-cgroup.txt")}
    )
    assert system.detect_container() == "docker"


def test_detect_container_from_systemd_container_variable(monkeypatch):
    machine = FakeMachine(monkeypatch, env={"container": "podman", "HOME": "/root"})
    assert system.detect_container() == "podman"
    assert machine.read_values == ["container"]
    FakeMachine(monkeypatch, env={"container": "../../etc/passwd"})
    assert system.detect_container() is None


def test_detect_container_on_a_plain_host(monkeypatch):
    FakeMachine(
        monkeypatch,
        files={
            "/proc/self/cgroup": _read("cgroup", "v1-host-proc-self-cgroup-user-slice.txt"),
            "/proc/self/mountinfo": _read("cgroup", "hybrid-host-proc-mountinfo-fedora.txt"),
        },
    )
    assert system.detect_container() is None


# --------------------------------------------------------------------------------------
# environment manager
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, expected",
    [
        ("venv-stdlib-linux.cfg", "venv"),
        ("virtualenv-20.27-windows.cfg", "virtualenv"),
        ("uv-0.5.7-macos.cfg", "uv"),
    ],
)
def test_env_manager_from_pyvenv_cfg(name, expected):
    text = _read("pyvenv", name)
    assert system.classify_env_manager("/env", "/base", None, text, False, None) == expected


def test_pyvenv_cfg_keys():
    cfg = system.parse_pyvenv_cfg(_read("pyvenv", "virtualenv-20.27-windows.cfg"))
    assert cfg["virtualenv"] == "20.27.0"
    assert cfg["base-executable"] == "C:\\Program Files\\Python39\\python.exe"
    assert system.parse_pyvenv_cfg(_read("pyvenv", "uv-0.5.7-macos.cfg"))["uv"] == "0.5.7"


def test_env_manager_conda_and_none():
    classify = system.classify_env_manager
    assert classify("/opt/conda/envs/ml", "/opt/conda/envs/ml", None, None, True, None) == "conda"
    assert (
        classify(
            "/opt/conda/envs/ml", "/opt/conda/envs/ml", None, None, False, "/opt/conda/envs/ml/"
        )
        == "conda"
    )
    assert classify("/usr", "/usr", None, None, False, "/opt/conda") is None
    assert classify("/usr", "/usr", None, None, False, None) is None
    # a venv made from a conda interpreter is a venv (the innermost layer)
    venv = _read("pyvenv", "venv-stdlib-linux.cfg")
    assert classify("/work/.venv", "/opt/conda", None, venv, False, "/opt/conda") == "venv"
    # virtualenv < 20 left no pyvenv.cfg but set sys.real_prefix
    assert classify("/home/u/env", "/home/u/env", "/usr", None, False, None) == "virtualenv"


def test_env_manager_reads_the_prefix(tmp_path, monkeypatch):
    conda = tmp_path / "miniconda3"
    (conda / "conda-meta").mkdir(parents=True)
    python = {"prefix": str(conda), "base_prefix": str(conda), "real_prefix": None}
    assert system._env_manager(python) == "conda"
    venv = tmp_path / "venv"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text(_read("pyvenv", "uv-0.5.7-macos.cfg"))
    assert system._env_manager({"prefix": str(venv), "base_prefix": str(conda)}) == "uv"
    assert isinstance(system._env_manager({}), Unavailable)


# --------------------------------------------------------------------------------------
# Rosetta translation
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "returncode, stdout, stderr, expected",
    [
        (0, "1\n", "", True),
        (0, "0\n", "", False),
        (1, "", "sysctl: unknown oid 'sysctl.proc_translated'\n", False),  # Intel Mac
        (0, "", "", False),  # `sysctl -in` style empty answer
    ],
)
def test_parse_proc_translated(returncode, stdout, stderr, expected):
    assert _interp_child.parse_proc_translated(returncode, stdout, stderr) is expected


def test_parse_proc_translated_unknown():
    with pytest.raises(ValueError, match="exit status 2"):
        _interp_child.parse_proc_translated(2, "", "sysctl: permission denied")


def _fake_platform(monkeypatch, system_name, release, version, mac_release=""):
    monkeypatch.setattr(
        system,
        "platform_info",
        lambda: system.PlatformInfo(system_name, release, version, mac_release),
    )


@pytest.mark.parametrize(
    "completed, expected",
    [
        (Completed(("sysctl",), 0, "1\n", ""), True),
        (Completed(("sysctl",), 0, "0\n", ""), False),
        (Completed(("sysctl",), 1, "", "sysctl: unknown oid 'sysctl.proc_translated'"), False),
    ],
)
def test_macos_translated(monkeypatch, completed, expected):
    calls = []

    def run(argv, timeout=10.0, **kwargs):
        calls.append((tuple(argv), timeout))
        return completed

    _fake_platform(monkeypatch, "Darwin", "23.5.0", "Darwin Kernel Version 23.5.0", "14.5")
    monkeypatch.setattr(_sys, "run", run)
    facts = system.probe(ProbeContext())
    assert facts.translated is expected
    assert calls == [(("sysctl", "-n", "sysctl.proc_translated"), 2.0)]
    assert (facts.os, facts.os_name, facts.os_version, facts.kernel) == (
        "Darwin",
        "macOS 14.5",
        "14.5",
        "23.5.0",
    )
    assert facts.container is None and facts.wsl is None and facts.libc is None


def test_macos_translated_timeout_is_unavailable(monkeypatch):
    _fake_platform(monkeypatch, "Darwin", "23.5.0", "", "14.5")
    monkeypatch.setattr(
        _sys,
        "run",
        lambda argv, timeout=10.0, **kw: Completed(tuple(argv), -9, "", "", timed_out=True),
    )
    facts = system.probe(ProbeContext())
    assert isinstance(facts.translated, Unavailable)
    assert "did not answer within 2 s" in facts.translated.reason


@pytest.mark.parametrize(
    "release, version, os_name",
    [
        ("10", "10.0.19045", "Windows 10"),
        ("10", "10.0.22631", "Windows 11"),
        ("11", "10.0.26100", "Windows 11"),
    ],
)
def test_windows_identity(monkeypatch, release, version, os_name):
    _fake_platform(monkeypatch, "Windows", release, version)
    facts = system.probe(ProbeContext())
    assert (facts.os, facts.os_name, facts.os_version, facts.kernel) == (
        "Windows",
        os_name,
        version,
        version,
    )
    assert facts.translated is None and facts.container is None and facts.wsl is None


def test_linux_without_os_release(monkeypatch):
    FakeMachine(monkeypatch)
    _fake_platform(monkeypatch, "Linux", "5.15.90.1-microsoft-standard-WSL2", "#1 SMP")
    facts = system.probe(ProbeContext())
    assert isinstance(facts.os_name, Unavailable) and "os-release" in facts.os_name.reason
    assert (
        facts.kernel == "5.15.90.1-microsoft-standard-WSL2"
    )  # /proc unreadable: platform.release()
    assert facts.wsl == 2


# --------------------------------------------------------------------------------------
# the real machine
# --------------------------------------------------------------------------------------


def test_probe_on_this_machine():
    facts = system.probe(ProbeContext())
    SystemFacts.model_validate_json(facts.model_dump_json())
    assert facts.os == platform.system()
    assert facts.python_version == platform.python_version()
    assert facts.python_implementation == platform.python_implementation()
    assert facts.python_bits == struct.calcsize("P") * 8
    assert facts.machine == platform.machine()
    if facts.os != "Darwin":
        assert facts.translated is None
    if facts.os == "Linux":
        assert facts.kernel == platform.release()
        lib, version = platform.libc_ver()
        if lib == "glibc":
            assert facts.libc == f"glibc {version}"
        if hasattr(platform, "freedesktop_os_release"):
            try:
                assert facts.os_name == platform.freedesktop_os_release()["PRETTY_NAME"]
            except OSError:
                pass
        if os.path.exists("/.dockerenv") and "KUBERNETES_SERVICE_HOST" not in os.environ:
            assert facts.container in ("docker", "kubernetes")
        assert facts.wsl == system.wsl_version(platform.release())
    if sys.prefix != sys.base_prefix and os.path.exists(os.path.join(sys.prefix, "pyvenv.cfg")):
        cfg = system.parse_pyvenv_cfg(Path(sys.prefix, "pyvenv.cfg").read_text())
        assert facts.env_manager == (
            "uv" if "uv" in cfg else "virtualenv" if "virtualenv" in cfg else "venv"
        )


def _system_python():
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate) and os.path.realpath(candidate) != os.path.realpath(
            sys.executable
        ):
            return candidate
    return None


def test_probe_reads_another_interpreter():
    python = _system_python()
    if python is None:
        pytest.skip("no other system interpreter on this machine")
    code = (
        "import platform, sys, os; print(platform.python_version()); "
        "print(sys.prefix == getattr(sys, 'base_prefix', sys.prefix)"
        " and not os.path.isdir(os.path.join(sys.prefix, 'conda-meta')))"
    )
    done = subprocess.run(
        [python, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
    )
    version, plain = done.stdout.split()
    facts = system.probe(ProbeContext(python=python))
    assert facts.python_version == version
    if plain == "True" and "CONDA_PREFIX" not in os.environ:
        assert facts.env_manager is None


def test_probe_base_interpreter_of_this_venv():
    if sys.prefix == sys.base_prefix or not os.path.islink(sys.executable):
        pytest.skip("not running from a venv whose python is a symlink")
    facts = system.probe(ProbeContext(python=os.path.realpath(sys.executable)))
    assert facts.python_version == platform.python_version()
    assert facts.env_manager != "venv"  # the base interpreter is not the venv


def test_missing_interpreter_keeps_the_os_facts(tmp_path):
    facts = system.probe(ProbeContext(python=str(tmp_path / "python")))
    assert facts.os == platform.system()
    for key in ("python_version", "python_implementation", "python_bits", "machine", "env_manager"):
        value = getattr(facts, key)
        assert isinstance(value, Unavailable) and "cannot run the interpreter" in value.reason, key


@pytest.mark.skipif(os.name != "posix", reason="fake interpreters are shell scripts")
def test_hanging_interpreter_keeps_the_os_facts(tmp_path):
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\nsleep 30\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    facts = system.probe(ProbeContext(python=str(script), timeout=1))
    assert isinstance(facts.python_version, Unavailable)
    assert "did not answer within 1 s" in facts.python_version.reason
    assert facts.os == platform.system() and facts.kernel
