"""The bench pipeline: facts -> plan (api) -> configurations -> children -> verdict."""

from __future__ import annotations

import os
import time
from typing import Any, Optional, Sequence

from torchdoctor.bench.configs import BenchData, Generated, generate, load_bench_data
from torchdoctor.bench.results import BenchResult, MachineSummary
from torchdoctor.bench.runner import Progress, run_all
from torchdoctor.bench.stats import busy, verdict
from torchdoctor.facts import Facts, Unavailable
from torchdoctor.report import Report
from torchdoctor.version import __version__
from torchdoctor.workload import Workload

ISA_FLAGS = ("avx2", "avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16", "amx_fp16", "neon", "sve")


def _k(value: Any) -> Any:
    return None if isinstance(value, Unavailable) else value


def machine_summary(facts: Facts) -> MachineSummary:
    cpu, torch, gpu, system = _k(facts.cpu), _k(facts.torch), _k(facts.gpu), _k(facts.system)
    flags = (_k(cpu.flags) or {}) if cpu else {}
    gpus: list[str] = []
    devices = _k(torch.devices) if torch else None
    for d in devices or []:
        if _k(d.name):
            gpus.append(str(d.name))
    if not gpus and gpu is not None:
        gpus = [str(_k(d.name)) for d in (_k(gpu.devices) or []) if _k(d.name)]
    return MachineSummary(
        cpu=_k(cpu.model) if cpu else None, cores=_k(cpu.physical_cores) if cpu else None,
        threads=_k(torch.num_threads) if torch else None,
        isa=[f for f in ISA_FLAGS if flags.get(f)], gpus=gpus,
        python=_k(system.python_version) if system else None)


def plan_for(facts: Facts, workload: Workload, rules_dirs: Sequence[str] = (),
             measured: Optional[str] = None) -> Report:
    from torchdoctor.api import plan_report
    from torchdoctor.rules import load_rules

    return plan_report(load_rules(list(rules_dirs)), facts, workload, measured=measured)


def run_bench(facts: Facts, workload: Workload, plan: Report, *, budget_s: Optional[float] = None,
              exhaustive: bool = False, progress: Optional[Progress] = None,
              data: Optional[BenchData] = None, plan_source: str = "rules",
              argv: Optional[Sequence[str]] = None, started_at: Optional[float] = None) -> BenchResult:
    """Measure the plan (see runner.run_all). ``budget_s`` (default rules/bench.yaml) bounds
    the whole run from ``started_at`` (``time.monotonic()`` when the command started; default
    now)."""
    data = data or load_bench_data()
    budget = float(budget_s if budget_s is not None else data.measure.budget_s)
    import math

    if not (math.isfinite(budget) and budget > 0):  # NaN would reach the JSON as NaN
        from torchdoctor.errors import UserError

        raise UserError(f"bench: budget {budget!r} is not a finite, positive number of seconds")
    gen: Generated = generate(plan, facts, workload, data=data, exhaustive=exhaustive, budget_s=budget)
    started = time.monotonic() if started_at is None else started_at
    load_before = _load()
    m = data.measure
    workload_spec = {"family": gen.family, "mode": gen.mode, "device": gen.device, "sizes": gen.sizes}
    measurements, interrupted = run_all(
        gen.configs, workload_spec, budget_s=budget, min_reps=m.min_reps, max_reps=m.max_reps,
        startup_timeout_s=m.startup_timeout_s, warmup=m.warmup.model_dump(), progress=progress,
        argv=argv, started_at=started)
    notes = [gen.compile_note] if gen.compile_note else []
    load_after = _load()
    cpus = os.cpu_count() or 1
    if gen.device == "cpu" and busy([load_before, load_after], cpus):
        notes.append(f"the machine was busy: load average {load_before:.1f} before, {load_after:.1f} "
                     f"after, on {cpus} CPUs; other processes competed for the cores, so expect "
                     f"noise (and runs that favour fewer threads; recommend --measured keeps the "
                     f"planned thread count from such a run)")
    if interrupted:
        notes.append("interrupted (Ctrl-C): the table holds what was measured before it")
    return BenchResult(
        tool_version=__version__, torch_version=plan.torch_version, task=workload.task,
        workload=workload.model_dump(mode="json", exclude_none=True),
        machine=machine_summary(facts), device=gen.device, family=gen.family,
        description=gen.description, mode=gen.mode, sizes=gen.sizes, budget_s=budget,
        elapsed_s=time.monotonic() - started, interrupted=interrupted, plan_source=plan_source,
        measurements=measurements, skipped=gen.skipped, unmeasured=gen.unmeasured,
        pinned=gen.pinned, notes=notes, load_average=[load_before, load_after],
        verdict=verdict(measurements))


def _load() -> Optional[float]:
    """The 1-minute load average (None where the OS has none)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return None
