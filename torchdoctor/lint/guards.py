"""What a version check in the code says about the target torch: ``True``/``False`` when the
test compares torch's version with a literal (``torch.__version__ >= "2.4"``,
``digit_version(TORCH_VERSION) < digit_version("1.10")``, ``version.parse(torch.__version__) >=
version.parse("2.0")``, ``_TORCH_GREATER_EQUAL_2_1``, ``is_torch_version(">=", "2.0")``,
``is_torch_greater_or_equal("2.4")``), ``None`` when it cannot tell (another library's version):
then both arms count as guarded.

:func:`decide` combines the parts of a test (``and``/``or``/``not``) where each part is True,
False, None (a version-like test it cannot decide) or :data:`NEUTRAL` (a part that is not about
the version at all: ``torch.cuda.is_available()``, ``hasattr(model, "x")``, an option)."""

from __future__ import annotations

import ast
import operator
import re
from typing import Any, Optional

from torchdoctor.lint.versions import parse

_OPS = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
        ast.Eq: operator.eq, ast.NotEq: operator.ne}
_STR_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
            "!=": operator.ne}
_FLAG = re.compile(r"(?i)(?:^|_)(?:torch)?_?(greater_equal|greater_or_equal(?:_than)?|ge|geq|at_least|"
                   r"less_than|lt|older_than|before)_?(\d+)_(\d+)(?:_(\d+))?$")
_WRAPPERS = {"parse", "Version", "LooseVersion", "StrictVersion", "digit_version", "parse_version", "str"}


def _torch_version_expr(node: ast.AST) -> bool:
    """torch.__version__, TORCH_VERSION, torch_version, or one of them wrapped in a parser."""
    if isinstance(node, ast.Call) and node.args and _name(node.func) in _WRAPPERS:
        return _torch_version_expr(node.args[0])
    if isinstance(node, ast.Attribute):
        if node.attr == "__version__" and _name(node.value) == "torch":
            return True
        if node.attr in ("release", "base_version", "public") :
            return _torch_version_expr(node.value)
    ident = _name(node)
    return bool(ident) and "torch" in ident.lower() and "version" in ident.lower()


def _literal(node: ast.AST) -> Optional[tuple]:
    if isinstance(node, ast.Call) and node.args and _name(node.func) in _WRAPPERS:
        return _literal(node.args[0])
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return parse(node.value)
    if isinstance(node, ast.Tuple) and node.elts and all(isinstance(e, ast.Constant) and isinstance(e.value, int)
                                                         for e in node.elts):
        return tuple(e.value for e in node.elts) + (0,) * (3 - len(node.elts))
    return None


def _name(node: Any) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


NEUTRAL = "neutral"
"""A part of a test that says nothing about the torch version."""


def decide(test: ast.AST, leaf: Any) -> Any:
    """What ``test`` says about the target torch: True (the body runs as far as the version
    goes), False (it does not), None (unknown) or NEUTRAL (the test is not about the version).
    ``leaf(node)`` answers for a part that is not ``and``/``or``/``not``. Under ``and`` a neutral
    part is left out (``is_available() and version >= 2.0`` holds, version-wise, on 2.13); under
    ``or`` a neutral part may make the body run on any version, so only a true version part
    decides it."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = decide(test.operand, leaf)
        return inner if inner is None or inner is NEUTRAL else not inner
    if isinstance(test, ast.BoolOp):
        values = [decide(v, leaf) for v in test.values]
        real = [v for v in values if v is not NEUTRAL]
        if not real:
            return NEUTRAL
        if isinstance(test.op, ast.And):
            if any(v is False for v in real):
                return False
            return True if all(v is True for v in real) else None
        if any(v is True for v in real):
            return True
        return False if len(real) == len(values) and all(v is False for v in real) else None
    return leaf(test)


def truth(test: ast.AST, version: tuple) -> Optional[bool]:
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = truth(test.operand, version)
        return None if inner is None else not inner
    if isinstance(test, ast.BoolOp):
        values = [truth(v, version) for v in test.values]
        if isinstance(test.op, ast.And):
            if any(v is False for v in values):
                return False
            return True if all(v is True for v in values) else None
        if any(v is True for v in values):
            return True
        return False if all(v is False for v in values) else None
    if isinstance(test, ast.Compare):
        items = [test.left] + list(test.comparators)
        result = True
        for (a, b), op in zip(zip(items, items[1:]), test.ops):
            fn = _OPS.get(type(op))
            if fn is None:
                return None
            if _torch_version_expr(a) and _literal(b) is not None:
                ok = fn(version, _literal(b))
            elif _torch_version_expr(b) and _literal(a) is not None:
                ok = fn(_literal(a), version)
            else:
                return None
            result = result and ok
        return result
    if isinstance(test, (ast.Name, ast.Attribute)):
        m = _FLAG.search(_name(test))
        if m:
            bound = (int(m.group(2)), int(m.group(3)), int(m.group(4) or 0))
            return version >= bound if m.group(1).lower() in ("greater_equal", "greater_or_equal",
                                                               "greater_or_equal_than", "ge", "geq",
                                                               "at_least") else version < bound
    if isinstance(test, ast.Call):
        fname = _name(test.func)
        strs = [a.value for a in test.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if fname == "is_torch_version" and len(strs) == 2 and strs[0] in _STR_OPS and parse(strs[1]):
            return _STR_OPS[strs[0]](version, parse(strs[1]))
        if "torch" in fname and ("greater_or_equal" in fname or "at_least" in fname) and len(strs) == 1 \
                and parse(strs[0]):
            return version >= parse(strs[0])
    return None
