"""Mechanisms for torch calls read from tables (issue 21: TorchFix's checks, version-aware):
a deprecated or removed torch function (``deprecated-function``), a call that leaves out a
keyword whose default is unsafe or changing on the target torch (``missing-keyword``), and an
attribute typo that silently creates a new attribute (``attribute-typo``). What is deprecated,
since and until when, and what to use instead is the rules' ``params`` (rules/lint/*.yaml)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchdoctor.lint import fixcheck
from torchdoctor.lint.checks import Ctx, Edit, Hit
from torchdoctor.lint.knowledge import LintRule
from torchdoctor.lint.lines import split as split_lines
from torchdoctor.lint.versions import covers


def deprecated_function(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    """A use (call, reference, import) of a name in ``params.table``: removed on the target
    (``removed``: calling it raises) or deprecated there (``deprecated``). ``rename``: a drop-in
    replacement with the same signature, offered as a fix of calls."""
    table = rule.params.get("table") or {}
    for use in ctx.model.uses:
        if use.guarded or use.ctx in ("store", "del"):
            continue
        entry = table.get(use.name)
        if not entry:
            continue
        removed, since = entry.get("removed"), entry.get("deprecated")
        if removed and covers(ctx.version, ctx.version_text, str(removed), None):
            detail = f"removed in torch {removed} (deprecated since {since}): it raises on torch {ctx.version_text}"
        elif since and covers(ctx.version, ctx.version_text, str(since), str(removed) if removed else None):
            detail = f"deprecated since torch {since}" + (f", removed in {removed}" if removed else "")
        else:
            continue
        hit = Hit(use.node, {"name": use.name, "detail": detail, "advice": " ".join(str(entry.get("advice") or "").split())},
                  version_dependent=True)
        rename = entry.get("rename")
        if rename and use.ctx == "call" and use.rooted and isinstance(use.node, ast.Attribute):
            root = use.node
            while isinstance(root, ast.Attribute):
                root = root.value
            new_func = root.id + str(rename)[len(str(rename).split(".")[0]):]
            func_ast = fixcheck.expression(new_func)
            if func_ast is not None:
                call = use.value
                hit.edits = [Edit(use.node, new_func)]
                hit.expect = [(call, ast.Call(func=func_ast, args=call.args, keywords=call.keywords))]
                hit.fix_title = f"use {rename}"
        yield hit


def missing_keyword(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    """A call of ``params.function`` without ``params.keyword`` (and without ``**kwargs``, which
    may hold it) on a target torch in [``since``, ``until``): ``since``, the first release
    where the keyword exists and leaving it out matters; ``until``, the first release whose
    default no longer needs it (absent: every later release)."""
    p = rule.params
    if not covers(ctx.version, ctx.version_text, p.get("since"), p.get("until")):
        return
    functions = set(p.get("functions") or [p.get("function")])
    keyword = p["keyword"]
    position = p.get("position")
    for use in ctx.model.uses:
        if use.guarded or use.ctx != "call" or use.name not in functions:
            continue
        call = use.value
        if any(k.arg is None or k.arg == keyword for k in call.keywords):
            continue
        if any(isinstance(a, ast.Starred) for a in call.args):
            continue
        if isinstance(position, int) and len(call.args) > position:
            continue  # passed by position
        yield Hit(use.node, {"name": use.name, "detail": "", "advice": ""}, version_dependent=True)


def attribute_typo(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    """``x.require_grad = True``: an assignment to a misspelt attribute (``params.typos``: typo
    -> the real name) creates a new attribute and changes nothing. Unsafe fix: the rename (it
    changes what the line does - that is the point)."""
    typos = rule.params.get("typos") or {}
    lines = split_lines(ctx.source)
    for node in ctx.model.attr_stores:
        real = typos.get(node.attr)
        if not real:
            continue
        hit = Hit(node, {"name": node.attr, "detail": f"did you mean {real}?", "advice": ""})
        end_line, end = node.end_lineno, node.end_col_offset
        raw = lines[end_line - 1].encode("utf-8") if end_line and end_line <= len(lines) else b""
        start = end - len(node.attr.encode("utf-8")) if end is not None else -1
        if start >= 0 and raw[start:end].decode("utf-8", "replace") == node.attr:
            hit.edits = [Edit(None, str(real), (end_line, start), (end_line, end))]
            hit.expect = [(node, ast.Attribute(value=node.value, attr=str(real), ctx=node.ctx))]
            hit.safe = False
            hit.fix_title = f"rename to {real}"
        yield hit


def deprecated_keyword(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    """A call of a name under one of ``params.prefixes`` that passes one of ``params.keywords``
    (``torchvision.models.resnet50(pretrained=True)``), on a target torch from ``since`` (the
    torch release the deprecating library release was built for)."""
    p = rule.params
    if not covers(ctx.version, ctx.version_text, p.get("since"), p.get("until")):
        return
    prefixes = tuple(p.get("prefixes") or [])
    keywords = set(p.get("keywords") or [])
    for use in ctx.model.uses:
        if use.guarded or use.ctx != "call" or not use.name.startswith(prefixes):
            continue
        for k in use.value.keywords:
            if k.arg in keywords:
                yield Hit(k, {"name": use.name, "detail": k.arg, "advice": ""}, version_dependent=True)


MECHANISMS = {
    "deprecated-keyword": deprecated_keyword,
    "deprecated-function": deprecated_function,
    "missing-keyword": missing_keyword,
    "attribute-typo": attribute_typo,
}
