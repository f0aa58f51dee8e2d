"""The matcher mechanisms lint rules name in ``check:`` (the knowledge is in the YAML: the rule
files, the settings registry and the torch.backends names). Each takes the analysed module and
the rule and yields :class:`Hit` s."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from torchdoctor.lint import fixcheck
from torchdoctor.lint.analyze import Model, exclusive
from torchdoctor.lint.knowledge import Knowledge, LintRule
from torchdoctor.lint.lines import split as split_lines
from torchdoctor.lint.versions import covers, in_range

BACKENDS = "torch.backends."
CLOSED = ("module", "object")
"""Kinds whose members the names table lists completely (for objects: those it lists any for)."""
REPLACEABLE = ("function", "class", "object", "module", "constant", "readonly")


@dataclass
class Edit:
    node: Optional[ast.AST]
    """Replace this node's source span ... (None: ``start``/``end`` given as (line, byte col))."""
    content: str
    start: Optional[tuple] = None
    end: Optional[tuple] = None


@dataclass
class Hit:
    node: ast.AST
    fields: dict
    edits: list = field(default_factory=list)
    safe: bool = True
    fix_title: str = ""
    version_dependent: bool = False
    expect: list = field(default_factory=list)
    """What the edits mean: ``(old node, new node)`` pairs (lint.fixcheck); edits without them
    are never offered."""


@dataclass
class Ctx:
    model: Model
    know: Knowledge
    version: tuple
    version_text: str
    source: str


# -- helpers ------------------------------------------------------------------------------

def short(name: str) -> str:
    return name[len(BACKENDS):] if name.startswith(BACKENDS) else name


def plain_value(node: Optional[ast.AST]) -> bool:
    """A literal-like value (not a function, a name or an attribute: those are shims)."""
    if node is None:
        return False
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return plain_value(node.operand)
    if isinstance(node, (ast.Compare, ast.BoolOp, ast.JoinedStr)):
        return True
    if isinstance(node, ast.BinOp):
        return plain_value(node.left) and plain_value(node.right)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(plain_value(e) for e in node.elts)
    return False


def shim_value(node: Optional[ast.AST], model: Model) -> bool:
    """A value that is a function or another object: assigning it is a deliberate patch."""
    if isinstance(node, ast.Lambda):
        return True
    if isinstance(node, ast.Name):
        return node.id in model.functions or node.id not in ("True", "False", "None")
    return isinstance(node, (ast.Attribute, ast.Call, ast.Subscript))


def distance(a: str, b: str, cap: int = 4) -> int:
    """Optimal-string-alignment distance (a transposition counts 1), capped."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev2: list = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[-1]


def typo_of(name: str, parent: str, settable: bool, know: Knowledge) -> Optional[str]:
    """The one real name of the same kind under the same parent that ``name`` is a plausible
    typo of (distance 1 for short names, 2 from 8 characters, 3 from 14), else None."""
    prefix = parent + "." if parent else ""
    limit = 1 if len(name) < 8 else (2 if len(name) < 14 else 3)
    best: list = []
    for qual, info in know.names.items():
        if not qual.startswith(prefix) or "." in qual[len(prefix):]:
            continue
        if settable and info.get("kind") != "flag":
            continue
        if not settable and info.get("kind") in ("class", "module", "constant", "import"):
            continue
        d = distance(name.lower(), qual[len(prefix):].lower(), limit)
        if d <= limit:
            best.append((d, qual[len(prefix):]))
    best.sort()
    if not best or (len(best) > 1 and best[0][0] == best[1][0]):
        return None
    return best[0][1]


def advice_for(dotted: str, know: Knowledge) -> str:
    entry = know.look_alikes.get(dotted)
    if entry and entry.get("advice"):
        return " ".join(str(entry["advice"]).split())
    note = know.fake_notes.get(dotted)
    if note and note.get("note"):
        return " ".join(str(note["note"]).split())
    return ""


def _span_of_attr(node: ast.Attribute, source_lines: list) -> Optional[tuple]:
    """(line, start byte, end byte) of the attribute name of ``node`` (the text after the dot)."""
    if node.end_lineno is None or node.end_col_offset is None:
        return None
    line = source_lines[node.end_lineno - 1].encode("utf-8")
    start = node.end_col_offset - len(node.attr.encode("utf-8"))
    if line[start:node.end_col_offset].decode("utf-8", "replace") != node.attr:
        return None
    return node.end_lineno, start, node.end_col_offset


# -- mechanisms ---------------------------------------------------------------------------

def unknown_name(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    """A name under torch.backends that the target torch does not have (or not yet)."""
    lines = split_lines(ctx.source)
    know = ctx.know
    for use in ctx.model.uses:
        if use.guarded or not use.name.startswith(BACKENDS) or use.ctx == "del":
            continue
        rel = short(use.name)
        parent, _, attr = rel.rpartition(".")
        if attr.startswith("_"):
            continue
        pinfo = know.names.get(parent) if parent else {"kind": "module"}
        if pinfo is None or pinfo.get("kind") not in CLOSED:
            continue
        if pinfo.get("kind") == "object" and not any(q.startswith(parent + ".") for q in know.names):
            continue
        info = know.names.get(rel)
        if info is not None:
            since = info.get("since")
            if since and not in_range(ctx.version, since, None):
                yield Hit(use.node, {"name": use.name, "detail": f"it does not exist in torch "
                                     f"{ctx.version_text} (added in {since})", "advice": ""},
                          version_dependent=True)
            continue
        if use.ctx == "store" and shim_value(use.value, ctx.model) and not isinstance(use.value, ast.Name):
            continue  # torch.backends.x.helper = fn: a deliberate addition
        if use.ctx == "store" and isinstance(use.value, (ast.Lambda,)):
            continue
        if use.ctx == "store" and isinstance(use.value, ast.Name) and use.value.id in ctx.model.functions:
            continue
        if not parent and any(u.name.startswith(use.name + ".") for u in ctx.model.uses):
            continue  # torch.backends.musa.x: an out-of-tree device backend registers itself there
        settable = use.ctx == "store"
        typo = typo_of(attr, parent, settable, know)
        if use.ctx == "store":
            detail = ("torch has no such setting: the assignment creates a new attribute and "
                      "changes nothing" if (pinfo.get("kind") == "module") else
                      "torch has no such attribute: the assignment raises AttributeError")
        elif use.ctx == "import":
            detail = "torch has no such name: the import raises ImportError"
        else:
            detail = "torch has no such attribute: reading it raises AttributeError"
        hit = Hit(use.node, {"name": use.name, "detail": detail, "advice": ""})
        if typo:
            real = (BACKENDS + parent + "." if parent else BACKENDS) + typo
            hit.fields["advice"] = f"Did you mean {real}?"
            span = _span_of_attr(use.node, lines) if isinstance(use.node, ast.Attribute) else None
            if span:
                hit.edits = [Edit(None, typo, (span[0], span[1]), (span[0], span[2]))]
                hit.expect = [(use.node, ast.Attribute(value=use.node.value, attr=typo, ctx=use.node.ctx))]
                hit.fix_title = f"rename to {typo}"
        else:
            adv = advice_for(use.name, know)
            if adv:
                hit.fields["advice"] = f"The real way: {adv}"
        yield hit


def replaced_object(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    """An assignment that replaces a function, object or read-only value of torch.backends."""
    call_fix = set(rule.params.get("call_fix") or [])
    attr_fix = dict(rule.params.get("attr_fix") or {})
    for use in ctx.model.uses:
        if use.guarded or use.ctx != "store" or not use.name.startswith(BACKENDS):
            continue
        info = ctx.know.names.get(short(use.name))
        if info is None or info.get("kind") not in REPLACEABLE:
            continue
        if not plain_value(use.value):
            continue  # a function, lambda or object: a deliberate monkeypatch (a shim)
        kind = info["kind"]
        what = {"function": "replaces the function with a plain value: nothing is enabled or "
                            "disabled, and later calls fail",
                "readonly": "is read-only: the assignment raises",
                "object": "replaces the object torch keeps there with a plain value"}.get(
                    kind, f"replaces the {kind} with a plain value")
        hit = Hit(use.node, {"name": use.name, "detail": what, "advice": ""})
        stmt_value = use.value
        if use.name in call_fix:
            hit.fields["advice"] = "Call it instead"
            if use.rooted and stmt_value is not None and _sole_target(use):
                # `X = v` -> `X(v)`; never `a = X = v` (a would become None) or `X = a = v`
                edit = _call_edit(use.node, stmt_value, ctx.source)
                if edit is not None:
                    hit.edits = [edit]
                    hit.expect = [(use.stmt, ast.Expr(value=ast.Call(
                        func=fixcheck.load(use.node), args=[stmt_value], keywords=[])))]
                    hit.fix_title = "call it with the value"
        elif use.name in attr_fix:
            hit.fields["advice"] = f"Set its .{attr_fix[use.name]} instead"
            if isinstance(use.node, ast.Attribute):
                hit.edits = [Edit(None, f".{attr_fix[use.name]}", (use.node.end_lineno, use.node.end_col_offset),
                                  (use.node.end_lineno, use.node.end_col_offset))]
                hit.expect = [(use.node, ast.Attribute(value=fixcheck.load(use.node), attr=attr_fix[use.name],
                                                       ctx=use.node.ctx))]
                hit.safe = False
                hit.fix_title = f"assign to .{attr_fix[use.name]}"
        else:
            adv = advice_for(use.name, ctx.know)
            if adv:
                hit.fields["advice"] = adv
        yield hit


def _sole_target(use: Any) -> bool:
    """The store is the whole statement: ``X = v`` or ``X: T = v`` (not chained, not augmented)."""
    stmt = use.stmt
    if isinstance(stmt, ast.Assign):
        return len(stmt.targets) == 1 and stmt.targets[0] is use.node
    return isinstance(stmt, ast.AnnAssign) and stmt.target is use.node and stmt.value is use.value


def _call_edit(target: ast.AST, value: ast.AST, source: str) -> Optional[Edit]:
    """``X = v`` -> ``X(v)``: replace the text from the end of the target to the end of the
    value (the `` = ``) with ``(v)``; None where the text is not what the tree says."""
    lines = split_lines(source, keepends=True)
    between = _segment(lines, (target.end_lineno, target.end_col_offset), (value.lineno, value.col_offset))
    opened = between.count("(")  # a parenthesised value: its closing parentheses follow it
    end_line, end_col = value.end_lineno, value.end_col_offset
    while opened:
        raw = lines[end_line - 1].encode("utf-8")
        rest = raw[end_col:]
        stripped = rest.lstrip(b" \t\r\n")
        if stripped.startswith(b")"):
            end_col += len(rest) - len(stripped) + 1
            opened -= 1
        elif not stripped and end_line < len(lines):
            end_line, end_col = end_line + 1, 0
        else:
            return None
    if "=" not in between:
        return None
    eq = between.rindex("=") + 1
    text = between[eq:].lstrip() + _segment(lines, (value.lineno, value.col_offset), (end_line, end_col))
    return Edit(None, f"({text})", (target.end_lineno, target.end_col_offset), (end_line, end_col))


def _segment(lines: list, start: tuple, end: tuple) -> str:
    (l1, c1), (l2, c2) = start, end
    if l1 == l2:
        return lines[l1 - 1].encode("utf-8")[c1:c2].decode("utf-8")
    parts = [lines[l1 - 1].encode("utf-8")[c1:].decode("utf-8")]
    parts += lines[l1:l2 - 1]
    parts.append(lines[l2 - 1].encode("utf-8")[:c2].decode("utf-8"))
    return "".join(parts)


def cudnn_flags_defaults(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    """``cudnn.flags(...)`` without ``enabled``: every omitted argument takes flags()'s default,
    and that default is enabled=False."""
    targets = set(rule.params.get("functions") or [])
    for use in ctx.model.uses:
        if use.ctx != "call" or use.name not in targets:
            continue
        call = use.value
        if call.args or any(k.arg is None or k.arg == "enabled" for k in call.keywords):
            continue
        yield Hit(use.node, {"name": use.name, "detail": "", "advice": ""})


def _const(node: Optional[ast.AST]) -> Any:
    return node.value if isinstance(node, ast.Constant) else None


def benchmark_with_deterministic(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    """benchmark = True with determinism asked for: deterministic = True or
    use_deterministic_algorithms(True) anywhere not exclusive with it, or set from an option
    (``deterministic = opts.x``) in the same function where benchmark = True is set
    unconditionally (at the same or an outer branch level): when the option is on, both are."""
    bench, det = rule.params["benchmark"], rule.params["deterministic"]
    calls = rule.params.get("calls") or []
    trues = lambda name: [u for u in ctx.model.uses if u.ctx == "store" and u.name == name  # noqa: E731
                          and _const(u.value) is True]
    falses = [u for u in ctx.model.uses if u.ctx == "store" and u.name == bench and _const(u.value) is False]
    det_calls = [u for u in ctx.model.uses if u.ctx == "call" and u.name in calls
                 and u.value.args and _const(u.value.args[0]) is True]
    optional = [u for u in ctx.model.uses if (u.ctx == "store" and u.name == det and _from_option(u.value))
                or (u.ctx == "call" and u.name in calls and u.value.args and _from_option(u.value.args[0]))]
    for b in trues(bench):
        candidates = [(d, False) for d in trues(det) + det_calls] + [(d, True) for d in optional]
        for d, from_option in candidates:
            if exclusive(b.path, d.path):
                continue
            if from_option and (d.scope != b.scope or not set(b.path) <= set(d.path)):
                continue  # benchmark = True only on some path (perhaps the non-deterministic one)
            if any(f.scope == d.scope and not exclusive(f.path, d.path) for f in falses):
                continue  # the deterministic branch turns the autotuner off again
            if d.ctx == "store":
                what = f"{det} = " + (_source_of(d.value) if from_option else "True")
            else:
                what = f"{d.name}(" + (_source_of(d.value.args[0]) if from_option else "True") + ")"
            yield Hit(b.node, {"name": bench, "detail": f"line {d.node.lineno}: {what}", "advice": ""})
            break


def _from_option(value: Optional[ast.AST]) -> bool:
    """A value read from an option or variable (not a literal): it may be True at run time."""
    return value is not None and not isinstance(value, (ast.Constant, ast.Lambda))


def _source_of(node: ast.AST, limit: int = 60) -> str:
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[:limit] + "…"


def deterministic_without_workspace(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    since, until = ctx.know.cublas_range
    if not in_range(ctx.version, since, until):
        return
    if any("CUBLAS_WORKSPACE_CONFIG" in s for s in ctx.model.strings):
        return
    for use in ctx.model.uses:
        if use.ctx != "call" or use.name != rule.params["function"]:
            continue
        call = use.value
        mode = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "mode"), None)
        if _const(mode) is not True:
            continue
        if any(k.arg == "warn_only" and _const(k.value) is not False for k in call.keywords):
            continue
        yield Hit(use.node, {"name": use.name, "detail": f"torch {ctx.version_text} needs it on CUDA "
                             f"(from {since} to before {until})", "advice": ""}, version_dependent=True)


def env_after_read(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    """``os.environ[X] = ...`` after the point where torch reads X (the registry's takes_effect)."""
    inits = rule.params.get("moments") or {}
    importers = set(rule.params.get("torch_importers") or ("torch",))
    events: dict = {"torch-import": [(s, o, p) for pkg, s, o, p in ctx.model.imports if pkg in importers]}
    for moment, names in inits.items():
        events[moment] = [(u.scope, u.order, u.path) for u in ctx.model.uses
                          if u.ctx == "call" and (u.name in names or
                                                  any(u.name.endswith("." + n) for n in names if n.startswith(".")))]
    events.setdefault("cuda-init", [])
    events["cuda-init"] += _cuda_method_calls(ctx)
    children = rule.params.get("for_children") or []
    in_process = rule.params.get("in_process") or {}

    def calls_in(scope: int, names: list) -> bool:
        return any(s == scope and any(n == p or n.startswith(p + ".") or n.endswith("." + p) for p in names)
                   for s, _, n in ctx.model.calls)

    for env in ctx.model.env_sets:
        when = ctx.know.env_when.get(env.var)
        if not when or when not in events:
            continue
        if env.scope != 0 and calls_in(env.scope, children + list(in_process.get(env.var) or [])):
            continue  # meant for the processes this function starts, or applied in-process too
        until = ctx.know.env_until.get(env.var)
        if until and not in_range(ctx.version, None, until):
            continue
        for scope, order, path in events[when]:
            if exclusive(path, env.path):
                continue
            earlier = (scope == env.scope and order < env.order) or (scope == 0 and env.scope != 0)
            if earlier:
                yield Hit(env.node, {"name": env.var, "detail": f"torch reads it at {when}",
                                     "advice": "set it before " + ("`import torch`" if when == "torch-import"
                                                                   else "CUDA is initialised" if when == "cuda-init"
                                                                   else "the process group is created")})
                break


def _cuda_method_calls(ctx: Ctx) -> list:
    return list(getattr(ctx.model, "cuda_calls", []))


def tf32_api_mix(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    since = rule.params.get("since", "2.9")
    if not in_range(ctx.version, since, None):
        return
    legacy = set(ctx.know.tf32_legacy)
    old = [u for u in ctx.model.uses if u.name in legacy and u.ctx in ("store", "call")]
    new = [u for u in ctx.model.uses if u.ctx == "store" and u.name.startswith(BACKENDS)
           and u.name.endswith(".fp32_precision")]
    for n in new:
        other = next((o for o in old if not exclusive(o.path, n.path)), None)
        if other is not None:
            yield Hit(n.node, {"name": n.name, "detail": f"line {other.node.lineno} uses the legacy "
                               f"{other.name}", "advice": ""}, version_dependent=True)


def deprecated_name(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    lines = split_lines(ctx.source, keepends=True)
    for use in ctx.model.uses:
        if use.guarded or use.ctx == "import":
            continue
        entry = ctx.know.look_alikes.get(use.name)
        if not entry or not entry.get("deprecated"):
            continue
        if use.ctx == "store" and not plain_value(use.value):
            continue  # a shim put in its place
        if not covers(ctx.version, ctx.version_text, entry["deprecated"], entry.get("deprecated_until")):
            continue  # a target of "2.9" is every 2.9.x: a notice of 2.9.0 only does not cover it
        until = entry.get("deprecated_until")
        span = (f"from {entry['deprecated']}; {until} took the notice back" if until
                else f"since {entry['deprecated']}")
        hit = Hit(use.node, {"name": use.name, "detail": f"deprecated in torch {ctx.version_text} ({span})",
                             "advice": " ".join(str(entry.get("advice") or "").split())},
                  version_dependent=True)
        rw = entry.get("rewrite")
        if rw and use.rooted and isinstance(use.node, ast.Attribute):
            planned = _rewrite(use, rw, lines, id(use.node) in ctx.model.decorators)
            if planned is not None:
                hit.edits, hit.expect = planned
                hit.fix_title = f"use {rw['call']}"
        yield hit


def _rewrite(use: Any, rw: dict, lines: list, decorator: bool) -> Optional[tuple]:
    """(edits, expect) that call ``rw['call']`` instead of the deprecated callable, or None.

    Positional arguments are mapped by the two real signatures (``params`` of the old callable,
    ``new_params`` of the new one, ``new_keywords`` its keyword-only names; rules/settings.yaml):
    an argument stays positional only where it lands on the parameter of the same name, and
    every one from the first that would not becomes ``name=value``. Without the signatures, a
    ``*args``/unknown keyword, or more arguments than the old callable takes: no fix."""
    node = use.node
    root = node
    while isinstance(root, ast.Attribute):
        root = root.value
    new_func = root.id + rw["call"][len("torch"):]
    func_ast = fixcheck.expression(new_func)
    if func_ast is None:
        return None
    call = use.value if use.ctx == "call" else None
    extra_kw = fixcheck.keyword(rw["append"]) if rw.get("append") else None
    if rw.get("append") and extra_kw is None:
        return None
    if call is None:
        if extra_kw is None or not decorator:
            return None  # a bare decorator: @torch.cuda.amp.custom_fwd -> @torch.amp.custom_fwd(device_type=...)
        return ([Edit(node, f"{new_func}({rw['append']})")],
                [(node, ast.Call(func=func_ast, args=[], keywords=[extra_kw]))])
    first = fixcheck.expression(rw["prepend"]) if rw.get("prepend") else None
    if rw.get("prepend") and first is None:
        return None
    params, new_params = list(rw.get("params") or []), list(rw.get("new_params") or [])
    accepted = (set(new_params) | set(rw.get("new_keywords") or [])) & (set(params) | set(rw.get("keywords") or []))
    if any(isinstance(a, ast.Starred) for a in call.args) or len(call.args) > len(params):
        return None
    if any(k.arg is not None and k.arg not in accepted for k in call.keywords):
        return None  # a keyword one of the two callables does not take: the call is not the same
    if extra_kw is not None and any(k.arg == extra_kw.arg for k in call.keywords):
        return None
    shift = 1 if first is not None else 0
    keep = 0
    while keep < len(call.args) and keep + shift < len(new_params) and new_params[keep + shift] == params[keep]:
        keep += 1
    moved = [ast.keyword(arg=params[i], value=a) for i, a in enumerate(call.args) if i >= keep]
    edits = [Edit(node, new_func)]
    end = (node.end_lineno, node.end_col_offset)
    has_args = bool(call.args or call.keywords)
    if first is not None:  # before any `name=` at the same place: insertions land in list order
        line = lines[end[0] - 1].encode("utf-8")  # after the "(" that follows the function expression
        idx = line.find(b"(", end[1])
        if idx < 0 or line[end[1]:idx].strip():
            return None
        edits.append(Edit(None, rw["prepend"] + (", " if has_args else ""), (end[0], idx + 1), (end[0], idx + 1)))
    for i, a in enumerate(call.args[keep:], keep):
        edits.append(Edit(None, f"{params[i]}=", (a.lineno, a.col_offset), (a.lineno, a.col_offset)))
    if extra_kw is not None:
        close = (call.end_lineno, call.end_col_offset - 1)
        text = (", " if has_args else "") + rw["append"]
        last = lines[close[0] - 1].encode("utf-8")[:close[1]].rstrip()
        if has_args and last.endswith(b","):
            text = " " + rw["append"]
        edits.append(Edit(None, text, close, close))
    new_call = ast.Call(func=func_ast, args=([first] if first is not None else []) + call.args[:keep],
                        keywords=moved + list(call.keywords) + ([extra_kw] if extra_kw is not None else []))
    return edits, [(call, new_call)]


def repeats_default(ctx: Ctx, rule: LintRule) -> Iterator[Hit]:
    defaults = rule.params.get("defaults") or {}
    calls = rule.params.get("call_defaults") or {}
    for use in ctx.model.uses:
        if use.ctx == "store" and use.name in defaults and _const(use.value) is defaults[use.name] \
                and isinstance(_const(use.value), bool):
            yield Hit(use.node, {"name": use.name, "detail": f"{defaults[use.name]} is already the default",
                                 "advice": ""})
        elif use.ctx == "call" and use.name in calls and len(use.value.args) == 1 \
                and _const(use.value.args[0]) is calls[use.name]:
            yield Hit(use.node, {"name": use.name, "detail": f"{calls[use.name]} is already the default",
                                 "advice": ""})


MECHANISMS = {
    "unknown-name": unknown_name,
    "replaced-object": replaced_object,
    "cudnn-flags-defaults": cudnn_flags_defaults,
    "benchmark-with-deterministic": benchmark_with_deterministic,
    "deterministic-without-workspace": deterministic_without_workspace,
    "env-after-read": env_after_read,
    "tf32-api-mix": tf32_api_mix,
    "deprecated-name": deprecated_name,
    "repeats-default": repeats_default,
}
