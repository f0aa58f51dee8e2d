"""Precision and recall of `torchdoctor lint` on held-out, labelled real scripts.

Runs `torchdoctor lint --format json --torch-version 2.13 DIR` on a temporary copy of
tests/data/lint-real/ (real public training scripts, labelled by hand in labels.yaml without
reading the linter's rules; the copy because the files are git-ignored where they live) and
scores its findings per kind (fake-setting, replaced-object, pitfall, deprecated):

  true positive   a finding in a labelled file on a label's line (or one of its `also:` lines)
                  with the label's kind
  false positive  any other finding (listed, with the label or not_findings entry it hit)
  false negative  a label no finding matched (listed)
  optional        a finding on an `optional:` label (a real mistake outside the linter's
                  scope): counted neither way, listed
Findings are de-duplicated by (file, line, kind) first. Precision = TP / (TP + FP) over
findings; recall = labels found / labels.

Usage: python benchmarks/lint_precision.py [--data DIR] [--torch-version V] [--json]
The data files are written by `python benchmarks/lint_data.py` (they are not committed).
Exit codes: 0 scored, 2 the data or the linter is not usable (one line saying which).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lint_data import DataMissing, staged  # noqa: E402  (a sibling script, not a package)

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data" / "lint-real"
KINDS = ("fake-setting", "replaced-object", "pitfall", "deprecated")
TIMEOUT_S = 300


class Unusable(Exception):
    """The data or the linter cannot be used: one line for the user."""


def load_labels(data: Path) -> dict:
    try:
        labels = yaml.safe_load((data / "labels.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise Unusable(f"{data / 'labels.yaml'}: {exc.__class__.__name__}: {exc}") from None
    return labels


def run_lint(data: Path, torch_version: str) -> list[dict]:
    argv = [sys.executable, "-m", "torchdoctor", "lint", "--format", "json",
            "--torch-version", torch_version, str(data)]
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=TIMEOUT_S,
                              cwd=data.parent, env=dict(os.environ), check=False)
    except subprocess.TimeoutExpired:
        raise Unusable(f"`torchdoctor lint` did not finish in {TIMEOUT_S} s") from None
    tail = (proc.stderr.strip().splitlines() or [""])[-1][:200]
    if proc.returncode not in (0, 1):
        raise Unusable(f"`torchdoctor lint` is not usable here (exit {proc.returncode}): {tail}")
    try:
        findings = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise Unusable("`torchdoctor lint --format json` did not print JSON "
                       f"(exit {proc.returncode}; stderr: {tail})") from None
    if not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings):
        raise Unusable("`torchdoctor lint --format json` did not print a list of objects")
    return findings


def kind_of(finding: dict) -> str:
    tags = [t for t in finding.get("tags") or [] if t in KINDS]
    return tags[0] if len(tags) == 1 else ("?" if not tags else "+".join(tags))


def score(labels: dict, findings: list[dict]) -> dict:
    files = labels["files"]
    seen: set[tuple[str, int, str]] = set()
    tp, fp, optional = [], [], []
    found: set[tuple[str, int]] = set()  # (file, label line) of labels matched
    for f in findings:
        name, line, kind = Path(str(f.get("path", ""))).name, int(f.get("line", 0)), kind_of(f)
        if (name, line, kind) in seen:
            continue
        seen.add((name, line, kind))
        row = {"file": name, "line": line, "kind": kind, "id": f.get("id"),
               "message": str(f.get("message", ""))[:160]}
        spec = files.get(name, {})
        hits = [lab for lab in spec.get("findings") or []
                if kind == lab["kind"] and line in (lab["line"], *lab.get("also", []))]
        if hits:
            tp.append(row)
            found.update((name, lab["line"]) for lab in hits)
        elif any(kind == o["kind"] and line == o["line"] for o in spec.get("optional") or []):
            optional.append(row)
        else:
            why = [f"label {lab['kind']} {lab['name']}" for lab in spec.get("findings") or []
                   if line in (lab["line"], *lab.get("also", []))]
            why += [f"not_finding: {n['why']}" for n in spec.get("not_findings") or []
                    if n["line"] == line]
            row["note"] = "; ".join(why) or ("unlabelled file" if name not in files else "")
            fp.append(row)
    fn = [{"file": name, "line": lab["line"], "kind": lab["kind"], "name": lab["name"]}
          for name, spec in files.items() for lab in spec.get("findings") or []
          if (name, lab["line"]) not in found]
    per_kind = {}
    for k in (*KINDS, "?"):
        n_labels = sum(lab["kind"] == k for spec in files.values()
                       for lab in spec.get("findings") or [])
        n_tp = sum(r["kind"] == k for r in tp)
        n_fp = sum(r["kind"] == k for r in fp)
        n_fn = sum(r["kind"] == k for r in fn)
        if n_labels or n_tp or n_fp:
            per_kind[k] = {"labels": n_labels, "found": n_labels - n_fn, "tp": n_tp, "fp": n_fp,
                           "fn": n_fn}
    total = {key: sum(v[key] for v in per_kind.values())
             for key in ("labels", "found", "tp", "fp", "fn")}
    for v in (*per_kind.values(), total):
        v["precision"] = round(v["tp"] / (v["tp"] + v["fp"]), 3) if v["tp"] + v["fp"] else None
        v["recall"] = round(v["found"] / v["labels"], 3) if v["labels"] else None
    return {"per_kind": per_kind, "total": total, "false_positives": fp, "false_negatives": fn,
            "optional": optional}


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def render(result: dict, n_files: int, n_findings: int) -> str:
    out = [f"{n_files} labelled files, {n_findings} findings\n",
           "| kind | labels | found | missed | TP findings | FP findings | precision | recall |",
           "|---|---|---|---|---|---|---|---|"]
    for k, v in [*result["per_kind"].items(), ("**total**", result["total"])]:
        out.append(f"| {k} | {v['labels']} | {v['found']} | {v['fn']} | {v['tp']} | {v['fp']} | "
                   f"{pct(v['precision'])} | {pct(v['recall'])} |")
    for title, key, fmt in (
            ("False positives", "false_positives",
             "- {file}:{line} [{kind}] {id}: {message} ({note})"),
            ("False negatives", "false_negatives", "- {file}:{line} [{kind}] {name}"),
            ("Optional (real, out of scope)", "optional", "- {file}:{line} [{kind}] {id}")):
        rows = result[key]
        out.append(f"\n{title}: {len(rows)}")
        out += [fmt.format(**r) for r in rows]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--torch-version", default=None,
                    help="default: labels.yaml's torch_version")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    try:
        labels = load_labels(args.data.resolve())
        version = args.torch_version or str(labels.get("torch_version", "2.13"))
        with staged(args.data.resolve()) as copy:
            findings = run_lint(copy, version)
    except (Unusable, DataMissing) as exc:
        print(f"lint_precision: {exc}", file=sys.stderr)
        return 2
    result = score(labels, findings)
    kinds = Counter(kind_of(f) for f in findings)
    if args.json:
        print(json.dumps({**result, "findings_by_kind": kinds, "torch_version": version}, indent=2))
    else:
        print(render(result, len(labels["files"]), len(findings)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
