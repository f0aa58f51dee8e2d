"""One timed run of a command, for the benchmarks: wall and CPU seconds of the child alone.

The child is reaped by a blocking ``os.wait4`` (which also gives its own rusage), and a killer thread bounds it.
``subprocess.run(..., timeout=...)`` with no pipes waits by polling with sleeps that double up to 50 ms, which
rounded every wall time up to the next poll (0.064 s, 0.164 s, 0.515 s, whatever the command did)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:  # it ended as the timer fired
        pass


def timed(cmd: list[str], env: dict | None = None, timeout: float = 120, cwd: str | None = None) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds (user + system), exit code) of one run; output discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd,
                            start_new_session=True)
    # past the timeout the child's whole process group goes (nothing it started outlives the run)
    killer = threading.Timer(timeout, _kill_group, (proc.pid,))
    killer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        killer.cancel()
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode
