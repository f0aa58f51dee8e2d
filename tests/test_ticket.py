"""`torchdoctor report`: Markdown for a GitHub issue, and its collect_env-layout block.

Inputs are real collect_env reports from public bug tickets (tests/data/corpus/, copied from
/work/shared/corpus/, and tests/data/healthy/, see its README for the sources) and a recorded
probe of the development container (tests/data/diff/dev-container-cpu-probe.json).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchdoctor import __version__
from torchdoctor.cli import main
from torchdoctor.diff import diff_facts, show
from torchdoctor.engine import evaluate
from torchdoctor.facts import Facts, Unavailable
from torchdoctor.importers import load_report
from torchdoctor.report import Finding, Report
from torchdoctor.rules import load_rules
from torchdoctor.ticket import collect_env_text, compress_ints, render_ticket, summary_line

DATA = Path(__file__).resolve().parent / "data"
CORPUS = DATA / "corpus"
HEALTHY = DATA / "healthy"
PROBE = DATA / "diff" / "dev-container-cpu-probe.json"
CASES = sorted(p.name for p in CORPUS.glob("case*.txt"))

# collect_env's own field order (torch/utils/collect_env.py, env_info_fmt)
COLLECT_ENV_ORDER = [
    "PyTorch version:", "Is debug build:", "CUDA used to build PyTorch:", "ROCM used to build PyTorch:",
    "OS:", "GCC version:", "Clang version:", "CMake version:", "Libc version:",
    "Python version:", "Python platform:", "Is CUDA available:", "CUDA runtime version:",
    "CUDA_MODULE_LOADING set to:", "GPU models and configuration:", "Nvidia driver version:",
    "cuDNN version:", "Is XPU available:", "HIP runtime version:", "MIOpen runtime version:",
    "Is XNNPACK available:", "Caching allocator config:", "CPU:", "Versions of relevant libraries:",
]

# facts a maintainer reads from collect_env, which must survive render -> parse
KEY_FACTS = [
    "torch.import_status", "torch.version", "torch.debug_build", "torch.cuda_build", "torch.hip_build",
    "torch.cuda_available", "torch.cudnn_version", "gpu.driver_version", "gpu.count", "gpu.name",
    "gpu.min_compute_capability", "system.os", "system.os_name", "system.os_version", "system.kernel",
    "system.libc", "system.python_version", "system.python_bits", "system.cuda_toolkit_version",
    "system.cudnn_version", "cpu.model", "cpu.logical_cores", "packages.torch_providers",
]


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def load(path: Path) -> Facts:
    return load_report(path.read_bytes(), path.name)


def report_for(facts: Facts) -> Report:
    return evaluate(load_rules(), facts, None, command="report")


def fenced_block(markdown: str) -> str:
    m = re.search(r"```text\n(.*?)```", markdown, re.S)
    assert m, "no collect_env block"
    return m.group(1)


def key_values(facts: Facts) -> dict:
    from torchdoctor.diff import flatten, lookup

    flat = flatten(facts)
    # an unknown stays unknown (the reason may be worded differently), a value stays that value
    out = {p: "unknown" if isinstance(v, Unavailable) else show(v)
           for p, v in ((p, lookup(flat, p, "json")) for p in KEY_FACTS)}
    out["gpu names"] = [v for k, v in flat.items() if re.fullmatch(r"gpu\.devices\[\d+\]\.name", k)]
    out["versions"] = {k: v for k, v in flat.items() if k.startswith("packages.versions[")}
    return out


# ----------------------------------------------------------------------------------------
# layout
# ----------------------------------------------------------------------------------------


def test_ticket_layout_summary_findings_collect_env_facts():
    text = render_ticket(report_for(load(CORPUS / "case023.txt")))
    first = text.splitlines()[0]
    assert first.startswith("**Environment:** torch 1.12.1+cu116 · CUDA 11.6 · 3× NVIDIA GeForce RTX 3090")
    assert "sm_86" in first and "driver 515.65.01" in first and "Python 3.9.13" in first
    assert re.search(r"\*\*(healthy|needs attention|broken|not diagnosed \([^)]*\))\*\*", first)
    i_find = text.index("### Findings")
    i_env = text.index("### Environment (`python -m torch.utils.collect_env` layout)")
    i_facts = text.index("### All facts")
    assert i_find < i_env < i_facts
    for ns in ("torch", "gpu", "cpu", "memory", "env", "packages", "system"):
        assert re.search(rf"<details><summary>{ns}[ :(]", text), ns
    assert text.count("<details>") == text.count("</details>")
    assert f"torchdoctor {__version__}" in text


# fields that are never facts: the block leaves them out rather than guess
NEVER_KNOWN = ["GCC version:", "Clang version:", "CMake version:", "Is XNNPACK available:"]


def test_collect_env_block_has_collect_env_fields_in_order():
    block = fenced_block(render_ticket(report_for(load(CORPUS / "case023.txt"))))
    present = [label for label in COLLECT_ENV_ORDER if f"\n{label}" in "\n" + block]
    assert len(present) >= 15
    positions = [("\n" + block).index("\n" + label) for label in present]
    assert positions == sorted(positions)
    for label in NEVER_KNOWN:
        assert label not in block
    assert "[pip3] torch==1.12.1+cu116" in block
    assert "[pip3] numpy==1.23.3" in block
    # a multi-GPU list starts on the next line and ends with a blank line, as collect_env does
    assert "GPU models and configuration: \nGPU 0: NVIDIA GeForce RTX 3090\nGPU 1:" in block
    assert "GPU 2: NVIDIA GeForce RTX 3090\n\nNvidia driver version: 515.65.01" in block


def test_collect_env_block_from_a_real_probe():
    facts = load(PROBE)
    block = collect_env_text(facts)
    # this probe recorded neither nvcc nor the driver (NVML missing): collect_env would print
    # either "No CUDA" or their values there, not known which, so those lines are left out
    assert block.startswith("PyTorch version: 2.13.0+cpu\nIs debug build: False\nROCM used to build PyTorch: N/A\n")
    for label in ("CUDA used to build PyTorch", "CUDA runtime version", "GPU models", "Nvidia driver", "cuDNN"):
        assert label not in block
    assert "Is CUDA available: False" in block
    assert "Libc version: glibc-2.36" in block
    assert "Python platform: Linux-" in block and "-x86_64-with-glibc2.36" in block
    assert "\nCPU:\nArchitecture:" in block and "Model name:" in block
    assert "Flags:" not in block  # the facts keep a selection of flags, not lscpu's line
    assert "[pip3] torch==2.13.0+cpu" in block
    # known to be absent: written the way collect_env writes them for that field
    assert "ROCM used to build PyTorch: N/A\n" in block
    assert "HIP runtime version: N/A\nMIOpen runtime version: N/A\n" in block
    assert "CUDA_MODULE_LOADING set to: N/A\n" in block
    assert "Is XPU available: False\n" in block
    assert "Caching allocator config: N/A\n" in block
    assert "Could not collect" not in block


def test_collect_env_block_no_cuda():
    # torch sees no CUDA, and nvcc, the GPU list and the driver are known to be absent
    data = json.loads(load(PROBE).model_dump_json())
    data["gpu"] = {"source": "nvml", "driver_version": None, "count": 0, "devices": []}
    data["system"]["cuda_toolkit_version"] = None
    data["system"]["cudnn_version"] = None
    block = collect_env_text(Facts.model_validate(data))
    assert "CUDA used to build PyTorch: None\nROCM used to build PyTorch: N/A\n" in block
    assert ("CUDA runtime version: No CUDA\nCUDA_MODULE_LOADING set to: N/A\n"
            "GPU models and configuration: No CUDA\nNvidia driver version: No CUDA\n"
            "cuDNN version: No CUDA\n") in block
    # a GPU on the bus but a CPU build: torch.version.cuda None is "Could not collect"
    data["gpu"] = {"source": "nvml", "driver_version": "550.54.15", "count": 1,
                   "devices": [{"index": 0, "name": "NVIDIA A100-SXM4-80GB"}]}
    block = collect_env_text(Facts.model_validate(data))
    assert "CUDA used to build PyTorch: Could not collect\n" in block
    assert "CUDA runtime version: Could not collect\n" in block  # no nvcc
    assert "GPU models and configuration: GPU 0: NVIDIA A100-SXM4-80GB\n" in block
    assert "Nvidia driver version: 550.54.15\n" in block


def test_findings_come_first_with_their_fix():
    facts = load(CORPUS / "case023.txt")
    findings = [
        Finding(id="driver-too-old-for-cuda", severity="error", category="driver-too-old",
                message="torch 1.12.1+cu116 needs driver >= 510.39 for CUDA 11.6; this one is <old>.",
                fix="Update the NVIDIA driver:\n\n    sudo apt install nvidia-driver-535\n"),
        Finding(id="tf32-disabled-on-ampere", severity="info", category="performance",
                message="TF32 is off.", fix="Call torch.set_float32_matmul_precision('high')."),
    ]
    report = Report(tool_version=__version__, command="report", facts=facts, findings=findings,
                    rules_evaluated=2)
    text = render_ticket(report)
    assert "**broken** (1 error(s), 0 warning(s), 1 note(s))" in text.splitlines()[0]
    block = text[text.index("### Findings"):text.index("### Environment")]
    assert "- **error** `driver-too-old-for-cuda`: torch 1.12.1+cu116 needs driver" in block
    assert "&lt;old&gt;" in block  # redaction tokens and angle brackets stay visible on GitHub
    assert "\n  **Fix:** Update the NVIDIA driver:\n" in block  # a paragraph of the list item
    # the rule's indented code block becomes a fence indented into the list item
    assert "  ```\n  sudo apt install nvidia-driver-535\n  ```" in block
    assert "- **info** `tf32-disabled-on-ampere`: TF32 is off." in block
    assert "set_float32_matmul_precision" not in block  # no fix line for notes


def test_ticket_for_a_report_where_torch_does_not_import():
    text = render_ticket(report_for(load(CORPUS / "case025.txt")))
    assert text.startswith("**Environment:** torch does not import · ")
    assert "PyTorch version: N/A" in fenced_block(text)


def test_ticket_when_every_namespace_is_unknown():
    reason = Unavailable(unavailable="probe crashed")
    facts = Facts(torch=reason, gpu=reason, cpu=reason, memory=reason, env=reason, packages=reason,
                  system=reason, problems=["probe torch: crashed"])
    text = render_ticket(report_for(facts))
    assert text.startswith("**Environment:** torch unknown · build unknown · GPU unknown")
    assert "<details><summary>gpu: unknown (probe crashed)</summary>" in text
    block = fenced_block(text)
    # nothing is known, so nothing is claimed: no "Could not collect" (collect_env's words)
    assert block.strip() == ""


def test_compress_ints():
    assert compress_ints([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert compress_ints([5]) == "5"


def test_summary_line_escapes_markdown():
    facts = load(CORPUS / "case023.txt")
    data = json.loads(facts.model_dump_json())
    data["system"]["os_name"] = "Ubuntu <b>22.04</b>"
    line = summary_line(report_for(Facts.model_validate(data)))
    assert "&lt;b&gt;22.04&lt;/b&gt;" in line


# ----------------------------------------------------------------------------------------
# the block never says something collect_env did not (tests/data/healthy/)
# ----------------------------------------------------------------------------------------


def block_of(name: str) -> str:
    return fenced_block(render_ticket(report_for(load(HEALTHY / name))))


def field_lines(text: str) -> dict:
    """label -> value of the "Label: value" lines of a collect_env text."""
    out = {}
    for line in text.splitlines():
        label, sep, value = line.strip().partition(": ")
        if sep and not label.startswith("["):
            out.setdefault(label, value.strip())
    return out


@pytest.mark.parametrize("name", ["v01.txt", "v06.txt", "v09.txt", "v10.txt"])
def test_could_not_collect_only_where_the_report_said_it(name):
    source = field_lines((HEALTHY / name).read_text())
    block = block_of(name)
    for label, value in field_lines(block).items():
        if value == "Could not collect":
            assert source.get(label) == "Could not collect", label
    for label in NEVER_KNOWN:
        assert label not in block
    assert "\nNone\n" not in "\n" + block + "\n"  # no invented "CPU:" / "None"


def test_lines_torchdoctor_does_not_know_are_left_out_v09():
    # GCC, CMake, CUDA_MODULE_LOADING and XNNPACK were stated; none of them is a fact
    block = block_of("v09.txt")
    assert "GCC version" not in block and "CMake version" not in block
    assert "CUDA_MODULE_LOADING" not in block and "XNNPACK" not in block
    # never in this (2.8) report, and not facts: not invented
    assert "Is XPU available" not in block and "Caching allocator config" not in block
    # the packages section was cut from the excerpt: no "[pip3] Could not collect"
    assert "Versions of relevant libraries" not in block and "[pip3]" not in block
    # what the report did say is kept
    assert "CUDA runtime version: Could not collect\n" in block
    assert "Python platform: Linux-5.4.0-153-generic-x86_64-with-glibc2.35\n" in block
    assert "\nCPU:\nArchitecture:                         x86_64\n" in block


def test_rocm_report_v10():
    block = block_of("v10.txt")
    assert "CUDA used to build PyTorch: N/A\n" in block  # collect_env's word for a ROCm build
    # the AMD GPU, the HIP runtime and MIOpen versions are not facts: left out, not invented
    assert "GPU models and configuration" not in block
    assert "HIP runtime version" not in block and "MIOpen runtime version" not in block


def test_old_windows_report_v01():
    block = block_of("v01.txt")
    assert "Python platform" not in block  # the report has none and the facts cannot rebuild it
    assert "Is XPU available" not in block and "Caching allocator config" not in block
    assert "CPU:" not in block  # no CPU section in the report
    assert "CUDA_MODULE_LOADING" not in block
    assert "GPU models and configuration: GPU 0: GeForce GTX 1050\n" in block
    # the facts keep conda names normalised (mkl_fft -> mkl-fft); build strings and channels stay
    assert "[conda] pytorch                   1.0.0                     py3.7_cuda90_cudnn7_1 pytorch" in block


def test_heading_says_unknown_lines_are_left_out():
    text = render_ticket(report_for(load(HEALTHY / "v06.txt")))
    head = text[text.index("### Environment"):text.index("```text")]
    assert "left out where torchdoctor does not know" in head


def test_rocm_probe_known_absent_fields():
    data = json.loads(load(PROBE).model_dump_json())
    data["torch"]["hip_build"] = "6.2.41134-65d174c3e"
    block = collect_env_text(Facts.model_validate(data))
    assert "ROCM used to build PyTorch: 6.2.41134-65d174c3e\n" in block
    assert "CUDA used to build PyTorch: N/A\n" in block
    assert "HIP runtime version" not in block and "MIOpen runtime version" not in block


# ----------------------------------------------------------------------------------------
# compute capability names
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("cc, name", [(7.5, "sm_75"), (8.6, "sm_86"), (9.0, "sm_90"), (10.0, "sm_100"),
                                      (12.0, "sm_120"), (12.1, "sm_121"), (6.1, "sm_61"), (3.7, "sm_37")])
def test_sm_name(cc, name):
    from torchdoctor.ticket import sm_name

    assert sm_name(cc) == name


def test_sm_name_of_no_number():
    from torchdoctor.ticket import sm_name

    assert sm_name(None) is None and sm_name(True) is None and sm_name(Unavailable(unavailable="x")) is None


@pytest.mark.parametrize("name, expected", [("v09.txt", "8× NVIDIA H800 (sm_90, Hopper)"),
                                            ("v12.txt", "5× NVIDIA B200 (sm_100, Blackwell)"),
                                            ("v06.txt", "NVIDIA GeForce GTX 1660 Ti (sm_75, Turing)")])
def test_summary_line_compute_capability(name, expected):
    assert expected in summary_line(report_for(load(HEALTHY / name)))


# ----------------------------------------------------------------------------------------
# round trip: render -> torchdoctor's collect_env importer -> same key facts
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES)
def test_round_trip_through_the_importer_keeps_key_facts(case):
    original = load(CORPUS / case)
    ticket = render_ticket(report_for(original))
    for text in (ticket, collect_env_text(original)):
        reparsed = load_report(text.encode("utf-8"), "ticket.md")
        assert reparsed.origin == "report"
        before, after = key_values(original), key_values(reparsed)
        if "\nPython platform:" not in "\n" + text:
            # platform.platform() is rebuilt only where the facts give it exactly (Python >= 3.10)
            assert after.pop("system.kernel") == "unknown"
            before.pop("system.kernel")
        assert after == before
        assert diff_facts(original, reparsed).relevant == []


def test_round_trip_of_a_real_probe():
    original = load(PROBE)
    reparsed = load_report(render_ticket(report_for(original)).encode(), "ticket.md")
    # torch.cuda_build (None) is not written: this probe did not record nvcc or the driver, so
    # collect_env's "None" (No CUDA) and "Could not collect" cannot be told apart
    assert isinstance(reparsed.torch.cuda_build, Unavailable)
    for path in ("torch.version", "torch.cuda_available", "system.python_version",
                 "system.os_name", "system.libc", "system.kernel", "system.machine", "cpu.model",
                 "cpu.logical_cores", "cpu.architecture"):
        ns, field = path.split(".")
        assert getattr(getattr(reparsed, ns), field) == getattr(getattr(original, ns), field), path
    assert isinstance(reparsed.cpu.flags, Unavailable)  # no Flags row: see the block test
    assert reparsed.packages.versions == original.packages.versions


# ----------------------------------------------------------------------------------------
# the command
# ----------------------------------------------------------------------------------------


def test_report_command_markdown_exit_0(capsys):
    code, out, err = run(capsys, "report", "--from-report", CORPUS / "case001.txt")
    assert code == 0
    assert out.startswith("**Environment:** torch 0.4.1.post2")
    assert "```text\nPyTorch version: 0.4.1.post2\n" in out


def test_report_is_not_a_gate_even_with_errors(capsys, tmp_path):
    facts = load(CORPUS / "case023.txt")
    facts = facts.model_copy(update={"problems": ["probe gpu: nvidia-smi timed out"]})
    path = tmp_path / "facts.json"
    path.write_text(facts.model_dump_json())
    code, out, _ = run(capsys, "report", "--facts", path)
    assert code == 0
    assert "`probe-problem`: probe gpu: nvidia-smi timed out" in out


def test_report_command_json(capsys):
    code, out, _ = run(capsys, "report", "--facts", PROBE, "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert data["command"] == "report" and data["facts"]["torch"]["version"] == "2.13.0+cpu"


def test_report_command_output_file(capsys, tmp_path):
    dest = tmp_path / "env.md"
    code, out, err = run(capsys, "report", "--facts", PROBE, "-o", dest)
    assert code == 0 and out == ""
    assert dest.read_text().startswith("**Environment:** torch 2.13.0+cpu")
    assert err.startswith(f"torchdoctor report: wrote {dest}")


def test_report_command_bad_input_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"\x00\x01\x02 not text\n")  # prose is read (issue 18); binary is refused
    code, out, err = run(capsys, "report", "--from-report", bad)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    ("torch", "expected"),
    [
        ({"version": "2.13.0+xpu", "cuda_build": None, "hip_build": None}, "XPU build"),
        ({"version": "2.13.0", "cuda_build": None, "hip_build": None, "xpu_build": "20250101"}, "XPU build"),
        ({"version": "2.13.0+cpu", "cuda_build": None, "hip_build": None}, "CPU-only build"),
        ({"version": "2.6.0+rocm6.2.4", "cuda_build": None, "hip_build": "6.2.41134"}, "ROCm 6.2.41134"),
    ],
)
def test_summary_names_the_build_kind(torch, expected):
    from torchdoctor.ticket import build_summary

    assert build_summary(Facts.model_validate({"torch": {"import_status": "ok", **torch}})) == expected


# ----------------------------------------------------------------------------------------
# nothing from the facts pings anyone or breaks out of its code span or block
# ----------------------------------------------------------------------------------------

# how GitHub finds a mention (html-pipeline's MentionFilter): an @ not after a word character,
# then a user or org/team name
GITHUB_MENTION = re.compile(r"(?:^|[^A-Za-z0-9_])@([A-Za-z0-9][A-Za-z0-9-]*)")


def outside_code(markdown: str) -> str:
    """The text GitHub renders as prose: fenced blocks and code spans (CommonMark: a run of n
    backticks closes only at the next run of exactly n) taken out."""
    prose, fence = [], None
    for line in markdown.splitlines():
        m = re.match(r" {0,3}(`{3,}|~{3,})", line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
                fence = None
            continue
        prose.append(line)
    return "\n".join(_without_code_spans(line) for line in prose)  # each line is one paragraph or cell row


def _without_code_spans(text: str) -> str:
    out, i = [], 0
    for run in re.finditer(r"`+", text):
        if run.start() < i:
            continue
        close = next((m for m in re.finditer(r"`+", text[run.end():]) if len(m.group(0)) == len(run.group(0))), None)
        if close is None:
            continue
        out.append(text[i:run.start()])
        i = run.end() + close.end()
    out.append(text[i:])
    return "".join(out)


def mention_facts() -> Facts:
    data = json.loads(load(CORPUS / "case023.txt").model_dump_json())
    data["origin"] = "json"
    data["system"]["os_name"] = "Ubuntu 22.04 @octocat\n```\n@pytorch/triage ping"
    data["gpu"]["devices"][0]["name"] = "@nvidia RTX 3090"
    data["gpu"]["name"] = "@nvidia RTX 3090"
    data["torch"]["version"] = "1.12.1+@admin"
    data["problems"] = ["probe gpu: (@someone) please look", "``@twobackticks`` and ` @one"]
    data["env"] = {"variables": {"NCCL_DEBUG": "@envuser"}}
    data["memory"] = {"unavailable": "@reason-user said so"}
    data["packages"]["versions"]["x@pkg"] = "1.0"
    return Facts.model_validate(data)


def test_mentions_from_the_facts_do_not_ping(capsys, tmp_path):
    ticket = render_ticket(report_for(mention_facts()))
    prose = outside_code(ticket)
    assert GITHUB_MENTION.findall(prose) == []
    # still readable: the @ and the name are there, a zero-width space between them
    summary = summary_line(report_for(mention_facts()))
    assert "@\u200boctocat" in summary and "@\u200bnvidia RTX 3090" in summary
    # and through the command, from a facts file
    path = tmp_path / "mentions.json"
    path.write_text(mention_facts().model_dump_json())
    code, out, err = run(capsys, "report", "--facts", path)
    assert code == 0, err
    assert GITHUB_MENTION.findall(outside_code(out)) == []
    assert "octocat" in out and "someone" in out


def test_a_value_cannot_close_the_collect_env_fence_or_its_code_span():
    ticket = render_ticket(report_for(mention_facts()))
    fences = [line for line in ticket.splitlines() if re.match(r" {0,3}```", line)]
    assert fences.count("```text") == 1
    block = fenced_block(ticket)
    assert "Versions of relevant libraries:" in block  # the block runs to its real end
    # the block still reads back: the zero-width space is dropped by the importer
    back = load_report(block.encode(), "block.txt")
    assert back.system.os_name.startswith("Ubuntu 22.04")
    # a value with backticks stays inside its code span in the facts tables
    from torchdoctor.ticket import md_code

    assert md_code("a `` b") == "``` a `` b ```"
    assert outside_code(f"x {md_code('``@twobackticks`` and ` @one')} y") == "x  y"


def test_summary_says_when_a_report_could_not_import_torch():
    from torchdoctor.importers import load_report
    from torchdoctor.ticket import torch_summary

    # pytorch/pytorch issue (tests/data/cases2/case251.json): `PyTorch version: N/A`, no package lists
    path = Path(__file__).resolve().parent / "data" / "cases2" / "case251.txt"
    facts = load_report(path.read_bytes(), path.name)
    assert facts.torch.import_status == "unknown-from-report"
    assert torch_summary(facts) == "torch could not be imported when the report was made"
