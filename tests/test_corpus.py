"""The shipped rules against real environment reports from public tickets.

Inputs: the 40 corpus cases (tests/data/corpus/, copied from /work/shared/corpus), our own
collect_env cases (tests/data/cases/) and the round-2 cases in the shapes people paste
(tests/data/cases2/: torch's warnings, vLLM/sglang collectors, template bullets, pip/conda
lists, nvidia-smi, detectron2/Ultralytics/ComfyUI tables) and the round-3 whole issue bodies
(tests/data/cases3/: prose, tracebacks, logs, pip/uv errors, most without any collect_env), each
citing its GitHub issue. Every
case is a ``caseNNN.txt`` report and a ``caseNNN.json`` with ``environment_cause``,
``diagnosable_from_report`` and ``expected_categories``. What is checked, per case:

- ``environment_cause: true`` and ``diagnosable_from_report: true``: at least one expected
  category appears among the error or warning findings (the case is *diagnosed*);
- ``environment_cause: false`` (a PyTorch bug on a healthy environment): no error-level finding;
- anything else (no conclusion, or not diagnosable from the report): the report parses and the
  rules evaluate without a rule error.

``test_corpus_summary`` prints the per-case table (run with ``-s`` or ``-rA`` to see it) and
asserts the totals.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pytest

from torchdoctor.engine import evaluate
from torchdoctor.importers import load_report
from torchdoctor.rules import load_rules

DATA = Path(__file__).resolve().parent / "data"
CASE_DIRS = (DATA / "corpus", DATA / "cases", DATA / "cases2", DATA / "cases3")
SERIOUS = ("error", "warning")

# Categories the cases name that are finer than the rules' own vocabulary
# (torchdoctor.report.CATEGORIES): the rules that diagnose them, by id.
CATEGORY_RULES: dict[str, frozenset[str]] = {
    # torch imports, torch.compile refuses the interpreter (tests/data/cases2/README.md)
    "compile-python-unsupported": frozenset(
        {"compile-unsupported-on-python", "compile-refused-on-python"}
    ),
    # a library the wheel ships is loaded from another place
    "library-shadowed": frozenset({"bundled-library-shadowed", "system-cudnn-shadows-bundled"}),
    # a CUDA extension beside torch has no code for the GPU while torch works
    "extension-mismatch": frozenset(
        {"extension-arch-not-in-build", "flashinfer-without-kernels-for-gpu",
         "xformers-built-for-another-torch", "flash-attn-built-for-another-torch",
         "flash-attn-without-kernels-for-gpu"}
    ),
}

# Cases torchdoctor cannot diagnose yet: the paste does not state what a rule needs, or no rule
# or table judges what it states. Each entry says which; the test is xfail(strict=True), so it
# starts failing (as XPASS) the moment the gap is closed and the entry must go.
PARSER_GAPS: dict[str, str] = {
    "cases2/case212": "ldd output (libnvJitLink.so.12 => /usr/local/cuda-12.1/lib64/...) and echo "
    "$LD_LIBRARY_PATH are not read into torch.loaded_libraries/env: whether the system copy is "
    "another build than the wheel's cannot be told from a paste, and a partial env.variables "
    "would read as 'every other variable unset'",
    "cases2/case234": "vLLM's CPU backend on a GPU machine (deliberate): the paste is cut before "
    "the package lists, so nothing states the vllm +cpu build that makes "
    "deliberate-cpu-build-on-gpu-machine a note; cpu-only-build-on-gpu-machine errs",
    "cases2/case237": "Jetson prose: the CPU-only build is described in words ('installs a CPU-only "
    "version'), no torch version or torch.version.cuda line in the (cut) paste",
    "cases2/case242": "pip's version list ending at 2.2.2 implies an Intel Mac; the paste states "
    "no machine (only /Library/Frameworks/Python.framework), so macos-intel-no-current-wheels "
    "cannot judge",
    "cases2/case248": "torch 1.7.0 built with CUDA 11.0 on an RTX 3090 (8.6): the paste states "
    "detectron2's nvcc (11.0) but not torch's own CUDA version, which gpu-newer-than-cuda-build needs",
    "cases2/case256": "two Ultralytics banners (an old working environment, then torch-2.0.0+cpu): "
    "the reader keeps the first environment's facts and names both (several-environments-in-paste, "
    "multiple-installs), but nothing judges the second, CPU-only one",
}


@dataclass
class CaseResult:
    key: str
    environment_cause: Optional[bool]
    diagnosable: bool
    expected: list[str]
    findings: list[tuple[str, str, str]] = field(default_factory=list)  # (category, severity, id)
    rule_errors: list[str] = field(default_factory=list)

    @property
    def kind(self) -> str:
        if self.environment_cause is True and self.diagnosable:
            return "diagnosable"
        if self.environment_cause is False:
            return "healthy"
        return "fixture"

    @property
    def diagnosed(self) -> bool:
        return any(
            sev in SERIOUS
            and (cat in self.expected
                 or any(rid in CATEGORY_RULES.get(e, ()) for e in self.expected))
            for cat, sev, rid in self.findings
        )

    @property
    def false_errors(self) -> list[str]:
        return [rid for _, sev, rid in self.findings if sev == "error"]

    @property
    def passed(self) -> bool:
        if self.rule_errors:
            return False
        if self.kind == "diagnosable":
            return self.diagnosed
        if self.kind == "healthy":
            return not self.false_errors
        return True


def _case_files() -> list[tuple[str, Path]]:
    out = []
    for directory in CASE_DIRS:
        for txt in sorted(directory.glob("case*.txt")):
            if txt.with_suffix(".json").exists():
                out.append((f"{directory.name}/{txt.stem}", txt))
    return out


CASES = _case_files()


@functools.lru_cache(maxsize=1)
def _rules():
    return load_rules()


@functools.lru_cache(maxsize=None)
def run_case(key: str) -> CaseResult:
    txt = dict(CASES)[key]
    meta = json.loads(txt.with_suffix(".json").read_text(encoding="utf-8"))
    facts = load_report(txt.read_bytes(), txt.name)
    report = evaluate(_rules(), facts)
    return CaseResult(
        key=key,
        environment_cause=meta.get("environment_cause"),
        diagnosable=bool(meta.get("diagnosable_from_report")),
        expected=list(meta.get("expected_categories") or []),
        findings=[(f.category, f.severity, f.id) for f in report.findings],
        rule_errors=[f"{s.id}: {s.reason}" for s in report.skipped if s.needs == "(rule error)"],
    )


def _params():
    for key, _ in CASES:
        marks = []
        if key in PARSER_GAPS:
            marks.append(pytest.mark.xfail(reason=PARSER_GAPS[key], strict=True))
        yield pytest.param(key, id=key, marks=marks)


def test_corpus_is_complete():
    corpus = [k for k, _ in CASES if k.startswith("corpus/")]
    own = [k for k, _ in CASES if k.startswith("cases/")]
    pasted = [k for k, _ in CASES if k.startswith("cases2/")]
    bodies = [k for k, _ in CASES if k.startswith("cases3/")]
    assert len(corpus) == 40, corpus
    assert len(own) >= 10, own
    assert len(pasted) >= 50, pasted
    assert len(bodies) >= 60, bodies
    for key, txt in CASES:
        meta = json.loads(txt.with_suffix(".json").read_text(encoding="utf-8"))
        for name in ("source", "environment_cause", "diagnosable_from_report", "expected_categories"):
            assert name in meta, f"{key}: {name} missing"
        if key.startswith(("cases/", "cases2/", "cases3/")):
            assert "github.com/" in meta["source"], f"{key}: source must cite the issue"


def test_expected_categories_are_known():
    """Every category a case expects is a rule category or mapped to rules in CATEGORY_RULES."""
    from torchdoctor.report import CATEGORIES

    ids = {r.id for r in _rules()}
    for rules in CATEGORY_RULES.values():
        assert rules <= ids, sorted(rules - ids)
    for key, txt in CASES:
        meta = json.loads(txt.with_suffix(".json").read_text(encoding="utf-8"))
        for cat in meta.get("expected_categories") or []:
            assert cat in CATEGORIES or cat in CATEGORY_RULES, f"{key}: unknown category {cat}"


@pytest.mark.parametrize("key", list(_params()))
def test_corpus_case(key):
    result = run_case(key)
    assert not result.rule_errors, f"{key}: rules failed to evaluate: {result.rule_errors}"
    shown = ", ".join(f"{cat}:{sev}({rid})" for cat, sev, rid in result.findings) or "none"
    if result.kind == "diagnosable":
        assert result.diagnosed, (
            f"{key}: expected one of {result.expected} as error/warning, found: {shown}"
        )
    elif result.kind == "healthy":
        assert not result.false_errors, f"{key}: healthy environment got errors: {shown}"


def _table(results: list[CaseResult]) -> str:
    rows = ["| case | kind | expected | found (category:severity) | result |", "|---|---|---|---|---|"]
    for r in results:
        found = ", ".join(
            f"{cat}:{sev}" for cat, sev, _ in r.findings if sev in SERIOUS or cat in r.expected
        )
        infos = sum(1 for cat, sev, _ in r.findings if sev == "info" and cat not in r.expected)
        if infos:
            found += f"{', ' if found else ''}+{infos} info"
        if r.key in PARSER_GAPS:
            verdict = "xfail (gap)"
        else:
            verdict = "pass" if r.passed else "FAIL"
        rows.append(
            f"| {r.key} | {r.kind} | {', '.join(r.expected) or '-'} | {found or '-'} | {verdict} |"
        )
    return "\n".join(rows)


def test_corpus_summary():
    results = [run_case(key) for key, _ in CASES]
    diagnosable = [r for r in results if r.kind == "diagnosable"]
    diagnosed = [r for r in diagnosable if r.diagnosed]
    healthy = [r for r in results if r.kind == "healthy"]
    false_errors = [r for r in healthy if r.false_errors and r.key not in PARSER_GAPS]
    gaps = [r for r in diagnosable if r.key in PARSER_GAPS]

    print()
    print(_table(results))
    print(
        f"\ndiagnosed {len(diagnosed)}/{len(diagnosable)} environment-caused cases "
        f"({len(gaps)} known gaps: {', '.join(r.key for r in gaps) or 'none'}); "
        f"{len(false_errors)} false errors on {len(healthy)} healthy cases; "
        f"{len(results)} cases in all"
    )

    assert not false_errors, [(r.key, r.false_errors) for r in false_errors]
    missed = [r.key for r in diagnosable if not r.diagnosed and r.key not in PARSER_GAPS]
    assert not missed, f"not diagnosed: {missed}"
    assert len(diagnosed) == len(diagnosable) - len(gaps)
    assert not [r.key for r in results if r.rule_errors]
