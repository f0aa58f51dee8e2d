"""Speed of the `torchdoctor lint` folder walk: the old walk (pathspec's GitIgnoreSpec for
``.gitignore`` and ``exclude``) against the new one (``torchdoctor.lint.ignore``), on a big
generated tree with a real ``.gitignore`` (GitHub's Python template, tests/data/lint_walk/,
cited in its README.md) at the root and small ones below; then one hostile pattern each.

Both walks must keep the same files (checked; the generated names avoid the constructs where
pathspec and git disagree). Medians of --reps runs after a warm-up, interleaved.

Usage: python benchmarks/lint_walk.py [--dirs 400] [--files 25] [--reps 5]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from torchdoctor.lint import files, ignore  # noqa: E402

GITIGNORE = REPO / "tests" / "data" / "lint_walk" / "Python.gitignore"
DIRS = ["src", "pkg", "models", "data", "lib", "docs", "_build", "target", "env", "cover", "utils",
        "train", "site", "instance", "share", "python-wheels", "x.egg-info", "wheels", "nn", "ops"]
LEAVES = ["train.py", "model.py", "local_settings.py", "ipython_config.py", "a.sage.py", "b.pyc",
          "c.pyi", "nb.ipynb", "m.py,cover", "util.py", "conf.py", "setup.py", "x.log", "README.md"]


def old_walk(root: str, exclude: list):
    """The walk as it was before issue 17 (pathspec; any .gitignore that matches excludes)."""
    import pathspec

    exclude_spec = pathspec.GitIgnoreSpec.from_lines(exclude) if exclude else None
    specs: list = []
    for here, dirs, names in os.walk(root, followlinks=False):
        specs = [(d, s) for d, s in specs if here == d or here.startswith(d.rstrip(os.sep) + os.sep)]
        path = os.path.join(here, ".gitignore")
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as fh:
                specs.append((here, pathspec.GitIgnoreSpec.from_lines(fh.read().splitlines())))

        def ignored(name, is_dir, here=here):
            full = os.path.join(here, name)
            for d, s in specs:
                rel = os.path.relpath(full, d).replace(os.sep, "/") + ("/" if is_dir else "")
                if s.match_file(rel):
                    return True
            if exclude_spec is not None:
                rel = os.path.relpath(full, root).replace(os.sep, "/") + ("/" if is_dir else "")
                return bool(exclude_spec.match_file(rel))
            return False

        dirs[:] = sorted(d for d in dirs if d not in files.SKIP_DIRS and not d.endswith(".egg-info")
                         and not os.path.islink(os.path.join(here, d)) and not ignored(d, True))
        for name in sorted(names):
            if name.endswith(files.SUFFIXES) and not ignored(name, False):
                full = os.path.join(here, name)
                if os.path.isfile(full):
                    yield full


def build(root: Path, n_dirs: int, n_files: int, seed: int = 0) -> int:
    rnd = random.Random(seed)
    count = 0
    (root / ".gitignore").write_bytes(GITIGNORE.read_bytes())
    for i in range(n_dirs):
        depth = rnd.randint(1, 4)
        d = root.joinpath(*[rnd.choice(DIRS) + ("" if rnd.random() < 0.7 else str(i % 7)) for _ in range(depth)])
        d.mkdir(parents=True, exist_ok=True)
        if rnd.random() < 0.05:
            (d / ".gitignore").write_text("*.log\ngenerated_*.py\n/tmp/\n", encoding="utf-8")
        for j in range(n_files):
            name = rnd.choice(LEAVES)
            if rnd.random() < 0.5:
                name = f"f{j}_{name}"
            p = d / name
            if not p.exists():
                p.write_text("x = 1\n", encoding="utf-8")
                count += 1
    return count


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dirs", type=int, default=400)
    ap.add_argument("--files", type=int, default=25)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    exclude = ["tests/data/", "*_pb2.py"]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        n = build(root, args.dirs, args.files)
        old = sorted(old_walk(str(root), exclude))
        new = sorted(files.discover([str(root)], exclude, skipped=[]))
        if old != new:
            print(f"the walks differ: {len(set(old) ^ set(new))} files, e.g. {sorted(set(old) ^ set(new))[:3]}")
            return 2
        rows = {"old (pathspec)": [], "new (ignore.py)": []}
        for rep in range(args.reps + 1):
            t_old = timed(lambda: list(old_walk(str(root), exclude)))
            t_new = timed(lambda: list(files.discover([str(root)], exclude, skipped=[])))
            if rep:
                rows["old (pathspec)"].append(t_old)
                rows["new (ignore.py)"].append(t_new)
        print(f"tree: {n} files in {args.dirs} generated folders, root .gitignore = Python.gitignore "
              f"({len(ignore.IgnoreList(GITIGNORE.read_text().split(chr(10))).patterns)} patterns); "
              f"{len(new)} files kept")
        for name, ts in rows.items():
            med = statistics.median(ts)
            print(f"  {name:18} median {med * 1000:8.1f} ms   ({n / med:,.0f} files/s)")
    print("hostile patterns (one match each):")
    import pathspec

    for k in (6, 8, 10):
        pat = "a/" + "**/a/" * k + "b"
        path = "/".join(["a"] * 30) + "/c"
        t_old = timed(lambda: pathspec.GitIgnoreSpec.from_lines([pat]).match_file(path))
        t_new = timed(lambda: ignore.IgnoreList([pat]).ignored(path))
        print(f"  a/(**/a/)x{k}/b on a 31-deep path: pathspec {t_old:8.3f} s   new {t_new:8.5f} s")
    pat = "*a" * 3 + "*b"
    t_old = timed(lambda: pathspec.GitIgnoreSpec.from_lines([pat]).match_file("a" * 200))
    t_new = timed(lambda: ignore.IgnoreList([pat]).ignored("a" * 200))
    print(f"  {pat} on a 200-character name: pathspec {t_old:8.3f} s   new {t_new:8.5f} s")
    pat = "*a" * 30 + "*b"
    t_new = timed(lambda: ignore.IgnoreList([pat]).ignored("a" * 250))
    print(f"  (*a)x30*b on a 250-character name: pathspec not run (hours)   new {t_new:8.5f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
