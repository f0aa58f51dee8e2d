"""`torchdoctor triage`: the click command (imports only click at import time; cli.py registers it).

Exit codes: 0 done (the comment printed, or posted/updated/left as it was); 2 usage or input error (an unreadable
event or body, a malformed label mapping, --post without a token or issue number); 3 the GitHub API refused or did
not answer after its retries (one line on stderr, the token never shown)."""

from __future__ import annotations

import os
import sys

import click

EXIT_GITHUB = 3
ACTIONS = ("opened", "edited", "reopened")
"""Event actions that are triaged; any other (labeled, closed, ...) is left alone, exit 0."""


@click.command("triage", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--event", "event_file", metavar="FILE",
              help="An Actions event (GITHUB_EVENT_PATH) or a REST issue JSON ('-' = stdin).")
@click.option("--body", "body_file", metavar="FILE", help="A plain issue body ('-' = stdin).")
@click.option("--labels", "labels_file", metavar="MAPPING.yaml",
              help="The repository's mapping of categories/rule ids to its labels, with an allow-list.")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown", show_default=True)
@click.option("--always-comment", is_flag=True, help="Comment even when there is nothing to say.")
@click.option("--post", is_flag=True, help="Post/update the comment and labels through GITHUB_API_URL with GITHUB_TOKEN.")
@click.option("--dry-run", is_flag=True, help="With --post: print the requests it would send, and send nothing.")
@click.option("--issue", "issue_number", type=click.IntRange(1, 2**53), metavar="N",
              help="Issue number for --post when the input is a body (default: the event's issue).")
@click.option("--repository", metavar="OWNER/NAME",
              help="The issue's repository: the command the comment asks for is its project's (and --post's "
                   "target). Default: the event's, then (with --post) GITHUB_REPOSITORY.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def triage(event_file, body_file, labels_file, fmt, always_comment, post, dry_run, issue_number, repository,
           debug) -> None:
    """Triage a GitHub issue: the comment torchdoctor would post (a one-line verdict, findings with rule ids and
    fixes, what the issue does not say and the one command that would say it) and the labels of your mapping.

    \b
    torchdoctor triage --body issue.md
    torchdoctor triage --event "$GITHUB_EVENT_PATH" --labels .github/torchdoctor-labels.yml --post
    torchdoctor triage --event event.json --post --dry-run

    Exit codes: 0 done, 2 usage or input error, 3 GitHub API error (docs/github-action.md).
    """
    from torchdoctor.cli_io import Abort, emit, note, stderr
    from torchdoctor.triage.issue import read_body, read_event

    if bool(event_file) == bool(body_file):
        raise Abort("give one input: --event FILE (an Actions event or issue JSON) or --body FILE|-")
    if dry_run and not post:
        raise Abort("--dry-run shows what --post would send; add --post")
    mapping = None
    if labels_file:
        from torchdoctor.triage.labels import load_mapping

        mapping = load_mapping(labels_file)
    issue = read_event(event_file) if event_file else read_body(body_file)
    if issue.action is not None and issue.action not in ACTIONS:
        note(f"triage: the event's action is {issue.action!r}; only {', '.join(ACTIONS)} are triaged")
        return
    if issue.pull_request:
        note("triage: this is a pull request, not an issue; nothing to do")
        return
    from torchdoctor.triage.issue import json_body

    if not json_body(issue.body):  # a JSON body is torchdoctor's facts JSON: read by pydantic, as `check` reads it
        from torchdoctor.model import use_lean

        use_lean()  # the models without pydantic's import and class building (torchdoctor/lean.py)
    from torchdoctor.triage.core import triage_issue

    repo = repository or issue.repository or (os.environ.get("GITHUB_REPOSITORY") if post else None)
    if repo and repo != issue.repository:  # only looked up in rules/data/triage.yaml's projects, never shown
        from torchdoctor.triage.issue import MAX_FIELD_CHARS

        issue = issue._replace(repository=repo[:MAX_FIELD_CHARS])
    result = triage_issue(issue, labels=mapping, always_comment=True)
    full = result["comment"]
    post_comment = result["says_something"] or always_comment
    if not post_comment:
        result["comment"] = ""
    if issue.cut:
        note(f"triage: the body has {issue.size:,}+ characters; only the first part was read")
    if post:
        _post(result, full, post_comment, issue, mapping, issue_number, repository, dry_run)
    if fmt == "json":
        import json

        emit(json.dumps(result, indent=2, ensure_ascii=False) + "\n", None)
    elif not post or dry_run:
        emit(result["comment"] or f"<!-- torchdoctor-triage: nothing to say: {result['verdict']} -->\n", None)
    stderr(f"torchdoctor triage: {result['verdict']}" + (f" Labels: {', '.join(result['labels'])}."
                                                         if result["labels"] else ""))


def _post(result, full, post_comment, issue, mapping, issue_number, repository, dry_run) -> None:
    from torchdoctor.cli_io import Abort, stderr
    from torchdoctor.triage.github import Client, GitHubError, sync

    repo = repository or issue.repository or os.environ.get("GITHUB_REPOSITORY", "")
    number = issue_number or issue.number
    if not number:
        raise Abort("--post needs the issue's number: an event or issue JSON, or --issue N")
    if not repo:
        raise Abort("--post needs the repository: an event, --repository OWNER/NAME or GITHUB_REPOSITORY")
    token = os.environ.get("GITHUB_TOKEN", "")
    if not token and not dry_run:
        raise Abort("--post needs GITHUB_TOKEN in the environment (the workflow's `secrets.GITHUB_TOKEN`)")
    api = os.environ.get("GITHUB_API_URL") or "https://api.github.com"
    try:
        client = Client(api, token, repo, dry_run=dry_run)
        done = sync(client, number, full, result["labels"], (mapping or {}).get("labels", []), post=post_comment)
    except GitHubError as exc:
        stderr(f"torchdoctor triage: {exc}")
        sys.exit(EXIT_GITHUB)
    if dry_run:
        for method, path, _body in client.log:
            stderr(f"dry run: {method} {api.rstrip('/')}{path}")
    for line in done:
        stderr(f"torchdoctor triage: {line}")
