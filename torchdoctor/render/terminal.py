"""Report -> rich terminal text: problems first, then hardware, torch build, what torch can use.

Pure: renders into a string with a private Console; colour and width are parameters so the
CLI follows the real terminal (NO_COLOR, not a TTY) and tests pin them.
"""

from __future__ import annotations

import io
from typing import Any, Optional

from rich.console import Console, Group
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from torchdoctor.facts import Unavailable
from torchdoctor.render import show_value
from torchdoctor.report import Report

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
ICON = {"error": "✖", "warning": "▲", "info": "•"}


def fmt(value: Any, unit: str = "") -> str:
    if isinstance(value, (Unavailable, bool, list, dict)) or value is None:
        return show_value(value)
    return f"{show_value(value)}{unit}"


def gib(n: Any) -> str:
    if isinstance(n, Unavailable) or n is None:
        return fmt(n)
    return f"{n / 2**30:.1f} GiB"


def _ns(facts: Any, name: str) -> Any:
    return getattr(facts, name)


def facts_table(report: Report, explain: bool = False) -> Table:
    f = report.facts
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column()

    def row(label: str, value: str) -> None:
        t.add_row(label, escape(value))

    sysf, cpu, mem, gpu, torch = f.system, f.cpu, f.memory, f.gpu, f.torch
    if not isinstance(sysf, Unavailable):
        extra = []
        if not isinstance(sysf.container, Unavailable) and sysf.container:
            extra.append(f"container: {sysf.container}")
        if not isinstance(sysf.wsl, Unavailable) and sysf.wsl:
            extra.append(f"WSL{sysf.wsl}")
        row("System", f"{fmt(sysf.os_name)} · Python {fmt(sysf.python_version)} ({fmt(sysf.machine)})"
            + (f" · {', '.join(extra)}" if extra else ""))
    else:
        row("System", fmt(sysf))
    if not isinstance(cpu, Unavailable):
        if isinstance(cpu.flags, Unavailable):
            isa_text = "ISA unknown"
        else:
            isa = [k for k in ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "neon", "sve") if cpu.flags.get(k)]
            isa_text = " ".join(isa) or ("no AVX2" if cpu.flags.get("avx2") is False else "no listed ISA extension")
        quota = "" if isinstance(cpu.quota_cpus, Unavailable) or cpu.quota_cpus is None else f" · quota {cpu.quota_cpus:g} CPUs"
        row("CPU", f"{fmt(cpu.model)} · {fmt(cpu.physical_cores)} cores / {fmt(cpu.logical_cores)} threads"
            f"{quota} · {isa_text}")
    if not isinstance(mem, Unavailable):
        row("Memory", f"{gib(mem.total_bytes)} RAM · /dev/shm {gib(mem.shm_total_bytes)}")
    if isinstance(gpu, Unavailable):
        row("GPU", fmt(gpu))
    elif isinstance(gpu.devices, list) and gpu.devices:
        for d in gpu.devices:
            row(f"GPU {d.index}", f"{fmt(d.name)} · sm {fmt(d.compute_capability)} {fmt(d.architecture)}"
                f" · {fmt(d.memory_total_mib, ' MiB')}")
        row("Driver", f"{fmt(gpu.driver_version)} (CUDA {fmt(gpu.cuda_driver_version)})")
    else:
        row("GPU", "none" if gpu.count == 0 else fmt(gpu.devices))
    if isinstance(torch, Unavailable):
        row("torch", fmt(torch))
    elif torch.import_status != "ok" and not isinstance(torch.import_status, Unavailable):
        row("torch", f"{fmt(torch.import_status)}: {fmt(torch.import_error)}")
    else:
        build = "unknown"
        if isinstance(torch.cuda_build, str):
            build = f"CUDA {torch.cuda_build}"
        elif isinstance(torch.hip_build, str):
            build = f"ROCm/HIP {torch.hip_build}"
        elif torch.cuda_build is None:
            build = "CPU"
        row("torch", f"{fmt(torch.version)} · {build} build · cuDNN {fmt(torch.cudnn_version)}")
        uses = []
        if torch.cuda_available is True:
            uses.append(f"CUDA ({fmt(torch.device_count)} device(s))")
        if torch.mps_available is True:
            uses.append("MPS")
        if torch.xpu_available is True:
            uses.append("XPU")
        uses.append(f"CPU {fmt(torch.cpu_capability)}, {fmt(torch.num_threads)} threads")
        row("torch uses", " · ".join(uses))
        if isinstance(torch.arch_list, list) and torch.arch_list:
            row("compiled for", " ".join(torch.arch_list))
    return t


def findings_block(report: Report) -> Optional[Group]:
    items = []
    for f in report.displayed_findings():
        head = Text.assemble((f"{ICON[f.severity]} {f.severity.upper()} ", STYLE[f.severity]),
                             (f"[{f.id}] ", "dim"), f.message)
        items.append(head)
        if f.fix and f.severity != "info":
            first = f.fix.strip().splitlines()[0]
            items.append(Text(f"    fix: {first}", style="dim"))
    return Group(*items) if items else None


def settings_table(report: Report, explain: bool = False) -> Table:
    t = Table(title="Recommended settings", title_justify="left", expand=True, show_lines=True)
    t.add_column("setting (rule)", ratio=3, overflow="fold")
    t.add_column("value", ratio=2, min_width=14, overflow="fold")
    t.add_column("why", ratio=4, min_width=24)
    for s in report.settings:
        setting = Text.assemble((s.key, "bold"), "\n", (s.rule, "dim"))
        t.add_row(setting, escape(repr(s.value)), escape(s.reason))
        if explain:
            for o in s.overrides:
                t.add_row(Text.assemble(("  overridden: ", "dim"), (o.rule, "dim")),
                          Text(repr(o.value), style="dim strike"),
                          Text(f"{o.reason} (loses to {s.precedence})", style="dim"))
    return t


def render(report: Report, color: bool = False, width: int = 100, explain: bool = False,
           show_facts: bool = True) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="standard" if color else None,
                      force_terminal=color, no_color=not color, highlight=False, emoji=False)
    counts = report.counts()
    verdict = ("broken" if counts["error"] else "needs attention" if counts["warning"] else "healthy")
    title = f"torchdoctor {report.command}: {verdict}"
    summary = (f"{counts['error']} error(s), {counts['warning']} warning(s), {counts['info']} note(s); "
               f"{report.rules_evaluated} rules evaluated, {len(report.skipped)} skipped")
    block = findings_block(report)
    parts: list[Any] = []
    if report.settings:
        parts.append(settings_table(report, explain=explain))
        if report.dropped:
            parts.append(Text("Not emitted: " + "; ".join(f"{d.key} ({d.reason})" for d in report.dropped),
                              style="dim"))
    if block is not None:
        parts.append(block)
    if show_facts:
        parts.append(facts_table(report))
    if explain and report.skipped:
        reasons: dict[str, list[str]] = {}
        for s in report.skipped:
            reasons.setdefault(f"{s.needs}: {s.reason}", []).append(s.id)
        st = Table(title="Skipped rules", title_justify="left")
        st.add_column("needs")
        st.add_column("rules", style="dim")
        for k, ids in sorted(reasons.items()):
            st.add_row(escape(k), escape(", ".join(ids)))
        parts.append(st)
    parts.append(Text(summary, style="dim"))
    console.print(Panel(Group(*parts), title=title, title_align="left",
                        border_style="red" if counts["error"] else "yellow" if counts["warning"] else "green"))
    return buf.getvalue()
