"""One entry per setting (issue 10, item 3): rules/settings.yaml says how a setting is written,
read back (getter), when it takes effect, how user code takes it and its look-alikes; the
torch child and apply() read values back through it, and adding a setting touches that file
(and a rule that recommends it) only."""

from __future__ import annotations

from pathlib import Path

import pytest

from torchdoctor.errors import RuleFileError
from torchdoctor.paths import default_rules_dir
from torchdoctor.probes import _child_settings
from torchdoctor.settings import _load_registry, load_registry

REG = load_registry()

_ENTRY = "settings:\n  {key}:\n{body}    summary: s\n    references: []\n"


def _write(tmp_path: Path, key: str, body: str, extra: str = "") -> str:
    path = tmp_path / "settings.yaml"
    path.write_text(_ENTRY.format(key=key, body=body) + extra, encoding="utf-8")
    return str(path)


# -- what each kind needs -------------------------------------------------------------------


@pytest.mark.parametrize("key", [k for k, s in REG.settings.items() if s.kind != "code"])
def test_every_setting_apply_can_set_has_a_getter(key):
    s = REG[key]
    assert s.getter is not None
    if s.kind == "env":
        assert s.getter.env == key.split(".", 1)[1]
        assert s.takes_effect is not None and s.takes_effect.references
    else:
        assert s.getter.attribute or s.getter.call


@pytest.mark.parametrize("key", [k for k, s in REG.settings.items() if s.kind == "code"])
def test_every_code_setting_says_how_user_code_takes_it(key):
    uses = REG[key].uses
    assert uses and all(u.name in (REG[key].python or "") + str(REG[key].values) for u in uses)


@pytest.mark.parametrize(
    "key, body, message",
    [
        ("torch.set_x", "    kind: call\n    type: bool\n    python: 'torch.set_x({value})'\n",
         "it needs a `getter`"),
        ("torch.a.b", "    kind: assign\n    type: bool\n    python: 'torch.a.b = {value}'\n"
         "    getter: {env: B}\n", "it needs a `getter`"),
        ("env.X", "    kind: env\n    type: int\n    python: 'os.environ[\"X\"] = str({value})'\n"
         "    getter: {env: X}\n", "needs `takes_effect`"),
        ("env.X", "    kind: env\n    type: int\n    python: 'os.environ[\"X\"] = str({value})'\n"
         "    getter: {env: Y}\n    takes_effect: {when: torch-import, source: s}\n",
         r"needs `getter: \{env: X\}`"),
        ("k", "    kind: code\n    type: bool\n    python: 'K = {value}'\n", "needs `uses`"),
        ("k", "    kind: code\n    type: bool\n    python: 'K = {value}'\n"
         "    uses: [{name: OTHER, how: f(OTHER)}]\n", "OTHER is not a constant"),
    ],
)
def test_an_entry_without_what_its_kind_needs_does_not_load(tmp_path, key, body, message):
    with pytest.raises(RuleFileError, match=message):
        _load_registry(_write(tmp_path, key, body))


@pytest.mark.parametrize(
    "getter, message",
    [
        ("{call: __import__}", "a dotted path on torch"),
        ("{call: torch.x(1)}", "a dotted path on torch"),
        ("{attribute: os.system}", "a dotted path on torch"),
        ("{call: torch.a, attribute: torch.b}", "exactly one of"),
        ("{call: torch.a, result: eval}", "getter.result"),
    ],
)
def test_getters_are_data_never_code(tmp_path, getter, message):
    body = f"    kind: call\n    type: bool\n    python: 'torch.a({{value}})'\n    getter: {getter}\n"
    with pytest.raises(RuleFileError, match=message):
        _load_registry(_write(tmp_path, "torch.a", body))


def test_a_getter_the_child_cannot_scan_does_not_load(tmp_path):
    """The torch child reads getters without YAML: a block-style getter would be invisible to
    it, so the registry refuses it instead of letting the two disagree."""
    body = "    kind: call\n    type: bool\n    python: 'torch.a({value})'\n    getter:\n      call: torch.b\n"
    with pytest.raises(RuleFileError, match="write `getter:` on one line"):
        _load_registry(_write(tmp_path, "torch.a", body))


def test_observed_entries_are_not_settings_and_real_look_alikes_are_observed(tmp_path):
    body = ("    kind: call\n    type: bool\n    python: 'torch.a({value})'\n    getter: {call: torch.b}\n")
    dup = "observed:\n  torch.a:\n    getter: {call: torch.b}\n"
    with pytest.raises(RuleFileError, match="observed torch.a: is also a setting"):
        _load_registry(_write(tmp_path, "torch.a", body, dup))
    alike = body + "    look_alikes: [{name: torch.c, relation: legacy}]\n"
    with pytest.raises(RuleFileError, match="look-alike torch.c needs an `observed` entry"):
        _load_registry(_write(tmp_path, "torch.a", alike))
    for name, relation in [(n, a.relation) for s in REG.settings.values() for a in s.look_alikes
                           for n in [a.name]]:
        assert (name in REG.observed) == (relation in ("legacy", "new-api")), name


def test_every_fake_has_a_did_you_mean_or_a_note():
    """A fake name is one the in-process audit explains: the real statement or a note, from
    the registry (the one source for audit(), lint and recommend)."""
    table = REG.fake_table()
    named = {a.name for e in [*REG.settings.values(), *REG.observed.values()]
             for a in e.look_alikes if a.relation == "fake"} | set(REG.fakes)
    assert named and set(table) == named
    for name, entry in table.items():
        assert entry["did_you_mean"] or entry["note"], name
        assert entry["category"] in (None, "performance", "reproducibility", "threads"), name


def test_a_fake_named_twice_in_the_registry_is_refused(tmp_path):
    text = (default_rules_dir() / "settings.yaml").read_text(encoding="utf-8")
    text += "  torch.backends.mkl.enabled:\n    note: twice\n    references: [https://x]\n"
    path = tmp_path / "settings.yaml"
    path.write_text(text)
    with pytest.raises(RuleFileError, match="fakes torch.backends.mkl.enabled: is already a look-alike"):
        _load_registry(str(path))


def test_the_child_scans_exactly_the_getters_yaml_parses():
    text = (default_rules_dir() / "settings.yaml").read_text(encoding="utf-8")
    assert _child_settings.scan(text) == REG.getters()
    assert _child_settings.default_getters() == REG.getters()
    assert len(REG.getters()) == len(REG.settings) - sum(
        s.kind == "code" for s in REG.settings.values()) + len(REG.observed)


def test_env_timing_lives_in_the_registry():
    from torchdoctor.inprocess.apply import _env_read_at

    read_at = _env_read_at()
    assert read_at["OMP_NUM_THREADS"] == "torch-import"
    assert read_at["CUBLAS_WORKSPACE_CONFIG"] == "cuda-init"
    assert read_at["NCCL_P2P_DISABLE"] == "distributed-init"
    assert set(read_at) == {k[4:] for k, s in REG.settings.items() if s.kind == "env"}


@pytest.mark.parametrize("task", ["llm-training", "classification", "research-repro", "llm-inference"])
def test_snippet_names_how_user_code_takes_each_constant_from_the_registry(task):
    """The snippet's "Values for your own code" line comes from the plan's settings, each
    carrying its registry `uses` (no list of constants in the renderer)."""
    from torchdoctor.api import plan_report
    from torchdoctor.rules import load_rules
    from torchdoctor.synthetic import facts_for_gpu
    from torchdoctor.workload import build_workload

    report = plan_report(load_rules(), facts_for_gpu("8x H100"), build_workload(task))
    wanted = [u.how for rec in report.settings for u in REG.settings[rec.key].uses]
    assert [rec.uses for rec in report.settings] == [[u.how for u in REG.settings[rec.key].uses]
                                                    for rec in report.settings]
    help_text = " ".join(line.lstrip("#") for line in report.snippet.splitlines()
                         if line.startswith("#"))
    for how in wanted:
        assert how in " ".join(help_text.split()), how
    assert bool(wanted) == ("Values for your own code" in report.snippet)


@pytest.mark.torch
def test_every_getter_reads_the_real_torch():
    """Each getter of the shipped registry names something torch 2.13 has (a typo in a path
    would read as "absent" and the setting would silently never be read back)."""
    import torch

    for key, getter in REG.getters():
        if "env" in getter:
            continue
        value = _child_settings.read_one(torch, key, getter)
        assert value is not _child_settings.ABSENT, (key, getter)
        assert not isinstance(value, dict), (key, value)


@pytest.mark.torch
def test_apply_reads_seed_back_through_the_registry():
    import torch

    from torchdoctor.inprocess.apply import NO_GETTER, current

    torch.manual_seed(1234)
    assert current(torch, "seed") == 1234
    assert current(torch, "dataloader.num_workers") is NO_GETTER  # code: returned, not set
    assert "seed" not in _child_settings.read(torch)  # probe: false


# -- adding one setting: the registry and a rule, nothing else --------------------------------

NEW_SETTING = """\
  torch.set_warn_always:
    kind: call
    type: bool
    python: 'torch.set_warn_always({value})'
    getter: {call: torch.is_warn_always_enabled}
    since: "1.9"
    summary: Show every warning torch raises, not only the first of each kind.
    references:
      - https://pytorch.org/docs/stable/generated/torch.set_warn_always.html
"""

NEW_RULE = """\
id: warnings-shown-once-while-debugging
severity: info
category: debug-setting
precedence: stability
summary: Repeated torch warnings are shown once.
why: torch shows most warnings once per process; while debugging every occurrence matters.
when: workload.mode == "training"
message: Show every torch warning while debugging.
recommend:
  torch.set_warn_always: true
fix: torch.set_warn_always(True)
references:
  - https://pytorch.org/docs/stable/generated/torch.set_warn_always.html
examples:
  fires:
    - name: training
      facts:
        workload: {mode: training}
      recommend: {torch.set_warn_always: true}
  ok:
    - name: inference
      facts:
        workload: {mode: inference}
"""


@pytest.mark.torch
def test_a_setting_added_to_the_registry_alone_is_planned_written_applied_and_read_back(
    tmp_path, monkeypatch
):
    import torch

    from torchdoctor import rules as rules_mod
    from torchdoctor import settings as settings_mod
    from torchdoctor.engine import evaluate
    from torchdoctor.facts import Facts
    from torchdoctor.inprocess.apply import apply_plan
    from torchdoctor.render import snippet
    from torchdoctor.workload import build_workload

    rules_dir = tmp_path / "rules"
    (rules_dir / "debug").mkdir(parents=True)
    shipped = (default_rules_dir() / "settings.yaml").read_text(encoding="utf-8")
    assert "\nsettings:\n" in shipped
    (rules_dir / "settings.yaml").write_text(
        shipped.replace("\nsettings:\n", "\nsettings:\n" + NEW_SETTING, 1), encoding="utf-8")
    (rules_dir / "debug" / "warnings-shown-once-while-debugging.yaml").write_text(NEW_RULE)
    monkeypatch.setattr(settings_mod, "default_rules_dir", lambda: rules_dir)
    monkeypatch.setattr(rules_mod, "default_rules_dir", lambda: rules_dir)

    registry = load_registry()
    assert "torch.set_warn_always" in registry and registry is not REG
    # plan
    rules = rules_mod.load_rules()
    workload = build_workload(task=None, overrides={"mode": "training"}, source="test")
    report = evaluate(rules, Facts(), workload, command="recommend")
    rec = {r.key: r for r in report.settings}["torch.set_warn_always"]
    assert rec.code == "torch.set_warn_always(True)"
    # snippet
    text = snippet.render(report)
    assert "torch.set_warn_always(True)  # warnings-shown-once-while-debugging" in text
    compile(text, "<snippet>", "exec")
    # apply() and read-back, through the temporary registry's getter
    was = torch.is_warn_always_enabled()
    torch.set_warn_always(False)
    try:
        result = apply_plan(facts=Facts(), mode="training")
        assert [(c.key, c.before, c.after) for c in result.changed] == [
            ("torch.set_warn_always", False, True)]
        assert torch.is_warn_always_enabled() is True
        again = apply_plan(facts=Facts(), mode="training")
        assert [(c.key, c.after) for c in again.unchanged] == [("torch.set_warn_always", True)]
        # the torch child reads it back through the same registry (in-process here)
        assert _child_settings.read(torch, registry.getters())["torch.set_warn_always"] is True
    finally:
        torch.set_warn_always(was)
