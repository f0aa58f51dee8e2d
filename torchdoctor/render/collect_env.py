"""Facts -> the layout of ``python -m torch.utils.collect_env`` (same field names, same order):
the reverse of the collect_env importer, so maintainers find their fields in a ticket and the
importer reads the block back. A pure function of the (redacted) facts.

The block keeps collect_env's meanings: "CUDA runtime version" is the CUDA toolkit (nvcc) on
the system and "cuDNN version" the cuDNN library found on the system
(``system.cuda_toolkit_version`` / ``system.cudnn_version``). The cuDNN torch itself loaded is
in the summary line and the torch facts.

The block never says something collect_env did not: it follows the layout of torch 2.13's
collect_env, and a line whose value torchdoctor does not know is left out (GCC, Clang, CMake
and XNNPACK always; the others when the fact is unknown). A value known to be absent is
written the way collect_env writes it for that field (``N/A``, ``None``, ``No CUDA``, ``Could
not collect``); "Could not collect" for an unknown value only where a pasted report said
exactly that. Package names are the facts' normalised names (``mkl_fft`` is listed as
``mkl-fft``). No line of the block can close the fence it is printed in.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from torchdoctor.model import BaseModel

from torchdoctor.facts import Facts, Unavailable
from torchdoctor.render.text import ZWSP, known
from torchdoctor.render.text import namespace as _ns
from torchdoctor.unknowns import COULD_NOT_COLLECT

CNC = "Could not collect"
NO_CUDA = "No CUDA"


def _get(model: Optional[BaseModel], name: str) -> Any:
    """A field of a namespace model; Unavailable when the namespace or the field is unknown."""
    if model is None:
        return Unavailable(unavailable="namespace unknown")
    return getattr(model, name, Unavailable(unavailable="not recorded"))



# Every field function returns the text collect_env would print, or None: the line is left out
# because torchdoctor does not know what collect_env would print there. A value known to be
# absent (None) is written the way collect_env writes that field (N/A, None, No CUDA or Could
# not collect); "Could not collect" is written for an unknown only when the pasted report
# itself said it (the importer's COULD_NOT_COLLECT reason).


def _said_cnc(value: Any) -> bool:
    """An unknown that a pasted collect_env report stated as "Could not collect"."""
    return isinstance(value, Unavailable) and value.unavailable == COULD_NOT_COLLECT


def _field(value: Any, none: Optional[str] = CNC) -> Optional[str]:
    """A known value as text; None -> ``none`` (collect_env's words for that absent value);
    unknown -> "Could not collect" where the report said so, else None (line left out)."""
    if isinstance(value, Unavailable):
        return CNC if _said_cnc(value) else None
    if value is None:
        return none
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _torch_failed(t: Optional[BaseModel]) -> bool:
    """collect_env prints N/A for everything torch answers when ``import torch`` failed."""
    return t is not None and isinstance(t.import_status, str) and t.import_status != "ok"


def _version_tuple(text: Any) -> Optional[tuple[int, ...]]:
    m = re.match(r"(\d{1,9})\.(\d{1,9})", text) if isinstance(text, str) else None
    return (int(m.group(1)), int(m.group(2))) if m else None


def _python_platform(s: Optional[BaseModel]) -> Optional[str]:
    """``platform.platform()``, only where the facts give it exactly: Linux on Python >= 3.10
    (older Pythons read the glibc version out of the interpreter binary, or name the
    distribution), macOS on Python 3.8-3.12 and Windows 10 with its full version number."""
    if s is None:
        return None
    py = _version_tuple(s.python_version)
    os_, machine, kernel, libc = s.os, s.machine, s.kernel, s.libc
    if py is None:
        return None
    if (os_ == "Linux" and py >= (3, 10) and isinstance(kernel, str) and isinstance(machine, str)
            and isinstance(libc, str) and libc.startswith("glibc ")):
        return f"Linux-{kernel}-{machine}-with-{libc.replace(' ', '')}"
    if (os_ == "Darwin" and (3, 8) <= py < (3, 13) and isinstance(s.os_version, str)
            and machine in ("arm64", "x86_64") and isinstance(s.python_bits, int)):
        proc = "arm" if machine == "arm64" else "i386"
        return f"macOS-{s.os_version}-{machine}-{proc}-{s.python_bits}bit"
    if (os_ == "Windows" and isinstance(s.os_name, str) and "Windows 10" in s.os_name
            and isinstance(s.os_version, str) and re.fullmatch(r"10\.0\.\d+", s.os_version)):
        return f"Windows-10-{s.os_version}-SP0"
    return None


def _os_line(s: Optional[BaseModel]) -> Optional[str]:
    if s is None:
        return None
    if not isinstance(s.os_name, str):
        return _field(s.os_name)
    if s.os == "Windows":
        # collect_env 2.x: "Caption (Version OSArchitecture)"; a 64-bit Python means a 64-bit OS
        if isinstance(s.os_version, str) and re.fullmatch(r"\d+\.\d+\.\d+", s.os_version) \
                and s.python_bits == 64:
            return f"{s.os_name} ({s.os_version} 64-bit)"
        return s.os_name
    if isinstance(s.machine, str):
        return f"{s.os_name} ({s.machine})"
    return s.os_name


def _python_line(s: Optional[BaseModel]) -> Optional[str]:
    if s is None or not isinstance(s.python_version, str):
        return None if s is None else _field(s.python_version)
    bits = f" ({s.python_bits}-bit runtime)" if isinstance(s.python_bits, int) else ""
    return f"{s.python_version}{bits}"


def _libc_line(s: Optional[BaseModel]) -> Optional[str]:
    if s is None:
        return None
    if isinstance(s.libc, str):
        return s.libc.replace(" ", "-", 1)
    if s.libc is None and s.os in ("Windows", "Darwin"):
        return "N/A"  # collect_env: not Linux
    return _field(s.libc, none=None)


def _missing(value: Any) -> Optional[bool]:
    """Whether collect_env got None for a field: True for None (or a report's "Could not
    collect", which is how collect_env prints None), False for a value, None when unknown."""
    if value is None or _said_cnc(value):
        return True
    if isinstance(value, Unavailable):
        return None
    return False


def _gpu_list_missing(facts: Facts) -> Optional[bool]:
    """Whether collect_env's GPU list is None: nvidia-smi lists nothing, or (macOS, ROCm)
    torch sees no GPU. None when unknown."""
    t, g, s = _ns(facts, "torch"), _ns(facts, "gpu"), _ns(facts, "system")
    no_torch_gpu = t is not None and t.cuda_available is False
    if no_torch_gpu and ((s is not None and s.os == "Darwin")
                         or (t is not None and isinstance(t.hip_build, str))):
        return True
    if g is None:
        return None
    if g.count == 0 or (isinstance(g.devices, list) and not g.devices):
        return True
    if isinstance(g.devices, list):
        return False
    return _missing(g.devices)


def _no_cuda(facts: Facts) -> Optional[bool]:
    """Whether collect_env replaced the CUDA fields by "No CUDA": torch imported, sees no CUDA,
    and nvcc, the GPU list and the driver version all came back None. None when unknown."""
    t, g, s = _ns(facts, "torch"), _ns(facts, "gpu"), _ns(facts, "system")
    if t is None or t.import_status != "ok":
        return False if _torch_failed(t) else None
    if t.cuda_available is True:
        return False
    states = [_gpu_list_missing(facts),
              _missing(_get(s, "cuda_toolkit_version")),
              _missing(_get(g, "driver_version"))]
    if False in states:
        return False
    if None in states or t.cuda_available is not False:
        return None
    return True


def _cuda_build_line(facts: Facts) -> Optional[str]:
    t = _ns(facts, "torch")
    if t is None:
        return None
    if _torch_failed(t):
        return "N/A"
    cuda, hip = t.cuda_build, t.hip_build
    if isinstance(cuda, str):
        return cuda
    if isinstance(hip, str):
        return "N/A"  # collect_env: a ROCm build
    if cuda is not None:
        return _field(cuda)
    # torch.version.cuda is None: "None" in the No CUDA case, else collect_env's None text.
    # An unknown hip_build is a report without the ROCM line (collect_env before ROCm builds
    # were reported), which printed "Could not collect" for it too, unless CUDA is usable:
    # then it may be a ROCm build (N/A in newer collect_env), not known which.
    no_cuda = _no_cuda(facts)
    if no_cuda is True:
        return "None"
    if no_cuda is False and (hip is None or t.cuda_available is False):
        return CNC
    return None


def _gpu_models(facts: Facts) -> Optional[str]:
    g, t = _ns(facts, "gpu"), _ns(facts, "torch")
    no_cuda = _no_cuda(facts)
    if no_cuda is not False:
        return NO_CUDA if no_cuda else None
    if t is not None and not (t.hip_build is None or isinstance(t.hip_build, Unavailable)):
        return None  # ROCm: torch's device name and gcnArchName, which are not facts
    if g is None:
        return None
    if isinstance(g.devices, list) and g.devices:
        names = [f"GPU {d.index}: {d.name if isinstance(d.name, str) else 'unknown'}" for d in g.devices]
        return names[0] if len(names) == 1 else "\n" + "\n".join(names) + "\n"
    if isinstance(g.devices, Unavailable):
        return _field(g.devices)
    return None  # an empty list: nvidia-smi printed nothing or failed, not known which


def _cuda_field(facts: Facts, value: Any) -> Optional[str]:
    no_cuda = _no_cuda(facts)
    if no_cuda is not False:
        return NO_CUDA if no_cuda else None  # unknown: "No CUDA" or the value, not known which
    return _field(value)


def _alloc_conf(variables: Optional[dict]) -> Optional[str]:
    if variables is None:
        return None
    names = ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF")
    found = {n: variables[n] for n in names if variables.get(n)}
    return repr(found) if found else "N/A"


def collect_env_fields(facts: Facts) -> list[tuple[str, Optional[str]]]:
    """(label, value) pairs in collect_env's order; "" labels are blank lines; a None value
    means the line is left out (torchdoctor does not know what collect_env would print)."""
    t, g, s = _ns(facts, "torch"), _ns(facts, "gpu"), _ns(facts, "system")
    e = _ns(facts, "env")
    failed = _torch_failed(t)

    def tf(name: str, none: Optional[str] = CNC) -> Optional[str]:
        if failed:
            return "N/A"
        return None if t is None else _field(_get(t, name), none=none)

    hip = _get(t, "hip_build")
    if failed or hip is None:
        hip_runtime: Optional[str] = "N/A"
    else:
        hip_runtime = None  # torch's build config says it; not a fact
    variables = e.variables if e is not None and isinstance(e.variables, dict) else None
    loading: Optional[str] = None
    if failed or (t is not None and t.cuda_available is False):
        loading = "N/A"
    elif t is not None and t.cuda_available is True and variables and variables.get("CUDA_MODULE_LOADING"):
        loading = variables["CUDA_MODULE_LOADING"]
    return [
        ("PyTorch version", tf("version")),
        ("Is debug build", tf("debug_build")),
        ("CUDA used to build PyTorch", _cuda_build_line(facts)),
        ("ROCM used to build PyTorch", tf("hip_build", none="N/A")),
        ("", ""),
        ("OS", _os_line(s)),
        ("GCC version", None),
        ("Clang version", None),
        ("CMake version", None),
        ("Libc version", _libc_line(s)),
        ("", ""),
        ("Python version", _python_line(s)),
        ("Python platform", _python_platform(s)),
        ("Is CUDA available", tf("cuda_available")),
        ("CUDA runtime version", _cuda_field(facts, _get(s, "cuda_toolkit_version"))),
        ("CUDA_MODULE_LOADING set to", loading),
        ("GPU models and configuration", _gpu_models(facts)),
        ("Nvidia driver version", _cuda_field(facts, _get(g, "driver_version"))),
        ("cuDNN version", _cuda_field(facts, _get(s, "cudnn_version"))),
        ("Is XPU available", tf("xpu_available")),
        ("HIP runtime version", hip_runtime),
        ("MIOpen runtime version", hip_runtime),
        ("Is XNNPACK available", None),
        ("Caching allocator config", _alloc_conf(variables)),
    ]


def _cpu_block(facts: Facts) -> Optional[str]:
    """lscpu rows torchdoctor knows (the ISA flags it records are a selection, so no Flags
    row); None when nothing is known."""
    c = _ns(facts, "cpu")
    if c is None:
        return "None" if _said_cnc(facts.cpu) else None  # collect_env prints a None cpu_info as is
    rows: list[tuple[str, Any]] = [
        ("Architecture", c.architecture),
        ("CPU(s)", c.logical_cores),
        ("Vendor ID", c.vendor),
        ("Model name", c.model),
    ]
    if isinstance(c.physical_cores, int) and isinstance(c.sockets, int) and c.sockets > 0:
        rows.append(("Core(s) per socket", c.physical_cores // c.sockets))
    rows += [("Socket(s)", c.sockets), ("NUMA node(s)", c.numa_nodes)]
    lines = [f"{label + ':':<38}{value}" for label, value in rows if known(value)]
    return "\n".join(lines) if lines else None


def _package_rows(facts: Facts) -> Optional[list[str]]:
    """``[pip3]`` and ``[conda]`` rows of the listed distributions (names as the facts keep
    them: normalised); None when the facts do not list distributions."""
    p = _ns(facts, "packages")
    if p is None or not isinstance(p.distributions, list):
        return None
    pip: dict[str, str] = {}
    conda: list[str] = []
    for d in p.distributions:
        version = d.version if isinstance(d.version, str) else None
        if not version:
            continue
        source = d.source if isinstance(d.source, str) else ""
        if source.endswith("conda"):
            build = d.build if isinstance(d.build, str) else ""
            channel = d.channel if isinstance(d.channel, str) else ""
            conda.append(f"[conda] {d.name:<25} {version:<25} {build:<16} {channel}".rstrip())
        elif source.endswith("pip"):
            pip.setdefault(d.name, version)
    rows = [f"[pip3] {name}=={version}" for name, version in sorted(pip.items())] + conda
    return rows or None


def collect_env_text(facts: Facts) -> str:
    """The facts in the layout of ``python -m torch.utils.collect_env`` (without the
    "Collecting environment information..." line); lines torchdoctor cannot fill are left out."""
    lines = []
    for label, value in collect_env_fields(facts):
        if not label:
            lines.append("")
        elif value is not None:
            lines.append(f"{label}: {value}")
    cpu = _cpu_block(facts)
    if cpu is not None:
        lines += ["", "CPU:", cpu]
    packages = _package_rows(facts)
    if packages is not None:
        lines += ["", "Versions of relevant libraries:", *packages]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
    # a value cannot close the ``` fence the block is printed in (the importer drops the ZWSP)
    return text.replace("```", "`" + ZWSP + "``") + "\n"


render = collect_env_text
