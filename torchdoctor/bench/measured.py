"""``recommend --measured bench.json``: measured speed decides the speed-precedence settings.

Only settings a bench knob controls, and only where the plan's own value (if any) has
``speed`` precedence: correctness, stability and the reproducibility the user asked for are
never changed. Among the measured configurations, the fastest whose numerics the workload's
precision allows (``precision_allows`` in rules/bench.yaml) and which keeps every non-speed
setting of the plan wins, if it beats the rules' plan beyond the measured noise (otherwise the
plan stands, confirmed); each setting it changes cites the measurement in its reason. From a run
on a busy machine (load average above the CPUs), load-sensitive knobs (threads) keep the plan's
value: fewer threads win there because of the other processes, not on their own merit.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from torchdoctor.bench.configs import BenchData, device_of, load_bench_data, workload_name
from torchdoctor.bench.results import BenchResult, Measurement
from torchdoctor.bench.stats import busy, regret
from torchdoctor.errors import UserError
from torchdoctor.report import DroppedSetting, Report, SettingRec
from torchdoctor.safeio import clip
from torchdoctor.settings import Registry, load_registry

MAX_BENCH_BYTES = 8 * 1024 * 1024
MEASURED_RULE = "bench-measured"
"""The rule name a setting carries when only the measurement asked for it."""


def load_result(path: str) -> BenchResult:
    from pydantic import ValidationError

    from torchdoctor.safeio import InputError, read_bounded

    try:
        raw = read_bounded(path, MAX_BENCH_BYTES, what="--measured")
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError) as exc:
            raise UserError(f"--measured {clip(path)}: not a `torchdoctor bench --format json` result "
                            f"(invalid JSON: {clip(str(exc))})") from None
        result = BenchResult.model_validate(_sanitized(data))
        _check(result, path)
        return result
    except InputError as exc:
        raise UserError(str(exc)) from None
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x)[:40] for x in err["loc"]) or "(top level)"
        raise UserError(f"--measured {clip(path)}: not a `torchdoctor bench --format json` result "
                        f"({where}: {clip(err['msg'])})") from None


def _sanitized(value: Any, depth: int = 0) -> Any:
    """The JSON data with every string and key through :mod:`torchdoctor.sanitize` (labels and
    ids are shown by recommend's renderers and cited in reasons): no escapes, controls or
    bidi overrides, and keys on one line. Nesting deeper than any result is refused."""
    from torchdoctor.sanitize import sanitize_text

    if depth > 32:
        raise UserError("--measured: nested deeper than a `torchdoctor bench --format json` result")
    if isinstance(value, str):
        return sanitize_text(value)
    if isinstance(value, list):
        return [_sanitized(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {sanitize_text(k, key=True): _sanitized(v, depth + 1) for k, v in value.items()}
    return value


def _shown(text: str, limit: int = 200) -> str:
    """A label or id as a reason cites it: bounded (a cut is marked)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check(result: BenchResult, path: str) -> None:
    """A result file is input: every setting must be a registry key with a valid value, and
    every statistic a finite, non-negative number (what a bench run writes)."""
    import math

    registry = load_registry()
    for m in result.measurements:
        where = f"--measured {clip(path)}: configuration {clip(m.config.id)}"
        for key, value in m.config.settings.items():
            if key not in registry:
                raise UserError(f"{where}: unknown setting {clip(key)}")
            try:
                registry[key].validate_value(value)
            except ValueError as exc:
                raise UserError(f"{where}: {exc}") from None
        stats = [m.median_s, m.iqr_s, m.mad_s, *m.times_s]
        if any(x is not None and not (math.isfinite(x) and x >= 0) for x in stats):
            raise UserError(f"{where}: a step time or statistic that is not a finite number of seconds")
        if m.median_s is not None and m.median_s <= 0:
            raise UserError(f"{where}: a median step time of {m.median_s!r} s")


def apply_measured(report: Report, path: str, *, data: Optional[BenchData] = None,
                   registry: Optional[Registry] = None) -> Report:
    result = load_result(path)
    data = data or load_bench_data()
    registry = registry or load_registry()
    wl = report.workload
    if wl is None:
        raise UserError("--measured needs a workload (--task or workload flags)")
    family, mode, device = workload_name(data, wl), wl.mode or "training", device_of(report.facts)
    if (result.family, result.mode, result.device) != (family, mode, device):
        raise UserError(f"--measured {clip(path)} measured a {result.family} {result.mode} workload on "
                        f"{result.device}; this plan is for {family} {mode} on {device}: "
                        f"run `torchdoctor bench` with the same task and flags here")
    allowed = set(data.precision_allows.get(str(wl.precision), []))
    # the keys the bench varied (settings common to every configuration, the plan's base, are not)
    varied_in = [m for m in result.measurements if m.config.roles != ["defaults"]]
    knob_keys = {k for m in varied_in for k in m.config.settings
                 if len({repr(x.config.settings.get(k)) for x in varied_in}) > 1}
    # this plan's own measurement: the configuration with its values of every varied key
    planned = {s.key: s.value for s in report.settings}
    plan_m = next((m for m in result.measurements if m.median_s and not m.config.compile
                   and all(m.config.settings.get(k) == planned.get(k) for k in knob_keys)), None)
    companions = {k for knob in data.knobs for k in knob.companions}
    if busy(result.load_average, result.machine.cores or 1):
        # a run on a busy machine says how the load behaves, not how these settings do
        sensitive = {k for knob in data.knobs if knob.load_sensitive for o in knob.options for k in o.set}
        knob_keys -= sensitive
        kept_plan = {s.key: s.value for s in report.settings}
        keep = {k: kept_plan.get(k) for k in sensitive}
    else:
        keep = {}
    held = {s.key: s for s in report.settings
            if s.precedence != "speed" and s.key in knob_keys and s.key not in companions}

    def eligible(m: Measurement) -> bool:
        return (m.median_s is not None and not m.config.compile and m.config.roles != ["defaults"]
                and all(m.config.settings.get(k) == v for k, v in keep.items())
                and set(m.config.numerics) <= allowed
                and all(m.config.settings.get(k) == s.value for k, s in held.items()))

    candidates = sorted((m for m in result.measurements if eligible(m)), key=lambda m: m.median_s)
    if not candidates:
        return report
    best = candidates[0]
    if plan_m is not None and eligible(plan_m) and plan_m.config.id != best.config.id:
        r, band = regret(plan_m, best)
        if r <= band:  # not a measured difference: the rules' plan stands, and says so
            note = (f"Measured by torchdoctor bench ({clip(path)}): within noise of the fastest "
                    f"configuration ({plan_m.median_s * 1e3:.1f} vs {best.median_s * 1e3:.1f} ms/step, "
                    f"regret {r:.1%} within ±{band:.1%}).")
            return report.model_copy(update={"settings": [
                s.model_copy(update={"reason": f"{s.reason} {note}"}) if s.key in knob_keys else s
                for s in report.settings]})
    cite = (f"measured by torchdoctor bench ({clip(path)}): {_shown(best.config.label)} "
            f"{best.median_s * 1e3:.1f} ms/step over {best.reps} reps (IQR {best.iqr_s * 1e3:.1f} ms)")
    if plan_m is not None and plan_m.config.id != best.config.id:
        cite += f", vs this plan's {plan_m.median_s * 1e3:.1f} ms"
    if best.config.numerics:
        cite += f"; changes numerics: {', '.join(best.config.numerics)}"
    tv = report.torch_version
    by_key = {s.key: s for s in report.settings}
    settings: list[SettingRec] = []
    dropped = list(report.dropped)
    for rec in report.settings:
        if rec.key not in knob_keys or rec.key in held:
            settings.append(rec)
            continue
        want = best.config.settings.get(rec.key)
        if want is None:
            dropped.append(DroppedSetting(key=rec.key, value=rec.value, rule=rec.rule,
                                          reason=f"torch's default was faster: {cite}"))
        elif want == rec.value:
            settings.append(rec.model_copy(update={"reason": f"{rec.reason} Confirmed: {cite}."}))
        else:
            settings.append(_rec(registry, rec.key, want, rec.rule, f"{cite} (the rules said {clip(rec.value)})", tv))
    for key, value in best.config.settings.items():
        if key in knob_keys and key not in by_key:
            settings.append(_rec(registry, key, value, MEASURED_RULE, cite, tv))
    settings.sort(key=lambda s: (registry[s.key].kind != "env", registry[s.key].kind == "code", s.key))
    return report.model_copy(update={"settings": settings, "dropped": dropped})


def _rec(registry: Registry, key: str, value: Any, rule: str, reason: str, tv: Optional[str]) -> SettingRec:
    setting = registry[key]
    return SettingRec(key=key, value=value, rule=rule, reason=reason, kind=setting.kind,
                      precedence="speed", code=setting.render(value, tv), guard=setting.guard,
                      uses=[u.how for u in setting.uses])
