"""Compare two environments: what differs, what matters, what is only unknown on one side.

Facts are flattened to ``path -> value`` (``torch.version``, ``gpu.devices[0].name``,
``packages.versions["numpy"]``); which paths matter, and in which order, is data
(``rules/data/diff_relevance.yaml``). A value that one side could not determine is *unknown*,
never a difference that matters. Pure functions: only ``cli.py`` reads files and exits.
"""

from __future__ import annotations

import ast
import functools
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from pydantic import BaseModel

from torchdoctor.render.text import md_cell as _md_cell
from torchdoctor.render.text import show_value
from torchdoctor.facts import Facts, Unavailable

RELEVANCE_FILE = "diff_relevance"
SKIP_TOP = {"schema_version", "origin", "problems", "notes", "sources"}  # sources: where a pasted fact was read, not the environment


class _Absent:
    """A path present on one side only (the container is known on both)."""

    _instance: Optional["_Absent"] = None

    def __new__(cls) -> "_Absent":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "ABSENT"


ABSENT = _Absent()
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


@dataclass(frozen=True)
class Difference:
    path: str
    left: Any
    right: Any
    relevant: bool
    """The path is one that matters (rules/data/diff_relevance.yaml)."""
    unknown: bool
    """One side could not determine the value: not compared."""
    rank: int = 10**6
    why: str = ""
    pattern: str = ""
    """The diff_relevance.yaml path pattern that classified it ("" for noise)."""


@dataclass
class DiffResult:
    left_name: str
    right_name: str
    left_origin: str
    right_origin: str
    relevant: list[Difference] = field(default_factory=list)
    """Known on both sides, different, and it matters: most important first."""
    unknown: list[Difference] = field(default_factory=list)
    """Relevant paths known on one side only (not compared)."""
    noise: list[Difference] = field(default_factory=list)
    """Differences that do not matter."""
    unknown_noise: list[Difference] = field(default_factory=list)
    """Noise paths known on one side only."""
    identical: int = 0
    """Paths with the same value on both sides."""

    @property
    def exit_code(self) -> int:
        return 1 if self.relevant else 0


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


# ----------------------------------------------------------------------------------------
# rendering
# ----------------------------------------------------------------------------------------


def show(value: Any) -> str:
    """A value as a person reads it."""
    if value is ABSENT:
        return "(not present)"
    if isinstance(value, dict) and value:
        return json.dumps(value, sort_keys=True)
    return show_value(value)


GROUP_MIN = 4
"""Unknown-on-one-side rows of one pattern are shown as one row from this many on."""


def grouped_unknown(rows: list[Difference]) -> list[tuple[str, str, str]]:
    """(fact, left, right) display rows for facts known on one side only: a pattern that
    covers GROUP_MIN or more paths (every torch.settings key) becomes one row."""
    by_pattern: dict[str, list[Difference]] = {}
    for d in rows:
        by_pattern.setdefault(d.pattern or d.path, []).append(d)
    out: list[tuple[str, str, str]] = []
    done: set[str] = set()
    for d in rows:
        key = d.pattern or d.path
        group = by_pattern[key]
        if len(group) < GROUP_MIN:
            out.append((d.path, show(d.left), show(d.right)))
            continue
        if key in done:
            continue
        done.add(key)
        out.append((f"{key} ({len(group)} facts)", _side(group, "left"), _side(group, "right")))
    return out


def _side(group: list[Difference], side: str) -> str:
    values = [getattr(d, side) for d in group]
    reasons = {v.unavailable for v in values if isinstance(v, Unavailable)}
    if len(reasons) == len(values) or (reasons and all(isinstance(v, Unavailable) for v in values)):
        return f"unknown ({'; '.join(sorted(reasons))})"
    n = sum(1 for v in values if not isinstance(v, Unavailable))
    return f"{n} known value(s)" + (f", {len(values) - n} unknown" if n < len(values) else "")


def to_json_value(value: Any) -> Any:
    if value is ABSENT:
        return {"absent": True}
    if isinstance(value, Unavailable):
        return {"unavailable": value.unavailable}
    return value


def _entry(d: Difference) -> dict[str, Any]:
    out = {"path": d.path, "left": to_json_value(d.left), "right": to_json_value(d.right)}
    if d.why:
        out["why"] = d.why
    return out


def headline(result: DiffResult) -> str:
    n = len(result.relevant)
    if n:
        text = f"{n} difference(s) that matter"
    else:
        text = "no difference that matters"
    extra = []
    if result.unknown:
        extra.append(f"{len(result.unknown)} relevant fact(s) known on one side only")
    if result.noise:
        extra.append(f"{len(result.noise)} other difference(s)")
    return text + (f" ({'; '.join(extra)})" if extra else "")


def render_json(result: DiffResult) -> str:
    data = {
        "left": {"name": result.left_name, "origin": result.left_origin},
        "right": {"name": result.right_name, "origin": result.right_origin},
        "relevant": [_entry(d) for d in result.relevant],
        "unknown": [_entry(d) for d in result.unknown],
        "noise": [_entry(d) for d in result.noise],
        "unknown_noise": [_entry(d) for d in result.unknown_noise],
        "identical": result.identical,
        "summary": headline(result),
        "exit_code": result.exit_code,
    }
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def render_markdown(result: DiffResult, show_all: bool = False) -> str:
    """GitHub Markdown for a ticket. Paths hold keys from the facts (an environment variable's
    name, a package's) and values hold any text: both are escaped so that no ``|`` adds a
    column, no backtick closes a code span and no ``@name`` notifies anyone."""
    from torchdoctor.render.text import md_code, no_mentions

    def md_cell(text: str) -> str:
        return no_mentions(_md_cell(text))

    a, b = md_cell(result.left_name), md_cell(result.right_name)
    lines = [f"## torchdoctor diff: {a} ↔ {b}", "", f"**{headline(result)}**", ""]

    def table(rows: list[Difference], with_why: bool) -> None:
        head = f"| fact | {a} | {b} |" + (" why |" if with_why else "")
        lines.extend([head, "|---|---|---|" + ("---|" if with_why else "")])
        for d in rows:
            row = f"| {md_code(d.path)} | {md_cell(show(d.left))} | {md_cell(show(d.right))} |"
            lines.append(row + (f" {md_cell(d.why)} |" if with_why else ""))
        lines.append("")

    if result.relevant:
        lines += ["### Differences that matter", ""]
        table(result.relevant, True)
    if result.unknown:
        lines += ["### Known on one side only (not compared)", "",
                  f"| fact | {a} | {b} |", "|---|---|---|"]
        rows = ([(d.path, show(d.left), show(d.right)) for d in result.unknown] if show_all
                else grouped_unknown(result.unknown))
        for fact, left, right in rows:
            lines.append(f"| {md_code(fact)} | {md_cell(left)} | {md_cell(right)} |")
        lines.append("")
    if show_all:
        if result.noise:
            lines += ["### Other differences", ""]
            table(result.noise, False)
        if result.unknown_noise:
            lines += ["### Other facts known on one side only", ""]
            table(result.unknown_noise, False)
    else:
        hidden = len(result.noise) + len(result.unknown_noise)
        if hidden:
            lines += [f"{len(result.noise)} other difference(s) and {len(result.unknown_noise)} other "
                      f"fact(s) known on one side only are not shown (`--all` lists them).", ""]
    lines.append(f"{result.identical} fact(s) are the same on both sides.")
    return "\n".join(lines) + "\n"


def render_terminal(result: DiffResult, show_all: bool = False, color: bool = False,
                    width: int = 100) -> str:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table
    from rich.text import Text

    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="standard" if color else None,
                      force_terminal=color, no_color=not color, highlight=False, emoji=False)
    a, b = result.left_name, result.right_name
    style = "bold red" if result.relevant else "bold green"
    console.print(Text.assemble(("torchdoctor diff: ", "bold"), a, " ↔ ", b))
    console.print(Text(headline(result), style=style))

    def table(title: str, rows: list[Difference], with_why: bool, dim: bool = False) -> None:
        t = Table(title=title, title_justify="left", expand=False, style="dim" if dim else None)
        t.add_column("fact", style="bold", overflow="fold")
        t.add_column(escape(a), overflow="fold")
        t.add_column(escape(b), overflow="fold")
        if with_why:
            t.add_column("why", style="dim", overflow="fold")
        for d in rows:
            cells = [escape(d.path), escape(show(d.left)), escape(show(d.right))]
            t.add_row(*(cells + [escape(d.why)] if with_why else cells))
        console.print(t)

    if result.relevant:
        table("Differences that matter", result.relevant, True)
    if result.unknown:
        t = Table(title="Known on one side only (not compared)", title_justify="left", style="dim")
        for col in ("fact", a, b):
            t.add_column(escape(col), overflow="fold")
        rows = ([(d.path, show(d.left), show(d.right)) for d in result.unknown] if show_all
                else grouped_unknown(result.unknown))
        for fact, left, right in rows:
            t.add_row(escape(fact), escape(left), escape(right))
        console.print(t)
    if show_all:
        if result.noise:
            table("Other differences", result.noise, False, dim=True)
        if result.unknown_noise:
            table("Other facts known on one side only", result.unknown_noise, False, dim=True)
    else:
        hidden = len(result.noise) + len(result.unknown_noise)
        if hidden:
            console.print(Text(f"{len(result.noise)} other difference(s) and {len(result.unknown_noise)} "
                               "other fact(s) known on one side only not shown (--all lists them).",
                               style="dim"))
    console.print(Text(f"{result.identical} fact(s) are the same on both sides.", style="dim"))
    return buf.getvalue()


def render_diff(result: DiffResult, fmt: str = "terminal", show_all: bool = False,
                color: bool = False, width: int = 100) -> str:
    if fmt == "json":
        return render_json(result)
    if fmt == "markdown":
        return render_markdown(result, show_all)
    return render_terminal(result, show_all, color=color, width=width)
