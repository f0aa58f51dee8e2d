"""`torchdoctor triage` of one issue against `torchdoctor --help`, as a ratio, in one run, for issues of each kind
(INPUTS: a known error message, a CPU-only torch, a collect_env whose finding's message is a template, an issue
form's own text), and the worst of them.

Target: triage <= 3x --help (issue 20). All are run as subprocesses, interleaved, N rounds after one discarded
warm-up round (bytecode and the rule cache warm, as on a second run in a workflow); medians of wall time, and the
child's CPU time (user + system), which is the steadier column on a shared machine. The rule cache
(torchdoctor/rulecache.py) lives in a temporary directory, warmed by the discarded round; the last row is a run
without it (TORCHDOCTOR_NO_CACHE=1), what a workflow's first triage on a fresh runner pays. Bytecode is cached in a temporary
PYTHONPYCACHEPREFIX even where PYTHONDONTWRITEBYTECODE is set (as benchmarks/startup.py does): an installed package
has its .pyc files.

Usage: python benchmarks/triage_speed.py [--reps 11] [--body FILE ...] [--json]
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

DATA = REPO / "tests" / "data"
INPUTS = [
    ("--body", DATA / "cases3" / "case301.txt"),  # KumaTea/pytorch-aarch64#16: a glibc error (a known message)
    ("--body", DATA / "cases3" / "case330.txt"),  # facebookresearch/detectron2#460: a CPU-only torch asked for CUDA
    ("--body", DATA / "cases" / "case101.txt"),  # a collect_env of an RTX 5090 D: a rule whose message is a template
    ("--event", DATA / "triage" / "vllm-13537.json"),  # vllm-project/vllm#13537: the form's own text (junk)
]
"""Issues of each kind triage meets (tests/data cites them): the ratio asked for is of every one of them."""


def _once(cmd: list[str], env: dict) -> tuple[float, float]:
    wall, cpu, rc = timed(cmd, env)
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {rc}")
    return wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=11)
    ap.add_argument("--body", action="append", help="a body to time instead of the default issues (repeatable)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    inputs = [("--body", Path(b)) for b in args.body] if args.body else INPUTS
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
    rows = {"--help": (td + ["--help"], warm)}
    for flag, path in inputs:
        rows[f"triage {flag} {os.path.relpath(path, REPO)}"] = (td + ["triage", flag, str(path)], warm)
    first = str(inputs[0][1])
    rows["triage, no rule cache (a first run)"] = (td + ["triage", inputs[0][0], first], cold)
    body = next((str(p) for f, p in inputs if f == "--body"), None)
    if body:
        rows["check --from-report (for comparison)"] = (td + ["check", "--from-report", body, "--fail-on", "never"],
                                                        warm)
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in rows}
    for r in range(args.reps + 1):
        for name, (cmd, env) in rows.items():
            t = _once(cmd, env)
            if r:  # the first round warms bytecode and the rule cache
                times[name].append(t)
    med = {k: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for k, v in times.items()}
    shutil.rmtree(cache, ignore_errors=True)
    h = med["--help"]
    ratios = {k: {"wall_s": round(w, 4), "cpu_s": round(c, 4), "ratio_wall": round(w / h[0], 2),
                  "ratio_cpu": round(c / h[1], 2)} for k, (w, c) in med.items()}
    triaged = [k for k in ratios if k.startswith("triage -")]
    worst = max(triaged, key=lambda k: ratios[k]["ratio_wall"])
    result = {"reps": args.reps, "rows": ratios, "worst_triage": worst,
              "worst_ratio_wall": ratios[worst]["ratio_wall"], "worst_ratio_cpu": ratios[worst]["ratio_cpu"]}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{'command':58} {'wall (median)':>14} {'cpu (median)':>13} {'x --help':>9}")
        for name, row in ratios.items():
            print(f"{name:58} {row['wall_s']:13.3f}s {row['cpu_s']:12.3f}s {row['ratio_wall']:8.2f}x")
        print(f"worst triage / --help: {result['worst_ratio_wall']}x wall, {result['worst_ratio_cpu']}x cpu "
              f"(target <= 3x): {worst}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
