"""The one seam between torchdoctor and the machine.

Every probe reads the machine only through these functions, so tests replay recorded
outputs by monkeypatching them (``monkeypatch.setattr(_sys, "read_text", fake)``).
Nothing here judges; nothing here raises for an expected absence except ``OSError`` from
file reads, which probes turn into facts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
import threading
from typing import Mapping, Optional, Sequence

DEFAULT_TIMEOUT_S = 10.0
_live: "set[subprocess.Popen]" = set()
_live_lock = threading.Lock()
_closed = False
"""Set by :func:`kill_all`: a probe thread still running after Ctrl-C (or the end of a run)
must not start a child that nobody will wait for. :func:`reopen` starts a new run."""
MAX_READ_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class Completed:
    """What a finished (or killed) command left behind."""

    argv: tuple[str, ...]
    returncode: Optional[int]
    """Exit status; negative = killed by that signal (POSIX); None when it never ran."""
    stdout: str
    stderr: str
    timed_out: bool = False
    error: Optional[str] = None
    """Why the command could not run at all (not found, permission denied)."""

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.error is None

    @property
    def signal_name(self) -> Optional[str]:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None


def run(
    argv: Sequence[str],
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Optional[Mapping[str, str]] = None,
    input_text: Optional[str] = None,
) -> Completed:
    """Run a command with a hard timeout; never raises for the command's own failure.

    On timeout the whole process group is killed, so a hanging grandchild cannot keep a
    pipe open and stall us.
    """
    argv = tuple(str(a) for a in argv)
    kwargs: dict = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    if _closed:
        return Completed(argv, None, "", "", error=f"{argv[0]}: not started, torchdoctor is exiting")
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env) if env is not None else None,
            **kwargs,
        )
    except OSError as exc:
        return Completed(argv, None, "", "", error=f"{argv[0]}: {exc.strerror or exc}")
    with _live_lock:
        _live.add(proc)
        late = _closed  # kill_all() ran while Popen did: this child must not live either
    if late:
        _kill_tree(proc)
    try:
        return _communicate(proc, argv, timeout, input_text)
    finally:
        with _live_lock:
            _live.discard(proc)


def kill_all() -> None:
    """Kill every child still running and refuse new ones (Ctrl-C, SIGTERM, or the end of a
    CLI run): no child outlives us, and a probe thread that is still going cannot start one."""
    global _closed
    with _live_lock:
        _closed = True
        procs = list(_live)
    for proc in procs:
        if proc.poll() is None:
            _kill_tree(proc)


def reopen() -> None:
    """Allow children again: a new run starts (the CLI's main, or a library call)."""
    global _closed
    with _live_lock:
        _closed = False


def _communicate(proc: subprocess.Popen, argv: tuple, timeout: float,
                 input_text: Optional[str]) -> Completed:
    try:
        out, err = proc.communicate(input=input_text.encode() if input_text else None, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_tree(proc)
        try:
            out, err = proc.communicate(timeout=2)
        except (subprocess.TimeoutExpired, ValueError):
            out, err = b"", b""
        return Completed(argv, proc.returncode, _dec(out), _dec(err), timed_out=True)
    return Completed(argv, proc.returncode, _dec(out), _dec(err))


def _kill_tree(proc: subprocess.Popen) -> None:
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:
            proc.kill()
    except (OSError, ProcessLookupError):
        try:
            proc.kill()
        except OSError:
            pass


def _dec(data: Optional[bytes]) -> str:
    return (data or b"").decode("utf-8", errors="replace")


def read_text(path: str, limit: int = MAX_READ_BYTES) -> str:
    """Read a (small) text file; raises OSError when absent or unreadable."""
    with open(path, "rb") as fh:
        return fh.read(limit).decode("utf-8", errors="replace")


def exists(path: str) -> bool:
    return os.path.exists(path)


def listdir(path: str) -> list[str]:
    """Entries of a directory; raises OSError."""
    return sorted(os.listdir(path))


def getenv(name: str) -> Optional[str]:
    """One environment variable's value. Callers pass allow-listed names only."""
    value = os.environ.get(name)
    return value


def environ_names() -> list[str]:
    """Names (never values) of the environment variables set."""
    return sorted(os.environ.keys())


def python_executable() -> str:
    return sys.executable


def import_optional(name: str):
    """Import a module by name, or return None when it cannot be imported."""
    import importlib

    try:
        return importlib.import_module(name)
    except Exception:  # noqa: BLE001 - any import failure means "not usable here"
        return None


# --- cpu / memory probes -------------------------------------------------------------


def platform_system() -> str:
    """Linux | Windows | Darwin | ... (platform.system())."""
    import platform

    return platform.system()


def platform_machine() -> str:
    """Machine architecture: x86_64, AMD64, aarch64, arm64, ppc64le ... (platform.machine())."""
    import platform

    return platform.machine()


def cpu_count() -> Optional[int]:
    """Logical CPUs of the machine (os.cpu_count()); None when undeterminable."""
    return os.cpu_count()


def sched_getaffinity() -> Optional[list[int]]:
    """CPUs this process may run on, or None where the OS has no sched_getaffinity."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is None:
        return None
    return sorted(getaffinity(0))


def statvfs(path: str) -> os.statvfs_result:
    """File system statistics of ``path``; raises OSError (FileNotFoundError when absent)."""
    return os.statvfs(path)


def getauxval(kind: int) -> Optional[int]:
    """getauxval(3) from the C library (Linux glibc/musl); None where unavailable."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        fn = libc.getauxval
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_ulong
    fn.argtypes = [ctypes.c_ulong]
    return int(fn(kind))
