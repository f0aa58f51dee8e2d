"""Fault matrix (issue 5): the real commands under injected faults.

Every test runs a real command: ``torchdoctor.cli.main([...])`` in-process (inside a thread
that must finish within a limit) when the fault can be injected through the machine seam
(``torchdoctor/probes/_sys.py``) or a module constant; a real ``python -m torchdoctor``
process (always with a timeout) when the fault lives in the process itself: its environment,
locale, terminal, signals. A ``torch`` child process is always real; fake ``torch`` packages
(``tests/data/fake_torch/``, ``tests/data/faults/fake_torch/``) put first on PYTHONPATH make
it fail the way a broken install does.

Each fault asserts what the README's "Fault matrix" promises: the command finishes, exits
with the documented code (0/1 when a probe fails, never 2; 2 for bad input or usage; 130 when
interrupted), says the cause in one line on stderr (or names it in the report for a probe
fault), prints no traceback, and leaves every file the user passed in byte-for-byte as it was.
Each test id is a row of the README table (checked by the last test).

Where the probe is not the point, facts come from a recorded ``torchdoctor probe`` of the
development container (``tests/data/faults/dev-container-cpu-probe.json``), and the torch probe
is replaced by that recording, so no test but the torch faults pays for a torch child.
"""

from __future__ import annotations

import ast
import io
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import pytest

from torchdoctor.cli import main
from torchdoctor.facts import SCHEMA_VERSION
from torchdoctor.importers import load_report
from torchdoctor.probes import _prestart, _sys, gpu, pytorch

from .probes.fakenvml import FakeNvml

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "faults"
FAKE_TORCH = REPO / "tests" / "data" / "fake_torch"
FAULT_TORCH = DATA / "fake_torch"
FACTS = DATA / "dev-container-cpu-probe.json"
CGROUP = DATA / "cgroup"
README = REPO / "README.md"

POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="POSIX process, signal or terminal behaviour")
LINUX_ONLY = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

# ----------------------------------------------------------------------------------------
# rows: every test is parametrized with row(...) so its id is a row of the README table
# ----------------------------------------------------------------------------------------

ROWS: list[str] = []


def row(fault_id: str, *values, marks=()):
    ROWS.append(fault_id)
    return pytest.param(*values, id=fault_id, marks=marks)


def one_row(fault_id: str, marks=()):
    """Parametrize a test that covers one fault under its row id."""
    return pytest.mark.parametrize("fault", [row(fault_id, fault_id, marks=marks)])


# ----------------------------------------------------------------------------------------
# running the commands
# ----------------------------------------------------------------------------------------


@dataclass
class Result:
    code: int
    out: str
    err: str
    seconds: float = 0.0

    @property
    def text(self) -> str:
        """stdout as a reader sees it: box borders dropped, whitespace (line wraps) collapsed."""
        return " ".join(re.sub(r"[│╭╮╰╯─┃┏┓┗┛━┡┩╇┳┻╋┼├┤└┘┌┐]", " ", self.out).split())


def cli(capsys, *args: str, limit: float = 60.0) -> Result:
    """Run ``torchdoctor ARGS`` in-process; fail if it does not finish within ``limit`` s."""
    box: dict = {}

    def target() -> None:
        try:
            box["code"] = main([str(a) for a in args])
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            box["exc"] = exc

    start = time.monotonic()
    worker = threading.Thread(target=target, name="torchdoctor-under-test", daemon=True)
    worker.start()
    worker.join(limit)
    assert not worker.is_alive(), f"torchdoctor {' '.join(args)} did not finish within {limit} s"
    out, err = capsys.readouterr()
    if "exc" in box:
        raise AssertionError(f"main() raised {box['exc']!r}; stderr: {err}") from box["exc"]
    return Result(box["code"], out, err, time.monotonic() - start)


def base_env(pythonpath: Iterable[Union[str, Path]] = ()) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join([*(str(p) for p in pythonpath), str(REPO)])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def proc(*args: str, env: Optional[dict] = None, limit: float = 60.0, stdin: bytes = b"",
         encoding: str = "utf-8") -> Result:
    """Run ``python -m torchdoctor ARGS`` as a real process; fail after ``limit`` s."""
    start = time.monotonic()
    p = subprocess.Popen(
        [sys.executable, "-m", "torchdoctor", *args],
        cwd=str(REPO),
        env=env if env is not None else base_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=(os.name == "posix"),
    )
    try:
        out, err = p.communicate(stdin, timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(p)
        pytest.fail(f"torchdoctor {' '.join(args)} did not finish within {limit} s")
    return Result(p.returncode, out.decode(encoding), err.decode(encoding, errors="replace"),
                  time.monotonic() - start)


def procs(*commands: list, **kwargs) -> list:
    """Several :func:`proc` runs at once (each a real process with its own limit)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=len(commands)) as pool:
        return list(pool.map(lambda args: proc(*args, **kwargs), commands))


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL) if os.name == "posix" else p.kill()
    except OSError:
        pass
    p.communicate()


# ----------------------------------------------------------------------------------------
# what every fault must (not) do
# ----------------------------------------------------------------------------------------


def no_traceback(r: Result) -> None:
    for stream in (r.out, r.err):
        assert "Traceback (most recent call last)" not in stream, stream
        assert "UnicodeEncodeError" not in stream and "UnicodeDecodeError" not in stream, stream


def error_line(r: Result, *words: str) -> str:
    """Exit 2, nothing on stdout, one line naming the cause on stderr (click's usage
    framing "Usage: ..." / "Try '... --help'" aside); returns that line."""
    no_traceback(r)
    assert r.code == 2, (r.code, r.err)
    assert r.out == "", r.out
    lines = [line for line in r.err.splitlines() if line.strip()]
    causes = [line for line in lines if not line.startswith(("Usage: ", "Try '"))]
    assert len(causes) == 1, r.err
    for word in words:
        assert word in causes[0], (word, causes[0])
    return causes[0]


def degraded(r: Result, *words: str, code: Optional[int] = None) -> None:
    """A probe fault: the report is out, the cause named in it, and the exit status exactly
    the one the report calls for (never 2): ``code`` where the fault decides it, else 1 if
    and only if the report shows an error (the other probes read this machine)."""
    no_traceback(r)
    assert r.code == report_exit_code(r), (r.code, r.err)
    if code is not None:
        assert r.code == code, (r.code, r.err)
    assert r.out.strip(), "no report"
    for word in words:
        assert word in r.text, (word, r.text)


def report_exit_code(r: Result) -> int:
    """The exit status of `--fail-on error` (the default) for the report in ``r.out``: 1 if it
    holds an error-level finding, else 0 (terminal, Markdown or JSON output)."""
    text = r.out.lstrip()
    if text.startswith("{"):
        return int(any(f["severity"] == "error" for f in json.loads(text)["findings"]))
    return int(bool(re.search(r"\bERROR \[[a-z0-9-]+\]", r.out)))


def snapshot(*paths: Union[str, Path]) -> dict:
    """Bytes of every file under ``paths`` (a file or a directory tree), by path."""
    files: dict = {}
    for p in map(Path, paths):
        for f in sorted(p.rglob("*")) if p.is_dir() else [p]:
            if f.is_file():
                files[str(f)] = f.read_bytes()
    return files


def leftovers(directory: Path) -> list:
    return sorted(p.name for p in directory.iterdir() if "torchdoctor" in p.name and p.name.endswith(".tmp"))


# ----------------------------------------------------------------------------------------
# fixtures
# ----------------------------------------------------------------------------------------


@pytest.fixture
def facts_file(tmp_path) -> Path:
    """A user's copy of the recorded facts (so that "unchanged" is checked on a user file)."""
    path = tmp_path / "facts.json"
    shutil.copyfile(FACTS, path)
    return path


@pytest.fixture
def recorded_torch(monkeypatch):
    """Real probes, except torch: its facts come from the recording (no torch child)."""
    facts = load_report(FACTS.read_bytes(), str(FACTS))
    monkeypatch.setattr(_prestart, "start", lambda python, timeout: None)
    monkeypatch.setattr(pytorch, "probe", lambda ctx: facts.torch)


@pytest.fixture
def fake_torch(monkeypatch):
    """Put a fake ``torch`` first on the PYTHONPATH the torch child inherits."""

    def use(folder: Path) -> None:
        monkeypatch.setenv("PYTHONPATH", str(folder))
        monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")

    return use


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory) -> str:
    """A real interpreter without torch: a fresh venv (about 0.2 s)."""
    venv = tmp_path_factory.mktemp("no-torch") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    exe = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    assert exe.exists()
    return str(exe)


def nvml(monkeypatch, fake) -> None:
    real = _sys.import_optional
    monkeypatch.setattr(_sys, "import_optional", lambda name: fake if name == "pynvml" else real(name))


def no_lscpu(monkeypatch) -> None:
    """lscpu absent, so /proc/cpuinfo is the only source of the CPU model."""
    real = _sys.run

    def run(argv, timeout=_sys.DEFAULT_TIMEOUT_S, env=None, input_text=None):
        if list(argv)[:1] == ["lscpu"]:
            return _sys.Completed(tuple(argv), None, "", "", error="lscpu: No such file or directory")
        return real(argv, timeout=timeout, env=env, input_text=input_text)

    monkeypatch.setattr(_sys, "run", run)


def files_served(monkeypatch, files: dict) -> None:
    """``_sys.read_text`` answers these paths (text, or an OSError to raise); others are real."""
    real = _sys.read_text

    def read_text(path, limit=_sys.MAX_READ_BYTES):
        for prefix, answer in files.items():
            if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
                if isinstance(answer, OSError):
                    raise answer
                return answer
        return real(path, limit)

    monkeypatch.setattr(_sys, "read_text", read_text)


# ========================================================================================
# 1. probe faults: torch
# ========================================================================================


@pytest.mark.parametrize(
    ("case", "words"),
    [
        row("torch-import-error-libcudnn", FAKE_TORCH / "missing_cudnn",
            ["torch import-error: ImportError: libcudnn.so.9: cannot open shared object file"]),
        row("torch-sigsegv", FAKE_TORCH / "segfault",
            ["torch crashed: SIGSEGV (segmentation fault in native code) while importing torch"]),
        row("torch-sigill", FAKE_TORCH / "sigill",
            [("torch crashed: SIGILL (illegal instruction: this torch build uses CPU instructions "
              "this CPU lacks) while importing torch")]),
    ],
)
def test_torch_child_fails(capsys, fake_torch, case, words):
    fake_torch(case)
    r = cli(capsys, "check")
    degraded(r, *words, code=1)
    r = cli(capsys, "check", "--format", "json")
    no_traceback(r)
    torch = json.loads(r.out)["facts"]["torch"]
    assert torch["import_status"] in ("import-error", "crashed")
    assert "\n" not in torch["import_error"]


@one_row("torch-hang")
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_torch_hang_times_out(capsys, fake_torch, fault):
    fake_torch(FAKE_TORCH / "hang")
    r = cli(capsys, "check", "--timeout", "3", limit=3 + 30)
    degraded(r, "torch timeout: timed out after 3 s while importing torch, stuck at", "_wait_for_driver",
             code=1)


@one_row("torch-absent")
def test_torch_not_installed(capsys, python_without_torch, fault):
    r = cli(capsys, "check", "--python", python_without_torch)
    degraded(r, "torch not-installed: ModuleNotFoundError: No module named 'torch'")


# ========================================================================================
# 2. probe faults: NVML, /proc, cgroup, /dev/shm (torch facts from the recording)
# ========================================================================================


@pytest.mark.parametrize(
    ("setup", "words"),
    [
        row("nvml-module-absent", None, "nvidia-ml-py (module pynvml) is not installed"),
        row("nvml-library-absent", {"init_error": 12}, "NVML library not found: no NVIDIA driver installed"),
        row("nvml-init-raises", {"init_error": 18},
            "NVML library and NVIDIA kernel driver versions differ (driver updated without a reboot?)"),
    ],
)
def test_nvml_unusable(capsys, monkeypatch, recorded_torch, setup, words):
    fake = FakeNvml.from_report("tesla-t4.xml", **setup) if setup is not None else None
    nvml(monkeypatch, fake)
    r = cli(capsys, "check")
    if setup == {"init_error": 12}:  # no NVML library = no NVIDIA driver: said as such, not "unknown"
        degraded(r, "GPU none found (no NVIDIA driver installed")
    else:
        degraded(r, f"GPU unknown ({words})")
    if fake is not None:
        assert fake.calls == ["nvmlInit"]


@one_row("nvml-hang")
def test_nvml_hang_is_abandoned(capsys, monkeypatch, recorded_torch, fault):
    fake = FakeNvml.from_report("tesla-t4.xml", hang="nvmlDeviceGetName")
    nvml(monkeypatch, fake)
    monkeypatch.setattr(gpu, "NVML_TIMEOUT_S", 0.5)
    try:
        r = cli(capsys, "check", limit=30)
        assert fake.hanging.is_set()
    finally:
        fake.release()
    degraded(r, "GPU unknown (NVML did not answer within 0.5 s)")


@LINUX_ONLY
@one_row("proc-and-cgroup-unreadable")
def test_proc_and_cgroup_files_unreadable(capsys, monkeypatch, recorded_torch, fault):
    denied = {
        path: PermissionError(13, "Permission denied", path)
        for path in ("/proc/cpuinfo", "/proc/self/cgroup", "/proc/self/mountinfo", "/sys/fs/cgroup/")
    }
    files_served(monkeypatch, denied)
    no_lscpu(monkeypatch)
    r = cli(capsys, "check")
    degraded(r, "CPU ? ·", "CPU model: cannot read /proc/cpuinfo: Permission denied")
    reason = "cannot read /proc/self cgroup information: Permission denied"
    report = json.loads(cli(capsys, "check", "--format", "json").out)
    assert report["facts"]["cpu"]["effective_cpus"] == {"unavailable": reason}
    assert report["facts"]["memory"]["cgroup_limit_bytes"] == {"unavailable": reason}
    skipped = {"id": "threads-exceed-cpu-quota", "needs": "cpu.effective_cpus", "reason": reason}
    assert skipped in report["skipped"]


@LINUX_ONLY
@one_row("proc-and-cgroup-garbage")
def test_proc_and_cgroup_files_garbage(capsys, monkeypatch, recorded_torch, fault):
    garbage = "\ufffd\x00\x7fELF\x02\x01 banana 100000 7\n"
    files_served(monkeypatch, {
        "/proc/cpuinfo": garbage * 50,
        # a cgroup v2 container (recorded), whose limit files hold garbage
        "/proc/self/cgroup": (CGROUP / "v2-docker-proc-self-cgroup.txt").read_text(),
        "/proc/self/mountinfo": (CGROUP / "v2-k8s-docker-pod-proc-self-mountinfo.txt").read_text(),
        "/sys/fs/cgroup/cpu.max": garbage,
        "/sys/fs/cgroup/memory.max": garbage,
    })
    no_lscpu(monkeypatch)
    r = cli(capsys, "check")
    degraded(r, "CPU ? ·", "CPU model: /proc/cpuinfo does not say and lscpu is not available")
    r = cli(capsys, "probe")
    no_traceback(r)
    facts = json.loads(r.out)
    assert facts["cpu"]["effective_cpus"]["unavailable"].startswith(
        "cannot use the limit in /sys/fs/cgroup: unexpected cpu.max ")
    assert facts["memory"]["cgroup_limit_bytes"]["unavailable"].startswith(
        "cannot use the limit in /sys/fs/cgroup: unexpected memory.max ")


@one_row("dev-shm-missing")
def test_dev_shm_missing(capsys, monkeypatch, recorded_torch, fault):
    real = _sys.statvfs

    def statvfs(path):
        if path == "/dev/shm":
            raise FileNotFoundError(2, "No such file or directory", path)
        return real(path)

    monkeypatch.setattr(_sys, "statvfs", statvfs)
    r = cli(capsys, "check")
    degraded(r, "/dev/shm none")
    r = cli(capsys, "recommend", "--task", "classification", "--format", "json")
    no_traceback(r)
    assert r.code == report_exit_code(r)
    assert json.loads(r.out)["facts"]["memory"]["shm_total_bytes"] is None


@one_row("data-file-broken-while-probing")
def test_broken_data_file_read_by_a_probe(capsys, monkeypatch, recorded_torch, broken_data, fault):
    path = broken_data("env_allowlist", lambda text: text + "\n  - prefix: [OOPS\n")
    r = cli(capsys, "check")
    degraded(r, "WARNING [probe-problem] env probe crashed: DataFileError:")
    r = cli(capsys, "check", "--format", "json")
    assert r.code == report_exit_code(r)
    problems = [f["message"] for f in json.loads(r.out)["findings"] if f["id"] == "probe-problem"]
    assert len(problems) == 1 and problems[0].startswith(f"env probe crashed: DataFileError: {path}:")


# ========================================================================================
# 3. --output: unwritable, existing, an input
# ========================================================================================


@one_row("output-under-a-file")
def test_output_below_a_regular_file(capsys, facts_file, tmp_path, fault):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory\n")
    before = snapshot(tmp_path)
    r = cli(capsys, "check", "--facts", facts_file, "--output", blocker / "child.md")
    error_line(r, f"--output {blocker / 'child.md'}: cannot write: Not a directory")
    assert snapshot(tmp_path) == before


@one_row("output-dir-missing")
def test_output_in_a_missing_directory(capsys, facts_file, tmp_path, fault):
    target = tmp_path / "no" / "such" / "dir" / "report.md"
    r = cli(capsys, "report", "--facts", facts_file, "-o", target)
    error_line(r, "cannot write: No such file or directory")
    assert not (tmp_path / "no").exists()


@one_row("output-is-a-directory")
def test_output_is_a_directory(capsys, facts_file, tmp_path, fault):
    before = snapshot(tmp_path)
    r = cli(capsys, "check", "--facts", facts_file, "--output", tmp_path)
    error_line(r, "Invalid value for '--output'", "is a directory")
    assert snapshot(tmp_path) == before


@one_row("output-existing-file-in-read-only-dir")
def test_existing_output_in_a_read_only_directory_is_kept(capsys, facts_file, tmp_path, fault):
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        directory = tmp_path / "ro"
        directory.mkdir()
        existing = directory / "report.md"
        existing.write_text("the report of last week\n")
        directory.chmod(0o555)
    elif Path("/proc/version").is_file():
        # root writes through permission bits: /proc refuses new files even to root
        existing = Path("/proc/version")
        directory = existing.parent
    else:  # pragma: no cover
        pytest.skip("no directory that refuses writes here")
    before = existing.read_bytes()
    try:
        r = cli(capsys, "check", "--facts", facts_file, "--output", existing)
    finally:
        if directory.parent == tmp_path:
            directory.chmod(0o755)
    error_line(r, f"--output {existing}: cannot write:")
    assert existing.read_bytes() == before
    assert leftovers(directory) == []


@pytest.mark.parametrize(
    ("command", "same"),
    [
        row("output-is-the-facts-file", ["check", "--facts", "{facts}"], "{facts}"),
        row("output-is-a-link-to-the-input", ["report", "--from-report", "{facts}"], "{link}"),
        row("output-is-the-workload-file",
            ["recommend", "--workload", "{workload}", "--facts", "{facts}", "--snippet"], "{workload}"),
        row("output-is-a-diff-input", ["diff", "{facts}", "{other}"], "{other}"),
    ],
)
def test_output_never_overwrites_an_input(capsys, tmp_path, facts_file, command, same):
    names = {
        "facts": facts_file,
        "link": tmp_path / "link.json",
        "workload": tmp_path / "workload.yaml",
        "other": tmp_path / "other.json",
    }
    names["link"].symlink_to(facts_file)
    names["workload"].write_text("task: detection\nprecision: bf16\n")
    shutil.copyfile(FACTS, names["other"])
    before = snapshot(tmp_path)
    args = [a.format(**names) for a in command] + ["--output", same.format(**names)]
    r = cli(capsys, *args)
    error_line(r, "is also an input file; refusing to overwrite it")
    assert snapshot(tmp_path) == before
    assert leftovers(tmp_path) == []


@POSIX_ONLY
@one_row("output-dev-null")
def test_output_onto_dev_null_writes_through_it(capsys, facts_file, tmp_path, fault):
    """As root, an atomic rename onto /dev/null used to put a regular file in its place."""
    before = os.stat("/dev/null")
    r = cli(capsys, "check", "--facts", facts_file, "--output", "/dev/null")
    no_traceback(r)
    assert r.code == 0 and r.out == "", r.err
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode), "/dev/null is no longer a character device"
    assert (after.st_ino, after.st_rdev, stat.S_IMODE(after.st_mode)) == (
        before.st_ino, before.st_rdev, stat.S_IMODE(before.st_mode))
    assert leftovers(Path("/dev")) == []


@POSIX_ONLY
@one_row("output-fifo-with-a-reader")
def test_output_onto_a_fifo_is_written_through_it(capsys, facts_file, tmp_path, fault):
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    received: dict = {}

    def reader() -> None:
        with open(fifo, "rb") as fh:
            received["data"] = fh.read()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    try:
        r = cli(capsys, "check", "--facts", facts_file, "--format", "json", "--output", fifo)
    finally:
        if t.is_alive() and not received:  # never leave the reader blocked in open()
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(10)
    no_traceback(r)
    assert r.code == 0, r.err
    assert json.loads(received["data"])["facts"]["origin"] == "json"
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert leftovers(tmp_path) == []


@POSIX_ONLY
@one_row("output-fifo-without-a-reader")
def test_output_onto_a_fifo_nobody_reads(capsys, monkeypatch, facts_file, tmp_path, fault):
    import torchdoctor.cli_io

    monkeypatch.setattr(torchdoctor.cli_io, "FIFO_WAIT_S", 0.2)
    fifo = tmp_path / "report.fifo"
    os.mkfifo(fifo)
    r = cli(capsys, "check", "--facts", facts_file, "--output", fifo, limit=30)
    error_line(r, f"--output {fifo}: a FIFO that nobody reads (waited 0.2 s for a reader)")
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert leftovers(tmp_path) == []


@POSIX_ONLY
@one_row("output-is-a-socket")
def test_output_onto_a_socket_is_refused(capsys, facts_file, tmp_path, fault):
    import socket

    path = tmp_path / "s.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
        r = cli(capsys, "check", "--facts", facts_file, "--output", path)
    error_line(r, f"--output {path}: is a socket; write the report to a file, a FIFO or stdout")
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    assert leftovers(tmp_path) == []


@POSIX_ONLY
@one_row("output-planted-symlink-at-the-old-temp-name")
def test_output_temp_file_is_not_a_planted_symlink(capsys, facts_file, tmp_path, fault):
    """The temporary file used to be `.NAME.torchdoctor-PID.tmp`, opened without O_EXCL and
    following symlinks: a link planted under that name made the report overwrite its target."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    out = tmp_path / "report.md"
    (tmp_path / f".report.md.torchdoctor-{os.getpid()}.tmp").symlink_to(victim)
    r = cli(capsys, "check", "--facts", facts_file, "--format", "markdown", "--output", out)
    no_traceback(r)
    assert r.code == 0, r.err
    assert victim.read_text() == "precious\n"
    assert out.read_text().startswith("#") and not out.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".report.md.torchdoctor-%d.tmp" % os.getpid(), "facts.json", "report.md", "victim.txt"])


@POSIX_ONLY
@one_row("output-keeps-the-file-mode")
def test_output_keeps_an_existing_files_mode(capsys, facts_file, tmp_path, fault):
    private = tmp_path / "private.md"
    private.write_text("old\n")
    private.chmod(0o600)
    r = cli(capsys, "check", "--facts", facts_file, "--output", private)
    assert r.code == 0, r.err
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600 and private.read_text() != "old\n"
    old_umask = os.umask(0o022)
    try:
        r = cli(capsys, "check", "--facts", facts_file, "--output", tmp_path / "new.md")
    finally:
        os.umask(old_umask)
    assert r.code == 0, r.err
    assert stat.S_IMODE(os.stat(tmp_path / "new.md").st_mode) == 0o644  # as open() would make it
    assert leftovers(tmp_path) == []


@POSIX_ONLY
@one_row("output-is-a-symlink-to-a-file")
def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(capsys, facts_file, tmp_path,
                                                                         fault):
    (tmp_path / "reports").mkdir()
    target = tmp_path / "reports" / "latest.md"
    target.write_text("last week\n")
    link = tmp_path / "report.md"
    link.symlink_to(Path("reports") / "latest.md")
    r = cli(capsys, "check", "--facts", facts_file, "--format", "markdown", "--output", link)
    assert r.code == 0, r.err
    assert link.is_symlink() and os.readlink(link) == os.path.join("reports", "latest.md")
    assert target.read_text().startswith("#")
    dangling = tmp_path / "dangling.md"
    dangling.symlink_to(tmp_path / "nowhere" / "x.md")
    r = cli(capsys, "check", "--facts", facts_file, "--output", dangling)
    error_line(r, f"--output {dangling}: a symbolic link to nothing; refusing to create its target")
    assert leftovers(tmp_path) == [] and leftovers(tmp_path / "reports") == []


@pytest.mark.parametrize(
    ("failure", "code", "words"),
    [
        row("output-write-fails-midway", OSError(28, "No space left on device"), 2,
            ["cannot write: No space left on device"]),
        row("output-interrupted-while-writing", KeyboardInterrupt(), 130, ["torchdoctor: interrupted"]),
    ],
)
def test_output_failure_leaves_no_temp_file(capsys, monkeypatch, facts_file, tmp_path, failure, code,
                                            words):
    import torchdoctor.cli_io

    previous = tmp_path / "report.md"
    previous.write_text("the report of last week\n")
    written: list = []

    def write_all(fd, data):
        os.write(fd, data[:100])  # a part is out, then the disk fills (or Ctrl-C)
        written.append(fd)
        raise failure

    monkeypatch.setattr(torchdoctor.cli_io, "_write_all", write_all)
    r = cli(capsys, "check", "--facts", facts_file, "--output", previous)
    no_traceback(r)
    assert written and r.code == code and r.out == ""
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1 and all(w in lines[0] for w in words), r.err
    assert previous.read_text() == "the report of last week\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["facts.json", "report.md"]


# ========================================================================================
# 4. malformed rule and data files
# ========================================================================================

VALID_RULE = DATA / "rules" / "valid" / "local" / "my-team-omp-threads-unset.yaml"


def test_the_valid_rule_loads(capsys, facts_file):
    """Control: the base the malformed variants below break is a valid rule."""
    r = cli(capsys, "check", "--facts", facts_file, "--rules", VALID_RULE.parent.parent, "--format", "json")
    no_traceback(r)
    assert r.code == 0
    assert "my-team-omp-threads-unset" in [f["id"] for f in json.loads(r.out)["findings"]]


@pytest.mark.parametrize(
    ("old", "new", "words"),
    [
        row("rules-broken-yaml", "severity: info", "severity: [info",
            [":3: invalid YAML: did not find expected ',' or ']'"]),
        row("rules-unknown-field", "precedence: speed", "precedence: speed\npriority: high",
            [":5: unknown field 'priority'"]),
        row("rules-bad-when", 'is None\n', 'is None and and\n',
            [":9: 'when' is not a valid expression: invalid syntax"]),
        row("rules-unknown-fact-path", 'env.variables.get("OMP_NUM_THREADS") is None',
            "torch.cuda_version is None", [":9: unknown fact 'torch.cuda_version'"]),
        row("rules-unknown-setting-key", "fix: |", "recommend:\n  torch.backends.cudnn.turbo: true\nfix: |",
            [":13: unknown setting key 'torch.backends.cudnn.turbo' (not in rules/settings.yaml)"]),
    ],
)
def test_malformed_rule_file(capsys, facts_file, tmp_path, old, new, words):
    text = VALID_RULE.read_text()
    assert text.count(old) == 1
    rule = tmp_path / "my-rules" / "local" / VALID_RULE.name
    rule.parent.mkdir(parents=True)
    rule.write_text(text.replace(old, new))
    before = snapshot(tmp_path)
    r = cli(capsys, "check", "--facts", facts_file, "--rules", tmp_path / "my-rules")
    error_line(r, str(rule), *words)
    assert snapshot(tmp_path) == before


@one_row("rules-dir-missing")
def test_rules_directory_missing(capsys, facts_file, tmp_path, fault):
    r = cli(capsys, "check", "--facts", facts_file, "--rules", tmp_path / "my-rules")
    error_line(r, f"{tmp_path / 'my-rules'}: no such rules directory")


@pytest.fixture
def broken_data(monkeypatch, tmp_path):
    """Point the reference tables at a copy of rules/data/ with one file changed."""
    from torchdoctor import tables
    from torchdoctor.paths import data_dir

    def clear() -> None:
        for obj in vars(tables).values():
            if callable(getattr(obj, "cache_clear", None)):
                obj.cache_clear()

    def use(name: str, change: Callable[[str], str]) -> Path:
        copy = tmp_path / "data"
        shutil.copytree(data_dir(), copy)
        path = copy / f"{name}.yaml"
        path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")
        clear()
        monkeypatch.setattr(tables, "data_dir", lambda: copy)
        return path

    yield use
    monkeypatch.undo()
    clear()


@pytest.mark.parametrize(
    ("change", "words"),
    [
        row("data-file-invalid-yaml",  # a flow list left open
            lambda t: t.replace('match: ["gb10", "dgx spark"]', 'match: ["gb10", "dgx spark"', 1),
            ["invalid YAML"]),
        row("data-file-wrong-value", lambda t: t.replace("cc: 12.1", "cc: twelve", 1),
            ["'cc' must be a number, got 'twelve'"]),
    ],
)
def test_malformed_data_file(capsys, broken_data, change, words):
    path = broken_data("gpu_models", change)
    r = cli(capsys, "recommend", "--task", "classification", "--gpu", "A100")
    line = error_line(r, f"{path}:", *words)
    assert re.search(re.escape(str(path)) + r":\d+: ", line), line


# ========================================================================================
# 5. workloads, tasks, GPUs
# ========================================================================================


@pytest.mark.parametrize(
    ("content", "words"),
    [
        row("workload-broken-yaml", "task: classification\nprecision: [bf16\n",
            [":3: invalid YAML: did not find expected ',' or ']'"]),
        row("workload-unknown-field", "task: classification\nbatch_size: 64\n",
            ["unknown field 'batch_size' (valid: task, input_shapes, precision"]),
        row("workload-wrong-value", "task: classification\nprecision: bf17\n",
            ["precision: Input should be 'auto', 'fp32', 'tf32', 'bf16', 'fp16' or 'fp8', got 'bf17'"]),
        row("workload-value-with-quotes-and-newline",
            'task: classification\nprecision: "bf16\\"\\nimport os; os.system(\\"echo pwned\\")  #"\n',
            ["precision: Input should be", "got 'bf16\"\\nimport os; os.system(\"echo pwned\")  #'"]),
        row("workload-task-with-newline", 'task: "classification\\nimport os"\n',
            ["unknown task 'classification\\nimport os' (did you mean classification?)"]),
        row("workload-not-a-mapping", "- classification\n- detection\n",
            ["expected a mapping of workload fields, got list"]),
        row("workload-seed-out-of-range", "task: classification\nseed: 4294967296\n",
            [":2: seed: must be an integer from 0 to 4294967295", "got 4294967296"]),
    ],
)
def test_malformed_workload_file(capsys, facts_file, tmp_path, content, words):
    workload = tmp_path / "workload.yaml"
    workload.write_text(content)
    before = snapshot(tmp_path)
    for extra in ([], ["--snippet"]):
        r = cli(capsys, "recommend", "--workload", workload, "--facts", facts_file, *extra)
        error_line(r, *words)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "words"),
    [
        row("unknown-task", ["--task", "clasification", "--facts", "{facts}"],
            ["unknown task 'clasification' (did you mean classification?); valid tasks: "]),
        row("unknown-gpu", ["--task", "classification", "--gpu", "Z9000"],
            ["--gpu 'Z9000': unknown GPU name"]),
        row("unknown-option-value", ["--task", "classification", "--precision", "fp7", "--facts", "{facts}"],
            ["command line: precision: Input should be", "got 'fp7'"]),
        row("gpu-name-with-code", ["--task", "classification", "--gpu", "A100;import os"],
            ["--gpu 'A100;import os': unknown GPU name"]),
        row("snippet-with-json-format", ["--task", "classification", "--facts", "{facts}", "--snippet", "--format", "json"],
            ["--snippet prints only the Python snippet"]),
    ],
)
def test_unknown_names(capsys, facts_file, args, words):
    r = cli(capsys, "recommend", *[a.format(facts=facts_file) for a in args])
    error_line(r, *words)


def _names(snippet: str) -> set:
    """What a snippet does: imports, names, attribute chains and called functions."""
    found = set()
    for node in ast.walk(ast.parse(snippet)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found |= {("import", a.name) for a in node.names}
        elif isinstance(node, ast.Name):
            found.add(("name", node.id))
        elif isinstance(node, ast.Attribute):
            found.add(("attr", ast.unparse(node)))
        elif isinstance(node, ast.Call):
            found.add(("call", ast.unparse(node.func)))
    return found


INJECTED = '2.13.0\nimport os; os.system("echo pwned")  #'


@pytest.mark.parametrize(
    "where",
    [
        row("snippet-torch-version-option-with-newline", "option"),
        row("snippet-facts-torch-version-with-newline", "facts"),
    ],
)
def test_snippet_renders_foreign_text_as_data(capsys, tmp_path, facts_file, where):
    """A value with quotes and a newline is rejected, or stays data: never a statement."""
    clean = cli(capsys, "recommend", "--task", "classification", "--facts", facts_file, "--snippet")
    assert clean.code == 0
    if where == "option":
        args = ["--facts", facts_file, "--torch-version", INJECTED]
    else:
        data = json.loads(facts_file.read_text())
        data["torch"]["version"] = INJECTED
        evil = tmp_path / "evil.json"
        evil.write_text(json.dumps(data))
        args = ["--facts", evil]
    r = cli(capsys, "recommend", "--task", "classification", "--snippet", *args)
    no_traceback(r)
    if r.code == 2:  # rejected: fine
        error_line(r)
        return
    assert r.code == 0
    assert _names(r.out) <= _names(clean.out), _names(r.out) - _names(clean.out)
    assert all(line.startswith("#") for line in r.out.splitlines()[:3])


# ========================================================================================
# 6. --from-report / --facts input
# ========================================================================================


@pytest.mark.parametrize(
    ("make", "words"),
    [
        row("from-report-broken-json", lambda p: p.write_text('{"schema_version": 1, "torch": {'),
            ["invalid JSON: Expecting"]),
        row("from-report-binary", lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 64),
            ["binary data (contains NUL bytes), not a text report"]),
        row("from-report-huge", lambda p: _sparse(p, 100 * 1024 * 1024),
            ["larger than 5 MiB; refusing to read it"]),
        row("from-report-wrong-schema", lambda p: p.write_text('{"schema_version": 99, "torch": {}}'),
            [f"schema_version 99 is not supported (this torchdoctor reads {SCHEMA_VERSION})"]),
        row("from-report-missing", lambda p: None, ["cannot read: No such file or directory"]),
        row("from-report-fifo-without-writer", lambda p: os.mkfifo(p),
            ["not a regular file (a FIFO); pipe it to stdin and pass '-' instead"],
            marks=POSIX_ONLY),
        row("from-report-dev-zero", lambda p: p.symlink_to("/dev/zero"),
            ["not a regular file (a character device); pipe it to stdin and pass '-' instead"],
            marks=POSIX_ONLY),
    ],
)
def test_unreadable_report(capsys, tmp_path, make, words):
    report = tmp_path / "issue.txt"
    make(report)
    before = snapshot(tmp_path)
    r = cli(capsys, "check", "--from-report", report, limit=30)
    error_line(r, f"{report}: ", *words)
    r = cli(capsys, "diff", FACTS, report, limit=30)
    error_line(r, f"{report}: ", *words)
    assert snapshot(tmp_path) == before


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as fh:
        fh.truncate(size)


@one_row("from-report-empty-stdin")
def test_empty_stdin(capsys, monkeypatch, fault):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    r = cli(capsys, "check", "--from-report", "-")
    error_line(r, "<stdin>: empty input")


# ========================================================================================
# 7. the process: environment, locale, terminal (real processes)
# ========================================================================================

MINIMAL_TORCH = [FAKE_TORCH / "minimal"]  # a torch child that answers at once: env is the point


def env_with_bytes(**values: bytes) -> dict:
    env = {k.encode(): v.encode() for k, v in base_env(MINIMAL_TORCH).items()}
    env.update({k.encode(): v for k, v in values.items()})
    return env


@POSIX_ONLY
@pytest.mark.parametrize(
    ("args", "check"),
    [
        row("env-not-utf8-terminal", ["check"], None),
        row("env-not-utf8-json", ["check", "--format", "json"],
            lambda out: json.loads(out)["facts"]["env"]["variables"]),
        row("env-not-utf8-markdown", ["report"], lambda out: out),
    ],
)
def test_environment_values_that_are_not_utf8(args, check):
    r = proc(*args, env=env_with_bytes(OMP_NUM_THREADS=b"\xff\xfe", TORCH_X=b"\xc3\x28 x"))
    no_traceback(r)
    assert r.code == (0 if args[0] == "report" else report_exit_code(r)), r.err  # report: always 0
    assert r.out.strip()
    if check is not None:
        shown = check(r.out)
        if isinstance(shown, dict):
            assert shown["OMP_NUM_THREADS"] == "\\xff\\xfe"
            assert shown["TORCH_X"] == "\\xc3( x"
        else:
            assert '`env.variables["OMP_NUM_THREADS"]` | `\\xff\\xfe`' in shown


@POSIX_ONLY
@pytest.mark.parametrize(
    "env_update",
    [
        row("locale-c-not-utf8", {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}),
        row("pythonioencoding-ascii", {"PYTHONIOENCODING": "ascii"}),
    ],
)
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_a_locale_without_utf8(facts_file, env_update):
    env = {k: v for k, v in base_env().items() if not k.startswith(("LC_", "LANG"))}
    env.update(env_update)
    f = str(facts_file)
    *reports, missing = procs(
        ["check", "--facts", f], ["report", "--facts", f],
        ["recommend", "--task", "classification", "--facts", f],
        ["check", "--facts", str(facts_file.parent / "nope-é.json")],
        env=env, encoding="ascii",
    )
    for r in reports:
        no_traceback(r)
        assert r.code == 0, r.err  # the recorded facts yield no error
        assert "torchdoctor" in r.out or "Environment" in r.out
    error_line(missing, "nope-", "cannot read: No such file or directory")


@one_row("piped-output")
def test_piped_output_has_no_colour_codes(facts_file, fault):
    f = str(facts_file)
    for r in procs(["check", "--facts", f], ["recommend", "--task", "detection", "--facts", f],
                   ["report", "--facts", f], ["diff", str(FACTS), f]):
        no_traceback(r)
        assert r.code == 0 and r.out.strip(), r.err  # the recorded facts: no error, no difference
        assert "\x1b[" not in r.out and "\x1b[" not in r.err


def on_a_terminal(args: list, env: dict, columns: Optional[int], limit: float = 60.0) -> Result:
    """Run torchdoctor with stdout on a pseudo-terminal of ``columns`` columns."""
    import fcntl
    import pty
    import select
    import struct
    import termios

    master, slave = pty.openpty()
    if columns is not None:
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    p = subprocess.Popen([sys.executable, "-m", "torchdoctor", *args], cwd=str(REPO), env=env,
                         stdin=subprocess.DEVNULL, stdout=slave, stderr=subprocess.PIPE,
                         start_new_session=True)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + limit
    try:
        while True:
            ready, _, _ = select.select([master], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                pytest.fail(f"torchdoctor {' '.join(args)} did not finish within {limit} s")
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the terminal's other side closed
                break
            if not data:
                break
            chunks.append(data)
        err = p.stderr.read()
        p.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(master)
        if p.poll() is None:
            _kill_group(p)
    return Result(p.returncode, b"".join(chunks).decode("utf-8"), err.decode("utf-8"))


@POSIX_ONLY
@one_row("no-color-on-a-terminal")
def test_no_color_on_a_terminal(facts_file, fault):
    args = ["check", "--facts", str(facts_file)]
    coloured = on_a_terminal(args, base_env(), columns=100)
    no_traceback(coloured)
    assert "\x1b[" in coloured.out  # control: a terminal gets colour
    plain = on_a_terminal(args, dict(base_env(), NO_COLOR="1"), columns=100)
    no_traceback(plain)
    assert plain.code == coloured.code and "torchdoctor check" in plain.out
    assert "\x1b[" not in plain.out


@POSIX_ONLY
@one_row("terminal-reporting-zero-columns")
def test_a_terminal_that_reports_zero_columns(facts_file, fault):
    for args in (["check", "--facts", str(facts_file)], ["diff", str(FACTS), str(facts_file)]):
        r = on_a_terminal(args, base_env(), columns=None)
        no_traceback(r)
        assert r.code == 0, r.err  # the recorded facts: no error, and no difference with a copy
        assert r.out.strip(), f"torchdoctor {args[0]} printed nothing on a 0-column terminal"


# ========================================================================================
# 8. interruption
# ========================================================================================


@one_row("ctrl-c-while-probing")
def test_ctrl_c_is_130(capsys, monkeypatch, tmp_path, fault):
    import torchdoctor.probes

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(_prestart, "start", lambda python, timeout: None)
    monkeypatch.setattr(torchdoctor.probes, "collect", interrupted)
    previous = tmp_path / "report.md"
    previous.write_text("the report of last week\n")
    r = cli(capsys, "check", "--output", previous)
    no_traceback(r)
    assert r.code == 130 and r.out == ""
    assert [line for line in r.err.splitlines() if line.strip()] == ["torchdoctor: interrupted"]
    assert previous.read_text() == "the report of last week\n"
    assert leftovers(tmp_path) == []


def _start_with_hanging_torch(tmp_path: Path, timeout: int, probing: bool = False):
    """Start `check` whose torch child hangs; return it once the child runs (and, with
    ``probing``, once torchdoctor waits on its probe threads) with the child's pid."""
    pidfile = tmp_path / "torch-child.pid"
    env = base_env([FAULT_TORCH / "hang_with_pidfile"])
    env["TORCHDOCTOR_FAULTS_PIDFILE"] = str(pidfile)
    p = subprocess.Popen([sys.executable, "-m", "torchdoctor", "check", "--timeout", str(timeout)],
                         cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not pidfile.exists():
        if p.poll() is not None or time.monotonic() > deadline:
            p.kill()
            pytest.fail("the torch child did not start")
        time.sleep(0.05)
    # threads: main + the torch-child thread + its 2 output readers, then 7 probe threads of
    # which the torch probe's stays (it waits for the hanging child): 5 = the probes have started
    # (a Ctrl-C during start-up imports is another fault; CPython 3.11 may then exit by SIGINT)
    while probing and len(os.listdir(f"/proc/{p.pid}/task")) < 5:
        if p.poll() is not None or time.monotonic() > deadline:
            p.kill()
            pytest.fail("the probes did not start")
        time.sleep(0.05)
    return p, int(pidfile.read_text())


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is gone
    except OSError:
        return False


def _reap(p: subprocess.Popen, child: int) -> None:
    """Whatever the test saw, leave neither torchdoctor nor its torch child running."""
    if p.poll() is None:
        p.kill()
        p.communicate()
    if _alive(child):
        os.kill(child, signal.SIGKILL)


def _wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@LINUX_ONLY
@one_row("ctrl-c-real-signal-while-torch-hangs")
def test_a_real_sigint_exits_promptly(tmp_path, fault):
    p, child = _start_with_hanging_torch(tmp_path, timeout=30, probing=True)
    try:
        p.send_signal(signal.SIGINT)
        try:
            # generous for a loaded CI machine, far below the child's 30 s
            _, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            pytest.fail("torchdoctor did not exit within 10 s of Ctrl-C (its torch child has --timeout 30)")
        assert _wait_gone(child, 3), f"the torch child {child} still runs after torchdoctor exited"
    finally:
        _reap(p, child)
    assert p.returncode == 130
    assert [line for line in err.decode().splitlines() if line.strip()] == ["torchdoctor: interrupted"]


def test_after_kill_all_no_child_is_started_until_a_new_run():
    """The race CI once hit: Ctrl-C lands before the torch probe thread took the early
    child, the CLI discards it, then the thread starts its own child and the exit waits
    for it. Once the run is over, ``_sys.run`` must refuse to start anything."""
    _sys.kill_all()
    try:
        done = _sys.run([sys.executable, "-c", "import time; time.sleep(30)"], timeout=60)
        assert done.returncode is None and not done.ok
        assert "not started" in done.error
    finally:
        _sys.reopen()
    assert _sys.run([sys.executable, "-c", "print('again')"], timeout=60).stdout.strip() == "again"


@one_row("ctrl-c-while-a-probe-thread-is-stuck")
def test_ctrl_c_does_not_wait_for_a_stuck_probe_thread(tmp_path, fault):
    """A probe thread that is still busy (a slow read, a wedged call) must not hold back
    the exit after Ctrl-C: probe threads are daemons."""
    script = tmp_path / "stuck.py"
    script.write_text(
        "import os, signal, sys, time\n"
        "from torchdoctor import cli\n"
        "from torchdoctor.probes import _prestart, pytorch\n"
        "_prestart.start = lambda python, timeout: None\n"
        "def stuck(ctx):\n"
        "    os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while this probe is busy\n"
        "    time.sleep(120)\n"
        "pytorch.probe = stuck\n"
        "sys.exit(cli.main(['check']))\n"
    )
    p = subprocess.Popen([sys.executable, str(script)], cwd=str(REPO), env=base_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        pytest.fail("the exit waited for a probe thread stuck for 120 s")
    no_traceback(Result(p.returncode, out.decode(), err.decode(), 0.0))
    assert p.returncode == 130 and out == b""
    assert [line for line in err.decode().splitlines() if line.strip()] == ["torchdoctor: interrupted"]


@LINUX_ONLY
@one_row("sigterm-leaves-no-torch-child")
def test_sigterm_leaves_no_torch_child_behind(tmp_path, fault):
    p, child = _start_with_hanging_torch(tmp_path, timeout=30)
    try:
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=10)
        assert _wait_gone(child, 3), f"the torch child {child} still runs after torchdoctor exited"
    finally:
        _reap(p, child)


# ========================================================================================
# 9. --timeout, children that outlive theirs, output floods, closed and full stdout
# ========================================================================================

SPAWNING_TORCH = FAULT_TORCH / "spawns_setsid"
FLOODING_TORCH = FAULT_TORCH / "prints_flood"


@pytest.mark.parametrize("value", ["inf", "nan", "1e9", "-1", "0", "86401", "1e400", "ten"])
@pytest.mark.parametrize("command", [
    row("timeout-out-of-range", ["check"]),
    ["probe"],
    ["recommend", "--task", "classification"],
    ["report"],
])
def test_timeout_must_be_finite_and_at_most_a_day(capsys, monkeypatch, command, value):
    """`--timeout inf` gave a traceback and left two torch children running: refused before
    any child is started (the torch child is the first thing a live run starts)."""
    started: list = []
    real = _sys.run

    def run(argv, *args, **kwargs):
        started.append(argv)
        return real(argv, *args, **kwargs)

    monkeypatch.setattr(_sys, "run", run)
    r = cli(capsys, *command, "--timeout", value)
    error_line(r, "Invalid value for '--timeout'", f"{value!r}: not a number of seconds from 1 to 86400")
    assert started == [] and _prestart._pending == {}


def marked_processes(marker: str) -> list:
    """Live processes (zombies are gone) that carry ``marker`` in their argv or environment."""
    found = []
    needle = marker.encode()
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                cmdline = fh.read()
            with open(f"/proc/{name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if (needle in cmdline or needle in environ) and _alive(int(name)):
            found.append(int(name))
    return found


@pytest.fixture
def marker(monkeypatch):
    """A mark every process a test starts inherits (TORCHDOCTOR_FAULTS_MARKER); whatever the
    test saw, none of them is left running afterwards."""
    import uuid

    value = f"torchdoctor-faults-{uuid.uuid4().hex}"
    monkeypatch.setenv("TORCHDOCTOR_FAULTS_MARKER", value)
    yield value
    for pid in marked_processes(value):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@LINUX_ONLY
@pytest.mark.parametrize(
    ("mode", "words", "status"),
    [
        row("torch-import-leaves-a-setsid-process-holding-the-output", "keep", [], "ok"),
        row("torch-import-leaves-a-quiet-setsid-daemon", "quiet", [], "ok"),
        row("torch-child-exits-while-its-child-holds-the-output", "keep-exit",
            ["the torch child exited with status 3 and printed no facts; a child process of torch "
             "kept the output open after the torch child exited"], "error"),
    ],
)
def test_no_process_started_by_the_torch_import_survives(capsys, monkeypatch, fake_torch, marker,
                                                          tmp_path, mode, words, status):
    """A torch import that forks a process calling setsid() (out of the child's process group
    and session): it used to survive torchdoctor, which waited the whole --timeout for the
    pipes it held and then said torch "timed out". It is found by the mark torchdoctor puts in
    every child's environment, and killed; what happened is said as it is."""
    pidfile = tmp_path / "escaped.pid"
    fake_torch(SPAWNING_TORCH)
    monkeypatch.setenv("TORCHDOCTOR_FAULTS_SPAWN", mode)
    monkeypatch.setenv("TORCHDOCTOR_FAULTS_PIDFILE", str(pidfile))
    r = cli(capsys, "check", "--format", "json", "--timeout", "120", limit=150)
    no_traceback(r)
    escaped = int(pidfile.read_text())  # control: the process did start
    assert _wait_gone(escaped, 5), f"the setsid() process {escaped} of the torch import survived"
    assert marked_processes(marker) == []
    torch = json.loads(r.out)["facts"]["torch"]
    assert torch["import_status"] == status, torch
    if status == "ok":
        assert torch["version"] == "0.4.1"
    for word in words:
        assert word in torch["import_error"], torch["import_error"]
    assert r.code == report_exit_code(r)


def _fake_python(tmp_path: Path) -> tuple:
    """An 'interpreter' for --python that never answers: a shell script that starts a child
    and waits; both write their process ids to a file once they run."""
    pids = tmp_path / "python.pids"
    script = tmp_path / "python"
    script.write_text(f"#!/bin/sh\necho $$ >> '{pids}'\nsleep 300 &\necho $! >> '{pids}'\nwait\n")
    script.chmod(0o755)
    return script, pids


@LINUX_ONLY
@pytest.mark.parametrize(
    ("sig", "code", "lines"),
    [
        row("sigterm-during-the-python-check", signal.SIGTERM, 143, []),
        row("sigint-during-the-python-check", signal.SIGINT, 130, ["torchdoctor: interrupted"]),
    ],
)
def test_a_signal_during_the_python_check_leaves_no_process(tmp_path, marker, sig, code, lines):
    """The --python check's interpreter and its child survived SIGTERM/SIGINT with parent 1:
    `_sys.run` dropped them from its list of live children before they were killed."""
    script, pids = _fake_python(tmp_path)
    env = base_env()
    env["TORCHDOCTOR_FAULTS_MARKER"] = marker
    p = subprocess.Popen([sys.executable, "-m", "torchdoctor", "check", "--python", str(script)],
                         cwd=str(REPO), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while len(pids.read_text().split()) < 2 if pids.exists() else True:
            if p.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the --python check did not start its interpreter: {p.communicate()}")
            time.sleep(0.05)
        started = [int(x) for x in pids.read_text().split()]
        p.send_signal(sig)
        out, err = p.communicate(timeout=30)
        assert all(_wait_gone(pid, 5) for pid in started), "the interpreter or its child survived"
        assert marked_processes(marker) == []
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == code and out == b""
    assert [line for line in err.decode().splitlines() if line.strip()] == lines


@one_row("torch-prints-250-mb")
def test_a_flood_of_output_from_torch_costs_a_megabyte(capsys, monkeypatch, fake_torch, fault):
    """A torch that prints 3 GB on stdout cost 9.9 GB: each stream is read with a cap, keeping
    its head and its tail. (The torch child sends what the import prints on stdout to stderr,
    so all 250 MiB arrive on stderr; stdout keeps the facts.)"""
    fake_torch(FLOODING_TORCH)
    results: list = []
    real = _sys.run

    def run(argv, *args, **kwargs):
        done = real(argv, *args, **kwargs)
        if pytorch.CHILD_SCRIPT in done.argv:
            results.append(done)
        return done

    monkeypatch.setattr(_sys, "run", run)
    r = cli(capsys, "check", "--format", "json", limit=120)
    no_traceback(r)
    assert json.loads(r.out)["facts"]["torch"]["version"] == "0.4.1"
    assert r.code == report_exit_code(r)
    (done,) = results
    cap = _sys.MAX_CAPTURE_BYTES
    assert done.stdout_dropped == 0 and '"import_status": "ok"' in done.stdout
    assert len(done.stderr.encode()) <= cap + 100
    assert done.stderr_dropped > (250 << 20) - cap
    assert f"[torchdoctor: {done.stderr_dropped} bytes of output dropped here]" in done.stderr
    head, tail = done.stderr.split(f"[torchdoctor: {done.stderr_dropped} bytes")
    assert "FLOOD-STDOUT-FIRST-LINE" in head and "FLOOD-STDERR-FIRST-LINE" in head
    assert "FLOOD-STDOUT-LAST-LINE" in tail and "FLOOD-STDERR-LAST-LINE" in tail


@POSIX_ONLY
@pytest.mark.parametrize("args", [
    row("stdout-closed", ["check", "--facts", str(FACTS)]),
    ["report", "--facts", str(FACTS)],
    ["rules", "list"],
    ["--help"],
    ["--version"],
])
def test_a_closed_stdout_exits_quietly(args):
    """`torchdoctor check | head -0`: the reader is gone (EPIPE). Like a Unix tool killed by
    SIGPIPE (the shell says 141), without a word: it used to say "internal error"."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        p = subprocess.run([sys.executable, "-m", "torchdoctor", *args], cwd=str(REPO), env=base_env(),
                           stdin=subprocess.DEVNULL, stdout=write_end, stderr=subprocess.PIPE,
                           timeout=60)
    finally:
        os.close(write_end)
    assert p.returncode == 141, p.stderr
    assert p.stderr == b""


@LINUX_ONLY
@pytest.mark.parametrize("args", [
    row("stdout-full", ["check", "--facts", str(FACTS)]),
    ["probe", "--schema"],
    ["rules", "list"],
    ["--help"],
])
def test_a_full_stdout_is_one_line(args):
    """`torchdoctor check > /dev/full` (ENOSPC): one line, exit 2, not "internal error"."""
    with open("/dev/full", "wb") as full:
        p = subprocess.run([sys.executable, "-m", "torchdoctor", *args], cwd=str(REPO), env=base_env(),
                           stdin=subprocess.DEVNULL, stdout=full, stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 2
    assert p.stderr.decode().splitlines() == [
        "torchdoctor: error: cannot write the report to stdout: No space left on device"]


GITHUB_TOKEN = "ghp_" + "Zq7LmN2xR8vT4kP1wY6sD3fH9jB5cV0aE2gU"


@pytest.mark.parametrize(("args", "shown"), [
    row("error-message-with-a-secret", ["check", "--facts", f"/nonexistent/{GITHUB_TOKEN}.json"],
        "torchdoctor: error: /nonexistent/<redacted>.json: cannot read: No such file or directory"),
    [["check", "--fail-on", f"token={GITHUB_TOKEN}"], "'token=<redacted>' is not one of"],
])
def test_secrets_in_error_messages_are_redacted(capsys, args, shown):
    r = cli(capsys, *args)
    error_line(r, shown)
    assert GITHUB_TOKEN not in r.err
    r = cli(capsys, *args, "--no-redact")
    assert GITHUB_TOKEN in r.err  # asked for


# ========================================================================================
# the README table lists exactly these faults
# ========================================================================================


# README rows whose test lives in another file: id -> "tests/FILE.py::test_name".
ROWS_ELSEWHERE: dict[str, str] = {
    "lint-binary-file": "tests/test_lint.py::test_hostile_input_is_a_finding_not_a_crash",
    "lint-nesting-5000-deep": "tests/test_lint.py::test_hostile_input_is_a_finding_not_a_crash",
    "lint-file-over-4mib": "tests/test_lint.py::test_hostile_input_is_a_finding_not_a_crash",
    "lint-symlink-loop": "tests/test_lint.py::test_folders_honour_gitignore_and_skip_symlink_loops",
    "lint-missing-path": "tests/test_lint.py::test_json_fields_and_exit_codes",
    "lint-torch-unimportable": "tests/test_lint.py::test_lint_runs_where_torch_does_not_import",
    "rules-message-runs-code": "tests/test_hardening_rules.py::test_a_rule_message_cannot_run_a_command",
    "rules-message-size-bomb": "tests/test_hardening_rules.py::test_a_rule_message_cannot_exhaust_memory_or_time",
    "workload-alias-bomb": "tests/test_hardening_rules.py::test_workload_aliases_are_refused_at_their_line",
    "workload-dev-zero": "tests/test_hardening_rules.py::test_workload_file_that_is_not_a_small_regular_file",
    "rules-file-fifo": "tests/test_hardening_rules.py::test_rule_file_that_is_hostile",
    "workload-seed-4000-hex-digits": "tests/test_hardening_rules.py::test_workload_numbers_and_types_are_one_line",
    "workload-task-list": "tests/test_hardening_rules.py::test_workload_numbers_and_types_are_one_line",
    "gpu-count-5000-digits": "tests/test_hardening_rules.py::test_gpu_option_bounds",
    "torch-version-5000-digits": "tests/test_hardening_rules.py::test_torch_version_past_the_int_limit_is_one_line",
    "redaction-1mb-adversarial": "tests/test_redaction.py::test_large_adversarial_text_is_redacted_correctly",
    "facts-lone-surrogate": "tests/test_importers.py::test_lone_surrogates_and_escapes_in_facts_json_reach_no_output",
    "facts-5000-digit-number": "tests/test_importers.py::test_implausible_numbers_in_facts_json_make_that_fact_unknown",
    "report-5000-digit-version": "tests/test_importers.py::test_a_5000_digit_number_in_a_report_field_makes_that_field_unknown",
    "report-terminal-escapes": "tests/test_importers.py::test_escapes_in_a_pasted_report_and_in_its_error_messages",
    "secret-in-free-text": "tests/test_redaction.py::test_each_secret_kind_is_redacted_in_text_report_and_facts",
    "env-secret-pass-pwd": "tests/test_redaction.py::test_secret_named_variables_from_the_environment",
    "ip-in-version-field": "tests/test_redaction.py::test_addresses_in_version_labelled_report_lines",
    "ticket-at-mention": "tests/test_ticket.py::test_mentions_from_the_facts_do_not_ping",
    "gpu-index-2-40": "tests/test_pipeline_fuzz.py::test_gpu_rows_with_indices_far_apart_render",
    "diff-path-with-markdown": "tests/test_pipeline_fuzz.py::test_diff_markdown_keeps_its_columns_whatever_a_path_holds",
    "torch-version-with-fence": "tests/test_pipeline_fuzz.py::test_recommend_markdown_heading_takes_the_torch_version_as_text",
    "diff-file-name-with-escapes": "tests/test_pipeline_fuzz.py::test_diff_names_are_shown_as_safe_text",
    "pipeline-fuzz": "tests/test_pipeline_fuzz.py::test_pipeline_survives_hostile_input",
    "dist-not-launched": "tests/test_distributed.py::test_without_a_launcher_one_line_says_what_to_run",
    "dist-rank-crashes": "tests/test_distributed.py::test_a_rank_that_crashes_is_named_and_the_job_ends",
    "dist-rank-hangs": "tests/test_distributed.py::test_a_rank_that_hangs_is_named_within_the_timeout",
    "dist-rank-no-torch": "tests/test_distributed.py::test_a_rank_that_cannot_import_torch_never_joins_and_says_why",
    "bench-child-crash": "tests/test_bench_run.py::test_a_child_that_crashes_or_hangs_is_reported_and_the_run_goes_on",
    "bench-child-hang": "tests/test_bench_run.py::test_a_child_that_crashes_or_hangs_is_reported_and_the_run_goes_on",
    "bench-measured-other-workload": "tests/test_bench.py::test_measured_refuses_another_workload_or_a_bad_file",
    "from-report-garbage": "tests/test_paste_shapes.py::test_check_from_report_reads_text_without_facts",
}


def test_readme_fault_matrix_has_one_row_per_fault():
    text = README.read_text(encoding="utf-8")
    section = text.split("## Fault matrix", 1)[1].split("\n## ", 1)[0]
    ids = re.findall(r"^\| `([a-z0-9-]+)` \|", section, re.MULTILINE)
    assert len(ids) == len(set(ids)), "duplicate rows"
    assert sorted(ids) == sorted(ROWS + list(ROWS_ELSEWHERE))
    assert len(ROWS) >= 20


def test_rows_elsewhere_name_real_tests():
    for fault_id, where in ROWS_ELSEWHERE.items():
        path, name = where.split("::")
        source = (README.parent / path).read_text(encoding="utf-8")
        assert re.search(rf"^def {name}\(", source, re.MULTILINE), (fault_id, where)
