"""Report -> Markdown ready to paste into a GitHub issue (``torchdoctor report``).

Layout (``render/templates/ticket.md.j2``): a one-line summary (torch, CUDA, GPU, verdict),
the findings with their fixes, the environment laid out like
``python -m torch.utils.collect_env`` (same field names, same order, in a fenced block, so
maintainers find their fields and torchdoctor's own collect_env importer reads it back),
then every fact in a collapsible ``<details>`` section per namespace.

Pure functions of an already-redacted Report; only ``cli.py`` writes anything.

The collect_env block keeps collect_env's meanings: "CUDA runtime version" is the CUDA
toolkit (nvcc) on the system and "cuDNN version" the cuDNN library found on the system
(``system.cuda_toolkit_version`` / ``system.cudnn_version``). The cuDNN torch itself loaded
is in the summary line and the torch facts. Fields torchdoctor does not record (GCC, Clang, CMake, XNNPACK) say
``Could not collect``, as collect_env does when it cannot tell.
"""

from __future__ import annotations

import html
from typing import Any, Optional

import jinja2
from pydantic import BaseModel

from torchdoctor.facts import NAMESPACES, Facts, Unavailable
from torchdoctor.render import show_value
from torchdoctor.report import SEVERITY_RANK, Report

CNC = "Could not collect"
NO_CUDA = "No CUDA"


# ----------------------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------------------


def known(value: Any) -> bool:
    """A value that is neither unavailable nor None."""
    return value is not None and not isinstance(value, Unavailable)


def _ns(facts: Facts, name: str) -> Optional[BaseModel]:
    value = getattr(facts, name)
    return None if isinstance(value, Unavailable) else value


def _get(model: Optional[BaseModel], name: str) -> Any:
    """A field of a namespace model; Unavailable when the namespace or the field is unknown."""
    if model is None:
        return Unavailable(unavailable="namespace unknown")
    return getattr(model, name, Unavailable(unavailable="not recorded"))


def _bool_text(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    return CNC


def _text(value: Any, none: str = CNC, unknown: str = CNC) -> str:
    if isinstance(value, Unavailable):
        return unknown
    if value is None:
        return none
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def compress_ints(values: list) -> str:
    """``[0, 1, 2, 3, 8]`` -> ``0-3,8`` (CPU affinity lists have hundreds of entries)."""
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return ", ".join(str(v) for v in values)
    out = []
    nums = sorted(set(values))
    start = prev = nums[0]
    for n in nums[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ",".join(out)


def show(value: Any) -> str:
    """A fact value for the facts tables (long integer lists compressed: 0-63)."""
    if isinstance(value, list) and len(value) > 4 and all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return compress_ints(value)
    return show_value(value)


def md_text(text: str) -> str:
    """Plain text inside Markdown: HTML-escaped (so ``<user>`` stays visible) on one line."""
    return html.escape(" ".join(str(text).split()), quote=False)


def md_code(text: str) -> str:
    """Inline code that survives backticks and table pipes in the value."""
    text = " ".join(str(text).split()).replace("|", "\\|")
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def verdict(report: Report) -> str:
    c = report.counts()
    return "broken" if c["error"] else "needs attention" if c["warning"] else "healthy"


# ----------------------------------------------------------------------------------------
# the one-line summary
# ----------------------------------------------------------------------------------------


def torch_summary(facts: Facts) -> str:
    t = _ns(facts, "torch")
    if t is None:
        return "torch unknown"
    status = t.import_status
    if isinstance(status, str) and status != "ok":
        words = {"not-installed": "not installed", "import-error": "does not import",
                 "crashed": "crashes on import", "timeout": "import timed out",
                 "error": "could not be inspected"}
        version = f" {t.version}" if isinstance(t.version, str) else ""
        return f"torch{version} {words.get(status, status)}"
    return f"torch {t.version}" if isinstance(t.version, str) else "torch version unknown"


def build_summary(facts: Facts) -> str:
    t = _ns(facts, "torch")
    if t is None:
        return "build unknown"
    if isinstance(t.import_status, str) and t.import_status != "ok":
        return ""  # the torch part already says it does not import
    if isinstance(t.cuda_build, str):
        cudnn = f", cuDNN {t.cudnn_version}" if isinstance(t.cudnn_version, str) else ""
        return f"CUDA {t.cuda_build}{cudnn}"
    if isinstance(t.hip_build, str):
        return f"ROCm {t.hip_build}"
    if t.cuda_build is None and t.hip_build is None:
        return "CPU-only build"
    return "CUDA unknown"


def gpu_summary(facts: Facts) -> str:
    g = _ns(facts, "gpu")
    t = _ns(facts, "torch")
    if g is not None and isinstance(g.devices, list) and g.devices:
        names = [d.name for d in g.devices if isinstance(d.name, str)]
        first = g.devices[0]
        label = names[0] if names else "GPU"
        if len(g.devices) > 1:
            label = f"{len(g.devices)}× {label}" if len(set(names)) <= 1 else ", ".join(dict.fromkeys(names))
        extra = []
        if isinstance(first.compute_capability, float):
            extra.append(f"sm_{first.compute_capability:g}".replace(".", ""))
        if isinstance(first.architecture, str):
            extra.append(first.architecture)
        text = label + (f" ({', '.join(extra)})" if extra else "")
        if isinstance(g.driver_version, str):
            text += f", driver {g.driver_version}"
        return text
    if t is not None and isinstance(t.devices, list) and t.devices:
        names = [d.name for d in t.devices if isinstance(d.name, str)]
        return ", ".join(dict.fromkeys(names)) or "GPU"
    if t is not None and t.mps_available is True:
        return "Apple GPU (MPS)"
    if g is not None and g.count == 0:
        return "no NVIDIA GPU"
    if t is not None and t.cuda_available is False:
        return "no CUDA GPU visible to torch"
    return "GPU unknown"


def summary_line(report: Report) -> str:
    facts = report.facts
    s = _ns(facts, "system")
    parts = [torch_summary(facts), build_summary(facts), gpu_summary(facts)]
    if s is not None and isinstance(s.python_version, str):
        parts.append(f"Python {s.python_version}")
    if s is not None and isinstance(s.os_name, str):
        parts.append(s.os_name)
    elif s is not None and isinstance(s.os, str):
        parts.append(s.os)
    c = report.counts()
    return (" · ".join(md_text(p) for p in parts if p)
            + f" — **{verdict(report)}** ({c['error']} error(s), {c['warning']} warning(s), "
              f"{c['info']} note(s))")


# ----------------------------------------------------------------------------------------
# the collect_env layout
# ----------------------------------------------------------------------------------------


def _python_platform(s: Optional[BaseModel]) -> str:
    if s is None:
        return CNC
    os_, machine, kernel, libc = s.os, s.machine, s.kernel, s.libc
    if os_ == "Linux" and isinstance(kernel, str) and isinstance(machine, str):
        tail = f"-with-{libc.replace(' ', '')}" if isinstance(libc, str) else ""
        return f"Linux-{kernel}-{machine}{tail}"
    if os_ == "Darwin" and isinstance(s.os_version, str) and isinstance(machine, str):
        proc = "arm" if machine == "arm64" else "i386"
        return f"macOS-{s.os_version}-{machine}-{proc}-64bit"
    if os_ == "Windows" and isinstance(s.os_version, str):
        name = s.os_name if isinstance(s.os_name, str) else ""
        release = next((w for w in name.split() if w.isdigit()), s.os_version.split(".")[0])
        return f"Windows-{release}-{s.os_version}-SP0"
    return CNC


def _os_line(s: Optional[BaseModel]) -> str:
    if s is None or not isinstance(s.os_name, str):
        return CNC
    if s.os == "Windows":
        if isinstance(s.os_version, str) and isinstance(s.python_bits, int):
            return f"{s.os_name} ({s.os_version} {s.python_bits}-bit)"
        return f"{s.os_name} ({s.machine})" if isinstance(s.machine, str) else s.os_name
    if isinstance(s.machine, str):
        return f"{s.os_name} ({s.machine})"
    return s.os_name


def _python_line(s: Optional[BaseModel]) -> str:
    if s is None or not isinstance(s.python_version, str):
        return CNC
    bits = f" ({s.python_bits}-bit runtime)" if isinstance(s.python_bits, int) else ""
    return f"{s.python_version}{bits}"


def _libc_line(s: Optional[BaseModel]) -> str:
    if s is None:
        return CNC
    if s.libc is None:
        return "N/A"
    if isinstance(s.libc, str):
        return s.libc.replace(" ", "-", 1)
    return CNC


def _no_cuda(facts: Facts) -> bool:
    """collect_env prints "No CUDA" when torch sees no CUDA and nvidia-smi found nothing."""
    t, g = _ns(facts, "torch"), _ns(facts, "gpu")
    return (t is not None and t.cuda_available is False and g is not None and g.count == 0)


def _gpu_models(facts: Facts) -> str:
    g, t = _ns(facts, "gpu"), _ns(facts, "torch")
    names: list[str] = []
    if g is not None and isinstance(g.devices, list) and g.devices:
        names = [f"GPU {d.index}: {d.name if isinstance(d.name, str) else 'unknown'}" for d in g.devices]
    elif t is not None and isinstance(t.devices, list) and t.devices:
        names = [f"GPU {d.index}: {d.name if isinstance(d.name, str) else 'unknown'}" for d in t.devices]
    if names:
        return names[0] if len(names) == 1 else "\n" + "\n".join(names) + "\n"
    if _no_cuda(facts):
        return NO_CUDA
    return CNC


def _cpu_block(facts: Facts) -> str:
    c = _ns(facts, "cpu")
    if c is None:
        return "None"
    rows: list[tuple[str, Any]] = [
        ("Architecture", c.architecture),
        ("CPU(s)", c.logical_cores),
        ("Vendor ID", c.vendor),
        ("Model name", c.model),
    ]
    if isinstance(c.physical_cores, int) and isinstance(c.sockets, int) and c.sockets > 0:
        rows.append(("Core(s) per socket", c.physical_cores // c.sockets))
    rows += [("Socket(s)", c.sockets), ("NUMA node(s)", c.numa_nodes)]
    if isinstance(c.flags, dict):
        rows.append(("Flags", " ".join(k for k, v in c.flags.items() if v is True) or "none"))
    lines = [f"{label + ':':<38}{value}" for label, value in rows if known(value)]
    return "\n".join(lines) if lines else "None"


def _package_rows(facts: Facts) -> tuple[list[str], list[str]]:
    p = _ns(facts, "packages")
    if p is None:
        return [f"[pip3] {CNC}"], [f"[conda] {CNC}"]
    pip: dict[str, str] = {}
    conda: list[str] = []
    if isinstance(p.distributions, list):
        for d in p.distributions:
            version = d.version if isinstance(d.version, str) else None
            source = d.source if isinstance(d.source, str) else ""
            if source.endswith("conda"):
                build = d.build if isinstance(d.build, str) else ""
                channel = d.channel if isinstance(d.channel, str) else ""
                if not version:
                    continue
                conda.append(f"[conda] {d.name:<25} {version:<25} {build:<16} {channel}".rstrip())
            elif version:
                pip.setdefault(d.name, version)
    if isinstance(p.versions, dict):
        listed = set(pip) | {row.split()[1] for row in conda}
        if isinstance(p.distributions, list) and any(d.provides_torch is True for d in p.distributions):
            listed.add("torch")  # versions["torch"] mirrors a conda "pytorch" row: not a pip install
        for name, version in p.versions.items():
            if name not in listed:
                pip[name] = version
    pip_rows = [f"[pip3] {name}=={version}" for name, version in sorted(pip.items())]
    if not pip_rows:
        collected = isinstance(p.versions, dict) and not isinstance(p.torch_providers, Unavailable)
        pip_rows = ["[pip3] No relevant packages" if collected and not conda else f"[pip3] {CNC}"]
    if not conda:
        conda = [f"[conda] {CNC}"]
    return pip_rows, conda


def collect_env_fields(facts: Facts) -> list[tuple[str, str]]:
    """(label, value) pairs in collect_env's order; "" labels are blank lines."""
    t, g, s = _ns(facts, "torch"), _ns(facts, "gpu"), _ns(facts, "system")
    e = _ns(facts, "env")
    na_torch = t is not None and isinstance(t.import_status, str) and t.import_status != "ok"

    def tv(name: str, none: str = CNC, unknown: str = CNC) -> str:
        if na_torch:
            return "N/A"
        return _text(_get(t, name), none=none, unknown=unknown)

    def tb(name: str) -> str:
        if na_torch:
            return "N/A"
        return _bool_text(_get(t, name))

    no_cuda = _no_cuda(facts)
    toolkit = _get(s, "cuda_toolkit_version")
    cudnn = _get(s, "cudnn_version")
    driver = _get(g, "driver_version")
    variables = e.variables if e is not None and isinstance(e.variables, dict) else None
    alloc = CNC
    if variables is not None:
        alloc = variables.get("PYTORCH_CUDA_ALLOC_CONF") or variables.get("PYTORCH_ALLOC_CONF") or "N/A"
    loading = CNC
    if variables is not None:
        loading = variables.get("CUDA_MODULE_LOADING") or ("N/A" if no_cuda else CNC)
    return [
        ("PyTorch version", tv("version")),
        ("Is debug build", tb("debug_build")),
        # "Could not collect" here means torch.version.cuda is None: an unknown build says so
        ("CUDA used to build PyTorch", tv("cuda_build", none="None", unknown="unknown")),
        ("ROCM used to build PyTorch", tv("hip_build", none="N/A", unknown="unknown")),
        ("", ""),
        ("OS", _os_line(s)),
        ("GCC version", CNC),
        ("Clang version", CNC),
        ("CMake version", CNC),
        ("Libc version", _libc_line(s)),
        ("", ""),
        ("Python version", _python_line(s)),
        ("Python platform", _python_platform(s)),
        ("Is CUDA available", tb("cuda_available")),
        ("CUDA runtime version", NO_CUDA if no_cuda and not known(toolkit) else _text(toolkit)),
        ("CUDA_MODULE_LOADING set to", loading),
        ("GPU models and configuration", _gpu_models(facts)),
        ("Nvidia driver version", NO_CUDA if no_cuda and not known(driver) else _text(driver)),
        ("cuDNN version", NO_CUDA if no_cuda and not known(cudnn) else _text(cudnn)),
        ("Is XPU available", tb("xpu_available")),
        ("HIP runtime version", tv("hip_build", none="N/A", unknown="unknown")),
        ("MIOpen runtime version", "N/A"),
        ("Is XNNPACK available", CNC),
        ("Caching allocator config", alloc),
    ]


def collect_env_text(facts: Facts) -> str:
    """The facts in the layout of ``python -m torch.utils.collect_env`` (without the
    "Collecting environment information..." line)."""
    lines = []
    for label, value in collect_env_fields(facts):
        lines.append(f"{label}: {value}" if label else "")
    lines += ["", "CPU:", _cpu_block(facts), "", "Versions of relevant libraries:"]
    pip, conda = _package_rows(facts)
    lines += pip + conda
    return "\n".join(lines).rstrip("\n") + "\n"


# ----------------------------------------------------------------------------------------
# facts sections
# ----------------------------------------------------------------------------------------


COMPACT_LISTS = ("packages.distributions",)
"""Lists shown one row per item (``name version · source=pip``) rather than one per field."""


def fact_rows(facts: Facts, namespace: str) -> list[tuple[str, Any]]:
    """(path, value) for every fact of one namespace; items of COMPACT_LISTS as one string."""
    from torchdoctor.diff import iter_facts

    rows: list[tuple[str, Any]] = []
    ns = getattr(facts, namespace)
    for name in type(ns).model_fields:
        path, value = f"{namespace}.{name}", getattr(ns, name)
        if path in COMPACT_LISTS and isinstance(value, list) and value:
            for i, item in enumerate(value):
                rows.append((f"{path}[{i}]", _compact(item)))
            continue
        rows.extend(iter_facts(value, path))
    return rows


def _compact(item: Any) -> str:
    if not isinstance(item, BaseModel):
        return show(item)
    data = {k: getattr(item, k) for k in type(item).model_fields}
    head = " ".join(str(data.pop(k)) for k in ("name", "version") if known(data.get(k)))
    rest = [f"{k}={show(v)}" for k, v in data.items() if known(v)]
    return " · ".join([head, *rest]) if head else " · ".join(rest)


def _collapse_indices(paths: list[str]) -> list[str]:
    """``devices[0].uuid, devices[1].uuid`` -> ``devices[*].uuid`` (order kept)."""
    import re

    return list(dict.fromkeys(re.sub(r"\[\d+\]", "[*]", p) for p in paths))


def fact_sections(facts: Facts) -> list[dict[str, Any]]:
    """Per namespace: the known facts as table rows, the unknown ones grouped by reason."""
    out = []
    for ns in NAMESPACES:
        value = getattr(facts, ns)
        if isinstance(value, Unavailable):
            out.append({"name": ns, "unknown": md_text(value.unavailable), "rows": [], "missing": [],
                        "total": 0})
            continue
        rows, missing = [], {}  # type: ignore[var-annotated]
        all_rows = fact_rows(facts, ns)
        for path, v in all_rows:
            if isinstance(v, Unavailable):
                missing.setdefault(v.unavailable, []).append(path[len(ns) + 1:])
            else:
                shown = v if isinstance(v, str) else show(v)
                if path.endswith("_bytes") and isinstance(v, int) and not isinstance(v, bool):
                    shown = f"{v} ({v / 2**30:.1f} GiB)"
                rows.append((md_code(path), md_code(shown)))
        out.append({"name": ns, "unknown": None, "rows": rows, "total": len(all_rows),
                    "missing": [(md_text(reason), ", ".join(_collapse_indices(paths)))
                                for reason, paths in missing.items()]})
    return out


def md_prose(text: str) -> str:
    """A rule's Markdown prose (its fix): `code spans` kept as they are, ``<``/``>``/``&``
    outside them escaped so GitHub shows them rather than eating them as HTML."""
    parts = str(text).split("`")
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = html.escape(parts[i], quote=False)
    if len(parts) % 2 == 0:  # an unbalanced backtick: leave the tail as text
        parts[-2:] = [parts[-2] + "`" + html.escape(parts[-1], quote=False)]
    return "`".join(parts)


def finding_items(report: Report) -> list[dict[str, Any]]:
    """Errors first; each fix reflowed into paragraphs/list items (GitHub turns the rule
    file's hard line breaks into <br>)."""
    from torchdoctor.render import CODE, reflow

    items = []
    for f in sorted(report.findings, key=lambda f: SEVERITY_RANK[f.severity]):
        fix = []
        for block in reflow(f.fix) if f.fix else []:
            if block.startswith(CODE):  # a fenced block, indented into the list item
                body = block[len(CODE):].replace("```", "` ` `")
                fix.append("```\n" + "\n".join(f"  {ln}" for ln in body.splitlines()) + "\n  ```")
            else:
                fix.append(md_prose(block))
        items.append({"severity": f.severity, "id": f.id, "message": md_text(f.message),
                      "fix": fix, "references": f.references[:3]})
    return items


def skipped_groups(report: Report) -> list[tuple[str, list[str]]]:
    """Rules skipped for unknown facts, grouped by why the fact is unknown: (reason,
    ["rule-id (`fact`)", ...]). Rules that need a declared workload are left out: a ticket
    describes an environment, not a workload."""
    groups: dict[str, list[str]] = {}
    for s in report.fact_skipped():
        groups.setdefault(s.reason, []).append(f"`{s.id}` ({md_code(s.needs)})")
    return [(md_text(k), ids) for k, ids in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))]


# ----------------------------------------------------------------------------------------
# rendering
# ----------------------------------------------------------------------------------------


def _template() -> jinja2.Template:
    from torchdoctor.render import templates

    return templates().get_template("ticket.md.j2")


def render_ticket(report: Report) -> str:
    """The Markdown ticket for a (redacted) report."""
    return _template().render(
        r=report,
        summary=summary_line(report),
        counts=report.counts(),
        findings=finding_items(report),
        collect_env=collect_env_text(report.facts),
        sections=fact_sections(report.facts),
        skipped=skipped_groups(report),
        problems=[md_text(p) for p in report.facts.problems],
        origin=report.facts.origin,
    )
