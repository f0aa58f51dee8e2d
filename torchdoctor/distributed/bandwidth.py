"""Bandwidth of an all_reduce as NCCL-tests reports it (doc/PERFORMANCE.md of NVIDIA/nccl-tests).

- algorithm bandwidth: ``algbw = S / t`` (S: bytes per rank, t: time of one operation);
- bus bandwidth: for all_reduce ``busbw = algbw * 2(n-1)/n`` (n ranks): the traffic a ring
  all_reduce puts on the slowest link, comparable with the hardware's peak whatever n is.

Units: GB/s with 1 GB = 10^9 bytes, as nccl-tests prints them. Pure arithmetic; the timing
loop lives in :mod:`torchdoctor.distributed.collectives`.
"""

from __future__ import annotations

from typing import Iterable

from torchdoctor.facts import BandwidthSample

BUS_FACTORS = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
}
"""busbw / algbw per collective (nccl-tests doc/PERFORMANCE.md)."""

SIZES = (1 << 20, 8 << 20, 64 << 20, 256 << 20)
"""Message sizes measured on GPU (bytes per rank): 1 MiB to 256 MiB."""


def algbw_gbps(size_bytes: int, seconds: float) -> float:
    if seconds <= 0:
        raise ValueError(f"time must be positive, got {seconds!r}")
    return size_bytes / seconds / 1e9


def busbw_gbps(size_bytes: int, seconds: float, ranks: int, op: str = "all_reduce") -> float:
    if ranks < 1:
        raise ValueError(f"ranks must be >= 1, got {ranks!r}")
    return algbw_gbps(size_bytes, seconds) * BUS_FACTORS[op](ranks)


def sample(size_bytes: int, seconds: float, ranks: int, op: str = "all_reduce") -> BandwidthSample:
    return BandwidthSample(size_bytes=size_bytes, seconds=seconds,
                           algbw_gbps=round(algbw_gbps(size_bytes, seconds), 3),
                           busbw_gbps=round(busbw_gbps(size_bytes, seconds, ranks, op), 3))


def samples(times: Iterable[tuple[int, float]], ranks: int, op: str = "all_reduce") -> list[BandwidthSample]:
    """(size, seconds per operation) pairs -> samples, in size order."""
    return [sample(size, t, ranks, op) for size, t in sorted(times)]
