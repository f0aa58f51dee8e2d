"""Workload values are checked like the command-line flags: a seed numpy and torch accept
(0 .. 2**32-1), workers >= 0, local world size >= 1, integers that are not bools. A bad value
in a --workload file is one line naming the file, the line and the key; exit 2."""

from __future__ import annotations

import json

import pytest

from torchdoctor.cli import main
from torchdoctor.errors import WorkloadError
from torchdoctor.workload import SEED_MAX, build_workload


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("line", "key"),
    [
        ("seed: 4294967296", "seed"),
        ("seed: 99999999999999999999999", "seed"),
        ("seed: -1", "seed"),
        ("seed: true", "seed"),
        ("seed: '7'", "seed"),
        ("seed: 1.5", "seed"),
        ("dataloader_workers: -3", "dataloader_workers"),
        ("dataloader_workers: true", "dataloader_workers"),
        ("local_world_size: 0", "local_world_size"),
        ("local_world_size: false", "local_world_size"),
        ("compile: 1", "compile"),
    ],
)
def test_bad_workload_value_is_one_line_with_file_line_and_key(capsys, tmp_path, facts_file, line, key):
    workload = tmp_path / "workload.yaml"
    workload.write_text(f"task: research-repro\n{line}\n")
    for extra in ([], ["--snippet"]):
        code, out, err = run(capsys, "recommend", "--workload", workload, "--facts", facts_file, *extra)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and "Traceback" not in err
        assert f"{workload}:2: {key}: must be " in err, err


def test_nested_workload_mapping_points_at_the_nested_line(capsys, tmp_path, facts_file):
    workload = tmp_path / "w.yaml"
    workload.write_text("# my job\nworkload:\n  task: classification\n  seed: -5\n")
    code, _, err = run(capsys, "recommend", "--workload", workload, "--facts", facts_file)
    assert code == 2 and f"{workload}:4: seed: must be an integer from 0 to {SEED_MAX}" in err


@pytest.mark.parametrize("seed", [0, 1234, SEED_MAX])
def test_seeds_in_range_reach_the_snippet(capsys, tmp_path, facts_file, seed):
    workload = tmp_path / "workload.yaml"
    workload.write_text(f"task: research-repro\nseed: {seed}\n")
    code, out, err = run(capsys, "recommend", "--workload", workload, "--facts", facts_file, "--snippet")
    assert code in (0, 1), err
    assert f"torch.manual_seed({seed})" in out


@pytest.mark.parametrize(
    "values",
    [{"seed": 2**32}, {"seed": -1}, {"seed": True}, {"dataloader_workers": -3},
     {"dataloader_workers": True}, {"local_world_size": 0}, {"local_world_size": True}],
)
def test_api_rejects_the_same_values(values):
    with pytest.raises(WorkloadError, match=f"recommend\\(\\): {next(iter(values))}: must be"):
        build_workload(task="classification", overrides=values, source="recommend()")


@pytest.mark.parametrize(("flag", "value"), [("--workers", "-3"), ("--local-world-size", "0"),
                                             ("--workers", "true")])
def test_flags_apply_the_same_limits(capsys, facts_file, flag, value):
    code, out, err = run(capsys, "recommend", "--task", "classification", "--facts", facts_file, flag, value)
    assert code == 2 and out == "" and flag in err and "Traceback" not in err


def test_task_flag_over_the_files_task_is_said_in_one_line(capsys, tmp_path, facts_file):
    workload = tmp_path / "workload.yaml"
    workload.write_text("task: classification\nprecision: bf16\n")
    code, out, err = run(capsys, "recommend", "--workload", workload, "--task", "detection",
                         "--precision", "fp16", "--facts", facts_file, "--format", "json")
    assert code in (0, 1)
    assert json.loads(out)["workload"]["task"] == "detection"
    notes = [ln for ln in err.splitlines() if "note:" in ln]
    assert f"--task detection replaces task: classification of {workload}" in notes[0]
    assert f"--precision fp16 replaces precision: bf16 of {workload}" in notes[1]
    assert len(notes) == 2


def test_same_task_in_file_and_flag_says_nothing(capsys, tmp_path, facts_file):
    workload = tmp_path / "workload.yaml"
    workload.write_text("task: classification\n")
    _, _, err = run(capsys, "recommend", "--workload", workload, "--task", "classification",
                    "--facts", facts_file, "--format", "json")
    assert "note:" not in err
