"""The per-release tables (torch_releases.yaml, wheel_archs.yaml, python_wheels.yaml) against the published
wheels themselves.

tests/data/releases/torch-<version>.json were read from PyPI on 2026-12-01: the release's file list and upload
day (JSON API), and from the cp312 wheels (HTTP range requests on the zip, nothing installed) the METADATA
fields, torch/version.py, and the CUDA_ARCH_FLAGS string in torch/lib/libtorch_python.so that
torch.cuda.get_arch_list() splits."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from torchdoctor import tables

RECORDED = {
    path.stem.split("-", 1)[1]: json.loads(path.read_text(encoding="utf-8"))
    for path in sorted((Path(__file__).parent / "data" / "releases").glob("torch-*.json"))
}
PLATFORMS = {"manylinux_2_28_x86_64": "linux_x86_64", "manylinux_2_28_aarch64": "linux_aarch64"}


def _label(wheel: dict) -> str:
    line = next(x for x in wheel["torch/version.py"] if x.startswith("__version__"))
    return re.search(r"'([^']+)'", line).group(1)


def _pythons(record: dict) -> set:
    """CPython minors with a wheel on PyPI ("3.11", "3.14t")."""
    tags = {re.search(r"-cp(\d)(\d+)(t?)-", name).groups() for name in record["files"]}
    return {f"{major}.{minor}{t}" for major, minor, t in tags}


NEW = {v: r for v, r in RECORDED.items() if Version(v) >= Version("2.13")}
"""The releases this file checks in detail (every release is checked by test_release_generator.py)."""


def test_the_recorded_releases_are_there():
    """Every final release on PyPI from 1.6.0 (scripts/gen_release_tables.py fetch)."""
    assert set(NEW) == {"2.13.0", "2.14.0", "2.14.1", "2.15.0"}
    assert len(RECORDED) == 43 and min(RECORDED, key=Version) == "1.6.0"


def test_the_newest_release_is_the_newest_on_pypi():
    assert tables.latest_release() == "2.15"
    assert max(Version(v) for v in RECORDED).release[:2] == (2, 15)


@pytest.mark.parametrize("version", sorted(NEW))
def test_release_rows_match_the_wheels(version):
    record = RECORDED[version]
    linux = record["wheels"]["manylinux_2_28_x86_64"]
    local = _label(linux).split("+")[1]
    release = tables._release(version)
    assert release.get("status") != "announced"
    # the PyPI wheel is the default variant, published, with the cuDNN it pins
    assert release["default_cuda"] == local
    assert local in tables.release_variants(version)
    cudnn = next(x for x in linux["METADATA"] if "nvidia-cudnn-" in x)
    assert release["cudnn"][local] == re.search(r"==([\d.]+)", cudnn).group(1)
    # Windows wheels on PyPI are the CPU build
    assert _label(record["wheels"]["win_amd64"]) == f"{version}+cpu"
    # every CPython minor with a wheel is supported; the one below Requires-Python is not
    for python in _pythons(record):
        assert tables.python_supported(version, python.rstrip("t")) is True, python
    floor = Version(record["requires_python"][0].lstrip(">="))
    assert tables.python_supported(version, f"{floor.major}.{floor.minor - 1}") is False
    assert tables.python_supported(version, f"{floor.major}.{floor.minor}") is True


@pytest.mark.parametrize("version", sorted(NEW))
@pytest.mark.parametrize("platform", sorted(PLATFORMS))
def test_arch_lists_of_the_default_variant(version, platform):
    """Measured lists of the PyPI wheels: no compute_120 in 2.12-2.15 (RELEASE.md's 12.0+PTX is not what
    the PyPI wheels carry; issue 19)."""
    wheel = RECORDED[version]["wheels"][platform]
    measured = wheel["libtorch_python.so CUDA_ARCH_FLAGS"]
    assert len(measured) == 1
    recorded = tables.wheel_archs(_label(wheel), None, PLATFORMS[platform])
    assert recorded == measured[0].split()


def test_2_15_dropped_cuda_12_6_and_with_it_pascal():
    """pytorch#190385: no cu126 build in 2.15, so pre-Turing GPUs stay on 2.14's cu126 wheels."""
    assert tables.release_variants("2.15.0") == ["cu130", "cu132"]
    assert tables.wheel_archs("2.15.0", "12.6") is None
    assert tables.wheels_supporting(6.1)[0] == "2.14+cu126"  # GTX 1080
    assert tables.wheels_supporting(7.0, "2.15.0") == []  # V100
    assert tables.wheels_supporting(8.6)[:2] == ["2.15+cu132", "2.15+cu130"]
    assert tables.wheel_for(12.0, "595.45.04")["build"] == "2.15+cu132"


def test_python_3_10_ends_with_2_14_and_3_15_starts_with_2_15():
    assert tables.python_supported("2.14.1", "3.10.19") is True
    assert tables.python_supported("2.15.0", "3.10.19") is False  # Requires-Python >=3.11 (pytorch#197242)
    assert tables.python_supported(tables.latest_release(), "3.15.0") is True
    first = tables.python_predates_torch_wheels("3.15.0", "Linux", "x86_64")
    assert (first["torch"], first["torch_released"]) == ("2.15.0", RECORDED["2.15.0"]["uploaded"][0])
    assert not any("-cp315-" in name for v in ("2.13.0", "2.14.0", "2.14.1") for name in RECORDED[v]["files"])


def test_compile_accepts_3_15_from_2_15():
    """torch/__init__.py of 2.14.1 refuses >= (3, 15) (line 3181), of 2.15.0 >= (3, 16) (line 3236)."""
    assert tables.compile_python_support("2.14.1", "3.15.0")["supported"] is False
    s = tables.compile_python_support("2.15.0+cu132", "3.15.0")
    assert (s["supported"], s["first_torch"], s["max_python"]) == (True, "2.15", "3.15")
    s = tables.compile_python_support("2.15.0+cu132", "3.16.0")
    assert s["error"] == "torch.compile is not supported on Python 3.16+"


def test_domain_libraries_for_the_new_releases():
    # torchvision 0.29.0 pins torch==2.14.0; 0.29.1 and 0.29.2 (released with 2.15.0) need torch>=2.14
    assert tables.torchvision_for("2.14.1") == tables.torchvision_for("2.15.0") == "0.29"
    assert tables.torchaudio_for("2.15.0") == "2.11"


def test_rows_that_rest_on_no_wheel_say_so():
    """Entries not read from a published file carry verified: false and a note."""
    data = tables.load("wheel_archs")["builds"]
    for block in ("linux_x86_64", "linux_aarch64"):
        for entry in data[block]["entries"]:
            if SpecifierSet(str(entry["torch"])).contains("2.15.0") and entry["cuda"] == "13.0":
                assert entry.get("verified") is False and entry.get("note"), (block, entry)
    row = next(r for r in tables.load("torch_releases")["releases"] if r["version"] == "2.15")
    assert row.get("verified") is False and "cu130" in row["note"]
    python = next(r for r in tables.load("python_wheels")["pythons"] if r["python"] == "3.15")
    assert python.get("verified") is False and python.get("note")
