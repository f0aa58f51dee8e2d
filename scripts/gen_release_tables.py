"""Generate the release tables from the published torch wheels (a development tool, run by hand
when a release appears; its output is committed and reviewed).

    python scripts/gen_release_tables.py fetch [--from 1.6.0]   # PyPI -> tests/data/releases/
    python scripts/gen_release_tables.py build                  # tests/data/releases/ -> tables

``fetch`` reads PyPI's JSON API (https://pypi.org/pypi/torch/json: every release's file list,
upload times, Requires-Python) and, from one wheel per platform of every release, with HTTP
range requests on the zip (scripts/wheelzip.py; nothing installed): the METADATA header
(Requires-Python, Requires-Dist: the ``nvidia-*`` and ``cuda-toolkit`` pins), torch/version.py
(the local label, +cu130), the macOS arm64 wheel's "The MPS backend is supported on MacOS 14.0+"
message in torch/lib/libtorch_cpu.dylib (the minimum macOS MPS accepts), the CUDA_ARCH_FLAGS string of torch/lib/libtorch_python.so (what
``torch.cuda.get_arch_list()`` splits; Linux wheels), and the names torch/backends/**.py define
(scripts/backends_names.py, from the Linux x86_64 wheel). One JSON file per release is written to
tests/data/releases/ (recorded data: small excerpts, no wheel content beyond those).

``build`` is a pure function of that recorded data (tests/test_release_generator.py checks that
the committed outputs equal it):

  rules/data/pypi_wheels.yaml          per release: Python tags per platform (``t`` = free-
                                       threaded), the default wheel's local label, CUDA,
                                       cuda-toolkit and cuDNN pins, the compiled arch lists,
                                       each row with its source; read by torchdoctor.tables
                                       (python_supported, default_cuda, cuDNN of the default).
  rules/lint/data/torch_backends.yaml  the ``since`` of every name: the first recorded release
                                       whose sources define it (never its parent's); the rest of
                                       the file (kinds) comes from torchdoctor.lint.gen_backends.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import fnmatch
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORDED = ROOT / "tests" / "data" / "releases"
PYPI_TABLE = ROOT / "rules" / "data" / "pypi_wheels.yaml"
BACKENDS_TABLE = ROOT / "rules" / "lint" / "data" / "torch_backends.yaml"
FIRST = "1.6.0"
"""The oldest release read: 1.6.0 is the baseline, so that a name present there has no ``since``
(before 1.7, not read further) and a name first in 1.7.0 has since 1.7."""

PLATFORM_GROUPS = (("macos_arm64", "macosx*arm64"), ("macos_x86_64", "macosx*x86_64"),
                   ("windows_x86_64", "win_amd64"), ("linux_x86_64", "linux*x86_64"),
                   ("linux_aarch64", "linux*aarch64"))
"""Platform group of a wheel's platform tag: the first whose marker the tag contains."""

METADATA_FIELDS = ("Metadata-Version", "Name", "Version", "Requires-Python", "Requires-Dist", "Provides-Extra")


def platform_group(filename: str) -> str:
    tag = filename[:-4].split("-")[-1]
    for group, marker in PLATFORM_GROUPS:
        if fnmatch.fnmatch(tag, f"*{marker}*"):
            return group
    return "other"


def python_tag(filename: str) -> str:
    """"3.12", "3.14t" (free-threaded) from a wheel name's ABI tag; "" if none."""
    m = re.search(r"-cp(\d)(\d+)-(?:cp\d+(t?)m?u?|abi3|none)-", filename)
    return f"{m.group(1)}.{m.group(2)}{m.group(3) or ''}" if m else ""


def _version_key(text: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


# ------------------------------------------------------------------------------------------
# fetch (network)


def _choose(files: list) -> dict:
    """Wheels per platform group, best first: cp312 if there is one, then the newest
    non-free-threaded (a later one is read when one has no METADATA: 1.7.0's cp38m Windows wheel)."""
    out: dict = {}
    for group in [g for g, _ in PLATFORM_GROUPS]:
        cands = [f for f in files if platform_group(f["filename"]) == group and python_tag(f["filename"])
                 and not python_tag(f["filename"]).endswith("t")]
        if cands:
            cands.sort(key=lambda f: (python_tag(f["filename"]) == "3.12", _version_key(python_tag(f["filename"]))))
            out[group] = cands[::-1]
    return out


def _url(entry: dict) -> str:
    url = entry["url"]
    if "://" not in url:
        url = "https://files.pythonhosted.org/" + url.split("packages/", 1)[1]
    return url


def fetch_release(version: str, files: list) -> dict:
    import backends_names
    import wheelzip

    wheels = [f for f in files if f["filename"].endswith(".whl")]
    record: dict = {
        "release": version,
        "source": f"https://pypi.org/project/torch/{version}/ (JSON API file list; wheel members read with HTTP range "
                  f"requests, {datetime.date.today().isoformat()})",
        "uploaded": sorted({f["upload_time"][:10] for f in wheels}),
        "requires_python": sorted({f.get("requires_python") or "" for f in wheels} - {""}),
        "files": sorted(f["filename"] for f in wheels),
        "wheels": {},
    }
    for group, candidates in _choose(wheels).items():
        for entry in candidates:
            zf = wheelzip.RemoteWheel(_url(entry), entry["size"])
            meta_name = next((n for n in zf.members if n.endswith(".dist-info/METADATA")), None)
            if meta_name is not None:
                break
            print(f"{entry['filename']}: no .dist-info/METADATA, trying the next wheel", file=sys.stderr)
        else:
            continue
        tag = entry["filename"][:-4].split("-")[-1]
        header = zf.read(meta_name).decode("utf-8", "replace").split("\n\n", 1)[0]
        wheel: dict = {"wheel": entry["filename"], "platform": group,
                       "METADATA": [x for x in header.splitlines() if x.split(":", 1)[0] in METADATA_FIELDS]}
        if "torch/version.py" in zf.members:
            wheel["torch/version.py"] = zf.read("torch/version.py").decode("utf-8", "replace").splitlines()
        if group.startswith("linux") and "torch/lib/libtorch_python.so" in zf.members:
            wheel["libtorch_python.so CUDA_ARCH_FLAGS"] = wheelzip.arch_flags(zf, "torch/lib/libtorch_python.so")
        if group == "macos_arm64" and "torch/lib/libtorch_cpu.dylib" in zf.members:
            wheel["libtorch_cpu.dylib MPS message"] = wheelzip.strings(
                zf, "torch/lib/libtorch_cpu.dylib", rb"MPS backend is supported on Mac[Oo][Ss] [0-9.]+\+?")
        if group == "linux_x86_64":
            sources = {n: zf.read(n).decode("utf-8", "replace") for n in zf.members
                       if n.startswith("torch/backends/") and n.endswith(".py")}
            record["torch.backends"] = {"wheel": entry["filename"], "files": sorted(sources),
                                        "names": backends_names.release_names(sources)}
        record["wheels"][tag] = wheel
    return record


def fetch(first: str, only: list, workers: int) -> int:
    import wheelzip

    index = json.loads(wheelzip.get("https://pypi.org/pypi/torch/json"))
    versions = sorted((v for v, files in index["releases"].items()
                       if re.fullmatch(r"\d+\.\d+\.\d+", v) and files and _version_key(v) >= _version_key(first)
                       and (not only or v in only)), key=_version_key)
    RECORDED.mkdir(parents=True, exist_ok=True)

    def one(version: str) -> str:
        record = fetch_release(version, index["releases"][version])
        path = RECORDED / f"torch-{version}.json"
        path.write_text(json.dumps(record, indent=1, sort_keys=False) + "\n", encoding="utf-8")
        return f"{version}: {len(record['files'])} files, platforms {sorted(record['wheels'])}"

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(one, v): v for v in versions}
        for fut in concurrent.futures.as_completed(futures):
            try:
                print(fut.result(), flush=True)
            except Exception as exc:  # noqa: BLE001 - report and go on with the other releases
                failed += 1
                print(f"{futures[fut]}: FAILED {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    return 1 if failed else 0


# ------------------------------------------------------------------------------------------
# build (pure: recorded data -> tables)

def build(check: bool) -> int:
    from gen_release_build import build_backends_since, build_pypi_table, load_recorded, render_backends_table

    records = load_recorded(RECORDED)
    outputs = {PYPI_TABLE: build_pypi_table(records),
               BACKENDS_TABLE: render_backends_table(BACKENDS_TABLE.read_text(encoding="utf-8"),
                                                     build_backends_since(records), records[-1]["release"])}
    stale = 0
    for path, text in outputs.items():
        if (path.read_text(encoding="utf-8") if path.exists() else None) != text:
            stale += 1
            if check:
                print(f"{path.relative_to(ROOT)} differs from the generator's output", file=sys.stderr)
            else:
                path.write_text(text, encoding="utf-8")
                print(f"wrote {path.relative_to(ROOT)}")
    return 1 if check and stale else 0


def main(argv: list | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("--from", dest="first", default=FIRST)
    f.add_argument("--only", nargs="*", default=[])
    f.add_argument("--workers", type=int, default=4)
    b = sub.add_parser("build")
    b.add_argument("--check", action="store_true", help="exit 1 if a committed table differs; write nothing")
    args = parser.parse_args(argv)
    if args.command == "fetch":
        return fetch(args.first, args.only, args.workers)
    return build(args.check)


if __name__ == "__main__":
    sys.exit(main())
