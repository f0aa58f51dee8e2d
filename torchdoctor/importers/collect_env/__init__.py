"""Read the text of ``python -m torch.utils.collect_env`` into :class:`~torchdoctor.facts.Facts`.

The report format changed many times between PyTorch 0.4 and 2.x (fields were added, the
package rows went from ``[pip] numpy (1.15.0)`` to ``[pip3] numpy==1.24.1``, a ``CPU:``
section appeared), and people paste it into tickets in every possible way: inside Markdown
fences, quoted, indented, with CRLF endings, with full-width colons, hand-edited, cut short,
twice. This module reads all of that, line by line, with anchored regular expressions only
(no pattern here can backtrack badly, and every line is cut at :data:`MAX_LINE_CHARS`).

What the report does not say is ``Unavailable("not stated in the report")``; nothing is
guessed. A few collect_env conventions *are* statements and are read as such:

- ``PyTorch version: N/A`` means ``import torch`` failed in the interpreter that ran the
  script (collect_env catches ImportError/OSError and prints N/A everywhere torch would have
  answered). If the pip or conda section still lists a distribution that provides torch, the
  import status is ``import-error`` (installed but not importable, corpus case025); if a
  package section was collected and lists none, ``not-installed`` (case027); otherwise
  ``unknown-from-report`` (the import failed, and the report does not say whether torch is
  installed: IPEX's variant without package rows, cases2/case213). An ImportError pasted with
  the report decides instead (cases2/case232: a traceback through site-packages/torch beside a
  pip list without torch).
- ``CUDA used to build PyTorch: None`` / ``Could not collect`` / ``No CUDA`` while torch
  imported means ``torch.version.cuda`` is ``None``: collect_env prints ``Could not collect``
  for every ``None`` and only sometimes rewrites it to ``None`` (corpus case006 and this
  machine's own 2.13.0+cpu report), so ``cuda_build`` is ``None`` (a CPU or ROCm build).
- ``ROCM used to build PyTorch: N/A`` while torch imported means ``torch.version.hip`` is
  ``None``.
- ``GPU models and configuration: No CUDA`` is printed only when nvidia-smi found nothing and
  torch sees no CUDA, so it is read as "no NVIDIA GPU" (``gpu.count == 0``);
  ``Could not collect`` stays unavailable (nvidia-smi may just be missing, e.g. in a container).
- The ``cuDNN version`` line lists libraries found on the system library path, which torch
  wheels and conda packages do not use (they bundle their own; corpus cases 009, 039, 040).
  It is kept as ``system.cudnn_version``. ``torch.cudnn_version`` is taken only from what
  says which cuDNN torch itself uses: the conda build string of the running torch
  (``py3.7_cuda10.1.243_cudnn7.6.3_0``) or the pip ``nvidia-cudnn-cu*`` wheel next to a
  pip-installed torch on Linux.
- torch's own warning ``CUDA initialization: <reason>`` pasted with the report (collect_env's
  stderr) is ``torch.cuda_init_error``. torch prints it when its device count failed, and then
  counts 0 devices (c10 ``device_count()``), so ``is_available()`` was False: where the report
  has no ``Is CUDA available`` line, ``cuda_available`` is False. ``The NVIDIA driver on your
  system is too old (found version 11040)`` states the driver's CUDA version (11.4,
  ``gpu.cuda_driver_version``).
- On a ROCm build (and on macOS) collect_env's GPU line is ``torch.cuda.get_device_name()`` of
  the current device, plus its gcnArchName in parentheses on ROCm
  (``AMD Instinct MI300X (gfx942:sramecc+:xnack-)``): one GPU is named and the count is not
  stated. AMD and Intel GPUs (the ``Intel GPU models onboard`` list of XPU builds) are kept in
  ``gpu.devices`` with their vendor; compute capability and NVIDIA driver are CUDA notions and
  stay unavailable for them.
- On macOS the ``Nvidia driver version`` line is the version of the CUDA kernel extension
  (``kextstat``: com.nvidia.CUDA), not of the NVIDIA display driver, so it is not a
  ``gpu.driver_version``.
- ``Libc version`` comes from ``platform.libc_ver()``, which before Python 3.8 scanned the
  interpreter binary instead of asking the C library (corpus case038 shows glibc-2.3.4 on
  CentOS 7); it is trusted only for Python >= 3.8. The ``-with-glibcX`` of ``Python platform``
  is ``libc_ver(sys.executable)`` on Python 3.8/3.9, again a scan of the binary (a conda
  Python says glibc2.17 on a glibc 2.30 system, cases 115 and 122), so the ``Libc version``
  line wins over it.
- The ``CPU:`` section is ``lscpu`` run under the user's locale, so its labels may be
  translated (``架构：``, ``Processeur(s) :``): they are read through util-linux's own
  translations (``rules/data/lscpu_labels.yaml``, read by :mod:`.cpu`; a table, not patterns).
- ``NCCL version`` is not printed by torch's collect_env; adapted copies of it that print it
  (vectorch-ai/ScaleLLM#288) state ``torch.nccl_version``.

Numbers are read only where they are plausible: a count is at most 9 digits (``_int``), and a
version with a run of more than ``sanitize.MAX_DIGITS`` digits (``PyTorch version: 1000…0``,
5000 digits, which Python and packaging refuse to convert) is not a version. Such a field
becomes unknown with what the report said; it never rejects the whole report.

The package mirrors :mod:`torchdoctor.probes`: :mod:`.scan` is the line scanner (text -> raw
fields), and one module per namespace turns the fields into facts (:mod:`.pytorch`,
:mod:`.gpu`, :mod:`.cpu`, :mod:`.packages`, :mod:`.system`); :mod:`.common` holds the value
helpers they share. The names other modules use are re-exported here.
"""

from __future__ import annotations

from typing import Any, Optional

from torchdoctor.facts import Facts
from torchdoctor.importers.collect_env.common import (
    COULD_NOT_COLLECT,
    IMPLAUSIBLE_VERSION,
    MAX_GPUS,
    MAX_INT_DIGITS,
    MAX_LINE_CHARS,
    MAX_LINES,
    MAX_NAME_CHARS,
    MAX_ROWS,
    MAX_SECTION_LINES,
    NOT_STATED,
    TORCH_NOT_IMPORTED,
    NotAReport,
    Value,
    _bool,
    _int,
    _leading_version,
    _looks_like_path,
    _model,
    _python_tuple,
    _release,
    _Row,
    _said,
    _special,
    _u,
    cudnn_versions,
    same_release,
)
from torchdoctor.importers.collect_env.context import _Ctx
from torchdoctor.importers.collect_env.cpu import _cpu_facts, _lscpu_key, _lscpu_norm
from torchdoctor.importers.collect_env.gpu import _COUNT_PREFIX, _gpu_facts
from torchdoctor.importers.collect_env.packages import (
    _norm_name,
    _packages_facts,
    _read_packages,
    conda_python,
    provides_torch,
)
from torchdoctor.importers.collect_env.pytorch import _read_torch_presence, _torch_facts
from torchdoctor.importers.collect_env.scan import (
    CUDA_INIT_PREFIX,
    MAX_INIT_ERROR_CHARS,
    MIN_REPORT_FIELDS,
    _NON_ALNUM,
    _NOT_LABEL,
    _PARENS,
    _Scan,
    _clean_line,
    _import_error_line,
    _scan,
    cuda_init_warning,
    driver_cuda_version,
    parse_fields,
)
from torchdoctor.importers.collect_env.system import (
    _MACHINES,
    _os_family,
    _platform_parts,
    _python_version,
    _system_facts,
)

__all__ = [
    "COULD_NOT_COLLECT",
    "CUDA_INIT_PREFIX",
    "IMPLAUSIBLE_VERSION",
    "MAX_GPUS",
    "MAX_INIT_ERROR_CHARS",
    "MAX_INT_DIGITS",
    "MAX_LINE_CHARS",
    "MAX_LINES",
    "MAX_NAME_CHARS",
    "MAX_ROWS",
    "MAX_SECTION_LINES",
    "MIN_REPORT_FIELDS",
    "NOT_STATED",
    "TORCH_NOT_IMPORTED",
    "NotAReport",
    "conda_python",
    "cuda_init_warning",
    "cudnn_versions",
    "driver_cuda_version",
    "parse_collect_env",
    "parse_fields",
    "provides_torch",
    "same_release",
]


def __getattr__(name: str) -> Any:
    # the lscpu label table is data, loaded on first use (see .cpu)
    if name == "_LSCPU_LABELS":
        from torchdoctor.importers.collect_env import cpu

        return cpu.lscpu_labels()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def parse_collect_env(text: str) -> Facts:
    """Facts (``origin="report"``) from the text of a collect_env report.

    Raises :class:`NotAReport` when the text has no collect_env field at all.
    """
    scan = _scan(text)
    if not scan.fields and not scan.pip_rows and not scan.conda_rows:
        raise NotAReport("no known field found")
    return _build(scan, _import_error_line(text), cuda_init_warning(text))


def _build(
    scan: _Scan,
    import_error: Optional[tuple[str, str]] = None,
    init_warning: Optional[str] = None,
) -> Facts:
    f = scan.fields
    ctx = _Ctx(scan=scan, fields=f, import_error=import_error, cuda_init_warning=init_warning)
    _read_torch_presence(ctx)
    ctx.python_version = _python_version(f.get("python_version"))
    ctx.os_family = _os_family(f)
    _read_packages(ctx)

    notes = []
    if scan.several_reports:
        notes.append("report: several reports were pasted; only the first complete one was read")
    return Facts(
        origin="report",
        torch=_torch_facts(ctx),
        gpu=_gpu_facts(ctx),
        cpu=_cpu_facts(ctx),
        memory=_u(NOT_STATED),
        env=_u(NOT_STATED),
        packages=_packages_facts(ctx),
        system=_system_facts(ctx),
        notes=notes,
    )
