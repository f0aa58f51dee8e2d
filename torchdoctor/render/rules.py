"""Rules as text (``torchdoctor rules list`` / ``rules explain``): pure functions of loaded
rules."""

from __future__ import annotations

import json
from typing import Any, Sequence


def listing(rules: Sequence[Any], fmt: str = "terminal", lint: Sequence[Any] = ()) -> str:
    """One line per rule (id, severity, category, summary): the environment rules sorted by
    category then id, then the lint rules (category ``lint/<kind>``) by id; or the same as a JSON
    list (environment rules with their precedence, lint rules with ``"lint": true``)."""
    ordered = sorted(rules, key=lambda r: (r.category, r.id))
    linted = sorted(lint, key=lambda r: r.id)
    if fmt == "json":
        return json.dumps([{"id": r.id, "severity": r.severity, "category": r.category,
                            "precedence": r.precedence, "summary": r.summary} for r in ordered]
                          + [{"id": r.id, "severity": r.severity, "category": f"lint/{r.kind}",
                              "lint": True, "default": r.default, "summary": r.summary} for r in linted],
                          indent=2) + "\n"
    rows = [(r.id, r.severity, r.category, r.summary) for r in ordered]
    rows += [(r.id, r.severity, f"lint/{r.kind}", r.summary) for r in linted]
    return "".join(f"{i:45s} {sev:8s} {cat:22s} {summary}\n" for i, sev, cat, summary in rows)


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
