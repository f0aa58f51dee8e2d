"""Bounded reading of user inputs and bounded echoing of user values.

Every file a user names (a report, a facts JSON, a workload, a rule) is hostile input: it may
be /dev/zero, a FIFO with no writer, a directory, or gigabytes. ``read_bounded`` is the one
way such a file is read: regular files (and '-' for stdin, and character devices/FIFOs only
when explicitly allowed) up to ``limit`` bytes, refused beyond it with one line. ``clip`` is
the one way a user value is echoed in a message: its repr, cut to a fixed length, so that an
error about a 12 GB YAML alias expansion costs nothing.

Stdlib only (imported on the CLI's start-up path).
"""

from __future__ import annotations

import os
import stat
import sys
from typing import Any, Optional

from torchdoctor.errors import UserError

MAX_INPUT_BYTES = 5 * 1024 * 1024
"""The most any one input file (report, facts, workload) may hold."""

MAX_ECHO = 80
"""The most characters of a user value that an error message repeats."""


class InputError(UserError):
    """A user-named input cannot be read: the message is one line naming it."""


def clip(value: Any, limit: int = MAX_ECHO) -> str:
    """``repr(value)`` cut to ``limit`` characters (``…`` marks a cut).

    Never builds the full repr of a huge container: containers are summarised by type and
    length, and strings are sliced before repr, so the cost is bounded whatever the value.
    """
    if isinstance(value, str):
        text = repr(value[: limit + 1])
    elif isinstance(value, (bytes, bytearray)):
        text = repr(bytes(value[: limit + 1]))
    elif isinstance(value, bool) or value is None or isinstance(value, float):
        text = repr(value)
    elif isinstance(value, int):
        # int -> str is quadratic and refused over 4300 digits; bit_length is O(1)
        if value.bit_length() > 200:
            return f"<an integer of {value.bit_length()} bits>"
        text = repr(value)
    elif isinstance(value, (list, tuple, dict, set, frozenset)):
        return f"<a {type(value).__name__} of {len(value)} item(s)>"
    else:
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def read_bounded(name: str, limit: int = MAX_INPUT_BYTES, *, what: str = "",
                 allow_stream: bool = False) -> bytes:
    """Read a user-named file ('-' = stdin), refusing what is not a regular file or is larger
    than ``limit`` bytes. ``allow_stream`` also admits FIFOs and character devices (read up to
    the limit, never blocking on open). Raises :class:`InputError` with one line."""
    label = f"{what} {name}".strip() if what else name
    if name == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:
            raise InputError(f"{label}: stdin is not readable")
        data = stream.read(limit + 1)
        return _checked_size(data, limit, label)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(name, flags)
    except IsADirectoryError:
        raise InputError(f"{label}: is a directory") from None
    except OSError as exc:
        raise InputError(f"{label}: cannot read: {exc.strerror or exc}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{label}: is a directory")
        if not stat.S_ISREG(mode):
            if not (allow_stream and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode))):
                raise InputError(f"{label}: not a regular file ({_kind(mode)}); "
                                 f"pipe it to stdin and pass '-' instead")
        if hasattr(os, "set_blocking") and stat.S_ISREG(mode):
            os.set_blocking(fd, True)
        chunks = []
        total = 0
        while total <= limit:
            try:
                chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            except BlockingIOError:
                break  # a FIFO with no writer: nothing to read, never wait
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return _checked_size(b"".join(chunks), limit, label)
    except OSError as exc:
        raise InputError(f"{label}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text_bounded(name: str, limit: int = MAX_INPUT_BYTES, *, what: str = "") -> str:
    """``read_bounded`` decoded as UTF-8 (one line on a decoding error)."""
    data = read_bounded(name, limit, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        label = f"{what} {name}".strip() if what else name
        raise InputError(f"{label}: not UTF-8 text (byte {exc.start})") from None


def _checked_size(data: bytes, limit: int, label: str) -> bytes:
    if len(data) > limit:
        raise InputError(f"{label}: larger than {_size(limit)}; refusing to read it")
    return data


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n} bytes"


def _kind(mode: int) -> Optional[str]:
    for test, name in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"
