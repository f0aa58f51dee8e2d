"""Report -> JSON (pydantic's own serialisation; Unavailable is {"unavailable": reason})."""

from __future__ import annotations

from torchdoctor.report import Report


def render(report: Report, **_: object) -> str:
    return report.model_dump_json(indent=2, exclude_none=False) + "\n"
