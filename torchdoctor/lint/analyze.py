"""One pass over a module's AST: every use of a name rooted in ``torch`` (or ``os``), resolved
through imports and aliases per scope, with what the checks need to know about its place.

Resolution: ``import torch as th``, ``import torch.backends.cudnn as cudnn``, ``from
torch.backends import cudnn``, ``from torch.cuda.amp import autocast`` (also inside functions)
and plain aliases (``cudnn = torch.backends.cudnn``) bind names per scope (module, function,
lambda-free). A name is looked up in its function's scope, then the module's.

Guards (the checks for fake, replaced and deprecated names skip *guarded* uses; it is how real
code supports several torch versions). An ``if``/conditional expression is decided for the
target torch part by part (:func:`torchdoctor.lint.guards.decide`): a comparison of torch's
version with a literal, and ``hasattr``/``getattr`` of a torch name whose presence the knowledge
knows (``Knowledge.presence``), are True or False; a public torch name it does not know is assumed
present (code tests for names that newer torch added); a private one, or another version-like
name (``_TORCH_2``, ``has_sdpa``), is unknown; anything else (``torch.cuda.is_available()``,
``hasattr(model, "x")``) says nothing about the version. The arm that runs is linted, the other
is guarded; when the version part is unknown both are. In the body of a ``try`` that catches
AttributeError/ImportError (or broader) and under ``contextlib.suppress(AttributeError)``, only
uses of names that are not known to exist in the target are guarded (a deprecated name that
exists runs there); the handler is guarded. Bindings made in an arm that does not run on the
target are ignored.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from torchdoctor.lint.guards import NEUTRAL, decide, truth

ROOTS = ("torch", "os", "torchvision", "functorch")
GUARD_EXC = {"AttributeError", "ImportError", "ModuleNotFoundError", "Exception", "BaseException",
             "RuntimeError", "TypeError", "AssertionError"}
_VERSIONISH = re.compile(r"(?i)version|greater|less_than|older|newer|at_least|_ge_?\d|_lt_?\d|"
                         r"_gt_?\d|_le_?\d|torch_?\d|_\d+_\d+|is_torch_|"
                         r"torch_(ge|gt|lt|le)\b|^_?has_|_available_|^_?supports?_")
_PROBES = ("hasattr", "getattr")


@dataclass
class Use:
    name: str
    """Dotted name, e.g. torch.backends.cudnn.benchmark."""
    node: ast.AST
    ctx: str
    """load | store | call | import | del"""
    guarded: bool
    scope: int
    """0 for the module, else an id of the enclosing function."""
    order: int
    path: tuple
    """((id(if), arm), ...): the branches it sits in (for mutually exclusive uses)."""
    value: Optional[ast.AST] = None
    """store: the assigned value; call: the Call node."""
    rooted: bool = False
    """The expression is an Attribute chain on a name bound to the root module itself
    (``torch.x.y`` / ``th.x.y``), so it can be rewritten in place."""
    stmt: Optional[ast.AST] = None
    """store: the assignment statement (a fix of ``X = v`` must know whether ``X`` is its only
    target: ``a = X = v`` is a chained assignment)."""


@dataclass
class EnvSet:
    var: str
    node: ast.AST
    scope: int
    order: int
    path: tuple


@dataclass
class Model:
    uses: list = field(default_factory=list)
    env_sets: list = field(default_factory=list)
    imports: list = field(default_factory=list)
    """(top-level package, scope, order, path) of every absolute import (which of them import
    torch is the rules' knowledge: env-set-after-torch-reads-it's ``torch_importers``)."""
    strings: set = field(default_factory=set)
    """Every string constant of the module (cheap "is X mentioned anywhere")."""
    functions: set = field(default_factory=set)
    """Names bound by def/lambda/class anywhere (a value that is one of them is a shim)."""
    calls: list = field(default_factory=list)
    """(scope, order, name) of every call: the resolved dotted name, else the callee as written
    (``subprocess.run``, ``mp.spawn``)."""
    cuda_calls: list = field(default_factory=list)
    """(scope, order, path) of ``x.cuda()`` and ``x.to("cuda...")`` calls (they initialise CUDA)."""
    attr_stores: list = field(default_factory=list)
    """Every ``x.attr = ...`` target (any object), for attribute typos such as require_grad."""
    decorators: set = field(default_factory=set)
    """id() of every decorator expression (``@torch.cuda.amp.custom_fwd`` may be rewritten to a
    call; the same name as a value may not)."""


AMBIGUOUS = "<ambiguous>"


def _bind(out: dict, name: str, dotted: str) -> None:
    """A name bound to two different things in one scope (``try: from torch.amp import X``
    ``except ImportError: from torch.cuda.amp import X``) resolves to neither."""
    if name in out and out[name] != dotted and out[name] != "<param>":
        out[name] = AMBIGUOUS
    else:
        out[name] = dotted


def _imports_in(body: list, out: dict, resolve: Any, live: Any = None, value: Any = None,
                tests: Optional[dict] = None) -> None:
    """Bindings made by imports (and torch aliases) in ``body``, not in nested scopes; an arm of
    an ``if`` that ``live(test, out)`` says does not run on the target torch binds nothing.

    ``x = torch.a.b`` binds ``x`` to the torch name (an attribute alias) unless ``value(name)``
    says the name is a plain value (a flag such as ``cuda.matmul.allow_tf32``): then ``x`` holds
    a copy of the value, and using ``x`` later is not using the torch name. ``tests``, when a
    dict, collects ``NAME = <expression>`` (a name assigned once: the test it holds, for
    guards; assigned more than once: AMBIGUOUS)."""
    for node in body:
        if isinstance(node, ast.If) and live is not None:
            known = live(node.test, out)
            if known is not False:
                _imports_in(node.body, out, resolve, live, value, tests)
            if known is not True:
                _imports_in(node.orelse, out, resolve, live, value, tests)
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                root = a.name.split(".")[0]
                if a.asname:
                    _bind(out, a.asname, a.name)
                else:
                    _bind(out, root, root)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                for a in node.names:
                    if a.name != "*":
                        _bind(out, a.asname or a.name, f"{node.module}.{a.name}")
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            dotted = resolve(node.value, out)
            target = node.targets[0].id
            if tests is not None:
                tests[target] = node.value if target not in tests else AMBIGUOUS
            if dotted and not (value is not None and value(dotted)):
                _bind(out, target, dotted)
            elif target in out:
                out[target] = AMBIGUOUS
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        elif tests is not None and isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                for n in ast.walk(t):
                    if isinstance(n, ast.Name):
                        tests[n.id] = AMBIGUOUS
        for name in ("body", "orelse", "finalbody"):
            sub = getattr(node, name, None)
            if isinstance(sub, list) and sub and isinstance(sub[0], ast.stmt):
                _imports_in(sub, out, resolve, live, value, tests)
        for h in getattr(node, "handlers", None) or []:
            _imports_in(h.body, out, resolve, live, value, tests)
        for c in getattr(node, "cases", None) or []:
            _imports_in(c.body, out, resolve, live, value, tests)


def versionish(test: ast.AST, torch_probe: Any = None) -> bool:
    """The test mentions a version-like name, a version-like literal, or (``torch_probe(call)``)
    probes a torch name with hasattr/getattr."""
    for n in ast.walk(test):
        ident = None
        if torch_probe is not None and isinstance(n, ast.Call) and torch_probe(n) is not None:
            return True
        if isinstance(n, ast.Name):
            ident = n.id
        elif isinstance(n, ast.Attribute):
            ident = n.attr
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and re.match(r"^\d+\.\d+", n.value):
            return True
        if ident and _VERSIONISH.search(ident):
            return True
    return False


def _catches(handler: ast.ExceptHandler, body: list) -> bool:
    """The handler catches what a missing name or a failed probe raises. A missing function
    raises AttributeError, never AssertionError: ``except AssertionError`` is a guard only
    around an ``assert`` of the try body (``try: assert hasattr(torch, "x")``), not around a
    test's own ``torch.testing.assert_allclose`` (detr test_all.py)."""
    if handler.type is None:
        return True
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for t in types:
        name = t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", "")
        if name == "AssertionError":
            if any(isinstance(n, ast.Assert) for stmt in body for n in ast.walk(stmt)):
                return True
        elif name in GUARD_EXC:
            return True
    return False


class Analyzer(ast.NodeVisitor):
    def __init__(self, version: Optional[tuple] = None, presence: Any = None, value: Any = None) -> None:
        self.version = version
        self.presence = presence or (lambda dotted: None)
        self.value = value
        """value(dotted): the torch name is a plain value (a flag), not an object to alias."""
        self.tests: list = [{}]
        """Per scope (module first): NAME -> the expression assigned to it once (AMBIGUOUS when
        assigned more than once): ``SUPPORTS_FLASH_ATTENTION = torch.cuda.is_available() and
        ...`` is decided by what it holds."""
        self._deciding: set = set()
        self.model = Model()
        self.module_aliases: dict = {}
        self.scopes: list = []  # [(scope id, aliases)]
        self.guard = 0
        self.soft = 0
        """Inside a try body (or suppress block): names not known to exist are guarded."""
        self.path: tuple = ()
        self.order = 0
        self._seen_chain: set = set()

    # -- resolution --------------------------------------------------------------------
    def _lookup(self, name: str, local: Optional[dict] = None) -> Optional[str]:
        if local is not None and name in local:
            return local[name]
        if self.scopes and name in self.scopes[-1][1]:
            return self.scopes[-1][1][name]
        return self.module_aliases.get(name)

    def resolve(self, node: ast.AST, local: Optional[dict] = None) -> Optional[str]:
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self._lookup(node.id, local)
        if base is None or base.split(".")[0] not in ROOTS:
            return None
        return ".".join([base] + parts[::-1])

    def _rooted(self, node: ast.AST) -> bool:
        while isinstance(node, ast.Attribute):
            node = node.value
        return isinstance(node, ast.Name) and self._lookup(node.id) in ROOTS

    # -- bookkeeping -------------------------------------------------------------------
    def _scope(self) -> int:
        return self.scopes[-1][0] if self.scopes else 0

    def _tick(self) -> int:
        self.order += 1
        return self.order

    def _use(self, name: str, node: ast.AST, ctx: str, value: Optional[ast.AST] = None,
             stmt: Optional[ast.AST] = None) -> None:
        guarded = self.guard > 0 or (self.soft > 0 and self.presence(name) is not True)
        self.model.uses.append(Use(name, node, ctx, guarded, self._scope(), self._tick(),
                                   self.path, value, self._rooted(node), stmt))

    # -- scopes ------------------------------------------------------------------------
    def visit_Module(self, node: ast.Module) -> None:
        _imports_in(node.body, self.module_aliases, lambda v, out: self.resolve(v, out), self._decide,
                    self.value, self.tests[0])
        self.generic_visit(node)

    def _function(self, node: Any) -> None:
        self.model.functions.add(node.name)
        for d in node.decorator_list:
            self.model.decorators.add(id(d))
            self.visit(d)
        self.visit(node.args)
        if getattr(node, "returns", None):
            self.visit(node.returns)
        local: dict = {}
        outer = dict(self.scopes[-1][1]) if self.scopes else {}
        local.update(outer)
        params = [a.arg for a in node.args.args + node.args.kwonlyargs + getattr(node.args, "posonlyargs", [])]
        for p in params:  # a parameter named like a module shadows it
            local[p] = "<param>"
        self.scopes.append((id(node), local))
        fresh: dict = {}
        tests: dict = {p: AMBIGUOUS for p in params}
        _imports_in(node.body, fresh, lambda v, out: self.resolve(v, out),
                    lambda test, out: self._decide(test, {**local, **out}), self.value, tests)
        local.update(fresh)  # the function's own imports shadow the enclosing ones
        self.tests.append(tests)
        saved_path = self.path
        for stmt in node.body:
            self.visit(stmt)
        self.path = saved_path
        self.tests.pop()
        self.scopes.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.model.functions.add(node.name)
        self.generic_visit(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.generic_visit(node)

    # -- guards ------------------------------------------------------------------------
    def _probe(self, node: ast.AST, local: Optional[dict] = None) -> Optional[str]:
        """``hasattr(X, "y")`` / ``getattr(X, "y"...)`` with X a torch name: "X.y"; with a
        computed attribute name: "X." (unknown); else None."""
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _PROBES
                and len(node.args) >= 2):
            return None
        obj = self.resolve(node.args[0], local)
        if obj is None or not (obj == "torch" or obj.startswith("torch.")):
            return None
        attr = node.args[1].value if isinstance(node.args[1], ast.Constant) else None
        return f"{obj}.{attr}" if isinstance(attr, str) else f"{obj}."

    def _leaf(self, node: ast.AST, local: Optional[dict] = None) -> Any:
        probed = self._probe(node, local)
        if probed is not None and probed.endswith("."):
            return None
        if probed is not None:
            present = self.presence(probed)
            if present is None and not any(p.startswith("_") for p in probed.split(".")):
                return True  # a public name the knowledge does not list: the newer-torch path
            return present
        known = truth(node, self.version) if self.version else None
        if known is not None:
            return known
        held = self._held_test(node)
        if held is not None:
            return held
        return None if versionish(node, lambda n: self._probe(n, local)) else NEUTRAL

    def _held_test(self, node: ast.AST) -> Any:
        """A name assigned once (in this function, else the module) to an expression: what that
        expression says (``SUPPORTS_FLASH_ATTENTION = torch.cuda.is_available() and
        get_device_capability() >= (8, 0)`` is a hardware test, NEUTRAL; ``_TORCH_2 =
        torch.__version__ >= "2.0"`` is a version test). None: not such a name."""
        if not isinstance(node, ast.Name) or node.id in self._deciding:
            return None
        value = None
        for scope in (self.tests[-1], self.tests[0]):
            if node.id in scope:
                value = scope[node.id]
                break
        if value is None or value is AMBIGUOUS:
            return None
        self._deciding.add(node.id)
        try:
            return self._decide(value)
        finally:
            self._deciding.discard(node.id)

    def _decide(self, test: ast.AST, local: Optional[dict] = None) -> Any:
        """True/False: the test holds/fails on the target torch as far as the version goes;
        None: the version part is unknown; NEUTRAL: the test is not about the version."""
        return decide(test, lambda n: self._leaf(n, local))

    def _arms(self, node: Any, body: list, orelse: list) -> None:
        """The arm of a version-dependent test that does not run on the target torch is
        guarded, the one that runs is linted; when the version part is unknown, both are
        guarded; a test that is not about the version guards nothing."""
        self.visit(node.test)
        known = self._decide(node.test)
        saved = self.path
        for arm, stmts, live in (("b", body, known is True), ("o", orelse, known is False)):
            g = int(known is not NEUTRAL and not live)
            self.guard += g
            self.path = saved + ((id(node), arm),)
            for s in stmts:
                self.visit(s)
            self.guard -= g
        self.path = saved

    def visit_If(self, node: ast.If) -> None:
        self._arms(node, node.body, node.orelse)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._arms(node, [node.body], [node.orelse])

    def _try(self, node: Any) -> None:
        soft = any(_catches(h, node.body) for h in node.handlers)
        self.soft += soft
        for s in node.body:
            self.visit(s)
        self.soft -= soft
        saved = self.path
        for h in node.handlers:
            self.path = saved + ((id(node), "h"),)
            g = _catches(h, node.body)
            self.guard += g
            for s in h.body:
                self.visit(s)
            self.guard -= g
        self.path = saved
        for s in node.orelse + node.finalbody:
            self.visit(s)

    visit_Try = _try
    visit_TryStar = _try

    def visit_With(self, node: Any) -> None:
        suppress = any(isinstance(i.context_expr, ast.Call)
                       and getattr(i.context_expr.func, "attr", getattr(i.context_expr.func, "id", "")) == "suppress"
                       and any(getattr(a, "id", getattr(a, "attr", "")) in GUARD_EXC for a in i.context_expr.args)
                       for i in node.items)
        for i in node.items:
            self.visit(i)
        self.soft += suppress
        for s in node.body:
            self.visit(s)
        self.soft -= suppress

    visit_AsyncWith = visit_With

    # -- statements --------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for a in node.names:
            self.model.imports.append((a.name.split(".")[0], self._scope(), self._tick(), self.path))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level == 0 and node.module:
            self.model.imports.append((node.module.split(".")[0], self._scope(), self._tick(), self.path))
            if node.module.split(".")[0] == "torch":
                for a in node.names:
                    if a.name != "*":
                        self._use(f"{node.module}.{a.name}", node, "import")

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for t in node.targets:
            self._store(t, node.value, node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
            self._store(node.target, node.value, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        self._store(node.target, node.value, node)

    def _store(self, target: ast.AST, value: ast.AST, stmt: Optional[ast.AST] = None) -> None:
        if isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self._store(elt, None)
            return
        if isinstance(target, ast.Attribute):
            if not self.guard:
                self.model.attr_stores.append(target)
            dotted = self.resolve(target)
            self.visit(target.value)
            if dotted:
                self._use(dotted, target, "store", value, stmt)
            return
        if isinstance(target, ast.Subscript):
            env = self.resolve(target.value)
            if env == "os.environ":
                var = _const_str(target.slice)
                if var:
                    self._env(var, target)
            self.visit(target.value)
            self.visit(target.slice)
            return
        self.visit(target)

    def _env(self, var: str, node: ast.AST) -> None:
        self.model.env_sets.append(EnvSet(var, node, self._scope(), self._tick(), self.path))

    def visit_Call(self, node: ast.Call) -> None:
        dotted = self.resolve(node.func)
        if dotted in ("os.environ.setdefault", "os.putenv") and node.args:
            var = _const_str(node.args[0])
            if var:
                self._env(var, node)
        elif dotted == "os.environ.update":
            for kw in node.keywords:
                if kw.arg:
                    self._env(kw.arg, node)
            for arg in node.args:
                if isinstance(arg, ast.Dict):
                    for k in arg.keys:
                        var = _const_str(k) if k is not None else None
                        if var:
                            self._env(var, node)
        func = node.func
        self.model.calls.append((self._scope(), self.order, dotted or _written(func)))
        if dotted is None and isinstance(func, ast.Attribute) and (
                func.attr == "cuda" or (func.attr == "to" and node.args
                                        and (_const_str(node.args[0]) or "").startswith("cuda"))):
            self.model.cuda_calls.append((self._scope(), self._tick(), self.path))
        if dotted:
            self._use(dotted, node.func, "call", node)
            self._seen_chain.add(id(node.func))
        self.generic_visit(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if isinstance(node.ctx, ast.Load) and id(node) not in self._seen_chain:
            dotted = self.resolve(node)
            if dotted:
                self._use(dotted, node, "load")
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load) and id(node) not in self._seen_chain:
            dotted = self._lookup(node.id)
            if dotted and dotted.split(".")[0] in ROOTS and "." in dotted:
                self._use(dotted, node, "load")

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and len(node.value) < 200:
            self.model.strings.add(node.value)


def _written(node: Any) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(parts[::-1])


def _const_str(node: Any) -> Optional[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def analyze(tree: ast.Module, version: Optional[tuple] = None, presence: Any = None,
            value: Any = None) -> Model:
    """``presence(dotted)``: whether the target torch has the name (True/False/None);
    ``value(dotted)``: the name is a plain value (a flag), so ``x = torch.a.flag`` copies it."""
    a = Analyzer(version, presence, value)
    a.visit(tree)
    return a.model


def exclusive(p1: tuple, p2: tuple) -> bool:
    """Two branch paths that can never both run (the two arms of one ``if``)."""
    arms = dict(p1)
    return any(k in arms and arms[k] != arm for k, arm in p2)
