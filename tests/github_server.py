"""A stand-in for the GitHub REST endpoints `torchdoctor triage --post` uses, on 127.0.0.1 (a thread started by
the test), answering with the recorded shapes of tests/data/github/ (SOURCES.md there). It keeps state (comments,
labels), paginates comments with a Link header, records every request, and replays injected failures."""

from __future__ import annotations

import copy
import json
import re
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data" / "github"


def shape(name: str):
    return json.loads((DATA / name).read_text(encoding="utf-8"))


class FakeGitHub:
    def __init__(self, repo: str = "octocat/Hello-World", number: int = 1347, per_page: int = 2):
        self.repo, self.number, self.per_page = repo, number, per_page
        self.comments: list[dict] = []
        self.labels: list[str] = ["bug"]
        self.requests: list[dict] = []
        self.faults: list[tuple[int, str, dict]] = []
        """(status, shape file, headers) answered to the next requests, one each, before any real answer."""
        self._next_id = 900
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)

    def add_comment(self, body: str, *, bot: bool = False) -> dict:
        c = shape("comment.json")
        self._next_id += 1
        c.update(id=self._next_id, body=body, html_url=f"https://github.com/{self.repo}/issues/{self.number}"
                 f"#issuecomment-{self._next_id}")
        if bot:
            c["user"] = shape("bot_user.json")
        self.comments.append(c)
        return c

    def mutations(self) -> list[dict]:
        return [r for r in self.requests if r["method"] != "GET"]

    # ------------------------------------------------------------------ the handler
    def _handler(self):
        gh = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def _answer(self, status: int, payload, headers: dict | None = None):
                raw = b"" if payload is None else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def _serve(self, method: str):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                parts = urllib.parse.urlsplit(self.path)
                query = dict(urllib.parse.parse_qsl(parts.query))
                gh.requests.append({"method": method, "path": parts.path, "query": query, "body": body,
                                    "auth": self.headers.get("Authorization"),
                                    "version": self.headers.get("X-GitHub-Api-Version")})
                if gh.faults:
                    status, name, headers = gh.faults.pop(0)
                    return self._answer(status, shape(name), headers)
                base = f"/repos/{gh.repo}/issues"
                if method == "GET" and parts.path == f"{base}/{gh.number}/comments":
                    page = int(query.get("page", "1"))
                    size = gh.per_page
                    chunk = gh.comments[(page - 1) * size: page * size]
                    headers = {}
                    if page * size < len(gh.comments):
                        nxt = f"{gh.url}{parts.path}?per_page={query.get('per_page', '30')}&page={page + 1}"
                        headers["Link"] = f'<{nxt}>; rel="next", <{gh.url}{parts.path}?page=1>; rel="first"'
                    return self._answer(200, copy.deepcopy(chunk), headers)
                if method == "GET" and parts.path == f"{base}/{gh.number}":
                    issue = shape("issue.json")
                    label = shape("labels_added.json")[0]
                    issue.update(number=gh.number, labels=[dict(label, name=n) for n in gh.labels])
                    return self._answer(200, issue)
                if method == "POST" and parts.path == f"{base}/{gh.number}/comments":
                    return self._answer(201, gh.add_comment(body["body"], bot=True))
                m = re.fullmatch(rf"{base}/comments/(\d+)", parts.path)
                if method == "PATCH" and m:
                    for c in gh.comments:
                        if c["id"] == int(m.group(1)):
                            c["body"] = body["body"]
                            return self._answer(200, c)
                    return self._answer(404, {"message": "Not Found"})
                if method == "POST" and parts.path == f"{base}/{gh.number}/labels":
                    for name in body["labels"]:
                        if name not in gh.labels:
                            gh.labels.append(name)
                    label = shape("labels_added.json")[0]
                    return self._answer(200, [dict(label, name=n) for n in gh.labels])
                m = re.fullmatch(rf"{base}/{gh.number}/labels/(.+)", parts.path)
                if method == "DELETE" and m:
                    name = urllib.parse.unquote(m.group(1))
                    if name not in gh.labels:
                        return self._answer(404, {"message": "Label does not exist"})
                    gh.labels.remove(name)
                    return self._answer(200, [])
                return self._answer(404, {"message": "Not Found"})

            def do_GET(self):
                self._serve("GET")

            def do_POST(self):
                self._serve("POST")

            def do_PATCH(self):
                self._serve("PATCH")

            def do_DELETE(self):
                self._serve("DELETE")

        return Handler
