"""The cache of parsed rules and tables (torchdoctor/rulecache.py): used when its key matches
the files, never trusted beyond what a rule file could hold, safe to delete, off with
TORCHDOCTOR_NO_CACHE=1, and kept only in a directory that is the user's alone.

Speed is not asserted here (benchmarks/startup.py measures it); what is asserted is that the
cache is read, that a stale or forged entry changes nothing, and where it may live."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from torchdoctor import rulecache, rules, tables
from torchdoctor.cli import main
from torchdoctor.paths import default_rules_dir


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A fresh cache directory for this test; nothing of this process's memo is reused."""
    directory = tmp_path / "cache"
    monkeypatch.setenv(rulecache.ENV_DIR, str(directory))
    monkeypatch.delenv(rulecache.ENV_DISABLE, raising=False)
    rules._MEMO.clear()
    yield directory
    rules._MEMO.clear()


def rule_entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("rules-*.json"))


def test_rules_are_cached_and_the_cache_is_read(cache):
    first = rules.load_rules()
    [entry] = rule_entries(cache)
    assert oct(cache.stat().st_mode & 0o777) == "0o700"
    data = json.loads(entry.read_text())
    assert data["format"] == rulecache.FORMAT and len(data["data"]) == len(first)
    # the next load reads the entry: a summary changed in it (key kept) comes back
    data["data"][0]["summary"] = "read from the cache"
    entry.write_text(json.dumps(data))
    rules._MEMO.clear()
    again = rules.load_rules()
    assert again[0].summary == "read from the cache"
    assert [r.id for r in again] == [r.id for r in first]


def test_an_entry_whose_key_differs_is_ignored_and_rewritten(cache):
    expected = {r.id: r.summary for r in rules.load_rules()}
    [entry] = rule_entries(cache)
    data = json.loads(entry.read_text())
    data["key"] = "0" * 64
    data["data"][0]["summary"] = "stale"
    entry.write_text(json.dumps(data))
    rules._MEMO.clear()
    assert {r.id: r.summary for r in rules.load_rules()} == expected
    assert json.loads(entry.read_text())["data"][0]["summary"] != "stale"


@pytest.mark.parametrize(
    "forge",
    [
        lambda d: d["data"][0].update(severity="catastrophic"),  # fails the Rule model
        lambda d: d["data"].pop(),  # one rule short
        lambda d: d.update(data="not a list"),
    ],
    ids=["invalid-rule", "missing-rule", "wrong-shape"],
)
def test_a_forged_entry_is_revalidated_not_trusted(cache, forge):
    expected = {r.id: r.model_dump() for r in rules.load_rules()}
    [entry] = rule_entries(cache)
    data = json.loads(entry.read_text())
    forge(data)
    entry.write_text(json.dumps(data))
    rules._MEMO.clear()
    assert {r.id: r.model_dump() for r in rules.load_rules()} == expected


@pytest.mark.parametrize("garbage", [b"", b"{", b"\x00\xff" * 100, b"[]", b'{"format": 1}'])
def test_a_corrupt_entry_is_ignored(cache, garbage):
    rules.load_rules()
    [entry] = rule_entries(cache)
    entry.write_bytes(garbage)
    rules._MEMO.clear()
    assert len(rules.load_rules()) > 50


def test_an_edited_user_rule_is_never_stale(cache, tmp_path, capsys, facts_file):
    pack = tmp_path / "pack" / "team"
    pack.mkdir(parents=True)
    source = default_rules_dir() / "threads" / next(p.name for p in (default_rules_dir() / "threads").glob("*.yaml"))
    rule_id = source.stem + "-copy"
    text = source.read_text().replace(f"id: {source.stem}", f"id: {rule_id}")
    (pack / f"{rule_id}.yaml").write_text(text)
    assert main(["rules", "list", "--rules", str(pack.parent), "--format", "json"]) in (0, None)
    listed = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rule_id in listed
    (pack / f"{rule_id}.yaml").write_text(text.replace("summary:", "summary: EDITED", 1))
    rules._MEMO.clear()
    assert main(["rules", "list", "--rules", str(pack.parent), "--format", "json"]) in (0, None)
    listed = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert listed[rule_id]["summary"].startswith("EDITED")


def test_no_cache_env_writes_nothing(cache, monkeypatch):
    monkeypatch.setenv(rulecache.ENV_DISABLE, "1")
    rules.load_rules()
    assert not cache.exists()


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="POSIX ownership")
def test_a_directory_others_can_write_is_not_used(cache):
    cache.mkdir(mode=0o700)
    os.chmod(cache, 0o777)
    rules.load_rules()
    assert rule_entries(cache) == []


@pytest.mark.skipif(not hasattr(os, "O_NOFOLLOW"), reason="symlink refusal")
def test_a_symlinked_entry_is_not_followed(cache, tmp_path):
    rules.load_rules()
    [entry] = rule_entries(cache)
    elsewhere = tmp_path / "planted.json"
    data = json.loads(entry.read_text())
    data["data"][0]["summary"] = "planted through a symlink"
    elsewhere.write_text(json.dumps(data))
    entry.unlink()
    entry.symlink_to(elsewhere)
    rules._MEMO.clear()
    assert all(r.summary != "planted through a symlink" for r in rules.load_rules())


def test_deleting_the_cache_is_safe_and_no_temp_files_stay(cache):
    rules.load_rules()
    shutil.rmtree(cache)
    rules._MEMO.clear()
    assert len(rules.load_rules()) > 50
    assert [p.name for p in cache.iterdir() if p.name.endswith(".tmp")] == []


def test_data_comes_back_exactly_or_is_not_cached(cache):
    import datetime

    for data in ({"a": 1}, {True: "on", 1: "one", None: [1.5, {"k": False}]}):
        assert rulecache.store("x.json", "k", data) is True
        back = rulecache.load("x.json", "k")
        assert back == data and [type(k) for k in back] == [type(k) for k in data]
    assert rulecache.load("x.json", "other key") is None
    for data in ([float("nan")], {"when": datetime.date(2024, 1, 1)}, {"t": (1, 2)}):
        assert rulecache.store("y.json", "k", data) is False
        assert rulecache.load("y.json", "k") is None


def test_tables_come_from_the_cache_and_follow_the_file(cache, tmp_path, monkeypatch):
    copy = tmp_path / "data"
    shutil.copytree(default_rules_dir() / "data", copy)
    monkeypatch.setattr(tables, "data_dir", lambda: copy)
    tables.load.cache_clear()
    try:
        first = tables.load("torch_releases")
        [entry] = sorted(cache.glob("table-torch_releases-*.json"))
        assert json.loads(entry.read_text())["data"] == first
        path = copy / "torch_releases.yaml"
        path.write_text(path.read_text() + "\nextra_key_for_the_test: 1\n")
        tables.load.cache_clear()
        assert tables.load("torch_releases")["extra_key_for_the_test"] == 1
    finally:
        tables.load.cache_clear()


def test_a_table_error_still_names_its_line(cache, tmp_path, monkeypatch):
    copy = tmp_path / "data"
    shutil.copytree(default_rules_dir() / "data", copy)
    path = copy / "gpu_models.yaml"
    text = path.read_text()
    path.write_text(text.replace("  - cc: 12.1\n", "  - cc: twelve\n", 1))
    line = next(i for i, row in enumerate(path.read_text().splitlines(), 1) if row == "  - cc: twelve")
    monkeypatch.setattr(tables, "data_dir", lambda: copy)
    tables.load.cache_clear()
    try:
        with pytest.raises(tables.DataFileError, match=f"gpu_models.yaml:{line}: 'cc' must be a number, got 'twelve'"):
            tables.load("gpu_models")
    finally:
        tables.load.cache_clear()


def test_the_cache_keeps_a_bounded_number_of_entries(cache):
    for i in range(rulecache.MAX_ENTRIES + 10):
        assert rulecache.store(f"entry-{i}.json", "k", {"i": i})
    names = {p.name for p in cache.glob("*.json")}
    assert len(names) == rulecache.MAX_ENTRIES
    assert f"entry-{rulecache.MAX_ENTRIES + 9}.json" in names


def test_a_change_in_a_subpackage_module_changes_the_cache_key():
    """The key covers every module, subpackages included: a changed table model
    (tables/models/) or importer must never be served entries checked by the old code."""
    import os
    from pathlib import Path

    from torchdoctor import rulecache

    module = Path(rulecache.__file__).resolve().parent / "tables" / "models" / "_base.py"
    before = rulecache._code_fingerprint()
    st = module.stat()
    try:
        os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
        assert rulecache._code_fingerprint() != before
    finally:
        os.utime(module, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert rulecache._code_fingerprint() == before


def test_rules_without_examples_come_from_their_own_entry_and_say_the_same(cache):
    """load_rules(examples=False) (triage) reads an entry without the examples; every other field is what the full
    load gives, and a forged core entry is re-validated like the full one."""
    full = rules.load_rules()
    [core] = sorted(cache.glob("rulecore-*.json"))
    data = json.loads(core.read_text())
    assert all("examples" not in raw for raw in data["data"]) and len(data["data"]) == len(full)
    rules._MEMO.clear()
    lean = rules.load_rules(examples=False)
    assert all(not hasattr(r, "examples") for r in lean)
    assert [r.model_dump() for r in lean] == [{k: v for k, v in r.model_dump().items() if k != "examples"}
                                               for r in full]
    data["data"][0]["severity"] = "catastrophic"  # fails the model: the files are parsed again
    core.write_text(json.dumps(data))
    rules._MEMO.clear()
    assert [r.severity for r in rules.load_rules(examples=False)] == [r.severity for r in full]
    data["data"][0]["severity"] = "info" if full[0].severity != "info" else "warning"  # valid: read back
    data["key"] = json.loads(core.read_text())["key"]
    core.write_text(json.dumps(data))
    rules._MEMO.clear()
    assert rules.load_rules(examples=False)[0].severity == data["data"][0]["severity"]


def test_the_settings_checks_run_until_these_bytes_passed_them(cache, tmp_path):
    """settings.yaml's checks across settings are skipped only for bytes a load already checked: a setting the
    model accepts but a check refuses (no writer) fails on its first load, and is never vouched for."""
    from torchdoctor import settings
    from torchdoctor.errors import RuleFileError

    source = (default_rules_dir() / "settings.yaml").read_text(encoding="utf-8")
    path = tmp_path / "settings.yaml"
    path.write_text(source, encoding="utf-8")
    settings._load_registry.cache_clear()
    settings.load_registry(path)
    assert len(sorted(cache.glob(f"{settings.CHECKED_ENTRY}-*.json"))) == 1
    no_writer = ("settings:\n  zz_no_writer:\n    kind: code\n    type: bool\n    summary: x\n"
                 "    references: [x]\n")
    path.write_text(source.replace("settings:\n", no_writer, 1), encoding="utf-8")
    for _ in range(2):  # refused, and refused again: nothing vouched for these bytes
        settings._load_registry.cache_clear()
        with pytest.raises(RuleFileError, match="zz_no_writer.*needs `python` or `values`"):
            settings.load_registry(path)
    settings._load_registry.cache_clear()


def _rglob_rule_files(directory: Path) -> list[Path]:
    """What rules.rule_files gave before it read the tree with os.scandir."""
    out = []
    for path in sorted(directory.rglob("*.yaml")):
        rel = path.relative_to(directory).parts
        if len(rel) >= 2 and rel[0] not in rules.NON_RULE_DIRS:
            out.append(path)
    return out


def test_rule_files_are_what_rglob_gives_in_its_order(tmp_path):
    assert rules.rule_files(default_rules_dir()) == _rglob_rule_files(default_rules_dir())
    tree = tmp_path / "r"
    for rel in ("settings.yaml", "a/x.yaml", "a/b/y.yaml", "a-b/z.yaml", "a.b/w.yaml", "data/t.yaml", "lint/l.yaml",
                "c/data/v.yaml", "c/notes.txt", "c/.hidden.yaml", "Z/u.yaml"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("id: x\n")
    (tree / "linked").symlink_to(tree / "a", target_is_directory=True)  # rglob does not walk into it
    assert rules.rule_files(tree) == _rglob_rule_files(tree)
    assert [p.relative_to(tree).as_posix() for p in rules.rule_files(tree)][:3] == ["Z/u.yaml", "a/b/y.yaml",
                                                                                     "a/x.yaml"]


def test_the_settings_digest_is_the_registrys_own(cache):
    from torchdoctor import settings

    assert settings.settings_digest() == settings.load_registry()._digest
