"""Cost of `check --distributed` with 4 local ranks against a single `check` (goal <= 1.5x).

Runs, interleaved, on this machine:
  python -m torchdoctor check                                   one process, torch in a child
  torchrun --nproc-per-node 4 -m torchdoctor check --distributed  the launcher (itself an
        `import torch`), 4 ranks each importing torch and probing, gloo tests, rank 0 reports
  python -c "import torch"                                      one torch import
  torchrun --nproc-per-node 4 --no-python python -c <import torch, gloo group>: any job's floor

Medians of wall time and of CPU time (user + system of the whole process tree): on a machine
with fewer cores than ranks the 4 ranks' torch imports queue for the CPUs, so the CPU column
says what the work costs and the wall column what this machine makes of it.

Usage: python benchmarks/distributed.py [--reps 5] [--ranks 4] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FLOOR = ("import datetime, torch.distributed as d; "
         "d.init_process_group('gloo', timeout=datetime.timedelta(seconds=60)); "
         "d.barrier(); d.destroy_process_group()")
"""What any job that uses torch.distributed pays on this machine: the launcher, each rank's
torch import and a gloo group. `check --distributed` minus this row is what torchdoctor adds."""


def commands(ranks: int) -> dict[str, list[str]]:
    exe = sys.executable
    return {
        "import torch": [exe, "-c", "import torch"],
        "check": [exe, "-m", "torchdoctor", "check", "--format", "json", "--fail-on", "never"],
        f"torchrun floor ({ranks} ranks: import torch, gloo init)": [
            exe, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks), "--master-addr", "127.0.0.1",
            "--master-port", "{port}", "--no-python", exe, "-c", FLOOR],
        f"check --distributed ({ranks} ranks)": [
            exe, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks), "--master-addr", "127.0.0.1",
            "--master-port", "{port}", "-m", "torchdoctor", "check", "--distributed", "--format", "json",
            "--fail-on", "never"],
    }


def timed(argv: list[str], env: dict) -> tuple[float, float]:
    argv = [a.replace("{port}", str(_port())) for a in argv]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=300)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv[:6]}... exited {done.returncode}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "PYTHONWARNINGS": "ignore"}
    rows = commands(args.ranks)
    for argv in rows.values():  # warm-up: page cache, bytecode, rule cache
        timed(argv, env)
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in rows}
    for _ in range(args.reps):
        for name, argv in rows.items():
            results[name].append(timed(argv, env))
    table = {name: {"wall_s": round(statistics.median(w for w, _ in r), 3),
                    "cpu_s": round(statistics.median(c for _, c in r), 3)} for name, r in results.items()}
    base = table["check"]
    for row in table.values():
        row["wall_x_check"] = round(row["wall_s"] / base["wall_s"], 2)
        row["cpu_x_check"] = round(row["cpu_s"] / base["cpu_s"], 2)
    if args.json:
        print(json.dumps({"cores": os.cpu_count(), "reps": args.reps, "rows": table}, indent=2))
        return
    print(f"{os.cpu_count()} CPU cores, median of {args.reps}")
    print(f"{'':40} {'wall s':>8} {'x check':>8} {'CPU s':>8} {'x check':>8}")
    for name, row in table.items():
        print(f"{name:40} {row['wall_s']:>8.2f} {row['wall_x_check']:>8.2f} {row['cpu_s']:>8.2f} {row['cpu_x_check']:>8.2f}")


if __name__ == "__main__":
    main()
