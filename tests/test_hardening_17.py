"""Issue 17, items 6, 9, 10, 11, 12, 14, 15: each test fails on the code before the fix.

6  terminal escapes from linted files, file names, pyproject values and bench labels are
   sanitised; 9 a hostile lint config is one line, exit 2; 10 a tampered lint knowledge cache
   entry changes nothing --fix writes; 11 non-finite numbers and 5,000-digit versions are
   refused, clipped; 12 redaction of ``user:pass@host`` and ``pw=`` inside a value; 14 the cache
   never creates a home directory; 15 rank 0 caps what it gathers from each rank.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.lint.command import UsageError, read_config, run

TESTS = Path(__file__).resolve().parent
RECORDED = TESTS / "data" / "bench"

# what must never reach a terminal: ESC (CSI, OSC), BEL, other C0, C1 (CSI as one byte), bidi
HOSTILE = "\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://evil.example\x07x\x9b31m\u202e\u2066\x00"
NAME = HOSTILE.replace("/", "").replace("\x00", "")
"""The same in a file name (no slash, no NUL)."""
FORBIDDEN = ["\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\x00"]


def _clean(text: str) -> bool:
    return not any(c in text for c in FORBIDDEN)


def _lint(paths, **kw):
    out, err = [], []
    args = dict(fmt=None, fail_on="never", select=(), ignore=(), extend_select=(), fix=False, diff=False,
                unsafe_fixes=False, torch_version="2.4", config=None)
    args.update(kw)
    code = run(tuple(str(p) for p in paths), write=out.append, err=err.append, **args)
    return code, "".join(out), "\n".join(err)


def _cli(*args, env=None, cwd=None):
    full = {**os.environ, "TORCHDOCTOR_NO_CACHE": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "torchdoctor", *args], capture_output=True, text=True,
                          env=full, cwd=cwd, timeout=120)


# -- 6: escapes ------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["full", "concise", "github"])
def test_lint_text_formats_show_no_escape_from_the_file_name_or_its_source(tmp_path, fmt):
    path = tmp_path / f"train{NAME}.py"
    path.write_text("import torch\n"
                    f"torch.backends.cudnn.benchmrk = True  # {HOSTILE.replace(chr(0), '')}\n")
    code, out, _ = _lint([path], fmt=fmt)
    assert "benchmrk" in out  # the finding is there ...
    assert _clean(out), repr(out)  # ... and nothing that drives the terminal


def test_the_caret_stays_under_the_finding_when_the_line_had_escapes(tmp_path):
    path = tmp_path / "a.py"
    path.write_text('import torch\nx = "\x1b[31m\t"; torch.backends.cudnn.benchmrk = True\n')
    _, out, _ = _lint([path], fmt="full")
    src, caret = [line for line in out.splitlines() if line.startswith(("     2 |", "       | "))][:2]
    at = src.index("torch.backends")  # the finding spans the attribute chain
    assert caret[at] == "^" and caret[at - 1] == " ", (src, caret)


def test_an_error_line_that_echoes_a_file_name_holds_no_escape(tmp_path):
    r = _cli("lint", str(tmp_path / f"missing{NAME}.py"))
    assert r.returncode == 2 and "missing" in r.stderr
    assert _clean(r.stderr), repr(r.stderr)


def _hostile_result():
    data = json.loads((RECORDED / "classification.json").read_text())
    for m in data["measurements"]:
        m["config"]["label"] = m["config"]["label"] + " [link=http://evil.example]" + HOSTILE.replace("\x00", "")
        m["config"]["id"] = m["config"]["id"] + "\x1b[2J"
        if m.get("error"):
            m["error"] += HOSTILE
    data["verdict"]["best"] = data["verdict"]["best"] + "\x1b[2J" if data["verdict"]["best"] else None
    data["verdict"]["plan"] = data["verdict"]["plan"] + "\x1b[2J" if data["verdict"]["plan"] else None
    data["verdict"]["defaults"] = data["verdict"]["defaults"] + "\x1b[2J" if data["verdict"]["defaults"] else None
    data["notes"] = list(data.get("notes") or []) + ["note " + HOSTILE]
    return data


@pytest.mark.parametrize("fmt", ["terminal", "markdown"])
def test_bench_labels_ids_and_notes_are_shown_without_escapes_or_markup(fmt):
    from torchdoctor.bench.results import BenchResult
    from torchdoctor.render import bench as render_bench

    result = BenchResult.model_validate(_hostile_result())
    text = render_bench.render(result, fmt, width=400)
    assert "link=http://evil.example" in text  # shown as text, not made a hyperlink (OSC 8)
    assert _clean(text), repr(text)


def test_measured_labels_read_back_are_sanitised_before_they_are_cited(tmp_path):
    from torchdoctor.bench.core import plan_for
    from torchdoctor.facts import Facts
    from torchdoctor.workload import build_workload

    path = tmp_path / "bench.json"
    path.write_text(json.dumps(_hostile_result()))
    facts = Facts.model_validate_json((RECORDED / "facts.json").read_text())
    plan = plan_for(facts, build_workload(task="classification", overrides={}, source="test"),
                    measured=str(path))
    cited = [s.reason for s in plan.settings if "measured by torchdoctor bench" in s.reason]
    assert cited and all("link=http://evil.example" in r for r in cited)
    assert all(_clean(r) for r in cited), cited


# -- 9: hostile lint config --------------------------------------------------------------------

DEEP = "a = " + "[" * 100_000 + "]" * 100_000 + "\n"


@pytest.mark.parametrize("toml,what", [
    ("tool = 1\n", "[tool] must be a table"),
    ("[tool]\ntorchdoctor = 5\n", "[tool.torchdoctor] must be a table"),
    ("[tool.torchdoctor]\nlint = 3\n", "[tool.torchdoctor.lint] must be a table"),
    ('[tool.torchdoctor.lint]\nexclude = ["!"]\n', "exclude"),
    ('[tool.torchdoctor.lint]\nexclude = [""]\n', "exclude"),
    ("[tool.torchdoctor.lint]\nfail-on = 5\n", "fail-on"),
    ('[tool.torchdoctor.lint]\nfail-on = ["error"]\n', "fail-on"),
    ("[tool.torchdoctor.lint]\nformat = {a = 1}\n", "format"),
    ("[tool.torchdoctor.lint]\ntorch-version = 2.4\n", "torch-version"),
    ("[tool.torchdoctor.lint]\ntorch-version = [2]\n", "torch-version"),
    (f'[tool.torchdoctor.lint]\ntorch-version = "2.{"4" * 5000}"\n', "torch-version"),
    (DEEP, "nested too deeply"),
])
def test_a_hostile_lint_config_is_one_line_exit_2(tmp_path, toml, what):
    (tmp_path / "pyproject.toml").write_text(toml)
    (tmp_path / "a.py").write_text("import torch\n")
    r = _cli("lint", "--config", str(tmp_path / "pyproject.toml"), str(tmp_path / "a.py"))
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(lines) == 1 and lines[0].startswith("torchdoctor: error: lint: "), r.stderr[-2000:]
    assert what in lines[0] and "internal error" not in lines[0] and len(lines[0]) < 400


def test_a_valid_config_still_reads():
    # the checks refuse only what is wrong
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "pyproject.toml"
        p.write_text('[tool.torchdoctor.lint]\nformat = "concise"\nfail-on = "error"\n'
                     'torch-version = "2.4"\nexclude = ["build/", "!keep.py"]\n')
        assert read_config(str(p))["format"] == "concise"
        p.write_text("[project]\nname = 'x'\n")
        assert read_config(str(p)) == {}
        p.write_text("[tool.torchdoctor.lint]\nformat = 'nope'\n")
        with pytest.raises(UsageError, match="format"):
            read_config(str(p))


# -- 10: the lint knowledge cache entry --------------------------------------------------------

AUTOCAST = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"


@pytest.mark.parametrize("tamper", ["call", "prepend", "types", "names"])
def test_a_tampered_lint_cache_entry_changes_nothing_fix_writes(tmp_path, tamper):
    cache = tmp_path / "cache"
    env = {"TORCHDOCTOR_NO_CACHE": "0", "TORCHDOCTOR_CACHE_DIR": str(cache)}
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "a.py").write_text(AUTOCAST)
    r = _cli("lint", "--fix", "--torch-version", "2.4", str(ref / "a.py"), env=env)
    assert r.returncode in (0, 1), r.stderr
    expected = (ref / "a.py").read_text()
    assert "torch.amp.autocast(\"cuda\")" in expected  # the real rewrite, from a fresh compile
    (entry,) = glob.glob(str(cache / "lint-*.json"))
    doc = json.loads(Path(entry).read_text())
    original = json.loads(Path(entry).read_text())
    la = doc["data"]["look_alikes"]["torch.cuda.amp.autocast"]
    if tamper == "call":
        la["rewrite"]["call"] = "os.system"
    elif tamper == "prepend":
        la["rewrite"]["prepend"] = "__import__('os').system('touch /tmp/pwned')"
    elif tamper == "types":
        doc["data"]["names"] = ["not", "a", "mapping"]
        doc["data"]["rules"][0]["params"] = 7
    else:
        doc["data"]["names"]["cudnn.x); __import__('os').system('id'"] = {"kind": "flag"}
    Path(entry).write_text(json.dumps(doc))
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.py").write_text(AUTOCAST)
    r = _cli("lint", "--fix", "--torch-version", "2.4", str(work / "a.py"), env=env)
    assert r.returncode in (0, 1) and "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr
    assert (work / "a.py").read_text() == expected
    # and the entry was compiled again from the files: the tampered one is gone
    assert json.loads(Path(entry).read_text()) == original


# -- 11: non-finite numbers, clipped echoes ----------------------------------------------------

@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "-5", "1e999"])
def test_bench_refuses_a_budget_that_is_not_a_finite_number(value):
    from click.testing import CliRunner

    from torchdoctor.bench.command import bench

    # --schema would print and exit 0 if the budget had been accepted
    r = CliRunner().invoke(bench, ["--budget", value, "--schema"])
    assert r.exit_code == 2, r.output[:500]
    assert "not a finite number" in r.output and "$schema" not in r.output


def test_a_5000_digit_torch_version_is_refused_clipped():
    r = _cli("lint", "--torch-version", "2." + "4" * 5000, "-")
    assert r.returncode == 2
    assert "at most 64 characters" in r.stderr and max(map(len, r.stderr.splitlines())) < 300


# -- 12: redaction -----------------------------------------------------------------------------

@pytest.mark.parametrize("text,secret", [
    ("DATABASE=host=x pw=s3cr3t", "s3cr3t"),
    ("host=x pwd=s3cr3t port=5432", "s3cr3t"),
    ("dsn: user=bob pass=s3cr3t", "s3cr3t"),
    ("conn passwd='s3cr3t'", "s3cr3t"),
    ("psql bob:s3cr3t@db.internal:5432/app", "s3cr3t"),
    ("bob:s3cr3t@dbhost", "s3cr3t"),
    ('DB="bob:s3cr3t@10.1.2.3"', "s3cr3t"),
])
def test_redaction_covers_credentials_without_a_scheme_and_inner_password_keys(text, secret):
    from torchdoctor.redact import redact_text

    out = redact_text(text)
    assert secret not in out and "<redacted>" in out, out


@pytest.mark.parametrize("text", ["bypass=1", "compass=north", "git@github.com:org/repo", "user@host"])
def test_redaction_leaves_words_that_only_contain_pass(text):
    from torchdoctor.redact import redact_text

    assert "<redacted>" not in redact_text(text)


# -- 14: the cache never creates a home directory ----------------------------------------------

def test_the_cache_creates_no_home_and_no_missing_cache_base(tmp_path, monkeypatch):
    from torchdoctor import rulecache

    monkeypatch.delenv("TORCHDOCTOR_CACHE_DIR", raising=False)
    monkeypatch.delenv("TORCHDOCTOR_NO_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "nonexistent" / "x"))
    assert rulecache.store("t.json", "k", {"a": 1}) is False
    assert not (tmp_path / "nonexistent").exists()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "missing"))
    assert rulecache.store("t.json", "k", {"a": 1}) is False
    assert not (tmp_path / "missing").exists()
    (tmp_path / "base").mkdir()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "base"))
    assert rulecache.store("t.json", "k", {"a": 1}) is True
    assert rulecache.load("t.json", "k") == {"a": 1}
    assert (tmp_path / "base" / "torchdoctor").stat().st_mode & 0o777 == 0o700


# -- 15: rank 0 caps what it gathers -----------------------------------------------------------

class _Tensor:
    def __init__(self, data):
        self.data = list(data)

    def item(self):
        return self.data[0]

    def __getitem__(self, key):
        return _Tensor(self.data[key])

    def __setitem__(self, key, value):
        self.data[key] = value.data

    def tolist(self):
        return list(self.data)


class _FakeTorch:
    """Three ranks seen from rank 0: rank 2 announces 10**12 bytes (or a negative length)."""

    int64 = uint8 = None
    LIMIT = 64 * 1024 * 1024  # a buffer past this is the allocation the cap must prevent

    def __init__(self, announced, payloads):
        self.announced, self.payloads, self.biggest = announced, payloads, 0
        self.distributed = self

    def tensor(self, data, dtype=None):
        return _Tensor(data)

    def zeros(self, n, dtype=None):
        self.biggest = max(self.biggest, n)
        if n > self.LIMIT or n < 0:
            raise MemoryError(f"zeros({n})")
        return _Tensor([0] * n)

    def frombuffer(self, buf, dtype=None):
        return _Tensor(buf)

    def all_gather(self, out, mine):
        for i, n in enumerate(self.announced):
            out[i].data = [n if i else mine.item()]

    def gather(self, mine, out, dst=0):
        out[0].data = list(mine.data)
        for i in range(1, len(out)):
            data = self.payloads[i][: len(mine.data)]
            out[i].data = list(data) + [0] * (len(mine.data) - len(data))


@pytest.mark.parametrize("bad", [10**12, -5])
def test_rank_0_refuses_a_rank_that_announces_a_huge_length_and_keeps_the_others(bad):
    from torchdoctor.distributed.rank import gather_bytes

    fake = _FakeTorch([None, 6, bad], [b"", b"rank-1", b""])
    texts, refused = gather_bytes(fake, b"rank-0", 0, 3)
    assert texts[:2] == ["rank-0", "rank-1"] and texts[2] == ""
    assert set(refused) == {2} and str(bad) in refused[2]
    assert fake.biggest <= 8 * 1024 * 1024
