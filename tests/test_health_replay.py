"""GPU health rules over every recorded nvidia-smi report, replayed through the fake NVML.

Real machines are mostly healthy: a rule that warns on them is crying wolf. The one real
condition in the recordings (a row remapping pending on an A100, which needs a GPU reset) must
be the only warning; half-width links (x8/x8 desktops, cloud T4/A10G/L4) are notes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.probes import fakenvml
from torchdoctor.engine import evaluate
from torchdoctor.facts import Facts
from torchdoctor.probes import ProbeContext, _sys, gpu
from torchdoctor.rules import load_rules

DATA = Path(__file__).resolve().parent / "data" / "machines"
REPORTS = sorted((DATA / "nvidia-smi-q-xml").glob("*.xml")) + sorted((DATA / "nvidia-smi-q").glob("*.txt"))
HEALTH = [r for r in load_rules() if r.category == "gpu-health"]
EXPECTED_WARNINGS = {"a100-sxm4-80gb-x4.txt": {"gpu-retired-pages-pending"}}


@pytest.mark.parametrize("report", REPORTS, ids=lambda p: p.name)
def test_health_rules_on_recorded_gpus(monkeypatch, report):
    fake = fakenvml.FakeNvml.from_report(report)
    monkeypatch.setattr(_sys, "import_optional", lambda module: fake)
    facts = Facts(gpu=gpu.probe(ProbeContext()))
    findings = evaluate(HEALTH, facts).findings
    serious = {f.id for f in findings if f.severity in ("error", "warning")}
    assert serious == EXPECTED_WARNINGS.get(report.name, set()), [f.message for f in findings]
    if report.name in ("dual-rtx-2070.xml", "tesla-t4.xml", "l4.txt"):
        assert "gpu-pcie-link-half-width" in {f.id for f in findings}
