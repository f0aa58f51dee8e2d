"""Runs the configurations, each in its own child process, in interleaved rounds.

Every configuration gets one child (``_child.py`` run by this interpreter) that lives for the
whole run: it applies the configuration's code, imports torch, builds the micro-workload and
warms up until the step time is stable; then the parent asks each child in turn, in a new
shuffled order every round, for a few timed steps, so drift (other load, thermal, turbo)
hits every configuration alike. Only one child computes at a time. Children run in their own
session with the house marker (``probes._sys``), answer within a deadline or are killed with
their process group, and never outlive the run (Ctrl-C included: what was measured is kept).
"""

from __future__ import annotations

import collections
import json
import math
import os
import queue
import random
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from torchdoctor.bench.results import BenchConfig, Measurement
from torchdoctor.bench.stats import summarize
from torchdoctor.probes import _sys

CHILD = Path(__file__).with_name("_child.py")
ROUNDS = 20
"""Rounds aimed at (fewer when a configuration gets fewer repetitions than this)."""
MAX_LINE = 1 << 20
"""Longest line a child may answer (its timings of up to a few hundred steps fit easily)."""


class ChildFailure(Exception):
    pass


class Child:
    """One configuration's process: JSON lines in, JSON lines out, each answer with a deadline."""

    def __init__(self, spec: dict, argv: Optional[Sequence[str]] = None):
        token = _sys._child_token()
        env = dict(os.environ)
        env[_sys.CHILD_MARKER] = token
        env.setdefault("PYTHONWARNINGS", "ignore")
        self.proc = subprocess.Popen(
            list(argv or [sys.executable, str(CHILD)]), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
            start_new_session=(os.name == "posix"))
        self.proc._torchdoctor_token = token  # type: ignore[attr-defined]
        with _sys._live_lock:
            _sys._live.add(self.proc)
        self.lines: "queue.Queue[Optional[bytes]]" = queue.Queue()
        self.err: "collections.deque[bytes]" = collections.deque(maxlen=40)
        threading.Thread(target=self._read_out, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()
        self.send(spec)

    def _read_out(self) -> None:
        stream = self.proc.stdout
        while True:
            line = stream.readline(MAX_LINE)
            if not line:
                break
            self.lines.put(line)
        self.lines.put(None)

    def _read_err(self) -> None:
        for line in iter(lambda: self.proc.stderr.readline(4096), b""):
            self.err.append(line)

    def send(self, obj: Any) -> None:
        try:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()
        except (OSError, ValueError):
            pass  # it died: receive() says how

    def receive(self, timeout: float) -> dict:
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.kill()
            raise ChildFailure(f"no answer within {timeout:.0f} s (hung; killed)") from None
        if line is None:
            try:
                code = self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            self.kill()
            raise ChildFailure(self._death(code))
        try:
            answer = json.loads(line)
        except ValueError:
            raise ChildFailure(f"unreadable answer: {line[:200]!r}") from None
        if not isinstance(answer, dict):
            raise ChildFailure(f"unreadable answer: {line[:200]!r}")
        if "error" in answer:
            self.kill()
            raise ChildFailure(str(answer["error"])[:500])
        return answer

    def _death(self, code: Optional[int]) -> str:
        tail = [ln.decode("utf-8", "replace").strip() for ln in self.err if ln.strip()]
        last = tail[-1][:300] if tail else ""
        if code is not None and code < 0:
            import signal

            try:
                what = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                what = f"killed by signal {-code}"
        else:
            what = f"exited with status {code}"
        return f"crashed ({what})" + (f": {last}" if last else "")

    def close(self) -> None:
        self.send({"quit": True})
        try:
            self.proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            pass
        self.kill()

    def kill(self) -> None:
        if self.proc.returncode is None:
            _sys._kill_tree(self.proc)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        with _sys._live_lock:
            _sys._live.discard(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except OSError:
                pass


Progress = Callable[[str, float, float], None]
"""progress(what, done, total): the caller shows it (a rich bar on stderr in the CLI)."""


WARM_SHARE = 0.6
"""At most this share of the budget goes to starting and warming up the configurations; the
rest is for the timed rounds."""
CLOSE_S = 3.0
"""Seconds kept at the end of the budget for closing the children and printing the table."""


def run_all(configs: Sequence[BenchConfig], workload: dict, *, budget_s: float, min_reps: int,
            max_reps: int, startup_timeout_s: float, warmup: dict, seed: int = 0,
            progress: Optional[Progress] = None, argv: Optional[Sequence[str]] = None,
            started_at: Optional[float] = None) -> tuple[list[Measurement], bool]:
    """Measure every configuration; returns (measurements in ``configs`` order, interrupted).

    ``budget_s`` bounds the whole run from ``started_at`` (``time.monotonic()``, default now:
    the bench command passes its own start, so reading the machine counts too): start-up and
    warm-up get at most WARM_SHARE of it (a configuration not started by then is reported
    ``not-run`` and why; torch's defaults and the plan are always started), the timed rounds
    stop at the end of it less CLOSE_S, after the first round (one step of each at least)."""
    t0 = time.monotonic() if started_at is None else started_at
    deadline = t0 + budget_s - min(CLOSE_S, 0.1 * budget_s)
    warm_deadline = t0 + WARM_SHARE * budget_s
    results: dict[str, Measurement] = {c.id: Measurement(config=c) for c in configs}
    children: dict[str, Child] = {}
    step_s: dict[str, float] = {}
    interrupted = False
    show = progress or (lambda what, done, total: None)

    def fail(cid: str, status: str, reason: str) -> None:
        results[cid] = summarize(results[cid].model_copy(update={"status": status, "error": reason}))
        child = children.pop(cid, None)
        if child is not None:
            child.kill()

    try:
        # 1. start and warm up, one at a time (a warming child must not compete with another)
        for i, config in enumerate(configs):
            show(f"warming up {config.id}", i, len(configs))
            started = time.monotonic()
            essential = bool({"defaults", "plan"} & set(config.roles))  # the comparison itself
            if started >= warm_deadline and not essential:
                results[config.id] = results[config.id].model_copy(update={"error": (
                    f"not started: start-up and warm-up of the configurations before it used the "
                    f"{WARM_SHARE:.0%} of --budget {budget_s:g} s they may (--budget bounds the whole "
                    f"command); a larger --budget measures it")})
                continue
            # each configuration warms up within its share of what is left for warming up
            share = (warm_deadline - started) / (len(configs) - i)
            spec = {"env_code": config.code.get("env", ""), "code": config.code.get("torch", ""),
                    "workload": workload, "compile": config.compile,
                    "warmup": {**warmup, "max_s": max(0.5, min(float(warmup.get("max_s", 8)), share / 2))}}
            # the comparison itself may take its start-up timeout; the others what the budget has left
            wait = startup_timeout_s if essential else min(startup_timeout_s, deadline - time.monotonic())
            try:
                children[config.id] = Child(spec, argv)
                ready = children[config.id].receive(max(1.0, wait))
            except ChildFailure as exc:
                if "no answer" in str(exc) and wait < startup_timeout_s:
                    exc = ChildFailure(f"not ready within the {max(1.0, wait):.0f} s --budget {budget_s:g} s "
                                       f"had left (killed); a larger --budget measures it")
                fail(config.id, "timeout" if "no answer" in str(exc) or "not ready" in str(exc)
                     else "failed", str(exc))
                continue
            except OSError as exc:
                fail(config.id, "failed", f"could not start: {exc}")
                continue
            step_s[config.id] = float(ready.get("step_s") or ready.get("first_step_s") or 1.0)
            results[config.id] = results[config.id].model_copy(update={
                "warmup_steps": int(ready.get("warmup_steps", 0)),
                "warmup_s": float(ready.get("warmup_s", 0.0)),
                "first_step_s": ready.get("first_step_s"),
                "startup_s": time.monotonic() - started})
        # 2. plan the repetitions from what is left of the budget
        alive = list(children)
        left = max(0.0, deadline - time.monotonic())
        reps: dict[str, int] = {}
        for cid in alive:
            share = left / max(1, len(alive))
            reps[cid] = int(min(max_reps, max(min_reps, share / max(step_s[cid], 1e-6))))
        total = sum(reps.values())
        # many short rounds: load that comes and goes (other processes) hits every configuration
        # the same rounds for all, each configuration's repetitions spread over every round
        rounds = min([ROUNDS] + [reps[cid] for cid in alive])
        per_round = {cid: math.ceil(reps[cid] / rounds) for cid in alive}
        # seconds one batch may take: steps slower than the warm-up said get fewer repetitions
        slot = left / max(1, rounds * len(alive))
        rng = random.Random(seed)
        done = 0
        # 3. interleaved rounds
        for r in range(rounds):
            order = [cid for cid in alive if cid in children]
            rng.shuffle(order)
            if r and time.monotonic() >= deadline:
                break  # the budget is spent: what was measured is the result
            for cid in order:
                remaining = deadline - time.monotonic()
                have = len(results[cid].times_s)
                goal = reps[cid]
                if have >= goal or (r and remaining <= 0):
                    continue
                seen = sorted(results[cid].times_s)
                step = seen[len(seen) // 2] if seen else step_s[cid]
                fits = int(slot / max(step, 1e-6))
                # at least the share of min_reps this round owes, at most what fits the slot
                owed = math.ceil(min_reps * (r + 1) / rounds) - have
                n = max(1, owed, min(per_round[cid], fits, goal - have))
                n = max(1, min(n, int(remaining / max(step, 1e-6))))  # never past the deadline
                show(f"round {r + 1}/{rounds}", done, total)
                children[cid].send({"run": n})
                try:
                    answer = children[cid].receive(max(30.0, 20 * n * step_s[cid]))
                except ChildFailure as exc:
                    fail(cid, "timeout" if "no answer" in str(exc) else "failed", str(exc))
                    continue
                times = [float(t) for t in answer.get("times", []) if isinstance(t, (int, float))
                         and math.isfinite(t) and t >= 0]
                m = results[cid]
                results[cid] = m.model_copy(update={"times_s": m.times_s + times,
                                                    "rounds": m.rounds + 1, "status": "ok",
                                                    "batch_rounds": m.batch_rounds + [r],
                                                    "batch_sizes": m.batch_sizes + [len(times)]})
                done += n
        show("done", total, total)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        for child in list(children.values()):
            child.close() if not interrupted else child.kill()
    out = []
    for config in configs:
        m = results[config.id]
        if interrupted and m.status == "not-run":
            m = m.model_copy(update={"status": "interrupted", "error": "interrupted (Ctrl-C) before it was timed"})
        out.append(summarize(m))
    return out, interrupted
