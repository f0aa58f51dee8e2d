"""Fuzzing the whole pipeline, not only the importer (issue 8).

Inputs are what a user can hand torchdoctor: a pasted ``collect_env`` report (a real one
from the corpus, mutated: lines dropped, duplicated, swapped, cut; real field labels with
random values; huge integers; escape sequences, C1 controls, lone surrogates, bidi marks,
template and Markdown syntax, secrets; very long lines) or a facts JSON file (a recorded
machine from ``tests/machines/``, mutated: values replaced by values of another type, keys
removed or added, ``{"unavailable": ...}`` anywhere). Each input goes through what the
commands do with it:

    load_report -> evaluate (check) and plan_report (recommend, one or two tasks)
    -> redact_report -> render: terminal, json, markdown, snippet, ticket (report)
    -> diff against a second input, in all three diff formats

and one of two things must happen: a clean error (``ReportError`` / ``UserError``: one line,
no control character, no lone surrogate), or every output is produced, the JSON ones parse,
no output (nor any string inside the JSON ones) contains an ESC or another control
character that did not come from torchdoctor, none contains a lone surrogate, and the
snippet compiles.

The CI budget is fixed and derandomized (the same examples every run, no example database).
``scripts/fuzz-long.py`` runs the same pipeline over far more inputs (>= 20,000) and records
the count, the failures and the slowest input.

Known bugs being fixed elsewhere are listed in ``KNOWN_BUGS`` with the invariant they break:
an example that breaks only those is not a failure here (the long run still counts it).
``TORCHDOCTOR_FUZZ_STRICT=1`` turns them back into failures, to check a fix.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Union

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"

# ------------------------------------------------------------------------------- seeds


def _report_texts() -> list[str]:
    paths = sorted((DATA / "corpus").glob("case*.txt"))
    paths += sorted((DATA / "corpus" / "extra").glob("*.txt"))
    paths += sorted((DATA / "cases").glob("case*.txt"))
    paths += sorted((DATA / "healthy").glob("*.txt"))
    return [p.read_bytes().decode("utf-8", "replace") for p in paths]


def _facts_objects() -> list[dict]:
    paths = sorted((REPO / "tests" / "machines").glob("*.json"))
    paths.append(DATA / "faults" / "dev-container-cpu-probe.json")
    return [json.loads(p.read_text(encoding="utf-8")) for p in paths]


TEXTS = _report_texts()
FACTS = _facts_objects()

TASKS = ("classification", "detection", "segmentation", "llm-training", "llm-inference",
         "diffusion", "speech", "recsys", "research-repro")

# Text a hostile or broken input may carry.
NASTY = (
    "\x1b]0;pwned\x07",  # window title
    "\x1b[2J\x1b[H",  # clear screen
    "\x1b[31mred\x1b[0m",
    "\x9b2J",  # C1 CSI
    "\x1bP+q\x1b\\",  # DCS
    "\ud800",  # lone surrogates
    "\udfff",
    "x\udcffy",
    "\u202eevil\u202c",  # bidi override
    "\u2028\u2029",
    "\ufeff",
    "\x00",
    "\x07\x08\x7f",
    "\r",
    "\r\n",
    "\t",
    "{{ 7 * 7 }}",
    "{% for x in range(9) %}x{% endfor %}",
    "{{ cycler.__init__.__globals__.os.system('false') }}",
    "`",
    "```",
    "|",
    "</details><script>x</script>",
    "<user>",
    "[link](javascript:alert(1))",
    "@everyone @pytorch/team",
    "\\",
    "\\n",
    "'''\"\"\"",
    "# comment\nimport os",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "someone@example.com",
    "https://user:hunter2@example.com/x",
    "192.168.1.20",
    "aabb.ccdd.eeff",
    "é中文🙂",
    "\u0301\u0301\u0301",
    "N/A",
    "None",
    "True",
    "",
    " ",
)
VERSIONISH = (
    "2.5.1+cu124",
    "1.13.0a0+git",
    "2.13.0+cpu",
    "12.4",
    "9.1.0",
    "8.9",
    "12.0",
    "sm_90",
    "gfx90a",
    "0",
    "-1",
    "v1",
    "1." + "9" * 40,
    "9" * 4400,  # over Python's int-string limit (4300 digits)
    "0x" + "f" * 4400,
    "2.5.1\n+evil",
    "2.5.1\x1b[2J",
    "1e309",
    "nan",
    "inf",
)
HUGE_NUMBERS = (  # as JSON/text: Python refuses to str() an int over 4300 digits itself
    "9223372036854775808",
    "18446744073709551617",
    "-9223372036854775809",
    "1" + "0" * 30,
    "-1",
    "0",
    "9" * 4400,
    "-" + "9" * 4400,
    "1e400",  # json.loads: inf
    "-1e400",
)

# collect_env labels, with the spacing of real reports
FIELD_LABELS = (
    "PyTorch version: ",
    "Is debug build: ",
    "CUDA used to build PyTorch: ",
    "ROCM used to build PyTorch: ",
    "OS: ",
    "GCC version: ",
    "Clang version: ",
    "CMake version: ",
    "Libc version: ",
    "Python version: ",
    "Python platform: ",
    "Is CUDA available: ",
    "CUDA runtime version: ",
    "CUDA_MODULE_LOADING set to: ",
    "GPU models and configuration: ",
    "GPU 0: ",
    "GPU 1: ",
    "Nvidia driver version: ",
    "cuDNN version: ",
    "HIP runtime version: ",
    "MIOpen runtime version: ",
    "Is XNNPACK available: ",
    "CPU:",
    "Architecture: ",
    "CPU(s): ",
    "On-line CPU(s) list: ",
    "Thread(s) per core: ",
    "Core(s) per socket: ",
    "Socket(s): ",
    "NUMA node(s): ",
    "Model name: ",
    "Flags: ",
    "Versions of relevant libraries:",
    "[pip3] torch==",
    "[pip3] numpy==",
    "[pip3] nvidia-cudnn-cu12==",
    "[conda] pytorch ",
    "[conda] torch ",
    "PYTORCH_CUDA_ALLOC_CONF=",
    "Traceback (most recent call last):",
    "ImportError: ",
    "OSError: ",
    "",
)

LONG_LINE_MAX = 20_000
"""Longest line the text mutations insert (the long run raises it)."""

# ------------------------------------------------------------------------- strategies

nasty_text = st.one_of(
    st.sampled_from(NASTY),
    st.sampled_from(VERSIONISH),
    st.text(max_size=30),
    st.builds(lambda parts: "".join(parts), st.lists(st.sampled_from(NASTY + VERSIONISH), max_size=4)),
)


@st.composite
def long_line(draw) -> str:
    n = draw(st.integers(1_000, LONG_LINE_MAX))
    unit = draw(st.sampled_from(["a", "ab1", "x" * 63 + " ", "9", "/home/user/", "\x1b[0m", "é"]))
    return (unit * (n // len(unit) + 1))[:n]


field_value = st.one_of(
    nasty_text,
    st.sampled_from(HUGE_NUMBERS),
    st.builds(lambda a, b: f"{a}{b}", st.sampled_from(VERSIONISH), st.sampled_from(NASTY)),
)


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


@st.composite
def report_text(draw) -> Union[str, bytes]:
    """A corpus report, mutated; a str (which can carry lone surrogates) or its bytes."""
    text = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 6))):
        lines = _lines(text)
        kind = draw(st.sampled_from(
            ["delete", "duplicate", "swap", "truncate", "field", "revalue", "nasty", "long", "crlf"]))
        if kind == "delete" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            del lines[i : i + draw(st.integers(1, 5))]
        elif kind == "duplicate" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines[i:i] = lines[i : i + draw(st.integers(1, 6))] * draw(st.integers(1, 3))
        elif kind == "swap" and len(lines) > 1:
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "truncate" and text:
            lines = [text[: draw(st.integers(0, len(text)))]]
        elif kind == "field":  # a real label with a hostile value, anywhere
            i = draw(st.integers(0, len(lines)))
            lines.insert(i, draw(st.sampled_from(FIELD_LABELS)) + draw(field_value) + "\n")
        elif kind == "revalue" and lines:  # keep a real line's label, replace its value
            i = draw(st.integers(0, len(lines) - 1))
            label, sep, _ = lines[i].partition(":")
            if sep:
                lines[i] = label + ": " + draw(field_value) + "\n"
        elif kind == "nasty":
            i = draw(st.integers(0, len(text)))
            lines = [text[:i], draw(st.sampled_from(NASTY)), text[i:]]
        elif kind == "long":
            i = draw(st.integers(0, len(lines)))
            label = draw(st.sampled_from(FIELD_LABELS))
            lines.insert(i, label + draw(long_line()) + "\n")
        elif kind == "crlf":
            lines = [text.replace("\r\n", "\n").replace("\n", draw(st.sampled_from(["\r\n", "\r"])))]
        text = "".join(lines)
    if draw(st.booleans()):
        return text
    return text.encode("utf-8", "surrogatepass")


json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-10, 10**6),
    st.sampled_from(range(len(HUGE_NUMBERS))).map(lambda i: f"@@HUGE{i}@@"),  # see facts_json
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([1e308, -0.0, 5e-324, 8.0, 8.9, 12.0]),
    nasty_text,
    st.builds(lambda r: {"unavailable": r}, nasty_text),
)
json_value = st.recursive(
    json_leaf,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.one_of(nasty_text, st.sampled_from(["index", "name", "version"])),
                        children, max_size=4),
    ),
    max_leaves=8,
)


def _slots(obj: Any, out: list, depth: int = 0) -> list:
    """Every (container, key) inside ``obj``: where a mutation can land."""
    if depth > 12:
        return out
    if isinstance(obj, dict):
        for k, v in obj.items():
            out.append((obj, k))
            _slots(v, out, depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out.append((obj, i))
            _slots(v, out, depth + 1)
    return out


def _same_type(draw, value: Any) -> Any:
    """A hostile value of the type the model expects, so the facts still load and the hostile
    text reaches the rules and the renderers."""
    if isinstance(value, bool):
        return not value
    if value is None:
        return draw(st.sampled_from([None, {"unavailable": draw(st.sampled_from(NASTY))}]))
    if isinstance(value, int):
        return draw(st.one_of(st.integers(-3, 3), st.sampled_from(range(len(HUGE_NUMBERS))).map(
            lambda i: f"@@HUGE{i}@@"), st.integers(0, 2**70)))
    if isinstance(value, float):
        return draw(st.sampled_from([0.0, -1.0, 1e308, 5e-324, 7.5, 8.9, 10.0, 12.1, 99.9]))
    if isinstance(value, str):
        kind = draw(st.sampled_from(["nasty", "around", "versionish", "long"]))
        if kind == "nasty":
            return draw(nasty_text)
        if kind == "around":
            return draw(st.sampled_from(NASTY)) + value + draw(st.sampled_from(NASTY))
        if kind == "versionish":
            return draw(st.sampled_from(VERSIONISH))
        return draw(long_line())
    if isinstance(value, list):
        if value and draw(st.booleans()):
            return value + [json.loads(json.dumps(value[-1]))] * draw(st.integers(1, 3))
        return value[: draw(st.integers(0, len(value)))]
    if isinstance(value, dict):
        out = dict(value)
        if out and draw(st.booleans()):
            key = draw(st.sampled_from(sorted(out)))
            out[key] = _same_type(draw, out[key])
        else:  # a new key: right in a mapping fact (env.variables, settings), wrong elsewhere
            like = next(iter(out.values()), "1")
            out[draw(st.one_of(st.sampled_from(NASTY), nasty_text))] = _same_type(draw, like)
        return out
    return value


@st.composite
def facts_json(draw) -> Union[str, bytes]:
    """A recorded machine's facts JSON, mutated: mostly with values of the expected type (so
    it loads), sometimes with anything; serialised with or without ASCII escapes."""
    obj = json.loads(json.dumps(draw(st.sampled_from(FACTS))))
    for _ in range(draw(st.integers(1, 8))):
        slots = [(c, k) for c, k in _slots(obj, []) if k != "schema_version"]
        if not slots:
            break
        container, key = slots[draw(st.integers(0, len(slots) - 1))]
        kind = draw(st.sampled_from(["typed"] * 10 + ["replace", "unavailable", "delete", "add", "schema"]))
        if kind == "schema":
            obj["schema_version"] = draw(st.one_of(json_value, st.just(1)))
        elif kind == "typed":
            container[key] = _same_type(draw, container[key])
        elif kind == "replace":
            container[key] = draw(json_value)
        elif kind == "unavailable":
            container[key] = {"unavailable": draw(nasty_text)}
        elif kind == "delete":
            del container[key]
        elif kind == "add" and isinstance(container, dict):
            container[draw(nasty_text)] = draw(json_value)
    ascii_only = draw(st.booleans())
    # "\\ud800" escapes: pure ASCII bytes that decode to a lone surrogate; without escapes a
    # str, which may hold lone surrogates as they are
    text = json.dumps(obj, ensure_ascii=ascii_only)
    text = re.sub(r'"@@HUGE(\d+)@@"', lambda m: HUGE_NUMBERS[int(m.group(1))], text)
    return text.encode("ascii") if ascii_only else text


any_input = st.one_of(report_text(), facts_json())
file_name = st.one_of(st.just("env.txt"), st.builds(lambda a, b: f"{a}{b}.json", nasty_text, nasty_text))

# ---------------------------------------------------------------------------- pipeline


class Violation(AssertionError):
    """An invariant of the pipeline broken; ``kind`` names it (see KNOWN_BUGS)."""

    def __init__(self, kind: str, where: str, detail: str = "") -> None:
        super().__init__(f"{kind} in {where}" + (f": {detail}" if detail else ""))
        self.kind, self.where = kind, where


LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL and C1: never written by torchdoctor itself
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def check_text(where: str, text: Any) -> None:
    if not isinstance(text, str):
        raise Violation("not text", where, type(text).__name__)
    if "\x1b" in text:
        i = text.index("\x1b")
        raise Violation("ESC", where, repr(text[max(0, i - 40) : i + 40]))
    m = CONTROL.search(text)
    if m:
        raise Violation("control character", where, repr(text[max(0, m.start() - 40) : m.start() + 40]))
    m = LONE_SURROGATE.search(text)
    if m:
        raise Violation("lone surrogate", where, repr(text[max(0, m.start() - 40) : m.start() + 40]))


def check_json(where: str, text: str) -> Any:
    check_text(where, text)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise Violation("invalid JSON", where, str(exc)) from None

    def walk(value: Any, path: str) -> None:
        if isinstance(value, str):
            check_text(f"{where} value at {path}", value)
        elif isinstance(value, dict):
            for k, v in value.items():
                check_text(f"{where} key at {path}", k)
                walk(v, f"{path}.{k[:40]}")
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, f"{path}[{i}]")

    walk(data, "$")
    return data


_SGR = re.compile("\x1b\\[[0-9;]*m")
_CELL_SEP = re.compile(r"(?<!\\)\|")


_FENCE = re.compile(r"(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")
_MENTION = re.compile(r"(?<![A-Za-z0-9_\u200b])@[A-Za-z0-9]")


def check_markdown(where: str, text: str) -> None:
    """Every row of every Markdown table has as many cells as its header: a value cannot add
    a column (an unescaped ``|``), whatever it holds. No ``@name`` outside code: pasted into a
    GitHub issue it would notify that user or team. Every code fence closes where torchdoctor
    closes it (a value cannot end the block early and turn the rest into Markdown)."""
    check_text(where, text)
    header = None
    fence = None  # the open ``` / ~~~ fence: its lines are code, not Markdown
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        opener = _FENCE.match(stripped) if len(line) - len(stripped) <= 3 else None
        if fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence) \
                    and not stripped[len(opener.group(1)):].strip():
                fence = None
            continue
        if opener:
            fence = opener.group(1)
            header = None
            continue
        m = _MENTION.search(_CODE_SPAN.sub("", line))
        if m:
            raise Violation("@mention", where, repr(line[:200]))
        if not line.startswith("|"):
            header = None
            continue
        cells = len(_CELL_SEP.findall(line))
        if header is None:
            header = cells
        elif cells != header:
            raise Violation("table row with extra cells", where, repr(line[:200]))
    if fence is not None:
        raise Violation("unclosed code fence", where, fence)


def check_error(where: str, exc: BaseException) -> None:
    message = str(exc)
    if "\n" in message or "\r" in message:
        raise Violation("multi-line error", where, repr(message[:200]))
    check_text(f"error message from {where}", message)


@functools.lru_cache(maxsize=1)
def _rules() -> tuple:
    from torchdoctor.rules import load_rules

    return tuple(load_rules())


@functools.lru_cache(maxsize=None)
def _workload(task: str):
    from torchdoctor.workload import build_workload

    return build_workload(task)


@dataclass
class Outcome:
    loaded: int = 0
    """How many of the two inputs loaded as facts (the others were clean ReportErrors)."""
    outputs: int = 0
    """How many outputs were produced and checked."""


def _load(data: Union[str, bytes], name: str, outcome: Outcome):
    from torchdoctor.importers import ReportError, load_report

    try:
        facts = load_report(data, name)
    except ReportError as exc:
        check_error(f"load_report({name})", exc)
        message = str(exc)
        if not message.startswith(f"{name}: "):
            raise Violation("error without the file name", f"load_report({name})", message[:200]) from None
        return None
    outcome.loaded += 1
    return facts


def run_pipeline(a: Union[str, bytes], b: Union[str, bytes], tasks: tuple = ("detection",),
                 width: int = 100, names: tuple = ("a.txt", "b.json")) -> Outcome:
    """Every command's path over input ``a`` (and ``diff a b``); raises Violation. The facts
    JSON that ``probe`` writes is checked too (the same model, redacted)."""
    from torchdoctor.api import plan_report
    from torchdoctor.cli import summary_line
    from torchdoctor.diff import diff_facts, headline, render_diff
    from torchdoctor.engine import evaluate
    from torchdoctor.errors import UserError
    from torchdoctor.redact import redact_report, redact_text
    from torchdoctor.render import render
    from torchdoctor.report import exit_code
    from torchdoctor.ticket import render_ticket

    outcome = Outcome()

    def out(where: str, text: str) -> None:
        check_text(where, text)
        outcome.outputs += 1

    def mout(where: str, text: str) -> None:
        check_markdown(where, text)
        outcome.outputs += 1

    def jout(where: str, text: str) -> None:
        check_json(where, text)
        outcome.outputs += 1

    facts_a = _load(a, "a.txt", outcome)
    facts_b = _load(b, "b.json", outcome)
    rules = list(_rules())
    try:
        if facts_a is not None:
            jout("probe json (facts)", redact_report(facts_a).model_dump_json(indent=2))
            report = evaluate(rules, facts_a, None, command="check")
            exit_code(report, "info")
            shown = redact_report(report)
            out("check summary (stderr)", summary_line(shown))
            out("check terminal", render(shown, "terminal", color=False, width=width))
            out("check terminal --explain", render(shown, "terminal", color=False, width=width, explain=True))
            # on a colour terminal the only escape sequences are rich's own SGR colours
            coloured = render(shown, "terminal", color=True, width=width)
            out("check terminal (colour, SGR removed)", _SGR.sub("", coloured))
            jout("check json", render(shown, "json"))
            mout("check markdown --explain", render(shown, "markdown", explain=True))
            ticket = redact_report(evaluate(rules, facts_a, None, command="report"))
            mout("report (ticket markdown)", render_ticket(ticket))
            jout("report json", render(ticket, "json"))
            for task in tasks:
                plan = redact_report(plan_report(rules, facts_a, _workload(task)))
                out(f"recommend {task} terminal", render(plan, "terminal", color=False, width=width))
                mout(f"recommend {task} markdown", render(plan, "markdown"))
                jout(f"recommend {task} json", render(plan, "json"))
                snippet = plan.snippet or ""
                out(f"recommend {task} snippet", snippet)
                try:
                    compile(snippet, f"<snippet {task}>", "exec")
                except SyntaxError as exc:
                    raise Violation("snippet does not compile", task, str(exc)) from None
        if facts_a is not None and facts_b is not None:
            left, right = redact_report(facts_a), redact_report(facts_b)
            # the names are the files' as the user typed them, redacted, as `diff` passes them
            shown_names = [redact_text(n) for n in names]
            result = diff_facts(left, right, left_name=shown_names[0], right_name=shown_names[1])
            out("diff headline (stderr)", headline(result))
            for show_all in (False, True):
                out("diff terminal", render_diff(result, "terminal", show_all=show_all, width=width))
                mout("diff markdown", render_diff(result, "markdown", show_all=show_all))
            jout("diff json", render_diff(result, "json"))
    except UserError as exc:  # a clean error: one line, exit 2
        check_error("the pipeline", exc)
    return outcome


def extreme_inputs() -> list[tuple[str, str]]:
    """Every number of every recorded machine set to an extreme, one at a time (for the long
    run's ``--sweep``): (description, facts JSON)."""
    ints = ("1" + "0" * 400, str(2**40), str(-(2**40)), str(2**63), "-1")
    floats = ("1e308", "-1e308", "1e-320", "-0.0") + ints[:2]
    out = []
    for base in FACTS:
        for container, key in _slots(base, []):
            value = container[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            for ext in ints if isinstance(value, int) else floats:
                container[key] = "@@X@@"
                text = json.dumps(base).replace('"@@X@@"', ext)
                container[key] = value
                out.append((f"{base.get('gpu', {}).get('name', '?')}: {key}={ext[:12]}", text))
    return out


# --------------------------------------------------------------------- known bugs

# (kind of violation or exception, what it says) -> the issue-8 class being fixed elsewhere.
KNOWN_BUGS: tuple[tuple[str, str, str], ...] = ()


def known_bug(exc: BaseException) -> Optional[str]:
    """The KNOWN_BUGS entry ``exc`` belongs to, unless TORCHDOCTOR_FUZZ_STRICT is set."""
    if os.environ.get("TORCHDOCTOR_FUZZ_STRICT"):
        return None
    kind = exc.kind if isinstance(exc, Violation) else type(exc).__name__
    text = f"{exc}"
    for bug_kind, pattern, name in KNOWN_BUGS:
        if kind == bug_kind and re.search(pattern, text):
            return name
    return None


def guarded(fn: Callable[..., Outcome], *args: Any, **kwargs: Any) -> Optional[str]:
    """Run ``fn``; a known bug is returned by name, anything else raised."""
    try:
        fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - classified, then re-raised unless known
        name = known_bug(exc)
        if name is None:
            raise
        return name
    return None


# --------------------------------------------------------------------------- tests

CI = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    # no shrinking: an input is a whole report, and shrinking one takes minutes; the failure
    # names the violation and where, and scripts/fuzz-long.py saves each failing input whole
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.large_base_example],
)


@CI
@given(
    a=any_input,
    b=any_input,
    tasks=st.lists(st.sampled_from(TASKS), min_size=1, max_size=2, unique=True).map(tuple),
    width=st.sampled_from([40, 80, 100, 160]),
    names=st.tuples(file_name, file_name),
)
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_pipeline_survives_hostile_input(a, b, tasks, width, names):
    guarded(run_pipeline, a, b, tasks, width, names)


@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_the_seeds_themselves_go_through_cleanly():
    """Every unmutated seed loads and renders (so the fuzz starts from inputs that reach the
    end of the pipeline, not from ones the importer refuses)."""
    for text in TEXTS[:: max(1, len(TEXTS) // 12)]:
        assert run_pipeline(text, text).loaded == 2
    for obj in FACTS:
        data = json.dumps(obj)
        outcome = run_pipeline(data, data, tasks=("llm-training",))
        assert outcome.loaded == 2 and outcome.outputs == 9 + 4 + 6


# ------------------------------------------------------- what the fuzz found, pinned


def _machine(name: str):
    from torchdoctor.importers import load_report

    return load_report((REPO / "tests" / "machines" / f"{name}.json").read_bytes(), name)


def test_gpu_rows_with_indices_far_apart_render():
    """Found by the fuzz: the terminal renderer tested whether GPU indices were contiguous by
    building ``range(first, last + 1)``: a facts file with a last index of 2**40 raised
    MemoryError (2**70: OverflowError, 10**7: a 10-million-element list)."""
    from torchdoctor.engine import evaluate
    from torchdoctor.render import render

    facts = _machine("ada-rtx4090x8")
    for first, last in ((0, 2**40), (-(2**40), 7), (0, 2**70)):
        devices = list(facts.gpu.devices)
        devices[0] = devices[0].model_copy(update={"index": first})
        devices[-1] = devices[-1].model_copy(update={"index": last})
        odd = facts.model_copy(update={"gpu": facts.gpu.model_copy(update={"devices": devices})})
        report = evaluate(list(_rules()), odd, None, command="check")
        text = " ".join(render(report, "terminal", color=False, width=160).split())
        assert f"GPU {first},1,2,3,4,5,6,{last} 8× NVIDIA GeForce RTX 4090" in text
    text = " ".join(render(evaluate(list(_rules()), facts, None, command="check"), "terminal",
                           color=False, width=160).split())
    assert "GPU 0-7 8× NVIDIA GeForce RTX 4090" in text  # contiguous: still a range


def test_diff_markdown_keeps_its_columns_whatever_a_path_holds():
    """Found by the fuzz: a fact path holds keys from the facts (an environment variable's
    name); it was put in a code span as it was, so a ``|`` in it added a table column and a
    backtick ended the span early (and ``@team`` notified a team)."""
    from torchdoctor.diff import diff_facts, render_diff

    left = _machine("ada-rtx4090x8")
    env = left.env.model_copy(update={"variables": {"X|Y`z @team": "1|2 @someone"}})
    right = left.model_copy(update={"env": env})
    text = render_diff(diff_facts(left, right), "markdown", show_all=True)
    row = next(line for line in text.splitlines() if "X\\|Y" in line)
    assert row.startswith('| `` env.variables["X\\|Y`z @\u200bteam"] `` | (not present) | 1\\|2 @\u200bsomeone |')
    check_markdown("diff markdown", text)


def test_recommend_markdown_heading_takes_the_torch_version_as_text():
    """Found by the fuzz: the settings heading printed the torch version (from a pasted
    report or facts file) as it was: a newline and a fence in it opened a code block, an
    ``@team`` in it notified the team."""
    from torchdoctor.api import plan_report
    from torchdoctor.render import render

    facts = _machine("ada-rtx4090x8")
    hostile = facts.torch.model_copy(update={"version": "2.5.1\n```\n@everyone <b>"})
    plan = plan_report(list(_rules()), facts.model_copy(update={"torch": hostile}),
                       _workload("llm-training"))
    assert plan.settings
    text = render(plan, "markdown")
    heading = next(line for line in text.splitlines() if line.startswith("### Recommended settings"))
    assert heading == "### Recommended settings (torch 2.5.1 ``` @\u200beveryone &lt;b&gt;)"


def test_diff_names_are_shown_as_safe_text():
    """Found by the fuzz: ``diff`` printed the file names as typed. A name with an escape
    sequence retitled the terminal; one with bytes that are not UTF-8 (a lone surrogate in
    ``sys.argv``) made ``--format json -o FILE`` fail to encode."""
    from torchdoctor.diff import diff_facts, render_diff

    facts = _machine("ada-rtx4090x8")
    result = diff_facts(facts, facts, left_name="\x1b]0;owned\x07\udcff.json", right_name="b\x9b2J.json")
    assert (result.left_name, result.right_name) == ("]0;owned\ufffd.json", "b2J.json")
    for fmt in ("terminal", "markdown", "json"):
        text = render_diff(result, fmt)
        check_text(f"diff {fmt}", text)
        text.encode("utf-8")
    assert json.loads(render_diff(result, "json"))["left"]["name"] == "]0;owned\ufffd.json"
