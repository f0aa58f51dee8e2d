"""Wall-clock cost of torchdoctor against the baselines it must be compared with.

Runs, interleaved, on the same machine in one invocation:
  python -c "import torch"            the floor: one torch import
  python -m torch.utils.collect_env   the incumbent
  torchdoctor check                   must cost about one torch import (target <= 1.1x)
  torchdoctor --help                  must stay <= 0.25 s

Usage: python benchmarks/startup.py [--reps 7] [--json]
Medians are reported (robust to one slow run); ratios are against `import torch`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def commands() -> dict[str, list[str]]:
    exe = sys.executable
    script = shutil.which("torchdoctor", path=os.path.dirname(exe)) or shutil.which("torchdoctor")
    td = [script] if script else [exe, "-m", "torchdoctor"]
    return {
        "import torch": [exe, "-c", "import torch"],
        "collect_env": [exe, "-m", "torch.utils.collect_env"],
        "torchdoctor check": td + ["check", "--format", "json", "--fail-on", "never"],
        "torchdoctor --help": td + ["--help"],
    }


def time_once(argv: list[str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    cmds = commands()
    for argv in cmds.values():  # warm the page cache once
        time_once(argv)
    samples: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(args.reps):  # interleave so drift hits every command alike
        for name, argv in cmds.items():
            samples[name].append(time_once(argv))
    med = {name: statistics.median(v) for name, v in samples.items()}
    base = med["import torch"]
    rows = [
        {"command": name, "median_s": round(m, 3), "min_s": round(min(samples[name]), 3),
         "max_s": round(max(samples[name]), 3), "ratio_to_import_torch": round(m / base, 2)}
        for name, m in med.items()
    ]
    if args.json:
        print(json.dumps({"reps": args.reps, "python": sys.version.split()[0], "rows": rows}, indent=2))
        return 0
    print(f"{args.reps} repetitions, medians (Python {sys.version.split()[0]}, {os.cpu_count()} CPUs)\n")
    print("| command | median s | min s | max s | × import torch |")
    print("|---|---|---|---|---|")
    for r in rows:
        print(f"| `{r['command']}` | {r['median_s']:.3f} | {r['min_s']:.3f} | {r['max_s']:.3f} | {r['ratio_to_import_torch']:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
