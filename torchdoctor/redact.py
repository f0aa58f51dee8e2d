"""Redaction of personal data and secrets, on by default in every output format.

What is replaced (documented in the README):
- the current user's name and home directory, and any ``/home/<name>``, ``/Users/<name>``,
  ``C:\\Users\\<name>`` path prefix (also in pasted reports from other machines) -> ``<user>``
- this machine's host name -> ``<host>``
- IPv4/IPv6 and MAC addresses -> ``<ip>`` / ``<mac>`` (version-valued fields are left alone)
- GPU UUIDs (``GPU-…``, ``MIG-…``) and GPU serial numbers -> ``<redacted>``
- anything that looks like a token or key: Hugging Face ``hf_…``, AWS ``AKIA…``/``ASIA…``,
  GitHub ``ghp_``/``gho_``/``ghs_``/``ghu_``/``github_pat_…``, Slack ``xox…-``, OpenAI-style
  ``sk-…``, JWTs, credentials in URLs (``scheme://user:pass@``), and the value of any
  ``…TOKEN=``/``…KEY=``/``…SECRET=``/``…PASSWORD=`` assignment -> ``<redacted>``
Redaction works on the serialised data (every string, at any depth), so a fact added later
is covered without touching this module.
"""

from __future__ import annotations

import functools
import getpass
import os
import re
import socket
from typing import Any, Optional, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

REDACTED = "<redacted>"

SECRET_PATTERNS = [
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),
    re.compile(r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}\b"),
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b"),
]
URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@]+(?::[^/\s@]*)?@")
ASSIGNMENT = re.compile(
    r"(?P<name>\b[A-Za-z0-9_]*(?:TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|_KEY)\b"
    r"\s*[=:]\s*)(?P<value>[^\s,;]+)",
    re.IGNORECASE,
)
SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_KEY|ACCESS_KEY|PRIVATE_KEY|_KEY$|CREDENTIAL)", re.I)
GPU_UUID = re.compile(r"\b(?:GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
BARE_UUID = re.compile(r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
MAC = re.compile(r"\b[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}\b")
IPV4 = re.compile(r"(?<![\w.])(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?![\w.])")
IPV6 = re.compile(r"(?<![\w:])(?:[0-9a-fA-F]{1,4}:){2,7}[0-9a-fA-F]{1,4}(?![\w:])")
HOME_PATHS = [
    re.compile(r"(?P<pre>/home/)(?P<name>[^/\s\"':]+)"),
    re.compile(r"(?P<pre>/Users/)(?P<name>[^/\s\"':]+)"),
    re.compile(r"(?P<pre>[A-Za-z]:\\+(?:Users|Documents and Settings)\\+)(?P<name>[^\\\s\"':]+)", re.I),
]
KEEP_HOME_NAMES = {"Shared", "Public", "Default", "All Users"}
SENSITIVE_KEYS = {"uuid", "serial"}


@functools.lru_cache(maxsize=1)
def _identity() -> tuple[Optional[str], Optional[str], Optional[str]]:
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in some containers
        user = None
    home = os.path.expanduser("~")
    home = home if home not in ("~", "/", "") else None
    try:
        host = socket.gethostname() or None
    except OSError:
        host = None
    return user, home, host


def redact_text(text: str, key: str = "") -> str:
    """Redact one string; ``key`` is the field or variable name it came from."""
    if not text:
        return text
    user, home, host = _identity()
    if SECRET_NAME.search(key or ""):
        return REDACTED
    out = text
    for pat in SECRET_PATTERNS:
        out = pat.sub(REDACTED, out)
    out = URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", out)
    out = ASSIGNMENT.sub(lambda m: f"{m.group('name')}{REDACTED}", out)
    out = GPU_UUID.sub(lambda m: m.group(0).split("-")[0] + "-" + REDACTED, out)
    out = BARE_UUID.sub(REDACTED, out)
    out = MAC.sub("<mac>", out)
    if not _is_version_key(key):
        out = IPV4.sub("<ip>", out)
        out = IPV6.sub("<ip>", out)
    if home and len(home) > 1:
        out = out.replace(home, "~")
    for pat in HOME_PATHS:
        out = pat.sub(lambda m: m.group("pre") + ("<user>" if m.group("name") not in KEEP_HOME_NAMES else m.group("name")), out)
    if user and len(user) >= 3 and user not in ("root",):
        out = re.sub(rf"(?<![A-Za-z0-9]){re.escape(user)}(?![A-Za-z0-9])", "<user>", out)
    if host and len(host) >= 3 and host not in ("localhost",):
        out = re.sub(rf"(?<![A-Za-z0-9-]){re.escape(host)}(?![A-Za-z0-9-])", "<host>", out)
    return out


def _is_version_key(key: str) -> bool:
    k = key.lower()
    return "version" in k or k in ("build", "driver", "git_version")


def redact_data(data: Any, key: str = "") -> Any:
    if isinstance(data, str):
        if key.lower() in SENSITIVE_KEYS:
            return REDACTED
        return redact_text(data, key)
    if isinstance(data, dict):
        return {k: redact_data(v, str(k)) for k, v in data.items()}
    if isinstance(data, list):
        return [redact_data(v, key) for v in data]
    return data


def redact_report(model: M) -> M:
    """Return a redacted copy of a Report or Facts (any pydantic model)."""
    data = model.model_dump(mode="json")
    return type(model).model_validate(redact_data(data))
