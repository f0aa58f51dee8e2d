"""Lint one source text: parse, analyse, run the selected rules, turn hits into findings with
1-based character positions, honour ``# torchdoctor: ignore[ID]``, and apply fixes."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field
from typing import Iterable, Optional

from torchdoctor.lint import fixcheck
from torchdoctor.lint.analyze import analyze
from torchdoctor.lint import calls
from torchdoctor.lint.checks import MECHANISMS as _CHECKS
from torchdoctor.lint.checks import Ctx, Edit, Hit
from torchdoctor.lint.knowledge import Knowledge, LintRule
from torchdoctor.lint.lines import split as split_lines
from torchdoctor.lint.lines import starts as line_starts

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2}
_IGNORE = re.compile(r"#\s*torchdoctor:\s*ignore(?![\w-])(\[[^\]\[]{0,400}\]?)?")
"""``# torchdoctor: ignore`` (every rule) or ``# torchdoctor: ignore[ID, ...]`` (those rules);
an unclosed or empty ``[`` is malformed and silences nothing."""
_RULE_ID = re.compile(r"^[A-Za-z0-9_-]+$")
_FIELD = re.compile(r"\{(\w+)\}")
MAX_FIX_PASSES = 4
MECHANISMS = {**_CHECKS, **calls.MECHANISMS}


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
    file_region: Optional[dict] = None
    """A notebook's finding: where it is in the raw .ipynb text ({line, col, end_line,
    end_col}, 1-based characters); line/col are cell-relative."""
    edits: list = field(default_factory=list, repr=False)
    """Byte-offset edits (internal, for --fix)."""
    expect: list = field(default_factory=list, repr=False)
    """What the edits mean, for fixcheck (internal)."""

    def as_dict(self) -> dict:
        out = {"path": self.path, "line": self.line, "col": self.col, "end_line": self.end_line,
               "end_col": self.end_col, "id": self.id, "kind": self.kind, "tags": self.tags,
               "severity": self.severity, "message": self.message, "fix": self.fix}
        if self.cell is not None:
            out["cell"] = self.cell
        if self.torch_version is not None:
            out["torch_version"] = self.torch_version
        if self.file_region is not None:
            out["file_region"] = dict(self.file_region)
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
    """(tree, None) or (None, (line, col, message)) for a file that does not parse. ``path`` is
    not given to the parser (fixcheck.PARSE_NAME: no re-read of the file per SyntaxError)."""
    try:
        return ast.parse(source, filename=fixcheck.PARSE_NAME), None
    except SyntaxError as exc:
        return None, (exc.lineno or 1, exc.offset or 1, f"{type(exc).__name__}: {exc.msg}")
    except (RecursionError, MemoryError):
        return None, (1, 1, "nested too deeply for the parser")
    except ValueError as exc:  # null bytes
        return None, (1, 1, str(exc)[:120])


def lint_source(source: str, path: str, know: Knowledge, rules: list, version: tuple,
                version_text: str) -> list:
    """Every finding of ``rules`` in ``source``, sorted by position."""
    lines = split_lines(source)
    tree, error = parse_source(source, path)
    if tree is None:
        return [parse_error(path, error, know, rules)] if any(r.check == "parse-error" for r in rules) else []
    try:
        model = analyze(tree, version, lambda dotted: know.presence(dotted, version), know.is_value)
    except RecursionError:
        return [parse_error(path, (1, 1, "nested too deeply to analyse"), know, rules)]
    ctx = Ctx(model, know, version, version_text, source)
    out = []
    comments = _Comments(source)
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
            if not _suppressed(comments, f):
                out.append(f)
    _keep_fixes_that_hold(source, tree, out)
    out.sort(key=lambda f: (f.line, f.col, f.id))
    return out


def _keep_fixes_that_hold(source: str, tree: ast.AST, findings: list) -> None:
    """A fix is offered only where its edits, alone, turn the source into the original tree with
    exactly its intended nodes replaced (fixcheck). All fixes are checked together first (one
    parse); only when that fails is each checked alone."""
    fixable = [f for f in findings if f.edits]
    if not fixable:
        return
    lines = split_lines(source, keepends=True)

    def holds(group: list) -> bool:
        chosen = _pick(lines, group)
        return len(chosen) == len(group) and _apply(source, chosen, tree) is not None

    if len(fixable) > 1 and holds(fixable):
        return
    for f in fixable:
        if not holds([f]):
            f.edits, f.expect, f.fix = [], [], None


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
                   torch_version=version_text if hit.version_dependent else None, edits=hit.edits,
                   expect=hit.expect)


def _bounds(e: Edit) -> tuple:
    if e.node is not None:
        return (e.node.lineno, e.node.col_offset), (e.node.end_lineno, e.node.end_col_offset)
    return e.start, e.end


def _edit_dict(e: Edit, lines: list) -> dict:
    (l1, c1), (l2, c2) = _bounds(e)
    return {"line": l1, "col": _char_col(lines, l1, c1), "end_line": l2, "end_col": _char_col(lines, l2, c2),
            "content": e.content}


class _Comments:
    """The ``# torchdoctor: ignore`` comments of a source, from its real comment tokens (a
    string that holds the words silences nothing), read once on first use."""

    def __init__(self, source: str) -> None:
        self.source = source
        self._by_line: Optional[dict] = None

    def on(self, line: int) -> Optional[str]:
        if self._by_line is None:
            self._by_line = {}
            if "torchdoctor" in self.source:
                try:
                    for tok in tokenize.generate_tokens(io.StringIO(self.source).readline):
                        if tok.type == tokenize.COMMENT and "torchdoctor" in tok.string:
                            self._by_line[tok.start[0]] = tok.string
                except (tokenize.TokenError, SyntaxError, RecursionError, MemoryError):
                    pass  # the source parsed; a tokenizer that disagrees silences nothing
        return self._by_line.get(line)


def ignored_ids(comment: str) -> Optional[set]:
    """None: the comment silences nothing; an empty set: every rule; else those rule ids."""
    m = _IGNORE.search(comment)
    if m is None:
        return None
    if m.group(1) is None:
        return set()
    inner = m.group(1)
    if not inner.endswith("]"):
        return None  # an unclosed [ is malformed, not "ignore everything"
    ids = {x.strip() for x in inner[1:-1].split(",")}
    ids.discard("")
    if not ids or not all(_RULE_ID.match(x) for x in ids):
        return None
    return ids


def _suppressed(comments: "_Comments", f: Finding) -> bool:
    for ln in {f.line, f.end_line}:
        comment = comments.on(ln)
        if comment is None:
            continue
        ids = ignored_ids(comment)
        if ids is not None and (not ids or f.id in ids):
            return True
    return False


# -- fixes --------------------------------------------------------------------------------

def _spans(source_lines: list, edits: list) -> Optional[list]:
    """(start byte, end byte, content) of each edit; None for a position outside the text."""
    starts = line_starts(source_lines)
    out = []
    for e in edits:
        pos = []
        for line, col in _bounds(e):
            if not 1 <= line <= len(source_lines) or not 0 <= col <= starts[line] - starts[line - 1]:
                return None
            pos.append(starts[line - 1] + col)
        if pos[1] < pos[0]:
            return None
        out.append((pos[0], pos[1], e.content))
    return out


def _overlaps(spans: list, taken: list) -> bool:
    return any(not (e <= s0 or s >= e0) or (s == e == s0 == e0) for s, e, _ in spans for s0, e0 in taken)


def _splice(data: bytes, spans: list) -> Optional[str]:
    """``spans`` applied from the end; insertions at one place land in the order given."""
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1], i), reverse=True)
    for i in order:
        s, e, content = spans[i]
        data = data[:s] + content.encode("utf-8") + data[e:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None  # an edit inside a character


def _pick(lines: list, findings: list) -> list:
    """``[(finding, spans)]`` of the findings whose edits have a stated intention, lie inside the
    text and overlap no earlier one's (the later of two fixes on one place is left out)."""
    chosen, taken = [], []
    for f in findings:
        spans = _spans(lines, f.edits) if f.edits and f.expect else None
        if spans is None or _overlaps(spans, taken):
            continue
        taken += [(s, e) for s, e, _ in spans]
        chosen.append((f, spans))
    return chosen


def _apply(source: str, chosen: list, tree: Optional[ast.AST] = None) -> Optional[str]:
    """The source with the chosen fixes, if it is the original tree with exactly their intended
    nodes replaced (fixcheck), else None."""
    if not chosen:
        return None
    new = _splice(source.encode("utf-8"), [sp for _, spans in chosen for sp in spans])
    if new is None or not fixcheck.verify(source, new, [p for f, _ in chosen for p in f.expect], tree):
        return None
    return new


def apply_edits(source: str, findings: list, unsafe: bool) -> tuple:
    """(new source, the findings fixed): the non-overlapping fixes applied from the end, and the
    result checked (fixcheck) to be the original with exactly their intended nodes replaced;
    where the combination is not, nothing is applied."""
    wanted = [f for f in findings if f.fix and (f.fix["applicability"] == "safe" or unsafe)]
    chosen = _pick(split_lines(source, keepends=True), wanted)
    new = _apply(source, chosen)
    return (source, []) if new is None else (new, [f for f, _ in chosen])


def fix_source(source: str, lint: "callable", unsafe: bool) -> tuple:
    """Apply fixes until none is left (at most a few passes); (new source, fixed count). Every
    pass is checked by fixcheck before it is kept: the fixed module's AST is the original's
    outside the rewritten nodes, and those are the intended replacements."""
    total = 0
    for _ in range(MAX_FIX_PASSES):
        findings = lint(source)
        new, fixed = apply_edits(source, findings, unsafe)
        if not fixed or new == source:
            break
        if parse_source(new, "<fix>")[0] is None:
            break  # never write code that does not parse (fixcheck.verify implies it; kept as a floor)
        source, total = new, total + len(fixed)
    return source, total
