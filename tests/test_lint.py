"""`torchdoctor lint` (issue 11): rule examples, the registry meta-test, the catalog's seeds,
output formats (SARIF validated against the OASIS schema), --fix round trips, notebooks,
.gitignore, pyproject config, hostile input, and running where torch does not import."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.lint import command, engine
from torchdoctor.lint.examples import run_rule
from torchdoctor.lint.knowledge import KINDS, load
from torchdoctor.lint.versions import parse

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "lint"
KNOW = load()


def _run(args, cwd=None, env=None, stdin=None, timeout=60):
    e = dict(os.environ, PYTHONPATH=str(ROOT), TORCHDOCTOR_NO_CACHE="1")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "torchdoctor", "lint", *args], cwd=cwd, env=e,
                          input=stdin, capture_output=True, text=True, timeout=timeout)


def _lint(code: str, torch: str = "2.13", rules=None) -> list:
    rules = rules or [r for r in KNOW.rules if r.default]
    return engine.lint_source(code, "x.py", KNOW, rules, parse(torch), torch)


# -- the rules' own examples ---------------------------------------------------------------

@pytest.mark.parametrize("rule", KNOW.rules, ids=lambda r: r.id)
def test_rule_examples(rule):
    failed = [f"{r.group}: {r.name}: {r.detail}" for r in run_rule(KNOW, rule) if not r.passed]
    assert not failed, failed


def test_every_rule_has_one_kind_from_the_vocabulary_and_docs():
    doc = (ROOT / "docs" / "lint.md").read_text(encoding="utf-8")
    for rule in KNOW.rules:
        assert rule.kind in KINDS and rule.all_tags[0] == rule.kind
        assert f"`{rule.id}`" in doc, f"docs/lint.md does not list {rule.id}"
    assert {r.kind for r in KNOW.rules} == set(KINDS)


def test_every_fake_or_deprecated_name_in_the_registry_has_a_firing_example():
    """The registry (rules/settings.yaml look-alikes, and the audit's fake table) is the one
    source: every fake or deprecated name it lists is caught by some lint rule's example."""
    fired = set()
    for rule in KNOW.rules:
        for case in rule.examples.get("fires") or []:
            torch = str(case.get("torch") or KNOW.newest_torch)
            for f in engine.lint_source(case["code"], "x.py", KNOW, [rule], parse(torch), torch):
                fired.add(f.message.split(" ", 1)[0].rstrip(":"))
    listed = set(KNOW.look_alikes) | set(KNOW.fake_notes)
    wanted = {n for n in listed if (KNOW.look_alikes.get(n) or {}).get("relation") != "alias"}
    assert wanted, "the registry lists no fake or deprecated name"
    assert sorted(wanted - fired) == []


CATALOG_VALUE_ERRORS = {"quantized.engine", "cuda.matmul.fp32_precision"}
"""What the catalog says raises for a bad *value* (engine='tensorrt', fp32_precision='bf16'):
a name lint knows, assigned a value only torch can judge; not a fake name, no seed."""


def _catalog_names(paragraph: str, lead: str) -> list:
    """The code spans of the catalog sentence starting with ``lead`` (up to the next sentence
    of the copy), each cut to its dotted name: `cudnn.<typo>` -> cudnn, `x = N` -> x."""
    start = paragraph.index(lead)
    end = paragraph.find("\nThese raise instead", start + 1)
    sentence = paragraph[start:end if end > 0 else None]
    names = []
    for span in sentence.split("`")[1::2]:
        names.append(span.split(" ")[0].split("=")[0].split("<")[0].rstrip("."))
    return names


def test_seed_fakes_of_the_flags_catalog_are_all_caught():
    """Every fake of the flags catalog (its list copied, with the source, into
    tests/data/lint/flags-catalog-fakes.md) has a seed line in seeds.py, and lint reports that
    line; every line marked "# seed" has a finding."""
    text = (DATA / "seeds.py").read_text(encoding="utf-8")
    lines = text.splitlines()
    seeds = {i for i, line in enumerate(lines, 1) if line.endswith("# seed")}
    found = {f.line for f in _lint(text)}
    assert seeds and seeds <= found, sorted(seeds - found)
    paragraph = (DATA / "flags-catalog-fakes.md").read_text(encoding="utf-8")
    unnoticed = _catalog_names(paragraph, "Fake flags that go unnoticed")
    raising = _catalog_names(paragraph, "These raise instead")
    assert len(unnoticed) == 13 and len(raising) == 5, (unnoticed, raising)
    assert set(raising) & CATALOG_VALUE_ERRORS == CATALOG_VALUE_ERRORS
    for name in unnoticed + [n for n in raising if n not in CATALOG_VALUE_ERRORS]:
        at = [i for i, line in enumerate(lines, 1) if i in seeds and
              (f"torch.backends.{name}" in line or ("." not in name and line.startswith(name + ".")))]
        assert at, f"seeds.py has no seed line for the catalog's {name}"
        assert set(at) <= found, f"lint misses the catalog's {name} (seeds.py line {at})"


def test_correct_code_is_clean():
    assert _lint((DATA / "clean.py").read_text(encoding="utf-8")) == []


def test_resolution_of_aliases_and_function_level_imports():
    code = ("import torch as th\n"
            "def f():\n"
            "    from torch.cuda.amp import autocast as ac\n"
            "    import torch.backends.cudnn as cd\n"
            "    cd.determinstic = True\n"
            "    with ac():\n"
            "        th.backends.cuda.allow_tf32 = True\n"
            "def g(torch):\n"
            "    torch.backends.cudnn.fastest = True  # a parameter, not the module\n")
    got = {(f.line, f.id) for f in _lint(code)}
    assert got == {(5, "fake-backends-setting"), (6, "deprecated-torch-api"), (7, "fake-backends-setting")}


def test_typo_suggestion_only_for_a_plausible_typo_of_the_same_kind():
    msgs = {f.line: f.message for f in _lint("import torch\ntorch.backends.cudnn.benchmarks = True\n"
                                             "torch.backends.cudnn.fastest = True\n"
                                             "torch.backends.cudnn.versoin = 1\n")}
    assert "Did you mean torch.backends.cudnn.benchmark?" in msgs[2]
    assert "Did you mean" not in msgs[3] and "Did you mean" not in msgs[4]  # version() is a function


def test_version_dependent_findings_say_so():
    f = _lint("import torch\ntorch.use_deterministic_algorithms(True)\n", torch="2.4")
    assert [x.id for x in f] == ["deterministic-without-cublas-workspace"] and f[0].torch_version == "2.4"
    assert _lint("import torch\ntorch.use_deterministic_algorithms(True)\n", torch="2.13") == []


# -- output ---------------------------------------------------------------------------------

def test_json_fields_and_exit_codes(tmp_path):
    p = tmp_path / "a.py"
    p.write_text("import torch\ntorch.backends.cudnn.determinstic = True  # é\n", encoding="utf-8")
    r = _run(["--format", "json", str(p)])
    assert r.returncode == 1, r.stderr
    (f,) = json.loads(r.stdout)
    assert {"path", "line", "col", "end_line", "end_col", "id", "tags", "severity", "message", "fix"} <= set(f)
    assert (f["line"], f["col"], f["end_line"], f["end_col"]) == (2, 1, 2, 34)
    assert f["tags"][0] == "fake-setting" and f["fix"]["applicability"] == "safe"
    assert _run(["--fail-on", "never", str(p)]).returncode == 0
    clean = tmp_path / "b.py"
    clean.write_text("import torch\n", encoding="utf-8")
    assert _run([str(clean)]).returncode == 0
    bad = _run([str(tmp_path / "missing.py")])
    assert bad.returncode == 2 and "no such file" in bad.stderr and "Traceback" not in bad.stderr
    assert _run(["--select", "no-such-rule", str(clean)]).returncode == 2


def test_concise_and_github_formats():
    code = "import torch\ntorch.backends.mkl.enabled = True\n"
    c = _run(["--format", "concise", "-"], stdin=code)
    assert c.stdout.startswith("<stdin>:2:1: fake-backends-setting ")
    g = _run(["--format", "github", "-"], stdin=code)
    assert g.stdout.startswith("::error file=<stdin>,line=2,col=1,endLine=2,endColumn=27,title=torchdoctor fake-backends-setting::")


def test_sarif_validates_against_the_sarif_2_1_0_schema():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "tests" / "data" / "sarif-2.1.0.schema.json").read_text(encoding="utf-8"))
    r = _run(["--format", "sarif", str(DATA / "seeds.py"), str(DATA / "notebook.ipynb")])
    doc = json.loads(r.stdout)
    jsonschema.Draft4Validator(schema).validate(doc)
    run = doc["runs"][0]
    assert run["results"] and all(res["ruleId"] in {d["id"] for d in run["tool"]["driver"]["rules"]}
                                  for res in run["results"])
    assert any("fixes" in res for res in run["results"])
    assert all(d.get("helpUri") for d in run["tool"]["driver"]["rules"])


# -- select / ignore / suppress / config -----------------------------------------------------

def test_select_ignore_and_inline_suppression(tmp_path):
    code = ("import torch\n"
            "torch.backends.mkl.enabled = True\n"
            "torch.backends.cudnn.enabled = True\n"
            "torch.backends.cuda.flash_sdp = True  # torchdoctor: ignore[fake-backends-setting]\n"
            "torch.backends.cuda.enable_flash_sdp = True  # torchdoctor: ignore\n")
    ids = lambda r: [(f["line"], f["id"]) for f in json.loads(r.stdout)]  # noqa: E731
    assert ids(_run(["--format", "json", "-"], stdin=code)) == [(2, "fake-backends-setting")]
    assert ids(_run(["--format", "json", "--ignore", "fake-setting", "-"], stdin=code)) == []
    assert ids(_run(["--format", "json", "--extend-select", "setting-repeats-default", "-"], stdin=code)) == [
        (2, "fake-backends-setting"), (3, "setting-repeats-default")]


def test_pyproject_config(tmp_path):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.torchdoctor.lint]\nignore = ["deprecated"]\nfail-on = "error"\nexclude = ["gen/"]\n',
        encoding="utf-8")
    (tmp_path / "gen").mkdir()
    (tmp_path / "gen" / "x.py").write_text("import torch\ntorch.backends.mkl.enabled = True\n")
    (tmp_path / "a.py").write_text("import torch\nwith torch.cuda.amp.autocast():\n    pass\n")
    r = _run(["--format", "json", "."], cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout) == [], r.stdout + r.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.torchdoctor.lint]\nselct = ["x"]\n')
    bad = _run(["."], cwd=tmp_path)
    assert bad.returncode == 2 and "unknown key" in bad.stderr


def test_folders_honour_gitignore_and_skip_symlink_loops(tmp_path):
    (tmp_path / ".gitignore").write_text("ignored.py\nout/\n")
    for rel in ("ignored.py", "out/y.py", "sub/kept.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("import torch\ntorch.backends.mkl.enabled = True\n")
    os.symlink(tmp_path, tmp_path / "sub" / "loop")
    r = _run(["--format", "json", str(tmp_path)], timeout=30)
    assert sorted(Path(f["path"]).name for f in json.loads(r.stdout)) == ["kept.py"]


def test_notebook_cells_with_cell_relative_positions(tmp_path):
    r = _run(["--format", "json", str(DATA / "notebook.ipynb")])
    (f,) = json.loads(r.stdout)
    assert (f["cell"], f["line"], f["col"], f["fix"]) == (2, 3, 1, None)  # import torch is in cell 1
    nb = json.loads((DATA / "notebook.ipynb").read_text(encoding="utf-8"))
    nb["cells"].insert(2, {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                           "source": ["x = 1\n", "def broken(:\n"]})
    (tmp_path / "nb.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    got = [(f["cell"], f["line"], f["id"]) for f in json.loads(_run(["--format", "json", str(tmp_path)]).stdout)]
    assert got == [(2, 2, "parse-error"), (3, 3, "fake-backends-setting")]


# -- --fix ---------------------------------------------------------------------------------

FIXABLE = '''import torch  # keep me
import torch.backends.cudnn as cudnn

# a comment that stays
cudnn.determinstic = True   # odd spacing stays too
torch.backends.cuda.enable_flash_sdp = (
    True
)
with torch.cuda.amp.autocast(enabled=True,
                             dtype=torch.float16):  # multi-line call
    scaler = torch.cuda.amp.GradScaler()
torch.backends.cuda.cufft_plan_cache = 1024
'''


def test_fix_round_trip(tmp_path):
    p = tmp_path / "f.py"
    p.write_text(FIXABLE, encoding="utf-8")
    diff = _run(["--diff", str(p)])
    assert diff.returncode == 1 and "+cudnn.deterministic = True" in diff.stdout
    assert p.read_text(encoding="utf-8") == FIXABLE  # --diff writes nothing
    r = _run(["--fix", "--format", "json", str(p)])
    fixed = p.read_text(encoding="utf-8")
    ast.parse(fixed)
    for keep in ("# keep me", "# a comment that stays", "# odd spacing stays too", "# multi-line call"):
        assert keep in fixed
    assert "cudnn.deterministic = True" in fixed and "torch.amp.autocast(\"cuda\", enabled=True," in fixed
    assert "torch.amp.GradScaler(\"cuda\")" in fixed and "enable_flash_sdp((\n    True\n))" in fixed
    assert "cufft_plan_cache = 1024" in fixed  # unsafe: only with --unsafe-fixes
    left = [f["id"] for f in json.loads(r.stdout)]
    assert left == ["backends-object-replaced"]
    _run(["--fix", str(p)])
    assert p.read_text(encoding="utf-8") == fixed  # idempotent
    _run(["--fix", "--unsafe-fixes", str(p)])
    assert "cufft_plan_cache.max_size = 1024" in p.read_text(encoding="utf-8")


def test_fix_on_stdin_prints_the_source():
    r = _run(["--fix", "-"], stdin="import torch\ntorch.backends.cudnn.determinstic = True\n")
    assert r.stdout == "import torch\ntorch.backends.cudnn.deterministic = True\n"


# -- hostile input -------------------------------------------------------------------------

def test_hostile_input_is_a_finding_not_a_crash(tmp_path):
    (tmp_path / "binary.py").write_bytes(b"\x00\xff\xfe garbage \x00" * 100)
    (tmp_path / "latin1.py").write_bytes(b"x = '\xe9'\n")
    (tmp_path / "deep.py").write_text("x = " + "(" * 5000 + "1" + ")" * 5000 + "\n")
    (tmp_path / "huge.py").write_text("x = 1\n" * 800_000)
    (tmp_path / "syntax.py").write_text("def f(:\n")
    (tmp_path / "ok.py").write_text("import torch\ntorch.backends.mkl.enabled = True\n")
    (tmp_path / "nb.ipynb").write_text("{not json")
    r = _run(["--format", "json", str(tmp_path)], timeout=60)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
    by_file = {}
    for f in json.loads(r.stdout):
        by_file.setdefault(Path(f["path"]).name, []).append(f["id"])
    assert by_file == {"binary.py": ["parse-error"], "latin1.py": ["parse-error"], "deep.py": ["parse-error"],
                       "huge.py": ["parse-error"], "syntax.py": ["parse-error"], "nb.ipynb": ["parse-error"],
                       "ok.py": ["fake-backends-setting"]}


def test_lint_runs_where_torch_does_not_import(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(
        "import sys\n"
        "class _NoTorch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'torch' or name.startswith('torch.'):\n"
        "            raise ImportError('torch is unimportable here')\n"
        "sys.meta_path.insert(0, _NoTorch())\n")
    env = {"PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    probe = subprocess.run([sys.executable, "-c", "import torch"], env=dict(os.environ, **env),
                           capture_output=True, text=True, timeout=60)
    assert probe.returncode != 0 and "unimportable" in probe.stderr
    blocked = _run(["--format", "json", str(DATA / "seeds.py")], env=env)
    normal = _run(["--format", "json", str(DATA / "seeds.py")])
    assert blocked.returncode == normal.returncode == 1, blocked.stderr
    assert "unimportable" not in blocked.stderr and "Traceback" not in blocked.stderr
    # the same findings, line for line, as where torch imports: lint never needs torch
    assert json.loads(blocked.stdout) == json.loads(normal.stdout)
    text = (DATA / "seeds.py").read_text(encoding="utf-8")
    seeds = {i for i, line in enumerate(text.splitlines(), 1) if line.endswith("# seed")}
    assert seeds <= {f["line"] for f in json.loads(blocked.stdout)}


def test_unknown_version_and_target_torch_default(monkeypatch):
    with pytest.raises(command.UsageError):
        command.run(("-",), None, None, (), (), (), False, False, False, "banana", None, print, print)
    from torchdoctor.lint.versions import target_torch

    assert target_torch("2.4", "2.15") == ("2.4", "--torch-version")
    monkeypatch.setattr("importlib.metadata.version", lambda name: (_ for _ in ()).throw(
        __import__("importlib.metadata").metadata.PackageNotFoundError(name)))
    assert target_torch(None, "2.15") == ("2.15", "newest torch torchdoctor knows")


@pytest.mark.parametrize("test,expected", [
    ('torch.__version__ >= "2.4"', True),
    ('torch.__version__ < "2.4.0"', False),
    ('version.parse(torch.__version__) >= version.parse("2.14")', False),
    ('digit_version("1.5.0") <= digit_version(TORCH_VERSION) < digit_version("1.10.0")', False),
    ("_TORCH_GREATER_EQUAL_2_1", True),
    ("not _TORCH_GREATER_EQUAL_2_1", False),
    ('is_torch_version(">=", "2.0")', True),
    ('is_torch_greater_or_equal("2.15")', False),
    ("TORCH_VERSION >= (2, 0)", True),
    ('hasattr(torch, "compile")', None),
    ('transformers.__version__ >= "4.0"', None),
])
def test_version_checks_are_decided_for_the_target_torch(test, expected):
    from torchdoctor.lint.guards import truth

    assert truth(ast.parse(test, mode="eval").body, (2, 13, 0)) is expected


def test_the_live_arm_of_a_version_check_is_linted_and_the_dead_one_is_not():
    """hasattr of a name the target torch has is a check that holds: its body is linted (mkl
    exists, mkl.enabled is still a setting that does nothing); of a name it lacks (cudnn SDPA
    before 2.3), the body is the dead arm."""
    code = ('import torch\n'
            'if torch.__version__ >= "2.4":\n'
            '    torch.backends.cudnn.determinstic = True\n'
            'else:\n'
            '    torch.backends.cudnn.fastest = True\n'
            'if hasattr(torch.backends, "mkl"):\n'
            '    torch.backends.mkl.enabled = True\n'
            'if hasattr(torch.backends.cuda, "enable_cudnn_sdp"):\n'
            '    torch.backends.cuda.enable_cudnn_sdp(False)\n'
            '    torch.backends.cuda.sdp_kernel(enable_math=False)\n')
    assert [f.line for f in _lint(code)] == [3, 7, 10]
    assert [f.line for f in _lint(code, torch="2.4")] == [3, 7, 10]  # enable_cudnn_sdp is in 2.3.0 on (issue 19)
    assert [f.line for f in _lint(code, torch="2.2")] == [5, 7]  # ... and not in 2.2: the body is dead
    assert [f.line for f in _lint(code, torch="2.1")] == [5, 7]


@pytest.mark.parametrize("test,torch,expected", [
    ('torch.cuda.is_available() and torch.__version__ >= "2.0"', "2.13", True),  # runtime part left out
    ('torch.cuda.is_available() and torch.__version__ >= "2.0"', "1.13", False),
    ('hasattr(pl_module, "log_images") and callable(pl_module.log_images)', "2.13", "neutral"),
    ('hasattr(torch.cuda.amp, "autocast")', "2.13", True),  # deprecated means present
    ('not hasattr(torch.amp, "GradScaler")', "2.13", False),  # the replacement is present
    ('hasattr(torch.backends.cuda, "enable_cudnn_sdp")', "2.2", False),  # the table's since (2.3)
    ('hasattr(torch.backends.cuda, "enable_cudnn_sdp")', "2.4", True),
    ('hasattr(torch.backends.cudnn, "fastest")', "2.13", False),  # not in the table: absent
    ('hasattr(torch.cuda, "is_bf16_supported")', "2.13", True),  # public, unknown: assumed present
    ('hasattr(torch, "_six")', "2.13", None),  # private and unknown: undecided
    ('hasattr(torch.backends, name)', "2.13", None),  # a computed name: undecided
    ('opts.force or torch.__version__ < "2.0"', "2.13", None),  # the option alone may run it
    ('SUPPORTS_FLASH_ATTENTION', "2.13", None),
])
def test_guards_are_decided_part_by_part(test, torch, expected):
    from torchdoctor.lint.analyze import Analyzer

    a = Analyzer(parse(torch), lambda dotted: KNOW.presence(dotted, parse(torch)))
    a.visit(ast.parse("import torch\n"))
    assert a._decide(ast.parse(test, mode="eval").body) == expected


def test_a_try_body_guards_only_the_names_the_target_lacks():
    code = ('import torch\n'
            'try:\n'
            '    torch.backends.cuda.matmul.allow_fp16_accumulation = True\n'
            '    scaler = torch.cuda.amp.GradScaler()\n'
            '    torch.backends.cudnn.fastest = True\n'
            'except (AttributeError, RuntimeError):\n'
            '    scaler = torch.cuda.amp.GradScaler(enabled=False)\n')
    assert [(f.line, f.id) for f in _lint(code)] == [(4, "deprecated-torch-api")]
    assert [f.line for f in _lint(code, torch="2.4")] == [4]  # allow_fp16_accumulation (2.7) is not reported


def test_bindings_in_the_dead_arm_of_a_version_check_do_not_hide_the_live_one():
    code = ('import torch\n'
            'if torch.__version__ >= "2.0":\n'
            '    from torch.backends.cuda import sdp_kernel\n'
            'else:\n'
            '    sdp_kernel = None\n'
            'def f():\n'
            '    with sdp_kernel(enable_math=False):\n'
            '        pass\n')
    assert [f.line for f in _lint(code)] == [7]
    assert _lint(code, torch="1.13") == []


@pytest.mark.torch
def test_every_public_name_of_every_backends_module_is_in_the_table():
    """No real name is ever reported as missing: the table has what dir() lists for each
    torch.backends submodule of the installed torch (names imported from elsewhere included:
    torch.backends.cuda.SDPBackend is torch._C._SDPBackend)."""
    torch = pytest.importorskip("torch")
    import importlib
    import pkgutil

    import torch.backends

    if KNOW.introspected != torch.__version__:
        pytest.skip(f"table introspected on torch {KNOW.introspected}, installed {torch.__version__}")
    missing = []
    for m in ["torch.backends"] + [f"torch.backends.{i.name}" for i in pkgutil.iter_modules(torch.backends.__path__)
                                   if not i.name.startswith("_")]:
        mod = importlib.import_module(m)
        prefix = m[len("torch.backends."):] + "." if m != "torch.backends" else ""
        missing += [prefix + a for a in dir(mod) if not a.startswith("_") and prefix + a not in KNOW.names]
    assert missing == []
    code = "import torch\n" + "".join(f"torch.backends.{n}\n" for n in sorted(KNOW.names) if "." in n)
    assert [f.message for f in _lint(code, rules=[KNOW.rule("fake-backends-setting")])] == []


@pytest.mark.torch
def test_the_backends_names_table_matches_the_installed_torch():
    """rules/lint/data/torch_backends.yaml is what the generator makes of the torch it was run
    with; where that torch is installed here, regenerating it changes nothing."""
    torch = pytest.importorskip("torch")
    from torchdoctor.lint import gen_backends

    table = KNOW.names
    if KNOW.introspected != torch.__version__:
        pytest.skip(f"table introspected on torch {KNOW.introspected}, installed {torch.__version__}")
    assert {k: v["kind"] for k, v in table.items()} == gen_backends.collect(torch)
