"""Wall-clock and CPU cost of torchdoctor against the baselines it must be compared with.

Runs, interleaved, on the same machine in one invocation:
  python -c "import torch"               the floor: one torch import
  python -m torch.utils.collect_env      the incumbent
  torchdoctor check                      must cost about one torch import (target <= 1.1x)
  torchdoctor --help                     goal <= 0.05 s
  torchdoctor recommend --facts F        goal <= 0.15 s (no probing: facts from a file)
  torchdoctor check --from-report F      goal <= 0.25 s (a pasted collect_env report)
  ... the last two again with TORCHDOCTOR_NO_CACHE=1 (the rule cache off: a first run)

Usage: python benchmarks/startup.py [--reps 7] [--json] [--no-torch] [--source DIR]
  --no-torch   skip the rows that import torch (import torch, collect_env, check)
  --source DIR time the torchdoctor package found in DIR (e.g. a `git worktree` of an older
               commit) instead of the installed one, for before/after tables

Medians are reported (robust to one slow run), with the child's CPU time (user + system):
on a shared machine the CPU column is the steadier one. Ratios are against `import torch`.
Bytecode is cached (in a temporary PYTHONPYCACHEPREFIX) even where PYTHONDONTWRITEBYTECODE
is set, as it is for an installed package; the rule cache lives in a temporary directory and
is warmed by the first (discarded) round.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FACTS = REPO / "tests" / "machines" / "ampere-a100x4.json"
REPORT = REPO / "tests" / "data" / "corpus" / "case001.txt"


def commands(source: str | None, with_torch: bool) -> dict[str, tuple[list[str], dict]]:
    exe = sys.executable
    script = None if source else (shutil.which("torchdoctor", path=os.path.dirname(exe))
                                  or shutil.which("torchdoctor"))
    td = [script] if script else [exe, "-m", "torchdoctor"]
    no_cache = {"TORCHDOCTOR_NO_CACHE": "1"}
    rows: dict[str, tuple[list[str], dict]] = {}
    if with_torch:
        rows["import torch"] = ([exe, "-c", "import torch"], {})
        rows["collect_env"] = ([exe, "-m", "torch.utils.collect_env"], {})
        rows["torchdoctor check"] = (td + ["check", "--format", "json", "--fail-on", "never"], {})
    rows["torchdoctor --help"] = (td + ["--help"], {})
    recommend = td + ["recommend", "--facts", str(FACTS), "--task", "detection", "--fail-on", "never"]
    from_report = td + ["check", "--from-report", str(REPORT), "--fail-on", "never"]
    rows["recommend --facts F"] = (recommend, {})
    rows["check --from-report F"] = (from_report, {})
    rows["recommend --facts F (no rule cache)"] = (recommend, no_cache)
    rows["check --from-report F (no rule cache)"] = (from_report, no_cache)
    return rows


def time_once(argv: list[str], env: dict, cwd: str) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=300, env=env,
                          cwd=cwd)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode()[-500:]}")
    return elapsed, cpu


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--source", help="directory holding the torchdoctor package to time")
    args = ap.parse_args()
    cmds = commands(args.source, not args.no_torch)
    with tempfile.TemporaryDirectory(prefix="td-bench-") as tmp:
        base = dict(os.environ)
        base.pop("PYTHONDONTWRITEBYTECODE", None)
        base["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
        base["TORCHDOCTOR_CACHE_DIR"] = os.path.join(tmp, "cache")
        base.pop("TORCHDOCTOR_NO_CACHE", None)
        if args.source:
            base["PYTHONPATH"] = os.pathsep.join(filter(None, [args.source, base.get("PYTHONPATH")]))
        envs = {name: {**base, **extra} for name, (_, extra) in cmds.items()}
        # a neutral working directory: `python -m torchdoctor` must not pick up ./torchdoctor
        for name, (argv, _) in cmds.items():  # bytecode, rule cache, page cache
            time_once(argv, envs[name], tmp)
        wall: dict[str, list[float]] = {name: [] for name in cmds}
        cpu: dict[str, list[float]] = {name: [] for name in cmds}
        for _ in range(args.reps):  # interleave so drift hits every command alike
            for name, (argv, _) in cmds.items():
                w, c = time_once(argv, envs[name], tmp)
                wall[name].append(w)
                cpu[name].append(c)
    med = {name: statistics.median(v) for name, v in wall.items()}
    base_s = med.get("import torch")
    rows = [
        {"command": name, "median_s": round(m, 3), "min_s": round(min(wall[name]), 3),
         "max_s": round(max(wall[name]), 3), "cpu_median_s": round(statistics.median(cpu[name]), 3),
         "ratio_to_import_torch": round(m / base_s, 2) if base_s else None}
        for name, m in med.items()
    ]
    info = {"reps": args.reps, "python": sys.version.split()[0], "cpus": os.cpu_count(),
            "source": args.source or "installed"}
    if args.json:
        print(json.dumps({**info, "rows": rows}, indent=2))
        return 0
    print(f"{args.reps} repetitions, medians (Python {info['python']}, {info['cpus']} CPUs, "
          f"torchdoctor from {info['source']})\n")
    print("| command | median s | min s | max s | CPU s | × import torch |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        ratio = f"{r['ratio_to_import_torch']:.2f}" if r["ratio_to_import_torch"] is not None else "–"
        print(f"| `{r['command']}` | {r['median_s']:.3f} | {r['min_s']:.3f} | {r['max_s']:.3f} | "
              f"{r['cpu_median_s']:.3f} | {ratio} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
