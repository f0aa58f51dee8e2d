"""Speed of `torchdoctor lint` against TorchFix on a tree of real training scripts.

Runs, interleaved, on the same machine in one invocation (after one discarded warm-up round):
  torchfix --select ALL TREE        the incumbent (TorchFix, in its own virtual environment)
  torchdoctor lint TREE             goal: >= 25x faster than TorchFix
  torchdoctor lint FILE             one training script; goal <= 0.2 s wall
TREE is a temporary copy of benchmarks/data/lint-tree/ (real scripts from well-known
repositories, cited in its SOURCES.md; written by `python benchmarks/lint_data.py`, never
committed; the copy because the files are git-ignored where they live and both tools must see
the same tree). Medians of --reps runs, with files/s, lines/s and the children's CPU time
(on a shared machine the CPU column is the steadier one). TorchFix runs with its default
--jobs (one per core); torchdoctor lint as it comes. No network is used.

Install TorchFix apart from the project:
  python -m venv /tmp/torchfix-venv && /tmp/torchfix-venv/bin/pip install torchfix

Usage: python benchmarks/lint.py [--reps 3] [--torchfix PATH] [--file NAME] [--json]
  --torchfix PATH  the torchfix executable (default: /tmp/torchfix-venv/bin/torchfix, else PATH);
                   where none is found its row says so and the rest still runs
  --file NAME      the single file, by its name in the tree (default: nanoGPT's train.py)
Exit codes: 0 measured, 2 the data or `torchdoctor lint` is not usable (one line saying which).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_data import DataMissing, read_sources, staged  # noqa: E402  (sibling scripts)
from startup import time_once  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TREE = REPO / "benchmarks" / "data" / "lint-tree"
DEFAULT_FILE = "karpathy__nanoGPT__train.py"
DEFAULT_TORCHFIX = "/tmp/torchfix-venv/bin/torchfix"
PROBE_TIMEOUT_S = 60


def find_torchfix(given: str | None) -> str | None:
    if given:
        return given if shutil.which(given) else None
    return DEFAULT_TORCHFIX if os.access(DEFAULT_TORCHFIX, os.X_OK) else shutil.which("torchfix")


def probe_lint(td: list[str], env: dict, cwd: str) -> str | None:
    """None when `torchdoctor lint` runs; else one line saying why not."""
    try:
        proc = subprocess.run([*td, "lint", "--help"], capture_output=True, text=True,
                              timeout=PROBE_TIMEOUT_S, env=env, cwd=cwd, check=False)
    except subprocess.TimeoutExpired:
        return f"`torchdoctor lint --help` did not finish in {PROBE_TIMEOUT_S} s"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or [""])[-1][:200]
        return f"`torchdoctor lint` is not usable here (exit {proc.returncode}): {tail}"
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--torchfix", default=None)
    ap.add_argument("--file", default=DEFAULT_FILE)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if args.reps < 1:
        print("lint: --reps must be at least 1", file=sys.stderr)
        return 2
    rows_src = read_sources(TREE)
    if args.file not in {r["file"] for r in rows_src}:
        print(f"lint: --file {args.file!r} is not a file of {TREE.name}", file=sys.stderr)
        return 2
    torchfix = find_torchfix(args.torchfix)
    td = [sys.executable, "-m", "torchdoctor"]
    with tempfile.TemporaryDirectory(prefix="td-lint-bench-") as tmp:
        env = dict(os.environ)
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # both tools run from cached bytecode
        env["TORCHDOCTOR_CACHE_DIR"] = os.path.join(tmp, "cache")
        why = probe_lint(td, env, tmp)
        if why:
            print(f"lint: {why}", file=sys.stderr)
            return 2
        try:
            with staged(TREE) as tree:
                files = sorted(tree.glob("*.py"))
                n_lines = sum(f.read_bytes().count(b"\n") for f in files)
                one = tree / args.file
                cmds = {"torchdoctor lint TREE": [*td, "lint", str(tree)],
                        f"torchdoctor lint {args.file}": [*td, "lint", str(one)]}
                if torchfix:
                    cmds = {"torchfix --select ALL TREE": [torchfix, "--select", "ALL", str(tree)],
                            **cmds}
                # warm-up (bytecode, caches, page cache); TorchFix on the one file only: a run
                # on the tree costs minutes and warms nothing more
                warm = [cmds[k] for k in cmds if k.startswith("torchdoctor")]
                if torchfix:
                    warm.append([torchfix, "--select", "ALL", str(one)])
                for cmd in warm:
                    time_once(cmd, env, tmp)
                wall: dict[str, list[float]] = {k: [] for k in cmds}
                cpu: dict[str, list[float]] = {k: [] for k in cmds}
                for _ in range(args.reps):  # interleaved, so drift hits every command alike
                    for name, cmd in cmds.items():
                        w, c = time_once(cmd, env, tmp)
                        wall[name].append(w)
                        cpu[name].append(c)
        except DataMissing as exc:
            print(f"lint: {exc}", file=sys.stderr)
            return 2
    one_lines = (TREE / args.file).read_bytes().count(b"\n")
    rows = []
    for name in wall:
        med = statistics.median(wall[name])
        n_f, n_l = (1, one_lines) if args.file in name else (len(files), n_lines)
        rows.append({"command": name, "files": n_f, "lines": n_l, "median_s": round(med, 3),
                     "min_s": round(min(wall[name]), 3), "max_s": round(max(wall[name]), 3),
                     "cpu_median_s": round(statistics.median(cpu[name]), 3),
                     "files_per_s": round(n_f / med, 1), "lines_per_s": round(n_l / med)})
    by = {r["command"]: r for r in rows}
    speedup = None
    if "torchfix --select ALL TREE" in by:
        speedup = round(by["torchfix --select ALL TREE"]["median_s"]
                        / by["torchdoctor lint TREE"]["median_s"], 1)
    info = {"reps": args.reps, "python": sys.version.split()[0], "cpus": os.cpu_count(),
            "torchfix": torchfix, "speedup_vs_torchfix": speedup}
    if args.json:
        print(json.dumps({**info, "rows": rows}, indent=2))
        return 0
    print(f"{args.reps} repetitions, medians (Python {info['python']}, {info['cpus']} CPUs); "
          f"tree: {len(files)} files, {n_lines} lines\n")
    print("| command | files | lines | median s | min s | max s | CPU s | files/s | lines/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| `{r['command']}` | {r['files']} | {r['lines']} | {r['median_s']:.3f} | "
              f"{r['min_s']:.3f} | {r['max_s']:.3f} | {r['cpu_median_s']:.3f} | "
              f"{r['files_per_s']} | {r['lines_per_s']} |")
    if torchfix is None:
        print("\nTorchFix not found: install it with `python -m venv /tmp/torchfix-venv && "
              "/tmp/torchfix-venv/bin/pip install torchfix`, or pass --torchfix PATH")
    else:
        print(f"\ntorchdoctor lint is {speedup}x faster than TorchFix on the tree (goal >= 25x); "
              f"single file: {by[f'torchdoctor lint {args.file}']['median_s']:.3f} s "
              "(goal <= 0.2 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
