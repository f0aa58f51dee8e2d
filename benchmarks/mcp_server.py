"""What `torchdoctor mcp` costs a client, against the CLI doing the same work, in one run.

With the MCP SDK's own stdio client (as tests/test_mcp_server.py does):
  start                 spawn `python -m torchdoctor mcp` until `initialize` is answered
  tools/list            one listing (the five tools with their schemas)
  first <tool>          the first call of each tool (rules and tables loaded)
  <tool>                the median of the next --reps calls (the server keeps its caches)
and as baselines, processes started by the CLI, each the median of --reps runs:
  torchdoctor --help
  torchdoctor check --from-report F    (the same text as the `check` calls)

The ratio column divides by `torchdoctor check --from-report F`: the cost of one MCP `check`
call against starting the CLI for it.

Usage: python benchmarks/mcp_server.py [--reps 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timed import timed  # noqa: E402
DATA = REPO / "tests" / "data"
REPORT = DATA / "cases" / "case101.txt"


def calls() -> dict:
    return {
        "check": {"report": REPORT.read_text(encoding="utf-8")},
        "recommend": {"task": "detection", "gpu": "A100", "torch_version": "2.4"},
        "lint": {"source": (DATA / "fix-corpus" / "swin_main.py.txt").read_text(encoding="utf-8"),
                 "filename": "swin_main.py", "torch_version": "2.4"},
        "explain_rule": {"rule_id": "gpu-arch-not-in-build"},
        "triage": {"issue": json.loads((DATA / "triage" / "vllm-13537.json").read_text(encoding="utf-8"))},
    }


def over_mcp(reps: int) -> dict:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "torchdoctor", "mcp"], cwd=str(REPO))
    out: dict = {}

    async def main():
        with anyio.fail_after(600):
            t0 = time.perf_counter()
            async with stdio_client(params) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    out["start"] = time.perf_counter() - t0
                    t0 = time.perf_counter()
                    listed = await session.list_tools()
                    out["tools/list"] = time.perf_counter() - t0
                    assert len(listed.tools) == 5
                    for name, args in calls().items():
                        times = []
                        for _ in range(reps + 1):
                            t0 = time.perf_counter()
                            result = await session.call_tool(name, args)
                            times.append(time.perf_counter() - t0)
                            assert not result.is_error, result.content[0].text
                        out[f"first {name}"] = times[0]
                        out[name] = statistics.median(times[1:])

    anyio.run(main)
    return out


def cli(reps: int) -> dict:
    exe = sys.executable
    rows = {"torchdoctor --help": [exe, "-m", "torchdoctor", "--help"],
            "torchdoctor check --from-report F": [exe, "-m", "torchdoctor", "check", "--from-report", str(REPORT),
                                                  "--fail-on", "never"]}
    out = {}
    for name, argv in rows.items():
        times = []
        for _ in range(reps + 1):
            wall, _cpu, rc = timed(argv)
            if rc != 0:
                raise SystemExit(f"{' '.join(argv)}: exit {rc}")
            times.append(wall)
        out[name] = statistics.median(times[1:])  # the first run warms the caches
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = {**cli(args.reps), **over_mcp(args.reps)}
    base = rows["torchdoctor check --from-report F"]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'':40} {'seconds':>8} {'ratio':>6}")
    for name, seconds in rows.items():
        print(f"{name:40} {seconds:8.3f} {seconds / base:6.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
