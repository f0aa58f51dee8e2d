"""Materialise the real-code data sets of the lint benchmarks from local git snapshots.

The two data sets of `torchdoctor lint`'s must-shows are third-party training scripts:

  tests/data/lint-real/   the labelled held-out set (labels.yaml), scored by lint_precision.py
  benchmarks/data/lint-tree/   the speed tree, timed by lint.py

Third-party code stays out of this repository's commits: what is committed is each folder's
SOURCES.md (one table row a file: repo, 40-hex commit, original path, licence, sha256 of the
bytes) and, for the labelled set, labels.yaml. This script writes the files themselves, byte for
byte, from git snapshots of those repositories found under MIRROR/<owner>+<repo>/repo (a bare
git dir, or a checkout with .git: the layout the workplace's snapshot tool leaves, or a
`git clone --bare` of your own); each file is taken at the exact commit and checked against its
sha256. Written files match the folder's .gitignore, so they are never committed by accident.

Usage: python benchmarks/lint_data.py [--mirror DIR] [--check] [FOLDER ...]
  default FOLDERs: both data sets; --mirror default /work/.mirror (or $TORCHDOCTOR_LINT_MIRROR)
  --check   only report which files are present and intact (exit 1 if any is not)
Exit codes: 0 all files present and verified, 1 some missing (each named on one line), 2 usage.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = (REPO / "tests" / "data" / "lint-real", REPO / "benchmarks" / "data" / "lint-tree")
ROW = re.compile(r"^\|\s*`([^`]+)`\s*\|\s*([\w.-]+/[\w.-]+)\s*\|\s*([0-9a-f]{40})\s*\|"
                 r"\s*`([^`]+)`\s*\|\s*([^|]*?)\s*\|\s*([0-9a-f]{64})\s*\|\s*$")
GIT_TIMEOUT_S = 60


def local_name(repo: str, path: str) -> str:
    """The file's name in a data folder: owner__repo__path with '/' replaced by '__'."""
    return "__".join([*repo.split("/"), *path.split("/")])


def read_sources(folder: Path) -> list[dict]:
    """The rows of FOLDER/SOURCES.md (file, repo, commit, path, license, sha256)."""
    rows = []
    text = (folder / "SOURCES.md").read_text(encoding="utf-8")
    for line in text.splitlines():
        m = ROW.match(line)
        if m:
            rows.append(dict(zip(("file", "repo", "commit", "path", "license", "sha256"),
                                 m.groups())))
    return rows


def git_dir(mirror: Path, repo: str) -> Path | None:
    base = mirror / repo.replace("/", "+") / "repo"
    for cand in (base / ".git", base):
        if (cand / "HEAD").is_file():
            return cand
    return None


def git_show(gdir: Path, commit: str, path: str) -> bytes | None:
    try:
        out = subprocess.run(["git", "--git-dir", str(gdir), "show", f"{commit}:{path}"],
                             capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout if out.returncode == 0 else None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def materialise(folder: Path, mirror: Path, check_only: bool) -> list[str]:
    """Write (or with check_only verify) every file of FOLDER; return one line per problem."""
    problems = []
    for row in read_sources(folder):
        dest = folder / row["file"]
        if dest.is_file() and sha256(dest.read_bytes()) == row["sha256"]:
            continue
        if check_only:
            problems.append(f"{dest.relative_to(REPO)}: missing or changed")
            continue
        gdir = git_dir(mirror, row["repo"])
        if gdir is None:
            problems.append(f"{dest.relative_to(REPO)}: no snapshot of {row['repo']} "
                            f"under {mirror}")
            continue
        data = git_show(gdir, row["commit"], row["path"])
        if data is None:
            problems.append(f"{dest.relative_to(REPO)}: {row['repo']} has no "
                            f"{row['path']} at {row['commit'][:12]}")
        elif sha256(data) != row["sha256"]:
            problems.append(f"{dest.relative_to(REPO)}: sha256 differs from SOURCES.md")
        else:
            dest.write_bytes(data)
    return problems


class DataMissing(Exception):
    """Some files of a data set are not written (one line for the user)."""


@contextlib.contextmanager
def staged(folder: Path) -> Iterator[Path]:
    """A temporary copy of FOLDER's data files, outside any git checkout.

    The files are git-ignored where they live (they must never be committed), and a linter that
    honours .gitignore, as `torchdoctor lint` does, would skip them there; the copy has only
    the data files, so every tool sees the same tree. Raises DataMissing where files are absent.
    """
    rows = read_sources(folder)
    missing = [r["file"] for r in rows if not (folder / r["file"]).is_file()]
    if missing:
        raise DataMissing(f"{len(missing)} of {len(rows)} files of {folder} are not written "
                          "(write them with: python benchmarks/lint_data.py)")
    with tempfile.TemporaryDirectory(prefix=f"td-{folder.name}-") as tmp:
        dest = Path(tmp) / folder.name
        dest.mkdir()
        for r in rows:
            shutil.copyfile(folder / r["file"], dest / r["file"])
        yield dest


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("--mirror", type=Path,
                    default=Path(os.environ.get("TORCHDOCTOR_LINT_MIRROR", "/work/.mirror")))
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    folders = args.folders or list(FOLDERS)
    problems = []
    for folder in folders:
        if not (folder / "SOURCES.md").is_file():
            print(f"lint_data: {folder}: no SOURCES.md", file=sys.stderr)
            return 2
        problems += materialise(folder.resolve(), args.mirror, args.check)
    for line in problems:
        print(f"lint_data: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
