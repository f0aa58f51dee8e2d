"""`torchdoctor mcp`: the click command (imports only click at import time; cli.py registers
it). The server itself (server.py) needs the optional ``mcp`` SDK."""

from __future__ import annotations

import click

EXIT_NO_SDK = 2
"""Exit status when the ``mcp`` SDK is not installed (a tool error, as every other)."""
INSTALL_HINT = "pip install 'mcp>=2,<3'"


@click.command("mcp", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
def mcp() -> None:
    """Serve torchdoctor's checks to coding agents and triage bots over the Model Context
    Protocol (stdio): the tools check, recommend, lint, explain_rule and triage, each with an
    input schema and a JSON result that follows a published schema (docs/mcp.md).

    It reads and reports only: it writes no file, posts nothing, applies no fix. stdout carries
    protocol messages only; logs go to stderr. Needs the optional SDK (pip install
    '.[mcp]' from a clone, or 'mcp>=2,<3'; Python 3.10 or newer). Exit 0 when the client closes the connection, 2 when
    the SDK is missing.
    """
    import importlib.util
    import sys

    from torchdoctor.cli_io import Abort

    needs = INSTALL_HINT + ("" if sys.version_info >= (3, 10) else " (on Python 3.10 or newer)")
    try:
        present = importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):
        present = False
    if not present:
        raise Abort(f"torchdoctor mcp needs the MCP SDK: {needs}")
    try:
        from torchdoctor.mcp_server.server import main
    except ImportError as exc:  # an SDK (or one of its dependencies) that does not import
        from torchdoctor.safeio import clip

        raise Abort(f"torchdoctor mcp: the MCP SDK does not import ({clip(exc.name or str(exc), 60)}): "
                    f"{needs}") from None
    main()
