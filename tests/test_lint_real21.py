"""Issue 21 on real files of the five repositories (tests/data/real21/SOURCES.md): guards that
hold a hardware test (item 4), value copies of flags (item 5), the TF32 2.9 wording and minor
lines, and the findings the files pin (litgpt's sdp_kernel calls, torch.cuda.amp)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from torchdoctor.lint import engine
from torchdoctor.lint.knowledge import load
from torchdoctor.lint.versions import covers, is_line, parse

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real21"
KNOW = load()


def _lint(code: str, torch: str = "2.13") -> list:
    return engine.lint_source(code, "x.py", KNOW, [r for r in KNOW.rules if r.default], parse(torch), torch)


def _real(name: str, torch: str = "2.13") -> list:
    return [(f.line, f.id) for f in _lint((REAL / name).read_text(encoding="utf-8"), torch)]


def test_sources_list_every_file_with_its_sha256():
    rows = {m.group(1): m.group(2) for m in re.finditer(r"^\| `([^`]+)` \|.*\| ([0-9a-f]{64}) \|$",
                                                         (REAL / "SOURCES.md").read_text(encoding="utf-8"), re.M)}
    files = {p.name for p in REAL.iterdir() if p.name != "SOURCES.md"}
    assert set(rows) == files
    for name, digest in rows.items():
        assert hashlib.sha256((REAL / name).read_bytes()).hexdigest() == digest, name


# -- item 4: a name that holds a hardware test is not a version guard -----------------------

def test_litgpt_sdp_kernel_calls_under_a_hardware_flag_are_found():
    """litgpt tests/test_model.py: `SUPPORTS_FLASH_ATTENTION = torch.cuda.is_available() and
    torch.cuda.get_device_capability() >= (8, 0) and not _IS_WINDOWS`; the two calls under
    `if SUPPORTS_FLASH_ATTENTION:` were taken as version-guarded before."""
    found = [line for line, rid in _real("litgpt__tests__test_model.py") if rid == "deprecated-torch-api"]
    assert found == [1532, 1536, 1584, 1590]


HARDWARE = '''import torch
SUPPORTS_FLASH_ATTENTION = torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)
def test_sdpa():
    if SUPPORTS_FLASH_ATTENTION:
        with torch.backends.cuda.sdp_kernel(enable_mem_efficient=False):
            pass
'''


def test_a_hardware_flag_guards_nothing_but_a_version_flag_still_does():
    assert [f.line for f in _lint(HARDWARE)] == [5]
    version = HARDWARE.replace("torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)",
                               'torch.__version__ < "2.0"')
    assert _lint(version) == []  # the flag holds a version test false on 2.13: the body does not run
    twice = HARDWARE.replace("def test_sdpa", "SUPPORTS_FLASH_ATTENTION = _probe()\ndef test_sdpa")
    assert _lint(twice) == []  # assigned twice: unknown, guarded as before
    imported = "import torch\nfrom x import SUPPORTS_FLASH_ATTENTION\n" + HARDWARE.split("\n", 2)[2]
    assert _lint(imported) == []  # nothing known about it: a version-like name stays unknown


# -- item 5: a copy of a flag's value is not an alias of the flag ---------------------------

RESTORE = '''import torch
def test_tf32():
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        pass
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old
'''


def test_a_saved_flag_value_is_not_reported_where_it_is_restored():
    got = [(f.line, f.col) for f in _lint(RESTORE, "2.9.0")]
    assert got == [(3, 11), (4, 5)]  # the read and the write of the flag; not `= old` on line 8
    alias = "import torch\ncudnn = torch.backends.cudnn\ncudnn.benchmark_limit2 = 3\n"
    assert [f.id for f in _lint(alias)] == ["fake-backends-setting"]  # a module alias still is one


def test_the_tf32_message_reads_and_a_minor_line_is_every_patch():
    (f,) = _lint("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", "2.9.0")
    assert "use only" not in f.message and "see the header)" not in f.message
    assert "2.9.1 took the notice back" in f.message and f.message.count("took the notice back") == 1
    assert _lint("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n", "2.9") == []
    assert is_line("2.9") and not is_line("2.9.0") and not is_line("2")
    assert covers(parse("2.4"), "2.4", "2.4", None) and not covers(parse("2.9"), "2.9", "2.9.0", "2.9.1")
    assert covers(parse("2.9.0"), "2.9.0", "2.9.0", "2.9.1")


# -- the torch.cuda.amp findings the five repositories pin ------------------------------------

@pytest.mark.parametrize("name,lines", [
    ("sd-scripts__networks__control_net_lllite.py", [418, 434]),
    ("fairseq__fairseq__optim__amp_optimizer.py", [26]),
])
def test_torch_cuda_amp_findings(name, lines):
    assert [line for line, rid in _real(name) if rid == "deprecated-torch-api"] == lines
    assert [line for line, rid in _real(name, "2.3") if rid == "deprecated-torch-api"] == []


# -- item 3: TorchFix's checks, version-aware -----------------------------------------------

# every `name` of TorchFix 0.7.0's torchfix/deprecated_symbols.yaml (pytorch-labs/torchfix at
# 86186f4b678bc3534fe0fe4a43997bc90cfc45a5), and every rule code its visitors define
TORCHFIX_SYMBOLS = """torch.solve torch.qr torch.symeig torch.chain_matmul torch.cholesky torch.ger
torch.lu_solve torch.norm torch.range torch.svd torch.triangular_solve torch.lu torch.matrix_rank
torch.lstsq torch.nn.UpsamplingNearest2d torch.nn.UpsamplingBilinear2d torch.testing.assert_allclose
torch.nn.utils.weight_norm torch.utils._pytree._register_pytree_node torch.backends.cuda.sdp_kernel
functorch.vmap functorch.grad functorch.vjp functorch.jvp functorch.jacrev functorch.jacfwd
functorch.hessian functorch.functionalize""".split()
TORCHFIX_CODES = ("TOR001 TOR002 TOR003 TOR004 TOR101 TOR102 TOR103 TOR104 TOR105 TOR106 TOR107 TOR201 "
                  "TOR202 TOR203 TOR401 TOR901").split()


@pytest.mark.parametrize("name", TORCHFIX_SYMBOLS)
def test_every_torchfix_deprecated_symbol_is_reported_on_the_newest_torch(name):
    module, _, attr = name.rpartition(".")
    found = _lint(f"import {module}\nx = {name}(a)\n")
    assert [f.line for f in found if f.kind == "deprecated"] == [2], (name, found)


def test_every_torchfix_code_has_a_row_in_the_docs_table():
    doc = (ROOT / "docs" / "lint.md").read_text(encoding="utf-8")
    table = doc[doc.index("## TorchFix's checks"):]
    for code in TORCHFIX_CODES:
        assert re.search(rf"^\| [^|]*\b{code}\b", table, re.M), code


def test_torch_load_matters_before_2_6_only_and_removed_functions_say_so():
    code = "import torch\nstate = torch.load(path)\nx = torch.solve(b, A)\n"
    on_24 = {(f.line, f.id): f.message for f in _lint(code, "2.4")}
    assert set(on_24) == {(2, "torch-load-without-weights-only"), (3, "deprecated-torch-function")}
    assert "removed in torch 2.0" in on_24[(3, "deprecated-torch-function")]
    assert [(f.line, f.id) for f in _lint(code, "2.6")] == [(3, "deprecated-torch-function")]
    assert "deprecated since torch 1.9, removed in 2.0" in _lint(code, "1.12")[-1].message


def test_the_require_grad_fix_is_unsafe_and_proved_by_fixcheck():
    (f,) = _lint("for p in model.parameters():\n    p.require_grad = False\n")
    assert f.id == "requires-grad-typo" and f.fix["applicability"] == "unsafe"
    new, fixed = engine.apply_edits("for p in model.parameters():\n    p.require_grad = False\n", [f], True)
    assert new == "for p in model.parameters():\n    p.requires_grad = False\n" and fixed == [f]


# -- TorchFix's TOR101 finding in detr: an AssertionError handler is no compatibility guard --

def test_assert_allclose_inside_except_assertionerror_is_reported():
    """detr test_all.py calls torch.testing.assert_allclose inside ``try: ... except
    AssertionError``: a missing name raises AttributeError, so that handler guards nothing
    (TorchFix reports the line; it was the one TorchFix finding torchdoctor missed)."""
    found = _real("detr__test_all.py")
    line = next(i for i, text in enumerate((REAL / "detr__test_all.py").read_text(encoding="utf-8").splitlines(), 1)
                if "torch.testing.assert_allclose(" in text)
    assert (line, "deprecated-torch-function") in found


def test_an_assert_probe_under_except_assertionerror_still_guards():
    code = ("import torch\n"
            "try:\n"
            "    assert hasattr(torch, 'chain_matmul')\n"
            "    y = torch.chain_matmul(a, b)\n"
            "except AssertionError:\n"
            "    y = a @ b\n")
    assert not [f for f in _lint(code) if f.id == "deprecated-torch-function"]
