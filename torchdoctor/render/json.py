"""Report -> JSON (pydantic's own serialisation; Unavailable is {"unavailable": reason}), with
the verdict every other view shows (render/summary.py) added after ``command``."""

from __future__ import annotations

import json

from torchdoctor.render.summary import verdict
from torchdoctor.report import Report


def render(report: Report, **_: object) -> str:
    data = json.loads(report.model_dump_json(exclude_none=False))
    out = {}
    for key, value in data.items():
        out[key] = value
        if key == "command":
            out["verdict"] = verdict(report)
    return json.dumps(out, indent=2, ensure_ascii=False) + "\n"
