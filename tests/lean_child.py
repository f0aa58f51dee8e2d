"""A child process for tests/test_lean.py: read recorded inputs with one model backend and print what came out.

Usage: python tests/lean_child.py lean|pydantic FILE...   (JSON on stdout)

A ``.txt`` file is an issue body: its triage result, the whole redacted Report the comment is made from, the
facts the paste importer read, and what `check --from-report` prints in each format. A ``.json`` file is an Actions event (its triage) or torchdoctor facts (validated
and dumped). Each item is the output, or ``{"error": "<type>: <message>"}``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def _check_outputs(name: str) -> dict:
    """What `torchdoctor check --from-report FILE` prints, in each format, and its exit code."""
    import contextlib
    import io

    from torchdoctor.cli import main as cli

    out = {}
    for fmt in ("json", "markdown", "terminal"):
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            code = cli(["check", "--from-report", name, "--format", fmt, "--fail-on", "warning"])
        out[fmt] = {"stdout": stdout.getvalue(), "stderr": stderr.getvalue(), "exit": code}
    return out


def main(argv: list[str]) -> int:
    mode, files = argv[0], argv[1:]
    import torchdoctor.model as model

    if mode == "lean" and not model.use_lean():
        raise SystemExit("lean backend refused")
    from torchdoctor.facts import Facts
    from torchdoctor.importers import load_report
    from torchdoctor.triage.core import evaluate_body, triage_issue

    out: dict = {}
    for name in files:
        path = Path(name)
        text = path.read_text(encoding="utf-8", errors="replace")
        try:
            if path.suffix == ".json":
                data = json.loads(text)
                if isinstance(data, dict) and "issue" in data:
                    item = {"triage": triage_issue(data)}
                else:
                    item = {"facts": Facts.model_validate(data).model_dump(mode="json")}
            else:
                report = evaluate_body(text)
                item = {"triage": triage_issue(text), "check": _check_outputs(name),
                        "report": report.model_dump(mode="json") if report is not None else None,
                        "facts": load_report(text, "body").model_dump(mode="json") if text.strip() else None}
        except Exception as exc:  # noqa: BLE001 - compared between backends, never hidden
            item = {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"}
        out[str(path)] = item
    json.dump({"backend": model.backend(), "pydantic_imported": "pydantic" in sys.modules, "out": out},
              sys.stdout, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    raise SystemExit(main(sys.argv[1:]))
