"""What each tool of `torchdoctor mcp` takes (its input schema, advertised in ``tools/list``
and checked before the tool runs) and what it returns (its output schema: the tool's
``structuredContent`` follows it, and docs/schemas/<tool>.schema.json publishes it).

The result schemas of ``check`` and ``recommend`` embed the schema of the Report that
``--format json`` prints (pydantic's, from :class:`torchdoctor.report.Report`), so the two
never drift apart. ``python -m torchdoctor.mcp_server.schemas DIR`` writes the published
files (tests/test_mcp_schemas.py checks they are current). No ``mcp`` import here.
"""

from __future__ import annotations

import copy
import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

MAX_TEXT = 1_000_000
"""Characters of one text argument (a pasted report, a source file, an issue body): a
collect_env report is a few kilobytes, a large training script a few hundred."""
MAX_NAME = 64
"""Characters of a short argument: a task, a GPU name, a torch version."""
MAX_RULE_ID = 128
MAX_IGNORED = 200
"""Rule ids one call may silence."""
MIN_TIMEOUT, MAX_TIMEOUT, DEFAULT_TIMEOUT = 1, 300, 60
"""Seconds the probe of this machine may take (the torch child's deadline)."""

SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"
PUBLISHED = ("check", "recommend", "lint", "explain_rule")
"""The result schemas this module writes; triage's is the triage package's own
(docs/schemas/triage.schema.json)."""

SEVERITY = {"enum": ["error", "warning", "info"]}


def _text(description: str, limit: int = MAX_TEXT) -> dict:
    return {"type": "string", "maxLength": limit, "description": description}


_FACTS = {
    "type": ["object", "string"],
    "description": "Recorded facts: the JSON `torchdoctor probe` writes (or a "
                   "`torchdoctor check --format json` report), as an object or as its text "
                   f"(at most {MAX_TEXT} characters).",
}
_TIMEOUT = {
    "type": "number", "minimum": MIN_TIMEOUT, "maximum": MAX_TIMEOUT, "default": DEFAULT_TIMEOUT,
    "description": "Seconds allowed for probing this machine (used only when neither `report` nor "
                   "`facts` is given).",
}
_IGNORE = {
    "type": "array", "maxItems": MAX_IGNORED,
    "items": {"type": "string", "maxLength": MAX_RULE_ID},
    "description": "Rule ids to silence.",
}


def _object(properties: dict, required: tuple = (), **extra: Any) -> dict:
    out = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        out["required"] = list(required)
    out.update(extra)
    return out


def _workload_properties() -> dict:
    """The workload fields of :class:`torchdoctor.workload.Workload` as arguments: its own
    enums and ranges, without defaults (a field not given keeps the task preset's value)."""
    from torchdoctor.workload import Workload

    out = {}
    for name, prop in Workload.model_json_schema()["properties"].items():
        if name == "task":
            continue
        prop = {k: v for k, v in prop.items() if k not in ("default", "title")}
        if "anyOf" in prop:  # Optional[int]: the value itself (omit the argument for None)
            prop = {**next(p for p in prop.pop("anyOf") if p.get("type") != "null"), **prop}
        out[name] = prop
    return out


@lru_cache(maxsize=None)
def input_schemas() -> dict:
    """Tool name -> the JSON schema of its arguments."""
    from torchdoctor.workload import load_tasks

    tasks = sorted(load_tasks())
    return {
        "check": _object({
            "report": _text("Pasted text to read instead of probing: `python -m torch.utils.collect_env` "
                            "output, vLLM/sglang collectors, pip/conda lists, nvidia-smi, torch's "
                            "warnings and tracebacks, or a whole issue body (as `check --from-report`)."),
            "facts": _FACTS,
            "timeout": _TIMEOUT,
            "ignore": _IGNORE,
        }),
        "recommend": _object({
            "task": {"type": "string", "enum": tasks,
                     "description": "Task preset (rules/tasks.yaml); the other workload fields override it."},
            **_workload_properties(),
            "gpu": _text('Plan for a machine you are not on: a GPU name with an optional count '
                         '("A100", "8x H100", "RTX 4090") or "cpu". NVIDIA GPUs and CPU only.', MAX_NAME),
            "torch_version": _text("Write the settings for this torch version (e.g. 2.4); default: "
                                   "the target's own.", MAX_NAME),
            "facts": _FACTS,
            "report": _text("Pasted collect_env text of the machine to plan for, instead of probing."),
            "timeout": _TIMEOUT,
            "ignore": _IGNORE,
        }),
        "lint": _object({
            "source": _text("The file's text: Python source, or a notebook's JSON (.ipynb)."),
            "filename": _text("The file's name as it should appear in findings; a name ending in "
                              ".ipynb is read as a notebook. Never opened.", 255),
            "torch_version": _text("Target torch version (default: the server's installed torch, else "
                                   "the newest torchdoctor knows).", MAX_NAME),
            "select": {"type": "array", "maxItems": MAX_IGNORED,
                       "items": {"type": "string", "maxLength": MAX_RULE_ID},
                       "description": "Only these rules (ids, tags, kinds, or ALL)."},
            "ignore": {**_IGNORE, "description": "Leave these rules (ids, tags, kinds) out."},
        }, ("source",)),
        "explain_rule": _object({
            "rule_id": {"type": "string", "minLength": 1, "maxLength": MAX_RULE_ID,
                        "description": "A rule id, as findings of check, recommend or lint name it."},
        }, ("rule_id",)),
        "triage": _object({
            "issue": {"type": ["string", "object"],
                      "description": "The issue: its body as text (at most "
                                     f"{MAX_TEXT} characters), or as an object the issue JSON of the REST "
                                     "API or the event JSON GitHub Actions writes."},
            "labels": {"type": "object",
                       "description": "The repository's label mapping, as the object its MAPPING.yaml "
                                      "(`torchdoctor triage --labels`) holds; without one, no label is "
                                      "proposed, and only the mapping's labels ever are."},
            "always_comment": {"type": "boolean", "default": False,
                               "description": "Give the comment even when there is nothing to say."},
        }, ("issue",)),
    }


def _report_schema() -> dict:
    from torchdoctor.report import Report

    return Report.model_json_schema(mode="serialization")


def _with_report(properties: dict, required: tuple, title: str, description: str) -> dict:
    report = _report_schema()
    defs = report.pop("$defs", {})
    report["description"] = "The Report, exactly as `torchdoctor check/recommend --format json` prints it."
    out = {"$schema": SCHEMA_DRAFT, "title": title, "description": description,
           **_object({**properties, "report": report}, required + ("report",))}
    out["$defs"] = defs
    return out


_SUMMARY = {"type": "string", "description": "One line: the counts of findings (and of rules skipped "
                                             "for unknown facts), as the CLI prints on stderr."}
_WORST = {"enum": ["error", "warning", "info", None],
          "description": "The most severe finding, or null when there is none."}

_FIX = {"type": ["object", "null"], "required": ["applicability", "message", "edits"],
        "properties": {
            "applicability": {"enum": ["safe", "unsafe"]},
            "message": {"type": "string"},
            "edits": {"type": "array", "items": {
                "type": "object", "required": ["line", "col", "end_line", "end_col", "content"],
                "properties": {k: {"type": "integer", "minimum": 1} for k in ("line", "col", "end_line", "end_col")}
                | {"content": {"type": "string"}}}}}}
_LINT_FINDING = {
    "type": "object",
    "required": ["path", "line", "col", "end_line", "end_col", "id", "kind", "tags", "severity", "message", "fix"],
    "properties": {
        "path": {"type": "string"},
        **{k: {"type": "integer", "minimum": 1} for k in ("line", "col", "end_line", "end_col")},
        "id": {"type": "string"}, "kind": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "severity": SEVERITY, "message": {"type": "string"},
        "fix": {**_FIX, "description": "The edit `torchdoctor lint --fix` would make (never made by this "
                                       "server); null when none, and always null in a notebook."},
        "cell": {"type": "integer", "minimum": 1, "description": "Notebook code cell (1-based)."},
        "torch_version": {"type": "string", "description": "The target torch, for a version-dependent finding."},
    },
    "description": "One finding, as `torchdoctor lint --format json` lists it.",
}


@lru_cache(maxsize=None)
def output_schemas() -> dict:
    """Tool name -> the JSON schema of its ``structuredContent``."""
    return {
        "check": _with_report(
            {"source": {"enum": ["machine", "facts", "report"],
                        "description": "Where the facts came from."},
             "summary": _SUMMARY, "worst": _WORST},
            ("source", "summary", "worst"), "torchdoctor check (MCP tool result)",
            "What `torchdoctor check` finds in this machine, in recorded facts or in a pasted text."),
        "recommend": _with_report(
            {"source": {"enum": ["machine", "facts", "report", "gpu"],
                        "description": "Where the facts came from (`gpu`: synthetic facts of a named GPU)."},
             "summary": _SUMMARY, "worst": _WORST,
             "torch_version": {"type": ["string", "null"],
                               "description": "The torch version the settings were written for."},
             "snippet": {"type": "string", "description": "The Python setup snippet that applies the plan."}},
            ("source", "summary", "worst", "torch_version", "snippet"), "torchdoctor recommend (MCP tool result)",
            "The settings plan for a workload, each setting with its reason, and the setup snippet."),
        "lint": {
            "$schema": SCHEMA_DRAFT, "title": "torchdoctor lint (MCP tool result)",
            "description": "The findings of `torchdoctor lint` in one source text (nothing written).",
            **_object({
                "path": {"type": "string"},
                "torch_version": {"type": "string", "description": "The target torch version."},
                "torch_version_from": {"type": "string", "description": "Where the target came from."},
                "rules_run": {"type": "integer", "minimum": 0},
                "findings": {"type": "array", "items": _LINT_FINDING},
            }, ("path", "torch_version", "torch_version_from", "rules_run", "findings")),
        },
        "explain_rule": {
            "$schema": SCHEMA_DRAFT, "title": "torchdoctor rules explain (MCP tool result)",
            "description": "A rule's meaning from its YAML file, as `torchdoctor rules explain` shows it.",
            **_object({
                "id": {"type": "string"},
                "source": {"enum": ["environment", "lint"],
                           "description": "An environment rule (check/recommend) or a lint rule."},
                "severity": SEVERITY,
                "category": {"type": "string", "description": "The finding category (a lint rule: its kind)."},
                "tags": {"type": "array", "items": {"type": "string"}},
                "summary": {"type": "string"}, "why": {"type": "string"}, "fix": {"type": "string"},
                "references": {"type": "array", "items": {"type": "string"}},
                "markdown": {"type": "string", "description": "The whole explanation as Markdown."},
            }, ("id", "source", "severity", "category", "tags", "summary", "why", "fix", "references",
                "markdown")),
        },
        "triage": triage_schema(),
    }


TRIAGE_CONTRACT = {
    "$schema": SCHEMA_DRAFT, "title": "torchdoctor triage (MCP tool result)",
    "type": "object",
    "required": ["verdict", "comment", "labels", "findings", "read", "junk", "missing"],
    "properties": {"verdict": {"type": "string"}, "comment": {"type": "string"},
                   "labels": {"type": "array", "items": {"type": "string"}},
                   "findings": {"type": "array"}, "read": {"type": "boolean"}, "junk": {"type": "array"},
                   "missing": {"type": "array"}},
}
"""The agreed result of :func:`torchdoctor.triage.triage_issue`: the server's outputSchema when
the triage package's own published schema cannot be found."""


def published_dir() -> Path:
    """The published schemas: ``torchdoctor/_schemas`` in the wheel (hatchling force-include of
    docs/schemas), docs/schemas in a source checkout."""
    here = Path(__file__).resolve().parents[1]
    installed = here / "_schemas"
    return installed if installed.is_dir() else here.parent / "docs" / "schemas"


def triage_schema() -> dict:
    """The triage package's published result schema (docs/schemas/triage.schema.json), else the
    agreed contract."""
    path = published_dir() / "triage.schema.json"
    try:
        found = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return copy.deepcopy(TRIAGE_CONTRACT)
    return found if isinstance(found, dict) and found.get("type") == "object" else copy.deepcopy(TRIAGE_CONTRACT)


def schema_text(tool: str) -> str:
    return json.dumps(output_schemas()[tool], indent=2, sort_keys=True) + "\n"


def write(directory: Path) -> list[Path]:
    """Write docs/schemas/<tool>.schema.json for the tools this module owns."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for tool in PUBLISHED:
        path = directory / f"{tool}.schema.json"
        path.write_text(schema_text(tool), encoding="utf-8")
        written.append(path)
    return written


def main(argv: Optional[list] = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m torchdoctor.mcp_server.schemas DIR (docs/schemas)\n")
        return 2
    for path in write(Path(args[0])):
        sys.stderr.write(f"wrote {path}\n")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
