"""Importers: pasted collect_env reports and torchdoctor JSON -> Facts.

Inputs are the 40 real reports of ``tests/data/corpus`` (copied from /work/shared/corpus;
each ``caseNNN.json`` holds a person's reading of the report) and this machine's own
collect_env output (``tests/data/corpus/extra``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchdoctor import tables
from torchdoctor.facts import SCHEMA_VERSION, Facts, Unavailable
from torchdoctor.importers import MAX_REPORT_BYTES, ReportError, load_report
from torchdoctor.importers.collect_env import (
    COULD_NOT_COLLECT,
    NOT_STATED,
    TORCH_NOT_IMPORTED,
    cudnn_versions,
    conda_python,
    parse_collect_env,
    parse_fields,
    provides_torch,
    same_release,
)

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
EXTRA = CORPUS / "extra"
CASE_IDS = sorted(p.stem for p in CORPUS.glob("case*.txt"))
MODERN = EXTRA / "collect_env-2.13.0+cpu-debian12-x86_64.txt"


def raw(case: str) -> bytes:
    return (CORPUS / f"{case}.txt").read_bytes()


def text(case: str) -> str:
    return raw(case).decode("utf-8")


def reading(case: str) -> dict:
    return json.loads((CORPUS / f"{case}.json").read_text(encoding="utf-8"))["facts"]


def load(case: str) -> Facts:
    return load_report(raw(case), f"{case}.txt")


def unavailable(value) -> bool:
    return isinstance(value, Unavailable)


def first_version(s: str) -> str:
    m = re.search(r"\d+(?:\.\d+)*", s)
    assert m, s
    return m.group(0)


def same_prefix(a: str, b: str) -> bool:
    """'9.0.176' and '9.0' agree; '10.1' and '10.2' do not."""
    pa, pb = a.split("."), b.split(".")
    n = min(len(pa), len(pb))
    return n >= 1 and pa[:n] == pb[:n]


def test_corpus_is_complete():
    assert len(CASE_IDS) == 40
    for case in CASE_IDS:
        assert (CORPUS / f"{case}.json").exists()


# --------------------------------------------------------------------------------------
# every corpus report parses, and agrees with the human reading
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASE_IDS)
def test_corpus_report_parses(case):
    facts = load(case)
    assert isinstance(facts, Facts)
    assert facts.origin == "report"
    assert facts.schema_version == SCHEMA_VERSION
    assert not unavailable(facts.system)
    # what the report cannot say is unavailable, never a default
    assert unavailable(facts.memory) and facts.memory.reason == NOT_STATED
    assert unavailable(facts.env)


# Readings a parser must not copy: the person knew more than the report says.
TORCH_EXCEPTIONS = {
    # the "PyTorch version" line was cut off; only the pip section names 1.2.0
    "case031": lambda f: (
        unavailable(f.torch.version)
        and f.torch.version.reason == NOT_STATED
        and f.packages.versions["torch"] == "1.2.0"
    ),
    "case025": lambda f: unavailable(f.torch.version) and f.torch.import_status == "import-error",
    "case027": lambda f: unavailable(f.torch.version) and f.torch.import_status == "not-installed",
}


@pytest.mark.parametrize("case", CASE_IDS)
def test_corpus_torch_version_matches_reading(case):
    facts, human = load(case), reading(case)["torch"]
    if case in TORCH_EXCEPTIONS:
        assert TORCH_EXCEPTIONS[case](facts)
        return
    assert facts.torch.import_status == "ok"
    assert facts.torch.version == human.split()[0]


@pytest.mark.parametrize("case", CASE_IDS)
def test_corpus_cuda_build_matches_reading(case):
    facts, human = load(case), reading(case)["cuda_build"]
    parsed = facts.torch.cuda_build
    low = human.lower()
    if low.startswith("none"):
        assert parsed is None  # a CPU build: torch.version.cuda is None
    elif low.startswith("n/a"):
        assert unavailable(parsed) and parsed.reason == TORCH_NOT_IMPORTED
    elif " / " in human:
        # hand-edited "10.1 & 10.2 (NGC 20.03 container)": two values, so neither is taken
        assert unavailable(parsed) and "several values" in parsed.reason
    else:
        assert isinstance(parsed, str) and same_prefix(parsed, first_version(human)), parsed


def human_gpu_names(human: str) -> list[str]:
    names = []
    for part in human.split(" + "):
        part = re.sub(r" per node.*$| \(.*\)$", "", part.strip())
        m = re.fullmatch(r"(\d+)x (.+)", part)
        names += [m.group(2)] * int(m.group(1)) if m else [part]
    return names


@pytest.mark.parametrize("case", CASE_IDS)
def test_corpus_gpus_match_reading(case):
    gpu, human = load(case).gpu, reading(case)["gpu"]
    low = human.lower()
    if low.startswith(("apple", "none")):
        # no NVIDIA GPU: either stated ("No CUDA") or not collected
        assert (
            gpu.count == 0 if not unavailable(gpu.count) else gpu.count.reason == COULD_NOT_COLLECT
        )
        return
    if low.startswith("amd"):
        assert unavailable(gpu.count)
        return
    names = human_gpu_names(human)  # "2x TITAN RTX", "TITAN V + TITAN Xp + GeForce RTX 2080 Ti"
    assert [d.name for d in gpu.devices] == names
    assert gpu.count == len(names)
    assert gpu.name == names[0]
    assert gpu.source == "report"


@pytest.mark.parametrize("case", CASE_IDS)
def test_corpus_compute_capability_matches_reading(case):
    human = reading(case)["compute_capability"]
    if human.lower().startswith("n/a"):
        pytest.skip("no NVIDIA GPU in this report")
    gpu = load(case).gpu
    expected = [float(x) for x in re.findall(r"\d+\.\d+", human)]
    parsed = list(dict.fromkeys(d.compute_capability for d in gpu.devices))
    assert parsed == expected
    assert gpu.min_compute_capability == min(expected)
    assert gpu.max_compute_capability == max(expected)


def test_compute_capability_comes_from_the_gpu_name_table():
    gpu = load("case023").gpu
    assert gpu.devices
    for device in gpu.devices:
        assert device.compute_capability == 8.6 and device.architecture == "Ampere"


@pytest.mark.parametrize("case", CASE_IDS)
def test_corpus_driver_matches_reading(case):
    driver, human = load(case).gpu.driver_version, reading(case)["driver"]
    low = human.lower()
    if low.startswith("no cuda"):
        assert driver is None
    elif low.startswith("could not collect"):
        assert unavailable(driver) and driver.reason == COULD_NOT_COLLECT
    elif low.startswith("n/a"):
        assert driver is None or unavailable(driver)
    else:
        assert driver == human.split()[0]


@pytest.mark.parametrize("case", CASE_IDS)
def test_corpus_os_matches_reading(case):
    system, human = load(case).system, reading(case)["os"]
    main = re.split(r" \(|, ", human)[0]
    assert isinstance(system.os_name, str) and main in system.os_name
    expected_family = (
        "Windows"
        if "Windows" in human
        else "Darwin"
        if human.startswith("mac") or "Mac OS" in human
        else "Linux"
    )
    assert system.os == expected_family


@pytest.mark.parametrize("case", CASE_IDS)
def test_corpus_python_matches_reading(case):
    system, human = load(case).system, reading(case)["python"]
    assert system.python_version == first_version(human)


# --------------------------------------------------------------------------------------
# what particular corpus reports teach
# --------------------------------------------------------------------------------------


def test_two_torch_distributions_are_two_providers():
    # case001: stable torch 0.4.1.post2 and torch-nightly 1.0.0.dev20181029 (both via <pip>)
    f = load("case001")
    assert f.packages.torch_providers == ["torch", "torch-nightly"]
    assert f.packages.versions["torch-nightly"] == "1.0.0.dev20181029"
    conda_rows = [d for d in f.packages.distributions if d.source == "report-conda"]
    assert {d.channel for d in conda_rows} == {"pypi"}
    assert f.system.env_manager == "conda"


def test_conda_pytorch_and_pip_torch_of_different_versions_are_two_installs():
    f = load("case005")
    assert f.packages.torch_providers == ["torch", "pytorch"]
    assert f.packages.versions["torch"] == "1.2.0"  # pip first
    assert f.packages.versions["pytorch"] == "1.3.0"
    # the running torch is the conda build; its build string says which cuDNN it bundles
    assert f.torch.cudnn_version == "7.6.3"
    assert f.torch.cudnn_compiled_version == "7.6.3"
    row = next(d for d in f.packages.distributions if d.name == "pytorch")
    assert (row.build, row.channel) == ("py3.7_cuda10.1.243_cudnn7.6.3_0", "pytorch")


def test_same_install_listed_by_pip_and_conda_is_one_provider():
    for case in ("case013", "case014", "case023", "case031", "case036"):
        assert load(case).packages.torch_providers in (["torch"], ["pytorch"]), case


def test_pypi_wheel_version_with_local_label_is_the_listed_install():
    # case029: torch.__version__ 1.8.1+cu102, pip metadata 1.8.1
    assert load("case029").packages.torch_providers == ["torch"]


def test_messy_environment_lists_three_installs():
    # case034: conda pytorch 1.9.0 + pip torch 1.9.0+cu111 + stale conda-listed torch 1.2.0
    f = load("case034")
    assert f.packages.torch_providers == ["torch", "pytorch", "torch"]
    assert f.torch.version == "1.9.0"
    assert f.torch.cudnn_version == "8"  # py3.7_cuda11.1_cudnn8_0


def test_imported_torch_missing_from_the_package_list_is_another_install():
    # case035: collect_env ran under Python 2.7 with torch 0.4.0; pip lists torch 1.4.0
    f = load("case035")
    assert f.torch.version == "0.4.0"
    assert f.packages.versions["torch"] == "1.4.0"
    assert f.packages.torch_providers == ["torch", "torch"]


def test_conda_section_of_another_environment_is_not_counted():
    # case017: Python 3.10 with pip torch 1.14 nightly; conda lists py3.9 builds of 1.13
    f = load("case017")
    assert f.packages.torch_providers == ["torch"]
    assert "pytorch" not in f.packages.versions
    assert any(d.name == "pytorch" for d in f.packages.distributions)  # still listed
    assert unavailable(f.system.env_manager)


def test_leftover_egg_entries_are_reported_as_they_are():
    # case008: seven torch 0.5.0a0 entries from repeated `setup.py develop` builds
    f = load("case008")
    assert len(f.packages.torch_providers) == 7
    assert f.torch.debug_build is True
    assert (
        f.packages.versions["torch"] == "0.5.0a0+e449a27"
    )  # 0.4-era "[pip] torch (0.5.0a0+e449a27)"
    assert f.packages.versions["numpy"] == "1.15.0"


def test_could_not_collect_cuda_build_means_cpu_build():
    # case006 diagnosis: 'Could not collect' means torch.version.cuda is None
    f = load("case006")
    assert f.torch.cuda_build is None
    assert f.torch.cudnn_version is None
    assert f.gpu.count == 1 and f.gpu.name == "GeForce RTX 2080 Ti"
    assert f.system.cudnn_version == "7.6.5"
    assert f.system.cuda_toolkit_version == "10.1.105"


def test_torch_na_with_torch_listed_is_an_import_error():
    f = load("case025")
    assert f.torch.import_status == "import-error"
    assert unavailable(f.torch.import_error)
    assert (
        unavailable(f.torch.cuda_available) and f.torch.cuda_available.reason == TORCH_NOT_IMPORTED
    )
    assert f.packages.torch_providers == ["torch"]


def test_torch_na_without_torch_listed_is_not_installed():
    f = load("case027")
    assert f.torch.import_status == "not-installed"
    assert f.torch.import_error is None
    assert f.packages.torch_providers == []


def test_report_missing_its_header_still_says_torch_imported():
    f = load("case031")
    assert f.torch.import_status == "ok"
    assert f.torch.debug_build is False
    assert f.torch.cuda_build == "10.0.130"
    assert f.gpu.count == 2


def test_terminal_merged_lines_are_split():
    # case030: "GPU models and configuration:   GPU 0: ...   GPU 1: ..." and two conda rows
    f = load("case030")
    assert f.gpu.count == 8
    assert [d.index for d in f.gpu.devices] == list(range(8))
    names = [d.name for d in f.packages.distributions]
    assert "tcop-pytorch" in names and names.count("tcop-pytorch") == 2
    assert f.packages.versions["numpy"] == "1.16.3"


def test_hand_edited_field_names_and_full_width_colons():
    # case004: "PyTorch version 1.5.0" (no colon), "Os:", "GPU 0： ..." and
    # "Version of relevant libraries:"
    f = load("case004")
    assert f.torch.version == "1.5.0"
    assert f.system.os_name == "Ubuntu 18.04.3 LTS"
    assert f.gpu.count == 4 and f.gpu.name == "Tesla P100-PCIE-16GB"
    assert f.packages.versions["torchvision"] == "0.6.0"


def test_mojibake_os_line_is_still_windows():
    f = load("case011")
    assert f.system.os == "Windows"
    assert f.system.os_version == "10"
    assert f.system.libc is None


def test_wrapped_windows_dll_path():
    # case002: "...\CUDA\v10.0\bin\cudn" + "n64_7.dll"
    f = load("case002")
    assert f.system.cudnn_version == "7"
    assert parse_fields(text("case002"))["cudnn_version"].startswith("C:\\Program Files")
    assert unavailable(f.torch.cudnn_version)


def test_system_cudnn_is_not_the_cudnn_torch_loads():
    # case039: the cu102 wheel bundles cuDNN; /usr0/local/cuda-9.0 has a stale 7.0.5
    f = load("case039")
    assert f.system.cudnn_version == "7.0.5"
    assert unavailable(f.torch.cudnn_version)
    assert "7.0.5" in f.torch.cudnn_version.reason
    # case040: highest complete version of a "Probably one of the following" list
    assert load("case040").system.cudnn_version == "6.0.21"
    assert load("case016").system.cudnn_version == "8.3.0"


def test_libc_from_python_before_3_8_is_not_trusted():
    f = load("case038")  # glibc-2.3.4 on CentOS 7 (really 2.17), Python 3.6
    assert unavailable(f.system.libc) and "3.8" in f.system.libc.reason
    assert load("case023").system.libc == "glibc 2.35"


def test_python_platform_line():
    s = load("case016").system
    assert (s.kernel, s.machine, s.python_bits, s.wsl) == ("5.15.11-arch2-1", "x86_64", 64, None)
    assert s.python_implementation == "CPython"
    s = load("case034").system  # [MSC v.1916 64 bit (AMD64)], Windows-10-10.0.19041-SP0
    assert (s.os_version, s.machine, s.python_bits) == ("10.0.19041", "AMD64", 64)


def test_macos_arm64():
    f = load("case007")
    s = f.system
    assert (s.os, s.os_name, s.os_version, s.machine, s.translated) == (
        "Darwin",
        "macOS 13.7.4",
        "13.7.4",
        "arm64",
        False,
    )
    assert f.cpu.model == "Apple M2 Max" and f.cpu.vendor == "Apple"
    assert f.gpu.count == 0 and f.gpu.driver_version is None
    assert f.torch.xpu_available is False


def test_lscpu_section():
    cpu = load("case018").cpu
    assert (
        cpu.architecture,
        cpu.vendor,
        cpu.logical_cores,
        cpu.physical_cores,
        cpu.sockets,
        cpu.numa_nodes,
    ) == ("x86_64", "GenuineIntel", 224, 112, 2, 2)
    assert cpu.flags["amx_bf16"] and cpu.flags["avx512_bf16"] and cpu.flags["avx2"]
    assert cpu.flags["neon"] is False
    assert unavailable(cpu.affinity)


def test_no_cpu_section_is_unavailable():
    assert unavailable(load("case023").cpu)


def test_report_without_a_version_for_rocm():
    report = (
        "PyTorch version: 2.1.0+rocm5.6\nIs debug build: False\nCUDA used to build PyTorch: N/A\n"
        "ROCM used to build PyTorch: 5.6.31061-8c743ae5d\n\nOS: Ubuntu 22.04.3 LTS (x86_64)\n"
        "Python version: 3.10.12 (main, Jun 11 2023, 05:26:28) [GCC 11.4.0] (64-bit runtime)\n"
        "Is CUDA available: True\nGPU models and configuration: AMD Radeon RX 7900 XTX (gfx1100)\n"
        "Nvidia driver version: Could not collect\nHIP runtime version: 5.6.31061\n"
    )
    f = parse_collect_env(report)
    assert f.torch.cuda_build is None
    assert f.torch.hip_build == "5.6.31061"
    assert f.torch.cudnn_version is None
    assert f.torch.hip_runtime_version == "5.6.31061"
    # on ROCm the GPU line is torch's current device: named, not counted
    g = f.gpu
    assert unavailable(g.count) and "names only the GPU torch uses" in g.count.reason
    assert g.vendors == ["amd"] and g.name == "AMD Radeon RX 7900 XTX"
    (d,) = g.devices
    assert (d.index, d.name, d.vendor, d.gfx_target) == (0, "AMD Radeon RX 7900 XTX", "amd", "gfx1100")
    assert unavailable(d.compute_capability) and unavailable(g.min_compute_capability)


def test_modern_report_from_this_machine():
    f = load_report(MODERN.read_bytes(), MODERN.name)
    t, s, c = f.torch, f.system, f.cpu
    assert (t.version, t.import_status, t.debug_build, t.cuda_build, t.hip_build) == (
        "2.13.0+cpu",
        "ok",
        False,
        None,
        None,
    )
    assert t.cuda_available is False and t.xpu_available is False
    assert (s.os, s.os_name, s.os_version, s.libc, s.python_version, s.python_bits) == (
        "Linux",
        "Debian GNU/Linux 12 (bookworm)",
        "12",
        "glibc 2.36",
        "3.11.7",
        64,
    )
    assert s.cuda_toolkit_version == "13.0.88"
    assert (c.architecture, c.logical_cores, c.physical_cores, c.vendor) == (
        "x86_64",
        2,
        2,
        "GenuineIntel",
    )
    assert c.flags["avx512f"] is True
    assert f.packages.torch_providers == ["torch"]
    assert unavailable(f.gpu.count) and f.gpu.count.reason == COULD_NOT_COLLECT


def modern_with_cpu(lscpu: str) -> str:
    base = MODERN.read_text(encoding="utf-8")
    head, rest = base.split("CPU:\n", 1)
    tail = rest[rest.index("\nVersions of relevant libraries") :]
    return head + "CPU:\n" + lscpu.rstrip("\n") + "\n" + tail


@pytest.mark.parametrize(
    "name, arch, logical, physical, flags",
    [
        # Flags wrapped at 80 columns, mid-word: "nx rd" / "tscp lm", "fsgsbas" / "e bmi1"
        (
            "xeon-e5-2686v4-aws-xen-1vcpu-wrapped-80col",
            "x86_64",
            1,
            1,
            {"avx2": True, "avx512f": False},
        ),
        ("grace-neoverse-v2-gh200", "aarch64", 72, 72, {"neon": True, "sve": True, "sve2": True}),
        (
            "xeon-platinum-8468-2s-sapphirerapids-amx",
            "x86_64",
            96,
            96,
            {"amx_tile": True, "amx_int8": True},
        ),
        ("power9-2s-traverse", "ppc64le", 128, 32, None),
        ("apple-silicon-vm-aarch64-2cpu", "aarch64", 2, 2, {"neon": True, "sve": False}),
    ],
)
def test_lscpu_variants_in_the_cpu_section(name, arch, logical, physical, flags):
    lscpu = (EXTRA / "lscpu" / f"{name}.txt").read_text(encoding="utf-8")
    cpu = parse_collect_env(modern_with_cpu(lscpu)).cpu
    assert (cpu.architecture, cpu.logical_cores, cpu.physical_cores) == (arch, logical, physical)
    if flags is None:
        assert unavailable(cpu.flags)
    else:
        assert {k: cpu.flags[k] for k in flags} == flags


def test_wrapped_flags_are_joined_inside_words():
    lscpu = (EXTRA / "lscpu" / "xeon-e5-2686v4-aws-xen-1vcpu-wrapped-80col.txt").read_text()
    fields = parse_fields(modern_with_cpu(lscpu))
    assert "tscp lm" in fields["cpu_info"]  # raw field keeps the text as pasted
    cpu = parse_collect_env(modern_with_cpu(lscpu)).cpu
    assert cpu.flags["avx2"] is True


def test_windows_cpu_section():
    cpu_block = (
        "Name: 12th Gen Intel(R) Core(TM) i7-12700H\nManufacturer: GenuineIntel\nFamily: 198\n"
        "Architecture: 9\nProcessorType: 3\nDeviceID: CPU0\nCurrentClockSpeed: 2300\n"
    )
    cpu = parse_collect_env(modern_with_cpu(cpu_block)).cpu
    assert (cpu.model, cpu.vendor, cpu.architecture, cpu.sockets) == (
        "12th Gen Intel(R) Core(TM) i7-12700H",
        "GenuineIntel",
        "x86_64",
        1,
    )
    assert unavailable(cpu.flags) and unavailable(cpu.physical_cores)


# --------------------------------------------------------------------------------------
# formatting variants of one report
# --------------------------------------------------------------------------------------

BASE = "case023"  # modern layout: platform, libc, multi-GPU list, pip and conda rows


def same_facts(variant: str, case: str = BASE) -> None:
    assert load_report(variant.encode("utf-8"), "variant.txt") == load(case)


def test_variant_crlf():
    same_facts(text(BASE).replace("\r\n", "\n").replace("\n", "\r\n"))
    same_facts(text(BASE).replace("\r\n", "\n"))
    same_facts(text(BASE).replace("\r\n", "\r"))  # old Mac line ends


def test_variant_indented_block():
    same_facts("".join("    " + line for line in text(BASE).splitlines(True)))
    same_facts("".join("\t" + line for line in text(BASE).splitlines(True)))


def test_variant_github_markdown():
    body = text(BASE).replace("\r\n", "\n")
    same_facts(
        "### Versions\n\n<details><summary>collect_env</summary>\n\n```\n"
        + body
        + "```\n\n</details>\n"
        "\nThanks for looking!\n"
    )
    same_facts("".join("> " + line for line in body.splitlines(True)))
    same_facts("".join("- " + line if line.strip() else line for line in body.splitlines(True)))


def test_variant_full_width_colons_and_label_case():
    body = text(BASE)
    same_facts(re.sub(r"^([A-Za-z][^:\r\n]*?):", r"\1：", body, flags=re.M))
    same_facts(body.replace("PyTorch version", "Pytorch Version").replace("OS:", "Os :"))


def test_variant_non_breaking_spaces_and_zero_width_characters():
    body = text(BASE)
    same_facts(
        body.replace("PyTorch version: ", "PyTorch\u00a0version:\u00a0").replace(
            "GPU 1", "GPU\u200b 1"
        )
    )


def test_variant_ansi_colours():
    same_facts(text(BASE).replace("PyTorch version", "\x1b[1mPyTorch version\x1b[0m"))


def test_variant_truncated_report():
    body = text(BASE).replace("\r\n", "\n")
    cut = body[: body.index("GPU 1:")]
    f = load_report(cut.encode(), "cut.txt")
    assert f.torch.version == "1.12.1+cu116"
    assert f.gpu.count == 1  # only GPU 0 made it
    assert unavailable(f.gpu.driver_version) and f.gpu.driver_version.reason == NOT_STATED
    assert unavailable(f.packages) and f.packages.reason == NOT_STATED
    # cut in the middle of a line
    f = load_report(body[: body.index("Python version") + 19].encode(), "cut.txt")
    assert f.system.python_version == "3.9"


def test_variant_several_reports_pasted_first_is_read():
    first = text("case023").replace("\r\n", "\n")
    second = text("case016")
    f = load_report((first + "\n\nand on my other machine:\n\n" + second).encode(), "two.txt")
    assert f.torch.version == "1.12.1+cu116"
    # a note on how the text was read, not a problem: an info finding, never a warning
    assert f.problems == [] and any("several reports" in n for n in f.notes)
    from torchdoctor.engine import evaluate
    from torchdoctor.rules import load_rules

    [note] = [x for x in evaluate(load_rules(), f).findings if x.category == "probe"]
    assert (note.id, note.severity) == ("reading-note", "info")
    f = load_report((first + "\n" + "PyTorch version: 9.9.9\n").encode(), "two.txt")
    assert f.torch.version == "1.12.1+cu116"


def test_variant_trailing_junk_and_leading_issue_text():
    body = text(BASE).replace("\r\n", "\n")
    junk = '## 🐛 Bug\n\nTraceback (most recent call last):\n  File "x.py", line 1\nRuntimeError: CUDA error: boom\n\n'
    f = load_report((junk + body + "\n\ncc @someone: please look\n").encode(), "issue.md")
    assert f == load(BASE)


def test_variant_issue_template_fields():
    template = (
        "## Environment\n\n - PyTorch Version (e.g., 1.0): 1.4.0\n - OS (e.g., Linux): Ubuntu 18.04\n"
        " - How you installed PyTorch (`conda`, `pip`, source): pip\n - Python version: 3.7\n"
        " - CUDA/cuDNN version: 10.1\n - GPU models and configuration: GeForce GTX 1080\n"
    )
    f = load_report(template.encode(), "issue.md")
    assert (f.torch.version, f.system.os, f.system.python_version, f.gpu.name, f.gpu.count) == (
        "1.4.0",
        "Linux",
        "3.7",
        "GeForce GTX 1080",
        1,
    )
    assert unavailable(f.torch.cuda_build) and f.torch.cuda_build.reason == NOT_STATED


def test_variant_utf16_file_from_powershell():
    body = text(BASE)
    same_facts_bytes = load_report(b"\xff\xfe" + body.encode("utf-16-le"), "env.txt")
    assert same_facts_bytes == load(BASE)
    assert load_report(body.encode("utf-16-le"), "env.txt") == load(BASE)  # no BOM


def test_variant_utf8_bom_and_latin1_bytes():
    body = text(BASE)
    assert load_report(b"\xef\xbb\xbf" + body.encode(), "bom.txt") == load(BASE)
    mangled = body.replace("OS: Ubuntu", "OS: Ubuntu\xe9").encode("latin-1")
    f = load_report(mangled, "latin1.txt")  # not UTF-8: decoded with replacement characters
    assert f.torch.version == "1.12.1+cu116"


def test_variant_mig_devices():
    report = (
        "PyTorch version: 2.3.0+cu121\nCUDA used to build PyTorch: 12.1\nGPU models and configuration: \n"
        "GPU 0: NVIDIA A100-SXM4-40GB\n  MIG 3g.20gb     Device  0:\n  MIG 3g.20gb     Device  1:\n"
        "GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-0a1b2c3d)\n\nNvidia driver version: 550.54.15\n"
    )
    gpu = parse_collect_env(report).gpu
    assert gpu.count == 2
    assert [d.name for d in gpu.devices] == ["NVIDIA A100-SXM4-40GB"] * 2
    assert gpu.devices[0].mig_mode is True and unavailable(gpu.devices[1].mig_mode)
    assert gpu.driver_version == "550.54.15"


def test_variant_wsl2_kernel_and_pip_cudnn_wheel():
    report = (
        "PyTorch version: 2.3.1+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n"
        "ROCM used to build PyTorch: N/A\n\nOS: Ubuntu 22.04.4 LTS (x86_64)\nLibc version: glibc-2.35\n\n"
        "Python version: 3.11.9 | packaged by conda-forge | (main, Apr 19 2024, 18:36:13) [GCC 12.3.0] (64-bit runtime)\n"
        "Python platform: Linux-5.15.153.1-microsoft-standard-WSL2-x86_64-with-glibc2.35\n"
        "Is CUDA available: True\nGPU models and configuration: GPU 0: NVIDIA GeForce RTX 4090\n"
        "Nvidia driver version: 555.85\ncuDNN version: Could not collect\n\n"
        "Versions of relevant libraries:\n[pip3] nvidia-cudnn-cu12==8.9.2.26\n[pip3] torch==2.3.1\n"
        "[conda] Could not collect\n"
    )
    f = parse_collect_env(report)
    assert f.system.wsl == 2
    assert f.system.kernel == "5.15.153.1-microsoft-standard-WSL2"
    assert f.system.env_manager == "conda"  # "packaged by conda-forge"
    assert f.torch.cudnn_version == "8.9.2"  # the pip nvidia-cudnn wheel next to pip torch
    assert f.packages.torch_providers == ["torch"]


def test_variant_pip_direct_reference_and_no_relevant_packages():
    report = "PyTorch version: 2.2.0\nVersions of relevant libraries:\n[pip3] torch @ file:///tmp/torch-2.2.0.whl\n[conda] No relevant packages\n"
    f = parse_collect_env(report)
    (dist,) = f.packages.distributions
    assert dist.name == "torch" and unavailable(dist.version)
    assert f.packages.torch_providers == ["torch"]


# --------------------------------------------------------------------------------------
# raw fields
# --------------------------------------------------------------------------------------


def test_parse_fields_uses_collect_env_names():
    fields = parse_fields(text("case015"))
    assert fields["torch_version"] == "1.7.0"
    assert fields["nvidia_gpu_models"] == "GPU 0: GeForce RTX 3090\nGPU 1: GeForce RTX 2080 Ti"
    assert fields["hip_compiled_version"] == "N/A"
    assert fields["pip_packages"].splitlines()[0] == "[pip3] numpy==1.19.2"
    assert fields["conda_packages"].splitlines()[-1].startswith("[conda] torchvision")
    assert "libraries" not in fields
    cudnn = parse_fields(text("case009"))["cudnn_version"].splitlines()
    assert cudnn[0] == "Probably one of the following:" and len(cudnn) == 9


def test_parse_fields_of_every_case_has_a_field():
    for case in CASE_IDS:
        assert parse_fields(text(case)), case


# --------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "build, python, cuda_cudnn",
    [
        ("py3.9_cuda11.1_cudnn8.0.5_0", (3, 9), ("11.1", "8.0.5")),
        ("py3.7_cuda10.1.243_cudnn7.6.3_0", (3, 7), ("10.1.243", "7.6.3")),
        ("py3.6_cuda90_cudnn7_1", (3, 6), ("9.0", "7")),
        ("cuda112py39h0bbbad9_1", (3, 9), ("11.2", None)),
        ("cuda120_py311h0e7c0c5_300", (3, 11), ("12.0", None)),
        ("cpu_py39h0c4d0bb_0", (3, 9), (None, None)),
        ("py3.7_cpu_0", (3, 7), (None, None)),
        ("py37_cu101", (3, 7), ("10.1", None)),
        ("py3.9_0", (3, 9), None),
        ("pypi_0", None, None),
    ],
)
def test_conda_build_strings(build, python, cuda_cudnn):
    """The importer reads the Python tag; CUDA and cuDNN come from the shared table."""
    assert conda_python(build) == python
    assert tables.cuda_for_conda_build(build) == cuda_cudnn


def test_cudnn_versions():
    assert cudnn_versions("/usr/lib/x86_64-linux-gnu/libcudnn.so.8.9.2") == ["8.9.2"]
    listing = "Probably one of the following:\n/usr/lib/libcudnn.so.8\n/usr/lib/libcudnn_ops_infer.so.8.9.7\n/usr/lib/libcudnn.so.8.9.2"
    assert cudnn_versions(listing) == ["8.9.7", "8.9.2", "8"]
    assert cudnn_versions(
        "C:\\CUDA\\v12.1\\bin\\cudnn64_8.dll\nC:\\CUDA\\v12.1\\bin\\cudnn_ops_infer64_8.dll"
    ) == ["8"]
    wrapped = "Probably one of the following:\nC:\\CUDA\\v11.1\\bin\\cudnn_adv_in\nfer64_8.dll\nC:\\CUDA\\v11.1\\bin\\cudnn64_9.dll"
    assert cudnn_versions(wrapped) == ["9", "8"]
    assert cudnn_versions("8700") == ["8.7.0"] and cudnn_versions("90100") == ["9.1.0"]
    assert cudnn_versions("Could not collect") == []


def test_provider_names():
    for name in (
        "torch",
        "pytorch",
        "torch-nightly",
        "pytorch-nightly",
        "torch-cpu",
        "pytorch-cpu",
    ):
        assert provides_torch(name), name
    for name in (
        "pytorch-cuda",
        "pytorch-mutex",
        "cpuonly",
        "pytorch-lightning",
        "torchvision",
        "torch-model-archiver",
        "pytorch-select",
    ):
        assert not provides_torch(name), name


def test_same_release():
    assert same_release("1.8.1+cu102", "1.8.1")
    assert same_release("2.0.0.dev20230228+cpu-cxx11-abi", "2.0.0.dev20230228+cpu.cxx11.abi")
    assert not same_release("1.9.0+cu111", "1.9.0+cu102")
    assert not same_release("1.3.0", "1.2.0")
    assert same_release("1.6.0a0-fb", "1.6.0A0-FB")  # not PEP 440: compared as text


# --------------------------------------------------------------------------------------
# inputs that are not reports
# --------------------------------------------------------------------------------------


def test_empty_input():
    with pytest.raises(ReportError, match=r"^empty\.txt: empty input$"):
        load_report(b"", "empty.txt")
    with pytest.raises(ReportError, match=r"^blank\.txt: empty input"):
        load_report(b" \n\r\n\t ", "blank.txt")


def test_text_without_facts_is_read():
    """Issue 18: any text is read; one that states nothing says so in one note naming the
    commands that would give the facts (refused: only binary, empty and oversized input)."""
    f = load_report(b"hello\nthis is not the report you are looking for\n", "notes.txt")
    assert f.origin == "report" and f.paste.messages == [] and f.paste.read_as == "prose"
    assert len(f.notes) == 1 and "python -m torch.utils.collect_env" in f.notes[0]
    assert isinstance(f.torch, Unavailable) and isinstance(f.gpu, Unavailable)


def test_binary_data():
    with pytest.raises(ReportError, match=r"^img\.png: binary data"):
        load_report(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 4, "img.png")
    with pytest.raises(ReportError, match=r"^rand\.bin: binary data"):
        load_report(
            bytes((i * 7919 + 13) % 256 for i in range(4096 * 4)).replace(b"\x00", b"\x01"),
            "rand.bin",
        )


def test_too_large_input_is_refused_before_decoding():
    data = b"PyTorch version: 2.0.0\n" + b"x" * (100 * 1024 * 1024)
    with pytest.raises(ReportError) as info:
        load_report(data, "huge.txt")
    assert str(info.value).startswith("huge.txt: too large")
    assert "\n" not in str(info.value)
    # exactly at the limit is still read
    ok = b"PyTorch version: 2.0.0\n" + b"\n" * (MAX_REPORT_BYTES - 23)
    assert len(ok) == MAX_REPORT_BYTES
    assert load_report(ok, "big.txt").torch.version == "2.0.0"


@pytest.mark.parametrize(
    "data",
    [
        b" " * (4 * 1024 * 1024) + b"GPU 0: x",
        b"GPU models and configuration:" + b" " * 3_000_000 + b"GPU 1: y" * 10,
        b"[conda] " * 600_000,
        b"a" * (MAX_REPORT_BYTES - 1),
        b"PyTorch version: 1.0\n" + b"GPU 0: " * 700_000,
        b"cuDNN version: Probably one of the following:\n" + b"C:\\x" * 1_000_000,
        b"CPU:\nFlags: " + b"avx " * 1_000_000 + b"\n" + (b"  x\n" * 100_000),
        b"PyTorch version: 1.0\n" + b"(" * 2_000_000 + b"\n" + b"OS: " + b"(" * 1_000_000,
        b"\n" * MAX_REPORT_BYTES,
        b"{" * 2_000_000,
        b'{"schema_version": 1, "facts": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}",
        b"GPU models and configuration:\n" + (b"GPU 0: " + b"GeForce RTX " * 800 + b"\n") * 500,
        b"GPU models and configuration: " + b"9x GeForce " * 400_000,
    ],
    ids=[
        "spaces",
        "merged-gpu-line",
        "conda-tags",
        "one-long-line",
        "gpu-tags",
        "dll-path",
        "flags",
        "parens",
        "newlines",
        "braces",
        "deep-json",
        "long-gpu-names",
        "count-prefix",
    ],
)
def test_pathological_inputs_end_in_facts_or_report_error(data):
    assert len(data) <= MAX_REPORT_BYTES
    try:
        facts = load_report(data, "patho.txt")
    except ReportError as exc:
        assert "\n" not in str(exc)
    else:
        assert isinstance(facts, Facts)


# --------------------------------------------------------------------------------------
# torchdoctor JSON
# --------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", ["case001", "case018", "case025", "case030"])
def test_json_round_trip_of_report_facts(case):
    facts = load(case)
    back = load_report(facts.model_dump_json(indent=2).encode(), f"{case}.json")
    assert back == facts.model_copy(update={"origin": "json"})
    assert back.origin == "json"


def test_json_round_trip_of_default_facts_and_report_wrapper():
    facts = Facts()
    assert load_report(facts.model_dump_json().encode(), "f.json") == facts.model_copy(
        update={"origin": "json"}
    )
    wrapped = {
        "schema_version": SCHEMA_VERSION,
        "tool_version": "0.1.0",
        "facts": json.loads(load("case023").model_dump_json()),
        "findings": [],
    }
    back = load_report(json.dumps(wrapped).encode(), "report.json")
    assert back == load("case023").model_copy(update={"origin": "json"})


def test_json_with_wrong_schema_version():
    obj = json.loads(Facts().model_dump_json())
    obj["schema_version"] = SCHEMA_VERSION + 1
    with pytest.raises(ReportError) as info:
        load_report(json.dumps(obj).encode(), "new.json")
    assert str(info.value) == (
        f"new.json: schema_version {SCHEMA_VERSION + 1} is not supported "
        f"(this torchdoctor reads {SCHEMA_VERSION})"
    )
    del obj["schema_version"]
    with pytest.raises(ReportError, match="no schema_version"):
        load_report(json.dumps(obj).encode(), "old.json")
    obj["schema_version"] = "1"
    with pytest.raises(ReportError, match="not an integer"):
        load_report(json.dumps(obj).encode(), "str.json")


def test_json_that_is_not_facts():
    with pytest.raises(ReportError, match=r"^bad\.json: invalid JSON"):
        load_report(b'{"schema_version": 1, ', "bad.json")
    with pytest.raises(ReportError, match=r"^other\.json: JSON, but not torchdoctor facts"):
        load_report(b'{"name": "x"}', "other.json")
    obj = json.loads(Facts().model_dump_json())
    obj["torch"]["no_such_fact"] = 1
    with pytest.raises(ReportError) as info:
        load_report(json.dumps(obj).encode(), "extra.json")
    assert "torch.TorchFacts.no_such_fact" in str(info.value) or "no_such_fact" in str(info.value)
    assert "\n" not in str(info.value)


def test_json_array_and_json_like_text_are_not_reports():
    with pytest.raises(ReportError, match=r"^a\.json: a JSON array, not torchdoctor facts$"):
        load_report(b'[{"os": "Linux", "python_version": "3.11"}]', "a.json")
    f = load_report(b'"os": "Linux",\n"PyTorch version": "2.0"\n', "b.txt")  # JSON-like text: read as text
    assert f.origin == "report"


def test_hand_edited_version_prefixes():
    f = parse_collect_env("PyTorch version: v1.13.1\nPython version: Python 3.8.5\n")
    assert (f.torch.version, f.system.python_version) == ("1.13.1", "3.8.5")


def test_mac_x86_64_python_on_apple_silicon_is_translated():
    report = (
        "PyTorch version: 2.2.2\nCUDA used to build PyTorch: None\nOS: macOS 14.4 (x86_64)\n"
        "Python version: 3.11.8 (v3.11.8:db85d51d3e, Feb  6 2024, 18:02:37) [Clang 13.0.0 (clang-1300.0.29.30)] (64-bit runtime)\n"
        "Python platform: macOS-14.4-x86_64-i386-64bit\nIs CUDA available: False\n\nCPU:\nApple M1 Pro\n"
    )
    s = parse_collect_env(report).system
    assert (s.os, s.os_version, s.machine, s.translated) == ("Darwin", "14.4", "x86_64", True)


def test_windows_11_os_line():
    report = (
        "PyTorch version: 2.5.1+cu124\nOS: Microsoft Windows 11 Pro (10.0.22631 64-bit)\n"
        "Python platform: Windows-10-10.0.22631-SP0\nLibc version: N/A\n"
    )
    s = parse_collect_env(report).system
    assert (s.os, s.os_name, s.os_version, s.libc, s.wsl) == (
        "Windows",
        "Microsoft Windows 11 Pro",
        "10.0.22631",
        None,
        None,
    )


def test_issue_template_before_the_real_report_is_passed_over():
    template = (
        "## Environment\n\n - PyTorch Version (e.g., 1.0): 1.12\n - OS (e.g., Linux): Ubuntu\n"
        " - Python version: 3.9\n - GPU models and configuration: 3090s\n\n"
        "- torch.version: not stated in the report: gpu-arch-not-in-wheel\n\n"
    )
    f = load_report((template + text(BASE)).encode(), "issue.md")
    assert f == load(BASE)


def test_dotted_fact_paths_are_not_report_labels():
    f = load_report(b"- torch.version: unknown\n- system.os: Linux\n", "facts.md")
    assert isinstance(f.torch, Unavailable) and any("no environment fact" in n for n in f.notes)


# --------------------------------------------------------------------------------------
# regressions from tests/data/cases (real reports; snippets as pasted)
# --------------------------------------------------------------------------------------


def test_libc_line_wins_over_the_platform_string_of_python_3_8():
    # vllm-project/vllm#10650 (case122): a conda Python 3.8 scans its own binary for the
    # platform string (glibc2.17); the Libc line asks the C library (2.30)
    report = (
        "PyTorch version: 2.4.0+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n"
        "ROCM used to build PyTorch: N/A\n\n"
        "OS: Alibaba Group Enterprise Linux Server 7.2 (Paladin) (x86_64)\n"
        "Libc version: glibc-2.30\n\n"
        "Python version: 3.8.18 (default, Sep 11 2023, 13:40:15)  [GCC 11.2.0] (64-bit runtime)\n"
        "Python platform: Linux-5.10.134-13.al8.x86_64-x86_64-with-glibc2.17\n"
        "Is CUDA available: True\n"
    )
    assert parse_collect_env(report).system.libc == "glibc 2.30"
    # without the Libc line, Python 3.8's platform string is a binary scan: not trusted
    no_line = report.replace("Libc version: glibc-2.30\n", "")
    libc = parse_collect_env(no_line).system.libc
    assert unavailable(libc) and "interpreter binary" in libc.reason
    # from Python 3.10 on, platform() asks the C library too
    newer = no_line.replace("Python version: 3.8.18", "Python version: 3.12.3")
    assert parse_collect_env(newer).system.libc == "glibc 2.17"


def test_python_version_line_wrapped_by_an_email_reply():
    # pytorch/pytorch#121067 (case116): "[Clang 15.0.0" + "(clang-1500.1.0.2.5)] (64-bit runtime)"
    report = (
        "PyTorch version: 2.2.2\nIs debug build: False\nCUDA used to build PyTorch: None\n"
        "ROCM used to build PyTorch: N/A\n\nOS: macOS 14.5 (x86_64)\n"
        "Python version: 3.10.13 (main, Dec 22 2023, 22:08:50) [Clang 15.0.0\n"
        "(clang-1500.1.0.2.5)] (64-bit runtime)\n"
        "Python platform: macOS-14.5-x86_64-i386-64bit\nIs CUDA available: False\n"
    )
    s = parse_collect_env(report).system
    assert (s.python_version, s.python_bits, s.machine) == ("3.10.13", 64, "x86_64")


def test_localised_windows_os_line():
    # pytorch/pytorch#157775 (case114): "(10.0.26100 64 位)"
    report = (
        "PyTorch version: 2.7.1+xpu\nIs debug build: False\n"
        "CUDA used to build PyTorch: Could not collect\nROCM used to build PyTorch: N/A\n\n"
        "OS: Microsoft Windows 11 专业版 (10.0.26100 64 位)\n"
        "Python version: 3.10.13 | packaged by Anaconda, Inc. | (main, Sep 11 2023, 13:24:38) "
        "[MSC v.1916 64 bit (AMD64)] (64-bit runtime)\n"
        "Python platform: Windows-10-10.0.26100-SP0\nIs CUDA available: False\n"
    )
    s = parse_collect_env(report).system
    assert (s.os, s.os_name, s.os_version) == ("Windows", "Microsoft Windows 11 专业版", "10.0.26100")


# --------------------------------------------------------------------------------------
# torch's CUDA initialization warning, AMD and Intel GPUs, offline CPUs, macOS driver line
# (real reports: tests/data/cases/case138-145)
# --------------------------------------------------------------------------------------

CASES = Path(__file__).resolve().parent / "data" / "cases"


def load_case(case: str) -> Facts:
    return load_report((CASES / f"{case}.txt").read_bytes(), f"{case}.txt")


def test_cuda_initialization_warning_driver_too_old():
    # pytorch/pytorch#112553 (case138): the warning above the report is the only evidence
    f = load_case("case138")
    t, g = f.torch, f.gpu
    assert t.cuda_init_error.startswith(
        "CUDA initialization: The NVIDIA driver on your system is too old (found version 11040)."
    )
    assert t.cuda_init_error.endswith("(Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)")
    assert "\n" not in t.cuda_init_error
    assert t.cuda_available is False  # torch counted 0 devices after the warning
    assert (t.cuda_build, g.source, g.cuda_driver_version) == ("12.1", "report", "11.4")
    assert unavailable(g.driver_version) and unavailable(g.count)


INIT_BASE = (
    "PyTorch version: 2.7.0+cu128\nIs debug build: False\nCUDA used to build PyTorch: 12.8\n"
    "ROCM used to build PyTorch: N/A\n\nOS: Ubuntu 22.04.4 LTS (x86_64)\n"
)


@pytest.mark.parametrize(
    "warning",
    [
        "CUDA initialization: Found no NVIDIA driver on your system. Please check that you have "
        "an NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx "
        "(Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:109.)",
        "CUDA initialization: CUDA driver initialization failed, you might not have a CUDA gpu. "
        "(Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)",
        "CUDA initialization: Unexpected error from cudaGetDeviceCount(). Did you run some cuda "
        "functions before calling NumCudaDevices() that might have already set an error? Error "
        "804: forward compatibility was attempted on non supported HW",
    ],
)
def test_cuda_initialization_warning_variants(warning):
    prefix = "/usr/lib/python3/site-packages/torch/cuda/__init__.py:129: UserWarning: "
    f = parse_collect_env(prefix + warning + "\n  return torch._C._cuda_getDeviceCount() > 0\n" + INIT_BASE)
    assert f.torch.cuda_init_error == warning
    assert f.torch.cuda_available is False
    assert unavailable(f.gpu)  # no GPU line and no driver CUDA version: nothing stated


def test_cuda_initialization_warning_does_not_override_stated_availability():
    text = (
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old "
        "(found version 12020).\n" + INIT_BASE + "Is CUDA available: True\n"
    )
    f = parse_collect_env(text)
    assert f.torch.cuda_available is True  # the report says so; the warning stays a fact
    assert f.torch.cuda_init_error.endswith("(found version 12020).")
    assert f.gpu.cuda_driver_version == "12.2"


def test_cuda_initialization_warning_is_bounded_and_absent_stays_unknown():
    f = parse_collect_env("CUDA initialization: " + "x" * 50_000 + "\n" + INIT_BASE)
    assert len(f.torch.cuda_init_error) <= 1_000
    f = parse_collect_env(INIT_BASE + "Is CUDA available: False\n")
    assert unavailable(f.torch.cuda_init_error)
    # torch not imported: a warning cannot be about this torch
    na = "UserWarning: CUDA initialization: Found no NVIDIA driver\nPyTorch version: N/A\n"
    assert unavailable(parse_collect_env(na + "OS: Ubuntu 22.04 (x86_64)\n").torch.cuda_init_error)


def test_rocm_report_names_one_amd_gpu_with_its_gfx_target():
    # pytorch/pytorch#150016 (case139)
    f = load_case("case139")
    t, g = f.torch, f.gpu
    assert (t.hip_build, t.hip_runtime_version, t.miopen_version, t.cuda_build) == (
        "6.2.41134",
        "6.2.41134",
        "3.2.0",
        None,
    )
    assert g.vendors == ["amd"] and g.name == "AMD Instinct MI300X"
    assert unavailable(g.count) and "names only the GPU torch uses" in g.count.reason
    (d,) = g.devices
    assert (d.index, d.name, d.vendor, d.gfx_target) == (
        0,
        "AMD Instinct MI300X",
        "amd",
        "gfx942:sramecc+:xnack-",
    )
    # NVIDIA-only facts stay unknown, so NVIDIA rules skip instead of misjudging
    for value in (d.compute_capability, d.architecture, g.min_compute_capability,
                  g.max_compute_capability, g.architectures):
        assert unavailable(value) and "NVIDIA (CUDA) notions" in value.reason
    assert unavailable(g.driver_version) and g.driver_version.reason == COULD_NOT_COLLECT


def test_rocm_gpu_without_gfx_suffix_and_gfx1010():
    # pytorch/pytorch#109709 (case140): no gcnArchName on the line
    g = load_case("case140").gpu
    assert g.name == "AMD Instinct MI210" and g.devices[0].vendor == "amd"
    assert unavailable(g.devices[0].gfx_target)
    assert load_case("case140").torch.miopen_version == "2.20.0"
    # pytorch/pytorch#145670 (case141): a terminal merged the first two lines
    f = load_case("case141")
    assert f.torch.version == "2.7.0.dev20250123+rocm6.3"
    assert (f.gpu.name, f.gpu.devices[0].gfx_target) == ("AMD Radeon RX 5700 XT", "gfx1010:xnack-")


def test_old_rocm_collect_env_without_gcn_arch_name():
    report = (
        "PyTorch version: 1.13.0+rocm5.2\nIs debug build: False\nCUDA used to build PyTorch: N/A\n"
        "ROCM used to build PyTorch: 5.2.21151-afdc89f8\n\nOS: Ubuntu 20.04.5 LTS (x86_64)\n"
        "Is CUDA available: True\n"
        "GPU models and configuration: AMD Radeon RX 6800 XTNoGCNArchNameOnOldPyTorch\n"
        "Nvidia driver version: Could not collect\nHIP runtime version: 5.2.21151\n"
        "MIOpen runtime version: 2.17.0\n"
    )
    d = parse_collect_env(report).gpu.devices[0]
    assert (d.name, d.vendor) == ("AMD Radeon RX 6800 XT", "amd") and unavailable(d.gfx_target)


def test_intel_xpu_report_on_windows():
    # intel/torch-xpu-ops#4065 (case142)
    f = load_case("case142")
    t, g = f.torch, f.gpu
    assert (t.version, t.xpu_available, t.xpu_build, t.cuda_build) == (
        "2.13.0+xpu",
        True,
        "20260000",
        None,
    )
    # count is of NVIDIA GPUs (what CUDA rules read); the Intel GPU is in devices and vendors
    assert (g.vendors, g.count, g.name) == (["intel"], 0, "Intel(R) Arc(TM) B580 Graphics")
    assert len(g.devices) == 1
    assert g.devices[0].vendor == "intel" and g.devices[0].gfx_target is None
    assert g.intel_driver_version == "32.0.101.8826"
    assert g.driver_version is None  # "No CUDA": no NVIDIA driver
    assert unavailable(g.min_compute_capability)


def test_intel_xpu_report_on_linux_lists_every_gpu_and_driver_package():
    # intel/torch-xpu-ops#2024 (case143)
    g = load_case("case143").gpu
    assert g.count == 0 and len(g.devices) == 8 and g.vendors == ["intel"]
    assert [d.index for d in g.devices] == list(range(8))
    assert {d.name for d in g.devices} == {"Intel(R) Data Center GPU Max 1100"}
    assert g.intel_driver_version == (
        "libze1 1.21.9.0-1136~22.04; intel-opencl-icd 25.18.33578.15-1146~22.04"
    )
    fields = parse_fields((CASES / "case143.txt").read_text(encoding="utf-8"))
    assert fields["intel_gpu_models_onboard"].count("\n") == 7


def test_intel_gpus_from_the_detected_list_and_next_to_nvidia_gpus():
    base = INIT_BASE + "Is CUDA available: True\n"
    detected = (
        "Is XPU available: True\nXPU used to build PyTorch: 20250101\n"
        "Intel GPU driver version:\n* N/A\nIntel GPU models onboard:\n* N/A\n"
        "Intel GPU models detected:\n"
        "* [0] _XpuDeviceProperties(name='Intel(R) Arc(TM) A770 Graphics', platform_name='x')\n"
    )
    g = parse_collect_env(base + "GPU models and configuration: No CUDA\n" + detected).gpu
    assert (g.count, g.name, g.vendors) == (0, "Intel(R) Arc(TM) A770 Graphics", ["intel"])
    assert unavailable(g.intel_driver_version)
    mixed = base + "GPU models and configuration: GPU 0: NVIDIA GeForce RTX 4090\n\n" + detected
    g = parse_collect_env(mixed).gpu
    assert (g.count, len(g.devices), g.vendors) == (1, 2, ["nvidia", "intel"])
    assert g.min_compute_capability == g.max_compute_capability == 8.9  # NVIDIA GPUs only
    assert g.architectures == ["Ada"]
    # NVIDIA list not collected: the Intel GPUs are listed, the count is not known
    g = parse_collect_env(base + "GPU models and configuration: Could not collect\n" + detected).gpu
    assert [d.name for d in g.devices] == ["Intel(R) Arc(TM) A770 Graphics"]
    assert unavailable(g.count) and g.count.reason == COULD_NOT_COLLECT


def test_nvidia_devices_have_a_vendor_and_no_gfx_target():
    # NVIDIA/Megatron-LM#2772 (case144)
    f = load_case("case144")
    g = f.gpu
    assert (g.vendors, g.count) == (["nvidia"], 8)
    assert all(d.vendor == "nvidia" and d.gfx_target is None for d in g.devices)
    assert f.torch.hip_runtime_version is None and f.torch.miopen_version is None
    assert unavailable(g.intel_driver_version)


def test_offline_cpus_are_not_logical_cores():
    # case144: CPU(s) 224, On-line CPU(s) list 0-79, Off-line CPU(s) list 80-223
    assert load_case("case144").cpu.logical_cores == 80
    lscpu = (
        "Architecture:        x86_64\nCPU(s):              16\n"
        "On-line CPU(s) list: 0-3,8-11\nOff-line CPU(s) list: 4-7,12-15\n"
    )
    assert parse_collect_env(modern_with_cpu(lscpu)).cpu.logical_cores == 8
    broken = lscpu.replace("0-3,8-11", "0-3,x")
    assert parse_collect_env(modern_with_cpu(broken)).cpu.logical_cores == 16


def test_macos_nvidia_driver_line_is_the_cuda_kext():
    # pytorch/pytorch#16999 (case145): "Nvidia driver version: 1.1.0" on macOS 10.13
    f = load_case("case145")
    assert f.system.os == "Darwin"
    d = f.gpu.driver_version
    assert unavailable(d) and "CUDA kernel extension" in d.reason and "1.1.0" in d.reason
    assert f.gpu.name == "GeForce GTX 1060 with Max-Q Design"


def test_terminal_names_rocm_xpu_builds_and_their_gpus():
    from torchdoctor.engine import evaluate
    from torchdoctor.render.terminal import render
    from torchdoctor.rules import load_rules

    rules = load_rules()

    def shown(case: str) -> str:
        return render(evaluate(rules, load_case(case)), width=120)

    rocm = shown("case139")
    assert "2.6.0+rocm6.2.4 · ROCm (HIP 6.2) build" in rocm
    assert "GPU 0       AMD Instinct MI300X · gfx942:sramecc+:xnack-" in rocm
    assert "ROCm GPU (HIP)" in rocm and "CUDA" not in rocm.split("torch uses", 1)[1].split("\n")[0]
    xpu = shown("case142")
    assert "2.13.0+xpu · XPU build" in xpu and "· CPU build" not in xpu
    assert "GPU 0       Intel(R) Arc(TM) B580 Graphics" in xpu
    assert "Intel 32.0.101.8826" in xpu
    assert "compute capability" not in xpu  # not an unknown: a CUDA notion
    many = shown("case143")
    assert "8× Intel(R) Data Center GPU Max 1100" in many
    old_driver = shown("case138")
    assert "supports CUDA <= 11.4" in old_driver


# --------------------------------------------------------------------------------------
# lscpu under a non-English locale; NCCL version line of adapted collect_env scripts
# (real reports: tests/data/cases/case149-151)
# --------------------------------------------------------------------------------------


def test_lscpu_in_chinese_with_full_width_colons():
    # vllm-project/vllm#13980 (case149): 架构 / CPU / 在线 CPU 列表 / 厂商 ID with "："
    cpu = load_case("case149").cpu
    assert (cpu.architecture, cpu.logical_cores, cpu.vendor) == ("x86_64", 128, "GenuineIntel")
    # the report is cut before these lines: still unknown, not guessed
    assert unavailable(cpu.model) and unavailable(cpu.sockets) and unavailable(cpu.flags)
    # "CPU:  128" inside the section is lscpu's CPU(s), not a second CPU section
    fields = parse_fields((CASES / "case149.txt").read_text(encoding="utf-8"))
    rows = [" ".join(line.split()) for line in fields["cpu_info"].splitlines()]
    assert "CPU: 128" in rows and "厂商 ID: GenuineIntel" in rows


def test_lscpu_in_french_with_a_space_before_the_colon():
    # pytorch/pytorch#109929 (case150): "Architecture :", "Processeur(s) :"
    f = load_case("case150")
    assert (f.cpu.architecture, f.cpu.logical_cores) == ("x86_64", 24)
    assert f.gpu.devices[0].name == "AMD Radeon RX 6800 XT"


def test_nccl_version_line_of_an_adapted_collect_env():
    # vectorch-ai/ScaleLLM#288 (case151): the script prints "NCCL version: 2.20.5"
    f = load_case("case151")
    assert f.torch.nccl_version == "2.20.5"
    assert f.torch.version == "2.4.0+cu124" and f.gpu.driver_version == "550.90.07"
    # torch's own collect_env has no such line: the fact stays unknown
    assert load_case("case149").torch.nccl_version == Unavailable(unavailable=NOT_STATED)
    odd = modern_with_cpu("Architecture: x86_64\n").replace(
        "Is XNNPACK available", "NCCL version: unknown\nIs XNNPACK available"
    )
    assert "NCCL version: unknown" in odd
    assert parse_collect_env(odd).torch.nccl_version == Unavailable(
        unavailable="report says: 'unknown'"
    )


# One lscpu summary per locale, its labels copied from util-linux's translations
# (po/<lang>.po msgstr of sys-utils/lscpu.c, util-linux 2.38.1): the labels lscpu prints when
# collect_env runs under that locale. Values: 2 sockets x 8 cores x 2 threads, 32 CPUs of
# which 0-15 online, so logical_cores 16, physical_cores 16.
_LOCALIZED_LSCPU = {
    "zh_CN": (
        "架构：", "CPU：", "在线 CPU 列表：", "离线 CPU 列表：", "厂商 ID：", "型号名称：",
        "每个核的线程数：", "每个座的核数：", "座：", "NUMA 节点：", "标记：",
    ),
    "fr": (
        "Architecture\u00a0:", "Processeur(s)\u00a0:", "Liste de processeur(s) en ligne\u00a0:",
        "Liste de processeur(s) hors ligne\u00a0:", "Identifiant constructeur\u00a0:",
        "Nom de modèle\u00a0:", "Thread(s) par cœur\u00a0:", "Cœur(s) par socket\u00a0:",
        "Socket(s)\u00a0:", "Nœud(s) NUMA\u00a0:", "Drapeaux\u00a0:",
    ),
    "de": (
        "Architektur:", "CPU(s):", "Liste der Online-CPU(s):", "Liste der Offline-CPU(s):",
        "Anbieterkennung:", "Modellname:", "Thread(s) pro Kern:", "Kern(e) pro Sockel:",
        "Sockel:", "NUMA-Knoten:", "Markierungen:",
    ),
    "es": (
        "Arquitectura:", "CPU(s):", "Lista de la(s) CPU(s) en línea:", None,
        "ID de fabricante:", "Nombre del modelo:", "Hilo(s) de procesamiento por núcleo:",
        "Núcleo(s) por «socket»:", "«Socket(s)»:", "Modo(s) NUMA:", "Indicadores:",
    ),
    "ja": (
        "アーキテクチャ:", "CPU:", "オンラインになっている CPU のリスト:",
        "オフラインになっている CPU のリスト:", "ベンダー ID:", "モデル名:",
        "コアあたりのスレッド数:", "ソケットあたりのコア数:", "ソケット数:", "NUMA ノード数:",
        "フラグ:",
    ),
    # ru.po of 2.38.1 leaves CPU(s), the CPU lists, threads per core and NUMA nodes in English
    "ru": (
        "Архитектура:", "CPU(s):", "On-line CPU(s) list:", "Off-line CPU(s) list:",
        "ID прроизводителя:", "Имя модели:", "Thread(s) per core:", "Ядер на сокет:",
        "Сокетов:", "NUMA node(s):", "Флаги:",
    ),
    "pt_BR": (
        "Arquitetura:", "CPU(s):", "Lista de CPU(s) on-line:", "Lista de CPU(s) off-line:",
        "ID de fornecedor:", "Nome do modelo:", "Thread(s) per núcleo:",
        "Núcleo(s) por soquete:", "Soquete(s):", "Nó(s) de NUMA:", "Opções:",
    ),
    "pt": (
        "Arquitectura:", "CPU(s):", "Lista das CPUs online:", "Lista das CPUs offline:",
        "ID de fornecedor:", "Nome do modelo:", "Tópicos por núcleo:", "Núcleos por socket:",
        "Sockets:", "Nós NUMA:", "Bandeiras:",
    ),
    "it": (  # it.po of 2.38.1 translates none of these labels
        "Architecture:", "CPU(s):", "On-line CPU(s) list:", "Off-line CPU(s) list:",
        "Vendor ID:", "Model name:", "Thread(s) per core:", "Core(s) per socket:",
        "Socket(s):", "NUMA node(s):", "Flags:",
    ),
    "pl": (
        "Architektura:", "CPU:", "Lista aktywnych CPU:", "Lista nieaktywnych CPU:",
        "ID producenta:", "Nazwa modelu:", "Wątków na rdzeń:", "Rdzeni na gniazdo:",
        "Gniazd:", "Węzłów NUMA:", "Flagi:",
    ),
    "uk": (
        "Архітектура:", "Процесори:", "Список робочих ЦП:", "Список вимкнених ЦП:",
        "Ідентифікатор виробника:", "Назва моделі:", "Потоків на ядро:", "Ядер на сокет:",
        "Сокети:", "Вузли NUMA:", "Прапорці:",
    ),
    "cs": (
        "Architektura:", "Počet CPU:", "Seznam zapnutých CPU:", "Seznam vypnutých CPU:",
        "ID výrobce:", "Název modelu:", "Vláken na jádro:", "Jader na patici:", "Patic:",
        "Uzly NUMA:", "Příznaky:",
    ),
    "nl": (
        "Architectuur:", "CPU's:", "Online CPU's-lijst:", "Offline CPU's-lijst:",
        "Producent-ID:", "Modelnaam:", "Draden per kern:", "Kernen per voet:", "CPU-voeten:",
        "NUMA-nodes:", "Vlaggen:",
    ),
    "sv": (
        "Arkitektur:", "CPU(er):", "Lista över aktiva CPU(er):", "Lista över inaktiva CPU(er):",
        "Tillverkar-ID:", "Modellnamn:", "Tråd(ar) per kärna:", "Kärn(or) per uttag:",
        "Uttag:", "NUMA nod(er):", "Flaggor:",
    ),
    "tr": (
        "Mimari:", "İşlemciler:", "Çevrimiçi işlemci(ler) listesi:",
        "Çevrimiçi işlemci listesi:", "Sağlayıcı Kimliği:", "Modem ismi:",
        "Çekirdek başına iş parçacığı:", "Soket başına çekirdek:", "Soket(ler):",
        "NUMA düğümü(leri):", "Bayraklar:",
    ),
    "vi": (
        "Kiến trúc:", "CPU:", "Danh sách CPU trực tuyến:", "Danh sách CPU ngoại tuyến:",
        "ID nhà sản xuất:", "Tên mô hình:", "Số tuyến mỗi lõi:", "Số lõi mỗi đế cắm:",
        "Số đế cắm:", "Nút NUMA:", "Flags:",
    ),
}
_LSCPU_VALUES = (
    "x86_64", "32", "0-15", "16-31", "GenuineIntel", "Intel(R) Xeon(R) Gold 6134 CPU @ 3.20GHz",
    "2", "8", "2", "2", "fpu sse2 avx2 avx512f avx512_vnni",
)


def localized_lscpu(labels) -> str:
    width = max(len(x) for x in labels if x) + 4
    return "".join(
        f"{label.ljust(width)}{value}\n"
        for label, value in zip(labels, _LSCPU_VALUES)
        if label is not None
    )


@pytest.mark.parametrize("locale", sorted(_LOCALIZED_LSCPU))
def test_lscpu_labels_of_each_locale(locale):
    cpu = parse_collect_env(modern_with_cpu(localized_lscpu(_LOCALIZED_LSCPU[locale]))).cpu
    assert (cpu.architecture, cpu.vendor, cpu.model) == (
        "x86_64", "GenuineIntel", "Intel(R) Xeon(R) Gold 6134 CPU @ 3.20GHz"
    )
    # es prints its off-line list without a colon: only the on-line list is read either way
    assert (cpu.logical_cores, cpu.physical_cores, cpu.sockets, cpu.numa_nodes) == (16, 16, 2, 2)
    assert cpu.flags["avx512f"] and cpu.flags["avx512_vnni"] and not cpu.flags["amx_bf16"]


@pytest.mark.parametrize("colon", [":", "：", " :", "\u00a0:", " ：", "\ufe55"])
def test_lscpu_label_colon_variants(colon):
    lscpu = (
        f"架构{colon}   aarch64\nCPU{colon}   4\n在线 CPU 列表{colon}   0-3\n"
        f"Core(s) per socket{colon} 4\nSocket(s){colon} 1\n"
    )
    cpu = parse_collect_env(modern_with_cpu(lscpu)).cpu
    assert (cpu.architecture, cpu.logical_cores, cpu.physical_cores) == ("aarch64", 4, 4)


def test_lscpu_label_table_is_unambiguous():
    # one label, one meaning: no translation of one field equals a translation of another
    from torchdoctor.importers.collect_env import _LSCPU_LABELS, _lscpu_norm

    seen: dict[str, str] = {}
    for labels in _LSCPU_LABELS.values():
        for label, key in labels.items():
            norm = _lscpu_norm(label)
            assert seen.setdefault(norm, key) == key, (label, key, seen[norm])
            assert ":" not in label and "：" not in label
    english = {"architecture", "cpu(s)", "on-line cpu(s) list", "off-line cpu(s) list",
               "vendor id", "model name", "thread(s) per core", "core(s) per socket",
               "socket(s)", "numa node(s)", "flags"}
    assert set(seen.values()) <= english
    # a translated label never shadows a label English lscpu or wmic prints for another field
    for label in ("model", "cpu family", "name", "manufacturer", "deviceid", "stepping"):
        assert label not in seen


# --------------------------------------------------------------------------------------
# hostile text and numbers at the importer boundary (torchdoctor.sanitize)
# --------------------------------------------------------------------------------------

BIG = "1" + "0" * 5000  # past Python's 4300-digit int-string limit
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31m"


def case023_facts_json(**mutate) -> dict:
    data = json.loads(load("case023").model_dump_json())
    data["origin"] = "json"
    for path, value in mutate.items():
        *parents, last = path.split("__")
        node = data
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[int(last) if last.isdigit() else last] = value
    return data


from tests.test_importer_fuzz import strings as walk_strings  # every string and key of parsed JSON


@pytest.mark.parametrize("fmt", ["json", "markdown", "terminal"])
def test_lone_surrogates_and_escapes_in_facts_json_reach_no_output(capsys, tmp_path, fmt):
    """A facts JSON with a lone surrogate ("\\ud800" escape) and terminal escape sequences in
    values and keys: every output format works, and none carries ESC or a surrogate."""
    from torchdoctor.cli import main

    data = case023_facts_json(
        torch__version="1.12.1\ud800",
        gpu__devices__0__name=f"NVIDIA {ESCAPES}GeForce RTX 3090",
        gpu__driver_version="515.65.01\udfff",
        problems=[f"probe torch: {ESCAPES}import failed\ud800", "second\x1b[1Aline"],
        env={"variables": {f"NCCL_DEBUG{ESCAPES}": f"INFO{ESCAPES}\ud800", "OMP_NUM_THREADS": "8"}},
    )
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(data))  # ensure_ascii: "\ud800" written as an escape
    assert "\\ud800" in path.read_text() and "\\u001b" in path.read_text()
    for command in (["check", "--format", fmt], ["report"], ["recommend", "--task", "classification", "--format", fmt]):
        code = main([*command, "--facts", str(path)])
        out, err = capsys.readouterr()
        assert code in (0, 1), err
        for text in (out, err):
            assert "\x1b" not in text and "\x07" not in text
            assert not re.search("[\ud800-\udfff]", text)
        assert "GeForce RTX 3090" in out or "GeForce" in out.replace("\n", "")


def test_sanitised_facts_keep_newlines_and_mark_surrogates():
    data = case023_facts_json(
        problems=["ImportError: libcudnn.so.9: cannot open\n\tshared object\r\n" + ESCAPES + "x\x00y\x9b"],
        torch__version="1.12.1\ud800",
        env={"variables": {"NCCL_\x1b[2JDEBUG\n": "INFO"}},
    )
    facts = load_report(json.dumps(data).encode(), "f.json")
    assert facts.problems == ["ImportError: libcudnn.so.9: cannot open\n\tshared object\n]0;pwnedxy"]
    assert facts.torch.version == "1.12.1\ufffd"
    assert facts.env.variables == {"NCCL_DEBUG": "INFO"}
    facts.model_dump_json()  # serialisable: no surrogate left
    assert not [s for s in walk_strings(json.loads(facts.model_dump_json())) if "\x1b" in s]


def test_escapes_in_a_pasted_report_and_in_its_error_messages():
    report = text("case023").replace("OS: Ubuntu 22.04.1 LTS (x86_64)",
                                     f"OS: Ubuntu 22.04.1 LTS{ESCAPES}\x08 (x86_64)")
    report += f"\nImportError: libfoo.so: cannot open{ESCAPES}\x7f\n"
    facts = load_report(report.encode(), "r.txt")
    assert facts.system.os_name == "Ubuntu 22.04.1 LTS]0;pwned"
    for s in walk_strings(json.loads(facts.model_dump_json())):
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", s), s
    with pytest.raises(ReportError) as info:
        load_report(b"", f"evil{ESCAPES}\n.txt")  # empty: refused, with the name cleaned
    assert "\x1b" not in str(info.value) and "\x07" not in str(info.value)
    obj = json.loads(Facts().model_dump_json())
    obj["torch"]["bad\x1b]0;pwned\x07x"] = 1
    with pytest.raises(ReportError) as info:
        load_report(json.dumps(obj).encode(), "extra.json")
    assert "\x1b" not in str(info.value) and "bad]0;pwnedx" in str(info.value)


def test_live_probe_facts_are_sanitised(monkeypatch):
    """probes.collect: an import error, environment value or name from the target
    interpreter with escapes or surrogates comes out clean."""
    import torchdoctor.probes as probes
    from torchdoctor.facts import EnvFacts, TorchFacts

    def runner(name, ctx):
        if name == "torch":
            return TorchFacts(import_status="import-error",
                              import_error=f"ImportError: {ESCAPES}boom\ud800\nsecond line")
        if name == "env":
            return EnvFacts(variables={f"TORCH_X{ESCAPES}": f"v{ESCAPES}\udc80"})
        raise probes.ProbeUnavailable("not in this test")

    facts = probes.collect(probes.ProbeContext(), only=["torch", "env"], runner=runner)
    assert facts.torch.import_error == "ImportError: ]0;pwnedboom\ufffd\nsecond line"
    assert facts.env.variables == {"TORCH_X]0;pwned": "v]0;pwned\ufffd"}


@pytest.mark.parametrize("field,line,fact", [
    ("torch version", "PyTorch version: {big}", ("torch", "version")),
    ("CUDA build", "CUDA used to build PyTorch: {big}", ("torch", "cuda_build")),
    ("cuDNN", "cuDNN version: {big}", ("system", "cudnn_version")),
    ("python", "Python version: {big}.{big}", ("system", "python_version")),
    ("python major only", "Python version: {big}", ("system", "python_version")),
    ("MSC bits", "Python version: 3.9.1 [MSC v.1916 {big} bit (AMD64)]", ("system", "python_bits")),
    ("driver", "Nvidia driver version: {big}", ("gpu", "driver_version")),
    ("toolkit", "CUDA runtime version: {big}", ("system", "cuda_toolkit_version")),
    ("OS", "OS: Ubuntu {big} LTS (x86_64)", ("system", "os_version")),
    ("libc", "Libc version: glibc-{big}", ("system", "libc")),
])
def test_a_5000_digit_number_in_a_report_field_makes_that_field_unknown(field, line, fact):
    """Over 4300 digits Python refuses int() and packaging's Version() raises: the field
    becomes unknown, the rest of the report is read as before."""
    label = line.split(":", 1)[0]
    report = "\n".join(
        (line.format(big=BIG) if row.startswith(label + ":") else row)
        for row in text("case023").splitlines())
    if label + ":" not in text("case023"):
        report += "\n" + line.format(big=BIG)
    assert BIG in report
    facts = load_report(report.encode(), "big.txt")
    ns, name = fact
    value = getattr(getattr(facts, ns), name)
    assert unavailable(value) or value in (64, None), value
    assert BIG not in json.dumps(value.model_dump() if unavailable(value) else value)
    # the rest of the report is untouched
    good = load("case023")
    assert facts.gpu.devices == good.gpu.devices or ns == "gpu"
    assert facts.packages == good.packages


@pytest.mark.parametrize("rows", [
    "[pip3] torch=={big}\n",
    "[conda] pytorch {big} py3.9_cuda{big}_cudnn{big}_0 pytorch\n",
    "[pip3] numpy=={big}.1\n",
])
def test_a_5000_digit_package_version_is_unknown_for_that_row_only(rows):
    report = text("case023").replace("[pip3] numpy", rows.format(big=BIG) + "[pip3] numpy", 1)
    facts = load_report(report.encode(), "pkgs.txt")
    assert BIG not in facts.model_dump_json()
    assert facts.packages.versions["torch"] == "1.12.1+cu116"
    bad = [d for d in facts.packages.distributions if unavailable(d.version)]
    assert bad and "not plausible" in bad[0].version.unavailable


def test_a_5000_digit_gpu_count_index_and_cpu_count_are_not_read():
    report = text("case023").replace("GPU 0: NVIDIA", f"GPU {BIG}: NVIDIA")
    report = report.replace("GPU models and configuration:", f"GPU models and configuration: {BIG}x RTX 3090")
    report += f"\nCPU:\nCPU(s): {BIG}\nOn-line CPU(s) list: 0-{BIG}\nSocket(s): {BIG}\n"
    facts = load_report(report.encode(), "counts.txt")
    assert BIG not in facts.model_dump_json()
    assert unavailable(facts.cpu.logical_cores) and unavailable(facts.cpu.sockets)


@pytest.mark.parametrize("mutate,where", [
    ({"torch__version": BIG}, "torch.version"),
    ({"torch__cuda_build": "12." + BIG}, "torch.cuda_build"),
    ({"gpu__driver_version": BIG}, "gpu.driver_version"),
    ({"system__python_version": "3." + BIG}, "system.python_version"),
    ({"packages__versions__numpy": BIG}, "packages.versions"),
    ({"torch__arch_list": ["sm_" + BIG]}, "torch.arch_list"),
    ({"gpu__count": int("9" * 4000)}, "gpu.count"),
    # an index cannot be unknown: the list it is in becomes unknown
    ({"gpu__devices__0__index": int("9" * 4000)}, "gpu.devices"),
    ({"gpu__devices__0__compute_capability": float("inf")}, "gpu.devices.0.compute_capability"),
    ({"memory": {"total_bytes": int("9" * 4000)}}, "memory.total_bytes"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_implausible_numbers_in_facts_json_make_that_fact_unknown(capsys, tmp_path, mutate, where):
    from torchdoctor.cli import main

    raw_json = json.dumps(case023_facts_json(**mutate))
    for digits in (4000, 5000):  # also past the int-string limit of the JSON reader itself
        path = tmp_path / f"big{digits}.json"
        path.write_text(raw_json.replace("9" * 4000, "9" * digits))
        facts = load_report(path.read_bytes(), path.name)
        value = facts
        for part in where.split("."):
            value = value[int(part)] if part.isdigit() else getattr(value, part)
        assert unavailable(value) and "not a plausible value" in value.unavailable, value
        assert facts.gpu.name == "NVIDIA GeForce RTX 3090"  # the rest is read as before
        for command in (["check", "--format", "json"], ["report"], ["recommend", "--task", "classification"]):
            code = main([*command, "--facts", str(path)])
            out, err = capsys.readouterr()
            assert code in (0, 1), (command, err)
            assert "internal error" not in err
