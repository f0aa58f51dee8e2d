"""Statistics of step times and the verdict (pure functions, recorded timings in the tests).

Medians and quartiles use linear interpolation between order statistics (numpy's default,
``statistics.quantiles(method="inclusive")``); the MAD is the unscaled median absolute deviation.
The noise band of a regret is two standard errors of the difference, relative to the best: from
the round-by-round ratios of the two configurations when they share at least 5 rounds (they ran
interleaved, so this pairs them), else from the two medians' MADs (standard error of a median ~
1.2533 * 1.4826 * MAD / sqrt(n)). A regret beyond it is a real difference, one within it is noise.
"""

from __future__ import annotations

import math
import statistics
from typing import Optional, Sequence

from torchdoctor.bench.results import Measurement, Verdict


def quartiles(times: Sequence[float]) -> tuple[float, float, float]:
    data = sorted(times)
    if len(data) == 1:
        return data[0], data[0], data[0]
    q1, q2, q3 = statistics.quantiles(data, n=4, method="inclusive")
    return q1, q2, q3


def mad(times: Sequence[float]) -> float:
    med = statistics.median(times)
    return statistics.median(abs(t - med) for t in times)


def summarize(m: Measurement) -> Measurement:
    """The measurement with its median, quartiles, IQR and MAD filled in from ``times_s``."""
    if not m.times_s:
        return m
    q1, med, q3 = quartiles(m.times_s)
    return m.model_copy(update={"median_s": med, "q1_s": q1, "q3_s": q3, "iqr_s": q3 - q1,
                                "mad_s": mad(m.times_s)})


def rel_spread(m: Measurement) -> float:
    return (m.iqr_s or 0.0) / m.median_s if m.median_s else 0.0


def ranked(measurements: Sequence[Measurement]) -> list[Measurement]:
    """Measured configurations, fastest first (by median step time)."""
    return sorted((m for m in measurements if m.median_s is not None), key=lambda m: m.median_s)


def _role(measurements: Sequence[Measurement], role: str) -> Optional[Measurement]:
    return next((m for m in measurements if role in m.config.roles and m.config.compile is False), None)


def median_se(m: Measurement) -> float:
    """Standard error of the median step time (normal approximation, sigma from the MAD)."""
    if not m.times_s:
        return 0.0
    return 1.2533 * 1.4826 * (m.mad_s or 0.0) / math.sqrt(len(m.times_s))


def per_round(m: Measurement) -> dict[int, float]:
    """Median step time of each round (from ``batch_rounds``/``batch_sizes``; empty without)."""
    if len(m.batch_rounds) != len(m.batch_sizes) or sum(m.batch_sizes) != len(m.times_s):
        return {}
    out: dict[int, list[float]] = {}
    i = 0
    for r, n in zip(m.batch_rounds, m.batch_sizes):
        out.setdefault(r, []).extend(m.times_s[i:i + n])
        i += n
    return {r: statistics.median(ts) for r, ts in out.items() if ts}


def regret(plan: Measurement, best: Measurement) -> tuple[float, float]:
    """(regret, noise band): (plan - best) / best, and 2 standard errors of that difference.
    With at least 5 rounds in common the band comes from the round-by-round ratios (a paired
    comparison: load that slows both in a round cancels, load that hits one shows); otherwise
    from the two medians' MADs."""
    r = (plan.median_s - best.median_s) / best.median_s
    band = 2 * math.hypot(median_se(plan), median_se(best)) / best.median_s
    a, b = per_round(plan), per_round(best)
    common = sorted(set(a) & set(b))
    if len(common) >= 5 and plan is not best:
        ratios = [a[k] / b[k] - 1 for k in common]
        band = 2 * 1.2533 * 1.4826 * mad(ratios) / math.sqrt(len(ratios))
    return r, band


def verdict(measurements: Sequence[Measurement]) -> Verdict:
    order = ranked(measurements)
    plan = _role(measurements, "plan")
    defaults = _role(measurements, "defaults")
    if not order:
        return Verdict(summary="nothing was measured")
    best = order[0]
    out = {"best": best.config.id, "plan": plan.config.id if plan else None,
           "defaults": defaults.config.id if defaults else None}
    if plan is None or plan.median_s is None:
        return Verdict(**out, summary="the plan was not measured (see its error)")
    r, band = regret(plan, best)
    beyond = r > band
    if defaults is not None and defaults.median_s is not None:
        out["speedup_plan"] = defaults.median_s / plan.median_s
    difference: list[str] = []
    if beyond:
        for knob, option in best.config.knobs.items():
            if plan.config.knobs.get(knob) == option:
                continue
            neighbour = next((m for m in measurements if m.median_s is not None
                              and m.config.changed == f"{knob}={option}"), None)
            effect = ""
            if neighbour is not None:
                effect = f" (alone: {plan.median_s / neighbour.median_s:.2f}x the plan's speed)"
            difference.append(f"{knob}: {plan.config.knobs.get(knob)} → {option}{effect}")
        if best.config.compile and not plan.config.compile:
            difference.append("torch.compile: off → on")
    if beyond:
        summary = (f"the plan is {r:.1%} slower than the best configuration (noise ±{band:.1%}); "
                   f"the difference: {'; '.join(difference) or 'settings outside the knobs'}")
    elif best.config.id == plan.config.id:
        summary = f"the plan is the fastest configuration measured (noise ±{band:.1%})"
    else:
        summary = f"the plan is within noise of the best (regret {r:.1%}, noise ±{band:.1%})"
    return Verdict(**out, regret=r, noise=band, beyond_noise=beyond, difference=difference,
                   summary=summary)


def busy(load_average: Sequence[Optional[float]], cpus: int) -> bool:
    """Whether other processes competed for the CPUs during a run: a 1-minute load average
    (before or after measuring) above three quarters of the CPUs plus one (our own child)."""
    known = [x for x in load_average if x is not None]
    return bool(known) and max(known) > max(1, cpus) * 0.75 + 1
