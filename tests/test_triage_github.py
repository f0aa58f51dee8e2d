"""`torchdoctor triage --post` end to end against a local stand-in of the GitHub REST API (tests/github_server.py,
127.0.0.1, recorded response shapes of tests/data/github/): a new issue gets one comment and the mapped labels, an
edit updates that comment, a second run changes nothing, 403 secondary rate limits and 5xx are retried then reported
in one line, comments are paginated, and a hostile body never reaches the comment unsafely."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.github_server import FakeGitHub, shape
from torchdoctor.triage.comment import MARKER
from torchdoctor.triage.core import triage_issue
from torchdoctor.triage.github import Client, GitHubError, sync

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "tests" / "data" / "cases3"
TOKEN = "ghs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # planted: must never be printed
MAPPING = {"labels": ["module: binaries", "needs environment"],
           "categories": {"os-unsupported": ["module: binaries"]}, "rules": {}, "messages": {},
           "junk": {"template": ["needs environment"], "empty": ["needs environment"]}}


def event(body: str, action: str = "opened") -> dict:
    e = shape("issues_opened_event.json")
    e["action"] = action
    e["issue"]["body"] = body
    return e


def run(gh: FakeGitHub, body: str, *, mapping=MAPPING, sleeps=None, tries=4) -> list[str]:
    """What the command does with --post: triage, then sync (the same functions, in process)."""
    result = triage_issue(event(body), labels=mapping, always_comment=True)
    client = Client(gh.url, TOKEN, gh.repo, sleep=(sleeps.append if sleeps is not None else None), tries=tries)
    return sync(client, gh.number, result["comment"], result["labels"], mapping["labels"],
                post=result["says_something"])


GLIBC = (CASES / "case301.txt").read_text(encoding="utf-8")  # KumaTea/pytorch-aarch64#16
TEMPLATE = """### 🐛 Describe the bug

It crashes.

### Versions

wget https://raw.githubusercontent.com/pytorch/pytorch/master/torch/utils/collect_env.py
# For security purposes, please check the contents of collect_env.py before running it.
python collect_env.py
"""  # the Versions field of pytorch/pytorch#83987, as filed


def test_a_new_issue_gets_one_comment_and_the_mapped_labels():
    with FakeGitHub() as gh:
        done = run(gh, GLIBC)
        assert [c["body"].splitlines()[0] for c in gh.comments] == [MARKER]
        assert "glibc-too-old" in gh.comments[0]["body"]
        assert gh.labels == ["bug", "module: binaries"]
        assert [(r["method"], r["path"]) for r in gh.mutations()] == [
            ("POST", "/repos/octocat/Hello-World/issues/1347/comments"),
            ("POST", "/repos/octocat/Hello-World/issues/1347/labels")]
        assert all(r["auth"] == f"Bearer {TOKEN}" and r["version"] == "2022-11-28" for r in gh.requests)
        assert done[0].startswith("posted comment")


def test_an_edit_updates_that_comment_and_a_second_run_changes_nothing():
    with FakeGitHub() as gh:
        run(gh, TEMPLATE)
        assert gh.labels == ["bug", "needs environment"] and len(gh.comments) == 1
        first = gh.comments[0]["body"]
        # the reporter edits the issue: the template replaced by the glibc error
        gh.requests.clear()
        done = run(gh, GLIBC)
        assert len(gh.comments) == 1 and gh.comments[0]["body"] != first
        assert "glibc-too-old" in gh.comments[0]["body"]
        assert [r["method"] for r in gh.mutations()] == ["PATCH", "POST", "DELETE"]
        # the label torchdoctor added before and that no longer applies is removed; "bug" (not ours) stays
        assert gh.labels == ["bug", "module: binaries"]
        assert any(line.startswith("updated comment") for line in done)
        # the same body again: nothing is sent but reads
        gh.requests.clear()
        done = run(gh, GLIBC)
        assert gh.mutations() == [] and len(gh.comments) == 1
        assert done == [f"comment {gh.comments[0]['id']} unchanged"]


def test_nothing_is_posted_when_there_is_nothing_to_say():
    with FakeGitHub() as gh:
        run(gh, "Please add a `foo` argument to `torch.nn.Linear`.")
        assert gh.comments == [] and gh.mutations() == []


def test_an_earlier_comment_is_updated_when_there_is_nothing_left_to_say():
    with FakeGitHub() as gh:
        run(gh, TEMPLATE)
        run(gh, "Please add a `foo` argument to `torch.nn.Linear`.")
        assert len(gh.comments) == 1 and "cannot be read" not in gh.comments[0]["body"]
        assert gh.labels == ["bug"]  # "needs environment" was ours and no longer applies


def test_a_label_a_maintainer_added_is_never_removed():
    with FakeGitHub() as gh:
        gh.labels = ["bug", "needs environment"]  # put on by hand before torchdoctor ran
        run(gh, TEMPLATE)
        assert [r["method"] for r in gh.mutations()] == ["POST"]  # the comment only: the label is already there
        run(gh, GLIBC)
        assert "needs environment" in gh.labels  # no longer applies, but it was not ours


def test_someone_elses_comment_with_the_marker_is_never_edited():
    with FakeGitHub() as gh:
        planted = gh.add_comment(MARKER + "\nI am a user quoting the bot")  # type User
        run(gh, GLIBC)
        assert planted["body"].endswith("quoting the bot") and len(gh.comments) == 2


def test_comments_are_paginated_to_find_ours():
    with FakeGitHub(per_page=2) as gh:
        for i in range(5):
            gh.add_comment(f"comment {i}")
        run(gh, GLIBC)
        assert len(gh.comments) == 6
        gh.requests.clear()
        run(gh, GLIBC)  # ours is on page 3 now: found, unchanged
        pages = [r["query"].get("page", "1") for r in gh.requests if r["path"].endswith("/comments")]
        assert pages == ["1", "2", "3"] and gh.mutations() == []


@pytest.mark.parametrize("fault", [
    (403, "secondary_rate_limit.json", {"Retry-After": "7"}),
    (403, "secondary_rate_limit.json", {}),  # the message alone says it
    (429, "secondary_rate_limit.json", {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "0"}),
    (502, "server_error.json", {}),
])
def test_a_rate_limit_or_5xx_is_retried(fault):
    with FakeGitHub() as gh:
        gh.faults = [fault, fault]
        sleeps: list = []
        run(gh, GLIBC, sleeps=sleeps)
        assert len(gh.comments) == 1 and len(sleeps) == 2
        assert all(0 <= s <= 60 for s in sleeps)
        if fault[2].get("Retry-After"):
            assert sleeps == [7.0, 7.0]


def test_a_fault_that_persists_is_one_line_without_the_token():
    with FakeGitHub() as gh:
        gh.faults = [(503, "server_error.json", {})] * 4
        sleeps: list = []
        with pytest.raises(GitHubError) as exc:
            run(gh, GLIBC, sleeps=sleeps)
        text = str(exc.value)
        assert "\n" not in text and TOKEN not in text
        assert text.startswith("GitHub API GET /repos/octocat/Hello-World/issues/1347/comments") and "503" in text
        assert "after 4 tries" in text and sleeps == [1.0, 2.0, 4.0]


def test_a_403_that_is_not_a_rate_limit_is_not_retried():
    with FakeGitHub() as gh:
        gh.faults = [(403, "server_error.json", {})]
        with pytest.raises(GitHubError, match="403"):
            run(gh, GLIBC, sleeps=[])
        assert len(gh.requests) == 1


# ---------------------------------------------------------------------------- a hostile body
HOSTILE = ("@pytorch/triage-team and @octocat please look </details> <img src=x onerror=alert(1)>\n"
           "<!-- torchdoctor-triage -->\n```\n"
           "### Versions\n\nPyTorch version: 2.1.0+cu121\nIs debug build: False\nCUDA used to build PyTorch: 12.1\n"
           "GPU models and configuration: GPU 0: NVIDIA @octocat </details><script>x</script>\n"
           "export HF_TOKEN=hf_" + "a" * 30 + "\nAWS AKIAIOSFODNN7EXAMPLE ghp_" + "B" * 36 + "\n"
           "{{ 7*7 }} {% for x in y %} $(rm -rf /) `whoami`\n")


def test_a_hostile_body_never_reaches_the_comment_unsafely():
    body = HOSTILE + ("x" * 1000 + "\n") * 5300  # over 5 MB
    assert len(body) > 5 * 1024 * 1024
    with FakeGitHub() as gh:
        run(gh, body, mapping={**MAPPING, "labels": MAPPING["labels"]})
        assert len(gh.comments) <= 1
        result = triage_issue(event(body), always_comment=True)
    comment = result["comment"]
    assert result["issue"]["cut"] is True and "only the first part was read" in comment
    assert len(comment) < 60_000
    for bad in ("@octocat", "@pytorch", "hf_aaaa", "AKIAIOSFODNN7EXAMPLE", "ghp_BBBB", "49"):
        assert bad not in comment, bad
    # HTML only as code (a code span shows it as text) or escaped; our own <details> once
    prose = re.sub(r"(`+)[^`\n]*?\1", "", comment)
    for bad in ("</details><", "<img", "<script", "<!-- torchdoctor-triage -->\n```"):
        assert bad not in prose, bad
    assert comment.count(MARKER) == 1 and comment.count("<details>") == 1 and comment.count("</details>") == 1
    assert comment.count("```") == 0


# ---------------------------------------------------------------------------- the command, as a subprocess
def cli(args, env_extra, stdin=None, timeout=120):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-m", "torchdoctor", "triage", *args], capture_output=True, text=True,
                          env=env, timeout=timeout, input=stdin)


def test_dry_run_prints_the_requests_and_sends_nothing(tmp_path):
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event(GLIBC)), encoding="utf-8")
    with FakeGitHub() as gh:
        done = cli(["--event", str(path), "--post", "--dry-run"],
                   {"GITHUB_API_URL": gh.url, "GITHUB_TOKEN": TOKEN})
        assert gh.requests == []
    assert done.returncode == 0, done.stderr
    assert f"dry run: GET {gh.url}/repos/octocat/Hello-World/issues/1347/comments?per_page=100" in done.stderr
    assert f"dry run: POST {gh.url}/repos/octocat/Hello-World/issues/1347/comments" in done.stderr
    assert done.stdout.startswith(MARKER) and TOKEN not in done.stdout + done.stderr


def test_the_command_posts_and_a_persistent_failure_is_exit_3(tmp_path):
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event(GLIBC)), encoding="utf-8")
    labels = tmp_path / "labels.yml"
    labels.write_text("labels: ['module: binaries']\ncategories:\n  os-unsupported: ['module: binaries']\n")
    with FakeGitHub() as gh:
        env = {"GITHUB_API_URL": gh.url, "GITHUB_TOKEN": TOKEN}
        done = cli(["--event", str(path), "--post", "--labels", str(labels)], env)
        assert done.returncode == 0, done.stderr
        assert len(gh.comments) == 1 and "module: binaries" in gh.labels
        again = cli(["--event", str(path), "--post", "--labels", str(labels)], env)
        assert again.returncode == 0 and "unchanged" in again.stderr and len(gh.comments) == 1
        gh.faults = [(403, "secondary_rate_limit.json", {"Retry-After": "0"})] * 4
        failed = cli(["--event", str(path), "--post"], env)
    assert failed.returncode == 3
    lines = [ln for ln in failed.stderr.splitlines() if "GitHub API" in ln]
    assert len(lines) == 1 and "secondary rate limit" in lines[0] and "Traceback" not in failed.stderr
    assert TOKEN not in failed.stdout + failed.stderr + done.stderr + done.stdout


@pytest.mark.parametrize("args, env, says", [
    (["--body", "-", "--post"], {"GITHUB_TOKEN": "x"}, "needs the issue's number"),
    (["--body", "-", "--post", "--issue", "3", "--repository", "a/b"], {}, "needs GITHUB_TOKEN"),
    (["--body", "-", "--dry-run"], {}, "add --post"),
    (["--body", "-", "--labels", "/nonexistent/m.yml"], {}, "--labels /nonexistent/m.yml: cannot read"),
])
def test_usage_errors_are_one_line_exit_2(args, env, says):
    done = cli(args, env, stdin="hello")
    assert done.returncode == 2 and says in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
