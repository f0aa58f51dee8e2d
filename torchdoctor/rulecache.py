"""A cache of parsed rule and table files, so `check` and `recommend` do not re-parse and
re-check ~85 YAML files on every run.

What is stored: the plain data (dicts, lists, strings, numbers) that parsing the YAML files
gave, after every load-time check passed, as JSON. Never pickle: loading a JSON file cannot
run code, whoever wrote it.

When it is used: each entry carries a key, the SHA-256 of every input file's bytes (each rule
file, settings.yaml, the table) together with torchdoctor's version, the Python version and
the size and modification time of torchdoctor's own modules (the code that checks the
files). An entry whose key differs is ignored and rewritten, so an edited rule, a new
version or a changed check never sees stale data.

Why that is safe without a signature: (1) the directory is used only if it is a real
directory owned by this user and not writable by group or others (created 0700), and the
file only if it is a regular file owned by this user; (2) what is loaded is re-validated
cheaply: rule files go through the pydantic ``Rule`` model again (1.5 ms for all of them),
each message template is checked again when it is compiled (``sandbox``), and conditions run
in simpleeval as always. A cache entry can therefore hold nothing a rule file passed with
``--rules`` could not already hold.

Where: ``$TORCHDOCTOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/torchdoctor``, else
``~/.cache/torchdoctor``. Only that last directory is ever created, and only inside a cache
base that exists (the parent: ``$XDG_CACHE_HOME``, ``~/.cache``); with none (a ``HOME`` that
does not exist, an ``XDG_CACHE_HOME`` naming a missing folder) torchdoctor runs without a
cache. ``TORCHDOCTOR_NO_CACHE=1`` turns it off. Deleting the directory is
always safe. Writes are atomic (``tempfile.mkstemp`` in the directory + ``os.replace``); a
write that fails is skipped silently (the cache is only ever an optimisation).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, Iterable, Optional

try:  # the interpreter's own SHA-256: the same digest, without loading OpenSSL's libcrypto (2-3 ms of every run)
    from _sha256 import sha256  # Python 3.11
except ImportError:  # pragma: no cover - other Pythons
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        from hashlib import sha256

FORMAT = 1
ENV_DISABLE = "TORCHDOCTOR_NO_CACHE"
ENV_DIR = "TORCHDOCTOR_CACHE_DIR"
MAX_ENTRY_BYTES = 32 * 1024 * 1024
MAX_ENTRIES = 64
"""Entries kept; the least recently written beyond this are removed when one is stored (each
set of --rules directories has its own entry)."""


def enabled() -> bool:
    return os.environ.get(ENV_DISABLE, "").strip() in ("", "0")


def directory() -> Optional[Path]:
    """The cache directory (not created), or None when the cache is off or has no home."""
    if not enabled():
        return None
    explicit = os.environ.get(ENV_DIR, "").strip()
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    if xdg and os.path.isabs(xdg):  # the XDG spec: a relative value is to be ignored
        return Path(xdg) / "torchdoctor"
    home = os.path.expanduser("~")
    if not home or home == "~" or not os.path.isabs(home):
        return None
    return Path(home) / ".cache" / "torchdoctor"


def _code_fingerprint() -> bytes:
    from torchdoctor.version import __version__

    here = Path(__file__).resolve().parent
    parts = [f"format={FORMAT}", f"torchdoctor={__version__}", f"python={sys.version}",
             f"impl={sys.implementation.name}", f"pkg={here}"]
    # every module of the package, subpackages included (tables/models/ decides what a checked
    # table is; importers/ and render/ change what rules may rely on): one changed file, a new key
    pending = [here]
    prefix = os.path.join(str(here), "")  # every entry's path starts with it (scandir joins onto it)
    while pending:
        directory = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    pending.append(Path(entry.path))
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    rel = entry.path[len(prefix):]  # os.path.relpath's answer, without its two abspath calls
                    parts.append(f"{rel}:{st.st_size}:{st.st_mtime_ns}")
            except OSError:
                continue
    return "\n".join(parts).encode()


_FINGERPRINT: Optional[bytes] = None


def make_key(inputs: Iterable[tuple[str, bytes]]) -> str:
    """The key of an entry: code fingerprint + each (name, bytes) input, in order."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        _FINGERPRINT = _code_fingerprint()
    h = sha256(_FINGERPRINT)
    for name, data in inputs:
        for part in (name.encode("utf-8", "surrogateescape"), data):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
    return h.hexdigest()


def entry_name(kind: str, scope: Iterable[str]) -> str:
    """A file name for an entry of ``kind`` over these input paths (one file per set of
    paths, so the shipped rules and shipped + a user's rules do not evict each other)."""
    h = sha256("\0".join(scope).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f"{kind}-{h}.json"


def _usable_dir(path: Path, create: bool) -> bool:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        if not create:
            return False
        try:
            # the last component only: a missing cache base (HOME=/nonexistent/x, an
            # XDG_CACHE_HOME that does not exist) means no cache, never a directory tree made
            os.mkdir(path, mode=0o700)
            st = os.lstat(path)
        except FileExistsError:
            try:
                st = os.lstat(path)
            except OSError:
                return False
        except OSError:
            return False
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if hasattr(os, "getuid") and st.st_uid != os.getuid():
        return False
    return not (st.st_mode & 0o022)


_MAP = "\u0000map"
"""Marks a mapping with keys that are not text (YAML's ``true:``, ``1:``) as a list of pairs."""


def _encode(value: Any) -> Any:
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and _MAP not in value:
            return {k: _encode(v) for k, v in value.items()}
        return {_MAP: [[_encode(k), _encode(v)] for k, v in value.items()]}
    if isinstance(value, list):
        return [_encode(v) for v in value]
    return value


def _decode_map(obj: dict) -> Any:
    if len(obj) == 1 and _MAP in obj:
        pairs = obj[_MAP]
        return {(tuple(k) if isinstance(k, list) else k): v for k, v in pairs}
    return obj


def load(name: str, key: str) -> Any:
    """The data stored under ``name`` if its key is ``key``; None otherwise (never raises)."""
    base = directory()
    if base is None or not _usable_dir(base, create=False):
        return None
    path = base / name
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_ENTRY_BYTES:
            return None
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            raw = fh.read(MAX_ENTRY_BYTES + 1)
        # the hook only where a marked mapping was written (json.dumps writes the marker as \u0000map):
        # without one the C decoder runs alone, twice as fast on the ~0.5 MB rules entry
        entry = json.loads(raw, object_hook=_decode_map) if b"\\u0000map" in raw else json.loads(raw)
    except (OSError, ValueError, RecursionError, TypeError):
        return None
    finally:
        os.close(fd)
    if not isinstance(entry, dict) or entry.get("format") != FORMAT or entry.get("key") != key:
        return None
    return entry.get("data")


def store(name: str, key: str, data: Any) -> bool:
    """Store ``data`` under ``name`` with ``key``; False (and nothing written) if the cache is
    off, unusable, or the data would not come back from JSON exactly as it is."""
    base = directory()
    if base is None or not _usable_dir(base, create=True):
        return False
    try:
        text = json.dumps({"format": FORMAT, "key": key, "data": _encode(data)}, separators=(",", ":"))
        if json.loads(text, object_hook=_decode_map)["data"] != data:  # tuples, dates, NaN: not cached
            return False
    except (TypeError, ValueError, RecursionError):
        return False
    payload = text.encode("ascii")
    if len(payload) > MAX_ENTRY_BYTES:
        return False
    fd, tmp = -1, ""
    try:
        import tempfile  # only when an entry is written

        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=base)
        with os.fdopen(fd, "wb") as fh:
            fd = -1
            fh.write(payload)
        os.replace(tmp, base / name)
        tmp = ""
        _prune(base)
        return True
    except OSError:
        return False
    finally:
        if fd >= 0:
            os.close(fd)
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _prune(base: Path) -> None:
    try:
        entries = [e for e in os.scandir(base) if e.name.endswith(".json") and e.is_file(follow_symlinks=False)]
        if len(entries) <= MAX_ENTRIES:
            return
        entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns)
        for entry in entries[: len(entries) - MAX_ENTRIES]:
            os.unlink(entry.path)
    except OSError:
        pass
