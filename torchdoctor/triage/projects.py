"""Which command the triage comment asks for (:func:`choose_command`): the label mapping's ``command`` (the
maintainer's own choice), else the command the issue's own project asks for in its issue template
(rules/data/triage.yaml ``projects``), else ``ask.command`` (``python -m torch.utils.collect_env``).

The repository name comes from the event, the REST issue's ``repository_url``, ``--repository`` or
``GITHUB_REPOSITORY``: hostile text. It is only ever looked up, never shown: a name that is not owner/name as GitHub
allows it, or that no entry names exactly (case-insensitively; or an entry's ``owner/*``), gets the default. What
the comment shows comes from the table or the mapping, never from the name."""

from __future__ import annotations

import re
from typing import Any, Optional

MAX_REPOSITORY_CHARS = 140
"""An owner (39 characters) + "/" + a name (100): anything longer is no repository."""
_REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9._-]{1,100}")


def project_for(repository: Any, directory: Optional[str] = None) -> Optional[dict]:
    """The ``projects`` entry of ``repository`` (owner/name), or None: an exact name first, then ``owner/*``."""
    from torchdoctor.triage.junk import data

    if not isinstance(repository, str) or len(repository) > MAX_REPOSITORY_CHARS \
            or not _REPOSITORY.fullmatch(repository):
        return None
    name = repository.lower()
    owner = name.split("/", 1)[0] + "/*"
    entries = data(directory)["projects"]
    for key in (name, owner):
        for entry in entries:
            if any(r.lower() == key for r in entry["repositories"]):
                return entry
    return None


def choose_command(mapping: Optional[dict], repository: Any, missing: list, directory: Optional[str] = None) -> dict:
    """The triage result's ``command`` (what the comment asks to run), ``command_source`` (mapping | project |
    default) and ``command_fallback`` (None, or ``{"command": ask.command, "facts": [paths]}``: the missing facts
    the project's command does not print, which ask.command does). A project's command is chosen where it prints
    at least one missing fact (or nothing is missing); where it prints none of them, ask.command is."""
    from torchdoctor.triage.junk import data

    ask = data(directory)["ask"]
    given = (mapping or {}).get("command")
    if given:
        return {"command": given, "command_source": "mapping", "command_fallback": None}
    entry = project_for(repository, directory)
    if entry is not None:
        states = set(entry["states"])
        unsaid = [m["path"] for m in missing if m["path"] not in states]
        if not missing or len(unsaid) < len(missing):
            fallback = {"command": ask["command"], "facts": unsaid} if unsaid else None
            return {"command": entry["command"], "command_source": "project", "command_fallback": fallback}
    return {"command": ask["command"], "command_source": "default", "command_fallback": None}
