"""What the target interpreter knows about itself, without importing torch.

Run as a script by the target interpreter (``python _interp_child.py '<request JSON>'``),
it prints one line ``TORCHDOCTOR-INTERP-JSON: {...}`` on stdout. Imported by torchdoctor,
the same functions run in-process when the target interpreter is the running one.

Standard library only; the syntax stays valid down to Python 3.6 so that an old
interpreter still reports its version (importlib.metadata needs 3.8, or the
``importlib_metadata`` backport). Nothing here imports torch: ``find_spec("torch")`` only
asks the import system where torch would be loaded from.

Request keys (all optional): ``packages`` ({"names": [...], "prefixes": [...]}: scan the
installed distributions), ``module`` (the top-level module whose providers are wanted,
default "torch"), ``translated`` (ask macOS whether this process runs under Rosetta).
"""

# ruff: noqa: UP031, UP022
# (%-formatting and stdout=PIPE keep this file runnable by old interpreters, see above)

import sys

MARKER = "TORCHDOCTOR-INTERP-JSON:"
PROTOCOL = 1
SYSCTL_TIMEOUT_S = 2.0


def _strip_own_directory():
    """Drop this script's directory from sys.path (it is torchdoctor's, not the user's)."""
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    real = os.path.realpath(here)
    if sys.path and sys.path[0] and os.path.realpath(sys.path[0]) in (here, real):
        del sys.path[0]


def safe_text(value):
    """Text that survives JSON and UTF-8: undecodable bytes become backslash escapes.

    ``os.environ`` and file names hold bytes that are not UTF-8 as lone surrogates
    (PEP 383); ``b"\\xff"`` becomes the four characters ``\\xff``.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        value = str(value)
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        pass
    try:
        raw = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        # surrogates that did not come from undecodable bytes: escape them as they are
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def normalize_name(name):
    """PEP 503 normalised distribution name: lower case, runs of -_. become one dash."""
    import re

    return re.sub(r"[-_.]+", "-", name).lower()


def python_info():
    """Version, implementation, pointer size, machine and prefixes of this interpreter."""
    import platform
    import struct

    try:
        libc = list(platform.libc_ver())
    except Exception:  # noqa: BLE001 - platform may fail on exotic systems
        libc = ["", ""]
    return {
        "version": platform.python_version(),
        "implementation": platform.python_implementation(),
        "bits": struct.calcsize("P") * 8,
        "machine": platform.machine(),
        "executable": safe_text(sys.executable or ""),
        "prefix": safe_text(sys.prefix),
        "base_prefix": safe_text(getattr(sys, "base_prefix", sys.prefix)),
        "real_prefix": safe_text(getattr(sys, "real_prefix", None)),
        "platform": sys.platform,
        "libc": libc,
    }


def parse_proc_translated(returncode, stdout, stderr):
    """True/False from ``sysctl -n sysctl.proc_translated``; ValueError when it cannot tell.

    Apple Silicon answers 1 (translated by Rosetta 2) or 0; Intel Macs have no such sysctl
    ("unknown oid"), so nothing there is translated.
    """
    out = (stdout or "").strip()
    if returncode == 0 and out in ("0", "1"):
        return out == "1"
    if "unknown oid" in (stderr or "") or (returncode == 0 and out == ""):
        return False
    raise ValueError(
        "sysctl sysctl.proc_translated gave no answer (exit status %s: %s)"
        % (returncode, (stderr or out).strip()[:200] or "no output")
    )


def _translated():
    """Ask macOS whether *this* process is translated; sysctl inherits our architecture."""
    import subprocess

    try:
        proc = subprocess.run(
            ["sysctl", "-n", "sysctl.proc_translated"],
            check=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=SYSCTL_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return {"error": "sysctl did not answer within %g s" % SYSCTL_TIMEOUT_S}
    except OSError as exc:
        return {"error": "cannot run sysctl: %s" % (exc.strerror or exc)}
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    try:
        return {"value": parse_proc_translated(proc.returncode, out, err)}
    except ValueError as exc:
        return {"error": str(exc)}


def _metadata():
    try:
        from importlib import metadata  # Python >= 3.8
    except ImportError:
        try:
            import importlib_metadata as metadata  # the backport, if installed
        except ImportError:
            return None
    return metadata


def provides_module(top_level_text, record_text, module):
    """Whether a distribution installs the top-level ``module``.

    ``top_level.txt`` (setuptools) names the top-level packages; without it, the RECORD
    (every wheel has one) lists the installed files: ``torch/__init__.py`` or a
    single-file module ``torch.py`` / ``torch.cpython-311-x86_64-linux-gnu.so``.
    """
    if top_level_text is not None:
        return any(line.strip() == module for line in top_level_text.splitlines())
    if record_text is None:
        return False
    package_init = module + "/__init__.py"
    single = module + "."
    for line in record_text.splitlines():
        path = line.split(",", 1)[0].strip().strip('"')
        if path == package_init or (path.startswith(single) and "/" not in path):
            return True
    return False


def scan_distributions(names, prefixes, module="torch"):
    """Relevant installed distributions, in sys.path order, each once per location.

    Returns ``(entries, error)``: entries are dicts with name, version, location and
    provides (the distribution installs ``module``); error is a reason when the scan could
    not run at all.
    """
    metadata = _metadata()
    if metadata is None:
        return None, (
            "importlib.metadata is not available in Python %d.%d (needs 3.8 or the "
            "importlib_metadata backport)" % sys.version_info[:2]
        )
    wanted = {normalize_name(n) for n in names}
    prefixes = tuple(normalize_name(p) for p in prefixes)
    entries = []
    seen = set()
    for dist in metadata.distributions():
        path = getattr(dist, "_path", None)  # pip's leftovers "~orch-2.1.dist-info" are invalid
        if path is not None and str(getattr(path, "name", "")).startswith("~"):
            continue
        try:
            raw_name = dist.metadata["Name"]
        except Exception:  # noqa: BLE001 - a broken METADATA file is skipped, not fatal
            raw_name = None
        if not raw_name:
            continue
        name = normalize_name(str(raw_name))
        try:
            top_level = dist.read_text("top_level.txt")
            record = dist.read_text("RECORD") if top_level is None else None
            provides = provides_module(top_level, record, module)
        except Exception:  # noqa: BLE001 - unreadable metadata files
            provides = False
        if not (provides or name in wanted or name.startswith(prefixes)):
            continue
        try:
            location = safe_text(str(dist.locate_file("")))
        except Exception:  # noqa: BLE001
            location = None
        key = (name, location)
        if key in seen:  # the same directory reached twice through sys.path
            continue
        seen.add(key)
        try:
            version = dist.version
        except Exception:  # noqa: BLE001
            version = None
        entries.append(
            {
                "name": name,
                "version": safe_text(version) if version else None,
                "location": location,
                "provides": bool(provides),
            }
        )
    return entries, None


def find_module(module="torch"):
    """Where ``import module`` would load from, without importing it."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError, AttributeError) as exc:
        return {"path": None, "error": "%s: %s" % (type(exc).__name__, exc)}
    if spec is None:
        return {"path": None, "error": None}
    origin = spec.origin
    if origin in (None, "namespace"):  # a directory without __init__.py (namespace package)
        locations = list(spec.submodule_search_locations or [])
        origin = locations[0] if locations else None
        return {"path": safe_text(origin), "error": None, "namespace": True}
    return {"path": safe_text(origin), "error": None}


def collect(request):
    """The answer to one request (see the module docstring)."""
    report = {"protocol": PROTOCOL, "python": python_info()}
    module = request.get("module") or "torch"
    packages = request.get("packages")
    if packages is not None and sys.version_info[0] < 3:
        reason = "Python %d.%d is too old to be read (needs Python 3)" % sys.version_info[:2]
        report["packages"] = {"distributions": None, "error": reason}
        report["module"] = {"path": None, "error": reason}
    elif packages is not None:
        try:
            entries, error = scan_distributions(
                packages.get("names", ()), packages.get("prefixes", ()), module
            )
        except Exception as exc:  # noqa: BLE001 - a broken sys.path entry costs the list only
            entries, error = None, "the package scan failed: %s: %s" % (type(exc).__name__, exc)
        report["packages"] = {"distributions": entries, "error": error}
        report["module"] = find_module(module)
    if request.get("translated"):
        report["translated"] = _translated()
    return report


def main(argv):
    import json

    try:
        request = json.loads(argv[1]) if len(argv) > 1 else {}
        if not isinstance(request, dict):
            raise TypeError("request is not a JSON object")
        report = collect(request)
    except Exception as exc:  # noqa: BLE001 - report, never a traceback on stdout
        report = {"protocol": PROTOCOL, "error": "%s: %s" % (type(exc).__name__, exc)}
    sys.stdout.write(MARKER + " " + json.dumps(report, ensure_ascii=True) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    _strip_own_directory()
    sys.exit(main(sys.argv))
