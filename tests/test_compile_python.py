"""torch.compile's Python and Windows support (torch_releases.yaml `compile`) and the CPU inference
stacks that make a CPU-only torch on a GPU machine deliberate (cpu_stacks.yaml)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from torchdoctor import tables
from torchdoctor.engine import MapView
from torchdoctor.probes.packages import load_interest

# (Python minor, last release that refuses it, first release that accepts it, the text the refusing
# release raises). Read in the released wheels' torch/_dynamo/eval_frame.py and torch/__init__.py;
# users quote the same texts in pytorch#104918, kyutai-labs/moshi#156, pytorch#144048, bitsandbytes#1813.
FIRST = [
    ("3.11", "2.0.1", "2.1.0", "Python 3.11+ not yet supported for torch.compile"),
    ("3.12", "2.3.1+cu121", "2.4.0", "Dynamo is not supported on Python 3.12+"),
    ("3.13", "2.5.1+cu124", "2.6.0", "Dynamo is not supported on Python 3.13+"),
    ("3.14", "2.9.1+cu128", "2.10.0", "torch.compile is not supported on Python 3.14+"),
]


@pytest.mark.parametrize("python, refused_by, first, error", FIRST)
def test_first_release_whose_compile_accepts_each_python(python, refused_by, first, error):
    before = tables.compile_python_support(refused_by, f"{python}.1")
    assert before == {"supported": False, "python": python, "first_torch": first.rsplit(".", 1)[0],
                      "max_python": f"3.{int(python.split('.')[1]) - 1}", "error": error}
    after = tables.compile_python_support(first, f"{python}.1")
    assert after["supported"] is True and after["error"] is None


def test_python_315_from_215():
    # 2.14.1's torch/__init__.py:3181 refuses >= (3, 15); 2.15.0's __init__.py:3236 refuses >= (3, 16)
    s = tables.compile_python_support("2.13.0+cpu", "3.15.0")
    assert (s["supported"], s["first_torch"], s["max_python"]) == (False, "2.15", "3.14")
    assert s["error"] == "torch.compile is not supported on Python 3.15+"
    assert tables.compile_python_support("2.15.0+cu132", "3.15.0")["supported"] is True
    s = tables.compile_python_support("2.15.0+cu132", "3.16.0")
    assert (s["supported"], s["first_torch"], s["error"]) == (False, None, "torch.compile is not supported on Python 3.16+")


@pytest.mark.parametrize(
    "torch_version, python",
    [
        ("1.13.1", "3.11"),  # no torch.compile at all (compile-needs-torch-2)
        ("2.4.0", "3.7"),  # a minor the table does not know
        ("2.16.0.dev20261101", "3.16"),  # newer than the table was checked through
        ("garbage", "3.12"),
        ("2.4.0", None),
    ],
)
def test_not_judged(torch_version, python):
    assert tables.compile_python_support(torch_version, python) is None


def test_newer_release_still_judged_for_a_minor_an_older_one_supports():
    assert tables.compile_python_support("2.16.0", "3.12")["supported"] is True


def test_error_rows_name_the_first_minor_the_python_rows_refuse():
    """The two halves of the table agree: at the start of every error range, the minor named in the
    message is the first one whose first_torch is later (or none)."""
    table = tables.load("torch_releases")["compile"]
    for row in table["errors"]:
        start = Version(re.search(r">=([\d.]+)", row["torch"]).group(1))
        refused = [r["python"] for r in table["python"]
                   if r["first_torch"] is None or Version(r["first_torch"]) > start]
        first_refused = min(refused, key=lambda p: tuple(map(int, p.split("."))))
        assert f"Python {first_refused}+" in row["message"], row


def test_installed_torch_refuses_what_the_table_says():
    """The check in the installed torch's own source (read, not imported) agrees with the table."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        pytest.skip("torch is not installed")
    root = Path(spec.origin).parent
    source = (root / "_dynamo" / "eval_frame.py").read_text(encoding="utf-8")
    body = source.split("def check_if_dynamo_supported", 1)[1][:800]
    minor = int(re.search(r"sys\.version_info >= \(3, (\d+)\)", body).group(1))
    version = re.search(r"__version__ = '([^']+)'", (root / "version.py").read_text(encoding="utf-8")).group(1)
    assert tables.compile_python_support(version, f"3.{minor}")["supported"] is False
    assert tables.compile_python_support(version, f"3.{minor - 1}")["supported"] is True


@pytest.mark.parametrize(
    "torch_version, supported, error",
    [
        ("2.0.1", False, "Windows not yet supported for torch.compile"),
        ("2.2.1", False, "Windows not yet supported for torch.compile"),
        ("2.2.2+cu121", False, "Windows not yet supported for inductor"),
        ("2.4.1+cu124", False, "Windows not yet supported for inductor"),
        ("2.5.0", True, None),
    ],
)
def test_windows_support_per_release(torch_version, supported, error):
    w = tables.compile_windows_support(torch_version)
    assert (w["supported"], w["error"], w["first_torch"]) == (supported, error, "2.5")


def test_windows_not_judged_before_compile_existed():
    assert tables.compile_windows_support("1.13.1") is None
    assert tables.compile_windows_support(None) is None


def test_every_compile_specifier_parses():
    table = tables.load("torch_releases")["compile"]
    for row in table["errors"] + table["windows"]["errors"]:
        SpecifierSet(row["torch"])
    for row in table["python"]:
        assert row["first_torch"] is None or Version(row["first_torch"])


# --------------------------------------------------------------------------------------
# CPU inference stacks
# --------------------------------------------------------------------------------------


def test_every_cpu_stack_is_recorded_by_the_packages_probe():
    interest = load_interest()
    for entry in tables.load("cpu_stacks")["stacks"]:
        name = entry.get("name") or entry["prefix"] + "-genai"
        assert interest.matches(name), f"{name} is not in packages_of_interest.yaml: rules never see it"


@pytest.mark.parametrize(
    "versions, found",
    [
        ({"torch": "2.5.1+cpu", "intel-extension-for-pytorch": "2.5.0"}, ["intel-extension-for-pytorch 2.5.0"]),
        ({"intel-extension-for-pytorch": "2.5.10+xpu"}, []),  # the Intel GPU build
        ({"vllm": "0.8.5+cpu", "openvino-genai": "2025.1.0.0"}, ["openvino-genai 2025.1.0.0", "vllm 0.8.5+cpu"]),
        ({"vllm": "0.6.3.post1"}, []),  # vLLM's CUDA build
        ({"optimum-intel": "1.22.0"}, ["optimum-intel 1.22.0"]),
        ({}, []),
        (None, []),
        ("openvino", []),
    ],
)
def test_cpu_inference_stacks(versions, found):
    assert tables.cpu_inference_stacks(versions) == found


def test_cpu_inference_stacks_read_the_rule_engines_mapping_view():
    view = MapView({"openvino": "2025.1.0", "torch": "2.6.0+cpu"}, "packages.versions")
    assert tables.cpu_inference_stacks(view) == ["openvino 2025.1.0"]
