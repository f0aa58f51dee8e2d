"""The libraries around torch (rules/data/torch_ecosystem.yaml and its lookups in torchdoctor.tables):
xformers and flash-attn binaries built for another torch, flash-attn's compute-capability check,
Triton's bundled ptxas against the GPU and the driver, NCCL releases with known defects.

Expected values come from the releases' own files (xformers wheels.yml / CHANGELOG, flash-attn
publish.yml and flash_api.cpp at each tag, the ptxas inside each triton wheel on PyPI, NVIDIA's NCCL
release notes) and from the real reports cited in the data file and the six rules; each case names
its report. The rules' own examples run in tests/test_rule_examples.py.
"""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

import torchdoctor
from torchdoctor import tables
from torchdoctor.tables import DataFileError

ECOSYSTEM_RULES = {
    "xformers-built-for-another-torch",
    "flash-attn-built-for-another-torch",
    "flash-attn-without-kernels-for-gpu",
    "triton-ptxas-lacks-gpu-arch",
    "triton-ptxas-newer-than-driver",
    "nccl-release-with-known-defect",
}


def _data() -> dict:
    return tables.load("torch_ecosystem")


# ----------------------------------------------------------------------------------------
# xformers: one torch per release
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "xformers,torch,kind",
    [
        ("0.0.22", "2.1.0+cu121", "other-minor"),  # facebookresearch/xformers#874 (built for 2.0.1)
        ("0.0.24", "2.3.0+cu121", "other-minor"),  # deforum-stable-diffusion#377 (built for 2.2.0)
        ("0.0.23.post1", "2.1.0+cpu", "cpu-torch"),  # facebookresearch/xformers#971
        ("0.0.25.dev741", "2.2.0+cpu", "cpu-torch"),  # facebookresearch/xformers#982 (a .dev wheel)
        ("0.0.34", "2.9.1+cu128", "older-torch"),  # stable ABI from 2.10 on (CHANGELOG 0.0.34)
        ("0.0.27.post2", "2.4.1+cu124", None),  # reported working, facebookresearch/xformers#1096
        ("0.0.28.post3", "2.5.1+cu124", None),  # the pair pip resolves
        ("0.0.35", "2.12.0+cu130", None),  # stable ABI: a later torch loads it
        ("0.0.28.post3+cu124", "2.5.1+cu124", None),  # the download.pytorch.org label
        ("0.0.21+320b5ad.d20230915", "2.2.0", None),  # a source build (facebookresearch/xformers#859)
        ("0.0.25.dev741", "2.3.0+cu121", None),  # a .dev build against a CUDA torch: not judged
        ("0.0.26", "2.2.2", None),  # tag and CHANGELOG disagree: verified: false, never judged
        ("0.0.99", "2.2.0", None),  # not in the table
    ],
)
def test_xformers_torch_mismatch(xformers, torch, kind):
    found = tables.xformers_torch_mismatch(xformers, torch)
    assert (found and found["kind"]) == kind, found


def test_xformers_mismatch_names_the_build_and_the_release_to_install():
    found = tables.xformers_torch_mismatch("0.0.23.post1", "2.2.0+cu121")
    assert (found["built_for"], found["suggest"]) == ("2.1.2", "0.0.24")
    # several releases for one minor: the one built for this very patch, newest first
    assert tables.xformers_torch_mismatch("0.0.23.post1", "2.2.2")["suggest"] == "0.0.25.post1"
    assert tables.xformers_torch_mismatch("0.0.23.post1", "2.4.0")["suggest"] == "0.0.27.post2"
    # no release built for this torch's minor
    assert tables.xformers_torch_mismatch("0.0.23.post1", "1.12.1")["suggest"] is None
    # a CPU-only torch: no xformers fits it
    assert tables.xformers_torch_mismatch("0.0.23.post1", "2.1.0+cpu")["suggest"] is None


def test_xformers_table_pins_one_torch_per_release():
    rows = _data()["xformers"]["releases"]
    versions = [Version(r["xformers"]) for r in rows]
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    for row in rows:
        assert Version(row["torch"]).release[:1] in ((1,), (2,)), row
    # the builds' torch never goes back as xformers goes forward
    verified = [r for r in rows if r.get("verified") is not False]
    torches = [Version(r["torch"]) for r in verified]
    assert torches == sorted(torches)
    # stable-ABI releases are the newest ones only
    later = [r["xformers"] for r in rows if r.get("later_torch")]
    assert later == [r["xformers"] for r in rows[-len(later):]]


# ----------------------------------------------------------------------------------------
# flash-attn: the prebuilt wheel pip downloads, and the compute-capability check
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "flash_attn,torch,kind,built_with",
    [
        ("2.5.7", "2.3.0", "nightly-build", "2.3.0.dev20240207"),  # Dao-AILab/flash-attention#931
        ("2.5.8", "2.2.0+cu121", "later-patch", "2.2.2"),  # #931, "not compatible with 2.2.0"
        ("2.4.2", "2.1.0+cu121", "later-patch", "2.1.1"),  # Dao-AILab/flash-attention#853
        ("2.5.5+cu118torch2.2cxx11abifalse", "2.3.1", "other-minor", "2.2"),  # the wheel's own label
        ("2.5.8", "2.3.0+cu121", None, None),  # "torch 2.3.0 + flash-attn 2.5.8 works" (#931)
        ("2.6.3", "2.4.1", None, None),  # built against an earlier patch: not judged
        ("2.7.4.post1", "2.8.0+cu128", None, None),  # no wheel for torch 2.8: compiled from source
        ("2.8.3", "2.10.0.dev20250924+cu128", None, None),  # a nightly torch
        ("2.5.8", "2.3.0a0+gitabcdef", None, None),  # a source build of torch
        ("2.5.8+local.build", "2.2.0", None, None),  # a source build of flash-attn
        ("2.0.5", "1.12.1", None, None),  # before 2.0.6 pip always compiled it
    ],
)
def test_flash_attn_torch_mismatch(flash_attn, torch, kind, built_with):
    found = tables.flash_attn_torch_mismatch(flash_attn, torch)
    assert (found and found["kind"], found and found["built_with"]) == (kind, built_with), found


def test_flash_attn_mismatch_suggests_a_release_built_against_this_torch():
    assert tables.flash_attn_torch_mismatch("2.5.7", "2.3.0")["suggest"] == "2.5.9.post1"
    assert tables.flash_attn_torch_mismatch("2.5.8", "2.2.0")["suggest"] == "2.5.7"
    # no release's wheel was built against torch 2.2.1
    assert tables.flash_attn_torch_mismatch("2.5.8", "2.2.1")["suggest"] is None


def test_flash_attn_wheel_table_starts_with_the_wheel_download():
    rows = _data()["flash_attn"]["wheels"]
    versions = [Version(r["flash_attn"]) for r in rows]
    assert versions[0] == Version("2.0.6")  # setup.py's CachedWheelsCommand arrived in 2.0.6
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    for row in rows:
        assert row["torch_builds"] and all(Version(b) for b in row["torch_builds"])


@pytest.mark.parametrize(
    "flash_attn,cc,supported",
    [
        ("2.6.0.post1", 7.0, False),  # Tesla V100S, microsoft/MInference#51
        ("2.4.2", 7.5, False),  # Quadro RTX 5000, Dao-AILab/flash-attention#762
        ("2.7.2", 12.0, False),  # RTX 5090: 8.x or exactly 9.0 before 2.7.3 (#1540)
        ("2.7.2.post1", 10.0, False),
        ("2.7.3", 12.0, True),  # "Generalize arch checks for A100 and above" (#1427)
        ("2.8.3", 10.0, True),
        ("2.7.3", 7.5, False),
        ("2.0.0", 8.9, True),
        ("2.6.3", 9.0, True),
        ("2.6.3+cu123torch2.4cxx11abifalse", 8.0, True),
    ],
)
def test_flash_attn_gpu_support(flash_attn, cc, supported):
    assert tables.flash_attn_gpu_support(flash_attn, cc)["supported"] is supported


def test_flash_attn_1x_is_unverified_and_not_judged():
    assert tables.flash_attn_gpu_support("1.0.9", 7.5) is None
    assert tables.flash_attn_gpu_support("3.0.0b1", 9.0) is None  # FlashAttention 3 is not covered


# ----------------------------------------------------------------------------------------
# Triton: the ptxas each wheel bundles
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "triton,cc,tool,cuda",
    [
        ("2.0.0", 8.0, "ptxas", "12.0"),
        ("2.1.0", 8.0, "ptxas", "12.1"),
        ("2.2.0", 8.0, "ptxas", "12.3"),  # "('.../third_party/cuda/bin/ptxas', '12.3')", pytorch#119054
        ("3.2.0", 12.0, "ptxas", "12.4"),
        ("3.3.0", 9.0, "ptxas", "12.4"),
        ("3.3.0", 12.0, "ptxas-blackwell", "12.8"),
        ("3.4.0", 12.0, "ptxas", "12.8"),  # 3.4 and 3.5 ship one ptxas for every GPU
        ("3.5.0+git7416ffcb", 12.1, "ptxas", "12.8"),  # pytorch-triton, triton-lang/triton#8539
        ("3.6.0", 11.0, "ptxas-blackwell", "12.9"),
        ("3.6.0", 8.6, "ptxas", "12.8"),
        ("3.7.1", 10.0, "ptxas-blackwell", "13.1"),
        ("3.9.0", 9.0, "ptxas", "12.9"),
    ],
)
def test_triton_ptxas(triton, cc, tool, cuda):
    found = tables.triton_ptxas(triton, cc)
    assert (found["tool"], found["cuda"]) == (tool, cuda)


def test_every_triton_release_has_one_selection_and_its_binaries():
    data = _data()["triton"]
    for row in data["releases"]:
        version = Version(row["triton"])
        rules = [s for s in data["selection"] if SpecifierSet(s["triton"]).contains(version)]
        assert len(rules) == 1, row["triton"]
        # a bundled ptxas-blackwell exactly where the compiler selects one
        assert (row["ptxas_blackwell"] is not None) == (rules[0]["blackwell_from_cc"] is not None), row
        assert Version(row["ptxas"]) >= Version("12.0")


@pytest.mark.parametrize(
    "triton,cc,arch,needs,first",
    [
        ("3.5.0+git7416ffcb", 12.1, "sm_121", "12.9", "3.6.0"),  # DGX Spark, triton-lang/triton#8539
        ("3.2.0", 12.0, "sm_120", "12.8", "3.3.0"),  # RTX 5090, fishaudio/fish-speech#907
        ("3.6.0", 11.0, "sm_110", "13.0", "3.7.0"),  # Jetson Thor, triton-inference-server#8632
    ],
)
def test_triton_ptxas_lacks_arch(triton, cc, arch, needs, first):
    found = tables.triton_ptxas_lacks_arch(triton, cc)
    assert (found["arch"], found["needs"], found["first_triton"]) == (arch, needs, first)


def test_triton_ptxas_knows_the_arch_or_is_replaced():
    assert tables.triton_ptxas_lacks_arch("3.3.1", 12.0) is None  # ptxas-blackwell 12.8
    assert tables.triton_ptxas_lacks_arch("3.2.0", 9.0) is None
    env = {"TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"}  # the answer in triton-lang/triton#8539
    assert tables.triton_ptxas_lacks_arch("3.5.0", 12.1, env) is None
    # the Blackwell binary has its own variable from 3.6 on
    assert tables.triton_ptxas_lacks_arch("3.6.0", 11.0, env) is not None
    assert tables.triton_ptxas_lacks_arch("3.6.0", 11.0, {"TRITON_PTXAS_BLACKWELL_PATH": "/x/ptxas"}) is None
    assert tables.triton_ptxas_lacks_arch("3.2.0", 12.0, {"TRITON_PTXAS_PATH": "  "}) is not None


def test_triton_driver_too_old():
    found = tables.triton_driver_too_old("2.2.0", 8.0, "470.182.03")  # pytorch/pytorch#119054
    assert (found["cuda"], found["floor"]) == ("12.3", "525.60.13")
    assert tables.triton_driver_too_old("2.2.0", 8.0, "535.104.05") is None  # triton-lang/triton#3001
    assert tables.triton_driver_too_old("2.2.0", 8.0, "525.60.13") is None
    assert tables.triton_driver_too_old("2.2.0", 8.0, "470.182.03", {"TRITON_PTXAS_PATH": "/usr/local/cuda-11.8/bin/ptxas"}) is None
    assert tables.triton_driver_too_old("2.2.0", 8.0, None) is None


# ----------------------------------------------------------------------------------------
# NCCL
# ----------------------------------------------------------------------------------------


def test_nccl_2_18_1_on_hopper():
    found = tables.nccl_known_defects("2.18.1", [9.0, 9.0])
    assert [d["id"] for d in found] == ["nccl-2.18.1-ll128-corruption-hopper"]
    assert found[0]["fixed_in"] == "2.18.3"
    assert tables.nccl_known_defects("2.18.3", [9.0]) == []
    assert tables.nccl_known_defects("2.18.1", [8.0, 8.6]) == []
    assert tables.nccl_known_defects("2.18.1+cuda12.1", 9.0)  # a single value and a local label


@pytest.mark.parametrize(
    "value,mitigated",
    [
        ("^LL128", True),
        ("^LL,LL128", True),
        ("Simple,LL", True),
        ("simple", True),
        ("LL128", False),
        ("Simple,LL128", False),
        ("^LL", False),
        ("", False),
    ],
)
def test_nccl_proto_workaround(value, mitigated):
    found = tables.nccl_known_defects("2.18.1", [9.0], {"NCCL_PROTO": value})
    assert (found == []) is mitigated


def test_nccl_other_workaround_and_unknown_env():
    assert tables.nccl_known_defects("2.18.1", [9.0], {"NCCL_IB_PCI_RELAXED_ORDERING": "0"}) == []
    assert tables.nccl_known_defects("2.18.1", [9.0], {"NCCL_IB_PCI_RELAXED_ORDERING": "1"}) != []
    assert tables.nccl_known_defects("2.18.1", [9.0], None) != []  # unknown env: not assumed applied


def test_nccl_defects_are_fixed_where_they_say():
    for row in _data()["nccl"]["defects"]:
        spec = SpecifierSet(row["nccl"])
        assert not spec.contains(row["fixed_in"]), row["id"]
        assert all(tables.arch_for_cc(cc) for cc in row["compute_capabilities"]), row["id"]


# ----------------------------------------------------------------------------------------
# hostile and malformed input
# ----------------------------------------------------------------------------------------

HOSTILE = [None, 42, 2.5, "", " ", "x" * 5000, "1" * 5000, "9" * 81, "2.1.0+" + "+" * 100, {"a": 1}, ["2.1.0"],
           "2.1.0\x00", "🐍"]


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
def test_lookups_take_any_value(value):
    assert tables.xformers_torch_mismatch(value, "2.2.0") is None
    assert tables.xformers_torch_mismatch("0.0.22", value) is None
    assert tables.flash_attn_torch_mismatch(value, "2.3.0") is None
    assert tables.flash_attn_torch_mismatch("2.5.7", value) is None
    assert tables.flash_attn_gpu_support(value, 8.0) is None
    assert tables.triton_ptxas(value) is None
    # a number is a compute capability (42 -> 42.0, one no table knows); anything else is unknown
    for found in (tables.flash_attn_gpu_support("2.6.3", value), tables.triton_ptxas_lacks_arch("3.2.0", value)):
        assert found is None or (isinstance(value, (int, float)) or value.isdigit()) and isinstance(found, dict)
    assert tables.triton_driver_too_old("2.2.0", 8.0, value) is None
    assert tables.nccl_known_defects(value, [9.0]) == []
    assert tables.nccl_known_defects("2.18.1", value) == []
    assert isinstance(tables.nccl_known_defects("2.18.1", [9.0], value), list)


def test_malformed_table_names_the_file(monkeypatch):
    broken = {"triton": {"releases": [{"triton": "3.2.0", "ptxas": "twelve"}], "selection": []}}
    monkeypatch.setattr(tables, "load", lambda name, directory=None: broken)
    with pytest.raises(DataFileError, match="torch_ecosystem.yaml"):
        tables.triton_ptxas("3.2.0")
    monkeypatch.setattr(tables, "load", lambda name, directory=None: {"xformers": {"releases": "no"}})
    with pytest.raises(DataFileError, match=r"xformers\.releases"):
        tables.xformers_torch_mismatch("0.0.22", "2.1.0")


# ----------------------------------------------------------------------------------------
# pasted reports, through torchdoctor.check
# ----------------------------------------------------------------------------------------

# pytorch/pytorch#119054 ("Triton Error [CUDA]: device kernel image is invalid"): the collect_env,
# cut after the driver and cuDNN lines as quoted there; the `[pip3]` lines are the torch it names and the
# triton 2.2.0 that torch 2.2.0 pins (the issue prints its bundled ptxas: ('.../triton/common/../third_party/
# cuda/bin/ptxas', '12.3'), which is triton 2.2's layout and version).
REPORT_119054 = """\
Collecting environment information...
PyTorch version: 2.2.0+cu118
Is debug build: False
CUDA used to build PyTorch: 11.8
ROCM used to build PyTorch: N/A

OS: Ubuntu 20.04.6 LTS (x86_64)
GCC version: (Ubuntu 9.4.0-1ubuntu1~20.04.1) 9.4.0
Clang version: Could not collect
CMake version: version 3.16.3
Libc version: glibc-2.31

Python version: 3.11.7 (main, Dec 15 2023, 18:12:31) [GCC 11.2.0] (64-bit runtime)
Python platform: Linux-5.4.254-170.358.amzn2.x86_64-x86_64-with-glibc2.31
Is CUDA available: True
CUDA runtime version: 11.8.89
CUDA_MODULE_LOADING set to: LAZY
GPU models and configuration:
GPU 0: NVIDIA A100-SXM4-80GB
GPU 1: NVIDIA A100-SXM4-80GB
GPU 2: NVIDIA A100-SXM4-80GB
GPU 3: NVIDIA A100-SXM4-80GB
GPU 4: NVIDIA A100-SXM4-80GB
GPU 5: NVIDIA A100-SXM4-80GB
GPU 6: NVIDIA A100-SXM4-80GB
GPU 7: NVIDIA A100-SXM4-80GB

Nvidia driver version: 470.182.03
cuDNN version: Probably one of the following:
/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.0

Versions of relevant libraries:
[pip3] torch==2.2.0+cu118
[pip3] triton==2.2.0
"""


def _ids(report) -> set:
    return {f.id for f in report.findings}


def test_collect_env_with_old_driver_names_triton():
    report = torchdoctor.check(report=REPORT_119054)
    assert "triton-ptxas-newer-than-driver" in _ids(report)
    assert "driver-too-old-for-cuda-build" not in _ids(report)  # torch itself runs on R470
    # the same machine after the driver upgrade of triton-lang/triton#3001
    healthy = torchdoctor.check(report=REPORT_119054.replace("470.182.03", "535.104.05"))
    assert not _ids(healthy) & ECOSYSTEM_RULES


def test_pip_lists_of_the_reports():
    # deforum-stable-diffusion#377: torch moved to 2.3.0, xformers stayed the one built for 2.2.0
    report = torchdoctor.check(report="torch                  2.3.0+cu121\nxformers               0.0.24\n")
    assert "xformers-built-for-another-torch" in _ids(report)
    # Dao-AILab/flash-attention#931: installing from scratch gave torch 2.3.0 and flash-attn 2.5.7
    report = torchdoctor.check(report="torch==2.3.0\nflash-attn==2.5.7\n")
    assert "flash-attn-built-for-another-torch" in _ids(report)
    # the pairs the maintainers name as working
    report = torchdoctor.check(report="torch==2.3.0\nflash-attn==2.5.8\nxformers==0.0.26.post1\ntriton==2.3.0\n")
    assert not _ids(report) & ECOSYSTEM_RULES


def test_xformers_warning_says_which_torch_is_installed():
    """xformers' warning names the torch it was built for first and the installed one in
    "(you have ...)": the installed one is the fact (paste_patterns.yaml, xformers-built-for)."""
    text = (  # facebookresearch/xformers#971, as pasted
        "python -m xformers.info\n"
        "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
        "    PyTorch 2.1.2+cu121 with CUDA 1201 (you have 2.1.0+cpu)\n"
        "    Python  3.9.13 (you have 3.9.13)\n"
        "  Please reinstall xformers (see https://github.com/facebookresearch/xformers#installing-xformers)\n"
        "xFormers 0.0.23.post1\n"
        "memory_efficient_attention.cutlassF:               unavailable\n"
    )
    report = torchdoctor.check(report=text)
    assert report.facts.torch.version == "2.1.0+cpu"
    assert "xformers-built-for-another-torch" in _ids(report)
