"""torchdoctor.inprocess: audit judgements are rules (shared with check), apply() executes the
plan's own statements, and the results are typed.

Scenarios that touch torch's global state run in a fresh interpreter (a script that prints
one JSON line), as in tests/test_runtime.py. The fake CUDA torch (tests/data/fake_torch)
stands in for a CUDA build with cuDNN, which this machine lacks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pydantic import ValidationError

from torchdoctor.inprocess import (
    ApplyResult,
    AuditResult,
    Change,
    IgnoredAttribute,
    ProcessFinding,
    Tf32ApiState,
)
from torchdoctor.inprocess.audit import state_rules
from torchdoctor.rules import load_rules

REPO = Path(__file__).resolve().parent.parent
FAKE_CUDA = REPO / "tests" / "data" / "fake_torch"
TIMEOUT_S = 300


def run_python(body: str, tmp_path: Path, prelude: str = "") -> dict:
    script = tmp_path / "scenario.py"
    script.write_text(
        f"import json, os, sys, warnings\nwarnings.simplefilter('ignore')\n"
        f"sys.path.insert(0, {str(REPO)!r})\n" + prelude + textwrap.dedent(body),
        encoding="utf-8",
    )
    # the scenarios start from torch's defaults
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=TIMEOUT_S, cwd=str(tmp_path), env=env, check=False)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, done.stdout[-2000:] + done.stderr[-3000:]
    return json.loads(lines[-1])


FAKE_CUDA_PATH = f"sys.path[:0] = [{str(FAKE_CUDA / 'cuda_a100_rtx4090')!r}, {str(FAKE_CUDA / 'cuda')!r}]\n"


# --------------------------------------------------------------------------------------
# audit judgements are the engine's rules
# --------------------------------------------------------------------------------------


@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_audit_reports_cudnn_benchmark_with_deterministic_like_check(tmp_path):
    """The rule check has (cudnn.benchmark with cudnn.deterministic) is reported by audit()
    too, from the same facts; audit() did not report it before."""
    out = run_python("""
        import torch
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.deterministic = True
        import torchdoctor
        from torchdoctor.inprocess.audit import process_facts
        audit = torchdoctor.audit()
        facts, _ = process_facts()
        check = torchdoctor.check(facts=facts)
        print(json.dumps({"audit": [f.id for f in audit.findings],
                          "check": [f.id for f in check.findings],
                          "cuda_initialised": torch.cuda.is_initialized()}))
    """, tmp_path, FAKE_CUDA_PATH)
    assert "cudnn-benchmark-with-deterministic" in out["audit"]
    assert "cudnn-benchmark-with-deterministic" in out["check"]
    assert out["cuda_initialised"] is False


def test_audit_without_the_pair_does_not_report_it(tmp_path):
    out = run_python("""
        import torch
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        from torchdoctor.inprocess import audit_process
        print(json.dumps({"audit": [f.id for f in audit_process().findings]}))
    """, tmp_path, FAKE_CUDA_PATH)
    assert out["audit"] == []


@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_audit_evaluates_any_rule_about_process_state(tmp_path):
    """A rule written in YAML that reads torch.settings is an audit judgement: no Python."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "test-audit-threads.yaml").write_text(textwrap.dedent("""\
        id: test-audit-threads
        severity: warning
        category: performance
        summary: Test rule for audit().
        why: Proves audit() judges process state with rules.
        when: torch.settings.get("torch.set_num_threads") == 3
        message: "intra-op threads: {{ torch.settings['torch.set_num_threads'] }}"
        fix: none
        references: [https://pytorch.org/docs/stable/generated/torch.set_num_threads.html]
        examples:
          fires:
            - name: three
              facts: {torch: {settings: {torch.set_num_threads: 3}}}
          ok:
            - name: one
              facts: {torch: {settings: {torch.set_num_threads: 1}}}
        """), encoding="utf-8")
    out = run_python(f"""
        import torch
        from torchdoctor.inprocess import audit_process
        before = audit_process(rules_dirs=[{str(rules)!r}])
        torch.set_num_threads(3)
        after = audit_process(rules_dirs=[{str(rules)!r}])
        print(json.dumps({{"before": [f.id for f in before.findings],
                          "after": [f.model_dump() for f in after.findings]}}))
    """, tmp_path)
    assert "test-audit-threads" not in out["before"]
    assert {"id": "test-audit-threads", "severity": "warning", "category": "performance",
            "message": "intra-op threads: 3"} in out["after"]


def test_state_rules_are_the_rules_that_read_torch_settings():
    ids = {r.id for r in state_rules(load_rules())}
    assert {"tf32-mixed-legacy-and-new-api", "cudnn-benchmark-with-deterministic",
            "anomaly-detection-enabled"} <= ids
    assert "cuda-build-without-gpu" not in ids  # about the install, not the process's state


# --------------------------------------------------------------------------------------
# apply() executes the statement the engine wrote
# --------------------------------------------------------------------------------------


APPLY_RULE = """\
id: test-inprocess-apply
severity: info
category: performance
precedence: correctness
summary: Test rule for apply().
why: Plans one assignment and two calls.
when: workload.task == "classification"
message: test plan
recommend:
  torch.set_num_threads: 1
  torch.set_num_interop_threads: 1
  torch.backends.cudnn.benchmark: true
fix: none
references: [https://pytorch.org/docs/stable/notes/cpu_threading_torchscript_inference.html]
examples:
  fires:
    - name: classification
      facts: {workload: {task: classification}}
  ok:
    - name: another task
      facts: {workload: {task: detection}}
"""


@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_apply_executes_the_plans_code_and_never_renders_it_again(tmp_path):
    """The engine's SettingRec.code is what runs: a plan whose code was changed after the
    engine wrote it runs the changed code, and a setting without code fails, with the reason."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "test-inprocess-apply.yaml").write_text(APPLY_RULE, encoding="utf-8")
    out = run_python(f"""
        import torch
        from torchdoctor import engine
        real = engine.evaluate

        def evaluate(*args, **kwargs):
            report = real(*args, **kwargs)
            settings = []
            for rec in report.settings:
                if rec.key == "torch.set_num_interop_threads":
                    rec = rec.model_copy(update={{"code": ""}})
                elif rec.kind in ("assign", "call"):
                    mark = "TD_RAN_" + rec.key.replace(".", "_")
                    rec = rec.model_copy(update={{"code": rec.code + f"\\nos.environ[{{mark!r}}] = '1'"}})
                settings.append(rec)
            return report.model_copy(update={{"settings": settings}})

        engine.evaluate = evaluate
        from torchdoctor.inprocess import apply_plan
        result = apply_plan("classification", rules_dirs=[{str(rules)!r}])
        print(json.dumps({{"result": result.model_dump(mode="json"),
                          "threads": torch.get_num_threads(),
                          "ran": sorted(k for k in os.environ if k.startswith("TD_RAN_"))}}))
    """, tmp_path)
    result = out["result"]
    assert {"torch.set_num_threads", "torch.backends.cudnn.benchmark"} <= {
        e["key"] for e in result["changed"]}
    assert out["threads"] == 1
    assert out["ran"] == ["TD_RAN_torch_backends_cudnn_benchmark", "TD_RAN_torch_set_num_threads"]
    assert [(e["key"], e["note"]) for e in result["failed"]] == [
        ("torch.set_num_interop_threads",
         "ValueError: the plan carries no statement for torch.set_num_interop_threads")]
    assert "setting-not-applied" in {f["id"] for f in result["findings"]}


# --------------------------------------------------------------------------------------
# typed results
# --------------------------------------------------------------------------------------


def test_results_are_frozen_models_that_read_like_the_old_dicts():
    finding = ProcessFinding(id="x", severity="warning", category="probe", message="m")
    change = Change(key="torch.backends.cudnn.benchmark", before=False, after=True, rule="r")
    result = ApplyResult(changed=[change], findings=[finding])
    assert result["changed"][0]["after"] is True
    assert "for_your_code" in result and "nope" not in result
    assert set(dict(result)) == set(ApplyResult.model_fields)
    assert result.model_dump(mode="json")["changed"] == [
        {"key": "torch.backends.cudnn.benchmark", "before": False, "after": True, "rule": "r"}]
    with pytest.raises(KeyError):
        result["nope"]
    with pytest.raises(ValidationError):
        result.changed = []  # type: ignore[misc]
    with pytest.raises(ValidationError):
        ApplyResult(changed=[], unknown_field=1)
    assert "torch.backends.cudnn.benchmark: False -> True" in str(result)


def test_audit_result_prints_readably_and_dead_findings_keep_their_ids():
    """The dead-attribute judgement is the rules over the fact torch.dead_attributes: one
    finding per attribute, the id by what happened, the category from the item."""
    from torchdoctor.engine import evaluate
    from torchdoctor.facts import DeadAttribute, Facts, TorchFacts
    from torchdoctor.rules import load_rules

    ignored = IgnoredAttribute(attribute="torch.backends.cudnn.benchmrk", value=True,
                               problem="PyTorch has no such setting",
                               did_you_mean="torch.backends.cudnn.benchmark = True")
    replaced = IgnoredAttribute(attribute="torch.backends.cuda.enable_flash_sdp", value=True,
                                problem="replaced PyTorch's function with a bool", replaced=True,
                                category="reproducibility")
    dead = [DeadAttribute(attribute=i.attribute, value=repr(i.value), value_type="bool",
                          replaced="function" if i.replaced else None,
                          did_you_mean=i.did_you_mean, category=i.category)
            for i in (ignored, replaced)]
    facts = Facts(torch=TorchFacts(version="2.13.0", dead_attributes=dead))
    report = evaluate(state_rules(load_rules()), facts, None, command="audit")
    findings = [ProcessFinding(id=f.id, severity=f.severity, category=f.category, message=f.message)
                for f in report.findings]
    assert sorted((f.id, f.category) for f in findings) == [
        ("backends-attribute-replaced", "reproducibility"), ("backends-setting-ignored", "performance")]
    by_id = {f.id: f for f in findings}
    assert "did you mean `torch.backends.cudnn.benchmark = True`?" in by_id["backends-setting-ignored"].message
    assert "with a bool" in by_id["backends-attribute-replaced"].message
    audit = AuditResult(torch_imported=True, settings={"a": 1}, ignored=[ignored, replaced],
                        tf32_api=Tf32ApiState(), findings=findings)
    text = str(audit)
    assert text.splitlines()[0] == "1 settings read, 2 ignored attribute(s), 2 finding(s)"
    assert "backends-setting-ignored: torch.backends.cudnn.benchmrk = True" in text
    assert audit["tf32_api"].model_dump() == {"mixed": False, "raising": {}}
    assert str(AuditResult(torch_imported=False)) == (
        "torch is not imported in this process: nothing to audit")


def test_the_inprocess_package_does_not_import_the_api_module():
    from tests.test_architecture import import_graph

    graph = import_graph()
    inprocess = {m: deps for m, deps in graph.items() if m.startswith("torchdoctor.inprocess")}
    assert set(inprocess) >= {"torchdoctor.inprocess.apply", "torchdoctor.inprocess.audit",
                              "torchdoctor.inprocess.names"}
    bad = sorted(f"{m} -> {d}" for m, deps in inprocess.items() for d in deps
                 if d in ("torchdoctor", "torchdoctor.api", "torchdoctor.runtime")
                 or d.startswith("torchdoctor.render"))
    assert bad == []
