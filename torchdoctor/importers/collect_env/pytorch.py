"""``torch`` facts of a collect_env report: whether torch imported, its version, build
(CUDA, ROCm, XPU), availability and the cuDNN it uses."""

from __future__ import annotations

from typing import Any, Optional

from torchdoctor import tables
from torchdoctor.facts import TorchFacts, Unavailable
from torchdoctor.importers.collect_env.common import (
    COULD_NOT_COLLECT,
    NOT_STATED,
    TORCH_NOT_IMPORTED,
    Value,
    _bool,
    _leading_version,
    _model,
    _release,
    _Row,
    _said,
    _several_values,
    _special,
    _u,
    cudnn_versions,
    same_release,
)
from torchdoctor.importers.collect_env.context import _Ctx, _cudnn_text
from torchdoctor.importers.collect_env.packages import provides_torch
from torchdoctor.sanitize import too_many_digits

# ---------------------------------------------------------------------------- torch


def _read_torch_presence(ctx: _Ctx) -> None:
    f = ctx.fields
    raw = f.get("torch_version")
    if raw is not None:
        kind = _special(raw)
        if kind in ("na", "none"):
            ctx.torch_imported = False
            return
        token = raw.strip().split()[0] if raw.strip() else ""
        if token[:1] in ("v", "V") and token[1:2].isdigit():
            token = token[1:]  # hand-edited "v1.13.1"
        if token[:1].isdigit():
            ctx.torch_imported = True
            if not too_many_digits(token):  # else the version is unknown: "report says: ..."
                ctx.torch_version = token.rstrip(",;")
            return
    # The header may be cut off (corpus case031): torch-answered fields still tell.
    for key in ("is_debug_build", "is_cuda_available"):
        value = f.get(key)
        if value is None:
            continue
        if _special(value) == "na":
            ctx.torch_imported = False
            return
        if _bool(value) is not None:
            ctx.torch_imported = True
            return


def _torch_facts(ctx: _Ctx) -> Value:
    f = ctx.fields
    torch_keys = (
        "torch_version",
        "is_debug_build",
        "cuda_compiled_version",
        "is_cuda_available",
        "hip_compiled_version",
    )
    if not any(k in f for k in torch_keys) and ctx.torch_imported is None:
        return _u(NOT_STATED)

    if ctx.torch_imported is False:
        status, default = _import_failure_status(ctx), TORCH_NOT_IMPORTED
        if ctx.import_error is not None:
            # the pasted traceback says why: that is the import failure, even where a filtered pip
            # list shows no torch (pytorch#90692: a traceback through site-packages/torch beside
            # `[pip3] mypy-e`); "No module named 'torch'" reads as not-installed
            from torchdoctor.probes._child_parse import failure_from_text

            return _model(TorchFacts, default, **failure_from_text(*ctx.import_error))
        values: dict[str, Any] = {"import_status": status}
        if status == "not-installed":
            for k in ("import_error", "missing_library", "missing_symbol", "signal"):
                values[k] = None
        elif status in ("import-error", "unknown-from-report"):
            for k in ("import_error", "missing_library", "missing_symbol", "signal"):
                values[k] = _u("the report does not show the import error")
        return _model(TorchFacts, default, **values)

    values = {}
    if ctx.torch_imported:
        values["import_status"] = "ok"
        for k in ("import_error", "missing_library", "missing_symbol", "signal"):
            values[k] = None
    raw = f.get("torch_version")
    if ctx.torch_version:
        values["version"] = ctx.torch_version
    elif raw is not None and _special(raw) != "empty":
        values["version"] = _u(_said(raw))

    debug = f.get("is_debug_build")
    if debug is not None:
        b = _bool(debug)
        values["debug_build"] = b if b is not None else _u(_said(debug))

    avail = f.get("is_cuda_available")
    if avail is not None:
        b = _bool(avail)
        values["cuda_available"] = b if b is not None else _u(_said(avail))
    elif ctx.cuda_init_warning is not None and ctx.torch_imported is not False:
        values["cuda_available"] = False  # torch counted 0 devices after that warning
    if ctx.cuda_init_warning is not None and ctx.torch_imported is not False:
        values["cuda_init_error"] = ctx.cuda_init_warning
    xpu = f.get("is_xpu_available")
    if xpu is not None:
        b = _bool(xpu)
        values["xpu_available"] = b if b is not None else _u(_said(xpu))

    values["hip_build"] = _hip_build(ctx)
    values["cuda_build"] = _cuda_build(ctx, values["hip_build"])
    if isinstance(values["hip_build"], Unavailable) and isinstance(values["cuda_build"], str):
        values["hip_build"] = None  # a CUDA build is not a ROCm build
    for key, name in (("hip_runtime_version", "hip_runtime_version"),
                      ("miopen_runtime_version", "miopen_version")):
        if key in f:
            values[name] = _hip_config_version(ctx, f[key], values["hip_build"])
    if "xpu_compiled_version" in f:
        values["xpu_build"] = _xpu_build(ctx, f["xpu_compiled_version"])
    values.update(_torch_cudnn(ctx, values["cuda_build"]))
    nccl = f.get("nccl_version")
    if nccl is not None and _special(nccl) != "empty":
        version = _leading_version(nccl)
        values["nccl_version"] = version if version else _u(_said(nccl))
    return _model(TorchFacts, NOT_STATED, **values)


def _hip_config_version(ctx: _Ctx, raw: str, hip_build: Value) -> Value:
    """"HIP runtime version" / "MIOpen runtime version": read from torch.__config__.show() of a
    ROCm build; collect_env prints N/A for other builds (and where the config names none)."""
    kind = _special(raw)
    if kind in ("na", "none"):
        if hip_build is None and ctx.torch_imported:
            return None
        return _u(_said(raw))
    if kind == "cnc":
        return _u(COULD_NOT_COLLECT)
    if kind == "empty":
        return _u(NOT_STATED)
    version = _leading_version(raw)
    return version if version else _u(_said(raw))


def _xpu_build(ctx: _Ctx, raw: str) -> Value:
    kind = _special(raw)
    if kind in ("na", "none", "cnc"):
        return None if ctx.torch_imported else _u(_said(raw))
    if kind == "empty":
        return _u(NOT_STATED)
    version = _leading_version(raw)
    return version if version else _u(_said(raw))


def _import_failure_status(ctx: _Ctx) -> Value:
    providers = [
        r for r in ctx.pip + ([] if ctx.conda_other_env else ctx.conda) if provides_torch(r.name)
    ]
    if providers:
        return "import-error"
    collected = "rows" in (ctx.pip_state, ctx.conda_state) or "empty" in (
        ctx.pip_state,
        ctx.conda_state,
    )
    if collected:
        return "not-installed"
    return "unknown-from-report"  # the import failed; whether torch is installed is not said


def _hip_build(ctx: _Ctx) -> Value:
    raw = ctx.fields.get("hip_compiled_version")
    if raw is None:
        return _u(NOT_STATED)
    kind = _special(raw)
    if kind in ("na", "none", "cnc"):
        return None if ctx.torch_imported else _u(_said(raw))
    version = _leading_version(raw)
    return version if version else _u(_said(raw))


def _cuda_build(ctx: _Ctx, hip_build: Value) -> Value:
    raw = ctx.fields.get("cuda_compiled_version")
    if raw is None:
        return _u(NOT_STATED)
    kind = _special(raw)
    if kind in ("none", "cnc", "nocuda"):
        # torch.version.cuda is None; collect_env prints "Could not collect" for it
        return None if ctx.torch_imported is not False else _u(_said(raw))
    if kind == "na":
        if ctx.torch_imported or isinstance(hip_build, str):
            return None  # a ROCm build: collect_env prints N/A for the CUDA version
        return _u(_said(raw))
    if kind == "empty":
        return _u(NOT_STATED)
    if _several_values(raw):
        return _u(f"report states several values: {raw.strip()[:80]!r}")
    version = _leading_version(raw)
    return version if version else _u(_said(raw))


def _is_running(ctx: _Ctx, row: _Row) -> bool:
    """Whether a listed torch provider is the torch that was imported. A conda package's
    __version__ equals its version; a pip wheel's may add a local label (1.8.1+cu102)."""
    if not (ctx.torch_version and row.version and provides_torch(row.name)):
        return False
    if row.pip_like:
        return same_release(row.version, ctx.torch_version)
    a, b = _release(row.version), _release(ctx.torch_version)
    if a is None or b is None:
        return row.version.strip().lower() == ctx.torch_version.strip().lower()
    return a == b


def _running_conda_row(ctx: _Ctx) -> Optional[_Row]:
    if ctx.conda_other_env:
        return None
    for row in ctx.conda:
        if not row.pip_like and _is_running(ctx, row):
            return row
    return None


def _conda_cudnn(build: str) -> Optional[str]:
    """cuDNN a conda pytorch build bundles, when its build string names it."""
    found = tables.cuda_for_conda_build(build[:200])
    return found[1] if found is not None else None


def _torch_cudnn(ctx: _Ctx, cuda_build: Value) -> dict[str, Value]:
    if cuda_build is None and ctx.torch_imported:
        return {"cudnn_version": None, "cudnn_compiled_version": None}  # no CUDA, no cuDNN
    out: dict[str, Value] = {}
    conda_row = _running_conda_row(ctx)
    if conda_row is not None and conda_row.build:
        cudnn = _conda_cudnn(conda_row.build)
        if cudnn:
            out["cudnn_version"] = cudnn
            out["cudnn_compiled_version"] = cudnn
            return out
    if ctx.os_family == "Linux" and ctx.torch_version:
        pip_torch = [r for r in ctx.pip if provides_torch(r.name) and r.version]
        wheel = [r for r in ctx.pip if r.name.startswith("nvidia-cudnn-cu") and r.version]
        if wheel and any(same_release(r.version, ctx.torch_version) for r in pip_torch):
            parts = wheel[0].version.split(".")
            if all(p.isdigit() for p in parts[:3]):
                out["cudnn_version"] = ".".join(parts[:3])
                return out
    system = ctx.fields.get("cudnn_version")
    if system is not None and _special(system) is None:
        found = cudnn_versions(_cudnn_text(ctx))
        if found:
            out["cudnn_version"] = _u(
                f"the report lists cuDNN libraries on the system (highest {found[0]}), "
                "not the cuDNN torch loaded"
            )
    return out
