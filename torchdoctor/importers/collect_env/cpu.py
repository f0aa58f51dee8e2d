"""``cpu`` facts of a collect_env report: its ``CPU:`` section (lscpu on Linux, wmic on
Windows, the brand string on macOS). lscpu prints its labels in the user's language; they are
read through util-linux's own translations (``rules/data/lscpu_labels.yaml``), loaded the first
time a report has a CPU section."""

from __future__ import annotations

import functools
import unicodedata
from typing import Optional

from torchdoctor import tables
from torchdoctor.facts import CpuFacts
from torchdoctor.importers.collect_env.common import (
    COULD_NOT_COLLECT,
    NOT_STATED,
    Value,
    _int,
    _model,
    _u,
)
from torchdoctor.importers.collect_env.context import _Ctx

# ---------------------------------------------------------------------------- cpu

_FLAG_KEYS = (
    "avx2",
    "avx512f",
    "avx512_bf16",
    "avx512_vnni",
    "amx_bf16",
    "amx_tile",
    "amx_int8",
    "neon",
    "sve",
    "sve2",
    "vsx",
)
# Win32_Processor.Architecture codes (Microsoft Learn, "Win32_Processor class").
_WIN_ARCH = {"0": "x86", "5": "arm", "6": "ia64", "9": "x86_64", "12": "arm64"}


LSCPU_FILE = "lscpu_labels"
"""rules/data/lscpu_labels.yaml: lscpu's summary labels as util-linux translates them."""
LSCPU_KEYS = frozenset(
    {
        "architecture",
        "cpu(s)",
        "on-line cpu(s) list",
        "off-line cpu(s) list",
        "vendor id",
        "model name",
        "thread(s) per core",
        "core(s) per socket",
        "socket(s)",
        "numa node(s)",
        "flags",
    }
)
"""The English lscpu labels (lower case) a translation may stand for: the keys _cpu_facts reads."""


def lscpu_labels(directory: Optional[str] = None) -> dict[str, dict[str, str]]:
    """Language -> {translated label: English lscpu label in lower case}, from
    ``rules/data/lscpu_labels.yaml`` (the msgstr of util-linux's po files), checked: every
    language names its source, every label is a non-empty string without a colon, every key
    is one of :data:`LSCPU_KEYS`, and one normalised label has one meaning."""
    return _lscpu_table(directory)[0]


@functools.lru_cache(maxsize=4)
def _lscpu_table(directory: Optional[str] = None) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """(the labels by language, normalised label -> key), checked once."""
    data = tables.load(LSCPU_FILE, directory)
    where = f"{directory or 'rules/data'}/{LSCPU_FILE}.yaml"
    languages = data.get("languages") if isinstance(data, dict) else None
    if not isinstance(languages, list):
        raise tables.DataFileError(f"{where}: expected a mapping with a `languages` list")
    out: dict[str, dict[str, str]] = {}
    seen: dict[str, str] = {}
    for i, entry in enumerate(languages):
        if not isinstance(entry, dict) or not isinstance(entry.get("language"), str):
            raise tables.DataFileError(f"{where}: languages[{i}] needs a `language`")
        lang = entry["language"]
        if not isinstance(entry.get("source"), str) or not entry["source"].strip():
            raise tables.DataFileError(f"{where}: languages[{i}] ({lang}) has no source")
        labels = entry.get("labels")
        if not isinstance(labels, dict):
            raise tables.DataFileError(f"{where}: languages[{i}] ({lang}): `labels` must be a mapping")
        for label, key in labels.items():
            if not isinstance(label, str) or not label.strip() or ":" in label or "\uff1a" in label:
                raise tables.DataFileError(f"{where}: {lang}: label {label!r} is not a label")
            if key not in LSCPU_KEYS:
                raise tables.DataFileError(f"{where}: {lang}: {label!r}: unknown key {key!r}")
            if seen.setdefault(_lscpu_norm(label), key) != key:
                raise tables.DataFileError(f"{where}: {lang}: {label!r} means two things")
        out[lang] = dict(labels)
    return out, seen


def _lscpu_norm(label: str) -> str:
    return " ".join(unicodedata.normalize("NFC", label).split()).casefold()


def _lscpu_index() -> dict[str, str]:
    return _lscpu_table()[1]


def _lscpu_key(label: str) -> str:
    """The key of one CPU-section label: the English lscpu label in lower case for a known
    translation, else the label itself in lower case (English lscpu, Windows' wmic names)."""
    norm = _lscpu_norm(label)
    return _lscpu_index().get(norm, norm)


def __getattr__(name: str):
    if name == "_LSCPU_LABELS":  # the table as a dict, for callers of the former constant
        return lscpu_labels()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

def _join_flags(first_raw: str, continuation: list[str]) -> str:
    """Join lscpu's Flags value with its wrapped continuation lines. lscpu on a terminal
    wraps at the column limit, even inside a word (corpus-style "... nx rd" / "tscp lm")."""
    col = first_raw.find(":") + 1
    col += len(first_raw[col:]) - len(first_raw[col:].lstrip(" "))
    pieces = [first_raw[col:]]
    raws = [first_raw, *continuation]
    width = max(len(r) for r in raws)
    for prev_raw, raw in zip(raws, continuation):
        body = raw[col:] if raw[:col].strip() == "" else raw.lstrip(" ")
        mid_word = (
            len(prev_raw) == width and not pieces[-1].endswith(" ") and not body.startswith(" ")
        )
        pieces.append(body if mid_word else " " + body)
    return "".join(pieces)


def _cpu_list_count(value: Optional[str]) -> Optional[int]:
    """How many CPUs a Linux CPU list names ("0-79", "0-3,8-11", "0,2,4"); None if it is not
    one (too long, malformed)."""
    if not value or len(value) > 2000:
        return None
    total = 0
    for part in value.strip().split(","):
        lo, dash, hi = part.strip().partition("-")
        a, b = _int(lo), (_int(hi) if dash else _int(lo))
        if a is None or b is None or b < a:
            return None
        total += b - a + 1
    return total if 0 < total <= 1_000_000 else None


def _cpu_facts(ctx: _Ctx) -> Value:
    lines = ctx.scan.cpu_lines
    if "cpu_info" not in ctx.fields:
        return _u(NOT_STATED)
    kv: dict[str, str] = {}
    devices: set[str] = set()
    brand: Optional[str] = None
    flags_text: Optional[str] = None
    i = 0
    while i < len(lines):
        raw = lines[i]
        s = raw.strip()
        i += 1
        if not s or set(s) <= {"-"}:
            continue
        sep = ":" if ":" in s else ("=" if "=" in s else None)
        if sep is None:
            if brand is None and not kv:
                brand = s
            continue
        label, _, value = s.partition(sep)
        key = _lscpu_key(label)
        value = value.strip()
        if key == "flags":
            cont = []
            while (
                i < len(lines)
                and lines[i].strip()
                and ":" not in lines[i]
                and (lines[i][:1] == " ")
            ):
                cont.append(lines[i])
                i += 1
            flags_text = _join_flags(raw, cont) if cont else value
            continue
        if key == "deviceid":
            devices.add(value)
        kv.setdefault(key, value)

    if not kv and brand is None:
        if len(lines) == 1 and lines[0].strip().lower() == "none":
            return _u(COULD_NOT_COLLECT)
        return _u(NOT_STATED)

    values: dict[str, Value] = {}
    model = kv.get("model name") or kv.get("name") or brand
    if model and model not in ("-", "None"):
        values["model"] = model
    vendor = kv.get("vendor id") or kv.get("manufacturer")
    if vendor and vendor != "-":
        values["vendor"] = vendor
    elif brand and brand.startswith("Apple"):
        values["vendor"] = "Apple"
    arch = kv.get("architecture")
    if arch:
        values["architecture"] = _WIN_ARCH.get(arch, arch) if arch.isdigit() else arch
    logical = _int(kv.get("cpu(s)"))
    online = _cpu_list_count(kv.get("on-line cpu(s) list"))
    if online is not None:
        values["logical_cores"] = online  # lscpu's CPU(s) counts offline CPUs too
    elif logical is not None:
        values["logical_cores"] = logical
    sockets = _int(kv.get("socket(s)"))
    if sockets is None and devices:
        sockets = len(devices)
    if sockets is not None:
        values["sockets"] = sockets
    per_socket = _int(kv.get("core(s) per socket"))
    if per_socket is not None and _int(kv.get("socket(s)")) is not None:
        values["physical_cores"] = per_socket * _int(kv.get("socket(s)"))
    numa = _int(kv.get("numa node(s)"))
    if numa is not None:
        values["numa_nodes"] = numa
    if flags_text is not None:
        present = set(flags_text.split())
        flags = {k: k in present for k in _FLAG_KEYS}
        flags["neon"] = "asimd" in present or "neon" in present
        values["flags"] = flags
    return _model(CpuFacts, NOT_STATED, **values)
