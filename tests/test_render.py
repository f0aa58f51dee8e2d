"""Renderers on realistic inputs: snapshots of the terminal (width 100, no colour), Markdown
and ticket output for recorded machines and real pasted reports, plus targeted assertions
for the layout decisions (unknowns as "?" explained once, errors first, whole fix sentences,
workload rules not counted as skipped, identical GPUs on one row, GitHub-safe Markdown).

The snapshots include rule messages: a reworded rule changes them (`pytest --snapshot-update`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchdoctor.api import plan_report
from torchdoctor.engine import evaluate
from torchdoctor.facts import Facts, Unavailable
from torchdoctor.importers import load_report
from torchdoctor.render import first_sentence, reflow
from torchdoctor.render.json import render as render_json
from torchdoctor.render.markdown import render as render_markdown
from torchdoctor.render.terminal import render as render_terminal
from torchdoctor.report import Finding, Report
from torchdoctor.rules import load_rules
from torchdoctor.synthetic import facts_for_gpu
from torchdoctor.ticket import md_prose, render_ticket
from torchdoctor.workload import build_workload

TESTS = Path(__file__).resolve().parent
MACHINES = ["hopper-h100x8", "cpu-epyc9654-docker-6cpus", "pascal-p100", "blackwell-rtxpro6000"]
REPORTS = ["case005", "case019"]  # a broken conda+pip install on a T4; a cu113 build that sees no GPU
RULES = load_rules()


def machine(name: str) -> Facts:
    return Facts.model_validate_json((TESTS / "machines" / f"{name}.json").read_text(encoding="utf-8"))


def pasted(name: str) -> Facts:
    path = TESTS / "data" / "corpus" / f"{name}.txt"
    return load_report(path.read_bytes(), path.name)


def check(facts: Facts, command: str = "check") -> Report:
    return evaluate(RULES, facts, None, command=command)


def terminal(report: Report, **kw) -> str:
    return render_terminal(report, color=False, width=kw.pop("width", 100), **kw)


def flat(text: str) -> str:
    """The terminal text as read: box borders gone, line wraps collapsed."""
    return " ".join(re.sub(r"[│╭╮╰╯─┃┏┓┗┛━┡┩╇┳┻╋┼├┤└┘┌┐]", " ", text).split())


INPUTS = [pytest.param(machine, n, id=n) for n in MACHINES] + [pytest.param(pasted, n, id=n) for n in REPORTS]


# ----------------------------------------------------------------------------------------
# snapshots
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("source", "name"), INPUTS)
def test_terminal_snapshot(snapshot, source, name):
    assert terminal(check(source(name))) == snapshot


@pytest.mark.parametrize(("source", "name"), INPUTS)
def test_markdown_snapshot(snapshot, source, name):
    assert render_markdown(check(source(name))) == snapshot


@pytest.mark.parametrize(("source", "name"), INPUTS)
def test_ticket_snapshot(snapshot, source, name):
    assert render_ticket(check(source(name), command="report")) == snapshot


def test_recommend_explain_snapshot(snapshot):
    report = plan_report(RULES, facts_for_gpu("T4"), build_workload("detection"), torch_version="2.13.0")
    assert terminal(report, explain=True) == snapshot


# ----------------------------------------------------------------------------------------
# what the layout promises
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("width", [80, 100, 140])
@pytest.mark.parametrize(("source", "name"), INPUTS)
def test_no_line_wider_than_the_terminal_and_no_colour(source, name, width):
    text = terminal(check(source(name)), width=width)
    assert "\x1b[" not in text
    assert max(len(line) for line in text.splitlines()) <= width


def test_unknowns_are_a_question_mark_explained_once():
    text = terminal(check(pasted("case005")))
    assert "unknown (not stated in the report)" not in text
    assert flat(text).count("not stated in the report") == 1
    row = next(line for line in text.splitlines() if "│ ?" in line)
    assert "GPU memory" in row
    # a value the report does give is shown, one it does not is left out of its row
    assert "Driver      410.104 " in text and "(CUDA" not in text


def test_small_sizes_in_mib():
    assert "/dev/shm 64 MiB" in terminal(check(machine("cpu-epyc9654-docker-6cpus")))


def test_rows_with_nothing_known_are_hidden():
    text = flat(terminal(check(pasted("case005"))))
    assert "Memory" not in text  # no RAM, no /dev/shm in a collect_env report
    assert "RAM, /dev/shm" in text or "RAM" not in text


def test_no_nvidia_driver_reads_as_no_gpu_found():
    facts = machine("cpu-epyc9654-docker-6cpus").model_copy(
        update={"gpu": Unavailable(unavailable="NVML library not found: no NVIDIA driver installed")})
    text = flat(terminal(check(facts)))
    assert "GPU none found (no NVIDIA driver installed)" in text
    assert "GPU unknown" not in text


def test_other_gpu_unknowns_keep_their_reason():
    facts = machine("cpu-epyc9654-docker-6cpus").model_copy(
        update={"gpu": Unavailable(unavailable="NVML did not answer within 0.5 s")})
    assert "GPU unknown (NVML did not answer within 0.5 s)" in flat(terminal(check(facts)))


def test_identical_gpus_share_one_row():
    text = terminal(check(machine("hopper-h100x8")))
    assert "GPU 0-7       8× NVIDIA H100 80GB HBM3 · sm 9.0 Hopper · 80 GiB" in text
    assert "GPU 1 " not in text


def test_check_counts_workload_rules_apart_from_skipped():
    report = check(machine("pascal-p100"))
    text = flat(terminal(report))
    n_workload = len(report.workload_skipped())
    assert n_workload > 0
    assert f"{n_workload} workload rules not evaluated (use recommend --task)" in text
    assert f"{len(report.fact_skipped())} skipped (facts unknown; --explain lists them)" in text
    # --explain lists the skipped rules by reason, without the workload ones
    explained = flat(terminal(report, explain=True))
    assert "not recorded (" in explained
    assert "persistent-workers-off" not in explained


def _report(*findings: Finding) -> Report:
    return Report(tool_version="0", command="check", facts=machine("pascal-p100"),
                  findings=list(findings), rules_evaluated=len(findings))


NOTE = Finding(id="a-note", severity="info", category="performance", message="A note.")
WARN = Finding(id="b-warning", severity="warning", category="threads", message="A warning.",
               fix="Do this first (see `x.y`).\nThen the rest of it,\nwrapped by hand.\n")
ERR = Finding(id="c-error", severity="error", category="driver-too-old", message="An error <old>.",
              fix="Update the driver:\n\n    sudo apt install nvidia-driver-570\n")


def test_errors_come_first_in_every_format():
    report = _report(NOTE, WARN, ERR)
    text = terminal(report)
    assert text.index("c-error") < text.index("b-warning") < text.index("a-note")
    md = render_markdown(report)
    assert md.index("c-error") < md.index("b-warning") < md.index("a-note")
    ticket = render_ticket(report)
    assert ticket.index("`c-error`") < ticket.index("`b-warning`") < ticket.index("`a-note`")


def test_fix_line_is_a_whole_sentence_and_explain_shows_all_of_it():
    report = _report(WARN)
    text = flat(terminal(report))
    assert "fix: Do this first (see `x.y`). …" in text
    assert "wrapped by hand" not in text and "--explain" in text
    full = flat(terminal(report, explain=True))
    assert "fix: Do this first (see `x.y`). Then the rest of it, wrapped by hand." in full


def test_fix_that_is_a_command_is_shown_whole():
    report = _report(ERR)
    full = terminal(report, explain=True)
    assert "sudo apt install nvidia-driver-570" in full
    ticket = render_ticket(report)
    assert "  ```\n  sudo apt install nvidia-driver-570\n  ```" in ticket
    assert "An error &lt;old&gt;." in ticket


def test_reflow_and_first_sentence():
    assert reflow("a\nb\n\n- one\n  two\n- three\n") == ["a b", "- one two", "- three"]
    assert first_sentence("Use e.g. `a.b()`. Then more.") == ("Use e.g. `a.b()`.", True)
    assert first_sentence("1. `echo $X`: unset it.\n2. Next.") == ("`echo $X`: unset it.", True)


def test_md_prose_escapes_outside_code_only():
    assert md_prose("use <index> or `nvidia-smi -i <index>`") == "use &lt;index&gt; or `nvidia-smi -i <index>`"


def test_markdown_check_escapes_pipes_and_markers_in_tables():
    f = Finding(id="x", severity="warning", category="threads", message="a | b <user> c")
    md = render_markdown(_report(f))
    row = next(line for line in md.splitlines() if line.startswith("| warning"))
    assert "a \\| b &lt;user&gt; c" in row
    assert len(re.findall(r"(?<!\\)\|", row)) == 4  # severity | rule | finding: no extra column


def test_ticket_skipped_rules_grouped_by_reason():
    ticket = render_ticket(check(pasted("case005"), command="report"))
    block = ticket[ticket.index("<details><summary>"):ticket.index("</details>")]
    assert "- **not stated in the report**: `" in block
    assert "(`workload." not in block


def test_json_contract_is_unchanged():
    data = json.loads(render_json(check(pasted("case005"))))
    assert {"schema_version", "tool_version", "facts", "findings"} <= set(data)
    assert all({"id", "severity", "category", "message"} <= set(f) for f in data["findings"])
    plan = plan_report(RULES, facts_for_gpu("A100"), build_workload("classification"), torch_version="2.13.0")
    data = json.loads(render_json(plan))
    assert {"workload", "settings", "findings", "snippet"} <= set(data)
    assert all({"key", "value", "rule", "reason", "overrides"} <= set(s) for s in data["settings"])


# ----------------------------------------------------------------------------------------
# recommend: rule ids whole at any width, Markdown --explain, notes that became settings
# ----------------------------------------------------------------------------------------


def bitwise_plan(task: str = "classification") -> Report:
    """A plan with an overridden recommendation (autotuner on, lost to bitwise reproducibility)."""
    from torchdoctor.workload import build_workload as bw

    return plan_report(RULES, facts_for_gpu("T4"), bw(task, overrides={"reproducibility": "bitwise"}),
                       torch_version="2.13.0")


@pytest.mark.parametrize("task", ["classification", "detection"])
@pytest.mark.parametrize("width", [60, 80, 100, 140])
def test_plan_never_cuts_a_rule_id(width, task):
    report = bitwise_plan(task)
    assert task != "classification" or any(s.overrides for s in report.settings)
    text = terminal(report, width=width, explain=True)
    assert "…" not in text
    assert max(len(line) for line in text.splitlines()) <= width
    lines = text.splitlines()
    for rule in {s.rule for s in report.settings} | {o.rule for s in report.settings for o in s.overrides}:
        assert any(rule in line for line in lines), f"{rule} is not on one line at width {width}"


def test_markdown_explain_lists_overridden_and_skipped():
    report = bitwise_plan()
    plain, explained = render_markdown(report), render_markdown(report, explain=True)
    assert "overridden" not in plain and "Skipped rules" not in plain
    assert "| ↳ overridden: ~~`True`~~ |" in explained and "(loses to reproducibility)" in explained
    n = len(report.skipped)
    assert f"### Skipped rules ({n}): the facts they need are unknown" in explained


def test_markdown_notes_that_became_settings_are_not_called_no_findings():
    report = plan_report(RULES, facts_for_gpu("A100"), build_workload("classification"), torch_version="2.13.0")
    assert report.findings and not report.displayed_findings()
    text = render_markdown(report)
    notes = report.counts()["info"]
    assert "No findings" not in text
    assert f"No problems found; {notes} notes are in the recommended settings below" in text
    assert f"0 notes (+{notes} shown as recommended settings) ·" in text


def test_synthetic_plan_says_the_cpu_needs_the_machines_facts():
    report = plan_report(RULES, facts_for_gpu("cpu"), build_workload("llm-inference"), torch_version="2.13.0")
    assert "--facts facts.json" in flat(terminal(report))
    assert "**CPU:** unknown (planning from --gpu" in render_markdown(report)


def test_every_template_environment_is_sandboxed():
    """Snippet, Markdown and ticket templates are ours, but the values they show are not: a
    value that reached a template as an object could otherwise be walked to __globals__."""
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

    from torchdoctor.render import templates
    from torchdoctor.render.markdown import env

    for environment in (templates(), env()):
        assert isinstance(environment, ImmutableSandboxedEnvironment)
        with pytest.raises(SecurityError):
            environment.from_string("{{ x.__class__.__init__.__globals__ }}").render(x=object())
