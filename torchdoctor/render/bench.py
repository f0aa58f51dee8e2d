"""BenchResult -> terminal text, Markdown or JSON (pure; `torchdoctor bench`).

A result may be read back from a file anyone wrote (``recommend --measured``, tests) and its
labels come from rules/bench.yaml: every line and cell the terminal and Markdown formats show
goes through :func:`torchdoctor.sanitize.one_line` (no escapes, controls or bidi overrides)
and is bounded (:data:`MAX_CELL`)."""

from __future__ import annotations

import io
import json
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from torchdoctor.bench.results import BenchResult, Measurement
from torchdoctor.render.text import md_cell
from torchdoctor.sanitize import one_line

MARK = {"plan": "plan", "best": "best", "defaults": "defaults"}
MAX_CELL = 200
"""The most characters a table cell shows; MAX_LINE for a header or footer line."""
MAX_LINE = 2000


def _safe(text: Any, limit: int = MAX_CELL) -> str:
    text = one_line(str(text)[: limit * 4])
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _ms(x: Any) -> str:
    return "-" if x is None else f"{x * 1e3:.1f}"


def rows(result: BenchResult) -> list[dict[str, str]]:
    """One row per configuration, fastest first, failed ones last: what every format shows."""
    v = result.verdict
    by_id = {m.config.id: m for m in result.measurements}
    base = by_id.get(v.defaults) if v.defaults else None
    measured = sorted((m for m in result.measurements if m.median_s is not None), key=lambda m: m.median_s)
    other = [m for m in result.measurements if m.median_s is None]
    out = []
    for rank, m in enumerate(measured + other, 1):
        marks = []
        if m.config.id == v.best:
            marks.append("best")
        if "plan" in m.config.roles:
            marks.append("plan")
        if "defaults" in m.config.roles:
            marks.append("defaults")
        speed = "-"
        if base is not None and base.median_s and m.median_s:
            speed = f"{base.median_s / m.median_s:.2f}x"
        out.append({k: _safe(v) for k, v in {
            "rank": str(rank) if m.median_s is not None else "-",
            "config": m.config.label + (" · compile=on" if m.config.compile and "compile" not in m.config.label else ""),
            "median": _ms(m.median_s),
            "iqr": _ms(m.iqr_s),
            "reps": str(m.reps),
            "speedup": speed,
            "marks": " ".join(marks),
            "numerics": ", ".join(m.config.numerics) or "-",
            "status": m.status if m.status != "ok" else "",
            "error": m.error or "",
            "compile": f"{m.first_step_s:.1f}" if m.config.compile and m.first_step_s else "",
        }.items()})
    return out


def header(result: BenchResult) -> list[str]:
    mach = result.machine
    where = mach.cpu or "unknown CPU"
    if result.device == "cuda" and mach.gpus:
        where = f"{mach.gpus[0]} (+ {where})"
    sizes = ", ".join(f"{k} {v}" for k, v in result.sizes.items())
    lines = [
        f"torchdoctor bench: {result.task or 'custom workload'} ({result.mode}) on {where}, "
        f"torch {result.torch_version or '?'}",
        f"workload: {result.description}; {sizes}",
        f"machine: {mach.cores or '?'} cores, torch threads {mach.threads or '?'}, ISA {' '.join(mach.isa) or '-'}",
        f"budget {result.budget_s:g} s, took {result.elapsed_s:.0f} s; plan from {result.plan_source}",
    ]
    return [_safe(line, MAX_LINE) for line in lines]


def footer(result: BenchResult) -> list[str]:
    v = result.verdict
    lines = []
    if v.regret is not None:
        lines.append(f"regret of the plan: {v.regret:+.1%} (noise ±{(v.noise or 0):.1%})"
                     + (f"; plan vs torch defaults: {v.speedup_plan:.2f}x" if v.speedup_plan else ""))
    if v.summary:
        lines.append("verdict: " + v.summary)
    for m in result.measurements:
        if m.config.compile and m.first_step_s is not None:
            lines.append(f"{m.config.label}: compiling (the first step) took {m.first_step_s:.1f} s, "
                         f"not counted in its step time")
        if m.error:
            lines.append(f"{m.config.id} {m.config.label}: {m.status}: {m.error}")
    for s in result.skipped:
        lines.append(f"skipped {s.label}: {s.reason}")
    for u in result.unmeasured:
        lines.append(f"not measured: {u.key} = {u.value} ({u.reason})")
    for p in result.pinned:
        lines.append(f"not varied: {p}")
    lines += result.notes
    lines.append("ms = median step time; IQR = interquartile range; speed-up vs torch defaults; "
                 "numerics = results change (bf16/fp16/TF32/medium matmul)")
    return [_safe(line, MAX_LINE) for line in lines]


def render_terminal(result: BenchResult, color: bool = False, width: int = 120) -> str:
    table = Table(show_lines=False, expand=False)
    for name, justify in (("#", "right"), ("configuration", "left"), ("ms/step", "right"),
                          ("IQR", "right"), ("reps", "right"), ("speed-up", "right"),
                          ("", "left"), ("numerics", "left")):
        table.add_column(name, justify=justify)
    for r in rows(result):
        style = "bold" if "plan" in r["marks"] else ("green" if "best" in r["marks"] else None)
        cells = (r["rank"], r["config"], r["median"], r["iqr"], r["reps"], r["speedup"],
                 (r["marks"] + (" " + r["status"] if r["status"] else "")).strip(), r["numerics"])
        table.add_row(*(Text(c) for c in cells), style=style)  # Text: a "[link=…]" is not markup
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=color, no_color=not color, width=width,
                      color_system="standard" if color else None, highlight=False)
    for line in header(result):
        console.print(line, markup=False)
    console.print(table)
    for line in footer(result):
        console.print(line, markup=False)
    return buf.getvalue()


def render_markdown(result: BenchResult) -> str:
    out = ["### " + md_cell(header(result)[0]), ""]
    out += [md_cell(line) + "  " for line in header(result)[1:]]
    out += ["", "| # | configuration | ms/step | IQR | reps | speed-up | | numerics |",
            "|---:|---|---:|---:|---:|---:|---|---|"]
    for r in rows(result):
        mark = (r["marks"] + (" " + r["status"] if r["status"] else "")).strip()
        cfg = f"**{md_cell(r['config'])}**" if "plan" in r["marks"] else md_cell(r["config"])
        out.append(f"| {r['rank']} | {cfg} | {r['median']} | {r['iqr']} | {r['reps']} | "
                   f"{r['speedup']} | {md_cell(mark)} | {md_cell(r['numerics'])} |")
    out.append("")
    out += ["- " + md_cell(line) for line in footer(result)]
    return "\n".join(out) + "\n"


def render_json(result: BenchResult) -> str:
    return json.dumps(result.model_dump(mode="json"), indent=2) + "\n"


def render(result: BenchResult, fmt: str, color: bool = False, width: int = 120) -> str:
    if fmt == "json":
        return render_json(result)
    if fmt == "markdown":
        return render_markdown(result)
    return render_terminal(result, color=color, width=width)


def schema() -> str:
    return json.dumps(BenchResult.model_json_schema(mode="serialization"), indent=2, sort_keys=True) + "\n"


__all__ = ["render", "render_terminal", "render_markdown", "render_json", "rows", "schema", "Measurement"]
