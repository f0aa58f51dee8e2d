"""The distributions worth recording (``rules/data/packages_of_interest.yaml``): shared by the packages probe and
the paste reader, in a module of its own so that reading a paste does not import the probes (their threads,
subprocess and child-script machinery)."""

from __future__ import annotations

import re
from typing import Any, NamedTuple, Optional

from torchdoctor.tables._load import allow_list

_RUNS = re.compile(r"[-_.]+")


def normalize_name(name: str) -> str:
    """PEP 503 normalised distribution name: lower case, runs of -_. become one dash (as
    ``probes/_interp_child.normalize_name``, which runs standalone under the target interpreter)."""
    return _RUNS.sub("-", name).lower()


class Interest(NamedTuple):
    """Normalised distribution names and name prefixes worth recording."""

    names: tuple[str, ...]
    prefixes: tuple[str, ...]

    def matches(self, name: str) -> bool:
        name = normalize_name(name)
        return name in self.names or name.startswith(self.prefixes)

    def request(self) -> dict[str, Any]:
        return {"names": list(self.names), "prefixes": list(self.prefixes)}


def load_interest(directory: Optional[str] = None) -> Interest:
    """Read ``packages_of_interest.yaml`` (names and prefixes, each with reason and source)."""
    _, names, prefixes, _ = allow_list("packages_of_interest", directory)
    return Interest(
        names=tuple(normalize_name(n) for n in names),
        prefixes=tuple(normalize_name(p) for p in prefixes),
    )
