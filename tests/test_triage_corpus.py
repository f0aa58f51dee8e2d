"""`torchdoctor triage` on recorded real issues: the events of tests/data/triage (SOURCES.md there) name their junk,
the real bodies of tests/data/cases3 get the diagnosis their thread reached, and scripts/triage_corpus.py renders
them all (what the closing note quotes)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.triage import triage_issue

REPO = Path(__file__).resolve().parent.parent
EVENTS = REPO / "tests" / "data" / "triage"
CASES = REPO / "tests" / "data" / "cases3"

EXPECTED_JUNK = {
    "pytorch-83987": "template",
    "pytorch-49947": "template",
    "vllm-13537": "template",
    "vllm-20170": "template",
    "yolov5-783": "screenshot",
    "yolov5-13726": "empty",
    "yolov5-13215": "empty",
}


@pytest.mark.parametrize("name", sorted(EXPECTED_JUNK))
def test_each_real_event_names_its_junk(name):
    event = json.loads((EVENTS / f"{name}.json").read_text(encoding="utf-8"))
    r = triage_issue(event)
    assert r["junk"][:1] == [EXPECTED_JUNK[name]], r["junk_details"]
    assert r["comment"] and f"Running `{r['command']}`" in r["comment"]
    # pytorch's and vllm's forms ask for their collect_env (rules/data/triage.yaml projects); yolov5's for no command
    assert r["command_source"] == ("default" if name.startswith("yolov5") else "project")
    assert r["issue"]["number"] == event["issue"]["number"]


def test_every_event_fixture_is_cited():
    cited = (EVENTS / "SOURCES.md").read_text(encoding="utf-8")
    assert sorted(p.stem for p in EVENTS.glob("*.json")) == sorted(EXPECTED_JUNK)
    for name in EXPECTED_JUNK:
        assert f"`{name}.json`" in cited


def test_real_bodies_get_the_category_their_thread_reached():
    """Of the cases3 bodies diagnosable from the text, the share whose expected category is among the comment's
    error/warning findings; and no healthy body (no environment cause) gets an error."""
    hit = total = 0
    for meta_path in sorted(CASES.glob("case*.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        r = triage_issue(meta_path.with_suffix(".txt").read_text(encoding="utf-8"))
        found = {f["category"] for f in r["findings"] if f["severity"] in ("error", "warning")}
        if not meta["environment_cause"]:
            assert not any(f["severity"] == "error" for f in r["findings"]), meta["source"]
        elif meta["diagnosable_from_report"]:
            total += 1
            hit += bool(found & set(meta["expected_categories"]))
    assert total >= 60 and hit / total >= 0.95, (hit, total)  # 66 of 66 when written


def test_the_corpus_script_renders_at_least_twenty_real_comments(tmp_path):
    out = tmp_path / "comments.md"
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "triage_corpus.py"), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    text = out.read_text(encoding="utf-8")
    assert text.count("<!-- torchdoctor-triage -->") >= 20
    assert text.count("## https://github.com/") == len(EXPECTED_JUNK) + len(list(CASES.glob("case*.json")))
