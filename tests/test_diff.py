"""`torchdoctor diff A B`: what differs between two environments, and whether it matters.

Inputs are real: collect_env reports from public bug tickets (tests/data/corpus/, copied from
/work/shared/corpus/) and a recorded probe of the development container
(tests/data/diff/dev-container-cpu-probe.json). Variants (LF endings, indented, a field
turned into "Could not collect") are made from them in tmp_path.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from torchdoctor.cli import main
from torchdoctor.diff import (
    ABSENT,
    diff_facts,
    flatten,
    load_relevance,
    parent_paths,
    render_diff,
)
from torchdoctor.facts import NAMESPACE_MODELS, Facts
from torchdoctor.importers import load_report

DATA = Path(__file__).resolve().parent / "data"
CORPUS = DATA / "corpus"
PROBE = DATA / "diff" / "dev-container-cpu-probe.json"

CU116 = CORPUS / "case023.txt"  # torch 1.12.1+cu116, 3x RTX 3090, Ubuntu 22.04, Python 3.9 (CRLF)
CU113 = CORPUS / "case019.txt"  # torch 1.12.1+cu113, no GPU visible, Ubuntu 18.04, Python 3.7 (CRLF)


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def load(path: Path) -> Facts:
    return load_report(path.read_bytes(), path.name)


# ----------------------------------------------------------------------------------------
# exit codes on real pairs
# ----------------------------------------------------------------------------------------


def test_different_torch_and_cuda_is_relevant_exit_1(capsys):
    code, out, err = run(capsys, "diff", CU116, CU113, "--format", "json")
    assert code == 1
    data = json.loads(out)
    paths = [d["path"] for d in data["relevant"]]
    assert "torch.version" in paths and "torch.cuda_build" in paths
    # ranked as in diff_relevance.yaml: torch before CUDA before Python before packages
    assert paths.index("torch.version") < paths.index("torch.cuda_build") < paths.index(
        "system.python_version") < paths.index('packages.versions["numpy"]')
    entry = data["relevant"][paths.index("torch.cuda_build")]
    assert (entry["left"], entry["right"]) == ("11.6", "11.3")
    assert entry["why"]
    assert data["exit_code"] == 1 and "difference(s) that matter" in err


def test_unknown_on_one_side_is_not_a_relevant_difference(capsys):
    # case019 says "Could not collect" for the GPUs and the driver: unknown, listed apart
    _, out, _ = run(capsys, "diff", CU116, CU113, "--format", "json")
    data = json.loads(out)
    relevant = {d["path"] for d in data["relevant"]}
    unknown = {d["path"]: d for d in data["unknown"]}
    assert "gpu.driver_version" in unknown and "gpu.driver_version" not in relevant
    assert unknown["gpu.driver_version"]["left"] == "515.65.01"
    assert "unavailable" in unknown["gpu.driver_version"]["right"]


def test_only_unknowns_differ_exit_0(capsys, tmp_path):
    text = CU116.read_bytes().decode()
    edited = text.replace("Nvidia driver version: 515.65.01", "Nvidia driver version: Could not collect")
    assert edited != text
    b = tmp_path / "case023-driver-unknown.txt"
    b.write_text(edited, newline="")
    code, out, err = run(capsys, "diff", CU116, b)
    assert code == 0, out
    assert "no difference that matters" in out
    assert "gpu.driver_version" in out and "Known on one side only" in out


def test_report_against_itself_exit_0(capsys):
    code, out, _ = run(capsys, "diff", CU116, CU116)
    assert code == 0
    assert "no difference that matters" in out


@pytest.mark.parametrize("variant", ["lf", "indented", "fenced-lf"])
def test_report_against_its_reformatted_copy_exit_0(capsys, tmp_path, variant):
    raw = CU116.read_bytes()
    assert b"\r\n" in raw  # the original is CRLF
    text = raw.decode().replace("\r\n", "\n")
    if variant == "indented":
        text = "\n".join("    " + line if line else line for line in text.split("\n"))
    elif variant == "fenced-lf":
        text = "Here is my environment:\n\n```\n" + text + "```\n"
    b = tmp_path / f"case023-{variant}.txt"
    b.write_text(text, newline="")
    code, out, err = run(capsys, "diff", CU116, b, "--format", "json")
    assert code == 0, out
    data = json.loads(out)
    assert data["relevant"] == [] and data["identical"] > 20


def test_json_against_text_of_the_same_environment_exit_0(capsys, tmp_path):
    as_json = tmp_path / "case023.json"
    as_json.write_text(load(CU116).model_dump_json(indent=2))
    code, out, err = run(capsys, "diff", as_json, CU116, "--format", "json")
    assert code == 0, out
    data = json.loads(out)
    assert data["left"]["origin"] == "json" and data["right"]["origin"] == "report"
    assert data["relevant"] == []


def test_probe_json_against_its_collect_env_rendering_exit_0(capsys, tmp_path):
    # a real probe vs the collect_env-style ticket `torchdoctor report` makes from it
    code, ticket, _ = run(capsys, "report", "--facts", PROBE)
    assert code == 0
    path = tmp_path / "ticket.md"
    path.write_text(ticket)
    code, out, _ = run(capsys, "diff", PROBE, path, "--format", "json")
    assert code == 0, out
    data = json.loads(out)
    assert data["relevant"] == []
    # the probe knows far more than a collect_env report: unknown on one side, not different
    unknown = {d["path"] for d in data["unknown"]}
    assert "torch.num_threads" in unknown


def test_changed_setting_in_probe_json_is_relevant(capsys, tmp_path):
    data = json.loads(PROBE.read_text())
    data["torch"]["settings"]["torch.backends.cudnn.benchmark"] = True
    data["torch"]["num_threads"] = 1
    data["memory"]["available_bytes"] = 12345  # noise: changes from run to run
    b = tmp_path / "changed.json"
    b.write_text(json.dumps(data))
    code, out, _ = run(capsys, "diff", PROBE, b, "--format", "json")
    assert code == 1
    res = json.loads(out)
    relevant = [d["path"] for d in res["relevant"]]
    assert relevant == ['torch.settings["torch.backends.cudnn.benchmark"]', "torch.num_threads"]
    assert [d["path"] for d in res["noise"]] == ["memory.available_bytes"]


# ----------------------------------------------------------------------------------------
# output formats
# ----------------------------------------------------------------------------------------


def test_noise_is_counted_and_shown_with_all(capsys, tmp_path):
    data = json.loads(PROBE.read_text())
    data["memory"]["available_bytes"] = 12345
    data["torch"]["module_path"] = "/opt/elsewhere/torch"
    b = tmp_path / "noisy.json"
    b.write_text(json.dumps(data))
    code, out, _ = run(capsys, "diff", PROBE, b)
    assert code == 0
    assert "2 other difference(s)" in out and "memory.available_bytes" not in out
    code, out, _ = run(capsys, "diff", PROBE, b, "--all")
    assert code == 0
    assert "memory.available_bytes" in out and "Other differences" in out


def test_markdown_format(capsys):
    code, out, err = run(capsys, "diff", CU116, CU113, "--format", "markdown")
    assert code == 1
    assert out.startswith("## torchdoctor diff: case023.txt ↔ case019.txt")
    assert "### Differences that matter" in out
    assert "| `torch.cuda_build` | 11.6 | 11.3 |" in out
    assert "### Known on one side only (not compared)" in out


def test_terminal_format_lists_relevant_first(capsys):
    code, out, _ = run(capsys, "diff", CU116, CU113)
    assert code == 1
    assert out.index("Differences that matter") < out.index("Known on one side only")
    assert "torch.cuda_build" in out and "1.12.1+cu116" in out


def test_output_file_and_stdin(capsys, tmp_path, monkeypatch):
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(CU113.read_bytes())))
    dest = tmp_path / "diff.md"
    code, out, err = run(capsys, "diff", CU116, "-", "--format", "markdown", "-o", dest)
    assert code == 1 and out == ""
    assert "&lt;stdin&gt;" in dest.read_text()  # HTML-escaped in Markdown
    assert err.startswith("torchdoctor diff: ")


# ----------------------------------------------------------------------------------------
# bad input: exit 2, one line, no traceback
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [
    b"\x00\x01\x02 binary \xff\xfe garbage" * 20,
    b"hello, this is not an environment report\n",
    b"{\"not\": \"torchdoctor\"}",
    b"",
])
def test_garbage_input_exit_2_one_line(capsys, tmp_path, content):
    bad = tmp_path / "garbage.txt"
    bad.write_bytes(content)
    code, out, err = run(capsys, "diff", CU116, bad)
    assert code == 2
    assert out == ""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchdoctor: error: ") and "garbage.txt" in lines[0]


def test_missing_file_exit_2(capsys, tmp_path):
    code, out, err = run(capsys, "diff", CU116, tmp_path / "nope.json")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1


def test_both_stdin_exit_2(capsys):
    code, _, err = run(capsys, "diff", "-", "-")
    assert code == 2 and "stdin" in err


# ----------------------------------------------------------------------------------------
# the relevance table and flattening
# ----------------------------------------------------------------------------------------


def test_relevance_patterns_name_real_facts():
    noise, relevant = load_relevance()
    assert relevant and noise
    for p in (*noise, *relevant):
        ns, _, rest = p.pattern.partition(".")
        assert ns in NAMESPACE_MODELS, p.pattern
        field = rest.split(".")[0].split("[")[0].rstrip("*")
        assert field in NAMESPACE_MODELS[ns].model_fields, p.pattern
        assert p.why, f"{p.pattern}: no why"


def test_relevance_order_follows_the_yaml():
    _, relevant = load_relevance()
    order = [p.pattern for p in relevant]
    assert order.index("torch.version") < order.index("torch.cuda_build") < order.index(
        "torch.cudnn_version") < order.index("gpu.driver_version") < order.index(
        "gpu.devices[*].name") < order.index("torch.settings[*]") < order.index(
        "torch.num_threads") < order.index("system.python_version") < order.index(
        "system.os") < order.index('packages.versions["nvidia-*"]')


def test_flatten_paths_and_parents():
    flat = flatten(load(CU116))
    assert flat["torch.version"] == "1.12.1+cu116"
    assert flat["gpu.devices[2].name"] == "NVIDIA GeForce RTX 3090"
    assert flat['packages.versions["numpy"]'] == "1.23.3"
    assert list(parent_paths('gpu.devices[2].name')) == ["gpu.devices[2]", "gpu.devices", "gpu"]
    assert list(parent_paths('torch.settings["torch.backends.cudnn.benchmark"]')) == [
        "torch.settings", "torch"]


def test_gpu_present_on_one_json_side_only_is_relevant():
    a = load(CU116)
    b_data = json.loads(a.model_dump_json())
    b_data["gpu"]["devices"] = b_data["gpu"]["devices"][:1]
    b_data["gpu"]["count"] = 1
    b = Facts.model_validate({**b_data, "origin": "json"})
    a_json = Facts.model_validate({**json.loads(a.model_dump_json()), "origin": "json"})
    result = diff_facts(a_json, b)
    paths = [d.path for d in result.relevant]
    assert "gpu.count" in paths and "gpu.devices[1].name" in paths
    d = next(d for d in result.relevant if d.path == "gpu.devices[1].name")
    assert d.right is ABSENT
    assert "(not present)" in render_diff(result, "markdown")


# ----------------------------------------------------------------------------------------
# reasons are true of the row they annotate (rules/data/diff_relevance.yaml, why_when)
# ----------------------------------------------------------------------------------------

HEALTHY = DATA / "healthy"  # see its README: v06 = 1.13.1 / numpy 1.23.5, v05 = 1.8.1 / numpy 1.20.3


def _why(res: dict, path: str) -> str:
    return next(d["why"] for d in res["relevant"] if d["path"] == path)


def test_numpy_reason_names_numpy_2_only_when_one_side_has_it(capsys, tmp_path):
    code, out, _ = run(capsys, "diff", HEALTHY / "v06.txt", HEALTHY / "v05.txt", "--format", "json")
    assert code == 1  # torch, CUDA build, driver and GPU differ
    why = _why(json.loads(out), 'packages.versions["numpy"]')
    assert "numpy 2" not in why and why == "a different numpy release (compiled extensions depend on numpy's C API)"
    # the same report with numpy 2 on one side
    text = (HEALTHY / "v06.txt").read_text().replace("[pip3] numpy==1.23.5", "[pip3] numpy==2.1.3")
    b = tmp_path / "numpy2.txt"
    b.write_text(text)
    code, out, _ = run(capsys, "diff", HEALTHY / "v06.txt", b, "--format", "json")
    res = json.loads(out)
    assert code == 1 and [d["path"] for d in res["relevant"]] == ['packages.versions["numpy"]']
    assert _why(res, 'packages.versions["numpy"]').startswith("numpy 2 on one side only")


def _pattern(path: str):
    from torchdoctor.diff import classify

    return classify(path)


@pytest.mark.parametrize("path, left, right, expected", [
    ('packages.versions["numpy"]', "1.26.4", "2.0.1", "numpy 2 on one side only (numpy 2 breaks extensions built for numpy 1)"),
    ('packages.versions["numpy"]', "2.0.1", "2.2.0", "a different numpy release (compiled extensions depend on numpy's C API)"),
    ('packages.versions["numpy"]', "2.0.1", ABSENT, "numpy 2 on one side only (numpy 2 breaks extensions built for numpy 1)"),
    ('packages.versions["numpy"]', "1.26.4", ABSENT, "a different numpy release (compiled extensions depend on numpy's C API)"),
    ("torch.import_status", "ok", "crashed", "torch imports on one side only"),
    ("torch.import_status", "timeout", "crashed", "torch fails to import differently"),
    ("packages.torch_providers", ["torch"], ["torch", "pytorch"], "more than one distribution provides torch (a second install shadows the first)"),
    ("packages.torch_providers", ["torch"], ["pytorch"], "a different distribution provides torch"),
    ("torch.cuda_build", "12.8", None, "a CUDA build of torch on one side only"),
    ("torch.cuda_build", "12.8", "12.6", "torch was built for a different CUDA version (needs a different driver, runs on different GPUs)"),
    ("gpu.devices[0].mig_mode", None, False, "the GPU's MIG mode differs"),
    ("gpu.devices[0].mig_mode", True, False, "MIG on one side only (a MIG slice is a fraction of the GPU)"),
    ("torch.float32_matmul_precision", "high", "medium", "float32 matmuls run at a different precision"),
    ("torch.float32_matmul_precision", "highest", "high", "TF32 (or faster) float32 matmuls on one side only"),
    ("system.python_bits", 64, 32, "a 32-bit interpreter cannot run PyTorch"),
    ("system.translated", None, False, "whether the interpreter runs translated (Rosetta) is stated differently"),
    ("system.translated", True, False, "x86_64 Python under Rosetta on one side only"),
    ("system.wsl", 1, 2, "a different WSL version"),
    ("system.wsl", None, 2, "WSL on one side only"),
    ("system.container", "docker", "podman", "a different container runtime"),
    ("system.container", "docker", None, "a container on one side only"),
    ('cpu.flags["avx512f"]', False, ABSENT, "a CPU feature flag (AVX-512, AMX, BF16) is recorded differently"),
    ('cpu.flags["avx512f"]', True, False, "a CPU feature (AVX-512, AMX, BF16) present on one side only"),
])
def test_reason_fits_the_values(path, left, right, expected):
    from torchdoctor.diff import reason_for

    assert reason_for(_pattern(path), left, right) == expected
    assert reason_for(_pattern(path), right, left) == expected


def test_unknown_side_gets_the_plain_reason():
    from torchdoctor.diff import reason_for
    from torchdoctor.facts import Unavailable

    p = _pattern('packages.versions["numpy"]')
    assert reason_for(p, "2.0.1", Unavailable(unavailable="the report does not list it")) == p.why


def test_why_when_is_validated(tmp_path):
    from torchdoctor.errors import RuleFileError

    for body in ("relevant:\n  - path: torch.version\n    why: x\n    why_when:\n      - one_side: value ==\n        why: y\n",
                 "relevant:\n  - path: torch.version\n    why: x\n    why_when:\n      - sometimes: value\n        why: y\n"):
        (tmp_path / "diff_relevance.yaml").write_text(body)
        load_relevance.cache_clear()
        with pytest.raises(RuleFileError, match="why_when"):
            load_relevance(str(tmp_path))
    load_relevance.cache_clear()


def test_noise_only_differences_exit_0(capsys, tmp_path):
    # every kind of noise at once: listed noise paths, and a path matching neither list
    data = json.loads(PROBE.read_text())
    data["memory"]["available_bytes"] = 1
    data["memory"]["shm_free_bytes"] = 1
    data["torch"]["module_path"] = "/elsewhere/torch"
    data["torch"]["python_executable"] = "/elsewhere/bin/python"
    data["torch"]["git_version"] = "0" * 40
    data["system"]["kernel"] = "6.1.0-99-amd64"
    data["cpu"]["affinity"] = [1, 0]
    data["packages"]["versions"]["some-unlisted-package"] = "1.0"
    b = tmp_path / "noise.json"
    b.write_text(json.dumps(data))
    code, out, _ = run(capsys, "diff", PROBE, b, "--format", "json")
    res = json.loads(out)
    assert res["relevant"] == [] and len(res["noise"]) + len(res["unknown_noise"]) >= 8
    assert code == 0 and res["exit_code"] == 0


def test_markdown_cells_keep_redaction_marks_visible():
    """'<ip>' or '/srv/<user>/code' in a table cell must not turn into an HTML tag that renders empty."""
    from torchdoctor.render import md_cell

    assert md_cell("/srv/<user>/code:~/lib") == "/srv/&lt;user&gt;/code:~/lib"
    assert md_cell("<ip> | x") == "&lt;ip&gt; \\| x"


def test_the_active_venv_path_is_noise():
    from torchdoctor.facts import EnvFacts

    def facts(venv):
        return Facts(origin="probe", env=EnvFacts(variables={"VIRTUAL_ENV": venv, "OMP_NUM_THREADS": "4"}))

    result = diff_facts(facts("/home/a/venvs/x"), facts("/srv/b/venv"))
    assert result.relevant == [] and [d.path for d in result.noise] == ['env.variables["VIRTUAL_ENV"]']


def test_where_a_pasted_fact_was_read_is_no_difference():
    # two real pastes (tests/data/cases2): torch's own warning lines, read from different lines
    data = Path(__file__).resolve().parent / "data" / "cases2"
    a = load_report((data / "case201.txt").read_bytes(), "a")
    b = load_report((data / "case202.txt").read_bytes(), "b")
    assert a.sources and b.sources
    result = diff_facts(a, b)
    paths = [d.path for d in result.relevant + result.unknown + result.noise + result.unknown_noise]
    assert not [p for p in paths if p.startswith("sources")]


# ----------------------------------------------------------------------------------------
# the terminal table never breaks a fact name mid-word (issue 21, item 12)
# ----------------------------------------------------------------------------------------


def _fact_column(text: str) -> list[str]:
    """The first column of every table row of a rendered diff, one entry per printed line."""
    return [line.split("│")[1].strip() for line in text.splitlines()
            if line.startswith("│") and line.count("│") >= 3]


@pytest.mark.parametrize("width", [80, 100, 120])
@pytest.mark.parametrize(("left", "right"), [
    (DATA / "diff" / "README.md", PROBE),            # a pasted README that lists torch vs a probe
    (HEALTHY / "v06.txt", HEALTHY / "v05.txt"),      # two real collect_env reports
    (CU116, CU113),
])
def test_fact_names_break_only_between_their_parts(left, right, width):
    a, b = (load_report(p.read_bytes(), p.name) for p in (left, right))
    result = diff_facts(a, b)
    names = {d.path for d in result.relevant + result.unknown + result.noise + result.unknown_noise}
    column = [c for c in _fact_column(render_diff(result, "terminal", show_all=True, width=width)) if c]
    assert column
    name = ""
    for i, piece in enumerate(column):
        following = column[i + 1] if i + 1 < len(column) else ""
        name += piece
        if name in names:  # a whole name, printed on one line or broken between its parts
            name = ""
            continue
        assert piece.endswith(".") or following.startswith("["), \
            f"width {width}: '{piece}' then '{following}': a fact name broken mid-word"
    assert name == "", f"width {width}: '{name}' is no fact name"
