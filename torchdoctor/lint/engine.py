"""Lint one source text: parse, analyse, run the selected rules, turn hits into findings with
1-based character positions, honour ``# torchdoctor: ignore[ID]``, and apply fixes."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Iterable, Optional

from torchdoctor.lint.analyze import analyze
from torchdoctor.lint.checks import MECHANISMS, Ctx, Edit, Hit
from torchdoctor.lint.knowledge import Knowledge, LintRule

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
_IGNORE = re.compile(r"#\s*torchdoctor:\s*ignore(?:\[([A-Za-z0-9_,\s-]*)\])?")
_FIELD = re.compile(r"\{(\w+)\}")
MAX_FIX_PASSES = 4


@dataclass
class Finding:
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    id: str
    kind: str
    tags: list
    severity: str
    message: str
    fix: Optional[dict] = None
    cell: Optional[int] = None
    torch_version: Optional[str] = None
    """The target torch version, for a finding that depends on it."""
    edits: list = field(default_factory=list, repr=False)
    """Byte-offset edits (internal, for --fix)."""

    def as_dict(self) -> dict:
        out = {"path": self.path, "line": self.line, "col": self.col, "end_line": self.end_line,
               "end_col": self.end_col, "id": self.id, "kind": self.kind, "tags": self.tags,
               "severity": self.severity, "message": self.message, "fix": self.fix}
        if self.cell is not None:
            out["cell"] = self.cell
        if self.torch_version is not None:
            out["torch_version"] = self.torch_version
        return out


def _format(template: str, fields: dict) -> str:
    text = _FIELD.sub(lambda m: str(fields.get(m.group(1), "")), template)
    text = " ".join(text.split()).strip()
    while text.endswith((". .", ": .")):
        text = text[:-2]
    return text.rstrip(" ;")


def _char_col(lines: list, line: int, byte_col: int) -> int:
    if 1 <= line <= len(lines):
        return len(lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace")) + 1
    return byte_col + 1


def parse_source(source: str, path: str) -> tuple:
    """(tree, None) or (None, (line, col, message)) for a file that does not parse."""
    try:
        return ast.parse(source, filename=path), None
    except SyntaxError as exc:
        return None, (exc.lineno or 1, exc.offset or 1, f"{type(exc).__name__}: {exc.msg}")
    except (RecursionError, MemoryError):
        return None, (1, 1, "nested too deeply for the parser")
    except ValueError as exc:  # null bytes
        return None, (1, 1, str(exc)[:120])


def lint_source(source: str, path: str, know: Knowledge, rules: list, version: tuple,
                version_text: str) -> list:
    """Every finding of ``rules`` in ``source``, sorted by position."""
    lines = source.splitlines()
    tree, error = parse_source(source, path)
    if tree is None:
        return [parse_error(path, error, know, rules)] if any(r.check == "parse-error" for r in rules) else []
    try:
        model = analyze(tree, version, lambda dotted: know.presence(dotted, version))
    except RecursionError:
        return [parse_error(path, (1, 1, "nested too deeply to analyse"), know, rules)]
    ctx = Ctx(model, know, version, version_text, source)
    out = []
    for rule in rules:
        mech = MECHANISMS.get(rule.check)
        if mech is None:
            continue
        seen = set()
        try:
            hits = list(mech(ctx, rule))
        except RecursionError:
            return [parse_error(path, (1, 1, "nested too deeply to analyse"), know, rules)]
        for hit in hits:
            key = (getattr(hit.node, "lineno", 0), getattr(hit.node, "col_offset", 0))
            if key in seen:
                continue
            seen.add(key)
            f = _finding(path, lines, rule, hit, version_text)
            if not _suppressed(lines, f):
                out.append(f)
    out.sort(key=lambda f: (f.line, f.col, f.id))
    return out


def parse_error(path: str, error: tuple, know: Knowledge, rules: Iterable) -> Finding:
    rule = next((r for r in rules if r.check == "parse-error"), None) or know.rule("parse-error")
    line, col, msg = error
    return Finding(path, line, max(col, 1), line, max(col, 1), rule.id, rule.kind, rule.all_tags,
                   rule.severity, _format(rule.message, {"detail": msg}))


def _finding(path: str, lines: list, rule: LintRule, hit: Hit, version_text: str) -> Finding:
    n = hit.node
    line, end_line = n.lineno, getattr(n, "end_lineno", None) or n.lineno
    col = _char_col(lines, line, n.col_offset)
    end_col = _char_col(lines, end_line, getattr(n, "end_col_offset", None) or n.col_offset)
    fix = None
    if hit.edits:
        fix = {"applicability": "safe" if hit.safe else "unsafe", "message": hit.fix_title,
               "edits": [_edit_dict(e, lines) for e in hit.edits]}
    return Finding(path, line, col, end_line, end_col, rule.id, rule.kind, rule.all_tags, rule.severity,
                   _format(rule.message, hit.fields), fix,
                   torch_version=version_text if hit.version_dependent else None, edits=hit.edits)


def _bounds(e: Edit) -> tuple:
    if e.node is not None:
        return (e.node.lineno, e.node.col_offset), (e.node.end_lineno, e.node.end_col_offset)
    return e.start, e.end


def _edit_dict(e: Edit, lines: list) -> dict:
    (l1, c1), (l2, c2) = _bounds(e)
    return {"line": l1, "col": _char_col(lines, l1, c1), "end_line": l2, "end_col": _char_col(lines, l2, c2),
            "content": e.content}


def _suppressed(lines: list, f: Finding) -> bool:
    for ln in {f.line, f.end_line}:
        if 1 <= ln <= len(lines) and "torchdoctor" in lines[ln - 1]:
            m = _IGNORE.search(lines[ln - 1])
            if m and (m.group(1) is None or f.id in {x.strip() for x in m.group(1).split(",")}):
                return True
    return False


# -- fixes --------------------------------------------------------------------------------

def apply_edits(source: str, findings: list, unsafe: bool) -> tuple:
    """(new source, number of findings fixed): non-overlapping edits applied from the end."""
    lines = source.splitlines(keepends=True)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln.encode("utf-8")))
    data = source.encode("utf-8")

    def offset(pos: tuple) -> int:
        line, col = pos
        return starts[line - 1] + col

    chosen, taken = [], []
    for f in findings:
        if not f.edits or (f.fix["applicability"] != "safe" and not unsafe):
            continue
        spans = [(offset(a), offset(b), e.content) for e in f.edits for a, b in [_bounds(e)]]
        if any(not (e <= s0 or s >= e0) or (s == e == s0 == e0) for s, e, _ in spans for s0, e0 in taken):
            continue
        taken += [(s, e) for s, e, _ in spans]
        chosen.append(spans)
    edits = sorted((s for spans in chosen for s in spans), key=lambda t: (t[0], t[1]), reverse=True)
    for s, e, content in edits:
        data = data[:s] + content.encode("utf-8") + data[e:]
    return data.decode("utf-8"), len(chosen)


def fix_source(source: str, lint: "callable", unsafe: bool) -> tuple:
    """Apply fixes until none is left (at most a few passes); (new source, fixed count)."""
    total = 0
    for _ in range(MAX_FIX_PASSES):
        findings = lint(source)
        new, n = apply_edits(source, findings, unsafe)
        if n == 0 or new == source:
            break
        if parse_source(new, "<fix>")[0] is None:
            break  # never write code that does not parse
        source, total = new, total + n
    return source, total
