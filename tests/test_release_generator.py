"""scripts/gen_release_tables.py: the committed release tables are the generator's output on the
recorded PyPI data (tests/data/releases/, read by its ``fetch``), so a hand edit that disagrees with
the wheels fails here; and the wrong claims of issue 19, each checked against that data. Offline:
nothing here touches the network or reads outside the repository."""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from torchdoctor import tables

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "releases"
sys.path.insert(0, str(ROOT / "scripts"))
gen = importlib.import_module("gen_release_tables")
build = importlib.import_module("gen_release_build")
names_of = importlib.import_module("backends_names")
sys.path.remove(str(ROOT / "scripts"))

RECORDS = build.load_recorded(DATA)
BY_VERSION = {r["release"]: r for r in RECORDS}
PYPI = yaml.safe_load((ROOT / "rules" / "data" / "pypi_wheels.yaml").read_text(encoding="utf-8"))["releases"]
BACKENDS = yaml.safe_load((ROOT / "rules" / "lint" / "data" / "torch_backends.yaml").read_text(encoding="utf-8"))


def test_every_release_from_1_6_is_recorded_with_its_wheels():
    assert RECORDS[0]["release"] == "1.6.0" and RECORDS[-1]["release"] == "2.15.0"
    assert len(RECORDS) == 43
    for record in RECORDS:
        assert record["files"] and record["uploaded"] and "pypi.org/project/torch/" in record["source"]
        linux = [w for t, w in record["wheels"].items() if "x86_64" in t and "linux" in t]
        assert len(linux) == 1 and linux[0]["METADATA"] and linux[0]["torch/version.py"], record["release"]
        assert record["torch.backends"]["names"], record["release"]


def test_pypi_wheels_yaml_is_the_generators_output():
    assert (ROOT / "rules" / "data" / "pypi_wheels.yaml").read_text(encoding="utf-8") == build.build_pypi_table(RECORDS)


def test_torch_backends_since_is_the_generators_output():
    path = ROOT / "rules" / "lint" / "data" / "torch_backends.yaml"
    text = path.read_text(encoding="utf-8")
    since = build.build_backends_since(RECORDS)
    assert build.render_backends_table(text, since, RECORDS[-1]["release"]) == text


def test_a_hand_edit_of_a_since_is_caught():
    path = ROOT / "rules" / "lint" / "data" / "torch_backends.yaml"
    text = path.read_text(encoding="utf-8")
    edited = text.replace('cuda.enable_cudnn_sdp: {kind: function, since: "2.3"}',
                          'cuda.enable_cudnn_sdp: {kind: function, since: "2.5"}')
    assert edited != text
    assert build.render_backends_table(edited, build.build_backends_since(RECORDS), RECORDS[-1]["release"]) == text


def test_the_names_extractor_on_real_sources():
    """torch 2.2.2 has no cuDNN SDPA switch, 2.3.0 has both (the wheels' own torch/backends/cuda)."""
    def names(version):
        base = DATA / "sources" / version
        return set(names_of.release_names({str(p.relative_to(base)): p.read_text(encoding="utf-8")
                                           for p in base.rglob("*.py")}))
    old, new = names("2.2.2"), names("2.3.0")
    assert {"cuda.enable_cudnn_sdp", "cuda.cudnn_sdp_enabled"} <= new - old
    assert {"cuda.matmul.allow_tf32", "cuda.matmul.allow_fp16_reduced_precision_reduction",
            "cuda.matmul.allow_bf16_reduced_precision_reduction", "cuda.enable_flash_sdp"} <= old & new
    assert "cuda.matmul.allow_fp16_accumulation" not in new
    assert set(names_of.release_names({"torch/backends/cuda/__init__.py":
                                       (DATA / "sources" / "2.3.0" / "torch/backends/cuda/__init__.py").read_text()})) \
        <= new  # the same file alone gives a subset (no root classes)


# ------------------------------------------------------------------------------------------
# the hand-written tables agree with the wheels wherever both speak


@pytest.mark.parametrize("row", PYPI, ids=lambda r: r["version"])
def test_default_variant_and_its_cudnn_match_the_wheel(row):
    build_row = row.get("linux_x86_64") or {}
    hand = next(r for r in tables.load("torch_releases")["releases"]
                if Version(str(r["version"])).release[:2] == Version(row["version"]).release[:2])
    if build_row.get("local") not in (None, "cpu"):
        assert hand["default_cuda"] == build_row["local"], "torch_releases.yaml default_cuda"
        if build_row.get("cudnn"):
            assert hand["cudnn"][build_row["local"]] == build_row["cudnn"], "torch_releases.yaml cudnn"
        assert tables.release_variants(row["version"]) and build_row["local"] in tables.release_variants(row["version"])


@pytest.mark.parametrize("row", PYPI, ids=lambda r: r["version"])
def test_python_support_is_what_the_wheels_publish(row):
    tags = {t.rstrip("t") for group in row["pythons"].values() for t in group}
    for minor in range(5, 17):
        python = f"3.{minor}"
        assert tables.python_supported(row["version"], python) is (python in tags), python


@pytest.mark.parametrize("row", PYPI, ids=lambda r: r["version"])
@pytest.mark.parametrize("platform", ["linux_x86_64", "linux_aarch64"])
def test_compiled_archs_of_the_pypi_wheels(row, platform):
    """wheel_archs.yaml against the CUDA_ARCH_FLAGS string measured in each PyPI Linux wheel."""
    wheel = row.get(platform)
    if not wheel or not wheel.get("archs"):
        pytest.skip("a CPU-only wheel, or no arch list measured")
    label = wheel["version"] if "+" in wheel["version"] else f"{wheel['version']}+{wheel['local']}"
    assert tables.wheel_archs(label, None, platform) == wheel["archs"]


def test_python_wheels_first_wheels_agree_with_the_file_lists():
    """python_wheels.yaml: the first release with a CPython minor's wheel per platform, where the
    recorded file lists (1.6.0 on) can answer it."""
    first: dict = {}
    for record in RECORDS:
        for name in record["files"]:
            tag = gen.python_tag(name).rstrip("t")
            group = gen.platform_group(name).replace("_", "-", 1).replace("windows", "windows")
            first.setdefault((tag, group), record["release"])
    checked = 0
    for entry in tables.load("python_wheels")["pythons"]:
        for wheels in entry.get("first_wheels") or []:
            for platform in wheels["platforms"]:
                key = (str(entry["python"]), platform)
                if key in first and Version(first[key]) > Version("1.6.0"):
                    assert str(wheels["torch"]) == first[key], key
                    checked += 1
    assert checked >= 10


# ------------------------------------------------------------------------------------------
# the wrong claims of issue 19, each against the recorded wheel data


def test_2_11_pypi_wheel_is_cuda_13_0_with_cudnn_9_19():
    meta = next(w for t, w in BY_VERSION["2.11.0"]["wheels"].items() if t.endswith("linux_x86_64") or
                t == "manylinux_2_28_x86_64")["METADATA"]
    assert any("cuda-toolkit[" in x and "==13.0.2" in x for x in meta)
    assert any("nvidia-cudnn-cu13==9.19.0.56" in x for x in meta)
    release = tables._release("2.11.0")
    assert (release["default_cuda"], release["cudnn"]["cu130"]) == ("cu130", "9.19.0.56")
    assert next(r for r in tables.load("torch_releases")["releases"] if r["version"] == "2.11")["default_cuda"] == "cu130"


@pytest.mark.parametrize("version", ["2.12.0", "2.13.0", "2.14.1"])
def test_cu13x_wheels_carry_no_ptx(version):
    for platform in ("linux_x86_64", "linux_aarch64"):
        for cuda in ("13.0", "13.2"):
            archs = tables.wheel_archs(version, cuda, platform)
            assert archs and not any(a.startswith("compute_") for a in archs), (platform, cuda, archs)
    assert tables.wheel_archs("2.13.0+cu130", None, "linux_x86_64") == ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]


def test_no_table_says_current_wheels_have_sm_120_ptx():
    text = (ROOT / "rules" / "data" / "gpu_archs.yaml").read_text(encoding="utf-8")
    assert "sm_120+PTX" not in text


@pytest.mark.parametrize("version", ["2.13.0", "2.14.0", "2.14.1"])
def test_no_python_3_15_wheel_before_2_15_but_free_threaded_3_14(version):
    assert not any("-cp315-" in f for f in BY_VERSION[version]["files"])
    assert any("-cp314t-" in f for f in BY_VERSION[version]["files"])
    assert tables.python_supported(version, "3.15") is False
    release = tables._release(version)
    assert "3.14t" in release["python"]["experimental"] and "3.15" not in release["python"]["experimental"]
    hand = next(r for r in tables.load("torch_releases")["releases"] if r["version"] == version.rsplit(".", 1)[0])
    assert hand["python"].get("experimental") == ["3.14t"]  # the typed row agrees with the wheels


def test_mps_needs_macos_14_from_2_9():
    assert tables.mps_min_macos("2.9.0") == "14.0" and tables.mps_min_macos("2.8.0") == "13.0"
    fact = next(f for f in tables.load("platforms")["facts"] if f["id"] == "mps-macos13-dropped")
    assert str(fact["first_torch"]) == "2.9"


@pytest.mark.parametrize("name,since", [
    ("cuda.enable_cudnn_sdp", "2.3"), ("cuda.cudnn_sdp_enabled", "2.3"),
    ("cuda.matmul.allow_fp16_accumulation", "2.7"),
    ("cuda.matmul.allow_fp16_reduced_precision_reduction_split_k", "2.10"),
    ("cuda.matmul.allow_bf16_reduced_precision_reduction_split_k", "2.10"),
    ("cuda.matmul.allow_bf16_reduced_precision_reduction", "2.0"),
    ("cuda.matmul.allow_fp16_reduced_precision_reduction", "1.11"),
    ("mps.is_macos13_or_newer", "2.0"), ("mps.is_macos_or_newer", "2.3"),
    ("mps.get_name", "2.9"), ("mps.get_core_count", "2.9"),
    ("opt_einsum", "1.13"), ("mha", "2.3"), ("cuda.preferred_blas_library", "2.4"), ("cusparselt", "2.5"),
    ("cuda.allow_fp16_bf16_reduction_math_sdp", "2.5"), ("mkldnn.allow_tf32", "2.7"),
    ("cudnn.depthwise_kernel", "2.13"), ("cuda.cublas_workspace_size", "2.13"),
    ("cudnn.rnn", None),  # a submodule (torch/backends/cudnn/rnn.py) in every release read
])
def test_backends_since_of_the_names_issue_19_named(name, since):
    assert BACKENDS["names"][name].get("since") == since
    first = next(r["release"] for r in RECORDS if name in r["torch.backends"]["names"])
    assert (since is None and first == "1.6.0") or ".".join(first.split(".")[:2]) == since


def test_settings_registry_since_is_never_before_the_name_exists():
    reg = yaml.safe_load((ROOT / "rules" / "settings.yaml").read_text(encoding="utf-8"))
    checked = 0
    for section in reg.values():
        for key, body in (section.items() if isinstance(section, dict) else ()):
            rel = str(key)[len("torch.backends."):] if str(key).startswith("torch.backends.") else None
            if rel in BACKENDS["names"] and isinstance(body, dict) and body.get("since"):
                first = BACKENDS["names"][rel].get("since")
                if first:
                    assert Version(str(body["since"])) >= Version(first), key
                    checked += 1
    assert checked >= 4
    assert reg["settings"]["torch.backends.cuda.enable_cudnn_sdp"]["since"] == "2.3"


def test_cudnn_sdpa_backend_history():
    assert tables.sdpa_backends(9.0, "2.2.2")["cudnn"] == "not in this release"
    assert tables.sdpa_backends(9.0, "2.4.1")["cudnn"] == "unknown for this release"
    assert tables.sdpa_backends(9.0, "2.5.1")["cudnn"].startswith("yes")
    text = (ROOT / "rules" / "data" / "sdpa_backends.yaml").read_text(encoding="utf-8")
    assert "pull/138522" in text and "pull/162073" in text
