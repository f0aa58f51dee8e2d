"""Report -> rich terminal text: problems first, then hardware, torch build, what torch can use.

Pure: renders into a string with a private Console; colour and width are parameters so the
CLI follows the real terminal (NO_COLOR, not a TTY) and tests pin them.
"""

from __future__ import annotations

import io
from typing import Any, Optional

from rich.console import Console, Group
from rich.markup import escape
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from torchdoctor.facts import Unavailable, is_xpu_build
from torchdoctor.render.summary import recognised_messages, tally, verdict
from torchdoctor.render.text import CODE, first_sentence, reflow, show_value
from torchdoctor.report import Report

STYLE = {"error": "bold red", "warning": "yellow", "info": "cyan"}
ICON = {"error": "✖", "warning": "▲", "info": "•"}


def gib(n: Any) -> str:
    if isinstance(n, Unavailable) or n is None:
        return show_value(n)
    if n < 2**30:  # 64 MiB /dev/shm is not "0.1 GiB" (the finding says 64 MiB)
        return f"{n / 2**20:.0f} MiB"
    return f"{n / 2**30:.1f} GiB"


NO_DRIVER = "NVML library not found"
"""Start of the NVML reason that means: no NVIDIA driver on this machine."""


class Unknowns:
    """Values the facts table could not fill: shown as ``?`` and explained once, grouped by
    reason, in the table's last row (instead of "unknown (not recorded)" in every cell)."""

    def __init__(self) -> None:
        self.by_reason: dict[str, list[str]] = {}

    def note(self, label: str, value: Unavailable) -> None:
        reason = value.unavailable
        prefix = f"{label.lower()} unknown: "
        if reason.lower().startswith(prefix):  # "CPU model unknown: cannot read ..." under "CPU model"
            reason = reason[len(prefix):]
        labels = self.by_reason.setdefault(reason, [])
        if label not in labels:
            labels.append(label)

    def v(self, value: Any, label: str) -> str:
        if isinstance(value, Unavailable):
            self.note(label, value)
            return "?"
        return show_value(value)

    def known(self, value: Any, label: str) -> bool:
        """True for a usable value; an Unavailable one is noted (and the caller leaves it out)."""
        if isinstance(value, Unavailable):
            self.note(label, value)
            return False
        return value is not None

    def lines(self) -> list[str]:
        return [f"{', '.join(labels)}: {reason}" for reason, labels in self.by_reason.items()]


def _mib(n: Any) -> str:
    return f"{n / 1024:.0f} GiB" if isinstance(n, int) and n >= 1024 else f"{n} MiB"


def _gpu_rows(gpu: Any, u: Unknowns) -> list[tuple[str, str]]:
    """One row per distinct GPU model: identical devices (8x H100) share one row."""
    groups: list[tuple[str, list[int]]] = []
    for d in gpu.devices:
        vendor = d.vendor if isinstance(d.vendor, str) else "nvidia"
        parts = [u.v(d.name, "GPU name")]
        if vendor != "nvidia":  # no compute capability: a CUDA notion
            if isinstance(d.gfx_target, str):
                parts.append(d.gfx_target)
        elif isinstance(d.compute_capability, float):
            arch = f" {d.architecture}" if isinstance(d.architecture, str) else ""
            parts.append(f"sm {show_value(d.compute_capability)}{arch}")
        else:
            u.note("compute capability", d.compute_capability) if isinstance(
                d.compute_capability, Unavailable) else None
        if u.known(d.memory_total_mib, "GPU memory"):
            parts.append(_mib(d.memory_total_mib))
        text = " · ".join(parts)
        if groups and groups[-1][0] == text:
            groups[-1][1].append(d.index)
        else:
            groups.append((text, [d.index]))
    rows = []
    for text, idx in groups:
        if len(idx) == 1:
            rows.append((f"GPU {idx[0]}", text))
        else:
            # pairwise, never as a range: an index comes from the facts (2**40 in a facts file)
            contiguous = all(b == a + 1 for a, b in zip(idx, idx[1:]))
            label = f"GPU {idx[0]}-{idx[-1]}" if contiguous else "GPU " + ",".join(map(str, idx))
            rows.append((label, f"{len(idx)}× {text}"))
    return rows


def facts_table(report: Report, explain: bool = False) -> Table:
    f = report.facts
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    u = Unknowns()

    def row(label: str, value: str) -> None:
        t.add_row(label, escape(value))

    sysf, cpu, mem, gpu, torch = f.system, f.cpu, f.memory, f.gpu, f.torch
    if not isinstance(sysf, Unavailable):
        parts = []
        if u.known(sysf.os_name, "OS"):
            parts.append(str(sysf.os_name))
        py = f"Python {sysf.python_version}" if u.known(sysf.python_version, "Python version") else ""
        if u.known(sysf.machine, "architecture"):
            py = f"{py} ({sysf.machine})" if py else str(sysf.machine)
        if py:
            parts.append(py)
        if not isinstance(sysf.container, Unavailable) and sysf.container:
            parts.append(f"container: {sysf.container}")
        if not isinstance(sysf.wsl, Unavailable) and sysf.wsl:
            parts.append(f"WSL{sysf.wsl}")
        if parts:
            row("System", " · ".join(parts))
    else:
        row("System", show_value(sysf))
    if isinstance(cpu, Unavailable) and f.origin == "synthetic":  # --gpu: say what a plan lacks
        row("CPU", show_value(cpu))
    if not isinstance(cpu, Unavailable):
        if isinstance(cpu.flags, Unavailable):
            u.note("CPU ISA", cpu.flags)
            isa_text = ""
        else:
            isa = [k for k in ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "neon", "sve") if cpu.flags.get(k)]
            isa_text = " ".join(isa) or ("no AVX2" if cpu.flags.get("avx2") is False else "no listed ISA extension")
        cores = ""
        if isinstance(cpu.physical_cores, int) or isinstance(cpu.logical_cores, int):
            cores = f"{u.v(cpu.physical_cores, 'cores')} cores / {u.v(cpu.logical_cores, 'threads')} threads"
        else:
            u.known(cpu.physical_cores, "cores")
        quota = "" if isinstance(cpu.quota_cpus, Unavailable) or cpu.quota_cpus is None else f"quota {cpu.quota_cpus:g} CPUs"
        model = u.v(cpu.model, "CPU model")
        parts = [p for p in (cores, quota, isa_text) if p]
        if parts or model != "?":
            row("CPU", " · ".join([model, *parts]))
    if not isinstance(mem, Unavailable):
        parts = []
        if u.known(mem.total_bytes, "RAM") or mem.total_bytes is None:
            parts.append(f"{gib(mem.total_bytes)} RAM")
        if not isinstance(mem.shm_total_bytes, Unavailable):
            parts.append(f"/dev/shm {gib(mem.shm_total_bytes)}")  # None: no /dev/shm at all
        else:
            u.note("/dev/shm", mem.shm_total_bytes)
        if parts:
            row("Memory", " · ".join(parts))
    if isinstance(gpu, Unavailable):
        cuda_seen = not isinstance(torch, Unavailable) and torch.cuda_available is True
        if gpu.unavailable.startswith(NO_DRIVER) and not cuda_seen:
            row("GPU", "none found (no NVIDIA driver installed)")
        else:
            row("GPU", show_value(gpu))
    elif gpu.source == "pci":  # no NVIDIA driver: what the PCI bus says
        if gpu.count:
            buses = ", ".join(str(d.pci_bus_id) for d in gpu.devices)
            row("GPU", f"{gpu.count} NVIDIA GPU(s) without a driver (PCI {buses})")
        else:
            row("GPU", "none found (no NVIDIA driver installed, no NVIDIA device on the PCI bus)")
    elif isinstance(gpu.devices, list) and gpu.devices:
        for label, text in _gpu_rows(gpu, u):
            row(label, text)
        vendors = {d.vendor for d in gpu.devices if isinstance(d.vendor, str)} or {"nvidia"}
        drivers = []
        if "nvidia" in vendors:
            driver = u.v(gpu.driver_version, "driver")
            if u.known(gpu.cuda_driver_version, "driver's CUDA version"):
                driver += f" (supports CUDA <= {gpu.cuda_driver_version})"
            if driver != "?":  # an unknown driver is named in the "?" row
                drivers.append(driver)
        if "intel" in vendors and isinstance(gpu.intel_driver_version, str):
            drivers.append(f"Intel {gpu.intel_driver_version}")
        if drivers:
            row("Driver", " · ".join(drivers))
    else:
        row("GPU", "none" if gpu.count == 0 else show_value(gpu.devices))  # the row's only value: reason inline
        if isinstance(gpu.cuda_driver_version, str):  # e.g. torch's "driver too old" warning
            row("Driver", f"supports CUDA <= {gpu.cuda_driver_version}")
    if isinstance(torch, Unavailable):
        row("torch", show_value(torch))
    elif torch.import_status != "ok" and not isinstance(torch.import_status, Unavailable):
        row("torch", f"{show_value(torch.import_status)}: {show_value(torch.import_error)}")
    else:
        build = "? build"
        rocm = isinstance(torch.hip_build, str)
        if isinstance(torch.cuda_build, str):
            build = f"CUDA {torch.cuda_build} build"
        elif rocm:
            build = f"ROCm (HIP {'.'.join(torch.hip_build.split('.')[:2])}) build"
        elif is_xpu_build(torch):
            build = "XPU build"
        elif torch.cuda_build is None:
            build = "CPU build"
        else:
            u.note("torch build", torch.cuda_build)
        parts = [u.v(torch.version, "torch version"), build]
        if isinstance(torch.cudnn_version, Unavailable):
            if torch.cuda_build is not None:  # a CPU build has no cuDNN to ask about
                parts.append(f"cuDNN {u.v(torch.cudnn_version, 'cuDNN')}")
        elif torch.cudnn_version is not None:
            parts.append(f"cuDNN {torch.cudnn_version}")
        row("torch", " · ".join(parts))
        uses = []
        if torch.cuda_available is True:
            n = torch.device_count
            api = "ROCm GPU (HIP)" if rocm else "CUDA"  # torch.cuda is HIP on a ROCm build
            uses.append(f"{api} ({n} device{'s' if n != 1 else ''})" if isinstance(n, int) else api)
        elif torch.cuda_available is False and isinstance(torch.cuda_build, str):
            uses.append("no CUDA (torch.cuda.is_available() is False)")
        else:
            u.known(torch.cuda_available, "CUDA available")
        if torch.mps_available is True:
            uses.append("MPS")
        if torch.xpu_available is True:
            uses.append("XPU")
        cap = torch.cpu_capability if u.known(torch.cpu_capability, "CPU capability") else None
        threads = torch.num_threads if u.known(torch.num_threads, "threads") else None
        if cap is not None:
            plural = "thread" if threads == 1 else "threads"
            uses.append(f"CPU {cap}" + (f", {threads} {plural}" if threads is not None else ""))
        elif threads is not None:
            uses.append(f"{threads} CPU thread" + ("" if threads == 1 else "s"))
        if uses:
            row("torch uses", " · ".join(uses))
        if isinstance(torch.arch_list, list) and torch.arch_list:
            row("compiled for", " ".join(torch.arch_list))
    lines = u.lines()
    if lines:
        t.add_row(Text("?", style="dim"), Text("\n".join(lines), style="dim"))
    return t


def findings_block(report: Report, explain: bool = False) -> Optional[Table]:
    """One finding per row, wrapped under its text (not under the icon); the fix follows it:
    its first sentence, or all of it with --explain."""
    findings = report.displayed_findings()
    if not findings:
        return None
    t = Table.grid(padding=(0, 1))
    t.add_column(no_wrap=True)
    t.add_column()
    more = False
    for f in findings:
        t.add_row(Text(ICON[f.severity], style=STYLE[f.severity]),
                  Text.assemble((f"{f.severity.upper()} ", STYLE[f.severity]),
                                (f"[{f.id}] ", "dim"), f.message))
        if f.fix and f.severity != "info":
            if explain:
                for i, block in enumerate(reflow(f.fix)):
                    code = block.startswith(CODE)
                    if code:
                        block = block[len(CODE):]
                    t.add_row("", Text.assemble(("fix: " if i == 0 else "     ", "bold"),
                                                (block, "bold" if code else "")))
            else:
                head, rest = first_sentence(f.fix)
                more = more or rest
                t.add_row("", Text.assemble(("fix: ", "bold"), head + (" …" if rest else "")))
    if more:
        t.add_row("", Text("… the whole fix: --explain, or torchdoctor rules explain ID", style="dim"))
    return t


def settings_table(report: Report, explain: bool = False, width: int = 96) -> Any:
    """The plan, one block per setting: the code that applies it (as the snippet writes it, so
    a line copied from here does what it says; never ``key = value``, which pasted would replace
    a function such as ``torch.use_deterministic_algorithms``), then why, then the deciding rule
    (never cut: people copy it into `rules explain`)."""
    items: list[Any] = [Text("Recommended settings", style="bold")]

    def indented(text: Text) -> Any:
        return Padding(text, (0, 0, 0, 2))

    def rule_line(rule: str) -> Any:
        if len(rule) + len("  rule: ") <= width:
            return indented(Text(f"rule: {rule}", style="dim"))
        return Text(rule, style="dim")

    for s in report.settings:
        code = s.code or f"# {s.key} = {s.value!r}"
        if s.guard == "cuda":
            code = "if torch.cuda.is_available():\n" + "\n".join(f"    {line}" for line in code.splitlines())
        for line in code.splitlines():
            items.append(Text(line, style="bold", overflow="fold"))  # folded, never cut
        items.append(indented(Text(s.reason)))
        items.append(rule_line(s.rule))
        if explain:
            for o in s.overrides:
                items.append(indented(Text.assemble(("overridden: ", "dim"), (repr(o.value), "dim strike"),
                                                    (f" — {o.reason} (loses to {s.precedence})", "dim"))))
                items.append(rule_line(o.rule))
    return Group(*items)


def skipped_table(report: Report) -> Optional[Group]:
    """Rules skipped for unknown facts, grouped by the reason: 'reason: rule (fact), ...'."""
    groups: dict[str, list[str]] = {}
    for s in report.fact_skipped():
        groups.setdefault(s.reason, []).append(f"{s.id} ({s.needs})")
    if report.command != "check":  # check: counted in the summary, not listed
        for s in report.workload_skipped():
            groups.setdefault(s.reason, []).append(f"{s.id} ({s.needs})")
    if not groups:
        return None
    t = Table.grid(padding=(0, 1))
    t.add_column(no_wrap=True)
    t.add_column()
    for reason, items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        t.add_row(Text("•"), Text.assemble((reason, "bold"), f" ({len(items)}): ", (", ".join(items), "dim")))
    title = Text(f"Skipped rules, by why their facts are unknown ({sum(map(len, groups.values()))})",
                 style="bold")
    return Group(title, t)


def render(report: Report, color: bool = False, width: int = 100, explain: bool = False,
           show_facts: bool = True) -> str:
    buf = io.StringIO()
    console = Console(file=buf, width=width, color_system="standard" if color else None,
                      force_terminal=color, no_color=not color, highlight=False, emoji=False)
    counts = report.counts()
    title = f"torchdoctor {report.command}: {verdict(report)}"
    if report.planned_for:
        title += f" · {report.planned_for}"
    block = findings_block(report, explain=explain)
    parts: list[Any] = []
    if block is not None:
        parts += [block, Text("")]
    if report.settings:
        parts += [settings_table(report, explain=explain, width=width - 4)]  # inside the panel
        if report.dropped:
            parts.append(Text("Not emitted: " + "; ".join(f"{d.key} ({d.reason})" for d in report.dropped),
                              style="dim"))
    if show_facts:
        parts += [facts_table(report), Text("")]
    recognised = recognised_messages(report.facts)
    if recognised:
        parts += [Text("Recognised in the paste", style="bold"),
                  *[Text(f"  • {line}", overflow="fold") for line in recognised], Text("")]
    if explain:
        st = skipped_table(report)
        if st is not None:
            parts += [st, Text("")]
    parts.append(Text(tally(report, explain), style="dim"))
    console.print(Panel(Group(*parts), title=title, title_align="left",
                        border_style="red" if counts["error"] else "green" if verdict(report) == "healthy" else "yellow"))
    return buf.getvalue()
