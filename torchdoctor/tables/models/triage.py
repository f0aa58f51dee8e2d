"""The model of rules/data/triage.yaml: what `torchdoctor triage` reads issue bodies with (the facts to ask
for, the environment field's headings, template text, screenshot and cut-paste markers, the comment's words)."""

from __future__ import annotations

from pydantic import Field, StrictStr

from torchdoctor.tables.models._base import Closed

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
    environment_headings: list[Headings] = Field(min_length=1)
    empty_answers: EmptyAnswers
    templates: list[Template] = Field(min_length=1)
    screenshots: Screenshots
    cut_collect_env: CutCollectEnv
    says: Says
