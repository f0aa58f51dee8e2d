"""Tolerant parsers shared by the lookups: compute capabilities, versions, CUDA tags, GPU-name
words. Each gives ``None`` for input it cannot read (never a guess, never an exception)."""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Optional

from packaging.version import Version

CC = tuple  # (major, minor)

_ARCH_RE = re.compile(r"^(sm|compute)_(\d{1,6})([a-z]?)$")


def _memo(func: Callable) -> Callable:
    """A parser memoised on its (hashable) argument, by type too (``True`` is not ``1``): the rules of one run
    parse the same few values thousands of times. Bounded; an unhashable argument is parsed as it comes."""
    cached = functools.lru_cache(maxsize=4096, typed=True)(func)

    @functools.wraps(func)
    def parse(value: Any) -> Any:
        try:
            return cached(value)
        except TypeError:  # unhashable (a list): the parsers themselves never raise
            return func(value)

    return parse


@_memo
def _cc(value: Any) -> Optional[CC]:
    """(major, minor) from 8.6, "8.6", (8, 6), "sm_86"; None otherwise."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (tuple, list)) and len(value) == 2:
        try:
            return int(value[0]), int(value[1])
        except (TypeError, ValueError):
            return None
    if isinstance(value, str):
        arch = _ARCH_RE.match(value.strip().lower())
        if arch:
            return _arch_cc(arch.group(2))
    try:
        major, minor = f"{float(value):.1f}".split(".")
    except (TypeError, ValueError):
        return None
    return (int(major), int(minor)) if int(major) >= 0 else None


def _arch_cc(digits: str) -> CC:
    return int(digits[:-1] or 0), int(digits[-1])


def _as_float(cc: CC) -> float:
    return float(f"{cc[0]}.{cc[1]}")


@_memo
def _version(value: Any) -> Optional[Version]:
    """Release part of a version (2.7.0+cu128 -> 2.7.0, 2.10.0.dev2025 -> 2.10.0); None if unreadable."""
    if value is None:
        return None
    try:
        return Version(Version(str(value).strip()).base_version)
    except ValueError:  # InvalidVersion, or a release number over 4300 digits
        return None


def _local(value: Any) -> Optional[str]:
    try:
        return Version(str(value).strip()).local
    except ValueError:
        return None


@_memo
def _cuda(value: Any) -> Optional[str]:
    """Toolkit major.minor from "12.8", "12.8.1", "cu128", "cu92", "V12.8.93"; None otherwise."""
    if value is None:
        return None
    text = str(value).strip().lower()
    tag = re.fullmatch(r"cu(?:da)?(\d{2,3})", text)
    if tag:
        digits = tag.group(1)
        return f"{int(digits[:-1])}.{digits[-1]}"
    dotted = re.match(r"v?(\d{1,9})\.(\d{1,9})(?!\d)", text)
    return f"{int(dotted.group(1))}.{int(dotted.group(2))}" if dotted else None


def _majmin(value: Any) -> Optional[tuple]:
    match = re.match(r"\s*(\d{1,9})\.(\d{1,9})(?!\d)", str(value)) if value is not None else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def _tokens(text: str) -> tuple:
    text = re.sub(r"\([^()]*\)", " ", text.lower())  # [^()]: linear on unclosed '(' runs
    text = re.sub(r"[-_/,:;]+", " ", text)
    text = re.sub(r"(\d)([a-z])", r"\1 \2", text)
    return tuple(text.split())
