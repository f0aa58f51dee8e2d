"""docs/github-action.md stays true: its example comments are what the code renders today, its example label
mapping loads and names only categories, rules and messages that exist, and the README links it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from torchdoctor import tables
from torchdoctor.report import CATEGORIES
from torchdoctor.rules import load_rules
from torchdoctor.triage.labels import load_mapping

REPO = Path(__file__).resolve().parent.parent


def test_the_example_comments_are_current():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "triage_doc_example.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    doc = (REPO / "docs" / "github-action.md").read_text(encoding="utf-8")
    assert doc.count("<!-- torchdoctor-triage -->") >= 2


def test_the_example_mapping_loads_and_names_what_exists():
    mapping = load_mapping(str(REPO / "examples" / "triage-labels.yml"))
    assert mapping["labels"]
    assert set(mapping["categories"]) <= set(CATEGORIES)
    assert set(mapping["rules"]) <= {r.id for r in load_rules([])}
    assert set(mapping["messages"]) <= {m["id"] for m in tables.load("known_messages")["messages"]}
    assert set(mapping["junk"]) <= {"template", "empty", "screenshot", "cut"}


def test_the_workflows_in_the_doc_are_valid_yaml_with_least_permissions():
    doc = (REPO / "docs" / "github-action.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in doc.split("```yaml\n")[1:]]
    workflows = [yaml.safe_load(b) for b in blocks if "jobs:" in b]
    assert len(workflows) == 2
    triage, lint = workflows
    assert triage["permissions"] == {"issues": "write"}
    assert triage[True]["issues"]["types"] == ["opened", "edited"]  # YAML 1.1 reads `on` as true
    assert lint["permissions"]["security-events"] == "write"


def test_the_readme_links_the_doc():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "docs/github-action.md" in readme and "urllib" in readme
