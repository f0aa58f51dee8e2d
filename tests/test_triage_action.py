"""action.yml: a composite action whose steps run real torchdoctor options. Its triage and lint scripts are run
here as the runner would run them (bash, the inputs in the environment), against the local GitHub stand-in."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from tests.github_server import FakeGitHub, shape
from torchdoctor.triage.comment import MARKER

REPO = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
BIN = str(Path(sys.executable).parent)
TOKEN = "ghs_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"


def step(name_part: str) -> dict:
    return next(s for s in ACTION["runs"]["steps"] if name_part in s.get("name", ""))


def test_the_action_is_composite_with_its_inputs_and_output():
    assert ACTION["runs"]["using"] == "composite"
    assert set(ACTION["inputs"]) >= {"mode", "labels", "paths", "always-comment", "python-version"}
    assert ACTION["inputs"]["mode"]["default"] == "triage"
    assert ACTION["outputs"]["sarif-file"]["value"] == "${{ steps.lint.outputs.sarif-file }}"
    install = step("Install")["run"]
    assert '"$GITHUB_ACTION_PATH"' in install and "torch " not in install


def test_inputs_reach_scripts_only_through_the_environment():
    for s in ACTION["runs"]["steps"]:
        assert "${{" not in s.get("run", ""), s.get("name")  # no expression pasted into a script


def test_every_option_the_action_passes_is_a_real_option():
    for command, name in (("triage", "Triage"), ("lint", "Lint")):
        helptext = subprocess.run([sys.executable, "-m", "torchdoctor", command, "--help"], capture_output=True,
                                  text=True, timeout=60).stdout
        used = set(re.findall(r"(--[a-z][a-z-]+)", step(name)["run"]))
        assert used, name
        for option in used:
            assert option in helptext, (command, option)
    assert "github" in helptext and "sarif" in helptext


def _run(script: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    full.update(env, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(["bash", "-e", "-c", script], capture_output=True, text=True, env=full, cwd=cwd,
                          timeout=180)


def test_the_triage_step_comments_and_labels(tmp_path):
    event = shape("issues_opened_event.json")
    event["issue"]["body"] = (REPO / "tests" / "data" / "cases3" / "case301.txt").read_text(encoding="utf-8")
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    labels = REPO / "examples" / "triage-labels.yml"
    with FakeGitHub() as gh:
        done = _run(step("Triage")["run"], {"GITHUB_EVENT_PATH": str(path), "GITHUB_API_URL": gh.url,
                                             "GITHUB_TOKEN": TOKEN, "TD_LABELS": str(labels),
                                             "TD_ALWAYS": "false"}, tmp_path)
        assert done.returncode == 0, done.stderr
        assert len(gh.comments) == 1 and gh.comments[0]["body"].startswith(MARKER)
        assert "module: binaries" in gh.labels
    assert TOKEN not in done.stdout + done.stderr


def test_the_lint_step_writes_sarif_and_its_path(tmp_path):
    out = tmp_path / "github_output"
    src = tmp_path / "train.py"
    src.write_text("import torch\ntorch.backends.cudnn.benchmark = True\ntorch.backends.cuda.matmul.allow_tf33 = True\n")
    done = _run(step("Lint")["run"], {"TD_PATHS": "train.py", "TD_SARIF": "out.sarif", "GITHUB_OUTPUT": str(out)},
                tmp_path)
    assert done.returncode in (0, 1), done.stderr
    sarif = json.loads((tmp_path / "out.sarif").read_text(encoding="utf-8"))
    assert sarif["version"] == "2.1.0"
    assert "sarif-file=out.sarif" in out.read_text()
    if done.returncode == 1:
        assert "::" in done.stdout  # workflow commands (annotations)
