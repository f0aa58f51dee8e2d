"""system probe: OS, kernel, C library, the target interpreter, container, WSL, env manager.

The OS facts are this machine's; the interpreter facts (version, implementation, bits,
machine, C library, Rosetta translation, environment manager) are the *target*
interpreter's: read in-process when it is the running one, else from ``_interp_child.py``
run under it (shared with the packages probe). Parsing is done by pure functions over
text (os-release, kernel release, cgroup, mountinfo, pyvenv.cfg) so tests feed real files.
"""

from __future__ import annotations

import os
import platform
import re
from dataclasses import dataclass
from typing import Any, Optional

from torchdoctor.facts import SystemFacts, Unavailable
from torchdoctor.probes import ProbeContext, ProbeUnavailable, _interp_child, _sys
from torchdoctor.probes import env as env_probe
from torchdoctor.probes import packages as packages_probe

OS_RELEASE_FILES = ("/etc/os-release", "/usr/lib/os-release")
SYSCTL_TIMEOUT_S = 2.0
# Windows 11 still reports release "10" in older Pythons; its builds start at 22000.
# source: https://learn.microsoft.com/en-us/windows/release-health/windows11-release-information
WINDOWS_11_FIRST_BUILD = 22000


@dataclass(frozen=True)
class PlatformInfo:
    """What the ``platform`` module says about this machine (a seam for tests)."""

    system: str
    release: str
    version: str
    mac_release: str


def platform_info() -> PlatformInfo:
    return PlatformInfo(
        system=platform.system(),
        release=platform.release(),
        version=platform.version(),
        mac_release=platform.mac_ver()[0] if platform.system() == "Darwin" else "",
    )


# --------------------------------------------------------------------------------------
# pure parsers
# --------------------------------------------------------------------------------------

_OS_RELEASE_LINE = re.compile(
    r"^(?P<key>[A-Za-z0-9_]+)=(?P<quote>[\"']?)(?P<value>.*)(?P=quote)\s*$"
)
_SHELL_ESCAPE = re.compile(r"\\([\\$\"'`])")


def parse_os_release(text: str) -> dict[str, str]:
    """Fields of an os-release file (shell-like assignments; quotes and escapes removed)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _OS_RELEASE_LINE.match(line)
        if match:
            fields[match["key"]] = _SHELL_ESCAPE.sub(r"\1", match["value"])
    return fields


def linux_os_name(fields: dict[str, str]) -> tuple[Optional[str], Optional[str]]:
    """(name with version, version id) from os-release fields, e.g. ("Ubuntu 24.04.3 LTS", "24.04")."""
    name = fields.get("PRETTY_NAME") or " ".join(
        part for part in (fields.get("NAME"), fields.get("VERSION")) if part
    )
    return (name or None), (fields.get("VERSION_ID") or None)


def wsl_version(kernel_release: str) -> Optional[int]:
    """1 or 2 from a kernel release string under WSL, else None.

    WSL 1 reports a fake kernel ending in "-Microsoft" (4.4.0-19041-Microsoft); WSL 2 runs
    Microsoft's real kernel, "-microsoft-standard" (4.19) and later "-microsoft-standard-WSL2".
    """
    lower = kernel_release.lower()
    if "microsoft" not in lower:
        return None
    if "wsl2" in lower or "microsoft-standard" in lower:
        return 2
    return 1


# cgroup path fragments that name the container runtime (checked against each path)
_CGROUP_HINTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"kubepods"), "kubernetes"),
    (re.compile(r"(?:^|/)docker[-/][0-9a-f]{12,}"), "docker"),  # /docker/<id>, docker-<id>.scope
    (re.compile(r"libpod"), "podman"),  # libpod-<id>.scope, /libpod_parent/
    (re.compile(r"(?:^|/)lxc(?:\.payload\.|/)"), "lxc"),  # /lxc/<name>, /lxc.payload.<name>
    (re.compile(r"cri-containerd-|(?:^|/)containerd/"), "containerd"),
)


def _cgroup_path_hint(path: str) -> Optional[str]:
    for pattern, name in _CGROUP_HINTS:
        if pattern.search(path):
            return name
    return None


def _pick(hints: list[str]) -> Optional[str]:
    """kubernetes wins (a pod runs on some runtime underneath), else the first hint."""
    if "kubernetes" in hints:
        return "kubernetes"
    return hints[0] if hints else None


def container_from_cgroup(text: str) -> Optional[str]:
    """Container runtime named by /proc/<pid>/cgroup lines ("hierarchy:controllers:path")."""
    hints = []
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) == 3:
            hint = _cgroup_path_hint(parts[2])
            if hint:
                hints.append(hint)
    return _pick(hints)


_MOUNT_ESCAPE = re.compile(r"\\([0-7]{3})")
_IDENTITY_MOUNTS = ("/", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf")
_STORAGE_HINTS = (
    ("/var/lib/docker/", "docker"),
    ("/var/lib/containers/storage/", "podman"),
    ("/var/lib/containerd/", "containerd"),
    ("/var/lib/lxc/", "lxc"),
    ("/var/snap/lxd/", "lxc"),
    ("/var/lib/lxd/", "lxc"),
)


def container_from_mountinfo(text: str) -> Optional[str]:
    """Container runtime named by /proc/self/mountinfo.

    Only mounts a container gets from its runtime count: the root file system and the
    bind-mounted /etc/hostname, /etc/hosts, /etc/resolv.conf (their source lies in the
    runtime's storage), cgroup mounts (their root is the container's cgroup) and kubelet
    volumes mounted outside /var/lib/kubelet. A host that merely runs containers lists their
    overlay mounts under /var/lib/docker, which is why other mount points are ignored.
    """
    hints = []
    for line in text.splitlines():
        fields = line.split()
        try:
            sep = fields.index("-", 6)
        except ValueError:
            continue
        if len(fields) < sep + 2:
            continue
        root = _MOUNT_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[3])
        mount_point = _MOUNT_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), fields[4])
        fstype = fields[sep + 1]
        super_options = fields[sep + 3] if len(fields) > sep + 3 else ""
        if root.startswith("/var/lib/kubelet/pods/") and not mount_point.startswith(
            "/var/lib/kubelet"
        ):
            hints.append("kubernetes")
        if fstype in ("cgroup", "cgroup2"):
            hint = _cgroup_path_hint(root)
            if hint:
                hints.append(hint)
        if mount_point in _IDENTITY_MOUNTS:
            blob = f"{root} {super_options}"
            for fragment, name in _STORAGE_HINTS:
                if fragment in blob:
                    hints.append(name)
                    break
    return _pick(hints)


def parse_pyvenv_cfg(text: str) -> dict[str, str]:
    """Keys (lower case) and values of a pyvenv.cfg ("key = value" lines)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip():
            fields[key.strip().lower()] = value.strip()
    return fields


def classify_env_manager(
    prefix: str,
    base_prefix: str,
    real_prefix: Optional[str],
    pyvenv_cfg: Optional[str],
    has_conda_meta: bool,
    conda_prefix: Optional[str],
) -> Optional[str]:
    """conda | uv | virtualenv | venv | None from what the interpreter's prefix holds.

    A virtual environment is the innermost layer, so it wins over a conda base
    interpreter it was made from. uv and virtualenv sign the pyvenv.cfg they write
    (``uv = 0.5.7``, ``virtualenv = 20.27.0``); the stdlib venv does not. virtualenv
    before 20 wrote no pyvenv.cfg but set ``sys.real_prefix``.
    """
    if real_prefix:
        return "virtualenv"
    if pyvenv_cfg is not None and _same_path(prefix, base_prefix) is False:
        keys = parse_pyvenv_cfg(pyvenv_cfg)
        if "uv" in keys:
            return "uv"
        if "virtualenv" in keys:
            return "virtualenv"
        return "venv"
    if has_conda_meta:
        return "conda"
    if conda_prefix and _same_path(conda_prefix, prefix):
        return "conda"
    return None


def _same_path(a: str, b: str) -> bool:
    return os.path.normcase(os.path.normpath(a)) == os.path.normcase(os.path.normpath(b))


# --------------------------------------------------------------------------------------
# reading the machine
# --------------------------------------------------------------------------------------


def _read(path: str) -> Optional[str]:
    try:
        return _sys.read_text(path)
    except OSError:
        return None


def os_identity(info: PlatformInfo) -> tuple[Any, Any]:
    """(os_name, os_version) for this machine."""
    if info.system == "Linux":
        for path in OS_RELEASE_FILES:
            text = _read(path)
            if text is not None:
                return linux_os_name(parse_os_release(text))
        reason = "no /etc/os-release or /usr/lib/os-release"
        return Unavailable(unavailable=reason), Unavailable(unavailable=reason)
    if info.system == "Darwin":
        if not info.mac_release:
            reason = "platform.mac_ver() gave no version"
            return Unavailable(unavailable=reason), Unavailable(unavailable=reason)
        return f"macOS {info.mac_release}", info.mac_release
    if info.system == "Windows":
        release = info.release
        build = info.version.split(".")[-1]
        if release == "10" and build.isdigit() and int(build) >= WINDOWS_11_FIRST_BUILD:
            release = "11"
        return f"Windows {release}".strip(), info.version or None
    name = f"{info.system} {info.release}".strip()
    return (name or None), (info.release or None)


def detect_container(allowlist: Optional[env_probe.Allowlist] = None) -> Optional[str]:
    """docker | podman | kubernetes | lxc | containerd | ... or None (Linux only)."""
    names = set(_sys.environ_names())
    cgroup_hints = [
        h
        for h in (container_from_cgroup(t) for t in _texts("/proc/self/cgroup", "/proc/1/cgroup"))
        if h
    ]
    mount_text = _read("/proc/self/mountinfo")
    mount_hint = container_from_mountinfo(mount_text) if mount_text else None
    if (
        "KUBERNETES_SERVICE_HOST" in names
        or "kubernetes" in cgroup_hints
        or mount_hint == "kubernetes"
    ):
        return "kubernetes"
    if _sys.exists("/run/.containerenv"):
        return "podman"
    if _sys.exists("/.dockerenv"):
        return "docker"
    if cgroup_hints:
        return cgroup_hints[0]
    if mount_hint:
        return mount_hint
    # systemd's container interface: podman, LXC and systemd-nspawn set $container
    allowlist = allowlist or env_probe.load_allowlist()
    if "container" in names and allowlist.allows("container"):
        value = (_sys.getenv("container") or "").strip().lower()
        if re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,31}", value):
            return value
    return None


def _texts(*paths: str) -> list[str]:
    return [t for t in (_read(p) for p in paths) if t is not None]


def _linux_kernel_release(info: PlatformInfo) -> str:
    text = _read("/proc/sys/kernel/osrelease")
    return text.strip() if text and text.strip() else info.release


def _libc(info: PlatformInfo, libc: Any) -> Any:
    if info.system != "Linux":
        return None
    if isinstance(libc, (list, tuple)) and len(libc) == 2 and libc[0] and libc[1]:
        return f"{libc[0]} {libc[1]}"
    try:  # musl has no version query; its dynamic loader names it
        if any(name.startswith("ld-musl-") for name in _sys.listdir("/lib")):
            return "musl"
    except OSError:
        pass
    return Unavailable(unavailable="the C library could not be identified")


def _translated_here() -> Any:
    done = _sys.run(["sysctl", "-n", "sysctl.proc_translated"], timeout=SYSCTL_TIMEOUT_S)
    if done.error is not None:
        return Unavailable(unavailable=f"cannot run sysctl: {done.error}")
    if done.timed_out:
        return Unavailable(unavailable=f"sysctl did not answer within {SYSCTL_TIMEOUT_S:g} s")
    try:
        return _interp_child.parse_proc_translated(done.returncode, done.stdout, done.stderr)
    except ValueError as exc:
        return Unavailable(unavailable=str(exc))


def _env_manager(python: dict) -> Any:
    prefix = python.get("prefix")
    base_prefix = python.get("base_prefix") or prefix
    if not isinstance(prefix, str) or not prefix:
        return Unavailable(unavailable="the interpreter did not report its prefix")
    conda_prefix = _sys.getenv("CONDA_PREFIX") if "CONDA_PREFIX" in _sys.environ_names() else None
    return classify_env_manager(
        prefix=prefix,
        base_prefix=base_prefix,
        real_prefix=python.get("real_prefix"),
        pyvenv_cfg=_read(os.path.join(prefix, "pyvenv.cfg")),
        has_conda_meta=_sys.exists(os.path.join(prefix, "conda-meta")),
        conda_prefix=conda_prefix,
    )


def probe(ctx: ProbeContext) -> SystemFacts:
    info = platform_info()
    os_name, os_version = os_identity(info)
    is_linux = info.system == "Linux"
    kernel = (
        _linux_kernel_release(info)
        if is_linux
        else (info.version if info.system == "Windows" else info.release)
    )
    here = packages_probe.is_running_interpreter(ctx)

    try:
        report = packages_probe.read_target(
            ctx, {"translated": info.system == "Darwin" and not here}
        )
        python = report.get("python")
        if not isinstance(python, dict):
            raise ProbeUnavailable(f"the interpreter {ctx.python} gave a malformed answer")
    except ProbeUnavailable as exc:
        gone = Unavailable(unavailable=exc.reason)
        return SystemFacts(
            os=info.system,
            os_name=os_name,
            os_version=os_version,
            kernel=kernel or None,
            libc=_libc(info, _interp_child.python_info()["libc"]),  # same machine, same C library
            python_version=gone,
            python_implementation=gone,
            python_bits=gone,
            machine=gone,
            translated=gone if info.system == "Darwin" else None,
            container=detect_container() if is_linux else None,
            wsl=wsl_version(kernel or "") if is_linux else None,
            env_manager=gone,
        )

    if info.system != "Darwin":
        translated: Any = None
    elif here:
        translated = _translated_here()
    else:
        answer = report.get("translated") or {}
        translated = (
            answer["value"]
            if isinstance(answer.get("value"), bool)
            else Unavailable(unavailable=str(answer.get("error") or "the interpreter did not say"))
        )

    def field(key: str, kind: type) -> Any:
        value = python.get(key)
        if isinstance(value, kind) and not isinstance(value, bool):
            return value
        return Unavailable(unavailable=f"the interpreter did not report {key}")

    return SystemFacts(
        os=info.system,
        os_name=os_name,
        os_version=os_version,
        kernel=kernel or None,
        libc=_libc(info, python.get("libc")),
        python_version=field("version", str),
        python_implementation=field("implementation", str),
        python_bits=field("bits", int),
        machine=python.get("machine") or None,
        translated=translated,
        container=detect_container() if is_linux else None,
        wsl=wsl_version(kernel or "") if is_linux else None,
        env_manager=_env_manager(python),
    )
