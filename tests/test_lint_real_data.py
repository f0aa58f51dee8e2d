"""The held-out real-code data of `torchdoctor lint` is well formed (the data, not the linter).

tests/data/lint-real/ commits SOURCES.md (repo, commit, path, licence, sha256 a file) and
labels.yaml; the third-party files themselves are written by benchmarks/lint_data.py from git
snapshots and never committed. The checks that need the files skip (with the command to run)
where they have not been written; the others always run.
"""

from __future__ import annotations

import hashlib
import importlib.util
import re
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
REAL = REPO / "tests" / "data" / "lint-real"
TREE = REPO / "benchmarks" / "data" / "lint-tree"
KINDS = {"fake-setting", "replaced-object", "pitfall", "deprecated"}
FILE_KEYS = {"findings", "optional", "not_findings", "clean", "notes"}


def _lint_data():
    spec = importlib.util.spec_from_file_location("lint_data", REPO / "benchmarks" / "lint_data.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


LINT_DATA = _lint_data()
LABELS = yaml.safe_load((REAL / "labels.yaml").read_text(encoding="utf-8"))
SOURCES = {folder: LINT_DATA.read_sources(folder) for folder in (REAL, TREE)}


def _entries(spec: dict):
    for key in ("findings", "optional", "not_findings"):
        for entry in spec.get(key) or []:
            yield key, entry


def test_sources_tables_are_complete_and_pinned():
    for folder, rows in SOURCES.items():
        text = (folder / "SOURCES.md").read_text(encoding="utf-8")
        table_lines = [ln for ln in text.splitlines() if ln.startswith("| `")]
        assert len(rows) == len(table_lines), f"{folder.name}: a table row does not parse"
        names = [r["file"] for r in rows]
        assert len(names) == len(set(names)), f"{folder.name}: a file is listed twice"
        for r in rows:
            assert re.fullmatch(r"[0-9a-f]{40}", r["commit"])
            assert r["file"] == LINT_DATA.local_name(r["repo"], r["path"]), r["file"]
            assert r["license"], f"{r['file']}: licence column empty"


def test_every_labelled_file_is_listed_in_sources():
    listed = {r["file"] for r in SOURCES[REAL]}
    assert set(LABELS["files"]) == listed


def test_labels_are_well_formed():
    assert LABELS["torch_version"] == "2.13"
    for name, spec in LABELS["files"].items():
        assert set(spec) <= FILE_KEYS, f"{name}: unknown keys {set(spec) - FILE_KEYS}"
        findings = spec.get("findings") or []
        assert bool(spec.get("clean")) != bool(findings), f"{name}: clean xor findings"
        for key, e in _entries(spec):
            assert isinstance(e["line"], int) and e["line"] >= 1, (name, e)
            assert e["name"] and e["why"], (name, e)
            if key != "not_findings":
                assert e["kind"] in KINDS, (name, e)
            assert all(isinstance(x, int) for x in e.get("also", [])), (name, e)
        lines = [(e["line"], key) for key, e in _entries(spec)]
        label_lines = [ln for ln, key in lines if key != "not_findings"]
        clash = set(label_lines) & {ln for ln, key in lines if key == "not_findings"}
        assert not clash, f"{name}: lines both labelled and not_findings: {clash}"


def test_sets_are_as_large_as_the_must_show_needs():
    real_repos = {r["repo"] for r in SOURCES[REAL]}
    assert len(SOURCES[REAL]) >= 30 and len(real_repos) >= 15
    assert len(SOURCES[TREE]) >= 50


def _require_files(folder: Path):
    missing = [r["file"] for r in SOURCES[folder] if not (folder / r["file"]).is_file()]
    if missing:
        pytest.skip(f"{len(missing)} files of {folder.name} not written: "
                    "run python benchmarks/lint_data.py (needs the git snapshots)")


@pytest.mark.parametrize("folder", [REAL, TREE], ids=["lint-real", "lint-tree"])
def test_written_files_match_their_sha256(folder):
    _require_files(folder)
    for r in SOURCES[folder]:
        data = (folder / r["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == r["sha256"], r["file"]


def test_tree_is_large_enough():
    _require_files(TREE)
    lines = sum((TREE / r["file"]).read_bytes().count(b"\n") for r in SOURCES[TREE])
    assert lines >= 15_000


def test_label_lines_point_at_the_named_api():
    _require_files(REAL)
    for name, spec in LABELS["files"].items():
        text = (REAL / name).read_text(encoding="utf-8").splitlines()
        for _key, e in _entries(spec):
            last = e["name"].rsplit(".", 1)[-1]
            assert e["line"] <= len(text), (name, e)
            assert last in text[e["line"] - 1], f"{name}:{e['line']} does not mention {last}"
            for extra in e.get("also", []):
                assert extra <= len(text), (name, e)
