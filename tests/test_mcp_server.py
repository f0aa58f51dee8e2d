"""`torchdoctor mcp` answered by the MCP SDK's own client over stdio (issue 20, part 4).

Each test starts `python -m torchdoctor mcp` as a child and talks to it with
``mcp.client.stdio.stdio_client`` + ``mcp.ClientSession`` (the SDK's client, which also checks
every structured result against the tool's outputSchema), inside an anyio deadline: a server
that dies or hangs fails the test, it never hangs it. The inputs are recorded real data:
collect_env reports of public issues (tests/data/cases), a probe of a real machine
(tests/data/diff), real training scripts (tests/data/fix-corpus), a real notebook
(tests/data/lint). Results are also checked against the published docs/schemas/<tool>.schema.json.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
SCHEMAS = REPO / "docs" / "schemas"
TOOLS = {"check", "recommend", "lint", "explain_rule", "triage"}
DEADLINE = 180.0
"""Seconds one whole conversation may take (probing this machine included)."""

needs_sdk = pytest.mark.skipif(
    sys.version_info < (3, 10) or importlib.util.find_spec("mcp") is None,
    reason="the optional MCP SDK is not installed (pip install '.[mcp]'; Python >= 3.10)")
try:
    import torchdoctor.triage as _triage  # noqa: F401
    HAS_TRIAGE = hasattr(_triage, "triage_issue")
except ImportError:
    HAS_TRIAGE = False


def _converse(tmp_path: Path, talk) -> tuple:
    """Run ``talk(session)`` against a fresh server; (its return value, the server's stderr)."""
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    errlog_path = tmp_path / "server-stderr.txt"
    params = StdioServerParameters(command=sys.executable, args=["-m", "torchdoctor", "mcp"], cwd=str(REPO))

    async def main():
        with anyio.fail_after(DEADLINE), open(errlog_path, "w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await talk(session)

    out = anyio.run(main)
    return out, errlog_path.read_text(encoding="utf-8", errors="replace")


def _schema(tool: str) -> dict:
    return json.loads((SCHEMAS / f"{tool}.schema.json").read_text(encoding="utf-8"))


def _valid(tool: str, result) -> dict:
    """The structured result of a successful call, validated against the published schema."""
    import jsonschema

    assert not result.is_error, result.content[0].text
    data = result.structured_content
    jsonschema.Draft202012Validator(_schema(tool)).validate(data)
    assert json.loads(result.content[0].text) == data  # the text block carries the same JSON
    return data


def _error(result) -> str:
    assert result.is_error
    assert len(result.content) == 1 and result.content[0].type == "text"
    line = result.content[0].text
    assert "\n" not in line and "Traceback" not in line and len(line) <= 300
    return line


@needs_sdk
def test_lists_five_tools_with_their_schemas(tmp_path):
    from torchdoctor.mcp_server.schemas import input_schemas, output_schemas

    async def talk(session):
        return (await session.list_tools()).tools

    listed, _ = _converse(tmp_path, talk)
    by_name = {t.name: t for t in listed}
    assert set(by_name) == TOOLS
    for name, tool in by_name.items():
        assert len(tool.description) > 80, name
        assert tool.input_schema == input_schemas()[name]
        assert tool.input_schema["type"] == "object" and tool.input_schema["additionalProperties"] is False
        assert tool.output_schema == output_schemas()[name]
        assert tool.annotations.read_only_hint is True and tool.annotations.destructive_hint is False
        if name != "triage":
            assert tool.output_schema == _schema(name), f"docs/schemas/{name}.schema.json is stale"
    assert by_name["lint"].input_schema["required"] == ["source"]
    assert by_name["lint"].input_schema["properties"]["source"]["maxLength"] == 1_000_000
    assert "detection" in by_name["recommend"].input_schema["properties"]["task"]["enum"]
    assert by_name["recommend"].input_schema["properties"]["precision"]["enum"][:2] == ["auto", "fp32"]


@needs_sdk
def test_calls_each_tool_on_real_inputs(tmp_path):
    report_101 = (DATA / "cases" / "case101.txt").read_text(encoding="utf-8")  # pytorch/pytorch#150733
    facts = json.loads((DATA / "diff" / "dev-container-cpu-probe.json").read_text(encoding="utf-8"))
    swin = (DATA / "fix-corpus" / "swin_main.py.txt").read_text(encoding="utf-8")
    notebook = (DATA / "lint" / "notebook.ipynb").read_text(encoding="utf-8")

    async def talk(session):
        out = {}
        out["pasted"] = await session.call_tool("check", {"report": report_101})
        out["facts"] = await session.call_tool("check", {"facts": facts})
        out["facts_text"] = await session.call_tool("check", {"facts": json.dumps(facts)})
        out["recommend"] = await session.call_tool(
            "recommend", {"task": "detection", "gpu": "A100", "torch_version": "2.4", "precision": "bf16"})
        out["recommend_facts"] = await session.call_tool("recommend", {"task": "llm-training", "facts": facts})
        out["lint"] = await session.call_tool("lint", {"source": swin, "filename": "swin_main.py",
                                                       "torch_version": "2.4"})
        out["lint_old"] = await session.call_tool("lint", {"source": swin, "filename": "swin_main.py",
                                                           "torch_version": "2.3"})
        out["notebook"] = await session.call_tool("lint", {"source": notebook, "filename": "notebook.ipynb"})
        out["explain"] = await session.call_tool("explain_rule", {"rule_id": "gpu-arch-not-in-build"})
        out["explain_lint"] = await session.call_tool("explain_rule", {"rule_id": "fake-backends-setting"})
        return out

    out, stderr = _converse(tmp_path, talk)

    pasted = _valid("check", out["pasted"])  # RTX 5090 D (sm_120) with the 2.6.0+cu126 wheel
    assert pasted["source"] == "report" and pasted["worst"] == "error"
    ids = [f["id"] for f in pasted["report"]["findings"]]
    assert "gpu-arch-not-in-build" in ids
    assert pasted["report"]["facts"]["torch"]["version"] == "2.6.0+cu126"
    assert pasted["summary"].startswith("1 error(s)")

    recorded = _valid("check", out["facts"])
    assert recorded["source"] == "facts" and recorded["report"]["command"] == "check"
    assert recorded["report"]["facts"]["system"]["os_name"] == "Debian GNU/Linux 12 (bookworm)"
    assert _valid("check", out["facts_text"])["report"]["findings"] == recorded["report"]["findings"]

    plan = _valid("recommend", out["recommend"])
    assert plan["source"] == "gpu" and plan["torch_version"] == "2.4"
    keys = {s["key"]: s for s in plan["report"]["settings"]}
    assert keys, "a detection plan on an A100 recommends settings"
    assert plan["snippet"].startswith("# torchdoctor") and "import torch" in plan["snippet"]
    for setting in keys.values():  # every setting's code is in the snippet, with its rule named
        assert setting["code"].splitlines()[0] in plan["snippet"]
    assert plan["report"]["workload"]["precision"] == "bf16"
    assert plan["report"]["workload"]["task"] == "detection"
    assert _valid("recommend", out["recommend_facts"])["source"] == "facts"

    lint = _valid("lint", out["lint"])
    assert lint["torch_version"] == "2.4" and lint["path"] == "swin_main.py"
    assert [(f["id"], f["line"]) for f in lint["findings"]] == [("deprecated-torch-api", 193),
                                                                 ("deprecated-torch-api", 250)]
    assert lint["findings"][0]["fix"]["edits"][0]["content"] == "torch.amp.autocast"
    assert _valid("lint", out["lint_old"])["findings"] == []  # deprecated since 2.4 only

    nb = _valid("lint", out["notebook"])
    assert [(f["id"], f["cell"], f["fix"]) for f in nb["findings"]] == [("fake-backends-setting", 2, None)]

    explained = _valid("explain_rule", out["explain"])
    assert explained["source"] == "environment" and explained["references"]
    assert explained["markdown"].startswith("# gpu-arch-not-in-build")
    lint_rule = _valid("explain_rule", out["explain_lint"])
    assert lint_rule["source"] == "lint" and lint_rule["severity"] == "error"
    assert "Traceback" not in stderr


@needs_sdk
def test_bad_input_is_an_error_result_and_the_server_serves_on(tmp_path):
    async def talk(session):
        out = []
        for name, args in [
            ("explain_rule", {"rule_id": "gpu-arch-not-in-buld"}),        # unknown rule id
            ("lint", {"source": "x = 1\n" * 200_000}),                     # 1.2 M characters
            ("check", {"report": 42}),                                     # wrong type
            ("check", {"report": "PyTorch version: 2.4.0", "facts": "{}"}),  # both sources
            ("check", {"facts": "{\"schema_version\": 99}"}),            # not our JSON
            ("check", {"facts": "PyTorch version: 2.4.0\nOS: Ubuntu"}),   # a report, not facts
            ("check", {"report": "x", "command": "rm -rf /"}),             # unknown argument
            ("check", {"timeout": 1e9}),                                   # out of range
            ("recommend", {"task": "detection", "workers": 4}),            # a CLI name, not an argument
            ("recommend", {"gpu": "Z9000 Ultra"}),                         # unknown GPU
            ("recommend", {"gpu": "A100", "torch_version": "9.99"}),       # unknown torch
            ("recommend", {"task": "detection", "dataloader_workers": -1}),
            ("lint", {"source": "import torch\n", "select": ["no-such-rule"]}),
            ("lint", {"source": "{not json", "filename": "a.ipynb"}),      # a finding, not an error
            ("no_such_tool", {}),
            ("explain_rule", {"rule_id": "fake-backends-setting"}),       # still serving
        ]:
            out.append(await session.call_tool(name, args))
        return out

    out, stderr = _converse(tmp_path, talk)
    lines = [_error(r) for r in out[:13]]
    assert "unknown rule" in lines[0] and "did you mean gpu-arch-not-in-build" in lines[0]
    assert "too long (1200000 characters; at most 1000000)" in lines[1]
    assert "argument report: expected string, got integer" in lines[2]
    assert "not both" in lines[3]
    assert "schema_version 99" in lines[4]
    assert "argument facts: not torchdoctor JSON" in lines[5]
    assert "unknown argument(s) 'command'" in lines[6] and "rm -rf" not in lines[6]
    assert "argument timeout" in lines[7] and "out of range" in lines[7]
    assert "unknown argument(s) 'workers'" in lines[8]
    assert "Z9000" in lines[9] and "unknown GPU" in lines[9]
    assert "9.99" in lines[10]
    assert "argument dataloader_workers" in lines[11]
    assert "unknown lint rule or tag 'no-such-rule'" in lines[12]
    broken_nb = _valid("lint", out[13])
    assert [f["id"] for f in broken_nb["findings"]] == ["parse-error"]
    assert "not a Jupyter notebook" in broken_nb["findings"][0]["message"]
    assert out[14].is_error and "unknown tool" in out[14].content[0].text
    assert _valid("explain_rule", out[15])["id"] == "fake-backends-setting"
    assert "Traceback" not in stderr  # bad input is not a crash


@needs_sdk
def test_check_probes_this_machine(tmp_path):
    async def talk(session):
        return await session.call_tool("check", {"timeout": 120})

    result, _ = _converse(tmp_path, talk)
    data = _valid("check", result)
    assert data["source"] == "machine" and data["report"]["facts"]["origin"] == "probe"
    assert data["report"]["facts"]["system"]["python_version"] == "%d.%d.%d" % sys.version_info[:3]


@needs_sdk
@pytest.mark.skipif(not HAS_TRIAGE, reason="torchdoctor.triage not present")
def test_triage_tool(tmp_path):
    # KumaTea/pytorch-aarch64#16 (tests/data/cases3): GLIBC_2.28 not found on Ubuntu 18.04
    body = (DATA / "cases3" / "case301.txt").read_text(encoding="utf-8")
    mapping = {"labels": ["module: binaries", "needs environment"],
               "categories": {"os-unsupported": ["module: binaries"]},
               "junk": {"template": ["needs environment"], "empty": ["needs environment"]}}
    event = {"action": "opened", "issue": {"number": 16, "body": body}}
    # the recorded issues event of vllm-project/vllm#13537 (tests/data/triage/SOURCES.md): the form's
    # placeholder left in place of collect_env's output
    template_event = json.loads((DATA / "triage" / "vllm-13537.json").read_text(encoding="utf-8"))

    async def talk(session):
        return [await session.call_tool("triage", {"issue": body}),
                await session.call_tool("triage", {"issue": event, "labels": mapping}),
                await session.call_tool("triage", {"issue": "", "labels": mapping, "always_comment": True}),
                await session.call_tool("triage", {"issue": body, "labels": {"labels": ["a"],
                                                                             "categories": {"x": ["b"]}}}),
                await session.call_tool("triage", {"issue": {"title": "no body"}}),
                await session.call_tool("triage", {"issue": template_event, "labels": mapping})]

    (plain, mapped, empty, bad_mapping, bad_issue, template), _ = _converse(tmp_path, talk)
    plain = _valid("triage", plain)
    assert ("known-message-error", "glibc-too-old") in [(f["id"], f.get("message_id")) for f in plain["findings"]]
    assert plain["labels"] == []  # no mapping given: no label is proposed
    assert plain["comment"].startswith("<!-- torchdoctor-triage -->")
    mapped = _valid("triage", mapped)
    assert mapped["labels"] == ["module: binaries"] and mapped["issue"]["number"] == 16
    empty = _valid("triage", empty)
    assert empty["read"] is False and empty["comment"].startswith("<!-- torchdoctor-triage -->")  # always_comment
    assert "not in the allow-list" in _error(bad_mapping)
    assert "neither an issues event" in _error(bad_issue)
    template = _valid("triage", template)
    assert template["junk"] == ["template"] and template["labels"] == ["needs environment"]
    assert template["issue"]["repository"] == "vllm-project/vllm" and template["issue"]["number"] == 13537


_BLOCK = (
    "import sys, importlib.abc\n"
    "class Block(importlib.abc.MetaPathFinder):\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        if name in BLOCKED or name.startswith(tuple(b + '.' for b in BLOCKED)):\n"
    "            raise ModuleNotFoundError(f\"No module named '{name}'\", name=name)\n"
    "sys.meta_path.insert(0, Block())\n"
    "from torchdoctor.cli import main\n"
    "raise SystemExit(main(['mcp']))\n")


@pytest.mark.parametrize("blocked, says", [
    (("mcp", "mcp_types"), "torchdoctor mcp needs the MCP SDK: pip install 'mcp>=2,<3'"),
    (("anyio",), "the MCP SDK does not import ('anyio'): pip install 'mcp>=2,<3'"),
])
def test_without_the_sdk_one_line_and_exit_2(blocked, says):
    """The base install has no `mcp` (or a broken one): one line naming the extra, exit 2, no
    traceback, nothing on stdout."""
    if "anyio" in blocked and importlib.util.find_spec("mcp") is None:
        pytest.skip("the SDK is not installed: the first case covers this machine")
    code = f"BLOCKED = {blocked!r}\n" + _BLOCK
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, cwd=REPO)
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchdoctor: error: ") and says in lines[0], done.stderr


def test_nothing_else_imports_the_sdk():
    code = ("import sys, torchdoctor, torchdoctor.cli, torchdoctor.api\n"
            "from torchdoctor.mcp_server import command, schemas, tools, lint_text\n"
            "bad = sorted(m for m in sys.modules if m == 'mcp' or m.startswith(('mcp.', 'mcp_types')))\n"
            "print(bad)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_published_schemas_are_current():
    """docs/schemas/<tool>.schema.json is what the server advertises (regenerate with
    `python -m torchdoctor.mcp_server.schemas docs/schemas`); each is a valid 2020-12 schema."""
    import jsonschema

    from torchdoctor.mcp_server.schemas import PUBLISHED, input_schemas, output_schemas, schema_text

    for tool in PUBLISHED:
        assert (SCHEMAS / f"{tool}.schema.json").read_text(encoding="utf-8") == schema_text(tool), (
            f"docs/schemas/{tool}.schema.json is stale: run `python -m torchdoctor.mcp_server.schemas docs/schemas`")
    for schema in list(output_schemas().values()) + list(input_schemas().values()):
        jsonschema.Draft202012Validator.check_schema(schema)
    if HAS_TRIAGE:
        assert output_schemas()["triage"] == _schema("triage")  # the triage package's own


@needs_sdk
def test_an_over_long_message_is_dropped_and_the_next_one_read():
    import io

    from torchdoctor.mcp_server.server import _BoundedLines

    wire = io.StringIO("x" * 50 + "\n" + "y" * 25 + "\n" + "z" * 500 + "\n" + '{"jsonrpc": "2.0"}\n')
    lines = _BoundedLines(wire, limit=30)
    assert lines.readline() == "(message too long)\n"  # 50 characters: consumed to its end, not kept
    assert lines.readline() == "y" * 25 + "\n"
    assert lines.readline() == "(message too long)\n"
    assert lines.readline() == '{"jsonrpc": "2.0"}\n'
    assert lines.readline() == ""


@needs_sdk
def test_the_wire_holds_only_protocol_messages_and_survives_a_10_mb_line():
    """Raw JSON-RPC over the real process's pipes: a 10 MB line (over server.MAX_LINE) is
    dropped, the next request is answered, every stdout line is a JSON-RPC message, and the
    server exits 0 when stdin closes."""
    import queue
    import threading

    proc = subprocess.Popen([sys.executable, "-m", "torchdoctor", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    lines: queue.Queue = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            lines.put(line)

    threading.Thread(target=pump, daemon=True).start()

    def send(message) -> None:
        proc.stdin.write((json.dumps(message) + "\n").encode())
        proc.stdin.flush()

    def answer(request_id: int) -> dict:
        while True:
            message = json.loads(lines.get(timeout=60))  # raises queue.Empty rather than hang
            assert message["jsonrpc"] == "2.0"
            if message.get("id") == request_id:
                return message

    try:
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        assert answer(1)["result"]["serverInfo"]["name"] == "torchdoctor"
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        proc.stdin.write(b"x" * (10 * 1024 * 1024) + b"\n")
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
              "params": {"name": "explain_rule", "arguments": {"rule_id": "fake-backends-setting"}}})
        result = answer(2)["result"]
        assert result["structuredContent"]["id"] == "fake-backends-setting"
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    while not lines.empty():  # anything else written to stdout is a JSON-RPC message too
        assert json.loads(lines.get())["jsonrpc"] == "2.0"
    assert "dropped a message of more than" in proc.stderr.read().decode()


@needs_sdk
def test_an_unexpected_failure_is_one_line_and_the_server_serves_on(monkeypatch, caplog):
    """A crash inside a tool (here: lint made to raise) is an error result of one line, its
    traceback in the server's log; the next call is answered. In-process, with the SDK's Client."""
    import anyio
    from mcp import Client

    from torchdoctor.mcp_server import server, tools

    def crash(args):
        raise RuntimeError("boom\nsecond line " + "z" * 1000)

    monkeypatch.setitem(tools.TOOLS, "lint", crash)

    async def main():
        with anyio.fail_after(60):
            async with Client(server.build()) as client:
                return (await client.call_tool("lint", {"source": "import torch\n"}),
                        await client.call_tool("explain_rule", {"rule_id": "fake-backends-setting"}))

    crashed, after = anyio.run(main)
    line = _error(crashed)
    assert line.startswith("internal error: RuntimeError: boom second line zzz") and line.endswith("...")
    assert after.structured_content["id"] == "fake-backends-setting"
    assert any("tool lint failed" in r.getMessage() and r.exc_info for r in caplog.records)


def _raw_server():
    proc = subprocess.Popen([sys.executable, "-m", "torchdoctor", "mcp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO)
    proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        + "\n" + json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n").encode())
    proc.stdin.flush()
    return proc


@needs_sdk
@pytest.mark.parametrize("signum, status, says", [(15, 143, ""), (2, 130, "torchdoctor: interrupted")])
def test_sigterm_and_ctrl_c_end_the_server_with_the_cli_status(signum, status, says):
    """A blocked read of stdin does not hold the exit back; the statuses are the CLI's."""
    import select
    import signal

    proc = _raw_server()
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready and json.loads(proc.stdout.readline())["id"] == 1  # serving, stdin still open
        proc.send_signal(signal.Signals(signum))
        assert proc.wait(timeout=30) == status
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.stderr.read().decode().strip() == says


@needs_sdk
@pytest.mark.torch  # the torch child imports torch for a second or more: time to see it running
def test_sigterm_during_a_probe_leaves_no_child():
    """SIGTERM while `check` probes this machine: the probe's children are killed with the server."""
    import signal
    import time

    import psutil

    proc = _raw_server()
    try:
        proc.stdin.write((json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "check", "arguments": {"timeout": 120}}}) + "\n").encode())
        proc.stdin.flush()
        children: list = []
        for _ in range(300):  # until the torch child has started (at most 30 s)
            children = psutil.Process(proc.pid).children(recursive=True)
            if children:
                break
            time.sleep(0.1)
        assert children, "the probe started no child"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 143
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, [c.pid for c in alive]
