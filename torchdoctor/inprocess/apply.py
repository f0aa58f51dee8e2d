"""apply(): carry out the settings plan in the running process.

The plan is the one ``recommend`` builds (same rules, same registry, same engine), and each
planned setting arrives with its statement already written: the engine renders
``SettingRec.code`` once from the registry for the target torch version (a typed,
validated, ``repr()``-written value; never user text). apply() executes exactly that
statement, in a namespace holding only ``torch``, ``os`` and ``random``, and reads the value
back through the setting's own getter in the registry, the way the torch probe reads it.
Environment variables go into ``os.environ`` before torch is imported here (when it is not
yet); code-level values (DataLoader keywords, autocast dtype) are returned for the caller's
code. The API module is not imported: facts are collected through the probes directly.
"""

from __future__ import annotations

import builtins
import os
import random
import sys
from typing import Any, Optional, Sequence

from torchdoctor.facts import Facts, TorchFacts
from torchdoctor.inprocess.results import (
    ApplyResult,
    Change,
    NotedChange,
    ProcessFinding,
    SkippedSetting,
    first_line,
)

DEFERRED_NOTE = "set, but takes effect only in new processes ({why})"
_ENV_WHY = {
    "torch-import": "torch reads it when it is imported, and torch is already imported",
    "cuda-init": "it is read when CUDA initialises, and CUDA is already initialised here",
    "distributed-init": "it is read when the first process group is created, and one exists here",
}
NO_GETTER = object()
"""A setting the probe does not read back."""
_SET_TOO_LATE: dict[str, str] = {}
"""Environment variables apply() set in this process after the library had read them."""


class _Out:
    """The lists apply() fills while it works; frozen into an ApplyResult at the end."""

    def __init__(self) -> None:
        self.changed: list[Change] = []
        self.unchanged: list[Change] = []
        self.deferred: list[NotedChange] = []
        self.failed: list[NotedChange] = []
        self.skipped: list[SkippedSetting] = []
        self.for_your_code: dict[str, Any] = {}
        self.findings: list[ProcessFinding] = []

    def skip(self, rec: Any, note: str) -> None:
        self.skipped.append(SkippedSetting(key=rec.key, value=rec.value, rule=rec.rule, note=note))


def apply_plan(
    task: Optional[str] = None,
    *,
    facts: Optional[Facts] = None,
    rules_dirs: Sequence[str] = (),
    **workload: Any,
) -> ApplyResult:
    """Build the plan for this process and apply it here (see :class:`ApplyResult`).

    Facts: torch is read in-process when it is already imported (the flags as this process
    has them); otherwise in a child of this interpreter, so that environment variables can
    still be set before this function imports torch.
    """
    from torchdoctor.engine import evaluate
    from torchdoctor.rules import load_rules
    from torchdoctor.workload import build_workload

    wl = build_workload(task=task, overrides=workload, source="apply()")
    torch_was_imported = "torch" in sys.modules
    if facts is None:
        facts = _probe_facts(torch_was_imported)
    report = evaluate(load_rules(list(rules_dirs)), facts, wl, command="apply")

    out = _Out()
    out.findings = [ProcessFinding(id=f.id, severity=f.severity, category=f.category,
                                   message=f.message) for f in report.findings]
    for d in report.dropped:
        out.skipped.append(SkippedSetting(key=d.key, value=d.value, rule=d.rule, note=d.reason))

    # 1. environment, before torch is imported here (if it is not yet)
    read_at = _env_read_at()
    for rec in report.settings:
        if rec.kind == "env":
            _apply_env(rec, torch_was_imported, read_at, out)
        elif rec.kind == "code":
            out.for_your_code[rec.key] = rec.value

    live = [rec for rec in report.settings if rec.kind in ("assign", "call")]
    if not live:
        return _finish(out)
    torch = _import_torch(facts)
    if isinstance(torch, str):
        for rec in live:
            out.skip(rec, torch)
        return _finish(out)

    # 2. assignments and calls, read back through the torch probe
    cuda_ok: Optional[bool] = None
    for rec in live:
        if rec.guard == "cuda":
            if cuda_ok is None:
                cuda_ok = _cuda_available(torch)
            if not cuda_ok:
                out.skip(rec, "needs CUDA, which torch cannot use in this process")
                continue
        before = current(torch, rec.key)
        target = rec.value
        if _same(before, target):
            out.unchanged.append(_change(rec, before, before))
            continue
        try:
            run_statement(rec.code, rec.key, torch=torch)
        except Exception as exc:  # noqa: BLE001 - the user's process must survive a bad setting
            out.failed.append(_noted(rec, before, current(torch, rec.key),
                                     f"{type(exc).__name__}: {first_line(exc)}"))
            continue
        after = current(torch, rec.key)
        if after is NO_GETTER or _same(after, target):
            out.changed.append(_change(rec, before, target if after is NO_GETTER else after))
        else:
            out.failed.append(_noted(rec, before, after,
                                     f"set to {target!r}, but it reads back as {after!r}"))
    return _finish(out)


def run_statement(code: str, key: str, torch: Any = None) -> None:
    """Execute the statement the engine wrote for a planned setting (``SettingRec.code``,
    rendered from the registry's own template; never user text)."""
    if not isinstance(code, str) or not code.strip():
        raise ValueError(f"the plan carries no statement for {key}")
    namespace = {"__builtins__": builtins, "os": os, "random": random}
    if torch is not None:
        namespace["torch"] = torch
    exec(compile(code, f"<torchdoctor {key}>", "exec"), namespace)  # noqa: S102


def _probe_facts(torch_imported: bool) -> Facts:
    """Facts of this machine; torch facts in-process when torch is already imported."""
    from torchdoctor.probes import ProbeContext, collect, python_executable, run_one

    if not torch_imported:  # what torchdoctor.probe() does: torch read in a child
        return collect(ProbeContext(python=python_executable()))
    from torchdoctor.probes.pytorch import facts_in_process

    def runner(name: str, ctx: ProbeContext) -> object:
        if name == "torch":
            return facts_in_process()
        return run_one(name, ctx)

    return collect(ProbeContext(), runner=runner)


def _apply_env(rec: Any, torch_was_imported: bool, read_at: dict[str, str], out: _Out) -> None:
    name = rec.key.split(".", 1)[1]
    before = os.environ.get(name)
    target = str(rec.value)
    if before == target:
        if _SET_TOO_LATE.get(name) == target:  # an earlier apply() set it after torch read it
            why = "an earlier apply() set it too late"
            out.deferred.append(_noted(rec, before, before, DEFERRED_NOTE.format(why=why)))
        else:
            out.unchanged.append(_change(rec, before, before))
        return
    try:
        run_statement(rec.code, rec.key)
    except Exception as exc:  # noqa: BLE001
        out.failed.append(_noted(rec, before, os.environ.get(name),
                                 f"{type(exc).__name__}: {first_line(exc)}"))
        return
    after = os.environ.get(name)
    late = _env_too_late(read_at.get(name, "torch-import"), torch_was_imported)
    if late is not None:
        _SET_TOO_LATE[name] = target
        out.deferred.append(_noted(rec, before, after, DEFERRED_NOTE.format(why=late)))
    else:
        out.changed.append(_change(rec, before, after))


def _env_too_late(when: str, torch_was_imported: bool) -> Optional[str]:
    """Why a variable set now is not seen by this process, or None when it still is."""
    if not torch_was_imported:
        return None
    torch = sys.modules.get("torch")
    if when == "cuda-init":
        try:
            late = bool(torch.cuda.is_initialized())
        except Exception:  # noqa: BLE001 - no torch.cuda: nothing initialised
            late = False
    elif when == "distributed-init":
        try:
            dist = torch.distributed
            late = bool(dist.is_available() and dist.is_initialized())
        except Exception:  # noqa: BLE001
            late = False
    else:
        late = True
    return _ENV_WHY.get(when, _ENV_WHY["torch-import"]) if late else None


def _env_read_at() -> dict[str, str]:
    """When the library reads each environment variable the registry can set (its
    ``takes_effect``), by variable name."""
    from torchdoctor.settings import load_registry

    return {s.getter.env: s.takes_effect.when for s in load_registry().settings.values()
            if s.getter is not None and s.getter.env and s.takes_effect is not None}


def _import_torch(facts: Facts) -> Any:
    """The torch module, importing it when the facts say it imports; else the reason (str)."""
    if "torch" in sys.modules:
        return sys.modules["torch"]
    tf = facts.torch
    status = tf.import_status if isinstance(tf, TorchFacts) else None
    if isinstance(status, str) and status != "ok":  # a known failure: importing could kill us
        error = tf.import_error if isinstance(tf.import_error, str) else None
        return f"not applied: torch does not import here ({status}{': ' + error if error else ''})"
    try:
        import torch
    except Exception as exc:  # noqa: BLE001
        return f"not applied: import torch failed: {type(exc).__name__}: {first_line(exc)}"
    return torch


def _cuda_available(torch: Any) -> bool:
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def current(torch: Any, key: str) -> Any:
    """The current value of a registry setting, read through its getter in the registry the
    way the torch probe reads it (``NO_GETTER`` when it has none, or torch lacks it)."""
    from torchdoctor.probes._child_settings import ABSENT, read_one
    from torchdoctor.settings import load_registry

    setting = load_registry().settings.get(key)
    if setting is None or setting.getter is None:
        return NO_GETTER
    try:
        value = read_one(torch, key, setting.getter.as_data())
    except Exception:  # noqa: BLE001 - reading never takes the user's process down
        return NO_GETTER
    return NO_GETTER if value is ABSENT else value


def _same(value: Any, target: Any) -> bool:
    if value is NO_GETTER or isinstance(value, dict):  # no getter, or {"unavailable": ...}
        return False
    if isinstance(value, bool) or isinstance(target, bool):
        return type(value) is type(target) and value == target
    if isinstance(value, (int, float)) and isinstance(target, (int, float)):
        return value == target
    return type(value) is type(target) and value == target


def _plain(value: Any) -> Any:
    return None if value is NO_GETTER else value


def _change(rec: Any, before: Any, after: Any) -> Change:
    return Change(key=rec.key, before=_plain(before), after=_plain(after), rule=rec.rule)


def _noted(rec: Any, before: Any, after: Any, note: str) -> NotedChange:
    return NotedChange(key=rec.key, before=_plain(before), after=_plain(after), rule=rec.rule,
                       note=note)


def _finish(out: _Out) -> ApplyResult:
    for entry in out.deferred:
        out.findings.append(ProcessFinding(
            id="env-set-too-late", severity="warning", category="performance",
            message=f"{entry.key.split('.', 1)[1]}={entry.after} was {entry.note}; "
            "set it before `import torch` (or in the launching shell)."))
    for entry in out.failed:
        out.findings.append(ProcessFinding(
            id="setting-not-applied", severity="warning", category="probe",
            message=f"{entry.key} was not applied: {entry.note}"))
    return ApplyResult(changed=out.changed, unchanged=out.unchanged, deferred=out.deferred,
                       failed=out.failed, skipped=out.skipped, for_your_code=out.for_your_code,
                       findings=out.findings)
