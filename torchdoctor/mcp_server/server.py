"""The MCP server over stdio, on the SDK's low-level :class:`mcp.server.lowlevel.Server`: the
tools of tools.py with the schemas of schemas.py. The only module of torchdoctor that imports
``mcp``.

- stdout carries protocol messages only: the SDK's stdio transport points fd 1 at stderr while
  it serves, so a stray print (ours, a library's, a child's) cannot corrupt the stream; our logs
  go to stderr.
- one tool runs at a time, in a worker thread (the probe and the rule caches are not shared
  between concurrent calls);
- every failure of a call is an error result (``isError``) with one line; the server keeps
  serving. The traceback of an unexpected one goes to stderr.
- a request line longer than :data:`MAX_LINE` is dropped unread, so one message cannot make
  the server hold gigabytes;
- stdin is read by a daemon thread, so SIGTERM (143) and Ctrl-C (130) end the server at once,
  killing a probe's children first; closing stdin ends it with 0.
"""

from __future__ import annotations

import contextlib
import json
import logging
import sys
import threading
from typing import Any, Optional

import anyio
import anyio.to_thread
import mcp.types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from torchdoctor.mcp_server import tools
from torchdoctor.mcp_server.schemas import MAX_TEXT, input_schemas, output_schemas
from torchdoctor.sanitize import one_line
from torchdoctor.version import __version__

log = logging.getLogger("torchdoctor.mcp")

MAX_LINE = 8 * MAX_TEXT + 1024 * 1024
"""Characters of one JSON-RPC message: the largest text argument, every character escaped
(``\\u0000`` is six), and room for the rest."""

INSTRUCTIONS = (
    "torchdoctor diagnoses PyTorch environments deterministically (rules with stable ids, "
    "fixes and references). Use `check` on a pasted collect_env or issue body, recorded facts or "
    "this machine; `recommend` for a workload's settings and setup snippet; `lint` on source "
    "text; `explain_rule` for any rule id a result names; `triage` on a GitHub issue.")

_one_at_a_time = threading.Lock()


def _run(name: str, arguments: Any) -> dict:
    with _one_at_a_time:
        return tools.call(name, arguments)


def tool_list() -> list:
    hints = types.ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                                  open_world_hint=False)
    outputs = output_schemas()
    return [types.Tool(name=name, title=tools.TITLES[name], description=tools.DESCRIPTIONS[name],
                       input_schema=schema, output_schema=outputs[name], annotations=hints)
            for name, schema in input_schemas().items()]


def build() -> Server:
    listed = tool_list()

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            result = await anyio.to_thread.run_sync(_run, params.name, params.arguments)
            text = json.dumps(result, indent=1)
        except Exception as exc:  # noqa: BLE001 - every failure is a result; the server serves on
            line = tools.error_line(exc)
            if isinstance(exc, tools.ToolInputError):
                log.info("%s", line)
            else:
                log.exception("tool %s failed: %s", one_line(params.name)[:80], line)
            return types.CallToolResult(content=[types.TextContent(type="text", text=line)], is_error=True)
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=result)

    return Server("torchdoctor", version=__version__, title="torchdoctor", instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool)


class _BoundedLines:
    """stdin as lines of at most :data:`MAX_LINE` characters: a longer line is consumed to its
    end and replaced by one that is not JSON (the SDK drops it and reads on)."""

    def __init__(self, stream: Any, limit: int = MAX_LINE) -> None:
        self._stream, self._limit = stream, limit

    def readline(self) -> str:
        line = self._stream.readline(self._limit + 1)
        if len(line) <= self._limit or line.endswith("\n"):
            return line
        while True:  # the rest of the over-long line, in bounded pieces
            rest = self._stream.readline(self._limit)
            if not rest or rest.endswith("\n"):
                break
        log.warning("dropped a message of more than %d characters", self._limit)
        return "(message too long)\n"

    async def __aiter__(self):
        """The lines, read by a daemon thread of ours (not an anyio worker, which the interpreter
        would wait for at exit): a blocked read of stdin never keeps the server from exiting."""
        import anyio.from_thread
        import anyio.lowlevel

        send, receive = anyio.create_memory_object_stream(1)
        token = anyio.lowlevel.current_token()

        def pump() -> None:
            try:
                while True:
                    line = self.readline()
                    anyio.from_thread.run(send.send, line, token=token)
                    if not line:
                        return
            except Exception:  # noqa: BLE001 - the loop is gone (the server is exiting) or stdin broke
                with contextlib.suppress(Exception):
                    anyio.from_thread.run_sync(send.close, token=token)

        threading.Thread(target=pump, name="torchdoctor-mcp-stdin", daemon=True).start()
        async with receive:
            async for line in receive:
                if not line:
                    return
                yield line


async def _until_signal(scope: anyio.CancelScope, got: list) -> None:
    """SIGTERM or Ctrl-C ends the serving (cancelling it, so no task is left behind)."""
    import signal

    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            got.append(int(signum))
            if "torchdoctor.probes._sys" in sys.modules:  # a probe of this machine ends now
                sys.modules["torchdoctor.probes._sys"].kill_all()
            scope.cancel()
            return


async def serve() -> None:
    """Serve on this process's stdin and stdout until the client closes stdin. fd 0 points at
    the null device meanwhile (the wire is read from a private duplicate, as the SDK does for
    stdout), so nothing else can read the client's messages."""
    import io
    import os

    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        # closefd=False and the duplicate left open: an abandoned reader thread may still block on it
        reader = io.open(wire, "r", encoding="utf-8", errors="replace", newline="\n", closefd=False)
        server = build()
        got: list = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(_until_signal, tg.cancel_scope, got)
            async with stdio_server(stdin=_BoundedLines(reader)) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            tg.cancel_scope.cancel()  # the client closed stdin: stop waiting for a signal
    finally:
        os.dup2(wire, 0)
        if "torchdoctor.probes._sys" in sys.modules:  # a probe still running: its children die with us
            sys.modules["torchdoctor.probes._sys"].kill_all()
    if got:
        import signal

        if got[0] == signal.SIGINT:
            raise KeyboardInterrupt  # cli: "torchdoctor: interrupted", exit 130
        raise SystemExit(128 + got[0])  # 143 on SIGTERM, as every command


def main() -> None:
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="torchdoctor mcp: %(levelname)s %(message)s")
    anyio.run(serve)
