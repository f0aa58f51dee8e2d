"""Every task preset planned on every recorded machine (tests/machines/*.json).

The plans are snapshots (tests/__snapshots__/test_plans/); the targeted tests below pin the behaviour the
rules exist for. The `torch` tests run generated snippets under the real (CPU) torch in a fresh process and
read every setting back.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from syrupy.extensions.json import JSONSnapshotExtension

from torchdoctor.api import plan_report
from torchdoctor.errors import RuleConflictError
from torchdoctor.facts import Facts
from torchdoctor.report import Report
from torchdoctor.rules import load_rules
from torchdoctor.synthetic import facts_for_gpu
from torchdoctor.workload import build_workload, load_tasks

MACHINES_DIR = Path(__file__).resolve().parent / "machines"
MACHINES = sorted(p.stem for p in MACHINES_DIR.glob("*.json"))
TASKS = sorted(load_tasks())
RULES = load_rules()


def machine(name: str) -> Facts:
    return Facts.model_validate_json((MACHINES_DIR / f"{name}.json").read_text(encoding="utf-8"))


def plan(name: str, task: str, **overrides: Any) -> Report:
    return plan_report(RULES, machine(name), build_workload(task, overrides=overrides))


def settings(report: Report) -> dict[str, Any]:
    return {s.key: s.value for s in report.settings}


def rec(report: Report, key: str):
    return next(s for s in report.settings if s.key == key)


def finding_ids(report: Report) -> set[str]:
    return {f.id for f in report.findings}


def plan_summary(report: Report) -> dict:
    """What the snapshot pins: the settings plan (not the wording of messages)."""
    return {
        "torch_version": report.torch_version,
        "settings": [
            {
                "key": s.key,
                "value": s.value,
                "rule": s.rule,
                "precedence": s.precedence,
                "also": sorted(s.also),
                "overrides": [{"rule": o.rule, "value": o.value} for o in s.overrides],
            }
            for s in report.settings
        ],
        "dropped": [{"key": d.key, "value": d.value, "rule": d.rule} for d in report.dropped],
    }


@pytest.fixture
def snapshot_json(snapshot):
    return snapshot.use_extension(JSONSnapshotExtension)


# ------------------------------------------------------------------------------------------------------
# every preset x every machine
# ------------------------------------------------------------------------------------------------------


def test_machines_are_valid_facts():
    assert len(MACHINES) >= 10
    for name in MACHINES:
        facts = machine(name)
        assert facts.schema_version == 1


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("name", MACHINES)
def test_plan_snapshot(name, task, snapshot_json):
    try:
        report = plan(name, task)
    except RuleConflictError as exc:  # pragma: no cover - the failure message is the point
        pytest.fail(f"{name} / {task}: {exc}")
    assert report.snippet is not None
    ast.parse(report.snippet)
    errors = [s for s in report.skipped if s.needs == "(rule error)"]
    assert not errors, errors
    # the rules only recommend settings that exist in the machine's torch: nothing is dropped
    assert report.dropped == [], report.dropped
    assert plan_summary(report) == snapshot_json


@pytest.mark.parametrize("name", MACHINES)
def test_check_without_workload_resolves(name):
    """`check` evaluates the same rules with no workload: no conflicts, no rule errors."""
    report = plan_report(RULES, machine(name), None)
    assert not [s for s in report.skipped if s.needs == "(rule error)"]
    ast.parse(report.snippet)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("gpu", ["Tesla T4", "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "cpu"])
@pytest.mark.parametrize("torch_version", [None, "2.4.1"])
def test_synthetic_gpu_plans_resolve(gpu, task, torch_version):
    """`recommend --gpu NAME` (facts for another machine): only GPU facts, maybe a torch version."""
    report = plan_report(RULES, facts_for_gpu(gpu, torch_version), build_workload(task))
    ast.parse(report.snippet)
    assert not [s for s in report.skipped if s.needs == "(rule error)"]


# ------------------------------------------------------------------------------------------------------
# behaviour the rules exist for
# ------------------------------------------------------------------------------------------------------


def test_a100_classification():
    report = plan("ampere-a100x4", "classification")
    s = settings(report)
    assert s["torch.backends.cudnn.benchmark"] is True
    assert rec(report, "torch.backends.cudnn.benchmark").rule == "cudnn-autotuner-off-for-fixed-shapes"
    assert s["autocast.dtype"] == "bfloat16"
    assert s["model.channels_last"] is True
    assert s["torch.set_float32_matmul_precision"] == "high"
    assert s["dataloader.pin_memory"] is True
    assert "amp.grad_scaler" not in s  # bf16 needs no loss scaling
    assert "torch.use_deterministic_algorithms" not in s
    assert "AUTOCAST_DTYPE = torch.bfloat16" in report.snippet
    assert "torch.backends.cudnn.benchmark = True" in report.snippet


def test_detection_keeps_autotuner_off():
    report = plan("ampere-a100x4", "detection")
    s = settings(report)
    assert s["torch.backends.cudnn.benchmark"] is False
    assert rec(report, "torch.backends.cudnn.benchmark").rule == "cudnn-autotuner-with-variable-shapes"
    assert s["env.PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"


def test_research_repro_bundle_overrides_speed_rules():
    report = plan("ampere-a100x4", "research-repro")
    s = settings(report)
    assert s["torch.use_deterministic_algorithms"] is True
    assert s["torch.backends.cudnn.deterministic"] is True
    assert s["torch.backends.cudnn.benchmark"] is False
    assert s["seed"] == 0
    assert s["dataloader.seeded_workers"] is True
    assert s["torch.set_float32_matmul_precision"] == "highest"
    assert s["torch.backends.cudnn.allow_tf32"] is False
    # torch 2.3 still checks the cuBLAS workspace
    assert s["env.CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    tf32 = rec(report, "torch.set_float32_matmul_precision")
    assert tf32.precedence == "reproducibility"
    # the preset's precision is fp32: full FP32 is asked twice, by the same value
    assert tf32.rule == "tf32-with-bitwise-reproducibility" and tf32.also == ["fp32-asked-on-tf32-gpu"]
    assert tf32.overrides == []


def test_bitwise_reproducibility_pins_tf32_to_the_precision_asked():
    """TF32 is deterministic run to run: a bitwise plan pins its state (the defaults differ between
    releases and environments) to what the precision asks, and keeps the mixed precision asked."""
    report = plan("ampere-a100x4", "classification", reproducibility="bitwise")  # precision auto
    s = settings(report)
    tf32 = rec(report, "torch.set_float32_matmul_precision")
    assert (tf32.value, tf32.rule) == ("high", "tf32-with-bitwise-reproducibility")
    assert tf32.also == ["tf32-disabled-on-ampere"] and tf32.overrides == []
    assert s["torch.backends.cudnn.allow_tf32"] is True
    assert s["autocast.dtype"] == "bfloat16"  # kept: bf16 autocast is deterministic too
    reason = tf32.reason
    assert "run to run" in reason and "full FP32" not in reason
    # full FP32 asked: the same rule pins "highest" and cuDNN TF32 off
    fp32 = settings(plan("ampere-a100x4", "classification", reproducibility="bitwise", precision="fp32"))
    assert fp32["torch.set_float32_matmul_precision"] == "highest"
    assert fp32["torch.backends.cudnn.allow_tf32"] is False
    assert "autocast.dtype" not in fp32


def test_research_repro_overrides_autotuner_for_conv_nets():
    report = plan("ampere-a100x4", "classification", reproducibility="bitwise")
    bench = rec(report, "torch.backends.cudnn.benchmark")
    assert bench.value is False
    assert bench.rule == "cudnn-nondeterminism-with-bitwise-reproducibility"
    assert [(o.rule, o.value) for o in bench.overrides] == [("cudnn-autotuner-off-for-fixed-shapes", True)]


def test_cublas_workspace_only_where_the_torch_version_needs_it():
    assert "env.CUBLAS_WORKSPACE_CONFIG" not in settings(plan("hopper-h100x8", "research-repro"))  # 2.13
    assert plan("hopper-h100x8", "research-repro").dropped == []
    assert settings(plan("turing-t4", "research-repro"))["env.CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"  # 2.0
    assert "env.CUBLAS_WORKSPACE_CONFIG" not in settings(plan("cpu-haswell-no-avx512", "research-repro"))


def test_seeded_means_seeding_only():
    s = settings(plan("ampere-a100x4", "recsys", reproducibility="seeded", seed=1234))
    assert s["seed"] == 1234
    assert s["dataloader.seeded_workers"] is True
    for key in ("torch.use_deterministic_algorithms", "torch.backends.cudnn.deterministic",
                "env.CUBLAS_WORKSPACE_CONFIG", "torch.backends.cudnn.allow_tf32"):
        assert key not in s
    assert s["torch.set_float32_matmul_precision"] == "high"


def test_t4_uses_fp16_with_grad_scaler():
    report = plan("turing-t4", "classification")
    s = settings(report)
    assert s["autocast.dtype"] == "float16"
    assert s["amp.grad_scaler"] is True
    assert s["model.channels_last"] is True
    # torch 2.0.1: the registry's variant writes the pre-2.3 GradScaler
    assert "torch.cuda.amp.GradScaler(enabled=True)" in report.snippet
    assert "torch.set_float32_matmul_precision" not in s  # no TF32 on Turing


def test_t4_bf16_asked_is_warned_not_planned():
    report = plan("turing-t4", "llm-training")
    assert "bf16-emulated-before-ampere" in finding_ids(report)
    assert "autocast.dtype" not in settings(report)
    warning = next(f for f in report.findings if f.id == "bf16-emulated-before-ampere")
    assert warning.severity == "warning"
    assert "fp16" in warning.message


def test_fp16_asked_on_a100_is_respected():
    s = settings(plan("ampere-a100x4", "classification", precision="fp16"))
    assert s["autocast.dtype"] == "float16"
    assert s["amp.grad_scaler"] is True
    # the float32 matmuls fp16 autocast leaves run in TF32, as with bf16
    assert s["torch.set_float32_matmul_precision"] == "high"


def test_p100_gets_no_autocast():
    report = plan("pascal-p100", "classification")
    s = settings(report)
    assert "autocast.dtype" not in s
    assert "model.channels_last" not in s
    assert "mixed-precision-without-tensor-cores" in finding_ids(report)
    assert s["torch.backends.cudnn.benchmark"] is True


def test_cpu_amx_autocasts_to_bf16_and_haswell_does_not():
    assert settings(plan("cpu-sapphirerapids-amx", "classification"))["autocast.dtype"] == "bfloat16"
    haswell = plan("cpu-haswell-no-avx512", "classification")
    assert "autocast.dtype" not in settings(haswell)
    assert "bf16-slow-on-cpu-without-bf16-isa" in finding_ids(plan("cpu-haswell-no-avx512", "llm-training"))
    # CPU-only: nothing GPU-specific in the plan
    for key in ("dataloader.pin_memory", "torch.backends.cudnn.benchmark", "model.channels_last"):
        assert key not in settings(haswell)


def test_cpu_quota_sizes_threads_and_workers():
    """docker --cpus=6 on a 96-core EPYC: 6 threads, 5 workers, and the check-time warnings."""
    report = plan("cpu-epyc9654-docker-6cpus", "classification")
    s = settings(report)
    assert s["torch.set_num_threads"] == 6
    assert s["env.OMP_NUM_THREADS"] == 6
    assert s["dataloader.num_workers"] == 5
    assert s["dataloader.persistent_workers"] is True
    assert {"threads-exceed-cpu-quota", "shm-too-small-for-dataloader-workers"} <= finding_ids(report)
    assert 'os.environ["OMP_NUM_THREADS"] = str(6)' in report.snippet


def test_threads_per_local_rank():
    h100 = settings(plan("hopper-h100x8", "llm-training"))  # FSDP over 8 GPUs, 96 cores
    assert h100["torch.set_num_threads"] == 12
    assert h100["env.OMP_NUM_THREADS"] == 12
    a100 = settings(plan("ampere-a100x4", "classification", distributed="ddp", local_world_size=2))
    assert a100["torch.set_num_threads"] == 64
    # one process with the default pool already one thread per core: nothing to set
    assert "torch.set_num_threads" not in settings(plan("ampere-a100x4", "classification"))


def test_nccl_p2p_disabled_only_on_geforce_rtx_40():
    rtx = plan("ada-rtx4090x8", "llm-training")
    assert settings(rtx)["env.NCCL_P2P_DISABLE"] == "1"
    assert settings(rtx)["env.CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert "env.NCCL_P2P_DISABLE" not in settings(plan("hopper-h100x8", "llm-training"))
    assert "env.NCCL_P2P_DISABLE" not in settings(plan("ada-rtx4090x8", "classification"))  # no DDP


def test_expandable_segments_need_torch_2_1():
    assert "env.PYTORCH_CUDA_ALLOC_CONF" in settings(plan("hopper-h100x8", "llm-training"))
    assert "env.PYTORCH_CUDA_ALLOC_CONF" not in settings(plan("turing-t4", "detection"))  # torch 2.0.1


def test_sdpa_info_sets_nothing():
    report = plan("hopper-h100x8", "llm-inference")
    finding = next(f for f in report.findings if f.id == "sdpa-backend-availability")
    assert "FlashAttention yes" in finding.message
    assert not any(k.startswith("torch.backends.cuda.enable_") for k in settings(report))
    # the recorded T4 runs torch 2.0.1, whose FlashAttention-1 still took sm75 (2.2's FA2 needs sm80)
    t4 = next(f for f in plan("turing-t4", "llm-inference").findings if f.id == "sdpa-backend-availability")
    assert "torch 2.0.1" in t4.message
    assert "FlashAttention yes" in t4.message and "memory-efficient yes" in t4.message
    assert "cuDNN not in this release" in t4.message


def test_fp8_pointer_only_on_fp8_hardware():
    assert "fp8-available-via-torchao" in finding_ids(plan("hopper-h100x8", "llm-training", precision="fp8"))
    # the llm-training preset (bf16 asked, FSDP): the rest of the model runs in FSDP's bf16 policy
    assert "fp8-available-via-torchao" in finding_ids(plan("hopper-h100x8", "llm-training"))
    assert settings(plan("hopper-h100x8", "llm-training", precision="fp8"))["fsdp.mixed_precision"] == "bfloat16"
    assert settings(plan("hopper-h100x8", "llm-training", precision="fp8", distributed="ddp"))[
        "autocast.dtype"] == "bfloat16"
    report = plan("ampere-a100x4", "llm-training", precision="fp8")
    assert "fp8-unsupported-gpu" in finding_ids(report)
    assert "fp8-available-via-torchao" not in finding_ids(report)


def test_check_reports_pitfalls_from_the_current_state():
    base = json.loads((MACHINES_DIR / "cpu-sapphirerapids-amx.json").read_text(encoding="utf-8"))
    base["torch"]["settings"]["torch.autograd.set_detect_anomaly"] = True
    base["torch"]["settings"]["torch.backends.fp32_precision"] = "tf32"
    base["env"]["variables"] = {"CUDA_LAUNCH_BLOCKING": "1", "OMP_NUM_THREADS": "64"}
    base["torch"]["num_threads"] = 64  # what torch's pool reads decides (2.13 caps it to the CPUs)
    report = plan_report(RULES, Facts.model_validate(base), None)
    ids = finding_ids(report)
    assert {"anomaly-detection-enabled", "tf32-mixed-legacy-and-new-api", "cuda-launch-blocking-enabled",
            "threads-exceed-cpu-quota"} <= ids


# ------------------------------------------------------------------------------------------------------
# the snippet runs and every setting reads back (real torch, fresh process)
# ------------------------------------------------------------------------------------------------------

READ_BACK = r'''

import json as _json
import os as _os  # the snippet imports only what it uses (issue 21, item 9)
import torch as _torch
_g = globals()
_dl = _g.get("DATALOADER_KWARGS", {})
_seeded = "worker_init_fn" in _dl
if _seeded:
    _dl["worker_init_fn"](0)  # runs in the main process: must not fail
_out = {
    "num_threads": _torch.get_num_threads(),
    "cudnn.benchmark": _torch.backends.cudnn.benchmark,
    "cudnn.deterministic": _torch.backends.cudnn.deterministic,
    "cudnn.allow_tf32": _torch.backends.cudnn.allow_tf32,
    "matmul_precision": _torch.get_float32_matmul_precision(),
    "deterministic": _torch.are_deterministic_algorithms_enabled(),
    "initial_seed": _torch.initial_seed(),
    "env": {k: _os.environ.get(k) for k in _os.environ},
    "dataloader": {k: v for k, v in _dl.items() if k in ("num_workers", "pin_memory", "persistent_workers")},
    "seeded_workers": _seeded and isinstance(_dl.get("generator"), _torch.Generator),
    "autocast_dtype": str(_g["AUTOCAST_DTYPE"]) if "AUTOCAST_DTYPE" in _g else None,
    "memory_format": str(_g["MEMORY_FORMAT"]) if "MEMORY_FORMAT" in _g else None,
    "scaler": type(_g["SCALER"]).__name__ if "SCALER" in _g else None,
    "model_dtype": str(_g["MODEL_DTYPE"]) if "MODEL_DTYPE" in _g else None,
    "fsdp_param_dtype": str(_g["FSDP_MP_POLICY"].param_dtype) if "FSDP_MP_POLICY" in _g else None,
    "fsdp1_param_dtype": str(_g["FSDP_MIXED_PRECISION"].param_dtype) if "FSDP_MIXED_PRECISION" in _g else None,
}
print("READBACK " + _json.dumps(_out))
'''


def _expected(key: str, value: Any, got: dict) -> tuple[Any, Any]:
    """(observed, expected) for one setting of the plan."""
    if key.startswith("env."):
        return got["env"].get(key[4:]), str(value)
    simple = {
        "torch.set_num_threads": "num_threads",
        "torch.backends.cudnn.benchmark": "cudnn.benchmark",
        "torch.backends.cudnn.deterministic": "cudnn.deterministic",
        "torch.backends.cudnn.allow_tf32": "cudnn.allow_tf32",
        "torch.set_float32_matmul_precision": "matmul_precision",
        "torch.use_deterministic_algorithms": "deterministic",
        "seed": "initial_seed",
        "dataloader.seeded_workers": "seeded_workers",
    }
    if key in simple:
        return got[simple[key]], value
    if key.startswith("dataloader."):
        return got["dataloader"].get(key.split(".", 1)[1]), value
    if key == "autocast.dtype":
        return got["autocast_dtype"], f"torch.{value}"
    if key == "model.channels_last":
        return got["memory_format"], "torch.channels_last" if value else "torch.contiguous_format"
    if key == "amp.grad_scaler":
        return got["scaler"], "GradScaler"
    if key == "model.dtype":
        return got["model_dtype"], f"torch.{value}"
    if key == "fsdp.mixed_precision":  # FSDP2's policy from 2.6, FSDP1's always (older torch: only it)
        dtypes = [d for d in (got["fsdp_param_dtype"], got["fsdp1_param_dtype"]) if d is not None]
        return dtypes, [f"torch.{value}"] * max(1, len(dtypes))
    raise AssertionError(f"no read-back for setting {key}: add one to tests/test_plans.py")


def _run_snippet(snippet: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMP_", "MKL_", "CUBLAS_", "CUDA_", "NCCL_", "PYTORCH_", "TORCH_"))}
    proc = subprocess.run([sys.executable, "-c", snippet + READ_BACK], capture_output=True, text=True,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("READBACK "))
    return json.loads(line[len("READBACK "):])


SNIPPET_MACHINES = MACHINES  # every preset on every recorded machine (99 plans, 45 distinct snippets)
QUOTA_CASE = ("cpu-epyc9654-docker-6cpus", "research-repro", {"seed": 7})


@pytest.fixture(scope="module")
def snippet_runs():
    """Run every snippet of the torch tests in its own fresh process, a few at a time (each one
    spends most of its time in `import torch`)."""
    from concurrent.futures import ThreadPoolExecutor

    cases = {(name, task): plan(name, task) for name in SNIPPET_MACHINES for task in TASKS}
    cases[QUOTA_CASE[:2]] = plan(QUOTA_CASE[0], QUOTA_CASE[1], **QUOTA_CASE[2])
    # presets whose snippets differ only in the header comment run once
    def code(report: Report) -> str:
        return "\n".join(line for line in report.snippet.splitlines() if not line.startswith("# "))

    with ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
        by_code: dict[str, Any] = {}
        for report in cases.values():
            if code(report) not in by_code:
                by_code[code(report)] = pool.submit(_run_snippet, report.snippet)
        return {case: (report, by_code[code(report)]) for case, report in cases.items()}


@pytest.mark.torch
@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("name", SNIPPET_MACHINES)
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_snippet_applies_every_setting(name, task, snippet_runs):
    report, future = snippet_runs[(name, task)]
    got = future.result()
    if not report.settings:  # e.g. LLM training on a CPU without bf16: a finding says why
        assert report.findings, "an empty plan with nothing to say"
        return
    for s in report.settings:
        observed, expected = _expected(s.key, s.value, got)
        assert observed == expected, f"{s.key}: read back {observed!r}, planned {expected!r}"


@pytest.mark.torch
def test_snippet_applies_quota_threads_and_repro_bundle(snippet_runs):
    """The docker --cpus=6 machine with a bitwise workload: threads, seeds, determinism in one run."""
    report, future = snippet_runs[QUOTA_CASE[:2]]
    got = future.result()
    assert got["num_threads"] == 6
    assert got["env"]["OMP_NUM_THREADS"] == "6"
    assert got["deterministic"] is True
    assert got["initial_seed"] == 7
    assert got["seeded_workers"] is True
    for s in report.settings:
        observed, expected = _expected(s.key, s.value, got)
        assert observed == expected, s.key


# ------------------------------------------------------------------------------------------------------
# the snippet imports what its statements use, and nothing else (issue 21, item 9)
# ------------------------------------------------------------------------------------------------------


def _top_level_imports(tree: ast.Module) -> set[str]:
    return {(a.asname or a.name).split(".")[0] for node in tree.body if isinstance(node, ast.Import)
            for a in node.names}


def _used_names(tree: ast.Module) -> set[str]:
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("name", MACHINES)
def test_snippet_imports_exactly_what_it_uses(name, task):
    tree = ast.parse(plan(name, task).snippet)
    imported, used = _top_level_imports(tree), _used_names(tree)
    assert imported - used == set(), f"{name} / {task}: imported and never used"
    stdlib = set(getattr(sys, "stdlib_module_names", ())) or {"os", "random", "warnings"}
    local = {(a.asname or a.name).split(".")[0] for n in ast.walk(tree)
             if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    assert (used & stdlib) - local == set(), f"{name} / {task}: used and never imported"


def test_a_plan_of_dataloader_values_imports_nothing():
    """The case of the issue: `recommend --task detection` on a 2-CPU box (no thread setting to
    make) imported os and random, and torch, for three DataLoader values."""
    from torchdoctor.render.snippet import render

    report = plan("cpu-epyc9654-docker-6cpus", "detection")
    values = [s for s in report.settings if s.key.startswith("dataloader.")]
    assert values
    only_values = report.model_copy(update={"settings": values})
    tree = ast.parse(render(only_values))
    assert _top_level_imports(tree) == set() and "DATALOADER_KWARGS" in _used_names(tree)
