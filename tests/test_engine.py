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


# ----------------------------------------------------------------------------------------
# for_each: one finding per item of a list fact
# ----------------------------------------------------------------------------------------

FOR_EACH_RULE = """\
id: {id}
severity: warning
category: performance
summary: s
why: w
for_each: {for_each}
{extra}when: {when}
message: "{{{{ item.attribute }}}} is dead"
fix: f
references: [https://pytorch.org/docs/stable/backends.html]
examples:
  fires:
    - name: one dead
      facts: {{torch: {{dead_attributes: [{{attribute: a, value: "1", value_type: int}}]}}}}
  ok:
    - name: none
      facts: {{torch: {{dead_attributes: []}}}}
"""


def _for_each_rule(tmp_path, rule_id="each-dead", for_each="torch.dead_attributes",
                   when="item.replaced is None", extra=""):
    from torchdoctor.rules import load_rule_file

    path = tmp_path / f"{rule_id}.yaml"
    path.write_text(FOR_EACH_RULE.format(id=rule_id, for_each=for_each, when=when, extra=extra))
    return load_rule_file(path)


def _dead(*names, category="performance", replaced=None):
    from torchdoctor.facts import DeadAttribute

    return [DeadAttribute(attribute=n, value="True", value_type="bool", replaced=replaced,
                          category=category) for n in names]


def test_for_each_rule_gives_one_finding_per_item_that_fires(tmp_path):
    rule = _for_each_rule(tmp_path, extra="item_category: item.category\n")
    dead = _dead("torch.backends.cudnn.fastest", "torch.backends.mkl.enabled", category="reproducibility")
    dead += _dead("torch.backends.cuda.enable_flash_sdp", replaced="function")
    report = evaluate([rule], Facts(torch=TorchFacts(dead_attributes=dead)))
    assert sorted(f.message for f in report.findings) == [
        "torch.backends.cudnn.fastest is dead", "torch.backends.mkl.enabled is dead"]
    assert {f.category for f in report.findings} == {"reproducibility"}
    assert evaluate([rule], Facts(torch=TorchFacts(dead_attributes=[]))).findings == []


def test_for_each_over_an_unknown_list_is_skipped_with_its_path(tmp_path):
    rule = _for_each_rule(tmp_path)
    report = evaluate([rule], Facts(torch=TorchFacts(dead_attributes=Unavailable(unavailable="x"))))
    assert [(s.id, s.needs) for s in report.skipped] == [("each-dead", "torch.dead_attributes")]


def test_an_item_category_that_is_not_a_category_keeps_the_rules(tmp_path):
    rule = _for_each_rule(tmp_path, extra="item_category: item.attribute\n")
    report = evaluate([rule], Facts(torch=TorchFacts(dead_attributes=_dead("x"))))
    assert [f.category for f in report.findings] == ["performance"]


@pytest.mark.parametrize(("changes", "words"), [
    ({"for_each": "torch.version"}, "fact 'torch.version' is not a list"),
    ({"for_each": "torch.dead_attribute"}, "unknown fact 'torch.dead_attribute'"),
    ({"for_each": "torch.dead_attributes[0]"}, "for_each must be a fact path"),
    ({"when": "item.atribute == 'x'"}, "unknown fact 'torch.dead_attributes[].atribute'"),
    ({"extra": "item_category: item.categry\n"}, "item_category: unknown fact"),
    ({"extra": "recommend: {torch.backends.cudnn.benchmark: false}\n"},
     "a for_each rule recommends nothing"),
])
def test_for_each_mistakes_fail_at_load_with_their_line(tmp_path, changes, words):
    from torchdoctor.errors import RuleFileError

    with pytest.raises(RuleFileError) as err:
        _for_each_rule(tmp_path, **changes)
    assert words in str(err.value)
    assert str(err.value).startswith(f"{tmp_path / 'each-dead.yaml'}:")


def test_item_is_unknown_outside_a_for_each_rule(tmp_path):
    from torchdoctor.errors import RuleFileError
    from torchdoctor.rules import load_rule_file

    path = tmp_path / "no-each.yaml"
    path.write_text(FOR_EACH_RULE.format(id="no-each", for_each="x", when="item is None", extra="")
                    .replace("for_each: x\n", ""))
    with pytest.raises(RuleFileError, match="unknown name 'item'|unknown function|item"):
        load_rule_file(path)
