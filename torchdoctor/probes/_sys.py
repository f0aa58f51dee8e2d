"""The one seam between torchdoctor and the machine.

Every probe reads the machine only through these functions, so tests replay recorded
outputs by monkeypatching them (``monkeypatch.setattr(_sys, "read_text", fake)``).
Nothing here judges; nothing here raises for an expected absence except ``OSError`` from
file reads, which probes turn into facts.
"""

from __future__ import annotations

import collections
import itertools
import math
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

DEFAULT_TIMEOUT_S = 10.0
MAX_TIMEOUT_S = 86400.0
"""The longest any child may be given (a day): longer, infinite or NaN timeouts are bugs."""
_live: "set[subprocess.Popen]" = set()
_live_lock = threading.Lock()
_closed = False
"""Set by :func:`kill_all`: a probe thread still running after Ctrl-C (or the end of a run)
must not start a child that nobody will wait for. :func:`reopen` starts a new run."""
MAX_READ_BYTES = 4 * 1024 * 1024
MAX_CAPTURE_BYTES = 1024 * 1024
"""The most of one output stream (stdout or stderr) of a child that is kept: its first and
last halves; what lies between is dropped (and counted), so a child that prints gigabytes
costs a megabyte."""
HELD_OPEN_GRACE_S = 0.5
"""How long a command's output may stay open after the command itself exited, before the
processes it left behind (that hold the pipes) are killed."""
CHILD_MARKER = "TORCHDOCTOR_CHILD_OF"
"""An environment variable set in every child: its value names this process and the child,
so that descendants which left the child's session (``setsid()``) are still found and killed."""
_READ_CHUNK = 64 * 1024
_token_prefix: Optional[str] = None
_counter = itertools.count(1)


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
    held_open: bool = False
    """The command exited but a process it started kept its stdout/stderr open (and was
    killed): not a timeout of the command itself."""
    stdout_dropped: int = 0
    """Bytes of stdout dropped from the middle (over :data:`MAX_CAPTURE_BYTES`)."""
    stderr_dropped: int = 0

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


def check_timeout(timeout: float) -> float:
    """``timeout`` as a float if it is a positive finite number of seconds, at most a day;
    else ValueError (``inf`` and ``nan`` would never fire, or break the clock arithmetic)."""
    try:
        value = float(timeout)
    except (TypeError, ValueError, OverflowError):
        raise ValueError(f"timeout must be a number of seconds, got {type(timeout).__name__}") from None
    if not math.isfinite(value) or value <= 0 or value > MAX_TIMEOUT_S:
        raise ValueError(f"timeout must be a positive number of seconds up to {MAX_TIMEOUT_S:g}, "
                         f"got {value!r}")
    return value


def run(
    argv: Sequence[str],
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Optional[Mapping[str, str]] = None,
    input_text: Optional[str] = None,
) -> Completed:
    """Run a command with a hard timeout; never raises for the command's own failure.

    The command runs in its own session and process group; when it ends (finished, timed
    out, or abandoned because we are exiting) the group is killed, and so is every process
    that carries its marker in the environment (descendants that escaped with ``setsid()``),
    so no process it started outlives it. Each output stream is read with a cap
    (:data:`MAX_CAPTURE_BYTES`, head and tail kept).
    """
    argv = tuple(str(a) for a in argv)
    timeout = check_timeout(timeout)
    kwargs: dict = {}
    if os.name == "posix":
        kwargs["start_new_session"] = True
    if _closed:
        return Completed(argv, None, "", "", error=f"{argv[0]}: not started, torchdoctor is exiting")
    token = _child_token()
    child_env = dict(os.environ if env is None else env)
    child_env[CHILD_MARKER] = token
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env,
            **kwargs,
        )
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in argv or env
        return Completed(argv, None, "", "", error=f"{argv[0]}: {getattr(exc, 'strerror', None) or exc}")
    proc._torchdoctor_token = token  # type: ignore[attr-defined]
    with _live_lock:
        _live.add(proc)
        late = _closed  # kill_all() ran while Popen did: this child must not live either
    if late:
        _kill_tree(proc)
    finished = False
    try:
        result = _communicate(proc, argv, timeout, input_text)
        finished = True
        return result
    finally:
        if not finished:
            # SIGTERM's SystemExit or Ctrl-C while waiting: the child goes before we forget it
            _kill_tree(proc)
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
        if proc.returncode is None:
            _kill_tree(proc)
    if _token_prefix is not None:
        _sweep(_token_prefix + ".")  # anything any child of this process left behind


def reopen() -> None:
    """Allow children again: a new run starts (the CLI's main, or a library call)."""
    global _closed
    with _live_lock:
        _closed = False


class _Capture:
    """One output stream of a child, capped: the first and the last ``limit / 2`` bytes."""

    def __init__(self, limit: int = MAX_CAPTURE_BYTES):
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail: "collections.deque[bytes]" = collections.deque()
        self.tail_size = 0
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail.append(chunk)
            self.tail_size += len(chunk)
            while self.tail and self.tail_size - len(self.tail[0]) >= self.half:
                self.tail_size -= len(self.tail.popleft())

    def result(self) -> tuple[str, int]:
        """(the text kept, the number of bytes dropped from its middle)."""
        tail = b"".join(self.tail)[-self.half:] if self.tail else b""
        dropped = self.total - len(self.head) - len(tail)
        if not dropped:
            return _dec(bytes(self.head) + tail), 0
        note = f"\n[torchdoctor: {dropped} bytes of output dropped here]\n"
        return _dec(bytes(self.head)) + note + _dec(tail), dropped


def _drain(fd: int, capture: _Capture) -> None:
    while True:
        try:
            chunk = os.read(fd, _READ_CHUNK)
        except InterruptedError:  # pragma: no cover - PEP 475 retries; kept for old kernels
            continue
        except OSError:
            return
        if not chunk:
            return
        capture.feed(chunk)


def _feed_stdin(stream, data: bytes) -> None:
    try:
        stream.write(data)
    except OSError:  # the child exited without reading (EPIPE)
        pass
    finally:
        try:
            stream.close()
        except OSError:
            pass


def _communicate(proc: subprocess.Popen, argv: tuple, timeout: float,
                 input_text: Optional[str]) -> Completed:
    captures = (_Capture(), _Capture())
    readers = []
    for stream, capture in zip((proc.stdout, proc.stderr), captures):
        t = threading.Thread(target=_drain, args=(stream.fileno(), capture), daemon=True,
                             name="torchdoctor-child-output")
        t.start()
        readers.append(t)
    if proc.stdin is not None:
        threading.Thread(target=_feed_stdin, args=(proc.stdin, (input_text or "").encode()),
                         daemon=True, name="torchdoctor-child-input").start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_tree(proc)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (uninterruptible I/O)
            pass
    held_open = False
    if not timed_out:
        grace = time.monotonic() + HELD_OPEN_GRACE_S
        for t in readers:
            t.join(max(0.0, grace - time.monotonic()))
        held_open = any(t.is_alive() for t in readers)
    # whatever the command left behind (its group, and what escaped it) goes with it
    _kill_tree(proc, leader_gone=True)
    deadline = time.monotonic() + 2.0
    for t in readers:
        t.join(max(0.0, deadline - time.monotonic()))
    if not any(t.is_alive() for t in readers):
        for stream in (proc.stdout, proc.stderr):
            try:
                stream.close()
            except OSError:  # pragma: no cover
                pass
    # else a holder we could not kill keeps a pipe: leave the reader (a daemon) and its fd
    (out, out_dropped), (err, err_dropped) = (c.result() for c in captures)
    return Completed(argv, proc.returncode, out, err, timed_out=timed_out,
                     held_open=held_open and not timed_out,
                     stdout_dropped=out_dropped, stderr_dropped=err_dropped)


def _kill_tree(proc: subprocess.Popen, leader_gone: bool = False) -> None:
    """Kill the child's process group, then every process carrying the child's marker."""
    if os.name == "posix":
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:  # ESRCH: nobody left in the group; EPERM: a member changed uid
            pass
    if not leader_gone:
        try:
            proc.kill()
        except OSError:
            pass
    token = getattr(proc, "_torchdoctor_token", None)
    if token:
        _sweep(token, exact=True)


def _child_token() -> str:
    global _token_prefix
    if _token_prefix is None or not _token_prefix.startswith(f"{os.getpid()}."):
        import secrets

        _token_prefix = f"{os.getpid()}.{secrets.token_hex(6)}"  # a fork gets its own
    return f"{_token_prefix}.{next(_counter)}"


def _sweep(token: str, exact: bool = False) -> int:
    """SIGKILL every process (but this one) whose environment holds ``CHILD_MARKER=token``
    (``exact``) or a value starting with ``token``; returns how many. Linux reads
    /proc/PID/environ (only our own processes are readable, unless we are root); other
    systems ask psutil when it is installed; elsewhere only the process group is killed."""
    needle = f"{CHILD_MARKER}={token}".encode() + (b"\0" if exact else b"")
    me = os.getpid()
    killed = 0
    if os.path.isdir("/proc/self"):
        try:
            names = os.listdir("/proc")
        except OSError:
            return 0
        for name in names:
            if not name.isdigit() or int(name) == me:
                continue
            try:
                with open(f"/proc/{name}/environ", "rb") as fh:
                    env = fh.read()
            except OSError:
                continue
            if _has_marker(env, needle):
                killed += _kill_pid(int(name))
        return killed
    if os.name != "posix":
        return 0
    try:  # pragma: no cover - macOS, BSD
        import psutil
    except ImportError:  # pragma: no cover
        return 0
    for p in psutil.process_iter():  # pragma: no cover
        if p.pid == me:
            continue
        try:
            value = p.environ().get(CHILD_MARKER, "")
        except (psutil.Error, OSError):
            continue
        if value == token if exact else value.startswith(token):
            killed += _kill_pid(p.pid)
    return killed


def _has_marker(env: bytes, needle: bytes) -> bool:
    at = env.find(needle)
    while at != -1:
        if at == 0 or env[at - 1:at] == b"\0":
            return True
        at = env.find(needle, at + 1)
    return False


def _kill_pid(pid: int) -> int:
    try:
        os.kill(pid, signal.SIGKILL)
        return 1
    except OSError:
        return 0


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
    """This interpreter as an absolute, normalised path (``sys.executable`` keeps the ``..``
    of a launch like ``../.venv/bin/python``, and may even be relative in an odd embedding).
    Symlinks are kept: a venv's python is one, and resolving it would leave the venv."""
    exe = sys.executable
    return os.path.abspath(exe) if exe else exe


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
