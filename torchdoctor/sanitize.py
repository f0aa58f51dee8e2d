"""Text and numbers from outside torchdoctor, made safe before anything stores, serialises,
judges or prints them.

Facts come from places torchdoctor does not control: a facts JSON or a pasted report (any
bytes someone wrote), and a live probe, whose torch import error, environment values and
package names come from the target interpreter. :func:`sanitize_facts` returns a copy of a
:class:`~torchdoctor.facts.Facts` in which:

- every string, and every dictionary key, holds no lone surrogate (``"\\ud800"`` from a JSON
  escape, which no UTF-8 output can encode): each becomes U+FFFD;
- no terminal control sequence reaches a terminal: CSI sequences (``ESC [ ... final``:
  colours, ``ESC [2J`` clear screen, cursor moves) are removed whole, and every other C0
  control character, DEL and C1 control character (``ESC ]0;title BEL`` loses its ESC and
  BEL and shows as the text ``]0;title``) is removed. Tab and newline stay in values (a
  multi-line import error is legitimate); keys lose them too. Removing, rather than showing
  a placeholder, keeps a token that someone split with a NUL whole for redaction;
- a number no machine has becomes unknown: an integer that does not fit in 64 bits (a
  5000-digit GPU count or memory size), a float that is not finite, and a version-valued fact
  (:func:`is_version_field`) or dictionary key with a run of more than :data:`MAX_DIGITS`
  digits (Python refuses to convert over 4300, packaging's versions then raise, and nothing
  real has that many). The smallest enclosing fact that may be unknown becomes
  ``Unavailable`` with the reason (a bad ``gpu.devices[0].index`` makes ``gpu.devices``
  unknown); the rest of the facts stay as they were.

Strings are checked with one linear regex search each and only rewritten when something is
found, so a clean 5 MiB report costs a few milliseconds. Stdlib and pydantic only.
"""

from __future__ import annotations

import functools
import math
import re
import typing
from typing import Any

from torchdoctor.model import BaseModel

MAX_DIGITS = 32
"""A version-valued fact or a key with a longer run of digits is not plausible (the longest
real runs are dates and build numbers: 20250201, 2.6.0.dev20241112)."""

MAX_INT_BITS = 63
"""Integers that need more bits than this are not plausible fact values."""

# CSI: ESC [ parameter bytes, intermediate bytes, one final byte (ECMA-48 5.4), bounded
_CSI = re.compile(r"\x1b\[[0-?]{0,64}[ -/]{0,16}[@-~]")
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_BAD = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
_BAD_KEY = re.compile(rf"[\x00-\x1f\x7f-\x9f{_BIDI}\ud800-\udfff]")
_TABLE: dict[int, Any] = {c: None for c in (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F,
                                            *range(0x80, 0xA0), 0x061C, 0x200E, 0x200F,
                                            *range(0x202A, 0x202F), *range(0x2066, 0x206A))}
_TABLE.update({c: "\ufffd" for c in range(0xD800, 0xE000)})
_KEY_TABLE = {**_TABLE, 0x09: None, 0x0A: None}
_LONG_DIGITS = re.compile(rf"(?<!\d)\d{{{MAX_DIGITS + 1}}}")  # starts only where a run starts

_VERSION_NAMES = {"build", "kernel", "libc", "arch_list", "gfx_target"}
_VERSION_PARENTS = {"versions"}


def sanitize_text(text: str, *, key: bool = False) -> str:
    """``text`` without lone surrogates (U+FFFD instead), CSI sequences, control characters
    and bidirectional controls; tab and newline are kept unless ``key``."""
    bad = _BAD_KEY if key else _BAD
    if bad.search(text) is None:
        return text
    if "\x1b" in text:
        text = _CSI.sub("", text)
    return text.translate(_KEY_TABLE if key else _TABLE)


def one_line(text: str) -> str:
    """:func:`sanitize_text` for a message: also no tab or newline."""
    return sanitize_text(str(text), key=True)


def too_many_digits(text: str) -> bool:
    """Whether ``text`` has a run of more than MAX_DIGITS digits (linear)."""
    return _LONG_DIGITS.search(text) is not None


def is_version_field(name: str, parent: str = "") -> bool:
    """A fact whose value is a version or a build label: its name says ``version`` or ends in
    ``_build`` (``torch.cuda_build``), it is a build label (``build``, ``kernel``, ``libc``,
    ``arch_list``, ``gfx_target``), or an entry of ``packages.versions``."""
    return ("version" in name or name.endswith("_build") or name in _VERSION_NAMES
            or parent in _VERSION_PARENTS)


class _Implausible(Exception):
    def __init__(self, where: str, reason: str):
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


def sanitize_facts(facts: Any) -> Any:
    """A copy of ``facts`` (any of the fact models) with every string and key sanitised and
    implausible numbers made unknown; ``facts`` itself when nothing needed a change.

    Raises ValueError (one line) only where a bad value has no enclosing fact that may be
    unknown (a top-level list such as ``problems`` cannot hold one; its strings are only
    cleaned, so in practice this does not happen)."""
    try:
        return _model(facts, "")
    except _Implausible as exc:
        raise ValueError(str(exc)) from None


def _join(where: str, name: Any) -> str:
    return f"{where}.{name}" if where else str(name)


def _model(model: BaseModel, where: str) -> BaseModel:
    from torchdoctor.facts import Unavailable

    cls = type(model)
    updates: dict[str, Any] = {}
    for name in cls.model_fields:
        value = getattr(model, name)
        at = _join(where, name)
        try:
            new = _value(value, name, "", at, _item_may_be_unknown(cls, name))
        except _Implausible as exc:
            if not _may_be_unknown(cls, name):
                raise
            new = Unavailable(unavailable=f"not a plausible value ({exc.where}: {exc.reason})"
                              if exc.where != at else f"not a plausible value ({exc.reason})")
        if new is not value:
            updates[name] = new
    return model.model_copy(update=updates) if updates else model


def _value(value: Any, name: str, parent: str, where: str, items_may_be_unknown: bool) -> Any:
    if isinstance(value, str):
        clean = sanitize_text(value)
        if is_version_field(name, parent) and too_many_digits(clean):
            raise _Implausible(where, f"a version with a number of more than {MAX_DIGITS} digits")
        return clean
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:
            raise _Implausible(where, "an integer too large for 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _Implausible(where, f"{value!r} is not a finite number")
        return value
    if isinstance(value, BaseModel):
        return _model(value, where)
    if isinstance(value, list):
        out = []
        changed = False
        for i, item in enumerate(value):
            new = _value(item, name, parent, f"{where}[{i}]", False)
            changed = changed or new is not item
            out.append(new)
        return out if changed else value
    if isinstance(value, dict):
        return _dict(value, name, where, items_may_be_unknown)
    return value


def _dict(value: dict, name: str, where: str, items_may_be_unknown: bool) -> dict:
    from torchdoctor.facts import Unavailable

    out: dict = {}
    changed = False
    for k, item in value.items():
        new_key = sanitize_text(k, key=True) if isinstance(k, str) else k
        if isinstance(new_key, str) and too_many_digits(new_key):
            raise _Implausible(where, f"a name with a number of more than {MAX_DIGITS} digits")
        at = _join(where, new_key)
        try:
            new = _value(item, new_key if isinstance(new_key, str) else "", name, at, False)
        except _Implausible as exc:
            if not items_may_be_unknown:
                raise
            new = Unavailable(unavailable=f"not a plausible value ({exc.reason})")
        changed = changed or new is not item or new_key != k
        out[new_key] = new
    return out if changed else value


# ----------------------------------------------------------------------------------------
# which fields may hold Unavailable (read from the model annotations, once per field)
# ----------------------------------------------------------------------------------------


def _strip_annotated(tp: Any) -> Any:
    while typing.get_origin(tp) is typing.Annotated:
        tp = typing.get_args(tp)[0]
    return tp


def _has_unavailable(tp: Any) -> bool:
    from torchdoctor.facts import Unavailable

    tp = _strip_annotated(tp)
    return tp is Unavailable or Unavailable in typing.get_args(tp)


@functools.lru_cache(maxsize=None)
def _may_be_unknown(cls: type, name: str) -> bool:
    return _has_unavailable(cls.model_fields[name].annotation)


@functools.lru_cache(maxsize=None)
def _item_may_be_unknown(cls: type, name: str) -> bool:
    """A dict field whose values may each be Unavailable (``torch.settings``)."""
    tp = _strip_annotated(cls.model_fields[name].annotation)
    for arg in (tp, *typing.get_args(tp)):
        arg = _strip_annotated(arg)
        if typing.get_origin(arg) is dict:
            return _has_unavailable(typing.get_args(arg)[1])
    return False
