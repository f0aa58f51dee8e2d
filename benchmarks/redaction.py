"""Cost of redaction on adversarial text: every pattern must be linear in the input.

Each input is ``--size`` characters (default 1 MB) built to make a backtracking pattern work
as hard as it can: no ``@`` or ``://`` (where the e-mail and URL-credential patterns used to
rescan), one character class throughout, near misses repeated (``a@``, ``x://``, ``hf_``,
``eyJ``, dotted quads, ``AKIA``), long base64-ish runs, and the same strings as a facts field,
as an environment variable value (where the random-string fallback also runs) and as a
version-valued field. Redaction of a typical report is timed beside them for scale.

Usage: python benchmarks/redaction.py [--size 1000000] [--reps 3] [--json] [--only NAME]
Times are the minimum of ``--reps`` runs of :func:`torchdoctor.redact.redact_text`, in
seconds, with the throughput; a row over ``--limit`` seconds (default 2) is flagged SLOW and
the script exits 1.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from torchdoctor import redact  # noqa: E402


def _rep(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _b64(size: int, alphabet: str) -> str:
    rng = random.Random(8)
    return "".join(rng.choice(alphabet) for _ in range(size))


def inputs(size: int) -> dict[str, Callable[[], str]]:
    b64 = string.ascii_letters + string.digits + "+/"
    return {
        "one letter (a...)": lambda: _rep("a", size),
        "word chars and dots (a.a.a...)": lambda: _rep("a.", size),
        "e-mail local part, no @ (a.b-c_d+e%...)": lambda: _rep("ab.c-d_e+f%", size),
        "near-miss e-mails (a@ a@ ...)": lambda: _rep("a@", size),
        "@ then a long domain (a@b.b.b...)": lambda: "a@" + _rep("b.", size - 2),
        "near-miss URLs (x:// repeated)": lambda: _rep("x://", size),
        "scheme chars, no :// (a+b-c.d...)": lambda: _rep("a+b-c.d", size),
        "URL userinfo without @ (h://u:ppp...)": lambda: "h://u:" + _rep("p", size - 6),
        "base64-ish run": lambda: _b64(size, b64),
        "base64-ish with slashes (AWS-like)": lambda: _b64(size, b64 + "////"),
        "near-miss tokens (hf_ ghp_ AKIA eyJ sk-)": lambda: _rep("hf_abc ghp_x AKIA12 eyJa.b sk-q ", size),
        "JWT-like dots (eyJaaa.aaa.aaa...)": lambda: "eyJ" + _rep("aaaaaaaaaa.", size - 3),
        "dotted quads on one line (1.2.3.4 ...)": lambda: _rep("10.1.2.3 ", size),
        "versions after a label (cuda 12.1.3.1 ...)": lambda: _rep("cuda 12.1.3.1 ", size),
        "hex and colons (ab:ab:ab:...)": lambda: _rep("ab:", size),
        "secret assignment names (TOKEN_TOKEN_...)": lambda: _rep("TOKEN_", size),
        "home paths (/home/a/home/a...)": lambda: _rep("/home/a", size),
        "digits only": lambda: _rep("7", size),
        "control characters and ESC": lambda: _rep("\x1b[0m\x00a", size),
    }


CONTEXTS = {
    "free text": ("message", ()),
    "env value": ("PYTORCH_BLOB", ("env", "variables")),
    "version field": ("version", ("torch",)),
}


def typical_text() -> str:
    sample = ROOT / "tests" / "data" / "corpus" / "case023.txt"
    return sample.read_text(encoding="utf-8") if sample.exists() else "PyTorch version: 2.1.0\n"


def time_call(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=1_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--limit", type=float, default=2.0)
    ap.add_argument("--only", default="")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    redact._identity.cache_clear()
    rows = []
    typical = typical_text()
    t = time_call(lambda: redact.redact_text(typical, "message"), max(args.reps, 20))
    rows.append({"input": f"typical collect_env report ({len(typical)} chars)", "context": "free text",
                 "seconds": t, "mb_per_s": len(typical) / t / 1e6})
    for name, make in inputs(args.size).items():
        if args.only and args.only not in name:
            continue
        text = make()
        for ctx, (key, path) in CONTEXTS.items():
            t = time_call(lambda: redact.redact_text(text, key, path), args.reps)
            rows.append({"input": name, "context": ctx, "seconds": t, "mb_per_s": len(text) / t / 1e6})
    slow = [r for r in rows if r["seconds"] > args.limit]
    if args.json:
        print(json.dumps({"size": args.size, "rows": rows, "slow": len(slow)}, indent=2))
    else:
        print(f"redact_text on {args.size:,}-character inputs (min of {args.reps} runs)\n")
        print(f"| input | context | seconds | MB/s |")
        print("|---|---|---:|---:|")
        for r in rows:
            flag = " SLOW" if r["seconds"] > args.limit else ""
            print(f"| {r['input']} | {r['context']} | {r['seconds']:.3f}{flag} | {r['mb_per_s']:.1f} |")
        print(f"\nslowest: {max(r['seconds'] for r in rows):.3f} s; over {args.limit} s: {len(slow)}")
    return 1 if slow else 0


if __name__ == "__main__":
    sys.exit(main())
