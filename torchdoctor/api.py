"""The Python API, backed by the same pipeline as the CLI.

    import torchdoctor
    report = torchdoctor.check(report=pasted_text)     # triage a pasted collect_env / paste
    report = torchdoctor.check()                       # this environment, as `torchdoctor check`
    plan = torchdoctor.recommend(task="detection", precision="bf16")
    print(plan.snippet)
    changed = torchdoctor.apply(task="detection")     # applies the plan in this process
    torchdoctor.audit()                                # current settings + settings that do nothing
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, Optional, Sequence

from torchdoctor.facts import Facts
from torchdoctor.report import Plan, Report
from torchdoctor.workload import Workload, build_workload

if TYPE_CHECKING:
    from torchdoctor.inprocess import ApplyResult, AuditResult

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
    from torchdoctor.probes import python_executable

    return collect(ProbeContext(python=python or python_executable(), timeout=float(timeout)))


def check(facts: Any = None, report: Any = None, python: Optional[str] = None, *,
          rules_dirs: Sequence[str] = (), ignore: Iterable[str] = (), redact: bool = True,
          timeout: float = 60.0) -> Report:
    """What ``torchdoctor check`` finds, as the Report it renders (``.findings``, ``.skipped``,
    ``.facts``, ``.exit_code(fail_on)`` via :func:`torchdoctor.report.exit_code`).

    The facts come from exactly one source: ``facts`` (a :class:`Facts`, or its JSON as a
    dict/str/bytes), ``report`` (pasted text: collect_env, vLLM/sglang collectors, pip/conda
    lists, nvidia-smi, torch's own warnings; a bot can pass an issue body as it is), or, with
    neither, this machine (``python`` names another environment's interpreter). Bad input
    raises :class:`torchdoctor.errors.UserError` with one line, as the CLI prints it.
    Redacted unless ``redact=False``.
    """
    from torchdoctor.engine import evaluate
    from torchdoctor.errors import UserError
    from torchdoctor.rules import load_rules

    if facts is not None and report is not None:
        raise UserError("check(): pass facts or report, not both")
    if (facts is not None or report is not None) and python is not None:
        raise UserError("check(): python= probes a live environment; it has no effect with facts/report")
    if facts is not None or report is not None:
        loaded = _facts_from(facts if facts is not None else report,
                             "facts" if facts is not None else "report")
    else:
        loaded = probe(python=python, timeout=timeout)
    result = evaluate(load_rules(list(rules_dirs)), loaded, None, command="check", ignore=ignore)
    if redact:
        from torchdoctor.redact import redact_report

        result = redact_report(result)
    return result


def _facts_from(value: Any, what: str) -> Facts:
    """Facts from an API argument: a Facts model (sanitised like any import), or text/bytes/a
    dict read by the same importers as ``--facts``/``--from-report`` (bounded, one-line errors)."""
    import json

    from torchdoctor.errors import UserError
    from torchdoctor.importers import ReportError, load_report

    if isinstance(value, Facts):
        from torchdoctor.sanitize import sanitize_facts

        try:
            return sanitize_facts(value)
        except ValueError as exc:
            raise UserError(f"check({what}=...): {exc}") from None
    if isinstance(value, dict):
        try:
            value = json.dumps(value)
        except (TypeError, ValueError) as exc:
            raise UserError(f"check({what}=...): not JSON-serialisable: {exc}") from None
    if not isinstance(value, (str, bytes, bytearray, memoryview)):
        raise UserError(f"check({what}=...): expected text, bytes, a dict or Facts, "
                        f"got {type(value).__name__}")
    try:
        return load_report(value, f"<{what}>")
    except ReportError as exc:
        raise UserError(str(exc)) from None


def plan_report(rules: Sequence[Any], facts: Facts, workload: Optional[Workload], *,
                torch_version: Optional[str] = None, ignore: Iterable[str] = (),
                measured: Optional[str] = None) -> Report:
    """Evaluate rules for a workload and attach the generated snippet; ``measured`` (a
    `torchdoctor bench` JSON file) lets measured speed decide the speed settings."""
    from torchdoctor.engine import evaluate
    from torchdoctor.render.snippet import render as render_snippet

    if torch_version is not None:
        from torchdoctor.synthetic import check_torch_version

        check_torch_version(torch_version)
    report = evaluate(rules, facts, workload, command="recommend", torch_version=torch_version,
                      ignore=ignore)
    if measured is not None:
        from torchdoctor.bench.measured import apply_measured

        report = apply_measured(report, measured)
    return report.model_copy(update={"snippet": render_snippet(report)})


def recommend(task: Optional[str] = None, *, facts: Optional[Facts] = None,
              rules_dirs: Sequence[str] = (), torch_version: Optional[str] = None,
              **workload: Any) -> Plan:
    """Plan settings for a workload on this machine (or on ``facts``). Returns the Report
    (``.settings``: key, value, rule, reason, overrides; ``.findings``; ``.snippet``)."""
    from torchdoctor.rules import load_rules

    wl = build_workload(task=task, overrides=workload, source="recommend()")
    facts = _facts_from(facts, "facts") if facts is not None else probe()
    return plan_report(load_rules(list(rules_dirs)), facts, wl, torch_version=torch_version)


def apply(task: Optional[str] = None, **workload: Any) -> "ApplyResult":
    """Apply the plan for a workload to the running process; returns what changed
    (:class:`torchdoctor.inprocess.ApplyResult`)."""
    from torchdoctor.inprocess import apply_plan

    return apply_plan(task=task, **workload)


def audit(**kwargs: Any) -> "AuditResult":
    """Current torch settings of this process, attributes assigned under torch.backends that
    PyTorch does not have (silently ignored settings), and the findings of the rules about
    process state (:class:`torchdoctor.inprocess.AuditResult`)."""
    from torchdoctor.inprocess import audit_process

    return audit_process(**kwargs)
