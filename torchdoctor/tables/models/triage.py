"""The model of rules/data/triage.yaml: what `torchdoctor triage` reads issue bodies with (the facts to ask
for, each project's own environment command, the environment field's headings, template text, screenshot and
cut-paste markers, the comment's words)."""

from __future__ import annotations

import re

from pydantic import Field, StrictStr, model_validator

from torchdoctor.safeio import clip
from torchdoctor.tables.models._base import Closed, Wrong

_Refs = list[StrictStr]


class AskFact(Closed):
    path: StrictStr
    """A fact path (``torch.version``)."""
    words: StrictStr
    """What the comment calls it ("the PyTorch version")."""


class Ask(Closed):
    command: StrictStr
    references: _Refs = Field(min_length=1)
    facts: list[AskFact] = Field(min_length=1)


MAX_COMMAND_CHARS = 160
"""A project's command is shown in one code span of the comment (torchdoctor/triage/comment.py shows this many)."""
REPOSITORY = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,38}/(?:[A-Za-z0-9._-]{1,100}|\*)")
"""owner/name as GitHub allows them, or owner/* (torchdoctor/triage/projects.py matches the same shape)."""


class Project(Closed):
    repositories: list[StrictStr] = Field(min_length=1)
    """owner/name (matched case-insensitively, exactly) or owner/*."""
    command: StrictStr
    """The command the project's issue template asks for, on one line."""
    states: list[StrictStr] = Field(min_length=1)
    """The ask.facts paths its output prints."""
    references: _Refs = Field(min_length=2)
    """The template that asks for it, and the command's source that prints what ``states`` says."""

    @model_validator(mode="after")
    def _check(self) -> "Project":
        name = clip(self.repositories[0])
        for repo in self.repositories:
            if not REPOSITORY.fullmatch(repo):
                raise Wrong(f"projects entry {name}: {clip(repo)} is not owner/name or owner/*")
        command = self.command
        if not command.strip() or command != command.strip() or len(command) > MAX_COMMAND_CHARS \
                or any(c in command for c in "\n\r`"):
            raise Wrong(f"projects entry {name}: 'command' must be one line of 1 to {MAX_COMMAND_CHARS} characters "
                        f"without backticks, got {clip(command)}")
        return self


class Headings(Closed):
    names: list[StrictStr] = Field(min_length=1)
    references: _Refs = Field(min_length=1)


class EmptyAnswers(Closed):
    values: list[StrictStr] = Field(min_length=1)
    references: _Refs = Field(min_length=1)


class Template(Closed):
    id: StrictStr
    project: StrictStr
    needle: StrictStr = Field(min_length=12)
    references: _Refs = Field(min_length=1)


class Screenshots(Closed):
    needles: list[StrictStr] = Field(min_length=1)
    references: _Refs = Field(min_length=1)


class CutCollectEnv(Closed):
    starts: list[StrictStr] = Field(min_length=1)
    ends: list[StrictStr] = Field(min_length=1)
    references: _Refs = Field(min_length=1)


class Says(Closed):
    template: StrictStr
    empty: StrictStr
    screenshot: StrictStr
    cut: StrictStr


class TriageData(Closed):
    ask: Ask
    projects: list[Project] = Field(min_length=1)
    environment_headings: list[Headings] = Field(min_length=1)
    empty_answers: EmptyAnswers
    templates: list[Template] = Field(min_length=1)
    screenshots: Screenshots
    cut_collect_env: CutCollectEnv
    says: Says

    @model_validator(mode="after")
    def _projects(self) -> "TriageData":
        asked = [f.path for f in self.ask.facts]
        seen: dict[str, str] = {}
        for i, entry in enumerate(self.projects):
            name = clip(entry.repositories[0])
            unknown = [p for p in entry.states if p not in asked]
            if unknown:
                raise Wrong(f"projects entry {name}: 'states' names {clip(unknown[0])}, which is not a path of "
                            f"ask.facts ({', '.join(asked)})", ("projects", i))
            for repo in entry.repositories:
                if repo.lower() in seen:
                    raise Wrong(f"projects entry {name}: {clip(repo)} is also in the entry of {seen[repo.lower()]}",
                                ("projects", i))
                seen[repo.lower()] = name
        return self
