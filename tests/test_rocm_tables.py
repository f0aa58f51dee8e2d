"""rules/data/rocm_archs.yaml: the load-time checks, the first release of each target, the per-release
lists against measured wheels, and the rule that reads them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from torchdoctor import tables
from torchdoctor.engine import run_examples
from torchdoctor.paths import data_dir, default_rules_dir
from torchdoctor.rules import load_rule_file
from torchdoctor.tables import DataFileError

DATA = tables.load("rocm_archs")

# torch.cuda.get_arch_list() of published wheels, as measured in https://github.com/astral-sh/uv/issues/14086
# and https://github.com/astral-sh/uv/pull/18730 (the rocm7.2 wheel, torch 2.11).
MEASURED = {
    ("2.4.1", "6.0"): ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030", "gfx1100", "gfx942"],
    ("2.5.1", "6.2"): ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030", "gfx1100", "gfx942"],
    ("2.7.1", "6.2.4"): ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101",
                         "gfx1102", "gfx1200", "gfx1201"],
    ("2.7.1", "6.3"): ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101",
                       "gfx1102", "gfx1200", "gfx1201"],
    ("2.11.0", "7.2"): ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101",
                        "gfx1102", "gfx1200", "gfx1201", "gfx950", "gfx1150", "gfx1151"],
}


def _entry(release: str) -> dict | None:
    version = Version(release)
    found = [w for w in DATA["wheels"] if SpecifierSet(w["torch"]).contains(version, prereleases=True)]
    assert len(found) <= 1, f"{release} is in more than one wheels entry"
    return found[0] if found else None


def _carried(release: str, rocm: str) -> tuple[set, set]:
    """(carried, unknown) targets of the official wheel of `release` built for ROCm `rocm`."""
    entry = _entry(release)
    if entry is None:
        return set(), set()
    carried, unknown = set(entry["archs"]), set()
    for extra in entry.get("by_rocm") or []:
        if SpecifierSet(extra["rocm"]).contains(Version(rocm)):
            carried |= set(extra.get("add") or [])
            unknown |= set(extra.get("unknown") or [])
    return carried, unknown


@pytest.mark.parametrize("release, rocm", sorted(MEASURED))
def test_wheel_lists_match_the_measured_wheels(release, rocm):
    carried, unknown = _carried(release, rocm)
    assert (carried, unknown) == (set(MEASURED[(release, rocm)]), set())


@pytest.mark.parametrize(
    "gfx, first",
    [
        ("gfx90a", "1.11"), ("gfx1030", "1.11"), ("gfx1100", "2.1"), ("gfx942", "2.3"), ("gfx1101", "2.6"),
        ("gfx1102", "2.7"), ("gfx1200", "2.7"), ("gfx1201", "2.7"), ("gfx950", "2.9"), ("gfx1150", "2.10"),
        ("gfx1151", "2.10"), ("gfx1010", None),
    ],
)
def test_first_release_of_each_target(gfx, first):
    assert tables.rocm_gfx_support(f"{gfx}:xnack-", "2.13.0+rocm7.2")["first_torch"] == first


@pytest.mark.parametrize(
    "gfx, torch_version, in_wheels",
    [
        ("gfx1151", "2.9.1+rocm6.3", False),  # unsloth#8480
        ("gfx1151", "2.10.0+rocm7.1", True),
        ("gfx1201", "2.6.0+rocm6.2.4", False),
        ("gfx1201", "2.7.1+rocm6.3", True),  # uv#14086
        ("gfx942", "2.2.2+rocm5.7", False),
        ("gfx1100", "2.0.1+rocm5.4.2", False),
    ],
)
def test_lookups(gfx, torch_version, in_wheels):
    assert tables.rocm_gfx_support(gfx, torch_version)["in_wheels"] is in_wheels


@pytest.mark.parametrize(
    "gfx, torch_version, in_wheels, needs_rocm",
    [
        # builder release/2.3 manywheel/build_docker.sh: PYTORCH_ROCM_ARCH+=";gfx942" only when ROCM_VERSION_INT >= 60000
        ("gfx942:sramecc+:xnack-", "2.3.0+rocm5.7", False, "6.0"),
        ("gfx942:sramecc+:xnack-", "2.3.0+rocm6.0", True, None),
        ("gfx942", "2.3.1+rocm6.0.2", True, None),
        # uv backend.rs: the ROCm 6.4 list has no gfx950, the ROCm 7.0 list has it (pytorch#163860)
        ("gfx950", "2.9.0+rocm6.4", False, "7.0"),
        ("gfx950", "2.9.1+rocm6.3", False, "7.0"),
        ("gfx950", "2.9.0+rocm7.0", True, None),
        ("gfx950", "2.10.0+rocm7.0", True, None),
        # a release before the first: not a line's fault, no ROCm line to name
        ("gfx942", "2.2.2+rocm5.7", False, None),
        # recorded as unknown for 2.9's rocm7.0 line (pytorch#164854 came after the 2.9 cut): not judged
        ("gfx1151", "2.9.0+rocm7.0", None, None),
        ("gfx1150", "2.9.1+rocm7.0", None, None),
        ("gfx1151", "2.9.1+rocm6.3", False, None),
    ],
)
def test_the_rocm_line_of_the_label_decides(gfx, torch_version, in_wheels, needs_rocm):
    info = tables.rocm_gfx_support(gfx, torch_version)
    assert (info["in_wheels"], info["needs_rocm"]) == (in_wheels, needs_rocm)
    assert info["rocm"] == torch_version.split("+rocm")[1]


@pytest.mark.parametrize(
    "gfx, torch_version, in_wheels",
    [
        ("gfx942", "2.3.0", True),  # no label: the release alone, as before
        ("gfx950", "2.9.0", True),
        ("gfx1151", "2.9.0", False),
        ("gfx950", "2.9.0+rocm7.10.0a20251015", True),  # TheRock's label is not an official ROCm line
        ("gfx950", "2.9.0+rocmsdk20251203", True),
        ("gfx950", "2.9.0+rocm" + "9" * 5000, True),  # an absurd label is no ROCm line, and no error
        ("gfx950", "2.9.0+cu128", True),
    ],
)
def test_without_an_official_rocm_label_the_release_decides(gfx, torch_version, in_wheels):
    info = tables.rocm_gfx_support(gfx, torch_version)
    assert (info["in_wheels"], info["rocm"], info["needs_rocm"]) == (in_wheels, None, None)


def test_every_measured_wheel_is_judged_by_its_own_line():
    """Each measured (release, ROCm) wheel: the lookup with its label agrees with the measured list, for
    every target the file lists."""
    for (release, rocm), archs in MEASURED.items():
        for target in DATA["targets"]:
            info = tables.rocm_gfx_support(target["gfx"], f"{release}+rocm{rocm}")
            assert info["in_wheels"] is (target["gfx"] in archs), (release, rocm, target["gfx"])


def test_a_malformed_by_rocm_row_is_no_lookup_error(tmp_path, monkeypatch):
    target = _copy(tmp_path)
    target.write_text(target.read_text(encoding="utf-8").replace('{rocm: ">=7.0"', '{rocm: "seven"', 1),
                      encoding="utf-8")
    data = tables.load("rocm_archs", str(tmp_path))
    monkeypatch.setattr(tables, "load", lambda name, directory=None: data)
    info = tables.rocm_gfx_support("gfx950", "2.9.0+rocm7.0")
    assert info["in_wheels"] is True and info["needs_rocm"] is None  # falls back to the release


def test_targets_agree_with_the_per_release_lists():
    """first_torch is the first release whose list (its newest ROCm variant) carries the target, and
    first_rocm the ROCm version from which that release carries it."""
    for target in DATA["targets"]:
        gfx, first = target["gfx"], target["first_torch"]
        if first is None:
            assert all(gfx not in w["archs"] and all(gfx not in (x.get("add") or []) for x in w.get("by_rocm") or [])
                       for w in DATA["wheels"]), gfx
            continue
        major, minor = map(int, first.split("."))
        carried, _ = _carried(f"{major}.{minor}.0", target.get("first_rocm") or "99")
        earlier, unknown = _carried(f"{major}.{minor - 1}.0", "99")
        assert gfx in carried and gfx not in earlier, gfx
        if target.get("first_rocm"):
            older, _ = _carried(f"{major}.{minor}.0", "5.0")
            assert gfx not in older, gfx


def test_nightly_list_differs_as_recorded():
    newest = DATA["wheels"][-1]
    assert set(DATA["nightly"]["archs"]) - set(newest["archs"]) == {"gfx1103"}
    assert not any(t["gfx"] == "gfx1103" for t in DATA["targets"]), "gfx1103 has no known release: not judged"


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "rocm_archs.yaml"
    shutil.copy(data_dir() / "rocm_archs.yaml", target)
    return target


@pytest.mark.parametrize(
    "old, new, error",
    [
        ("- gfx: gfx1151", "- gfx: strix-halo", r"'gfx' is not a gfx target: 'strix-halo'"),
        ('first_torch: "2.10"', 'first_torch: "two ten"', r"'first_torch' is not a version: 'two ten'"),
        ('override: "10.3.0"', 'override: "ten"', r"'override' is not a version: 'ten'"),
    ],
)
def test_load_time_checks_name_the_line(tmp_path, old, new, error):
    target = _copy(tmp_path)
    target.write_text(target.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    with pytest.raises(DataFileError, match=r"rocm_archs\.yaml:\d+: " + error):
        tables.load("rocm_archs", str(tmp_path))


def test_load_time_check_wants_a_source(tmp_path):
    target = _copy(tmp_path)
    text = target.read_text(encoding="utf-8")
    start = text.index("  - gfx: gfx1201")
    line = text.index("    source:", start)
    target.write_text(text[:line] + text[text.index("\n", line) + 1:], encoding="utf-8")
    with pytest.raises(DataFileError, match=r"rocm_archs\.yaml:\d+: every target names its source"):
        tables.load("rocm_archs", str(tmp_path))


def test_rocm_rule_examples_still_pass():
    rule = load_rule_file(default_rules_dir() / "gpu" / "rocm-gfx-not-in-wheel.yaml")
    results = run_examples(rule)
    assert len(results) >= 12
    assert all(r.passed for r in results), [(r.name, r.detail) for r in results if not r.passed]
