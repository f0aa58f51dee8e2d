"""Typed knowledge tables (issue 10): every rules/data/*.yaml has a pydantic model that
validates it when it loads (path:line errors), and rules ask capability questions
(has_tf32, has_bf16_tensor_cores, ...) answered from gpu_archs.yaml instead of comparing
compute capabilities with literals."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from torchdoctor import tables
from torchdoctor.paths import data_dir, default_rules_dir
from torchdoctor.tables import DataFileError, models

DATA_FILES = sorted(data_dir().glob("*.yaml"))


# ----------------------------------------------------------------------------------------
# one model per file
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: p.name)
def test_every_data_file_has_a_model_it_satisfies(path):
    assert path.stem in models.MODELS, f"{path.name} has no model in torchdoctor/tables/models.py"
    assert models.problem(path.stem, yaml.safe_load(path.read_text(encoding="utf-8"))) is None


def _broken(tmp_path: Path, name: str, old: str, new: str) -> tuple[Path, int]:
    """A copy of rules/data/<name>.yaml with the first ``old`` replaced; the 1-based line of the
    replacement's start."""
    target = tmp_path / f"{name}.yaml"
    text = (data_dir() / f"{name}.yaml").read_text(encoding="utf-8")
    assert old in text
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    return target, text[: text.index(old)].count("\n") + 1


@pytest.mark.parametrize(
    "name, old, new, error",
    [
        # a misspelt key in a closed entry is an error, not a silently ignored field
        ("gpu_archs", "    tensor_cores: {fp16: true, bf16: true, tf32: true, fp8: false",
         "    tensor_core: {fp16: true, bf16: true, tf32: true, fp8: false", "'tensor_core' is not a known key"),
        # a capability is true or false, never a string the lookups would read as true
        ("gpu_archs", "tensor_cores: {fp16: true, bf16: true, tf32: true, fp8: false",
         'tensor_cores: {fp16: true, bf16: "yes", tf32: true, fp8: false', "'bf16' must be true or false, got 'yes'"),
        ("sdpa_backends", "  - backend: flash", "  - backend: flashy", "unknown backend 'flashy'"),
        ("torch_ecosystem", "ptxas: \"12.4\"", "ptxas: \"twelve\"", "'ptxas' must be a CUDA version, got 'twelve'"),
        ("cpu_stacks", "    what:", "    whatt:", "'what' is missing"),  # reported before the stray key
        ("import_failures", "    library:", "    libary:", "'library' is missing"),
        ("diff_relevance", "    why: where", "    whyy: where", "'why' is missing"),
        ("gpu_models", "  - cc: 12.1\n", "  - cc: 12.1\n    cc_note: x\n", "'cc_note' is not a known key"),
    ],
)
def test_a_bad_value_names_its_file_and_line(tmp_path, name, old, new, error):
    target, line = _broken(tmp_path, name, old, new)
    with pytest.raises(DataFileError) as err:
        tables.load(name, str(tmp_path))
    found = re.fullmatch(rf"{re.escape(str(target))}:(\d+): (.*)", str(err.value))
    assert found, str(err.value)
    assert found.group(2) == error
    # the line is that of the innermost mapping holding the value: the change's own line (a flow
    # mapping) or its entry's first line just above it
    assert line - 12 < int(found.group(1)) <= line


def test_a_fallback_to_no_block_is_reported_at_the_block(tmp_path):
    target, _ = _broken(tmp_path, "wheel_archs", "fallback: linux_x86_64", "fallback: linux_x86")
    with pytest.raises(DataFileError, match=rf"{re.escape(str(target))}:\d+: 'fallback' names no block of builds: 'linux_x86'"):
        tables.load("wheel_archs", str(tmp_path))


def test_a_file_that_is_not_a_mapping_is_one_line(tmp_path):
    (tmp_path / "gpu_models.yaml").write_text("- just\n- a list\n", encoding="utf-8")
    with pytest.raises(DataFileError, match=r"gpu_models\.yaml: the file must be a mapping"):
        tables.load("gpu_models", str(tmp_path))


# ----------------------------------------------------------------------------------------
# capability questions
# ----------------------------------------------------------------------------------------


def _table_ccs() -> list[float]:
    data = yaml.safe_load((data_dir() / "gpu_archs.yaml").read_text(encoding="utf-8"))
    return [float(cc) for arch in data["architectures"] for cc in arch["compute_capabilities"]]


@pytest.mark.parametrize("cc", _table_ccs())
def test_capabilities_match_pytorchs_gates_for_every_known_gpu(cc):
    # PyTorch's gates (torch/testing/_internal/common_cuda.py): bf16 and TF32 from sm80, FP8 from
    # sm89, fp16 tensor cores from Volta; the rules compared with these literals before
    assert tables.has_tf32(cc) is (cc >= 8.0)
    assert tables.has_bf16_tensor_cores(cc) is (cc >= 8.0)
    assert tables.has_fp8_tensor_cores(cc) is (cc >= 8.9)
    assert tables.has_fp16_tensor_cores(cc) is (cc >= 7.0)


def test_capability_of_an_unknown_gpu_is_not_guessed():
    for value in (13.5, None, "eight", float("nan"), [], [8.0, 99.0]):
        assert tables.has_tf32(value) is None
    assert tables.has_bf16_tensor_cores([8.0, 8.6, 9.0]) is True
    assert tables.has_bf16_tensor_cores([7.5, 8.6]) is False  # every GPU must have it
    assert tables.has_fp8_tensor_cores("sm_89") is True


def test_capabilities_come_from_gpu_archs_yaml(tmp_path, monkeypatch):
    copy = tmp_path / "data"
    shutil.copytree(data_dir(), copy)
    path = copy / "gpu_archs.yaml"
    text = path.read_text(encoding="utf-8")
    ampere = "tensor_cores: {fp16: true, bf16: true, tf32: true, fp8: false, fp4: false}"
    assert ampere in text
    path.write_text(text.replace(ampere, ampere.replace("tf32: true", "tf32: false"), 1), encoding="utf-8")
    monkeypatch.setattr(tables, "data_dir", lambda: copy)
    tables.load.cache_clear()
    try:
        assert tables.has_tf32(8.6) is False and tables.has_bf16_tensor_cores(8.6) is True
        assert tables.has_tf32(9.0) is True
    finally:
        monkeypatch.undo()
        tables.load.cache_clear()
    assert tables.has_tf32(8.6) is True


def test_replacing_load_on_the_package_reaches_every_lookup(monkeypatch):
    data = {"architectures": [{"name": "Imaginary", "compute_capabilities": [8.6],
                               "tensor_cores": {"tf32": False}}]}
    monkeypatch.setattr(tables, "load", lambda name, directory=None: data)
    assert tables.arch_for_cc(8.6) == "Imaginary" and tables.has_tf32(8.6) is False
    monkeypatch.undo()
    assert tables.arch_for_cc(8.6) == "Ampere"


LITERAL_GATE = re.compile(
    r"compute_capability\s*(>=|<)\s*(7\.0|8\.0|8\.9)\b|(7\.0|8\.0|8\.9)\s*<=\s*gpu\.\w*compute_capability"
)


def test_rules_ask_capability_questions_not_literal_thresholds():
    """The 7.0 / 8.0 / 8.9 gates meant fp16 / bf16-TF32 / FP8 tensor cores: rules ask gpu_archs.yaml.
    (Other thresholds are other gates and stay: Triton's 7.0 in compile-needs-triton-gpu and
    FlashInfer's 8.0 in flashinfer-without-kernels-for-gpu, the flash SDPA kernel's sm80-sm121
    range in flash-sdp-disabled, allowed by name; cuDNN's 7.5,
    flash-attn's and the SDPA kernels' own ranges.)"""
    allowed = {"compile-needs-triton-gpu.yaml", "flashinfer-without-kernels-for-gpu.yaml",
               "flash-sdp-disabled.yaml"}
    offenders = []
    for path in sorted(default_rules_dir().rglob("*.yaml")):
        if "data" in path.relative_to(default_rules_dir()).parts or path.name in allowed:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if LITERAL_GATE.search(line):
                offenders.append(f"{path.name}:{number}: {line.strip()}")
    assert offenders == []


def test_rules_may_call_the_capability_questions():
    from torchdoctor.vocabulary import TABLE_FUNCTIONS

    for name in ("has_tf32", "has_bf16_tensor_cores", "has_fp16_tensor_cores", "has_fp8_tensor_cores"):
        assert name in TABLE_FUNCTIONS
    assert "load" not in TABLE_FUNCTIONS and "data_dir" not in TABLE_FUNCTIONS


# ----------------------------------------------------------------------------------------
# a warm start does not validate again
# ----------------------------------------------------------------------------------------


def test_a_cached_table_is_not_validated_again(tmp_path, monkeypatch):
    from torchdoctor import rulecache

    monkeypatch.setenv("TORCHDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHDOCTOR_NO_CACHE", raising=False)
    calls = []
    real = models.problem
    monkeypatch.setattr(models, "problem", lambda name, data: calls.append(name) or real(name, data))
    tables.load.cache_clear()
    try:
        first = tables.load("gpu_archs")
        if not rulecache.enabled():
            pytest.skip("the rule cache is off here")
        tables.load.cache_clear()
        assert tables.load("gpu_archs") == first
        assert calls == ["gpu_archs"]
    finally:
        tables.load.cache_clear()
