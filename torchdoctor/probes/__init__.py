"""Probes observe the machine and return typed facts; they never judge.

Each probe module exposes ``probe(ctx: ProbeContext) -> <Namespace>Facts``. An expected
absence is raised as :class:`ProbeUnavailable` (the namespace becomes ``Unavailable``);
any other exception is also turned into ``Unavailable`` plus a line in ``Facts.problems``,
so a broken probe degrades the report and never kills it. ``--debug`` re-raises.

All probes run concurrently: the torch child process (about one ``import torch``) sets
the wall time, and the other probes finish while it imports.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional, Sequence


if TYPE_CHECKING:  # the models are imported lazily: the torch child starts before pydantic
    from concurrent.futures import Future

    from torchdoctor.facts import Facts

# logging, threading and concurrent.futures are imported where the probes run: the paste reader imports
# the torch child's parsers from this package (``_child_parse``) and needs none of them

DEFAULT_TORCH_TIMEOUT_S = 60.0


class ProbeUnavailable(Exception):
    """Raised by a probe when its whole namespace cannot be determined (expected)."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class ProbeContext:
    python: str = field(default_factory=lambda: sys.executable)
    """Target interpreter (torch and packages are read with it)."""
    timeout: float = DEFAULT_TORCH_TIMEOUT_S
    """Timeout of the torch child process, seconds."""
    debug: bool = False
    """Re-raise probe crashes instead of degrading."""

    @property
    def is_self(self) -> bool:
        import os

        # A venv's python is a symlink to the base interpreter but sees other packages, so
        # compare the paths as given (absolute, symlinks NOT resolved).
        return os.path.abspath(self.python) == os.path.abspath(sys.executable)


# namespace -> module implementing probe(ctx). The torch probe comes first: it is the slow
# one, so it is submitted first.
PROBE_MODULES: dict[str, str] = {
    "torch": "torchdoctor.probes.pytorch",
    "gpu": "torchdoctor.probes.gpu",
    "cpu": "torchdoctor.probes.cpu",
    "memory": "torchdoctor.probes.memory",
    "env": "torchdoctor.probes.env",
    "packages": "torchdoctor.probes.packages",
    "system": "torchdoctor.probes.system",
}


def run_one(name: str, ctx: ProbeContext):
    """One namespace's probe: what :func:`collect` runs for each (a caller's ``runner`` may
    answer some namespaces itself and delegate the others here)."""
    module = importlib.import_module(PROBE_MODULES[name])
    return module.probe(ctx)


def python_executable() -> str:
    """The interpreter probed when none is named: this one."""
    from torchdoctor.probes import _sys

    return _sys.python_executable()


def run_command(argv: Sequence[str], timeout: float):
    """Run a command through the one seam to the machine (bounded output, a timeout, killed
    with the run) for a new run: the seam is reopened first. Returns ``_sys.Completed``."""
    from torchdoctor.probes import _sys

    _sys.reopen()
    return _sys.run(list(argv), timeout=timeout)


def start_torch_child(python: str, timeout: float) -> None:
    """Start the torch child now, so that the caller's own imports overlap its ``import
    torch`` (:mod:`torchdoctor.probes._prestart`; the torch probe takes it over)."""
    from torchdoctor.probes import _prestart

    _prestart.start(python, timeout)


def collect(
    ctx: Optional[ProbeContext] = None,
    only: Optional[Sequence[str]] = None,
    runner: Callable[[str, ProbeContext], object] = run_one,
) -> "Facts":
    """Run the probes concurrently and assemble :class:`Facts`."""
    from torchdoctor.facts import NAMESPACES, Facts, Unavailable

    from torchdoctor.probes import _sys

    ctx = ctx or ProbeContext()
    names = [n for n in NAMESPACES if only is None or n in only]
    results: dict[str, object] = {}
    problems: list[str] = []
    _sys.reopen()
    try:
        futures = {name: in_daemon_thread(f"probe-{name}", runner, name, ctx) for name in names}
        for name, fut in futures.items():
            try:
                results[name] = fut.result()
            except ProbeUnavailable as exc:
                results[name] = Unavailable(unavailable=exc.reason)
            except Exception as exc:  # noqa: BLE001 - a probe crash degrades the report
                if ctx.debug:
                    raise
                import logging

                logging.getLogger("torchdoctor").debug("probe %s crashed", name, exc_info=True)
                reason = f"{name} probe crashed: {type(exc).__name__}: {exc}"
                results[name] = Unavailable(unavailable=reason)
                problems.append(reason)
    except BaseException:  # Ctrl-C while a child imports torch: kill it, do not wait for it
        _sys.kill_all()
        raise
    from torchdoctor.sanitize import sanitize_facts

    # the torch import error, environment values and package names come from the target
    # interpreter: no control character, escape sequence or lone surrogate goes further
    return sanitize_facts(Facts(origin="probe", problems=problems, **results))


def in_daemon_thread(thread_name: str, fn: Callable[..., object], *args: object) -> "Future[object]":
    """Run ``fn(*args)`` in a daemon thread; its result or exception arrives in the Future.

    Not a ThreadPoolExecutor: the interpreter joins executor threads at exit, so after
    Ctrl-C a probe still reading a slow file, waiting on a child or stuck in a driver call
    would hold the exit back. A daemon thread is dropped; ``_sys.kill_all`` has killed its
    children and refuses new ones.
    """
    import threading
    from concurrent.futures import Future

    fut: "Future[object]" = Future()

    def work() -> None:
        fut.set_running_or_notify_cancel()
        try:
            fut.set_result(fn(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            fut.set_exception(exc)

    threading.Thread(target=work, name=thread_name, daemon=True).start()
    return fut
