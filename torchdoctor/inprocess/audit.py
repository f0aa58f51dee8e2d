"""audit(): the torch settings of the running process, judged by the same rules as ``check``.

Facts of the running process go in: the torch namespace is read here, as the user's code
left it (:func:`torchdoctor.probes.pytorch.facts_in_process`; CUDA is never initialised),
and the other namespaces are not read (a rule that needs them is reported as skipped).
The dead ``torch.backends`` attributes the user's code assigned are observed here too
(:mod:`torchdoctor.inprocess.suggest`) and become the fact ``torch.dead_attributes``.
The rules about process state - every rule that reads ``torch.settings`` or
``torch.dead_attributes`` (``tf32-mixed-legacy-and-new-api``,
``cudnn-benchmark-with-deterministic``, ``anomaly-detection-enabled``,
``backends-setting-ignored`` and ``backends-attribute-replaced``, one finding per attribute,
...) - are evaluated by the engine over those facts, so ``audit()`` and ``check`` say the same
thing about the same state, and every judgement's wording is in its rule file.

torch is imported only with ``import_torch=True``: an unimported torch has no state.
"""

from __future__ import annotations

import sys
from typing import Any, Optional, Sequence

from torchdoctor.facts import NAMESPACES, DeadAttribute, Facts, Unavailable
from torchdoctor.inprocess.results import (
    AuditResult,
    ProcessFinding,
    Tf32ApiState,
    first_line,
)

NOT_READ = "not read by audit(), which reads only this process's torch"
DEAD_UNREAD = "the torch.backends attributes could not be checked (see audit-incomplete)"
STATE_FACTS = ("torch.settings", "torch.dead_attributes")
"""A rule that reads one of these facts judges the process's state: audit() evaluates it."""


def audit_process(*, import_torch: bool = False, rules_dirs: Sequence[str] = ()) -> AuditResult:
    """Current torch settings of this process, the attributes under torch.backends that do
    nothing (or broke a real one), and the findings of the rules about process state."""
    torch = sys.modules.get("torch")
    if torch is None and import_torch:
        import torch
    if torch is None:
        return AuditResult(torch_imported=False, findings=[ProcessFinding(
            id="torch-not-imported", severity="info", category="probe",
            message="torch is not imported in this process: nothing was set yet")])
    from torchdoctor.inprocess.suggest import observe_dead

    problems: list[ProcessFinding] = []
    dead: Optional[list[DeadAttribute]]
    try:
        observed = observe_dead()
        dead = [fact for _, fact in observed]
    except Exception as exc:  # noqa: BLE001 - an audit never takes the user's process down
        observed, dead = [], None
        problems.append(_incomplete(f"checking torch.backends attributes failed: "
                                    f"{type(exc).__name__}: {first_line(exc)}"))
    facts, settings = process_facts(problems, dead)
    judged, skipped = _judge(facts, rules_dirs, problems)
    return AuditResult(
        torch_imported=True,
        settings=settings,
        ignored=[ignored for ignored, _ in observed],
        tf32_api=tf32_api_state(torch),
        findings=problems + judged,
        rules_skipped=skipped,
    )


def process_facts(problems: Optional[list[ProcessFinding]] = None,
                  dead: Optional[list[DeadAttribute]] = None) -> tuple[Facts, dict[str, Any]]:
    """Facts of this process (its torch, with ``dead`` as ``torch.dead_attributes``, unknown
    when None; the other namespaces unavailable) and its settings as JSON
    (``{"unavailable": reason}`` when they could not be read)."""
    from torchdoctor.probes.pytorch import facts_in_process

    unread = {ns: Unavailable(unavailable=NOT_READ) for ns in NAMESPACES if ns != "torch"}
    try:
        torch_facts: Any = facts_in_process()
    except Exception as exc:  # noqa: BLE001
        reason = f"reading torch settings failed: {type(exc).__name__}: {first_line(exc)}"
        if problems is not None:
            problems.append(_incomplete(reason))
        return Facts(torch=Unavailable(unavailable=reason), **unread), {"unavailable": reason}
    settings = torch_facts.model_dump(mode="json").get("settings")
    if not isinstance(settings, dict):
        settings = {"unavailable": "torch settings could not be read"}
    torch_facts = torch_facts.model_copy(update={"dead_attributes": dead if dead is not None else
                                                 Unavailable(unavailable=DEAD_UNREAD)})
    return Facts(torch=torch_facts, **unread), settings


def state_rules(rules: Sequence[Any]) -> list[Any]:
    """The rules about process state: those whose condition (or for_each list) reads
    ``torch.settings`` or ``torch.dead_attributes``."""
    from torchdoctor.rules import ITEM, fact_paths

    def reads_state(rule: Any) -> bool:
        paths = set(fact_paths(rule.when, {ITEM: f"{rule.for_each}[]"} if rule.for_each else None))
        if rule.for_each:
            paths.add(rule.for_each)
        return any(p == fact or p.startswith((fact + ".", fact + "["))
                   for p in paths for fact in STATE_FACTS)

    return [r for r in rules if reads_state(r)]


def _judge(facts: Facts, rules_dirs: Sequence[str],
           problems: list[ProcessFinding]) -> tuple[list[ProcessFinding], dict[str, str]]:
    from torchdoctor.engine import evaluate
    from torchdoctor.rules import load_rules

    try:
        report = evaluate(state_rules(load_rules(list(rules_dirs))), facts, None, command="audit")
    except Exception as exc:  # noqa: BLE001 - a broken rule set must not break the user's process
        problems.append(_incomplete(f"evaluating the rules failed: {type(exc).__name__}: "
                                    f"{first_line(exc)}"))
        return [], {}
    findings = [ProcessFinding(id=f.id, severity=f.severity, category=f.category,
                               message=f.message) for f in report.findings]
    return findings, {s.id: s.needs for s in report.skipped}


def _incomplete(message: str) -> ProcessFinding:
    return ProcessFinding(id="audit-incomplete", severity="warning", category="probe",
                          message=message)


_LEGACY_TF32_GETTERS = (
    ("torch.get_float32_matmul_precision()", lambda t: t.get_float32_matmul_precision()),
    ("torch.backends.cuda.matmul.allow_tf32", lambda t: t.backends.cuda.matmul.allow_tf32),
    ("torch.backends.cudnn.allow_tf32", lambda t: t.backends.cudnn.allow_tf32),
)


def tf32_api_state(torch: Any) -> Tf32ApiState:
    """Which legacy TF32 getters raise because the new fp32_precision API was mixed in (an
    observation: the judgement is the rule ``tf32-mixed-legacy-and-new-api``).

    PyTorch (2.9+) keeps one TF32 state behind two APIs and raises "mix of the legacy and new
    APIs" from the legacy getters once only the new one was used (flags catalog 1.3)."""
    raising: dict[str, str] = {}
    for name, getter in _LEGACY_TF32_GETTERS:
        try:
            getter(torch)
        except Exception as exc:  # noqa: BLE001
            msg = first_line(exc)
            if "legacy" in msg and "new" in msg:
                raising[name] = msg
    return Tf32ApiState(mixed=bool(raising), raising=raising)
