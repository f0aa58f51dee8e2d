"""env probe: the environment variables that change PyTorch's behaviour, and nothing else.

Names come from ``_sys.environ_names()``; a value is read with ``_sys.getenv(name)`` only
for a name on the allow-list (``rules/data/env_allowlist.yaml``: exact names and prefixes,
minus names that look like secrets). HOME, USER, cloud credentials and tokens are never
read. The target interpreter does not matter here: it would inherit this environment.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from torchdoctor import tables
from torchdoctor.facts import EnvFacts
from torchdoctor.probes import ProbeContext, _sys
from torchdoctor.probes._interp_child import safe_text

__all__ = ["Allowlist", "load_allowlist", "probe", "read_allowed", "safe_text"]


@dataclass(frozen=True)
class Allowlist:
    """Which environment variable names may be read."""

    names: frozenset[str]
    prefixes: tuple[str, ...]
    deny_substrings: tuple[str, ...]
    deny_parts: frozenset[str] = frozenset()

    def allows(self, name: str) -> bool:
        if not (name in self.names or name.startswith(self.prefixes)):
            return False
        upper = name.upper()
        if any(bad in upper for bad in self.deny_substrings):
            return False
        return not (set(upper.split("_")) & self.deny_parts)


def load_allowlist(directory: Optional[str] = None) -> Allowlist:
    """Read ``env_allowlist.yaml`` (yaml.safe_load through ``tables.load``) and check it."""
    data, names, prefixes, where = tables.allow_list("env_allowlist", directory)
    deny = data.get("deny_substrings") or []
    if not isinstance(deny, list) or not all(isinstance(d, str) and d for d in deny):
        raise tables.DataFileError(f"{where}: deny_substrings must be a list of strings")
    parts = data.get("deny_parts") or []
    if not isinstance(parts, list) or not all(isinstance(d, str) and d and "_" not in d for d in parts):
        raise tables.DataFileError(f"{where}: deny_parts must be a list of words without '_'")
    for prefix in prefixes:
        if not prefix.endswith("_"):
            # "CUDA" without the underscore would also match CUDAHOSTCXX, CUDART...: be explicit
            raise tables.DataFileError(f"{where}: prefix {prefix!r} must end with '_'")
    return Allowlist(
        names=frozenset(names),
        prefixes=tuple(prefixes),
        deny_substrings=tuple(d.upper() for d in deny),
        deny_parts=frozenset(d.upper() for d in parts),
    )


def read_allowed(allowlist: Allowlist) -> dict[str, str]:
    """Values of the allow-listed variables that are set (empty strings included)."""
    variables: dict[str, str] = {}
    for name in _sys.environ_names():
        if not allowlist.allows(name):
            continue
        value = _sys.getenv(name)
        if value is None:  # unset between listing and reading
            continue
        variables[safe_text(name)] = safe_text(value)
    return dict(sorted(variables.items()))


def probe(ctx: ProbeContext) -> EnvFacts:
    return EnvFacts(variables=read_allowed(load_allowlist()))
