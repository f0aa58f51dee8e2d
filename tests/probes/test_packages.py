"""packages probe: the target interpreter's distributions and torch, in-process or by child."""

from __future__ import annotations

import glob
import importlib.metadata
import importlib.util
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor import tables
from torchdoctor.facts import PackagesFacts, Unavailable
from torchdoctor.probes import ProbeContext, ProbeUnavailable, _interp_child, _sys, packages

posix_only = pytest.mark.skipif(os.name != "posix", reason="fake interpreters are shell scripts")


def _python(version: str):
    """A working interpreter of that version on this machine, or None."""
    candidates = sorted(
        glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}"))
    )
    candidates.append(shutil.which(f"python{version}"))
    for candidate in candidates:
        if not candidate:
            continue
        try:
            done = subprocess.run(
                [candidate, "-c", "import sys"], check=False, capture_output=True, timeout=30
            )
        except OSError:
            continue
        if done.returncode == 0:  # a pyenv shim without that version exits 127
            return candidate
    return None


def _python_without_torch():
    """A real interpreter on this machine that has no torch (a system Python), or None."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3", shutil.which("python3")):
        if not candidate or not os.path.exists(candidate):
            continue
        if os.path.realpath(candidate) == os.path.realpath(sys.executable):
            continue
        done = subprocess.run(
            [candidate, "-c", "import importlib.util as u; print(u.find_spec('torch') is None)"],
            check=False,
            capture_output=True,
            text=True,
            timeout=30,
        )
        if done.stdout.strip() == "True":
            return candidate
    return None


def _fake_python(tmp_path: Path, body: str) -> str:
    script = tmp_path / "python"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


# --------------------------------------------------------------------------------------
# the data file
# --------------------------------------------------------------------------------------


def test_interest_covers_the_torch_stack():
    interest = packages.load_interest()
    for name in (
        "torch",
        "torchvision",
        "torchaudio",
        "triton",
        "numpy",
        "pynvml",
        "accelerate",
        "lightning",
        "pytorch-lightning",
        "transformers",
        "deepspeed",
        "xformers",
        "flash-attn",
        "intel-extension-for-pytorch",
    ):
        assert interest.matches(name), name
    for name in (
        "nvidia-cudnn-cu12",
        "nvidia_cublas_cu12",
        "nvidia-nccl-cu12",
        "nvidia-ml-py",
        "pytorch-triton-rocm",
        "onnxruntime-gpu",
        "torch-tensorrt",
        "jaxlib",
    ):
        assert interest.matches(name), name
    for name in ("requests", "rich", "pydantic", "click"):
        assert not interest.matches(name), name


def test_every_interest_entry_has_reason_and_source():
    data = tables.load("packages_of_interest")
    for key, field in (("prefixes", "prefix"), ("names", "name")):
        for entry in data[key]:
            assert entry[field] and entry["reason"] and entry["source"], entry


# --------------------------------------------------------------------------------------
# provides_module on real installed metadata
# --------------------------------------------------------------------------------------


@pytest.mark.torch
def test_provides_module_from_torch_top_level_and_record():
    dist = importlib.metadata.distribution("torch")
    top_level = dist.read_text("top_level.txt")
    record = dist.read_text("RECORD")
    assert _interp_child.provides_module(top_level, None, "torch")
    assert _interp_child.provides_module(None, record, "torch")  # RECORD has torch/__init__.py
    assert not _interp_child.provides_module(None, record, "torchvision")
    assert not _interp_child.provides_module(top_level, None, "torchvision")


def test_provides_single_file_module_from_record():
    # nvidia-ml-py installs the single module pynvml.py, and no torch
    dist = importlib.metadata.distribution("nvidia-ml-py")
    record = dist.read_text("RECORD")
    assert _interp_child.provides_module(None, record, "pynvml")
    assert not _interp_child.provides_module(None, record, "torch")
    assert not _interp_child.provides_module(None, None, "torch")


@pytest.mark.parametrize(
    "raw, normalised",
    [
        ("nvidia_cudnn_cu12", "nvidia-cudnn-cu12"),
        ("Flash_Attn", "flash-attn"),
        ("torch", "torch"),
        ("pytorch.triton", "pytorch-triton"),
        ("intel-extension-for-pytorch", "intel-extension-for-pytorch"),
    ],
)
def test_normalize_name(raw, normalised):
    assert _interp_child.normalize_name(raw) == normalised


# --------------------------------------------------------------------------------------
# in-process: the running interpreter
# --------------------------------------------------------------------------------------


@pytest.mark.torch
def test_in_process_finds_the_installed_torch(monkeypatch):
    def no_child(*args, **kwargs):
        raise AssertionError("the running interpreter is read in-process, without a child")

    monkeypatch.setattr(_sys, "run", no_child)
    facts = packages.probe(ProbeContext())

    version = importlib.metadata.version("torch")
    assert facts.versions["torch"] == version
    assert facts.torch_providers == ["torch"]
    origin = importlib.util.find_spec("torch").origin
    assert facts.torch_module_path == origin
    assert facts.torch_module_path.endswith(os.path.join("torch", "__init__.py"))
    torch_dist = [d for d in facts.distributions if d.name == "torch"]
    assert len(torch_dist) == 1
    assert torch_dist[0].source == "pip"
    assert torch_dist[0].provides_torch is True
    assert torch_dist[0].version == version
    assert torch_dist[0].location == os.path.dirname(os.path.dirname(origin))
    assert facts.versions["nvidia-ml-py"] == importlib.metadata.version("nvidia-ml-py")
    # only relevant distributions are listed
    assert "pydantic" not in facts.versions and "rich" not in facts.versions
    PackagesFacts.model_validate_json(facts.model_dump_json())


@pytest.mark.torch
def test_probe_does_not_import_torch():
    code = (
        "import sys; from torchdoctor.probes import ProbeContext, packages; "
        "f = packages.probe(ProbeContext()); "
        "print(f.torch_providers, 'torch' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=str(Path(__file__).resolve().parents[2]),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["['torch']", "False"]


# --------------------------------------------------------------------------------------
# child: another interpreter
# --------------------------------------------------------------------------------------


@pytest.mark.torch
def test_child_with_the_same_interpreter_agrees_with_in_process():
    interest = packages.load_interest()
    request = {"packages": interest.request(), "module": "torch"}
    in_process = packages.facts_from_report(_interp_child.collect(request))
    by_child = packages.facts_from_report(packages.run_child(sys.executable, request, timeout=60))
    assert by_child == in_process


def test_base_interpreter_of_a_venv_is_not_the_running_environment():
    if sys.prefix == sys.base_prefix or not os.path.islink(sys.executable):
        pytest.skip("not running from a venv whose python is a symlink")
    base = os.path.realpath(sys.executable)
    ctx = ProbeContext(python=base)
    assert not ctx.is_self  # the same file once resolved, but another environment
    assert not packages.is_running_interpreter(ctx)
    assert packages.is_running_interpreter(ProbeContext())


def test_interpreter_without_torch():
    python = _python_without_torch()
    if python is None:
        pytest.skip("no interpreter without torch on this machine")
    facts = packages.probe(ProbeContext(python=python))
    assert facts.torch_providers == []
    assert facts.torch_module_path is None
    assert "torch" not in facts.versions
    assert all(d.name != "torch" for d in facts.distributions)


@pytest.mark.parametrize("version", ["3.8", "3.9"])
def test_oldest_supported_interpreters_answer(version):
    python = _python(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine")
    facts = packages.probe(ProbeContext(python=python))
    assert isinstance(facts.versions, dict)
    assert isinstance(facts.torch_providers, list)


@pytest.mark.parametrize("version", ["3.6", "3.7"])
def test_interpreter_without_importlib_metadata_reports_why(version):
    python = _python(version)
    if python is None:
        pytest.skip(f"no Python {version} on this machine")
    facts = packages.probe(ProbeContext(python=python))
    assert isinstance(facts.versions, Unavailable)
    assert "importlib.metadata" in facts.versions.reason
    assert isinstance(facts.torch_providers, Unavailable)
    assert not isinstance(facts.torch_module_path, Unavailable)  # find_spec works there


def test_python2_is_reported_not_crashed():
    python = _python("2.7")
    if python is None:
        pytest.skip("no Python 2.7 on this machine")
    facts = packages.probe(ProbeContext(python=python))
    assert isinstance(facts.versions, Unavailable)
    assert "Python 2.7" in facts.versions.reason


def _write_dist(site: Path, dirname: str, name: str, version: str, top_level=None, record=None):
    info = site / dirname
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if top_level is not None:
        (info / "top_level.txt").write_text(top_level)
    if record is not None:
        (info / "RECORD").write_text(record)


def test_several_torch_providers_are_a_fact(tmp_path, monkeypatch):
    """Two distributions install `torch` (an old torch-nightly and torch) in two directories."""
    python = _python_without_torch()
    if python is None:
        pytest.skip("no interpreter without torch on this machine")
    first, second = tmp_path / "site-a", tmp_path / "site-b"
    (first / "torch").mkdir(parents=True)
    (first / "torch" / "__init__.py").write_text("")
    _write_dist(
        first,
        "torch_nightly-1.0.0.dev20190315.dist-info",
        "torch_nightly",
        "1.0.0.dev20190315",
        record="torch/__init__.py,,\ntorch_nightly-1.0.0.dev20190315.dist-info/METADATA,,\n",
    )
    _write_dist(first, "torch-2.1.0.dist-info", "torch", "2.1.0", top_level="torch\ntorchgen\n")
    _write_dist(
        first, "~orch-2.0.0.dist-info", "torch", "2.0.0", top_level="torch\n"
    )  # pip leftover
    _write_dist(
        second,
        "torch-2.13.0.dist-info",
        "torch",
        "2.13.0",
        top_level="functorch\ntorch\ntorchgen\n",
    )
    _write_dist(
        second,
        "nvidia_cudnn_cu12-9.10.2.21.dist-info",
        "nvidia-cudnn-cu12",
        "9.10.2.21",
        top_level="nvidia\n",
    )
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(first), str(second)]))

    facts = packages.probe(ProbeContext(python=python))

    assert facts.torch_providers == ["torch-nightly", "torch"] or facts.torch_providers == [
        "torch",
        "torch-nightly",
    ]
    assert facts.versions["torch"] == "2.1.0"  # the first directory on sys.path wins
    assert facts.versions["nvidia-cudnn-cu12"] == "9.10.2.21"
    torches = [(d.version, d.location) for d in facts.distributions if d.name == "torch"]
    assert sorted(torches) == [("2.1.0", str(first)), ("2.13.0", str(second))]  # no "~orch"
    assert facts.torch_module_path == str(first / "torch" / "__init__.py")


def test_leftover_torch_directory_is_a_namespace_path(tmp_path, monkeypatch):
    """A torch/ directory without __init__.py (left by a broken uninstall) still imports."""
    python = _python_without_torch()
    if python is None:
        pytest.skip("no interpreter without torch on this machine")
    (tmp_path / "torch" / "lib").mkdir(parents=True)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    facts = packages.probe(ProbeContext(python=python))
    assert facts.torch_module_path == str(tmp_path / "torch")
    assert facts.torch_providers == []


# --------------------------------------------------------------------------------------
# failure paths
# --------------------------------------------------------------------------------------


def test_missing_interpreter(tmp_path):
    with pytest.raises(ProbeUnavailable, match="cannot run the interpreter.*No such file"):
        packages.probe(ProbeContext(python=str(tmp_path / "no-such-python")))


@posix_only
def test_hanging_interpreter_times_out(tmp_path):
    python = _fake_python(tmp_path, "sleep 30")
    with pytest.raises(ProbeUnavailable, match="did not answer within 1 s"):
        packages.probe(ProbeContext(python=python, timeout=1))


@posix_only
def test_garbage_output(tmp_path):
    python = _fake_python(tmp_path, "echo 'Hello from a wrapper script'")
    with pytest.raises(ProbeUnavailable, match="no usable answer: unexpected output 'Hello"):
        packages.probe(ProbeContext(python=python))


@posix_only
def test_empty_output(tmp_path):
    python = _fake_python(tmp_path, "exit 0")
    with pytest.raises(ProbeUnavailable, match="no usable answer: empty output"):
        packages.probe(ProbeContext(python=python))


@posix_only
def test_crashing_interpreter(tmp_path):
    python = _fake_python(tmp_path, "echo 'Fatal Python error: init_fs_encoding' >&2; exit 1")
    with pytest.raises(
        ProbeUnavailable, match="exited with status 1: Fatal Python error: init_fs_encoding"
    ):
        packages.probe(ProbeContext(python=python))


@posix_only
def test_interpreter_killed_by_a_signal(tmp_path):
    python = _fake_python(tmp_path, "kill -SEGV $$")
    with pytest.raises(ProbeUnavailable, match="killed by SIGSEGV"):
        packages.probe(ProbeContext(python=python))


@posix_only
@pytest.mark.parametrize(
    "answer, message",
    [
        ("{not json", "malformed JSON"),
        ('{"protocol": 99}', "unexpected report format"),
        (
            '{"protocol": 1, "error": "ImportError: No module named util"}',
            "failed to report: ImportError",
        ),
        (
            '{"protocol": 1, "python": {}, "packages": {"distributions": "x"}, "module": {}}',
            "malformed answer",
        ),
        (
            '{"protocol": 1, "python": {}, "packages": {"distributions": [{"name": 3}]}, "module": {}}',
            "malformed answer",
        ),
        (
            '{"protocol": 1, "python": {}, "packages": {"distributions": [{"name": "torch", "version": []}]}, "module": {}}',
            "malformed answer",
        ),
        ('{"protocol": 1, "python": {}}', "malformed answer"),
    ],
)
def test_malformed_answers(tmp_path, answer, message):
    python = _fake_python(tmp_path, f"echo '{_interp_child.MARKER} {answer}'")
    with pytest.raises(ProbeUnavailable, match=message):
        packages.probe(ProbeContext(python=python))


@posix_only
def test_noise_before_the_answer_is_ignored(tmp_path):
    """A wrapper (or sitecustomize) that prints before the real interpreter runs."""
    python = _fake_python(
        tmp_path, f"echo 'activating environment...'\nexec '{sys.executable}' \"$@\""
    )
    ctx = ProbeContext(python=python)
    assert not packages.is_running_interpreter(ctx)
    facts = packages.probe(ctx)
    assert facts == packages.probe(ProbeContext())


def test_module_lookup_error_is_unavailable_not_fatal():
    report = {
        "protocol": 1,
        "packages": {"distributions": [], "error": None},
        "module": {"path": None, "error": "ValueError: torch.__spec__ is None"},
    }
    facts = packages.facts_from_report(report)
    assert isinstance(facts.torch_module_path, Unavailable)
    assert "torch.__spec__ is None" in facts.torch_module_path.reason
    assert facts.torch_providers == []


def test_child_output_parser():
    line = _interp_child.MARKER + " " + json.dumps({"protocol": 1, "python": {"version": "3.11.7"}})
    assert packages.parse_child_output("noise\n" + line + "\n")["python"]["version"] == "3.11.7"
    with pytest.raises(ValueError, match="empty output"):
        packages.parse_child_output("")
