"""Engine semantics: unknown facts skip, short-circuit, precedence, conflicts, messages."""

from __future__ import annotations

import pytest

from torchdoctor.engine import Outcome, evaluate, evaluate_rule, resolve_plan
from torchdoctor.errors import RuleConflictError
from torchdoctor.facts import Facts, GpuFacts, TorchFacts, Unavailable
from torchdoctor.rules import Rule
from torchdoctor.settings import load_registry
from torchdoctor.workload import Workload


def make_rule(**kw) -> Rule:
    base = dict(
        id="some-rule",
        severity="info",
        category="performance",
        summary="s",
        why="w",
        when="True",
        message="m",
        fix="f",
        references=["https://example.org"],
        examples={"fires": [{"name": "a"}], "ok": [{"name": "b"}]},
    )
    base.update(kw)
    return Rule.model_validate(base)


A100 = Facts(gpu=GpuFacts(count=1, name="NVIDIA A100-SXM4-80GB", min_compute_capability=8.0))


def test_unavailable_fact_skips_with_path_and_reason():
    facts = Facts(gpu=Unavailable(unavailable="NVML library not found"))
    out = evaluate_rule(make_rule(when="gpu.count > 0"), facts, None)
    assert (out.status, out.needs, out.reason) == ("skipped", "gpu.count", "NVML library not found")


def test_short_circuit_needs_only_reached_facts():
    facts = Facts(gpu=GpuFacts(count=0))
    out = evaluate_rule(make_rule(when="gpu.count > 0 and workload.precision == 'fp32'"), facts, None)
    assert out.status == "ok"


def test_missing_workload_is_skipped_not_failed():
    out = evaluate_rule(make_rule(when="workload.precision == 'fp32'"), A100, None)
    assert out.status == "skipped" and out.needs == "workload.precision"
    assert "no workload declared" in out.reason


def test_none_is_known_absent_not_unknown():
    facts = Facts(torch=TorchFacts(cuda_build=None, version="2.13.0+cpu"))
    assert evaluate_rule(make_rule(when="torch.cuda_build is None"), facts, None).status == "fired"


def test_version_helper_ignores_local_label():
    facts = Facts(torch=TorchFacts(version="2.13.0+cu126"))
    assert evaluate_rule(make_rule(when='v(torch.version) >= v("2.13")'), facts, None).status == "fired"
    assert evaluate_rule(make_rule(when='v(torch.version) < v("2.9")'), facts, None).status == "ok"


def test_mapping_access_absent_is_none():
    from torchdoctor.facts import EnvFacts

    facts = Facts(env=EnvFacts(variables={"CUDA_LAUNCH_BLOCKING": "1"}))
    rule = make_rule(when='env.variables["CUDA_LAUNCH_BLOCKING"] == "1" and env.variables["OMP_NUM_THREADS"] is None')
    assert evaluate_rule(rule, facts, None).status == "fired"


def test_unavailable_mapping_value_skips():
    facts = Facts(torch=TorchFacts(settings={"torch.backends.cuda.matmul.allow_tf32": {"unavailable": "mixed API"}}))
    out = evaluate_rule(make_rule(when='torch.settings["torch.backends.cuda.matmul.allow_tf32"] == True'), facts, None)
    assert out.status == "skipped" and "mixed API" in out.reason


def test_rule_bug_is_an_error_outcome_not_a_crash():
    facts = Facts(gpu=GpuFacts(count=0, min_compute_capability=None))
    out = evaluate_rule(make_rule(when="gpu.min_compute_capability >= 8.0"), facts, None)
    assert out.status == "error" and "TypeError" in out.reason


def test_message_renders_facts_and_unknowns():
    rule = make_rule(when="gpu.count > 0", message="{{ gpu.name }} driver {{ gpu.driver_version }}")
    out = evaluate_rule(rule, A100, None)
    assert out.message == "NVIDIA A100-SXM4-80GB driver unknown"


def _fired(rule_id, precedence, key, value):
    rule = make_rule(id=rule_id, precedence=precedence, recommend={key: value})
    return Outcome(rule, "fired", message=f"{rule_id} says", recommend={key: value})


def test_precedence_keeps_loser_as_overridden():
    reg = load_registry()
    plan, dropped = resolve_plan(
        [_fired("fast", "speed", "torch.backends.cudnn.benchmark", True),
         _fired("repro", "reproducibility", "torch.backends.cudnn.benchmark", False)], reg, "2.13.0")
    (rec,) = plan
    assert rec.value is False and rec.rule == "repro"
    assert [(o.rule, o.value) for o in rec.overrides] == [("fast", True)]


def test_agreeing_rules_are_listed_as_also():
    reg = load_registry()
    plan, _ = resolve_plan(
        [_fired("a", "speed", "torch.backends.cudnn.benchmark", True),
         _fired("b", "speed", "torch.backends.cudnn.benchmark", True)], reg, None)
    assert plan[0].also == ["b"]


def test_equal_precedence_conflict_raises():
    reg = load_registry()
    with pytest.raises(RuleConflictError, match="benchmark"):
        resolve_plan([_fired("a", "speed", "torch.backends.cudnn.benchmark", True),
                      _fired("b", "speed", "torch.backends.cudnn.benchmark", False)], reg, None)


def test_setting_missing_in_target_version_is_dropped():
    reg = load_registry()
    plan, dropped = resolve_plan([_fired("a", "reproducibility", "env.CUBLAS_WORKSPACE_CONFIG", ":4096:8")],
                                 reg, "2.13.0+cu130")
    assert plan == [] and dropped[0].key == "env.CUBLAS_WORKSPACE_CONFIG"
    plan, dropped = resolve_plan([_fired("a", "reproducibility", "env.CUBLAS_WORKSPACE_CONFIG", ":4096:8")],
                                 reg, "2.4.1+cu121")
    assert plan[0].value == ":4096:8" and not dropped


def test_evaluate_ignores_and_counts():
    rule = make_rule(when="gpu.count > 0", severity="warning")
    report = evaluate([rule], A100, Workload(), ignore=["some-rule"])
    assert report.findings == [] and report.rules_evaluated == 0
    report = evaluate([rule], A100, Workload())
    assert [f.id for f in report.findings] == ["some-rule"]


def test_probe_problems_become_findings():
    facts = Facts(problems=["cpu probe crashed: ValueError: x"])
    report = evaluate([], facts)
    assert report.findings[0].category == "probe" and report.findings[0].severity == "warning"


def test_known_tests_availability_without_skipping():
    facts = Facts(torch=TorchFacts(version="2.13.0", cudnn_version=Unavailable(unavailable="report does not say")))
    rule = make_rule(when='known("torch.version") and not known("torch.cudnn_version")')
    assert evaluate_rule(rule, facts, None).status == "fired"


def test_fact_or_gives_the_default_where_a_fact_is_unknown():
    facts = Facts(torch=TorchFacts(version="2.13.0", cudnn_version=Unavailable(unavailable="report does not say")))
    assert evaluate_rule(make_rule(when='fact_or("torch.cudnn_version") is None'), facts, None).status == "fired"
    assert evaluate_rule(make_rule(when='fact_or("torch.cudnn_version", 7) == 7'), facts, None).status == "fired"
    assert evaluate_rule(make_rule(when='fact_or("torch.version") == "2.13.0"'), facts, None).status == "fired"


def test_known_paths_are_checked_at_load():
    from torchdoctor.rules import check_fact_path, fact_paths

    assert "system.machin" in fact_paths('fact_or("system.machin")')
    paths = fact_paths('known("torch.verison")')
    assert "torch.verison" in paths and check_fact_path("torch.verison")
