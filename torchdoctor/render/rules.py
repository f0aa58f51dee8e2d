"""Rules as text (``torchdoctor rules list`` / ``rules explain``): pure functions of loaded
rules."""

from __future__ import annotations

import json
from typing import Any, Sequence


def listing(rules: Sequence[Any], fmt: str = "terminal") -> str:
    """One line per rule (id, severity, category, summary), sorted by category then id; or
    the same as a JSON list (with each rule's precedence)."""
    ordered = sorted(rules, key=lambda r: (r.category, r.id))
    if fmt == "json":
        return json.dumps([{"id": r.id, "severity": r.severity, "category": r.category,
                            "precedence": r.precedence, "summary": r.summary} for r in ordered],
                          indent=2) + "\n"
    return "".join(f"{r.id:45s} {r.severity:8s} {r.category:22s} {r.summary}\n" for r in ordered)


def explain(rule: Any) -> str:
    """A rule as Markdown: summary, why, fix, what it recommends, known problems, references."""
    r = rule
    text = (f"# {r.id}\n\n**{r.severity}** · {r.category} · precedence: {r.precedence}\n\n{r.summary}\n\n"
            f"## Why\n\n{r.why}\n\n## Fix\n\n{r.fix}\n\n")
    if r.recommend:
        text += "## Recommends\n\n" + "\n".join(f"- `{k}`" for k in r.recommend) + "\n\n"
    if r.known_problems:
        text += f"## Known problems\n\n{r.known_problems}\n\n"
    text += "## References\n\n" + "\n".join(f"- {u}" for u in r.references) + "\n"
    return text
