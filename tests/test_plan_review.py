"""Plans an expert reviewed (issue 9, item 6): each test pins one reviewed class of plan, through
the public planning path (`recommend --gpu NAME` facts, recorded machines, task presets) and,
where a statement is pasted or executed, through real torch in a fresh process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

from torchdoctor.api import plan_report
from torchdoctor.facts import Facts
from torchdoctor.report import Report
from torchdoctor.rules import load_rules
from torchdoctor.settings import load_registry
from torchdoctor.synthetic import facts_for_gpu
from torchdoctor.workload import build_workload, load_tasks

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
MACHINES = TESTS / "machines"
RULES = load_rules()
REG = load_registry()
TASKS = sorted(load_tasks())


def machine(name: str) -> Facts:
    return Facts.model_validate_json((MACHINES / f"{name}.json").read_text(encoding="utf-8"))


def gpu_plan(gpu: str, task: str, version: str | None = None, **overrides: Any) -> Report:
    return plan_report(RULES, facts_for_gpu(gpu, version), build_workload(task, overrides=overrides))


def machine_plan(name: str, task: str, **overrides: Any) -> Report:
    return plan_report(RULES, machine(name), build_workload(task, overrides=overrides))


def settings(report: Report) -> dict[str, Any]:
    return {s.key: s.value for s in report.settings}


def findings(report: Report) -> dict[str, Any]:
    return {f.id: f for f in report.findings}


def run_python(code: str, env_extra: dict[str, str] | None = None) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OMP_", "MKL_", "CUBLAS_", "CUDA_", "NCCL_", "PYTORCH_", "TORCH_"))}
    env.update(env_extra or {})
    env["PYTHONPATH"] = str(REPO)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


# --------------------------------------------------------------------------------------------------
# inference keeps the weights in the low-precision dtype
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gpu, dtype", [("A100", "bfloat16"), ("8x H100", "bfloat16"), ("T4", "float16")])
def test_inference_casts_weights_instead_of_autocast(gpu, dtype):
    task = "llm-inference" if dtype == "bfloat16" else "classification"
    report = gpu_plan(gpu, task, mode="inference")
    s = settings(report)
    assert s["model.dtype"] == dtype
    assert "autocast.dtype" not in s and "amp.grad_scaler" not in s
    assert f"MODEL_DTYPE = torch.{dtype}  # low-precision-weights-unused-for-inference" in report.snippet
    # training on the same GPU keeps float32 master weights under autocast
    training = settings(gpu_plan(gpu, task, mode="training", distributed="none"))
    assert training["autocast.dtype"] == dtype and "model.dtype" not in training


def test_cpu_inference_on_amx_casts_weights():
    s = settings(machine_plan("cpu-sapphirerapids-amx", "llm-inference"))
    assert s["model.dtype"] == "bfloat16" and "autocast.dtype" not in s


# --------------------------------------------------------------------------------------------------
# torch.compile needs a Triton-capable GPU
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [None, "2.0.1", "2.9.1"])
def test_compile_on_pascal_is_an_error(version):
    report = gpu_plan("GTX 1080", "classification", version, compile=True)
    finding = findings(report)["compile-needs-triton-gpu"]
    assert finding.severity == "error"
    assert "too old to be supported by the triton GPU compiler" in finding.message
    assert "compile-needs-triton-gpu" not in findings(gpu_plan("V100", "classification", version, compile=True))
    assert "compile-needs-triton-gpu" not in findings(gpu_plan("GTX 1080", "classification", version))


# --------------------------------------------------------------------------------------------------
# TF32 beside mixed precision; FP8 pointer for bf16 transformer training
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", ["llm-training", "llm-inference", "speech", "classification"])
@pytest.mark.parametrize("gpu", ["A100", "8x H100", "RTX 4090"])
def test_mixed_precision_plans_on_ampere_and_newer_use_tf32(gpu, task):
    assert settings(gpu_plan(gpu, task))["torch.set_float32_matmul_precision"] == "high"


def test_fp8_pointer_is_given_for_bf16_transformer_training_as_for_auto():
    for task in ("llm-training", "speech"):
        assert "fp8-available-via-torchao" in findings(gpu_plan("8x H100", task)), task
    assert "fp8-available-via-torchao" not in findings(gpu_plan("8x H100", "llm-inference"))
    assert "fp8-available-via-torchao" not in findings(gpu_plan("8x A100", "llm-training"))


# --------------------------------------------------------------------------------------------------
# diffusion (a UNet at a fixed resolution) gets the conv settings
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gpu, channels_last", [("A100", True), ("T4", True), ("P100", False)])
def test_diffusion_gets_cudnn_autotuner_and_channels_last(gpu, channels_last):
    s = settings(gpu_plan(gpu, "diffusion"))
    assert s["torch.backends.cudnn.benchmark"] is True
    assert ("model.channels_last" in s) is channels_last  # only with tensor cores and AMP
    recsys = settings(gpu_plan(gpu, "recsys"))  # no convolutions: neither setting
    assert "torch.backends.cudnn.benchmark" not in recsys and "model.channels_last" not in recsys


# --------------------------------------------------------------------------------------------------
# bitwise reproducibility: what is bought, what precision is kept
# --------------------------------------------------------------------------------------------------


def test_bitwise_plan_pins_tf32_to_the_precision_asked_and_says_so():
    report = gpu_plan("A100", "classification", reproducibility="bitwise")
    s = settings(report)
    assert s["autocast.dtype"] == "bfloat16"  # the precision asked (auto) is kept
    assert s["torch.set_float32_matmul_precision"] == "high"
    assert s["torch.backends.cudnn.allow_tf32"] is True
    assert s["torch.use_deterministic_algorithms"] is True
    text = " ".join(f.message for f in report.findings) + " ".join(x.reason for x in report.settings)
    assert "run to run" in text
    # never "full FP32" next to a bf16 autocast plan
    assert "full FP32" not in text and "full fp32" not in text.lower()
    full = gpu_plan("A100", "research-repro")  # precision fp32
    assert settings(full)["torch.set_float32_matmul_precision"] == "highest"
    assert settings(full)["torch.backends.cudnn.allow_tf32"] is False
    assert "autocast.dtype" not in settings(full)


# --------------------------------------------------------------------------------------------------
# CPU-only plans
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("task", TASKS)
def test_cpu_plan_without_cpu_facts_says_what_is_needed(task):
    report = gpu_plan("cpu", task)
    finding = findings(report)["cpu-plan-needs-cpu-facts"]
    assert "--facts" in finding.message and "NUMA" in finding.message and "AMX" in finding.message


def test_cpu_machines_get_precision_threads_and_numa_advice():
    haswell = findings(machine_plan("cpu-haswell-no-avx512", "classification"))
    assert "float32" in haswell["cpu-keeps-fp32-without-amx"].message
    assert "cpu-plan-needs-cpu-facts" not in haswell
    data = json.loads((MACHINES / "cpu-haswell-no-avx512.json").read_text(encoding="utf-8"))
    data["cpu"]["numa_nodes"] = 2
    data["cpu"]["sockets"] = 2
    two_sockets = plan_report(RULES, Facts.model_validate(data), build_workload("classification"))
    assert "numactl --cpunodebind" in findings(two_sockets)["process-spans-numa-nodes"].message
    # and the GPU form, from torch 2.9 (torchrun --numa-binding)
    h100 = findings(machine_plan("hopper-h100x8", "llm-training"))
    assert "--numa-binding=node" in h100["process-spans-numa-nodes"].message
    assert "process-spans-numa-nodes" not in findings(machine_plan("ampere-a100x4", "llm-training"))  # 2.3


# --------------------------------------------------------------------------------------------------
# DataLoader workers beyond the CPUs; inference reasons do not say "training"
# --------------------------------------------------------------------------------------------------


def test_workers_beyond_the_usable_cpus_are_reduced_with_a_warning():
    report = machine_plan("dev-container-xeon-avx512", "classification", dataloader_workers=4)  # 2 CPUs
    finding = findings(report)["dataloader-workers-exceed-cpus"]
    assert finding.severity == "warning" and "2 usable CPUs" in finding.message
    rec = next(r for r in report.settings if r.key == "dataloader.num_workers")
    assert (rec.value, rec.rule) == (1, "dataloader-workers-exceed-cpus")
    assert [(o.rule, o.value) for o in rec.overrides] == [("dataloader-workers-not-sized", 4)]
    assert settings(report)["dataloader.persistent_workers"] is True  # still valid: num_workers > 0


@pytest.mark.parametrize("task", TASKS)
def test_inference_reasons_never_say_training(task):
    names = sorted(p.stem for p in MACHINES.glob("*.json"))
    for name in names:
        for precision in (None, "fp16", "bf16", "fp32"):
            overrides = {"mode": "inference", **({"precision": precision} if precision else {})}
            report = machine_plan(name, task, **overrides)
            texts = [f.message for f in report.findings] + [s.reason for s in report.settings]
            bad = [t for t in texts if re.search(r"\btrain(ing|s)?\b", t, re.IGNORECASE)]
            assert not bad, (name, task, precision, bad)


# --------------------------------------------------------------------------------------------------
# FSDP uses FSDP's mixed precision, version-aware
# --------------------------------------------------------------------------------------------------


def test_fsdp_plans_use_fsdps_mixed_precision_policy():
    report = gpu_plan("8x H100", "llm-training")
    s = settings(report)
    assert s["fsdp.mixed_precision"] == "bfloat16" and "autocast.dtype" not in s
    assert "MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)" in report.snippet
    assert "from torch.distributed.fsdp import MixedPrecision, MixedPrecisionPolicy" in report.snippet
    ddp = settings(gpu_plan("8x H100", "llm-training", distributed="ddp"))
    assert ddp["autocast.dtype"] == "bfloat16" and "fsdp.mixed_precision" not in ddp
    # FSDP2 lived in torch.distributed._composable.fsdp in 2.4-2.5; only FSDP1 before
    assert "from torch.distributed._composable.fsdp import MixedPrecisionPolicy" in gpu_plan(
        "8x H100", "llm-training", "2.5.1").snippet
    old = gpu_plan("8x A100", "llm-training", "2.1.2").snippet
    assert "MixedPrecisionPolicy" not in old and "FSDP_MIXED_PRECISION = MixedPrecision(" in old
    dropped = {d.key: d.reason for d in gpu_plan("8x A100", "llm-training", "1.11.0").dropped}
    assert "fsdp.mixed_precision" in dropped


# --------------------------------------------------------------------------------------------------
# TF32 statements on 2.9.0 (legacy-API deprecation notice, removed in 2.9.1)
# --------------------------------------------------------------------------------------------------

# the notice as aten/src/ATen/Context.cpp of 2.9.0 prints it (pytorch/pytorch#158209, #167644)
NOTICE_290 = (
    "Please use the new API settings to control TF32 behavior, such as torch.backends.cudnn.conv."
    "fp32_precision = 'tf32' or torch.backends.cuda.matmul.fp32_precision = 'ieee'. Old settings, e.g, "
    "torch.backends.cuda.matmul.allow_tf32 = True, torch.backends.cudnn.allow_tf32 = True, "
    "allowTF32CuDNN() and allowTF32CuBLAS() will be deprecated after Pytorch 2.9. Please see "
    "https://pytorch.org/docs/main/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices "
    "(Triggered internally at /pytorch/aten/src/ATen/Context.cpp:80.)"
)


class _Torch290:
    """Stands in for torch 2.9.0's legacy setters: each emits the notice, as TORCH_WARN does."""

    def __init__(self):
        self.calls: list[Any] = []
        outer = self

        class _Cudnn:
            def __setattr__(self, name, value):
                warnings.warn(NOTICE_290, UserWarning, stacklevel=2)
                outer.calls.append((name, value))

        self.backends = type("B", (), {"cudnn": _Cudnn()})()

    def set_float32_matmul_precision(self, value):
        warnings.warn(NOTICE_290, UserWarning, stacklevel=2)
        self.calls.append(("matmul", value))


@pytest.mark.parametrize("key, value", [("torch.set_float32_matmul_precision", "high"),
                                        ("torch.backends.cudnn.allow_tf32", False)])
def test_tf32_statements_on_2_9_0_print_no_deprecation_notice(key, value):
    code = REG[key].render(value, "2.9.0+cu128")
    fake = _Torch290()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        exec(compile(code, "<snippet>", "exec"), {"torch": fake})  # noqa: S102
    assert len(fake.calls) == 1, code  # the setting is still applied
    assert not [w for w in seen if "TF32" in str(w.message)], code
    assert "fp32_precision" not in code.replace("set_float32_matmul_precision", "")  # legacy API only
    # 2.9.1 deleted the notice (pytorch/pytorch#166998): the plain statement again
    assert "warnings" not in REG[key].render(value, "2.9.1")
    assert "catch_warnings" in gpu_plan("A100", "classification", "2.9.0").snippet


# --------------------------------------------------------------------------------------------------
# snippets that run under real torch
# --------------------------------------------------------------------------------------------------


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_alloc_conf_snippet_keeps_the_users_other_options():
    snippet = gpu_plan("8x H100", "llm-training").snippet
    assert 'os.environ["PYTORCH_CUDA_ALLOC_CONF"] = ' in snippet
    code = snippet + "\nprint('RESULT ' + __import__('json').dumps(os.environ['PYTORCH_CUDA_ALLOC_CONF']))\n"
    assert run_python(code) == "expandable_segments:True"
    kept = run_python(code, {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:512,expandable_segments:False"})
    assert kept == "max_split_size_mb:512,expandable_segments:True"


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_tf32_snippet_for_2_9_0_runs_and_reads_back():
    snippet = gpu_plan("A100", "research-repro", "2.9.0").snippet
    code = snippet + textwrap.dedent("""
        import json as _j
        print("RESULT " + _j.dumps([torch.get_float32_matmul_precision(), torch.backends.cudnn.allow_tf32]))
    """)
    assert run_python(code) == ["highest", False]


# --------------------------------------------------------------------------------------------------
# audit(): did-you-mean hints that are safe to paste, and none where nothing is close
# --------------------------------------------------------------------------------------------------

AUDIT = textwrap.dedent("""
    import json, warnings
    import torch
    torch.backends.quantized.enabled = True       # no setting is close: 'engine' is not 'enabled'
    torch.backends.quantized.engin = "x86"        # a typo of engine, with a supported engine
    torch.backends.quantized.engne = True         # a typo of engine, but a bool would raise
    torch.backends.cudnn.benchmrk = True
    torch.backends.cudnn.benchmrk2 = "yes"        # benchmark takes a bool
    torch.backends.cuda.sdp_kernl = True          # sdp_kernel is deprecated
    torch.backends.cuda.enable_flash = True
    torch.backends.cuda.enable_mem_efficient_sdp = "yes"   # replaced a function taking a bool
    torch.backends.mkl.VERBOSE_OF = 1             # constants are not settings
    torch.backends.cudnn.xyzzy = 3
    from torchdoctor import runtime
    hints = {e["attribute"]: e["did_you_mean"] for e in runtime.audit_process()["ignored"]}
    # every hint that is a plain statement runs (in this process, after the audit) without error
    ran = {}
    for attr, hint in hints.items():
        if hint and hint.startswith("torch.") and "(N)" not in hint:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("error", DeprecationWarning)
                    exec(hint, {"torch": torch})
                ran[attr] = "ok"
            except Exception as exc:
                ran[attr] = type(exc).__name__
    print("RESULT " + json.dumps({"hints": hints, "ran": ran}))
""")


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_audit_hints_are_safe_to_paste_and_only_for_close_names():
    out = run_python(AUDIT)
    hints, ran = out["hints"], out["ran"]
    assert hints["torch.backends.quantized.enabled"] is None
    assert hints["torch.backends.quantized.engin"] == "torch.backends.quantized.engine = 'x86'"
    assert hints["torch.backends.quantized.engne"] is None
    assert hints["torch.backends.cudnn.benchmrk"] == "torch.backends.cudnn.benchmark = True"
    assert hints["torch.backends.cudnn.benchmrk2"] is None
    assert hints["torch.backends.cuda.sdp_kernl"] is None
    assert hints["torch.backends.cuda.enable_flash"] == "torch.backends.cuda.enable_flash_sdp(True)"
    assert hints["torch.backends.cuda.enable_mem_efficient_sdp"] is None
    assert hints["torch.backends.mkl.VERBOSE_OF"] is None
    assert hints["torch.backends.cudnn.xyzzy"] is None
    assert ran and set(ran.values()) == {"ok"}, ran
