"""Plans for old torch versions (`recommend --gpu NAME --torch-version X`): every emitted setting
exists in X, written through the API X has, and a setting that only makes sense with another
(the registry's `requires`) leaves the plan when that one does."""

from __future__ import annotations

from typing import Any

import pytest

from torchdoctor.api import plan_report
from torchdoctor.engine import Outcome, resolve_plan
from torchdoctor.report import Report
from torchdoctor.rules import Rule, load_rules
from torchdoctor.settings import load_registry
from torchdoctor.synthetic import facts_for_gpu
from torchdoctor.workload import build_workload

RULES = load_rules()
REG = load_registry()


def plan(gpu: str, version: str, task: str, **overrides: Any) -> Report:
    return plan_report(RULES, facts_for_gpu(gpu, version), build_workload(task, overrides=overrides))


def settings(report: Report) -> dict[str, Any]:
    return {s.key: s.value for s in report.settings}


def dropped(report: Report) -> dict[str, str]:
    return {d.key: d.reason for d in report.dropped}


# ------------------------------------------------------------------------------------------------
# 1. TF32 on 1.7-1.11
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.7", "1.10", "1.11.0"])
def test_bitwise_plans_turn_matmul_tf32_off_before_1_12(version):
    report = plan("A100", version, "research-repro")
    s = settings(report)
    assert s["torch.set_float32_matmul_precision"] == "highest"
    assert s["torch.backends.cudnn.allow_tf32"] is False
    assert "torch.set_float32_matmul_precision" not in dropped(report)
    assert "torch.backends.cuda.matmul.allow_tf32 = False  # tf32-with-bitwise-reproducibility" in report.snippet
    assert "set_float32_matmul_precision" not in report.snippet
    assert "fp32_precision" not in report.snippet


def test_speed_plans_keep_matmul_tf32_on_before_1_12():
    report = plan("A100", "1.10", "classification")
    assert settings(report)["torch.set_float32_matmul_precision"] == "high"
    assert "torch.backends.cuda.matmul.allow_tf32 = True  # tf32-disabled-on-ampere" in report.snippet


def test_from_1_12_the_precision_function_is_written():
    report = plan("A100", "1.12", "research-repro")
    assert "torch.set_float32_matmul_precision('highest')" in report.snippet
    assert "matmul.allow_tf32" not in report.snippet


def test_no_tf32_setting_before_1_7():
    report = plan("A100", "1.6", "research-repro")
    assert "torch.set_float32_matmul_precision" not in settings(report)
    assert "torch.set_float32_matmul_precision" in dropped(report)
    assert "allow_tf32" not in report.snippet


# ------------------------------------------------------------------------------------------------
# 2. autocast 1.6-1.9, and settings that depend on it
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1.6", "1.8.1", "1.9"])
def test_fp16_plans_keep_autocast_and_scaler_on_1_6_to_1_9(version):
    report = plan("V100", version, "classification")
    s = settings(report)
    assert s["autocast.dtype"] == "float16"
    assert s["amp.grad_scaler"] is True
    assert s["model.channels_last"] is True
    assert report.dropped == []
    assert "AUTOCAST_DTYPE = torch.float16" in report.snippet
    assert "torch.cuda.amp.autocast()" in report.snippet
    assert "SCALER = torch.cuda.amp.GradScaler(enabled=True)" in report.snippet
    assert "MEMORY_FORMAT = torch.channels_last  #" in report.snippet


def test_bf16_is_dropped_before_1_10_with_its_reason_and_channels_last_follows():
    # bf16 asked explicitly (precision auto falls back to fp16 there, see below)
    report = plan("A100", "1.8", "classification", precision="bf16")
    s = settings(report)
    assert "autocast.dtype" not in s and "model.channels_last" not in s
    why = dropped(report)
    assert "'bfloat16' does not exist in torch 1.8" in why["autocast.dtype"]
    assert "float16 only" in why["autocast.dtype"]
    assert why["model.channels_last"].startswith("needs autocast.dtype = 'float16' or 'bfloat16', which was dropped")
    assert "MEMORY_FORMAT" not in report.snippet


def test_precision_auto_on_ampere_before_1_10_falls_back_to_fp16():
    report = plan("A100", "1.8", "classification")
    s = settings(report)
    assert s["autocast.dtype"] == "float16" and s["amp.grad_scaler"] is True
    assert s["model.channels_last"] is True
    assert "torch.cuda.amp.autocast()" in report.snippet


def test_torch_1_5_drops_what_needs_mixed_precision():
    report = plan("V100", "1.5", "classification")
    s = settings(report)
    for key in ("autocast.dtype", "amp.grad_scaler", "model.channels_last"):
        assert key not in s, key
    why = dropped(report)
    assert "does not exist or is not needed in torch 1.5" in why["autocast.dtype"]
    assert "with mixed precision on tensor cores" in why["model.channels_last"]
    assert "AUTOCAST_DTYPE" not in report.snippet and "SCALER" not in report.snippet
    assert "MEMORY_FORMAT" not in report.snippet


def test_recent_torch_plans_drop_nothing():
    for gpu, task in (("V100", "classification"), ("A100", "classification"), ("A100", "research-repro"),
                      ("T4", "detection"), ("H100", "llm-training")):
        for version in ("1.13", "2.0", "2.13"):
            assert plan(gpu, version, task).dropped == [], (gpu, version, task)


# ------------------------------------------------------------------------------------------------
# requires, at the level of resolve_plan
# ------------------------------------------------------------------------------------------------


def _rule(rule_id: str, recommend: dict) -> Rule:
    return Rule.model_validate(dict(
        id=rule_id, severity="info", category="performance", precedence="speed", summary="s", why="w",
        when="True", message="m", fix="f", references=["https://example.org"], recommend=recommend,
        examples={"fires": [{"name": "a"}], "ok": [{"name": "b"}]},
    ))


def _fired(rule_id: str, **recommend: Any) -> Outcome:
    rec = {k.replace("__", "."): v for k, v in recommend.items()}
    return Outcome(_rule(rule_id, rec), "fired", message=f"{rule_id} says", recommend=rec)


def test_requirement_with_another_value_drops_the_dependent():
    plan_, dropped_ = resolve_plan(
        [_fired("bf16", autocast__dtype="bfloat16"), _fired("scale", amp__grad_scaler=True)], REG, "2.13.0")
    assert [r.key for r in plan_] == ["autocast.dtype"]
    (d,) = dropped_
    assert (d.key, d.value, d.rule) == ("amp.grad_scaler", True, "scale")
    assert d.reason.startswith("needs autocast.dtype = 'float16', which is 'bfloat16' in this plan")


def test_requirement_no_rule_asked_for_drops_nothing():
    plan_, dropped_ = resolve_plan([_fired("cl", model__channels_last=True)], REG, "2.13.0")
    assert [r.key for r in plan_] == ["model.channels_last"] and dropped_ == []


def test_requirement_drops_cascade_and_name_every_agreeing_rule():
    plan_, dropped_ = resolve_plan(
        [_fired("fp16", autocast__dtype="float16"), _fired("scale", amp__grad_scaler=True),
         _fired("scale-too", amp__grad_scaler=True), _fired("cl", model__channels_last=True)],
        REG, "1.5.0")
    assert plan_ == []
    rules = {(d.key, d.rule) for d in dropped_}
    assert {("autocast.dtype", "fp16"), ("amp.grad_scaler", "scale"), ("amp.grad_scaler", "scale-too"),
            ("model.channels_last", "cl")} <= rules


# ------------------------------------------------------------------------------------------------
# 3. snippet cosmetics
# ------------------------------------------------------------------------------------------------


def test_snippets_write_resolved_code_and_name_only_the_constants_they_define():
    repro = plan("A100", "2.13", "research-repro").snippet
    assert "if True" not in repro
    assert "def seed_worker(worker_id):  # rng-unseeded-for-reproducibility" in repro
    assert "# Values for your own code: DataLoader(**DATALOADER_KWARGS)." in repro
    assert "AUTOCAST_DTYPE" not in repro and "MEMORY_FORMAT" not in repro
    conv = plan("V100", "2.13", "classification").snippet
    assert "MEMORY_FORMAT = torch.channels_last  # channels-last-unused-for-conv-amp" in conv
    assert " if True else " not in conv
    header = [line for line in conv.splitlines() if line.startswith("# ") and "(" in line and "own code" in line]
    assert header and all(len(line) <= 100 for line in conv.splitlines() if line.startswith("#"))
    old = plan("V100", "1.8", "classification").snippet
    assert "torch.cuda.amp.autocast() (float16 only)" in old and "torch.autocast(...," not in old


# ----------------------------------------------------------------------------------------
# recommend --gpu without --torch-version: the installed torch, and the first line says so
# (issue 21, item 8)
# ----------------------------------------------------------------------------------------


def _recommend_first_line(capsys, *args: str) -> tuple[str, dict]:
    import json

    from torchdoctor.cli import main

    assert main(["recommend", "--task", "classification", "--gpu", "A100", *args]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert main(["recommend", "--task", "classification", "--gpu", "A100", *args, "--format", "json"]) == 0
    return first, json.loads(capsys.readouterr().out)


def test_gpu_plan_is_for_the_installed_torch(capsys):
    import importlib.metadata

    from packaging.version import Version

    try:
        installed = Version(importlib.metadata.version("torch")).base_version
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("no torch installed for this interpreter")
    first, data = _recommend_first_line(capsys)
    assert f"plan for A100, torch {installed} (installed for" in first, first
    assert data["torch_version"] == installed and data["facts"]["torch"]["version"] == installed


def test_gpu_plan_without_an_installed_torch_is_for_the_newest_and_says_so(capsys, tmp_path):
    import subprocess
    import sys

    from torchdoctor import tables

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    first, data = _recommend_first_line(capsys, "--python", str(venv / "bin" / "python"))
    newest = tables.latest_release()
    assert f"plan for A100, torch {newest} (newest; none installed for" in first
    assert data["torch_version"] == newest


def test_gpu_plan_for_a_named_torch_says_where_it_came_from(capsys):
    first, data = _recommend_first_line(capsys, "--torch-version", "2.4.1")
    assert "plan for A100, torch 2.4.1 (--torch-version)" in first and data["torch_version"] == "2.4.1"
