"""Facts for a machine you are not on (`recommend --gpu NAME`), built from the GPU tables: the
third source of facts beside the probes and the pasted reports (its GPU summary is derived by
:mod:`torchdoctor.gpusummary`, as theirs is).

``--gpu`` is typed by a person, so it is read strictly: the whole text must be one GPU name of
rules/data/gpu_models.yaml, apart from a vendor prefix (NVIDIA, GeForce, Tesla), a count
("4x RTX 4090") and board suffixes (80GB, SXM4, PCIe, NVL, HBM3, Laptop GPU). Reports, which
carry whatever the driver printed, go through the lenient ``tables.cc_for_gpu_name`` instead.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from typing import Optional

from torchdoctor import tables
from torchdoctor.errors import UserError
from torchdoctor.safeio import clip
from torchdoctor.facts import Facts, GpuDevice, GpuFacts, TorchFacts, Unavailable
from torchdoctor.gpusummary import architecture, gpu_summary

NOT_HERE = "planning for another machine (--gpu): not known"
CPU_NOT_HERE = ("planning from --gpu: thread, AMX/bf16 and DataLoader advice needs that machine's facts "
                "(`torchdoctor probe > facts.json` there, then --facts facts.json)")
MAX_COUNT = 64
"""GPUs in one machine (the facts describe one node)."""
MAX_SPEC = 200
"""Characters of a --gpu value ("8x NVIDIA H100 80GB HBM3" is 24)."""
MAX_VERSION = 64
"""Characters of a --torch-version value."""

VENDOR_WORDS = ("nvidia", "geforce", "tesla")
SUFFIX = re.compile(r"(?:\s*(?:\d+ gb|sxm\d*|pcie|nvl|hbm\d*(?: e)?|laptop|gpu|mobile))*\s*")
"""Board and memory variants after a model name: "80GB HBM3", "-SXM4-80GB", "PCIe", "NVL", "Laptop GPU"."""
COUNT = re.compile(r"(\d+)\s*[x×*]\s*(\S.*)", re.IGNORECASE)
NOT_NVIDIA = re.compile(r"mps|metal|apple|m[1-5]|amd|rocm|hip|radeon|instinct|mi\d{2,3}|gfx\d+|intel|arc|xpu"
                        r"|gaudi\d*|habana|tpu")
GEFORCE = re.compile(r"(?:rtx [2-5]0[5-9]0|gtx|gts|gt \d|mx\d|geforce)\b.*")
"""Table names of GeForce products, which the driver reports as "NVIDIA GeForce ..." (rules such as
nccl-p2p-broken-on-geforce-rtx-40 read that word in the device name)."""


@dataclasses.dataclass(frozen=True)
class GpuSpec:
    count: int
    name: str
    """The device name recorded in the facts."""
    cc: float


def _strip_vendor(tokens: tuple) -> tuple:
    while tokens and tokens[0] in VENDOR_WORDS:
        tokens = tokens[1:]
    return tokens


def _key(tokens: tuple) -> str:
    return "".join(tokens)  # "rtx4090" and "RTX 4090" are one name


@functools.cache
def _names() -> dict[str, tuple[str, ...]]:
    """Normalised name (no vendor words, no spaces) -> the table's match strings."""
    out: dict[str, tuple[str, ...]] = {}
    for group in tables.load("gpu_models")["groups"]:
        for text in group.get("match", []):
            key = _key(_strip_vendor(tables.name_tokens(text)))
            if key:
                out[key] = out.get(key, ()) + (text,)
    return out


def parse_gpu(text: str) -> GpuSpec:
    """``[N x] [NVIDIA|GeForce|Tesla] MODEL [suffixes]`` -> count, device name, compute capability;
    anything else is a UserError with close matches."""
    if not isinstance(text, str):
        raise UserError(f"--gpu {clip(text)}: give a GPU name as text")
    if len(text) > MAX_SPEC:
        raise UserError(f"--gpu {clip(text)}: a GPU name of {len(text)} characters (at most {MAX_SPEC})")
    spec = " ".join(text.split())
    if not spec:
        raise UserError('--gpu is empty: give a GPU name ("A100", "4x RTX 4090") or "cpu"')
    count, name = 1, spec
    m = COUNT.fullmatch(spec)
    if m:
        digits, name = m.group(1), m.group(2).strip()
        # int() of a long digit string is refused past 4300 digits: compare the text first
        count = int(digits) if len(digits.lstrip("0")) <= 3 else MAX_COUNT + 1
        if not 1 <= count <= MAX_COUNT:
            raise UserError(f"--gpu {clip(text)}: the GPU count must be 1 to {MAX_COUNT} (GPUs in one machine)")
    tokens = _strip_vendor(tables.name_tokens(name))
    names = _names()
    for end in range(len(tokens), 0, -1):
        key = _key(tokens[:end])
        if key in names and SUFFIX.fullmatch(" ".join(tokens[end:])):
            ccs = {tables.cc_for_gpu_name(t) for t in names[key]}
            cc = ccs.pop() if len(ccs) == 1 else None
            if cc is None:
                raise UserError(f"--gpu {clip(text)}: this name covers GPUs of different compute capability; "
                                "give the exact model")
            return GpuSpec(count=count, name=_device_name(name, names[key][0]), cc=cc)
    if any(NOT_NVIDIA.fullmatch(t) for t in tables.name_tokens(name)):
        raise UserError(f"--gpu {clip(text)}: planning for another machine covers NVIDIA GPUs and CPU only; "
                        "run torchdoctor on that machine (or pass its facts with --facts)")
    typed = _key(tokens)
    close = difflib.get_close_matches(typed, list(names), n=4, cutoff=0.6) if typed else []
    if not close:  # "V100banana": a known name with junk after it
        close = sorted((k for k in names if typed.startswith(k)), key=len, reverse=True)[:3]
    hint = f"; close matches: {', '.join(names[c][0] for c in close)}" if close else ""
    raise UserError(f"--gpu {clip(text)}: unknown GPU name{hint}")


def check_torch_version(text: object, known_only: bool = False) -> str:
    """``--torch-version``: a version packaging can read (UserError, one line, otherwise; a
    5,000-digit release number is not a ValueError crash) and, with ``known_only``, a release
    whose major.minor rules/data/torch_releases.yaml lists. Returns the text."""
    from packaging.version import Version

    bad = f"--torch-version {clip(text)}: not a version (e.g. 2.13.0)"
    if not isinstance(text, str) or len(text) > MAX_VERSION or not text.strip():
        raise UserError(bad)
    try:
        wanted = Version(text)
    except ValueError:  # InvalidVersion, or a number past Python's int-to-str limit
        raise UserError(bad) from None
    if known_only:
        known = sorted({Version(str(r["version"])) for r in tables.load("torch_releases")["releases"]})
        if known and wanted.release[:2] not in {v.release[:2] for v in known}:
            raise UserError(f"--torch-version {text}: not a torch release torchdoctor knows "
                            f"({known[0]} to {known[-1]}, rules/data/torch_releases.yaml)")
    return text


def _device_name(typed: str, match: str) -> str:
    """What the driver would call it, as far as it matters to the rules: GeForce cards get
    "NVIDIA GeForce" and the table's spelling; any other name stays as typed."""
    if GEFORCE.fullmatch(match) and "geforce" not in typed.lower():
        words = [w.capitalize() if w == "ti" else w.upper() for w in _strip_vendor(tables.name_tokens(match))]
        return "NVIDIA GeForce " + " ".join(words)
    return typed


def _known(model: type, **known: object):
    """A fact model with what is known; every other field unknown for the reason the rest of
    that machine is (not "not recorded", which means a report left it out)."""
    off = Unavailable(unavailable=NOT_HERE)
    return model(**{**{k: off for k in model.model_fields}, **known})


def _torch(version: str, **known: object) -> TorchFacts:
    return _known(TorchFacts, **known, version=version, import_status="ok")


def plan_target(name: str, torch_version: Optional[str], python: str, timeout: float) -> tuple:
    """`recommend --gpu NAME`: the facts of that machine and the line that says what the plan
    is for. The torch version is --torch-version, else the torch installed for ``python`` (the
    interpreter diagnosed: --python or this one; its release, read from the distribution's
    metadata), else the newest published release."""
    from packaging.version import InvalidVersion, Version

    from torchdoctor.probes.packages import installed_torch

    if torch_version is not None:
        source = "--torch-version"
    else:
        found = installed_torch(python, timeout)
        try:
            torch_version = Version(found).base_version if found else None
        except InvalidVersion:
            torch_version = None
        # what matters first (a terminal title is cropped at its end): which torch, then where
        source = (f"installed for {python}" if torch_version else
                  f"newest; none installed for {python}" if not found else
                  f"newest; version {clip(found)} unreadable, installed for {python}")
    facts = facts_for_gpu(name, torch_version)
    version = torch_version or tables.latest_release()
    return facts, f"plan for {' '.join(str(name).split())}, torch {version} ({source})"


def facts_for_gpu(name: str, torch_version: Optional[str] = None) -> Facts:
    """Facts of a machine with this GPU ("A100", "4x RTX 4090") or none ("cpu"). Without
    --torch-version the plan is written for the newest published torch release, so every
    emitted setting exists in a named version."""
    off = Unavailable(unavailable=NOT_HERE)
    cpu_off = Unavailable(unavailable=CPU_NOT_HERE)
    if torch_version is not None:
        check_torch_version(torch_version)
    torch_version = torch_version or tables.latest_release()
    if not isinstance(name, str) or len(name) > MAX_SPEC:
        parse_gpu(name)  # the one message for a --gpu that is not a name
    if " ".join(str(name).split()).lower() in ("cpu", "none"):
        # what "cpu" says: no GPU, a torch without CUDA; the rest of that machine stays unknown
        torch = _torch(torch_version, cuda_build=None, hip_build=None, cuda_available=False,
                       device_count=0, cudnn_version=None) if torch_version else off
        gpu = GpuFacts(source="synthetic", count=0, devices=[], links=[], name=None, vendors=[],
                       **gpu_summary([]))
        return Facts(origin="synthetic", torch=torch, gpu=gpu, cpu=cpu_off, memory=off, env=off,
                     packages=off, system=off)
    spec = parse_gpu(name)
    torch = _torch(torch_version) if torch_version else off
    arch = architecture(spec.cc)
    devices = [_known(GpuDevice, index=i, name=spec.name, compute_capability=spec.cc, architecture=arch,
                      vendor="nvidia", gfx_target=None) for i in range(spec.count)]
    gpu = _known(GpuFacts, source="synthetic", count=spec.count, devices=devices,
                 links=[] if spec.count == 1 else off, name=spec.name, vendors=["nvidia"],
                 **gpu_summary(devices))
    return Facts(origin="synthetic", torch=torch, gpu=gpu, cpu=cpu_off, memory=off, env=off,
                 packages=off, system=off)
