"""Every example of every shipped rule is a test (collected automatically, never a hand-kept list)."""

from __future__ import annotations

import pytest

from torchdoctor.engine import run_example
from torchdoctor.rules import load_rules

RULES = load_rules()


def _cases():
    for rule in RULES:
        for group in ("fires", "ok", "skips"):
            for ex in getattr(rule.examples, group):
                marks = [pytest.mark.xfail(reason=ex.xfail, strict=True)] if ex.xfail else []
                yield pytest.param(rule, group, ex, id=f"{rule.id}[{group}: {ex.name}]", marks=marks)


@pytest.mark.parametrize("rule,group,example", list(_cases()))
def test_rule_example(rule, group, example):
    result = run_example(rule, group, example)
    assert result.passed, result.detail
