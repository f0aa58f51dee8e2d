"""``packages`` facts of a collect_env report: its ``[pip3]`` and ``[conda]`` rows."""

from __future__ import annotations

import re
from typing import Optional

from torchdoctor.facts import Distribution, PackagesFacts
from torchdoctor.importers.collect_env.common import (
    COULD_NOT_COLLECT,
    IMPLAUSIBLE_VERSION,
    NOT_STATED,
    Value,
    _model,
    _python_tuple,
    _release,
    _Row,
    _special,
    _u,
    same_release,
)
from torchdoctor.importers.collect_env.context import _Ctx
from torchdoctor.sanitize import too_many_digits

# --------------------------------------------------------------------------------------
# conda build strings
# --------------------------------------------------------------------------------------


_CONDA_PY = re.compile(r"py(\d)\.?(\d{1,2})")


def conda_python(build: str) -> Optional[tuple[int, int]]:
    """The Python a conda build string was built for: ``py3.7_cuda10.1.243_cudnn7.6.3_0``,
    ``cuda112py39h0bbbad9_1`` -> (3, 7), (3, 9). The CUDA and cuDNN in the string are
    knowledge of the channels' naming and are read by ``tables.cuda_for_conda_build``
    (patterns in rules/data/wheel_archs.yaml)."""
    py = _CONDA_PY.search(build.lower()[:200])
    return (int(py.group(1)), int(py.group(2))) if py else None


# --------------------------------------------------------------------------------------
# package rows
# --------------------------------------------------------------------------------------

_TORCH_PROVIDER = re.compile(r"(?:py)?torch(?:-nightly)?(?:-(?:cpu|cuda\d+|cu\d+|rocm[\d.]*))?")
_NAME_NORM = re.compile(r"[-_.]+")


def _norm_name(name: str) -> str:
    return _NAME_NORM.sub("-", name.strip().lower()).strip("-")


def provides_torch(name: str) -> bool:
    """Whether a distribution of this (normalised) name installs the ``torch`` module.
    Metapackages such as ``pytorch-cuda``, ``pytorch-mutex`` or ``cpuonly`` do not."""
    return bool(_TORCH_PROVIDER.fullmatch(name))


def _listing_state(rows: list[str]) -> str:
    """absent | cnc | empty | rows — what one package section says."""
    if not rows:
        return "absent"
    real = [r for r in rows if _special(r) is None and r.lower() != "no relevant packages"]
    if real:
        return "rows"
    if any(r.lower() == "no relevant packages" for r in rows):
        return "empty"
    return "cnc"


def _pip_row(rest: str) -> Optional[_Row]:
    text = rest.strip()
    if not text or _special(text) is not None or text.lower() == "no relevant packages":
        return None
    if text.startswith("-e "):
        egg = text.rsplit("#egg=", 1)
        if len(egg) == 2 and egg[1]:
            return _Row(
                _norm_name(egg[1].split("&")[0]), None, "report-pip", note="editable install"
            )
        return None
    if " @ " in text:
        name = text.split(" @ ", 1)[0]
        return _Row(
            _norm_name(name),
            None,
            "report-pip",
            note="the report lists a direct reference, not a version",
        )
    if "==" in text:
        name, _, version = text.partition("==")
        version = version.lstrip("=").strip().split(" ", 1)[0]
        return _Row(_norm_name(name), version or None, "report-pip")
    if text.endswith(")") and " (" in text:  # 0.4-era "numpy (1.15.0)"
        name, _, version = text[:-1].partition(" (")
        return _Row(_norm_name(name), version.strip() or None, "report-pip")
    words = text.split()
    if len(words) == 2:  # "numpy 1.15.0"
        return _Row(_norm_name(words[0]), words[1], "report-pip")
    if len(words) == 1:
        return _Row(_norm_name(words[0]), None, "report-pip", note=NOT_STATED)
    return None


def _conda_row(rest: str) -> Optional[_Row]:
    text = rest.strip()
    if not text or _special(text) is not None or text.lower() == "no relevant packages":
        return None
    words = [w for w in text.split() if not (w.startswith("[") and w.endswith("]"))]
    if not words:
        return None
    name = _norm_name(words[0])
    version = words[1] if len(words) > 1 else None
    tail = words[2:]
    if tail and tail[0] == "<pip>":
        return _Row(name, version, "report-conda", build=None, channel="pypi", pip_like=True)
    build = tail[0] if tail else None
    channel = tail[1] if len(tail) > 1 else None
    return _Row(
        name,
        version,
        "report-conda",
        build=build,
        channel=channel,
        pip_like=(channel == "pypi"),
        note=None if version else NOT_STATED,
    )


# ---------------------------------------------------------------------------- packages


def _read_packages(ctx: _Ctx) -> None:
    scan = ctx.scan
    ctx.pip_state = _listing_state([rest for _, rest in scan.pip_rows])
    ctx.conda_state = _listing_state(scan.conda_rows)
    ctx.pip = [r for r in (_pip_row(rest) for _, rest in scan.pip_rows) if r is not None]
    ctx.conda = [r for r in (_conda_row(rest) for rest in scan.conda_rows) if r is not None]
    for row in ctx.pip + ctx.conda:
        if row.version and too_many_digits(row.version):
            row.version, row.note = None, IMPLAUSIBLE_VERSION
    running = _python_tuple(ctx.python_version)
    if running is not None:
        tags = [conda_python(r.build) for r in ctx.conda if r.build]
        tags = [t for t in tags if t is not None]
        # conda rows built for another Python describe another environment (corpus case017)
        ctx.conda_other_env = bool(tags) and running not in tags


def _distribution(row: _Row) -> Distribution:
    version: Value = row.version if row.version else _u(row.note or NOT_STATED)
    return _model(
        Distribution,
        NOT_STATED,
        name=row.name,
        version=version,
        source=row.source,
        build=row.build,
        channel=row.channel,
        provides_torch=provides_torch(row.name),
    )


def _packages_facts(ctx: _Ctx) -> Value:
    states = (ctx.pip_state, ctx.conda_state)
    if states == ("absent", "absent"):
        return _u(NOT_STATED)
    values: dict[str, Value] = {}
    values["distributions"] = [_distribution(r) for r in ctx.pip + ctx.conda]

    versions: dict[str, str] = {}
    for row in ctx.pip:
        if row.version:
            versions.setdefault(row.name, row.version)
    if not ctx.conda_other_env:
        for row in ctx.conda:
            if row.version:
                versions.setdefault(row.name, row.version)
                if row.name == "pytorch":
                    versions.setdefault("torch", row.version)
    values["versions"] = versions

    collected = "rows" in states or "empty" in states
    if not collected:
        values["torch_providers"] = _u(COULD_NOT_COLLECT)
    else:
        groups: list[tuple[str, Optional[str]]] = []
        keys: set = set()

        def key(version: str) -> str:
            parsed = _release(version)
            return str(parsed) if parsed is not None else version.strip().lower()

        # Rows name one install each, except the same version listed twice (by pip and by
        # conda's pip view, or conda's `pytorch` seen by pip as `torch`).
        candidates = ctx.pip + ([] if ctx.conda_other_env else ctx.conda)
        for row in candidates:
            if not provides_torch(row.name):
                continue
            if row.version is None:
                if not any(name == row.name for name, _ in groups):
                    groups.append((row.name, None))
            elif key(row.version) not in keys:
                keys.add(key(row.version))
                groups.append((row.name, row.version))
        # The imported torch is an install too, listed or not (corpus case035). Its
        # __version__ may carry a local label its metadata lacks (PyPI 1.8.1 says 1.8.1+cu102).
        running = ctx.torch_version
        versions_known = all(v is not None for _, v in groups)
        if running and versions_known and not any(same_release(running, v) for _, v in groups):
            groups.append(("torch", running))
        values["torch_providers"] = [name for name, _ in groups]
    return _model(PackagesFacts, NOT_STATED, **values)
