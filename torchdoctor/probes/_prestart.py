"""Start the torch child before anything heavy is imported.

The torch child (one ``import torch``, ~1.7 s) is the critical path of `check`. Our own
imports (pydantic models, rules) cost a few hundred ms; starting the child first lets them
run on the other core meanwhile. This module imports nothing but the machine seam.
"""

from __future__ import annotations

import os
import threading
from typing import Optional

from torchdoctor.probes import _sys

CHILD_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torch_child.py")

_lock = threading.Lock()
_pending: dict[tuple, "_Started"] = {}


class _Started:
    def __init__(self, argv: list[str], timeout: float):
        self.result: Optional[_sys.Completed] = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(argv, timeout), daemon=True,
                                        name="torch-child")
        self._thread.start()

    def _run(self, argv: list[str], timeout: float) -> None:
        try:
            self.result = _sys.run(argv, timeout=timeout)
        finally:
            self._done.set()

    def wait(self) -> Optional[_sys.Completed]:
        self._done.wait()
        return self.result


def dump_after(timeout: Optional[float]) -> Optional[float]:
    """When the child dumps its Python stack if still running (so a hang says where)."""
    if not timeout or timeout <= 0.5:
        return None
    return max(timeout - 1.0, timeout * 0.8)


def child_argv(python: str, timeout: Optional[float]) -> list[str]:
    argv = [python, CHILD_SCRIPT]
    after = dump_after(timeout)
    if after is not None:
        argv += ["--dump-after", f"{after:.2f}"]
    return argv


def start(python: str, timeout: float) -> None:
    """Launch the torch child now; :func:`take` collects its result later. A timeout that is
    not a positive finite number of seconds (up to a day) raises ValueError before any child
    starts."""
    timeout = _sys.check_timeout(timeout)
    _sys.reopen()
    with _lock:
        key = (python, timeout)
        if key not in _pending:
            _pending[key] = _Started(child_argv(python, timeout), timeout)


def take(python: str, timeout: float) -> Optional[_sys.Completed]:
    """The result of a child started by :func:`start` for the same target, else None."""
    with _lock:
        started = _pending.pop((python, timeout), None)
    return started.wait() if started is not None else None


def discard() -> None:
    """Forget children nobody took (a command that failed after starting one) and kill them."""
    with _lock:
        _pending.clear()
    _sys.kill_all()
