"""Read environment facts out of whatever people paste into a ticket.

collect_env's own layout is read by :mod:`torchdoctor.importers.collect_env`. Tickets carry the
environment in many other shapes as well: vLLM's and sglang's collectors (``Key : Value`` under
``=====`` banners), issue-template bullets (``- GPU: NVIDIA GeForce RTX 5090``), Lightning's,
transformers', ComfyUI's, Ultralytics' and detectron2's tables, ``pip list`` / ``pip freeze`` /
``pip show`` / ``conda list``, ``nvidia-smi``, install commands, and torch's own warnings and
errors, which often say more than the rest ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120
is not compatible with the current PyTorch installation. The current PyTorch install supports
CUDA capabilities sm_50 ... sm_90").

How it works:

- The text is read line by line (at most ``MAX_LINES`` lines, each cut at ``MAX_LINE_CHARS``
  characters, quote marks, bullets and markdown removed). Every regular expression runs on one
  such line, only where its literal ``needle`` occurs, and is linear (checked when the patterns
  are loaded: no nested quantifier, no unbounded repetition).
- Each line that states something becomes *evidence*: a value, its line number, the kind of line
  (``torch warning``, ``pip list``, ``prose`` ...) and a rank (tool output and torch's own
  messages 1; package lists, paths and platform strings 2; install commands 3; prose 4). For
  each fact the best rank wins, then the earliest line.
- What the evidence says is turned into facts the way a collect_env report is (the same code:
  the evidence becomes collect_env fields and package rows), then torch's messages add what no
  report field holds: the compiled arch list, a GPU's compute capability as torch states it,
  the driver's CUDA version, torch's import failure, cuDNN versions, torch.compile's refusal,
  an extension's arch flags.
- ``Facts.sources`` records, for every fact taken from outside collect_env's own fields, where
  it came from (``"gpu.name": "torch warning, line 3"``); the text itself is never copied there.
  What the paste does not state is ``Unavailable("the paste does not say")``.

All knowledge of wordings (labels, torch's messages, tool formats) is in
``rules/data/paste_patterns.yaml``; this module is the mechanism.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any, Optional

from pydantic import BaseModel

from torchdoctor import tables
from torchdoctor.facts import (
    NOT_RECORDED,
    Facts,
    GpuFacts,
    PackagesFacts,
    SystemFacts,
    TorchFacts,
    Unavailable,
)
from torchdoctor.importers import collect_env as ce

PASTE_SILENT = "the paste does not say"
"""Why a fact is unknown when the text is not a collect_env report."""

MAX_LINE_CHARS = 2_000
"""Only this much of a line is read (torch's longest warning line is about 450 characters)."""
MAX_LINES = ce.MAX_LINES
MAX_ROWS = 2_000
"""Package rows after this many are not read."""
MAX_GPUS = ce.MAX_GPUS
MAX_VALUE_CHARS = 300
"""A value (a GPU name, an OS line) is cut at this length."""
MAX_MESSAGE_CHARS = ce.MAX_INIT_ERROR_CHARS
MAX_LABEL_CHARS = 60
MAX_NAME_LOOKUPS = 200
"""Lines of prose or bare names looked up in the GPU-name table at most (each lookup compares
the name with every pattern of rules/data/gpu_models.yaml)."""

RANK_TOOL, RANK_LIST, RANK_INSTALL, RANK_PROSE = 1, 2, 3, 4

PATTERNS_FILE = "paste_patterns"


# --------------------------------------------------------------------------------------
# the patterns (rules/data/paste_patterns.yaml)
# --------------------------------------------------------------------------------------


def _norm_label(label: str) -> str:
    return ce._NON_ALNUM.sub("", ce._PARENS.sub("", label.lower()))


def _check_linear(regex: str, where: str) -> None:
    """Refuse a pattern that could backtrack badly: a repetition inside a repetition, or an
    unbounded repetition (``*``, ``+``, ``{n,}``)."""
    try:
        from re import _parser as sre_parse  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - Python < 3.11
        import sre_parse  # type: ignore[no-redef]
    try:
        tree = sre_parse.parse(regex)
    except re.error as exc:
        raise tables.DataFileError(f"{where}: invalid regex: {exc}") from None
    repeats = {sre_parse.MAX_REPEAT, sre_parse.MIN_REPEAT}
    unbounded = sre_parse.MAXREPEAT

    def walk(items: Any, inside: bool) -> None:
        for op, arg in items:
            if op in repeats:
                low, high, body = arg
                if high == unbounded:
                    raise tables.DataFileError(f"{where}: unbounded repetition in {regex!r}")
                if inside and high > 1:
                    raise tables.DataFileError(f"{where}: nested repetition in {regex!r}")
                walk(body, inside or high > 1)
            elif op == sre_parse.SUBPATTERN:
                walk(arg[-1], inside)
            elif op == sre_parse.BRANCH:
                for branch in arg[1]:
                    walk(branch, inside)
            elif op in (sre_parse.ASSERT, sre_parse.ASSERT_NOT):
                walk(arg[1], inside)

    walk(tree, False)


def _compile(regex: Any, where: str) -> re.Pattern:
    if not isinstance(regex, str) or not regex:
        raise tables.DataFileError(f"{where}: regex must be a non-empty string")
    _check_linear(regex, where)
    return re.compile(regex)


@dataclass(frozen=True)
class _Message:
    id: str
    needle: str
    regex: re.Pattern
    sets: dict
    start: Optional[str]  # where the quoted message starts ("from")


@dataclass(frozen=True)
class _PathPattern:
    id: str
    needle: str
    regex: re.Pattern
    rank: int
    context: tuple[str, ...]  # one of these must be on the line too (empty: no condition)


@dataclass(frozen=True)
class _Patterns:
    labels: dict[str, str]
    scoped: dict[tuple[str, str], str]
    sections: dict[str, str]
    empty_values: frozenset
    nvidia_brands: tuple[str, ...]
    amd_brands: tuple[str, ...]
    os_words: tuple[str, ...]
    extra_packages: frozenset
    messages: tuple[_Message, ...]
    import_exception: re.Pattern
    import_window: int
    torch_context: tuple[str, ...]
    not_torch: tuple[str, ...]
    paths: tuple[_PathPattern, ...]
    expressions: tuple[tuple[str, str], ...]
    arch_flags_suffix: str
    availability: dict[str, tuple[frozenset, frozenset]]
    device_string: re.Pattern
    gpu_suffixes: tuple[re.Pattern, ...]
    install_failed: tuple[str, ...]


_SETS = {"torch_imported", "cuda_available", "cuda_build_none", "init_error", "compile_error"}
_GROUPS = {
    "gpu", "sm", "cc", "archs", "found", "cudnn_built", "cudnn_runtime", "torch", "torch_base",
    "python", "python_nodot", "python_min", "driver", "cuda_driver", "toolkit", "platform",
    "variant", "rocm", "index",
}
_KEYS = {
    "torch_version", "cuda_compiled_version", "is_cuda_available", "python_version",
    "python_platform", "os", "nvidia_driver_version", "cuda_runtime_version", "cudnn_version",
    "gpu", "machine", "os_product", "os_product_version", "device",
}


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise tables.DataFileError(f"{where}: expected a list of non-empty strings")
    return value


@functools.lru_cache(maxsize=4)
def patterns(directory: Optional[str] = None) -> _Patterns:
    """The checked, compiled contents of ``rules/data/paste_patterns.yaml``."""
    data = tables.load(PATTERNS_FILE, directory)
    where = f"{directory or 'rules/data'}/{PATTERNS_FILE}.yaml"
    if not isinstance(data, dict):
        raise tables.DataFileError(f"{where}: expected a mapping")

    def entries(name: str) -> list[dict]:
        items = data.get(name)
        if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
            raise tables.DataFileError(f"{where}: `{name}` must be a list of mappings")
        for i, item in enumerate(items):
            if not isinstance(item.get("source"), str) or not item["source"].strip():
                raise tables.DataFileError(f"{where}: {name}[{i}] has no source")
        return items

    labels: dict[str, str] = {}
    for i, item in enumerate(entries("labels")):
        key = item.get("key")
        if key not in _KEYS:
            raise tables.DataFileError(f"{where}: labels[{i}]: unknown key {key!r}")
        for label in _strings(item.get("labels"), f"{where}: labels[{i}].labels"):
            labels[label] = key
    sections: dict[str, str] = {}
    for i, item in enumerate(entries("sections")):
        for header in _strings(item.get("headers"), f"{where}: sections[{i}].headers"):
            sections[header] = str(item.get("section"))
    scoped: dict[tuple[str, str], str] = {}
    for i, item in enumerate(entries("scoped_labels")):
        if item.get("key") not in _KEYS or item.get("section") not in sections.values():
            raise tables.DataFileError(f"{where}: scoped_labels[{i}]: unknown key or section")
        for label in _strings(item.get("labels"), f"{where}: scoped_labels[{i}].labels"):
            scoped[(item["section"], label)] = item["key"]
    brands = data.get("gpu_brands") or {}
    messages = []
    for i, item in enumerate(entries("messages")):
        w = f"{where}: messages[{i}] ({item.get('id')})"
        regex = _compile(item.get("regex"), w)
        unknown = set(regex.groupindex) - _GROUPS
        sets = item.get("sets") or {}
        if unknown or not isinstance(sets, dict) or set(sets) - _SETS:
            raise tables.DataFileError(f"{w}: unknown group or `sets` entry")
        needle = item.get("needle")
        if not isinstance(needle, str) or not needle:
            raise tables.DataFileError(f"{w}: needle must be a non-empty string")
        messages.append(_Message(str(item.get("id")), needle, regex, dict(sets), item.get("from")))
    paths = []
    for i, item in enumerate(entries("paths")):
        w = f"{where}: paths[{i}] ({item.get('id')})"
        regex = _compile(item.get("regex"), w)
        if set(regex.groupindex) - _GROUPS or item.get("rank") not in (1, 2, 3, 4):
            raise tables.DataFileError(f"{w}: unknown group or rank")
        context = tuple(_strings(item["context"], f"{w}.context")) if "context" in item else ()
        paths.append(_PathPattern(str(item.get("id")), str(item.get("needle")), regex, item["rank"], context))
    imp = data.get("import_failure") or {}
    availability = {}
    for i, item in enumerate(entries("availability_parens")):
        availability[str(item.get("label"))] = (
            frozenset(_strings(item.get("available"), f"{where}: availability_parens[{i}]")),
            frozenset(_strings(item.get("unavailable"), f"{where}: availability_parens[{i}]")),
        )
    extras = [str(e.get("name")) for e in entries("extra_packages")]
    return _Patterns(
        labels=labels,
        scoped=scoped,
        sections=sections,
        empty_values=frozenset(_strings(data.get("empty_values"), f"{where}: empty_values")),
        nvidia_brands=tuple(_strings(brands.get("nvidia"), f"{where}: gpu_brands.nvidia")),
        amd_brands=tuple(_strings(brands.get("amd"), f"{where}: gpu_brands.amd")),
        os_words=tuple(_strings(data.get("os_words"), f"{where}: os_words")),
        extra_packages=frozenset(ce._norm_name(e) for e in extras),
        messages=tuple(messages),
        import_exception=_compile(imp.get("exception"), f"{where}: import_failure.exception"),
        import_window=int(imp.get("window") or 0),
        torch_context=tuple(_strings(imp.get("torch_context"), f"{where}: import_failure")),
        not_torch=tuple(_strings(imp.get("not_torch"), f"{where}: import_failure.not_torch")),
        paths=tuple(paths),
        expressions=tuple(
            (str(e.get("expression")), str(e.get("key"))) for e in data.get("expressions") or []
        ),
        arch_flags_suffix=str((data.get("extension_arch_flags") or {}).get("suffix") or "archflags"),
        availability=availability,
        device_string=_compile(data.get("device_string"), f"{where}: device_string"),
        install_failed=tuple(_strings(data.get("install_failed"), f"{where}: install_failed")),
        gpu_suffixes=tuple(
            _compile(r, f"{where}: gpu_value_suffixes")
            for r in _strings(data.get("gpu_value_suffixes"), f"{where}: gpu_value_suffixes")
        ),
    )


@functools.lru_cache(maxsize=1)
def _interest():
    from torchdoctor.probes.packages import load_interest

    return load_interest()


def _of_interest(name: str) -> bool:
    return _interest().matches(name) or name in patterns().extra_packages


# --------------------------------------------------------------------------------------
# evidence
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Evidence:
    value: Any
    line: int
    how: str
    rank: int

    @property
    def where(self) -> str:
        return f"{self.how}, line {self.line}"


@dataclass
class _GpuGroup:
    how: str
    rank: int
    line: int
    names: list[tuple[int, str, Optional[float]]] = field(default_factory=list)  # index, name, cc
    stated_count: bool = True
    last: int = 0  # the line of the latest entry (``line`` is the first's)


@dataclass
class Paste:
    """Everything the reader found, before it becomes facts."""

    fields: dict[str, Evidence] = field(default_factory=dict)
    gpu_groups: list[_GpuGroup] = field(default_factory=list)
    rows: dict[str, tuple[Evidence, Optional[str], Optional[str]]] = field(default_factory=dict)
    arch_list: Optional[Evidence] = None
    init_errors: list[Evidence] = field(default_factory=list)
    cuda_driver: Optional[Evidence] = None
    import_failure: Optional[Evidence] = None  # value: (kind, message)
    cudnn: Optional[Evidence] = None  # value: (built, runtime)
    compile_error: Optional[Evidence] = None
    torch_imported: Optional[Evidence] = None
    cuda_available: Optional[Evidence] = None
    cuda_build_none: Optional[Evidence] = None
    cuda_variant: Optional[Evidence] = None
    extension_archs: dict[str, Evidence] = field(default_factory=dict)
    torch_versions: list[Evidence] = field(default_factory=list)

    def put(self, key: str, value: Any, line: int, how: str, rank: int) -> None:
        if value is None or value == "":
            return
        if isinstance(value, str):
            value = value.strip()[:MAX_VALUE_CHARS]
            if not value:
                return
        old = self.fields.get(key)
        if key == "torch_version" and rank == RANK_TOOL:
            self.torch_versions.append(Evidence(value, line, how, rank))
        if old is None or rank < old.rank:
            self.fields[key] = Evidence(value, line, how, rank)

    def first(self, attr: str, value: Any, line: int, how: str, rank: int = RANK_TOOL) -> None:
        old = getattr(self, attr)
        if old is None or rank < old.rank:
            setattr(self, attr, Evidence(value, line, how, rank))

    def add_row(self, name: str, version: str, line: int, how: str, rank: int,
                build: Optional[str] = None, channel: Optional[str] = None) -> None:
        name = ce._norm_name(name)
        if not name or not version or len(self.rows) >= MAX_ROWS:
            return
        if name == "python":
            self.put("python_version", version, line, how, rank)
            return
        if not _of_interest(name):
            return
        old = self.rows.get(name)
        if old is None or rank < old[0].rank:
            self.rows[name] = (Evidence(version[:80], line, how, rank), build, channel)

    def gpus(self, how: str, rank: int, line: int, names: list, stated_count: bool = True) -> None:
        names = [(i, n.strip()[: ce.MAX_NAME_CHARS], cc) for i, n, cc in names if n and n.strip()]
        if names:
            self.gpu_groups.append(_GpuGroup(how, rank, line, names[:MAX_GPUS], stated_count, line))

    @property
    def best_gpus(self) -> Optional[_GpuGroup]:
        if not self.gpu_groups:
            return None
        return min(self.gpu_groups, key=lambda g: (g.rank, g.line))

    def empty(self) -> bool:
        return not (
            self.fields or self.gpu_groups or self.rows or self.arch_list or self.init_errors
            or self.cuda_driver or self.import_failure or self.cudnn or self.compile_error
            or self.cuda_available or self.cuda_build_none or self.extension_archs
        )


# --------------------------------------------------------------------------------------
# reading lines
# --------------------------------------------------------------------------------------

_VERSION = re.compile(r"v?(\d{1,4}(?:\.\d{1,9}){0,3}[0-9A-Za-z.+!_-]{0,60})")
_VERSIONISH = re.compile(r"\d{1,4}\.\d{1,9}")
_BOOL_WORDS = {"true": True, "yes": True, "false": False, "no": False}
_REQ_CUT = re.compile(r"[<>=!~;,]")
_CHECK_MARKS = ("\u2705", "\u274c", "\u2714", "\u2716", "\u26a0\ufe0f", "\u26a0")
_CONDA_BUILD = re.compile(r"[A-Za-z0-9_.+]{1,80}")
_FENCE = re.compile(r"^(?:```|~~~)[ ]{0,3}")
_HEADING = re.compile(r"^#{1,6} {1,4}(.{1,80})$")
_BANNER = re.compile(r"^[=\-]{5,200}$")
_TABLE_SPLIT = re.compile(r"\S(?:  |\t)\s{0,200}(?=\S)")
_GPU_LABEL = re.compile(r"^GPU ?([0-9,]{1,800})$")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,80}")


def _version_value(value: str) -> Optional[str]:
    """The version a value starts with ("2.5.1+cu121 (False)" -> 2.5.1+cu121), else None."""
    text = value.strip().strip("'\"")
    m = _VERSION.match(text)
    if not m or not _VERSIONISH.match(m.group(1)):
        return None
    version = m.group(1)
    cut = _REQ_CUT.search(version)
    if cut:
        version = version[: cut.start()]
    return version.rstrip(".,;:") or None


def _cuda_of_variant(variant: str) -> Optional[str]:
    """cu121 -> 12.1, cu92 -> 9.2 (the wheels' local label / index name)."""
    if variant.startswith("cu") and variant[2:].isdigit() and 2 <= len(variant) - 2 <= 3:
        digits = variant[2:]
        return f"{int(digits[:-1])}.{digits[-1]}"
    return None


def _local_label(version: str) -> Optional[str]:
    return version.split("+", 1)[1].lower() if "+" in version else None


def _clean(raw: str) -> Optional[str]:
    line = raw[:MAX_LINE_CHARS]
    m = _FENCE.match(line.lstrip())
    if m:
        rest = line.lstrip()[m.end():]
        if not rest.strip() or _WORD.fullmatch(rest.strip()):
            return None  # a fence, or a fence with a language tag
        line = rest
    return ce._clean_line(line)


class _Reader:
    def __init__(self, text: str):
        self.p = patterns()
        self.paste = Paste()
        self.text = text
        self.section: Optional[str] = None
        self.gpu_list: Optional[_GpuGroup] = None
        self.expect: Optional[tuple[tuple[str, ...], int]] = None  # (keys, line) of an expression
        self.pip_show: Optional[tuple[str, int]] = None
        self.recent: list[str] = []  # cleaned lines before this one (traceback context)
        self.banner_title = False
        self.install_failed = False
        self.lookups = 0

    # ---------------------------------------------------------------- driving

    def read(self) -> Paste:
        for n, raw in enumerate(self.text.splitlines(), 1):
            if n > MAX_LINES:
                break
            line = _clean(raw)
            if line is None:
                self.gpu_list = None
                self.expect = None if self.expect is None or n - self.expect[1] > 1 else self.expect
                continue
            stripped = line.strip()
            if not self.install_failed and any(x in stripped for x in self.p.install_failed):
                self.install_failed = True
            self._line(n, stripped)
            self.recent.append(stripped)
            if len(self.recent) > max(1, self.p.import_window):
                self.recent.pop(0)
        if self.install_failed:  # what an install command asked for was not installed
            paste = self.paste
            if "torch_version" in paste.fields and paste.fields["torch_version"].rank == RANK_INSTALL:
                del paste.fields["torch_version"]
            if paste.cuda_variant is not None and paste.cuda_variant.rank == RANK_INSTALL:
                paste.cuda_variant = None
        return self.paste

    def _line(self, n: int, s: str) -> None:
        if self.expect is not None:
            keys, at = self.expect
            self.expect = None
            if n - at <= 2:
                # print(torch.__version__, torch.cuda.is_available()) -> "2.1.0+cu121 True"
                words = s.split() if len(keys) > 1 else [s]
                if len(words) == len(keys) and all(
                    self._expression_output(k, w, n) for k, w in zip(keys, words)
                ):
                    return
        found = sorted((s.find(expr), key) for expr, key in self.p.expressions if expr in s)
        if len(found) == 1:
            key = found[0][1]
            expr = next(e for e, k in self.p.expressions if k == key)
            tail = s.split(expr, 1)[1].strip().lstrip(")").strip()
            if tail.startswith(("'", '"')) or (tail[:1].isdigit() and key != "is_cuda_available"):
                self._expression_output(key, tail, n)  # ">>> torch.__version__ '2.1.0'"
            else:
                self.expect = ((key,), n)
        elif found:
            self.expect = (tuple(key for _, key in found), n)
        self._messages(n, s)
        self._import_failure(n, s)
        self._paths(n, s)
        if self._section_header(n, s):
            return
        if self._gpu_list_item(n, s):
            return
        if self._key_value(n, s):
            return
        if self._package_row(n, s):
            return
        if self._table_row(n, s):
            return
        self._bare_line(n, s)

    # ---------------------------------------------------------------- pieces

    def _expression_output(self, key: str, value: str, n: int) -> bool:
        value = value.strip().strip("'\"").strip()
        if key == "is_cuda_available":
            b = _BOOL_WORDS.get(value.lower())
            if b is None:
                return False
            self.paste.put(key, str(b), n, "shell output", RANK_TOOL)
            self.paste.first("torch_imported", True, n, "shell output")
            return True
        if key == "cuda_compiled_version" and value.lower() == "none":
            self.paste.put(key, "None", n, "shell output", RANK_TOOL)
            self.paste.first("torch_imported", True, n, "shell output")
            return True
        version = _version_value(value)
        if version is None or " " in value.strip():
            return False
        self.paste.put(key, version, n, "shell output", RANK_TOOL)
        self.paste.first("torch_imported", True, n, "shell output")
        return True

    def _messages(self, n: int, s: str) -> None:
        paste = self.paste
        for msg in self.p.messages:
            if msg.needle not in s:
                continue
            m = msg.regex.search(s)
            if not m:
                continue
            how = "torch message" if msg.id not in _TOOL_MESSAGES else _TOOL_MESSAGES[msg.id]
            g = m.groupdict()
            sets = msg.sets
            if sets.get("torch_imported"):
                paste.first("torch_imported", True, n, how)
            if "cuda_available" in sets:
                paste.first("cuda_available", bool(sets["cuda_available"]), n, how)
            if sets.get("cuda_build_none"):
                paste.first("cuda_build_none", True, n, how)
            if sets.get("init_error"):
                start = s.find(msg.start) if msg.start else m.start()
                text = " ".join(s[max(start, 0):].split())[:MAX_MESSAGE_CHARS]
                if text and all(e.value != text for e in paste.init_errors):
                    paste.init_errors.append(Evidence(text, n, how, RANK_TOOL))
            if sets.get("compile_error"):
                start = s.find(msg.start) if msg.start else m.start()
                paste.first("compile_error", " ".join(s[max(start, 0):].split())[:MAX_MESSAGE_CHARS], n, how)
            cc = None
            if g.get("sm"):
                digits = g["sm"]
                cc = float(f"{int(digits[:-1])}.{digits[-1]}")
            elif g.get("cc"):
                cc = float(g["cc"])
            if g.get("gpu"):
                name = self._gpu_value(g["gpu"])[0]
                index = int(g["index"]) if g.get("index") else 0
                if msg.id == "nvidia-smi-gpu":
                    group = next((x for x in paste.gpu_groups if x.how == how and x.last >= n - 40
                                  and all(i != index for i, _, _ in x.names)), None)
                    if group is not None:
                        group.names.append((index, name, cc))
                        group.last = n
                    else:
                        paste.gpus(how, RANK_TOOL, n, [(index, name, cc)])
                    continue
                paste.gpus(how, RANK_TOOL, n, [(index, name, cc)])
            if g.get("archs"):
                archs = [a for a in g["archs"].replace(",", " ").split()
                         if re.fullmatch(r"(?:sm|compute)_\d{2,3}[a-z]?", a)]
                if archs:
                    paste.first("arch_list", archs, n, how)
            if g.get("found"):
                found = int(g["found"])
                paste.first("cuda_driver", f"{found // 1000}.{found % 1000 // 10}", n, how)
            if g.get("cuda_driver"):
                paste.first("cuda_driver", g["cuda_driver"], n, how)
            if g.get("driver"):
                paste.put("nvidia_driver_version", g["driver"], n, how, RANK_TOOL)
            if g.get("toolkit"):
                paste.put("cuda_runtime_version", g["toolkit"], n, how, RANK_TOOL)
            if g.get("torch"):
                paste.put("torch_version", g["torch"], n, how, RANK_TOOL)
            if g.get("python"):
                paste.put("python_version", g["python"], n, how, RANK_TOOL)
            if g.get("cudnn_built") and g.get("cudnn_runtime"):
                built = ".".join(x.strip() for x in g["cudnn_built"].split(","))
                runtime = ".".join(x.strip() for x in g["cudnn_runtime"].split(","))
                paste.first("cudnn", (built, runtime), n, how)

    def _import_failure(self, n: int, s: str) -> None:
        if "Error: " not in s:
            return
        m = self.p.import_exception.match(s)
        if not m:
            return
        kind, message = m.group("kind"), m.group("message").strip()
        context = "\n".join([*self.recent, message])
        if any(bad in message for bad in self.p.not_torch):
            return
        if any(c in context for c in self.p.torch_context):
            self.paste.first("import_failure", (kind, message), n, "traceback")

    def _paths(self, n: int, s: str) -> None:
        paste = self.paste
        for pat in self.p.paths:
            if pat.needle not in s or (pat.context and not any(c in s for c in pat.context)):
                continue
            m = pat.regex.search(s)
            if not m:
                continue
            g = m.groupdict()
            how = _PATH_KINDS.get(pat.id, "path")
            if g.get("python"):
                paste.put("python_version", g["python"], n, how, pat.rank)
            if g.get("python_nodot"):
                d = g["python_nodot"]
                paste.put("python_version", f"{d[0]}.{d[1:]}", n, how, pat.rank)
            if g.get("platform"):
                paste.put("python_platform", g["platform"], n, how, pat.rank)
            if g.get("torch"):
                paste.put("torch_version", g["torch"].replace("%2B", "+").replace("%2b", "+"),
                          n, how, pat.rank)
            if g.get("torch_base") and g.get("rocm"):
                paste.put("torch_version", f"{g['torch_base']}+rocm{g['rocm']}", n, how, pat.rank)
            if g.get("variant"):
                paste.first("cuda_variant", g["variant"].lower(), n, how, pat.rank)
            if g.get("gpu") and not paste.gpu_groups and self._lookup():
                name = re.sub(r"([RG]TX)(\d)", r"\1 \2", g["gpu"])
                if tables.cc_for_gpu_name(name) is not None:
                    paste.gpus(how, pat.rank, n, [(0, name, None)])

    def _section_header(self, n: int, s: str) -> bool:
        label = None
        m = _HEADING.match(s)
        if m:
            label = m.group(1)
        elif s.endswith(":") and len(s) <= MAX_LABEL_CHARS and ":" not in s[:-1]:
            label = s[:-1]
        elif _BANNER.match(s):
            self.banner_title = True
            return True
        elif self.banner_title and len(s) <= MAX_LABEL_CHARS and ":" not in s:
            label = s
        self.banner_title = False
        if label is None:
            return False
        key = _norm_label(label)
        if key in self.p.sections:
            self.section = self.p.sections[key]
            self.gpu_list = None
            return True
        if m or _BANNER.match(s):
            self.section = None
            return True
        return False

    def _gpu_list_item(self, n: int, s: str) -> bool:
        if self.gpu_list is None:
            return False
        if ":" in s or len(s) > 120:
            self.gpu_list = None
            return False
        name, cc = self._gpu_value(s)
        if not name or name.lower() in self.p.empty_values:
            self.gpu_list = None
            return True
        self.gpu_list.names.append((len(self.gpu_list.names), name, cc))
        if len(self.gpu_list.names) == 1:
            self.paste.gpu_groups.append(self.gpu_list)
        return True

    def _label(self, label: str) -> tuple[Optional[str], str]:
        norm = _norm_label(label)
        if self.section is not None:
            key = self.p.scoped.get((self.section, norm))
            if key is not None:
                return key, norm
        return self.p.labels.get(norm), norm

    def _key_value(self, n: int, s: str) -> bool:
        at = s.find(":")
        if at <= 0 or at > MAX_LABEL_CHARS:
            return False
        label, value = s[:at].strip(), s[at + 1:].strip()
        if not label or ce._NOT_LABEL.search(ce._PARENS.sub("", label)) or "/" in label or "\\" in label:
            return False  # JSON keys, YAML flow, tables, paths: not labels
        if label.lower().startswith(("http", "https")) or value.startswith("//"):
            return False
        return self._labelled(n, label, value, "key-value line")

    def _table_row(self, n: int, s: str) -> bool:
        m = _TABLE_SPLIT.search(s)
        if not m or m.start() + 1 > MAX_LABEL_CHARS:
            return False
        label, value = s[: m.start() + 1].strip(), s[m.end():].strip()
        if not value:
            return False
        return self._labelled(n, label, value, "table row")

    def _labelled(self, n: int, label: str, value: str, how: str) -> bool:
        paste, p = self.paste, self.p
        gpu_index = _GPU_LABEL.match(label)
        if gpu_index and value:
            indices = [int(x) for x in gpu_index.group(1).split(",") if x.isdigit()][:MAX_GPUS]
            name, cc = self._gpu_value(value)
            if name and name.lower() not in p.empty_values:
                group = next((g for g in paste.gpu_groups if g.how == how and g.last >= n - 4), None)
                entries = [(i, name, cc) for i in indices]
                if group is not None:
                    group.names.extend(entries)
                    group.last = n
                else:
                    paste.gpus(how, RANK_TOOL, n, entries)
            return True
        key, norm = self._label(label)
        if norm.endswith(p.arch_flags_suffix) and len(norm) > len(p.arch_flags_suffix):
            name = label.strip()[: -len("arch flags")].strip() if label.lower().endswith("arch flags") else ""
            archs = _arch_flags(value)
            if name and archs:
                paste.extension_archs.setdefault(ce._norm_name(name), Evidence(archs, n, how, RANK_TOOL))
            return True
        if key is None:
            # "transformers version: 4.54.1", "- torch: 2.6.0+cu126", "Name: torch" (pip show)
            version = _version_value(value)
            if norm == "name" and _of_interest(ce._norm_name(value)):
                self.pip_show = (value, n)
                return True
            if norm == "version" and self.pip_show and n - self.pip_show[1] <= 3 and version:
                paste.add_row(self.pip_show[0], version, n, "pip show", RANK_LIST)
                self.pip_show = None
                return True
            name = label
            if name.lower().endswith(" version"):
                name = name[: -len(" version")]
            if version and _WORD.fullmatch(name.strip()) and (
                self.section == "packages" or _of_interest(ce._norm_name(name)) or name.lower() == "python"
            ):
                paste.add_row(name, version, n, "package list" if self.section == "packages" else how,
                              RANK_LIST if self.section == "packages" else RANK_TOOL)
                return True
            return False
        if not value:
            if key == "gpu":
                self.gpu_list = _GpuGroup(how, RANK_TOOL, n)
                return True
            return False
        if value.lower().strip(" .<>") in p.empty_values:
            return True
        if key == "torch_version":
            self._torch_value(n, label, value, how)
            if self.section == "packages":
                version = _version_value(value)
                if version:
                    paste.add_row("torch", version, n, "package list", RANK_LIST)
        elif key == "gpu":
            name, cc = self._gpu_value(value)
            m = ce._COUNT_PREFIX.fullmatch(name)
            if m:
                count = min(int(m.group(1)), 64)
                paste.gpus(how, RANK_TOOL, n, [(i, m.group(2), cc) for i in range(count)])
            elif not _version_value(name):
                paste.gpus(how, RANK_TOOL, n, [(0, name, cc)])
        elif key == "device":
            self._device(n, value, how)
        elif key == "is_cuda_available":
            b = _BOOL_WORDS.get(value.split()[0].lower().strip(".,"))
            if b is not None:
                paste.put(key, str(b), n, how, RANK_TOOL)
        elif key == "os":
            self._os(n, value, how)
        elif key == "python_platform":
            if re.match(r"(?:Linux|Windows|macOS|Darwin)-", value):
                paste.put("python_platform", value.split()[0], n, how, RANK_TOOL)
            else:
                self._os(n, value, how)
        elif key == "python_version":
            version = _version_value(value.replace("Python", "").replace("python", ""))
            if version:
                paste.put(key, value, n, how, RANK_TOOL)
        elif key in ("nvidia_driver_version", "cuda_runtime_version", "cuda_compiled_version",
                     "cudnn_version"):
            version = _version_value(value)
            if version:
                paste.put(key, version, n, how, RANK_TOOL)
        else:
            paste.put(key, value, n, how, RANK_TOOL)
        return True

    def _torch_value(self, n: int, label: str, value: str, how: str) -> None:
        paste = self.paste
        version = _version_value(value)
        if not version:
            return
        paste.put("torch_version", version, n, how, RANK_TOOL)
        paren = re.search(r"\(([A-Za-z?]{1,20})\)", label)
        tail = re.search(r"\(([A-Za-z/]{1,10})\)\s{0,4}$", value)
        if paren and tail:
            word = _norm_label(paren.group(1))
            rule = self.p.availability.get(word)
            said = tail.group(1).lower()
            if rule is not None and said in rule[0]:
                paste.put("is_cuda_available", "True", n, how, RANK_TOOL)
            elif rule is not None and said in rule[1]:
                paste.put("is_cuda_available", "False", n, how, RANK_TOOL)

    def _device(self, n: int, value: str, how: str) -> None:
        m = self.p.device_string.match(value)
        if not m:
            return
        name, cc = self._gpu_value(m.group("gpu"))
        self.paste.gpus(how, RANK_TOOL, n, [(int(m.group("index")), name, cc)])
        self.paste.put("is_cuda_available", "True", n, how, RANK_TOOL)

    def _os(self, n: int, value: str, how: str) -> None:
        v = value.strip()
        low = v.lower()
        if re.match(r"(?:Linux|Windows|macOS|Darwin)-\d", v):
            self.paste.put("python_platform", v.split()[0], n, how, RANK_TOOL)
            return
        if low in ("nt", "win32", "win64", "windows"):
            v = "Windows"
        elif re.match(r"win ?(?:7|8|10|11)\b", low):
            v = "Windows " + v[3:].strip()
        elif low in ("linux", "posix linux"):
            v = "Linux"
        elif low == "darwin":
            v = "macOS"
        elif low == "posix":
            return
        self.paste.put("os", v, n, how, RANK_TOOL)

    def _lookup(self) -> bool:
        """Whether another GPU-name table lookup for a bare or prose line is allowed."""
        self.lookups += 1
        return self.lookups <= MAX_NAME_LOOKUPS

    def _gpu_value(self, value: str) -> tuple[str, Optional[float]]:
        name = value.strip()
        if "|" in name or not re.search(r"[A-Za-z]", name):
            return "", None  # a table's header or rule, not a name
        cc = None
        for suffix in self.p.gpu_suffixes:
            m = suffix.search(name)
            if m:
                if m.groupdict().get("cc"):
                    cc = float(m.group("cc"))
                name = name[: m.start()].strip()
        return name, cc

    def _package_row(self, n: int, s: str) -> bool:
        paste = self.paste
        words = [w for w in s.split() if w not in _CHECK_MARKS]
        if not words or len(words) > 5:
            return False
        first = words[0]
        if "==" in first and len(words) == 1:
            name, _, version = first.partition("==")
            if _version_value(version):
                paste.add_row(name, _version_value(version) or "", n, "pip freeze", RANK_LIST)
                return True
            return False
        if len(words) < 2 or not _WORD.fullmatch(first):
            return False
        version = _version_value(words[1])
        if not version or not words[1][:1].isdigit():
            return False
        rest = words[2:]
        name = ce._norm_name(first)
        if name != "python" and not _of_interest(name):
            return False
        if not rest:
            paste.add_row(first, version, n, "package list", RANK_LIST)
            return True
        if rest[0].startswith("@") or ce._looks_like_path(rest[0]):
            paste.add_row(first, version, n, "package list", RANK_LIST)
            return True
        if len(rest) <= 2 and _CONDA_BUILD.fullmatch(rest[0]) and any(c.isdigit() for c in rest[0]):
            channel = rest[1] if len(rest) > 1 else None
            if channel is not None and not _CONDA_BUILD.fullmatch(channel):
                return False
            paste.add_row(first, version, n, "conda list", RANK_LIST, build=rest[0], channel=channel)
            return True
        return False

    def _bare_line(self, n: int, s: str) -> None:
        if len(s) > 80 or ":" in s:
            return
        low = s.lower()
        if low.startswith(self.p.nvidia_brands) and self._lookup() and not any(
            g.rank <= RANK_LIST for g in self.paste.gpu_groups
        ):
            name, cc = self._gpu_value(s)
            if tables.cc_for_gpu_name(name) is not None:
                self.paste.gpus("bare line", RANK_LIST, n, [(0, name, cc)])
                return
        if low.startswith(self.p.amd_brands) and len(s.split()) <= 6:
            self.paste.gpus("bare line", RANK_LIST, n, [(0, s, None)])
            return
        if low.startswith(self.p.os_words) and len(s.split()) <= 5 and re.search(r"\d", s):
            self._os(n, s, "bare line")
            field_ = self.paste.fields.get("os")
            if field_ is not None and field_.line == n:
                self.paste.fields["os"] = Evidence(field_.value, n, "bare line", RANK_LIST)


_TOOL_MESSAGES = {
    "nvidia-smi-header": "nvidia-smi",
    "nvidia-smi-gpu": "nvidia-smi",
    "proc-driver-version": "/proc/driver/nvidia/version",
    "nvcc-release": "nvcc",
    "ultralytics-banner": "tool banner",
    "hip-no-binary": "HIP error",
    "xformers-built-for": "xformers warning",
}
_PATH_KINDS = {
    "site-packages-python": "site-packages path",
    "windows-site-packages-python": "site-packages path",
    "platform-string": "platform string",
    "wheel-file": "wheel file name",
    "index-url": "index URL",
    "pip-torch-pin": "install command",
    "conda-docker-tag": "image tag",
    "prose-torch": "prose",
    "labelled-version": "prose",
    "prose-gpu": "prose",
    "prose-python": "prose",
}
_ARCH_WORD = re.compile(r"(?:sm_|compute_)?(\d{1,2})\.?(\d)([a-z]?)")


def _arch_flags(value: str) -> list[str]:
    """detectron2's arch flags ("sm_37", "8.0", "3.5, 5.0, 6.0", "7.0+PTX") as sm_XY words."""
    out = []
    for word in value.replace(",", " ").replace(";", " ").split()[:64]:
        ptx = word.upper().endswith("+PTX")
        core = word[:-4] if ptx else word
        m = _ARCH_WORD.fullmatch(core.lower())
        if not m:
            return []
        kind = "compute" if core.lower().startswith("compute_") else "sm"
        out.append(f"{kind}_{m.group(1)}{m.group(2)}{m.group(3)}")
        if ptx:
            out.append(f"compute_{m.group(1)}{m.group(2)}")
    return out


def read_paste(text: str) -> Paste:
    """The evidence in a pasted text (no facts yet)."""
    return _Reader(text).read()


# --------------------------------------------------------------------------------------
# evidence -> facts
# --------------------------------------------------------------------------------------

_FIELD_PATHS = {
    "torch_version": ("torch.version",),
    "cuda_compiled_version": ("torch.cuda_build",),
    "is_cuda_available": ("torch.cuda_available",),
    "python_version": ("system.python_version",),
    "python_platform": ("system.os", "system.kernel", "system.machine", "system.wsl", "system.libc"),
    "os": ("system.os", "system.os_name", "system.os_version", "system.machine"),
    "nvidia_driver_version": ("gpu.driver_version",),
    "cuda_runtime_version": ("system.cuda_toolkit_version",),
    "cudnn_version": ("system.cudnn_version",),
}
_GPU_PATHS = (
    "gpu.devices", "gpu.name", "gpu.count", "gpu.vendors", "gpu.min_compute_capability",
    "gpu.max_compute_capability", "gpu.architectures",
)


def _merge(scan: "ce._Scan", paste: Paste, is_report: bool) -> tuple[dict[str, str], dict[str, Evidence]]:
    """Add the paste's evidence to collect_env's scan where the scan has nothing; the sources
    of what was added, by fact path."""
    sources: dict[str, str] = {}
    f = scan.fields
    added: dict[str, Evidence] = {}
    fields = dict(paste.fields)
    # sw_vers / "Architecture:" lines complete an OS line
    product, product_version = fields.pop("os_product", None), fields.pop("os_product_version", None)
    if "os" not in fields and product is not None and product_version is not None:
        fields["os"] = Evidence(f"{product.value} {product_version.value}", product_version.line,
                                product_version.how, product_version.rank)
    machine = fields.pop("machine", None)
    if "os" not in fields and "os" not in f and "python_platform" in fields:
        plat = fields["python_platform"]
        release, mach, _ = ce._platform_parts(plat.value)
        if plat.value.startswith("macOS-") and release:
            fields["os"] = Evidence(f"macOS {release}" + (f" ({mach})" if mach else ""),
                                    plat.line, plat.how, plat.rank)
    if machine is not None and "os" in fields and not fields["os"].value.endswith(")"):
        word = machine.value.split()[0] if machine.value.split() else ""
        if word.lower() in ce._MACHINES:
            os_ev = fields["os"]
            fields["os"] = Evidence(f"{os_ev.value} ({word})", os_ev.line, os_ev.how, os_ev.rank)
    fields.pop("gpu", None)
    fields.pop("device", None)
    for key, ev in fields.items():
        if key in f and (is_report or ev.rank > RANK_TOOL):
            continue  # a report's own field, or a weaker line than collect_env's label
        if is_report and ev.rank > RANK_TOOL:
            continue  # around a report, only torch's messages and tools' output add facts
        f[key] = str(ev.value)
        added[key] = ev
    for key, ev in added.items():
        for path in _FIELD_PATHS.get(key, ()):
            sources[path] = ev.where
    group = paste.best_gpus
    if group is not None and "nvidia_gpu_models" not in f and not scan.gpu_lines:
        names = group.names
        if len(names) == 1 and not (group.how in ("nvidia-smi", "table row", "key-value line")
                                    and names[0][0] != 0):
            f["nvidia_gpu_models"] = names[0][1]
        else:
            f["nvidia_gpu_models"] = ""
            scan.gpu_lines.extend(f"GPU {i}: {name}" for i, name, _ in names)
        for path in _GPU_PATHS:
            sources[path] = f"{group.how}, line {group.line}"
    have = {ce._norm_name(r.split("==")[0].split()[0]) for _, r in scan.pip_rows if r.strip()}
    have |= {ce._norm_name(r.split()[0]) for r in scan.conda_rows if r.strip()}
    first_row = None
    for name, (ev, build, channel) in paste.rows.items():
        if name in have:
            continue
        if build is not None:
            scan.conda_rows.append(" ".join(x for x in (name, ev.value, build, channel) if x))
        else:
            scan.pip_rows.append(("pip", f"{name}=={ev.value}"))
        if first_row is None or ev.line < first_row.line:
            first_row = ev
    if first_row is not None:
        for path in ("packages.versions", "packages.distributions", "packages.torch_providers"):
            sources[path] = first_row.where
    # a torch row stands for the torch version where nothing else states it (not in a
    # collect_env report: there the version line is torch.__version__ or nothing)
    if "torch_version" not in f and not is_report:
        for name in ("torch", "pytorch"):
            if name in paste.rows:
                ev = paste.rows[name][0]
                f["torch_version"] = ev.value
                added["torch_version"] = ev
                sources["torch.version"] = ev.where
                break
    return sources, added


def _replace_unstated(value: Any) -> Any:
    """Every "not stated in the report" below ``value`` becomes "the paste does not say"."""
    if isinstance(value, Unavailable):
        return Unavailable(unavailable=PASTE_SILENT) if value.unavailable == ce.NOT_STATED else value
    if isinstance(value, list):
        return [_replace_unstated(v) for v in value]
    if isinstance(value, dict):
        return {k: _replace_unstated(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        update = {}
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = _replace_unstated(old)
            if new is not old:
                update[name] = new
        return value.model_copy(update=update) if update else value
    return value


def _u(reason: str) -> Unavailable:
    return Unavailable(unavailable=reason)


def _known(value: Any) -> bool:
    """Whether a fact is stated, or unknown for a reason of its own (a report's "could not
    collect", an implausible number): the paste's evidence fills only what nothing stated."""
    if not isinstance(value, Unavailable):
        return True
    return value.unavailable not in (ce.NOT_STATED, NOT_RECORDED, PASTE_SILENT)


_TORCH_ANSWERED = ("torch_version", "is_debug_build", "is_cuda_available")
"""collect_env fields only an imported torch answers (see collect_env._read_torch_presence)."""


def _torch_overlay(facts: Facts, paste: Paste, added: dict[str, Evidence],
                   sources: dict[str, str], own: set, is_report: bool) -> TorchFacts:
    torch = facts.torch
    if isinstance(torch, Unavailable):
        torch = ce._model(TorchFacts, ce.NOT_STATED)
    upd: dict[str, Any] = {}
    version_ev = added.get("torch_version")
    imported = paste.torch_imported
    if paste.import_failure is not None:
        from torchdoctor.probes._torch_child import failure_from_text

        kind, message = paste.import_failure.value
        for k, v in failure_from_text(kind, message).items():
            upd[k] = v
            sources[f"torch.{k}"] = paste.import_failure.where
    elif imported is not None and (not _known(torch.import_status) or version_ev is not None):
        upd.update(import_status="ok", import_error=None, missing_library=None,
                   missing_symbol=None, signal=None)
        sources["torch.import_status"] = imported.where
    elif version_ev is not None and version_ev.rank > RANK_TOOL and not own & set(_TORCH_ANSWERED):
        # a version from a package list, an install command or prose: installed, maybe
        for k in ("import_status", "import_error", "missing_library", "missing_symbol", "signal"):
            upd[k] = _u("the paste lists torch but does not show whether it imports")
    version = upd.get("version", torch.version)
    if isinstance(version, str) and version_ev is not None:
        upd["version"] = version
    # the build's variant from its local label (2.5.1+cu121), else from an index URL
    label = _local_label(version) if isinstance(version, str) else None
    variant = label
    if variant is None and isinstance(version, str) and paste.cuda_variant is not None:
        variant = paste.cuda_variant.value
    where = (version_ev.where if label and version_ev is not None
             else paste.cuda_variant.where if paste.cuda_variant is not None else None)
    if variant and not _known(torch.cuda_build) and not is_report:
        # (a collect_env report states the build's CUDA itself; where its line is missing the
        # report is read as before: the version label alone is not read there)
        if _cuda_of_variant(variant):
            upd["cuda_build"] = _cuda_of_variant(variant)
            if not _known(torch.hip_build):
                upd["hip_build"] = None
            sources["torch.cuda_build"] = where
        elif variant == "cpu":
            upd.update(cuda_build=None, hip_build=None, cudnn_version=None,
                       cudnn_compiled_version=None)
            sources["torch.cuda_build"] = where
        elif variant.startswith("rocm") and ce._leading_version(variant[4:]):
            upd.update(cuda_build=None, hip_build=ce._leading_version(variant[4:]))
            sources["torch.cuda_build"] = sources["torch.hip_build"] = where
    if paste.cuda_build_none is not None:
        upd["cuda_build"] = None
        sources["torch.cuda_build"] = paste.cuda_build_none.where
    if paste.cuda_available is not None and not _known(torch.cuda_available):
        upd["cuda_available"] = paste.cuda_available.value
        sources["torch.cuda_available"] = paste.cuda_available.where
    elif paste.cuda_available is not None and torch.cuda_available == paste.cuda_available.value:
        sources.setdefault("torch.cuda_available", paste.cuda_available.where)
    if paste.init_errors and not _known(torch.cuda_init_error):
        upd["cuda_init_error"] = "\n".join(e.value for e in paste.init_errors)[:MAX_MESSAGE_CHARS * 2]
        sources["torch.cuda_init_error"] = paste.init_errors[0].where
    elif paste.init_errors and isinstance(torch.cuda_init_error, str):
        sources.setdefault("torch.cuda_init_error", paste.init_errors[0].where)
    if paste.arch_list is not None and not _known(torch.arch_list):
        upd["arch_list"] = list(paste.arch_list.value)
        sources["torch.arch_list"] = paste.arch_list.where
    if paste.cudnn is not None:
        built, runtime = paste.cudnn.value
        upd["cudnn_compiled_version"], upd["cudnn_version"] = built, runtime
        sources["torch.cudnn_compiled_version"] = sources["torch.cudnn_version"] = paste.cudnn.where
    if paste.compile_error is not None:
        upd["compile_error"] = paste.compile_error.value
        sources["torch.compile_error"] = paste.compile_error.where
    return torch.model_copy(update=upd) if upd else torch


def _gpu_overlay(facts: Facts, paste: Paste, sources: dict[str, str]) -> Any:
    gpu = facts.gpu
    group = paste.best_gpus
    stated = {}
    if group is not None:
        for g in sorted(paste.gpu_groups, key=lambda x: (x.rank, x.line)):
            for _, name, cc in g.names:
                if cc is not None:
                    stated.setdefault(name.lower(), cc)
    if isinstance(gpu, Unavailable) and paste.cuda_driver is None:
        return gpu
    if isinstance(gpu, Unavailable):
        gpu = ce._model(GpuFacts, ce.NOT_STATED, source="report")
    upd: dict[str, Any] = {}
    if paste.cuda_driver is not None and not _known(gpu.cuda_driver_version):
        upd["cuda_driver_version"] = paste.cuda_driver.value
        sources["gpu.cuda_driver_version"] = paste.cuda_driver.where
    elif paste.cuda_driver is not None and gpu.cuda_driver_version == paste.cuda_driver.value:
        sources["gpu.cuda_driver_version"] = paste.cuda_driver.where
    devices = gpu.devices
    if stated and isinstance(devices, list):
        new = []
        for d in devices:
            cc = stated.get(d.name.lower()) if isinstance(d.name, str) else None
            if cc is not None and d.vendor == "nvidia":
                arch = tables.arch_for_cc(cc)
                d = d.model_copy(update={
                    "compute_capability": cc,
                    "architecture": arch if arch else _u(f"no architecture known for compute capability {cc}"),
                })
            new.append(d)
        nvidia = [d for d in new if d.vendor == "nvidia"]
        ccs = [d.compute_capability for d in nvidia]
        upd["devices"] = new
        if ccs and all(isinstance(c, float) for c in ccs):
            upd["min_compute_capability"] = min(ccs)
            upd["max_compute_capability"] = max(ccs)
            archs = [d.architecture for d in nvidia]
            if all(isinstance(a, str) for a in archs):
                upd["architectures"] = list(dict.fromkeys(archs))
    return gpu.model_copy(update=upd) if upd else gpu


def _packages_overlay(facts: Facts, paste: Paste, sources: dict[str, str]) -> Any:
    if not paste.extension_archs:
        return facts.packages
    packages = facts.packages
    if isinstance(packages, Unavailable):
        packages = ce._model(PackagesFacts, ce.NOT_STATED)
    archs = {name: list(ev.value) for name, ev in paste.extension_archs.items()}
    first = min(paste.extension_archs.values(), key=lambda e: e.line)
    sources["packages.extension_archs"] = first.where
    return packages.model_copy(update={"extension_archs": archs})


def facts_from_text(text: str) -> Facts:
    """Facts (``origin="report"``) from pasted text of any shape this module reads: a
    collect_env report (read exactly as :func:`collect_env.parse_collect_env` reads it, plus
    what the text around it states) or anything else. Raises :class:`collect_env.NotAReport`
    when the text states no environment fact at all."""
    scan = ce._scan(text)
    is_report = len(scan.fields) >= ce.MIN_REPORT_FIELDS
    own = set(scan.fields)
    paste = read_paste(text)
    if not scan.fields and not scan.pip_rows and not scan.conda_rows and paste.empty():
        raise ce.NotAReport("no known field found")
    sources, added = _merge(scan, paste, is_report)
    init = ce.cuda_init_warning(text)
    facts = ce._build(scan, ce._import_error_line(text), init)
    upd: dict[str, Any] = {}
    torch = _torch_overlay(facts, paste, added, sources, own, is_report)
    if torch is not facts.torch:
        upd["torch"] = torch
    gpu = _gpu_overlay(facts, paste, sources)
    if gpu is not facts.gpu:
        upd["gpu"] = gpu
    packages = _packages_overlay(facts, paste, sources)
    if packages is not facts.packages:
        upd["packages"] = packages
    if isinstance(facts.system, Unavailable):
        values = {}
        for key, name in (("cuda_runtime_version", "cuda_toolkit_version"),
                          ("cudnn_version", "cudnn_version")):
            version = ce._leading_version(scan.fields.get(key, ""))
            if version:
                values[name] = version
        if values:
            upd["system"] = ce._model(SystemFacts, ce.NOT_STATED, **values)
    notes = list(facts.notes)
    versions = {ev.value for ev in paste.torch_versions}
    if len(versions) > 1 and "torch_version" in added:
        notes.append(
            f"report: the paste shows {len(versions)} different torch versions (several "
            "environments?); the first one stated was read"
        )
    if not is_report:
        kinds = sorted({w.split(", line")[0] for w in sources.values() if w})
        notes.append(
            "report: not a collect_env report; read from the paste's "
            + ", ".join(kinds[:8])
            + " (facts.sources says where each fact came from); what it does not say is unknown"
        )
    upd["notes"] = notes
    upd["sources"] = {k: v for k, v in sorted(sources.items()) if v}
    facts = facts.model_copy(update=upd)
    if not own:  # no collect_env field at all: the paste, not a report, is silent
        facts = _replace_unstated(facts)
    return Facts.model_validate(facts.model_dump())
