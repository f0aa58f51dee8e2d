"""The summary and verdict lines, one implementation for every view: the verdict (terminal
title, Markdown heading, ticket), the counts, the one-line environment summary (ticket and
Markdown), the status line ``cli`` prints on stderr, and the tally under a report (terminal
and Markdown). Pure functions of a Report."""

from __future__ import annotations

import math
from typing import Any, Optional

from torchdoctor.facts import Facts, is_xpu_build
from torchdoctor.render.text import md_text, namespace
from torchdoctor.report import Report


def verdict(report: Report) -> str:
    """``broken`` (an error), ``needs attention`` (a warning), ``healthy``; never ``healthy``
    when there was nothing to diagnose: torch absent, not importable or not known at all (see
    :func:`undiagnosed`) gives ``not diagnosed (torch not installed)`` and the like."""
    c = report.counts()
    if c["error"]:
        return "broken"
    if c["warning"]:
        return "needs attention"
    missing = undiagnosed(report.facts)
    return f"not diagnosed ({missing})" if missing else "healthy"


def undiagnosed(facts: Facts) -> Optional[str]:
    """Why these facts cannot be called healthy: torch, the thing diagnosed, is not installed,
    does not import, or is unknown (no torch fact at all: a paste that does not state it, an
    unreadable probe). None when torch was read (its import succeeded or its version is known)."""
    t = namespace(facts, "torch")
    if t is None:
        return "torch unknown"
    status = t.import_status
    if isinstance(status, str):
        return None if status == "ok" else torch_summary(facts)
    return None if isinstance(t.version, str) else "torch unknown"


def shown_counts(report: Report) -> tuple[dict[str, int], int]:
    """The counts of the findings a view lists (``Report.displayed_findings``), and how many
    notes are not listed because their advice is a row of the settings plan instead."""
    shown = report.displayed_findings()
    c = {"error": 0, "warning": 0, "info": 0}
    for f in shown:
        c[f.severity] += 1
    return c, len(report.findings) - len(shown)


def as_settings(n: int) -> str:
    return f" (+{n} shown as recommended settings)" if n else ""


def counts_line(report: Report) -> str:
    """``1 error(s), 2 warning(s), 3 note(s)``: every finding (the ticket lists them all; the
    terminal and Markdown tally, beside a settings table, is :func:`tally`)."""
    c = report.counts()
    return f"{c['error']} error(s), {c['warning']} warning(s), {c['info']} note(s)"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


# ----------------------------------------------------------------------------------------
# the environment in one line
# ----------------------------------------------------------------------------------------


def sm_name(cc: Any) -> Optional[str]:
    """The ``sm_XY`` name of a compute capability: 7.5 -> sm_75, 9.0 -> sm_90, 10.0 -> sm_100,
    12.1 -> sm_121 (major digits, then the one minor digit); None when it is not a number.
    (``tables._cc`` reads these names back into (major, minor).)"""
    if isinstance(cc, bool) or not isinstance(cc, (int, float)):
        return None
    if not math.isfinite(cc) or not 0 <= cc < 1000:
        return None
    major, _, minor = f"{float(cc):.1f}".partition(".")
    return f"sm_{int(major)}{minor}" if int(major) >= 0 else None


def torch_summary(facts: Facts) -> str:
    t = namespace(facts, "torch")
    if t is None:
        return "torch unknown"
    status = t.import_status
    if isinstance(status, str) and status != "ok":
        words = {"not-installed": "not installed", "import-error": "does not import",
                 "crashed": "crashes on import", "timeout": "import timed out",
                 "error": "could not be inspected",
                 "unknown-from-report": "could not be imported when the report was made"}
        version = f" {t.version}" if isinstance(t.version, str) else ""
        return f"torch{version} {words.get(status, status)}"
    return f"torch {t.version}" if isinstance(t.version, str) else "torch version unknown"


def build_summary(facts: Facts) -> str:
    t = namespace(facts, "torch")
    if t is None:
        return "build unknown"
    if isinstance(t.import_status, str) and t.import_status != "ok":
        return ""  # the torch part already says it does not import
    if isinstance(t.cuda_build, str):
        cudnn = f", cuDNN {t.cudnn_version}" if isinstance(t.cudnn_version, str) else ""
        return f"CUDA {t.cuda_build}{cudnn}"
    if isinstance(t.hip_build, str):
        return f"ROCm {t.hip_build}"
    if is_xpu_build(t):
        return "XPU build"
    if t.cuda_build is None and t.hip_build is None:
        return "CPU-only build"
    return "CUDA unknown"


def gpu_summary(facts: Facts) -> str:
    g = namespace(facts, "gpu")
    t = namespace(facts, "torch")
    if g is not None and isinstance(g.devices, list) and g.devices:
        names = [d.name for d in g.devices if isinstance(d.name, str)]
        first = g.devices[0]
        label = names[0] if names else "GPU"
        if len(g.devices) > 1:
            label = f"{len(g.devices)}× {label}" if len(set(names)) <= 1 else ", ".join(dict.fromkeys(names))
        extra = []
        sm = sm_name(first.compute_capability)
        if sm is not None:
            extra.append(sm)
        if isinstance(first.architecture, str):
            extra.append(first.architecture)
        text = label + (f" ({', '.join(extra)})" if extra else "")
        if isinstance(g.driver_version, str):
            text += f", driver {g.driver_version}"
        return text
    if t is not None and isinstance(t.devices, list) and t.devices:
        names = [d.name for d in t.devices if isinstance(d.name, str)]
        return ", ".join(dict.fromkeys(names)) or "GPU"
    if t is not None and t.mps_available is True:
        return "Apple GPU (MPS)"
    if g is not None and g.count == 0:
        return "no NVIDIA GPU"
    if t is not None and t.cuda_available is False:
        return "no CUDA GPU visible to torch"
    return "GPU unknown"


def environment_line(facts: Facts) -> str:
    """torch · build · GPU · Python · OS, as Markdown text (escaped, no @mention)."""
    s = namespace(facts, "system")
    parts = [torch_summary(facts), build_summary(facts), gpu_summary(facts)]
    if s is not None and isinstance(s.python_version, str):
        parts.append(f"Python {s.python_version}")
    if s is not None and isinstance(s.os_name, str):
        parts.append(s.os_name)
    elif s is not None and isinstance(s.os, str):
        parts.append(s.os)
    return " · ".join(md_text(p) for p in parts if p)


def summary_line(report: Report) -> str:
    """The ticket's first line: the environment, then ``— **verdict** (counts)``."""
    return f"{environment_line(report.facts)} — **{verdict(report)}** ({counts_line(report)})"


# ----------------------------------------------------------------------------------------
# the status line (stderr) and the tally (under a report)
# ----------------------------------------------------------------------------------------


def status_line(report: Report) -> str:
    """What ``cli`` says on stderr when the report went to a file or is not for a terminal:
    the counts, and the rules skipped for unknown facts with the most common reason."""
    text = counts_line(report)
    # in `check` the workload rules are not evaluated by design: not worth a "skipped"
    skipped = report.fact_skipped() if report.workload is None else report.skipped
    if skipped:
        from collections import Counter

        top, n = Counter(s.reason for s in skipped).most_common(1)[0]
        text += f"; {len(skipped)} rule(s) skipped for unknown facts ({n}: {top})"
    return text


def tally(report: Report, explain: bool = False) -> str:
    """Counts of the findings listed (notes whose advice is a settings row are counted apart:
    ``1 note (+2 shown as recommended settings)``), and which rules did not run: skipped for
    unknown facts, or (check) not evaluated because they judge a workload and none was declared."""
    counts, hidden = shown_counts(report)
    text = (f"{plural(counts['error'], 'error')}, {plural(counts['warning'], 'warning')}, "
            f"{plural(counts['info'], 'note')}{as_settings(hidden)} · {report.rules_evaluated} rules evaluated")
    skipped = len(report.fact_skipped())
    workload = len(report.workload_skipped())
    if report.command != "check":
        skipped, workload = skipped + workload, 0
    if skipped:
        text += f", {skipped} skipped (facts unknown{'' if explain else '; --explain lists them'})"
    if workload:
        text += f"\n{plural(workload, 'workload rule')} not evaluated (use recommend --task)"
    return text


def recognised_messages(facts: Any) -> list[str]:
    """One line per known message recognised in a pasted text, with the lines it stands on:
    "lines 3, 9: glibc-too-old (os-unsupported, error; needed 2.28)". Empty for probes."""
    paste = getattr(facts, "paste", None)
    out = []
    for m in getattr(paste, "messages", None) or []:
        where = f"line{'s' if len(m.lines) > 1 else ''} {', '.join(str(n) for n in m.lines)}"
        values = "; ".join(f"{k} {v}" for k, v in sorted(m.values.items()))
        out.append(f"{where}: {m.id} ({m.category}, {m.severity}{'; ' + values if values else ''})")
    return out
