"""An issue as triage reads it: from an Actions event (``GITHUB_EVENT_PATH``), an issue JSON of the REST API, or a
plain body. Everything read is bounded: an event file is refused above ``MAX_EVENT_BYTES`` (JSON cannot be read in
part), a body is cut at ``MAX_BODY_CHARS`` characters (GitHub itself stores at most 65,536) and says so."""

from __future__ import annotations

import json
import sys
from typing import Any, NamedTuple, Optional

from torchdoctor.errors import UserError

MAX_BODY_CHARS = 262_144
"""Characters of a body that are read (four times GitHub's own limit of 65,536); the rest is cut, and the comment says so."""
MAX_BODY_BYTES = 4 * MAX_BODY_CHARS
"""Bytes of a body file read (UTF-8: at most 4 bytes a character)."""
MAX_EVENT_BYTES = 16 * 1024 * 1024
"""An event or issue JSON larger than this is refused (GitHub's event payloads are far smaller)."""
MAX_FIELD_CHARS = 200
"""Characters kept of the title, repository name and URL."""


class IssueError(UserError):
    """An event, issue JSON or body that cannot be read: one line naming it (exit 2)."""


class Issue(NamedTuple):
    body: str
    number: Optional[int] = None
    repository: Optional[str] = None
    """owner/name, from the event's repository or the issue's repository_url."""
    title: str = ""
    action: Optional[str] = None
    """The event's action (opened, edited, ...); None for an issue JSON or a body."""
    cut: bool = False
    """The body was longer than MAX_BODY_CHARS (or its file than MAX_BODY_BYTES) and was cut."""
    size: int = 0
    """Characters of the body as given (before the cut; for a file cut while reading, at least this)."""
    pull_request: bool = False
    """The "issue" is a pull request (the issues API lists both)."""


def _text(value: Any, limit: int = MAX_FIELD_CHARS) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _repo_from_url(url: Any) -> Optional[str]:
    # https://api.github.com/repos/{owner}/{repo}
    if not isinstance(url, str) or "/repos/" not in url:
        return None
    parts = url.split("/repos/", 1)[1].split("/")
    return f"{parts[0]}/{parts[1]}"[:MAX_FIELD_CHARS] if len(parts) >= 2 and parts[0] and parts[1] else None


def parse_issue(issue: Any, *, cut: bool = False, name: str = "issue") -> Issue:
    """An :class:`Issue` from a body (str), an Actions ``issues`` event or a REST issue (dict)."""
    if isinstance(issue, str):
        return _with_body(Issue(body=""), issue, cut)
    if not isinstance(issue, dict):
        raise IssueError(f"{name}: expected an issue body (text) or an issue/event JSON object, "
                         f"got {type(issue).__name__}")
    event = issue
    data = issue.get("issue") if isinstance(issue.get("issue"), dict) else None
    repository = None
    action = None
    if data is not None:  # an Actions event: {"action", "issue", "repository", ...}
        repo = event.get("repository")
        repository = _text(repo.get("full_name")) or None if isinstance(repo, dict) else None
        action = _text(event.get("action"), 40) or None
    elif "body" in issue or "number" in issue:
        data = issue
    else:
        raise IssueError(f"{name}: neither an issues event (no 'issue' object) nor an issue (no 'body' or 'number')")
    body = data.get("body")
    if body is not None and not isinstance(body, str):
        raise IssueError(f"{name}: the issue's 'body' is {type(body).__name__}, not text")
    number = data.get("number")
    if isinstance(number, bool) or not isinstance(number, int) or not 0 < number < 2**53:
        number = None
    repository = repository or _repo_from_url(data.get("repository_url"))
    base = Issue(body="", number=number, repository=repository, title=_text(data.get("title")),
                 action=action, pull_request=isinstance(data.get("pull_request"), dict))
    return _with_body(base, body or "", cut)


def _with_body(base: Issue, body: str, cut: bool) -> Issue:
    size = len(body)
    if size > MAX_BODY_CHARS:
        body, cut = body[:MAX_BODY_CHARS], True
    return base._replace(body=body, cut=cut, size=size)


def json_body(body: str) -> bool:
    """True when the paste importer may read ``body`` as torchdoctor JSON facts (its first character, after a byte
    order mark and white space, is ``{``) or may decode it other than as UTF-8 (a NUL in it: see
    torchdoctor.importers._decode). Such a body is read with pydantic's models, never the lean ones."""
    from torchdoctor.sniff import may_be_json

    return may_be_json(body)


def read_body(name: str) -> Issue:
    """A plain body from a file or '-' (stdin): at most MAX_BODY_BYTES read, never more."""
    label = "<stdin>" if name == "-" else name
    try:
        if name == "-":
            stream = getattr(sys.stdin, "buffer", None)
            if stream is None:
                raise IssueError("--body -: stdin is not readable")
            data = stream.read(MAX_BODY_BYTES + 1)
        else:
            import os
            import stat

            with open(name, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    raise IssueError(f"--body {label}: not a regular file; pipe it to stdin and pass '-'")
                data = fh.read(MAX_BODY_BYTES + 1)
    except IsADirectoryError:
        raise IssueError(f"--body {label}: is a directory") from None
    except OSError as exc:
        raise IssueError(f"--body {label}: cannot read: {exc.strerror or exc}") from None
    cut = len(data) > MAX_BODY_BYTES
    if b"\x00" in data[:65536]:
        raise IssueError(f"--body {label}: binary data (contains NUL bytes), not an issue body")
    text = data[:MAX_BODY_BYTES].decode("utf-8", errors="replace")
    return parse_issue(text, cut=cut, name=label)


def read_event(name: str) -> Issue:
    """An Actions event or REST issue JSON from a file or '-' (bounded; malformed JSON is one line)."""
    from torchdoctor.safeio import InputError, read_bounded

    label = "<stdin>" if name == "-" else name
    try:
        data = read_bounded(name, MAX_EVENT_BYTES, what="--event")
    except InputError as exc:
        raise IssueError(str(exc)) from None
    try:
        obj = json.loads(data.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise IssueError(f"--event {label}: not JSON{where}") from None
    return parse_issue(obj, name=f"--event {label}")
