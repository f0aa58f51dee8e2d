"""Known error messages in pasted text (issue 18): rules/data/known_messages.yaml, the reader that
finds them wherever they stand (torchdoctor.importers.paste.messages), the rules that judge them,
and how a report shows which lines were recognised."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from torchdoctor import tables
from torchdoctor.facts import Unavailable
from torchdoctor.importers import load_report
from torchdoctor.importers.paste.messages import entries, find_messages
from torchdoctor.paths import data_dir

DATA = Path(__file__).resolve().parent / "data"
CASES3 = DATA / "cases3"
MESSAGES = yaml.safe_load((data_dir() / "known_messages.yaml").read_text(encoding="utf-8"))["messages"]


def _ids(text: str) -> list[str]:
    return [h.entry.id for h in find_messages(text)]


@pytest.mark.parametrize(
    ("entry", "example"),
    [(m, ex) for m in MESSAGES for ex in m["examples"]],
    ids=lambda v: v["id"] if "id" in v else v["source"][:40],
)
def test_every_quoted_example_is_recognised_as_its_entry(entry, example):
    assert entry["id"] in _ids(example["text"]), (entry["id"], _ids(example["text"]))


def test_every_entry_names_its_sources_and_a_real_quote():
    for m in MESSAGES:
        assert m["sources"] and all(s.startswith("https://") for s in m["sources"]), m["id"]
        assert m["examples"] and all(ex["text"].strip() and ex["source"] for ex in m["examples"])


def test_the_issue_classes_each_have_an_entry_quoted_from_a_ticket():
    """Every message class issue 18 lists is covered, with at least one example from a ticket
    (owner/repo#number)."""
    by_class = {
        "numpy 2": ("numpy2-module-built-for-numpy1", "numpy-array-api-not-found", "numpy-not-available-to-torch"),
        "glibc": ("glibc-too-old",), "glibcxx": ("glibcxx-too-old",),
        "shared memory": ("dataloader-bus-error", "nccl-shm-create-failed", "nccl-shm-extend-failed"),
        "nccl": ("nccl-unhandled-system-error", "nccl-warn"),
        "not compiled with cuda": ("torch-not-compiled-with-cuda",), "no driver": ("no-nvidia-driver",),
        "driver insufficient": ("cuda-driver-insufficient",), "no kernel image": ("no-kernel-image",),
        "hip": ("hip-invalid-device-function", "hip-no-binary-for-gpu"),
        "cudnn": ("cudnn-not-initialized",), "torchvision nms": ("torchvision-ops-missing",),
        "undefined symbol": ("extension-undefined-symbol",), "windows dll": ("windows-torch-dll-failed",),
        "pip": ("pip-no-torch-for-interpreter",), "uv": ("uv-no-torch-wheel-for-platform",),
        "xformers": ("xformers-sees-cpu-torch",),
    }
    known = {m["id"]: m for m in MESSAGES}
    for name, ids in by_class.items():
        for i in ids:
            assert i in known, (name, i)
            assert any("#" in ex["source"] and "/" in ex["source"].split("#")[0] and " " not in ex["source"]
                       for ex in known[i]["examples"]), (name, i)


# ------------------------------------------------------------------------ where a message stands


GLIBC = ("ImportError: /lib64/libc.so.6: version `GLIBC_2.28' not found (required by "
         "/opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_python.so)")


def test_a_message_is_found_quoted_fenced_wrapped_and_mid_traceback():
    wrapped = GLIBC[:37] + "\n" + GLIBC[37:80] + "\n" + GLIBC[80:]  # cut mid-word by a terminal
    quoted = "\n".join("> " + line for line in wrapped.splitlines())
    traceback = ("It fails:\n```\nTraceback (most recent call last):\n  File \"x.py\", line 1, in <module>\n"
                 "    import torch\n" + quoted + "\n```\nthanks\n")
    hits = find_messages(traceback)
    assert [h.entry.id for h in hits] == ["glibc-too-old"]
    assert hits[0].lines == (7,) and hits[0].values == {"needed": "2.28"}


def test_the_quote_forms_of_the_loader_are_all_read():
    for quote in ("`GLIBC_2.28'", "'GLIBC_2.28'", "\u2018GLIBC_2.28\u2019", "GLIBC_2.28"):
        assert _ids(f"libc.so.6: version {quote} not found (required by x.so)") == ["glibc-too-old"]


def test_a_list_of_glibc_versions_is_not_the_message():
    """`strings libc.so.6 | grep GLIBC_` output names versions but says nothing is missing."""
    assert _ids("GLIBC_2.2.5\nGLIBC_2.17\nGLIBCXX_3.4.25\n") == []


def test_a_message_after_a_collect_env_report_is_found():
    text = (DATA / "corpus" / "case001.txt").read_text(encoding="utf-8") + "\n" + GLIBC + "\n"
    facts = load_report(text.encode(), "r.txt")
    assert [m.id for m in facts.paste.messages] == ["glibc-too-old"]
    assert facts.paste.read_as == "collect_env"


def test_generic_forms_give_way_to_the_specific_entry():
    text = ("ERROR: Could not find a version that satisfies the requirement torch (from versions: none)\n"
            "ERROR: No matching distribution found for torch\n")
    assert _ids(text) == ["pip-no-torch-for-interpreter"]


def test_a_typo_version_is_not_called_an_unsupported_python_error():
    """torch==1.15.0 never existed (cheniison/e2e-coref-pytorch#1): pip lists real releases from
    0.1.2 on, which is not the 'no wheel for this interpreter' form."""
    text = (CASES3 / "case372.txt").read_text(encoding="utf-8")
    assert _ids(text) == ["pip-no-torch-version"]


# ------------------------------------------------------------------------ the data is checked


def _copy(tmp_path: Path, old: str, new: str) -> str:
    for f in data_dir().glob("*.yaml"):
        shutil.copy(f, tmp_path / f.name)
    target = tmp_path / "known_messages.yaml"
    text = target.read_text(encoding="utf-8")
    assert old in text
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    return str(tmp_path)


@pytest.mark.parametrize(("old", "new", "words"), [
    (r"regex: 'glibc_(?P<needed>2\.\d{1,3})", r"regex: '(?:glibc_[0-9]{1,3}){1,9}(?P<needed>2\.\d{1,3})",
     "nested repetition"),
    (r"regex: 'glibc_(?P<needed>2\.\d{1,3})", r"regex: 'glibc_.*(?P<needed>2\.\d{1,3})", "unbounded repetition"),
    ("category: os-unsupported", "category: glibc-trouble", "unknown category"),
    ("is older than {needed}:", "is older than {wanted}:", "placeholder {wanted}"),
    ("needle: GLIBC_2.", "needle: G_2", "needle too short"),
])
def test_a_bad_entry_is_refused_when_loaded(tmp_path, old, new, words):
    directory = _copy(tmp_path, old, new)
    tables.load.cache_clear()
    try:
        with pytest.raises(tables.DataFileError, match=words):
            entries(directory)
    finally:
        tables.load.cache_clear()


# ------------------------------------------------------------------------ facts, findings, reports


def test_a_real_body_gives_the_finding_of_the_message_category_with_its_line():
    """pyg-team/pyg-lib#548: the loader's message on line 14 is the platform (os-unsupported),
    not a torch import failure."""
    from torchdoctor.engine import evaluate
    from torchdoctor.rules import load_rules

    facts = load_report((CASES3 / "case304.txt").read_bytes(), "case304.txt")
    (m,) = facts.paste.messages
    assert (m.id, m.lines, m.category, m.values) == ("glibc-too-old", [14], "os-unsupported", {"needed": "2.33"})
    line = (CASES3 / "case304.txt").read_text(encoding="utf-8").splitlines()[13]
    assert "GLIBC_2.33' not found" in line
    found = [f for f in evaluate(load_rules(), facts).findings if f.id == "known-message-error"]
    assert [f.category for f in found] == ["os-unsupported"]
    assert "recognised on line 14: glibc-too-old" in found[0].message


@pytest.mark.parametrize("fmt", ["terminal", "markdown", "json"])
def test_every_format_says_which_lines_were_recognised(fmt, capsys):
    from torchdoctor.cli import main

    code = main(["check", "--from-report", str(CASES3 / "case341.txt"), "--format", fmt, "--fail-on", "never"])
    out = capsys.readouterr().out
    assert code == 0
    if fmt == "json":
        messages = json.loads(out)["facts"]["paste"]["messages"]
        assert [(m["id"], m["lines"]) for m in messages] == [("no-kernel-image", [1])]
    else:
        assert "Recognised in the paste" in out
        assert "line 1: no-kernel-image (gpu-arch-unsupported, error)" in out


def test_probes_have_no_pasted_messages():
    from torchdoctor.facts import Facts

    assert Facts().paste.messages == [] and Facts().paste.read_as is None


# ------------------------------------------------------------------------ facts from prose


def test_facts_from_a_sentence_are_marked_as_prose_and_give_the_driver_finding():
    """Issue 18 item 3: "torch 1.3 with pip", "driver version 410.48", "Ubuntu 16.04", "an RTX
    4090" are read, each source says prose, the GPU is the model name and not the sentence, and
    PyPI's default build of 1.3 (CUDA 10.1, rules/data/torch_releases.yaml) with that driver is
    the driver finding."""
    from torchdoctor.engine import evaluate
    from torchdoctor.rules import load_rules

    text = ("I installed torch 1.3 with pip on Ubuntu 16.04, driver version 410.48, on an RTX 4090.\n"
            "It does not work.\n")
    f = load_report(text.encode(), "issue.txt")
    assert (f.torch.version, f.torch.cuda_build) == ("1.3", "10.1")
    assert (f.gpu.driver_version, f.gpu.name, f.system.os_name, f.system.os) == (
        "410.48", "RTX 4090", "Ubuntu 16.04", "Linux")
    for path in ("torch.version", "gpu.driver_version", "gpu.name", "system.os_name"):
        assert f.sources[path] == "prose, line 1", path
    assert f.sources["torch.cuda_build"].startswith("PyPI's default wheel of torch 1.3")
    found = {x.id: x for x in evaluate(load_rules(), f).findings}
    assert found["driver-too-old-for-stated-cuda-build"].category == "driver-too-old"


def test_without_pip_or_linux_no_default_build_is_assumed():
    f = load_report(b"torch 1.3 on Windows 10, driver version 410.48\n", "issue.txt")
    assert f.torch.version == "1.3" and isinstance(f.torch.cuda_build, Unavailable)
    f = load_report(b"torch 1.3 with driver version 410.48 on Ubuntu 18.04\n", "issue.txt")
    assert isinstance(f.torch.cuda_build, Unavailable)  # how it was installed is not said


def test_a_template_value_with_the_package_name_is_a_version():
    f = load_report((CASES3 / "case304.txt").read_bytes(), "case304.txt")  # "PyTorch version:torch2.8.0+cu128"
    assert f.torch.version == "2.8.0+cu128" and f.torch.cuda_build == "12.8"


# ------------------------------------------------------------------------ two environments, typos


def test_two_environments_are_named_and_not_mixed():
    """ultralytics/ultralytics#1495 (tests/data/cases2/case256): two banners, two torch builds."""
    from torchdoctor.engine import evaluate
    from torchdoctor.rules import load_rules

    f = load_report((DATA / "cases2" / "case256.txt").read_bytes(), "case256.txt")
    assert f.paste.environments == ["torch 1.8.1+cu111 (tool banner, line 1)",
                                    "torch 2.0.0+cpu (tool banner, line 2)"]
    assert f.torch.version == "1.8.1+cu111" and f.torch.cuda_build == "11.1"  # the first one's, unmixed
    found = [x for x in evaluate(load_rules(), f).findings if x.id == "several-environments-in-paste"]
    assert len(found) == 1 and "torch 2.0.0+cpu (tool banner, line 2)" in found[0].message


def test_a_version_no_release_has_is_a_typo_not_a_second_install():
    f = load_report(b"PyTorch version: 7.0+cu118\n[pip3] torchaudio==2.7.0+cu118\n", "r.txt")
    assert f.paste.environments == []
    assert any("torch 7.0+cu118" in n and "typo" in n for n in f.notes)


def test_ds_report_dotted_rows_are_read():
    """DeepSpeed's ds_report (deepspeedai/DeepSpeed#6762): "label ....... value" rows."""
    f = load_report((CASES3 / "dumps" / "ds_report_deepspeed_6762.txt").read_bytes(), "ds_report.txt")
    assert (f.torch.version, f.torch.cuda_build, f.system.cuda_toolkit_version, f.system.python_version) == (
        "2.3.0+cu121", "12.1", "12.0", "3.12")
    assert f.sources["torch.cuda_build"] == "key-value line, line 6"


def test_a_too_old_glibc_is_the_platform_not_a_torch_import_failure():
    """KumaTea/pytorch-aarch64#16: import torch fails on GLIBC_2.28; the finding is os-unsupported
    and torch-import-failed stays silent (issue 18 item 6)."""
    from torchdoctor.engine import evaluate
    from torchdoctor.rules import load_rules

    f = load_report((CASES3 / "case301.txt").read_bytes(), "case301.txt")
    assert f.torch.import_status == "import-error"
    found = [(x.id, x.category) for x in evaluate(load_rules(), f).findings if x.severity != "info"]
    assert found == [("known-message-error", "os-unsupported")]
