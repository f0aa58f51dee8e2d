"""`torchdoctor mcp`: the checks as tools of a Model Context Protocol server (stdio), for coding
agents and triage bots (docs/mcp.md).

- ``command``: the click command (click only at import; cli.py registers it);
- ``schemas``: each tool's input schema and the schema of its result (docs/schemas/);
- ``tools``: the tools themselves, plain functions of validated arguments (no ``mcp`` import);
- ``lint_text``: ``torchdoctor lint`` of one in-memory text (nothing read, nothing written);
- ``server``: the SDK's low-level server over stdio; the only module that imports ``mcp``.

The ``mcp`` SDK is an optional extra (``pip install '.[mcp]'`` from a clone): nothing else in
torchdoctor imports it.
"""
