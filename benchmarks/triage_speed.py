"""`torchdoctor triage --body FILE` of one issue against `torchdoctor --help`, as a ratio, in one run.

Target: triage <= 3x --help (issue 20). Both are run as subprocesses, interleaved, N rounds after one discarded
warm-up round (bytecode and the rule cache warm, as on a second run in a workflow); medians of wall time, and the
child's CPU time (user + system), which is the steadier column on a shared machine. The rule cache
(torchdoctor/rulecache.py) lives in a temporary directory, warmed by the discarded round; the last row is a run
without it (TORCHDOCTOR_NO_CACHE=1), what a workflow's first triage on a fresh runner pays. Bytecode is cached in a temporary
PYTHONPYCACHEPREFIX even where PYTHONDONTWRITEBYTECODE is set (as benchmarks/startup.py does): an installed package
has its .pyc files.

Usage: python benchmarks/triage_speed.py [--reps 11] [--body FILE] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timed import timed  # noqa: E402

BODY = REPO / "tests" / "data" / "cases3" / "case301.txt"  # KumaTea/pytorch-aarch64#16: a glibc error


def _once(cmd: list[str], env: dict) -> tuple[float, float]:
    wall, cpu, rc = timed(cmd, env)
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {rc}")
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--body", default=str(BODY))
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    exe = sys.executable
    script = shutil.which("torchdoctor", path=os.path.dirname(exe))
    td = [script] if script else [exe, "-m", "torchdoctor"]
    cache = tempfile.mkdtemp(prefix="td-triage-bench-")
    os.chmod(cache, 0o700)
    # bytecode cached even where PYTHONDONTWRITEBYTECODE is set, as for an installed package
    base = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    base["PYTHONPYCACHEPREFIX"] = os.path.join(cache, "pycache")
    rules = os.path.join(cache, "rules")
    os.mkdir(rules, 0o700)
    warm = dict(base, TORCHDOCTOR_CACHE_DIR=rules)
    cold = dict(base, TORCHDOCTOR_NO_CACHE="1")
    triage = td + ["triage", "--body", args.body]
    rows = {"torchdoctor --help": (td + ["--help"], warm), "torchdoctor triage --body F": (triage, warm),
            "triage, no rule cache (a first run)": (triage, cold),
            "check --from-report F (for comparison)": (td + ["check", "--from-report", args.body, "--fail-on", "never"],
                                                       warm)}
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in rows}
    for r in range(args.reps + 1):
        for name, (cmd, env) in rows.items():
            t = _once(cmd, env)
            if r:  # the first round warms bytecode and the rule cache
                times[name].append(t)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}
    shutil.rmtree(cache, ignore_errors=True)
    h, t = med["torchdoctor --help"], med["torchdoctor triage --body F"]
    c = med["triage, no rule cache (a first run)"]
    result = {"reps": args.reps, "body": os.path.relpath(args.body, REPO),
              "help_s": round(h[0], 4), "triage_s": round(t[0], 4), "ratio_wall": round(t[0] / h[0], 2),
              "help_cpu_s": round(h[1], 4), "triage_cpu_s": round(t[1], 4), "ratio_cpu": round(t[1] / h[1], 2),
              "triage_no_cache_s": round(c[0], 4), "ratio_no_cache_wall": round(c[0] / h[0], 2),
              "check_from_report_s": round(med["check --from-report F (for comparison)"][0], 4),
              "ratio_check_from_report_wall": round(med["check --from-report F (for comparison)"][0] / h[0], 2)}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{'command':32} {'wall (median)':>14} {'cpu (median)':>13}")
        for name, (w, c) in med.items():
            print(f"{name:32} {w:13.3f}s {c:12.3f}s")
        print(f"ratio triage / --help: {result['ratio_wall']}x wall, {result['ratio_cpu']}x cpu (target <= 3x); "
              f"without the rule cache {result['ratio_no_cache_wall']}x; check --from-report "
              f"{result['ratio_check_from_report_wall']}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
