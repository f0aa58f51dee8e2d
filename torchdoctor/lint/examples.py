"""A lint rule's ``examples`` are its tests: every ``fires`` snippet gets a finding of the rule,
every ``ok`` snippet none, and a ``fixed`` text is what --fix makes of the snippet (then it
lints clean for the rule and fixing again changes nothing)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from torchdoctor.lint import engine
from torchdoctor.lint.knowledge import Knowledge, LintRule
from torchdoctor.lint.versions import parse


@dataclass
class Result:
    rule: str
    group: str
    name: str
    passed: bool
    detail: str = ""


def _lint(know: Knowledge, rule: LintRule, code: str, torch: Optional[str]) -> list:
    version_text = str(torch or know.newest_torch)
    return engine.lint_source(code, "<example>", know, [rule], parse(version_text), version_text)


def run_rule(know: Knowledge, rule: LintRule) -> list:
    out = []
    for group in ("fires", "ok"):
        for i, case in enumerate(rule.examples.get(group) or []):
            name = str(case.get("name") or i)
            torch = case.get("torch")
            found = _lint(know, rule, case["code"], torch)
            if group == "fires" and not found:
                out.append(Result(rule.id, group, name, False, "no finding"))
                continue
            if group == "ok" and found:
                out.append(Result(rule.id, group, name, False, f"unexpected: {found[0].message}"))
                continue
            if case.get("fixed") is not None:
                fixed, _ = engine.fix_source(case["code"], lambda t: _lint(know, rule, t, torch), False)
                if fixed != case["fixed"]:
                    out.append(Result(rule.id, group, name, False, f"--fix gave:\n{fixed}"))
                    continue
                again, n = engine.fix_source(fixed, lambda t: _lint(know, rule, t, torch), False)
                if n or again != fixed:
                    out.append(Result(rule.id, group, name, False, "--fix is not idempotent"))
                    continue
            out.append(Result(rule.id, group, name, True))
    return out


def run_all(know: Knowledge, rules: Optional[list] = None) -> list:
    return [r for rule in (rules or know.rules) for r in run_rule(know, rule)]


def run_paths(paths, write) -> tuple:
    """For `rules test`: run the examples of the shipped lint rules (``paths`` None) or of the
    lint rule files given (shipped or not); (failed, passed, rules run)."""
    from pathlib import Path

    from torchdoctor.lint.knowledge import lint_dir, load

    if paths is None:
        know = load()
        rules = know.rules
    else:
        wanted = {Path(p).resolve() for p in paths}
        shipped = {p.resolve() for p in lint_dir().glob("*.yaml")}
        know = load(tuple(sorted(str(p) for p in wanted - shipped)))
        rules = [r for r in know.rules if Path(r.path).resolve() in wanted]
    failed = passed = 0
    for res in run_all(know, rules) if rules else []:
        if res.passed:
            passed += 1
        else:
            failed += 1
            write(f"FAIL {res.rule}[{res.group}: {res.name}]: {res.detail}\n")
    return failed, passed, len(rules)
