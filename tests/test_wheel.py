"""The built wheel, installed into a fresh venv without torch, runs `check` and finds its rules."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def sh(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, **kw)


@pytest.mark.slow
def test_wheel_in_fresh_venv_without_torch(tmp_path):
    dist = tmp_path / "dist"
    build = sh([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(dist), str(REPO)])
    assert build.returncode == 0, build.stderr[-2000:]
    (wheel,) = dist.glob("torchdoctor-*.whl")
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    assert "torchdoctor/_rules/settings.yaml" in names
    assert any(n.startswith("torchdoctor/_rules/data/") for n in names)
    assert "torchdoctor/_schemas/check.schema.json" in names  # torchdoctor mcp's published schemas
    assert not any(n.startswith("tests/") for n in names)

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    py = bindir / "python"
    inst = sh([str(py), "-m", "pip", "install", "-q", str(wheel)])
    assert inst.returncode == 0, inst.stderr[-2000:]
    listed = sh([str(py), "-m", "pip", "list", "--format", "json"]).stdout
    assert "torch" not in {d["name"].lower() for d in json.loads(listed)}, "installing torchdoctor pulled torch"

    run = sh([str(bindir / "torchdoctor"), "check", "--format", "json", "--fail-on", "never"], cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    report = json.loads(run.stdout)
    assert report["rules_evaluated"] > 0
    assert report["facts"]["torch"]["import_status"] == "not-installed"
    rules = sh([str(bindir / "torchdoctor"), "rules", "list"], cwd=tmp_path)
    assert rules.returncode == 0 and "tf32-disabled-on-ampere" in rules.stdout
