"""The README's test commands (issue 21, item 13): CI (.ci/run) runs exactly the README's test
command, the README says how long the suite takes and gives the quick subset, and that subset's
marker is registered and used."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _readme_test_command() -> str:
    block = README.split("Run the whole test suite", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    (command,) = [line for line in block.splitlines() if line.strip()]
    return command.strip()


def test_ci_runs_exactly_the_readmes_test_command():
    ci = [line.strip() for line in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    command = _readme_test_command()
    assert "python -m pytest -q" in command and "-m" not in command.split("pytest", 1)[1].replace("-q", "")
    assert ci[-1] == command  # the last line of .ci/run: the whole suite, nothing left out


def test_the_readme_says_how_long_and_gives_the_quick_subset():
    after = README.split(_readme_test_command(), 1)[1][:1500]
    assert re.search(r"whole suite takes\s+about \d+ min", after), after[:600]
    assert 'python -m pytest -q -m "not slow"' in after
    assert re.search(r"not slow.{0,400}about \d+ min|about \d+ min.{0,200}not slow", after, re.S)


def test_the_slow_marker_is_registered_and_marks_tests():
    import sys

    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    markers = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"][
        "ini_options"]["markers"]
    assert any(m.startswith("slow:") for m in markers)
    marked = [p for p in (REPO / "tests").rglob("test_*.py")
              if "@pytest.mark.slow" in p.read_text(encoding="utf-8")]
    assert len(marked) >= 10, marked
