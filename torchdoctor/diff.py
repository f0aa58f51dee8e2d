"""Compare two environments: what differs, what matters, what is only unknown on one side.

Facts are flattened to ``path -> value`` (``torch.version``, ``gpu.devices[0].name``,
``packages.versions["numpy"]``); which paths matter, and in which order, is data
(``rules/data/diff_relevance.yaml``). A value that one side could not determine is *unknown*,
never a difference that matters. Pure functions: only ``cli.py`` reads files and exits.

The comparison only: its result (:class:`~torchdoctor.report.DiffResult`) is data in
``report.py``, and ``render/diff.py`` shows it (terminal, JSON, Markdown); the renderers'
names are re-exported here for the callers that import them from this module.
"""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass
from typing import Any, Iterator, Optional

from torchdoctor.model import BaseModel

from torchdoctor.facts import Facts, Unavailable
from torchdoctor.render.diff import (  # noqa: F401 - the renderers, re-exported (old import path)
    GROUP_MIN,
    grouped_unknown,
    headline,
    render_diff,
    render_json,
    render_markdown,
    render_terminal,
    show,
    to_json_value,
)
from torchdoctor.report import ABSENT, Difference, DiffResult  # noqa: F401 - re-exported

RELEVANCE_FILE = "diff_relevance"
SKIP_TOP = {"schema_version", "origin", "problems", "notes", "sources"}  # sources: where a pasted fact was read, not the environment


NOT_LISTED = "the report does not list it"


# ----------------------------------------------------------------------------------------
# flattening
# ----------------------------------------------------------------------------------------


def _is_scalar_list(value: list) -> bool:
    return all(not isinstance(v, (BaseModel, dict, list)) for v in value)


def iter_facts(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    """Yield ``(path, leaf)``: leaves are scalars, None, Unavailable, lists of scalars, and
    empty dicts/lists. Unavailable containers are leaves, so everything below them is unknown."""
    if isinstance(value, Unavailable):
        yield path, value
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            if not path and name in SKIP_TOP:
                continue
            yield from iter_facts(getattr(value, name), f"{path}.{name}" if path else name)
    elif isinstance(value, dict):
        if not value:
            yield path, {}
        for key in sorted(value, key=str):
            yield from iter_facts(value[key], f'{path}["{key}"]')
    elif isinstance(value, list):
        if not value or _is_scalar_list(value):
            yield path, list(value)
        else:
            for i, item in enumerate(value):
                yield from iter_facts(item, f"{path}[{i}]")
    else:
        yield path, value


def flatten(facts: Facts) -> dict[str, Any]:
    return dict(iter_facts(facts, ""))


_PARENT = re.compile(r'(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\d+\]|\["(?:[^"\\]|\\.)*"\])$')


def parent_paths(path: str) -> Iterator[str]:
    """``gpu.devices[0].name`` -> ``gpu.devices[0]``, ``gpu.devices``, ``gpu``."""
    while True:
        m = _PARENT.search(path)
        if not m or m.start() == 0:
            return
        path = path[: m.start()]
        yield path


def _containers(flat: dict[str, Any]) -> set[str]:
    out: set[str] = set()
    for path in flat:
        out.update(parent_paths(path))
    return out


def lookup(flat: dict[str, Any], path: str, origin: str) -> Any:
    """The value at ``path``: the leaf, the Unavailable of an unknown ancestor, or ABSENT
    (an Unavailable(NOT_LISTED) for a pasted report, which lists only some things)."""
    if path in flat:
        return flat[path]
    for parent in parent_paths(path):
        value = flat.get(parent)
        if isinstance(value, Unavailable):
            return value
    if origin == "report":
        return Unavailable(unavailable=NOT_LISTED)
    return ABSENT


# ----------------------------------------------------------------------------------------
# relevance (rules/data/diff_relevance.yaml)
# ----------------------------------------------------------------------------------------


QUANTIFIERS = ("one_side", "either_side")
"""How a conditional reason's test applies to the two values of a row: true of exactly one
side (``one_side``) or of at least one (``either_side``)."""


@dataclass(frozen=True)
class Reason:
    quantifier: str
    test: str
    """A simpleeval expression over ``value`` (one side's value; None where the fact is absent
    on that side), with ``v(text)`` (a packaging Version) and ``len``."""
    why: str


@dataclass(frozen=True)
class Pattern:
    pattern: str
    why: str
    """The reason shown when no conditional reason applies: true of every difference here."""
    rank: int
    regex: "re.Pattern[str]"
    reasons: tuple[Reason, ...] = ()
    """Conditional reasons (``why_when`` in the YAML), tried in order."""


def _v(text: Any) -> Any:
    from packaging.version import Version

    return Version(str(text).strip())


def _test(test: str, value: Any) -> bool:
    """A reason's test on one side; anything it cannot evaluate (an unparseable version, None
    compared with a number) is false."""
    from simpleeval import EvalWithCompoundTypes

    ev = EvalWithCompoundTypes(names={"value": None if value is ABSENT else value},
                               functions={"v": _v, "len": len})
    try:
        return ev.eval(test) is True
    except Exception:  # noqa: BLE001 - a test that does not apply to this value is false
        return False


def reason_for(pattern: Pattern, left: Any, right: Any) -> str:
    """The ``why`` of a relevant difference: the first conditional reason whose test holds for
    these two values, else the pattern's unconditional reason. A side that is unknown
    (Unavailable) makes every conditional reason unknown too."""
    if isinstance(left, Unavailable) or isinstance(right, Unavailable):
        return pattern.why
    for r in pattern.reasons:
        a, b = _test(r.test, left), _test(r.test, right)
        if (a != b) if r.quantifier == "one_side" else (a or b):
            return r.why
    return pattern.why


def _compile(pattern: str) -> "re.Pattern[str]":
    return re.compile("".join(".*" if c == "*" else re.escape(c) for c in pattern) + r"\Z")


@functools.lru_cache(maxsize=None)
def load_relevance(directory: Optional[str] = None) -> tuple[tuple[Pattern, ...], tuple[Pattern, ...]]:
    """(noise patterns, relevant patterns in rank order) from diff_relevance.yaml."""
    from torchdoctor.errors import RuleFileError
    from torchdoctor.tables import DataFileError, load

    try:
        data = load(RELEVANCE_FILE, directory)
    except DataFileError as exc:
        raise RuleFileError(str(exc)) from None
    if not isinstance(data, dict) or not isinstance(data.get("relevant"), list):
        raise RuleFileError(f"{RELEVANCE_FILE}.yaml: expected a mapping with a 'relevant' list")

    def reasons(entry: dict, where: str) -> tuple[Reason, ...]:
        out = []
        items = entry.get("why_when") or []
        if not isinstance(items, list):
            raise RuleFileError(f"{where}: 'why_when' must be a list")
        for j, item in enumerate(items):
            keys = [q for q in QUANTIFIERS if isinstance(item, dict) and q in item]
            if len(keys) != 1 or not isinstance(item.get(keys[0]), str) or not item.get("why"):
                raise RuleFileError(f"{where}: why_when[{j}]: needs one of {', '.join(QUANTIFIERS)} "
                                    "(a test) and a 'why'")
            try:
                ast.parse(item[keys[0]], mode="eval")
            except SyntaxError as exc:
                raise RuleFileError(f"{where}: why_when[{j}]: invalid test: {exc.msg}") from None
            out.append(Reason(keys[0], item[keys[0]], str(item["why"])))
        return tuple(out)

    def build(entries: Any, section: str) -> tuple[Pattern, ...]:
        out = []
        for i, entry in enumerate(entries or []):
            if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                raise RuleFileError(f"{RELEVANCE_FILE}.yaml: {section}[{i}]: needs a 'path' string")
            where = f"{RELEVANCE_FILE}.yaml: {section}[{i}] ({entry['path']})"
            out.append(Pattern(entry["path"], str(entry.get("why", "")), i, _compile(entry["path"]),
                               reasons(entry, where)))
        return tuple(out)

    return build(data.get("noise"), "noise"), build(data["relevant"], "relevant")


def classify(path: str, relevance: Optional[tuple] = None) -> Optional[Pattern]:
    """The relevant pattern a path matches (None = noise)."""
    noise, relevant = relevance or load_relevance()
    if any(p.regex.match(path) for p in noise):
        return None
    for p in relevant:
        if p.regex.match(path):
            return p
    return None


# ----------------------------------------------------------------------------------------
# comparing
# ----------------------------------------------------------------------------------------


def _norm(value: Any) -> Any:
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return round(float(value), 6)
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return {k: _norm(v) for k, v in value.items()}
    return value


def same(a: Any, b: Any) -> bool:
    return _norm(a) == _norm(b)


def diff_facts(left: Facts, right: Facts, left_name: str = "A", right_name: str = "B",
               relevance: Optional[tuple] = None) -> DiffResult:
    from torchdoctor.sanitize import one_line

    relevance = relevance or load_relevance()
    fa, fb = flatten(left), flatten(right)
    ca, cb = _containers(fa), _containers(fb)
    # the names are file names as typed (any bytes: an ESC, undecodable bytes as lone
    # surrogates): shown in every output, so made safe like any text from outside
    result = DiffResult(one_line(left_name), one_line(right_name), left.origin, right.origin)
    paths = list(dict.fromkeys([*fa, *fb]))
    for path in paths:
        if (path not in fa and path in ca) or (path not in fb and path in cb):
            continue  # a leaf on one side, a container on the other: its children compare
        a, b = lookup(fa, path, left.origin), lookup(fb, path, right.origin)
        unknown = isinstance(a, Unavailable) or isinstance(b, Unavailable)
        if unknown:
            if isinstance(a, Unavailable) and isinstance(b, Unavailable):
                continue  # unknown on both sides: nothing to say
        elif same(a, b):
            result.identical += 1
            continue
        pat = classify(path, relevance)
        d = Difference(path, a, b, relevant=pat is not None, unknown=unknown,
                       rank=pat.rank if pat else 10**6, why=reason_for(pat, a, b) if pat else "",
                       pattern=pat.pattern if pat else "")
        if pat is not None:
            (result.unknown if unknown else result.relevant).append(d)
        else:
            (result.unknown_noise if unknown else result.noise).append(d)
    order = {p: i for i, p in enumerate(paths)}
    for lst in (result.relevant, result.unknown):
        lst.sort(key=lambda d: (d.rank, _natural(d.path), order[d.path]))
    for lst in (result.noise, result.unknown_noise):
        lst.sort(key=lambda d: order[d.path])
    return result


def _natural(path: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path)]
