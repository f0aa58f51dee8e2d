"""Safe, bounded YAML loading, through libyaml's C safe loader when PyYAML was built with it.

``yaml.load(text, Loader=CSafeLoader)`` is exactly ``yaml.safe_load`` (same safe constructor),
about 8x faster on our rule files. On top of it, every YAML file torchdoctor reads (a workload,
a rule of a shared rule pack, a table) is treated as hostile:

- it is read through :func:`torchdoctor.safeio.read_bounded` (regular files only, a size cap:
  ``/dev/zero`` or a FIFO is one line, never a hang);
- integers and floats are at most :data:`MAX_NUMBER_CHARS` characters (a 5,000-digit seed is
  Python's int-to-str limit, a long base-60 ``1:2:3:...`` is quadratic to convert);
- aliases (``*name``) are refused in workload and rule files (a nested alias "billion laughs"
  costs nothing to load but explodes when anything walks or prints it); data tables may alias
  scalars only.

Every problem raises the caller's error class with ``path:line: what``. ``yaml`` is imported
on first use, so importing this module is free.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

MAX_NUMBER_CHARS = 1000
"""Characters of one YAML integer or float (64-bit values need 20)."""
MAX_YAML_BYTES = 1024 * 1024
"""Default size cap of one YAML file (the largest shipped table is about 60 kB)."""


@functools.lru_cache(maxsize=1)
def _yaml() -> Any:
    import yaml

    return yaml


@functools.lru_cache(maxsize=1)
def _loader() -> type:
    """A C safe loader (pure-Python fallback) whose numbers are bounded in length."""
    yaml = _yaml()
    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class BoundedSafeLoader(base):  # type: ignore[misc, valid-type]
        pass

    def bounded(construct: Any) -> Any:
        def constructor(loader: Any, node: Any) -> Any:
            if len(node.value) > MAX_NUMBER_CHARS:
                raise yaml.constructor.ConstructorError(
                    None, None, f"a number of {len(node.value)} characters (at most {MAX_NUMBER_CHARS})",
                    node.start_mark)
            return construct(loader, node)

        return constructor

    ctor = yaml.constructor.SafeConstructor
    BoundedSafeLoader.add_constructor("tag:yaml.org,2002:int", bounded(ctor.construct_yaml_int))
    BoundedSafeLoader.add_constructor("tag:yaml.org,2002:float", bounded(ctor.construct_yaml_float))
    return BoundedSafeLoader


def __getattr__(name: str) -> Any:  # SafeLoader / YAMLError, resolved lazily
    if name == "SafeLoader":
        return _loader()
    if name == "YAMLError":
        return _yaml().YAMLError
    raise AttributeError(name)


def safe_load(text: Any) -> Any:
    """Parse YAML text with the bounded safe loader (no alias check: see :func:`load_text`)."""
    return _yaml().load(text, Loader=_loader())  # noqa: S506 - a SafeLoader


def error_line(exc: BaseException) -> str:
    """':N' for a YAML error with a position, else ''."""
    mark = getattr(exc, "problem_mark", None)
    return f":{mark.line + 1}" if mark is not None else ""


def _problem(exc: BaseException) -> str:
    """The parser's complaint, bounded (it may quote the offending text)."""
    return " ".join(str(getattr(exc, "problem", None) or exc).split())[:200]


def load_text(text: str, label: str, error: type, *, aliases: str = "none") -> Any:
    """Parse ``text`` (from ``label``); ``aliases``: "none" refuses every anchor and alias,
    "scalars" allows aliases of scalars only. Any problem raises ``error("label:line: what")``."""
    yaml = _yaml()
    check_aliases(text, label, error, allow_scalars=(aliases == "scalars"))
    try:
        return safe_load(text)
    except yaml.YAMLError as exc:
        raise error(f"{label}{error_line(exc)}: invalid YAML: {_problem(exc)}") from None
    except (ValueError, OverflowError) as exc:  # a conversion the bounds above did not foresee
        raise error(f"{label}: invalid YAML: {str(exc)[:200]}") from None
    except RecursionError:
        raise error(f"{label}: invalid YAML: nested too deeply") from None


def check_aliases(text: str, label: str, error: type, *, allow_scalars: bool = False) -> None:
    """Refuse anchors/aliases (``&a`` / ``*a``) with the line of the first one."""
    if "*" not in text and "&" not in text:
        return  # neither an anchor nor an alias can be written without these
    yaml = _yaml()
    scalars: set = set()
    try:
        for event in yaml.parse(text, Loader=_loader()):
            anchor = getattr(event, "anchor", None)
            if anchor is None:
                continue
            line = event.start_mark.line + 1
            name = anchor[:40]
            if isinstance(event, yaml.AliasEvent):
                if allow_scalars and anchor in scalars:
                    continue
                what = "an alias of a list or mapping" if allow_scalars else "a YAML alias"
                raise error(f"{label}:{line}: {what} (*{name}) is not allowed in this file; "
                            "write the value out")
            if not allow_scalars:
                raise error(f"{label}:{line}: a YAML anchor (&{name}) is not allowed in this file; "
                            "write the value out")
            if isinstance(event, yaml.ScalarEvent):
                scalars.add(anchor)
            else:
                scalars.discard(anchor)
    except yaml.YAMLError:
        return  # malformed: the loader reports it with its line


def read_text(path: Any, error: type, *, what: str, limit: int = MAX_YAML_BYTES,
              stdin: bool = False) -> str:
    """A user-named YAML file's text, read bounded (regular files only; '-' is stdin only
    where ``stdin`` says so), as UTF-8."""
    from torchdoctor.safeio import InputError, read_bounded

    name = str(path)
    if name == "-" and not stdin:
        name = "./-"
    try:
        data = read_bounded(name, limit, what=what)
    except InputError as exc:
        text = str(exc)
        if not stdin:  # the hint to pipe the file to stdin does not apply here
            text = text.replace("; pipe it to stdin and pass '-' instead", "")
        raise error(text) from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None


def read_file(path: Any, error: type, *, what: str = "", limit: int = MAX_YAML_BYTES,
              aliases: str = "none") -> Any:
    """Parse a YAML file; any problem raises ``error("path[:line]: what")``."""
    return load_text(read_text(path, error, what=what, limit=limit), str(path), error, aliases=aliases)


def read_cached(path: Any, error: type, *, what: str, kind: str, limit: int = MAX_YAML_BYTES,
                aliases: str = "none") -> tuple[str, Any]:
    """``(text, data)`` of a shipped YAML file whose data the caller checks on every load
    (settings.yaml, tasks.yaml): parsed once and then read from :mod:`torchdoctor.rulecache`
    (keyed by the file's bytes), so a warm run never imports yaml."""
    from torchdoctor import rulecache

    text = read_text(path, error, what=what, limit=limit)
    key = rulecache.make_key([(str(path), text.encode("utf-8"))])
    name = rulecache.entry_name(kind, [str(path)])
    data = rulecache.load(name, key)
    if data is None:
        data = load_text(text, str(path), error, aliases=aliases)
        rulecache.store(name, key, data)
    return text, data


def compose(text: str) -> Optional[Any]:
    """The node tree of ``text`` (for ``path:line`` on an error path), or None if unreadable.
    Called only on text that passed :func:`check_aliases`, so the tree has no shared nodes."""
    yaml = _yaml()
    try:
        return yaml.compose(text, Loader=_loader())
    except (yaml.YAMLError, ValueError, RecursionError):
        return None


def line_of_key(text: str, keys: tuple) -> int:
    """1-based line of the mapping key path ``keys`` (ints index sequences); the deepest
    line found when the path stops early; 1 if the text cannot be composed."""
    yaml = _yaml()
    node = compose(text)
    line = node.start_mark.line + 1 if node is not None else 1
    for part in keys:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if getattr(k, "value", None) == str(part):
                    node, line = v, k.start_mark.line + 1
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line

