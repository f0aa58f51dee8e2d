"""Rule files: the pydantic model, loading with ``path:line`` errors, and load-time checks.

One rule per YAML file (``rules/<area>/<id>.yaml``). At load every rule is validated
(``extra="forbid"``), its ``when`` parsed, every fact path it reads checked against the
fact schema, its message template compiled, and every ``recommend`` key and literal value
checked against the settings registry — so a typo fails at load, never silently at run time.
"""

from __future__ import annotations

import ast
import json
import os
from pathlib import Path
from typing import Any, Iterable, Literal, Optional, Sequence, Union, get_args, get_origin

from torchdoctor.model import BaseModel, ConfigDict, Field, ValidationError, field_validator

from torchdoctor import yamlio
from torchdoctor.errors import RuleFileError
from torchdoctor.safeio import clip
from torchdoctor.sandbox import TemplateProblem
from torchdoctor.facts import NAMESPACE_MODELS, JobFacts, Unavailable
from torchdoctor.paths import default_rules_dir
from torchdoctor.report import CATEGORIES
from torchdoctor.settings import Registry, load_registry
from torchdoctor.workload import Workload

Precedence = Literal["correctness", "reproducibility", "stability", "speed"]
PRECEDENCE_RANK = {"correctness": 0, "reproducibility": 1, "stability": 2, "speed": 3}
NON_RULE_DIRS = {"data", "lint"}  # lint rules: torchdoctor.lint (docs/lint.md)
NON_RULE_FILES = {"settings.yaml", "tasks.yaml", "bench.yaml"}
ROOT_NAMES = set(NAMESPACE_MODELS) | {"workload", "job"}
PATH_ARGUMENT_FUNCTIONS = ("known", "fact_or", "differs", "odd_ones", "odd_ranks", "keys_differing")
"""Functions whose first argument is a fact path (checked at load like any other)."""


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Expr(_M):
    expr: str
    """A simpleeval expression computing the recommended value from facts."""


class Example(_M):
    name: str
    facts: dict[str, Any] = {}
    """Partial facts by namespace (torch, gpu, cpu, memory, env, packages, system, workload)."""
    message: Optional[str] = None
    """If given, the rendered message must equal this."""
    recommend: Optional[dict[str, Any]] = None
    """If given, the rule's computed recommendations must equal this."""
    needs: Optional[str] = None
    """For skips: the fact path reported as missing."""
    xfail: Optional[str] = None
    """A known gap: the example is expected to fail, with this reason."""


class Examples(_M):
    fires: list[Example] = Field(min_length=1)
    ok: list[Example] = Field(min_length=1)
    skips: list[Example] = []


class RuleCore(_M):
    """What a rule is judged with: every field of its file but the examples, which only `rules test` runs.
    ``load_rules(examples=False)`` (triage) returns these, from a cache entry without the examples: reading and
    validating them was about half of loading the rules."""

    id: str = Field(pattern=r"^[a-z0-9]+(-[a-z0-9]+)*$")
    severity: Literal["error", "warning", "info"]
    category: str
    precedence: Precedence = "speed"
    """How its recommendations rank: correctness > reproducibility > stability > speed."""
    tags: list[str] = []
    summary: str
    why: str
    for_each: Optional[str] = None
    """A fact path naming a list (``torch.dead_attributes``): the rule is judged once per item,
    which ``when``, ``message`` and ``item_category`` read as ``item``, and each item that
    fires is one finding. Such a rule recommends nothing."""
    item_category: Optional[str] = None
    """With ``for_each``: an expression giving the finding's category per item (a value that
    is not a category keeps ``category``)."""
    when: str
    message: str
    recommend: dict[str, Union[Expr, bool, int, float, str]] = {}
    fix: str
    known_problems: Optional[str] = None
    references: list[str] = Field(min_length=1)
    path: Optional[str] = Field(default=None, exclude=True)

    @field_validator("category")
    @classmethod
    def _category(cls, v: str) -> str:
        if v not in CATEGORIES:
            raise ValueError(f"unknown category {v!r} (valid: {', '.join(CATEGORIES)})")
        return v


class Rule(RuleCore):
    """One rule file."""

    examples: Examples


# ----------------------------------------------------------------------------------------
# loading
# ----------------------------------------------------------------------------------------

MAX_RULE_FILES = 2000
"""Rule files in one run, shipped and user rules together."""
MAX_RULE_BYTES = 256 * 1024
"""Size of one rule file (the largest shipped rule is about 10 kB)."""


def rule_files(directory: Path) -> list[Path]:
    """Every ``*.yaml`` below ``directory`` but its top-level files (settings.yaml, tasks.yaml) and data/: what
    ``sorted(directory.rglob("*.yaml"))`` gives (in that order, not into symlinked directories), read with
    os.scandir (pathlib's rglob and sort were 2 ms of every run)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise RuleFileError(f"{directory}: not a rules directory")
    found: list[tuple] = []

    def walk(where: str, rel: tuple) -> None:
        try:
            with os.scandir(where) as it:
                entries = list(it)
        except OSError:
            return
        for entry in entries:
            if entry.name.endswith(".yaml"):
                found.append(rel + (entry.name,))
            try:
                is_dir = entry.is_dir() and not entry.is_symlink()
            except OSError:
                is_dir = False
            if is_dir and (rel or entry.name not in NON_RULE_DIRS):
                walk(entry.path, rel + (entry.name,))

    walk(str(directory), ())
    out = [directory.joinpath(*rel) for rel in sorted(found) if len(rel) >= 2 and rel[0] not in NON_RULE_DIRS]
    _check_count(out, directory)
    return out


def _check_count(paths: list, where: Any) -> None:
    if len(paths) > MAX_RULE_FILES:
        raise RuleFileError(f"{where}: more than {MAX_RULE_FILES} rule files; refusing to load them")


def load_rules(dirs: Optional[Sequence[Path]] = None, registry: Optional[Registry] = None,
               extra_files: Iterable[Path] = (), examples: bool = True) -> list[Rule]:
    """Load and check the shipped rules plus ``dirs`` (user rules).

    Parsing and checking 85 files costs more than the rest of a `check`: the checked result is
    kept in the on-disk cache of :mod:`torchdoctor.rulecache` (keyed by every file's bytes, so
    an edit is never missed) and in this process, and re-validated with the model when it is
    read back. ``examples=False``: :class:`RuleCore` objects, without the examples (every check
    of the files, examples included, still runs whenever they are parsed)."""
    paths = list(rule_files(default_rules_dir()))
    for d in dirs or []:
        d = Path(d)
        paths += [d] if d.is_file() else rule_files_any(d)
        _check_count(paths, d)
    paths += [Path(p) for p in extra_files]
    _check_count(paths, "rules")
    texts = [_read_rule(path) for path in paths]
    rules: dict[str, Rule] = {}
    for rule in _load_texts(paths, texts, registry, examples):
        if rule.id in rules:
            raise RuleFileError(f"{rule.path}: duplicate rule id '{rule.id}' (also in {rules[rule.id].path})")
        rules[rule.id] = rule
    return list(rules.values())


def rule_files_any(directory: Path) -> list[Path]:
    """User rule directories: every *.yaml below, at any depth, except data/ tables and the
    registry files a rules directory may hold beside its rules (settings.yaml, tasks.yaml, bench.yaml)."""
    if not directory.is_dir():
        raise RuleFileError(f"{directory}: no such rules directory")
    out = []
    for p in sorted(directory.rglob("*.yaml")):
        rel = p.relative_to(directory).parts
        if any(part in NON_RULE_DIRS for part in rel[:-1]):
            continue
        if len(rel) == 1 and rel[0] in NON_RULE_FILES:
            continue
        out.append(p)
        _check_count(out, directory)
    return out


def _read_rule(path: Path) -> str:
    """A rule file's text: a regular file (a FIFO or /dev/zero is one line), bounded, UTF-8."""
    return yamlio.read_text(path, RuleFileError, what="rule file", limit=MAX_RULE_BYTES)


_MEMO: dict[str, list] = {}
"""Checked rules of this process by key (tests and the API load the same files many times)."""


def _load_texts(paths: Sequence[Path], texts: Sequence[str], registry: Optional[Registry],
                examples: bool = True) -> list[Rule]:
    """The checked rules of these files; ``registry`` None is the shipped one, built only where the files are
    parsed (a cached entry is keyed by its file's digest, which needs no registry)."""
    from torchdoctor import rulecache
    from torchdoctor.settings import settings_digest

    digest = registry_digest(registry) if registry is not None else settings_digest()
    inputs = [("settings", digest.encode())]
    inputs += [(str(p), t.encode("utf-8")) for p, t in zip(paths, texts)]
    key = rulecache.make_key(inputs)
    if (key, examples) in _MEMO:
        return list(_MEMO[(key, examples)])
    scope = [str(p) for p in paths]
    name, core = rulecache.entry_name("rules", scope), rulecache.entry_name("rulecore", scope)
    cached = rulecache.load(name if examples else core, key) if len(paths) > 1 else None
    rules = _from_cache(cached, len(paths), Rule if examples else RuleCore) if cached is not None else None
    if rules is None:
        registry = registry or load_registry()
        parsed = [_load_rule_text(path, text, registry) for path, text in zip(paths, texts)]
        rules = [rule if examples else RuleCore.model_validate(_core(raw)) for rule, raw in parsed]
        if len(paths) > 1:
            rulecache.store(name, key, [raw for _, raw in parsed])
            rulecache.store(core, key, [_core(raw) for _, raw in parsed])
            from torchdoctor import sandbox_ir

            sandbox_ir.store()  # the checked messages as plain data (rendered without jinja2 next time)
    if len(_MEMO) >= 16:
        _MEMO.clear()
    _MEMO[(key, examples)] = rules
    return list(rules)


def _core(raw: dict) -> dict:
    """A rule file's raw mapping without its examples (what :class:`RuleCore` validates)."""
    return {k: v for k, v in raw.items() if k != "examples"}


def _from_cache(data: Any, count: int, model: Any = None) -> Optional[list[Rule]]:
    """Rules from cached raw data, re-validated by the model; None if anything is off."""
    if not isinstance(data, list) or len(data) != count:
        return None
    try:
        return [(model or Rule).model_validate(raw) for raw in data]
    except (ValidationError, TypeError, ValueError):
        return None


def registry_digest(registry: Registry) -> str:
    """What identifies a registry's content (checks of `recommend` depend on it)."""
    digest = getattr(registry, "_digest", None)
    if digest:
        return digest
    from torchdoctor.rulecache import sha256

    return sha256(registry.model_dump_json().encode()).hexdigest()


def load_rule_file(path: Path, registry: Optional[Registry] = None) -> Rule:
    registry = registry or load_registry()
    path = Path(path)
    return _load_texts([path], [_read_rule(path)], registry)[0]


def _load_rule_text(path: Path, text: str, registry: Registry) -> tuple[Rule, dict]:
    """Parse and check one rule file: the Rule and the raw mapping it was validated from."""
    raw = yamlio.load_text(text, str(path), RuleFileError, aliases="none")
    if not isinstance(raw, dict):
        raise RuleFileError(f"{path}:1: a rule file must be a mapping of fields")

    def line_of(loc: tuple) -> int:
        # composing the node tree costs as much as parsing: only on the error path
        return yamlio.line_of_key(text, loc)

    data = {**raw, "path": str(path)}
    try:
        rule = Rule.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        line = line_of(loc)
        where = ".".join(str(x)[:60] for x in loc) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = f"unknown field '{where}'"
        elif err["type"] == "missing":
            msg = f"missing required field '{where}'"
        else:
            msg = f"{where}: {msg[:300]}"
        raise RuleFileError(f"{path}:{line}: {msg}") from None

    def fail(field: str, what: str) -> RuleFileError:
        return RuleFileError(f"{path}:{line_of((field,))}: {what}")

    if rule.id != path.stem:
        raise fail("id", f"rule id '{rule.id}' must equal the file name {clip(path.stem)}")
    bound = _item_binding(rule, fail)
    try:
        paths = fact_paths(rule.when, bound)
    except SyntaxError as exc:
        raise fail("when", f"'when' is not a valid expression: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise fail("when", "'when' is not a valid expression: nested too deeply") from None
    for p in sorted(paths):
        problem = check_fact_path(p)
        if problem:
            raise fail("when", problem)
    unknown = called_functions(rule.when) - message_names(bound)
    if unknown:
        raise fail("when", f"'when' calls an unknown function '{sorted(unknown)[0][:60]}'")
    try:
        for p in sorted(message_fact_paths(rule.message, bound)):
            problem = check_fact_path(p)
            if problem:
                raise fail("message", f"message: {problem}")
    except TemplateProblem as exc:
        raise fail("message", f"message: {exc}") from None
    if rule.item_category is not None:
        _check_expression(rule.item_category, bound,
                          lambda what: fail("item_category", f"item_category: {what}"))
    for key, value in rule.recommend.items():
        if key not in registry:
            raise fail("recommend", f"unknown setting key {clip(key)} (not in rules/settings.yaml)")
        if isinstance(value, Expr):
            try:
                for p in fact_paths(value.expr):
                    problem = check_fact_path(p)
                    if problem:
                        raise fail("recommend", problem)
            except SyntaxError as exc:
                raise fail("recommend", f"{key}: invalid expression: {exc.msg}") from None
            except (RecursionError, MemoryError, ValueError):
                raise fail("recommend", f"{key}: invalid expression: nested too deeply") from None
        else:
            try:
                registry[key].validate_value(value)
            except ValueError as exc:
                raise fail("recommend", str(exc)) from None
    for group in ("fires", "ok", "skips"):
        for i, example in enumerate(getattr(rule.examples, group)):
            for ns in example.facts:
                if ns not in ROOT_NAMES:
                    raise RuleFileError(
                        f"{path}:{line_of(('examples', group, i, 'facts', ns))}: "
                        f"example {clip(example.name)}: unknown namespace {clip(ns)}"
                    )
    return rule, data


ITEM = "item"
"""The name a ``for_each`` rule's expressions and message read the current item by."""


def _item_binding(rule: Rule, fail: Any) -> dict[str, str]:
    """``{"item": "<list path>[]"}`` for a ``for_each`` rule (checked: a list fact, no
    ``recommend``), else ``{}``; ``item_category`` without ``for_each`` is refused."""
    if rule.for_each is None:
        if rule.item_category is not None:
            raise fail("item_category", "item_category needs for_each")
        return {}
    source = rule.for_each.strip()
    if not source or any(not part.isidentifier() for part in source.split(".")):
        raise fail("for_each", f"for_each must be a fact path such as torch.dead_attributes, "
                               f"not {clip(source)}")
    problem = check_fact_path(source) or (None if _is_list_fact(source) else
                                          f"fact {clip(source)} is not a list")
    if problem:
        raise fail("for_each", problem)
    if rule.recommend:
        raise fail("recommend", "a for_each rule recommends nothing (one finding per item)")
    return {ITEM: f"{source}[]"}


def _check_expression(expr: str, bound: dict[str, str], fail: Any) -> None:
    try:
        paths = fact_paths(expr, bound)
    except SyntaxError as exc:
        raise fail(f"not a valid expression: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise fail("not a valid expression: nested too deeply") from None
    for p in sorted(paths):
        problem = check_fact_path(p)
        if problem:
            raise fail(problem)
    unknown = called_functions(expr) - message_names(bound)
    if unknown:
        raise fail(f"calls an unknown function '{sorted(unknown)[0][:60]}'")


def _is_list_fact(path: str) -> bool:
    """Whether a checked fact path (``torch.dead_attributes``) names a list."""
    typ: Any = Workload if path.split(".")[0] == "workload" else NAMESPACE_MODELS[path.split(".")[0]]
    for part in path.split(".")[1:]:
        typ = _strip(typ)
        if not (isinstance(typ, type) and issubclass(typ, BaseModel)) or part not in typ.model_fields:
            return False
        typ = typ.model_fields[part].annotation
    return get_origin(_strip(typ)) in (list, tuple)


def called_functions(expr: str) -> set[str]:
    """Names an expression calls as plain functions (``v(...)``, ``wheel_for(...)``)."""
    tree = ast.parse(f"({expr})", mode="eval")
    return {node.func.id for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}


def message_names(bound: Iterable[str] = ()) -> frozenset:
    """Names a message template may read: the fact namespaces, workload, the functions
    conditions have (the same set the engine passes when it renders), the job functions, and
    ``bound`` (``item`` in a for_each rule)."""
    from torchdoctor.vocabulary import JOB_FUNCTIONS, functions

    return (frozenset(ROOT_NAMES) | frozenset(functions()) | {"known", "fact_or"}
            | set(JOB_FUNCTIONS) | frozenset(bound))


def message_fact_paths(message: str, bound: Optional[dict[str, str]] = None) -> set[str]:
    """Check a message template (``sandbox.check_message``: raises TemplateProblem) and return
    the fact paths it reads through attributes (``torch.version``, ``gpu.devices[]``);
    ``bound`` maps extra names to the fact path they stand for (``item`` of a for_each rule)."""
    from jinja2 import nodes

    from torchdoctor.sandbox import check_message

    bound = bound or {}
    tree = check_message(message, message_names(bound))

    def chain(node: Any) -> Optional[str]:
        if isinstance(node, nodes.Name):
            if node.ctx != "load":
                return None
            return node.name if node.name in ROOT_NAMES else bound.get(node.name)
        if isinstance(node, nodes.Getattr):
            base = chain(node.node)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, nodes.Getitem):
            base = chain(node.node)
            if isinstance(node.arg, nodes.Slice):
                return base  # a slice of a text or list is of the same type
            return f"{base}[]" if base else None
        return None

    shadowed = {n.name for n in tree.find_all(nodes.Name) if n.ctx in ("store", "param")}
    out: set[str] = set()
    for node in tree.find_all((nodes.Getattr, nodes.Getitem)):
        path = chain(node)
        if path and path.split(".")[0].split("[")[0] not in shadowed:
            out.add(path)
    return out


def message_env() -> Any:
    """The sandboxed jinja2 environment rule messages are checked and rendered in."""
    from torchdoctor.sandbox import environment

    return environment()


# ----------------------------------------------------------------------------------------
# fact paths
# ----------------------------------------------------------------------------------------


def fact_paths(expr: str, names: Optional[dict[str, str]] = None) -> set[str]:
    """Dotted fact paths an expression reads: ``gpu.devices[].compute_capability``; ``names``
    maps extra names to the fact path they stand for (``item`` of a for_each rule)."""
    tree = ast.parse(f"({expr})", mode="eval")
    bound: dict[str, str] = dict(names or {})
    out: set[str] = set()

    def chain(node: ast.AST) -> Optional[str]:
        if isinstance(node, ast.Name):
            if node.id in ROOT_NAMES:
                return node.id
            return bound.get(node.id)
        if isinstance(node, ast.Attribute):
            base = chain(node.value)
            return f"{base}.{node.attr}" if base else None
        if isinstance(node, ast.Subscript):
            base = chain(node.value)
            return f"{base}[]" if base else None
        return None

    class V(ast.NodeVisitor):
        def visit_comprehension(self, node: ast.comprehension) -> None:
            src = chain(node.iter)
            if src and isinstance(node.target, ast.Name):
                bound[node.target.id] = f"{src}[]"
            self.generic_visit(node)

        def _comp(self, node: Any) -> None:
            for gen in node.generators:
                self.visit(gen)
            for field in ("elt", "key", "value"):
                if hasattr(node, field):
                    self.visit(getattr(node, field))

        visit_GeneratorExp = visit_ListComp = visit_SetComp = _comp

        def visit_Attribute(self, node: ast.Attribute) -> None:
            c = chain(node)
            if c:
                out.add(c)
            self.generic_visit(node)

        def visit_Call(self, node: ast.Call) -> None:
            # known("torch.version"), fact_or("system.machine"): the string is a fact path too
            if (isinstance(node.func, ast.Name) and node.func.id in PATH_ARGUMENT_FUNCTIONS and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                out.update(fact_paths(node.args[0].value))
            self.generic_visit(node)

        def visit_Name(self, node: ast.Name) -> None:
            if node.id in ROOT_NAMES:
                out.add(node.id)
            elif names and node.id in names:
                out.add(names[node.id])

    V().visit(tree)
    return out


def check_fact_path(path: str) -> Optional[str]:
    """None if ``path`` exists in the fact schema, else what is wrong."""
    parts = path.replace("[]", ".[]").split(".")
    root = parts[0]
    model: Any = {"workload": Workload, "job": JobFacts}.get(root) or NAMESPACE_MODELS.get(root)
    if model is None:
        return f"unknown fact namespace '{root}'"
    typ: Any = model
    walked = root
    for part in parts[1:]:
        typ = _strip(typ)
        if part == "[]":
            origin = get_origin(typ)
            if origin in (list, tuple):
                typ = get_args(typ)[0]
            elif origin is dict:
                typ = get_args(typ)[1]
            elif typ is Any:
                return None
            else:
                return f"fact '{walked}' cannot be indexed"
            walked += "[]"
            continue
        if isinstance(typ, type) and issubclass(typ, BaseModel):
            if part not in typ.model_fields:
                return f"unknown fact '{walked}.{part}'"
            typ = typ.model_fields[part].annotation
        elif get_origin(typ) is dict:
            # methods of a mapping view: get, keys, values, items
            if part in ("get", "keys", "values", "items"):
                return None
            return f"fact '{walked}' is a mapping: use {walked}[\"{part}\"]"
        else:
            return None  # an attribute of a plain value (e.g. str methods): allowed
        walked += f".{part}"
    return None


def _strip(typ: Any) -> Any:
    """Remove Annotated/Optional/Unavailable wrappers from a field annotation."""
    while True:
        origin = get_origin(typ)
        args = get_args(typ)
        if origin is not None and str(origin).endswith("Annotated"):
            typ = args[0]
            continue
        if origin is Union:
            rest = [a for a in args if a is not type(None) and a is not Unavailable]
            if len(rest) == 1:
                typ = rest[0]
                continue
            return typ
        return typ


def rule_schema() -> dict:
    """JSON schema of a rule file (written to rules/schema.json)."""
    schema = Rule.model_json_schema()
    schema["properties"].pop("path", None)
    schema["title"] = "torchdoctor rule"
    return schema


def rule_schema_text() -> str:
    return json.dumps(rule_schema(), indent=2, sort_keys=True) + "\n"

