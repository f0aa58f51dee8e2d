"""Which copies of torch's native libraries a process loaded (torch.loaded_libraries).

Real libraries on this machine: the torch 2.13.0+cpu wheel ships ``torch/lib/libgomp.so.1``;
Debian's ``libgomp1`` is another build of the same soname. Forcing the system copy in through
LD_PRELOAD or LD_LIBRARY_PATH is exactly the shadowing users hit with a CUDA toolkit's
nvJitLink or cuDNN, with a library this machine has.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.facts import LoadedLibrary, TorchFacts, is_unavailable
from torchdoctor.probes import ProbeContext, _torch_child, pytorch

FAKES = Path(__file__).resolve().parent.parent / "data" / "fake_torch"
RULE = "bundled-library-shadowed"
LOADER_VARIABLES = ("LD_PRELOAD", "LD_LIBRARY_PATH")

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="/proc/self/maps is Linux only"
)


# --------------------------------------------------------------------------------------
# fixtures: the wheel's libgomp and another build of it
# --------------------------------------------------------------------------------------


def _wheel_libgomp() -> str:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        pytest.skip("torch is not installed")
    found = sorted(glob.glob(os.path.join(os.path.dirname(spec.origin), "lib", "libgomp*.so*")))
    if not found:
        pytest.skip("this torch wheel ships no libgomp")
    return found[0]


def _system_libgomp() -> str | None:
    """The loader cache's libgomp.so.1 (Debian's libgomp1), if installed."""
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    try:
        out = subprocess.run(
            [ldconfig, "-p"], capture_output=True, text=True, timeout=20, check=False
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        name, _, target = line.strip().partition(" => ")
        if name.startswith("libgomp.so.1 ") and os.path.isfile(target):
            return target
    return None


@pytest.fixture(scope="module")
def wheel_libgomp() -> str:
    return os.path.realpath(_wheel_libgomp())


@pytest.fixture(scope="module")
def other_libgomp(tmp_path_factory, wheel_libgomp) -> str:
    """A libgomp.so.1 that is not the wheel's build: the system's, or else the wheel's copy
    with bytes appended (still loadable: trailing bytes are not read by the loader)."""
    system = _system_libgomp()
    if system is not None and not _torch_child._same_build(system, wheel_libgomp):
        return system
    copy = tmp_path_factory.mktemp("syslib") / "libgomp.so.1"
    shutil.copyfile(wheel_libgomp, copy)
    with open(copy, "ab") as f:
        f.write(b"\0" * 4096)
    return str(copy)


@pytest.fixture()
def clean_loader_env(monkeypatch):
    for name in LOADER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _probe() -> TorchFacts:
    return pytorch.probe(ProbeContext(python=sys.executable, timeout=120))


def _libgomp_entries(facts: TorchFacts) -> list[LoadedLibrary]:
    assert not is_unavailable(facts.loaded_libraries), facts.loaded_libraries
    return [lib for lib in facts.loaded_libraries if lib.name == "libgomp"]


# --------------------------------------------------------------------------------------
# the real torch child
# --------------------------------------------------------------------------------------


@linux_only
@pytest.mark.torch
def test_child_records_the_wheels_own_libgomp(clean_loader_env, wheel_libgomp):
    f = _probe()
    assert f.import_status == "ok"
    lib_dir = os.path.dirname(wheel_libgomp)
    assert f.wheel_library_dirs == [lib_dir]  # no nvidia-* wheels in a CPU venv
    (gomp,) = _libgomp_entries(f)
    assert gomp.path == wheel_libgomp and gomp.source == "wheel"
    assert gomp.bundled_path == wheel_libgomp
    assert gomp.shadows_bundled is False and gomp.found_via is None
    names = {lib.name for lib in f.loaded_libraries}
    assert {"libtorch_cpu", "libc10"} <= names  # every library torch/lib ships and loaded
    assert all(lib.source == "wheel" for lib in f.loaded_libraries)


@linux_only
@pytest.mark.torch
def test_child_records_a_preloaded_libgomp_as_other(clean_loader_env, wheel_libgomp, other_libgomp):
    clean_loader_env.setenv("LD_PRELOAD", other_libgomp)
    f = _probe()
    assert f.import_status == "ok"
    # one libgomp.so.1 per process: the preloaded copy answers for the wheel's soname
    (gomp,) = _libgomp_entries(f)
    assert gomp.path == os.path.realpath(other_libgomp)
    assert gomp.source == "other" and gomp.found_via == "LD_PRELOAD"
    assert gomp.bundled_path == wheel_libgomp
    assert gomp.shadows_bundled is True


@linux_only
@pytest.mark.torch
def test_child_records_libgomp_found_through_ld_library_path(
    clean_loader_env, wheel_libgomp, other_libgomp
):
    # LD_LIBRARY_PATH is searched before the wheel's RUNPATH ($ORIGIN)
    clean_loader_env.setenv("LD_LIBRARY_PATH", os.path.dirname(other_libgomp))
    f = _probe()
    (gomp,) = _libgomp_entries(f)
    assert gomp.path == os.path.realpath(other_libgomp)
    assert gomp.source == "other" and gomp.found_via == "LD_LIBRARY_PATH"
    assert gomp.shadows_bundled is True and gomp.bundled_path == wheel_libgomp


@linux_only
@pytest.mark.torch
def test_an_identical_copy_elsewhere_is_not_shadowing(clean_loader_env, tmp_path, wheel_libgomp):
    copy = tmp_path / "libgomp.so.1"
    shutil.copyfile(wheel_libgomp, copy)
    clean_loader_env.setenv("LD_PRELOAD", str(copy))
    (gomp,) = _libgomp_entries(_probe())
    assert gomp.path == os.path.realpath(copy) and gomp.source == "other"
    assert gomp.bundled_path == wheel_libgomp
    assert gomp.shadows_bundled is False  # the same build: nothing differs


@linux_only
@pytest.mark.torch
def test_child_reports_what_a_failed_import_had_loaded(clean_loader_env, other_libgomp):
    """The fake torch fails like a wheel without cuDNN; the preloaded libgomp is recorded
    (a family recorded wherever it comes from), with no bundled copy (the fake ships none)."""
    clean_loader_env.setenv("LD_PRELOAD", other_libgomp)
    clean_loader_env.setenv("PYTHONPATH", str(FAKES / "missing_cudnn"))
    done = subprocess.run(
        [sys.executable, _torch_child.__file__],
        capture_output=True, text=True, timeout=120, check=False,
    )
    data = json.loads(done.stdout.strip().splitlines()[-1])
    assert data["import_status"] == "import-error"
    assert data["wheel_library_dirs"] == []  # the fake torch has no lib directory
    gomp = [lib for lib in data["loaded_libraries"] if lib["name"] == "libgomp"]
    assert gomp == [
        {
            "name": "libgomp",
            "path": os.path.realpath(other_libgomp),
            "source": "other",
            "bundled_path": None,
            "shadows_bundled": False,
            "found_via": "LD_PRELOAD",
        }
    ]


@linux_only
def test_a_failed_import_keeps_what_it_had_loaded_in_the_facts(clean_loader_env, other_libgomp):
    """Through the probe (parent side): the status says the import failed, and the libraries
    the failed import had loaded stay in the facts (the rule can explain the failure)."""
    from torchdoctor.probes import _sys

    _sys.reopen()
    clean_loader_env.setenv("LD_PRELOAD", other_libgomp)
    clean_loader_env.setenv("PYTHONPATH", str(FAKES / "missing_cudnn"))
    facts = pytorch.probe(ProbeContext(python=sys.executable, timeout=120))
    assert facts.import_status == "import-error"
    assert facts.wheel_library_dirs == []
    assert [lib.path for lib in facts.loaded_libraries if lib.name == "libgomp"] == [
        os.path.realpath(other_libgomp)
    ]
    assert is_unavailable(facts.version)  # nothing else is claimed of a torch that did not import


@linux_only
@pytest.mark.torch
def test_in_process_facts_read_the_callers_libraries(wheel_libgomp):
    import torch  # noqa: F401 - audit() reads a torch the caller imported

    f = pytorch.facts_in_process()
    paths = {lib.path for lib in f.loaded_libraries}
    gomp = [lib for lib in f.loaded_libraries if lib.name == "libgomp"]
    assert gomp and all(lib.bundled_path == wheel_libgomp for lib in gomp)
    assert os.path.realpath(torch._C.__file__) not in paths  # an extension module, not a library


# --------------------------------------------------------------------------------------
# a real `check`: the rule fires on the preloaded copy and only then
# --------------------------------------------------------------------------------------


def _check(env_extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in LOADER_VARIABLES}
    env.update(env_extra)
    done = subprocess.run(
        [sys.executable, "-m", "torchdoctor", "check", "--format", "json", "--fail-on", "never",
         "--no-redact"],
        capture_output=True, text=True, timeout=300, check=False, env=env,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@linux_only
@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_check_warns_when_a_preloaded_libgomp_shadows_the_wheels(wheel_libgomp, other_libgomp):
    report = _check({"LD_PRELOAD": other_libgomp})
    (finding,) = [f for f in report["findings"] if f["id"] == RULE]
    assert finding["severity"] == "warning"
    assert os.path.realpath(other_libgomp) in finding["message"]
    assert wheel_libgomp in finding["message"]
    assert "LD_PRELOAD" in finding["message"]

    report = _check({})
    assert RULE not in {f["id"] for f in report["findings"]}
    assert RULE not in {s["id"] for s in report["skipped"]}  # judged, not skipped
    libs = report["facts"]["torch"]["loaded_libraries"]
    assert {"name": "libgomp", "path": wheel_libgomp, "source": "wheel",
            "bundled_path": wheel_libgomp, "shadows_bundled": False,
            "found_via": None} in libs


# --------------------------------------------------------------------------------------
# mechanisms
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("filename", "family"),
    [
        ("libcudnn_ops.so.9", "libcudnn_ops"),
        ("libcudnn.so.8.0.3", "libcudnn"),
        ("libnvJitLink.so.12.1.105", "libnvJitLink"),
        ("libcublasLt.so.12", "libcublasLt"),
        ("libnvrtc-builtins.so.12.4", "libnvrtc-builtins"),
        ("libgomp-a34b3233.so.1", "libgomp"),
        ("libgomp-a34b3233.so.1.0.0", "libgomp"),
        ("libtorch_cpu.so", "libtorch_cpu"),
        ("libgomp.so.1", "libgomp"),
        ("libsonic.so", "libsonic"),
        ("libfoo.sonic", None),
        ("libgomp.a", None),
        (".so", None),
    ],
)
def test_library_family(filename, family):
    assert _torch_child.library_family(filename) == family


def test_same_soname_is_the_wheel_file_name_or_a_longer_version_of_it():
    same = _torch_child._same_soname
    assert same("/usr/lib/libgomp.so.1.0.0", "/w/torch/lib/libgomp.so.1")
    assert same("/opt/cuda/lib64/libnvJitLink.so.12", "/w/nvidia/nvjitlink/lib/libnvJitLink.so.12")
    assert not same("/usr/lib/libgomp.so.10", "/w/torch/lib/libgomp.so.1")
    assert not same("/s/scikit_learn.libs/libgomp-a34b3233.so.1.0.0", "/w/torch/lib/libgomp.so.1")
    assert not same("/usr/lib/libcudnn.so.8.9.7", "/w/nvidia/cudnn/lib/libcudnn.so.9")


def test_off_linux_the_libraries_are_unavailable(monkeypatch):
    monkeypatch.setattr(_torch_child.sys, "platform", "darwin")
    out = _torch_child.read_loaded_libraries(None)
    assert set(out) == {"wheel_library_dirs", "loaded_libraries"}
    assert all("only Linux" in v["unavailable"] for v in out.values())


@linux_only
@pytest.mark.torch
def test_an_unreadable_maps_file_costs_only_the_library_list(monkeypatch, tmp_path, wheel_libgomp):
    import torch

    monkeypatch.setattr(_torch_child, "MAPS_PATH", str(tmp_path / "no-maps"))
    out = _torch_child.read_loaded_libraries(torch)
    assert out["wheel_library_dirs"] == [os.path.dirname(wheel_libgomp)]
    assert "reading" in out["loaded_libraries"]["unavailable"]
    f = TorchFacts.model_validate(out)
    assert is_unavailable(f.loaded_libraries) and f.wheel_library_dirs == out["wheel_library_dirs"]


@linux_only
def test_maps_read_is_bounded(monkeypatch, tmp_path):
    maps = tmp_path / "maps"
    line = "7f00-7f01 r--p 00000000 fe:00 1 /opt/x/libgomp.so.1.0.0\n"
    maps.write_text(line + "7f01-7f02 r--p 00000000 fe:00 2 /opt/y/libcudnn.so.9\n" * 10_000)
    monkeypatch.setattr(_torch_child, "MAPS_PATH", str(maps))
    monkeypatch.setattr(_torch_child, "MAPS_LIMIT", len(line))
    assert _torch_child._mapped_files() == ["/opt/x/libgomp.so.1.0.0"]


def test_nvidia_wheel_dirs_count_only_for_a_torch_that_requires_them(monkeypatch, tmp_path):
    site = tmp_path / "site-packages"
    (site / "nvidia" / "cudnn" / "lib").mkdir(parents=True)
    (site / "nvidia" / "nvjitlink" / "lib").mkdir(parents=True)
    (site / "nvidia" / "nvjitlink" / "lib" / "libnvJitLink.so.12").write_bytes(b"")
    monkeypatch.setattr(_torch_child.sys, "path", [str(site)])
    dirs = _torch_child._nvidia_lib_dirs()
    assert dirs == [
        os.path.realpath(site / "nvidia" / "cudnn" / "lib"),
        os.path.realpath(site / "nvidia" / "nvjitlink" / "lib"),
    ]
    assert _torch_child._requires_nvidia_wheels(str(site)) is False  # no torch metadata
    info = site / "torch-2.5.1.dist-info"
    info.mkdir()
    # the Requires-Dist lines of the PyPI torch 2.5.1 (CUDA 12.4) wheel
    info.joinpath("METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1\n"
        "Requires-Dist: filelock\n"
        'Requires-Dist: nvidia-nvjitlink-cu12==12.4.127; platform_system == "Linux" and '
        'platform_machine == "x86_64"\n\n'
        "Requires-Dist: nvidia-not-a-header\n"
    )
    assert _torch_child._requires_nvidia_wheels(str(site)) is True
    info.joinpath("METADATA").write_text(
        "Metadata-Version: 2.1\nName: torch\n\nRequires-Dist: nvidia-only-in-the-body\n"
    )
    assert _torch_child._requires_nvidia_wheels(str(site)) is False
