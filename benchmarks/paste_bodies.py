"""Cost of reading whole issue bodies (issue 18): `check --from-report` on a 50 kB body must stay
under 0.5 s, and the readers (collect_env's scanner, the paste reader, the known-message reader)
must stay linear in the size of the text.

Inputs:
- ``real 50 kB``: the real issue bodies of tests/data/cases3 concatenated until 50 kB (prose,
  tracebacks, NCCL logs, pip errors, a collect_env), the shape the target is about;
- ``real 1 MB``: the same, to 1 MB (a pasted CI log);
- adversarial 1 MB inputs for the known-message reader: every needle's near miss repeated
  (``GLIBC_2.`` without "not found", "undefined symbol" without a ``.so``, "or one of its
  dependencies" after a long quote with no ``torch\\lib``), one long line, and a million short
  lines.

Each row times (minimum of ``--reps`` runs) the pipeline of ``check --from-report`` in process:
read the bytes (``importers.load_report``), evaluate the shipped rules, render the terminal
report; ``messages`` is the known-message reader alone. The ``cli 50 kB`` row is the whole
command as a user runs it (a new interpreter: imports and rule loading included). A row over its
limit is flagged SLOW and the script exits 1: 0.5 s for the 50 kB rows, and for the 1 MB rows
``--per-mb`` seconds (default 8; linear means 20x the 50 kB time, not 400x).

Usage: python benchmarks/paste_bodies.py [--reps 3] [--json]

Measured on the 2-core development machine (2026-12-02, minimum of 3): real 50 kB 0.07 s in
process (known messages 0.003 s); real 1 MB 0.35 s; the 1 MB near-miss inputs 0.02-0.75 s
(known messages 0.001-0.06 s), so 20x the text costs 5-10x the time, never more: linear. As a
new process the 50 kB body takes 0.67 s, of which 0.52 s is the start-up a one-line text also
pays (interpreter, imports, rule loading).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from torchdoctor.engine import evaluate  # noqa: E402
from torchdoctor.importers import load_report  # noqa: E402
from torchdoctor.importers.paste.messages import find_messages  # noqa: E402
from torchdoctor.render.terminal import render  # noqa: E402
from torchdoctor.rules import load_rules  # noqa: E402

CASES = ROOT / "tests" / "data" / "cases3"


def real(size: int) -> str:
    bodies = [p.read_text(encoding="utf-8") for p in sorted(CASES.glob("case*.txt"))]
    out, n = [], 0
    while n < size:
        for b in bodies:
            out.append(b)
            n += len(b) + 1
            if n >= size:
                break
    return "\n".join(out)[:size]


def _rep(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def inputs() -> dict[str, tuple[Callable[[], str], float]]:
    mb = 1_000_000
    return {
        "real 50 kB": (lambda: real(50_000), 0.5),
        "real 1 MB": (lambda: real(mb), -1.0),
        "near-miss GLIBC_2. (1 MB)": (lambda: _rep("version `GLIBC_2.28' is here\n", mb), -1.0),
        "near-miss undefined symbol (1 MB)": (lambda: _rep("/x/y undefined symbol: z\n", mb), -1.0),
        "near-miss dll quote (1 MB)": (lambda: _rep('Error loading "' + "C:\\a" * 100 + '" or one of its dependencies\n', mb), -1.0),
        "one 1 MB line": (lambda: _rep("NCCL WARN a ", mb), -1.0),
        "1 MB of short lines": (lambda: _rep("x\n", mb), -1.0),
    }


def time_it(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def cli_seconds(text: str, reps: int) -> float:
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write(text)
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        cmd = [sys.executable, "-m", "torchdoctor", "check", "--from-report", f.name, "--fail-on", "never"]
        return time_it(lambda: subprocess.run(cmd, env=env, capture_output=True, check=False), reps)
    finally:
        os.unlink(f.name)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--per-mb", type=float, default=8.0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rules = load_rules()
    rows = []
    for name, (make, limit) in inputs().items():
        text = make()
        data = text.encode("utf-8")
        limit = limit if limit > 0 else args.per_mb * len(data) / 1_000_000

        def pipeline() -> None:
            render(evaluate(rules, load_report(data, "body.txt")))

        total = time_it(pipeline, args.reps)
        msgs = time_it(lambda: find_messages(text), args.reps)
        rows.append({"input": name, "bytes": len(data), "seconds": round(total, 4),
                     "messages_seconds": round(msgs, 4), "limit": round(limit, 2),
                     "slow": total > limit})
    text = real(50_000)
    cli = cli_seconds(text, args.reps)
    tiny = cli_seconds("torch 2.5.1\n", args.reps)
    rows.append({"input": "cli 50 kB (new process, imports included)", "bytes": len(text.encode()),
                 "seconds": round(cli, 4), "messages_seconds": None, "limit": None, "slow": False})
    rows.append({"input": "cli one line (the same start-up, for scale)", "bytes": 12,
                 "seconds": round(tiny, 4), "messages_seconds": None, "limit": None, "slow": False})
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        print(f"| input | bytes | check --from-report (s) | messages alone (s) | limit (s) |")
        print("|---|---|---|---|---|")
        for r in rows:
            flag = " SLOW" if r["slow"] else ""
            print(f"| {r['input']} | {r['bytes']} | {r['seconds']}{flag} | {r['messages_seconds']} | {r['limit']} |")
    return 1 if any(r["slow"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
