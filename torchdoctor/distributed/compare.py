"""Compare one fact across the ranks of a job and name the odd ones out.

Pure functions over :class:`~torchdoctor.facts.JobFacts` and the values a reader extracted
from each rank (the engine evaluates the fact path on every rank's facts). They back the rule
functions ``differs(path)``, ``odd_ones(path)`` and ``keys_differing(path, prefixes)``
(docs/writing-rules.md); which difference matters is the rules' business, not this module's.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Iterable, Optional, Sequence

from torchdoctor.facts import JobFacts


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()
"""What a reader returns for a rank where the fact is unavailable: left out of the comparison."""

Pairs = list[tuple[int, Any]]
"""(rank, value) for every rank whose value is known."""


def known(values: Iterable[tuple[int, Any]]) -> Pairs:
    return [(r, v) for r, v in values if v is not UNKNOWN]


def key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def show(value: Any, limit: int = 80) -> str:
    if value is None:
        return "unset"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def differs(pairs: Pairs) -> bool:
    return len({key(v) for _, v in pairs}) > 1


def majority(pairs: Pairs) -> Optional[str]:
    """The key of the most common value (a tie goes to the value of the lowest rank)."""
    if not pairs:
        return None
    counts = Counter(key(v) for _, v in pairs)
    best = max(counts.values())
    for _, v in sorted(pairs, key=lambda p: p[0]):
        if counts[key(v)] == best:
            return key(v)
    return None  # pragma: no cover


def ranges(numbers: Sequence[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``0-2, 5``."""
    out: list[str] = []
    nums = sorted(set(numbers))
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ", ".join(out)


def place(job: JobFacts, ranks: Sequence[int]) -> str:
    """Where a set of ranks is: whole nodes by name (``node 1 (ranks 4-7)``), the rest by rank
    (``rank 5 (node 2)``)."""
    node_of = {r.rank: r.node for r in job.ranks}
    on_node: dict[int, list[int]] = {}
    for r in job.ranks:
        on_node.setdefault(r.node, []).append(r.rank)
    chosen = set(ranks)
    parts: list[str] = []
    loose: dict[Optional[int], list[int]] = {}
    for node in sorted(on_node):
        members = on_node[node]
        mine = [r for r in members if r in chosen]
        if not mine:
            continue
        if len(mine) == len(members) and len(on_node) > 1:
            parts.append(f"node {node} ({_ranks_word(mine)})")
        else:
            loose.setdefault(node, []).extend(mine)
    for r in sorted(chosen - set(node_of)):
        loose.setdefault(None, []).append(r)
    for node, rs in loose.items():
        where = f" on node {node}" if node is not None and len(on_node) > 1 else ""
        parts.append(f"{_ranks_word(rs)}{where}")
    return "; ".join(parts)


def _ranks_word(ranks: Sequence[int]) -> str:
    return f"rank {ranks[0]}" if len(ranks) == 1 else f"ranks {ranges(ranks)}"


def odd_ones(job: JobFacts, pairs: Pairs) -> str:
    """``node 1 (ranks 2-3): 2.4.0; the other 2 ranks: 2.5.1`` — the odd values first, each
    with the nodes/ranks that have it, then the common value."""
    if not pairs:
        return "unknown on every rank"
    common = majority(pairs)
    if not differs(pairs):
        return f"all {len(pairs)} ranks: {show(pairs[0][1])}"
    groups: dict[str, list[int]] = {}
    shown: dict[str, Any] = {}
    for rank, value in sorted(pairs, key=lambda p: p[0]):
        k = key(value)
        shown.setdefault(k, value)
        groups.setdefault(k, []).append(rank)
    parts = [f"{place(job, rs)}: {show(shown[k])}" for k, rs in groups.items() if k != common]
    rest = groups.get(common or "", [])
    others = "the other rank" if len(rest) == 1 else f"the other {len(rest)} ranks"
    parts.append(f"{others}: {show(shown[common])}" if common is not None else "")
    return "; ".join(p for p in parts if p)


def odd_ranks(pairs: Pairs) -> list[int]:
    common = majority(pairs)
    return sorted(r for r, v in pairs if key(v) != common)


def keys_differing(maps: Pairs, prefixes: Sequence[str] = ()) -> list[str]:
    """Keys (starting with one of ``prefixes``; all keys when none) of the mappings whose
    value is not the same on every rank; a key set on some ranks and unset on others differs."""
    names: set[str] = set()
    for _, m in maps:
        if isinstance(m, dict):
            names.update(k for k in m if not prefixes or any(str(k).startswith(p) for p in prefixes))
    out = []
    for name in sorted(names):
        values = {key(m.get(name) if isinstance(m, dict) else None) for _, m in maps}
        if len(values) > 1:
            out.append(name)
    return out
