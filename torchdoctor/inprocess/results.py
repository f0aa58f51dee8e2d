"""Typed results of ``apply()`` and ``audit()`` (frozen pydantic models).

Each model reads like the dict it replaces: ``result["changed"]`` is ``result.changed``,
``"findings" in result`` asks for a field, ``dict(result)`` has one item per field, and
``result.model_dump(mode="json")`` is the JSON form. ``str(result)`` is a short readable
summary (``print(torchdoctor.audit())``).
"""

from __future__ import annotations

from typing import Any, Optional

from pydantic import BaseModel, ConfigDict


class _Result(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    def __getitem__(self, name: str) -> Any:
        if not isinstance(name, str) or name not in type(self).model_fields:
            raise KeyError(name)
        return getattr(self, name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name in type(self).model_fields

    def keys(self) -> list[str]:
        return list(type(self).model_fields)

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default


class ProcessFinding(_Result):
    """A judgement about this process: a rule's finding, or an outcome of apply/audit."""

    id: str
    """The rule id (shared with ``torchdoctor check``), or the apply/audit outcome
    (``backends-setting-ignored``, ``env-set-too-late``, ...)."""
    severity: str
    """error | warning | info."""
    category: str
    message: str

    def __str__(self) -> str:
        return f"{self.severity}: {self.id}: {self.message}"


class Change(_Result):
    """One planned setting as apply() found and left it (values read back with the
    probe's getters; ``None`` where the setting has none or an env variable was unset)."""

    key: str
    """The settings registry key (``torch.backends.cudnn.benchmark``, ``env.OMP_NUM_THREADS``)."""
    before: Any = None
    after: Any = None
    rule: str
    """The rule whose recommendation this is."""


class NotedChange(Change):
    """A change that was deferred (env read only by new processes) or failed, and why."""

    note: str


class SkippedSetting(_Result):
    """A planned setting apply() did not try: not for this process, or dropped from the plan."""

    key: str
    value: Any = None
    rule: str
    note: str


class ApplyResult(_Result):
    """What ``apply()`` did to this process."""

    changed: list[Change] = []
    """Applied and read back at the planned value (or set with no getter to read it)."""
    unchanged: list[Change] = []
    """Already at the planned value."""
    deferred: list[NotedChange] = []
    """Environment variables set here, but read only by new processes."""
    failed: list[NotedChange] = []
    """The statement raised, or the value did not stick."""
    skipped: list[SkippedSetting] = []
    """Not for this process (no CUDA, torch does not import, dropped from the plan)."""
    for_your_code: dict[str, Any] = {}
    """Code-level values to pass yourself (DataLoader keywords, autocast dtype, ...)."""
    findings: list[ProcessFinding] = []
    """The plan's findings, then one per deferred or failed setting."""

    def __str__(self) -> str:
        lines = [f"changed {len(self.changed)}, unchanged {len(self.unchanged)}, deferred "
                 f"{len(self.deferred)}, failed {len(self.failed)}, skipped {len(self.skipped)}"]
        lines += [f"  {c.key}: {c.before!r} -> {c.after!r}" for c in self.changed]
        lines += [f"  {c.key}: {c.note}" for c in self.deferred + self.failed]
        lines += [f"  for your code: {k} = {v!r}" for k, v in self.for_your_code.items()]
        lines += [f"  {f}" for f in self.findings]
        return "\n".join(lines)


class IgnoredAttribute(_Result):
    """An attribute under ``torch.backends`` that does nothing, or that replaced a real one."""

    attribute: str
    """Its dotted path (``torch.backends.cudnn.benchmrk``)."""
    value: Any = None
    """The assigned value (JSON-able; other values as a bounded repr)."""
    problem: str
    """What is wrong, in words."""
    did_you_mean: Optional[str] = None
    """A statement that is safe to paste instead, or None when nothing is close."""
    note: Optional[str] = None
    """More from the registry (``rules/settings.yaml``), when the attribute is a fake it lists."""
    replaced: bool = False
    """True when it replaced PyTorch's function, class, module or object (code using it breaks)."""
    category: str = "performance"
    """The finding's category (the registry can say another)."""


class Tf32ApiState(_Result):
    """Whether the legacy TF32 getters raise because the new fp32_precision API was mixed in."""

    mixed: bool = False
    raising: dict[str, str] = {}
    """Legacy getter -> the first line of what it raised."""


class AuditResult(_Result):
    """What ``audit()`` found in this process."""

    torch_imported: bool
    """Whether torch was imported (an unimported torch has no state to audit)."""
    settings: dict[str, Any] = {}
    """Current value of every setting the probe reads, by registry key (``{"unavailable":
    reason}`` for one that could not be read)."""
    ignored: list[IgnoredAttribute] = []
    tf32_api: Optional[Tf32ApiState] = None
    findings: list[ProcessFinding] = []
    """One per ignored attribute, then the findings of the rules about process state."""
    rules_skipped: dict[str, str] = {}
    """Rules about process state that need facts audit() does not read (rule id -> the fact)."""

    def __str__(self) -> str:
        if not self.torch_imported:
            return "torch is not imported in this process: nothing to audit"
        lines = [f"{len(self.settings)} settings read, {len(self.ignored)} ignored attribute(s), "
                 f"{len(self.findings)} finding(s)"]
        lines += [f"  {f}" for f in self.findings]
        return "\n".join(lines)


def first_line(exc: BaseException) -> str:
    """The first non-empty line of an exception's message."""
    lines = str(exc).strip().splitlines()
    return lines[0].strip() if lines else ""
