"""Read the torch facts of an interpreter: run as a script by that interpreter, or in-process.

As a script (``python _torch_child.py [--dump-after SECONDS]``) it imports torch and prints
ONE JSON object on stdout whose keys are :class:`torchdoctor.facts.TorchFacts` fields. A
failed ``import torch`` is printed as such (``import_status`` ``not-installed`` or
``import-error`` with the missing library or symbol); a crash or a hang is classified by the
parent from the signal and from the ``torchdoctor-child: phase=...`` lines and the
faulthandler dump this script writes on stderr.

In-process, :func:`read_facts` reads an already imported torch (``torchdoctor.audit()``).

Constraints: standard library only, Python >= 3.8, never imports torchdoctor (it runs under
the *target* interpreter, which may not have torchdoctor or pydantic), nothing slow beyond
``import torch`` (no subprocess, no collect_env), no tensor is ever created, and every item
is read in its own ``try`` so one failure costs one field: ``{"unavailable": "<reason>"}``.
Every API is feature-tested, so torch 0.4 ... 2.13 all work. Its sibling helpers
(``_child_settings.py``: settings read back through the getters of ``rules/settings.yaml``;
``_child_parse.py``: import failures and version strings) keep the same constraints.
"""

import sys

if __name__ == "__main__":
    # Running as a script puts this file's directory first on sys.path, where sibling
    # modules (cpu.py, env.py, ...) would shadow what torch imports. Drop it before
    # importing anything that is not already loaded (os is: site imported it).
    import os as _os

    _here = _os.path.dirname(_os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if _os.path.abspath(p or _os.curdir) != _here]

import json
import os
import signal
import re
import types
import warnings

PHASE_PREFIX = "torchdoctor-child: phase="


def _sibling(name):
    """A helper module beside this file: imported from the package in-process, loaded by
    path as a script (this directory is not on sys.path then, see above)."""
    if __package__:
        import importlib

        return importlib.import_module(__package__ + "." + name)
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name + ".py")
    spec = importlib.util.spec_from_file_location("torchdoctor_child_" + name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_settings = _sibling("_child_settings")  # reading settings through the registry's getters
_ABSENT, _unavailable, _first_line, _try = (
    _settings.ABSENT, _settings._unavailable, _settings._first_line, _settings._try)
_jsonable, _enum_name, _lookup, _resolve = (
    _settings._jsonable, _settings._enum_name, _settings._lookup, _settings._resolve)
_parse = _sibling("_child_parse")  # parsing torch's printed text (import failures, versions)
_dotted_version, _cudnn_int_version, _nccl_int_version = (
    _parse._dotted_version, _parse._cudnn_int_version, _parse._nccl_int_version)
_config_version, _mkl_version, _mkldnn_version, _openmp_version = (
    _parse._config_version, _parse._mkl_version, _parse._mkldnn_version, _parse._openmp_version)
_missing_library, _missing_symbol, import_failure, failure_from_text, namespace_failure = (
    _parse._missing_library, _parse._missing_symbol, _parse.import_failure,
    _parse.failure_from_text, _parse.namespace_failure)


def read_settings(torch, getters=None):
    """Current value of every real setting the running torch has, by settings key, read
    through the getters of the settings registry (``rules/settings.yaml``; ``getters``: the
    ``[(key, getter)]`` of a registry already loaded)."""
    return _settings.read(torch, getters)


def _config_show(torch):
    cfg = getattr(torch, "__config__", None)
    if cfg is None or not hasattr(cfg, "show"):
        return None
    return cfg.show()


def _parallel_info(torch):
    cfg = getattr(torch, "__config__", None)
    if cfg is None or not hasattr(cfg, "parallel_info"):
        return None
    return cfg.parallel_info()


def _cpu_capability(torch, show):
    cpu = getattr(getattr(torch, "backends", None), "cpu", None)
    if cpu is not None and hasattr(cpu, "get_cpu_capability"):
        return cpu.get_cpu_capability()
    if isinstance(show, str):
        m = re.search(r"CPU capability usage: (\S+)", show)
        if m:
            return m.group(1)
    return _unavailable("this torch version does not report its CPU capability")


def _cudnn_module(torch):
    cudnn = getattr(getattr(torch, "backends", None), "cudnn", None)
    if cudnn is None:
        return None, None
    inner = cudnn.__dict__.get("m") if isinstance(cudnn, types.ModuleType) else None
    source = inner if isinstance(inner, types.ModuleType) else cudnn
    return cudnn, vars(source).get("_cudnn", _ABSENT)


def _cudnn_runtime(torch):
    cudnn, lib = _cudnn_module(torch)
    if cudnn is None:
        return _unavailable("this torch has no torch.backends.cudnn")
    if lib is None:
        return None  # built without cuDNN
    if lib is not _ABSENT and hasattr(lib, "getRuntimeVersion"):
        # the loaded library's own version; version() would also raise on a compile/runtime
        # mismatch, which is a fact for the rules to judge, not a reason to lose the version
        return _dotted_version(lib.getRuntimeVersion())
    v = cudnn.version()
    return None if v is None else _cudnn_int_version(v)


def _cudnn_compiled(torch):
    cudnn, lib = _cudnn_module(torch)
    if cudnn is None:
        return _unavailable("this torch has no torch.backends.cudnn")
    if lib is None:
        return None  # built without cuDNN
    if lib is _ABSENT:
        lib = getattr(getattr(torch, "_C", None), "_cudnn", None)
    if lib is None or not hasattr(lib, "getCompileVersion"):
        if hasattr(cudnn, "is_available") and not cudnn.is_available():
            return None
        return _unavailable(
            "this torch version does not report the cuDNN version it was built with"
        )
    return _dotted_version(lib.getCompileVersion())


def _nccl_version(torch):
    if not hasattr(torch._C, "_nccl_version"):
        return None  # built without NCCL (CPU, macOS, Windows)
    from torch.cuda import nccl

    v = nccl.version()
    if isinstance(v, (tuple, list)):
        head = _dotted_version(v[:3])
        return head + (str(v[3]) if len(v) > 3 and v[3] else "")
    return _nccl_int_version(v)


def _arch_list(torch):
    flags = getattr(torch._C, "_cuda_getArchFlags", None)
    if flags is not None:  # compiled-in; unlike get_arch_list() it does not need a GPU
        value = flags()
        return value.split() if value else []
    cuda = getattr(torch, "cuda", None)
    if cuda is not None and hasattr(cuda, "get_arch_list"):
        return list(cuda.get_arch_list())
    return _unavailable("this torch version does not report its compiled GPU architectures")


def _device(torch, index):
    dev = {"index": index}
    try:
        props = torch.cuda.get_device_properties(index)
    except Exception as exc:  # noqa: BLE001
        reason = f"torch.cuda.get_device_properties({index}) failed: {_first_line(exc)}"
        for k in ("name", "compute_capability", "total_memory_bytes", "multi_processor_count"):
            dev[k] = _unavailable(reason)
        return dev
    dev["name"] = _try("device name", lambda: str(props.name))
    dev["compute_capability"] = _try(
        "compute capability", lambda: float(f"{int(props.major)}.{int(props.minor)}")
    )
    dev["total_memory_bytes"] = _try("total memory", lambda: int(props.total_memory))
    dev["multi_processor_count"] = _try("SM count", lambda: int(props.multi_processor_count))
    return dev


_IGNORED_WARNINGS = (DeprecationWarning, PendingDeprecationWarning, FutureWarning, ImportWarning)


def _read_cuda(torch, init_cuda):
    """cuda_available, device_count, devices, cuda_init_error.

    Warnings CUDA initialisation emits (driver too old, GPU too old or too new for the
    build) are recorded as ``cuda_init_error``. Devices are read through
    get_device_properties only: it initialises CUDA, and no tensor is created.
    """
    out = {}
    cuda = getattr(torch, "cuda", None)
    if cuda is None:
        reason = "this torch has no torch.cuda"
        return {
            k: _unavailable(reason)
            for k in ("cuda_available", "device_count", "devices", "cuda_init_error")
        }
    # without CUDA compiled in, is_available() touches no driver and is always safe
    compiled = hasattr(getattr(torch, "_C", None), "_cuda_getDeviceCount")
    initialised = hasattr(cuda, "is_initialized") and _try("", cuda.is_initialized) is True
    if not init_cuda and compiled and not initialised:
        reason = (
            "CUDA is not initialised in this process and torchdoctor does not initialise it here"
        )
        return {
            k: _unavailable(reason)
            for k in ("cuda_available", "device_count", "devices", "cuda_init_error")
        }
    messages = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out["cuda_available"] = _try("torch.cuda.is_available()", lambda: bool(cuda.is_available()))
        out["device_count"] = _try("torch.cuda.device_count()", lambda: int(cuda.device_count()))
        if out["cuda_available"] is True:
            count = out["device_count"] if isinstance(out["device_count"], int) else 0
            devices = [_device(torch, i) for i in range(count)]
            for dev in devices:
                reason = dev.get("name")
                if isinstance(reason, dict) and reason.get("unavailable") not in messages:
                    messages.append(reason["unavailable"])
            out["devices"] = devices
        else:
            out["devices"] = []
    for w in caught:
        if issubclass(w.category, _IGNORED_WARNINGS):
            continue
        text = str(w.message).strip()
        if text and text not in messages:
            messages.append(text)
    out["cuda_init_error"] = "\n".join(messages) if messages else None
    return out


def read_facts(torch, init_cuda=True, phase=None, getters=None):
    """Every TorchFacts field (but python_executable) of an imported torch, as JSON-able data.

    ``init_cuda=False`` (in-process use) reads CUDA devices only when CUDA is already
    initialised: initialising it in a user's process would break fork-based workers.
    ``phase(name)`` is called before the CUDA part ("cuda") and the rest ("read");
    ``getters``: the settings registry's, when the caller has it loaded (see read_settings).
    """
    phase = phase or (lambda name: None)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _read_facts(torch, init_cuda, phase, getters)


def _read_facts(torch, init_cuda, phase, getters=None):
    version = getattr(torch, "version", None)
    facts = {
        "import_status": "ok",
        "import_error": None,
        "missing_library": None,
        "missing_symbol": None,
        "signal": None,
    }
    facts["version"] = _try("torch.__version__", lambda: str(torch.__version__))
    facts["git_version"] = _try(
        "torch.version.git_version", lambda: _opt_str(getattr(version, "git_version", None))
    )
    facts["debug_build"] = _try(
        "torch.version.debug", lambda: bool(getattr(version, "debug", False))
    )
    facts["module_path"] = _try(
        "torch.__file__", lambda: os.path.dirname(os.path.abspath(torch.__file__))
    )
    facts["cuda_build"] = _try(
        "torch.version.cuda", lambda: _opt_str(getattr(version, "cuda", None))
    )
    facts["hip_build"] = _try("torch.version.hip", lambda: _opt_str(getattr(version, "hip", None)))
    facts["xpu_build"] = _try("torch.version.xpu", lambda: _opt_str(getattr(version, "xpu", None)))
    facts["arch_list"] = _try("reading the compiled GPU architectures", lambda: _arch_list(torch))

    phase("cuda")
    facts.update(_read_cuda(torch, init_cuda))
    phase("read")

    facts["cudnn_version"] = _try(
        "reading the cuDNN runtime version", lambda: _cudnn_runtime(torch)
    )
    facts["cudnn_compiled_version"] = _try(
        "reading the cuDNN build version", lambda: _cudnn_compiled(torch)
    )
    facts["nccl_version"] = _try("torch.cuda.nccl.version()", lambda: _nccl_version(torch))

    backends = getattr(torch, "backends", None)
    mps = getattr(backends, "mps", None)
    facts["mps_built"] = _try(
        "torch.backends.mps.is_built()",
        lambda: bool(mps.is_built()) if hasattr(mps, "is_built") else False,
    )
    facts["mps_available"] = _try(
        "torch.backends.mps.is_available()",
        lambda: bool(mps.is_available()) if hasattr(mps, "is_available") else False,
    )
    xpu = getattr(torch, "xpu", None)
    facts["xpu_available"] = _try(
        "torch.xpu.is_available()",
        lambda: bool(xpu.is_available()) if hasattr(xpu, "is_available") else False,
    )

    show = _try("torch.__config__.show()", lambda: _config_show(torch))
    info = _try("torch.__config__.parallel_info()", lambda: _parallel_info(torch))
    facts["cpu_capability"] = _try(
        "torch.backends.cpu.get_cpu_capability()", lambda: _cpu_capability(torch, show)
    )
    hip = facts["hip_build"]
    rocm = None if isinstance(hip, dict) else bool(hip)  # None: unknown whether ROCm
    facts["hip_runtime_version"] = _from_text(
        show, "torch.__config__.show()", _config_version("HIP Runtime"), rocm
    )
    facts["miopen_version"] = _from_text(
        show, "torch.__config__.show()", _config_version("MIOpen"), rocm
    )
    cpu_mod = getattr(torch, "cpu", None)
    if cpu_mod is not None and hasattr(cpu_mod, "get_capabilities"):
        facts["cpu_capabilities"] = _try(
            "torch.cpu.get_capabilities()", lambda: _jsonable(dict(cpu_mod.get_capabilities()))
        )
    else:
        facts["cpu_capabilities"] = _unavailable(
            "this torch version has no torch.cpu.get_capabilities()"
        )

    mkl = getattr(backends, "mkl", None)
    facts["mkl_available"] = _try(
        "torch.backends.mkl.is_available()", lambda: bool(mkl.is_available())
    )
    facts["mkl_version"] = _from_text(
        show, "torch.__config__.show()", _mkl_version, facts["mkl_available"]
    )
    mkldnn = getattr(backends, "mkldnn", None)
    facts["mkldnn_available"] = _try(
        "torch.backends.mkldnn.is_available()", lambda: bool(mkldnn.is_available())
    )
    facts["mkldnn_version"] = _from_text(
        show, "torch.__config__.show()", _mkldnn_version, facts["mkldnn_available"]
    )
    openmp = getattr(backends, "openmp", None)
    facts["openmp_available"] = _try(
        "torch.backends.openmp.is_available()", lambda: bool(openmp.is_available())
    )
    facts["openmp_version"] = _from_text(
        info, "torch.__config__.parallel_info()", _openmp_version, facts["openmp_available"]
    )

    facts["num_threads"] = _try("torch.get_num_threads()", lambda: int(torch.get_num_threads()))
    facts["num_interop_threads"] = _getter(torch, "get_num_interop_threads", int)
    facts["float32_matmul_precision"] = _getter(torch, "get_float32_matmul_precision", str)
    if hasattr(torch, "are_deterministic_algorithms_enabled"):
        facts["deterministic_algorithms"] = _getter(
            torch, "are_deterministic_algorithms_enabled", bool
        )
    else:
        facts["deterministic_algorithms"] = _getter(torch, "is_deterministic", bool)  # 1.7
    if hasattr(torch, "is_deterministic_algorithms_warn_only_enabled"):
        facts["deterministic_warn_only"] = _getter(
            torch, "is_deterministic_algorithms_warn_only_enabled", bool
        )
    elif isinstance(facts["deterministic_algorithms"], bool):
        facts["deterministic_warn_only"] = False  # before 1.11 there was no warn-only mode
    else:
        facts["deterministic_warn_only"] = facts["deterministic_algorithms"]
    facts["settings"] = _try("reading torch settings", lambda: read_settings(torch, getters))
    facts.update(_loaded_libraries_or_reason(torch))
    return facts


def _loaded_libraries_or_reason(torch):
    try:
        return read_loaded_libraries(torch)
    except Exception as exc:  # noqa: BLE001 - one failure costs these two fields
        reason = _unavailable("reading the loaded libraries failed: " + _first_line(exc))
        return {"wheel_library_dirs": reason, "loaded_libraries": reason}


def _opt_str(value):
    return None if value is None else str(value)


def _getter(torch, name, cast):
    fn = getattr(torch, name, None)
    if fn is None:
        return _unavailable(f"this torch version has no torch.{name}()")
    return _try(f"torch.{name}()", lambda: cast(fn()))


def _from_text(text, source, parse, available):
    if isinstance(text, dict):  # the text itself could not be read
        return text
    if available is False:
        return None
    if text is None:
        return _unavailable("this torch version has no {}".format(source.rsplit("(", 1)[0]))
    return _try(f"parsing {source}", lambda: parse(text))


# --------------------------------------------------------------------------------------
# native libraries loaded (Linux: /proc/self/maps)
# --------------------------------------------------------------------------------------

MAPS_PATH = "/proc/self/maps"
MAPS_LIMIT = 16 * 1024 * 1024  # a CUDA process maps ~1-2 MB of text; more is not a real process
MAX_LIBRARIES = 128
MAX_SEARCH_DIRS = 64  # sys.path entries, nvidia/* subpackages, LD_LIBRARY_PATH entries
MAX_DIR_ENTRIES = 4096  # names read from one directory
METADATA_LIMIT = 1024 * 1024
ENV_LIMIT = 64 * 1024

# Recorded wherever they were loaded from, even when torch's wheel ships no copy of them (a conda
# environment's libgomp or libiomp5, a system cuDNN): the libraries whose copy decides whether
# torch works. Any library torch's wheel directories ship is recorded as well.
RECORDED_FAMILIES = (
    "libcudnn",
    "libcublas",
    "libnccl",
    "libnvJitLink",
    "libcusparse",
    "libcudart",
    "libgomp",
    "libiomp5",
    "libomp",
)

_HEX = frozenset("0123456789abcdef")


def library_family(filename):
    """The library a file is a copy of: ``libcudnn_ops.so.9.1.0`` -> ``libcudnn_ops``,
    ``libgomp-a34b3233.so.1`` -> ``libgomp`` (auditwheel's hash suffix dropped); None for a
    name that is not ``<name>.so[.<version>]``."""
    i = filename.find(".so")
    while i != -1:
        end = i + 3
        if end == len(filename) or filename[end] == ".":
            break
        i = filename.find(".so", end)
    if i <= 0:
        return None
    stem = filename[:i]
    if len(stem) > 9 and stem[-9] == "-" and all(c in _HEX for c in stem[-8:]):
        stem = stem[:-9]
    return stem


def _mapped_files():
    """Distinct files mapped into this process, in address order (at most MAPS_LIMIT bytes
    of /proc/self/maps are read). The kernel names each file by its resolved path."""
    with open(MAPS_PATH, "rb") as f:
        data = f.read(MAPS_LIMIT)
    seen = set()
    out = []
    for raw in data.split(b"\n"):
        parts = raw.split(None, 5)
        if len(parts) < 6:
            continue
        path = os.fsdecode(parts[5])
        if path.endswith(" (deleted)"):  # replaced on disk since it was loaded
            path = path[: -len(" (deleted)")]
        if not path.startswith("/") or path in seen:
            continue
        seen.add(path)
        out.append(path)
    return out


def _listdir(path):
    """Up to MAX_DIR_ENTRIES names in a directory, [] when it cannot be read."""
    names = []
    try:
        with os.scandir(path) as it:
            for entry in it:
                names.append(entry.name)
                if len(names) >= MAX_DIR_ENTRIES:
                    break
    except OSError:
        return []
    return names


def _real_dir(path):
    try:
        return os.path.realpath(path) if os.path.isdir(path) else None
    except (OSError, ValueError):
        return None


def _torch_dir(torch):
    """Directory of the torch package: the imported module's, else where import would find it
    (after a failed import)."""
    path = getattr(torch, "__file__", None) if torch is not None else None
    if not path:
        import importlib.util

        spec = importlib.util.find_spec("torch")
        path = spec.origin if spec is not None else None
        if not path or path in ("namespace", "built-in"):
            return None
    return os.path.dirname(os.path.abspath(path))


def _requires_nvidia_wheels(site):
    """Whether a torch-*.dist-info in ``site`` requires nvidia-* distributions (the PyPI CUDA
    wheels do; conda builds and the self-contained wheels of download.pytorch.org do not)."""
    for name in _listdir(site):
        if not (name.startswith("torch-") and name.endswith(".dist-info")):
            continue
        try:
            with open(os.path.join(site, name, "METADATA"), "rb") as f:
                head = f.read(METADATA_LIMIT).split(b"\n\n", 1)[0]
        except OSError:
            continue
        for line in head.splitlines():
            if line.lower().startswith(b"requires-dist:"):
                req = line.split(b":", 1)[1].strip().lower()
                if req.startswith(b"nvidia-"):
                    return True
    return False


def _nvidia_lib_dirs():
    """``nvidia/*/lib`` (and ``cusparselt/lib``) on sys.path: where the nvidia-* wheels put
    their libraries and where torch/__init__.py preloads them from."""
    dirs = []
    for entry in sys.path[:MAX_SEARCH_DIRS]:
        if not isinstance(entry, str) or not entry:
            continue
        base = os.path.join(entry, "nvidia")
        for sub in sorted(_listdir(base))[:MAX_SEARCH_DIRS]:
            dirs.append(os.path.join(base, sub, "lib"))
        dirs.append(os.path.join(entry, "cusparselt", "lib"))
    out = []
    for d in dirs:
        real = _real_dir(d)
        if real is not None and real not in out:
            out.append(real)
    return out


def _env_entries(name, seps):
    value = os.environ.get(name) or ""
    value = value[:ENV_LIMIT]
    for sep in seps[1:]:
        value = value.replace(sep, seps[0])
    return [e for e in value.split(seps[0]) if e][:MAX_SEARCH_DIRS]


def _library_path_dirs():
    """LD_LIBRARY_PATH's directories: (as written, resolved, names in it), readable ones only."""
    out = []
    for entry in _env_entries("LD_LIBRARY_PATH", (":",)):
        real = _real_dir(entry)
        if real is not None:
            out.append((entry, real, _listdir(entry)))
    return out


def _found_via(path, family, preload, ld_dirs):
    """Which loader input put ``path`` there: LD_PRELOAD, LD_LIBRARY_PATH or None (the loader
    cache, a default directory, or a library that loaded it by its path)."""
    for entry in preload:
        if "/" in entry:
            try:
                if os.path.realpath(entry) == path:
                    return "LD_PRELOAD"
            except (OSError, ValueError):
                continue
        elif library_family(entry) == family:
            return "LD_PRELOAD"
    here = os.path.dirname(path)
    for entry, real, names in ld_dirs:
        if real == here:
            return "LD_LIBRARY_PATH"
        for name in names:  # a link in the entry to a file elsewhere
            if library_family(name) == family:
                try:
                    if os.path.realpath(os.path.join(entry, name)) == path:
                        return "LD_LIBRARY_PATH"
                except (OSError, ValueError):
                    continue
    return None


def _same_soname(path, bundled):
    """A loaded file answers to the bundled copy's soname: the wheels name each library file by
    its soname (libgomp.so.1); another install's file is that name or a longer version of it
    (libgomp.so.1.0.0), while a hash-renamed private copy (libgomp-a34b3233.so.1) is not."""
    name = os.path.basename(path)
    want = os.path.basename(bundled)
    return name == want or name.startswith(want + ".")


SAME_BUILD_PREFIX = 64 * 1024  # ELF header, program headers and the GNU build-id note


def _same_build(a, b):
    """Two files are the same build: equal sizes and equal first SAME_BUILD_PREFIX bytes (a
    copy of torch's own library elsewhere, or another wheel's copy with the same auditwheel
    hash, which is taken from the file's content)."""
    try:
        if os.path.getsize(a) != os.path.getsize(b):
            return False
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read(SAME_BUILD_PREFIX) == fb.read(SAME_BUILD_PREFIX)
    except (OSError, ValueError):
        return False


def read_loaded_libraries(torch):
    """``wheel_library_dirs`` and ``loaded_libraries``: which copies of the libraries torch's
    wheel ships (and of RECORDED_FAMILIES) this process loaded, and from where."""
    if not sys.platform.startswith("linux"):
        reason = "only Linux lists the libraries a process loaded (/proc/self/maps)"
        return {k: _unavailable(reason) for k in ("wheel_library_dirs", "loaded_libraries")}
    out = {}
    try:
        mapped = _mapped_files()
    except Exception as exc:  # noqa: BLE001
        reason = "reading {} failed: {}".format(MAPS_PATH, _first_line(exc))
        mapped = None
    torch_dir = _try("finding the torch package", lambda: _torch_dir(torch))
    if isinstance(torch_dir, dict) or torch_dir is None:
        dirs_reason = "the torch package directory is unknown"
        if isinstance(torch_dir, dict):
            dirs_reason = torch_dir["unavailable"]
        out["wheel_library_dirs"] = _unavailable(dirs_reason)
        out["loaded_libraries"] = _unavailable(dirs_reason if mapped is not None else reason)
        return out
    site = os.path.dirname(torch_dir)
    own = []
    for d in (os.path.join(torch_dir, "lib"), os.path.join(site, "torch.libs")):
        real = _real_dir(d)
        if real is not None and real not in own:
            own.append(real)
    nvidia = _nvidia_lib_dirs()
    uses_nvidia = bool(nvidia) and (
        _requires_nvidia_wheels(site)
        or any(os.path.dirname(p) in nvidia for p in (mapped or []))
    )
    if uses_nvidia:
        own += [d for d in nvidia if d not in own]
    out["wheel_library_dirs"] = own
    if mapped is None:
        out["loaded_libraries"] = _unavailable(reason)
        return out

    bundled = {}
    for d in own:
        for name in sorted(_listdir(d), key=lambda n: (len(n), n)):
            family = library_family(name)
            if family is not None and family not in bundled:
                bundled[family] = os.path.join(d, name)
    preload = _env_entries("LD_PRELOAD", (" ", ":", "\t"))
    ld_dirs = _library_path_dirs()
    libraries = []
    for path in mapped:
        family = library_family(os.path.basename(path))
        if family is None:
            continue
        copy = bundled.get(family)
        if copy is None and not family.startswith(RECORDED_FAMILIES):
            continue
        wheel = os.path.dirname(path) in own
        via = _found_via(path, family, preload, ld_dirs)
        libraries.append(
            {
                "name": family,
                "path": path,
                "source": "wheel" if wheel else "other",
                "bundled_path": path if wheel else copy,
                "shadows_bundled": bool(
                    not wheel
                    and copy is not None
                    and (via == "LD_PRELOAD" or _same_soname(path, copy))
                    and not _same_build(path, copy)
                ),
                "found_via": via,
            }
        )
        if len(libraries) >= MAX_LIBRARIES:
            break
    out["loaded_libraries"] = libraries
    return out


# --------------------------------------------------------------------------------------
# import failures
# --------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------
# script
# --------------------------------------------------------------------------------------


def _phase(name):
    try:
        sys.stderr.write(PHASE_PREFIX + name + "\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001
        pass


def _main(argv):
    dump_after = None
    if len(argv) >= 2 and argv[0] == "--dump-after":
        try:
            dump_after = float(argv[1])
        except ValueError:
            dump_after = None
    try:
        import faulthandler

        faulthandler.enable(file=sys.stderr)  # a crash leaves the Python stack on stderr
        if dump_after and dump_after > 0:
            faulthandler.dump_traceback_later(dump_after, exit=False)  # a hang does too
    except Exception:  # noqa: BLE001
        pass
    if dump_after and dump_after > 0 and hasattr(signal, "alarm"):
        # Our own deadline: if the parent dies (SIGTERM) while import torch hangs, SIGALRM's
        # default action ends this process instead of leaving it orphaned for good.
        try:
            signal.alarm(int(dump_after) + 10)
        except Exception:  # noqa: BLE001
            pass

    # Whatever torch or its dependencies print goes to stderr; stdout carries our JSON only.
    real_stdout = sys.stdout
    saved_fd = None
    try:
        real_stdout.flush()
        saved_fd = os.dup(1)
        os.dup2(2, 1)
    except Exception:  # noqa: BLE001
        saved_fd = None
    sys.stdout = sys.stderr

    result = {"python_executable": sys.executable}
    _phase("import")
    try:
        import torch
    except (Exception, SystemExit) as exc:  # noqa: BLE001
        result.update(import_failure(exc))
        # what the failed import had loaded by then: a copy from LD_LIBRARY_PATH is often why
        result.update(_loaded_libraries_or_reason(None))
    else:
        failure = namespace_failure(torch)
        if failure is not None:
            result.update(failure)
        else:
            try:
                result.update(read_facts(torch, phase=_phase))
            except Exception as exc:  # noqa: BLE001 - a bug here must still answer
                result.update(
                    {
                        "import_status": "error",
                        "import_error": "torchdoctor child: " + _first_line(exc),
                    }
                )
    _phase("done")
    try:
        import faulthandler

        faulthandler.cancel_dump_traceback_later()
        if hasattr(signal, "alarm"):
            signal.alarm(0)
    except Exception:  # noqa: BLE001
        pass

    sys.stdout = real_stdout
    if saved_fd is not None:
        try:
            sys.stderr.flush()
            os.dup2(saved_fd, 1)
        except Exception:  # noqa: BLE001
            pass
    text = json.dumps(result, default=str, sort_keys=True)
    real_stdout.write(text + "\n")
    real_stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: CUDA, NCCL and OpenMP threads sometimes hang or crash there,
    # and the answer is already out.
    os._exit(0)


if __name__ == "__main__":
    _main(sys.argv[1:])
