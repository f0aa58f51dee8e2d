"""torchdoctor lint against TorchFix on the same trees (issue 21): findings per class side by
side, what each finds that the other does not, and the wall time of each.

    python benchmarks/torchfix_compare.py [--mirror DIR] [--torchfix PATH] [--repos a/b,c/d]
                                          [--torch-version 2.4,2.13] [--show N] [--json]

The trees are the HEAD of git snapshots under ``--mirror`` (default ``$TORCHDOCTOR_LINT_MIRROR``
or ``/work/.mirror``, layout ``DIR/<owner>+<repo>/repo``, a bare git directory such as the
``fetch`` tool or ``git clone --bare`` writes), written to a temporary folder outside the
checkout: the ``.py``/``.pyi``/``.ipynb`` files and ``.gitignore`` files of ``git ls-tree``, read
with ``git cat-file --batch`` (``git archive`` stops at the first blob a partial snapshot lacks,
such as sd-scripts' DLLs; such blobs are skipped and counted). Both tools lint the same folder.

TorchFix (``torchfix --select ALL``, its own virtual environment: it is not a torchdoctor
dependency) is found by ``--torchfix PATH``, else ``torchfix`` on PATH; without it its columns
say so and torchdoctor still runs. torchdoctor runs once per ``--torch-version`` (TorchFix does
not know the target torch: ``torch.load`` without ``weights_only`` matters before 2.6 only).

A TorchFix finding is *matched* when torchdoctor reports, at the same file and line, a rule
that covers its class (:data:`COVERS`, the table in docs/lint.md); a TorchFix class that
torchdoctor does not check on purpose is listed as a disagreement (:data:`DISAGREES`), with the
reason. Exit 2 with one line when a snapshot is missing or torchdoctor cannot run. Every
subprocess has a timeout; no network is used.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPOS = ["karpathy/minGPT", "facebookresearch/detr", "facebookresearch/fairseq", "kohya-ss/sd-scripts",
         "Lightning-AI/litgpt"]
SUFFIXES = (".py", ".pyi", ".ipynb")
TIMEOUT = 1800
_TF_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<code>TOR\d{3}) (?P<msg>.*)$")
_TF_NAME = re.compile(r"(?:function|Import of \w+ function) `?([A-Za-z_][\w.]*)`?")

COVERS = {
    "TOR001": {"deprecated-torch-function"}, "TOR004": {"deprecated-torch-function"},
    "TOR101": {"deprecated-torch-function", "deprecated-torch-api"},
    "TOR103": {"deprecated-torch-function", "deprecated-torch-api"},
    "TOR002": {"requires-grad-typo"}, "TOR003": {"checkpoint-without-use-reentrant"},
    "TOR102": {"torch-load-without-weights-only"}, "TOR104": {"deprecated-torch-function"},
    "TOR105": {"deprecated-torch-function"}, "TOR201": {"torchvision-pretrained"},
    "TOR202": {"deprecated-torch-function"},
}
"""TorchFix code -> the torchdoctor rules that report the same thing (docs/lint.md's table)."""
DISAGREES = {
    "TOR102": "from torch 2.6 torch.load defaults to weights_only=True: leaving it out is safe there",
    "TOR401": "num_workers=0 is a valid choice (tests, small or iterable datasets): not a defect lint can tell",
    "TOR106": "torch.log(1 + x) -> log1p: a numerical style suggestion, not a torch API or version issue",
    "TOR107": "torch.exp(x) - 1 -> expm1: a numerical style suggestion, not a torch API or version issue",
    "TOR203": "`import torchvision.models as models` is a style preference, not a defect",
    "TOR901": "torch.library.Library in PyTorch's own tests: internal to PyTorch development",
}


def export(gitdir: str, dest: str) -> tuple:
    """(files written, blobs missing from the snapshot) of HEAD's lintable files."""
    ls = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "-z", "HEAD"], capture_output=True,
                        timeout=300, check=True).stdout.split(b"\0")
    want = []
    for row in ls:
        if not row:
            continue
        meta, path = row.split(b"\t", 1)
        mode, kind, sha = meta.split()
        name = path.decode("utf-8", "surrogateescape")
        if kind == b"blob" and mode != b"120000" and (name.endswith(SUFFIXES) or os.path.basename(name) == ".gitignore"):
            want.append((sha.decode(), name))
    out = subprocess.run(["git", "--git-dir", gitdir, "cat-file", "--batch"], capture_output=True, timeout=600,
                         input="".join(s + "\n" for s, _ in want).encode()).stdout
    i = written = missing = 0
    for _, name in want:
        nl = out.index(b"\n", i)
        header = out[i:nl].split()
        i = nl + 1
        if header[-1] == b"missing":
            missing += 1
            continue
        size = int(header[2])
        data, i = out[i:i + size], i + size + 1
        full = os.path.join(dest, name)
        if os.path.realpath(full).startswith(os.path.realpath(dest) + os.sep):
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "wb") as fh:
                fh.write(data)
            written += 1
    return written, missing


def run_torchdoctor(tree: str, version: str) -> tuple:
    cmd = [sys.executable, "-m", "torchdoctor", "lint", "--format", "json", "--fail-on", "never",
           "--torch-version", version, tree]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT, cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=ROOT))
    took = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"torchfix_compare: torchdoctor lint failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    found = []
    for f in json.loads(r.stdout):
        found.append((os.path.relpath(f["path"], tree), f["line"], f["id"], f["message"], f.get("cell")))
    return found, took


def run_torchfix(exe: str, tree: str) -> tuple:
    t0 = time.perf_counter()
    r = subprocess.run([exe, "--select", "ALL", "."], capture_output=True, text=True, timeout=TIMEOUT, cwd=tree)
    took = time.perf_counter() - t0
    found = []
    for line in r.stdout.splitlines():
        m = _TF_LINE.match(line)
        if m:
            found.append((os.path.normpath(m["path"]), int(m["line"]), m["code"], m["msg"]))
    return found, took


def tf_class(code: str, msg: str) -> str:
    if code in ("TOR001", "TOR004", "TOR101", "TOR103", "TOR104", "TOR105"):
        m = _TF_NAME.search(msg) or re.search(r"`([A-Za-z_][\w.]*)`", msg)
        return f"{code} {m.group(1)}" if m else code
    return code


def td_class(rule: str, msg: str) -> str:
    if rule in ("deprecated-torch-function", "deprecated-torch-api"):
        return f"{rule} {msg.split(' ', 1)[0]}"
    return rule


def compare(tf: list, td: list) -> dict:
    at = defaultdict(set)
    for path, line, rule, _msg, cell in td:
        if cell is None:
            at[(path, line)].add(rule)
    rows = defaultdict(Counter)
    misses = []
    for path, line, code, msg in tf:
        cls = tf_class(code, msg)
        rows[cls]["torchfix"] += 1
        if at[(path, line)] & COVERS.get(code, set()):
            rows[cls]["both"] += 1
        else:
            misses.append((cls, path, line))
    td_only = Counter()
    tf_at = {(p, ln) for p, ln, _c, _m in tf}
    for path, line, rule, msg, cell in td:
        if cell is not None or (path, line) not in tf_at:
            td_only[td_class(rule, msg)] += 1
    return {"rows": rows, "misses": misses, "td_only": td_only}


def _cache_read(path, key):
    if not path or not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        if [list(k) for k in key] != data["commits"]:
            return None
        return [tuple(f) for f in data["findings"]], float(data["seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", default=os.environ.get("TORCHDOCTOR_LINT_MIRROR", "/work/.mirror"))
    ap.add_argument("--torchfix", default=shutil.which("torchfix"))
    ap.add_argument("--repos", default=",".join(REPOS))
    ap.add_argument("--torch-version", default="2.4,2.13")
    ap.add_argument("--show", type=int, default=20, help="TorchFix findings torchdoctor misses to list")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--torchfix-cache", help="JSON file keeping TorchFix's findings and time per set of commits: "
                    "reused when the commits match (TorchFix takes tens of minutes on these trees), written otherwise")
    args = ap.parse_args(argv)
    versions = [v.strip() for v in args.torch_version.split(",") if v.strip()]
    with tempfile.TemporaryDirectory(prefix="torchfix-compare-") as tmp:
        tree = os.path.join(tmp, "tree")
        counts = {}
        for repo in args.repos.split(","):
            gitdir = os.path.join(args.mirror, repo.replace("/", "+"), "repo")
            if not os.path.isdir(gitdir):
                print(f"torchfix_compare: no snapshot of {repo} at {gitdir}", file=sys.stderr)
                return 2
            sub = os.path.join(tree, repo.replace("/", "+"))
            os.makedirs(sub)
            head = subprocess.run(["git", "--git-dir", gitdir, "rev-parse", "HEAD"], capture_output=True,
                                  text=True, timeout=60).stdout.strip()
            counts[repo] = (head,) + export(gitdir, sub)
        td = {v: run_torchdoctor(tree, v) for v in versions}
        key = sorted((r, c[0]) for r, c in counts.items())
        cached = _cache_read(args.torchfix_cache, key)
        if cached is not None:
            tf, tf_time = cached
            print(f"TorchFix: findings and time reused from {args.torchfix_cache} (same commits)", file=sys.stderr)
        else:
            tf, tf_time = run_torchfix(args.torchfix, tree) if args.torchfix else (None, None)
            if tf is not None and args.torchfix_cache:
                with open(args.torchfix_cache, "w", encoding="utf-8") as fh:
                    json.dump({"commits": key, "seconds": tf_time, "findings": tf}, fh)
        n_files = sum(1 for _d, _s, fs in os.walk(tree) for f in fs if f.endswith(SUFFIXES))
    result = {"repos": {r: {"commit": c, "files": n, "missing_blobs": m} for r, (c, n, m) in counts.items()},
              "files": n_files, "torchdoctor_s": {v: round(td[v][1], 2) for v in versions},
              "torchfix_s": None if tf_time is None else round(tf_time, 2)}
    newest = versions[-1]
    per_version = {v: compare(tf or [], td[v][0]) for v in versions}
    if args.json:
        result["classes"] = {cls: {"torchfix": c["torchfix"], **{f"both@{v}": per_version[v]["rows"][cls]["both"]
                                                                 for v in versions}}
                             for cls, c in per_version[newest]["rows"].items()}
        result["torchdoctor_only"] = {v: dict(per_version[v]["td_only"]) for v in versions}
        print(json.dumps(result, indent=2))
        return 0
    print(f"{n_files} files from {len(counts)} repositories:")
    for r, (c, n, m) in counts.items():
        print(f"  {r} @ {c[:12]}: {n} files" + (f" ({m} blobs absent from the snapshot)" if m else ""))
    print()
    if tf is None:
        print("TorchFix: not found (pass --torchfix PATH); torchdoctor only.\n")
    head = "| class | TorchFix | " + " | ".join(f"torchdoctor {v} also" for v in versions) + " | note |"
    print(head)
    print("|" + "---|" * (len(versions) + 3))
    for cls in sorted(per_version[newest]["rows"]):
        code = cls.split()[0]
        cells = [str(per_version[v]["rows"][cls]["both"]) for v in versions]
        note = DISAGREES.get(code, "") if any(per_version[v]["rows"][cls]["both"] < per_version[v]["rows"][cls]["torchfix"]
                                              for v in versions) else ""
        print(f"| {cls} | {per_version[newest]['rows'][cls]['torchfix']} | " + " | ".join(cells) + f" | {note} |")
    print()
    print("| only torchdoctor finds | " + " | ".join(f"torch {v}" for v in versions) + " |")
    print("|" + "---|" * (len(versions) + 1))
    for cls in sorted(set().union(*(per_version[v]["td_only"] for v in versions))):
        print(f"| {cls} | " + " | ".join(str(per_version[v]["td_only"][cls]) for v in versions) + " |")
    print()
    print("| tool | wall s |\n|---|---|")
    if tf_time is not None:
        print(f"| `torchfix --select ALL` | {tf_time:.2f} |")
    for v in versions:
        print(f"| `torchdoctor lint --torch-version {v}` | {td[v][1]:.2f} |")
    misses = per_version[newest]["misses"]
    if misses and args.show:
        print(f"\nTorchFix findings torchdoctor (torch {newest}) does not report at the same line: {len(misses)}")
        for cls, path, line in misses[:args.show]:
            print(f"  {path}:{line}: {cls} - {DISAGREES.get(cls.split()[0], '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
