"""``system`` facts of a collect_env report: the OS, kernel, machine, libc, Python, the
environment manager, and the CUDA toolkit and cuDNN found on the system."""

from __future__ import annotations

import re
from typing import Optional

from torchdoctor.facts import SystemFacts
from torchdoctor.importers.collect_env.common import (
    COULD_NOT_COLLECT,
    NOT_STATED,
    Value,
    _int,
    _leading_version,
    _model,
    _numeric_tokens,
    _python_tuple,
    _said,
    _special,
    _u,
    cudnn_versions,
)
from torchdoctor.importers.collect_env.context import _Ctx, _cudnn_text
from torchdoctor.importers.collect_env.pytorch import _is_running

# ---------------------------------------------------------------------------- system

_LINUX_WORDS = re.compile(
    r"\b(?:linux|ubuntu|debian|centos|red ?hat|rhel|fedora|arch|manjaro|suse|opensuse|sles|"
    r"amazon|rocky|almalinux|alma|oracle|pop!_os|mint|gentoo|alpine|elementary|kali|nixos|"
    r"void|slackware|raspbian|deepin|kylin|uos|anolis|openeuler|tencentos|alibaba|"
    r"clear linux|scientific|endeavouros|garuda|zorin|neon|mx|wsl)\b",
    re.I,
)
_MACHINES = {
    "x86_64",
    "amd64",
    "aarch64",
    "arm64",
    "i386",
    "i686",
    "x86",
    "ppc64le",
    "ppc64",
    "s390x",
    "armv7l",
    "armv6l",
    "riscv64",
    "loongarch64",
}
_MSC = re.compile(r"\[MSC v\.\d{1,9} (\d{1,3}) bit \((\w{1,40})\)\]")


def _python_version(raw: Optional[str]) -> Optional[str]:
    if raw is None or _special(raw) is not None:
        return None
    value = raw.strip()
    if value[:6].lower() == "python":  # hand-edited "Python 3.8.5"
        value = value[6:].strip()
    return _leading_version(value)


def _os_family(f: dict[str, str]) -> Optional[str]:
    plat = f.get("python_platform", "")
    if plat.startswith("Linux-"):
        return "Linux"
    if plat.startswith("Windows-"):
        return "Windows"
    if plat.startswith(("macOS-", "Darwin-")):
        return "Darwin"
    os_line = f.get("os", "")
    low = os_line.lower()
    if "windows" in low:
        return "Windows"
    if low.startswith(("macos", "mac osx", "mac os x", "os x", "darwin")):
        return "Darwin"
    if os_line and _special(os_line) is None and _LINUX_WORDS.search(os_line):
        return "Linux"
    libc = f.get("libc_version", "").lower()
    if libc.startswith(("glibc", "musl")):
        return "Linux"
    return None


def _split_os_line(os_line: str) -> tuple[str, Optional[str], Optional[str]]:
    """(name, machine, windows version) from "Ubuntu 20.04 LTS (x86_64)",
    "macOS 13.4 (arm64)", "Microsoft Windows 11 Pro (10.0.22631 64-bit)"."""
    name = os_line.strip()
    machine = win_version = None
    if name.endswith(")") and " (" in name:
        head, _, last = name[:-1].rpartition(" (")
        if last.lower() in _MACHINES:
            name, machine = head.strip(), last
        elif "windows" in head.lower() and ("bit" in last or re.match(r"\d+\.\d+\.\d+ ", last)):
            # "(10.0.22631 64-bit)", or localised: "(10.0.26100 64 位)" (pytorch#157775)
            name, win_version = head.strip(), last.split()[0]
    return name, machine, win_version


def _platform_parts(plat: str) -> tuple[Optional[str], Optional[str], Optional[str]]:
    """(kernel or OS release, machine, libc) from platform.platform()."""
    if not plat or _special(plat) is not None:
        return None, None, None
    head, _, libc_part = plat.partition("-with-")
    libc = None
    if libc_part.startswith("glibc"):
        libc = "glibc " + libc_part[5:].split("-", 1)[0]
    system, _, rest = head.partition("-")
    if system in ("Linux", "Darwin"):
        release, _, machine = rest.rpartition("-")
        if machine.lower() not in _MACHINES:
            # Darwin/macOS add processor and bits: Darwin-19.6.0-x86_64-i386-64bit
            bits = rest.split("-")
            machines = [b for b in bits if b.lower() in _MACHINES]
            if machines:
                machine = machines[0]
                release = rest[: rest.index(machine) - 1] if rest.index(machine) else ""
            else:
                machine, release = None, rest
        return release or None, machine, libc
    if system == "macOS":
        bits = rest.split("-")
        machine = bits[1] if len(bits) > 1 and bits[1].lower() in _MACHINES else None
        return bits[0] or None, machine, libc
    if system == "Windows":
        bits = rest.split("-")
        return (bits[1] if len(bits) > 1 else None), None, libc
    return None, None, libc


def _system_facts(ctx: _Ctx) -> Value:
    f = ctx.fields
    keys = ("os", "python_version", "python_platform", "libc_version")
    if not any(k in f for k in keys) and ctx.os_family is None:
        return _u(NOT_STATED)
    values: dict[str, Value] = {}
    family = ctx.os_family
    os_line = f.get("os")
    plat = f.get("python_platform", "")
    release, plat_machine, plat_libc = _platform_parts(plat)

    if family:
        values["os"] = family
    elif os_line and _special(os_line) is None:
        values["os"] = _u(f"OS not recognised: {os_line.strip()[:80]!r}")
    elif os_line:
        values["os"] = _u(COULD_NOT_COLLECT if _special(os_line) == "cnc" else _said(os_line))

    os_machine = None
    if os_line is not None:
        if _special(os_line) is not None:
            values["os_name"] = _u(
                COULD_NOT_COLLECT if _special(os_line) == "cnc" else _said(os_line)
            )
        else:
            name, os_machine, win_version = _split_os_line(os_line)
            values["os_name"] = name
            version = None
            if family == "Windows":
                version = win_version or release
            elif family == "Darwin" and plat.startswith("macOS-"):
                # the OS line wins: an x86_64 Python under Rosetta sees the compatibility
                # version 10.16 in its platform string ("macOS 15.3 (x86_64)" vs macOS-10.16)
                numbers = _numeric_tokens(name)
                version = numbers[0] if numbers else release
            if version is None:
                numbers = _numeric_tokens(name)
                version = numbers[0] if numbers else None
            values["os_version"] = (
                version if version else _u("the report states no OS version number")
            )
    elif family == "Windows" and release:
        values["os_version"] = release

    if family == "Linux" and plat.startswith("Linux-") and release:
        values["kernel"] = release
        low = release.lower()
        values["wsl"] = 2 if "wsl2" in low else (1 if low.endswith("-microsoft") else None)
    elif family == "Darwin" and plat.startswith("Darwin-") and release:
        values["kernel"] = release
    if family in ("Windows", "Darwin"):
        values["wsl"] = None

    # libc: platform.libc_ver() read the interpreter binary before Python 3.8
    py = _python_tuple(ctx.python_version) or (
        (_int(ctx.python_version), 0)
        if _int(ctx.python_version) is not None
        else None
    )
    libc_raw = f.get("libc_version")
    libc_line_usable = (
        libc_raw is not None and _special(libc_raw) is None and py is not None and py >= (3, 8)
    )
    if family in ("Windows", "Darwin"):
        values["libc"] = None
    elif libc_line_usable:
        # Python >= 3.8 answers libc_ver() from the running C library (confstr); the platform
        # string's "-with-glibcX" comes from libc_ver(sys.executable) on Python 3.8/3.9, a scan
        # of the interpreter binary that gives the newest glibc symbol it links (a conda Python
        # built for CentOS 7 says glibc2.17 on a glibc 2.30 system), so the Libc line wins.
        lib, _, ver = libc_raw.strip().partition("-")
        values["libc"] = f"{lib} {ver}".strip()
    elif plat_libc and py is not None and (3, 8) <= py < (3, 10):
        values["libc"] = _u(
            f"the report's platform string ({plat_libc}) comes from libc_ver(sys.executable) "
            "under Python 3.8/3.9, which reads the interpreter binary, not the C library"
        )
    elif plat_libc:
        values["libc"] = plat_libc
    elif libc_raw is not None:
        if _special(libc_raw) in ("na", "none"):
            values["libc"] = None if family not in (None, "Linux") else _u(_said(libc_raw))
        elif _special(libc_raw) == "cnc":
            values["libc"] = _u(COULD_NOT_COLLECT)
        elif py is not None and py >= (3, 8):
            lib, _, ver = libc_raw.strip().partition("-")
            values["libc"] = f"{lib} {ver}".strip()
        elif py is not None:
            values["libc"] = _u(
                f"the report's libc ({libc_raw.strip()[:40]}) comes from platform.libc_ver() "
                "under Python < 3.8, which reads the interpreter binary, not the C library"
            )
        else:
            values["libc"] = _u(
                f"the report's libc ({libc_raw.strip()[:40]}) is reliable only under "
                "Python >= 3.8, and the report does not state the Python version"
            )

    raw_py = f.get("python_version")
    if raw_py is not None:
        if ctx.python_version:
            values["python_version"] = ctx.python_version
        else:
            values["python_version"] = _u(_said(raw_py))
        m = re.search(r"\((\d{2})-bit runtime\)", raw_py)
        msc = _MSC.search(raw_py)
        if m:
            values["python_bits"] = int(m.group(1))
        elif msc:
            values["python_bits"] = int(msc.group(1))
        if "[PyPy" in raw_py:
            values["python_implementation"] = "PyPy"
        elif re.search(r"\[(?:GCC|Clang|MSC)\b", raw_py):
            values["python_implementation"] = "CPython"
    else:
        msc = None

    machine = os_machine or plat_machine or (msc.group(2) if msc else None)
    if machine:
        values["machine"] = machine
    if family in ("Linux", "Windows"):
        values["translated"] = None
    elif family == "Darwin" and machine:
        brand = _cpu_brand(ctx)
        if machine.lower() == "arm64":
            values["translated"] = False
        elif brand is not None:
            values["translated"] = brand.startswith(("Apple", "VirtualApple"))

    values["env_manager"] = _env_manager(ctx, raw_py)
    values["cuda_toolkit_version"] = _toolkit(ctx)
    values["cudnn_version"] = _system_cudnn(ctx)
    return _model(SystemFacts, NOT_STATED, **values)


def _cpu_brand(ctx: _Ctx) -> Optional[str]:
    for line in ctx.scan.cpu_lines:
        s = line.strip()
        if s:
            return s if ":" not in s and "=" not in s else None
    return None


def _env_manager(ctx: _Ctx, raw_py: Optional[str]) -> Value:
    if raw_py and re.search(r"conda|Anaconda|Continuum Analytics", raw_py):
        return "conda"
    if not ctx.conda_other_env and any(_is_running(ctx, row) for row in ctx.conda):
        return "conda"  # the imported torch is in the active conda environment
    return _u(NOT_STATED)


def _toolkit(ctx: _Ctx) -> Value:
    raw = ctx.fields.get("cuda_runtime_version")
    if raw is None:
        return _u(NOT_STATED)
    kind = _special(raw)
    if kind == "nocuda":
        return None
    if kind == "cnc":
        return _u(COULD_NOT_COLLECT)
    version = _leading_version(raw)
    return version if version else _u(_said(raw))


def _system_cudnn(ctx: _Ctx) -> Value:
    raw = ctx.fields.get("cudnn_version")
    if raw is None:
        return _u(NOT_STATED)
    kind = _special(raw)
    if kind == "cnc":
        return _u(COULD_NOT_COLLECT)
    if kind == "nocuda":
        return _u("report says: No CUDA (collect_env does not list cuDNN then)")
    if kind is not None and kind != "empty":
        return _u(_said(raw))
    found = cudnn_versions(_cudnn_text(ctx))
    return found[0] if found else _u(_said(_cudnn_text(ctx).strip() or raw))
