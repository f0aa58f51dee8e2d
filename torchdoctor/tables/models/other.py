"""Models of the allow-lists (env_allowlist.yaml, packages_of_interest.yaml) and the small tables
of other areas: cpu_vendors, pci, diff_relevance, and the report importers'
lscpu_labels, gpu_name_vendors and paste_patterns."""

from __future__ import annotations

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, StrictStr

from torchdoctor.tables.models._base import Closed, Open, Sourced


class AllowEntry(BaseModel):
    """An allow-list entry; that it gives `reason` and `source` is checked by
    ``tables.sourced_entries``, whose message the probes' tests pin."""

    model_config = ConfigDict(extra="forbid", defer_build=True)
    name: Optional[StrictStr] = None
    prefix: Optional[StrictStr] = None
    reason: Any = None
    source: Any = None


class AllowList(Open):
    names: list[AllowEntry] = []
    prefixes: list[AllowEntry] = []


class CpuVendors(Closed):
    source: StrictStr
    arm_implementers: dict[StrictStr, StrictStr]


class Pci(Closed):
    source: StrictStr
    nvidia_vendor: StrictStr
    gpu_classes: list[StrictStr]


class WhyWhen(Closed):
    why: StrictStr
    either_side: Any = None
    one_side: Any = None


class Noise(Closed):
    path: StrictStr
    why: StrictStr


class Relevant(Closed):
    path: StrictStr
    why: StrictStr
    source: Any = None
    why_when: list[WhyWhen] = []


class DiffRelevance(Closed):
    noise: list[Noise]
    relevant: list[Relevant]


# The three files below belong to the report importers, which check what they read on first use
# (patterns linear, labels translated); their models hold the shape only and stay open, so
# those readers can grow them without a change here.


class LscpuLanguage(Open):
    language: StrictStr
    labels: dict[StrictStr, StrictStr]


class LscpuLabels(Open):
    languages: list[LscpuLanguage]


class VendorWords(Open):
    words: list[StrictStr]


class GpuNameVendors(Open):
    amd: VendorWords
    not_nvidia: VendorWords


class PastePatterns(Open):
    labels: list[dict[StrictStr, Any]] = []
    sections: list[dict[StrictStr, Any]] = []
    scoped_labels: list[dict[StrictStr, Any]] = []
    messages: list[dict[StrictStr, Any]] = []
    paths: list[dict[StrictStr, Any]] = []


class MessageExample(Closed):
    text: StrictStr
    """The message as a real ticket quotes it (verbatim)."""
    source: StrictStr
    """The ticket, as owner/repo#number."""


class KnownMessageEntry(Closed):
    """One message of rules/data/known_messages.yaml: the mechanism
    (torchdoctor.importers.paste.messages) checks on first use that the regex is linear and
    that every placeholder of ``meaning`` is a group of it."""

    id: StrictStr
    needle: StrictStr
    regex: Optional[StrictStr] = None
    superseded_by: list[StrictStr] = []
    """Ids of more specific entries: where one of them is found, this one is not reported."""
    category: StrictStr
    severity: Literal["error", "warning", "info"]
    meaning: StrictStr
    fix: StrictStr
    printed_by: StrictStr
    versions: StrictStr
    sources: list[StrictStr] = Field(min_length=1)
    """Where the message is printed (a library's source line) and public threads about it."""
    examples: list[MessageExample] = Field(min_length=1)


class KnownMessages(Closed):
    messages: list[KnownMessageEntry] = Field(min_length=1)
