"""The GitHub REST calls of `torchdoctor triage --post`, with the standard library only (urllib): explicit timeouts,
bounded retries on 5xx, 429 and secondary rate limits (honouring Retry-After and x-ratelimit-reset, each wait capped),
pagination bounded and kept on the API's own host, the token sent only in the Authorization header and never printed.

:class:`Client` sends one request; :func:`sync` keeps one issue's comment (found by its hidden marker) and its
torchdoctor labels in step with a triage result: POST a new comment, PATCH it when it changed, nothing when it is the
same (a second run changes nothing); add the mapped labels and remove the ones an earlier run added that no longer
apply (only labels of the mapping's allow-list, only ones that run recorded)."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

TIMEOUT = 15.0
"""Seconds for one request (connect and read)."""
TRIES = 4
"""Attempts of one request before it is reported."""
MAX_WAIT = 60.0
"""The longest one wait between attempts (a Retry-After above it is cut to it)."""
MAX_PAGES = 30
"""Pages of 100 comments listed at most (3,000 comments)."""
MAX_RESPONSE_BYTES = 8 * 1024 * 1024
MAX_ERROR_CHARS = 160
LABELS_LINE = "<!-- torchdoctor-triage-labels: "
"""The hidden second line of a comment: the labels that run added (so a later run may remove them, and no other)."""
_REPO = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}$")
_NEXT = re.compile(r'<([^<>\s]{1,2000})>\s{0,4};\s{0,4}rel="next"')


class GitHubError(Exception):
    """The API refused or did not answer (after the retries): one line, no token (exit 3)."""


@dataclass
class Response:
    status: int
    data: Any
    headers: dict


@dataclass
class Client:
    api_url: str
    token: str
    repository: str
    sleep: Optional[Callable[[float], None]] = None
    """How to wait between attempts (default: time.sleep; tests pass a recorder)."""
    timeout: float = TIMEOUT
    tries: int = TRIES
    max_wait: float = MAX_WAIT
    dry_run: bool = False
    log: list = field(default_factory=list)
    """(method, path) of every request sent, or, with dry_run, that would have been sent."""

    def __post_init__(self) -> None:
        parts = urllib.parse.urlsplit(self.api_url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise GitHubError(f"GITHUB_API_URL {self.api_url[:80]!r} is not an http(s) URL")
        if not _REPO.match(self.repository or ""):
            raise GitHubError(f"repository {str(self.repository)[:80]!r} is not owner/name")
        self.api_url = self.api_url.rstrip("/")
        self._netloc = parts.netloc

    def url(self, path: str) -> str:
        return self.api_url + path

    def request(self, method: str, path_or_url: str, body: Any = None) -> Response:
        url = path_or_url if path_or_url.startswith(("http://", "https://")) else self.url(path_or_url)
        if urllib.parse.urlsplit(url).netloc != self._netloc:  # a Link header elsewhere: the token stays home
            raise GitHubError(f"{method} {url[:80]}: not on {self._netloc}; not sent")
        shown = url[len(self.api_url):] if url.startswith(self.api_url) else url
        self.log.append((method, shown, body))
        if self.dry_run:
            return Response(0, None, {})
        data = None if body is None else json.dumps(body).encode("utf-8")
        last = ""
        for attempt in range(1, self.tries + 1):
            req = urllib.request.Request(url, data=data, method=method, headers={
                "Accept": "application/vnd.github+json",
                "Authorization": f"Bearer {self.token}",
                "X-GitHub-Api-Version": "2022-11-28",
                "User-Agent": "torchdoctor-triage",
                **({"Content-Type": "application/json"} if data is not None else {}),
            })
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - http(s) checked
                    raw = resp.read(MAX_RESPONSE_BYTES + 1)
                    headers = {k.lower(): v for k, v in resp.headers.items()}
                    return Response(resp.status, _json(raw), headers)
            except urllib.error.HTTPError as exc:
                headers = {k.lower(): v for k, v in (exc.headers or {}).items()}
                try:
                    raw = exc.read(65536)
                except OSError:
                    raw = b""
                payload = _json(raw)
                said = _message(payload)
                last = f"{exc.code} {said or exc.reason}"
                wait = _retry_wait(exc.code, headers, said, attempt)
                if wait is None:
                    raise GitHubError(f"GitHub API {method} {shown}: {_clean(last)}") from None
            except (urllib.error.URLError, OSError, TimeoutError) as exc:
                reason = getattr(exc, "reason", None) or exc
                last = f"no answer ({reason})"
                wait = float(2 ** (attempt - 1))
            if attempt < self.tries:
                (self.sleep or time.sleep)(min(max(wait, 0.0), self.max_wait))
        raise GitHubError(f"GitHub API {method} {shown}: {_clean(last)} (after {self.tries} tries)")

    def paginate(self, path: str) -> list:
        out: list = []
        url: Optional[str] = path
        for _ in range(MAX_PAGES):
            if url is None:
                break
            resp = self.request("GET", url)
            if self.dry_run:
                return out
            if not isinstance(resp.data, list):
                raise GitHubError(f"GitHub API GET {path}: expected a list, got {type(resp.data).__name__}")
            out.extend(resp.data)
            m = _NEXT.search(resp.headers.get("link", ""))
            url = m.group(1) if m else None
        return out


def _json(raw: bytes) -> Any:
    if len(raw) > MAX_RESPONSE_BYTES:
        raise GitHubError(f"GitHub API: an answer larger than {MAX_RESPONSE_BYTES // 2**20} MiB")
    if not raw:
        return None
    try:
        return json.loads(raw.decode("utf-8", errors="replace"))
    except ValueError:
        return None


def _message(payload: Any) -> str:
    return str(payload.get("message", ""))[:MAX_ERROR_CHARS] if isinstance(payload, dict) else ""


def _clean(text: str) -> str:
    from torchdoctor.redact import redact_text

    return " ".join(redact_text(text).split())[:MAX_ERROR_CHARS * 2]


def _retry_wait(status: int, headers: dict, message: str, attempt: int) -> Optional[float]:
    """Seconds to wait before the next attempt, or None when the answer is final. GitHub: 5xx and 429 are retried;
    a 403 is a rate limit (and retried) only with Retry-After, x-ratelimit-remaining: 0 or a message that says so."""
    limited = status == 429 or (status == 403 and (
        "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0"
        or "rate limit" in message.lower()))
    if not (limited or 500 <= status <= 599):
        return None
    after = headers.get("retry-after", "")
    if after.strip().isdigit():
        return float(after.strip()[:6])
    reset = headers.get("x-ratelimit-reset", "")
    if headers.get("x-ratelimit-remaining") == "0" and reset.strip().isdigit():
        return float(int(reset.strip()[:12]) - int(time.time()))
    return float(2 ** (attempt - 1)) * (30.0 if limited else 1.0)  # docs: wait at least a minute; capped by max_wait


# ----------------------------------------------------------------------------------------
# keeping one issue in step with a triage result
# ----------------------------------------------------------------------------------------


def labels_line(labels: list) -> str:
    return LABELS_LINE + json.dumps(list(labels)).replace(">", "\\u003e").replace("<", "\\u003c") + " -->"


def recorded_labels(body: str, allowed: list) -> list:
    """The labels an earlier run recorded in its comment, of the allow-list only."""
    for line in body.splitlines()[:3]:
        if line.startswith(LABELS_LINE) and line.endswith(" -->"):
            try:
                found = json.loads(line[len(LABELS_LINE):-4])
            except ValueError:
                return []
            return [x for x in found if isinstance(x, str) and x in allowed] if isinstance(found, list) else []
    return []


def _is_ours(comment: Any, marker: str) -> bool:
    if not isinstance(comment, dict) or not isinstance(comment.get("body"), str):
        return False
    user = comment.get("user") if isinstance(comment.get("user"), dict) else {}
    return comment["body"].startswith(marker + "\n") and user.get("type") == "Bot"


def sync(client: Client, number: int, comment: str, labels: list, allowed: list, *, post: bool) -> list[str]:
    """Bring issue ``number`` in step: its comment (``post``: there is something to say, or --always-comment) and
    its labels. Returns one line per action taken (or planned, with dry_run)."""
    from torchdoctor.triage.comment import MARKER

    base = f"/repos/{client.repository}/issues/{number}"
    done: list[str] = []
    if client.dry_run:
        client.request("GET", f"{base}/comments?per_page=100")
        client.request("GET", base)
        if post:
            client.request("POST", f"{base}/comments", {"body": comment})
            done.append(f"would POST the comment (or PATCH the earlier one found by {MARKER})")
        else:
            done.append("nothing to say: would post no comment (would update an earlier one to say so)")
        if labels:
            client.request("POST", f"{base}/labels", {"labels": labels})
            done.append(f"would add labels: {', '.join(labels)}")
        return done
    comments = client.paginate(f"{base}/comments?per_page=100")
    mine = next((c for c in comments if _is_ours(c, MARKER)), None)
    issue = client.request("GET", base).data
    present = [x.get("name") for x in (issue or {}).get("labels", []) if isinstance(x, dict)]
    before = recorded_labels(mine["body"], allowed) if mine else []
    add = [x for x in labels if x not in present]
    remove = [x for x in before if x not in labels and x in present and x in allowed]
    # ours: what this run adds, and what an earlier run added that still applies; never a label someone else put on
    ours = sorted(set(add) | (set(before) & set(labels)), key=allowed.index) if allowed else []
    if mine is not None or post:
        lines = comment.split("\n", 1)
        body = lines[0] + "\n" + labels_line(ours) + "\n" + (lines[1] if len(lines) > 1 else "")
        if mine is None:
            created = client.request("POST", f"{base}/comments", {"body": body}).data or {}
            done.append(f"posted comment {created.get('id', '')}".rstrip())
        elif mine.get("body") != body:
            client.request("PATCH", f"/repos/{client.repository}/issues/comments/{int(mine['id'])}", {"body": body})
            done.append(f"updated comment {int(mine['id'])}")
        else:
            done.append(f"comment {int(mine['id'])} unchanged")
    if add:
        client.request("POST", f"{base}/labels", {"labels": add})
        done.append(f"added labels: {', '.join(add)}")
    for label in remove:
        client.request("DELETE", f"{base}/labels/{urllib.parse.quote(label, safe='')}")
        done.append(f"removed label: {label}")
    return done
