"""Report -> Markdown ready to paste into a GitHub issue (``torchdoctor report``).

Layout (``templates/ticket.md.j2``): a one-line summary (torch, CUDA, GPU, verdict:
render/summary.py), the findings with their fixes, the environment laid out like ``python -m
torch.utils.collect_env`` (render/collect_env.py, in a fenced block, so maintainers find their
fields and torchdoctor's own collect_env importer reads it back), then every fact in a
collapsible ``<details>`` section per namespace.

A pure function of an already-redacted Report; only ``cli`` writes anything.

Nothing from the facts can ping anyone or break out of its place: an ``@name`` in plain text
(the summary, finding messages, reasons, problems) gets a zero-width space after the ``@``
(U+200B: GitHub links a mention only where a name character follows the ``@`` at once, and
the text reads the same), code spans are fenced with more backticks than the value holds, and
no line of the collect_env block can close its fence.
"""

from __future__ import annotations

from typing import Any

import jinja2
from torchdoctor.model import BaseModel

from torchdoctor.facts import NAMESPACES, Facts, Unavailable
from torchdoctor.render.collect_env import collect_env_text
from torchdoctor.render.summary import summary_line
from torchdoctor.render.text import known, md_code, md_prose, md_text, show_value
from torchdoctor.report import SEVERITY_RANK, Report


COMPACT_LISTS = ("packages.distributions",)
"""Lists shown one row per item (``name version · source=pip``) rather than one per field."""


def fact_rows(facts: Facts, namespace: str) -> list[tuple[str, Any]]:
    """(path, value) for every fact of one namespace; items of COMPACT_LISTS as one string."""
    from torchdoctor.diff import iter_facts

    rows: list[tuple[str, Any]] = []
    ns = getattr(facts, namespace)
    for name in type(ns).model_fields:
        path, value = f"{namespace}.{name}", getattr(ns, name)
        if path in COMPACT_LISTS and isinstance(value, list) and value:
            for i, item in enumerate(value):
                rows.append((f"{path}[{i}]", _compact(item)))
            continue
        rows.extend(iter_facts(value, path))
    return rows


def _compact(item: Any) -> str:
    if not isinstance(item, BaseModel):
        return show_value(item, ranges=True)
    data = {k: getattr(item, k) for k in type(item).model_fields}
    head = " ".join(str(data.pop(k)) for k in ("name", "version") if known(data.get(k)))
    rest = [f"{k}={show_value(v, ranges=True)}" for k, v in data.items() if known(v)]
    return " · ".join([head, *rest]) if head else " · ".join(rest)


def _collapse_indices(paths: list[str]) -> list[str]:
    """``devices[0].uuid, devices[1].uuid`` -> ``devices[*].uuid`` (order kept)."""
    import re

    return list(dict.fromkeys(re.sub(r"\[\d+\]", "[*]", p) for p in paths))


def fact_sections(facts: Facts) -> list[dict[str, Any]]:
    """Per namespace: the known facts as table rows, the unknown ones grouped by reason."""
    out = []
    for ns in NAMESPACES:
        value = getattr(facts, ns)
        if isinstance(value, Unavailable):
            out.append({"name": ns, "unknown": md_text(value.unavailable), "rows": [], "missing": [],
                        "total": 0})
            continue
        rows, missing = [], {}  # type: ignore[var-annotated]
        all_rows = fact_rows(facts, ns)
        for path, v in all_rows:
            if isinstance(v, Unavailable):
                missing.setdefault(v.unavailable, []).append(path[len(ns) + 1:])
            else:
                shown = v if isinstance(v, str) else show_value(v, ranges=True)
                if (path.endswith("_bytes") and isinstance(v, int) and not isinstance(v, bool)
                        and v.bit_length() <= 64):
                    shown = f"{v} ({v / 2**30:.1f} GiB)"
                rows.append((md_code(path), md_code(shown)))
        out.append({"name": ns, "unknown": None, "rows": rows, "total": len(all_rows),
                    "missing": [(md_text(reason), md_text(", ".join(_collapse_indices(paths))))
                                for reason, paths in missing.items()]})
    return out


def finding_items(report: Report) -> list[dict[str, Any]]:
    """Errors first; each fix reflowed into paragraphs/list items (GitHub turns the rule
    file's hard line breaks into <br>)."""
    from torchdoctor.render.text import CODE, reflow

    items = []
    for f in sorted(report.findings, key=lambda f: SEVERITY_RANK[f.severity]):
        fix = []
        for block in reflow(f.fix) if f.fix else []:
            if block.startswith(CODE):  # a fenced block, indented into the list item
                body = block[len(CODE):].replace("```", "` ` `")
                fix.append("```\n" + "\n".join(f"  {ln}" for ln in body.splitlines()) + "\n  ```")
            else:
                fix.append(md_prose(block))
        items.append({"severity": f.severity, "id": f.id, "message": md_text(f.message),
                      "fix": fix, "references": f.references[:3]})
    return items


def skipped_groups(report: Report) -> list[tuple[str, list[str]]]:
    """Rules skipped for unknown facts, grouped by why the fact is unknown: (reason,
    ["rule-id (`fact`)", ...]). Rules that need a declared workload are left out: a ticket
    describes an environment, not a workload."""
    groups: dict[str, list[str]] = {}
    for s in report.fact_skipped():
        groups.setdefault(s.reason, []).append(f"`{s.id}` ({md_code(s.needs)})")
    return [(md_text(k), ids) for k, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


# ----------------------------------------------------------------------------------------
# rendering
# ----------------------------------------------------------------------------------------


def _template() -> jinja2.Template:
    from torchdoctor.render.text import templates

    return templates().get_template("ticket.md.j2")


def render_ticket(report: Report) -> str:
    """The Markdown ticket for a (redacted) report."""
    return _template().render(
        r=report,
        summary=summary_line(report),
        counts=report.counts(),
        findings=finding_items(report),
        collect_env=collect_env_text(report.facts),
        sections=fact_sections(report.facts),
        skipped=skipped_groups(report),
        problems=[md_text(p) for p in report.facts.problems],
        origin=report.facts.origin,
    )



def render(report: Report, **_: object) -> str:
    return render_ticket(report)
