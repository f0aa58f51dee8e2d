"""Redaction of personal data and secrets, on by default in every output format.

The exact list of what is replaced is in ``docs/redaction.md`` (keep the two in step):

- the current user's name and home directory, and the ``<name>`` in any ``/home/<name>``,
  ``/Users/<name>``, ``C:\\Users\\<name>`` path (also in pasted reports from other machines)
  -> ``<user>`` (the home directory itself -> ``~``)
- this machine's host name (full and short form) and AWS-style ``ip-10-1-2-3`` host names
  -> ``<host>``
- IPv4, IPv6 and MAC addresses -> ``<ip>`` / ``<mac>``; version-valued facts
  (``*version*``, ``packages.versions``, ``arch_list``, ``build`` ...) and version numbers in
  text (``cuDNN 8.9.2.26``, ``nvidia-cublas-cu12==12.1.3.1``) are left alone
- e-mail addresses -> ``<email>``
- GPU UUIDs (``GPU-…``, ``MIG-…``, bare UUIDs) and the values of ``uuid``/``serial`` facts
  -> ``<redacted>``
- anything that looks like a token or key: Hugging Face ``hf_…``, AWS ``AKIA…``/``ASIA…``,
  GitHub ``ghp_``/``gho_``/``ghs_``/``ghu_``/``ghr_``/``github_pat_…``, GitLab ``glpat-…``,
  Slack ``xox…-``, OpenAI/Anthropic-style ``sk-…``, Google ``AIza…``, JWTs, private key
  blocks, credentials in URLs (``scheme://user:pass@``), the value of any
  ``…TOKEN=``/``…KEY=``/``…SECRET=``/``…PASSWORD=`` assignment, the whole value of a field or
  variable whose *name* says it is a secret, and long random-looking strings in environment
  variable values -> ``<redacted>``

Redaction works on the serialised data (every string, at any depth, knowing the path of the
fact it belongs to), so a fact added later is covered without touching this module.

This module reads nothing from the environment itself: the user name comes from
``getpass.getuser()`` and the home directory from ``os.path.expanduser("~")`` (both consult
``HOME``/``USER``/``LOGNAME`` the way the standard library does), the host name from
``socket.gethostname()``.
"""

from __future__ import annotations

import functools
import getpass
import os
import re
import socket
from typing import Any, Optional, Sequence, TypeVar

from pydantic import BaseModel

M = TypeVar("M", bound=BaseModel)

REDACTED = "<redacted>"
USER = "<user>"
HOST = "<host>"
IP = "<ip>"
MAC_TOKEN = "<mac>"
EMAIL = "<email>"

# ----------------------------------------------------------------------------------------
# patterns
# ----------------------------------------------------------------------------------------

SECRET_PATTERNS = [
    re.compile(r"\bhf_[A-Za-z0-9]{20,}\b"),                                   # Hugging Face
    re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"),  # AWS key ids
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),                            # GitHub
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}\b"),                              # GitLab
    re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}\b"),                         # Slack
    re.compile(r"\bsk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{20,}\b"),      # OpenAI, Anthropic, Stripe
    re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),                                 # Google API key
    re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"),                                   # npm
    re.compile(r"\bpypi-[A-Za-z0-9_-]{50,}\b"),                               # PyPI upload token
    re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\b"),  # JWT
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)", re.S),
]
URL_CREDENTIALS = re.compile(r"(?P<scheme>\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/\s:@]+(?::[^/\s@]*)?@")
_SECRET_WORDS = r"TOKEN(?!IZER)|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?|AUTH"
ASSIGNMENT = re.compile(
    rf"(?P<name>\b[A-Za-z0-9_]*(?:{_SECRET_WORDS}|_KEY)\b[\"']?\s*[=:]\s*[\"']?)(?P<value>[^\s,;\"']+)",
    re.IGNORECASE,
)
SECRET_NAME = re.compile(rf"(?:{_SECRET_WORDS})|_KEY$", re.I)
"""A field or variable name that says its value is a secret (TOKENIZERS_PARALLELISM is not)."""
GPU_UUID = re.compile(r"\b(?P<kind>GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
# MIG instances in old drivers: MIG-GPU-<uuid>/<gi>/<ci>
MIG_OLD = re.compile(r"\bMIG-GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?:/\d+){0,2}")
BARE_UUID = re.compile(r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
MAC = re.compile(
    r"(?<![\w:-])(?:[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:-[0-9a-fA-F]{2}){5})(?![\w:-])"
)
IPV4 = re.compile(r"(?<![\w.])(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}(?!\w|\.\w)")
_H = r"[0-9a-fA-F]{1,4}"
# full form (8 groups) or compressed (``::``) ending in a group; times (10:52:10) and
# PCI bus ids (0000:3b:00.0) have neither and are left alone.
IPV6 = re.compile(
    rf"(?<![\w:])(?:(?:{_H}:){{7}}{_H}|(?:{_H}(?::{_H}){{0,6}})?::{_H}(?::{_H}){{0,6}})(?![\w:])"
)
EMAIL_RE = re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
AWS_HOST = re.compile(r"\bip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[A-Za-z0-9.-]+)?\b")
HOME_PATHS = [
    re.compile(r"(?P<pre>/home/)(?P<name>[^/\s\"':;,]+)"),
    re.compile(r"(?P<pre>/Users/)(?P<name>[^/\s\"':;,]+)"),
    re.compile(r"(?P<pre>\b[A-Za-z]:(?:\\+|/)(?:Users|Documents and Settings)(?:\\+|/))(?P<name>[^\\/\s\"':;,]+)", re.I),
]
KEEP_HOME_NAMES = {"Shared", "Public", "Default", "All Users", "Default User", "<user>"}

# Account and host names that identify nobody and are also ordinary words in a report
# ("nvidia-cudnn-cu12", "Ubuntu 22.04"): never replaced outside home-directory paths.
GENERIC_NAMES = {
    "root", "user", "users", "admin", "administrator", "ubuntu", "debian", "centos", "fedora",
    "ec2-user", "jovyan", "runner", "nobody", "docker", "vagrant", "guest", "test", "app",
    "home", "default", "shared", "public", "pytorch", "torch", "nvidia", "cuda", "python",
    "conda", "anaconda", "miniconda", "jupyter", "colab", "kaggle", "localhost", "gpu", "node",
    "worker", "master", "server", "linux", "windows", "darwin", "macos", "lib", "local",
}

# Facts (by the last key of their path) whose values are versions or build labels: no
# address detection there (cuDNN 8.9.2.26 is not an IP address).
VERSION_KEYS = {"build", "driver", "git_version", "arch_list", "cpu_capability", "kernel",
                "libc", "os_name", "channel"}
VERSION_PARENTS = {"versions"}  # packages.versions[<name>] = version
SENSITIVE_KEYS = {"uuid", "serial", "serial_number", "board_serial"}

# A version number right after one of these words is not an address.
VERSION_CONTEXT = re.compile(
    r"(?:(?<![A-Za-z0-9_.-])(?:version|ver\.?|v|cudnn|cublas|cufft|curand|cusolver|cusparse|cusparselt|nccl|nvjitlink|"
    r"nvtx|nvrtc|cupti|cuda|runtime|driver|torch|triton|python|gcc|glibc|mkl|onednn|mkldnn|"
    r"nvidia-[a-z0-9-]+|lib[a-z0-9_+-]+)|==|>=|<=|~=|@)"
    r"[\s:=()\[\]'\"]*$",
    re.IGNORECASE,
)
ENV_NAME_BEFORE = re.compile(r"\b[A-Z][A-Z0-9_]*\s*[=:]\s*[\"']?$")

# a long random-looking string inside an environment variable value
RANDOMISH = re.compile(r"(?<![A-Za-z0-9_+=/\\.-])[A-Za-z0-9_+=-]{32,}(?![A-Za-z0-9_+=-])")


# ----------------------------------------------------------------------------------------
# identity of this machine
# ----------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=1)
def _identity() -> tuple[Optional[str], Optional[str], Optional[str]]:
    """(user name, home directory, host name) of the running process, each None if unknown."""
    try:
        user = getpass.getuser() or None
    except Exception:  # noqa: BLE001 - no user name in some containers (KeyError, OSError)
        user = None
    try:
        home: Optional[str] = os.path.expanduser("~")
    except Exception:  # noqa: BLE001
        home = None
    home = home.rstrip("/\\") if home else None
    if not home or home in ("~",) or len(home) < 3:
        home = None
    try:
        host = socket.gethostname() or None
    except OSError:
        host = None
    return user, home, host


def _replace_word(text: str, word: str, token: str, extra: str = "") -> str:
    return re.sub(rf"(?<![A-Za-z0-9{extra}]){re.escape(word)}(?![A-Za-z0-9{extra}])", token, text)


def _identifying(name: Optional[str]) -> bool:
    return bool(name) and len(name) >= 3 and name.lower() not in GENERIC_NAMES  # type: ignore[union-attr]


# ----------------------------------------------------------------------------------------
# text
# ----------------------------------------------------------------------------------------


def _is_version_context(text: str, start: int) -> bool:
    line_start = text.rfind("\n", 0, start) + 1
    before = text[max(line_start, start - 48):start]
    if ENV_NAME_BEFORE.search(before) and "VERSION" not in before.upper():
        return False  # MASTER_ADDR=10.0.0.1, NCCL_COMM_ID=10.0.0.1:29500
    return bool(VERSION_CONTEXT.search(before))


def _sub_ipv4(text: str) -> str:
    def repl(m: re.Match) -> str:
        return m.group(0) if _is_version_context(text, m.start()) else IP

    return IPV4.sub(repl, text)


def redact_text(text: str, key: str = "", path: Sequence[str] = ()) -> str:
    """Redact one string. ``key`` is the field or variable name it came from and ``path`` the
    keys above it (``("facts", "env", "variables")``); both only make redaction stricter or,
    for version-valued facts, skip address detection."""
    if not text:
        return text
    if SECRET_NAME.search(key or "") or key.lower() in SENSITIVE_KEYS:
        return REDACTED
    user, home, host = _identity()
    versioned = _is_version_key(key, path)
    out = text
    for pat in SECRET_PATTERNS:
        out = pat.sub(REDACTED, out)
    out = URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", out)
    out = ASSIGNMENT.sub(lambda m: f"{m.group('name')}{REDACTED}", out)
    out = MIG_OLD.sub(f"MIG-GPU-{REDACTED}", out)
    out = GPU_UUID.sub(lambda m: f"{m.group('kind')}-{REDACTED}", out)
    out = BARE_UUID.sub(REDACTED, out)
    out = EMAIL_RE.sub(EMAIL, out)
    if path and path[-1] == "variables":  # an environment variable's value
        out = RANDOMISH.sub(lambda m: REDACTED if _randomish(m.group(0)) else m.group(0), out)
    out = AWS_HOST.sub(HOST, out)
    if not versioned:
        out = MAC.sub(MAC_TOKEN, out)
        out = _sub_ipv4(out)
        out = IPV6.sub(IP, out)
    if home and (os.path.basename(home) == user or any(p.match(home) for p in HOME_PATHS)):
        out = _replace_prefix(out, home, "~")
    for pat in HOME_PATHS:
        out = pat.sub(lambda m: m.group("pre") + (m.group("name") if m.group("name") in KEEP_HOME_NAMES else USER), out)
    if host:
        for name in dict.fromkeys((host, host.split(".")[0])):
            if _identifying(name):
                out = _replace_word(out, name, HOST, extra="-")
    if _identifying(user):
        out = _replace_word(out, user, USER)  # type: ignore[arg-type]
    return out


def _replace_prefix(text: str, home: str, token: str) -> str:
    # the home directory as a whole path component: /home/alice, not /home/alice2
    return re.sub(rf"{re.escape(home)}(?![A-Za-z0-9_.-])", token, text)


def _randomish(s: str) -> bool:
    """A key-like string: letters and digits mixed, few separators (not a compound name)."""
    digits = sum(c.isdigit() for c in s)
    upper = sum(c.isupper() for c in s)
    lower = sum(c.islower() for c in s)
    separators = sum(c in "-_" for c in s)
    classes = (digits >= 2) + (upper >= 2) + (lower >= 2)
    return classes >= 2 and separators <= 3


def _is_version_key(key: str, path: Sequence[str]) -> bool:
    k = (key or "").lower()
    if "version" in k or k in VERSION_KEYS:
        return True
    return bool(path) and path[-1] in VERSION_PARENTS


# ----------------------------------------------------------------------------------------
# data
# ----------------------------------------------------------------------------------------


def redact_data(data: Any, key: str = "", path: tuple = ()) -> Any:
    """Redact every string in JSON-like data (dicts, lists, scalars)."""
    if isinstance(data, str):
        return redact_text(data, key, path)
    if isinstance(data, dict):
        sub = path + (key,) if key else path
        return {k: redact_data(v, str(k), sub) for k, v in data.items()}
    if isinstance(data, list):
        return [redact_data(v, key, path) for v in data]
    return data


def redact_report(model: M) -> M:
    """Return a redacted copy of a Report or Facts (any pydantic model)."""
    data = model.model_dump(mode="json")
    return type(model).model_validate(redact_data(data))
