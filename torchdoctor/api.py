"""The Python API, backed by the same pipeline as the CLI.

    import torchdoctor
    plan = torchdoctor.recommend(task="detection", precision="bf16")
    print(plan.snippet)
    changed = torchdoctor.apply(task="detection")     # applies the plan in this process
    torchdoctor.audit()                                # current settings + settings that do nothing
"""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from torchdoctor.facts import Facts
from torchdoctor.report import Plan, Report
from torchdoctor.workload import Workload, build_workload

MAX_TIMEOUT = 86400.0
"""Longest deadline for the torch child (a day)."""


def probe(python: Optional[str] = None, timeout: float = 60.0) -> Facts:
    """Probe this machine (torch read in a child of ``python``, default this interpreter)."""
    import math
    import sys

    from torchdoctor.errors import UserError
    from torchdoctor.probes import ProbeContext, collect
    from torchdoctor.safeio import clip

    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not (
            math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise UserError(f"timeout={clip(timeout)}: give a number of seconds above 0 and at most {MAX_TIMEOUT}")
    return collect(ProbeContext(python=python or sys.executable, timeout=float(timeout)))


def plan_report(rules: Sequence[Any], facts: Facts, workload: Optional[Workload], *,
                torch_version: Optional[str] = None, ignore: Iterable[str] = ()) -> Report:
    """Evaluate rules for a workload and attach the generated snippet."""
    from torchdoctor.engine import evaluate
    from torchdoctor.render.snippet import render as render_snippet

    if torch_version is not None:
        from torchdoctor.synthetic import check_torch_version

        check_torch_version(torch_version)
    report = evaluate(rules, facts, workload, command="recommend", torch_version=torch_version,
                      ignore=ignore)
    return report.model_copy(update={"snippet": render_snippet(report)})


def recommend(task: Optional[str] = None, *, facts: Optional[Facts] = None,
              rules_dirs: Sequence[str] = (), torch_version: Optional[str] = None,
              **workload: Any) -> Plan:
    """Plan settings for a workload on this machine (or on ``facts``). Returns the Report
    (``.settings``: key, value, rule, reason, overrides; ``.findings``; ``.snippet``)."""
    from torchdoctor.rules import load_rules

    wl = build_workload(task=task, overrides=workload, source="recommend()")
    facts = facts if facts is not None else probe()
    return plan_report(load_rules(list(rules_dirs)), facts, wl, torch_version=torch_version)


def apply(task: Optional[str] = None, **workload: Any) -> dict[str, Any]:
    """Apply the plan for a workload to the running process; returns what changed."""
    from torchdoctor.runtime import apply_plan

    return apply_plan(task=task, **workload)


def audit(**kwargs: Any) -> dict[str, Any]:
    """Current torch settings of this process and attributes assigned under torch.backends that
    PyTorch does not have (silently ignored settings)."""
    from torchdoctor.runtime import audit_process

    return audit_process(**kwargs)
