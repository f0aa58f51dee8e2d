"""The proof a fix changed only what it meant to: the fixed module's AST must equal the original
module's AST with each rewritten node replaced by the node the fix intends (compared without
positions). "It still parses" is not enough: ``X = a, b`` -> ``X(a, b)`` parses and calls X with
two arguments instead of a tuple; this check refuses it, because the intended node is
``X((a, b))``.

A fix states its intention as pairs ``(old node, new node)``: the old node is a node of the
linted module (found again in a fresh parse by its type and exact span), the new node an AST
built from the old one's parts. A fix whose edits do not produce exactly that tree is not
applied."""

from __future__ import annotations

import ast
from typing import Optional

PARSE_NAME = "<lint>"
"""The file name given to the parser. Never a real path: on a SyntaxError CPython re-reads the
named file to show the line, which made a notebook of many broken cells quadratic."""


def key(node: ast.AST) -> Optional[tuple]:
    if getattr(node, "end_lineno", None) is None or not hasattr(node, "lineno"):
        return None
    return (type(node).__name__, node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


def parse(source: str) -> Optional[ast.Module]:
    try:
        return ast.parse(source, filename=PARSE_NAME)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def same(old: ast.AST, new: ast.AST, table: Optional[dict] = None, used: Optional[set] = None) -> bool:
    """``new`` is the tree ``old`` with each node whose key is in ``table`` replaced by its value
    (compared field by field, positions aside; iterative, so depth is no limit)."""
    table = table or {}
    stack = [(old, new, True)]
    while stack:
        a, b, may_replace = stack.pop()
        if may_replace and isinstance(a, ast.AST):
            k = key(a)
            if k is not None and k in table:
                if used is not None:
                    used.add(k)
                a, may_replace = table[k], False  # inside the intended node: no more replacing
        if isinstance(a, ast.AST):
            if type(a) is not type(b):
                return False
            for name in a._fields:
                stack.append((getattr(a, name, None), getattr(b, name, None), may_replace))
        elif isinstance(a, list):
            if not isinstance(b, list) or len(a) != len(b):
                return False
            stack.extend((x, y, may_replace) for x, y in zip(a, b))
        elif type(a) is not type(b) or a != b:
            return False
    return True


def verify(old_source: str, new_source: str, pairs: list, old_tree: Optional[ast.AST] = None) -> bool:
    """``new_source`` is ``old_source`` with exactly the intended replacements: every pair's old
    node is found (and none inside another's), and everything else is equal."""
    if not pairs:
        return False
    table = {}
    for old, new in pairs:
        k = key(old)
        if k is None or k in table:
            return False
        table[k] = new
    old_tree = old_tree if old_tree is not None else parse(old_source)
    new_tree = parse(new_source)
    if old_tree is None or new_tree is None:
        return False
    used: set = set()
    return same(old_tree, new_tree, table, used) and used == set(table)


def expression(text: str) -> Optional[ast.expr]:
    """``text`` parsed as one expression (the data's ``prepend``), else None."""
    try:
        return ast.parse(text, filename=PARSE_NAME, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def keyword(text: str) -> Optional[ast.keyword]:
    """``name=value`` parsed as one keyword argument (the data's ``append``), else None."""
    call = expression(f"f({text})")
    if isinstance(call, ast.Call) and not call.args and len(call.keywords) == 1 and call.keywords[0].arg:
        return call.keywords[0]
    return None


def load(node: ast.expr) -> ast.expr:
    """A copy of an attribute chain or name read instead of stored (``X = v`` -> ``X(v)``)."""
    if isinstance(node, ast.Attribute):
        return ast.Attribute(value=node.value, attr=node.attr, ctx=ast.Load())
    if isinstance(node, ast.Name):
        return ast.Name(id=node.id, ctx=ast.Load())
    return node
