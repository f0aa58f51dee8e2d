"""torchdoctor/sandbox_ir.py: a shipped rule's message rendered without jinja2 is jinja2's own text, for every
example of every rule (each outcome's message compared, both ways); a render it is not sure of goes to jinja2;
and a warm triage or check of a collect_env whose finding has a templated message imports no jinja2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor import engine, rulecache, sandbox, sandbox_ir
from torchdoctor.rules import load_rules

REPO = Path(__file__).resolve().parent.parent


def _messages(rule) -> list:
    out = []
    for group in ("fires", "ok", "skips"):
        for ex in getattr(rule.examples, group):
            facts, workload = engine.example_facts(ex.facts)
            job = engine.example_job(ex.facts)
            out.append([(o.status, o.message) for o in engine.outcomes(rule, facts, workload, job)])
    return out


@pytest.fixture(scope="module")
def rules():
    return load_rules()


def test_every_example_of_every_rule_renders_as_jinja2_renders_it(rules, monkeypatch):
    used = {"ir": 0}
    real = sandbox_ir.render

    def counting(*args, **kwargs):
        text = real(*args, **kwargs)
        used["ir"] += 1
        return text

    for rule in rules:
        sandbox_ir.remember(rule.message, sandbox.check_message(rule.message, _names(rule)))
    monkeypatch.setattr(sandbox_ir, "render", counting)
    monkeypatch.setenv("TORCHDOCTOR_MESSAGE_IR", "1")
    with_ir = {r.id: _messages(r) for r in rules}
    monkeypatch.setenv("TORCHDOCTOR_MESSAGE_IR", "0")
    with_jinja = {r.id: _messages(r) for r in rules}
    assert with_ir == with_jinja
    fired = sum(1 for r in with_jinja.values() for ex in r for status, _ in ex if status == "fired")
    assert fired > 250 and used["ir"] > 0.8 * fired, (used, fired)  # most renders need no jinja2


def _names(rule) -> set:
    from torchdoctor.rules import _item_binding, message_names

    return set(message_names(_item_binding(rule, lambda *a: AssertionError(a))))


def test_the_plain_data_form_is_data_and_a_node_it_does_not_know_is_left_to_jinja2():
    env = sandbox.environment()
    ir = sandbox_ir.to_ir(env.parse("{% for x in y if x %}{{ loop.index }}{{ x | upper }}{% endfor %}"))
    assert ir is None  # `upper` is not a filter it interprets
    ir = sandbox_ir.to_ir(env.parse("{% set n = namespace(a=1) %}{% set n.a = 2 %}{{ n.a ~ '!' }}"))
    import json

    assert json.loads(json.dumps(ir)) == ir


@pytest.mark.parametrize("source, context, expected", [
    ("{{ a.b }}", {"a": {"b": 1}}, "1"),  # an item, where there is no attribute
    ("{{ a['upper'] }}", {"a": {"upper": 2}}, "2"),
    ("{% for x in xs %}{{ x }}{% if not loop.last %}, {% endif %}{% endfor %}", {"xs": [1, 2, 3]}, "1, 2, 3"),
    ("{% for x in xs if x > 1 %}{{ loop.index }}:{{ x }} {% endfor %}", {"xs": [1, 2, 3]}, "1:2 2:3 "),
    ("{% set t = 1 %}{% for x in xs %}{% set t = x %}{% endfor %}{{ t }}", {"xs": [5]}, "1"),  # loop scope
    ("{% set ns = namespace(t=1) %}{% for x in xs %}{% set ns.t = x %}{% endfor %}{{ ns.t }}", {"xs": [5]}, "5"),
    ("{{ 1 < x < 3 }} {{ x in [1, 2] }} {{ 'ab' ~ x }}", {"x": 2}, "True True ab2"),
    ("{{ xs | join(', ') }} {{ xs | length }} {{ '3.7' | int }} {{ 2.567 | round(1) }}", {"xs": ["a", "b"]},
     "a, b 2 3 2.6"),
    ("{{ ['b', 'A', 'c'] | max }} {{ 7.9 | round(0, 'floor') }}", {}, "c 7.0"),
    ("{{ xs | map('replace', 'sm_', '') | join(' ') }}", {"xs": ["sm_80", "sm_90"]}, "80 90"),
    ("{{ x if x is number else 'n/a' }} {{ y is none }} {{ z is string }}", {"x": 3, "y": None, "z": "s"},
     "3 True True"),
    ("{{ s.split('.')[0] }} {{ s[:3] }}", {"s": "12.8.1"}, "12 12."),
])
def test_small_templates_render_as_jinja2_renders_them(source, context, expected, monkeypatch):
    env = sandbox.environment()
    ir = sandbox_ir.to_ir(env.parse(source))
    assert ir is not None
    token = sandbox._BUDGET.set(sandbox._Budget(set()))
    try:
        got = sandbox_ir.render(ir, context, set(), sandbox)
    finally:
        sandbox._BUDGET.reset(token)
    monkeypatch.setenv("TORCHDOCTOR_MESSAGE_IR", "0")
    assert got == sandbox.render(source, dict(context), {}) == expected


@pytest.mark.parametrize("source, context", [
    ("{{ missing }}", {}),  # undefined: jinja2's StrictUndefined words it
    ("{{ a.__class__ }}", {"a": 1}),
    ("{{ xs.append(1) }}", {"xs": []}),
    ("{{ f() }}", {"f": print}),  # not an engine function
    ("{{ '%s' % x }}", {"x": 1}),
    ("{{ x if false }}", {"x": 1}),
    ("{{ [] | max }}", {}),
])
def test_what_it_is_not_sure_of_is_left_to_jinja2(source, context):
    env = sandbox.environment()
    ir = sandbox_ir.to_ir(env.parse(source))
    if ir is None:
        return
    token = sandbox._BUDGET.set(sandbox._Budget(set()))
    try:
        with pytest.raises(sandbox_ir.Fallback):
            sandbox_ir.render(ir, context, set(), sandbox)
    finally:
        sandbox._BUDGET.reset(token)


def test_a_warm_run_with_a_templated_finding_imports_no_jinja2(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in (rulecache.ENV_DISABLE, "TORCHDOCTOR_MESSAGE_IR")}
    env[rulecache.ENV_DIR] = str(tmp_path / "cache")
    body = str(REPO / "tests" / "data" / "cases" / "case101.txt")  # an RTX 5090 D: gpu-arch-not-in-build fires
    code = ("import sys\nfrom torchdoctor.cli import main\nrc = main(sys.argv[1:])\n"
            "print('JINJA', 'jinja2' in sys.modules, file=sys.stderr)\n")
    outs = []
    for extra in ({}, {}, {"TORCHDOCTOR_MESSAGE_IR": "0"}):
        run = subprocess.run([sys.executable, "-c", code, "triage", "--body", body], capture_output=True, text=True,
                             timeout=120, env={**env, **extra}, cwd=REPO)
        assert "gpu-arch-not-in-build" in run.stdout, run.stderr[-2000:]
        outs.append((run.stdout, run.stderr.splitlines()[-1]))
    assert outs[1][1] == "JINJA False"  # warm: the message rendered from the cache's plain data
    assert outs[2][1] == "JINJA True"  # and with jinja2, the same comment
    assert outs[0][0] == outs[1][0] == outs[2][0]
