"""Whether an input may be torchdoctor's facts JSON, decided before any model is imported (so that a command can
still choose its model base: torchdoctor/model.py). Conservative: True for anything the importer might read as
JSON or decode other than as UTF-8 (a byte order mark of UTF-16/32, NUL bytes): such input is validated with
pydantic's models; text that is surely not JSON may use the lean ones."""

from __future__ import annotations

from typing import Union

_WHITE = "\ufeff \t\r\n\f\v"


def may_be_json(data: Union[str, bytes, bytearray, memoryview]) -> bool:
    """Only an object (``{``) is read as facts, with models; a JSON array is refused without them, and any other
    ``[`` (``[1/90] Processing``, ``[pip3] numpy``) is text."""
    if isinstance(data, str):
        return data.lstrip(_WHITE)[:1] == "{" or "\x00" in data
    head = bytes(data[:65536])
    if b"\x00" in head or head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    return head.decode("utf-8", errors="replace").lstrip(_WHITE)[:1] == "{"
