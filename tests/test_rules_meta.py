"""Meta-tests over the rule set: ids, documentation, fact paths, settings, schema."""

from __future__ import annotations

import json

import pytest

from torchdoctor.engine import example_facts
from torchdoctor.paths import default_rules_dir
from torchdoctor.rules import ITEM, check_fact_path, fact_paths, load_rules, rule_schema_text
from torchdoctor.settings import load_registry

RULES = load_rules()


def test_rules_exist():
    assert RULES, "no rules found"


def test_schema_json_is_current():
    path = default_rules_dir() / "schema.json"
    assert path.read_text(encoding="utf-8") == rule_schema_text(), (
        "rules/schema.json is stale: run `python -m torchdoctor rules schema > rules/schema.json`"
    )


def test_settings_schema_json_is_current():
    """settings.yaml names ./settings.schema.json for editors: it exists and is the registry's
    model as it is now."""
    from torchdoctor.settings import settings_schema_text

    registry = default_rules_dir() / "settings.yaml"
    assert "$schema=./settings.schema.json" in registry.read_text(encoding="utf-8").splitlines()[0]
    path = default_rules_dir() / "settings.schema.json"
    assert path.read_text(encoding="utf-8") == settings_schema_text(), (
        "rules/settings.schema.json is stale: run "
        "`python -m torchdoctor rules schema --settings > rules/settings.schema.json`"
    )


def item_binding(rule) -> dict:
    """``{"item": "<list>[]"}`` for a for_each rule (as the loader binds it), else ``{}``."""
    return {ITEM: f"{rule.for_each}[]"} if rule.for_each else {}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_is_documented(rule):
    for field in ("summary", "why", "fix", "message"):
        assert getattr(rule, field).strip(), f"{rule.id}: empty {field}"
    assert all(ref.startswith(("http://", "https://")) for ref in rule.references), rule.references
    assert rule.path and rule.path.endswith(f"{rule.id}.yaml")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_rule_paths_and_examples_are_real(rule):
    for path in fact_paths(rule.when, item_binding(rule)):
        assert check_fact_path(path) is None, f"{rule.id}: {check_fact_path(path)}"
    for group in ("fires", "ok", "skips"):
        for ex in getattr(rule.examples, group):
            example_facts(ex.facts)  # raises on an unknown fact name (extra="forbid")


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_message_reads_only_facts_when_reads(rule):
    """A fired rule can always render its message: it may only use facts `when` touched."""
    import jinja2.meta

    from torchdoctor.rules import message_env

    from jinja2 import nodes

    ast_ = message_env().parse(rule.message)
    targets = [a.target for a in ast_.find_all((nodes.Assign, nodes.For))]
    assigned = {n.name for t in targets for n in [t, *t.find_all(nodes.Name)] if isinstance(n, nodes.Name)}
    roots = jinja2.meta.find_undeclared_variables(ast_) - assigned
    # table functions that take unknown facts as "unknown" (wheel_platform, wheel_for: the
    # platform only refines the advice) may be handed facts `when` never read
    tolerant = {"wheel_platform", "wheel_for"}
    inside = [n for call in ast_.find_all(nodes.Call)
              if isinstance(call.node, nodes.Name) and call.node.name in tolerant
              for arg in call.args for n in arg.find_all(nodes.Name)]
    elsewhere = [n for n in ast_.find_all(nodes.Name) if n.ctx == "load" and all(n is not m for m in inside)]
    roots -= {n.name for n in inside} - {n.name for n in elsewhere}
    when_roots = {p.split(".")[0].split("[")[0] for p in fact_paths(rule.when)}
    when_roots |= set(item_binding(rule))  # a for_each rule's `item`
    from torchdoctor.engine import functions

    unknown = roots - when_roots - set(functions()) - {"known", "fact_or"}  # as in `when`
    assert not unknown, f"{rule.id}: message uses {sorted(unknown)} which `when` never reads"


def test_recommend_keys_in_registry():
    registry = load_registry()
    for rule in RULES:
        for key in rule.recommend:
            assert key in registry, f"{rule.id}: {key}"


def test_every_setting_is_documented():
    registry = load_registry()
    for key, s in registry.settings.items():
        assert s.summary and s.references, key
        json.dumps(s.model_dump())


def test_ids_unique():
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))


def test_writing_rules_lists_every_table_function():
    from pathlib import Path

    from torchdoctor.engine import TABLE_FUNCTIONS

    doc = (Path(__file__).resolve().parents[1] / "docs" / "writing-rules.md").read_text(encoding="utf-8")
    missing = [name for name in TABLE_FUNCTIONS if f"`{name}`" not in doc]
    assert not missing, f"docs/writing-rules.md does not list {missing}"
