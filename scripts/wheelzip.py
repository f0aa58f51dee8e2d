"""Read single members of a remote wheel (a zip) with HTTP range requests: the end-of-central-
directory record, then the central directory, then only the members asked for. Nothing is
downloaded whole and nothing is installed. Used by scripts/gen_release_tables.py (a development
tool run by hand; never imported by torchdoctor)."""

from __future__ import annotations

import re
import struct
import time
import urllib.request
import zlib
from typing import Iterator, Optional

TIMEOUT = 60
"""Seconds for one HTTP request (connect and each read)."""


def get(url: str, start: Optional[int] = None, end: Optional[int] = None, tries: int = 4) -> bytes:
    """The bytes of ``url`` (``start``..``end`` inclusive; a negative ``start`` = the last bytes)."""
    headers = {"User-Agent": "torchdoctor-gen-release-tables"}
    if start is not None:
        headers["Range"] = f"bytes={start}-" if end is None and start >= 0 else (
            f"bytes={start}" if start < 0 else f"bytes={start}-{end}")
    for attempt in range(tries):
        try:
            req = urllib.request.Request(url, headers=headers)
            with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:  # noqa: S310 - https only
                return resp.read()
        except OSError:
            if attempt == tries - 1:
                raise
            time.sleep(2 * (attempt + 1))
    raise AssertionError("unreachable")


class RemoteWheel:
    """The central directory of a remote zip, and its members on demand."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size = url, size
        tail = get(url, -min(size, 128 * 1024))
        eocd = tail.rfind(b"PK\x05\x06")
        if eocd < 0:
            raise ValueError(f"{url}: no end-of-central-directory record")
        _, _, _, _, count, cd_size, cd_offset, _ = struct.unpack("<4s4H2LH", tail[eocd:eocd + 22])
        loc = tail.rfind(b"PK\x06\x07", 0, eocd)
        if loc >= 0 and (cd_offset == 0xFFFFFFFF or count == 0xFFFF or cd_size == 0xFFFFFFFF):
            (z64_offset,) = struct.unpack("<Q", tail[loc + 8:loc + 16])
            rec = get(url, z64_offset, z64_offset + 55)
            count, _, cd_size, cd_offset = struct.unpack("<QQQQ", rec[24:56])
        data = get(url, cd_offset, cd_offset + cd_size - 1)
        self.members: dict[str, tuple] = {}
        pos = 0
        for _ in range(count):
            (sig, _, _, _, method, _, _, _, csize, usize, nlen, xlen, clen, _, _, _,
             offset) = struct.unpack("<4s6H3L5H2L", data[pos:pos + 46])
            if sig != b"PK\x01\x02":
                raise ValueError(f"{url}: bad central directory entry at {pos}")
            name = data[pos + 46:pos + 46 + nlen].decode("utf-8", "replace")
            extra = data[pos + 46 + nlen:pos + 46 + nlen + xlen]
            if 0xFFFFFFFF in (csize, usize, offset):  # zip64 extra field
                vals = iter(struct.unpack(f"<{len(extra[4:4 + struct.unpack('<H', extra[2:4])[0]]) // 8}Q",
                                          extra[4:4 + struct.unpack('<H', extra[2:4])[0]]))
                usize = next(vals) if usize == 0xFFFFFFFF else usize
                csize = next(vals) if csize == 0xFFFFFFFF else csize
                offset = next(vals) if offset == 0xFFFFFFFF else offset
            self.members[name] = (offset, csize, method, usize)
            pos += 46 + nlen + xlen + clen

    def _data_start(self, name: str) -> int:
        offset = self.members[name][0]
        head = get(self.url, offset, offset + 29)
        nlen, xlen = struct.unpack("<HH", head[26:30])
        return offset + 30 + nlen + xlen

    def read(self, name: str) -> bytes:
        """One member, whole (for small members: METADATA, Python sources)."""
        _, csize, method, _ = self.members[name]
        start = self._data_start(name)
        raw = get(self.url, start, start + csize - 1) if csize else b""
        return zlib.decompress(raw, -15) if method == 8 else raw

    def stream(self, name: str, chunk: int = 8 * 1024 * 1024) -> Iterator[bytes]:
        """A large member decompressed chunk by chunk (stop iterating to stop downloading)."""
        _, csize, method, _ = self.members[name]
        start = self._data_start(name)
        dec = zlib.decompressobj(-15) if method == 8 else None
        for lo in range(start, start + csize, chunk):
            raw = get(self.url, lo, min(lo + chunk, start + csize) - 1)
            yield dec.decompress(raw) if dec else raw


ARCH_FLAGS = re.compile(rb"(?<![\w ])((?:(?:sm|compute)_\d{2,3}[af]? )*(?:sm|compute)_\d{2,3}[af]?)\x00")
"""The CUDA_ARCH_FLAGS C string in libtorch_python.so (what torch.cuda.get_arch_list() splits)."""


def arch_flags(wheel: RemoteWheel, member: str) -> list[str]:
    """Every distinct CUDA_ARCH_FLAGS-shaped string (two or more arches) in a streamed member."""
    found: list[str] = []
    tail = b""
    for block in wheel.stream(member):
        buf = tail + block
        for m in ARCH_FLAGS.finditer(buf):
            text = m.group(1).decode()
            if " " in text and text not in found:
                found.append(text)
        tail = buf[-512:]
    return found


def strings(wheel: RemoteWheel, member: str, pattern: bytes) -> list[str]:
    """Every distinct match of ``pattern`` in a streamed member (sorted)."""
    found: set = set()
    tail = b""
    rx = re.compile(pattern)
    for block in wheel.stream(member):
        buf = tail + block
        found.update(m.group(0).decode("ascii", "replace") for m in rx.finditer(buf))
        tail = buf[-512:]
    return sorted(found)
