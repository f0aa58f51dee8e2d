"""The torch probe: a child process of the target interpreter reads torch, whatever happens.

Real torch (the CPU 2.13 build in the venv) for the facts and settings; fake ``torch``
packages from ``tests/data/fake_torch/`` (put first on PYTHONPATH, which the child inherits)
for failures this machine cannot produce: a missing cuDNN, SIGILL, a segfault, a hang.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.facts import TorchFacts, Unavailable, is_unavailable
from torchdoctor.probes import ProbeContext, ProbeUnavailable, _sys, collect, pytorch
from torchdoctor.probes._child_settings import default_getters

FAKES = Path(__file__).resolve().parent.parent / "data" / "fake_torch"

STATUS_FIELDS = {
    "python_executable",
    "import_status",
    "import_error",
    "missing_library",
    "missing_symbol",
    "signal",
    # read from /proc/self/maps even when the import fails (tests/probes/test_loaded_libraries.py)
    "wheel_library_dirs",
    "loaded_libraries",
}


def _this_interpreter(path: str) -> bool:
    """Whether ``path`` (what the torch child reported as its ``sys.executable``) names the
    interpreter running these tests. Textual equality is not enough: started through a
    relative path (``../.venv/bin/python -m pytest``), this process's ``sys.executable`` is
    ``/work/main/tests/../.venv/bin/python`` while the child, given that absolute path,
    reports it normalised. The path is compared normalised, never resolved: a venv's
    ``python`` is a symlink to the base interpreter, and resolving would make every venv of
    one base interpreter the same."""
    norm = lambda p: os.path.normcase(os.path.normpath(os.path.abspath(p)))  # noqa: E731
    return norm(path) == norm(sys.executable)


def _other_fields_unavailable(facts: TorchFacts, words: str) -> None:
    for name in TorchFacts.model_fields:
        if name in STATUS_FIELDS:
            continue
        value = getattr(facts, name)
        assert is_unavailable(value), name
        assert words in value.reason, (name, value.reason)


# --------------------------------------------------------------------------------------
# the real torch
# --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def child_facts() -> TorchFacts:
    return pytorch.probe(ProbeContext(python=sys.executable, timeout=120))


@pytest.mark.torch
def test_child_reads_the_real_torch_like_torch_itself(child_facts):
    import torch

    f = child_facts
    assert f.import_status == "ok"
    assert _this_interpreter(f.python_executable)
    assert (
        f.import_error is None
        and f.missing_library is None
        and f.missing_symbol is None
        and f.signal is None
    )
    assert f.version == torch.__version__ == "2.13.0+cpu"
    assert f.git_version == torch.version.git_version
    assert f.debug_build is torch.version.debug
    assert f.module_path == os.path.dirname(torch.__file__)
    assert f.cuda_build is None and f.hip_build is None
    assert f.cudnn_version is None and f.cudnn_compiled_version is None and f.nccl_version is None
    assert f.arch_list == torch.cuda.get_arch_list() == []
    assert f.cuda_available is False and f.device_count == 0 and f.devices == []
    assert f.cuda_init_error is None
    assert f.mps_built is torch.backends.mps.is_built()
    assert f.mps_available is torch.backends.mps.is_available()
    assert f.xpu_available is torch.xpu.is_available()
    assert f.cpu_capability == torch.backends.cpu.get_cpu_capability()
    assert f.cpu_capabilities == dict(torch.cpu.get_capabilities())
    assert f.mkl_available is torch.backends.mkl.is_available()
    assert f.mkldnn_available is torch.backends.mkldnn.is_available()
    assert f.openmp_available is torch.backends.openmp.is_available()
    # the versions torch states in its own build summary
    assert f.mkl_version in torch.__config__.show()
    assert f"v{f.mkldnn_version}" in torch.__config__.show()
    assert f"a.k.a. OpenMP {f.openmp_version})" in torch.__config__.parallel_info()
    assert f.num_threads == torch.get_num_threads()
    assert f.num_interop_threads == torch.get_num_interop_threads()
    assert f.float32_matmul_precision == torch.get_float32_matmul_precision()
    assert f.deterministic_algorithms is torch.are_deterministic_algorithms_enabled()
    assert f.deterministic_warn_only is torch.is_deterministic_algorithms_warn_only_enabled()


def _expected_settings(torch) -> dict:
    """Each setting read the way a user would, independently of the probe's code."""
    b = torch.backends
    return {
        "torch.backends.fp32_precision": b.fp32_precision,
        "torch.backends.cudnn.enabled": b.cudnn.enabled,
        "torch.backends.cudnn.benchmark": b.cudnn.benchmark,
        "torch.backends.cudnn.benchmark_limit": b.cudnn.benchmark_limit,
        "torch.backends.cudnn.deterministic": b.cudnn.deterministic,
        "torch.backends.cudnn.allow_tf32": b.cudnn.allow_tf32,
        "torch.backends.cudnn.fp32_precision": b.cudnn.fp32_precision,
        "torch.backends.cudnn.conv.fp32_precision": b.cudnn.conv.fp32_precision,
        "torch.backends.cudnn.rnn.fp32_precision": b.cudnn.rnn.fp32_precision,
        "torch.backends.cudnn.depthwise_kernel": b.cudnn.depthwise_kernel,
        "torch.backends.cuda.matmul.allow_tf32": b.cuda.matmul.allow_tf32,
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction": (
            b.cuda.matmul.allow_fp16_reduced_precision_reduction
        ),
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction": (
            b.cuda.matmul.allow_bf16_reduced_precision_reduction
        ),
        "torch.backends.cuda.matmul.allow_fp16_accumulation": b.cuda.matmul.allow_fp16_accumulation,
        "torch.backends.cuda.matmul.fp32_precision": b.cuda.matmul.fp32_precision,
        "torch.backends.mkldnn.enabled": b.mkldnn.enabled,
        "torch.backends.mkldnn.deterministic": b.mkldnn.deterministic,
        "torch.backends.mkldnn.allow_tf32": b.mkldnn.allow_tf32,
        "torch.backends.mkldnn.fp32_precision": b.mkldnn.fp32_precision,
        "torch.backends.mkldnn.matmul.fp32_precision": b.mkldnn.matmul.fp32_precision,
        "torch.backends.mkldnn.conv.fp32_precision": b.mkldnn.conv.fp32_precision,
        "torch.backends.mkldnn.rnn.fp32_precision": b.mkldnn.rnn.fp32_precision,
        "torch.backends.opt_einsum.enabled": b.opt_einsum.enabled,
        "torch.backends.opt_einsum.strategy": b.opt_einsum.strategy,
        "torch.backends.quantized.engine": b.quantized.engine,
        "torch.set_float32_matmul_precision": torch.get_float32_matmul_precision(),
        "torch.use_deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "torch.set_deterministic_debug_mode": torch.get_deterministic_debug_mode(),
        "torch.set_num_threads": torch.get_num_threads(),
        "torch.set_num_interop_threads": torch.get_num_interop_threads(),
        "torch.autograd.set_detect_anomaly": torch.is_anomaly_enabled(),
        "torch.backends.cuda.enable_flash_sdp": b.cuda.flash_sdp_enabled(),
        "torch.backends.cuda.enable_mem_efficient_sdp": b.cuda.mem_efficient_sdp_enabled(),
        "torch.backends.cuda.enable_math_sdp": b.cuda.math_sdp_enabled(),
        "torch.backends.cuda.enable_cudnn_sdp": b.cuda.cudnn_sdp_enabled(),
        "torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp": b.cuda.fp16_bf16_reduction_math_sdp_allowed(),
        "torch.backends.cuda.preferred_linalg_library": b.cuda.preferred_linalg_library().name.lower(),
        "torch.backends.cuda.preferred_blas_library": b.cuda.preferred_blas_library().name.lower(),
        "torch.backends.mha.set_fastpath_enabled": b.mha.get_fastpath_enabled(),
        "torch.backends.nnpack.set_flags": torch._C._get_nnpack_enabled(),
    }


@pytest.mark.torch
def test_every_setting_of_torch_2_13_equals_its_getter(child_facts):
    import torch

    expected = _expected_settings(torch)
    assert child_facts.settings == expected
    # the settings keys the registry uses, all present in 2.13
    assert set(expected) == {key for key, getter in default_getters()
                             if "env" not in getter and getter.get("probe", True)}
    # CPU build: benchmark_limit is a plain class attribute
    assert expected["torch.backends.cudnn.benchmark_limit"] is None
    assert expected["torch.backends.quantized.engine"] == "x86"


_MIXED_TF32 = """
import runpy, sys, torch
torch.backends.cuda.matmul.fp32_precision = "tf32"
runpy.run_path(sys.argv[1], run_name="__main__")
"""


@pytest.mark.torch
def test_mixed_legacy_and_new_tf32_api_makes_legacy_getters_unavailable():
    done = _sys.run([sys.executable, "-c", _MIXED_TF32, pytorch.CHILD_SCRIPT], timeout=120)
    f = pytorch.facts_from_completed(done, python=sys.executable)
    assert f.import_status == "ok"
    s = f.settings
    assert s["torch.backends.cuda.matmul.fp32_precision"] == "tf32"
    for key in ("torch.backends.cuda.matmul.allow_tf32", "torch.set_float32_matmul_precision"):
        assert isinstance(s[key], Unavailable), key
        assert "mix of the legacy and new APIs" in s[key].reason
    assert isinstance(f.float32_matmul_precision, Unavailable)
    assert "mix of the legacy and new APIs" in f.float32_matmul_precision.reason
    # the rest is still read
    assert s["torch.backends.cudnn.allow_tf32"] is True
    assert s["torch.backends.cudnn.conv.fp32_precision"] == "tf32"
    assert f.num_threads >= 1 and f.version == "2.13.0+cpu"


@pytest.mark.torch
def test_in_process_facts_use_the_same_reader(child_facts):
    import torch

    f = pytorch.facts_in_process()
    assert f.import_status == "ok"
    assert _this_interpreter(f.python_executable)
    assert f.version == child_facts.version
    assert f.settings == _expected_settings(torch)
    # no CUDA compiled in: asking is_available() touches no driver, so it is answered
    assert f.cuda_available is False and f.devices == []


def test_in_process_without_torch_imported_is_unavailable(monkeypatch):
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    with pytest.raises(ProbeUnavailable, match="not imported"):
        pytorch.facts_in_process()


@pytest.mark.torch
def test_collect_runs_the_torch_probe():
    facts = collect(ProbeContext(python=sys.executable, timeout=120), only=["torch"])
    assert facts.problems == []
    assert facts.torch.import_status == "ok"


# --------------------------------------------------------------------------------------
# failures, with fake torch packages in the child
# --------------------------------------------------------------------------------------


@pytest.fixture
def fake_torch(monkeypatch):
    def use(case: str) -> None:
        monkeypatch.setenv("PYTHONPATH", str(FAKES / case))
        monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")

    return use


@pytest.fixture(scope="session")
def python_without_torch(tmp_path_factory) -> str:
    """A real interpreter (a fresh venv) in which torch is not installed."""
    venv = tmp_path_factory.mktemp("no-torch") / "venv"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120
    )
    exe = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    assert exe.exists()
    return str(exe)


@pytest.mark.parametrize(
    ("case", "missing_library", "missing_symbol", "error_words"),
    [
        (
            "missing_cudnn",
            "libcudnn.so.9",
            None,
            "ImportError: libcudnn.so.9: cannot open shared object file",
        ),
        ("undefined_symbol", None, "ncclCommRegister", "undefined symbol: ncclCommRegister"),
        ("macos_library", "libc++.1.dylib", None, "Library not loaded: @rpath/libc++.1.dylib"),
        ("windows_dll", "c10.dll", None, "OSError: [WinError 126]"),
        (
            "missing_dependency",
            None,
            None,
            "No module named 'typing_extensions_that_is_not_installed'",
        ),
    ],
)
def test_import_errors_are_classified(
    fake_torch, case, missing_library, missing_symbol, error_words
):
    fake_torch(case)
    f = pytorch.probe(ProbeContext(python=sys.executable, timeout=60))
    assert f.import_status == "import-error"
    assert error_words in f.import_error
    assert "\n" not in f.import_error
    assert f.missing_library == missing_library
    assert f.missing_symbol == missing_symbol
    assert f.signal is None
    assert _this_interpreter(f.python_executable)
    _other_fields_unavailable(f, "torch failed to import: ")
    assert error_words in f.version.reason


@pytest.mark.parametrize(
    ("case", "sig", "words"),
    [
        ("segfault", "SIGSEGV", "segmentation fault"),
        (
            "sigill",
            "SIGILL",
            "illegal instruction: this torch build uses CPU instructions this CPU lacks",
        ),
    ],
)
def test_a_signal_during_import_is_a_crash(fake_torch, case, sig, words):
    fake_torch(case)
    f = pytorch.probe(ProbeContext(python=sys.executable, timeout=60))
    assert f.import_status == "crashed"
    assert f.signal == sig
    assert words in f.import_error
    assert "while importing torch" in f.import_error
    # faulthandler's dump says where
    assert f"{case}/torch/__init__.py" in f.import_error
    assert f.missing_library is None and f.missing_symbol is None
    _other_fields_unavailable(f, f"torch crashed: {sig}")


@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_a_hanging_import_times_out_and_says_where(fake_torch):
    fake_torch("hang")
    f = pytorch.probe(ProbeContext(python=sys.executable, timeout=4))
    assert f.import_status == "timeout"
    assert "timed out after 4 s" in f.import_error
    assert "while importing torch" in f.import_error
    assert "hang/torch/__init__.py" in f.import_error and "_wait_for_driver" in f.import_error
    assert f.signal is None
    _other_fields_unavailable(f, "timed out after 4 s")


def test_torch_not_installed(python_without_torch):
    f = pytorch.probe(ProbeContext(python=python_without_torch, timeout=60))
    assert f.import_status == "not-installed"
    assert f.import_error == "ModuleNotFoundError: No module named 'torch'"
    assert f.missing_library is None and f.signal is None
    assert f.python_executable == python_without_torch
    _other_fields_unavailable(f, f"torch is not installed for {python_without_torch}")


def test_a_leftover_torch_directory_is_an_import_error(python_without_torch, fake_torch):
    fake_torch("namespace")
    f = pytorch.probe(ProbeContext(python=python_without_torch, timeout=60))
    assert f.import_status == "import-error"
    assert "empty namespace package" in f.import_error
    assert str(FAKES / "namespace" / "torch") in f.import_error


def test_a_bare_torch_with_stdout_noise_still_answers(fake_torch):
    fake_torch("minimal")
    f = pytorch.probe(ProbeContext(python=sys.executable, timeout=60))
    assert f.import_status == "ok"
    assert f.version == "0.4.1"
    assert f.module_path == str(FAKES / "minimal" / "torch")
    assert isinstance(f.num_threads, Unavailable)
    assert "get_num_threads" in f.num_threads.reason
    assert isinstance(f.cpu_capabilities, Unavailable)
    assert f.settings == {}


def test_the_interpreter_is_named_however_its_path_was_spelled(fake_torch):
    """``--python`` given as a path with ``..`` in it (as ``sys.executable`` is when pytest is
    started through a relative path): the child names the same interpreter."""
    fake_torch("minimal")
    bin_dir = os.path.dirname(sys.executable)
    spelled = os.path.join(bin_dir, "..", os.path.basename(bin_dir), os.path.basename(sys.executable))
    f = pytorch.probe(ProbeContext(python=spelled, timeout=60))
    assert f.import_status == "ok" and f.version == "0.4.1"
    assert _this_interpreter(f.python_executable)


def test_a_missing_interpreter_makes_the_namespace_unavailable(tmp_path):
    missing = str(tmp_path / "no" / "python")
    with pytest.raises(ProbeUnavailable) as info:
        pytorch.probe(ProbeContext(python=missing, timeout=10))
    assert missing in info.value.reason
    facts = collect(ProbeContext(python=missing, timeout=10), only=["torch"])
    assert isinstance(facts.torch, Unavailable) and missing in facts.torch.reason
    assert facts.problems == []  # expected, not a probe crash


# --------------------------------------------------------------------------------------
# a CUDA build on GPUs: fake torch 2.5.1+cu124 (tests/data/fake_torch/cuda) on fake machines
# --------------------------------------------------------------------------------------

ARCH_2_5_CU124 = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]

# Rules whose condition reads what the torch child reports about CUDA: these are the ones the
# fake CUDA torch exercises (found from the rule text, so a new rule of the kind is included).
_TORCH_CUDA_FACTS = re.compile(
    r"\btorch\.(cuda_build|cuda_available|cuda_init_error|arch_list|cudnn_version|"
    r"cudnn_compiled_version|nccl_version|devices|device_count)\b"
)


def _torch_cuda_rules() -> set[str]:
    from torchdoctor.rules import load_rules

    return {r.id for r in load_rules() if _TORCH_CUDA_FACTS.search(r.when)}


@pytest.fixture
def cuda_machine(monkeypatch):
    """The fake CUDA torch on one of its machines (``fake_cuda_machine`` first on the path)."""

    def use(machine: str) -> TorchFacts:
        paths = [str(FAKES / machine), str(FAKES / "cuda")]
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join(paths))
        monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
        monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
        return pytorch.probe(ProbeContext(python=sys.executable, timeout=60))

    return use


def _nvml(*parts: tuple[str, int]):
    """A fake pynvml for a machine assembled from recorded nvidia-smi reports: the first
    ``n`` GPUs of each (driver and CUDA version from the first report)."""
    import copy

    from ..probes.fakenvml import FakeNvml, Report, _report_path

    roots = [Report.parse(_report_path(name)).root for name, _ in parts]
    root = copy.deepcopy(roots[0])
    for gpu in root.findall("gpu"):
        root.remove(gpu)
    for other, (_, n) in zip(roots, parts):
        for gpu in other.findall("gpu")[:n]:
            root.append(copy.deepcopy(gpu))
    return FakeNvml(Report(root))


def _check(monkeypatch, nvml) -> tuple[set[str], set[str], object]:
    """``check`` on this machine (every probe real, NVML and torch fake): the torch-CUDA
    rules that fired, and those skipped because a torch fact was unknown (a fact of this
    container, e.g. its system cuDNN, may be unknown: that is not the torch child's part)."""
    from torchdoctor.engine import evaluate
    from torchdoctor.rules import load_rules

    real = _sys.import_optional
    monkeypatch.setattr(_sys, "import_optional", lambda name: nvml if name == "pynvml" else real(name))
    facts = collect(ProbeContext(python=sys.executable, timeout=60))
    report = evaluate(load_rules(), facts, None, command="check")
    rules = _torch_cuda_rules()
    fired = {f.id for f in report.findings} & rules
    skipped = {s.id for s in report.skipped if s.needs.startswith("torch.")} & rules
    return fired, skipped, report


def test_cuda_build_on_two_gpus_is_read_end_to_end(cuda_machine):
    f = cuda_machine("cuda_a100_rtx4090")
    assert f.import_status == "ok" and f.import_error is None and f.signal is None
    assert f.version == "2.5.1+cu124"
    assert f.git_version == "a8d6afb511a69687bbb2b7e88a3cf67917e1697e"
    assert f.module_path == str(FAKES / "cuda" / "torch")
    assert f.cuda_build == "12.4" and f.hip_build is None
    # cuDNN: the loaded library's version and the one torch was built against (9.1.0 = 90100)
    assert f.cudnn_version == "9.1.0" and f.cudnn_compiled_version == "9.1.0"
    # NCCL: torch.cuda.nccl.version() answers a tuple, packed by torch._C as major<<32|...
    assert f.nccl_version == "2.21.5"
    assert f.arch_list == ARCH_2_5_CU124
    assert f.cuda_available is True and f.device_count == 2
    assert [
        (d.index, d.name, d.compute_capability, d.total_memory_bytes, d.multi_processor_count)
        for d in f.devices
    ] == [
        (0, "NVIDIA A100-SXM4-80GB", 8.0, 81920 * 2**20, 108),
        (1, "NVIDIA GeForce RTX 4090", 8.9, 24564 * 2**20, 128),
    ]
    assert f.cuda_init_error is None  # sm_89 runs sm_86 code: torch has nothing to warn
    # the build summary of the 2.5.1 wheel, read like collect_env
    assert (f.mkl_version, f.mkldnn_version, f.openmp_version) == ("2024.2", "3.5.3", "4.5")
    assert f.cpu_capability == "AVX512"
    assert isinstance(f.cpu_capabilities, Unavailable)  # torch.cpu.get_capabilities() is newer
    s = f.settings
    # a build with cuDNN has a real benchmark_limit (10); torch's defaults for the rest
    assert s["torch.backends.cudnn.benchmark_limit"] == 10
    assert s["torch.backends.cudnn.allow_tf32"] is True
    assert s["torch.backends.cuda.matmul.allow_tf32"] is False
    assert s["torch.backends.cuda.preferred_linalg_library"] == "default"
    assert s["torch.backends.cuda.preferred_blas_library"] == "cublas"
    assert s["torch.backends.cuda.enable_cudnn_sdp"] is True
    # names 2.5.1 does not have are not settings (the cuBLAS controller raises for them)
    for absent in (
        "torch.backends.cuda.matmul.fp32_precision",
        "torch.backends.cuda.matmul.allow_fp16_accumulation",
        "torch.backends.cudnn.fp32_precision",
        "torch.backends.fp32_precision",
    ):
        assert absent not in s


def test_cuda_build_on_two_gpus_checks_clean(cuda_machine, monkeypatch):
    cuda_machine("cuda_a100_rtx4090")  # PYTHONPATH for the torch child of collect()
    nvml = _nvml(("a100-sxm4-80gb-x4.txt", 1), ("rtx-4090-x8.txt", 1))
    fired, skipped, report = _check(monkeypatch, nvml)
    assert report.facts.torch.device_count == 2 and report.facts.gpu.count == 2
    # no torch-CUDA rule lacked a torch fact, and none finds a problem: sm_80 and
    # sm_89 both have code in the build, the runtime cuDNN is the one built against, the
    # driver (555) is new enough for CUDA 12.4, CUDA initialised without a warning
    assert skipped == set()
    assert fired == set()


def test_gpu_newer_than_the_build_is_found(cuda_machine, monkeypatch):
    """RTX 5090 (sm_120) with the cu124 wheel: CUDA works, torch warns, kernels would fail."""
    f = cuda_machine("cuda_rtx5090")
    assert f.cuda_available is True and f.device_count == 1
    assert f.devices[0].name == "NVIDIA GeForce RTX 5090" and f.devices[0].compute_capability == 12.0
    assert f.cuda_init_error.startswith(
        "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the "
        "current PyTorch installation.\nThe current PyTorch install supports CUDA capabilities "
        "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90."
    )
    fired, skipped, report = _check(monkeypatch, _nvml(("rtx-5090.txt", 1)))
    assert skipped == set()
    # the build lacks the GPU's code; cuda-init-failed stays quiet: CUDA initialised, torch
    # only warned (and gpu-newer-than-cuda-build is for a GPU newer than the CUDA *version*)
    assert fired == {"gpu-arch-not-in-build"}
    found = {x.id: x for x in report.findings}
    assert "sm_90" in found["gpu-arch-not-in-build"].message
    assert found["gpu-arch-not-in-build"].severity == "error"


def test_cudnn_older_than_the_build_is_read_and_found(cuda_machine, monkeypatch):
    """torch.backends.cudnn.version() raises on this mismatch; the child still reads both
    versions (getRuntimeVersion / getCompileVersion) and the rule judges them."""
    f = cuda_machine("cuda_cudnn_older")
    assert f.cudnn_version == "9.0.0" and f.cudnn_compiled_version == "9.1.0"
    assert f.device_count == 4 and f.nccl_version == "2.21.5"
    fired, skipped, report = _check(monkeypatch, _nvml(("a100-sxm4-80gb-x4.txt", 4)))
    assert skipped == set()
    assert fired == {"cudnn-runtime-differs-from-build"}
    message = next(x.message for x in report.findings if x.id == "cudnn-runtime-differs-from-build")
    assert "9.0.0" in message and "9.1.0" in message


# --------------------------------------------------------------------------------------
# classification of what the child left behind (the seam replayed)
# --------------------------------------------------------------------------------------


def _replay(monkeypatch, **kw) -> TorchFacts:
    fields = {"returncode": 0, "stdout": "", "stderr": ""}
    fields.update(kw)

    def fake_run(argv, timeout=10.0, env=None, input_text=None):
        assert argv[1] == pytorch.CHILD_SCRIPT
        return _sys.Completed(tuple(argv), **fields)

    monkeypatch.setattr(_sys, "run", fake_run)
    return pytorch.probe(ProbeContext(python="/opt/py/bin/python", timeout=30))


def test_garbage_output_is_an_error_with_the_last_stderr_line(monkeypatch):
    f = _replay(
        monkeypatch,
        returncode=1,
        stdout="this is not json\n{also not",
        stderr="torchdoctor-child: phase=import\nsome warning\nFatal: the interpreter gave up\n\n",
    )
    assert f.import_status == "error"
    assert f.import_error == "Fatal: the interpreter gave up"
    assert f.python_executable == "/opt/py/bin/python"
    _other_fields_unavailable(f, "Fatal: the interpreter gave up")


def test_no_output_at_all_is_an_error(monkeypatch):
    f = _replay(monkeypatch, returncode=3)
    assert f.import_status == "error"
    assert "status 3" in f.import_error


def test_facts_printed_before_a_crash_at_exit_are_kept(monkeypatch):
    payload = {
        "import_status": "ok",
        "version": "2.5.1+cu124",
        "cuda_build": "12.4",
        "python_executable": "/x/python",
    }
    f = _replay(monkeypatch, returncode=-11, stdout="banner\n" + json.dumps(payload) + "\n")
    assert f.import_status == "ok" and f.version == "2.5.1+cu124" and f.cuda_build == "12.4"
    assert f.python_executable == "/x/python"
    assert isinstance(f.num_threads, Unavailable)  # not sent: not recorded


def test_an_unexpected_value_costs_one_field(monkeypatch):
    payload = {
        "import_status": "ok",
        "version": "2.5.1",
        "num_threads": "many",
        "devices": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB", "compute_capability": 8.0}],
        "a_field_from_the_future": 1,
    }
    f = _replay(monkeypatch, stdout=json.dumps(payload))
    assert f.version == "2.5.1"
    assert isinstance(f.num_threads, Unavailable) and "num_threads" in f.num_threads.reason
    assert f.devices[0].compute_capability == 8.0


@pytest.mark.parametrize(
    ("returncode", "sig"),
    [
        (-4, "SIGILL"),
        (-11, "SIGSEGV"),
        (-7, "SIGBUS"),
        (0xC000001D, "SIGILL"),
        (0xC0000005, "SIGSEGV"),
        (139, "SIGSEGV"),
    ],
)
def test_crash_codes(monkeypatch, returncode, sig):
    f = _replay(monkeypatch, returncode=returncode, stderr="torchdoctor-child: phase=cuda\n")
    assert f.import_status == "crashed" and f.signal == sig
    assert "while initialising CUDA" in f.import_error


def test_timeout_from_the_seam(monkeypatch):
    f = _replay(
        monkeypatch, returncode=-9, timed_out=True, stderr="torchdoctor-child: phase=import\n"
    )
    assert f.import_status == "timeout" and f.signal is None
    assert "30 s" in f.import_error


# --------------------------------------------------------------------------------------
# reader details that need no torch
# --------------------------------------------------------------------------------------


def test_assigned_fake_flags_are_not_read_as_settings():
    """torch.backends modules accept any assignment; only names torch defines are settings."""
    import types

    from torchdoctor.probes import _torch_child as child

    class Controller:  # like cuda.matmul before 1.12: unknown names raise AssertionError
        def __getattr__(self, name):
            if name == "allow_tf32":
                return True
            raise AssertionError("Unknown attribute " + name)

    class PropModule(types.ModuleType):  # like torch.backends.cudnn
        enabled = True

        def __init__(self, m, name):
            super().__init__(name)
            self.m = m

        def __getattr__(self, attr):
            return self.m.__getattribute__(attr)

    original = types.ModuleType("torch.backends.cudnn")
    original.deterministic = False
    cudnn = PropModule(original, "torch.backends.cudnn")
    cudnn.fp32_precision = "tf32"  # a user's assignment of a name this "version" lacks
    cuda = types.ModuleType("torch.backends.cuda")
    cuda.matmul = Controller()
    backends = types.ModuleType("torch.backends")
    backends.cudnn, backends.cuda = cudnn, cuda
    torch = types.ModuleType("torch")
    torch.backends = backends

    settings = child.read_settings(torch)
    # the original module's globals are real settings too (opt_einsum keeps them there)
    assert settings == {
        "torch.backends.cudnn.enabled": True,
        "torch.backends.cudnn.deterministic": False,
        "torch.backends.cuda.matmul.allow_tf32": True,
    }


@pytest.mark.parametrize(
    ("value", "text"),
    [(8902, "8.9.2"), (7605, "7.6.5"), (90100, "9.1.0"), (91002, "9.10.2")],
)
def test_cudnn_version_integers(value, text):
    from torchdoctor.probes import _torch_child as child

    assert child._cudnn_int_version(value) == text


@pytest.mark.parametrize(
    ("message", "library", "symbol"),
    [
        (
            "libcudnn_cnn_infer.so.8: cannot open shared object file: No such file or directory",
            "libcudnn_cnn_infer.so.8",
            None,
        ),
        (
            (
                "/lib/x86_64-linux-gnu/libstdc++.so.6: version `GLIBCXX_3.4.30' not found "
                "(required by /venv/lib/python3.10/site-packages/torch/lib/libtorch_python.so)"
            ),
            None,
            "GLIBCXX_3.4.30",
        ),
        ("numpy.core.multiarray failed to import", None, None),
    ],
)
def test_loader_messages(message, library, symbol):
    from torchdoctor.probes import _torch_child as child

    fields = child.import_failure(ImportError(message))
    assert fields["import_status"] == "import-error"
    assert fields["missing_library"] == library
    assert fields["missing_symbol"] == symbol


def test_rocm_runtime_versions_are_read_like_collect_env():
    """collect_env takes the last word of the first config line naming "HIP Runtime" / "MIOpen";
    the lines below are torch.__config__.show() of a ROCm 6.2 build (pytorch/pytorch#150016)."""
    from torchdoctor.probes import _torch_child as child

    show = (
        "PyTorch built with:\n"
        "  - GCC 9.3\n"
        "  - HIP Runtime 6.2.41134\n"
        "  - MIOpen 3.2.0\n"
        "  - Magma 2.7.2\n"
    )
    assert child._config_version("HIP Runtime")(show) == "6.2.41134"
    assert child._config_version("MIOpen")(show) == "3.2.0"
    assert child._config_version("MIOpen")("PyTorch built with:\n  - GCC 9.3\n") is None
    # not a ROCm build: None without reading; unknown build: the text is read
    assert child._from_text(show, "torch.__config__.show()", child._config_version("MIOpen"), False) is None
    assert child._from_text(show, "torch.__config__.show()", child._config_version("MIOpen"), None) == "3.2.0"
