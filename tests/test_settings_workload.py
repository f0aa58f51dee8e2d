"""Settings registry: typed rendering, versions, and the snippet; workloads and task presets."""

from __future__ import annotations

import ast

import pytest

from torchdoctor.errors import RuleFileError, WorkloadError
from torchdoctor.settings import _load_registry, load_registry
from torchdoctor.workload import build_workload, load_tasks, load_workload_file

REG = load_registry()


@pytest.mark.parametrize("key", REG.keys())
def test_every_setting_renders_python_that_parses(key):
    s = REG[key]
    sample = {"bool": True, "int": 2, "float": 1.5, "str": "x"}.get(s.type) or (s.choices or ["x"])[0]
    for version in (None, s.since, "2.13.0"):
        if s.available_in(version):
            ast.parse(s.render(sample, version))


def test_values_are_validated_not_pasted():
    s = REG["torch.set_float32_matmul_precision"]
    with pytest.raises(ValueError):
        s.render('high"); import os; os.system("x')
    with pytest.raises(ValueError):
        REG["torch.backends.cudnn.benchmark"].render("True")
    with pytest.raises(ValueError):
        REG["torch.set_num_threads"].render(0)
    assert REG["env.OMP_NUM_THREADS"].render(8) == 'os.environ["OMP_NUM_THREADS"] = str(8)'


def test_version_variants_pick_the_api_that_exists():
    scaler = REG["amp.grad_scaler"]
    assert "torch.amp.GradScaler(\"cuda\"" in scaler.render(True, "2.13.0+cu126")
    assert "torch.cuda.amp.GradScaler" in scaler.render(True, "2.1.2")
    assert not scaler.available_in("1.5.0")
    assert not REG["torch.set_float32_matmul_precision"].available_in("1.11.0")
    assert REG["torch.set_float32_matmul_precision"].available_in("1.12.0")


def test_no_fake_settings_in_registry():
    fakes = {"torch.backends.mkl.enabled", "torch.backends.cuda.memory_efficient",
             "torch.backends.cuda.cufft_plan_cache", "torch.backends.openmp.enabled",
             "torch.backends.cuda.allow_tf32"}
    assert not fakes & set(REG.keys())


def test_malformed_registry_names_the_file(tmp_path):
    bad = tmp_path / "settings.yaml"
    bad.write_text("settings:\n  x:\n    kind: teleport\n")
    with pytest.raises(RuleFileError, match="settings.yaml: setting x"):
        _load_registry(str(bad))
    bad.write_text("settings: [\n")
    with pytest.raises(RuleFileError, match=r"settings.yaml:\d+: invalid YAML"):
        _load_registry(str(bad))


def test_task_presets_and_overrides():
    tasks = load_tasks()
    for required in ("classification", "detection", "segmentation", "llm-training", "llm-inference",
                     "diffusion", "speech", "recsys", "research-repro"):
        assert required in tasks
    wl = build_workload("detection", {"precision": "fp16"})
    assert (wl.input_shapes, wl.precision, wl.task) == ("multiscale", "fp16", "detection")


def test_unknown_task_lists_valid_ones():
    with pytest.raises(WorkloadError) as exc:
        build_workload("detectoin")
    assert "did you mean detection" in str(exc.value) and "classification" in str(exc.value)


def test_unknown_value_lists_valid_ones():
    with pytest.raises(WorkloadError, match="'fixed', 'multiscale' or 'variable-length'"):
        build_workload("detection", {"input_shapes": "wobbly"})


def test_workload_file(tmp_path):
    f = tmp_path / "w.yaml"
    f.write_text("task: classification\nprecision: bf16\ndistributed: ddp\n")
    wl = load_workload_file(str(f), overrides={"distributed": "fsdp"})
    assert (wl.task, wl.precision, wl.distributed, wl.model_family) == ("classification", "bf16", "fsdp", "conv")
    f.write_text("precision: [unclosed\n")
    with pytest.raises(WorkloadError, match=r"w.yaml:\d+: invalid YAML"):
        load_workload_file(str(f))
    f.write_text("precison: bf16\n")
    with pytest.raises(WorkloadError, match="unknown field 'precison'"):
        load_workload_file(str(f))
    f.write_text('task: "detection\\"; import os"\n')
    with pytest.raises(WorkloadError, match="unknown task"):
        load_workload_file(str(f))
