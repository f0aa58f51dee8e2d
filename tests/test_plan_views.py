"""Every view shows a planned setting as the code that applies it (issue 9: a `key = value`
view printed `torch.use_deterministic_algorithms = True`, which pasted replaces the function).

For every task preset on every recorded machine (tests/machines, 99 plans): the statements the
terminal view shows parse, and are the statements of the snippet (which tests/test_plans.py runs
under real torch and reads back); the Markdown view shows the same code.
"""

from __future__ import annotations

import ast
import re
from collections import Counter

import pytest

from torchdoctor.render import render
from tests.test_plans import MACHINES, TASKS, plan

BOILERPLATE = {"import os", "import random", "import torch", "DATALOADER_KWARGS = {}"}
GUARD = "if torch.cuda.is_available():"
BOX = re.compile(r"^[│┃] ?(.*?) *[│┃]$")


def _flat(statements: list[ast.stmt]) -> list[str]:
    """ast dumps of the statements, the CUDA guard's body in place of the guard."""
    out: list[str] = []
    for node in statements:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "torch.cuda.is_available()":
            out += _flat(node.body)
        elif ast.unparse(node) not in BOILERPLATE:
            out.append(ast.dump(node))
    return out


def terminal_code(text: str) -> str:
    """The code lines of the terminal view's "Recommended settings": each setting is its code
    (at the left edge, Python indentation kept), then its reason (indented 2) and `rule: ID`."""
    lines = [m.group(1) if (m := BOX.match(line)) else line for line in text.splitlines()]
    start = lines.index("Recommended settings") + 1
    code: list[str] = []
    for line in lines[start:]:
        if not line.strip():
            continue
        if not line.startswith(" ") or line.startswith("    "):
            if re.match(r"^(System|CPU|GPU|torch|Memory|\?) ", line) and not line.startswith("torch."):
                break  # the facts table after the plan
            code.append(line)
        elif not line.startswith("  "):
            break
    return "\n".join(code)


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("name", MACHINES)
def test_terminal_view_is_the_snippets_code(name, task):
    report = plan(name, task)
    text = render(report, "terminal", color=False, width=400)
    if not report.settings:  # nothing to set: the view says why instead (a finding), no plan
        assert report.findings and "Recommended settings" not in text
        return
    shown = terminal_code(text)
    terminal = _flat(ast.parse(shown).body)  # a SyntaxError here fails the test
    snippet = _flat(ast.parse(report.snippet).body)
    assert Counter(terminal) == Counter(snippet)
    for s in report.settings:
        assert s.code and s.code.splitlines()[0] in shown, s.key


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("name", MACHINES)
def test_markdown_view_shows_each_settings_code(name, task):
    import html

    report = plan(name, task)
    text = render(report, "markdown")
    if not report.settings:
        assert "### Recommended settings" not in text
        return
    section = text.split("### Recommended settings", 1)[1]
    for s in report.settings:
        first = s.code.splitlines()[0]
        assert first in section or html.escape(first).replace("|", "&#124;") in section or \
            first.replace("|", "\\|") in section, (s.key, first)
    assert f"| `{report.settings[0].key}` |" not in section  # no key column any more


def test_functions_are_shown_as_calls_never_assigned():
    report = plan("ampere-a100x4", "research-repro")
    text = render(report, "terminal", color=False, width=100)
    assert "torch.use_deterministic_algorithms(True)" in text
    assert "torch.set_float32_matmul_precision('highest')" in text
    assert "use_deterministic_algorithms = " not in text
    assert "set_float32_matmul_precision = " not in text
