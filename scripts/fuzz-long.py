#!/usr/bin/env python3
"""The long run of the pipeline fuzz (tests/test_pipeline_fuzz.py): many more inputs than CI.

    python scripts/fuzz-long.py --count 20000 --out /tmp/fuzz-long          # foreground
    nohup python scripts/fuzz-long.py --count 20000 --out /tmp/fuzz-long &  # background

Same strategies and invariants as the CI test, without shrinking and without stopping at the
first failure: every input runs, each failure is classified (violation kind and where, or
exception type and the frame it came from) and the first input of each class is saved in
full under ``--out`` (``failure-N.bin`` / ``.txt``) with a summary. ``--long-lines`` raises
the longest inserted line (CI: 20,000 characters). Progress goes to ``--out/progress.log``;
the result, also printed at the end, to ``--out/summary.json``: inputs run, how many loaded,
failures by class, known bugs by name, and the slowest input (seconds and a truncated
description).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def describe(value, limit: int = 240) -> str:
    kind = "bytes" if isinstance(value, bytes) else "str"
    text = repr(value)
    return f"{kind}[{len(value)}] {text[:limit]}{' …' if len(text) > limit else ''}"


def signature(exc: BaseException) -> str:
    from tests.test_pipeline_fuzz import Violation

    if isinstance(exc, Violation):
        where = exc.where.split(" value at ")[0].split(" key at ")[0]
        return f"{exc.kind} | {where}"
    frames = traceback.extract_tb(exc.__traceback__)
    inner = [f for f in frames if "/torchdoctor/" in f.filename] or frames
    last = inner[-1] if inner else None
    at = f"{Path(last.filename).name}:{last.lineno} {last.name}" if last else "?"
    return f"{type(exc).__name__} | {at}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=20_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="fuzz-long-out")
    ap.add_argument("--long-lines", type=int, default=100_000,
                    help="longest line a text mutation inserts (default 100,000)")
    ap.add_argument("--sweep", action="store_true",
                    help="first run every number of every recorded machine at an extreme "
                         "(2**40, -2**40, 2**63, 10**400, 1e308, ...), one at a time")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    import tests.test_pipeline_fuzz as fz
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies as st

    fz.LONG_LINE_MAX = args.long_lines
    state = {
        "count": 0,
        "loaded": 0,
        "outputs": 0,
        "failures": {},
        "known": {},
        "slowest": {"seconds": 0.0},
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "long_lines": args.long_lines,
        "seed": args.seed,
    }
    log = open(out / "progress.log", "a", encoding="utf-8")
    t_start = time.monotonic()

    def save() -> None:
        state["elapsed_s"] = round(time.monotonic() - t_start, 1)
        (out / "summary.json").write_text(json.dumps(state, indent=2, ensure_ascii=True))

    @seed(args.seed)
    @settings(max_examples=args.count, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(
        a=fz.any_input,
        b=fz.any_input,
        tasks=st.lists(st.sampled_from(fz.TASKS), min_size=1, max_size=2, unique=True).map(tuple),
        width=st.sampled_from([40, 80, 100, 160]),
        names=st.tuples(fz.file_name, fz.file_name),
    )
    def one(a, b, tasks, width, names):
        state["count"] += 1
        t0 = time.perf_counter()
        try:
            outcome = fz.run_pipeline(a, b, tasks, width, names)
            state["loaded"] += outcome.loaded
            state["outputs"] += outcome.outputs
        except Exception as exc:  # noqa: BLE001 - every input runs; failures are recorded
            name = fz.known_bug(exc)
            if name is not None:
                state["known"][name] = state["known"].get(name, 0) + 1
            else:
                sig = signature(exc)
                entry = state["failures"].get(sig)
                if entry is None:
                    n = len(state["failures"]) + 1
                    stem = out / f"failure-{n}"
                    for side, value in (("a", a), ("b", b)):
                        raw = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
                        (stem.parent / f"{stem.name}-{side}.bin").write_bytes(raw)
                    (stem.parent / f"{stem.name}.txt").write_text(
                        f"{sig}\n{str(exc)[:2000]!r}\ntasks={tasks} width={width} names={names!r}\n\n"
                        + "".join(traceback.format_exception(exc))[-6000:], encoding="utf-8",
                        errors="backslashreplace")
                    entry = state["failures"][sig] = {
                        "count": 0, "file": stem.name, "message": str(exc)[:300],
                        "a": describe(a), "b": describe(b), "tasks": list(tasks), "width": width}
                entry["count"] += 1
        seconds = time.perf_counter() - t0
        if seconds > state["slowest"]["seconds"]:
            state["slowest"] = {"seconds": round(seconds, 3), "a": describe(a), "b": describe(b),
                                "tasks": list(tasks), "width": width, "at_input": state["count"]}
        if state["count"] % 250 == 0:
            elapsed = time.monotonic() - t_start
            log.write(f"{time.strftime('%H:%M:%S')} {state['count']} inputs, {elapsed:.0f} s, "
                      f"{sum(e['count'] for e in state['failures'].values())} failures in "
                      f"{len(state['failures'])} classes, known {state['known']}, slowest "
                      f"{state['slowest']['seconds']} s\n")
            log.flush()
            save()

    if args.sweep:
        sweep = {"count": 0, "failures": {}}
        state["sweep"] = sweep
        base = json.dumps(fz.FACTS[0])
        for what, text in fz.extreme_inputs():
            sweep["count"] += 1
            t0 = time.perf_counter()
            try:
                fz.run_pipeline(text, base, ("llm-training",), 100)
            except Exception as exc:  # noqa: BLE001
                if fz.known_bug(exc) is None:
                    entry = sweep["failures"].setdefault(signature(exc), {"count": 0, "first": what,
                                                                          "message": str(exc)[:300]})
                    entry["count"] += 1
            seconds = time.perf_counter() - t0
            if seconds > state["slowest"]["seconds"]:
                state["slowest"] = {"seconds": round(seconds, 3), "a": f"sweep: {what}", "b": "-",
                                    "tasks": ["llm-training"], "width": 100, "at_input": 0}
        log.write(f"{time.strftime('%H:%M:%S')} sweep: {sweep['count']} inputs, "
                  f"{len(sweep['failures'])} failure classes\n")
        log.flush()
        save()
    one()
    save()
    print(json.dumps(state, indent=2, ensure_ascii=True))
    return 1 if state["failures"] or state.get("sweep", {}).get("failures") else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
