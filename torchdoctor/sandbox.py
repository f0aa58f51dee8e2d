"""Rule messages are jinja2 templates from files torchdoctor does not control (``--rules DIR``
takes a shared rule pack): they are rendered in a sandbox that can neither run code nor
exhaust the machine.

Three layers, each enough for what it covers:

1. **Load time** (:func:`check_message`, run when a rule loads, so ``rules test``, ``check``,
   ``recommend`` and ``report`` all refuse the same file the same way): the source is at most
   :data:`MAX_SOURCE` characters and parses; it uses only an allow-list of statements
   (``if``, ``for``, ``set``, ``with``; no macros, call/filter/set blocks, includes or
   recursive loops), only the names the engine provides, only the filters of
   :data:`FILTERS`, and no name, attribute or key starting with ``_`` (the way to
   ``__globals__``).
2. **The sandbox** (:class:`MessageEnvironment`, an ``ImmutableSandboxedEnvironment``): no
   jinja globals but a capped ``range`` and ``namespace``; only the engine's functions and an
   allow-list of methods (``str.split``, ``dict.get``, ...) may be called, never
   ``str.format`` or ``center``/``ljust``-style padding; lists, dicts and sets cannot be
   changed.
3. **Budgets at render time**: every operator that can grow a value (``*``, ``**``, ``%``,
   ``+``, ``~``, ``join``, ``replace``) is checked *before* it allocates, so no value exceeds
   :data:`MAX_VALUE` items; every value produced and every loop iteration is charged to a
   per-render budget (:data:`MAX_WORK`, :data:`MAX_ITERATIONS`, :data:`MAX_SECONDS`); the
   output is cut at :data:`MAX_OUTPUT` characters. ``('a' * 10**9) | length`` costs nothing.

A violation raises :class:`TemplateProblem` (or jinja's ``SecurityError``); the engine turns
both into a :class:`~torchdoctor.errors.RuleFileError` naming the rule file and line (exit 2).
jinja2 is imported only when a message is checked, or rendered without the plain-data form of its checked tree
that :mod:`torchdoctor.sandbox_ir` keeps in the rule cache (and interprets with these same budgets and rules).
"""

from __future__ import annotations

import contextvars
import functools
import sys
import time
from collections.abc import Iterator
from typing import Any, Collection, Iterable, Optional

MAX_SOURCE = 20_000
"""Characters of one message template (the longest shipped message has about 3,500)."""
MAX_VALUE = 8 * 1024 * 1024
"""Items (characters, list entries) of any one value a template builds: above the largest input
file (5 MiB), so a long fact can still be shown, far below what would hurt."""
MAX_INT_BITS = 8192
"""Bits of an integer a template builds (``2 ** 100000`` is refused before it is computed)."""
MAX_WORK = 64 * 1024 * 1024
"""Sum of the sizes of all values one render produces (a quadratic accumulation stops here)."""
MAX_ITERATIONS = 1_000_000
"""Loop iterations of one render, all loops together."""
MAX_SECONDS = 2.0
"""Wall-clock backstop for one render (shipped messages take well under a millisecond)."""
MAX_OUTPUT = 64 * 1024
"""Characters of a rendered message; longer output is cut (with '…'), not an error."""
MAX_FORMAT_WIDTH = 200
"""Largest width or precision in a ``'%10s' % x`` format."""

FILTERS = frozenset({
    "abs", "attr", "capitalize", "count", "d", "default", "dictsort", "first", "float",
    "groupby", "int", "items", "join", "last", "length", "list", "lower", "map", "max", "min",
    "reject", "rejectattr", "replace", "reverse", "round", "select", "selectattr", "sort",
    "string", "sum", "title", "trim", "truncate", "unique", "upper", "wordcount",
})
"""Filters a message may use: none pads, repeats or formats to a caller-chosen width."""

ALLOWED_NODES = frozenset({
    "Template", "Output", "TemplateData", "If", "For", "Assign", "With", "Name", "NSRef",
    "Const", "Getattr", "Getitem", "Slice", "Call", "Keyword", "Filter", "Test", "CondExpr",
    "And", "Or", "Not", "Neg", "Pos", "Compare", "Operand", "Add", "Sub", "Mul", "Div",
    "FloorDiv", "Mod", "Pow", "Concat", "Tuple", "List", "Dict", "Pair",
})
"""jinja2 AST nodes a message may contain (no Macro, CallBlock, FilterBlock, AssignBlock,
Include, Import, Extends, Block, autoescape blocks)."""

STATEMENT_NAMES = {
    "Macro": "{% macro %}", "CallBlock": "{% call %}", "FilterBlock": "{% filter %}",
    "AssignBlock": "{% set %}...{% endset %}", "Include": "{% include %}",
    "Import": "{% import %}", "FromImport": "{% from ... import %}", "Extends": "{% extends %}",
    "Block": "{% block %}", "ScopedEvalContextModifier": "{% autoescape %}",
}

STR_METHODS = frozenset({
    "split", "rsplit", "splitlines", "startswith", "endswith", "lower", "upper", "strip",
    "lstrip", "rstrip", "title", "capitalize", "casefold", "find", "rfind", "count", "isdigit",
    "isalpha", "isalnum", "isspace", "isdecimal", "isnumeric", "isupper", "islower",
    "partition", "rpartition", "removeprefix", "removesuffix", "replace",
})
MAP_METHODS = frozenset({"get", "keys", "values", "items"})
SEQ_METHODS = frozenset({"index", "count"})
LOOP_METHODS = frozenset({"cycle", "changed"})

_METHODS: dict[type, frozenset] = {str: STR_METHODS, dict: MAP_METHODS, list: SEQ_METHODS,
                                   tuple: SEQ_METHODS}


def allow_methods(cls: type, names: Iterable[str]) -> None:
    """Let messages call these methods on instances of ``cls`` (the engine's fact views)."""
    _METHODS[cls] = frozenset(names) | _METHODS.get(cls, frozenset())


class TemplateProblem(Exception):
    """A message template does something a rule message may not (load or render time)."""


class _Budget:
    __slots__ = ("work", "iterations", "deadline", "allowed")

    def __init__(self, allowed: set[int]):
        self.work = 0
        self.iterations = 0
        self.deadline = time.monotonic() + MAX_SECONDS
        self.allowed = allowed

    def charge(self, units: int) -> None:
        self.work += units
        if self.work > MAX_WORK:
            raise TemplateProblem(f"the message builds more than {MAX_WORK} items of values in all")
        if time.monotonic() > self.deadline:
            raise TemplateProblem(f"rendering the message took more than {MAX_SECONDS:g} s")

    def step(self) -> None:
        self.iterations += 1
        if self.iterations > MAX_ITERATIONS:
            raise TemplateProblem(f"the message runs more than {MAX_ITERATIONS} loop iterations")
        self.charge(1)


_BUDGET: contextvars.ContextVar[Optional[_Budget]] = contextvars.ContextVar("td_budget", default=None)


def _budget() -> _Budget:
    budget = _BUDGET.get()
    if budget is None:  # a template rendered outside render(): give it a budget of its own
        budget = _Budget(set())
        _BUDGET.set(budget)
    return budget


def _size(value: Any) -> int:
    try:
        return len(value) if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)) else 0
    except TypeError:
        return 0


def _too_big(what: str, n: int) -> TemplateProblem:
    return TemplateProblem(f"{what} would make a value of {n} items (at most {MAX_VALUE})")


def _out(value: Any) -> Any:
    """Check and charge a value the template produced; iterators are charged as consumed."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_INT_BITS:
            raise TemplateProblem(f"an integer of {value.bit_length()} bits (at most {MAX_INT_BITS})")
        _budget().charge(1)
        return value
    n = _size(value)
    if n > MAX_VALUE:
        raise _too_big("an operation", n)
    _budget().charge(1 + n)
    if isinstance(value, Iterator):
        return _counted(value)
    return value


def _counted(items: Iterable) -> Iterator:
    budget = _budget()
    count = 0
    for item in items:
        count += 1
        if count > MAX_VALUE:
            raise _too_big("a sequence", count)
        budget.step()
        yield item


def _materialize(items: Any) -> list:
    if isinstance(items, (list, tuple)):
        return list(items)
    if isinstance(items, str):
        return list(items)
    return list(_counted(items))


# ----------------------------------------------------------------------------------------
# checked operators and filters
# ----------------------------------------------------------------------------------------

def _check_percent(fmt: str) -> None:
    """Refuse a ``%`` format with a width or precision above MAX_FORMAT_WIDTH (or ``*``): one
    linear pass that reads specifiers as Python's ``%`` operator does."""
    i, n = 0, len(fmt)
    while True:
        i = fmt.find("%", i)
        if i < 0:
            return
        i += 1
        if i < n and fmt[i] == "(":
            depth, i = 1, i + 1
            while i < n and depth:
                depth += {"(": 1, ")": -1}.get(fmt[i], 0)
                i += 1
        while i < n and fmt[i] in "#0- +":
            i += 1
        for precision in (False, True):
            if precision:
                if i < n and fmt[i] == ".":
                    i += 1
                else:
                    break
            if i < n and fmt[i] == "*":
                raise TemplateProblem("a '%' format with a '*' width or precision")
            j = i
            while j < n and "0" <= fmt[j] <= "9":
                j += 1
            if j - i > 4 or (j > i and int(fmt[i:j]) > MAX_FORMAT_WIDTH):
                raise TemplateProblem(f"a '%' format width or precision above {MAX_FORMAT_WIDTH}")
            i = j
        i += 1  # the conversion character (or the second '%' of '%%')


def _check_binop(op: str, left: Any, right: Any) -> None:
    def is_int(x: Any) -> bool:
        return isinstance(x, int)

    if op == "*":
        if is_int(left) and is_int(right):
            if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise TemplateProblem(f"a product of more than {MAX_INT_BITS} bits")
            return
        for seq, n in ((left, right), (right, left)):
            if is_int(n) and isinstance(seq, (str, bytes, list, tuple)):
                if n > 0 and len(seq) * n > MAX_VALUE:
                    raise _too_big("repeating a sequence", len(seq) * n)
    elif op == "**":
        if is_int(left) and is_int(right) and right > 0 and abs(left) > 1:
            if left.bit_length() * right > MAX_INT_BITS:
                raise TemplateProblem(f"a power of more than {MAX_INT_BITS} bits")
    elif op == "+":
        if isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
            if len(left) + len(right) > MAX_VALUE:
                raise _too_big("'+'", len(left) + len(right))
    elif op == "%" and isinstance(left, str):
        _check_percent(left)


def _replace_size(s: str, old: Any, new: Any, count: Any = -1) -> int:
    if not (isinstance(old, str) and isinstance(new, str)):
        return len(s)
    hits = s.count(old) if old else len(s) + 1
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    return len(s) + hits * (len(new) - len(old))


def _join(value: Any, d: Any = "", attribute: Any = None, *, env: Any = None) -> str:
    items = _materialize(value)
    if attribute is not None:
        from jinja2.filters import make_attrgetter

        getter = make_attrgetter(env, attribute)
        items = [getter(x) for x in items]
    return _bounded_join(str(d), items, "join")


def _wrap_filter(name: str, func: Any, env: Any) -> Any:
    if name == "join":
        from jinja2.utils import pass_eval_context

        @pass_eval_context
        def join(eval_ctx: Any, value: Any, d: Any = "", attribute: Any = None) -> str:
            return _join(value, d, attribute, env=env)

        return join

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        # a pass_* filter gets the context/eval context/environment first: find the value
        pass_arg = getattr(func, "jinja_pass_arg", None)
        rest = args[1:] if pass_arg is not None else args
        if name == "replace" and rest and isinstance(rest[0], str) and len(rest) >= 3:
            size = _replace_size(*rest[:4])
            if size > MAX_VALUE:
                raise _too_big("replace", size)
        if name == "sum":
            start = kwargs.get("start", rest[2] if len(rest) > 2 else 0)
            if not isinstance(start, (int, float)):
                raise TemplateProblem("sum() adds numbers only")
        return _out(func(*args, **kwargs))

    return wrapper


# ----------------------------------------------------------------------------------------
# the environment
# ----------------------------------------------------------------------------------------


def _environment_class() -> type:
    from jinja2.runtime import LoopContext, Undefined
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

    _METHODS.setdefault(LoopContext, LOOP_METHODS)

    class MessageEnvironment(ImmutableSandboxedEnvironment):
        """The sandbox every rule message is rendered in (see the module docstring)."""

        intercepted_binops = frozenset({"*", "**", "%", "+"})

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            _check_binop(operator, left, right)
            return _out(self.binop_table[operator](left, right))

        def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
            budget = _budget()
            if isinstance(__obj, Undefined):
                return __obj()  # raises the reason it is undefined (e.g. an unsafe attribute)
            if not callable(__obj):  # e.g. a method of an unknown fact: as Python would say
                raise TypeError(f"{type(__obj).__name__!r} object is not callable")
            if id(__obj) not in budget.allowed:
                owner = getattr(__obj, "__self__", None)
                name = getattr(__obj, "__name__", "")
                allowed = next((names for cls, names in _METHODS.items() if isinstance(owner, cls)), ())
                if owner is None or name not in allowed:
                    what = name or type(__obj).__name__
                    raise SecurityError(f"a rule message may not call {what!r}")
                if name == "replace" and isinstance(owner, str) and len(args) >= 2:
                    size = _replace_size(owner, *args[:3])
                    if size > MAX_VALUE:
                        raise _too_big("replace", size)
            if __obj is sum and len(args) > 1 and not isinstance(args[1], (int, float)):
                raise TemplateProblem("sum() adds numbers only")
            return _out(__context.call(__obj, *args, **kwargs))

    return MessageEnvironment


def _range(*args: Any) -> range:
    from jinja2.sandbox import safe_range

    return safe_range(*args)


def _iter_filter(value: Any) -> Iterator:
    return _counted(value)


def _concat_filter(parts: list) -> str:
    return _bounded_join("", parts, "'~'")


def _bounded_join(sep: str, items: Iterable, what: str) -> str:
    """``sep.join(str(x) for x in items)``, refused before the result passes MAX_VALUE."""
    items = list(items)
    total = len(sep) * max(len(items) - 1, 0)
    if total > MAX_VALUE:
        raise _too_big(what, total)
    texts = []
    for item in items:
        text = str(item)
        total += len(text)
        if total > MAX_VALUE:
            raise _too_big(what, total)
        texts.append(text)
    return _out(sep.join(texts))


@functools.lru_cache(maxsize=1)
def environment() -> Any:
    """The one sandboxed environment for rule messages (built on first use)."""
    import jinja2
    from jinja2.utils import Namespace

    env = _environment_class()(undefined=jinja2.StrictUndefined, autoescape=False)
    env.globals.clear()
    env.globals.update(range=_range, namespace=Namespace)
    filters = {name: _wrap_filter(name, env.filters[name], env) for name in FILTERS}
    filters.update(_td_iter=_iter_filter, _td_concat=_concat_filter, _td_out=_out)
    env.filters = filters
    return env


def global_names() -> frozenset:
    return frozenset({"range", "namespace"})


# ----------------------------------------------------------------------------------------
# load-time check and render
# ----------------------------------------------------------------------------------------


def check_message(source: str, names: Collection[str]) -> Any:
    """Raise :class:`TemplateProblem` if ``source`` is not an acceptable rule message;
    ``names`` are the names the engine passes to messages (facts namespaces, functions).
    Returns the parsed jinja2 tree (and records its plain-data form for :mod:`torchdoctor.sandbox_ir`)."""
    tree = _parse_checked(source, frozenset(names))
    from torchdoctor import sandbox_ir

    sandbox_ir.remember(source, tree)
    return tree


def _parse_checked(source: str, names: frozenset) -> Any:
    from jinja2 import TemplateSyntaxError, nodes

    if not isinstance(source, str):
        raise TemplateProblem("the message must be text")
    if len(source) > MAX_SOURCE:
        raise TemplateProblem(f"the message template is longer than {MAX_SOURCE} characters")
    env = environment()
    try:
        tree = env.parse(source)
    except TemplateSyntaxError as exc:
        raise TemplateProblem(f"template line {exc.lineno}: {exc.message}") from None
    except RecursionError:
        raise TemplateProblem("the message template is nested too deeply") from None
    stack = [tree]
    while stack:
        node = stack.pop()
        kind = type(node).__name__
        line = getattr(node, "lineno", 1)
        if kind not in ALLOWED_NODES:
            what = STATEMENT_NAMES.get(kind, kind)
            raise TemplateProblem(f"template line {line}: {what} is not allowed in a rule message")
        if isinstance(node, nodes.Getattr) and node.attr.startswith("_"):
            raise TemplateProblem(f"template line {line}: attribute '{node.attr}' is private")
        if (isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const)
                and isinstance(node.arg.value, str) and node.arg.value.startswith("_")):
            raise TemplateProblem(f"template line {line}: key '{node.arg.value[:40]}' is private")
        if isinstance(node, nodes.Name) and node.name.startswith("_"):
            raise TemplateProblem(f"template line {line}: name '{node.name[:40]}' is private")
        if isinstance(node, nodes.Filter) and node.name not in FILTERS:
            raise TemplateProblem(f"template line {line}: filter '{node.name[:40]}' is not allowed "
                                  f"in a rule message (allowed: {', '.join(sorted(FILTERS))})")
        if isinstance(node, nodes.Test) and node.name not in env.tests:
            raise TemplateProblem(f"template line {line}: no test named '{node.name[:40]}'")
        if isinstance(node, nodes.For) and node.recursive:
            raise TemplateProblem(f"template line {line}: recursive loops are not allowed")
        stack.extend(node.iter_child_nodes())
    # the names read, less those the template assigns (anywhere: a name read before its
    # assignment is at worst undefined at run time, which is not a security matter) and the
    # loop variable; cheaper than jinja2.meta, which runs the code generator
    read = {n.name for n in tree.find_all(nodes.Name) if n.ctx == "load"}
    assigned = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    unknown = read - names - global_names() - assigned - {"loop"}
    if unknown:
        first = sorted(unknown)[0]
        raise TemplateProblem(f"unknown name '{first[:40]}' (messages see the fact namespaces, "
                              "workload and the functions of conditions)")
    return tree


def _rewrite(tree: Any) -> Any:
    """Route loops, '~' and slices through the budget filters."""
    from jinja2 import nodes
    from jinja2.visitor import NodeTransformer

    def hook(node: Any, name: str) -> Any:
        return nodes.Filter(node, name, [], [], None, None, lineno=node.lineno)

    class Rewrite(NodeTransformer):
        def visit_For(self, node: Any) -> Any:
            node = self.generic_visit(node)
            node.iter = hook(node.iter, "_td_iter")
            return node

        def visit_Concat(self, node: Any) -> Any:
            node = self.generic_visit(node)
            return hook(nodes.List(node.nodes, lineno=node.lineno), "_td_concat")

        def visit_Getitem(self, node: Any) -> Any:
            node = self.generic_visit(node)
            return hook(node, "_td_out") if isinstance(node.arg, nodes.Slice) else node

    return Rewrite().visit(tree)


@functools.lru_cache(maxsize=512)
def _compiled(source: str, names: frozenset) -> Any:
    env = environment()
    return env.from_string(_rewrite(_parse_checked(source, names)))


def render(source: str, context: dict, functions: dict) -> str:
    """Render a message in the sandbox. ``context`` holds every name the message may read;
    ``functions`` (a subset of it) are the only plain callables it may call."""
    from torchdoctor import sandbox_ir

    ir = sandbox_ir.lookup(source)
    if ir is not None:  # a checked message, rendered without jinja2 where that is sure to give jinja2's text
        allowed = {id(f) for f in functions.values()}
        token = _BUDGET.set(_Budget(allowed))
        try:
            return sandbox_ir.render(ir, context, allowed, sys.modules[__name__])
        except sandbox_ir.Fallback:
            pass
        finally:
            _BUDGET.reset(token)
    template = _compiled(source, frozenset(context))
    allowed = {id(f) for f in functions.values()} | {id(_range), id(_namespace_class())}
    token = _BUDGET.set(_Budget(allowed))
    try:
        parts: list[str] = []
        total = 0
        pieces = template.generate(**context)
        try:
            for piece in pieces:
                total += len(piece)
                if total > MAX_OUTPUT:
                    parts.append(piece[: MAX_OUTPUT - (total - len(piece))] + "…")
                    break
                parts.append(piece)
        finally:
            pieces.close()
        return "".join(parts)
    finally:
        _BUDGET.reset(token)


def _namespace_class() -> type:
    from jinja2.utils import Namespace

    return Namespace


def security_error() -> type:
    """jinja's SecurityError class (for callers that catch it without importing jinja2)."""
    from jinja2.sandbox import SecurityError

    return SecurityError
