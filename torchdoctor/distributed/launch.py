"""Which rank this process is, read from the launcher's variables (env:// convention).

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK (the node rank),
MASTER_ADDR and MASTER_PORT; SLURM's srun sets SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
SLURM_NODEID and SLURM_NTASKS_PER_NODE but no rendezvous address, so MASTER_ADDR must be
exported in the job script (MASTER_PORT defaults to 29500 as in torch). The env:// names win
when both are set (torchrun inside an allocation).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Optional

from torchdoctor.errors import UserError

MAX_WORLD_SIZE = 65536
DEFAULT_PORT = 29500

WHAT_TO_RUN = (
    "check --distributed runs once per rank under a launcher: "
    "`torchrun --nproc-per-node N -m torchdoctor check --distributed` "
    "(or `srun python -m torchdoctor check --distributed` with MASTER_ADDR set); "
    "for this process alone run `torchdoctor check`"
)


class NotLaunched(UserError):
    """No launcher variables: a single process (exit 2, one line saying what to run)."""


class BadLaunch(UserError):
    """Launcher variables present but unusable (exit 2)."""


@dataclass(frozen=True)
class Launch:
    launcher: str
    """torchrun | slurm | env"""
    rank: int
    world_size: int
    local_rank: Optional[int]
    local_world_size: Optional[int]
    node: Optional[int]
    """The launcher's node rank (GROUP_RANK, SLURM_NODEID); None: grouped by host name."""
    master_addr: str
    master_port: int
    run_id: str
    """Names this run's keys in the rendezvous store (TORCHELASTIC_RUN_ID, SLURM_JOB_ID.STEP)."""


def _int(env: Mapping[str, str], name: str, low: int = 0, high: int = MAX_WORLD_SIZE) -> Optional[int]:
    raw = env.get(name)
    if raw is None or raw == "":
        return None
    text = raw.strip()
    if not re.fullmatch(r"\d{1,6}", text) or not low <= int(text) <= high:
        from torchdoctor.safeio import clip

        raise BadLaunch(f"{name}={clip(raw)}: not a whole number from {low} to {high}")
    return int(text)


def _tasks_per_node(raw: Optional[str]) -> Optional[int]:
    """SLURM_NTASKS_PER_NODE / SLURM_TASKS_PER_NODE: ``4`` or ``4(x2)`` (same on every node);
    None for an uneven layout (``4(x2),2``)."""
    if not raw:
        return None
    m = re.fullmatch(r"(\d{1,6})(?:\(x\d{1,6}\))?", raw.strip())
    return int(m.group(1)) if m else None


def from_env(env: Mapping[str, str]) -> Launch:
    if env.get("RANK") is not None and env.get("WORLD_SIZE") is not None:
        launcher = "torchrun" if env.get("TORCHELASTIC_RUN_ID") else "env"
        rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE", 1)
        local_rank, local_world = _int(env, "LOCAL_RANK"), _int(env, "LOCAL_WORLD_SIZE", 1)
        node = _int(env, "GROUP_RANK")
        if node is None and launcher == "env":
            node = _int(env, "NODE_RANK")
        run_id = env.get("TORCHELASTIC_RUN_ID") or "env"
        run_id += "." + (env.get("TORCHELASTIC_RESTART_COUNT") or "0")
    elif env.get("SLURM_PROCID") is not None and env.get("SLURM_NTASKS") is not None:
        launcher = "slurm"
        rank, world = _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS", 1)
        local_rank, node = _int(env, "SLURM_LOCALID"), _int(env, "SLURM_NODEID")
        local_world = _tasks_per_node(env.get("SLURM_NTASKS_PER_NODE") or env.get("SLURM_TASKS_PER_NODE"))
        run_id = f"{env.get('SLURM_JOB_ID', 'slurm')}.{env.get('SLURM_STEP_ID', '0')}"
    else:
        raise NotLaunched(WHAT_TO_RUN)
    assert rank is not None and world is not None
    if rank >= world:
        raise BadLaunch(f"rank {rank} is not below the world size {world}")
    addr = (env.get("MASTER_ADDR") or "").strip()
    if not addr:
        raise BadLaunch("MASTER_ADDR is not set: export the address of rank 0's node "
                        "(under srun: MASTER_ADDR=$(scontrol show hostnames | head -n1))")
    if len(addr) > 255 or not re.fullmatch(r"[A-Za-z0-9_.:\[\]-]+", addr):
        from torchdoctor.safeio import clip

        raise BadLaunch(f"MASTER_ADDR={clip(addr)}: not a host name or address")
    port = _int(env, "MASTER_PORT", 1, 65535) or DEFAULT_PORT
    run_id = re.sub(r"[^A-Za-z0-9_.-]", "_", run_id)[:80]
    return Launch(launcher, rank, world, local_rank, local_world, node, addr, port, run_id)
