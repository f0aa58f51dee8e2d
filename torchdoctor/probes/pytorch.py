"""The torch probe: what the target interpreter's torch is and what it can use.

torch is read in a child process of the target interpreter (``_torch_child.py``), so a
torch that fails to import, hangs or kills its process (missing libcudnn, SIGILL on an old
CPU, a segfault in a driver) becomes a fact about the environment instead of our crash.
The same reading code runs in-process for ``torchdoctor.audit()`` (:func:`facts_in_process`).
"""

from __future__ import annotations

import json
import re
import signal
import sys
from typing import Any, Optional

from torchdoctor.model import ValidationError

from torchdoctor.facts import TorchFacts, Unavailable
from torchdoctor.probes import ProbeContext, ProbeUnavailable, _sys

from torchdoctor.probes._prestart import CHILD_SCRIPT, child_argv, take

__all__ = ["CHILD_SCRIPT", "probe", "facts_in_process", "facts_from_completed"]

_STATUS_FIELDS = (
    "python_executable",
    "import_status",
    "import_error",
    "missing_library",
    "missing_symbol",
    "signal",
)

# Read by the child even when `import torch` fails (from /proc/self/maps): which copies of
# torch's libraries were loaded, and from where (a shadowing libnvJitLink explains the failure).
_KEPT_ON_FAILURE = ("wheel_library_dirs", "loaded_libraries")

# What a signal means when it kills `import torch`; shown to the user as the reason.
_SIGNAL_MEANING = {
    "SIGILL": "illegal instruction: this torch build uses CPU instructions this CPU lacks",
    "SIGSEGV": "segmentation fault in native code",
    "SIGBUS": "bus error in native code (a truncated library file or a full /dev/shm)",
    "SIGABRT": "aborted by native code (a failed assertion or an uncaught C++ exception)",
    "SIGFPE": "arithmetic fault in native code",
    "SIGKILL": "killed (often by the out-of-memory killer)",
}

# Windows reports a crash as an NTSTATUS exit code rather than a signal.
_WINDOWS_CRASHES = {
    0xC000001D: "SIGILL",  # STATUS_ILLEGAL_INSTRUCTION
    0xC0000005: "SIGSEGV",  # STATUS_ACCESS_VIOLATION
    0xC0000409: "SIGABRT",  # STATUS_STACK_BUFFER_OVERRUN (fail-fast, abort)
}

# A POSIX shell wrapper (pyenv shim, conda run) reports a child killed by signal N as 128+N.
_SHELL_SIGNALS = {132: "SIGILL", 134: "SIGABRT", 135: "SIGBUS", 136: "SIGFPE", 139: "SIGSEGV"}

_PHASES = {
    "import": "while importing torch",
    "cuda": "while initialising CUDA (torch itself imported)",
    "read": "while reading torch settings (torch itself imported)",
    "done": "after reading torch facts",
}

_PHASE_RE = re.compile(r"^" + re.escape("torchdoctor-child: phase=") + r"(\w+)\s*$", re.MULTILINE)
_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>.+?)\s*$')


# --------------------------------------------------------------------------------------
# public
# --------------------------------------------------------------------------------------


def probe(ctx: ProbeContext) -> TorchFacts:
    """Read torch facts with ``ctx.python`` in a child process (about one ``import torch``)."""
    done = take(ctx.python, ctx.timeout)  # started early by the CLI, if it was
    if done is None:
        done = _sys.run(child_argv(ctx.python, ctx.timeout), timeout=ctx.timeout)
    return facts_from_completed(done, python=ctx.python, timeout=ctx.timeout)


def facts_in_process() -> TorchFacts:
    """Torch facts of the torch already imported in this process (for ``audit()``).

    Reads current flag values exactly as the user's script left them. CUDA devices are read
    only when CUDA is already initialised here (initialising it would break fork-based
    DataLoader workers). Never imports torch: an import that crashes would take the user's
    process with it, so ``ProbeUnavailable`` is raised when torch is not imported yet.
    """
    torch = sys.modules.get("torch")
    if torch is None:
        raise ProbeUnavailable(
            "torch is not imported in this process (use probe() to read it in a child)"
        )
    from torchdoctor.probes import _torch_child

    python = _sys.python_executable()  # absolute and normalised, as the child reports it
    data: dict[str, Any] = {"python_executable": python}
    failure = _torch_child.namespace_failure(torch)
    if failure is not None:
        data.update(failure)
        return _failed(data, _reason_for(data, python))
    from torchdoctor.settings import load_registry

    # the settings are read back through the registry's getters (the child, run as a script,
    # reads the same getters from the shipped rules/settings.yaml itself)
    getters = load_registry().getters()
    data.update(_torch_child.read_facts(torch, init_cuda=False, getters=getters))
    return _validate(data, python)


def facts_from_completed(
    done: _sys.Completed, python: str, timeout: Optional[float] = None
) -> TorchFacts:
    """Classify what the child left behind: JSON facts, a timeout, a crash or garbage."""
    if done.error is not None and done.returncode is None:
        raise ProbeUnavailable(f"cannot run the Python interpreter {python}: {done.error}")
    data = _json_from(done.stdout)
    if data is not None:  # the facts are out, even if the child then hung or crashed at exit
        data.setdefault("python_executable", python)
        status = data.get("import_status")
        if status == "ok":
            return _validate(data, python)
        if status in ("not-installed", "import-error", "error"):
            return _failed(data, _reason_for(data, python))
    location = _stack_location(done.stderr)
    phase = _last_phase(done.stderr)
    if done.timed_out:
        seconds = f"{timeout:g} s" if timeout is not None else "the timeout"
        where = _PHASES.get(phase or "import", "while importing torch")
        text = f"timed out after {seconds} {where}"
        if location:
            text += f", stuck at {location}"
        data = {"python_executable": python, "import_status": "timeout", "import_error": text}
        return _failed(data, f"torch facts unavailable: {text}")
    sig = _crash_signal(done.returncode)
    if sig is not None:
        meaning = _SIGNAL_MEANING.get(sig, "killed by a signal")
        where = _PHASES.get(phase or "import", "while importing torch")
        text = f"{sig} ({meaning}) {where}"
        if location:
            text += f", at {location}"
        if done.held_open:
            text += "; a child process of torch kept the output open"
        data = {
            "python_executable": python,
            "import_status": "crashed",
            "import_error": text,
            "signal": sig,
        }
        return _failed(data, f"torch crashed: {text}")
    line = _last_error_line(done.stderr) or _last_error_line(done.stdout)
    text = line or f"the torch child exited with status {done.returncode} and printed no facts"
    if line and line.startswith("SyntaxError") and "_torch_child.py" in done.stderr:
        text = f"{python} is too old to run torchdoctor's torch reader (Python >= 3.8): {line}"
    if done.held_open:
        # the child is gone; what kept the pipes open was a process it started (now killed)
        text += "; a child process of torch kept the output open after the torch child exited"
    data = {"python_executable": python, "import_status": "error", "import_error": text}
    return _failed(data, f"torch facts unavailable: {text}")


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


def _json_from(stdout: str) -> Optional[dict]:
    """The facts object: the last stdout line that is a JSON object with import_status."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and "import_status" in value:
            return value
    return None


def _reason_for(data: dict, python: str) -> str:
    status = data.get("import_status")
    error = data.get("import_error") or "unknown error"
    if status == "not-installed":
        return f"torch is not installed for {python}"
    if status == "import-error":
        return f"torch failed to import: {error}"
    return f"torch facts unavailable: {error}"


def _failed(data: dict, reason: str) -> TorchFacts:
    """TorchFacts for a torch that could not be read: status fields set, the rest Unavailable."""
    values: dict[str, Any] = {
        name: Unavailable(unavailable=reason) for name in TorchFacts.model_fields
    }
    for name in _STATUS_FIELDS:
        values[name] = data.get(name)
    for name in _KEPT_ON_FAILURE:  # what a failed import had loaded explains the failure
        if name in data:
            values[name] = data[name]
    return _validate(values, str(data.get("python_executable") or sys.executable))


def _validate(data: dict, python: str) -> TorchFacts:
    """TorchFacts from the child's data; a field with an unexpected value becomes Unavailable."""
    data = dict(data)
    if not data.get("python_executable"):
        data["python_executable"] = python
    for _ in range(3):
        try:
            return TorchFacts.model_validate(data)
        except ValidationError as exc:
            for err in exc.errors():
                if not err.get("loc"):
                    continue
                name = str(err["loc"][0])
                if err.get("type") == "extra_forbidden":
                    data.pop(name, None)
                else:
                    data[name] = Unavailable(
                        unavailable=f"torch reported an unexpected value for {name}"
                    )
    raise ProbeUnavailable("torch facts from the child could not be understood")


def _crash_signal(returncode: Optional[int]) -> Optional[str]:
    if returncode is None:
        return None
    if returncode < 0:
        try:
            return signal.Signals(-returncode).name
        except ValueError:
            return f"signal {-returncode}"
    if returncode in _WINDOWS_CRASHES:
        return _WINDOWS_CRASHES[returncode]
    return _SHELL_SIGNALS.get(returncode)


def _last_phase(stderr: str) -> Optional[str]:
    phases = _PHASE_RE.findall(stderr)
    return phases[-1] if phases else None


def _stack_location(stderr: str) -> Optional[str]:
    """Innermost Python frame of a faulthandler dump (crash or hang), e.g. torch/cuda/__init__.py:372 in _lazy_init."""
    lines = stderr.splitlines()
    trigger = 0
    for i, line in enumerate(lines):
        if line.startswith(("Fatal Python error", "Timeout (")):
            trigger = i
    headers = [i for i in range(trigger, len(lines)) if "(most recent call first)" in lines[i]]
    if not headers:
        return None
    current = [i for i in headers if lines[i].startswith("Current thread")]
    start = (current or headers)[0]
    for line in lines[start + 1 :]:
        m = _FRAME_RE.match(line)
        if m is None:
            if line.strip():
                continue
            break
        path = m.group("file")
        if path.startswith("<frozen"):
            continue
        return f"{_short_path(path)}:{m.group('line')} in {m.group('func')}"
    return None


def _short_path(path: str) -> str:
    norm = path.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in norm:
            return norm.split(marker, 1)[1]
    return norm


def _last_error_line(text: str) -> Optional[str]:
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line and not _PHASE_RE.match(line):
            return line
    return None
