"""Renderers of lint findings (pure: findings and rules in, text out): full, concise, json,
sarif (2.1.0) and github (workflow commands).

What a linted repository controls (file names, source lines, the names and string literals
that messages quote) may hold terminal escapes, C0/C1 controls and bidirectional overrides:
every text format shows it through :func:`torchdoctor.sanitize.one_line`, the sanitiser of
every other renderer's input. JSON and SARIF are ASCII (``\\u`` escapes), their messages
sanitised the same way; paths and fix contents stay exact there, because tools act on them."""

from __future__ import annotations

import json
from typing import Optional

from torchdoctor.project import docs_uri, repository_url
from torchdoctor.sanitize import one_line
from torchdoctor.version import __version__

FORMATS = ("full", "concise", "json", "sarif", "github")
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def _show(text: str) -> str:
    """One line of a source file as it may reach a terminal: a tab is one space (so the caret
    line below it stays aligned), escapes and controls are gone."""
    return one_line(text.replace("\t", " "))


def where(f) -> str:
    cell = f"cell {f.cell}:" if f.cell is not None else ""
    return f"{one_line(f.path)}:{cell}{f.line}:{f.col}"


def concise(findings: list) -> str:
    return "".join(f"{where(f)}: {f.id} {one_line(f.message)}\n" for f in findings)


def full(findings: list, sources: dict) -> str:
    out = []
    for f in findings:
        out.append(f"{where(f)}: {f.id} [{f.severity}] {one_line(f.message)}")
        lines = sources.get((f.path, f.cell))
        if lines and 1 <= f.line <= len(lines):
            raw = lines[f.line - 1].rstrip("\r\n")
            text = _show(raw[:200])
            out.append(f"  {f.line:>4} | {text}")
            # the caret under the same characters: columns counted in the shown text
            col = len(_show(raw[:max(0, f.col - 1)]))
            end = len(_show(raw[:max(0, f.end_col - 1)])) if f.end_line == f.line else len(text)
            out.append("       | " + " " * min(col, 200) + "^" * min(max(1, end - col), 120))
        if f.fix:
            label = "fix" if f.fix["applicability"] == "safe" else "unsafe fix (--unsafe-fixes)"
            out.append(f"       = {label}: {one_line(f.fix['message'])}")
        out.append("")
    return "\n".join(out) + ("\n" if out else "")


def _clean(d: dict) -> dict:
    """A finding's dict with its human text sanitised (paths and edits stay exact)."""
    d = dict(d)
    if isinstance(d.get("message"), str):
        d["message"] = one_line(d["message"])
    if isinstance(d.get("fix"), dict) and isinstance(d["fix"].get("message"), str):
        d["fix"] = {**d["fix"], "message": one_line(d["fix"]["message"])}
    return d


def as_json(findings: list) -> str:
    return json.dumps([_clean(f.as_dict()) for f in findings], indent=2) + "\n"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_prop(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def _file_region(f) -> dict:
    """Where a finding is in the file itself: a notebook's finding at its line of the raw
    .ipynb text (``file_region``), any other at its line."""
    r = getattr(f, "file_region", None)
    if f.cell is not None and r:
        return r
    return {"line": f.line, "col": f.col, "end_line": f.end_line, "end_col": f.end_col}


def _cell_prefix(f) -> str:
    return f"cell {f.cell}, line {f.line}: " if f.cell is not None else ""


def github(findings: list) -> str:
    out = []
    for f in findings:
        level = {"error": "error", "warning": "warning"}.get(f.severity, "notice")
        r = _file_region(f)
        props = [f"file={_escape_prop(one_line(f.path))}", f"line={r['line']}", f"col={r['col']}",
                 f"endLine={r['end_line']}", f"endColumn={r['end_col']}",
                 f"title={_escape_prop('torchdoctor ' + f.id)}"]
        out.append(f"::{level} {','.join(props)}::{_escape_data(_cell_prefix(f) + one_line(f.message))}")
    return "\n".join(out) + ("\n" if out else "")


def sarif(findings: list, rules: list) -> str:
    used = sorted({f.id for f in findings} | {r.id for r in rules})
    by_id = {r.id: r for r in rules}
    index = {rid: i for i, rid in enumerate(used)}
    descriptors = []
    for rid in used:
        r = by_id.get(rid)
        d: dict = {"id": rid}
        if r is not None:
            d.update({
                "shortDescription": {"text": r.summary},
                "fullDescription": {"text": r.why},
                "help": {"text": r.fix or r.summary},
                "defaultConfiguration": {"level": _LEVEL[r.severity], "enabled": r.default},
                "properties": {"tags": r.all_tags, "kind": r.kind},
            })
            help_uri = docs_uri("lint.md", rid)
            if help_uri:
                d["helpUri"] = help_uri
        descriptors.append(d)
    results = []
    for f in findings:
        r = _file_region(f)
        region = {"startLine": r["line"], "startColumn": r["col"], "endLine": r["end_line"], "endColumn": r["end_col"]}
        location: dict = {"physicalLocation": {"artifactLocation": {"uri": _uri(f.path)}, "region": region}}
        res: dict = {
            "ruleId": f.id, "ruleIndex": index[f.id], "level": _LEVEL[f.severity],
            "message": {"text": _cell_prefix(f) + one_line(f.message)},
            "locations": [location],
            "properties": {"tags": f.tags, "kind": f.kind},
        }
        if f.cell is not None:
            res["properties"]["cell"] = f.cell
            res["properties"]["cell_line"] = f.line
            res["properties"]["cell_column"] = f.col
            location["logicalLocations"] = [{"name": f"cell {f.cell}", "kind": "module"}]
        if f.torch_version:
            res["properties"]["torch_version"] = f.torch_version
        if f.fix:
            res["fixes"] = [{
                "description": {"text": one_line(f.fix["message"] or "fix")},
                "artifactChanges": [{
                    "artifactLocation": {"uri": _uri(f.path)},
                    "replacements": [{"deletedRegion": {"startLine": e["line"], "startColumn": e["col"],
                                                        "endLine": e["end_line"], "endColumn": e["end_col"]},
                                      "insertedContent": {"text": e["content"]}} for e in f.fix["edits"]],
                }],
            }]
        results.append(res)
    driver: dict = {"name": "torchdoctor", "version": __version__, "semanticVersion": __version__}
    if repository_url():
        driver["informationUri"] = repository_url()
    doc = {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [{
        "tool": {"driver": {**driver, "rules": descriptors}},
        "columnKind": "unicodeCodePoints",
        "results": results,
    }]}
    return json.dumps(doc, indent=2) + "\n"


def _uri(path: str) -> str:
    from urllib.parse import quote

    path = path.replace("\\", "/")
    return quote(path[2:] if path.startswith("./") else path)


def render(fmt: str, findings: list, rules: list, sources: Optional[dict] = None) -> str:
    if fmt == "concise":
        return concise(findings)
    if fmt == "json":
        return as_json(findings)
    if fmt == "sarif":
        return sarif(findings, rules)
    if fmt == "github":
        return github(findings)
    return full(findings, sources or {})
