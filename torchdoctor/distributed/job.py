"""From what the ranks sent to one :class:`JobReport`: this rank's facts, the job's facts
(nodes, missing ranks, collectives, bandwidth), the rules evaluated per rank and over the job,
and redaction of every host of the job."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from typing import Any, Iterable, Optional, Sequence

from torchdoctor.distributed import bandwidth, compare
from torchdoctor.distributed.launch import Launch
from torchdoctor.distributed.model import JobReport, PlacedFinding
from torchdoctor.facts import (
    CollectiveResult,
    Facts,
    JobFacts,
    MissingRank,
    NodeFacts,
    RankFacts,
    Unavailable,
)
from torchdoctor.report import SEVERITY_RANK
from torchdoctor.version import __version__

RANK_VARIABLES = frozenset({"RANK", "LOCAL_RANK", "GROUP_RANK", "ROLE_RANK", "SLURM_PROCID",
                            "SLURM_LOCALID", "SLURM_NODEID", "TORCHELASTIC_ERROR_FILE"})
"""Environment variables that differ per rank by design: left out when ranks whose facts are
otherwise equal share one evaluation."""


# ----------------------------------------------------------------------------------------
# on every rank
# ----------------------------------------------------------------------------------------


def probe_rank(torch: Any, run: Any) -> RankFacts:
    """This rank's facts: the probes of `check`, with torch read in this process (CUDA is
    initialised on the rank's own device first, so the device facts are read too)."""
    from torchdoctor.distributed.rank import host_name
    from torchdoctor.probes import ProbeContext, collect, run_one
    from torchdoctor.probes.pytorch import facts_in_process

    launch: Launch = run.launch
    device = device_id = None
    try:
        if torch.cuda.is_available() and torch.cuda.device_count() > 0:
            index = (launch.local_rank or 0) % torch.cuda.device_count()
            torch.cuda.set_device(index)
            torch.cuda.init()
            device = f"cuda:{index}"
            uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
            visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
            device_id = str(uuid) if uuid else (visible[index] if index < len(visible) else str(index))
    except Exception:  # noqa: BLE001 - the torch probe reports a CUDA that does not work
        device = device_id = None

    def runner(name: str, ctx: ProbeContext) -> object:
        return facts_in_process() if name == "torch" else run_one(name, ctx)

    facts = collect(ProbeContext(timeout=run.timeout, debug=run.debug), runner=runner)
    return RankFacts(rank=launch.rank, local_rank=launch.local_rank,
                     node=-1 if launch.node is None else launch.node, host=host_name(),
                     device=device, device_id=device_id, facts=facts)


# ----------------------------------------------------------------------------------------
# rank 0: the job
# ----------------------------------------------------------------------------------------


def text(value: Any, limit: int = 300) -> str:
    """A string another rank sent (its host name, an error): one line, no control characters
    or escape sequences, bounded."""
    from torchdoctor.sanitize import one_line

    out = " ".join(one_line(str(value)).split())
    return out if len(out) <= limit else out[: limit - 1] + "…"


def build_job(launch: Launch, timeout: float, got: dict) -> JobFacts:
    """JobFacts from what rank 0 read: every rank's facts (sanitised again here: a rank is
    another process, maybe another machine), the nodes, the missing ranks, the collectives."""
    from torchdoctor.sanitize import sanitize_facts

    ranks: list[RankFacts] = []
    problems: dict[int, str] = {}
    for r, raw in sorted(got["facts"].items()):
        try:
            parsed = RankFacts.model_validate_json(raw)
        except ValueError as exc:
            problems[r] = f"sent facts that do not parse ({text(str(exc).splitlines()[0], 120)})"
            continue
        if parsed.rank != r:
            problems[r] = f"sent the facts of rank {parsed.rank}"
            continue
        ranks.append(parsed.model_copy(update={"facts": sanitize_facts(parsed.facts),
                                               "host": text(parsed.host, 255)}))
    hello: dict[int, dict] = {r: h for r, h in got["hello"].items() if isinstance(h, dict)}
    node_of_host: dict[str, int] = {}
    for r in sorted(set(hello) | {x.rank for x in ranks}):
        host = next((x.host for x in ranks if x.rank == r), None) or text(hello.get(r, {}).get("host", ""), 255)
        if host and host not in node_of_host:
            node_of_host[host] = len(node_of_host)
    ranks = [x if x.node >= 0 else x.model_copy(update={"node": node_of_host.get(x.host, 0)}) for x in ranks]
    arrived = {x.rank for x in ranks}
    missing = [_missing(r, hello.get(r), got["status"].get(r), problems.get(r), node_of_host,
                        got["stopped"], timeout)
               for r in range(launch.world_size) if r not in arrived]
    return JobFacts(
        launcher=launch.launcher, world_size=launch.world_size, ranks=ranks,
        nodes=_nodes(ranks, hello), missing=missing,
        collectives=_collectives(got["conn"], timeout, bool(got["stopped"])),
        bandwidth=bandwidth.samples(((int(b["size_bytes"]), float(b["seconds"]))
                                     for b in got["conn"].get(0, {}).get("bandwidth", [])
                                     if float(b["seconds"]) > 0), launch.world_size),  # rank 0's own
        timeout_s=timeout, stopped_by_launcher=bool(got["stopped"]))


def _missing(rank: int, hello: Optional[dict], status: Optional[str], problem: Optional[str],
             node_of_host: dict[str, int], stopped: bool, timeout: float) -> MissingRank:
    host = text(hello["host"], 255) if hello and hello.get("host") else None
    node = hello.get("node") if hello else None
    node = node if isinstance(node, int) else None
    if node is None and host is not None:
        node = node_of_host.get(host)
    if problem:
        return MissingRank(rank=rank, host=host, node=node, stage="failed", detail=problem)
    if status == "stopped":
        return MissingRank(rank=rank, host=host, node=node, stage="stopped",
                           detail="stopped by the launcher (another rank exited) before it reported")
    if status:
        return MissingRank(rank=rank, host=host, node=node, stage="failed", detail=text(status))
    if hello is None:
        detail = ("had not joined when the launcher stopped the job" if stopped else
                  "never joined the rendezvous (not started, crashed at start-up, or cannot reach "
                  "MASTER_ADDR:MASTER_PORT)")
        return MissingRank(rank=rank, stage="never-joined", detail=detail)
    detail = (f"pid {hello.get('pid')} joined, then exited before sending its facts" if stopped
              else f"pid {hello.get('pid')} joined, then sent no facts within {timeout:g} s (hangs or died)")
    return MissingRank(rank=rank, host=host, node=node, stage="no-facts", detail=detail)


def _maybe(ranks: Sequence[RankFacts], read: Any) -> Any:
    """``read(facts)`` of each rank, or Unavailable (with the reason) if any is unknown."""
    out = []
    for r in ranks:
        try:
            value = read(r.facts)
        except (AttributeError, TypeError):
            value = None
        if isinstance(value, Unavailable):
            return value
        out.append(value)
    return out


def _nodes(ranks: Sequence[RankFacts], hello: dict) -> list[NodeFacts]:
    by_node: dict[int, list[RankFacts]] = {}
    for r in ranks:
        by_node.setdefault(r.node, []).append(r)
    nodes = []
    for node, members in sorted(by_node.items()):
        first = members[0].facts
        threads = _maybe(members, lambda f: f.torch.num_threads if not isinstance(f.torch, Unavailable) else f.torch)
        cpu = first.cpu
        usable = cpu if isinstance(cpu, Unavailable) else cpu.effective_cpus
        gpu = first.gpu
        gpus: Any = gpu if isinstance(gpu, Unavailable) else gpu.count
        visible = _maybe(members, lambda f: f.torch.device_count if not isinstance(f.torch, Unavailable) else f.torch)
        visible_max: Any = visible if isinstance(visible, Unavailable) else max(visible, default=None)
        if isinstance(gpus, Unavailable) and not isinstance(visible_max, Unavailable):
            gpus = visible_max  # no NVML (no NVIDIA driver): what torch sees
        mem = first.memory
        env = first.env
        omp = None if isinstance(env, Unavailable) or isinstance(env.variables, Unavailable) \
            else env.variables.get("OMP_NUM_THREADS")
        devices = [r.device_id for r in members if r.device_id is not None]
        shared = sorted(d for d, n in Counter(devices).items() if n > 1)
        lws = hello.get(members[0].rank, {}).get("local_world_size")
        nodes.append(NodeFacts(
            node=node, host=members[0].host, ranks=[r.rank for r in members],
            local_world_size=lws if isinstance(lws, int) else None,
            usable_cpus=usable, threads=threads,
            threads_total=threads if isinstance(threads, Unavailable) else sum(threads),
            omp_num_threads=omp, gpus=gpus, visible_gpus=visible_max, devices=devices,
            shared_devices=shared,
            shm_total_bytes=mem if isinstance(mem, Unavailable) else mem.shm_total_bytes,
            shm_free_bytes=mem if isinstance(mem, Unavailable) else mem.shm_free_bytes))
    return nodes


def _collectives(conns: dict, timeout: float, stopped: bool = False) -> list[CollectiveResult]:
    """Each rank's results merged per (backend, op): ok only if ok on every rank that ran it;
    a rank whose thread was still inside a step at its deadline failed that step."""
    merged: dict[tuple[str, str], dict] = {}
    for rank, summary in sorted(conns.items()):
        if not isinstance(summary, dict) or not isinstance(summary.get("results", []), list):
            continue  # not what a rank of ours writes
        for res in summary.get("results", []):
            if not (isinstance(res, dict) and res.get("backend") in ("gloo", "nccl")
                    and isinstance(res.get("op"), str) and isinstance(res.get("seconds", 0) or 0, (int, float))):
                continue
            entry = merged.setdefault((res["backend"], text(res["op"], 40)),
                                      {"ok": True, "seconds": 0.0, "error": None, "failed": []})
            entry["seconds"] = max(entry["seconds"], float(res.get("seconds") or 0.0))
            if not res.get("ok"):
                entry["ok"] = False
                entry["failed"].append(rank)
                entry["error"] = entry["error"] or (text(res["error"]) if res.get("error") else None)
        step = summary.get("step")
        if isinstance(step, str) and step:
            backend, _, op = str(step).partition(" ")
            op = op.split(" (")[0].split(" of ")[0] or "step"
            entry = merged.setdefault((backend, op), {"ok": True, "seconds": 0.0, "error": None, "failed": []})
            entry["ok"] = False
            entry["failed"].append(rank)
            entry["error"] = entry["error"] or ("still waiting when the launcher stopped the job" if stopped
                                                else f"did not finish within the {timeout:g} s timeout")
    return [CollectiveResult(backend=b if b in ("gloo", "nccl") else "gloo", op=op, ok=e["ok"],
                             seconds=round(e["seconds"], 4) if e["ok"] else None, error=e["error"],
                             failed_ranks=e["failed"])
            for (b, op), e in merged.items()]


# ----------------------------------------------------------------------------------------
# rank 0: judgements
# ----------------------------------------------------------------------------------------


def _evaluation_key(facts: Facts) -> str:
    data = facts.model_dump(mode="json")
    env = data.get("env")
    if isinstance(env, dict) and isinstance(env.get("variables"), dict):
        env["variables"] = {k: v for k, v in env["variables"].items() if k not in RANK_VARIABLES}
    return json.dumps(data, sort_keys=True)


def evaluate_job(job: JobFacts, rules: Sequence[Any], ignore: Iterable[str] = (),
                 seconds: float = 0.0) -> JobReport:
    """Rules over the job (placed ``job``; their messages name the odd nodes/ranks), then each
    rank's `check` findings merged by rule and message and placed on the ranks where they fired."""
    from torchdoctor.engine import evaluate

    ignore = list(ignore)
    job_report = evaluate(rules, Facts(origin="job"), None, command="check", ignore=ignore, job=job)
    placed = [PlacedFinding(finding=f, where="job") for f in job_report.findings]
    per_rank: dict[tuple[str, str], tuple[Any, list[int]]] = {}
    cache: dict[str, Any] = {}
    per_rank_rules = 0
    for r in job.ranks:
        key = _evaluation_key(r.facts)
        if key not in cache:
            cache[key] = evaluate(rules, r.facts, None, command="check", ignore=ignore)
            per_rank_rules = cache[key].rules_evaluated
        for f in cache[key].findings:
            per_rank.setdefault((f.id, f.message), (f, []))[1].append(r.rank)
    for finding, ranks in per_rank.values():
        where = "every rank" if len(ranks) == len(job.ranks) else compare.place(job, ranks)
        placed.append(PlacedFinding(finding=finding, ranks=ranks, where=where))
    placed.sort(key=lambda p: (SEVERITY_RANK[p.finding.severity], p.where != "job", p.finding.id))
    return JobReport(tool_version=__version__, job=job, findings=placed,
                     skipped=job_report.skipped, rules_evaluated=job_report.rules_evaluated + per_rank_rules,
                     seconds=round(seconds, 2))


# ----------------------------------------------------------------------------------------
# redaction: every host of the job, then what redact.py does for this machine
# ----------------------------------------------------------------------------------------


def redact_job(report: JobReport) -> JobReport:
    """Every host name of the job becomes ``<host>`` (docs/distributed.md, "Redaction"): in
    its host fields (ranks, nodes, missing ranks) whatever it is; in text (messages, details,
    every rank's facts) wherever it stands as a whole word, when it has at least 2 characters
    and is no generic name (``localhost``, ``node``, see redact.GENERIC_NAMES): a one-letter
    name cannot be told from a word. Then what redact.py does for this machine."""
    from torchdoctor.redact import GENERIC_NAMES, HOST, redact_data

    names: set[str] = set()
    for host in [r.host for r in report.job.ranks] + [n.host for n in report.job.nodes] \
            + [m.host for m in report.job.missing if m.host]:
        for name in (host, host.split(".")[0]):
            if len(name) >= 2 and name.lower() not in GENERIC_NAMES | {"unknown"}:
                names.add(name)
    data = report.model_dump(mode="json")
    job = data["job"]
    for item in job["ranks"] + job["nodes"] + job["missing"]:
        if item.get("host"):
            item["host"] = HOST
    if names:
        pattern = re.compile(r"(?<![A-Za-z0-9-])(?:" + "|".join(
            re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")(?![A-Za-z0-9-])")
        data = _replace_strings(data, lambda s: pattern.sub(HOST, s))
    return JobReport.model_validate(redact_data(data))


def _replace_strings(data: Any, fn: Any) -> Any:
    if isinstance(data, str):
        return fn(data)
    if isinstance(data, dict):
        return {k: _replace_strings(v, fn) for k, v in data.items()}
    if isinstance(data, list):
        return [_replace_strings(v, fn) for v in data]
    return data


__all__ = ["build_job", "evaluate_job", "probe_rank", "redact_job"]
