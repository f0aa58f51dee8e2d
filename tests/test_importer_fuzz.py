"""Fuzzing the importers: mutated corpus reports and arbitrary input end in Facts or a
ReportError, never in another exception, and whatever is parsed survives a JSON round trip.

The budget is fixed (``max_examples``, no deadline, no example database) so the suite stays
fast and does not write a ``.hypothesis`` directory.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchdoctor.facts import Facts
from torchdoctor.importers import ReportError, load_report
from torchdoctor.importers.json_report import facts_from_json

CORPUS = Path(__file__).resolve().parent / "data" / "corpus"
TEXTS = [p.read_bytes() for p in sorted(CORPUS.glob("case*.txt"))]
TEXTS.append((CORPUS / "extra" / "collect_env-2.13.0+cpu-debian12-x86_64.txt").read_bytes())

FUZZ = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# what sanitize.py removes: no string or key of parsed facts holds any of these
UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)


def check(data: bytes) -> None:
    try:
        facts = load_report(data, "fuzz.txt")
    except ReportError as exc:
        message = str(exc)
        assert message.startswith("fuzz.txt: ") and "\n" not in message
        assert not UNSAFE.search(message)
        return
    assert isinstance(facts, Facts)
    assert facts.origin in ("report", "json")
    # what was parsed can be saved and read back unchanged
    dumped = facts.model_dump_json()
    again = facts_from_json(dumped)
    assert again == facts.model_copy(update={"origin": "json"})
    # and holds no control character, escape sequence or lone surrogate
    bad = [s for s in strings(json.loads(dumped)) if UNSAFE.search(s)]
    assert not bad, bad[:3]


# ---------------------------------------------------------------------------- mutations


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


@st.composite
def mutated_report(draw) -> bytes:
    data = draw(st.sampled_from(TEXTS))
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(
            st.sampled_from(
                [
                    "delete",
                    "duplicate",
                    "truncate",
                    "flip",
                    "unicode",
                    "indent",
                    "crlf",
                    "merge",
                    "swap",
                    "fullwidth",
                ]
            )
        )
        lines = _lines(data)
        if kind == "delete" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            n = draw(st.integers(1, 5))
            del lines[i : i + n]
            data = b"".join(lines)
        elif kind == "duplicate" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            lines[i:i] = lines[i : i + draw(st.integers(1, 8))] * draw(st.integers(1, 3))
            data = b"".join(lines)
        elif kind == "truncate" and data:
            data = data[: draw(st.integers(0, len(data)))]
        elif kind == "flip" and data:
            buf = bytearray(data)
            for _ in range(draw(st.integers(1, 10))):
                i = draw(st.integers(0, len(buf) - 1))
                buf[i] ^= 1 << draw(st.integers(0, 7))
            data = bytes(buf)
        elif kind == "unicode":
            i = draw(st.integers(0, len(data)))
            inserted = draw(st.text(min_size=1, max_size=8)).encode("utf-8", "surrogatepass")
            data = data[:i] + inserted + data[i:]
        elif kind == "indent" and lines:
            prefix = draw(
                st.sampled_from([b"    ", b"\t", b"> ", b"- ", b"  * ", b">> ", b"```\n"])
            )
            chosen = draw(st.sets(st.integers(0, len(lines) - 1), max_size=len(lines)))
            data = b"".join(prefix + line if i in chosen else line for i, line in enumerate(lines))
        elif kind == "crlf":
            data = data.replace(b"\r\n", b"\n").replace(
                b"\n", draw(st.sampled_from([b"\r\n", b"\r", b"\n"]))
            )
        elif kind == "merge" and len(lines) > 1:
            i = draw(st.integers(0, len(lines) - 2))
            pad = b" " * draw(st.integers(0, 120))
            lines[i] = lines[i].rstrip(b"\r\n") + pad
            data = b"".join(lines)
        elif kind == "swap" and len(lines) > 1:
            i, j = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
            data = b"".join(lines)
        elif kind == "fullwidth":
            data = data.replace(b":", "\uff1a".encode(), draw(st.integers(1, 30)))
    return data


@FUZZ
@given(mutated_report())
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_mutated_reports(data):
    check(data)


@FUZZ
@given(st.text(max_size=3000))
def test_arbitrary_text(s):
    check(s.encode("utf-8", "surrogatepass"))


@FUZZ
@given(st.binary(max_size=3000))
def test_arbitrary_bytes(b):
    check(b)


FIELD_LINES = st.sampled_from(
    [
        "PyTorch version: ",
        "Is debug build: ",
        "CUDA used to build PyTorch: ",
        "ROCM used to build PyTorch: ",
        "OS: ",
        "Libc version: ",
        "Python version: ",
        "Python platform: ",
        "Is CUDA available: ",
        "CUDA runtime version: ",
        "GPU models and configuration: ",
        "GPU 0: ",
        "GPU 1: ",
        "  MIG 1g.5gb Device 0: ",
        "Nvidia driver version: ",
        "cuDNN version: ",
        "Probably one of the following:",
        "CPU:",
        "Flags: ",
        "Architecture: ",
        "CPU(s): ",
        "Core(s) per socket: ",
        "Socket(s): ",
        "Versions of relevant libraries:",
        "[pip3] ",
        "[pip] ",
        "[conda] ",
        "Collecting environment information...",
        "",
    ]
)
VALUES = st.one_of(
    st.sampled_from(
        [
            "N/A",
            "None",
            "Could not collect",
            "No CUDA",
            "Yes",
            "No",
            "True",
            "False",
            "1.13.0+cu117",
            "11.7",
            "torch==2.1.0",
            "pytorch 2.1.0 py3.10_cuda11.8_cudnn8.7.0_0 pytorch",
            "torch (0.4.1)",
            "/usr/lib/libcudnn.so.8.9.2",
            "C:\\CUDA\\bin\\cudnn64_8.dll",
            "NVIDIA A100-SXM4-80GB",
            "Linux-5.15.0-x86_64-with-glibc2.35",
            "macOS 14.5 (arm64)",
            "3.11.4 (main) [GCC 11] (64-bit runtime)",
            "avx2 avx512f amx_tile",
            "2x RTX 3090",
            "x86_64",
            "9",
            "-",
        ]
    ),
    st.text(max_size=40),
)


@st.composite
def field_soup(draw) -> bytes:
    parts = [draw(FIELD_LINES) + draw(VALUES) for _ in range(draw(st.integers(1, 40)))]
    sep = draw(st.sampled_from(["\n", "\r\n", "   ", "\n\n"]))
    return sep.join(parts).encode("utf-8", "surrogatepass")


@FUZZ
@given(field_soup())
def test_field_soup(data):
    check(data)


@FUZZ
@given(
    st.recursive(
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False)
        | st.text(max_size=10),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(
                st.sampled_from(
                    [
                        "schema_version",
                        "facts",
                        "torch",
                        "gpu",
                        "origin",
                        "version",
                        "count",
                        "unavailable",
                        "devices",
                        "index",
                        "x",
                    ]
                ),
                children,
                max_size=5,
            )
        ),
        max_leaves=30,
    )
)
def test_arbitrary_json(obj):
    import json

    check(
        json.dumps(
            {"schema_version": 1, "facts": obj} if not isinstance(obj, dict) else obj
        ).encode()
    )


# ---------------------------------------------------------------------------- hostile facts JSON

BASE_FACTS = json.loads(load_report((CORPUS / "case023.txt").read_bytes(), "case023.txt").model_dump_json())
BASE_FACTS["origin"] = "json"


def _leaves(node, path=()):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _leaves(v, path + (i,))
    elif path and path[0] != "schema_version":
        yield path


LEAVES = list(_leaves(BASE_FACTS))
HOSTILE = st.one_of(
    # any code point: lone surrogates, C0/C1 controls, ESC sequences
    st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF), max_size=30),
    st.sampled_from(["\x1b]0;title\x07", "\x1b[2J", "\ud800", "x\x00y", "\x9b31m", "1" + "0" * 5000,
                     "1." + "9" * 40, "sm_" + "9" * 50]),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from(["<BIG>", "<-BIG>", 2**63, 2**64]),  # <BIG>: a 5000-digit integer
    st.floats(allow_nan=True, allow_infinity=True),
)


@st.composite
def hostile_facts_json(draw) -> bytes:
    data = json.loads(json.dumps(BASE_FACTS))
    for _ in range(draw(st.integers(1, 8))):
        path = draw(st.sampled_from(LEAVES))
        node = data
        for p in path[:-1]:
            node = node[p]
        node[path[-1]] = draw(HOSTILE)
    if draw(st.booleans()):
        data["env"] = {"variables": {draw(HOSTILE.filter(lambda v: isinstance(v, str))): draw(HOSTILE)}}
    text = json.dumps(data).replace('"<BIG>"', "1" + "0" * 5000).replace('"<-BIG>"', "-1" + "0" * 5000)
    return text.encode()


@FUZZ
@given(hostile_facts_json())
def test_hostile_values_in_facts_json(data):
    """Any code point, a 5000-digit or 64-bit integer, inf/nan in any fact of a real facts
    file: facts come out clean (or the file is refused with one line), never a crash."""
    check(data)
