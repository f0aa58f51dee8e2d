"""Per-case verdicts of `torchdoctor check --from-report` on the cases in this directory.

Usage (from the checkout whose code is to be judged, with its virtualenv active):

    python tests/data/cases2/baseline.py            # prints the Markdown table and the summary
    python tests/data/cases2/baseline.py --root DIR # judge the code in another checkout DIR
    python tests/data/cases2/baseline.py --cases tests/data/cases3   # another directory of cases

Verdicts, per case (the rule of tests/test_corpus.py):
- environment_cause true and diagnosable_from_report true: "found" when an error or warning
  finding's category is one of expected_categories, else "missed";
- environment_cause false: "false alarm" when any error-level finding, else "ok";
- anything else: "fixture" (parse and evaluate only);
- exit status 2 (the report was refused): "refused", whatever the kind.
Categories finer than the rules' own (library-shadowed, compile-python-unsupported,
extension-mismatch) count through tests/test_corpus.py's CATEGORY_RULES (one mapping for both).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SERIOUS = ("error", "warning")


def _category_rules() -> dict:
    """tests/test_corpus.py's CATEGORY_RULES, read without importing pytest or torchdoctor."""
    import ast

    tree = ast.parse((HERE.parent.parent / "test_corpus.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "CATEGORY_RULES":
            return {ast.literal_eval(k): set(ast.literal_eval(v.args[0]))
                    for k, v in zip(node.value.keys, node.value.values)}
    return {}


CATEGORY_RULES = _category_rules()


def run_case(root: Path, txt: Path) -> tuple[int, dict | None, str]:
    env = dict(os.environ, PYTHONPATH=str(root))
    proc = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--from-report", str(txt),
         "--format", "json", "--fail-on", "never"],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )
    data = None
    if proc.returncode == 0:
        try:
            data = json.loads(proc.stdout)
        except ValueError:
            data = None
    err = proc.stderr.strip().splitlines()
    return proc.returncode, data, err[-1] if err else ""


def verdict(meta: dict, rc: int, data: dict | None) -> tuple[str, list[str]]:
    if rc == 2 or data is None:
        return "refused", []
    findings = data.get("findings") or []
    fired = [f"{f['id']}:{f['severity']}" for f in findings]
    cause, diag = meta.get("environment_cause"), meta.get("diagnosable_from_report")
    expected = set(meta.get("expected_categories") or [])
    if cause is True and diag:
        for f in findings:
            cats = {f.get("category")}
            cats |= {c for c, ids in CATEGORY_RULES.items() if f["id"] in ids}
            if f["severity"] in SERIOUS and cats & expected:
                return "found", fired
        return "missed", fired
    if cause is False:
        return ("false alarm" if any(f["severity"] == "error" for f in findings) else "ok"), fired
    return "fixture", fired


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", type=Path, default=HERE.parents[2])
    ap.add_argument("--cases", type=Path, default=HERE, help="the directory of caseNNN.txt/.json")
    args = ap.parse_args()
    rows = ["| case | project | shape | cause | expected | verdict | rules fired |",
            "|---|---|---|---|---|---|---|"]
    counts: dict[str, int] = {}
    for txt in sorted(args.cases.resolve().glob("case*.txt")):
        meta = json.loads(txt.with_suffix(".json").read_text(encoding="utf-8"))
        rc, data, err = run_case(args.root.resolve(), txt)
        v, fired = verdict(meta, rc, data)
        counts[v] = counts.get(v, 0) + 1
        cause = {True: "env", False: "healthy", None: "open"}[meta.get("environment_cause")]
        if cause == "env" and not meta.get("diagnosable_from_report"):
            cause = "env (not in text)"
        reason = err.split(": ")[-1] if err else f"exit {rc}"
        shown = ", ".join(fired) or (f"exit {rc}: {reason[:70]}" if v == "refused" else "none")
        rows.append(f"| {txt.stem} | {meta.get('project', '')} | {meta.get('shape', '')} "
                    f"| {cause} | "
                    f"{', '.join(meta.get('expected_categories') or []) or '-'} | {v} | {shown} |")
    print("\n".join(rows))
    print("\nsummary: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())) +
          f"; {sum(counts.values())} cases")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
