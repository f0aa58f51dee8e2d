"""torchdoctor.runtime: apply() and audit() in a running process.

apply() and audit() read and change torch's global state, so every scenario runs in a fresh
interpreter (this one, ``sys.executable``): a small script is written to a temporary file,
run with a timeout, and prints one JSON object as its last stdout line.

The apply scenarios add two test rules (written below, precedence ``correctness`` so they
win over any shipped rule) that recommend one setting of every kind for the
classification and research-repro presets; the shipped rules are also applied on their own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from torchdoctor.inprocess.names import Kind, source_info

REPO = Path(__file__).resolve().parent.parent
TIMEOUT_S = 300

PRELUDE = """\
import json, os, random, sys, warnings
warnings.simplefilter("ignore")
sys.path.insert(0, {repo!r})
RULES = {rules!r}

def emit(**kw):
    dump = lambda o: o.model_dump(mode="json") if hasattr(o, "model_dump") else repr(o)
    sys.stdout.write("\\n" + json.dumps(kw, default=dump) + "\\n")
    sys.stdout.flush()
"""

TEST_RULES = {
    "test-runtime-classification": """\
id: test-runtime-classification
severity: info
category: performance
precedence: correctness
summary: Test rule for apply() with the classification preset.
why: Exercises every kind of setting apply() handles.
when: workload.task == "classification"
message: classification test plan
recommend:
  torch.set_num_threads: 1
  torch.set_num_interop_threads: 1
  torch.backends.cudnn.benchmark: true
  torch.set_float32_matmul_precision: high
  env.OMP_NUM_THREADS: 1
  env.PYTORCH_CUDA_ALLOC_CONF: "expandable_segments:True"
  dataloader.num_workers: 2
  autocast.dtype: bfloat16
  torch.backends.cuda.enable_flash_sdp: true
fix: none
references: [https://pytorch.org/docs/stable/notes/cpu_threading_torchscript_inference.html]
examples:
  fires:
    - name: classification
      facts: {workload: {task: classification}}
  ok:
    - name: another task
      facts: {workload: {task: detection}}
""",
    "test-runtime-research-repro": """\
id: test-runtime-research-repro
severity: info
category: reproducibility
precedence: correctness
summary: Test rule for apply() with the research-repro preset.
why: Exercises determinism settings, the seed, and a setting the torch version has dropped.
when: workload.task == "research-repro"
message: research-repro test plan
recommend:
  torch.use_deterministic_algorithms: true
  torch.backends.cudnn.deterministic: true
  torch.backends.cudnn.benchmark: false
  torch.set_float32_matmul_precision: highest
  seed: 1234
  env.CUBLAS_WORKSPACE_CONFIG: ":4096:8"
  dataloader.seeded_workers: true
fix: none
references: [https://pytorch.org/docs/stable/notes/randomness.html]
examples:
  fires:
    - name: research-repro
      facts: {workload: {task: research-repro}}
  ok:
    - name: another task
      facts: {workload: {task: detection}}
""",
}

# The fake assignments of the flags catalog, section 2, and what the audit must say.
FAKES = """\
torch.backends.cuda.memory_efficient = True
torch.backends.mkl.enabled = True
torch.backends.openmp.enabled = False
torch.backends.cuda.allow_tf32 = True
torch.backends.cuda.cufft_plan_cache = 1024
torch.backends.cuda.enable_flash_sdp = True
torch.backends.cudnn.benchmrk = True
torch.backends.cuda.flash_sdp = True
torch.backends.nnpack.enabled = True
torch.backends.mha.fastpath = False
torch.backends.mps.enabled = True
torch.backends.opt_einsum.enable = True
torch.backends.cpu.capability = "AVX2"
"""
FAKE_SUGGESTIONS = {
    "torch.backends.cuda.memory_efficient": "torch.backends.cuda.enable_mem_efficient_sdp(True)",
    "torch.backends.mkl.enabled": "torch.backends.mkldnn.enabled = True",
    "torch.backends.openmp.enabled": "torch.set_num_threads(N)",
    "torch.backends.cuda.allow_tf32": 'torch.set_float32_matmul_precision("high")',
    "torch.backends.cuda.cufft_plan_cache": "torch.backends.cuda.cufft_plan_cache.max_size = 1024",
    "torch.backends.cuda.enable_flash_sdp": "torch.backends.cuda.enable_flash_sdp(True)",
    "torch.backends.cudnn.benchmrk": "torch.backends.cudnn.benchmark = True",
    "torch.backends.cuda.flash_sdp": "torch.backends.cuda.enable_flash_sdp(True)",
    "torch.backends.nnpack.enabled": "torch.backends.nnpack.set_flags(True)",
    "torch.backends.mha.fastpath": "torch.backends.mha.set_fastpath_enabled(False)",
    "torch.backends.mps.enabled": "torch.backends.mps.is_available()",
    "torch.backends.opt_einsum.enable": "torch.backends.opt_einsum.enabled = True",
    "torch.backends.cpu.capability": "torch.backends.cpu.get_cpu_capability()",
}
REPLACED = {"torch.backends.cuda.cufft_plan_cache", "torch.backends.cuda.enable_flash_sdp"}


@pytest.fixture(scope="module")
def rules_dir(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("runtime-rules")
    for rule_id, text in TEST_RULES.items():
        (d / f"{rule_id}.yaml").write_text(text, encoding="utf-8")
    return str(d)


@pytest.fixture
def run(tmp_path, rules_dir):
    def run_script(body: str) -> dict:
        script = tmp_path / "scenario.py"
        script.write_text(
            PRELUDE.format(repo=str(REPO), rules=rules_dir) + textwrap.dedent(body),
            encoding="utf-8",
        )
        env = dict(os.environ)
        for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUBLAS_WORKSPACE_CONFIG"):
            env.pop(name, None)  # the scenarios start from torch's defaults
        done = subprocess.run(
            [sys.executable, str(script)],
            check=False,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            cwd=str(tmp_path),
            env=env,
        )
        assert done.returncode == 0, (
            f"scenario failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
        )
        lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
        assert lines, f"no JSON from the scenario:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return json.loads(lines[-1])

    return run_script


def keys(entries: list) -> set:
    return {e["key"] for e in entries}


# --------------------------------------------------------------------------------------
# apply
# --------------------------------------------------------------------------------------


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_apply_classification_in_process(run):
    out = run("""
        import torch
        from torchdoctor import runtime
        from torchdoctor.probes import _torch_child
        first = runtime.apply_plan("classification", rules_dirs=[RULES])
        readback = {
            "num_threads": torch.get_num_threads(),
            "num_interop_threads": torch.get_num_interop_threads(),
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "matmul_precision": torch.get_float32_matmul_precision(),
            "omp_env": os.environ.get("OMP_NUM_THREADS"),
        }
        settings = _torch_child.read_settings(torch)
        second = runtime.apply_plan("classification", rules_dirs=[RULES])
        audit = runtime.audit_process()
        emit(first=first, readback=readback, settings=settings, second=second, audit=audit)
    """)
    first, second = out["first"], out["second"]
    changed = {e["key"]: e for e in first["changed"]}
    assert {
        "torch.set_num_threads",
        "torch.set_num_interop_threads",
        "torch.backends.cudnn.benchmark",
        "torch.set_float32_matmul_precision",
    } <= set(changed)
    assert changed["torch.set_num_threads"]["after"] == 1
    assert changed["torch.backends.cudnn.benchmark"] == {
        "key": "torch.backends.cudnn.benchmark",
        "before": False,
        "after": True,
        "rule": "test-runtime-classification",
    }
    assert changed["torch.set_float32_matmul_precision"]["before"] == "highest"
    assert out["readback"] == {
        "num_threads": 1,
        "num_interop_threads": 1,
        "cudnn_benchmark": True,
        "matmul_precision": "high",
        "omp_env": "1",
    }
    # every change reads back through the probe's own getters
    for key, entry in changed.items():
        if key in out["settings"]:
            assert out["settings"][key] == entry["after"], key
    # torch was imported first: OMP_NUM_THREADS is set but cannot take effect here
    (omp,) = [e for e in first["deferred"] if e["key"] == "env.OMP_NUM_THREADS"]
    assert omp["after"] == "1" and "new processes" in omp["note"]
    assert "env-set-too-late" in {f["id"] for f in first["findings"]}
    assert "env.OMP_NUM_THREADS" not in keys(first["changed"])
    # the allocator reads its variable when CUDA initialises, which has not happened here
    assert {
        "key": "env.PYTORCH_CUDA_ALLOC_CONF",
        "before": None,
        "after": "expandable_segments:True",
        "rule": "test-runtime-classification",
    } in first["changed"]
    # code-level values are returned, not applied; the CUDA-only call is skipped on CPU
    assert first["for_your_code"]["dataloader.num_workers"] == 2
    assert first["for_your_code"]["autocast.dtype"] == "bfloat16"
    assert first["failed"] == []
    flash = "torch.backends.cuda.enable_flash_sdp"  # guarded by torch.cuda.is_available()
    assert flash in keys(first["skipped"]) | keys(first["unchanged"]) | keys(first["changed"])
    # a second apply changes nothing
    assert second["changed"] == []
    assert second["failed"] == []
    assert set(changed) <= keys(second["unchanged"])
    assert keys(second["deferred"]) == {"env.OMP_NUM_THREADS"}
    assert "env.PYTORCH_CUDA_ALLOC_CONF" in keys(second["unchanged"])
    # and nothing apply() set is a setting that does nothing
    assert out["audit"]["ignored"] == []


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_apply_research_repro_in_process(run):
    out = run("""
        import torch
        from torchdoctor import runtime
        from torchdoctor.settings import load_registry
        first = runtime.apply_plan("research-repro", rules_dirs=[RULES])
        after_apply = random.random()
        random.seed(1234)
        seeded = random.random()
        readback = {
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "matmul_precision": torch.get_float32_matmul_precision(),
            "initial_seed": torch.initial_seed(),
            "python_random_seeded": after_apply == seeded,
        }
        cublas_exists = load_registry()["env.CUBLAS_WORKSPACE_CONFIG"].available_in(torch.__version__)
        second = runtime.apply_plan("research-repro", rules_dirs=[RULES])
        audit = runtime.audit_process()
        emit(first=first, readback=readback, second=second, audit=audit, cublas_exists=cublas_exists)
    """)
    first, second = out["first"], out["second"]
    assert {
        "torch.use_deterministic_algorithms",
        "torch.backends.cudnn.deterministic",
        "seed",
    } <= keys(first["changed"])
    assert {"torch.backends.cudnn.benchmark", "torch.set_float32_matmul_precision"} <= keys(
        first["unchanged"]
    )
    seed = next(e for e in first["changed"] if e["key"] == "seed")
    assert seed["after"] == 1234
    assert out["readback"] == {
        "deterministic_algorithms": True,
        "cudnn_deterministic": True,
        "cudnn_benchmark": False,
        "matmul_precision": "highest",
        "initial_seed": 1234,
        "python_random_seeded": True,
    }
    assert first["for_your_code"]["dataloader.seeded_workers"] is True
    if not out["cublas_exists"]:  # dropped from the plan for this torch version (until 2.10)
        assert "env.CUBLAS_WORKSPACE_CONFIG" in keys(first["skipped"])
    assert first["failed"] == []
    assert second["changed"] == [] and second["deferred"] == [] and second["failed"] == []
    assert keys(first["changed"]) <= keys(second["unchanged"])
    assert out["audit"]["ignored"] == []


@pytest.mark.gpu
def test_apply_after_cuda_init_defers_cuda_env_and_applies_sdp_switches(run):
    out = run("""
        import torch
        torch.cuda.init()
        torch.backends.cuda.enable_flash_sdp(False)
        from torchdoctor import runtime
        first = runtime.apply_plan("classification", rules_dirs=[RULES])
        emit(first=first, flash=torch.backends.cuda.flash_sdp_enabled())
    """)
    first = out["first"]
    (alloc,) = [e for e in first["deferred"] if e["key"] == "env.PYTORCH_CUDA_ALLOC_CONF"]
    assert "CUDA" in alloc["note"]
    assert {
        "key": "torch.backends.cuda.enable_flash_sdp",
        "before": False,
        "after": True,
        "rule": "test-runtime-classification",
    } in first["changed"]
    assert out["flash"] is True


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_apply_before_torch_is_imported_sets_env_first(run):
    out = run("""
        from torchdoctor import runtime
        assert "torch" not in sys.modules
        first = runtime.apply_plan("classification", rules_dirs=[RULES])
        import torch
        emit(first=first, num_threads=torch.get_num_threads())
    """)
    first = out["first"]
    # OMP_NUM_THREADS was set before apply() imported torch, so it took effect: the intra-op
    # pool already had 1 thread when torch.set_num_threads(1) came to be applied
    assert {
        "key": "env.OMP_NUM_THREADS",
        "before": None,
        "after": "1",
        "rule": "test-runtime-classification",
    } in first["changed"]
    assert first["deferred"] == []
    assert {
        "key": "torch.set_num_threads",
        "before": 1,
        "after": 1,
        "rule": "test-runtime-classification",
    } in first["unchanged"]
    assert out["num_threads"] == 1


@pytest.mark.torch
@pytest.mark.parametrize("task", ["classification", "research-repro"])
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_apply_shipped_rules_reads_back_and_is_idempotent(run, task):
    out = run(f"""
        import torch
        from torchdoctor import runtime
        from torchdoctor.probes import _torch_child
        first = runtime.apply_plan({task!r})
        settings = _torch_child.read_settings(torch)
        second = runtime.apply_plan({task!r})
        emit(first=first, settings=settings, second=second, audit=runtime.audit_process())
    """)
    first, second = out["first"], out["second"]
    assert first["failed"] == []
    for entry in first["changed"]:
        assert entry["before"] != entry["after"], entry
        if entry["key"] in out["settings"]:
            assert out["settings"][entry["key"]] == entry["after"], entry
    assert second["changed"] == [] and second["failed"] == []
    assert out["audit"]["ignored"] == []
    for finding in first["findings"]:
        assert set(finding) == {"id", "severity", "category", "message"}


# --------------------------------------------------------------------------------------
# snippets of plans for other torch versions run as pasted under this torch
# --------------------------------------------------------------------------------------

SNIPPET_READBACK = """
import torch as _t
_g = globals()
_dl = _g.get("DATALOADER_KWARGS", {})
if "worker_init_fn" in _dl:
    _dl["worker_init_fn"](0)
emit(
    matmul_tf32=_t.backends.cuda.matmul.allow_tf32,
    cudnn_tf32=_t.backends.cudnn.allow_tf32,
    precision=_t.get_float32_matmul_precision(),
    deterministic=_t.are_deterministic_algorithms_enabled(),
    autocast=str(_g["AUTOCAST_DTYPE"]) if "AUTOCAST_DTYPE" in _g else None,
    memory_format=str(_g["MEMORY_FORMAT"]) if "MEMORY_FORMAT" in _g else None,
    scaler=type(_g["SCALER"]).__name__ if "SCALER" in _g else None,
    dataloader=sorted(_dl),
)
"""

# (gpu, --torch-version, task) -> what the snippet must leave behind
OLD_TORCH_PLANS = {
    ("A100", "1.10", "research-repro"): dict(matmul_tf32=False, cudnn_tf32=False, precision="highest",
                                             deterministic=True, autocast=None, memory_format=None,
                                             dataloader=["generator", "pin_memory", "worker_init_fn"]),
    # no bf16 autocast before 1.10: precision auto falls back to fp16 (torch.cuda.amp.autocast)
    ("A100", "1.8", "classification"): dict(matmul_tf32=True, autocast="torch.float16",
                                            memory_format="torch.channels_last", scaler="GradScaler"),
    ("V100", "1.8", "classification"): dict(autocast="torch.float16", memory_format="torch.channels_last",
                                            scaler="GradScaler"),
    ("V100", "1.5", "classification"): dict(autocast=None, memory_format=None, scaler=None),
    ("A100", "1.6", "research-repro"): dict(dataloader=["pin_memory", "worker_init_fn"]),
    ("A100", "2.13", "classification"): dict(precision="high", autocast="torch.bfloat16",
                                             memory_format="torch.channels_last", scaler=None),
}


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(OLD_TORCH_PLANS), ids=lambda c: "-".join(c))
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_snippets_for_other_torch_versions_run_as_pasted(run, case):
    from torchdoctor.api import plan_report
    from torchdoctor.rules import load_rules
    from torchdoctor.synthetic import facts_for_gpu
    from torchdoctor.workload import build_workload

    gpu, version, task = case
    report = plan_report(load_rules(), facts_for_gpu(gpu, version), build_workload(task))
    assert "if True" not in report.snippet and "if False" not in report.snippet
    # start from torch 1.7-1.11's default (TF32 matmuls on), which the snippet must undo where asked
    before = "import torch as _t0\n_t0.backends.cuda.matmul.allow_tf32 = True\n"
    out = run(before + report.snippet + SNIPPET_READBACK)
    for name, expected in OLD_TORCH_PLANS[case].items():
        assert out[name] == expected, (name, report.snippet)


# --------------------------------------------------------------------------------------
# audit
# --------------------------------------------------------------------------------------


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_audit_finds_every_catalog_fake(run):
    out = run(
        "import torch\n"
        + FAKES
        + """
from torchdoctor import runtime
emit(audit=runtime.audit_process())
"""
    )
    audit = out["audit"]
    found = {e["attribute"]: e for e in audit["ignored"]}
    assert set(found) == set(FAKE_SUGGESTIONS)
    for attribute, suggestion in FAKE_SUGGESTIONS.items():
        entry = found[attribute]
        assert entry["did_you_mean"] == suggestion, attribute
        if attribute in REPLACED:
            assert entry["problem"].startswith("replaced PyTorch's"), entry
        else:
            assert (
                entry["problem"]
                == "PyTorch has no such setting: the assignment is silently ignored"
            )
    assert found["torch.backends.cuda.cufft_plan_cache"]["value"] == 1024
    assert "cuFFTPlanCacheManager" in found["torch.backends.cuda.cufft_plan_cache"]["problem"]
    assert "function" in found["torch.backends.cuda.enable_flash_sdp"]["problem"]
    ids = [f["id"] for f in audit["findings"]]
    assert ids.count("backends-setting-ignored") == len(FAKE_SUGGESTIONS) - len(REPLACED)
    assert ids.count("backends-attribute-replaced") == len(REPLACED)
    for f in audit["findings"]:
        assert set(f) == {"id", "severity", "category", "message"}


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_audit_typos_get_a_close_match_from_pytorchs_own_names(run):
    out = run("""
        import torch
        torch.backends.cudnn.determinstic = True
        torch.backends.cuda.benchmark = True
        torch.backends.mkldnn.enabeld = False
        torch.backends.cudnn.conv = "tf32"
        torch.backends.cudnn.is_available = True
        torch.backends.made_up_backend_flag = 1
        torch.backends.cudnn = False
        from torchdoctor import runtime
        emit(ignored=runtime.audit_process()["ignored"])
    """)
    found = {e["attribute"]: e for e in out["ignored"]}
    assert (
        found["torch.backends.cudnn.determinstic"]["did_you_mean"]
        == "torch.backends.cudnn.deterministic = True"
    )
    assert (
        found["torch.backends.cuda.benchmark"]["did_you_mean"]
        == "torch.backends.cudnn.benchmark = True"
    )
    assert (
        found["torch.backends.mkldnn.enabeld"]["did_you_mean"]
        == "torch.backends.mkldnn.enabled = False"
    )
    # a real class-level object and a real function replaced on a PropModule-style module
    assert "_FP32Precision" in found["torch.backends.cudnn.conv"]["problem"]
    assert (
        found["torch.backends.cudnn.conv"]["did_you_mean"]
        == "torch.backends.cudnn.conv.fp32_precision = 'tf32'"
    )
    assert found["torch.backends.cudnn.is_available"]["problem"].startswith(
        "replaced PyTorch's function"
    )
    assert found["torch.backends.cudnn.is_available"]["did_you_mean"] is None  # takes no argument
    assert found["torch.backends.made_up_backend_flag"]["did_you_mean"] is None
    # a whole submodule replaced by a value ("turn cuDNN off")
    assert found["torch.backends.cudnn"]["problem"].startswith(
        "replaced PyTorch's module with a bool"
    )
    assert found["torch.backends.cudnn"]["did_you_mean"] == "torch.backends.cudnn.enabled = False"
    assert len(found) == 7


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_audit_clean_process_has_no_false_positives(run):
    out = run("""
        import torch
        from torchdoctor import runtime
        emit(audit=runtime.audit_process())
    """)
    audit = out["audit"]
    assert audit["ignored"] == []
    assert audit["findings"] == []
    assert audit["tf32_api"] == {"mixed": False, "raising": {}}
    assert audit["settings"]["torch.backends.cudnn.benchmark"] is False
    assert audit["settings"]["torch.set_float32_matmul_precision"] == "highest"


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_audit_no_false_positives_after_real_settings_and_more_modules(run):
    out = run("""
        import importlib
        import torch
        for name in ("torch.backends.xnnpack", "torch.backends.xeon.run_cpu", "torch.backends._nnapi.prepare",
                     "torch.nn.attention", "torch.distributed", "torch.utils.data", "torch.fx"):
            try:
                importlib.import_module(name)
            except ImportError:
                pass
        x = torch.randn(2, 4, 8, 16)
        torch.nn.functional.scaled_dot_product_attention(x, x, x)
        torch.einsum("bhij,bhkj->bhik", x, x)
        with torch.backends.cudnn.flags(enabled=True, benchmark=True):
            pass
        with torch.backends.mkldnn.flags(enabled=True):
            pass
        torch.backends.cudnn.benchmark = True
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.mkldnn.enabled = True
        torch.backends.opt_einsum.enabled = False
        torch.backends.opt_einsum.strategy = "greedy"
        torch.backends.quantized.engine = torch.backends.quantized.supported_engines[0]
        torch.backends.cuda.enable_flash_sdp(False)
        torch.backends.mha.set_fastpath_enabled(False)
        torch.backends.nnpack.set_flags(False)
        torch.use_deterministic_algorithms(True)
        torch.set_float32_matmul_precision("high")
        from torchdoctor import runtime
        emit(audit=runtime.audit_process(), modules=sorted(n for n in sys.modules if n.startswith("torch.backends")))
    """)
    assert out["audit"]["ignored"] == []
    assert out["audit"]["tf32_api"]["mixed"] is False
    assert "torch.backends.xnnpack" in out["modules"]


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_audit_checks_every_loaded_backends_module(run):
    # no false positives is only half: a fake on each loaded module (plain modules,
    # PropModule-style replacements, xnnpack's engine) must be found too
    out = run("""
        import importlib
        import torch
        import torch.backends.xnnpack
        names = sorted(n for n, m in sys.modules.items()
                       if (n == "torch.backends" or n.startswith("torch.backends.")) and m is not None)
        for n in names:
            setattr(sys.modules[n], "torchdoctor_fake_flag", True)
        from torchdoctor import runtime
        emit(names=names, ignored=runtime.audit_process()["ignored"])
    """)
    found = {e["attribute"] for e in out["ignored"]}
    assert found == {f"{n}.torchdoctor_fake_flag" for n in out["names"]}
    assert len(out["names"]) >= 15


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_audit_reports_the_mixed_tf32_api_state(run):
    out = run("""
        import torch
        torch.backends.cuda.matmul.fp32_precision = "tf32"
        from torchdoctor import runtime
        emit(audit=runtime.audit_process())
    """)
    audit = out["audit"]
    if "torch.backends.cuda.matmul.fp32_precision" not in audit["settings"]:
        pytest.skip("this torch has no fp32_precision API")
    assert audit["tf32_api"]["mixed"] is True
    assert "torch.get_float32_matmul_precision()" in audit["tf32_api"]["raising"]
    assert "tf32-mixed-legacy-and-new-api" in {f["id"] for f in audit["findings"]}  # the rule check shares
    assert "unavailable" in audit["settings"]["torch.set_float32_matmul_precision"]
    assert audit["ignored"] == []


@pytest.mark.torch
def test_audit_does_not_import_torch(run):
    out = run("""
        from torchdoctor import runtime
        audit = runtime.audit_process()
        emit(audit=audit, imported="torch" in sys.modules)
    """)
    assert out["imported"] is False
    assert out["audit"]["torch_imported"] is False
    assert out["audit"]["ignored"] == [] and out["audit"]["settings"] == {}


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_api_entry_points_delegate(run):
    out = run("""
        import torch
        torch.backends.mkl.enabled = True
        import torchdoctor.api as api
        emit(audit=api.audit(), apply=api.apply("classification"))
    """)
    assert [e["attribute"] for e in out["audit"]["ignored"]] == ["torch.backends.mkl.enabled"]
    assert set(out["apply"]) >= {"changed", "unchanged", "deferred", "for_your_code", "findings"}


# --------------------------------------------------------------------------------------
# how real names are derived from source (no torch needed)
# --------------------------------------------------------------------------------------

SOURCE = """
import sys as _sys
from . import sub
__all__ = ["exported_only"]
try:
    from x import fast
except ImportError:
    fast = None
VERBOSE = 0
def set_flag(value): ...
def query(): ...
class Manager:
    __ready = False
    def __init__(self):
        self.caches = []
        self.__ready = True
    def __getattr__(self, name):
        if name == "virtual_flag":
            return 1
        raise AttributeError(name)
cache = Manager()
class Module:
    global enabled
    enabled = 1
    real = 2
    def method(self, value): ...
def _setter(v):
    global written_later
    written_later = v
"""


FAKE_CUDA = REPO / "tests" / "data" / "fake_torch"


def test_in_process_facts_never_initialise_cuda_in_the_users_process(run):
    """audit() and facts_in_process() in a process whose torch is a CUDA build (the fake
    torch 2.5.1+cu124 on an A100 + RTX 4090): CUDA devices are read only once the user's
    code has initialised CUDA itself (initialising it here would break fork-based
    DataLoader workers); the build facts are read either way."""
    out = run(f"""
        sys.path[:0] = [{str(FAKE_CUDA / "cuda_a100_rtx4090")!r}, {str(FAKE_CUDA / "cuda")!r}]
        import torch
        from torchdoctor import runtime
        from torchdoctor.probes import pytorch
        before = pytorch.facts_in_process()
        initialised_by_us = torch.cuda.is_initialized()
        audit = runtime.audit_process()
        torch.cuda.init()  # the user's code starts CUDA
        after = pytorch.facts_in_process()
        emit(before=before.model_dump(mode="json"), initialised_by_us=initialised_by_us,
             after=after.model_dump(mode="json"), settings=audit["settings"],
             findings=[f["id"] for f in audit["findings"]])
    """)
    before, after = out["before"], out["after"]
    assert out["initialised_by_us"] is False
    for key in ("cuda_available", "device_count", "devices", "cuda_init_error"):
        assert "CUDA is not initialised in this process" in before[key]["unavailable"], key
    for facts in (before, after):
        assert facts["version"] == "2.5.1+cu124" and facts["cuda_build"] == "12.4"
        assert facts["cudnn_version"] == "9.1.0" and facts["nccl_version"] == "2.21.5"
        assert facts["arch_list"] == ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    assert after["cuda_available"] is True and after["device_count"] == 2
    assert [(d["name"], d["compute_capability"]) for d in after["devices"]] == [
        ("NVIDIA A100-SXM4-80GB", 8.0),
        ("NVIDIA GeForce RTX 4090", 8.9),
    ]
    assert after["cuda_init_error"] is None
    assert out["settings"]["torch.backends.cudnn.benchmark_limit"] == 10
    assert out["settings"]["torch.backends.cuda.matmul.allow_tf32"] is False


def test_source_names_cover_every_binding(tmp_path):
    path = tmp_path / "mod.py"
    path.write_text(SOURCE, encoding="utf-8")
    info = source_info(str(path))
    assert info is not None
    assert {
        "_sys",
        "sub",
        "exported_only",
        "fast",
        "VERBOSE",
        "set_flag",
        "query",
        "Manager",
        "cache",
        "Module",
        "enabled",
        "written_later",
        "_setter",
    } <= set(info.names)
    assert Kind("function", arity=1) in info.names["set_flag"]
    assert Kind("call", callee="Manager") in info.names["cache"]
    manager = info.classes["Manager"]
    assert {"caches", "_Manager__ready"} <= manager.instance
    assert "virtual_flag" in manager.virtual
    module = info.classes["Module"]
    assert "enabled" not in module.names  # `global enabled`: a module global, not a class attribute
    assert "real" in module.names
    assert Kind("function", arity=1) in module.names["method"]  # self is not counted


def test_source_info_of_unreadable_files_is_none(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def broken(:\n", encoding="utf-8")
    assert source_info(str(bad)) is None
    assert source_info(str(tmp_path / "missing.py")) is None
    assert source_info(None) is None
