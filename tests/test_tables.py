"""Reference tables (rules/data/*.yaml) and their lookups (torchdoctor.tables).

Expected values come from NVIDIA's tables (developer.nvidia.com/cuda-gpus, CUDA toolkit release
notes), PyTorch's RELEASE.md / build scripts, and the real reports in tests/data/tables/corpus
(copied from /work/shared/corpus).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import yaml
from packaging.version import Version

from torchdoctor import tables
from torchdoctor.paths import data_dir
from torchdoctor.tables import DataFileError

CORPUS = sorted((Path(__file__).parent / "data" / "tables" / "corpus").glob("case*.json"))
DATA_FILES = sorted(data_dir().glob("*.yaml"))


def _corpus_facts(case: str) -> dict:
    path = Path(__file__).parent / "data" / "tables" / "corpus" / f"{case}.json"
    return json.loads(path.read_text(encoding="utf-8"))["facts"]


# ----------------------------------------------------------------------------------------
# every data file loads and is sourced
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: p.name)
def test_data_file_loads(path):
    tables.load(path.stem)


SOURCE_KEYS = ("source", "sources", "references")


def _entries_without_source(node, inherited=False, where="$"):
    """Mappings inside lists (entries) that have no source themselves or in an enclosing mapping
    (``source``, ``sources`` or, as rule files and rules/data/triage.yaml write it, ``references``)."""
    missing = []
    if isinstance(node, dict):
        inherited = inherited or any(key in node for key in SOURCE_KEYS)
        for key, value in node.items():
            missing += _entries_without_source(value, inherited, f"{where}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            if isinstance(item, dict) and not (inherited or any(key in item for key in SOURCE_KEYS)):
                missing.append(f"{where}[{i}] (line {getattr(item, 'line', '?')})")
            missing += _entries_without_source(item, inherited, f"{where}[{i}]")
    return missing


def _unverified_without_note(node, where="$"):
    bad = []
    if isinstance(node, dict):
        if node.get("verified") is False and not (node.get("note") or node.get("notes")):
            bad.append(f"{where} (line {getattr(node, 'line', '?')})")
        for key, value in node.items():
            bad += _unverified_without_note(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            bad += _unverified_without_note(item, f"{where}[{i}]")
    return bad


# Data files of other areas whose entries are not sourced knowledge; reported, not hidden.
# Presentation policy, not knowledge: which differences `diff` ranks first. Each entry must give
# its reason (`why`) instead of a source; test_policy_entries_give_a_reason checks that.
POLICY_FILES = {"diff_relevance.yaml"}


def _yaml_with_lines(path: Path):
    """The file parsed with line numbers on every mapping (the loader tables.load checks with)."""
    return yaml.load(
        path.read_text(encoding="utf-8"), Loader=tables._line_loader()
    )  # a SafeLoader subclass


@pytest.mark.parametrize(
    "path",
    [p for p in DATA_FILES if p.name not in POLICY_FILES],
    ids=lambda p: p.name,
)
def test_every_entry_has_a_source(path):
    assert _entries_without_source(_yaml_with_lines(path)) == [], (
        f"{path.name}: entries without a source"
    )


def test_policy_entries_give_a_reason():
    for name in POLICY_FILES:
        data = yaml.safe_load((DATA_FILES[0].parent / name).read_text(encoding="utf-8"))
        for group in ("noise", "relevant"):
            for entry in data[group]:
                assert str(entry.get("why", "")).strip(), f"{name}: {group} entry {entry} has no why"


@pytest.mark.parametrize("path", DATA_FILES, ids=lambda p: p.name)
def test_unverified_values_carry_a_note(path):
    assert _unverified_without_note(_yaml_with_lines(path)) == []


def test_sources_are_urls_or_repo_paths():
    pattern = re.compile(r"^(https?://|/work/shared/|torch/|pytorch/|[\w.-]+(?:/[\w.-]+)+[ #(])")
    for name in (
        "gpu_archs",
        "gpu_models",
        "driver_min",
        "wheel_archs",
        "torch_releases",
        "platforms",
    ):
        for source in _all_sources(tables.load(name)):
            assert isinstance(source, str) and pattern.match(source), (
                f"{name}: source {source!r} is neither a URL nor a repo path"
            )


def _all_sources(node):
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "source":
                yield value
            elif key == "sources":
                yield from value
            else:
                yield from _all_sources(value)
    elif isinstance(node, list):
        for item in node:
            yield from _all_sources(item)


# ----------------------------------------------------------------------------------------
# malformed files fail with path:line
# ----------------------------------------------------------------------------------------


def _copy_data(tmp_path: Path, name: str) -> Path:
    target = tmp_path / f"{name}.yaml"
    shutil.copy(data_dir() / f"{name}.yaml", target)
    return target


def test_invalid_yaml_reports_path_and_line(tmp_path):
    target = tmp_path / "gpu_archs.yaml"
    target.write_text(
        "architectures:\n  - name: Ampere\n    compute_capabilities: [8.0, 8.6\n", encoding="utf-8"
    )
    with pytest.raises(DataFileError, match=rf"{re.escape(str(target))}:\d+: invalid YAML"):
        tables.load("gpu_archs", str(tmp_path))


def test_bad_arch_in_wheel_table_reports_its_line(tmp_path):
    target = _copy_data(tmp_path, "wheel_archs")
    text = target.read_text(encoding="utf-8")
    text = text.replace(
        "archs: [sm_50, sm_60, sm_70, sm_75, sm_80, sm_86, sm_90]", "archs: [sm_50, sm60]", 1
    )
    target.write_text(text, encoding="utf-8")
    with pytest.raises(DataFileError) as err:
        tables.load("wheel_archs", str(tmp_path))
    message = str(err.value)
    line = int(re.search(rf"{re.escape(str(target))}:(\d+): bad arch 'sm60'", message).group(1))
    assert "torch:" in target.read_text(encoding="utf-8").splitlines()[line - 1]


def test_bad_specifier_and_missing_cc_are_reported(tmp_path):
    target = _copy_data(tmp_path, "gpu_models")
    target.write_text(
        target.read_text(encoding="utf-8").replace("  - cc: 12.1\n", "  - ccc: 12.1\n", 1),
        encoding="utf-8",
    )
    with pytest.raises(DataFileError, match=r"gpu_models\.yaml:\d+: 'cc' is missing"):
        tables.load("gpu_models", str(tmp_path))
    target = _copy_data(tmp_path, "torch_releases")
    target.write_text(
        target.read_text(encoding="utf-8").replace(
            '  - version: "2.7"', '  - version: "two.seven"', 1
        ),
        encoding="utf-8",
    )
    with pytest.raises(
        DataFileError, match=r"torch_releases\.yaml:\d+: 'version' is not a version"
    ):
        tables.load("torch_releases", str(tmp_path))


def test_rocm_targets_and_wheel_platforms_are_checked_at_load(tmp_path):
    target = _copy_data(tmp_path, "rocm_archs")
    target.write_text(target.read_text(encoding="utf-8").replace("- gfx: gfx1031", "- gfx: rx6700", 1),
                      encoding="utf-8")
    with pytest.raises(DataFileError, match=r"rocm_archs\.yaml:\d+: 'gfx' is not a gfx target: 'rx6700'"):
        tables.load("rocm_archs", str(tmp_path))
    target = _copy_data(tmp_path, "wheel_archs")
    target.write_text(target.read_text(encoding="utf-8").replace("block: linux_aarch64}", "block: linux_arm}", 1),
                      encoding="utf-8")
    with pytest.raises(DataFileError, match=r"wheel_archs\.yaml:\d+: 'block' names no block of builds: 'linux_arm'"):
        tables.load("wheel_archs", str(tmp_path))


@pytest.mark.parametrize(
    "gfx, torch_version, in_wheels, override",
    [
        ("gfx1010:xnack-", "2.7.0.dev20250123+rocm6.3", False, None),  # pytorch#145670
        ("gfx1031", "2.5.1+rocm6.2", False, "10.3.0"),  # pytorch#132570
        ("gfx1102", "2.5.1+rocm6.2", False, "11.0.0"),
        ("gfx1102", "2.8.0+rocm6.4", True, "11.0.0"),
    ],
)
def test_rocm_gfx_support(gfx, torch_version, in_wheels, override):
    info = tables.rocm_gfx_support(gfx, torch_version)
    assert (info["gfx"], info["in_wheels"], info["override"]) == (gfx.split(":")[0], in_wheels, override)


def test_rocm_targets_not_listed_are_not_judged():
    assert tables.rocm_gfx_support("gfx1103:xnack-", "2.6.0") is None  # a nightly-only target
    assert tables.rocm_gfx_support(None, "2.6.0") is None


def test_missing_file_is_a_data_file_error(tmp_path):
    with pytest.raises(DataFileError, match="cannot read"):
        tables.load("driver_min", str(tmp_path))


# ----------------------------------------------------------------------------------------
# architectures
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cc, name",
    [
        (1.2, "Tesla"),
        (2.1, "Fermi"),
        (3.7, "Kepler"),
        (5.3, "Maxwell"),
        (6.1, "Pascal"),
        (7.2, "Volta"),
        (7.5, "Turing"),
        (8.7, "Ampere"),
        (8.9, "Ada"),
        (9.0, "Hopper"),
        (10.0, "Blackwell"),
        (10.3, "Blackwell"),
        (11.0, "Blackwell"),
        (12.1, "Blackwell"),
        ("8.6", "Ampere"),
        ((12, 0), "Blackwell"),
    ],
)
def test_arch_for_cc(cc, name):
    assert tables.arch_for_cc(cc) == name


@pytest.mark.parametrize("cc", [None, 4.0, 13.0, "n/a", True, "sm_x"])
def test_arch_for_unknown_cc_is_none(cc):
    assert tables.arch_for_cc(cc) is None
    assert tables.arch_info(cc) is None


def test_arch_info_tensor_core_formats_follow_pytorch_gates():
    tc = {
        cc: tables.arch_info(cc)["tensor_cores"]
        for cc in (6.1, 7.0, 7.5, 8.0, 8.9, 9.0, 10.0, 12.0)
    }
    assert not any(tc[6.1].values())
    assert tc[7.0] == {"fp16": True, "bf16": False, "tf32": False, "fp8": False, "fp4": False}
    assert tc[7.5]["fp16"] and not tc[7.5]["bf16"]
    assert tc[8.0]["bf16"] and tc[8.0]["tf32"] and not tc[8.0]["fp8"]
    assert tc[8.9]["fp8"] and not tc[8.9]["fp4"]
    assert tc[9.0]["fp8"] and not tc[9.0]["fp4"]
    assert tc[10.0]["fp4"] and tc[12.0]["fp4"]


def test_arch_info_toolkit_range_and_per_cc_details():
    maxwell = tables.arch_info(5.2)
    assert maxwell["cuda_last"] == "12.9" and maxwell["supported_by_current_torch"] is True
    assert "TITAN X" in maxwell["examples"]
    assert tables.arch_info(3.5)["supported_by_current_torch"] is False
    assert (
        tables.arch_info(3.0)["cuda_last"] == "10.2"
        and tables.arch_info(3.7)["cuda_last"] == "11.8"
    )
    assert (
        tables.arch_info(8.6)["cuda_first"] == "11.1"
        and tables.arch_info(8.0)["cuda_first"] == "11.0"
    )
    assert tables.arch_info(11.0)["cuda_first"] == "13.0"
    assert tables.arch_info(10.1)["cuda_last"] == "12.9"
    gb10 = tables.arch_info(12.1)
    assert gb10["cc"] == 12.1 and gb10["verified"] is False and gb10["tensor_cores"]["fp4"] is True


# ----------------------------------------------------------------------------------------
# GPU names
# ----------------------------------------------------------------------------------------


def _corpus_gpu_pairs():
    pairs = []
    for path in CORPUS:
        facts = json.loads(path.read_text(encoding="utf-8")).get("facts", {})
        gpu, cc = facts.get("gpu"), facts.get("compute_capability")
        if not gpu or not cc or not re.match(r"\d", str(cc)):
            continue
        names, ccs = gpu.split(" + "), str(cc).split(" / ")
        assert len(names) == len(ccs), path.name
        pairs += [(path.stem, n.strip(), float(c)) for n, c in zip(names, ccs)]
    return pairs


CORPUS_GPUS = _corpus_gpu_pairs()


def test_corpus_has_gpu_ground_truth():
    assert len(CORPUS_GPUS) >= 25


@pytest.mark.parametrize("case, name, cc", CORPUS_GPUS, ids=[f"{c}:{n}" for c, n, _ in CORPUS_GPUS])
def test_cc_for_corpus_gpu_names(case, name, cc):
    assert tables.cc_for_gpu_name(name) == cc


def test_a_report_line_naming_two_gpus_is_not_guessed():
    assert tables.cc_for_gpu_name(_corpus_facts("case015")["gpu"]) is None  # RTX 3090 + RTX 2080 Ti
    assert tables.cc_for_gpu_name("TITAN V + TITAN Xp + GeForce RTX 2080 Ti") is None


@pytest.mark.parametrize(
    "name, cc",
    [
        # NVIDIA's table, current page
        ("NVIDIA GB10", 12.1),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 12.0),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 12.0),
        ("NVIDIA GeForce RTX 5060 Ti", 12.0),
        ("Jetson T5000", 11.0),
        ("NVIDIA B300", 10.3),
        ("NVIDIA GB300", 10.3),
        ("NVIDIA GB200", 10.0),
        ("NVIDIA B200", 10.0),
        ("NVIDIA GH200 480GB", 9.0),
        ("NVIDIA H200", 9.0),
        ("NVIDIA L4", 8.9),
        ("NVIDIA L40", 8.9),
        ("NVIDIA RTX 6000 Ada Generation", 8.9),
        ("NVIDIA RTX 4000 SFF Ada Generation", 8.9),
        ("NVIDIA GeForce RTX 4060 Ti", 8.9),
        ("Jetson AGX Orin", 8.7),
        ("NVIDIA A40", 8.6),
        ("NVIDIA A16", 8.6),
        ("NVIDIA A2", 8.6),
        ("NVIDIA RTX A3000", 8.6),
        ("NVIDIA A100-SXM4-80GB", 8.0),
        ("NVIDIA PG509-210", 8.0),  # A100 board name (pytorch/pytorch#108963)
        ("NVIDIA A30", 8.0),
        # legacy page
        ("Jetson AGX Xavier", 7.2),
        ("Quadro GV100", 7.0),
        ("Jetson TX2", 6.2),
        ("Quadro P5200", 6.1),
        ("Tesla P4", 6.1),
        ("Tesla P40", 6.1),
        ("Jetson Nano", 5.3),
        ("Quadro M2200", 5.2),
        ("Tesla M60", 5.2),
        ("GeForce GTX 750 Ti", 5.0),
        ("NVIDIA NVS 810", 5.0),
        ("Tesla K80", 3.7),
        ("Tesla K20", 3.5),
        ("GeForce GTX 780 Ti", 3.5),
        ("Tesla K10", 3.0),
        ("GeForce GTX 680", 3.0),
        ("GeForce GTX 580", 2.0),
        ("GeForce GTS 450", 2.1),
        ("GeForce GT 240", 1.2),
    ],
)
def test_cc_for_names_in_nvidias_tables(name, cc):
    assert tables.cc_for_gpu_name(name) == cc


@pytest.mark.parametrize(
    "name, cc",
    [
        ("NVIDIA GeForce RTX 5090 D", 12.0),
        ("NVIDIA GeForce RTX 5090", 12.0),
        ("GeForce RTX 4090", 8.9),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", 8.9),
        ("NVIDIA GeForce RTX 3050 Ti Laptop GPU", 8.6),
        ("NVIDIA GeForce RTX 3080Ti", 8.6),
        ("nvidia   geforce   rtx 3090", 8.6),
        ("GeForce GTX 1060 with Max-Q Design", 6.1),
        ("Quadro RTX 5000 with Max-Q Design", 7.5),
        ("NVIDIA H100 80GB HBM3", 9.0),
        ("NVIDIA H100 PCIe", 9.0),
        ("NVIDIA H100 NVL", 9.0),
        ("Tesla V100-SXM2-16GB", 7.0),
        ("Tesla V100S-PCIE-32GB", 7.0),
        ("Tesla P100-PCIE-16GB", 6.0),
        ("Tesla K40m", 3.5),
        ("NVIDIA A10G", 8.6),
        ("NVIDIA A10", 8.6),
        ("NVIDIA L40S", 8.9),
        ("Tesla T4", 7.5),
        ("NVIDIA T4", 7.5),
        ("GPU 0: Tesla T4 (UUID: GPU-5a1c2d3e-0000-1111-2222-333344445555)", 7.5),
        ("GeForce 210", 1.2),
        ("NVIDIA GeForce GT 1030", 6.1),
        ("NVIDIA GeForce MX250", 6.1),
        ("GeForce MX150", 6.1),
        ("NVIDIA GeForce MX450", 7.5),
        ("NVIDIA GeForce GTX 1650 Ti", 7.5),
        ("NVIDIA GeForce GTX 1660 SUPER", 7.5),
        ("NVIDIA TITAN RTX", 7.5),
        ("NVIDIA TITAN V", 7.0),
        ("NVIDIA TITAN Xp", 6.1),
        ("NVIDIA TITAN X (Pascal)", 6.1),
        ("GeForce GTX TITAN X", 5.2),
        ("GeForce GTX TITAN", 3.5),
        ("GeForce GTX 960M", 5.0),
        ("GeForce GTX 960", 5.2),
        ("Quadro K620", 5.0),
        ("Quadro K5000", 3.0),
        ("Quadro M4000", 5.2),
        ("Quadro P1000", 6.1),
        ("Quadro RTX 8000", 7.5),
        ("Quadro T1000", 7.5),
        ("NVIDIA T400", 7.5),
        ("NVIDIA RTX A6000", 8.6),
        ("NVIDIA RTX A2000 12GB", 8.6),
        ("NVIDIA RTX A5000 Laptop GPU", 8.6),
        ("NVIDIA RTX 2000 Ada Generation", 8.9),
        ("NVIDIA RTX PRO 4000 Blackwell", 12.0),
        ("Orin (nvgpu)", 8.7),
        ("NVIDIA Tegra X1", 5.3),
        ("Xavier", 7.2),
        ("NVIDIA Thor", 11.0),
        ("NVIDIA GeForce RTX 2050", 8.6),  # GA107 despite the 20-series name
        ("NVIDIA GeForce RTX 3050 A Laptop GPU", 8.9),  # AD106
        ("NVIDIA GeForce RTX 4090 D", 8.9),
        ("NVIDIA GeForce RTX 5070 Ti Laptop GPU", 12.0),
    ],
)
def test_cc_for_name_variants(name, cc):
    assert tables.cc_for_gpu_name(name) == cc


@pytest.mark.parametrize(
    "name",
    [
        None,
        "",
        "none",
        "n/a",
        "Apple M2 Max (MPS)",
        "AMD Radeon RX 7900 XTX",
        "Intel(R) Arc(TM) A770 Graphics",
        "NVIDIA GeForce GT 730",
        "GeForce GT 640",
        "TITAN",
        "Quadro",
        "NVIDIA Graphics Device",
        42,
    ],
)
def test_unknown_or_ambiguous_names_give_none(name):
    assert tables.cc_for_gpu_name(name) is None


# ----------------------------------------------------------------------------------------
# drivers
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cuda, os, driver",
    [
        ("12.4", "Linux", "550.54.14"),
        ("11.8", "Linux", "520.61.05"),
        ("13.0", "Linux", "580.65.06"),
        ("13.2", "Linux", "595.45.04"),
        ("12.8", "Linux", "570.26"),
        ("12.6", "Windows", "560.76"),
        ("12.0", "Windows", "527.41"),
        ("10.2", "Linux", "440.33"),
        ("10.1.243", "Linux", "418.39"),  # "10.1.105 general release, and updates"
        ("9.2.148", "Linux", "396.37"),  # 9.2 Update 1
        ("9.2", "Linux", "396.26"),
        ("8.0", "Windows", "369.30"),
        ("cu118", "linux", "520.61.05"),
        ("12.4", "win32", "551.61"),
    ],
)
def test_driver_min(cuda, os, driver):
    assert tables.driver_min(cuda, os) == driver


@pytest.mark.parametrize(
    "cuda, os",
    [
        ("13.0", "Windows"),
        ("12.7", "Linux"),
        ("99.0", "Linux"),
        (None, "Linux"),
        ("garbage", "Linux"),
        ("12.4", "Darwin"),
    ],
)
def test_driver_min_unknown_is_none(cuda, os):
    assert tables.driver_min(cuda, os) is None


def test_driver_compat_floors():
    assert tables.driver_compat_floor("11.3") == "450.80.02"
    assert tables.driver_compat_floor("11.3", "Windows") == "452.39"
    assert tables.driver_compat_floor("12.8") == "525.60.13"
    assert tables.driver_compat_floor("cu126", "Windows") == "527.41"
    assert tables.driver_compat_floor("13.0") == "580"
    assert tables.driver_compat_floor("10.2") is None
    # 2.7.1+cu128 on driver 550.127.08: below 12.8's own minimum, above the 12.x floor (flags-catalog 4.3)
    assert Version("550.127.08") < Version(tables.driver_min("12.8"))
    assert Version("550.127.08") >= Version(tables.driver_compat_floor("12.8"))


@pytest.mark.parametrize(
    "case, too_old",
    [
        ("case003", True),
        ("case004", True),
        ("case005", True),
        ("case023", False),
        ("case029", False),
        ("case014", False),
    ],
)
def test_corpus_drivers_against_their_toolkit(case, too_old):
    facts = _corpus_facts(case)
    cuda = facts["cuda_build"].split()[0]
    minimum = tables.driver_min(cuda, "Linux")
    assert (Version(facts["driver"]) < Version(minimum)) is too_old


# ----------------------------------------------------------------------------------------
# wheels
# ----------------------------------------------------------------------------------------


def test_wheel_archs_examples():
    assert tables.wheel_archs("2.7.0", "12.8") == [
        "sm_75",
        "sm_80",
        "sm_86",
        "sm_90",
        "sm_100",
        "sm_120",
        "compute_120",
    ]
    assert "sm_120" in tables.wheel_archs("2.7.1+cu128")
    assert "sm_70" not in tables.wheel_archs("2.11.0", "cu128")
    assert "sm_70" in tables.wheel_archs("2.10.0", "cu128")
    assert "sm_50" in tables.wheel_archs("2.13.0", "12.6")
    assert "sm_120" not in tables.wheel_archs("2.13.0", "12.6")
    assert tables.wheel_archs("2.13.0", "13.0")[-1] == "sm_120"  # no PTX in the wheel (issue 19, measured)
    assert "sm_37" in tables.wheel_archs("2.0.1", "11.8")
    assert tables.wheel_archs("1.8.1+cu102") == ["sm_37", "sm_50", "sm_60", "sm_70"]
    assert tables.wheel_archs("2.13.0", "13.0", platform="linux_aarch64")[:5] == [
        "sm_80",
        "sm_90",
        "sm_100",
        "sm_110",
        "sm_120",
    ]


def test_wheel_archs_default_cpu_and_unknown():
    assert tables.wheel_archs("2.13.0+cpu") == []
    assert tables.wheel_archs("2.13.0", "cpu") == []
    assert tables.wheel_archs("2.13.0", "default") == tables.wheel_archs("2.13.0", "cu130")
    assert tables.wheel_archs("2.10.0.dev20251008", "12.8") == tables.wheel_archs("2.10.0", "12.8")
    assert tables.wheel_archs("2.13.0") is None  # no variant known
    assert tables.wheel_archs("2.13.0", "12.8") is None  # no cu128 wheel of 2.13
    assert tables.wheel_archs("not a version", "12.8") is None
    assert tables.wheel_archs("2.7.0", "12.8", platform="solaris") is None


def test_first_and_dropped_architectures():
    assert not any(
        "sm_120" in (tables.wheel_archs("2.6.0", v) or []) for v in ("cu118", "cu124", "cu126")
    )
    for version in ("2.8.0", "2.11.0", "2.13.0"):
        for variant in ("cu128", "cu129", "cu130", "cu132"):
            archs = tables.wheel_archs(version, variant) or []
            assert "sm_50" not in archs and "sm_60" not in archs
            if variant.startswith("cu13"):
                assert "sm_70" not in archs


@pytest.mark.parametrize(
    "archs, cc, ok",
    [
        (["sm_80"], 8.6, True),
        (["sm_80"], 8.9, True),
        (["sm_80"], 9.0, False),
        (["sm_86"], 8.0, False),
        (["sm_90"], 10.0, False),
        (["sm_90", "compute_90"], 10.0, True),
        (["sm_87"], 8.7, True),
        (["sm_87"], 8.9, False),
        (["sm_80"], 8.7, False),
        (["sm_53"], 5.3, True),
        (["sm_50"], 5.3, False),
        (["sm_50"], 5.2, True),
        (["sm_72"], 7.5, False),
        (["sm_101"], 11.0, True),
        (["sm_100"], 10.1, False),
        (["sm_100"], 10.3, True),
        (["sm_120"], 12.1, True),
        (["sm_120"], 10.0, False),
        (["sm_90a"], 9.0, True),
        (["sm_100a"], 10.3, False),
        (["sm_100f"], 10.3, True),
        (["compute_120"], 13.0, True),
        (["compute_90a"], 10.0, False),
        ([], 8.0, False),
    ],
)
def test_arch_list_supports(archs, cc, ok):
    assert tables.arch_list_supports(archs, cc) is ok


def test_arch_list_supports_tolerates_bad_input():
    assert tables.arch_list_supports(None, 8.0) is None
    assert tables.arch_list_supports("sm_80", 8.0) is None
    assert tables.arch_list_supports(["sm_80"], None) is None
    assert tables.arch_list_supports(["gfx90a", "sm_80"], 8.6) is True
    assert tables.arch_list_supports(("SM_80",), "8.6") is True


def test_published_wheels_against_gpus():
    assert (
        tables.arch_list_supports(tables.wheel_archs("2.7.0", "12.6"), 12.0) is False
    )  # RTX 50xx + cu126
    assert tables.arch_list_supports(tables.wheel_archs("2.7.0", "12.8"), 12.0) is True
    assert (
        tables.arch_list_supports(tables.wheel_archs("2.13.0", "13.0"), 6.1) is False
    )  # Pascal + cu130
    assert tables.arch_list_supports(tables.wheel_archs("2.13.0", "12.6"), 6.1) is True
    assert (
        tables.arch_list_supports(tables.wheel_archs("2.11.0", "12.8"), 7.0) is False
    )  # V100 + 2.11 cu128
    assert (
        tables.arch_list_supports(tables.wheel_archs("2.13.0", "13.0"), 8.9) is True
    )  # sm_86 code on Ada
    assert (
        tables.arch_list_supports(tables.wheel_archs("2.13.0", "13.0"), 10.3) is True
    )  # sm_100 code on B300


def test_corpus_gpus_against_their_builds():
    # case015: conda 1.7.0 built with CUDA 11.0 on an RTX 3090: sm_80 code runs on 8.6 (the bug was NVRTC's)
    archs = tables.wheel_archs("1.7.0", "11.0", platform="conda_linux_64")
    assert "sm_86" not in archs and tables.arch_list_supports(archs, 8.6) is True
    # case037: 1.3.0 nightly conda CUDA 10.0 on a GTX TITAN Black (3.5): still had sm_35
    assert tables.arch_list_supports(
        tables.wheel_archs("1.3.0.dev20190917", "10.0", platform="conda_linux_64"), 3.5
    )
    # case029: K80 with 1.8.1+cu102
    assert tables.arch_list_supports(tables.wheel_archs("1.8.1+cu102"), 3.7) is True
    # case002: GeForce 210 (1.2) with torch 1.2.0 (CUDA 10.0)
    assert tables.arch_list_supports(tables.wheel_archs("1.2.0", "10.0"), 1.2) is False


def test_wheels_supporting():
    assert tables.wheels_supporting(6.1, "2.13.0") == ["2.13+cu126"]
    assert tables.wheels_supporting(12.0, "2.6.0") == []
    assert tables.wheels_supporting(12.0, "2.7.1+cu126") == ["2.7+cu128"]
    assert tables.wheels_supporting(7.0, "2.11.0") == ["2.11+cu126"]
    assert tables.wheels_supporting(7.0, "2.10.0") == ["2.10+cu128", "2.10+cu126"]
    newest = tables.wheels_supporting(8.6)
    assert newest[0] == "2.15+cu132" and not any(w.startswith("2.15+cu126") for w in newest)  # 2.15 dropped cu126
    assert tables.wheels_supporting(3.7)[0] == "2.7+cu118"
    assert tables.wheels_supporting(1.2) == []
    assert tables.wheels_supporting(None) is None


def test_wheels_supporting_leaves_out_builds_older_than_the_architecture():
    # Thor (11.0, CUDA >= 13.0): old wheels "reach" it only through compute_50 PTX (torch 1.3);
    # the x86_64 lists have no sm_110, so nothing is left; the aarch64 cu13x wheels have it.
    assert tables.wheels_supporting(11.0) == []
    assert tables.wheels_supporting(11.0, platform="linux_aarch64")[:2] == ["2.15+cu132", "2.15+cu130"]
    assert tables.wheels_supporting(8.6, platform=None) == []  # macOS: no CUDA wheels


@pytest.mark.parametrize(
    "os_name, machine, block",
    [
        ("Linux", "x86_64", "linux_x86_64"),
        ("Linux", "aarch64", "linux_aarch64"),
        (None, "arm64", "linux_aarch64"),
        ("Windows", "AMD64", "windows_x86_64"),
        ("Linux", None, "linux_x86_64"),
        (None, None, "linux_x86_64"),
        ("Darwin", "arm64", None),
        ("Windows", "ARM64", None),
    ],
)
def test_wheel_platform(os_name, machine, block):
    assert tables.wheel_platform(os_name, machine) == block


def test_windows_lists_fall_back_to_linux_where_not_recorded():
    assert "compute_37" in tables.wheel_archs("2.7.1+cu118", None, "windows_x86_64")
    assert tables.wheel_archs("2.6.0+cu126", None, "windows_x86_64") == tables.wheel_archs("2.6.0+cu126")
    assert tables.wheel_archs("2.10.0+cu130", None, "linux_aarch64") is None  # aarch64 2.10 not recorded


def test_wheel_for_prefers_the_users_release_then_what_the_driver_runs():
    # pytorch#112553: 2.1.0+cu121 on driver 470 -> 2.1's cu118, through minor-version compatibility
    w = tables.wheel_for(7.5, "470.182.03", "2.1.0+cu121", "Linux", "x86_64")
    assert (w["build"], w["compat"], w["runs"]) == ("2.1+cu118", True, True)
    assert w["index_url"] == "https://download.pytorch.org/whl/cu118"
    # a release without a variant for this driver: the newest release the driver runs
    w = tables.wheel_for(7.5, "470.182.03", "2.8.0+cu128", "Linux", "x86_64")
    assert (w["build"], w["compat"]) == ("2.7+cu118", True)
    # natively before compat: 1.6 cu101 on 418.67 (10.x has no minor-version compatibility)
    assert tables.wheel_for(7.5, "418.67", "1.6.0+cu102")["build"] == "1.6+cu101"
    # Blackwell from a 2.6 cu126 wheel with driver 570: 2.11 cu128 is the newest it runs
    w = tables.wheel_for(12.0, "570.124.04", "2.6.0+cu126")
    assert (w["build"], w["compat"], w["driver_min"]) == ("2.11+cu128", False, "570.26")
    # no driver known: the newest build for the GPU
    assert tables.wheel_for(12.0, None, "2.6.0+cu126")["build"] == "2.15+cu132"
    # a driver too old for every build: the user's own release, marked as not running
    w = tables.wheel_for(8.6, "400.0", "2.6.0+cu126")
    assert (w["build"], w["runs"]) == ("2.6+cu126", False)
    # Jetson drivers are numbered apart: judged as unknown
    assert tables.wheel_for(11.0, "580.00", "2.12.0", "Linux", "aarch64")["runs"] is True
    assert tables.wheel_for(1.2, "470.0") is None
    assert tables.wheel_for(8.6, "560.0", None, "Darwin", "arm64") is None


@pytest.mark.parametrize(
    "torch_version, lib_version, same",
    [
        ("1.10.2+cu113", "0.11.3+rocm4.2", False),  # microsoft/WSL#8102
        ("2.5.1+cu124", "0.20.1+cu121", True),  # one CUDA major
        ("2.1.0+cu121", "0.16.0+cu118", False),
        ("2.1.0+cu121", "0.16.0+cpu", False),
        ("1.13.0+cu117.with.pypi.cudnn", "0.14.0+cu117", True),
        ("2.5.1+rocm6.2", "0.20.1+rocm6.1", True),
        ("2.7.1+xpu", "0.22.1+xpu", True),
        ("2.5.1", "0.20.1+cpu", None),  # PyPI's unlabelled build
        ("1.3.0a0+de394b6", "0.4.1a0+d94043a", None),  # source builds (corpus case011)
    ],
)
def test_same_build_family(torch_version, lib_version, same):
    assert tables.same_build_family(torch_version, lib_version) is same


def test_integrated_gpu():
    assert [cc for cc in (5.3, 6.2, 7.2, 8.7, 10.1, 11.0) if tables.integrated_gpu(cc)] == [5.3, 6.2, 7.2, 8.7, 10.1, 11.0]
    assert not any(tables.integrated_gpu(cc) for cc in (6.1, 8.6, 9.0, 10.0, 12.0, 12.1, None, "garbage"))


def test_wheel_index_url():
    assert tables.wheel_index_url("cu128") == "https://download.pytorch.org/whl/cu128"
    assert tables.wheel_index_url("13.0") == "https://download.pytorch.org/whl/cu130"
    assert tables.wheel_index_url("cpu") == "https://download.pytorch.org/whl/cpu"
    assert tables.wheel_index_url("bogus") is None


@pytest.mark.parametrize(
    "case, build, expected",
    [
        ("case005", "py3.7_cuda10.1.243_cudnn7.6.3_0", ("10.1.243", "7.6.3")),
        ("case009", "py3.7_cuda9.0.176_cudnn7.4.1_1", ("9.0.176", "7.4.1")),
        ("case010", "py3.6_cuda90_cudnn7_1", ("9.0", "7")),
        ("case013", "py3.7_cuda10.2.89_cudnn7.6.5_0", ("10.2.89", "7.6.5")),
        ("case015", "py3.8_cuda11.0.221_cudnn8.0.3_0", ("11.0.221", "8.0.3")),
        ("case022", "py3.7_cpu_0", (None, None)),
        (None, "py3.9_cuda11.3_cudnn8.2.0_0", ("11.3", "8.2.0")),
    ],
)
def test_cuda_for_conda_build(case, build, expected):
    if case:  # the build string really is in that report
        assert build in json.dumps(_corpus_facts(case))
    assert tables.cuda_for_conda_build(build) == expected


def test_cuda_for_conda_build_unknown():
    assert tables.cuda_for_conda_build("pyhd8ed1ab_0") is None
    assert tables.cuda_for_conda_build(None) is None


# ----------------------------------------------------------------------------------------
# releases
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "torch, python, ok",
    [
        ("1.10.1", "3.10.1", False),  # case016
        ("1.11.0", "3.10", True),
        ("1.2.0a0+b527e48", "3.8", False),  # case021
        ("1.4.0", "2.7", True),
        ("1.5.0", "2.7", False),
        ("1.7.0", "3.9", False),
        ("1.7.1", "3.9", True),
        ("2.0.1", "3.12", False),
        ("2.2.0", "3.12", True),  # experimental wheels
        ("2.8.0", "3.9", True),
        ("2.9.0", "3.9", False),
        ("2.13.0+cpu", "3.11.4", True),
        ("2.13.0", "3.15", False),  # RELEASE.md's "experimental" 3.15 has no cp315 wheel (issue 19)
        ("2.13.0", "3.14t", True),  # the cp314t free-threaded wheels
        ("2.13.0", "3.16", False),
    ],
)
def test_python_supported(torch, python, ok):
    assert tables.python_supported(torch, python) is ok


@pytest.mark.parametrize(
    "torch, python",
    [("9.9", "3.11"), ("2.13.0", None), (None, "3.11"), ("2.16.0", "3.11"), ("N/A", "3.7")],
)
def test_python_supported_unknown(torch, python):
    assert tables.python_supported(torch, python) is None


def test_domain_library_versions():
    assert tables.torchvision_for("2.13.0") == "0.28"
    assert tables.torchvision_for("2.0.1") == "0.15.2"
    assert tables.torchvision_for("1.13.1") == "0.14"
    assert tables.torchvision_for("1.4.0") == "0.5"
    assert tables.torchaudio_for("2.5.1") == "2.5"
    assert tables.torchaudio_for("2.0.0") == "2.0.1"
    assert tables.torchaudio_for("1.7.1") == "0.7.2"
    assert tables.torchaudio_for("1.13.0") == "0.13"
    assert tables.torchaudio_for("2.13.0") == "2.11"
    assert tables.torchvision_for("0.1") is None and tables.torchaudio_for("garbage") is None


def test_every_release_variant_has_cudnn_and_default():
    for release in tables.load("torch_releases")["releases"]:
        variants = release.get("cuda_variants") or []
        if release.get("default_cuda"):
            assert release["default_cuda"] in variants, release["version"]
        for variant in release.get("cudnn") or {}:
            assert variant in variants, (release["version"], variant)


def test_release_variants_have_arch_lists_from_1_8_on():
    for release in tables.load("torch_releases")["releases"]:
        version = Version(release["version"])
        if version < Version("1.8") or release.get("status") == "announced":
            continue
        for variant in release["cuda_variants"]:
            assert tables.wheel_archs(f"{version}.0", variant) is not None, (str(version), variant)


def test_platform_facts_are_plain_data():
    facts = {f["id"]: f for f in tables.load("platforms")["facts"]}
    assert facts["macos-x86_64-last"]["last_torch"] == "2.2"
    assert "2.28" in yaml.safe_dump(
        facts["linux-glibc"]["glibc_min"]
    )  # loaded data is plain dicts/lists


def test_mps_minimum_macos_rose_over_time():
    from torchdoctor.tables import mps_min_macos

    assert mps_min_macos("1.11.0") is None  # no MPS backend yet
    assert mps_min_macos("1.12.1") == "12.3"
    assert mps_min_macos("2.4.1") == "12.3"
    assert mps_min_macos("2.5.1") == "13.0"  # pytorch#133141
    assert mps_min_macos("2.9.0") == "14.0"  # pytorch#162921
