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


class _Replace(ast.NodeTransformer):
    def __init__(self, table: dict) -> None:
        self.table = table
        self.used: set = set()

    def visit(self, node: ast.AST) -> ast.AST:
        k = key(node)
        if k is not None and k in self.table:
            self.used.add(k)
            return self.table[k]
        return self.generic_visit(node)


def parse(source: str) -> Optional[ast.Module]:
    try:
        return ast.parse(source, filename=PARSE_NAME)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def expected(old_source: str, pairs: list) -> Optional[str]:
    """The dump of the module the fixes intend, or None when a pair names no node of it (or two
    pairs name one node)."""
    tree = parse(old_source)
    if tree is None or not pairs:
        return None
    table = {}
    for old, new in pairs:
        k = key(old)
        if k is None or k in table:
            return None
        table[k] = new
    replacer = _Replace(table)
    try:
        tree = replacer.visit(tree)
        if replacer.used != set(table):
            return None  # a node the fix meant is not where it said (or inside another one)
        return ast.dump(tree, include_attributes=False)
    except RecursionError:
        return None


def verify(old_source: str, new_source: str, pairs: list) -> bool:
    """``new_source`` is ``old_source`` with exactly the intended replacements."""
    want = expected(old_source, pairs)
    if want is None:
        return False
    tree = parse(new_source)
    if tree is None:
        return False
    try:
        return ast.dump(tree, include_attributes=False) == want
    except RecursionError:
        return False


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
