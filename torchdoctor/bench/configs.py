"""Which configurations `bench` measures (pure: no torch, no processes).

Always: torch's defaults, the plan (``api.recommend``'s settings, whose ``SettingRec.code`` is
reused verbatim), and every one-knob change around the plan; ``exhaustive`` adds the full grid
of knob options. Knobs, options, sizes and the task -> workload map are data
(``rules/bench.yaml``); each option sets registry settings, written by the registry for the
target torch version, so an option that version lacks is skipped with the reason.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any, Optional

from pydantic import BaseModel, ConfigDict

from torchdoctor.bench.results import BenchConfig, SkippedConfig, Unmeasured
from torchdoctor.facts import Facts, Unavailable
from torchdoctor.paths import default_rules_dir
from torchdoctor.report import Report, SettingRec
from torchdoctor.settings import Registry, load_registry
from torchdoctor.workload import Workload


class _M(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Option(_M):
    name: str
    set: dict[str, Any] = {}
    numerics: Optional[str] = None
    device: Optional[str] = None
    mode: Optional[str] = None


class Knob(_M):
    name: str
    options: list[Option]
    device: Optional[str] = None
    families: Optional[list[str]] = None
    mode: Optional[str] = None
    load_sensitive: bool = False
    """Its best option depends on what else runs (threads): recommend --measured does not take
    it from a run on a busy machine."""
    companions: list[str] = []
    """Keys that only accompany an option (a GradScaler with fp16): their precedence does not pin the knob."""


class WorkloadSpec(_M):
    description: str
    references: list[str]
    sizes: dict[str, dict[str, int]]


class Compile(_M):
    min_budget_s: dict[str, float]
    references: list[str]


class Warmup(_M):
    min_steps: int
    max_steps: int
    max_s: float
    tolerance: float


class Measure(_M):
    budget_s: float
    min_reps: int
    max_reps: int
    startup_timeout_s: float
    warmup: Warmup


class BenchData(_M):
    workloads: dict[str, WorkloadSpec]
    tasks: dict[str, str]
    families: dict[str, str]
    precision_allows: dict[str, list[str]]
    knobs: list[Knob]
    compile: Compile
    measure: Measure


def load_bench_data(path: Optional[Path] = None) -> BenchData:
    from torchdoctor import yamlio
    from torchdoctor.errors import UserError

    p = Path(path) if path else default_rules_dir() / "bench.yaml"
    try:
        raw = yamlio.safe_load(yamlio.read_text(p, UserError, what="bench data file"))
        data = BenchData.model_validate(raw)
    except (OSError, ValueError) as exc:
        raise UserError(f"{p}: {str(exc).splitlines()[0][:300]}") from None
    for name in list(data.tasks.values()) + list(data.families.values()):
        if name not in data.workloads:
            raise UserError(f"{p}: names workload '{name}', which is not under workloads:")
    return data


# ----------------------------------------------------------------------------------------
# the machine and the workload
# ----------------------------------------------------------------------------------------


def _known(value: Any) -> Any:
    return None if isinstance(value, Unavailable) else value


def device_of(facts: Facts) -> str:
    """cuda where torch can use a GPU; where that is not known (a plan for another machine,
    ``--gpu``), where the machine has an NVIDIA GPU."""
    torch, gpu = _known(facts.torch), _known(facts.gpu)
    usable = _known(torch.cuda_available) if torch is not None else None
    if usable is None and gpu is not None:
        count = _known(gpu.count)
        return "cuda" if isinstance(count, int) and count > 0 else "cpu"
    return "cuda" if usable is True else "cpu"


def default_threads(facts: Facts) -> int:
    """torch's default intra-op pool here (what the torch child read), else physical cores."""
    torch, cpu = _known(facts.torch), _known(facts.cpu)
    for value in ((_known(torch.num_threads) if torch else None),
                  (_known(cpu.physical_cores) if cpu else None),
                  (_known(cpu.logical_cores) if cpu else None)):
        if isinstance(value, int) and value > 0:
            return value
    return 1


def workload_name(data: BenchData, workload: Workload) -> str:
    if workload.task and workload.task in data.tasks:
        return data.tasks[workload.task]
    return data.families.get(str(workload.model_family), "mlp")


def _applies(thing: Any, device: str, family: str, mode: str) -> bool:
    if getattr(thing, "device", None) not in (None, device):
        return False
    if getattr(thing, "mode", None) not in (None, mode):
        return False
    families = getattr(thing, "families", None)
    return families is None or family in families


def _fill(value: Any, threads: int) -> Any:
    if value == "$cores":
        return threads
    if value == "$half_cores":
        return max(1, threads // 2)
    return value


# ----------------------------------------------------------------------------------------
# generation
# ----------------------------------------------------------------------------------------


class Generated(_M):
    family: str
    device: str
    mode: str
    sizes: dict[str, int]
    description: str
    configs: list[BenchConfig]
    skipped: list[SkippedConfig]
    unmeasured: list[Unmeasured]
    pinned: list[str]
    base: dict[str, Any]
    compile_note: str


def generate(plan: Report, facts: Facts, workload: Workload, *, data: Optional[BenchData] = None,
             registry: Optional[Registry] = None, exhaustive: bool = False,
             budget_s: Optional[float] = None) -> Generated:
    data = data or load_bench_data()
    registry = registry or load_registry()
    tv = plan.torch_version
    device = device_of(facts)
    mode = workload.mode or "training"
    family = workload_name(data, workload)
    spec = data.workloads[family]
    threads = default_threads(facts)
    plan_by_key = {s.key: s for s in plan.settings}

    knobs: list[Knob] = []
    for knob in data.knobs:
        if not _applies(knob, device, family, mode):
            continue
        options = [o.model_copy(update={"set": {k: _fill(v, threads) for k, v in o.set.items()}})
                   for o in knob.options if _applies(o, device, family, mode)]
        # an option equal to the default (half of one core is one core) is no change
        options = [o for i, o in enumerate(options) if i == 0 or o.set != {"torch.set_num_threads": threads}]
        if len(options) > 1:
            knobs.append(knob.model_copy(update={"options": options}))
    knob_keys = {k for knob in knobs for o in knob.options for k in o.set}

    # the plan, per knob; settings the micro-workload cannot act on are listed as not measured
    pinned: list[str] = []
    plan_choice: dict[str, Option] = {}
    for knob in knobs:
        keys = {k for o in knob.options for k in o.set}
        wanted = {k: plan_by_key[k].value for k in keys if k in plan_by_key}
        match = next((o for o in knob.options if o.set == wanted), None)
        if match is None:
            match = Option(name="plan: " + ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in wanted.items()),
                           set=wanted,
                           numerics=next((o.numerics for o in knob.options if o.numerics and
                                          all(o.set.get(k) == v for k, v in wanted.items())), None))
            knob.options.append(match)
        plan_choice[knob.name] = match
        held = [plan_by_key[k] for k in wanted
                if plan_by_key[k].precedence != "speed" and k not in knob.companions]
        if held:
            pinned.append(f"{knob.name}: kept at {match.name} ({held[0].precedence}, rule {held[0].rule})")
    pinned_names = {p.split(":", 1)[0] for p in pinned}
    base: dict[str, Any] = {}
    unmeasured: list[Unmeasured] = []
    for rec in plan.settings:
        if rec.key in knob_keys:
            continue
        if rec.kind == "code" or rec.key.startswith("dataloader."):
            unmeasured.append(Unmeasured(key=rec.key, value=rec.value,
                                         reason="the micro-workload has no DataLoader, FSDP or "
                                                "other code that takes it; applied as planned"))
        else:
            base[rec.key] = rec.value

    # which configurations
    choices: list[tuple[str, dict[str, Option]]] = []

    def add(role: str, choice: dict[str, Option]) -> None:
        choices.append((role, dict(choice)))

    add("defaults", {k.name: k.options[0] for k in knobs})
    add("plan", plan_choice)
    for knob in knobs:
        if knob.name in pinned_names:
            continue
        for option in knob.options:
            if option is not plan_choice[knob.name]:
                add(f"plan, {knob.name}={option.name}", {**plan_choice, knob.name: option})
    if exhaustive:
        free = [k for k in knobs if k.name not in pinned_names]
        for combo in itertools.product(*[k.options for k in free]):
            add("grid", {**plan_choice, **{k.name: o for k, o in zip(free, combo)}})

    first = {k.name: k.options[0] for k in knobs}
    configs: list[BenchConfig] = []
    skipped: list[SkippedConfig] = []
    seen: dict[tuple, BenchConfig] = {}
    for role, choice in choices:
        settings: dict[str, Any] = {} if role == "defaults" else dict(base)
        for option in choice.values():
            settings.update(option.set)
        key = tuple(sorted((k, repr(v)) for k, v in settings.items()))
        label = " · ".join(f"{name}={o.name}" for name, o in choice.items()
                           if o is not first[name]) or "torch defaults"
        norm = "neighbour" if role.startswith("plan, ") else role
        changed = role.split(", ", 1)[1] if role.startswith("plan, ") else None
        if key in seen:
            old = seen[key]
            update: dict[str, Any] = {}
            if norm not in old.roles:
                update["roles"] = old.roles + [norm]
            if changed and not old.changed:
                update["changed"] = changed
            if update:
                seen[key] = old.model_copy(update=update)
                configs = [seen[key] if c.id == old.id else c for c in configs]
            continue
        code, reason = _write(settings, plan_by_key, registry, tv)
        if reason:
            skipped.append(SkippedConfig(label=label, reason=reason))
            continue
        config = BenchConfig(
            id=f"c{len(configs) + 1}", label=label, roles=[norm],
            knobs={name: o.name for name, o in choice.items()}, changed=changed,
            settings=settings, code=code,
            numerics=sorted({o.numerics for o in choice.values() if o.numerics}))
        seen[key] = config
        configs.append(config)

    min_budget = data.compile.min_budget_s.get(device, float("inf"))
    budget = budget_s if budget_s is not None else data.measure.budget_s
    compile_note = ""
    plan_cfg = next((c for c in configs if "plan" in c.roles), None)
    if budget >= min_budget and plan_cfg is not None:
        configs.append(plan_cfg.model_copy(update={
            "id": f"c{len(configs) + 1}", "roles": ["neighbour"], "compile": True,
            "changed": "compile=on", "label": plan_cfg.label + " · compile=on",
            "knobs": {**plan_cfg.knobs, "compile": "on"}}))
    else:
        compile_note = (f"torch.compile not measured: the budget ({budget:g} s) is under the "
                        f"{min_budget:g} s compiling takes here (--budget {min_budget:g} to include it)")
    return Generated(family=family, device=device, mode=mode, sizes=spec.sizes[device],
                     description=spec.description, configs=configs, skipped=skipped,
                     unmeasured=unmeasured, pinned=pinned, base=base, compile_note=compile_note)


def _write(settings: dict[str, Any], plan_by_key: dict[str, SettingRec], registry: Registry,
           tv: Optional[str]) -> tuple[dict[str, str], str]:
    """The code of a configuration, split into what runs before ``import torch`` (env) and
    after; or the reason it cannot be written for torch ``tv``."""
    env: list[str] = []
    code: list[str] = []
    for key in sorted(settings, key=lambda k: (registry[k].kind != "env", k)):
        value = settings[key]
        setting = registry[key]
        rec = plan_by_key.get(key)
        if rec is not None and rec.value == value and rec.code:
            text = rec.code
        else:
            if not setting.available_in(tv):
                return {}, f"{key} does not exist in torch {tv}"
            if not setting.available_in(tv, value):
                note = setting.resolve(tv).note
                return {}, f"{key} = {value!r} does not exist in torch {tv}" + (
                    f": {' '.join(note.split())}" if note else "")
            text = setting.render(value, tv)
        if setting.guard == "cuda":
            text = "if torch.cuda.is_available():\n" + "\n".join("    " + line for line in text.splitlines())
        (env if setting.kind == "env" else code).append(text)
    return {"env": "\n".join(env), "torch": "\n".join(code)}, ""
