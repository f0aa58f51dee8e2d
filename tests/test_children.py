"""Child processes (`torchdoctor/probes/_sys.py`, the one seam that starts them): every child
has a valid deadline, its output is read with a cap, and nothing it started outlives it,
whether it ends, times out, or we stop waiting (Ctrl-C, SIGTERM). Real processes throughout.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from torchdoctor.probes import _sys

LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _alive(pid)


@pytest.fixture
def pidfile(tmp_path):
    """Where a test's grandchild writes its process id, and a mark for the argv of what the test
    starts: whatever happened, every process with the mark is killed after the test."""
    path = tmp_path / "grandchild.pid"
    mark = uuid.uuid4().hex
    yield path, mark
    if os.path.isdir("/proc"):
        for pid in [int(p) for p in os.listdir("/proc") if p.isdigit() and _argv_has(int(p), mark)]:
            os.kill(pid, signal.SIGKILL)


def _spawn(pidfile, mark, *, setsid: bool, close_output: bool, then: str = "") -> str:
    """Python code that starts a grandchild sleeping 300 s (its pid in ``pidfile``, ``mark`` in
    its argv), optionally in a new session and without our output, then runs ``then``."""
    return (
        "import os, sys\n"
        "r, w = os.pipe()\n"
        "if os.fork() == 0:\n"
        f"    if {setsid}: os.setsid()\n"
        f"    if {close_output}:\n"
        "        n = os.open(os.devnull, os.O_RDWR)\n"
        "        [os.dup2(n, fd) for fd in (0, 1, 2)]\n"
        f"    open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "    os.write(w, b'x')\n"
        f"    os.execv(sys.executable, [sys.executable, '-c', 'import time; time.sleep(300)', {mark!r}])\n"
        "os.read(r, 1)\n"
        f"{then}\n"
    )


def test_each_output_stream_is_capped_keeping_head_and_tail():
    code = (
        "import os\n"
        "block = b'x' * (1 << 20)\n"
        "os.write(1, b'OUT-HEAD\\n'); os.write(2, b'ERR-HEAD\\n')\n"
        "[os.write(1, block) for _ in range(200)]\n"
        "[os.write(2, block) for _ in range(50)]\n"
        "os.write(1, b'\\nOUT-TAIL\\n'); os.write(2, b'\\nERR-TAIL\\n')\n"
    )
    done = _sys.run([sys.executable, "-c", code], timeout=120)
    assert done.ok, done.stderr[-500:]
    half = _sys.MAX_CAPTURE_BYTES // 2
    for text, dropped, total, name in ((done.stdout, done.stdout_dropped, 200, "OUT"),
                                       (done.stderr, done.stderr_dropped, 50, "ERR")):
        written = len(f"{name}-HEAD\n") + (total << 20) + len(f"\n{name}-TAIL\n")
        assert dropped == written - 2 * half  # exactly what was not kept
        head, tail = text.split(f"\n[torchdoctor: {dropped} bytes of output dropped here]\n")
        assert len(head) == half and len(tail) == half
        assert head.startswith(f"{name}-HEAD\n") and tail.endswith(f"\n{name}-TAIL\n")


def test_small_output_is_kept_whole():
    done = _sys.run([sys.executable, "-c", "import sys; print('a' * 1000); print('b', file=sys.stderr)"])
    assert (done.stdout, done.stderr) == ("a" * 1000 + "\n", "b\n")
    assert done.stdout_dropped == done.stderr_dropped == 0 and not done.held_open


@pytest.mark.parametrize("timeout", [float("inf"), float("nan"), 0, -1, 1e9, 86401])
def test_a_timeout_that_cannot_work_starts_nothing(monkeypatch, timeout):
    started: list = []
    monkeypatch.setattr(subprocess, "Popen", lambda *a, **k: started.append(a))
    with pytest.raises(ValueError, match="timeout must be a positive number of seconds up to 86400"):
        _sys.run([sys.executable, "-c", "pass"], timeout=timeout)
    assert started == []


@LINUX_ONLY
def test_a_process_left_in_the_group_is_killed_when_the_command_ends(pidfile):
    """A background process of the command that closed its output (so nothing waited for it)
    used to outlive the run; the command's process group is killed when it ends."""
    path, mark = pidfile
    done = _sys.run([sys.executable, "-c", _spawn(path, mark, setsid=False, close_output=True,
                                                  then="print('done')")], timeout=60)
    assert done.ok and done.stdout == "done\n" and not done.held_open
    assert _gone(int(path.read_text()))


@LINUX_ONLY
@pytest.mark.parametrize("close_output", [False, True], ids=["holding-the-output", "quiet"])
def test_a_setsid_process_is_found_by_its_mark_and_killed(pidfile, close_output):
    """A process that left the command's session (setsid) is outside its process group; it
    carries the mark of the command in its environment and is killed by it. Holding the
    output, it is what kept the pipes open (not a timeout of the command)."""
    path, mark = pidfile
    done = _sys.run([sys.executable, "-c", _spawn(path, mark, setsid=True, close_output=close_output,
                                                  then="print('done'); raise SystemExit(3)")],
                    timeout=120)
    assert done.returncode == 3 and done.stdout == "done\n" and not done.timed_out
    assert done.held_open is (not close_output)
    assert _gone(int(path.read_text()))


@LINUX_ONLY
def test_giving_up_on_a_child_kills_it_and_what_it_started(monkeypatch, pidfile):
    """SIGTERM's SystemExit or Ctrl-C while waiting on a child: `run` used to drop the child
    from its list of live children before `kill_all` ran, so both survived with parent 1."""
    path, mark = pidfile
    real = _sys._communicate

    def interrupted(proc, argv, timeout, input_text):
        deadline = time.monotonic() + 60
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        raise KeyboardInterrupt

    monkeypatch.setattr(_sys, "_communicate", interrupted)
    code = _spawn(path, mark, setsid=False, close_output=True, then="import time; time.sleep(300)")
    with pytest.raises(KeyboardInterrupt):
        _sys.run([sys.executable, "-c", code, mark], timeout=300)
    monkeypatch.setattr(_sys, "_communicate", real)
    assert _gone(int(path.read_text()))
    child = [int(p) for p in os.listdir("/proc") if p.isdigit() and _argv_has(int(p), mark)]
    assert child == [] or all(_gone(pid) for pid in child)
    assert _sys._live == set()


def _argv_has(pid: int, mark: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return mark.encode() in fh.read() and _alive(pid)
    except OSError:
        return False


def test_the_target_interpreter_is_recorded_absolute_and_normalised(monkeypatch, tmp_path):
    """`../.venv/bin/python -m ...` leaves `..` in sys.executable (CPython joins a relative
    argv[0] to the working directory without normalising it), while the torch child, started
    with that absolute path, reports it normalised: both paths now say the same."""
    bin_dir = os.path.dirname(sys.executable)
    spelled = os.path.join(bin_dir, "..", os.path.basename(bin_dir), os.path.basename(sys.executable))
    monkeypatch.setattr(sys, "executable", spelled)
    assert _sys.python_executable() == os.path.normpath(spelled)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "executable", "python3")  # an odd embedding: relative
    assert _sys.python_executable() == str(tmp_path / "python3")
