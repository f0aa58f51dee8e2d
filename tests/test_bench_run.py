"""`torchdoctor bench` running children: a child that crashes or hangs is reported and the run
goes on; a real short run on this machine's CPU torch (tiny sizes, a few seconds)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.bench.results import BenchConfig, BenchResult
from torchdoctor.bench.runner import run_all

TESTS = Path(__file__).resolve().parent
RECORDED = TESTS / "data" / "bench"
WARMUP = {"min_steps": 2, "max_steps": 4, "max_s": 1.0, "tolerance": 0.5}
TINY_MLP = {"family": "mlp", "mode": "training", "device": "cpu",
            "sizes": {"batch": 16, "rows": 50, "dim": 4, "sparse": 2, "bag": 2, "dense": 3, "hidden": 8}}


def _config(cid: str, env: str = "", torch: str = "") -> BenchConfig:
    return BenchConfig(id=cid, label=cid, roles=["neighbour"], knobs={}, settings={},
                       code={"env": env, "torch": torch})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_a_child_that_crashes_or_hangs_is_reported_and_the_run_goes_on():
    # the real child runs each configuration's code; these two never reach `import torch`
    crash = _config("crash", env="import sys; sys.stderr.write('boom: no such kernel\\n'); sys.stderr.flush(); os._exit(5)")
    hang = _config("hang", env="import time; time.sleep(600)")
    seen = []
    measurements, interrupted = run_all(
        [crash, hang], TINY_MLP, budget_s=5, min_reps=5, max_reps=5, startup_timeout_s=3,
        warmup=WARMUP, progress=lambda what, done, total: seen.append(what))
    assert not interrupted
    by_id = {m.config.id: m for m in measurements}
    assert by_id["crash"].status == "failed"
    assert by_id["crash"].error == "crashed (exited with status 5): boom: no such kernel"
    assert by_id["hang"].status == "timeout"
    assert by_id["hang"].error == "no answer within 3 s (hung; killed)"
    assert all(m.median_s is None and m.times_s == [] for m in measurements)
    assert seen[:2] == ["warming up crash", "warming up hang"]
    from torchdoctor.probes import _sys

    assert not _sys._live  # every child reaped


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_a_real_short_run_on_the_cpu_torch(monkeypatch):
    from torchdoctor.bench.configs import load_bench_data
    from torchdoctor.bench.core import plan_for, run_bench
    from torchdoctor.facts import Facts
    from torchdoctor.render.bench import render
    from torchdoctor.workload import build_workload

    data = load_bench_data()
    tiny = data.workloads["conv"].model_copy(update={"sizes": {
        "cpu": {"batch": 4, "image": 16, "width": 8, "stages": 2, "classes": 10}, "cuda": {}}})
    data = data.model_copy(update={
        "workloads": {**data.workloads, "conv": tiny},
        # precision and threads only: defaults (= the fp32 neighbour), the plan, half the threads
        "knobs": [k for k in data.knobs if k.name in ("precision", "threads")],
        "measure": data.measure.model_copy(update={"max_reps": 20,
                                                   "warmup": data.measure.warmup.model_copy(update=WARMUP)})})
    facts = Facts.model_validate_json((RECORDED / "facts.json").read_text())
    workload = build_workload(task="classification", overrides={}, source="test")
    plan = plan_for(facts, workload)
    # the budget bounds the whole run (start-up included): room for three torch start-ups here;
    # the tiny steps reach max_reps long before it
    result = run_bench(facts, workload, plan, budget_s=120, data=data)
    assert not result.interrupted and result.family == "conv" and result.sizes["image"] == 16
    assert [m.status for m in result.measurements] == ["ok"] * len(result.measurements)
    assert all(m.reps >= 5 and m.median_s > 0 and m.iqr_s >= 0 for m in result.measurements)
    v = result.verdict
    assert v.plan and v.best and v.defaults and v.regret is not None and v.regret >= 0
    assert any("plan" in m.config.roles for m in result.measurements)
    assert BenchResult.model_validate_json(render(result, "json")) == result
    assert "regret of the plan" in render(result, "terminal")


def test_cli_bench_usage_errors_and_schema(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(TESTS.parent)}
    run = lambda *a: subprocess.run([sys.executable, "-m", "torchdoctor", "bench", *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=60, env=env)
    done = run()
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "bench needs a workload" in done.stderr
    done = run("--schema")
    assert done.returncode == 0 and json.loads(done.stdout)["title"] == "BenchResult"
    done = run("--task", "classification", "--budget", "0")
    assert done.returncode == 2 and "Traceback" not in done.stderr


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_ctrl_c_keeps_what_was_measured():
    configs = [_config("fp32"), _config("one-thread", torch="torch.set_num_threads(1)")]

    def progress(what, done, total):
        if what.startswith("round 2"):
            raise KeyboardInterrupt

    measurements, interrupted = run_all(configs, TINY_MLP, budget_s=120, min_reps=20, max_reps=20,
                                        startup_timeout_s=120, warmup=WARMUP, progress=progress)
    assert interrupted
    timed = [m for m in measurements if m.times_s]
    assert timed and all(m.median_s is not None and m.reps == 1 for m in timed)  # round 1: one step each
    from torchdoctor.probes import _sys

    assert not _sys._live


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_the_budget_bounds_start_up_and_warm_up_too(monkeypatch):
    """`bench --budget 30` took 162 s: configurations were started and warmed up one after the
    other whatever the budget, then each measured min_reps times past it. Now no configuration
    but torch's defaults and the plan starts after WARM_SHARE of the budget, and no batch is sent
    after the first round once the budget is spent (issue 21, item 10)."""
    import time

    from torchdoctor.bench import runner

    starts: list = []
    sends: list = []

    class Recorded(runner.Child):
        def __init__(self, spec, argv=None):
            starts.append((spec["env_code"], time.monotonic()))
            super().__init__(spec, argv)

        def send(self, message):
            if "run" in message:
                sends.append(time.monotonic())
            super().send(message)

    monkeypatch.setattr(runner, "Child", Recorded)
    slow = "import time; time.sleep(3)  # a slow start-up"
    defaults = BenchConfig(id="defaults", label="torch defaults", roles=["defaults", "plan"], knobs={},
                           settings={}, code={"env": "", "torch": ""})
    configs = [defaults] + [_config(f"slow{i}", env=slow) for i in range(3)]
    budget = 4.0
    t0 = time.monotonic()
    measurements, interrupted = run_all(configs, TINY_MLP, budget_s=budget, min_reps=5, max_reps=50,
                                        startup_timeout_s=120, warmup=WARMUP, started_at=t0)
    assert not interrupted
    by_id = {m.config.id: m for m in measurements}
    assert by_id["defaults"].status == "ok" and by_id["defaults"].times_s
    for env, at in starts:
        if env == slow:
            assert at - t0 < runner.WARM_SHARE * budget, "a configuration started after its share"
    late = [m for m in measurements if m.config.id.startswith("slow") and m.status != "ok"]
    assert late, "three 3 s start-ups cannot fit 60% of a 4 s budget"
    for m in late:
        assert "--budget" in m.error and ("not started" in m.error or "not ready" in m.error), m.error
    first_round_end = sorted(sends)[len([m for m in measurements if m.times_s]) - 1]
    assert all(at <= t0 + budget for at in sends if at > first_round_end)
