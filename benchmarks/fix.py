"""What the tree check of `lint --fix` (torchdoctor/lint/fixcheck.py) costs.

Lints the real scripts of tests/data/fix-corpus, each with N fixable statements appended (a typo,
a function replaced by a value, deprecated autocast/GradScaler calls with positional arguments),
with the per-finding tree check on (as shipped) and off (the check replaced by `True`), and runs
`fix_source` on them. Medians of --reps runs, in milliseconds.

Usage: python benchmarks/fix.py [--reps 7] [--inject 40]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from torchdoctor.lint import engine  # noqa: E402
from torchdoctor.lint.knowledge import load  # noqa: E402
from torchdoctor.lint.versions import parse  # noqa: E402

INJECT = ["torch.backends.cudnn.determinstic = True", "torch.backends.cuda.enable_flash_sdp = False",
          "ctx = torch.cuda.amp.autocast(True, torch.float16)", "s = torch.cuda.amp.GradScaler(1024.0)"]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--inject", type=int, default=40)
    a = ap.parse_args()
    know = load()
    rules = [r for r in know.rules if r.default]
    texts = [p.read_text(encoding="utf-8") + "\nimport torch\n" +
             "\n".join(INJECT[i % len(INJECT)] for i in range(a.inject)) + "\n"
             for p in sorted((ROOT / "tests" / "data" / "fix-corpus").glob("*.py.txt"))]
    lines = sum(t.count("\n") for t in texts)

    def lint(t: str) -> list:
        return engine.lint_source(t, "x.py", know, rules, parse("2.13"), "2.13")

    def timed(fn) -> float:
        runs = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            for t in texts:
                fn(t)
            runs.append((time.perf_counter() - t0) * 1000)
        return statistics.median(runs)

    shipped = engine._keep_fixes_that_hold
    checked = timed(lint)
    fixed = timed(lambda t: engine.fix_source(t, lint, False))
    engine._keep_fixes_that_hold = lambda source, tree, findings: None
    unchecked = timed(lint)
    engine._keep_fixes_that_hold = shipped
    n = sum(1 for t in texts for f in lint(t) if f.fix)
    print(f"{len(texts)} real scripts, {lines} lines, {n} fixable findings")
    print(f"lint, tree check on : {checked:8.1f} ms")
    print(f"lint, tree check off: {unchecked:8.1f} ms  (the check costs {checked - unchecked:.1f} ms, "
          f"{(checked - unchecked) / max(n, 1):.2f} ms a fixable finding)")
    print(f"fix_source (checked, until nothing is left): {fixed:8.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
