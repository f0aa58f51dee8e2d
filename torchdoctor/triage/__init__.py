"""`torchdoctor triage`: read a GitHub issue (an Actions event, a REST issue JSON or a plain body), say what its
environment shows in one comment, map it to the repository's own labels, and with ``--post`` keep that one comment
and those labels up to date through the REST API (docs/github-action.md).

- :mod:`.issue` reads the input, bounded; :mod:`.junk` names template text, empty fields, screenshots and cut pastes
  (wordings in rules/data/triage.yaml); :mod:`.core` runs the paste importer and the rules (:func:`triage_issue`);
  :mod:`.comment` renders the comment safely; :mod:`.labels` reads a repository's label mapping; :mod:`.projects`
  chooses the command the comment asks for (the mapping's, the project's own, or collect_env); :mod:`.github`
  talks to the REST API (standard library only, explicit timeouts, bounded retries); :mod:`.command` is the click
  command that cli.py registers.

The Python API other tools call (the MCP server among them) is :func:`triage_issue`; its result follows
docs/schemas/triage.schema.json.
"""

from __future__ import annotations

from typing import Any, Optional


def triage_issue(issue: Any, *, labels: Optional[dict] = None, always_comment: bool = False) -> dict:
    """Triage one issue: ``issue`` is a body (str), an issue JSON or an Actions event JSON (dict); ``labels`` a
    label mapping (a dict: the parsed mapping file) or None (no labels). Returns a JSON-serialisable dict:
    verdict, comment ("" when there is nothing to say, unless ``always_comment``), labels, findings (id,
    severity, title, fix, ...), read, junk, missing, and more (docs/schemas/triage.schema.json)."""
    from torchdoctor.triage.core import triage_issue as run

    return run(issue, labels=labels, always_comment=always_comment)


__all__ = ["triage_issue"]
