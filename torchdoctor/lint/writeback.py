"""Writing a fixed source back (``torchdoctor lint --fix``) so that only its text changes.

What the file was stays what it is: a UTF-8 BOM is kept; a symlink is edited at its target (the
link stays a link); a file with other hard links is refused (replacing it would split them, and
rewriting it in place is not atomic); its mode, owner, group and extended attributes are kept, or
the file is refused; only a regular file is written (never a device or a FIFO); a file that
changed since it was read is refused. The new text goes to a temporary file in the same folder,
is flushed to disk, and replaces the old one in one rename: a full disk or any other failure
leaves the file as it was, and is one line (:class:`NotWritten`)."""

from __future__ import annotations

import codecs
import errno
import os
import stat
import tempfile

MAX_BYTES = 4 * 1024 * 1024 + 3
"""What is re-read to check the file is still the one linted (lint reads at most 4 MiB)."""


class NotWritten(Exception):
    """The file was left as it was; the message says why, in one line."""


def _reason(exc: OSError) -> str:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        return f"{exc.strerror or 'no space left'} while writing the fixed text"
    return f"cannot write it ({exc.strerror or exc.__class__.__name__})"


def _current(real: str) -> tuple:
    fd = os.open(real, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotWritten("not a regular file; not rewritten")
        chunks, size = [], 0
        while size <= MAX_BYTES:
            block = os.read(fd, 1 << 16)
            if not block:
                break
            chunks.append(block)
            size += len(block)
        return st, b"".join(chunks)
    finally:
        os.close(fd)


def _xattrs(path: str) -> list:
    if not hasattr(os, "listxattr"):
        return []
    try:
        return [(n, os.getxattr(path, n, follow_symlinks=False)) for n in os.listxattr(path, follow_symlinks=False)]
    except OSError as exc:
        if exc.errno in (errno.ENOTSUP, getattr(errno, "EOPNOTSUPP", errno.ENOTSUP)):
            return []
        raise NotWritten(f"cannot read its extended attributes ({exc.strerror}); not rewritten") from None


def write_fixed(path: str, original: str, new: str) -> str:
    """Replace the text ``original`` of ``path`` with ``new``; the path written (a symlink's
    target). Raises :class:`NotWritten` with the file untouched."""
    real = os.path.realpath(path)
    try:
        st, data = _current(real)
    except NotWritten:
        raise
    except OSError as exc:
        raise NotWritten(f"cannot read it again ({exc.strerror}); not rewritten") from None
    if st.st_nlink > 1:
        raise NotWritten(f"it has {st.st_nlink} hard links; replacing it would split them, so it is "
                         "not rewritten (fix a copy, or run on the other link's folder with --diff)")
    bom = data.startswith(codecs.BOM_UTF8)
    try:
        still = data.decode("utf-8-sig") == original
    except UnicodeDecodeError:
        still = False
    if not still:
        raise NotWritten("it changed while it was being linted; not rewritten")
    payload = (codecs.BOM_UTF8 if bom else b"") + new.encode("utf-8")
    attrs = _xattrs(real)
    try:
        fd, tmp = tempfile.mkstemp(prefix=".torchdoctor-fix.", dir=os.path.dirname(real))
    except OSError as exc:
        raise NotWritten(f"cannot create a file beside it ({exc.strerror}); not rewritten") from None
    try:
        try:
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
            mine = os.fstat(fd)
            if (mine.st_uid, mine.st_gid) != (st.st_uid, st.st_gid):
                try:
                    os.fchown(fd, st.st_uid, st.st_gid)
                except PermissionError:
                    raise NotWritten(f"it is owned by {st.st_uid}:{st.st_gid} and a rewritten copy "
                                     "could not keep that owner; not rewritten") from None
            os.fchmod(fd, stat.S_IMODE(st.st_mode))  # after chown, which clears set-id bits
            for name, value in attrs:
                try:
                    os.setxattr(tmp, name, value, follow_symlinks=False)
                except OSError as exc:
                    raise NotWritten(f"its extended attribute {name[:40]} cannot be kept "
                                     f"({exc.strerror}); not rewritten") from None
        finally:
            os.close(fd)
        now = os.lstat(real)
        if (now.st_ino, now.st_dev, now.st_size, now.st_mtime_ns) != (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns):
            raise NotWritten("it changed while it was being fixed; not rewritten")
        os.replace(tmp, real)
    except NotWritten:
        _unlink(tmp)
        raise
    except OSError as exc:
        _unlink(tmp)
        raise NotWritten(_reason(exc) + "; the file is unchanged") from None
    except BaseException:
        _unlink(tmp)
        raise
    return real


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
