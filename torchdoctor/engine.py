"""Evaluate rules over facts and a workload: findings, skipped rules, and a settings plan.

Conditions are simpleeval expressions over read-only *views* of the facts. Touching an
unavailable fact raises :class:`FactUnavailable` inside the expression, so the rule is
reported as skipped with that fact's path and reason; Python's short-circuit ``and``/``or``
means a rule needs only the facts it actually reaches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from torchdoctor.model import BaseModel
from simpleeval import EvalWithCompoundTypes, FeatureNotAvailable, InvalidExpression

from torchdoctor import tables
from torchdoctor.version import __version__
from torchdoctor.errors import RuleConflictError, RuleFileError
from torchdoctor.facts import NAMESPACES, Facts, JobFacts, Unavailable
from torchdoctor.report import (
    CATEGORIES,
    DroppedSetting,
    Finding,
    Overridden,
    Report,
    SettingRec,
    Skipped,
    sort_findings,
)
from torchdoctor.rules import ITEM, PRECEDENCE_RANK, Expr, Rule
from torchdoctor.safeio import clip
from torchdoctor.settings import LazyRegistry, Registry
from torchdoctor.vocabulary import (  # noqa: F401 - re-exported: rules and tests name them here
    BASE_FUNCTIONS,
    JOB_FUNCTIONS,
    NOT_FOR_RULES,
    TABLE_FUNCTIONS,
    FactUnavailable,
    functions,
    v,
    vmajmin,
)
from torchdoctor.workload import Workload

NO_WORKLOAD = "no workload declared (use `torchdoctor recommend --task ...` or --workload FILE)"
NO_JOB = "not a distributed job (run `torchrun ... -m torchdoctor check --distributed`)"


# ----------------------------------------------------------------------------------------
# read-only views
# ----------------------------------------------------------------------------------------


class UnknownText:
    """What an unavailable fact renders as inside a message."""

    def __init__(self, path: str, reason: str):
        self.path, self.reason = path, reason

    def __str__(self) -> str:
        return "unknown"

    def __getattr__(self, name: str) -> "UnknownText":
        if name.startswith("_"):
            raise AttributeError(name)
        return self

    def __getitem__(self, key: Any) -> "UnknownText":
        return self


def wrap(value: Any, path: str, strict: bool = True) -> Any:
    if isinstance(value, Unavailable):
        if strict:
            raise FactUnavailable(path, value.unavailable)
        return UnknownText(path, value.unavailable)
    if isinstance(value, BaseModel):
        return View(value, path, strict)
    if isinstance(value, list):
        return ListView(value, path, strict)
    if isinstance(value, dict):
        return MapView(value, path, strict)
    return value


class View:
    """Attribute access to a fact model; unavailable values raise (or render as unknown)."""

    __slots__ = ("_model", "_path", "_strict")

    def __init__(self, model: BaseModel, path: str, strict: bool = True):
        self._model, self._path, self._strict = model, path, strict

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name not in type(self._model).model_fields:
            raise AttributeError(f"unknown fact '{self._path}.{name}'")
        return wrap(getattr(self._model, name), f"{self._path}.{name}", self._strict)

    def __repr__(self) -> str:
        return f"<facts {self._path}>"


class UnavailableView:
    """A whole namespace that could not be determined."""

    __slots__ = ("_path", "_reason", "_strict")

    def __init__(self, path: str, reason: str, strict: bool = True):
        self._path, self._reason, self._strict = path, reason, strict

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._strict:
            raise FactUnavailable(f"{self._path}.{name}", self._reason)
        return UnknownText(f"{self._path}.{name}", self._reason)


class ListView:
    __slots__ = ("_items", "_path", "_strict")

    def __init__(self, items: list, path: str, strict: bool = True):
        self._items, self._path, self._strict = items, path, strict

    def __iter__(self):
        for i, item in enumerate(self._items):
            yield wrap(item, f"{self._path}[{i}]", self._strict)

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, i: int) -> Any:
        return wrap(self._items[i], f"{self._path}[{i}]", self._strict)

    def __contains__(self, value: Any) -> bool:
        return value in self._items

    def __bool__(self) -> bool:
        return bool(self._items)

    def __str__(self) -> str:
        return ", ".join(str(x) for x in self)


class MapView:
    """A mapping fact: ``env.variables["X"]`` is the value or None when absent (unset)."""

    __slots__ = ("_data", "_path", "_strict")

    def __init__(self, data: dict, path: str, strict: bool = True):
        self._data, self._path, self._strict = data, path, strict

    def __getitem__(self, key: str) -> Any:
        return wrap(self._data.get(key), f'{self._path}["{key}"]', self._strict)

    def get(self, key: str, default: Any = None) -> Any:
        if key not in self._data:
            return default
        return self[key]

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def keys(self) -> list:
        return list(self._data)

    def values(self) -> list:
        return [self[k] for k in self._data]

    def items(self) -> list:
        return [(k, self[k]) for k in self._data]

    def __iter__(self):
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __bool__(self) -> bool:
        return bool(self._data)


def _allow_view_methods() -> None:
    from torchdoctor.sandbox import MAP_METHODS, allow_methods

    allow_methods(MapView, MAP_METHODS)


_allow_view_methods()


def views(facts: Facts, workload: Optional[Workload], strict: bool = True,
          job: Optional[JobFacts] = None) -> dict[str, Any]:
    names: dict[str, Any] = {}
    for ns in NAMESPACES:
        value = getattr(facts, ns)
        if isinstance(value, Unavailable):
            names[ns] = UnavailableView(ns, value.unavailable, strict)
        else:
            names[ns] = View(value, ns, strict)
    names["paste"] = View(facts.paste, "paste", strict)  # what a pasted text said (empty for probes)
    if workload is None:
        names["workload"] = UnavailableView("workload", NO_WORKLOAD, strict)
    else:
        names["workload"] = View(workload, "workload", strict)
    names["job"] = UnavailableView("job", NO_JOB, strict) if job is None else View(job, "job", strict)
    return names


# ----------------------------------------------------------------------------------------
# functions available to conditions: torchdoctor/vocabulary.py (rules.py reads the names too)
# ----------------------------------------------------------------------------------------


def make_evaluator(names: dict[str, Any], job: Optional[JobFacts] = None) -> EvalWithCompoundTypes:
    fns = functions()
    fns.update(job_functions(job))
    ev = EvalWithCompoundTypes(names=names, functions=fns)

    def known(path: str) -> bool:
        """``known("torch.version")``: whether a fact is available (never skips the rule)."""
        try:
            ev.eval(str(path))
        except FactUnavailable:
            return False
        return True

    def fact_or(path: str, default: Any = None) -> Any:
        """``fact_or("system.machine")``: the fact, or ``default`` where it is unknown (never
        skips the rule); for facts that only refine a judgement."""
        try:
            return ev.eval(str(path))
        except FactUnavailable:
            return default

    fns["known"] = known
    fns["fact_or"] = fact_or
    return ev


def _plain(value: Any) -> Any:
    """A view's value as plain JSON-like data (to compare it across ranks)."""
    if isinstance(value, View):
        return value._model.model_dump(mode="json")
    if isinstance(value, ListView):
        return [_plain(wrap(x, "", False)) if isinstance(x, BaseModel) else x for x in value._items]
    if isinstance(value, MapView):
        return {k: (x.model_dump(mode="json") if isinstance(x, BaseModel) else x) for k, x in value._data.items()}
    return value


def job_functions(job: Optional[JobFacts]) -> dict[str, Any]:
    """``differs(path, key=None)``, ``odd_ones(path, key=None)``, ``odd_ranks(path, key=None)``
    and ``keys_differing(path, prefixes=[])``: a fact path of one rank's facts (``"torch.version"``,
    ``"env.variables"`` with ``key="NCCL_IB_DISABLE"``) compared over ``job.ranks``; ranks where
    it is unknown are left out, and a fact unknown on every rank skips the rule
    (docs/writing-rules.md). Without a job every one of them skips the rule."""
    from torchdoctor.distributed import compare

    evaluators: dict[int, EvalWithCompoundTypes] = {}

    def pairs(path: str, key: Any = None) -> list:
        if job is None:
            raise FactUnavailable("job", NO_JOB)
        out = []
        for r in job.ranks:
            ev = evaluators.get(r.rank) or make_evaluator(views(r.facts, None))
            evaluators[r.rank] = ev
            try:
                value = _plain(ev.eval(f"({path})"))
            except FactUnavailable:
                out.append((r.rank, compare.UNKNOWN))
                continue
            if key is not None:
                value = value.get(str(key)) if isinstance(value, dict) else None
            out.append((r.rank, value))
        known = compare.known(out)
        if not known:
            raise FactUnavailable(f"job.ranks[].facts.{path}", "unknown on every rank")
        return known

    return {
        "differs": lambda path, key=None: compare.differs(pairs(path, key)),
        "odd_ones": lambda path, key=None: compare.odd_ones(job, pairs(path, key)),  # type: ignore[arg-type]
        "odd_ranks": lambda path, key=None: compare.odd_ranks(pairs(path, key)),
        "keys_differing": lambda path, prefixes=(): compare.keys_differing(pairs(path), list(prefixes)),
    }


_JOB_RULE: dict[str, bool] = {}


def is_job_rule(rule: Rule) -> bool:
    """A rule over a job: its condition reads ``job`` or calls a job function. Such rules are
    evaluated only by ``check --distributed`` (with a job); every other rule only without."""
    if rule.when not in _JOB_RULE:
        if "job" not in rule.when and not any(f in rule.when for f in JOB_FUNCTIONS):
            return False  # no name that could make it one: no need to parse (every run, every rule)
        from torchdoctor.rules import called_functions, fact_paths

        roots = {p.split(".")[0].split("[")[0] for p in fact_paths(rule.when)}
        _JOB_RULE[rule.when] = "job" in roots or bool(called_functions(rule.when) & set(JOB_FUNCTIONS))
    return _JOB_RULE[rule.when]


# ----------------------------------------------------------------------------------------
# evaluation
# ----------------------------------------------------------------------------------------


_LAST_EVALUATOR: list = []
"""(facts, workload, job, evaluator) of the facts judged last: one evaluate() judges ~130 rules over the same
facts, and building a view of them and an evaluator per rule was 2-3 ms of a triage. Keyed by identity, holding
the objects (so no id is reused while the entry lives); an evaluator keeps no state between its evaluations."""


def _evaluator(facts: Facts, workload: Optional[Workload], job: Optional[JobFacts]) -> EvalWithCompoundTypes:
    last = _LAST_EVALUATOR[0] if _LAST_EVALUATOR else None
    if last is not None and last[0] is facts and last[1] is workload and last[2] is job:
        return last[3]
    ev = make_evaluator(views(facts, workload, strict=True, job=job), job)
    _LAST_EVALUATOR[:] = [(facts, workload, job, ev)]
    return ev


@dataclass
class Outcome:
    rule: Rule
    status: str  # fired | ok | skipped | error
    message: str = ""
    recommend: Optional[dict[str, Any]] = None
    needs: str = ""
    reason: str = ""
    category: Optional[str] = None
    """The finding's category where a for_each rule's ``item_category`` set it."""


def outcomes(rule: Rule, facts: Facts, workload: Optional[Workload],
             job: Optional[JobFacts] = None) -> list[Outcome]:
    """The rule's outcome, or for a ``for_each`` rule one per item that fired (``ok`` when
    none did; ``skipped`` when the list is unknown; an item whose condition reads a fact that
    is unknown for it is passed over)."""
    if rule.for_each is None:
        return [evaluate_rule(rule, facts, workload, job)]
    names = views(facts, workload, strict=True, job=job)
    try:
        items = list(make_evaluator(names, job).eval(rule.for_each))
    except FactUnavailable as exc:
        return [Outcome(rule, "skipped", needs=exc.path, reason=exc.reason)]
    except Exception as exc:  # noqa: BLE001 - not a list after all: a rule bug
        return [Outcome(rule, "error", reason=f"for_each: {_reason(exc)}")]
    fired: list[Outcome] = []
    for item in items:
        out = evaluate_rule(rule, facts, workload, job, {ITEM: item})
        if out.status == "error":
            return [out]
        if out.status == "fired":
            fired.append(out)
    return fired or [Outcome(rule, "ok")]


def _item_category(rule: Rule, ev: EvalWithCompoundTypes) -> Optional[str]:
    if rule.item_category is None:
        return None
    try:
        value = ev.eval(f"({rule.item_category})")
    except Exception:  # noqa: BLE001 - an unknown category keeps the rule's own
        return None
    return value if isinstance(value, str) and value in CATEGORIES else None


def evaluate_rule(rule: Rule, facts: Facts, workload: Optional[Workload],
                  job: Optional[JobFacts] = None, bound: Optional[dict[str, Any]] = None) -> Outcome:
    """One evaluation of the rule (over a job's facts for a job rule); ``bound`` adds names
    (``item`` of a for_each rule)."""
    ev = _evaluator(facts, workload, job) if not bound else make_evaluator(
        {**views(facts, workload, strict=True, job=job), **bound}, job)
    try:
        fired = bool(ev.eval(f"({rule.when})"))
    except FactUnavailable as exc:
        return Outcome(rule, "skipped", needs=exc.path, reason=exc.reason)
    except (InvalidExpression, FeatureNotAvailable, TypeError, ValueError, KeyError,
            AttributeError, IndexError, ZeroDivisionError, SyntaxError) as exc:
        return Outcome(rule, "error", reason=_reason(exc))
    if not fired:
        return Outcome(rule, "ok")
    recommend: dict[str, Any] = {}
    for key, value in rule.recommend.items():
        if isinstance(value, Expr):
            try:
                recommend[key] = ev.eval(f"({value.expr})")
            except FactUnavailable as exc:
                return Outcome(rule, "skipped", needs=exc.path, reason=exc.reason)
            except Exception as exc:  # noqa: BLE001 - a broken expression is a rule bug
                return Outcome(rule, "error", reason=f"recommend {key}: {_reason(exc)}")
        else:
            recommend[key] = value
    return Outcome(rule, "fired", message=render_message(rule, facts, workload, job, bound),
                   recommend=recommend, category=_item_category(rule, ev))


def _as_typed(text: Any) -> str:
    """A version in a reason: as it is when short printable text, else bounded by clip()."""
    if isinstance(text, str) and len(text) <= 80 and text.isprintable():
        return text
    return clip(text)


def _reason(exc: BaseException) -> str:
    """A rule error's reason, bounded (an exception may quote a value of any size)."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - e.g. an int over 4300 digits in the message
        text = ""
    return f"{type(exc).__name__}: {' '.join(text.split())[:300]}"


def render_message(rule: Rule, facts: Facts, workload: Optional[Workload],
                   job: Optional[JobFacts] = None, bound: Optional[dict[str, Any]] = None) -> str:
    """The rule's message, rendered in the sandbox (:mod:`torchdoctor.sandbox`).

    What the message *does* wrong (call a function it may not, reach a private attribute,
    build a value or loop beyond the budgets) is a rule error: RuleFileError with the rule
    file's ``path:line``, exit 2. What the *facts* make fail (an index out of range, a
    version that does not parse) keeps the finding with its summary."""
    from torchdoctor import sandbox

    fns = functions()
    strict = make_evaluator({**views(facts, workload, strict=True, job=job), **(bound or {})},
                            job).functions
    fns["known"], fns["fact_or"] = strict["known"], strict["fact_or"]  # as in `when`
    fns.update({name: strict[name] for name in JOB_FUNCTIONS})
    context = views(facts, workload, strict=False, job=job)
    context.update(bound or {})
    context.update(fns)
    try:
        text = sandbox.render(rule.message, context, fns)
    except (sandbox.TemplateProblem, sandbox.security_error()) as exc:
        raise message_error(rule, exc) from None
    except Exception as exc:  # noqa: BLE001 - never lose a finding over its wording
        text = f"{rule.summary} (message could not be rendered: {type(exc).__name__})"
    return " ".join(text.split())


def message_error(rule: Rule, exc: BaseException) -> RuleFileError:
    """``path:line: rule ID: message: what`` for a message the sandbox refused."""
    where = f"rule {rule.id}"
    if rule.path:
        from torchdoctor import yamlio

        try:
            text = yamlio.read_text(rule.path, RuleFileError, what="rule file")
            where = f"{rule.path}:{yamlio.line_of_key(text, ('message',))}: rule {rule.id}"
        except RuleFileError:
            where = f"{rule.path}: rule {rule.id}"
    return RuleFileError(f"{where}: message: {' '.join(str(exc).split())[:300]}")


def evaluate(
    rules: Sequence[Rule],
    facts: Facts,
    workload: Optional[Workload] = None,
    *,
    command: str = "check",
    registry: Optional[Registry] = None,
    torch_version: Optional[str] = None,
    ignore: Iterable[str] = (),
    job: Optional[JobFacts] = None,
) -> Report:
    """Findings, skipped rules and the plan. Without ``job`` the rules over a job are left
    out (not evaluated, not counted); with it only those are evaluated (is_job_rule)."""
    registry = registry or LazyRegistry()
    ignored = set(ignore)
    findings: list[Finding] = []
    skipped: list[Skipped] = []
    fired: list[Outcome] = []
    evaluated = 0
    for rule in rules:
        if rule.id in ignored or is_job_rule(rule) != (job is not None):
            continue
        evaluated += 1
        for out in outcomes(rule, facts, workload, job):
            if out.status == "skipped":
                skipped.append(Skipped(id=rule.id, needs=out.needs, reason=out.reason))
            elif out.status == "error":
                skipped.append(Skipped(id=rule.id, needs="(rule error)", reason=out.reason))
            elif out.status == "fired":
                fired.append(out)
                findings.append(
                    Finding(
                        id=rule.id,
                        severity=rule.severity,
                        category=out.category or rule.category,
                        message=out.message,
                        summary=rule.summary,
                        fix=rule.fix.strip(),
                        references=rule.references,
                    )
                )
    for problem in facts.problems:
        findings.append(Finding(id="probe-problem", severity="warning", category="probe", message=problem))
    for note in facts.notes:
        findings.append(Finding(id="reading-note", severity="info", category="probe", message=note))
    target = torch_version or _torch_version(facts)
    settings, dropped = resolve_plan(fired, registry, target)
    return Report(
        tool_version=__version__,
        command=command,
        torch_version=target,
        facts=facts,
        workload=workload,
        findings=sort_findings(findings),
        skipped=sorted(skipped, key=lambda s: s.id),
        settings=settings,
        dropped=dropped,
        rules_evaluated=evaluated,
    )


def _torch_version(facts: Facts) -> Optional[str]:
    torch = facts.torch
    if isinstance(torch, Unavailable) or isinstance(torch.version, Unavailable):
        return None
    return torch.version


def resolve_plan(
    fired: Sequence[Outcome], registry: Registry, torch_version: Optional[str]
) -> tuple[list[SettingRec], list[DroppedSetting]]:
    """Merge recommendations by precedence; equal precedence with different values is a bug."""
    by_key: dict[str, list[tuple[Outcome, Any]]] = {}
    dropped: list[DroppedSetting] = []
    for out in fired:
        for key, value in (out.recommend or {}).items():
            setting = registry[key]
            try:
                value = setting.validate_value(value)
            except ValueError as exc:
                dropped.append(DroppedSetting(key=key, value=clip(value), rule=out.rule.id, reason=str(exc)))
                continue
            if not setting.available_in(torch_version):
                dropped.append(
                    DroppedSetting(
                        key=key,
                        value=value,
                        rule=out.rule.id,
                        reason=f"{key} does not exist or is not needed in torch {_as_typed(torch_version)}",
                    )
                )
                continue
            if not setting.available_in(torch_version, value):
                note = setting.resolve(torch_version).note
                dropped.append(
                    DroppedSetting(
                        key=key,
                        value=value,
                        rule=out.rule.id,
                        reason=f"{key} = {clip(value)} does not exist in torch {_as_typed(torch_version)}"
                        + (f": {' '.join(note.split())}" if note else ""),
                    )
                )
                continue
            by_key.setdefault(key, []).append((out, value))
    plan: list[SettingRec] = []
    for key, entries in by_key.items():
        entries.sort(key=lambda e: (PRECEDENCE_RANK[e[0].rule.precedence], e[0].rule.id))
        win_out, win_value = entries[0]
        also: list[str] = []
        overrides: list[Overridden] = []
        for out, value in entries[1:]:
            if value == win_value:
                also.append(out.rule.id)
            elif out.rule.precedence == win_out.rule.precedence:
                raise RuleConflictError(
                    f"rules '{win_out.rule.id}' and '{out.rule.id}' (both {out.rule.precedence}) "
                    f"recommend {key} = {clip(win_value)} and {clip(value)}: a rule-set conflict"
                )
            else:
                overrides.append(Overridden(rule=out.rule.id, value=value, reason=out.message))
        plan.append(
            SettingRec(
                key=key,
                value=win_value,
                rule=win_out.rule.id,
                reason=win_out.message,
                kind=registry[key].kind,
                precedence=win_out.rule.precedence,
                also=also,
                overrides=overrides,
            )
        )
    plan, dropped = _drop_unmet_requirements(plan, dropped, registry)
    plan.sort(key=lambda s: (registry[s.key].kind != "env", registry[s.key].kind == "code", s.key))
    # the statement that applies each setting for the target torch, written once here from the
    # registry: every view (snippet, terminal, Markdown) shows this code, never `key = value`
    plan = [rec.model_copy(update={"code": registry[rec.key].render(rec.value, torch_version),
                                   "guard": registry[rec.key].guard,
                                   "uses": [use.how for use in registry[rec.key].uses]})
            for rec in plan]
    return plan, dropped


def _drop_unmet_requirements(
    plan: list[SettingRec], dropped: list[DroppedSetting], registry: Registry
) -> tuple[list[SettingRec], list[DroppedSetting]]:
    """Drop each setting whose registry ``requires`` is unmet: the required setting was asked
    for but is not in the plan (dropped), or is there with another value. Repeated until
    nothing changes, so a drop cascades. A required setting that no rule asked for drops nothing."""
    kept = {rec.key: rec for rec in plan}
    asked = set(kept) | {d.key for d in dropped}
    changed = True
    while changed:
        changed = False
        for key, rec in list(kept.items()):
            for req in registry[key].requires:
                other = kept.get(req.setting)
                if req.setting not in asked:
                    continue
                if other is not None and (req.values is None or other.value in req.values):
                    continue
                wanted = req.setting
                if req.values:
                    wanted += " = " + " or ".join(clip(v) for v in req.values)
                state = "was dropped from" if other is None else f"is {clip(other.value)} in"
                reason = f"needs {wanted}, which {state} this plan: {' '.join(req.reason.split())}"
                dropped += [DroppedSetting(key=key, value=rec.value, rule=rule, reason=reason)
                            for rule in [rec.rule, *rec.also]]
                del kept[key]
                changed = True
                break
    return [rec for rec in plan if rec.key in kept], dropped


# ----------------------------------------------------------------------------------------
# examples (shared by pytest and `torchdoctor rules test`)
# ----------------------------------------------------------------------------------------


@dataclass
class ExampleResult:
    rule: str
    group: str
    name: str
    passed: bool
    detail: str = ""
    xfail: Optional[str] = None


def example_facts(example_facts_dict: dict) -> tuple[Facts, Optional[Workload]]:
    data = dict(example_facts_dict)
    wl = data.pop("workload", None)
    data.pop("job", None)  # example_job()
    facts = Facts.model_validate({"origin": "synthetic", **data})
    workload = Workload.model_validate(wl) if wl is not None else None
    return facts, workload


def example_job(example_facts_dict: dict) -> Optional[JobFacts]:
    """An example's ``job`` (a rule over a job): each rank's ``facts`` is a partial Facts."""
    job = example_facts_dict.get("job")
    if job is None:
        return None
    data = dict(job)
    data.setdefault("launcher", "torchrun")
    data.setdefault("timeout_s", 60.0)
    data.setdefault("world_size", len(data.get("ranks") or []))
    data["ranks"] = [{"node": 0, "host": "node0", **r,
                      "facts": {"origin": "synthetic", **(r.get("facts") or {})}}
                     for r in data.get("ranks") or []]
    return JobFacts.model_validate(data)


def run_examples(rule: Rule) -> list[ExampleResult]:
    results = []
    for group in ("fires", "ok", "skips"):
        for ex in getattr(rule.examples, group):
            results.append(run_example(rule, group, ex))
    return results


def run_example(rule: Rule, group: str, ex: Any) -> ExampleResult:
    def result(passed: bool, detail: str = "") -> ExampleResult:
        return ExampleResult(rule.id, group, ex.name, passed, detail, ex.xfail)

    try:
        facts, workload = example_facts(ex.facts)
        job = example_job(ex.facts)
    except Exception as exc:  # noqa: BLE001 - a bad example is a failed example
        return result(False, f"example facts invalid: {str(exc).splitlines()[0:3]}")
    outs = outcomes(rule, facts, workload, job)
    # a for_each rule fires when any item does; its first firing is the one compared
    out = next((o for o in outs if o.status in ("error", "skipped")), None) or \
        next((o for o in outs if o.status == "fired"), outs[0])
    expected = {"fires": "fired", "ok": "ok", "skips": "skipped"}[group]
    if out.status != expected:
        extra = f" (needs {out.needs}: {out.reason})" if out.status == "skipped" else ""
        extra = f" ({out.reason})" if out.status == "error" else extra
        return result(False, f"expected {expected}, got {out.status}{extra}")
    if group == "fires":
        if ex.message is not None and " ".join(ex.message.split()) != out.message:
            return result(False, f"message differs:\n  expected: {ex.message}\n  got:      {out.message}")
        if ex.recommend is not None and ex.recommend != out.recommend:
            return result(False, f"recommend differs: expected {ex.recommend}, got {out.recommend}")
    if group == "skips" and ex.needs and ex.needs != out.needs and not out.needs.startswith(ex.needs):
        return result(False, f"expected to need {ex.needs}, needed {out.needs}")
    return result(True)
