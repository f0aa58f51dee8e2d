"""Reading ``rules/data/<name>.yaml``: bounded, parsed safely, validated by the file's model
(:mod:`torchdoctor.tables.models`) with ``path:line`` errors, and cached (in memory, and on
disk by :mod:`torchdoctor.rulecache`, which keeps only validated tables)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, Optional

from torchdoctor.errors import RuleFileError
from torchdoctor.paths import data_dir

MAX_TABLE_BYTES = 4 * 1024 * 1024
"""Size cap of one data file (the largest is about 60 kB)."""

REPLACEABLE = frozenset({"load", "data_dir"})
"""Names a caller may replace on the package (``tables.load = ...``); every lookup reads them
from this module at call time."""


class DataFileError(RuleFileError):
    """A malformed data file: carries ``path:line: what``."""


class _Map(dict):
    """A YAML mapping that remembers its 1-based line."""

    line = 0


@functools.cache
def _line_loader() -> type:
    import yaml

    class _Loader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):  # type: ignore[override]
            data = _Map(super().construct_mapping(node, deep=True))
            data.line = node.start_mark.line + 1
            return data

    _Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _Loader.construct_mapping)
    return _Loader


@functools.cache
def load(name: str, directory: Optional[str] = None) -> Any:
    """Load ``rules/data/<name>.yaml`` (cached) and validate it when the file has a model.

    Read bounded, parsed by the C loader (aliases of scalars only), validated, and kept in the
    on-disk cache of :mod:`torchdoctor.rulecache` keyed by the file's bytes, so a warm start
    neither parses nor validates. Line numbers for an error come from a second, pure-Python
    parse that runs only when validation fails."""
    from torchdoctor import rulecache, yamlio

    path = Path(directory) if directory else data_dir()
    path = path / f"{name}.yaml"
    text = yamlio.read_text(path, DataFileError, what="data file", limit=MAX_TABLE_BYTES)
    # the rule cache's key covers every module of the package (tables/models/ included)
    key = rulecache.make_key([(str(path), text.encode("utf-8"))])
    entry = rulecache.entry_name(f"table-{name}", [str(path)])
    cached = rulecache.load(entry, key)
    if cached is not None:
        return cached
    data = yamlio.load_text(text, str(path), DataFileError, aliases="scalars")
    from torchdoctor.tables import models

    problem = models.problem(name, data)
    if problem is not None:
        import yaml

        lined = yaml.load(text, Loader=_line_loader())  # noqa: S506 - a SafeLoader
        raise DataFileError(models.locate(path, lined, problem))
    rulecache.store(entry, key, data)
    return data


def derived(name: str) -> Callable:
    """Cache what a function computes from table ``name`` for as long as ``load`` returns the
    same object: clearing ``load``'s cache (or replacing ``load``) is enough to refresh it."""

    def wrap(fn: Callable[[Any], Any]) -> Callable[[], Any]:
        memo: list = []

        @functools.wraps(fn)
        def get() -> Any:
            data = load(name)
            if memo and memo[0][0] is data:
                return memo[0][1]
            value = fn(data)
            memo[:] = [(data, value)]
            return value

        return get

    return wrap


def sourced_entries(data: Any, key: str, field: str, where: str) -> list[str]:
    """The ``field`` of every entry of ``data[key]``, each of which must also give a ``reason``
    and a ``source`` (allow-lists such as env_allowlist.yaml and packages_of_interest.yaml)."""
    out = []
    for i, entry in enumerate(data.get(key) or []):
        if not isinstance(entry, dict) or not isinstance(entry.get(field), str) or not entry[field]:
            raise DataFileError(f"{where}: {key}[{i}] needs a non-empty string `{field}`")
        if not entry.get("reason") or not entry.get("source"):
            raise DataFileError(f"{where}: {key}[{i}] ({entry[field]}) needs `reason` and `source`")
        out.append(entry[field])
    return out


def allow_list(name: str, directory: Optional[str] = None) -> tuple[dict, list[str], list[str], str]:
    """An allow-list file (``names`` and ``prefixes``, each entry with ``reason`` and ``source``):
    (data, names, prefixes, where), checked. Shared by the env and packages probes."""
    data = load(name, directory)
    where = f"{directory or 'rules/data'}/{name}.yaml"
    if not isinstance(data, dict):
        raise DataFileError(f"{where}: expected a mapping with `names` and `prefixes`")
    names = sourced_entries(data, "names", "name", where)
    prefixes = sourced_entries(data, "prefixes", "prefix", where)
    return data, names, prefixes, where
