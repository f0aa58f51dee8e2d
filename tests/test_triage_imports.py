"""What `torchdoctor triage` imports: the comment is Markdown (or JSON), so a run never loads the template
engine, the terminal renderer, the GPU tables' models or the probes; with the rule cache warm it parses no YAML.
Speed itself is measured by benchmarks/triage_speed.py, never asserted here. Also the rule cache's entry of
linear paste regexes (torchdoctor/importers/paste/wording.py): used when it is ours, ignored when it is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor import rulecache, rules, tables
from torchdoctor.importers.paste import wording

REPO = Path(__file__).resolve().parent.parent
BODY = REPO / "tests" / "data" / "cases3" / "case301.txt"  # KumaTea/pytorch-aarch64#16 (cases3/README.md)
NEVER = ("jinja2", "rich", "torch", "torchdoctor.tables.models", "torchdoctor.probes.packages",
         "torchdoctor.probes._torch_child", "torchdoctor.probes._sys", "torchdoctor.lint", "torchdoctor.bench.core",
         "concurrent.futures", "subprocess", "pydantic")
"""Never imported by a triage of a body (markdown or json) with the rule cache warm: no template, no terminal, no
probe, no child, and no pydantic (the models are torchdoctor.lean's: torchdoctor/model.py)."""
CHECKING = {"yaml", "jinja2", "torchdoctor.tables.models", "pydantic"}
"""What a run without a usable cache imports to parse and check the rule and data files (each rule's message
template is compiled by the sandbox to be checked; the data tables' models are pydantic's): never the rest of
NEVER."""

_CODE = (
    "import sys\n"
    "from torchdoctor.cli import main\n"
    "rc = main(sys.argv[1:])\n"
    "print('LOADED', sorted(m for m in {names!r} if m in sys.modules), rc, file=sys.stderr)\n"
)


def _triage(env: dict, *args: str) -> tuple[list, str]:
    names = NEVER + tuple(sorted(CHECKING))
    done = subprocess.run([sys.executable, "-c", _CODE.format(names=names), "triage", "--body", str(BODY), *args],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    line = [ln for ln in done.stderr.splitlines() if ln.startswith("LOADED ")]
    assert line, done.stderr[-2000:]
    loaded, rc = line[-1][len("LOADED "):].rsplit(" ", 1)
    assert rc in ("0", "None"), done.stderr[-2000:]
    return eval(loaded), done.stdout  # noqa: S307 - our own child's repr of a list of module names


@pytest.mark.parametrize("fmt", ["markdown", "json"])
def test_triage_imports_no_template_engine_terminal_tables_models_or_probes(tmp_path, fmt):
    env = {k: v for k, v in os.environ.items() if k != rulecache.ENV_DISABLE}
    env[rulecache.ENV_DIR] = str(tmp_path / "cache")
    cold, out_cold = _triage(env, "--format", fmt)  # fills the cache: parses and checks the files
    assert "glibc-too-old" in out_cold
    assert set(cold) <= CHECKING
    warm, out_warm = _triage(env, "--format", fmt)
    assert warm == [] and out_warm == out_cold  # warm: no YAML parsed either, and the same comment


def test_without_the_cache_triage_still_imports_none_of_them(tmp_path):
    env = dict(os.environ, **{rulecache.ENV_DISABLE: "1"})
    loaded, out = _triage(env)
    assert set(loaded) <= CHECKING and "glibc-too-old" in out


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv(rulecache.ENV_DIR, str(directory))
    monkeypatch.delenv(rulecache.ENV_DISABLE, raising=False)
    monkeypatch.setattr(wording, "_LINEAR", {})
    monkeypatch.setattr(wording, "_KNOWN", None)
    wording.patterns.cache_clear()
    rules._MEMO.clear()
    yield directory
    wording.patterns.cache_clear()


def _count_checks(monkeypatch) -> list:
    checked: list = []
    real = wording._check_linear

    def counting(regex, where):
        checked.append(regex)
        return real(regex, where)

    monkeypatch.setattr(wording, "_check_linear", counting)
    return checked


def test_shipped_regexes_checked_once_then_read_from_the_cache(cache, monkeypatch):
    checked = _count_checks(monkeypatch)
    first = wording.patterns()
    assert checked  # a cold start checks every regex
    entry = json.loads((cache / wording.LINEAR_ENTRY).read_text())
    assert sorted(set(checked)) == sorted(entry["data"])
    # each with its group names, as the compiled pattern has them
    assert all(entry["data"][m.regex.pattern] == sorted(m.regex.groupindex, key=m.regex.groupindex.get)
               for m in first.messages)
    checked.clear()
    monkeypatch.setattr(wording, "_LINEAR", {})  # a new process
    monkeypatch.setattr(wording, "_KNOWN", None)
    wording.patterns.cache_clear()
    again = wording.patterns()
    assert checked == []  # vouched for by the entry
    assert [m.regex.pattern for m in again.messages] == [m.regex.pattern for m in first.messages]
    # compiled when first used, and the same pattern then
    lazy = again.messages[0].regex
    assert isinstance(lazy, wording.LazyPattern) and lazy._compiled is None
    assert lazy.groupindex == dict(first.messages[0].regex.groupindex)
    sample = "RuntimeError: CUDA error: no kernel image is available for execution on the device"
    for new, old in zip(again.messages, first.messages):
        assert bool(new.regex.search(sample)) == bool(old.regex.search(sample))
    assert lazy._compiled is not None


@pytest.mark.parametrize("garbage", [b"", b"{not json", b'{"format": 1, "key": "x", "data": ["a"]}',
                                     b"[1, 2]", json.dumps({"format": 1, "key": None, "data": 7}).encode()])
def test_a_corrupt_or_stale_linear_entry_means_every_regex_is_checked(cache, monkeypatch, garbage):
    cache.mkdir(mode=0o700, exist_ok=True)
    (cache / wording.LINEAR_ENTRY).write_bytes(garbage)
    checked = _count_checks(monkeypatch)
    p = wording.patterns()
    assert p.messages and len(set(checked)) == len({m.regex.pattern for m in p.messages} | set(checked))
    assert set(checked) >= {m.regex.pattern for m in p.messages}
    assert sorted(json.loads((cache / wording.LINEAR_ENTRY).read_text())["data"]) == sorted(set(checked))  # rewritten


def test_the_entry_never_vouches_for_a_pattern_file_of_another_directory(cache, tmp_path, monkeypatch):
    import yaml

    shipped = tables.load(wording.PATTERNS_FILE)
    bad = r"(?:a+)+b"  # nested, unbounded: catastrophic backtracking
    data = json.loads(json.dumps(shipped))
    data["device_string"] = bad
    other = tmp_path / "data"
    other.mkdir()
    (other / f"{wording.PATTERNS_FILE}.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")
    # a forged entry of the right key naming the bad regex: trusted for the shipped file only
    cache.mkdir(mode=0o700, exist_ok=True)
    rulecache.store(wording.LINEAR_ENTRY, rulecache.make_key([]), {bad: []})
    with pytest.raises(tables.DataFileError, match="repetition"):
        wording.patterns(str(other))


def test_a_json_body_is_read_with_pydantic_as_check_reads_it(tmp_path):
    """torchdoctor's facts JSON pasted as a body is validated by pydantic's models, never the lean ones."""
    env = {k: v for k, v in os.environ.items() if k != rulecache.ENV_DISABLE}
    env[rulecache.ENV_DIR] = str(tmp_path / "cache")
    body = tmp_path / "facts.json"
    body.write_text(json.dumps({"schema_version": 1, "origin": "probe", "torch": {"unavailable": "not installed"}}))
    code = ("import sys\nfrom torchdoctor.cli import main\nrc = main(sys.argv[1:])\n"
            "import torchdoctor.model as m\nprint('BACKEND', m.backend(), 'pydantic' in sys.modules, file=sys.stderr)\n")
    done = subprocess.run([sys.executable, "-c", code, "triage", "--body", str(body), "--format", "json"],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert "BACKEND pydantic True" in done.stderr, done.stderr[-2000:]
    plain = subprocess.run([sys.executable, "-c", code, "triage", "--body", str(BODY)],
                           capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert "BACKEND lean" in plain.stderr, plain.stderr[-2000:]
