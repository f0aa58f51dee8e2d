"""The command the triage comment asks for: the label mapping's, else the issue's own project's (rules/data/triage.yaml
`projects`, each entry citing the issue template that asks for it), else ask.command. On the recorded events of
tests/data/triage (SOURCES.md there) and detectron2#460 (tests/data/cases3/case330, cited in its json); the
repository name is hostile input that is only looked up, never shown."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from torchdoctor import tables
from torchdoctor.tables import DataFileError, data_dir
from torchdoctor.triage import triage_issue
from torchdoctor.triage.junk import data
from torchdoctor.triage.projects import choose_command, project_for

REPO = Path(__file__).resolve().parent.parent
EVENTS = REPO / "tests" / "data" / "triage"
SCHEMA = json.loads((REPO / "docs" / "schemas" / "triage.schema.json").read_text(encoding="utf-8"))
DEFAULT = "python -m torch.utils.collect_env"
VLLM = "wget https://raw.githubusercontent.com/vllm-project/vllm/main/vllm/collect_env.py && python collect_env.py"
DETECTRON2 = ("wget -nc -q https://github.com/facebookresearch/detectron2/raw/master/detectron2/utils/collect_env.py"
              " && python collect_env.py")


def event(name: str) -> dict:
    return json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))


def detectron2_460() -> dict:
    """detectron2#460 (cases3/case330.json) as an `issues` event of its repository (as scripts/triage_corpus.py
    wraps it)."""
    body = (REPO / "tests" / "data" / "cases3" / "case330.txt").read_text(encoding="utf-8")
    return {"action": "opened", "repository": {"full_name": "facebookresearch/detectron2"},
            "issue": {"number": 460, "title": "", "body": body,
                      "repository_url": "https://api.github.com/repos/facebookresearch/detectron2"}}


# ---------------------------------------------------------------------------- the project's own command


@pytest.mark.parametrize("name, command", [
    ("vllm-13537", VLLM), ("vllm-20170", VLLM), ("pytorch-83987", DEFAULT), ("pytorch-49947", DEFAULT),
])
def test_a_real_event_of_a_project_in_the_table_gets_its_command(name, command):
    r = triage_issue(event(name))
    jsonschema.validate(r, SCHEMA)
    assert (r["command"], r["command_source"], r["command_fallback"]) == (command, "project", None)
    assert f"Running `{command}` and pasting its output" in r["comment"]
    assert "all but" not in r["comment"]  # both commands print every fact asked for


def test_the_rest_issue_json_names_its_project_by_repository_url():
    r = triage_issue(event("vllm-13537")["issue"])  # no event around it: only its repository_url
    assert (r["command"], r["command_source"]) == (VLLM, "project")


def test_a_project_whose_command_misses_a_fact_names_collect_env_for_it():
    r = triage_issue(detectron2_460())
    jsonschema.validate(r, SCHEMA)
    assert {m["path"] for m in r["missing"]} == {"torch.version", "gpu.name", "gpu.driver_version", "system.os"}
    assert (r["command"], r["command_source"]) == (DETECTRON2, "project")
    assert r["command_fallback"] == {"command": DEFAULT, "facts": ["gpu.driver_version"]}
    assert (f"Running `{DETECTRON2}` and pasting its output (as text, in a code block) would say it (all but the "
            f"NVIDIA driver version, which `{DEFAULT}` states).") in r["comment"]


def test_yolov5s_form_asks_for_no_command_so_its_issues_get_the_default():
    r = triage_issue(event("yolov5-13726"))
    assert (r["command"], r["command_source"], r["command_fallback"]) == (DEFAULT, "default", None)


def test_the_mappings_command_comes_first():
    mapping = {"labels": ["needs environment"], "command": "python -m torch.utils.collect_env --verbose"}
    for e in (event("vllm-13537"), detectron2_460(), event("yolov5-13726")):
        r = triage_issue(e, labels=mapping)
        assert (r["command"], r["command_source"], r["command_fallback"]) == (mapping["command"], "mapping", None)
        assert "`python -m torch.utils.collect_env --verbose`" in r["comment"] and "all but" not in r["comment"]


def test_a_project_command_that_prints_none_of_what_is_missing_gives_way_to_the_default():
    os_only = [{"path": "system.os", "words": "the operating system"}]
    chosen = choose_command(None, "sgl-project/sglang", os_only)  # check_env prints no OS
    assert (chosen["command"], chosen["command_source"]) == (DEFAULT, "default")
    driver = [{"path": "gpu.driver_version", "words": "the NVIDIA driver version"}]
    assert choose_command(None, "sgl-project/sglang", driver)["command"] == "python3 -m sglang.check_env"
    nothing = choose_command(None, "sgl-project/sglang", [])  # nothing missing: still the project's
    assert (nothing["command_source"], nothing["command_fallback"]) == ("project", None)


@pytest.mark.parametrize("name, found", [
    ("VLLM-Project/vLLM", "vllm-project/vllm"),  # GitHub names are case-insensitive
    ("ultralytics/ultralytics", "ultralytics/ultralytics"),
    ("ultralytics/yolov5", None),
    ("vllm-project/vllm-ascend", None),  # exact names only: no prefix
    ("pytorch/vision", None),
])
def test_names_match_exactly_and_case_insensitively(name, found):
    entry = project_for(name)
    assert (entry["repositories"][0].lower() if entry else None) == found


@pytest.mark.parametrize("hostile", [
    "vllm-project/vllm`", "`vllm-project/vllm`", "@vllm-project/vllm", "vllm-project/vllm @maintainers",
    " vllm-project/vllm", "vllm-project/vllm\n", "vllm-project/vllm/issues", "vllm-project/*", "*/*",
    "vllm-project/" + "v" * 300, "v" * 300, "", "vllm-project", "../vllm-project/vllm",
    "vllm-project/vllm</details><img src=x>", 42, None, ["vllm-project/vllm"],
])
def test_an_unknown_or_hostile_repository_gets_the_default_and_is_never_shown(hostile):
    assert project_for(hostile) is None
    e = event("vllm-13537")
    e["repository"]["full_name"] = hostile
    e["issue"].pop("repository_url", None)
    r = triage_issue(e)
    jsonschema.validate(r, SCHEMA)
    assert (r["command"], r["command_source"]) == (DEFAULT, "default")
    e["repository"] = {}
    assert r["comment"] == triage_issue(e)["comment"]  # the name changes nothing of the comment


# ---------------------------------------------------------------------------- the CLI: --repository, GITHUB_REPOSITORY


def _cli(*args, env=None):
    environment = {k: v for k, v in os.environ.items() if k not in ("GITHUB_REPOSITORY", "GITHUB_TOKEN")}
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "torchdoctor", "triage", *args], capture_output=True, text=True,
                          timeout=120, input="### Environment\n\n_No response_\n", env=environment)


def test_repository_option_picks_the_project_and_github_repository_counts_only_when_posting():
    done = _cli("--body", "-", "--repository", "ultralytics/ultralytics", "--format", "json")
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    assert (r["command"], r["command_source"]) == ("yolo checks", "project")
    assert r["command_fallback"] == {"command": DEFAULT, "facts": ["gpu.driver_version"]}
    assert "(all but the NVIDIA driver version, which `python -m torch.utils.collect_env` states)" in r["comment"]
    plain = _cli("--body", "-", "--format", "json", env={"GITHUB_REPOSITORY": "sgl-project/sglang"})
    assert json.loads(plain.stdout)["command_source"] == "default"  # not posting: the variable is not ours
    posted = _cli("--body", "-", "--post", "--dry-run", "--issue", "7", env={"GITHUB_REPOSITORY": "sgl-project/sglang"})
    assert posted.returncode == 0, posted.stderr
    assert "Running `python3 -m sglang.check_env`" in posted.stdout
    assert "/repos/sgl-project/sglang/issues/7/comments" in posted.stderr


# ---------------------------------------------------------------------------- the table


def test_every_entry_cites_its_own_template_at_a_commit_and_the_source_of_what_it_states():
    for entry in data()["projects"]:
        names = {r.lower() for r in entry["repositories"]}
        template, *sources = entry["references"]
        m = re.fullmatch(r"https://github\.com/([^/]+/[^/]+)/blob/([0-9a-f]{40})/\.github/ISSUE_TEMPLATE[/.][^ ]+",
                         template)
        assert m and m.group(1).lower() in names, (entry["repositories"], template)
        assert sources and all(s.startswith("https://github.com/") and "/blob/" in s for s in sources)


def test_the_template_needles_name_their_projects_command():
    """A junk needle that quotes a command in backticks (the form's placeholder) quotes the project's command."""
    d = data()
    for t in d["templates"]:
        entry = project_for(t["project"])
        quoted = re.findall(r"`([^`]+)`", t["needle"])
        if entry is None or not quoted:
            continue
        assert any(q in entry["command"] for q in quoted), (t["id"], entry["command"])


def test_an_owner_wide_entry_matches_after_the_exact_names(tmp_path):
    target = tmp_path / "triage.yaml"
    text = (data_dir() / "triage.yaml").read_text(encoding="utf-8")
    extra = ("projects:\n  - repositories: [Ultralytics/*]\n    command: yolo checks --all\n"
             "    states: [torch.version]\n    references: [https://example.org/a, https://example.org/b]\n")
    target.write_text(text.replace("projects:\n", extra, 1), encoding="utf-8")
    directory = str(tmp_path)
    assert project_for("ultralytics/yolov5", directory)["command"] == "yolo checks --all"
    assert project_for("ultralytics/ultralytics", directory)["command"] == "yolo checks"  # the exact name first
    assert project_for("ultralytics-evil/x", directory) is None


@pytest.mark.parametrize("old, new, says", [
    ("states: [torch.version, gpu.name, gpu.driver_version, system.python_version]",
     "states: [torch.version, gpu.vram]", "projects entry 'sgl-project/sglang': 'states' names 'gpu.vram', which is "
                                          "not a path of ask.facts"),
    ("repositories: [sgl-project/sglang]", "repositories: [sgl-project/sglang, 'sgl project']",
     "projects entry 'sgl-project/sglang': 'sgl project' is not owner/name or owner/*"),
    ("repositories: [sgl-project/sglang]", "repositories: [sgl-project/sglang, VLLM-project/vllm]",
     "projects entry 'sgl-project/sglang': 'VLLM-project/vllm' is also in the entry of 'vllm-project/vllm'"),
    ("command: python3 -m sglang.check_env", "command: python3 -m `sglang.check_env`",
     "projects entry 'sgl-project/sglang': 'command' must be one line"),
    ("command: python3 -m sglang.check_env", "comand: python3 -m sglang.check_env", "'command' is missing"),
])
def test_a_bad_entry_is_one_line_naming_the_file_line_and_entry(tmp_path, old, new, says):
    target = tmp_path / "triage.yaml"
    shutil.copy(data_dir() / "triage.yaml", target)
    text = target.read_text(encoding="utf-8")
    assert old in text
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(DataFileError) as err:
        tables.load("triage", str(tmp_path))
    message = str(err.value)
    assert "\n" not in message and says in message, message
    line = int(re.match(rf"{re.escape(str(target))}:(\d+): ", message).group(1))
    entry_start = next(i for i, ln in enumerate(target.read_text(encoding="utf-8").splitlines(), 1)
                       if "sgl-project/sglang" in ln and "repositories" in ln)
    assert entry_start <= line <= entry_start + 8  # the entry's own lines


def test_every_projects_command_is_shown_whole_and_unredacted():
    from torchdoctor.triage.comment import MAX_COMMAND_CHARS, code

    for entry in data()["projects"]:
        assert code(entry["command"], MAX_COMMAND_CHARS) == f"`{entry['command']}`", entry["repositories"]
