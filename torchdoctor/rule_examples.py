"""`torchdoctor rules test [PATH...]`: run the examples of rules (each rule's ``examples`` are its
tests) without pytest, for people writing rules. Environment rules (rules/<area>/*.yaml) run
through the engine, lint rules (rules/lint/*.yaml) through the linter; the closing line counts
examples, and the rules of each kind they came from."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def run(paths: Sequence[str], write: Callable[[str], object]) -> int:
    """Run the examples of the rules in ``paths`` (files or directories; none: every shipped
    rule); write one line per failure and a closing count; the exit code (1 on a failure)."""
    from torchdoctor.engine import run_examples
    from torchdoctor.lint.examples import run_paths
    from torchdoctor.rules import load_rule_file, load_rules, rule_files_any

    lint_files: Optional[list] = None
    if paths:
        files: list = []
        for p in paths:
            files += [Path(p)] if Path(p).is_file() else rule_files_any(Path(p))
        lint_files = [f for f in files if f.resolve().parent.name == "lint"]
        selected = [load_rule_file(f) for f in files if f not in lint_files]
    else:
        selected = load_rules()
    failed, passed, lint_rules = run_paths(lint_files, write)
    xfailed = 0
    for rule in selected:
        for res in run_examples(rule):
            label = f"{res.rule}[{res.group}: {res.name}]"
            if res.xfail:
                if res.passed:
                    failed += 1
                    write(f"XPASS {label}: known gap now passes; remove its xfail\n")
                else:
                    xfailed += 1
                continue
            if res.passed:
                passed += 1
            else:
                failed += 1
                write(f"FAIL {label}: {res.detail}\n")
    write(f"{_plural(passed + failed + xfailed, 'example')}: {passed} passed, {failed} failed, "
          f"{xfailed} xfailed ({_plural(len(selected), 'environment rule')}, "
          f"{_plural(lint_rules, 'lint rule')})\n")
    return 1 if failed else 0
