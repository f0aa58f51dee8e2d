"""Importers: text or JSON someone pasted -> :class:`~torchdoctor.facts.Facts`.

:func:`load_report` takes the bytes of a file (the caller reads at most
``MAX_REPORT_BYTES + 1`` of them), works out whether they are torchdoctor JSON or text, and
returns facts with ``origin="json"`` or ``origin="report"``. Text is a
``python -m torch.utils.collect_env`` report or anything else a ticket carries (torch's
warnings and tracebacks, other tools' environment dumps, package lists, nvidia-smi; see
:mod:`torchdoctor.importers.paste`, which records where each fact came from in
``Facts.sources``) and the known error messages it holds (``Facts.paste``). Only what is not
text at all (binary data, an empty file, more than ``MAX_REPORT_BYTES``) or a malformed
torchdoctor JSON raises :class:`ReportError`, with one line that names the file and what is
wrong; any text is read, and a text that states no environment fact gets facts whose notes say
so and name the command that would give them. No other exception is expected to escape.

Both kinds of input pass through :func:`torchdoctor.sanitize.sanitize_facts` on the way out:
no lone surrogate, control character or terminal escape sequence survives in any string, and
an implausible number (a 5000-digit version, GPU count or memory size) makes that one fact
unknown instead of failing the whole report. Error messages are sanitised the same way.
"""

from __future__ import annotations

import re
from typing import Union

from torchdoctor.facts import Facts

MAX_REPORT_BYTES = 5 * 1024 * 1024
"""Inputs larger than this are refused before they are decoded."""

__all__ = ["MAX_REPORT_BYTES", "ReportError", "load_report"]


class ReportError(Exception):
    """A pasted report or JSON file that cannot be read; ``str()`` is one line."""

    def __init__(self, message: str):
        from torchdoctor.sanitize import one_line

        super().__init__(one_line(message))


# control characters a text report does not contain (tab, newlines, form feed, ESC allowed)
_NON_TEXT = re.compile(r"[\x00-\x08\x0e-\x1a\x1c-\x1f\x7f\ufffd]")
_SAMPLE = 65536


def _looks_utf16(data: bytes) -> str:
    sample = data[:4096]
    if len(sample) < 8:
        return ""
    even, odd = sample[0::2], sample[1::2]
    if odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.05 * len(even):
        return "utf-16-le"
    if even.count(0) > 0.9 * len(even) and odd.count(0) < 0.05 * len(odd):
        return "utf-16-be"
    return ""


def _decode(data: bytes, name: str) -> str:
    if data.startswith((b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff")):
        text = data.decode("utf-32", errors="replace")
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        # PowerShell 5 writes `> file` as UTF-16 with a BOM
        text = data.decode("utf-16", errors="replace")
    elif _looks_utf16(data):
        text = data.decode(_looks_utf16(data), errors="replace")
    elif b"\x00" in data:
        raise ReportError(f"{name}: binary data (contains NUL bytes), not a text report")
    else:
        text = data.decode("utf-8-sig", errors="replace")
    sample = text[:_SAMPLE]
    if len(_NON_TEXT.findall(sample)) > max(8, len(sample) // 10):
        raise ReportError(f"{name}: binary data, not a text report")
    return text


def load_report(data: Union[bytes, bytearray, memoryview, str], name: str) -> Facts:
    """Facts from a collect_env report or torchdoctor JSON; raises :class:`ReportError`."""
    from torchdoctor.sanitize import sanitize_facts

    facts = _load(data, name)
    try:
        return sanitize_facts(facts)
    except ValueError as exc:  # a bad value with no enclosing fact that may be unknown
        raise ReportError(f"{name}: {exc}") from None


def _load(data: Union[bytes, bytearray, memoryview, str], name: str) -> Facts:
    if isinstance(data, str):
        data = data.encode("utf-8", errors="replace")
    name = str(name).replace("\r", " ").replace("\n", " ")
    if len(data) > MAX_REPORT_BYTES:  # before decoding anything
        raise ReportError(
            f"{name}: too large (over {MAX_REPORT_BYTES // (1024 * 1024)} MiB); "
            "a collect_env report is a few kilobytes"
        )
    data = bytes(data)
    if not data:
        raise ReportError(f"{name}: empty input")
    text = _decode(data, name)
    if not text.strip():
        raise ReportError(f"{name}: empty input (only whitespace)")

    head = text.lstrip()[:8].lower()
    if head.startswith("[") and not head.startswith(("[pip", "[conda]")):
        import json

        try:
            json.loads(text)
        except (ValueError, RecursionError):
            pass  # not JSON: read it as text below
        else:
            raise ReportError(f"{name}: a JSON array, not torchdoctor facts")
    if head.startswith("{"):
        from torchdoctor.importers.json_report import JsonReportError, facts_from_json

        try:
            return facts_from_json(text)
        except JsonReportError as exc:
            raise ReportError(f"{name}: {exc}") from None

    from torchdoctor.importers.paste import facts_from_text

    # a collect_env report, any other pasted text (a dump, a traceback, a log, prose): never
    # refused; a text that states nothing gets facts saying so (Facts.notes)
    return facts_from_text(text)
