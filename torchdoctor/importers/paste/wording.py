"""The wordings a paste is read with: ``rules/data/paste_patterns.yaml``, loaded, checked
(every regular expression linear, every entry sourced) and compiled once."""

from __future__ import annotations

import functools
import re
from typing import Any, NamedTuple, Optional

from torchdoctor import tables
from torchdoctor.importers import collect_env as ce

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


LINEAR_ENTRY = "linear-paste-regexes.json"
"""The rule cache's entry (:mod:`torchdoctor.rulecache`) of the shipped files' regular expressions that passed
:func:`_check_linear`, each with its group names, keyed by torchdoctor's code (the check included): a warm start
neither parses them a second time to check them nor compiles them before a line could match (:class:`LazyPattern`).
Trusted for the shipped ``rules/data`` files only; a pattern file from another directory is always checked, so a
cache entry can vouch for nothing a data file could not already hold."""
_LINEAR: dict = {}
"""Regular expressions checked by :func:`_check_linear` in this process (linear whatever file they came from), with
their group names."""


class LazyPattern:
    """A checked regular expression compiled when first used: a paste matches a handful of the ~100 shipped
    patterns, and compiling all of them cost ~6 ms of every run. ``groupindex`` is known without compiling (the
    cache entry of :data:`LINEAR_ENTRY` holds it)."""

    __slots__ = ("pattern", "_groups", "_compiled")

    def __init__(self, pattern: str, groups: tuple):
        self.pattern, self._groups, self._compiled = pattern, tuple(groups), None

    def _get(self) -> re.Pattern:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern)
        return self._compiled

    @property
    def groupindex(self) -> dict:
        if self._compiled is not None:
            return dict(self._compiled.groupindex)
        return {name: i for i, name in enumerate(self._groups, 1)}

    def search(self, *args: Any) -> Any:
        return self._get().search(*args)

    def match(self, *args: Any) -> Any:
        return self._get().match(*args)

    def fullmatch(self, *args: Any) -> Any:
        return self._get().fullmatch(*args)

    def finditer(self, *args: Any) -> Any:
        return self._get().finditer(*args)

    def sub(self, *args: Any) -> Any:
        return self._get().sub(*args)

    def __repr__(self) -> str:
        return f"LazyPattern({self.pattern!r})"


def _linear_cached() -> dict:
    """regex -> group names, of the shipped regexes a previous run checked (empty: none, stale, corrupt)."""
    from torchdoctor import rulecache

    cached = rulecache.load(LINEAR_ENTRY, rulecache.make_key([]))
    if not isinstance(cached, dict):  # none, stale, corrupt or not ours: every regex is checked
        return {}
    return {r: tuple(g) for r, g in cached.items()
            if isinstance(g, list) and all(isinstance(n, str) and n.isidentifier() for n in g)}


def linear_known() -> dict:
    """The shipped regexes checked by an earlier run (:func:`_linear_cached`), read once per process."""
    global _KNOWN
    if _KNOWN is None:
        _KNOWN = _linear_cached()
    return _KNOWN


_KNOWN: Optional[dict] = None


def remember_linear(used: dict) -> None:
    """Add the shipped regexes checked in this run to the cache entry (one write, only when something is new)."""
    known = linear_known()
    if all(r in known for r in used):
        return
    from torchdoctor import rulecache

    known.update(used)
    rulecache.store(LINEAR_ENTRY, rulecache.make_key([]), {r: list(g) for r, g in sorted(known.items())})


def _compile(regex: Any, where: str, known: Optional[dict] = None, used: Optional[dict] = None) -> Any:
    """A checked pattern: a :class:`LazyPattern` for a regex an earlier run checked (``known``), else the regex
    checked now and compiled (recorded in ``used`` with its group names)."""
    if not isinstance(regex, str) or not regex:
        raise tables.DataFileError(f"{where}: regex must be a non-empty string")
    if known and regex in known:
        if used is not None:
            used[regex] = known[regex]
        return LazyPattern(regex, known[regex])
    if regex not in _LINEAR:
        _check_linear(regex, where)
        compiled = re.compile(regex)
        _LINEAR[regex] = tuple(sorted(compiled.groupindex, key=compiled.groupindex.get))
    else:
        compiled = re.compile(regex)
    if used is not None:
        used[regex] = _LINEAR[regex]
    return compiled


class _Message(NamedTuple):
    id: str
    needle: str
    regex: Any  # re.Pattern or LazyPattern
    sets: dict
    start: Optional[str]  # where the quoted message starts ("from")


class _PathPattern(NamedTuple):
    id: str
    needle: str
    regex: Any  # re.Pattern or LazyPattern
    rank: int
    context: tuple[str, ...]  # one of these must be on the line too (empty: no condition)


class _Patterns(NamedTuple):
    labels: dict[str, str]
    scoped: dict[tuple[str, str], str]
    sections: dict[str, str]
    empty_values: frozenset
    nvidia_brands: tuple[str, ...]
    amd_brands: tuple[str, ...]
    os_words: tuple[str, ...]
    extra_packages: frozenset
    messages: tuple[_Message, ...]
    import_exception: Any
    import_window: int
    torch_context: tuple[str, ...]
    not_torch: tuple[str, ...]
    paths: tuple[_PathPattern, ...]
    expressions: tuple[tuple[str, str], ...]
    arch_flags_suffix: str
    availability: dict[str, tuple[frozenset, frozenset]]
    device_string: Any
    gpu_suffixes: tuple[Any, ...]
    install_failed: tuple[str, ...]


_SETS = {"torch_imported", "cuda_available", "cuda_build_none", "init_error", "compile_error"}
_GROUPS = {
    "gpu", "sm", "cc", "archs", "found", "cudnn_built", "cudnn_runtime", "torch", "torch_base",
    "python", "python_nodot", "python_min", "driver", "cuda_driver", "toolkit", "platform",
    "variant", "rocm", "index", "os_name", "installer",
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
    if directory is not None:
        return _patterns(directory, None, {})
    used: dict = {}
    result = _patterns(None, linear_known(), used)
    remember_linear(used)  # a shipped regex checked now for the first time: remember it
    return result


def _patterns(directory: Optional[str], known: Optional[dict], used: dict) -> _Patterns:
    def compile_(regex: Any, where: str) -> Any:
        return _compile(regex, where, known, used)

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
        regex = compile_(item.get("regex"), w)
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
        regex = compile_(item.get("regex"), w)
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
        import_exception=compile_(imp.get("exception"), f"{where}: import_failure.exception"),
        import_window=int(imp.get("window") or 0),
        torch_context=tuple(_strings(imp.get("torch_context"), f"{where}: import_failure")),
        not_torch=tuple(_strings(imp.get("not_torch"), f"{where}: import_failure.not_torch")),
        paths=tuple(paths),
        expressions=tuple(
            (str(e.get("expression")), str(e.get("key"))) for e in data.get("expressions") or []
        ),
        arch_flags_suffix=str((data.get("extension_arch_flags") or {}).get("suffix") or "archflags"),
        availability=availability,
        device_string=compile_(data.get("device_string"), f"{where}: device_string"),
        install_failed=tuple(_strings(data.get("install_failed"), f"{where}: install_failed")),
        gpu_suffixes=tuple(
            compile_(r, f"{where}: gpu_value_suffixes")
            for r in _strings(data.get("gpu_value_suffixes"), f"{where}: gpu_value_suffixes")
        ),
    )


@functools.lru_cache(maxsize=1)
def _interest():
    from torchdoctor.tables.interest import load_interest

    return load_interest()


def _of_interest(name: str) -> bool:
    return _interest().matches(name) or name in patterns().extra_packages
