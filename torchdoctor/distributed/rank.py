"""What every rank of `check --distributed` runs.

1. join the launcher's rendezvous store (env://: MASTER_ADDR:MASTER_PORT; under torchrun the
   agent's store) and say hello (host, pid) at once, so a rank that stops later is named with
   its host;
2. start the connectivity thread: a gloo process group (``init_process_group("gloo")``, so it
   works when NCCL is the broken part), an all_reduce, the facts gathered to rank 0 with
   a gather over gloo, and where CUDA is available an NCCL all_reduce and its bus bandwidth;
3. probe this rank's environment with the probes of `check`, torch read in this process;
4. rank 0 waits (polling, never blocking) for every rank's facts and results until the
   deadline, then builds the job, evaluates and renders once; the other ranks print nothing.

Nothing waits forever: every wait polls against one deadline (``--timeout`` from the start);
SIGALRM (default action: the kernel ends the process) is armed at the deadline plus
``GRACE_S`` as a backstop for a call stuck in native code. When the launcher stops the job
(SIGTERM: a rank exited), the other ranks record that in the store and exit, and rank 0
reports what it has.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import sys
import threading
import time
from datetime import timedelta
from typing import Any, Callable, Optional

from torchdoctor.distributed.launch import Launch

GRACE_S = 10
"""The hard backstop (SIGALRM) fires this long after the deadline."""
POLL_S = 0.05
FAULT_ENV = "TORCHDOCTOR_DIST_FAULT"
"""Test hook (docs/distributed.md): ``crash`` makes this rank exit (status 3) right after it
joined, ``hang`` makes it sleep until it is killed. Only ever read by `check --distributed`."""
WARMUP, ITERS = 2, 5
"""NCCL bandwidth: untimed and timed all_reduce calls per size."""


def reserve_s(timeout: float) -> float:
    """What rank 0 keeps of --timeout to build, evaluate and render the report."""
    return min(2.5, 0.25 * timeout)


def host_name() -> str:
    try:
        return socket.gethostname() or "unknown"
    except OSError:
        return "unknown"


class Connectivity(threading.Thread):
    """The collectives, in a daemon thread: a call stuck in gloo or NCCL never holds rank 0's
    report back (rank 0 names the step it was on when the deadline came)."""

    def __init__(self, torch: Any, store: Any, launch: Launch, deadline: float, timeout: float):
        super().__init__(name="torchdoctor-collectives", daemon=True)
        self.torch, self.store, self.launch, self.deadline = torch, store, launch, deadline
        self.timeout = timeout
        self.results: list[dict] = []
        self.bandwidth: list[dict] = []
        self.gathered: Optional[list] = None
        self.refused: dict[int, str] = {}
        """Ranks whose announced facts the gather refused (rank -> why)."""
        self.step = "gloo init_process_group"
        self.payload: Optional[str] = None
        self.facts_ready = threading.Event()

    def remaining(self) -> float:
        return max(1.0, self.deadline - time.monotonic())

    def _record(self, backend: str, op: str, started: float, error: Optional[str] = None) -> None:
        self.results.append({"backend": backend, "op": op, "ok": error is None,
                             "seconds": round(time.monotonic() - started, 4), "error": error})

    def run(self) -> None:
        dist = self.torch.distributed
        rank, world = self.launch.rank, self.launch.world_size
        started = time.monotonic()
        try:
            dist.init_process_group("gloo", store=self.store, rank=rank,
                                    world_size=world, timeout=timedelta(seconds=self.remaining()))
        except Exception as exc:  # noqa: BLE001 - a failed collective is a result
            self._record("gloo", "init_process_group", started, _first_line(exc))
            return
        self._record("gloo", "init_process_group", started)
        self.step = "gloo all_reduce"
        started = time.monotonic()
        try:
            x = self.torch.ones(1024)
            dist.all_reduce(x)
            bad = None if float(x[0]) == world else f"wrong sum {float(x[0])!r}, expected {world}"
            self._record("gloo", "all_reduce", started, bad)
        except Exception as exc:  # noqa: BLE001
            self._record("gloo", "all_reduce", started, _first_line(exc))
            return
        self.step = "gloo gather (waiting for this rank's facts)"
        if not self.facts_ready.wait(max(0.0, self.deadline - time.monotonic())):
            return
        self.step = "gloo gather"
        started = time.monotonic()
        try:
            got = gather_bytes(self.torch, (self.payload or "").encode("utf-8"), rank, world)
            if got is not None:
                self.gathered, self.refused = got
            self._record("gloo", "gather", started)
        except Exception as exc:  # noqa: BLE001
            self._record("gloo", "gather", started, _first_line(exc))
            return
        if self.torch.cuda.is_available():
            self.nccl()
        self.step = "done"

    def nccl(self) -> None:
        """An NCCL all_reduce, then its time per size (max over ranks) -> busbw samples."""
        from torchdoctor.distributed.bandwidth import SIZES

        torch, dist = self.torch, self.torch.distributed
        self.step = "nccl new_group"
        started = time.monotonic()
        try:
            # the current device is per thread: this thread picks the rank's device itself
            index = (self.launch.local_rank or 0) % torch.cuda.device_count()
            torch.cuda.set_device(index)
            device = torch.device("cuda", index)
            group = dist.new_group(backend="nccl", timeout=timedelta(seconds=self.remaining()))
            self.step = "nccl all_reduce"
            x = torch.ones(1, device=device)
            dist.all_reduce(x, group=group)
            torch.cuda.synchronize(device)
            world = self.launch.world_size
            bad = None if float(x.item()) == world else f"wrong sum {float(x.item())!r}, expected {world}"
            self._record("nccl", "all_reduce", started, bad)
            if bad:
                return
            times: list[tuple[int, float]] = []
            for size in SIZES:
                if time.monotonic() > self.deadline - reserve_s(self.timeout):
                    break
                self.step = f"nccl all_reduce of {size} bytes"
                buf = torch.ones(size // 4, device=device, dtype=torch.float32)
                for _ in range(WARMUP):
                    dist.all_reduce(buf, group=group)
                torch.cuda.synchronize(device)
                t0 = time.perf_counter()
                for _ in range(ITERS):
                    dist.all_reduce(buf, group=group)
                torch.cuda.synchronize(device)
                elapsed = torch.tensor([(time.perf_counter() - t0) / ITERS], device=device,
                                       dtype=torch.float64)
                dist.all_reduce(elapsed, op=dist.ReduceOp.MAX, group=group)
                times.append((size, float(elapsed.item())))
                del buf
            self.bandwidth = [{"size_bytes": s, "seconds": t} for s, t in times]
        except Exception as exc:  # noqa: BLE001
            self._record("nccl", self.step.split(" of ")[0].replace("nccl ", ""), started, _first_line(exc))

    def summary(self) -> dict:
        """What this rank's collectives did; ``step``: the one still running (None when the
        thread has finished, whether it succeeded or stopped at a failure it recorded)."""
        return {"results": list(self.results), "bandwidth": list(self.bandwidth),
                "step": self.step if self.is_alive() else None}


MAX_FACTS_BYTES = 8 * 1024 * 1024
"""The most bytes of facts rank 0 takes from one rank in the gather (a rank's facts are some
tens of KiB; the report readers' own limit is 5 MiB)."""


def gather_bytes(torch: Any, data: bytes, rank: int, world: int) -> Optional[tuple]:
    """Every rank's bytes on rank 0, over the default (gloo) group: the lengths with an
    all_gather, then one gather of padded uint8 tensors. (``gather_object`` pickles through
    numpy in some builds; this needs torch alone.)

    Every rank sees the same announced lengths and applies the same cap: a rank that announces
    a length outside 0..MAX_FACTS_BYTES (hostile, or broken) sends nothing and is refused by
    name, the others are gathered as usual, so no buffer is larger than MAX_FACTS_BYTES
    whatever a rank announces. Returns ``(texts, refused)`` on rank 0 (``refused``: rank ->
    why, its text empty), None elsewhere."""
    dist = torch.distributed
    length = torch.tensor([len(data)], dtype=torch.int64)
    lengths = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(lengths, length)
    announced = [int(n.item()) for n in lengths]
    kept = [n if 0 <= n <= MAX_FACTS_BYTES else 0 for n in announced]
    size = max(kept, default=0)
    mine = torch.zeros(size, dtype=torch.uint8)
    if data and kept[rank] == len(data):
        mine[: len(data)] = torch.frombuffer(bytearray(data), dtype=torch.uint8)
    out = [torch.zeros(size, dtype=torch.uint8) for _ in range(world)] if rank == 0 else None
    dist.gather(mine, out, dst=0)
    if out is None:
        return None
    refused = {r: (f"announced {n} bytes of facts for the gather, outside 0 to {MAX_FACTS_BYTES}: "
                   f"refused") for r, (n, k) in enumerate(zip(announced, kept)) if n != k}
    texts = [bytes(t[:k].tolist()).decode("utf-8", "replace") for t, k in zip(out, kept)]
    return texts, refused


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    out = f"{type(exc).__name__}: {lines[0] if lines else ''}".strip()
    return out if len(out) <= 300 else out[:299] + "…"


class RankRun:
    """One rank's run; :meth:`run` returns rank 0's gathered material or None elsewhere."""

    def __init__(self, launch: Launch, timeout: float, debug: bool = False):
        self.launch, self.timeout, self.debug = launch, timeout, debug
        self.start = time.monotonic()
        self.deadline = self.start + timeout
        self.stopped = False
        self.store: Any = None
        self.pg_store: Any = None

    # -- signals ---------------------------------------------------------------------

    def arm(self) -> None:
        """The backstop alarm and the SIGTERM handler (idempotent: run() arms again)."""
        try:
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(int(math.ceil(self.timeout)) + GRACE_S)
        except (ValueError, OSError, AttributeError):  # not the main thread / no SIGALRM
            pass
        try:
            signal.signal(signal.SIGTERM, self._on_term)
        except (ValueError, OSError, AttributeError):
            pass

    def _on_term(self, signum: int, frame: Any) -> None:  # noqa: ARG002
        if self.launch.rank == 0:
            self.stopped = True  # report what arrived: the wait loops see the flag
            return
        try:
            if self.store is not None:
                self.store.set_timeout(timedelta(seconds=1))
                self.store.set(f"status/{self.launch.rank}", "stopped")
        except Exception:  # noqa: BLE001 - the store may be gone already
            pass
        hard_exit(128 + signum)

    # -- the run ---------------------------------------------------------------------

    def join(self, torch: Any) -> Any:
        dist = torch.distributed
        remaining = timedelta(seconds=max(1.0, self.deadline - time.monotonic()))
        launch = self.launch
        prefix = f"torchdoctor/{launch.run_id}/"
        if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
            store = dist.TCPStore(launch.master_addr, launch.master_port, is_master=False, timeout=remaining)
        else:
            store = dist.TCPStore(launch.master_addr, launch.master_port, is_master=launch.rank == 0,
                                  timeout=remaining, wait_for_workers=False, multi_tenant=True)
        # the process group gets a connection of its own: its blocking waits (for a rank that
        # never comes) hold that client's lock, and must not hold back rank 0's polling
        self.pg_store = dist.PrefixStore(prefix + "pg/", dist.TCPStore(
            launch.master_addr, launch.master_port, is_master=False, timeout=remaining))
        return dist.PrefixStore(prefix, store)

    def run(self, probe: Callable[[Any, "RankRun"], Any]) -> Optional[dict]:
        """``probe(torch, self) -> RankFacts``. Returns, on rank 0, what arrived."""
        self.arm()
        # c10d logs every store retry with a C++ stack on stderr; our report says what failed.
        # Set only while torch loads (c10 reads it then), so it never shows in the env facts.
        quiet = not self.debug and "TORCH_CPP_LOG_LEVEL" not in os.environ
        if quiet:
            os.environ["TORCH_CPP_LOG_LEVEL"] = "FATAL"
        try:
            import torch  # the launcher started us to import it: the job's own torch
            import torch.distributed  # noqa: F401
        except Exception as exc:  # noqa: BLE001 - this rank cannot join; rank 0 names it
            from torchdoctor.errors import UserError

            raise UserError(f"rank {self.launch.rank}: `import torch` failed ({_first_line(exc)}); "
                            "run `torchdoctor check` on this node for the diagnosis") from None
        finally:
            if quiet:
                os.environ.pop("TORCH_CPP_LOG_LEVEL", None)

        launch = self.launch
        try:
            self.store = store = self.join(torch)
        except Exception as exc:  # noqa: BLE001 - one line, exit 2 (cli)
            from torchdoctor.errors import UserError

            raise UserError(f"rank {launch.rank}: cannot reach the rendezvous store at "
                            f"{launch.master_addr}:{launch.master_port} within {self.timeout:g} s "
                            f"({_first_line(exc)})") from None
        hello = {"host": host_name(), "pid": os.getpid(), "local_rank": launch.local_rank,
                 "local_world_size": launch.local_world_size, "node": launch.node}
        store.set(f"hello/{launch.rank}", json.dumps(hello))
        fault = os.environ.get(FAULT_ENV, "")
        if fault == "crash":
            hard_exit(3)
        while fault == "hang":
            time.sleep(1)
        conn = Connectivity(torch, self.pg_store, launch, self.deadline - reserve_s(self.timeout), self.timeout)
        conn.start()
        payload: Optional[str] = None
        try:
            payload = probe(torch, self).model_dump_json()
        except Exception as exc:  # noqa: BLE001 - told to rank 0; the collectives still run
            store.set(f"status/{launch.rank}", "failed: probing this rank raised " + _first_line(exc))
            if self.debug:
                raise
        if launch.rank != 0 and payload is not None:
            store.set(f"facts/{launch.rank}", payload)
        conn.payload = payload or ""  # the gather goes on without this rank's facts
        conn.facts_ready.set()
        if launch.rank != 0:
            conn.join(max(0.0, self.deadline - reserve_s(self.timeout) - time.monotonic()))
            store.set(f"conn/{launch.rank}", json.dumps(conn.summary()))
            return None
        return self.collect(store, conn, hello, payload)

    def collect(self, store: Any, conn: Connectivity, hello: dict, payload: Optional[str] = None) -> dict:
        """Rank 0: read every rank's hello, facts, status and results as they arrive (polling,
        so a launcher's SIGTERM or the deadline ends the wait at once; what was read before
        stays read even if the store stops answering)."""
        world = self.launch.world_size
        until = self.deadline - reserve_s(self.timeout)
        got: dict[str, Any] = {"hello": {0: hello}, "facts": {}, "status": {}, "conn": {}}
        if payload is not None:
            got["facts"][0] = payload
        else:
            got["status"][0] = self.read(store, "status/0") or "failed: probing this rank raised"
        pending = {(kind, r) for r in range(1, world) for kind in ("hello", "facts", "conn")}
        while True:
            self.poll(store, got, pending)
            if not pending or self.stopped or time.monotonic() >= until:
                break
            time.sleep(POLL_S)
        if self.stopped:  # one last look, with a short store timeout: the store may be going away
            try:
                store.set_timeout(timedelta(seconds=1))
            except Exception:  # noqa: BLE001
                pass
            self.poll(store, got, pending)
        conn.join(0.0 if self.stopped else max(0.0, until - time.monotonic()))
        if conn.gathered and not conn.is_alive():
            got["facts"].update({r: text for r, text in enumerate(conn.gathered) if text})
            for r, why in conn.refused.items():
                if r not in got["facts"]:
                    got["status"][r] = f"failed: {why}"
        got["conn"][0] = conn.summary()
        got["stopped"] = self.stopped
        return got

    def poll(self, store: Any, got: dict, pending: set) -> None:
        for kind, r in sorted(pending):
            if kind == "conn" and r not in got["facts"]:
                continue
            raw = self.read(store, f"{kind}/{r}")
            if raw is None:
                continue
            pending.discard((kind, r))
            try:
                got[kind][r] = raw if kind == "facts" else json.loads(raw)
            except ValueError:
                got["status"][r] = f"failed: sent {kind} that do not parse"
        for r in range(1, self.launch.world_size):
            if r not in got["facts"] and r not in got["status"]:
                raw = self.read(store, f"status/{r}")
                if raw is not None:
                    got["status"][r] = raw
                    pending.difference_update({("facts", r), ("conn", r)})
            if self.stopped and self.time_left() <= 0:
                return

    def time_left(self) -> float:
        return self.deadline - time.monotonic()

    @staticmethod
    def check(store: Any, key: str) -> bool:
        try:
            return bool(store.check([key]))
        except Exception:  # noqa: BLE001 - a store that went away answers nothing
            return False

    def read(self, store: Any, key: str) -> Optional[str]:
        if not self.check(store, key):
            return None
        try:
            return store.get(key).decode("utf-8", "replace")
        except Exception:  # noqa: BLE001
            return None


def hard_exit(code: int) -> None:
    """Leave now: flush our streams, kill the children this process started, and exit without
    waiting for threads stuck in gloo/NCCL (the interpreter's shutdown would join them)."""
    try:
        from torchdoctor.probes import _sys

        _sys.kill_all()
    except Exception:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)
