"""`torchdoctor check --distributed` (issue 13), launched for real with torchrun on this machine
(gloo, CPU): 2 and 4 local ranks, one rank made different (an environment variable, a
torch.backends flag), a rank that crashes, one that hangs, and a simulated 2-node job (two
torchrun agents, --nnodes 2 --node-rank 0/1, one static rendezvous on localhost). Each launch
runs once per module (fixtures); the assertions read its JSON report.

Rank-side pieces without a launcher: the launcher variables, the busbw arithmetic against
recorded nccl-tests output, naming the odd ranks, the renderers and the redaction of a job.
"""

from __future__ import annotations

import json
import re
import os
import socket
import subprocess
import sys
import time
import uuid

import pytest
import yaml

from tests.conftest import DATA, REPO
from torchdoctor.distributed import bandwidth, compare
from torchdoctor.distributed.launch import BadLaunch, NotLaunched, from_env
from torchdoctor.distributed.model import JobReport
from torchdoctor.facts import Facts, JobFacts, RankFacts

WRAPPER = DATA / "distributed" / "odd_rank.sh"
RECORDED_JOB = DATA / "distributed" / "two_nodes_job.json"


# ----------------------------------------------------------------------------------------
# launching
# ----------------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Launched:
    def __init__(self, rc: int, out: str, err: str, marker: str):
        self.rc, self.out, self.err, self.marker = rc, out, err, marker

    @property
    def report(self) -> dict:
        return json.loads(self.out)

    def finding(self, rule_id: str) -> dict:
        found = [p for p in self.report["findings"] if p["finding"]["id"] == rule_id]
        assert found, f"{rule_id} not in {[p['finding']['id'] for p in self.report['findings']]}"
        return found[0]


def _env(marker: str, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")}
    env.update(PYTHONPATH=os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]), PYTHON=sys.executable,
               TD_TEST_MARK=marker, PYTHONWARNINGS="ignore", **extra)
    return env


def _torchrun_argv(nproc: int, port: int, args: list[str], nnodes: int = 1, node_rank: int = 0) -> list[str]:
    argv = [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
            "--master-addr", "127.0.0.1", "--master-port", str(port), "--monitor-interval", "0.2"]
    if nnodes > 1:
        argv += ["--nnodes", str(nnodes), "--node-rank", str(node_rank)]
    return argv + ["--no-python", "sh", str(WRAPPER), "--format", "json", "--fail-on", "error", *args]


def torchrun(nproc: int, *args: str, limit: float = 90, **extra: str) -> Launched:
    """One torchrun job; fails the test (and kills it) if it outlives ``limit`` seconds."""
    marker = uuid.uuid4().hex
    p = subprocess.Popen(_torchrun_argv(nproc, _free_port(), list(args)), env=_env(marker, **extra),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        p.communicate()
        pytest.fail(f"torchrun did not finish within {limit} s")
    return Launched(p.returncode, out, err, marker)


def leftover(marker: str) -> list[str]:
    """Processes still alive that were started for this launch (their environment holds the
    marker): an orphaned rank, agent or probe child."""
    psutil = pytest.importorskip("psutil")

    time.sleep(0.5)  # the kernel reaps what torchrun killed last
    alive = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        try:
            if proc.environ().get("TD_TEST_MARK") == marker and proc.status() != psutil.STATUS_ZOMBIE:
                alive.append(f"{proc.pid} {' '.join(proc.info['cmdline'] or [])[:120]}")
        except (psutil.Error, OSError):
            continue
    return alive


@pytest.fixture(scope="module")
def two_ranks() -> Launched:
    return torchrun(2, "--timeout", "60")


@pytest.fixture(scope="module")
def four_ranks_one_odd() -> Launched:
    # rank 1 only: NCCL_IB_DISABLE=1 in its environment, and cudnn.benchmark switched on before
    # torchdoctor starts (as a node's sitecustomize or wrapper script would)
    return torchrun(4, "--timeout", "60", ODD_RANK="1", ODD_ENV="NCCL_IB_DISABLE=1",
                    ODD_PY="import torch; torch.backends.cudnn.benchmark = True")


@pytest.fixture(scope="module")
def crashed() -> Launched:
    return torchrun(2, "--timeout", "30", ODD_RANK="1", ODD_ENV="TORCHDOCTOR_DIST_FAULT=crash")


@pytest.fixture(scope="module")
def broken_torch_on_one_rank() -> Launched:
    # rank 1 finds a torch whose import fails (missing libcudnn), as on a badly installed node;
    # it fails after a second, as a real torch does once it has loaded its libraries (an
    # instant failure can make torchrun stop rank 0 before rank 0 has even started Python's
    # signal handling: then torchrun's own summary is all there is)
    broken = DATA / "fake_torch" / "missing_cudnn"
    return torchrun(2, "--timeout", "30", ODD_RANK="1", ODD_ENV=f"PYTHONPATH={broken}{os.pathsep}{REPO}",
                    ODD_PY="import time; time.sleep(1)")


HANG_TIMEOUT = 8


@pytest.fixture(scope="module")
def hung() -> Launched:
    return torchrun(2, "--timeout", str(HANG_TIMEOUT), ODD_RANK="1", ODD_ENV="TORCHDOCTOR_DIST_FAULT=hang",
                    limit=HANG_TIMEOUT + 60)


@pytest.fixture(scope="module")
def two_nodes() -> tuple[Launched, Launched]:
    """Two torchrun agents on this machine, one per simulated node, one static rendezvous;
    node 1's environment differs (NCCL_SOCKET_IFNAME set there only)."""
    port = _free_port()
    marker = uuid.uuid4().hex
    procs = []
    for node in (0, 1):
        extra = {"NCCL_SOCKET_IFNAME": "lo"} if node == 1 else {}
        procs.append(subprocess.Popen(_torchrun_argv(2, port, ["--timeout", "60"], nnodes=2, node_rank=node),
                                      env=_env(marker, **extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, start_new_session=True))
    done = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            for q in procs:
                os.killpg(q.pid, 9)
            pytest.fail("the 2-node job did not finish within 120 s")
        done.append(Launched(p.returncode, out, err, marker))
    return done[0], done[1]


# ----------------------------------------------------------------------------------------
# real launches
# ----------------------------------------------------------------------------------------


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_two_local_ranks_report_once_from_rank_0(two_ranks):
    assert two_ranks.rc == 0, two_ranks.err[-2000:]
    report = two_ranks.report  # stdout is one JSON document: only rank 0 wrote to it
    job = report["job"]
    assert job["launcher"] == "torchrun" and job["world_size"] == 2
    assert [r["rank"] for r in job["ranks"]] == [0, 1]
    assert [r["local_rank"] for r in job["ranks"]] == [0, 1]
    for r in job["ranks"]:  # each rank's own facts, torch read in its own process
        assert r["facts"]["torch"]["import_status"] == "ok"
        assert r["facts"]["env"]["variables"]["RANK"] == str(r["rank"])
    assert [n["ranks"] for n in job["nodes"]] == [[0, 1]]
    ok = {(c["backend"], c["op"]): c["ok"] for c in job["collectives"]}
    assert ok == {("gloo", "init_process_group"): True, ("gloo", "all_reduce"): True, ("gloo", "gather"): True}
    assert job["missing"] == [] and job["bandwidth"] == []  # no CUDA here: no NCCL test
    assert not [p for p in report["findings"] if p["finding"]["id"].startswith("job-") and
                p["finding"]["id"].endswith("differs")]


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_four_local_ranks_name_the_odd_rank(four_ranks_one_odd):
    run = four_ranks_one_odd
    assert run.rc == 0, run.err[-2000:]  # heterogeneity is a warning; --fail-on error
    assert len(run.report["job"]["ranks"]) == 4
    env = run.finding("job-environment-differs")
    assert env["where"] == "job"
    assert env["finding"]["message"] == "NCCL_IB_DISABLE: rank 1: 1; the other 3 ranks: unset."
    flags = run.finding("job-backend-flags-differ")
    assert flags["finding"]["message"] == "torch.backends.cudnn.benchmark: rank 1: true; the other 3 ranks: false."
    # the per-node summary (terminal view of the same report) stays one line group per node
    text = _terminal(run.report)
    assert "node 0" in text and "ranks 0-3 (4/4 local)" in text and "node 1" not in text


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_a_rank_that_crashes_is_named_and_the_job_ends(crashed):
    assert crashed.rc == 1, crashed.err[-2000:]
    job = crashed.report["job"]
    assert [r["rank"] for r in job["ranks"]] == [0]
    (missing,) = job["missing"]
    assert missing["rank"] == 1 and missing["stage"] == "no-facts" and missing["host"]
    assert "joined, then exited before sending its facts" in missing["detail"]
    assert job["stopped_by_launcher"] is True  # torchrun stopped rank 0 when rank 1 exited
    message = crashed.finding("job-rank-missing")["finding"]["message"]
    assert message.startswith("1 of 2 ranks did not report within 30 s: rank 1 on node 0 (")
    assert leftover(crashed.marker) == []


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_a_rank_that_cannot_import_torch_never_joins_and_says_why(broken_torch_on_one_rank):
    run = broken_torch_on_one_rank
    assert run.rc == 1
    (missing,) = run.report["job"]["missing"]
    assert missing["rank"] == 1 and missing["stage"] == "never-joined" and missing["host"] is None
    # the rank itself says why, in one line on stderr (torchrun passes it through)
    assert ("torchdoctor: error: rank 1: `import torch` failed (ImportError: libcudnn.so.9: cannot open "
            "shared object file: No such file or directory); run `torchdoctor check` on this node") in run.err
    assert f'File "{REPO / "torchdoctor"}' not in run.err  # no traceback of ours (torchrun prints its own)
    assert leftover(run.marker) == []


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_a_rank_that_hangs_is_named_within_the_timeout(hung):
    assert hung.rc == 1, hung.err[-2000:]
    report = hung.report  # rank 0 reported (it was not killed by its backstop alarm) ...
    # ... after waiting for rank 1 until its deadline, less what it keeps to build the report;
    # a lower bound only: a busy machine makes the run slower, never faster
    from torchdoctor.distributed.rank import reserve_s

    assert report["seconds"] >= HANG_TIMEOUT - reserve_s(HANG_TIMEOUT)
    assert report["job"]["timeout_s"] == HANG_TIMEOUT
    (missing,) = report["job"]["missing"]
    assert missing["rank"] == 1 and missing["stage"] == "no-facts"
    assert f"joined, then sent no facts within {HANG_TIMEOUT} s (hangs or died)" in missing["detail"]
    assert report["job"]["stopped_by_launcher"] is False
    assert hung.finding("job-rank-missing")["finding"]["severity"] == "error"
    # gloo could not form without rank 1: shown, but not a second finding
    assert any(not c["ok"] for c in report["job"]["collectives"])
    assert not [p for p in report["findings"] if p["finding"]["id"] == "job-collective-failed"]
    assert leftover(hung.marker) == []


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_simulated_two_node_job_groups_by_node(two_nodes):
    node0, node1 = two_nodes
    assert node0.rc == 0, node0.err[-2000:]
    assert node1.rc == 0 and node1.out == ""  # node 1's ranks print nothing
    job = node0.report["job"]
    assert [(n["node"], n["ranks"]) for n in job["nodes"]] == [(0, [0, 1]), (1, [2, 3])]
    assert [r["node"] for r in job["ranks"]] == [0, 0, 1, 1]
    env = node0.finding("job-environment-differs")["finding"]["message"]
    assert env == "NCCL_SOCKET_IFNAME: node 1 (ranks 2-3): lo; the other 2 ranks: unset."
    text = _terminal(node0.report)
    assert "node 0" in text and "node 1" in text and "ranks 2-3 (2/2 local)" in text
    assert leftover(node0.marker) == []


@pytest.mark.torch
@pytest.mark.gpu
def test_nccl_all_reduce_and_bus_bandwidth_on_gpus():
    """Where CUDA works: one rank per GPU (up to 4), each on its own device, an NCCL all_reduce
    that succeeds and the bandwidth table for every size, busbw = algbw x 2(n-1)/n."""
    import torch

    n = min(torch.cuda.device_count(), 4)
    run = torchrun(n, "--timeout", "120", limit=240)
    assert run.rc in (0, 1), run.err[-2000:]
    job = run.report["job"]
    assert [r["device"] for r in job["ranks"]] == [f"cuda:{i}" for i in range(n)]
    assert all(not node["shared_devices"] for node in job["nodes"])
    nccl = [c for c in job["collectives"] if c["backend"] == "nccl"]
    assert nccl and all(c["ok"] for c in nccl), nccl
    assert [b["size_bytes"] for b in job["bandwidth"]] == list(bandwidth.SIZES)
    for b in job["bandwidth"]:
        assert b["algbw_gbps"] > 0
        assert b["busbw_gbps"] == pytest.approx(b["algbw_gbps"] * 2 * (n - 1) / n, abs=0.002)
    assert "NCCL all_reduce bandwidth" in _terminal(run.report)


@pytest.mark.torch
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_srun_variables_without_torchrun():
    """Two processes with only SLURM's variables (as srun starts them) and MASTER_ADDR: rank 0
    hosts the store itself; SLURM's node id and tasks per node become the node's facts."""
    port, marker = _free_port(), uuid.uuid4().hex
    procs = []
    for rank in (0, 1):
        slurm = {"SLURM_PROCID": str(rank), "SLURM_NTASKS": "2", "SLURM_LOCALID": str(rank),
                 "SLURM_NODEID": "0", "SLURM_NTASKS_PER_NODE": "2", "SLURM_JOB_ID": "42",
                 "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1"}
        env = {k: v for k, v in _env(marker, **slurm).items()
               if k not in ("LOCAL_RANK", "GROUP_RANK", "LOCAL_WORLD_SIZE") and not k.startswith("TORCHELASTIC_")}
        procs.append(subprocess.Popen([sys.executable, "-m", "torchdoctor", "check", "--distributed",
                                       "--format", "json", "--timeout", "60"], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=90) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs[0][1][-2000:]
    assert outs[1][0] == ""
    job = json.loads(outs[0][0])["job"]
    assert job["launcher"] == "slurm" and [r["rank"] for r in job["ranks"]] == [0, 1]
    assert [(n["node"], n["ranks"], n["local_world_size"]) for n in job["nodes"]] == [(0, [0, 1], 2)]
    assert all(c["ok"] for c in job["collectives"])
    assert leftover(marker) == []


# ----------------------------------------------------------------------------------------
# without a launcher
# ----------------------------------------------------------------------------------------


def test_without_a_launcher_one_line_says_what_to_run():
    env = {k: v for k, v in _env("none").items()
           if not k.startswith(("SLURM_", "TORCHELASTIC_")) and k not in ("LOCAL_RANK", "GROUP_RANK")}
    done = subprocess.run([sys.executable, "-m", "torchdoctor", "check", "--distributed"], env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "torchrun --nproc-per-node N -m torchdoctor check --distributed" in lines[0]


def test_distributed_refuses_recorded_facts(facts_file):
    done = subprocess.run([sys.executable, "-m", "torchdoctor", "check", "--distributed", "--facts", str(facts_file)],
                          env=_env("none", RANK="0", WORLD_SIZE="1", MASTER_ADDR="127.0.0.1"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "cannot be combined with --facts" in done.stderr


def test_launcher_variables():
    torchrun_env = {"RANK": "5", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
                    "GROUP_RANK": "1", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500",
                    "TORCHELASTIC_RUN_ID": "job 1", "TORCHELASTIC_RESTART_COUNT": "2"}
    got = from_env(torchrun_env)
    assert (got.launcher, got.rank, got.world_size, got.local_rank, got.local_world_size, got.node) == \
        ("torchrun", 5, 8, 1, 4, 1)
    assert got.run_id == "job_1.2"
    slurm = {"SLURM_PROCID": "9", "SLURM_NTASKS": "16", "SLURM_LOCALID": "1", "SLURM_NODEID": "1",
             "SLURM_NTASKS_PER_NODE": "8(x2)", "SLURM_JOB_ID": "77", "MASTER_ADDR": "gpu-a"}
    got = from_env(slurm)
    assert (got.launcher, got.rank, got.world_size, got.local_rank, got.local_world_size, got.node,
            got.master_port) == ("slurm", 9, 16, 1, 8, 1, 29500)
    with pytest.raises(NotLaunched):
        from_env({})
    for bad, what in (({**slurm, "MASTER_ADDR": ""}, "MASTER_ADDR is not set"),
                      ({**torchrun_env, "RANK": "8"}, "not below the world size"),
                      ({**torchrun_env, "WORLD_SIZE": "9" * 5000}, "WORLD_SIZE="),
                      ({**torchrun_env, "MASTER_PORT": "70000"}, "MASTER_PORT=.70000.: not a whole number"),
                      ({**torchrun_env, "MASTER_ADDR": "a;rm -rf /"}, "not a host name")):
        with pytest.raises(BadLaunch, match=what) as exc:
            from_env(bad)
        assert len(str(exc.value)) < 200


# ----------------------------------------------------------------------------------------
# bandwidth (NCCL-tests' definition) on recorded measurements
# ----------------------------------------------------------------------------------------


def test_busbw_reproduces_recorded_nccl_tests_output():
    data = yaml.safe_load((DATA / "distributed" / "nccl_tests_all_reduce.yaml").read_text())
    checked = 0
    for run in data["runs"]:
        for row in run["rows"]:
            s = bandwidth.sample(row["size"], row["time_us"] / 1e6, run["ranks"])
            assert abs(s.algbw_gbps - row["algbw"]) <= 0.006, (run["source"], row)
            assert abs(s.busbw_gbps - row["busbw"]) <= 0.006, (run["source"], row)
            checked += 1
    assert checked == 7


def test_rank_0_turns_recorded_timings_into_the_bandwidth_table():
    """What rank 0 does with the NCCL timings it measured (the slowest rank's time per size):
    the recorded 2-rank H100 rows give back nccl-tests' algbw/busbw, in the report and its views."""
    from torchdoctor.distributed.job import build_job
    from torchdoctor.distributed.launch import Launch
    from torchdoctor.render.distributed import render

    run = yaml.safe_load((DATA / "distributed" / "nccl_tests_all_reduce.yaml").read_text())["runs"][0]
    recorded = JobReport.model_validate_json(RECORDED_JOB.read_text())
    launch = Launch("torchrun", 0, 2, 0, 2, 0, "127.0.0.1", 29500, "t.0")
    got = {"hello": {0: {"host": "a", "pid": 1}, 1: {"host": "a", "pid": 2}},
           "facts": {r.rank: r.model_dump_json() for r in recorded.job.ranks[:2]}, "status": {},
           "stopped": False,
           "conn": {0: {"results": [{"backend": "nccl", "op": "all_reduce", "ok": True, "seconds": 0.5}],
                        "bandwidth": [{"size_bytes": row["size"], "seconds": row["time_us"] / 1e6}
                                      for row in reversed(run["rows"])], "step": None},
                    1: {"results": [{"backend": "nccl", "op": "all_reduce", "ok": True, "seconds": 0.4}],
                        "bandwidth": [], "step": None}}}
    job = build_job(launch, 60.0, got)
    assert [(b.size_bytes, round(b.busbw_gbps, 2)) for b in job.bandwidth] == \
        [(row["size"], row["busbw"]) for row in run["rows"]]
    (nccl,) = job.collectives
    assert nccl.ok and nccl.seconds == 0.5
    text = render(JobReport(tool_version="t", job=job), "terminal", width=100)
    assert "NCCL all_reduce bandwidth (2 ranks" in text and "1024 MiB" in text and "115.37" in text


def test_what_other_ranks_send_is_bounded_and_sanitised():
    """Rank 0 reads other processes, maybe other machines: garbage is a named problem, never a
    crash, an escape sequence or an unbounded line."""
    from torchdoctor.distributed.job import build_job
    from torchdoctor.distributed.launch import Launch

    recorded = JobReport.model_validate_json(RECORDED_JOB.read_text())
    rank0 = recorded.job.ranks[0]
    liar = recorded.job.ranks[1].model_copy(update={"rank": 3})  # sent as rank 1
    got = {"hello": {0: {"host": "a"}, 1: {"host": "b"}, 2: {"host": "\x1b]0;pwned\x07" + "x" * 5000, "node": "0"},
                     3: ["not", "a", "dict"]},
           "facts": {0: rank0.model_dump_json(), 1: liar.model_dump_json(), 2: "{not json"},
           "status": {3: "failed: \x1b[31mred\x1b[0m " + "y" * 5000}, "stopped": False,
           "conn": {0: {"results": [{"backend": "gloo", "op": "all_reduce", "ok": True, "seconds": 0.1}]},
                    1: "garbage", 2: {"results": [{"backend": "evil", "op": 1}], "step": 7}}}
    job = build_job(Launch("torchrun", 0, 4, 0, 4, 0, "127.0.0.1", 29500, "t.0"), 60.0, got)
    assert [r.rank for r in job.ranks] == [0]
    missing = {m.rank: m for m in job.missing}
    assert missing[1].detail == "sent the facts of rank 3"
    assert missing[2].detail.startswith("sent facts that do not parse")
    assert missing[2].host is not None and "\x1b" not in missing[2].host and len(missing[2].host) <= 255
    assert missing[2].node == 2  # "0" is not a node number: placed by its (third) host name
    assert missing[3].stage == "failed" and "\x1b" not in missing[3].detail and len(missing[3].detail) <= 300
    assert [(c.backend, c.op, c.ok) for c in job.collectives] == [("gloo", "all_reduce", True)]


def test_busbw_factor_is_two_n_minus_one_over_n():
    # nccl-tests src/all_reduce.cu AllReduceGetBw: factor = 2*(nranks-1)/nranks
    assert bandwidth.busbw_gbps(10**9, 1.0, 8) == pytest.approx(1.75)
    assert bandwidth.busbw_gbps(10**9, 1.0, 1) == 0.0
    assert bandwidth.busbw_gbps(10**9, 2.0, 16) == pytest.approx(0.5 * 30 / 16)
    with pytest.raises(ValueError):
        bandwidth.algbw_gbps(1, 0.0)
    table = bandwidth.samples([(64 << 20, 0.004), (1 << 20, 0.0001)], 4)
    assert [s.size_bytes for s in table] == [1 << 20, 64 << 20]


# ----------------------------------------------------------------------------------------
# naming the odd ranks, rendering and redacting a recorded job
# ----------------------------------------------------------------------------------------


def _job(values: list[tuple[int, int]]) -> JobFacts:
    return JobFacts(launcher="torchrun", world_size=len(values), timeout_s=60,
                    ranks=[RankFacts(rank=r, node=n, host=f"node{n}", facts=Facts()) for r, n in values])


def test_odd_ones_names_whole_nodes_and_single_ranks():
    job = _job([(0, 0), (1, 0), (2, 1), (3, 1), (4, 2), (5, 2)])
    pairs = [(0, "a"), (1, "a"), (2, "b"), (3, "b"), (4, "a"), (5, "c")]
    assert compare.odd_ones(job, pairs) == "node 1 (ranks 2-3): b; rank 5 on node 2: c; the other 3 ranks: a"
    assert compare.odd_ranks(pairs) == [2, 3, 5]
    assert compare.odd_ones(job, [(0, "x"), (1, "x")]) == "all 2 ranks: x"
    assert compare.keys_differing([(0, {"NCCL_A": "1", "RANK": "0"}), (1, {"RANK": "1"})], ["NCCL_"]) == ["NCCL_A"]


def _terminal(report: dict) -> str:
    from torchdoctor.render.distributed import render

    return render(JobReport.model_validate(report), "terminal", width=100)


def test_recorded_two_node_job_renders_per_node_and_redacts_hosts():
    from torchdoctor.distributed.job import redact_job
    from torchdoctor.render.distributed import render

    report = JobReport.model_validate_json(RECORDED_JOB.read_text())
    renamed = report.model_copy(update={"job": report.job.model_copy(update={
        "ranks": [r.model_copy(update={"host": f"gpu-node-{r.node}.cluster"}) for r in report.job.ranks],
        "nodes": [n.model_copy(update={"host": f"gpu-node-{n.node}.cluster"}) for n in report.job.nodes]})})
    redacted = redact_job(renamed)
    dumped = redacted.model_dump_json()
    assert "gpu-node-" not in dumped and "<host>" in dumped
    text = render(redacted, "terminal", width=100)
    assert text.count("  node ") == 2 and "ranks 2-3" in text
    markdown = render(redacted, "markdown")
    assert "| 1 | &lt;host&gt; | 2-3 |" in markdown
    assert json.loads(render(redacted, "json"))["job"]["world_size"] == 4


@pytest.mark.parametrize("host", ["vm", "a", "gpu-node-1.cluster"])
def test_every_host_name_of_the_job_is_redacted_in_every_view(host):
    """docs/distributed.md: every host name of the job becomes <host>: in the host fields
    whatever its length (this machine is called `vm`), in text as a whole word from 2 characters."""
    from torchdoctor.distributed.job import redact_job
    from torchdoctor.distributed.model import PlacedFinding
    from torchdoctor.facts import MissingRank
    from torchdoctor.render.distributed import render
    from torchdoctor.report import Finding

    report = JobReport.model_validate_json(RECORDED_JOB.read_text())
    missing = MissingRank(rank=3, host=host, node=1, stage="no-facts", detail="joined, then sent no facts")
    said = Finding(id="job-rank-missing", severity="error", category="distributed",
                   message=f"rank 3 on node 1 ({host}): joined, then sent no facts.")
    named = report.model_copy(update={
        "findings": [PlacedFinding(finding=said)],
        "job": report.job.model_copy(update={
            "ranks": [r.model_copy(update={"host": host}) for r in report.job.ranks[:3]],
            "nodes": [n.model_copy(update={"host": host}) for n in report.job.nodes],
            "missing": [missing]})})
    redacted = redact_job(named)
    word = re.compile(rf"(?<![A-Za-z0-9-]){re.escape(host)}(?![A-Za-z0-9-])")
    for fmt in ("terminal", "markdown", "json"):
        text = render(redacted, fmt, width=100)
        fields = [line for line in text.splitlines() if "node 0" in line or '"host"' in line or "| 0 |" in line]
        assert fields and not any(word.search(line) for line in fields), (fmt, fields)
        if len(host) >= 2:
            assert not word.search(text), (fmt, word.search(text))
    assert {r.host for r in redacted.job.ranks} | {n.host for n in redacted.job.nodes} \
        | {m.host for m in redacted.job.missing} == {"<host>"}
    assert "(<host>)" in redacted.findings[0].finding.message or len(host) < 2
