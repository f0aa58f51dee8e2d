"""`torchdoctor lint --fix` changes nothing but the finding (issue 17): line tables as Python
counts lines, no fix of a chained assignment, positional arguments moved by the real signatures,
the AST check of every fix, what the file was (BOM, symlink, hard link, owner, mode, full disk),
and a property test over real training scripts and generated edge cases."""

from __future__ import annotations

import ast
import codecs
import json
import os
import random
import resource
import signal
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchdoctor.lint import engine
from torchdoctor.lint.checks import Edit
from torchdoctor.lint.knowledge import load
from torchdoctor.lint.versions import parse

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "fix-corpus"
KNOW = load()
RULES = [r for r in KNOW.rules if r.default]


def _lint(code: str, torch: str = "2.13", rules=None) -> list:
    return engine.lint_source(code, "x.py", KNOW, rules or RULES, parse(torch), torch)


def _fix(code: str, torch: str = "2.13", unsafe: bool = False) -> tuple:
    return engine.fix_source(code, lambda t: _lint(t, torch), unsafe)


def _run(args, cwd=None, preexec=None, timeout=120):
    env = dict(os.environ, PYTHONPATH=str(ROOT), TORCHDOCTOR_NO_CACHE="1")
    return subprocess.run([sys.executable, "-m", "torchdoctor", "lint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=preexec)


# -- 1. lines as Python counts them --------------------------------------------------------

# every character str.splitlines() ends a line at and Python does not
NOT_PYTHON_LINE_ENDS = ["\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("sep", NOT_PYTHON_LINE_ENDS, ids=lambda s: f"U+{ord(s):04X}")
def test_a_form_feed_or_unicode_separator_does_not_move_a_finding_or_its_fix(sep, tmp_path):
    code = (f"import torch  # section{sep}one\ns = 'torch.backends.cudnn.benchmrk'  # a string like it\n"
            "torch.backends.cudnn.benchmrk = True\n")
    if sep == "\x0c":  # a form feed at the start of a line is whitespace to Python
        code = "import torch\n\x0cs = 'torch.backends.cudnn.benchmrk'\ntorch.backends.cudnn.benchmrk = True\n"
    found = [f for f in _lint(code) if f.id == "fake-backends-setting"]
    assert [(f.line, f.col) for f in found] == [(3, 1)]
    assert found[0].fix["edits"][0]["line"] == 3
    fixed, n = _fix(code)
    assert n == 1
    assert fixed == code.replace("cudnn.benchmrk = True", "cudnn.benchmark = True")
    # the excerpt shown is the finding's own line, and the file on disk is fixed the same way
    p = tmp_path / "f.py"
    p.write_bytes(code.encode("utf-8"))
    shown = _run(["--fail-on", "never", str(p)])
    assert "   3 | torch.backends.cudnn.benchmrk = True" in shown.stdout, shown.stdout
    _run(["--fix", str(p)])
    assert p.read_bytes() == fixed.encode("utf-8")


@pytest.mark.parametrize("sep", ["\x0c", "\u2028", "\x85"], ids=lambda s: f"U+{ord(s):04X}")
def test_an_ignore_comment_after_a_separator_silences_its_own_line_only(sep):
    code = (f"import torch\nx = 1  # a{sep}b\n"
            "torch.backends.cudnn.benchmrk = True  # torchdoctor: ignore[fake-backends-setting]\n"
            "torch.backends.cudnn.determinstic = True\n")
    found = [(f.id, f.line) for f in _lint(code)]
    assert found == [("fake-backends-setting", 4)]


def test_crlf_and_lone_cr_line_ends_are_kept_by_a_fix():
    for eol in ("\r\n", "\r"):
        code = eol.join(["import torch", "x = 1", "torch.backends.cudnn.determinstic = True", ""])
        fixed, n = _fix(code)
        assert n == 1 and fixed == code.replace("determinstic", "deterministic")


# -- 13. ignore comments are comments ------------------------------------------------------

def test_ignore_inside_a_string_silences_nothing():
    code = ("import torch\n"
            "torch.backends.cudnn.benchmrk = '# torchdoctor: ignore'\n"
            "torch.backends.cudnn.determinstic = True; s = '# torchdoctor: ignore'\n")
    assert [f.line for f in _lint(code) if f.id == "fake-backends-setting"] == [2, 3]


@pytest.mark.parametrize("comment", ["# torchdoctor: ignore[fake-backends-setting",
                                     "# torchdoctor: ignore[]", "# torchdoctor: ignore[ ,]",
                                     "# torchdoctor: ignore-me", "# torchdoctor: ignore[a b]"])
def test_a_malformed_ignore_comment_silences_nothing(comment):
    code = f"import torch\ntorch.backends.cudnn.benchmrk = True  {comment}\n"
    assert [f.id for f in _lint(code)] == ["fake-backends-setting"]


def test_ignore_of_one_rule_silences_that_rule_only():
    code = ("import torch\n"
            "torch.backends.cudnn.benchmrk = torch.backends.cuda.matmul.allow_tf32 = True"
            "  # torchdoctor: ignore[setting-repeats-default]\n")
    ids = {f.id for f in _lint(code, rules=[r for r in KNOW.rules])}
    assert "fake-backends-setting" in ids
    bare = code.replace("ignore[setting-repeats-default]", "ignore")
    assert _lint(bare, rules=[r for r in KNOW.rules]) == []


# -- 2. safe fixes that would change behaviour --------------------------------------------

@pytest.mark.parametrize("code", [
    "import torch\nflash = torch.backends.cuda.enable_flash_sdp = True\n",
    "import torch\ntorch.backends.cuda.enable_flash_sdp = use_flash = True\n",
    "import torch\ntorch.backends.cuda.enable_flash_sdp = True, False\n",
    "import torch\ntorch.backends.cuda.enable_flash_sdp += 1\n",
])
def test_a_chained_or_tuple_assignment_to_a_function_gets_no_fix(code):
    found = [f for f in _lint(code) if f.id == "backends-object-replaced"]
    assert found and all(f.fix is None for f in found), [f.fix for f in found]
    assert _fix(code, unsafe=True) == (code, 0)


def test_the_plain_assignment_to_a_function_is_still_fixed():
    fixed, n = _fix("import torch\ntorch.backends.cuda.enable_flash_sdp: bool = (True)  # on\n")
    assert (fixed, n) == ("import torch\ntorch.backends.cuda.enable_flash_sdp((True))  # on\n", 1)


POSITIONAL = [
    # (deprecated call, the fix torchdoctor must make, or None for no fix)
    ("torch.cuda.amp.autocast(True, torch.float16)",
     'torch.amp.autocast("cuda", enabled=True, dtype=torch.float16)'),
    ("torch.cuda.amp.autocast(False)", 'torch.amp.autocast("cuda", enabled=False)'),
    ("torch.cuda.amp.autocast(True, torch.bfloat16, False)",
     'torch.amp.autocast("cuda", enabled=True, dtype=torch.bfloat16, cache_enabled=False)'),
    ("torch.cuda.amp.autocast(dtype=torch.bfloat16)", 'torch.amp.autocast("cuda", dtype=torch.bfloat16)'),
    ("torch.cuda.amp.autocast(True, dtype=torch.bfloat16)",
     'torch.amp.autocast("cuda", enabled=True, dtype=torch.bfloat16)'),
    ("torch.cpu.amp.autocast(True, torch.bfloat16)",
     'torch.amp.autocast("cpu", enabled=True, dtype=torch.bfloat16)'),
    ("torch.cuda.amp.autocast(*args)", None),
    ("torch.cuda.amp.autocast(True, torch.float16, True, 4)", None),  # more than it takes
    ("torch.cuda.amp.autocast(enabled=True, device_type='cpu')", None),  # not its keyword
    ("torch.cuda.amp.autocast((True))", None),  # a keyword cannot go inside the parentheses
    ("torch.cuda.amp.GradScaler(1024.0, 3.0)", 'torch.amp.GradScaler("cuda", 1024.0, 3.0)'),
    ("torch.cpu.amp.GradScaler(1024.0, enabled=False)", 'torch.amp.GradScaler("cpu", 1024.0, enabled=False)'),
    ("torch.set_autocast_gpu_dtype(torch.float16)", 'torch.set_autocast_dtype("cuda", torch.float16)'),
    ("torch.set_autocast_cpu_enabled(False)", 'torch.set_autocast_enabled("cpu", False)'),
]


@pytest.mark.parametrize("old,new", POSITIONAL, ids=[o for o, _ in POSITIONAL])
def test_positional_arguments_follow_the_real_signatures(old, new):
    code = f"import torch\nx = {old}\n"
    fixed, n = _fix(code)
    assert fixed == (code if new is None else f"import torch\nx = {new}\n")
    assert n == (0 if new is None else 1)


def test_comments_and_parentheses_inside_a_call_survive_its_fix():
    code = ("import torch\nwith torch.cuda.amp.autocast(  # mixed precision\n"
            "        True,  # on\n        (torch.float16),\n):\n    pass\n")
    fixed, n = _fix(code)
    assert n == 0 or ast.dump(ast.parse(fixed)) == ast.dump(ast.parse(
        'import torch\nwith torch.amp.autocast("cuda", enabled=True, dtype=torch.float16):\n    pass\n'))
    assert "# mixed precision" in fixed and "# on" in fixed


@pytest.mark.torch
def test_the_fixed_autocast_and_scaler_are_the_objects_the_original_made():
    """Evaluate each original and fixed call on the installed torch and compare the state."""
    torch = pytest.importorskip("torch")
    cases = [(o, n) for o, n in POSITIONAL if n is not None and "autocast(" in o and "cpu" in o]
    cases += [("torch.cpu.amp.autocast(False, torch.bfloat16, False)", None),
              ("torch.cpu.amp.GradScaler(1024.0, 3.0, 0.25, 7, False)", None)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for old, _ in cases:
            fixed, n = _fix(f"import torch\nx = {old}\n")
            assert n == 1, old
            made = {}
            for label, code in (("old", f"import torch\nx = {old}\n"), ("new", fixed)):
                scope: dict = {}
                exec(compile(code, "<case>", "exec"), scope)  # noqa: S102 - our own test code
                x = scope["x"]
                made[label] = {k: v for k, v in vars(x).items() if not k.startswith("__")}
            assert made["old"] == made["new"], (old, fixed)
    assert torch.__version__


# -- 3. the AST check ----------------------------------------------------------------------

def test_edits_that_do_not_make_the_intended_tree_are_not_applied():
    code = "import torch\ntorch.backends.cudnn.determinstic = True\ny = 1\n"
    found = _lint(code)
    assert len(found) == 1 and found[0].expect
    good, fixed = engine.apply_edits(code, found, False)
    assert fixed == found and "deterministic = True\ny = 1" in good
    # the same finding with one more edit elsewhere (still parses): refused as a whole
    found[0].edits = found[0].edits + [Edit(None, "2", (3, 4), (3, 5))]
    assert engine.apply_edits(code, found, False) == (code, [])
    # an edit that breaks the syntax: refused
    found[0].edits = [Edit(None, "determ(", (2, 21), (2, 33))]
    assert engine.apply_edits(code, found, False) == (code, [])


def test_a_fix_that_would_not_parse_is_never_written_even_without_the_tree_check(monkeypatch):
    """The parse floor of fix_source holds by itself (the mutant that removes it dies here)."""
    from torchdoctor.lint import fixcheck

    monkeypatch.setattr(fixcheck, "verify", lambda *args, **kw: True)
    code = "import torch\ntorch.backends.cudnn.determinstic = True\n"

    def lint(text):
        found = _lint(text)
        for f in found:
            f.edits = [Edit(None, "determinstic = (", (2, 21), (2, 33))]
        return found

    assert engine.fix_source(code, lint, False) == (code, 0)


# -- 4. what the file was ------------------------------------------------------------------

FIXABLE = "import torch\ntorch.backends.cudnn.determinstic = True\n"
FIXED = FIXABLE.replace("determinstic", "deterministic")


def test_a_utf8_bom_is_kept(tmp_path):
    p = tmp_path / "bom.py"
    p.write_bytes(codecs.BOM_UTF8 + FIXABLE.encode())
    r = _run(["--fix", str(p)])
    assert r.returncode == 0, r.stderr
    assert p.read_bytes() == codecs.BOM_UTF8 + FIXED.encode()


def test_a_symlink_is_edited_at_its_target_and_stays_a_link(tmp_path):
    target = tmp_path / "real.py"
    target.write_text(FIXABLE)
    link = tmp_path / "link.py"
    link.symlink_to(target)
    r = _run(["--fix", str(link)])
    assert r.returncode == 0, r.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == FIXED


def test_a_hard_linked_file_is_refused_in_one_line_and_left_as_it_was(tmp_path):
    a, b, other = tmp_path / "a.py", tmp_path / "b.py", tmp_path / "other.py"
    a.write_text(FIXABLE)
    os.link(a, b)
    other.write_text(FIXABLE)
    r = _run(["--fix", str(a), str(other)])
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if "not fixed" in ln]
    assert len(lines) == 1 and "a.py" in lines[0] and "hard link" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert a.read_text() == FIXABLE and os.stat(a).st_nlink == 2 and os.path.samefile(a, b)
    assert other.read_text() == FIXED  # the other file is still processed


def test_mode_owner_and_group_are_kept(tmp_path):
    p = tmp_path / "owned.py"
    p.write_text(FIXABLE)
    os.chmod(p, 0o640)
    if os.geteuid() == 0:
        os.chown(p, 4321, 4322)
    before = os.stat(p)
    r = _run(["--fix", str(p)])
    assert r.returncode == 0, r.stderr
    after = os.stat(p)
    assert p.read_text() == FIXED
    assert (after.st_mode, after.st_uid, after.st_gid) == (before.st_mode, before.st_uid, before.st_gid)
    if os.geteuid() != 0:
        pytest.skip("owner change needs root; mode checked")


def _no_room(limit: int):
    def preexec():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return preexec


def test_no_room_to_write_is_one_line_the_file_intact_and_the_others_processed(tmp_path):
    big = tmp_path / "big.py"
    big.write_text(FIXABLE + "x = 1  # padding\n" * 400)  # over the limit once rewritten
    small = tmp_path / "small.py"
    small.write_text(FIXABLE)
    limit = len(big.read_bytes()) - 10
    before = big.read_bytes()
    r = _run(["--fix", str(big), str(small)], preexec=_no_room(limit))
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "not fixed" in ln]
    assert len(lines) == 1 and "big.py" in lines[0], r.stderr
    assert big.read_bytes() == before
    assert small.read_text() == FIXED
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".torchdoctor-fix")]


def test_a_fifo_is_never_replaced_by_a_regular_file(tmp_path):
    from torchdoctor.lint import writeback

    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    with pytest.raises(writeback.NotWritten, match="regular file"):
        writeback.write_fixed(str(fifo), FIXABLE, FIXED)
    assert fifo.is_fifo()


def test_a_file_changed_after_it_was_read_is_not_overwritten(tmp_path):
    from torchdoctor.lint import writeback

    p = tmp_path / "f.py"
    p.write_text(FIXABLE + "# edited meanwhile\n")
    with pytest.raises(writeback.NotWritten, match="changed"):
        writeback.write_fixed(str(p), FIXABLE, FIXED)
    assert p.read_text() == FIXABLE + "# edited meanwhile\n"


# -- the property test ---------------------------------------------------------------------

def _real_scripts() -> list:
    files = sorted(CORPUS.glob("*.py.txt"))
    assert len(files) >= 5, "tests/data/fix-corpus holds the real scripts"
    return [f.read_text(encoding="utf-8") for f in files]


REAL = _real_scripts()

INJECT = [  # statements with findings, in the shapes that broke fixes before
    "torch.backends.cudnn.determinstic = True",
    "flash = torch.backends.cuda.enable_flash_sdp = True",
    "torch.backends.cuda.enable_flash_sdp = use_flash = False",
    "torch.backends.cuda.enable_mem_efficient_sdp = (\n    True  # keep\n)",
    "torch.backends.cuda.enable_math_sdp: bool = False",
    "torch.backends.cuda.enable_flash_sdp = True, False",
    "ctx = torch.cuda.amp.autocast(True, torch.float16)",
    "ctx = torch.cuda.amp.autocast(  # amp\n    False,\n    dtype=torch.bfloat16,\n)",
    "scaler = torch.cuda.amp.GradScaler(2.0 ** 16, enabled=(1 == 1))",
    "dt = torch.get_autocast_gpu_dtype()",
    "s = 'torch.backends.cudnn.benchmrk = True'  # a string, not a finding",
    "torch.backends.cudnn.benchmrk = True  # torchdoctor: ignore",
    "torch.backends.cudnn.benchmrk = True  # torchdoctor: ignore[fake-backends-setting",
]


def _statements_by_place(tree: ast.AST) -> dict:
    """(first line, last line of the header) -> dump of each statement, nested bodies replaced
    by their length: the oracle compares statements at the same place (fixes add no lines)."""
    out = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        fields = {}
        for name, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                fields[name] = len(value)
            elif isinstance(value, list) and value and isinstance(value[0], ast.excepthandler):
                fields[name] = len(value)
            elif isinstance(value, list):
                fields[name] = [ast.dump(v) if isinstance(v, ast.AST) else v for v in value]
            else:
                fields[name] = ast.dump(value) if isinstance(value, ast.AST) else value
        body = getattr(node, "body", None)
        header_end = body[0].lineno - 1 if isinstance(body, list) and body and isinstance(body[0], ast.stmt) \
            else node.end_lineno
        out[(node.lineno, node.col_offset)] = (type(node).__name__, json.dumps(fields, sort_keys=True, default=str),
                                               node.lineno, max(node.lineno, header_end))
    return out


def _check_fix(code: str) -> None:
    found = _lint(code)
    fixed, n = _fix(code)
    if n == 0:
        assert fixed == code
        return
    old_tree, new_tree = ast.parse(code), ast.parse(fixed)  # every fixed file parses
    assert len(engine.split_lines(code)) == len(engine.split_lines(fixed))
    fixable_lines = {ln for f in found if f.fix and f.fix["applicability"] == "safe"
                     for e in f.fix["edits"] for ln in range(e["line"], e["end_line"] + 1)}
    old, new = _statements_by_place(old_tree), _statements_by_place(new_tree)
    assert set(old) == set(new), "a fix moved or removed a statement"
    for place, (kind, dump, first, last) in old.items():
        if new[place][:2] != (kind, dump):
            assert fixable_lines & set(range(first, last + 1)), (
                f"line {first}: a statement without a fixable finding changed:\n{code}\n---\n{fixed}")
    again, m = _fix(fixed)
    assert (again, m) == (fixed, 0), "a second --fix changed the file again"


@pytest.mark.parametrize("index", range(len(REAL)))
def test_fix_on_each_real_script_changes_only_its_findings(index):
    _check_fix(REAL[index])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.integers(0, len(REAL) - 1), seed=st.integers(0, 2**32 - 1),
       eol=st.sampled_from(["\n", "\r\n"]), sep=st.sampled_from(["", "\x0c", "\u2028", "\x0b"]),
       count=st.integers(1, 6))
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_fix_property_over_real_scripts_with_generated_edge_cases(script, seed, eol, sep, count):
    rng = random.Random(seed)
    lines = REAL[script].split("\n")
    # top-level statement starts (column 0, not inside a bracket or string: checked by parsing)
    for _ in range(count):
        snippet = rng.choice(INJECT)
        at = rng.randrange(len(lines) + 1)
        trial = lines[:at] + snippet.split("\n") + lines[at:]
        try:
            ast.parse("\n".join(trial))
        except SyntaxError:
            continue
        lines = trial
    if sep:  # a form feed or separator in the middle of a comment line, as page breaks are
        lines = [ln + "  #" + sep + "page" if ln.startswith("#") else ln for ln in lines]
    code = eol.join(lines)
    try:
        ast.parse(code)
    except SyntaxError:
        return
    _check_fix(code)


# -- 8. a notebook of many broken cells is read once ----------------------------------------

def test_a_notebook_of_broken_cells_is_read_once_not_once_per_cell(tmp_path):
    """CPython re-reads the file named to ast.parse for each SyntaxError; lint must not name the
    notebook, so the work is linear in its size (an audit hook counts the opens)."""
    cells = [{"cell_type": "code", "source": [f"def broken_{i}(:\n"], "metadata": {}, "outputs": [],
              "execution_count": None} for i in range(40)]
    nb = tmp_path / "broken.ipynb"
    nb.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    probe = (
        "import sys\n"
        "opens = []\n"
        "sys.addaudithook(lambda ev, args: opens.append(args[0]) if ev == 'open' and "
        f"str(args[0]) == {str(nb)!r} else None)\n"
        "from torchdoctor.lint import command\n"
        f"code = command.run(({str(nb)!r},), 'concise', 'never', (), (), (), False, False, False, '2.13', "
        "None, lambda t: None, lambda t: None)\n"
        "print(len(opens), code)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), TORCHDOCTOR_NO_CACHE="1")
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    opens, code = r.stdout.split()
    assert int(opens) <= 2, f"the notebook was opened {opens} times for 40 broken cells"


# -- 5. a symlink out of the linted folder is skipped and said -------------------------------

def test_a_symlink_out_of_the_folder_is_said_on_stderr_and_its_lines_never_printed(tmp_path):
    secret = tmp_path / "id_ed25519"
    secret.write_text("import torch\ntorch.backends.cudnn.benchmrk = 'PRIVATE-KEY-LINE'\n")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "key.py").symlink_to(secret)
    (repo / "train.py").write_text(FIXABLE)
    r = _run(["--format", "full", "--fix", str(repo)])
    assert "PRIVATE-KEY-LINE" not in r.stdout + r.stderr
    said = [ln for ln in r.stderr.splitlines() if "key.py" in ln]
    assert len(said) == 1 and "outside the folder" in said[0], r.stderr
    assert secret.read_text().count("benchmrk") == 1  # never fixed either
    assert (repo / "train.py").read_text() == FIXED
