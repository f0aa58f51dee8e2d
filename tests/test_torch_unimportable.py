"""A torch that cannot be imported is never healthy, and its likely cause is named.

Real reports only: every ``PyTorch version: N/A`` report in tests/data (corpus, cases, cases2) goes
through the CLI (``check --from-report``) and must end with a warning or error about the import and
never the word "healthy". The causes come from the report's other lines (a Python released before
torch's wheels for it) or, live and when a traceback is pasted, from the import error's text (an
older libnvJitLink/NCCL, a libcusparse of another CUDA release, MKL 2024.1): the live path is driven
through the torch child's own ``import_failure`` on the error messages quoted in the threads.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchdoctor import tables
from torchdoctor.cli import main
from torchdoctor.engine import evaluate
from torchdoctor.facts import Facts, TorchFacts
from torchdoctor.importers import load_report
from torchdoctor.probes import _torch_child
from torchdoctor.rules import load_rules

DATA = Path(__file__).resolve().parent / "data"
_NA = re.compile(r"^[ \t>*`-]{0,8}PyTorch version\s{0,8}[:：]\s{0,8}N/A\b", re.MULTILINE)
NA_REPORTS = sorted(
    p for d in ("corpus", "cases", "cases2") for p in (DATA / d).glob("case*.txt")
    if _NA.search(p.read_text(encoding="utf-8", errors="replace"))
)
SERIOUS = ("error", "warning")
RULES = load_rules()


def _key(path: Path) -> str:
    return f"{path.parent.name}/{path.stem}"


def _check(capsys, path: Path, fmt: str) -> tuple[int, str]:
    code = main(["check", "--from-report", str(path), "--format", fmt])
    out, _ = capsys.readouterr()
    return code, out


def _report(path: Path):
    return evaluate(RULES, load_report(path.read_bytes(), path.name))


def _fired(report) -> dict[str, str]:
    return {f.id: f.message for f in report.findings}


def test_the_na_reports_are_found():
    keys = {_key(p) for p in NA_REPORTS}
    # the eight reports of tests/data whose collect_env says PyTorch version: N/A
    assert {"corpus/case025", "corpus/case027", "cases/case109", "cases2/case213", "cases2/case232",
            "cases2/case244", "cases2/case251", "cases2/case253"} <= keys


@pytest.mark.parametrize("path", NA_REPORTS, ids=_key)
def test_na_report_is_never_healthy_through_the_cli(capsys, path):
    code, out = _check(capsys, path, "json")
    assert code in (0, 1), out[-500:]
    findings = json.loads(out)["findings"]
    serious = [(f["id"], f["severity"]) for f in findings
               if f["severity"] in SERIOUS and f["category"] in ("torch-import-failure", "python-unsupported")]
    assert serious, f"{_key(path)}: no warning or error about torch's import: {findings}"
    _, terminal = _check(capsys, path, "terminal")
    assert "healthy" not in terminal, terminal[:400]


def test_report_without_installed_state_is_unknown_from_report_and_warned():
    # pytorch#114893: collect_env cut before its package section; nothing says whether torch is installed
    path = DATA / "cases2" / "case251.txt"
    facts = load_report(path.read_bytes(), path.name)
    assert facts.torch.import_status == "unknown-from-report"
    fired = _fired(evaluate(RULES, facts))
    assert "torch-unimportable-in-report" in fired
    assert "the report shows neither the error nor whether torch is installed" in fired["torch-unimportable-in-report"]


@pytest.mark.parametrize(("case", "python", "torch", "platform"), [
    ("case251", "3.12.0", "2.2.0", "linux-x86_64"),   # pytorch#114893, November 2023
    ("case253", "3.13.0", "2.6.0", "macos-arm64"),    # pytorch#137853: 2.5's 3.13 wheels were Linux only
    ("case244", "3.11.1", "2.0.0", "macos-arm64"),    # pytorch#93148, January 2023
])
def test_python_newer_than_wheels_is_named_from_the_python_line(case, python, torch, platform):
    fired = _fired(_report(DATA / "cases2" / f"{case}.txt"))
    message = fired["python-newer-than-torch-wheels"]
    assert f"Python {python} was released" in message
    assert f"the first was torch {torch}" in message and f"on {platform}" in message
    assert "torch-unimportable-in-report" in fired


def test_old_python_in_a_report_is_not_blamed():
    # pytorch#90692: Python 3.9.13 (August 2022), long after 3.9's first wheels (1.7.1)
    fired = _fired(_report(DATA / "cases2" / "case232.txt"))
    assert "python-newer-than-torch-wheels" not in fired


def test_pasted_traceback_beats_a_pip_list_without_torch():
    # pytorch#90692: `[pip3] mypy-e` only, but the traceback runs through site-packages/torch
    path = DATA / "cases2" / "case232.txt"
    facts = load_report(path.read_bytes(), path.name)
    assert facts.torch.import_status == "import-error"
    assert "version libcusparse.so.11 not defined" in facts.torch.import_error
    fired = _fired(evaluate(RULES, facts))
    assert "libtorch_cuda_cu.so is missing" not in fired["torch-import-failed"]
    assert "another CUDA release" in fired["torch-import-failed"]
    assert "libcusparse=11.7.3.50" in fired["cuda-library-from-other-release"]


# Live: the torch child turns the exception into facts; the rules read the error text.
LIVE_ERRORS = [
    # (thread, exception message, rule that names the cause, words in its message)
    ("pytorch#144244 (cases2/case231)",
     "/root/.cache/pypoetry/virtualenvs/soccer-eventpred-YF5lB--H-py3.10/lib/python3.10/site-packages/torch/lib/"
     "../../nvidia/cusparse/lib/libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version "
     "libnvJitLink.so.12",
     "cuda-library-from-other-release", "belongs to release 12.4"),
    ("ragflow#4466 (cases2/case212)",
     "/home/mit/kxyRAG/ragflow/.venv/lib/python3.12/site-packages/torch/lib/../../nvidia/cusparse/lib/"
     "libcusparse.so.12: undefined symbol: __nvJitLinkAddData_12_1, version libnvJitLink.so.12",
     "cuda-library-from-other-release", "belongs to release 12.1"),
    ("pytorch#119932",
     "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister",
     "cuda-library-from-other-release", "libnccl.so.2"),
    ("yoraish/mmd#3 (cases2/case214)",
     "/home/ltl/anaconda3/envs/mmd/lib/python3.8/site-packages/torch/lib/libtorch_cpu.so: undefined symbol: "
     "iJIT_NotifyEvent",
     "conda-mkl-breaks-torch-import", 'conda install "mkl<2024.1"'),
]


@pytest.mark.parametrize(("thread", "message", "rule", "words"), LIVE_ERRORS, ids=[e[0] for e in LIVE_ERRORS])
def test_live_import_error_names_the_cause(thread, message, rule, words):
    status = _torch_child.import_failure(ImportError(message))
    facts = Facts(torch=TorchFacts(python_executable="/usr/bin/python3", **status))
    fired = _fired(evaluate(RULES, facts))
    assert words in fired[rule], fired
    assert "Cause:" in fired["torch-import-failed"] and rule in fired["torch-import-failed"]
    assert "torch-unimportable-in-report" not in fired  # the interpreter is known: a live finding


def test_live_interpreter_without_torch_stays_a_note():
    status = _torch_child.import_failure(ModuleNotFoundError("No module named 'torch'", name="torch"))
    facts = Facts(torch=TorchFacts(python_executable="/opt/venv/bin/python", **status))
    report = evaluate(RULES, facts)
    assert {f.id: f.severity for f in report.findings if f.category == "torch-import-failure"} == {
        "torch-not-installed": "info"}


# ---------------------------------------------------------------------------------------
# the table functions behind them
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(("python", "os", "machine", "expected"), [
    ("3.13.0", "Linux", "x86_64", "2.5.0"),      # Linux x86_64 had 3.13 wheels from 2.5.0
    ("3.13.1", "Darwin", "arm64", "2.6.0"),      # released before 2.6.0 on a Mac
    ("3.13.1", "Linux", "x86_64", None),         # after 2.5.0
    ("3.13.0rc3", None, None, "2.5.0"),          # a pre-release is before 3.13.0; unknown platform: earliest wheels
    ("3.12.2", "Linux", "x86_64", None),         # after 2.2.0
    ("3.8.10", "Linux", "x86_64", None),         # minor not in the table
    ("3.12.0", "Linux", "ppc64le", None),        # platform not in the table
    ("3.12", "Linux", "x86_64", "2.2.0"),        # "Python version: 3.12" reads as 3.12.0
    ("not a version", "Linux", "x86_64", None),
    ("3." + "9" * 5000, "Linux", "x86_64", None),
    (None, None, None, None),
])
def test_python_predates_torch_wheels(python, os, machine, expected):
    got = tables.python_predates_torch_wheels(python, os, machine)
    assert (got["torch"] if got else None) == expected


def test_import_failure_reads_a_bounded_prefix_and_only_strings():
    tail = "undefined symbol: iJIT_NotifyEvent"
    assert tables.import_failure("x" * 10 + tail)["rule"] == "conda-mkl-breaks-torch-import"
    assert tables.import_failure("x" * tables.MAX_IMPORT_ERROR_SCAN + tail) is None
    assert tables.import_failure(None) is None and tables.import_failure(["undefined symbol"]) is None
    assert tables.import_failure("ImportError: libcudnn.so.9: cannot open shared object file") is None


# ----------------------------------------------------------------------------------------
# the verdict: never "healthy" when the thing to diagnose is absent or unknown (issue 21, 6)
# ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def python_without_torch(tmp_path_factory) -> str:
    """A real interpreter without torch: a fresh venv (about 0.2 s)."""
    import os
    import subprocess
    import sys

    venv = tmp_path_factory.mktemp("no-torch") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    return str(venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python"))


def _first_lines(capsys, *argv: str) -> tuple[str, str]:
    code = main(list(argv))
    out, _ = capsys.readouterr()
    assert code == 0, out[-500:]
    return out, "\n".join(out.splitlines()[:3])


def test_no_torch_is_not_diagnosed_in_every_view(capsys, python_without_torch):
    """`check` against a python without torch: the note is right, and no view calls it healthy."""
    py = ("--python", python_without_torch)
    out, head = _first_lines(capsys, "check", *py)
    assert "torch-not-installed" in out
    assert "not diagnosed (torch not installed)" in head and "healthy" not in head
    _, head = _first_lines(capsys, "check", *py, "--format", "markdown")
    assert head.startswith("## torchdoctor check: not diagnosed (torch not installed)"), head
    out, _ = _first_lines(capsys, "check", *py, "--format", "json")
    assert json.loads(out)["verdict"] == "not diagnosed (torch not installed)"
    _, head = _first_lines(capsys, "report", *py)
    assert "**not diagnosed (torch not installed)**" in head and "healthy" not in head


def test_a_paste_without_torch_is_not_diagnosed(capsys, tmp_path):
    """Prose with no environment fact: nothing was diagnosed, so nothing is healthy."""
    paste = tmp_path / "issue.txt"
    paste.write_text("Training got slower after I upgraded, any idea why?\n", encoding="utf-8")
    out, _ = _first_lines(capsys, "check", "--from-report", str(paste), "--format", "json")
    assert json.loads(out)["verdict"] == "not diagnosed (torch unknown)"
    _, head = _first_lines(capsys, "check", "--from-report", str(paste))
    assert "healthy" not in head


def test_a_job_with_a_missing_rank_is_not_healthy():
    """check --distributed: ranks whose facts never arrived were not diagnosed."""
    from torchdoctor.distributed.model import JobReport
    from torchdoctor.facts import MissingRank
    from torchdoctor.render.distributed import render

    recorded = JobReport.model_validate_json((DATA / "distributed" / "two_nodes_job.json").read_text())
    quiet = recorded.model_copy(update={"findings": []})
    assert render(quiet, "terminal").startswith("torchdoctor check --distributed: healthy")
    job = recorded.job.model_copy(update={"ranks": recorded.job.ranks[:-1],
                                          "missing": [MissingRank(rank=3, stage="never-joined")]})
    partial = quiet.model_copy(update={"job": job})
    want = "not diagnosed (3 of 4 ranks reported)"
    assert render(partial, "terminal").startswith(f"torchdoctor check --distributed: {want}")
    assert render(partial, "markdown").startswith(f"## torchdoctor check --distributed: {want}")
    assert "healthy" not in render(partial, "json")  # the JSON, a JobReport read back as one, has no verdict
