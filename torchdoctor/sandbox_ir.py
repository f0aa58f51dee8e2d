"""Rule messages rendered without importing jinja2, when that is sure to give jinja2's own text.

Importing jinja2 and compiling a template cost about 30 ms, more than half of a whole ``torchdoctor triage`` of an
issue whose finding has a templated message. So: when the sandbox checks a message (:func:`torchdoctor.sandbox.
check_message`, on every parse of the rule files), the checked jinja2 tree is also written as plain data (:func:`
to_ir`: lists, strings, numbers; never code) into the rule cache's :data:`ENTRY`, keyed by the message's SHA-256. A
later run renders such a message with :func:`render` here, which interprets that data with the sandbox's own rules:
the same budgets (``sandbox._out``, ``_counted``, ``_bounded_join``, ``_check_binop``), calls only of the engine's
functions and the allowed methods, no attribute that starts with ``_``, and jinja2's semantics for what shipped
messages use (attribute-then-item lookup, ``set`` scoped to a loop iteration, ``loop.first``/``last``/``index``,
chained comparisons, the ``length``/``join``/``int``/``round``/``max``/``map('replace')`` filters, the
``string``/``none``/``number``/``iterable`` tests).

Anything else, and anything at all that goes wrong (an undefined name, a refused call, an exception from a fact
view, a node or filter this module does not know), is :class:`Fallback`: the message is then rendered by jinja2
as before, which also words every error. So this module only ever produces the text jinja2 would produce for a
render that succeeds; tests/test_sandbox_ir.py holds it to that on every example of every shipped rule.
"""

from __future__ import annotations

import math
import numbers
import os
import types
from typing import Any, Optional

ENTRY = "message-ir.json"
FORMAT = 1
MAX_DEPTH = 200
"""Nesting of a message's tree this module interprets (deeper: jinja2 renders it)."""


class Fallback(Exception):
    """This render is left to jinja2."""


# ------------------------------------------------------------------------------------------------------------
# jinja2 tree -> plain data (at check time, jinja2 loaded)
# ------------------------------------------------------------------------------------------------------------

_OPS = {"eq": "==", "ne": "!=", "gt": ">", "gteq": ">=", "lt": "<", "lteq": "<=", "in": "in", "notin": "not in"}
_BINOPS = {"Add": "+", "Sub": "-", "Mul": "*", "Div": "/", "FloorDiv": "//", "Mod": "%", "Pow": "**"}
_FILTERS = {"length", "join", "int", "round", "max", "map"}
_TESTS = {"string", "none", "number", "iterable"}


class _Unsupported(Exception):
    pass


def to_ir(tree: Any) -> Optional[list]:
    """The checked jinja2 tree of a message as plain data, or None where it holds what this module does not
    interpret (jinja2 renders it then)."""
    try:
        return _stmts(tree.body, 0)
    except (_Unsupported, RecursionError):
        return None


def _stmts(body: list, depth: int) -> list:
    return [_stmt(n, depth + 1) for n in body]


def _stmt(node: Any, depth: int) -> list:
    if depth > MAX_DEPTH:
        raise _Unsupported()
    kind = type(node).__name__
    if kind == "Output":
        return ["out", [["text", n.data] if type(n).__name__ == "TemplateData" else _expr(n, depth + 1)
                        for n in node.nodes]]
    if kind == "If":
        branches = [[_expr(node.test, depth + 1), _stmts(node.body, depth)]]
        branches += [[_expr(e.test, depth + 1), _stmts(e.body, depth)] for e in node.elif_]
        return ["if", branches, _stmts(node.else_, depth)]
    if kind == "Assign":
        return ["set", _target(node.target), _expr(node.node, depth + 1)]
    if kind == "For":
        if node.recursive or node.else_:
            raise _Unsupported()
        test = _expr(node.test, depth + 1) if node.test is not None else None
        return ["for", _target(node.target), _expr(node.iter, depth + 1), test, _stmts(node.body, depth)]
    raise _Unsupported()


def _target(node: Any) -> list:
    kind = type(node).__name__
    if kind == "Name" and not node.name.startswith("_") and node.name != "loop":
        return ["name", node.name]
    if kind == "NSRef" and not node.attr.startswith("_"):
        return ["ns", node.name, node.attr]
    if kind == "Tuple":
        return ["tuple", [_target(n) for n in node.items]]
    raise _Unsupported()


def _expr(node: Any, depth: int) -> list:
    if depth > MAX_DEPTH:
        raise _Unsupported()
    kind = type(node).__name__
    sub = depth + 1
    if kind == "Const":
        if not isinstance(node.value, (str, int, float, bool, type(None))):
            raise _Unsupported()
        return ["const", node.value]
    if kind == "Name":
        return ["name", node.name]
    if kind == "Getattr":
        return ["attr", _expr(node.node, sub), node.attr]
    if kind == "Getitem":
        if type(node.arg).__name__ == "Slice":
            s = node.arg
            parts = [_expr(p, sub) if p is not None else None for p in (s.start, s.stop, s.step)]
            return ["slice", _expr(node.node, sub), parts]
        return ["item", _expr(node.node, sub), _expr(node.arg, sub)]
    if kind == "Call":
        if node.dyn_args is not None or node.dyn_kwargs is not None:
            raise _Unsupported()
        return ["call", _expr(node.node, sub), [_expr(a, sub) for a in node.args],
                [[k.key, _expr(k.value, sub)] for k in node.kwargs]]
    if kind == "Filter":
        if node.name not in _FILTERS or node.dyn_args is not None or node.dyn_kwargs is not None or node.kwargs:
            raise _Unsupported()
        return ["filter", node.name, _expr(node.node, sub), [_expr(a, sub) for a in node.args]]
    if kind == "Test":
        if node.name not in _TESTS or node.args or node.kwargs or node.dyn_args or node.dyn_kwargs:
            raise _Unsupported()
        return ["test", node.name, _expr(node.node, sub)]
    if kind == "Compare":
        return ["compare", _expr(node.expr, sub), [[_OPS[o.op], _expr(o.expr, sub)] for o in node.ops]]
    if kind in ("And", "Or"):
        return [kind.lower(), _expr(node.left, sub), _expr(node.right, sub)]
    if kind == "Not":
        return ["not", _expr(node.node, sub)]
    if kind == "Neg":
        return ["neg", _expr(node.node, sub)]
    if kind in _BINOPS:
        return ["binop", _BINOPS[kind], _expr(node.left, sub), _expr(node.right, sub)]
    if kind == "CondExpr":
        return ["cond", _expr(node.test, sub), _expr(node.expr1, sub),
                _expr(node.expr2, sub) if node.expr2 is not None else None]
    if kind == "Concat":
        return ["concat", [_expr(n, sub) for n in node.nodes]]
    if kind in ("List", "Tuple"):
        return [kind.lower(), [_expr(n, sub) for n in node.items]]
    raise _Unsupported()


# ------------------------------------------------------------------------------------------------------------
# the cache entry
# ------------------------------------------------------------------------------------------------------------

_TABLE: dict = {"loaded": False, "ir": {}, "new": {}}


def _key() -> str:
    from torchdoctor import rulecache

    return rulecache.make_key([("message-ir", str(FORMAT).encode())])


def digest(source: str) -> str:
    from torchdoctor.rulecache import sha256

    return sha256(source.encode("utf-8", "surrogatepass")).hexdigest()


def remember(source: str, tree: Any) -> None:
    """Record the plain-data form of a message just checked (stored with :func:`store`)."""
    ir = to_ir(tree)
    if ir is not None:
        _TABLE["new"][digest(source)] = ir


def store() -> None:
    """Write the recorded messages into the cache entry (with what it already held)."""
    if not _TABLE["new"]:
        return
    from torchdoctor import rulecache

    _load()
    merged = {**_TABLE["ir"], **_TABLE["new"]}
    if len(merged) > 4096:  # bounded: the shipped rules have ~140 messages
        merged = dict(list(_TABLE["new"].items())[:4096])
    if rulecache.store(ENTRY, _key(), merged):
        _TABLE["ir"] = merged
        _TABLE["new"] = {}


def _load() -> dict:
    if not _TABLE["loaded"]:
        from torchdoctor import rulecache

        data = rulecache.load(ENTRY, _key())
        _TABLE["ir"] = data if isinstance(data, dict) else {}
        _TABLE["loaded"] = True
    return _TABLE["ir"]


def enabled() -> bool:
    """``TORCHDOCTOR_MESSAGE_IR=0`` renders every message with jinja2 (to compare, or to rule this module out)."""
    return os.environ.get("TORCHDOCTOR_MESSAGE_IR", "").strip() != "0"


def lookup(source: str) -> Optional[list]:
    if not enabled():
        return None
    ir = _TABLE["new"].get(digest(source)) if _TABLE["new"] else None
    return ir if ir is not None else _load().get(digest(source))


# ------------------------------------------------------------------------------------------------------------
# interpreting it (no jinja2)
# ------------------------------------------------------------------------------------------------------------

class _Namespace:
    """``namespace(...)``: what jinja2.utils.Namespace is to a message (attributes set by ``{% set ns.x %}``)."""

    def __init__(self, **kwargs: Any):
        self.__attrs = dict(kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self.__attrs[name]
        except KeyError:
            raise AttributeError(name) from None

    def set(self, name: str, value: Any) -> None:
        self.__attrs[name] = value


class _Loop:
    __slots__ = ("index0", "length")

    def __init__(self, index0: int, length: int):
        self.index0, self.length = index0, length


_LOOP_ATTRS = {"index": lambda lp: lp.index0 + 1, "index0": lambda lp: lp.index0,
               "first": lambda lp: lp.index0 == 0, "last": lambda lp: lp.index0 == lp.length - 1,
               "length": lambda lp: lp.length, "revindex": lambda lp: lp.length - lp.index0,
               "revindex0": lambda lp: lp.length - lp.index0 - 1}
_INTERNAL = (type, types.FunctionType, types.GeneratorType, types.CodeType, types.FrameType, types.TracebackType,
             types.ModuleType, types.CoroutineType, types.AsyncGeneratorType)
"""Objects whose attributes jinja2's sandbox treats as internal (and a few more): left to it."""
_MUTATING = {"append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "update", "setdefault",
             "popitem", "add", "discard", "difference_update", "intersection_update",
             "symmetric_difference_update"}


def _safe_range(*args: Any) -> range:
    rng = range(*args)
    if len(rng) > 100_000:  # jinja2.sandbox.MAX_RANGE
        raise Fallback()
    return rng


class _Render:
    def __init__(self, context: dict, allowed: set, sandbox: Any):
        self.sb = sandbox
        self.globals = {"range": _safe_range, "namespace": _Namespace}
        self.allowed = allowed | {id(_safe_range), id(_Namespace)}
        self.scopes = [dict(context)]
        self.out: list[str] = []

    # statements ---------------------------------------------------------------------------------------------
    def run(self, body: list) -> None:
        for stmt in body:
            kind = stmt[0]
            if kind == "out":
                for part in stmt[1]:
                    self.out.append(part[1] if part[0] == "text" else self.text(self.expr(part)))
            elif kind == "if":
                for test, branch in stmt[1]:
                    if self.truth(self.expr(test)):
                        self.run(branch)
                        break
                else:
                    self.run(stmt[2])
            elif kind == "set":
                self.assign(stmt[1], self.expr(stmt[2]))
            elif kind == "for":
                self.loop(stmt)
            else:
                raise Fallback()

    def loop(self, stmt: list) -> None:
        _, target, iterable, test, body = stmt
        seq = self.expr(iterable)
        if isinstance(seq, (_Undefined, bytes)):
            raise Fallback()
        items = list(self.sb._counted(iter(seq)))  # the sandbox's iteration budget (its '_td_iter')
        if test is not None:
            kept = []
            for item in items:
                self.scopes.append({})
                self.assign(target, item)
                ok = self.truth(self.expr(test))
                self.scopes.pop()
                if ok:
                    kept.append(item)
            items = kept
        for i, item in enumerate(items):
            self.scopes.append({"loop": _Loop(i, len(items))})
            self.assign(target, item)
            self.run(body)
            self.scopes.pop()

    def assign(self, target: list, value: Any) -> None:
        if target[0] == "name":
            self.scopes[-1][target[1]] = value
        elif target[0] == "ns":
            ns = self.lookup(target[1])
            if not isinstance(ns, _Namespace):
                raise Fallback()
            ns.set(target[2], value)
        elif target[0] == "tuple":
            values = list(value)
            if len(values) != len(target[1]):
                raise Fallback()
            for t, v in zip(target[1], values):
                self.assign(t, v)
        else:
            raise Fallback()

    # values -------------------------------------------------------------------------------------------------
    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        if name in self.globals:
            return self.globals[name]
        return _UNDEFINED

    @staticmethod
    def text(value: Any) -> str:
        if isinstance(value, (_Undefined, _Namespace, _Loop)):
            raise Fallback()
        return value if type(value) is str else str(value)

    @staticmethod
    def truth(value: Any) -> bool:
        if isinstance(value, _Undefined):
            raise Fallback()
        return bool(value)

    def expr(self, node: list) -> Any:
        kind = node[0]
        if kind == "const":
            return node[1]
        if kind == "name":
            return self.lookup(node[1])
        if kind == "attr":
            return self.getattr(self.expr(node[1]), node[2])
        if kind == "item":
            return self.getitem(self.expr(node[1]), self.expr(node[2]))
        if kind == "slice":
            obj = self.expr(node[1])
            parts = [self.expr(p) if p is not None else None for p in node[2]]
            return self.sb._out(self.getitem(obj, slice(*parts)))
        if kind == "call":
            return self.call(self.expr(node[1]), [self.expr(a) for a in node[2]],
                             {k: self.expr(v) for k, v in node[3]})
        if kind == "filter":
            return self.filter(node[1], self.expr(node[2]), [self.expr(a) for a in node[3]])
        if kind == "test":
            return self.test(node[1], self.expr(node[2]))
        if kind == "compare":
            return self.compare(node)
        if kind == "and":
            left = self.expr(node[1])
            return self.expr(node[2]) if self.truth(left) else left
        if kind == "or":
            left = self.expr(node[1])
            return left if self.truth(left) else self.expr(node[2])
        if kind == "not":
            return not self.truth(self.expr(node[1]))
        if kind == "neg":
            value = self.expr(node[1])
            self.defined(value)
            return -value
        if kind == "binop":
            return self.binop(node[1], self.expr(node[2]), self.expr(node[3]))
        if kind == "cond":
            if self.truth(self.expr(node[1])):
                return self.expr(node[2])
            return self.expr(node[3]) if node[3] is not None else _UNDEFINED
        if kind == "concat":
            parts = [self.text(self.expr(n)) for n in node[1]]
            return self.sb._concat_filter(parts)
        if kind == "list":
            return [self.expr(n) for n in node[1]]
        if kind == "tuple":
            return tuple(self.expr(n) for n in node[1])
        raise Fallback()

    @staticmethod
    def defined(*values: Any) -> None:
        if any(isinstance(v, _Undefined) for v in values):
            raise Fallback()

    def safe(self, obj: Any, attr: str, value: Any) -> Any:
        # ImmutableSandboxedEnvironment.is_safe_attribute: no private attribute, no internal one, nothing that
        # changes a list, dict or set; anything unusual is left to jinja2 (which words the refusal)
        if attr.startswith("_") or (attr in _MUTATING and isinstance(obj, (list, dict, set))):
            raise Fallback()
        if isinstance(obj, _INTERNAL) or isinstance(value, _INTERNAL[1:]):
            raise Fallback()
        return value

    def getattr(self, obj: Any, attr: str) -> Any:
        self.defined(obj)
        if isinstance(obj, _Loop):
            if attr not in _LOOP_ATTRS:
                raise Fallback()
            return _LOOP_ATTRS[attr](obj)
        try:
            value = getattr(obj, attr)
        except AttributeError:
            try:
                return obj[attr]
            except (TypeError, LookupError):
                return _UNDEFINED
        return self.safe(obj, attr, value)

    def getitem(self, obj: Any, key: Any) -> Any:
        self.defined(obj, key)
        try:
            return obj[key]
        except (TypeError, LookupError):
            if isinstance(key, str):
                try:
                    value = getattr(obj, key)
                except AttributeError:
                    pass
                else:
                    return self.safe(obj, key, value)
            return _UNDEFINED

    def call(self, func: Any, args: list, kwargs: dict) -> Any:
        self.defined(func, *args, *kwargs.values())
        if not callable(func):
            raise Fallback()
        if id(func) not in self.allowed:
            owner = getattr(func, "__self__", None)
            name = getattr(func, "__name__", "")
            methods = next((names for cls, names in self.sb._METHODS.items()
                            if isinstance(owner, cls)), ())
            if owner is None or name not in methods or name == "replace" or isinstance(owner, type):
                raise Fallback()
        if func is sum or (func is _Namespace and args):  # sum's checks and a positional namespace: jinja2's
            raise Fallback()
        return self.sb._out(func(*args, **kwargs))

    def compare(self, node: list) -> bool:
        left = self.expr(node[1])
        for op, right_node in node[2]:
            right = self.expr(right_node)
            self.defined(left, right)
            if op == "==":
                ok = left == right
            elif op == "!=":
                ok = left != right
            elif op == ">":
                ok = left > right
            elif op == ">=":
                ok = left >= right
            elif op == "<":
                ok = left < right
            elif op == "<=":
                ok = left <= right
            elif op == "in":
                ok = left in right
            elif op == "not in":
                ok = left not in right
            else:
                raise Fallback()
            if not ok:
                return ok
            left = right
        return ok

    def binop(self, op: str, left: Any, right: Any) -> Any:
        self.defined(left, right)
        if op in ("*", "**", "%", "+"):  # MessageEnvironment.intercepted_binops
            if op == "%":
                raise Fallback()  # a format: jinja2's sandbox checks and renders it
            self.sb._check_binop(op, left, right)
            value = left * right if op == "*" else left ** right if op == "**" else left + right
            return self.sb._out(value)
        if op == "-":
            return left - right
        if op == "/":
            return left / right
        if op == "//":
            return left // right
        raise Fallback()

    def test(self, name: str, value: Any) -> bool:
        if name == "none":
            return value is None
        if name == "string":
            return isinstance(value, str)
        if name == "number":
            return isinstance(value, numbers.Number)
        if name == "iterable":
            if isinstance(value, _Undefined):
                raise Fallback()
            try:
                iter(value)
            except TypeError:
                return False
            return True
        raise Fallback()

    def filter(self, name: str, value: Any, args: list) -> Any:
        self.defined(value, *args)
        sb = self.sb
        if name == "length":
            if args:
                raise Fallback()
            return sb._out(len(value))
        if name == "join":
            if len(args) > 1:
                raise Fallback()
            if isinstance(value, str):
                raise Fallback()
            return sb._join(value, args[0] if args else "")
        if name == "int":
            if args:
                raise Fallback()
            return sb._out(_jinja_int(value))
        if name == "round":
            return sb._out(_jinja_round(value, *args))
        if name == "max":
            if args:
                raise Fallback()
            return sb._out(_jinja_max(value))
        if name == "map":
            if len(args) != 3 or args[0] != "replace":
                raise Fallback()
            old, new = args[1], args[2]
            items = list(sb._counted(iter(value)))
            out = []
            for item in items:
                s = str(item)
                size = sb._replace_size(s, str(old), str(new))
                if size > sb.MAX_VALUE:
                    raise Fallback()
                out.append(sb._out(s.replace(str(old), str(new))))
            return sb._out(iter(out))
        raise Fallback()


def _jinja_int(value: Any) -> int:
    """jinja2.filters.do_int with its defaults (default=0, base=10)."""
    try:
        if isinstance(value, str):
            return int(value, 10)
        return int(value)
    except (TypeError, ValueError):
        try:
            return int(float(value))
        except (TypeError, ValueError):
            return 0


def _jinja_round(value: Any, precision: Any = 0, method: Any = "common") -> float:
    """jinja2.filters.do_round."""
    if method not in {"common", "ceil", "floor"}:
        raise Fallback()
    if method == "common":
        return round(value, precision)
    func = getattr(math, method)
    return func(value * (10**precision)) / (10**precision)


def _jinja_max(value: Any) -> Any:
    """jinja2.filters.do_max with its defaults (case-insensitive, no attribute)."""
    items = list(value)
    if not items:
        raise Fallback()  # jinja2 gives an undefined value here
    return max(items, key=lambda x: x.lower() if isinstance(x, str) else x)


class _Undefined:
    """An undefined value: any use of it is left to jinja2 (whose StrictUndefined raises, or tests it)."""

    __slots__ = ()

    def __bool__(self) -> bool:
        raise Fallback()

    def __str__(self) -> str:
        raise Fallback()

    def __iter__(self) -> Any:
        raise Fallback()

    def __len__(self) -> int:
        raise Fallback()

    def __eq__(self, other: Any) -> bool:
        raise Fallback()

    def __hash__(self) -> int:
        raise Fallback()


_UNDEFINED = _Undefined()


def render(ir: list, context: dict, allowed: set, sandbox: Any) -> str:
    """The message's text as jinja2 renders it, or :class:`Fallback` where that is not certain (longer than the
    sandbox's MAX_OUTPUT included). Called by ``sandbox.render`` inside its budget, with that module itself as
    ``sandbox`` (its budgets and checks; passed in, so that this module does not import it)."""
    state = _Render(context, allowed, sandbox)
    try:
        state.run(ir)
    except Fallback:
        raise
    except Exception:  # noqa: BLE001 - whatever it is, jinja2 renders it (and words it)
        raise Fallback() from None
    text = "".join(state.out)
    if len(text) > sandbox.MAX_OUTPUT:
        raise Fallback()
    return text
