"""triage_issue(): the Python API (what the MCP server calls), its schema, junk named, labels mapped, on real
issue bodies (tests/data/cases3, cited in its README and each case's json)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from torchdoctor.triage import triage_issue
from torchdoctor.triage.comment import MARKER
from torchdoctor.triage.labels import MappingError, check_mapping

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "tests" / "data" / "cases3"
SCHEMA = json.loads((REPO / "docs" / "schemas" / "triage.schema.json").read_text(encoding="utf-8"))
MAPPING = {
    "labels": ["module: binaries", "needs environment", "module: numpy"],
    "categories": {"os-unsupported": ["module: binaries"]},
    "messages": {"numpy2-module-built-for-numpy1": ["module: numpy"]},
    "junk": {"template": ["needs environment"], "empty": ["needs environment"],
             "screenshot": ["needs environment"]},
}


def body(name: str) -> str:
    return (CASES / f"{name}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", ["case301", "case309", "case320", "case340"])
def test_the_result_follows_the_published_schema(name):
    result = triage_issue(body(name), labels=MAPPING, always_comment=True)
    jsonschema.validate(result, SCHEMA)
    json.dumps(result)  # serialisable
    assert result["comment"].startswith(MARKER + "\n")


def test_a_glibc_error_is_found_with_its_rule_id_fix_and_mapped_label():
    # KumaTea/pytorch-aarch64#16: GLIBC_2.28 not found on Ubuntu 18.04 (maintainer: glibc 2.27 there)
    r = triage_issue(body("case301"), labels=MAPPING)
    ids = [(f["id"], f.get("message_id")) for f in r["findings"]]
    assert ("known-message-error", "glibc-too-old") in ids
    assert r["read"] is True and r["labels"] == ["module: binaries"]
    assert "`glibc-too-old`" in r["comment"] and "**Fix:**" in r["comment"]
    # what it does not say, in words, with the one command
    assert "the GPU" in r["comment"] and "`python -m torch.utils.collect_env`" in r["comment"]
    assert "gpu.name" not in r["comment"]  # never a raw fact path


def test_no_labels_without_a_mapping():
    assert triage_issue(body("case301"))["labels"] == []


def test_nothing_to_say_is_an_empty_comment_unless_always():
    plain = "Add a `foo` argument to `torch.nn.Linear`, it would be handy."
    r = triage_issue(plain)
    assert r["comment"] == "" and r["read"] is False and r["findings"] == []
    assert triage_issue(plain, always_comment=True)["comment"].startswith(MARKER)


# Junk, in the shapes issue forms render (### <label>, then the answer)
PYTORCH_TEMPLATE = """### 🐛 Describe the bug

torch.compile crashes on my model.

### Versions

Please run the following and paste the output below.
```sh
wget https://raw.githubusercontent.com/pytorch/pytorch/main/torch/utils/collect_env.py
# For security purposes, please check the contents of collect_env.py before running it.
python collect_env.py
```
"""
VLLM_PLACEHOLDER = """### Your current environment

<details>
<summary>The output of <code>python collect_env.py</code></summary>

```text
Your output of `python collect_env.py` here
```

</details>

### 🐛 Describe the bug

The server hangs.
"""
EMPTY_FIELD = """### Bug

Training stops at epoch 3.

### Environment

_No response_

### Minimal Reproducible Example

model.train()
"""
SCREENSHOT = """### Environment

![image](https://github.com/user-attachments/assets/0f1e2d3c-aaaa-bbbb-cccc-123456789abc)

### Bug

It crashes.
"""


@pytest.mark.parametrize("text, kind", [(PYTORCH_TEMPLATE, "template"), (VLLM_PLACEHOLDER, "template"),
                                        (EMPTY_FIELD, "empty"), (SCREENSHOT, "screenshot")])
def test_junk_is_named_and_earns_its_label(text, kind):
    r = triage_issue(text, labels=MAPPING)
    assert kind in r["junk"], r["junk_details"]
    assert r["labels"] == ["needs environment"]
    assert r["comment"].startswith(MARKER)
    assert "cannot be read" in r["verdict"]


def test_a_cut_collect_env_is_named():
    # a whole collect_env (tests/data/corpus/case001, cited in its README) is not cut; cut before its last
    # section it is; pytorch/pytorch#87279 (case309) is stored cut mid-line ("Is XNNPACK a")
    text = (REPO / "tests" / "data" / "corpus" / "case001.txt").read_text(encoding="utf-8")
    assert "cut" not in triage_issue(text)["junk"]
    assert "cut" in triage_issue(text[: text.index("Versions of relevant libraries")])["junk"]
    assert "cut" in triage_issue(body("case309"))["junk"]


def test_the_template_above_a_real_output_is_not_junk():
    text = PYTORCH_TEMPLATE + "\n" + (REPO / "tests" / "data" / "corpus" / "case001.txt").read_text(encoding="utf-8")
    assert "template" not in triage_issue(text)["junk"]


@pytest.mark.parametrize("bad, says", [
    ([], "must be a mapping"),
    ({"categories": {}}, "no 'labels'"),
    ({"labels": ["a"], "categories": {"os-unsupported": ["b"]}}, "'b' is not in the allow-list"),
    ({"labels": ["a"], "colours": {}}, "unknown key 'colours'"),
    ({"labels": "a" * 60}, "is not a label name"),
])
def test_a_malformed_mapping_is_one_line(bad, says):
    with pytest.raises(MappingError) as exc:
        check_mapping(bad, "m.yaml")
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_an_event_and_an_issue_json_are_read():
    text = body("case301")
    event = {"action": "opened", "issue": {"number": 16, "title": "GLIBC", "body": text,
                                           "repository_url": "https://api.github.com/repos/KumaTea/pytorch-aarch64"},
             "repository": {"full_name": "KumaTea/pytorch-aarch64"}}
    r = triage_issue(event)
    assert r["issue"]["number"] == 16 and r["issue"]["repository"] == "KumaTea/pytorch-aarch64"
    assert r["issue"]["action"] == "opened"
    r2 = triage_issue(event["issue"])
    assert r2["issue"]["repository"] == "KumaTea/pytorch-aarch64" and r2["findings"] == r["findings"]


# ---------------------------------------------------------------------------- inputs, bounded and hostile
import subprocess  # noqa: E402
import sys  # noqa: E402


def _cli(*args, stdin=None):
    return subprocess.run([sys.executable, "-m", "torchdoctor", "triage", *args], capture_output=True, text=True,
                          timeout=120, input=stdin)


def test_a_5_mb_body_file_is_read_bounded_and_said_to_be_cut(tmp_path):
    path = tmp_path / "big.md"
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(body("case301"))
        fh.write(("y" * 999 + "\n") * 5300)
    done = _cli("--body", str(path), "--format", "json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    jsonschema.validate(result, SCHEMA)
    assert result["issue"]["cut"] is True and "only the first part was read" in done.stderr
    assert any(f.get("message_id") == "glibc-too-old" for f in result["findings"])


@pytest.mark.parametrize("text, says", [
    ("labels: [a\n", "--labels {}:2"),
    ("labels: [a]\ncategories: [x]\n", "categories: must be a mapping"),
    ("- just a list\n", "must be a mapping with 'labels'"),
])
def test_a_malformed_mapping_file_is_one_line_exit_2(tmp_path, text, says):
    path = tmp_path / "m.yml"
    path.write_text(text, encoding="utf-8")
    done = _cli("--body", "-", "--labels", str(path), stdin="hello")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and says.format(path) in done.stderr


@pytest.mark.parametrize("text, says", [
    ("{not json", "not JSON"),
    ("[1, 2]", "expected an issue body"),
    ('{"action": "opened"}', "neither an issues event"),
    ('{"issue": {"body": 5}}', "'body' is int"),
])
def test_a_malformed_event_is_one_line_exit_2(tmp_path, text, says):
    path = tmp_path / "e.json"
    path.write_text(text, encoding="utf-8")
    done = _cli("--event", str(path))
    assert done.returncode == 2 and says in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_an_event_of_another_action_is_left_alone(tmp_path):
    path = tmp_path / "e.json"
    path.write_text(json.dumps({"action": "labeled", "issue": {"number": 1, "body": body("case301")}}))
    done = _cli("--event", str(path))
    assert done.returncode == 0 and done.stdout == "" and "only opened, edited, reopened" in done.stderr
