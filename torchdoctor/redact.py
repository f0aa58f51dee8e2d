"""Redaction of personal data and secrets, on by default in every output format.

The exact list of what is replaced is in ``docs/redaction.md`` (keep the two in step):

- the current user's name and home directory, and the ``<name>`` in any ``/home/<name>``,
  ``/Users/<name>``, ``C:\\Users\\<name>`` path (also in pasted reports from other machines)
  -> ``<user>`` (the home directory itself -> ``~``)
- this machine's host name (full and short form) and AWS-style ``ip-10-1-2-3`` host names
  -> ``<host>``
- IPv4, IPv6 and MAC addresses (also Cisco's ``aabb.ccdd.eeff``) -> ``<ip>`` / ``<mac>``; a
  dotted quad is a version, and left alone, only in version position (after a version word:
  ``cuDNN 8.9.2.26``, ``nvidia-cublas-cu12==12.1.3.1``; or at the start of a version-valued
  fact) and with a first number of at most 99 (:func:`_is_version_number`)
- e-mail addresses -> ``<email>``
- GPU UUIDs (``GPU-…``, ``MIG-…``, bare UUIDs) and the values of ``uuid``/``serial`` facts
  -> ``<redacted>``
- anything that looks like a token or key: Hugging Face ``hf_…``, AWS ``AKIA…``/``ASIA…``,
  GitHub ``ghp_``/``gho_``/``ghs_``/``ghu_``/``ghr_``/``github_pat_…``, GitLab ``glpat-…``,
  Slack ``xox…-``, OpenAI/Anthropic-style ``sk-…``, Google ``AIza…``, npm, PyPI, JWTs (also
  with a short or no signature), private key blocks, AWS secret access keys, credentials in
  URLs (``scheme://user:pass@``), the value of any ``…TOKEN=``/``…KEY=``/``…SECRET=``/
  ``…PASSWORD=``/``…_PASS=``/``…_PWD=`` assignment, the whole value of a field or variable
  whose *name* says it is a secret (``TORCH_PASS``, ``NCCL_PWD``), and long random-looking
  strings in environment variable values -> ``<redacted>``

Every pattern is linear in its input (see the comment above the patterns and
``benchmarks/redaction.py``).

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
from typing import Any, Optional, Sequence, TypeVar

from torchdoctor.model import BaseModel

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
#
# Every pattern here runs over hostile text of up to several megabytes, so each one is linear
# in its input: it starts with a literal (which the regex engine finds with a fast scan) or is
# anchored by a lookbehind that fails at once inside a run, and no two adjacent quantifiers can
# match the same characters. Where a match would need an unbounded scan *before* a literal
# (the local part of an e-mail address before its ``@``), the literal is found first and the
# part before it is read backwards over a bounded window (:func:`_sub_emails`).
# ``benchmarks/redaction.py`` times all of them on 1 MB adversarial inputs.

class _Gated:
    """A pattern every match of which contains one of ``needles`` (its literal prefix): compiled when first
    needed, and run only over a text that holds a needle. Importing this module compiled 33 patterns (3-4 ms of
    every triage) and each string of a report went through all of them; most strings hold no ``hf_`` or ``ghp_``.
    ``folded``: the needles are lower case and the text is compared lower-cased (an IGNORECASE pattern)."""

    __slots__ = ("source", "flags", "needles", "folded", "_re")

    def __init__(self, source: str, needles: Sequence[str], flags: int = 0):
        self.source, self.flags, self.needles = source, flags, tuple(needles)
        self.folded = bool(flags & re.IGNORECASE)
        self._re: Optional[re.Pattern] = None

    @property
    def pattern(self) -> str:
        return self.source

    def compiled(self) -> re.Pattern:
        if self._re is None:
            self._re = re.compile(self.source, self.flags)
        return self._re

    def present(self, text: str) -> bool:
        hay = text.lower() if self.folded else text
        return any(n in hay for n in self.needles)

    def sub(self, repl: Any, text: str, count: int = 0) -> str:
        return self.compiled().sub(repl, text, count) if self.present(text) else text

    def search(self, text: str, *args: Any) -> Any:
        return self.compiled().search(text, *args) if self.present(text) else None

    def match(self, text: str, *args: Any) -> Any:
        return self.compiled().match(text, *args) if self.present(text) else None

    def finditer(self, text: str, *args: Any) -> Any:
        return self.compiled().finditer(text, *args) if self.present(text) else iter(())


# A token starts where no letter or digit precedes it: "NCCL_OPTS=hf_...", "(AKIA...)" and
# "x_AKIA..." are all caught, "blahf_..." is not. A token runs to the end of its alphabet (no
# trailing \b, which made "AKIA..._suffix" and "hf_..._x" escape).
_B = r"(?<![A-Za-z0-9])"
SECRET_PATTERNS: dict[str, Any] = {
    "huggingface": _Gated(_B + r"hf_[A-Za-z0-9]{20,}", ["hf_"]),
    "aws-key-id": _Gated(_B + r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}(?![0-9A-Za-z])",
                         ["AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"]),
    "github": _Gated(_B + r"gh[pousr]_[A-Za-z0-9]{20,}", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]),
    "github-pat": _Gated(_B + r"github_pat_[A-Za-z0-9_]{20,}", ["github_pat_"]),
    "gitlab": _Gated(_B + r"glpat-[A-Za-z0-9_-]{20,}", ["glpat-"]),
    "slack": _Gated(_B + r"xox[abposr]-[A-Za-z0-9-]{10,}", ["xox"]),
    "openai-anthropic-stripe": _Gated(_B + r"sk-(?:proj-|ant-|live-|test-)?[A-Za-z0-9_-]{20,}", ["sk-"]),
    "google-api-key": _Gated(_B + r"AIza[0-9A-Za-z_-]{35,}", ["AIza"]),
    "npm": _Gated(_B + r"npm_[A-Za-z0-9]{36,}", ["npm_"]),
    "pypi": _Gated(_B + r"pypi-[A-Za-z0-9_-]{50,}", ["pypi-"]),
    # header.payload.signature; the signature may be short or empty (alg "none")
    "jwt": _Gated(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{2,}\.[A-Za-z0-9_-]*", ["eyJ"]),
    "private-key": _Gated(
        r"-----BEGIN [A-Z ]{0,40}PRIVATE KEY-----.*?(?:-----END [A-Z ]{0,40}PRIVATE KEY-----|\Z)", ["-----BEGIN "],
        re.S,
    ),
    # AWS secret access keys: exactly 40 characters of base64 (with '/' and '+'), checked for
    # the mixed case of random data by _aws_secret (a git SHA is lower-case hex, a path starts
    # with '/' or has few capitals)
    "aws-secret-key": re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
}
# credentials in a URL: scheme://user:password@host, scheme://token@host. Anchored on "://"
# (found by a fast scan); the user part cannot contain '/', so a scan never runs past the next
# "://".
URL_CREDENTIALS = re.compile(r"://[^/\s:@]+(?::[^/\s@]*)?@")
_SECRET_WORDS = r"TOKEN(?!IZER)|SECRET|PASSWORD|PASSWD|PASSPHRASE|API_?KEY|ACCESS_KEY|PRIVATE_KEY|CREDENTIALS?|AUTH"
# PASS, PWD and PW are secret words only as a whole part of a name (TORCH_PASS, NCCL_PWD,
# db_pass), not inside a word (BYPASS, COMPASS); bare, only in capitals ("PASS=", not "pass:").
ASSIGNMENT = re.compile(
    rf"(?P<name>\b(?:[A-Za-z0-9_]{{0,100}}(?:{_SECRET_WORDS}|_KEY|_PASS|_PWD|_PW)|(?-i:PASS|PWD|PW))\b"
    r"[\"']?\s*[=:]\s*[\"']?)(?P<value>[^\s,;\"']+)",
    re.IGNORECASE,
)
# ... and the short lower-case keys of a connection string inside a value (``DATABASE=host=x
# pw=secret``, ``dsn=... pass=hunter2``): a key of its own (not ``bypass=``), with ``=``
INNER_SECRET = re.compile(r"(?P<name>(?<![A-Za-z0-9_])(?:pw|pwd|pass|passwd|password)\s*=\s*[\"']?)"
                          r"(?P<value>[^\s,;&\"']+)", re.IGNORECASE)
# credentials before a host without a scheme: ``user:password@host`` (psql, git, rsync, a DSN).
# A token of its own (start of text, after a space, a quote, ``=`` or a bracket), both parts
# bounded, so each start scans at most ~512 characters: linear.
BARE_CREDENTIALS = re.compile(r"(?<![^\s\"'=(<\[,;])[^\s:@/\"'<>]{1,256}:[^\s@/\"'<>]{1,256}@(?=[A-Za-z0-9\[])")
SECRET_NAME = re.compile(rf"(?:{_SECRET_WORDS})|_KEY$|(?:^|[^A-Za-z0-9])(?:PASS|PWD|PW)(?:[^A-Za-z0-9]|$)", re.I)
"""A field or variable name that says its value is a secret (TOKENIZERS_PARALLELISM is not)."""
GPU_UUID = _Gated(r"\b(?P<kind>GPU|MIG)-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b", ["GPU-", "MIG-"])
# MIG instances in old drivers: MIG-GPU-<uuid>/<gi>/<ci>
MIG_OLD = _Gated(r"\bMIG-GPU-[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?:/\d{1,9}){0,2}", ["MIG-GPU-"])
BARE_UUID = re.compile(r"\b[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}\b")
# aa:bb:cc:dd:ee:ff, AA-BB-CC-DD-EE-FF, and Cisco's aabb.ccdd.eeff
MAC = re.compile(
    r"(?<![\w:-])(?:[0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5}|[0-9a-fA-F]{2}(?:-[0-9a-fA-F]{2}){5})(?![\w:-])"
    r"|(?<![\w.:-])[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}\.[0-9a-fA-F]{4}(?![\w:-]|\.\w)"
)
IPV4 = re.compile(r"(?<![\w.])(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}(?!\w|\.\w)")
_H = r"[0-9a-fA-F]{1,4}"
# full form (8 groups) or compressed (``::``) ending in a group; times (10:52:10) and
# PCI bus ids (0000:3b:00.0) have neither and are left alone.
IPV6 = re.compile(
    rf"(?<![\w:])(?:(?:{_H}:){{7}}{_H}|(?:{_H}(?::{_H}){{0,6}})?::{_H}(?::{_H}){{0,6}})(?![\w:])"
)
# e-mail: the domain after each '@' (RFC 1035 sizes: labels of 1-63, at most 127 of them),
# the local part (at most 64 characters, RFC 5321) read backwards from the '@'
EMAIL_DOMAIN = re.compile(r"@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,126}\.[A-Za-z]{2,63}(?![A-Za-z0-9-])")
_EMAIL_LOCAL_REVERSED = re.compile(r"[A-Za-z0-9._%+-]{1,64}")
EMAIL_LOCAL_MAX = 64
AWS_HOST = _Gated(r"\bip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[A-Za-z0-9.-]{1,253})?\b", ["ip-"])
HOME_PATHS = [
    _Gated(r"(?P<pre>/home/)(?P<name>[^/\s\"':;,]+)", ["/home/"]),
    _Gated(r"(?P<pre>/Users/)(?P<name>[^/\s\"':;,]+)", ["/Users/"]),
    _Gated(r"(?P<pre>\b[A-Za-z]:(?:\\{1,4}|/)(?:Users|Documents and Settings)(?:\\{1,4}|/))(?P<name>[^\\/\s\"':;,]+)",
           ["users", "documents and settings"], re.I),
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

# Facts (by the last key of their path) whose values are versions or build labels. A dotted
# quad there is a version where it sits in version position (the start of the value, or after
# a version word), unless its shape says address (see _is_version_number); an address
# anywhere else in such a value (an IP in the OS line, a conda channel URL) is replaced.
VERSION_KEYS = {"build", "driver", "git_version", "arch_list", "cpu_capability", "kernel",
                "libc", "os_name", "channel"}
VERSION_PARENTS = {"versions"}  # packages.versions[<name>] = version
SENSITIVE_KEYS = {"uuid", "serial", "serial_number", "board_serial"}

# A version number right after one of these words (or ``ver.``, ``nvidia-<name>``,
# ``lib<name>``, ``==``, ``>=``, ``<=``, ``~=``, then spaces, ``:``, ``=``, brackets or quotes)
# is in version position. The test runs on the reversed text before the number, anchored at
# its start (``match``), so it costs one short scan per candidate instead of a search from
# every position of the window.
VERSION_WORDS = ("version", "v", "cudnn", "cublas", "cufft", "curand", "cusolver", "cusparse",
                 "cusparselt", "nccl", "nvjitlink", "nvtx", "nvrtc", "cupti", "cuda", "runtime",
                 "driver", "torch", "triton", "python", "gcc", "glibc", "mkl", "onednn", "mkldnn",
                 "tensorrt")
_VERSION_BEFORE_REVERSED = re.compile(
    r"[\s:=()\[\]'\"]*(?:(?:"
    + "|".join(sorted((w[::-1] for w in VERSION_WORDS), key=len, reverse=True))
    + r"|\.?rev|[a-z0-9-]+-aidivn|[a-z0-9_+-]+bil)(?![A-Za-z0-9_.-])|==|=>|=<|=~)",
    re.IGNORECASE,
)
# ``NAME=`` / ``NAME:`` (an upper-case variable name) right before the number, reversed too
_ENV_NAME_BEFORE_REVERSED = re.compile(r"[\"']?\s*[=:]\s*[A-Z0-9_]*[A-Z](?!\w)")
VERSION_WINDOW = 48
"""How far before a dotted quad its version word is looked for (never past a line start)."""
VERSION_MAX_FIRST = 99
"""A dotted quad whose first number is above this is an address even after a version word:
four-part versions that fit in bytes have small majors (cuDNN 8.9.2.26, cuRAND 10.3.2.106,
TensorRT 10.0.1.6), while 127.0.0.1, 169.254.x.x, 172.16-31.x.x, 192.168.x.x and most public
addresses start above 99."""

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
        if hasattr(os, "uname"):  # what gethostname() returns on POSIX, without importing socket (2 ms a run)
            host = os.uname().nodename or None
        else:
            import socket

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


def _is_version_number(text: str, start: int, versioned: bool) -> bool:
    """Whether the dotted quad at ``start`` is a version, not an IPv4 address.

    It is a version when its first number is at most VERSION_MAX_FIRST and it stands in
    version position: right after a version word or operator (``cuDNN 8.9.2.26``,
    ``==12.1.3.1``, ``libcudnn.so.8.9.2.26``), or, in a version-valued fact, at the start of
    the value. An assignment to an upper-case name (``MASTER_ADDR=10.0.0.1``) is an address.
    """
    dot = text.find(".", start, start + 4)
    if dot < 0 or int(text[start:dot]) > VERSION_MAX_FIRST:
        return False
    lo = max(0, start - VERSION_WINDOW)
    line_start = text.rfind("\n", lo, start) + 1  # bounded: never a scan back to the start
    before = text[max(line_start, lo):start][::-1]
    if _ENV_NAME_BEFORE_REVERSED.match(before) and "NOISREV" not in before.upper():
        return False  # MASTER_ADDR=10.0.0.1, NCCL_COMM_ID=10.0.0.1:29500
    if _VERSION_BEFORE_REVERSED.match(before):
        return True
    return versioned and start - line_start <= 1 and text[line_start:start] in ("", "v", "V")


def _sub_ipv4(text: str, versioned: bool) -> str:
    def repl(m: re.Match) -> str:
        return m.group(0) if _is_version_number(text, m.start(), versioned) else IP

    return IPV4.sub(repl, text)


def _sub_emails(text: str) -> str:
    """E-mail addresses -> EMAIL. Anchored on each '@' (a fast scan): the domain is matched
    forwards, the local part read backwards over at most EMAIL_LOCAL_MAX characters, so the
    cost is linear however the text is made (a regex starting at the local part rescans a
    long run of local-part characters from every position)."""
    if "@" not in text:
        return text
    pieces = []
    done = 0
    for m in EMAIL_DOMAIN.finditer(text):
        at = m.start()
        lo = max(done, at - EMAIL_LOCAL_MAX)
        local = _EMAIL_LOCAL_REVERSED.match(text[lo:at][::-1])
        if local is None:
            continue
        begin = at - len(local.group(0))
        while begin < at and not text[begin].isalnum():
            begin += 1  # "--user@host": the address starts at a letter or digit
        if begin == at:
            continue
        pieces.append(text[done:begin])
        pieces.append(EMAIL)
        done = m.end()
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)


def redact_text(text: str, key: str = "", path: Sequence[str] = ()) -> str:
    """Redact one string. ``key`` is the field or variable name it came from and ``path`` the
    keys above it (``("facts", "env", "variables")``); both only make redaction stricter or,
    for version-valued facts, let a dotted number at the start of the value stay a version."""
    if not text:
        return text
    if _secret_name(key or ""):
        return REDACTED
    identity = _identity()
    versioned = _is_version_key(key, path)
    variables = bool(path) and path[-1] == "variables"
    if len(text) > _MEMO_CHARS:
        return _redact(text, versioned, variables, identity)
    # a report repeats its strings ("not recorded" is every unknown fact's reason): each is redacted once
    return _redact_memo(text, versioned, variables, identity)


_MEMO_CHARS = 2048
"""Strings up to this long are memoised (by text, the two facts about their key that redaction reads, and the
identity being redacted); the memo holds at most 4096 of them."""


@functools.lru_cache(maxsize=1024)
def _secret_name(key: str) -> bool:
    return bool(SECRET_NAME.search(key)) or key.lower() in SENSITIVE_KEYS


@functools.lru_cache(maxsize=4096)
def _redact_memo(text: str, versioned: bool, variables: bool, identity: tuple) -> str:
    return _redact(text, versioned, variables, identity)


def _redact(text: str, versioned: bool, variables: bool, identity: tuple) -> str:
    user, home, host = identity
    out = text
    for name, pat in SECRET_PATTERNS.items():
        check = _SECRET_CHECKS.get(name)
        if check is None:
            out = pat.sub(REDACTED, out)
        else:
            out = pat.sub(lambda m: REDACTED if check(m.group(0)) else m.group(0), out)
    if "://" in out:
        out = URL_CREDENTIALS.sub(f"://{REDACTED}@", out)
    out = ASSIGNMENT.sub(lambda m: f"{m.group('name')}{REDACTED}", out)
    if "=" in out:
        out = INNER_SECRET.sub(lambda m: f"{m.group('name')}{REDACTED}", out)
    if "@" in out:
        out = BARE_CREDENTIALS.sub(f"{REDACTED}@", out)
    out = MIG_OLD.sub(f"MIG-GPU-{REDACTED}", out)
    out = GPU_UUID.sub(lambda m: f"{m.group('kind')}-{REDACTED}", out)
    out = BARE_UUID.sub(REDACTED, out)
    out = _sub_emails(out)
    if variables:  # an environment variable's value
        out = RANDOMISH.sub(lambda m: REDACTED if _randomish(m.group(0)) else m.group(0), out)
    out = AWS_HOST.sub(HOST, out)
    out = MAC.sub(MAC_TOKEN, out)
    out = _sub_ipv4(out, versioned)
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


def _aws_secret(s: str) -> bool:
    """A 40-character base64 run with the mixed case of random data (AWS secret access key):
    not a path (no leading '/'), not hex (capitals and small letters both)."""
    if s.startswith("/"):
        return False
    upper = sum(c.isupper() for c in s)
    lower = sum(c.islower() for c in s)
    other = sum(c.isdigit() or c in "/+" for c in s)
    return upper >= 3 and lower >= 3 and other >= 1


_SECRET_CHECKS = {"aws-secret-key": _aws_secret}
"""Patterns whose matches are redacted only when this shape check agrees."""


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
    """Return a redacted copy of a Report or Facts (any model): every string at any depth redacted with the key
    and path it has in the serialised data, exactly as :func:`redact_data` would see it in ``model_dump(mode=
    "json")``; a model whose strings all stay as they were is returned as it is, and one that changes is copied
    with only those fields replaced (the values were validated when the model was built; a redacted string is
    still a string)."""
    return _redact_model(model, "", ())


def _redact_model(model: Any, key: str, path: tuple) -> Any:
    sub = path + (key,) if key else path
    update = {}
    for name in type(model).model_fields:
        value = getattr(model, name)
        new = _redact_value(value, name, sub)
        if new is not value:
            update[name] = new
    return model.model_copy(update=update) if update else model


def _redact_value(value: Any, key: str, path: tuple) -> Any:
    """``value`` redacted (the same object when nothing in it changed), walking as redact_data walks the dump."""
    if isinstance(value, str):
        new = redact_text(value, key, path)
        return value if new == value else new
    if isinstance(value, BaseModel):
        return _redact_model(value, key, path)
    if isinstance(value, dict):
        sub = path + (key,) if key else path
        items = {k: _redact_value(v, str(k), sub) for k, v in value.items()}
        return value if all(items[k] is v for k, v in value.items()) else items
    if isinstance(value, (list, tuple)):
        items = [_redact_value(v, key, path) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return items if isinstance(value, list) else tuple(items)
    return value
