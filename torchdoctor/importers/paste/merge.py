"""Evidence -> facts: the paste's evidence completes collect_env's scan, the scan is read as a
report is, and torch's messages add what no report field holds (:func:`facts_from_text`)."""

from __future__ import annotations

from typing import Any

from torchdoctor.model import BaseModel

from torchdoctor import tables
from torchdoctor.facts import (
    NOT_RECORDED,
    Facts,
    GpuFacts,
    KnownMessage,
    PasteFacts,
    PackagesFacts,
    SystemFacts,
    TorchFacts,
    Unavailable,
)
from torchdoctor.importers import collect_env as ce
from torchdoctor.importers.paste.evidence import (
    MAX_MESSAGE_CHARS,
    PASTE_SILENT,
    RANK_TOOL,
    _NAMED_VERSION,
    Evidence,
    Paste,
)
from torchdoctor.importers.paste.messages import Hit, find_messages
from torchdoctor.importers.paste.reader import _cuda_of_variant, _local_label, read_paste

# --------------------------------------------------------------------------------------
# evidence -> facts
# --------------------------------------------------------------------------------------

_FIELD_PATHS = {
    "torch_version": ("torch.version",),
    "cuda_compiled_version": ("torch.cuda_build",),
    "is_cuda_available": ("torch.cuda_available",),
    "python_version": ("system.python_version",),
    "python_platform": ("system.os", "system.kernel", "system.machine", "system.wsl", "system.libc"),
    "os": ("system.os", "system.os_name", "system.os_version", "system.machine"),
    "nvidia_driver_version": ("gpu.driver_version",),
    "cuda_runtime_version": ("system.cuda_toolkit_version",),
    "cudnn_version": ("system.cudnn_version",),
}
_GPU_PATHS = (
    "gpu.devices", "gpu.name", "gpu.count", "gpu.vendors", "gpu.min_compute_capability",
    "gpu.max_compute_capability", "gpu.architectures",
)


def _merge(scan: "ce._Scan", paste: Paste, is_report: bool) -> tuple[dict[str, str], dict[str, Evidence]]:
    """Add the paste's evidence to collect_env's scan where the scan has nothing; the sources
    of what was added, by fact path."""
    sources: dict[str, str] = {}
    f = scan.fields
    added: dict[str, Evidence] = {}
    fields = dict(paste.fields)
    # sw_vers / "Architecture:" lines complete an OS line
    product, product_version = fields.pop("os_product", None), fields.pop("os_product_version", None)
    if "os" not in fields and product is not None and product_version is not None:
        fields["os"] = Evidence(f"{product.value} {product_version.value}", product_version.line,
                                product_version.how, product_version.rank)
    machine = fields.pop("machine", None)
    if "os" not in fields and "os" not in f and "python_platform" in fields:
        plat = fields["python_platform"]
        release, mach, _ = ce._platform_parts(plat.value)
        if plat.value.startswith("macOS-") and release:
            fields["os"] = Evidence(f"macOS {release}" + (f" ({mach})" if mach else ""),
                                    plat.line, plat.how, plat.rank)
    if machine is not None and "os" in fields and not fields["os"].value.endswith(")"):
        word = machine.value.split()[0] if machine.value.split() else ""
        if word.lower() in ce._MACHINES:
            os_ev = fields["os"]
            fields["os"] = Evidence(f"{os_ev.value} ({word})", os_ev.line, os_ev.how, os_ev.rank)
    fields.pop("gpu", None)
    fields.pop("device", None)
    for key, ev in fields.items():
        if key in f and (is_report or ev.rank > RANK_TOOL):
            continue  # a report's own field, or a weaker line than collect_env's label
        if is_report and ev.rank > RANK_TOOL:
            continue  # around a report, only torch's messages and tools' output add facts
        f[key] = str(ev.value)
        added[key] = ev
    for key, ev in added.items():
        for path in _FIELD_PATHS.get(key, ()):
            sources[path] = ev.where
    group = paste.best_gpus
    if group is not None and "nvidia_gpu_models" not in f and not scan.gpu_lines:
        names = group.names
        if len(names) == 1 and not (group.how in ("nvidia-smi", "table row", "key-value line")
                                    and names[0][0] != 0):
            f["nvidia_gpu_models"] = names[0][1]
        else:
            f["nvidia_gpu_models"] = ""
            scan.gpu_lines.extend(f"GPU {i}: {name}" for i, name, _ in names)
        for path in _GPU_PATHS:
            sources[path] = f"{group.how}, line {group.line}"
    have = {ce._norm_name(r.split("==")[0].split()[0]) for _, r in scan.pip_rows if r.strip()}
    have |= {ce._norm_name(r.split()[0]) for r in scan.conda_rows if r.strip()}
    first_row = None
    for name, (ev, build, channel) in paste.rows.items():
        if name in have:
            continue
        if build is not None:
            scan.conda_rows.append(" ".join(x for x in (name, ev.value, build, channel) if x))
        else:
            scan.pip_rows.append(("pip", f"{name}=={ev.value}"))
        if first_row is None or ev.line < first_row.line:
            first_row = ev
    if first_row is not None:
        for path in ("packages.versions", "packages.distributions", "packages.torch_providers"):
            sources[path] = first_row.where
    # a torch row stands for the torch version where nothing else states it (not in a
    # collect_env report: there the version line is torch.__version__ or nothing)
    if "torch_version" not in f and not is_report:
        for name in ("torch", "pytorch"):
            if name in paste.rows:
                ev = paste.rows[name][0]
                f["torch_version"] = ev.value
                added["torch_version"] = ev
                sources["torch.version"] = ev.where
                break
    return sources, added


def _replace_unstated(value: Any) -> Any:
    """Every "not stated in the report" below ``value`` becomes "the paste does not say"."""
    if isinstance(value, Unavailable):
        return Unavailable(unavailable=PASTE_SILENT) if value.unavailable == ce.NOT_STATED else value
    if isinstance(value, list):
        return [_replace_unstated(v) for v in value]
    if isinstance(value, dict):
        return {k: _replace_unstated(v) for k, v in value.items()}
    if isinstance(value, BaseModel):
        update = {}
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = _replace_unstated(old)
            if new is not old:
                update[name] = new
        return value.model_copy(update=update) if update else value
    return value


def _u(reason: str) -> Unavailable:
    return Unavailable(unavailable=reason)


def _known(value: Any) -> bool:
    """Whether a fact is stated, or unknown for a reason of its own (a report's "could not
    collect", an implausible number): the paste's evidence fills only what nothing stated."""
    if not isinstance(value, Unavailable):
        return True
    return value.unavailable not in (ce.NOT_STATED, NOT_RECORDED, PASTE_SILENT)


_TORCH_ANSWERED = ("torch_version", "is_debug_build", "is_cuda_available")
"""collect_env fields only an imported torch answers (see collect_env._read_torch_presence)."""


def _torch_overlay(facts: Facts, paste: Paste, added: dict[str, Evidence],
                   sources: dict[str, str], own: set, is_report: bool) -> TorchFacts:
    torch = facts.torch
    if isinstance(torch, Unavailable):
        torch = ce._model(TorchFacts, ce.NOT_STATED)
    upd: dict[str, Any] = {}
    version_ev = added.get("torch_version")
    imported = paste.torch_imported
    if paste.import_failure is not None:
        from torchdoctor.probes._child_parse import failure_from_text

        kind, message = paste.import_failure.value
        for k, v in failure_from_text(kind, message).items():
            upd[k] = v
            sources[f"torch.{k}"] = paste.import_failure.where
    elif imported is not None and (not _known(torch.import_status) or version_ev is not None):
        upd.update(import_status="ok", import_error=None, missing_library=None,
                   missing_symbol=None, signal=None)
        sources["torch.import_status"] = imported.where
    elif version_ev is not None and version_ev.rank > RANK_TOOL and not own & set(_TORCH_ANSWERED):
        # a version from a package list, an install command or prose: installed, maybe
        for k in ("import_status", "import_error", "missing_library", "missing_symbol", "signal"):
            upd[k] = _u("the paste lists torch but does not show whether it imports")
    version = upd.get("version", torch.version)
    if isinstance(version, str) and version_ev is not None:
        upd["version"] = version
    # the build's variant from its local label (2.5.1+cu121), else from an index URL
    label = _local_label(version) if isinstance(version, str) else None
    variant = label
    if variant is None and isinstance(version, str) and paste.cuda_variant is not None:
        variant = paste.cuda_variant.value
    where = (version_ev.where if label and version_ev is not None
             else paste.cuda_variant.where if paste.cuda_variant is not None else None)
    if variant and not _known(torch.cuda_build) and not is_report:
        # (a collect_env report states the build's CUDA itself; where its line is missing the
        # report is read as before: the version label alone is not read there)
        if _cuda_of_variant(variant):
            upd["cuda_build"] = _cuda_of_variant(variant)
            if not _known(torch.hip_build):
                upd["hip_build"] = None
            sources["torch.cuda_build"] = where
        elif variant == "cpu":
            upd.update(cuda_build=None, hip_build=None, cudnn_version=None,
                       cudnn_compiled_version=None)
            sources["torch.cuda_build"] = where
        elif variant.startswith("rocm") and ce._leading_version(variant[4:]):
            upd.update(cuda_build=None, hip_build=ce._leading_version(variant[4:]))
            sources["torch.cuda_build"] = sources["torch.hip_build"] = where
    if ("cuda_build" not in upd and not _known(torch.cuda_build) and not is_report and label is None
            and isinstance(version, str) and version_ev is not None and paste.installer is not None
            and paste.installer.value == "pip" and getattr(facts.system, "os", None) == "Linux"):
        # a plain `pip install torch==X` on Linux got PyPI's default build of X (data, per release)
        default = tables.pypi_default_cuda(version)
        if default is not None:
            upd.update(cuda_build=default, hip_build=None)
            sources["torch.cuda_build"] = (f"PyPI's default wheel of torch {version} "
                                           f"(rules/data/torch_releases.yaml), {paste.installer.where}")
    if paste.cuda_build_none is not None:
        upd["cuda_build"] = None
        sources["torch.cuda_build"] = paste.cuda_build_none.where
    if paste.cuda_available is not None and not _known(torch.cuda_available):
        upd["cuda_available"] = paste.cuda_available.value
        sources["torch.cuda_available"] = paste.cuda_available.where
    elif paste.cuda_available is not None and torch.cuda_available == paste.cuda_available.value:
        sources.setdefault("torch.cuda_available", paste.cuda_available.where)
    if paste.init_errors and not _known(torch.cuda_init_error):
        upd["cuda_init_error"] = "\n".join(e.value for e in paste.init_errors)[:MAX_MESSAGE_CHARS * 2]
        sources["torch.cuda_init_error"] = paste.init_errors[0].where
    elif paste.init_errors and isinstance(torch.cuda_init_error, str):
        sources.setdefault("torch.cuda_init_error", paste.init_errors[0].where)
    if paste.arch_list is not None and not _known(torch.arch_list):
        upd["arch_list"] = list(paste.arch_list.value)
        sources["torch.arch_list"] = paste.arch_list.where
    if paste.cudnn is not None:
        built, runtime = paste.cudnn.value
        upd["cudnn_compiled_version"], upd["cudnn_version"] = built, runtime
        sources["torch.cudnn_compiled_version"] = sources["torch.cudnn_version"] = paste.cudnn.where
    if paste.compile_error is not None:
        upd["compile_error"] = paste.compile_error.value
        sources["torch.compile_error"] = paste.compile_error.where
    return torch.model_copy(update=upd) if upd else torch


def _gpu_overlay(facts: Facts, paste: Paste, sources: dict[str, str]) -> Any:
    gpu = facts.gpu
    group = paste.best_gpus
    stated = {}
    if group is not None:
        for g in sorted(paste.gpu_groups, key=lambda x: (x.rank, x.line)):
            for _, name, cc in g.names:
                if cc is not None:
                    stated.setdefault(name.lower(), cc)
    if isinstance(gpu, Unavailable) and paste.cuda_driver is None:
        return gpu
    if isinstance(gpu, Unavailable):
        gpu = ce._model(GpuFacts, ce.NOT_STATED, source="report")
    upd: dict[str, Any] = {}
    if paste.cuda_driver is not None and not _known(gpu.cuda_driver_version):
        upd["cuda_driver_version"] = paste.cuda_driver.value
        sources["gpu.cuda_driver_version"] = paste.cuda_driver.where
    elif paste.cuda_driver is not None and gpu.cuda_driver_version == paste.cuda_driver.value:
        sources["gpu.cuda_driver_version"] = paste.cuda_driver.where
    devices = gpu.devices
    if stated and isinstance(devices, list):
        new = []
        for d in devices:
            cc = stated.get(d.name.lower()) if isinstance(d.name, str) else None
            if cc is not None and d.vendor == "nvidia":
                arch = tables.arch_for_cc(cc)
                d = d.model_copy(update={
                    "compute_capability": cc,
                    "architecture": arch if arch else _u(f"no architecture known for compute capability {cc}"),
                })
            new.append(d)
        nvidia = [d for d in new if d.vendor == "nvidia"]
        ccs = [d.compute_capability for d in nvidia]
        upd["devices"] = new
        if ccs and all(isinstance(c, float) for c in ccs):
            upd["min_compute_capability"] = min(ccs)
            upd["max_compute_capability"] = max(ccs)
            archs = [d.architecture for d in nvidia]
            if all(isinstance(a, str) for a in archs):
                upd["architectures"] = list(dict.fromkeys(archs))
    return gpu.model_copy(update=upd) if upd else gpu


def _packages_overlay(facts: Facts, paste: Paste, sources: dict[str, str]) -> Any:
    if not paste.extension_archs:
        return facts.packages
    packages = facts.packages
    if isinstance(packages, Unavailable):
        packages = ce._model(PackagesFacts, ce.NOT_STATED)
    archs = {name: list(ev.value) for name, ev in paste.extension_archs.items()}
    first = min(paste.extension_archs.values(), key=lambda e: e.line)
    sources["packages.extension_archs"] = first.where
    return packages.model_copy(update={"extension_archs": archs})


def facts_from_text(text: str) -> Facts:
    """Facts (``origin="report"``) from pasted text of any shape this module reads: a
    collect_env report (read exactly as :func:`collect_env.parse_collect_env` reads it, plus
    what the text around it states) or anything else, with the known messages it holds
    (``Facts.paste``). Never refuses text: one that states no environment fact gets facts that
    are all unknown, its messages, and a note naming the command that would tell more."""
    scan = ce._scan(text)
    is_report = len(scan.fields) >= ce.MIN_REPORT_FIELDS
    own = set(scan.fields)
    paste = read_paste(text)
    hits = find_messages(text)
    if not scan.fields and not scan.pip_rows and not scan.conda_rows and paste.empty():
        return _facts_from_messages(hits)
    if "torch_version" in scan.fields:  # a template's "PyTorch version: torch2.8.0+cu128"
        scan.fields["torch_version"] = _NAMED_VERSION.sub("", scan.fields["torch_version"].strip())
    sources, added = _merge(scan, paste, is_report)
    init = ce.cuda_init_warning(text)
    facts = ce._build(scan, ce._import_error_line(text), init)
    upd: dict[str, Any] = {}
    torch = _torch_overlay(facts, paste, added, sources, own, is_report)
    if torch is not facts.torch:
        upd["torch"] = torch
    gpu = _gpu_overlay(facts, paste, sources)
    if gpu is not facts.gpu:
        upd["gpu"] = gpu
    packages = _packages_overlay(facts, paste, sources)
    if packages is not facts.packages:
        upd["packages"] = packages
    if isinstance(facts.system, Unavailable):
        values = {}
        for key, name in (("cuda_runtime_version", "cuda_toolkit_version"),
                          ("cudnn_version", "cudnn_version")):
            version = ce._leading_version(scan.fields.get(key, ""))
            if version:
                values[name] = version
        if values:
            upd["system"] = ce._model(SystemFacts, ce.NOT_STATED, **values)
    notes = list(facts.notes)
    environments, typos = _environments(paste)
    for ev in typos:
        notes.append(f"report: torch {ev.value} ({ev.where}) is no torch release (a typo?); "
                     "it is not read as another install")
    if len(environments) > 1 and "torch_version" in added:
        notes.append(
            f"report: the paste shows {len(environments)} different torch versions (several "
            "environments?); the facts are the first one's, the others are in paste.environments"
        )
    if not is_report:
        kinds = sorted({w.split(", line")[0] for w in sources.values() if w})
        notes.append(
            "report: not a collect_env report; read from the paste's "
            + ", ".join(kinds[:8])
            + " (facts.sources says where each fact came from); what it does not say is unknown"
        )
    upd["notes"] = notes
    upd["sources"] = {k: v for k, v in sorted(sources.items()) if v}
    upd["paste"] = _paste_facts(hits, "collect_env" if is_report else "paste").model_copy(
        update={"environments": [f"torch {ev.value} ({ev.where})" for ev in environments]
                if len(environments) > 1 else []})
    facts = facts.model_copy(update=upd)
    if not own:  # no collect_env field at all: the paste, not a report, is silent
        facts = _replace_unstated(facts)
    return Facts.model_validate(facts.model_dump())


NO_FACTS = (
    "report: the text states no environment fact; run `python -m torch.utils.collect_env` "
    "(or `torchdoctor report`) where the problem happens and paste its output"
)
"""The one line a paste without any environment fact gets (the known messages still count)."""


def _paste_facts(hits: list[Hit], read_as: str) -> PasteFacts:
    return PasteFacts(read_as=read_as, messages=[
        KnownMessage(id=h.entry.id, lines=list(h.lines), category=h.entry.category,
                     severity=h.entry.severity, meaning=h.fill(h.entry.meaning),
                     fix=h.fill(h.entry.fix), values=dict(h.values),
                     references=list(h.entry.references))
        for h in hits
    ])


def _facts_from_messages(hits: list[Hit]) -> Facts:
    """Facts of a text that states no environment fact: every namespace unknown ("the paste
    does not say"), the known messages it holds, and a note naming what would tell more."""
    silent = Unavailable(unavailable=PASTE_SILENT)
    notes = [NO_FACTS if hits else NO_FACTS.replace(
        "states no environment fact;", "states no environment fact and holds no known error message;")]
    return Facts(origin="report", torch=silent, gpu=silent, cpu=silent, memory=silent, env=silent,
                 packages=silent, system=silent, notes=notes,
                 paste=_paste_facts(hits, "prose"))


def _environments(paste: Paste) -> tuple[list[Evidence], list[Evidence]]:
    """The distinct torch versions tool output states (first statement of each), and those no
    torch release has (``torch 7.0+cu118`` beside ``torchaudio 2.7.0+cu118``: a typo, not
    another install). A release the table does not know but newer than its newest (a nightly)
    counts as a version."""
    seen: dict[str, Evidence] = {}
    typos = []
    latest = tables.latest_release()
    for ev in paste.torch_versions:
        base = str(ev.value).split("+")[0]
        key = ".".join(base.split(".")[:2])
        if key in seen or any(t.value == ev.value for t in typos):
            continue
        newer = False
        try:
            from packaging.version import Version

            newer = latest is not None and Version(key) > Version(latest) and Version(key) < Version(
                f"{Version(latest).major}.{Version(latest).minor + 3}")
        except ValueError:
            pass
        if tables._release(base) is None and not newer:
            typos.append(ev)
        else:
            seen[key] = ev
    return list(seen.values()), typos
