"""A JobReport (`check --distributed`) as terminal text, Markdown or JSON. Pure functions.

The terminal and Markdown views summarise per node, never per rank (64 ranks stay readable):
one line per node, the collectives, the NCCL bandwidth table, then the findings, each with
where it holds (``job``, ``every rank``, ``node 1 (ranks 4-7)``). JSON carries every rank's
facts."""

from __future__ import annotations

import textwrap
from typing import Any

from torchdoctor.distributed.compare import ranges
from torchdoctor.distributed.model import JobReport
from torchdoctor.facts import NodeFacts, RankFacts, Unavailable
from torchdoctor.render.summary import build_summary, gpu_summary, plural, torch_summary
from torchdoctor.render.text import md_cell, md_text

LABEL = {"error": "ERROR", "warning": "WARN", "info": "note"}


def verdict(report: JobReport) -> str:
    """As render/summary.py's verdict, over the job: never ``healthy`` when a rank's facts did
    not arrive (that rank was not diagnosed)."""
    sev = {p.finding.severity for p in report.findings}
    if "error" in sev:
        return "broken"
    if "warning" in sev:
        return "needs attention"
    job = report.job
    if job.missing or len(job.ranks) < job.world_size:
        return f"not diagnosed ({len(job.ranks)} of {plural(job.world_size, 'rank')} reported)"
    return "healthy"


def counts(report: JobReport) -> str:
    c = {s: sum(p.finding.severity == s for p in report.findings) for s in LABEL}
    return f"{c['error']} error(s), {c['warning']} warning(s), {c['info']} note(s)"


def headline(report: JobReport) -> str:
    job = report.job
    nodes = len({r.node for r in job.ranks} | {m.node for m in job.missing if m.node is not None})
    return (f"{job.launcher} job: {len(job.ranks)} of {plural(job.world_size, 'rank')} reported, "
            f"{plural(nodes, 'node')} · {report.seconds:g} s")


def status_line(report: JobReport) -> str:
    return f"{verdict(report)}: {counts(report)} ({headline(report)})"


def _node_ranks(report: JobReport, node: NodeFacts) -> list[RankFacts]:
    return [r for r in report.job.ranks if r.node == node.node]


def _same_or_mixed(values: list[str]) -> str:
    distinct = list(dict.fromkeys(v for v in values if v))
    if len(distinct) <= 1:
        return distinct[0] if distinct else ""
    return "mixed: " + " / ".join(distinct)


def _show(value: Any, unit: str = "") -> str:
    if isinstance(value, Unavailable):
        return "?"
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:g}{unit}"
    return f"{value}{unit}"


def _gib(value: Any) -> str:
    if isinstance(value, int):
        return f"{value / 2**30:.1f} GiB"
    return _show(value)


def node_rows(report: JobReport) -> list[dict[str, str]]:
    rows = []
    for n in report.job.nodes:
        members = _node_ranks(report, n)
        facts = [r.facts for r in members]
        threads = "?" if isinstance(n.threads_total, Unavailable) else str(n.threads_total)
        local = f"{len(n.ranks)}" + (f"/{n.local_world_size}" if n.local_world_size else "")
        rows.append({
            "node": str(n.node), "host": n.host, "ranks": ranges(n.ranks), "local": local,
            "torch": _same_or_mixed([" ".join(p for p in (torch_summary(f), build_summary(f)) if p) for f in facts]),
            "gpus": _same_or_mixed([gpu_summary(f) for f in facts]),
            "devices": ", ".join(n.devices) if n.devices else "-",
            "threads": f"{threads} on {_show(n.usable_cpus)} CPUs"
                       + (f" (OMP_NUM_THREADS={n.omp_num_threads})" if n.omp_num_threads else ""),
            "shm": _gib(n.shm_total_bytes),
        })
    return rows


def collective_rows(report: JobReport) -> list[dict[str, str]]:
    out = []
    for c in report.job.collectives:
        state = f"ok, {c.seconds:g} s" if c.ok and c.seconds is not None else "ok" if c.ok else \
            "FAILED" + (f" on ranks {ranges(c.failed_ranks)}" if c.failed_ranks else "") + (f": {c.error}" if c.error else "")
        out.append({"what": f"{c.backend} {c.op}", "state": state})
    if not any(c.backend == "nccl" for c in report.job.collectives):
        out.append({"what": "nccl", "state": "not run (no rank has CUDA)" if report.job.ranks else "not run"})
    return out


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"


def render_terminal(report: JobReport, width: int = 100, **_: object) -> str:
    width = max(60, min(width, 160))
    lines = [f"torchdoctor check --distributed: {verdict(report)}", headline(report), "", "Nodes"]
    for row in node_rows(report):
        lines.append(f"  node {row['node']}  {row['host']}  ranks {row['ranks']} ({row['local']} local)")
        for label, key in (("torch", "torch"), ("GPUs", "gpus"), ("devices", "devices"),
                           ("threads", "threads"), ("/dev/shm", "shm")):
            lines += textwrap.wrap(f"{label}: {row[key]}", width, initial_indent="      ",
                                   subsequent_indent="        ")
    if report.job.missing:
        lines += ["", "Missing ranks"]
        for m in report.job.missing:
            where = f" on node {m.node}" if m.node is not None else ""
            host = f" ({m.host})" if m.host else ""
            lines += textwrap.wrap(f"rank {m.rank}{where}{host}: {m.detail}", width,
                                   initial_indent="  ", subsequent_indent="    ")
    lines += ["", "Collectives"]
    lines += [f"  {r['what']:<28} {r['state']}" for r in collective_rows(report)]
    if report.job.bandwidth:
        lines += ["", f"NCCL all_reduce bandwidth ({report.job.world_size} ranks; busbw = algbw x 2(n-1)/n)",
                  f"  {'size':>10}  {'time (us)':>10}  {'algbw GB/s':>10}  {'busbw GB/s':>10}"]
        lines += [f"  {_size(b.size_bytes):>10}  {b.seconds * 1e6:>10.1f}  {b.algbw_gbps:>10.2f}  {b.busbw_gbps:>10.2f}"
                  for b in report.job.bandwidth]
    lines += ["", "Findings" if report.findings else "No findings."]
    for p in report.findings:
        f = p.finding
        lines.append(f"  {LABEL[f.severity]:<5} {f.id}  [{p.where}]")
        lines += textwrap.wrap(f.message, width, initial_indent="        ", subsequent_indent="        ")
    lines += ["", f"{counts(report)} · {report.rules_evaluated} rules evaluated"
              + (f", {len(report.skipped)} job rules skipped (facts unknown)" if report.skipped else "")]
    return "\n".join(lines) + "\n"


def render_markdown(report: JobReport, **_: object) -> str:
    out = [f"## torchdoctor check --distributed: {verdict(report)}", "", md_text(headline(report)), "",
           "| node | host | ranks | torch | GPUs | devices | threads | /dev/shm |",
           "|---|---|---|---|---|---|---|---|"]
    for row in node_rows(report):
        out.append("| " + " | ".join(md_cell(row[k]) for k in
                                      ("node", "host", "ranks", "torch", "gpus", "devices", "threads", "shm")) + " |")
    if report.job.missing:
        out += ["", "**Missing ranks**", ""]
        out += [f"- rank {m.rank}" + (f" on node {m.node}" if m.node is not None else "")
                + (f" ({md_text(m.host)})" if m.host else "") + f": {md_text(m.detail)}" for m in report.job.missing]
    out += ["", "| collective | result |", "|---|---|"]
    out += [f"| {md_cell(r['what'])} | {md_cell(r['state'])} |" for r in collective_rows(report)]
    if report.job.bandwidth:
        out += ["", "| size | time (us) | algbw (GB/s) | busbw (GB/s) |", "|---:|---:|---:|---:|"]
        out += [f"| {_size(b.size_bytes)} | {b.seconds * 1e6:.1f} | {b.algbw_gbps:.2f} | {b.busbw_gbps:.2f} |"
                for b in report.job.bandwidth]
    out += ["", "### Findings", ""] if report.findings else ["", "No findings."]
    for p in report.findings:
        f = p.finding
        out.append(f"- **{LABEL[f.severity]}** `{f.id}` ({md_text(p.where)}): {md_text(f.message)}")
    out += ["", f"<sub>{counts(report)} · {report.rules_evaluated} rules evaluated</sub>"]
    return "\n".join(out) + "\n"


def render_json(report: JobReport, **_: object) -> str:
    # no verdict key: this JSON is a JobReport, read back as one (JobReport.model_validate_json)
    return report.model_dump_json(indent=2) + "\n"


def render(report: JobReport, fmt: str, **options: Any) -> str:
    return {"terminal": render_terminal, "markdown": render_markdown, "json": render_json}[fmt](report, **options)
