"""torchdoctor.check(): the Report that `torchdoctor check` renders, for bots and notebooks.

Inputs are real: pasted reports from public tickets (tests/data/cases2, tests/data/corpus) and
facts recorded on real machines (tests/machines).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import torchdoctor
from torchdoctor.errors import UserError
from torchdoctor.facts import Facts
from torchdoctor.report import exit_code

DATA = Path(__file__).resolve().parent / "data"
MACHINES = Path(__file__).resolve().parent / "machines"


def _cli_findings(*args: str) -> list[tuple[str, str]]:
    proc = subprocess.run([sys.executable, "-m", "torchdoctor", "check", *args, "--format", "json",
                           "--fail-on", "never"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return sorted((f["id"], f["severity"]) for f in json.loads(proc.stdout)["findings"])


@pytest.mark.parametrize("case", ["cases2/case201.txt", "corpus/case025.txt", "cases2/case213.txt"])
def test_check_on_pasted_text_finds_what_the_cli_finds(case):
    text = (DATA / case).read_text(encoding="utf-8", errors="replace")
    report = torchdoctor.check(report=text)
    assert report.command == "check"
    assert sorted((f.id, f.severity) for f in report.findings) == _cli_findings(
        "--from-report", str(DATA / case))
    assert report.findings, "these reports all show an environment problem"


def test_check_on_an_issue_body_with_torchs_warning_only():
    # pytorch/pytorch issue text: only torch's own "sm_120 is not compatible" warning
    report = torchdoctor.check(report=(DATA / "cases2/case201.txt").read_bytes())
    assert "gpu-arch-rejected-by-torch" in {f.id for f in report.findings}
    assert int(exit_code(report, "error")) == 1


@pytest.mark.parametrize("form", ["text", "bytes", "dict", "model"])
def test_check_on_recorded_facts_in_every_form(form):
    path = MACHINES / "ampere-a100x4.json"
    text = path.read_text(encoding="utf-8")
    value = {"text": text, "bytes": text.encode(), "dict": json.loads(text),
             "model": Facts.model_validate_json(text)}[form]
    report = torchdoctor.check(facts=value)
    assert sorted((f.id, f.severity) for f in report.findings) == _cli_findings("--facts", str(path))


def test_facts_given_as_a_model_are_sanitised_and_redacted():
    data = json.loads((MACHINES / "ampere-a100x4.json").read_text(encoding="utf-8"))
    data["system"]["os"] = "Ubuntu 22.04 \x1b]0;pwned\x07\x1b[2J token ghp_" + "a" * 36
    facts = Facts.model_construct(**Facts.model_validate(data).__dict__)
    report = torchdoctor.check(facts=facts)
    dumped = report.model_dump_json()
    assert "\x1b" not in dumped and "ghp_" + "a" * 36 not in dumped
    assert "ghp_" + "a" * 36 in torchdoctor.check(facts=facts, redact=False).facts.system.os


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"report": b"\x00\x01binary"}, "binary data"),
        ({"report": 42}, "expected text, bytes, a dict or Facts, got int"),
        ({"facts": {"schema_version": 99}}, "schema_version 99"),
        ({"facts": "{}", "report": "PyTorch version: 2.5.1"}, "not both"),
        ({"report": "PyTorch version: 2.5.1", "python": "/usr/bin/python3"}, "no effect"),
    ],
)
def test_bad_input_is_one_line_user_error(kwargs, words):
    with pytest.raises(UserError) as info:
        torchdoctor.check(**kwargs)
    message = str(info.value)
    assert words in message and "\n" not in message


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_check_of_this_environment_matches_the_cli():
    report = torchdoctor.check(timeout=120)
    assert report.facts.torch.import_status == "ok"
    assert {f.id for f in report.findings} == {i for i, _ in _cli_findings("--timeout", "120")}


def test_text_without_facts_is_read_not_refused():
    """Issue 18: prose is never refused; the report says in one line what would tell more."""
    report = torchdoctor.check(report="hello, nothing about any environment here")
    notes = [f.message for f in report.findings if f.id == "reading-note"]
    assert len(notes) == 1
    assert "python -m torch.utils.collect_env" in notes[0] and "torchdoctor report" in notes[0]
    assert "no known error message" in notes[0]
    assert not [f for f in report.findings if f.severity != "info"]
