"""Settings registry: typed rendering, versions, and the snippet; workloads and task presets."""

from __future__ import annotations

import ast

import pytest
from packaging.version import Version

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
    assert not REG["torch.set_float32_matmul_precision"].available_in("1.6.0")
    assert REG["torch.set_float32_matmul_precision"].available_in("1.12.0")


# versions around every boundary the registry knows of
VERSIONS = ["0.4", "1.0", "1.5", "1.6", "1.7", "1.8", "1.9", "1.10", "1.11", "1.12", "1.13",
            "2.0", "2.2", "2.3", "2.5", "2.8", "2.9", "2.10", "2.13.0+cu130"]


def _values(s):
    if s.type == "bool":
        return [True, False]
    if s.type == "enum":
        return list(s.choices)
    return [{"int": 2, "float": 1.5, "str": "x"}[s.type]]


def _written(key):
    s = REG[key]
    for version in VERSIONS:
        for value in _values(s):
            if s.available_in(version, value):
                yield version, value, s.render(value, version)


@pytest.mark.parametrize("key", REG.keys())
def test_every_value_renders_python_that_parses_in_every_version(key):
    for _, _, code in _written(key):
        ast.parse(code)


@pytest.mark.parametrize("key", REG.keys())
def test_snippets_write_resolved_code_not_constant_conditions(key):
    """`if True:` / `X if False else Y` with a constant test: the registry writes per-value code."""
    for version, value, code in _written(key):
        for node in ast.walk(ast.parse(code)):
            if isinstance(node, (ast.If, ast.IfExp, ast.While)):
                assert not isinstance(node.test, ast.Constant), (key, version, value, code)


def test_matmul_tf32_before_1_12_goes_through_the_legacy_flag():
    s = REG["torch.set_float32_matmul_precision"]
    for version in ("1.7.0", "1.10.2+cu113", "1.11.0"):
        assert s.render("highest", version) == "torch.backends.cuda.matmul.allow_tf32 = False"
        assert s.render("high", version) == "torch.backends.cuda.matmul.allow_tf32 = True"
        assert s.render("medium", version) == "torch.backends.cuda.matmul.allow_tf32 = True"
    assert not s.available_in("1.6.0", "highest")  # no TF32 at all before 1.7
    assert s.render("highest", "1.12.0") == "torch.set_float32_matmul_precision('highest')"


def test_tf32_policy_never_mixes_legacy_and_new_apis():
    """settings.yaml's header: only the legacy API; matmul allow_tf32 only before 1.12."""
    for key in REG.keys():
        for version, _, code in _written(key):
            assert "fp32_precision" not in code.replace("set_float32_matmul_precision", ""), (key, code)
            if "matmul.allow_tf32" in code:
                assert Version(version.split("+")[0]) < Version("1.12"), (key, version, code)


def test_autocast_is_float16_only_before_1_10():
    s = REG["autocast.dtype"]
    for version in ("1.6.0", "1.9.1"):
        assert s.available_in(version, "float16") and not s.available_in(version, "bfloat16")
        code = s.render("float16", version)
        assert code.splitlines()[0] == "AUTOCAST_DTYPE = torch.float16"
        assert "torch.cuda.amp.autocast()" in code
        with pytest.raises(ValueError, match="cannot be written"):
            s.render("bfloat16", version)
        assert "float16 only" in s.resolve(version).note
    assert not s.available_in("1.5.0", "float16")
    assert s.render("bfloat16", "1.10.0") == "AUTOCAST_DTYPE = torch.bfloat16"


def test_bool_code_settings_write_each_value():
    cl = REG["model.channels_last"]
    assert cl.render(True, "2.13.0") == "MEMORY_FORMAT = torch.channels_last"
    assert cl.render(False, "2.13.0") == "MEMORY_FORMAT = torch.contiguous_format"
    seeded = REG["dataloader.seeded_workers"]
    assert seeded.render(True, "2.13.0").startswith("def seed_worker(worker_id):")
    assert "generator" in seeded.render(True, "1.7.0")
    assert "generator" not in seeded.render(True, "1.6.0")
    assert "worker_init_fn" not in seeded.render(False, "2.13.0").replace("no worker_init_fn", "")


def test_requirements_are_declared_for_dependent_settings():
    def reqs(key):
        return {(r.setting, tuple(r.values or ())) for r in REG[key].requires}

    assert reqs("amp.grad_scaler") == {("autocast.dtype", ("float16",))}
    assert reqs("model.channels_last") == {("autocast.dtype", ("float16", "bfloat16"))}


@pytest.mark.parametrize(
    "body, message",
    [
        ("kind: code\n    type: enum\n    choices: [a, b]\n    values: {c: 'X = 1'}",
         "must be one of a, b"),
        ("kind: code\n    type: bool\n    python: 'X = {value}'\n    requires: [{setting: nope, reason: r}]",
         "requires unknown setting 'nope'"),
        ("kind: code\n    type: bool\n    python: 'X = {value}'\n"
         "    requires: [{setting: x, reason: r}]", "requires unknown setting 'x'"),
        ("kind: code\n    type: bool", "needs `python` or `values`"),
    ],
)
def test_malformed_writers_and_requirements_name_the_setting(tmp_path, body, message):
    bad = tmp_path / "settings.yaml"
    bad.write_text(f"settings:\n  x:\n    {body}\n    summary: s\n    references: []\n")
    with pytest.raises(RuleFileError, match=message):
        _load_registry(str(bad))


def test_requirement_cycles_are_refused(tmp_path):
    bad = tmp_path / "settings.yaml"
    entry = ("  {k}:\n    kind: code\n    type: bool\n    python: 'X = {{value}}'\n    summary: s\n"
             "    references: []\n    requires: [{{setting: {other}, reason: r}}]\n")
    bad.write_text("settings:\n" + entry.format(k="a", other="b") + entry.format(k="b", other="a"))
    with pytest.raises(RuleFileError, match="require each other"):
        _load_registry(str(bad))


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
