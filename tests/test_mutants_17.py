"""Issue 17, test holes: each test here kills a mutant that survived the mutation check of the
new code (scripts/mutation_check.py names the mutant each one kills). They run the real code
on recorded data where the repository has it (tests/data/bench, tests/data/corpus,
tests/data/cases2, tests/data/distributed, tests/data/torch_messages)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.facts import Facts

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
BENCH = DATA / "bench"


# ----------------------------------------------------------------------------------------
# lint: a did-you-mean tie gets no suggestion and no fix
# ----------------------------------------------------------------------------------------

TIE = "torch.backends.cuda.matmul.allow_f16_reduced_precision_reduction = True\n"
"""One edit from allow_fp16_... (insert "p") and one from allow_bf16_... (insert "b")."""
TYPO = "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reductoin = True\n"
"""One transposition from allow_fp16_... only."""


def _lint(code: str) -> list:
    from torchdoctor.lint import engine
    from torchdoctor.lint.knowledge import load
    from torchdoctor.lint.versions import parse

    know = load()
    return engine.lint_source(code, "x.py", know, [r for r in know.rules if r.default], parse("2.13"), "2.13")


def test_a_typo_equally_close_to_two_names_gets_no_suggestion():
    from torchdoctor.lint.checks import distance

    a, b = "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"
    typo = "allow_f16_reduced_precision_reduction"
    assert distance(typo, a) == distance(typo, b) == 1  # the tie is real
    (tie,) = _lint("import torch\n" + TIE)
    assert tie.id == "fake-backends-setting" and "Did you mean" not in tie.message
    assert tie.fix is None
    (typo_finding,) = _lint("import torch\n" + TYPO)  # the control: a unique nearest name is offered
    assert f"Did you mean torch.backends.cuda.matmul.{a}?" in typo_finding.message
    assert typo_finding.fix is not None


def test_fix_does_not_rewrite_a_tie_to_either_flag(tmp_path):
    path = tmp_path / "train.py"
    path.write_text("import torch\n" + TIE + TYPO, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(ROOT), TORCHDOCTOR_NO_CACHE="1")
    subprocess.run([sys.executable, "-m", "torchdoctor", "lint", "--fix", "--torch-version", "2.13", str(path)],
                   env=env, capture_output=True, text=True, timeout=60)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[1] == TIE.rstrip("\n")  # neither the bf16 nor the fp16 flag: left as written
    assert lines[2] == "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True"


# ----------------------------------------------------------------------------------------
# bench: the busy-machine check reads the load after measuring as well as before
# ----------------------------------------------------------------------------------------


def _bench_with_load(monkeypatch, before: float, after: float):
    from torchdoctor.bench import core
    from torchdoctor.bench.results import BenchResult
    from torchdoctor.workload import build_workload

    recorded = BenchResult.model_validate_json((BENCH / "recsys.busy.json").read_text())
    loads = iter([before, after])
    monkeypatch.setattr(core, "_load", lambda: next(loads))
    monkeypatch.setattr(core, "run_all", lambda *a, **k: (list(recorded.measurements), False))
    monkeypatch.setattr(core.os, "cpu_count", lambda: 2)  # the recorded machine: 2 CPUs
    facts = Facts.model_validate_json((BENCH / "facts.json").read_text())
    wl = build_workload(task="recsys", overrides={}, source="test")
    return core.run_bench(facts, wl, core.plan_for(facts, wl))


@pytest.mark.parametrize("before,after", [(0.3, 3.39), (3.39, 0.3)], ids=["busy-after", "busy-before"])
def test_bench_calls_a_run_busy_when_the_load_was_high_before_or_after(monkeypatch, before, after):
    """2 CPUs: busy above 2.5. recsys.busy.json recorded 3.39 before and 2.83 after; a machine
    that gets busy while bench measures is as busy as one that was busy from the start."""
    result = _bench_with_load(monkeypatch, before, after)
    assert result.load_average == [before, after]
    busy = [n for n in result.notes if n.startswith("the machine was busy")]
    assert busy == [f"the machine was busy: load average {before:.1f} before, {after:.1f} after, on 2 CPUs; "
                    "other processes competed for the cores, so expect noise (and runs that favour fewer "
                    "threads; recommend --measured keeps the planned thread count from such a run)"]


def test_bench_on_a_quiet_machine_says_nothing_about_load(monkeypatch):
    result = _bench_with_load(monkeypatch, 0.3, 1.5)
    assert not [n for n in result.notes if "busy" in n]


# ----------------------------------------------------------------------------------------
# recommend --measured changes only speed settings
# ----------------------------------------------------------------------------------------


def test_measured_never_changes_a_setting_a_rule_decided_for_reproducibility():
    """classification.measured.json: matmul_precision=medium was the fastest (c5, 26.1 ms vs
    the plan's 26.9 ms). A plan that pins float32 matmuls at "highest" for reproducibility
    (tf32-with-bitwise-reproducibility's setting, precedence reproducibility) keeps it: no
    measured configuration kept that value, so the measurement changes nothing."""
    from torchdoctor.bench.core import plan_for
    from torchdoctor.bench.measured import apply_measured
    from torchdoctor.settings import load_registry
    from torchdoctor.report import SettingRec
    from torchdoctor.workload import build_workload

    facts = Facts.model_validate_json((BENCH / "facts.json").read_text())
    wl = build_workload(task="classification", overrides={}, source="test")
    rules_plan = plan_for(facts, wl)
    setting = load_registry()["torch.set_float32_matmul_precision"]
    pin = SettingRec(key=setting.key, value="highest", rule="tf32-with-bitwise-reproducibility",
                     reason="pinned for bitwise reproducibility", kind=setting.kind,
                     precedence="reproducibility", code=setting.render("highest", rules_plan.torch_version))
    plan = rules_plan.model_copy(update={"settings": [*rules_plan.settings, pin]})
    measured = apply_measured(plan, str(BENCH / "classification.measured.json"))
    after = {s.key: (s.value, s.precedence, s.reason) for s in measured.settings}
    assert after["torch.set_float32_matmul_precision"] == ("highest", "reproducibility",
                                                          "pinned for bitwise reproducibility")
    assert [(s.key, s.value) for s in measured.settings] == [(s.key, s.value) for s in plan.settings]
    # the control: without the pin, the same file does change the speed setting to the fastest
    free = apply_measured(rules_plan, str(BENCH / "classification.measured.json"))
    assert {s.key: s.value for s in free.settings}["torch.set_float32_matmul_precision"] == "medium"


# ----------------------------------------------------------------------------------------
# check --distributed: rank 0 sanitises what the other ranks sent
# ----------------------------------------------------------------------------------------


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def test_rank_0_sanitises_the_facts_another_rank_sent():
    from torchdoctor.distributed.job import build_job
    from torchdoctor.distributed.launch import Launch
    from torchdoctor.distributed.model import JobReport

    recorded = JobReport.model_validate_json((DATA / "distributed" / "two_nodes_job.json").read_text())
    rank0, rank1 = recorded.job.ranks[0], recorded.job.ranks[1]
    hostile = json.loads(rank1.model_dump_json())
    hostile["facts"]["env"]["variables"]["NCCL_DEBUG"] = "\x1b]0;pwned\x07INFO\x1b[2J"
    hostile["facts"]["torch"]["version"] = "2.13.0\x1b[31m+cpu"
    got = {"hello": {0: {"host": rank0.host}, 1: {"host": rank1.host}},
           "facts": {0: rank0.model_dump_json(), 1: json.dumps(hostile)},
           "status": {}, "stopped": False, "conn": {}}
    job = build_job(Launch("torchrun", 0, 2, 0, 2, 0, "127.0.0.1", 29500, "t.0"), 60.0, got)
    (sent,) = [r for r in job.ranks if r.rank == 1]
    assert sent.facts.env.variables["NCCL_DEBUG"] == "]0;pwnedINFO"  # what sanitize_text leaves
    assert sent.facts.torch.version == "2.13.0+cpu"
    assert not [s for s in _strings(json.loads(job.model_dump_json())) if "\x1b" in s or "\x07" in s]


# ----------------------------------------------------------------------------------------
# paste readers: the newest torch wording, a list of three GPUs
# ----------------------------------------------------------------------------------------


def test_the_torch_2_13_no_kernels_warning_states_torch_and_the_init_error():
    """torch 2.13's wording (tests/data/torch_messages/README.md): "Your installed
    torch==2.13.0+cu126 does not include kernels for this GPU." The Found GPU line before it
    names the GPU; only this line says which torch it is and that CUDA initialisation warned."""
    from torchdoctor.importers.paste import facts_from_text

    f = facts_from_text((DATA / "torch_messages" / "no_kernels_torch_2.13.txt").read_text(encoding="utf-8"))
    assert f.torch.version == "2.13.0+cu126" and f.torch.cuda_build == "12.6"
    assert f.sources["torch.version"] == "torch message, line 10"
    assert f.torch.cuda_init_error == ("Your installed torch==2.13.0+cu126 does not include kernels for this "
                                       "GPU. Reinstall the same version against a CUDA build that does, e.g.:")
    assert f.gpu.name == "NVIDIA GeForce RTX 5090" and f.gpu.max_compute_capability == 12.0


def test_a_collect_env_list_of_three_gpus_is_three_gpus():
    """corpus/case040: "GPU models and configuration:" then GPU 0: TITAN V, GPU 1: TITAN Xp,
    GPU 2: GeForce RTX 2080 Ti (three different GPUs, so none can stand for the others)."""
    from torchdoctor.importers import load_report
    from torchdoctor.importers.paste import facts_from_text

    text = (DATA / "corpus" / "case040.txt").read_text(encoding="utf-8")
    want = [(0, "TITAN V"), (1, "TITAN Xp"), (2, "GeForce RTX 2080 Ti")]
    for facts in (load_report(text.encode(), "case040.txt"), facts_from_text(text)):
        assert facts.gpu.count == 3
        assert [(d.index, d.name) for d in facts.gpu.devices] == want
        assert facts.gpu.min_compute_capability == 6.1 and facts.gpu.max_compute_capability == 7.5


def test_a_pasted_list_of_three_gpus_outside_a_report_is_three_gpus():
    """The same three lines pasted alone (no collect_env header), and a label followed by one
    GPU per line (the Lightning / transformers layout: "GPU:" then the names)."""
    from torchdoctor.importers.paste import facts_from_text

    lines = [ln for ln in (DATA / "corpus" / "case040.txt").read_text(encoding="utf-8").splitlines()
             if ln.startswith("GPU ") and ln[4:5].isdigit()]
    assert len(lines) == 3
    alone = facts_from_text("My machine:\n" + "\n".join(lines) + "\n")
    assert [d.name for d in alone.gpu.devices] == ["TITAN V", "TITAN Xp", "GeForce RTX 2080 Ti"]
    listed = facts_from_text("* CUDA:\n\t- GPU:\n\t\t- TITAN V\n\t\t- TITAN Xp\n\t\t- GeForce RTX 2080 Ti\n"
                             "\t- available:         True\n")
    assert listed.gpu.count == 3
    assert [d.name for d in listed.gpu.devices] == ["TITAN V", "TITAN Xp", "GeForce RTX 2080 Ti"]


def test_three_gpus_by_count_prefix_are_three():
    from torchdoctor.importers.paste import facts_from_text

    f = facts_from_text((DATA / "cases2" / "case231.txt").read_text(encoding="utf-8"))  # "- **GPU**: 3x NVIDIA RTX A6000"
    assert f.gpu.count == 3 and [d.index for d in f.gpu.devices] == [0, 1, 2]


# ----------------------------------------------------------------------------------------
# the sandbox refuses "_" names, attributes and keys when the rule loads
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("source,words", [
    ("{{ cycler.__init__ }}", "attribute '__init__' is private"),
    ("{{ torch['__class__'] }}", "key '__class__' is private"),
    ("{% set _saved = torch %}{{ _saved }}", "name '_saved' is private"),
])
def test_the_sandbox_refuses_private_names_at_load_time(source, words):
    """Load time, not render time: jinja's own sandbox renders ``cycler.__init__`` as an empty
    undefined (no error at all), so without the load-time check such a rule would load."""
    from torchdoctor import sandbox

    with pytest.raises(sandbox.TemplateProblem, match=words):
        sandbox.check_message(source, {"torch", "cycler"})


def test_a_rule_pack_with_a_private_attribute_fails_to_load(tmp_path, facts_file, capsys):
    from tests.test_hardening_rules import one_line, pack, run

    rules = pack(tmp_path, "private-attr", "\"{{ cycler.__init__ }}\"")
    line = one_line(*run(capsys, "check", "--facts", facts_file, "--rules", rules))
    assert f"{rules / 'team' / 'private-attr.yaml'}:7:" in line and "attribute '__init__' is private" in line


# ----------------------------------------------------------------------------------------
# redaction: NAME=1.2.3.4 is an address, even where NAME is a version word
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("CUDA=10.0.0.1", "CUDA=<ip>"),
    ("NCCL=10.1.2.3", "NCCL=<ip>"),
    ("DRIVER: 10.0.0.1", "DRIVER: <ip>"),
    ("cuda=10.0.0.1 and cuDNN 8.9.2.26", "cuda=10.0.0.1 and cuDNN 8.9.2.26"),  # lower case: a version
])
def test_an_upper_case_name_assigned_a_dotted_quad_is_an_address(text, expected):
    """"CUDA 10.0.0.1" would be a version (a version word before it); an upper-case variable
    assigned it is an address whatever the name says."""
    from torchdoctor import redact

    assert redact.redact_text(text, "message") == expected


# ----------------------------------------------------------------------------------------
# safeio: a file of exactly the size limit is read
# ----------------------------------------------------------------------------------------


def test_a_file_of_exactly_the_limit_is_read_and_one_byte_more_is_refused(tmp_path):
    from torchdoctor.safeio import InputError, read_bounded

    exact = tmp_path / "exact.json"
    exact.write_bytes(b"x" * 1000)
    assert read_bounded(str(exact), 1000) == b"x" * 1000
    over = tmp_path / "over.json"
    over.write_bytes(b"x" * 1001)
    with pytest.raises(InputError, match="larger than 1000 bytes"):
        read_bounded(str(over), 1000)


def test_a_report_of_exactly_the_default_limit_is_read(tmp_path):
    from torchdoctor.safeio import MAX_INPUT_BYTES, InputError, read_bounded

    body = (DATA / "corpus" / "case040.txt").read_bytes()
    exact = tmp_path / "report.txt"
    exact.write_bytes(body + b" " * (MAX_INPUT_BYTES - len(body)))
    assert len(read_bounded(str(exact))) == MAX_INPUT_BYTES
    exact.write_bytes(body + b" " * (MAX_INPUT_BYTES + 1 - len(body)))
    with pytest.raises(InputError, match="larger than 5 MiB"):
        read_bounded(str(exact))


def test_stdin_of_exactly_the_limit_is_read(monkeypatch):
    import io

    from torchdoctor.safeio import InputError, read_bounded

    class Stdin:
        def __init__(self, data: bytes):
            self.buffer = io.BytesIO(data)

    monkeypatch.setattr(sys, "stdin", Stdin(b"y" * 64))
    assert read_bounded("-", 64) == b"y" * 64
    monkeypatch.setattr(sys, "stdin", Stdin(b"y" * 65))
    with pytest.raises(InputError):
        read_bounded("-", 64)



# ----------------------------------------------------------------------------------------
# survivors of scripts/mutation_check.py's own catalogue (each test names its mutant)
# ----------------------------------------------------------------------------------------


def test_a_transposed_short_name_is_one_edit_and_gets_its_suggestion():
    """lint-distance-no-transposition: "enalbed" is "enabled" with two letters swapped; a
    7-letter name allows one edit, so only a transposition counted as one edit finds it."""
    from torchdoctor.lint.checks import distance

    assert distance("enalbed", "enabled") == 1
    (f,) = _lint("import torch\ntorch.backends.cudnn.enalbed = True\n")
    assert "Did you mean torch.backends.cudnn.enabled?" in f.message and f.fix is not None


def test_a_short_name_two_edits_away_gets_no_suggestion():
    """lint-typo-limit: under 8 characters one edit is the limit ("enbld" is two from "enabled")."""
    (f,) = _lint("import torch\ntorch.backends.cudnn.enbld = True\n")
    assert f.id == "fake-backends-setting" and "Did you mean" not in f.message and f.fix is None


def test_private_backends_attributes_are_not_reported():
    """lint-private-attrs-checked: torch's private names (``_``) are not in the names table on
    purpose; code that touches them knows what it does."""
    assert _lint("import torch\nx = torch.backends.cudnn._private_state\ntorch.backends.mkldnn._flag = 1\n") == []


def test_a_version_bound_is_exclusive_above_and_inclusive_below():
    """lint-in-range-upper / lint-in-range-lower: ``since <= version < until``."""
    from torchdoctor.lint.versions import in_range

    assert in_range((2, 4, 0), "2.4", None) and not in_range((2, 3, 9), "2.4", None)
    assert not in_range((2, 4, 0), None, "2.4") and in_range((2, 3, 9), None, "2.4")


@pytest.mark.parametrize("flag,torch,expected", [
    ("_TORCH_GREATER_EQUAL_2_1", (2, 1, 0), True), ("_TORCH_GREATER_EQUAL_2_1", (2, 0, 9), False),
    ("TORCH_LESS_THAN_2_1", (2, 1, 0), False), ("TORCH_LESS_THAN_2_1", (2, 0, 9), True),
])
def test_version_flags_hold_from_their_own_version(flag, torch, expected):
    """lint-guard-ge: _TORCH_GREATER_EQUAL_2_1 (Lightning's spelling) is true on 2.1 itself."""
    import ast

    from torchdoctor.lint.guards import truth

    assert truth(ast.parse(flag).body[0].value, torch) is expected


def test_a_tie_for_the_common_value_goes_to_the_lowest_rank():
    """dist-majority-tie-highest-rank: 2 ranks, 2 values: rank 1 is the odd one, not rank 0."""
    from torchdoctor.distributed import compare

    pairs = [(0, "2.5.1"), (1, "2.4.0")]
    assert compare.majority(pairs) == compare.key("2.5.1")
    assert compare.odd_ranks(pairs) == [1]
    assert compare.odd_ranks([(3, "b"), (2, "a"), (1, "b"), (0, "a")]) == [1, 3]


def test_of_two_package_rows_of_one_rank_the_first_line_wins():
    """paste-row-later-wins: "the best rank wins, then the earliest line" (paste/__init__)."""
    from torchdoctor.importers.paste import facts_from_text

    f = facts_from_text("$ pip list\nPackage    Version\n---------- -------\ntorch      2.1.0\n"
                        "numpy      1.26.0\ntorch      2.3.0\n")
    assert f.packages.versions["torch"] == "2.1.0" and f.sources["packages.versions"] == "package list, line 4"


def test_a_recursive_loop_is_refused_when_the_rule_loads():
    """sandbox-recursive-loop."""
    from torchdoctor import sandbox

    with pytest.raises(sandbox.TemplateProblem, match="recursive loops are not allowed"):
        sandbox.check_message("{% for x in torch.devices recursive %}{{ loop(x) }}{% endfor %}", {"torch"})


def test_the_cache_keeps_exactly_max_entries(tmp_path, monkeypatch):
    """cache-prune-off-by-one: storing MAX_ENTRIES + 1 entries leaves MAX_ENTRIES, the newest."""
    from torchdoctor import rulecache

    base = tmp_path / "cache"
    base.mkdir(mode=0o700)
    monkeypatch.setenv(rulecache.ENV_DIR, str(base))
    monkeypatch.delenv(rulecache.ENV_DISABLE, raising=False)
    for i in range(rulecache.MAX_ENTRIES + 1):
        assert rulecache.store(f"rules-{i:03d}.json", "k", {"i": i})
        os.utime(base / f"rules-{i:03d}.json", ns=(10**18 + i * 10**9,) * 2)  # written in this order
    names = sorted(p.name for p in base.glob("*.json"))
    assert len(names) == rulecache.MAX_ENTRIES
    assert names[0] == "rules-001.json" and rulecache.load("rules-064.json", "k") == {"i": 64}


def test_a_plan_that_is_the_fastest_with_no_spread_is_not_slower_than_itself():
    """bench-beyond-noise-inclusive: steady timings (no spread: noise 0) and the plan fastest:
    a regret of 0 equals the noise of 0 and is not a difference."""
    from torchdoctor.bench.results import BenchConfig, Measurement
    from torchdoctor.bench.stats import summarize, verdict

    def meas(cid, roles, times):
        config = BenchConfig(id=cid, label=cid, roles=roles, knobs={}, changed=None, settings={}, code={})
        return summarize(Measurement(config=config, status="ok", times_s=times))

    v = verdict([meas("p", ["plan"], [0.02] * 5), meas("d", ["defaults"], [0.03] * 5)])
    assert v.best == "p" and v.regret == 0 and v.noise == 0 and v.beyond_noise is False
    assert v.summary == "the plan is the fastest configuration measured (noise ±0.0%)"


def test_torchs_bare_defaults_never_win_measured(tmp_path):
    """measured-defaults-eligible: classification.json with torch's defaults (c1) made the
    fastest: --measured still keeps the plan (the defaults are the baseline, not a candidate)."""
    from torchdoctor.bench.core import plan_for
    from torchdoctor.workload import build_workload

    data = json.loads((BENCH / "classification.json").read_text())
    (c1,) = [m for m in data["measurements"] if m["config"]["roles"] == ["defaults"]]
    c1["times_s"] = [t / 10 for t in c1["times_s"]]
    for k in ("median_s", "q1_s", "q3_s", "iqr_s", "mad_s"):
        c1[k] = c1[k] / 10
    path = tmp_path / "classification.json"
    path.write_text(json.dumps(data))
    facts = Facts.model_validate_json((BENCH / "facts.json").read_text())
    wl = build_workload(task="classification", overrides={}, source="test")
    plan = plan_for(facts, wl, measured=str(path))
    assert {s.key: s.value for s in plan.settings} == {s.key: s.value for s in plan_for(facts, wl).settings}
    assert not [d for d in plan.dropped if "torch's default was faster" in d.reason]


def test_a_configuration_exactly_as_fast_as_the_plan_does_not_replace_it(tmp_path):
    """measured-within-noise-exclusive: classification.json with the plan (c2) and its
    matmul_precision=medium neighbour (c5) both at a steady 25 ms (noise 0, regret 0), c5
    listed first: a regret equal to the noise is no measured difference, the plan stands."""
    from torchdoctor.bench.core import plan_for
    from torchdoctor.workload import build_workload

    data = json.loads((BENCH / "classification.json").read_text())
    by_id = {m["config"]["id"]: m for m in data["measurements"]}
    for cid in ("c2", "c5"):
        m = by_id[cid]
        m["times_s"] = [0.025] * len(m["times_s"])
        m.update(median_s=0.025, q1_s=0.025, q3_s=0.025, iqr_s=0.0, mad_s=0.0)
    data["measurements"] = [by_id["c5"]] + [m for m in data["measurements"] if m is not by_id["c5"]]
    path = tmp_path / "classification.json"
    path.write_text(json.dumps(data))
    facts = Facts.model_validate_json((BENCH / "facts.json").read_text())
    wl = build_workload(task="classification", overrides={}, source="test")
    plan = plan_for(facts, wl, measured=str(path))
    assert "torch.set_float32_matmul_precision" not in {s.key for s in plan.settings}
    assert "within noise of the fastest configuration (25.0 vs 25.0 ms/step" in \
        {s.key: s.reason for s in plan.settings}["autocast.dtype"]
