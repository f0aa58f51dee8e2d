#!/usr/bin/env python3
"""A mutation check of the new code (issue 17): lint, bench, distributed, the paste readers, the
sandbox and the rule cache (plus the leaves they rely on: redaction, bounded reading, the
collect_env GPU list).

Each mutant in :data:`MUTANTS` is a plausible bug written as data: the file, the exact original
snippet, its replacement, the tests that should notice, and one line saying what the bug is.
The script copies the repository (the files ``git ls-files`` lists, tracked and untracked but
not ignored) into a temporary directory, checks that the named tests pass there unmutated (the
baseline), then for each mutant writes the replacement into the COPY, runs the named tests
with a timeout and restores the file. The working tree it was started from is never written.

A mutant is *killed* when its tests fail (or time out), *survived* when they pass, *stale*
when its snippet is no longer in the file (the code moved on: update the catalogue), and
*ambiguous* when the snippet occurs more than once. The score is killed / (killed + survived).

Usage: python scripts/mutation_check.py [--only ID[,ID]] [--area AREA] [--list] [--timeout S]
       [--tests 'PYTEST ARGS'] [--python PATH] [--keep] [--json FILE]

Standard library only. Exit status 0 when no mutant survived, 1 otherwise, 2 on a usage or
baseline error.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

REPO = Path(__file__).resolve().parents[1]
M17 = "tests/test_mutants_17.py"


@dataclass(frozen=True)
class Mutant:
    id: str
    area: str
    file: str
    original: str
    replacement: str
    tests: tuple
    """pytest arguments (files, node ids, -k/-m expressions), run in the copy's root."""
    what: str


def m(id: str, area: str, file: str, original: str, replacement: str, tests, what: str) -> Mutant:
    return Mutant(id, area, file, original, replacement, tuple(tests), what)


LINT = ("tests/test_lint.py", "tests/test_lint_real_data.py", M17)
BENCH = ("tests/test_bench.py", M17)
DIST = ("tests/test_distributed.py", M17, "-m", "not torch")
PASTE = ("tests/test_paste_shapes.py", "tests/test_importers.py", M17)
SANDBOX = ("tests/test_hardening_rules.py", M17)
CACHE = ("tests/test_startup_cache.py", M17)

MUTANTS: list[Mutant] = [
    # ---------------------------------------------------------------- issue 17's survivors
    m("lint-typo-tie", "lint", "torchdoctor/lint/checks.py",
      "if not best or (len(best) > 1 and best[0][0] == best[1][0]):", "if not best:", LINT,
      "a typo equally close to two names still gets a fixable did-you-mean (allow_f16_ -> bf16)"),
    m("bench-busy-before-only", "bench", "torchdoctor/bench/core.py",
      "busy([load_before, load_after], cpus)", "busy([load_before], cpus)", BENCH,
      "the busy-machine check reads only the load before measuring"),
    m("measured-non-speed", "bench", "torchdoctor/bench/measured.py",
      'if s.precedence != "speed" and s.key in knob_keys', 'if s.precedence == "-" and s.key in knob_keys',
      BENCH, "--measured changes settings a rule decided for correctness/stability/reproducibility"),
    m("dist-unsanitised-facts", "distributed", "torchdoctor/distributed/job.py",
      '"facts": sanitize_facts(parsed.facts),', '"facts": parsed.facts,', DIST,
      "rank 0 does not sanitise the facts other ranks sent"),
    m("paste-no-kernels-deleted", "paste", "rules/data/paste_patterns.yaml",
      "  - id: no-kernels-for-gpu\n"
      "    needle: does not include kernels for this GPU\n"
      "    regex: 'Your installed torch==(?P<torch>[0-9][0-9A-Za-z.+]{0,60}) does not include kernels for this GPU'\n"
      "    sets: {torch_imported: true, init_error: true}\n"
      "    from: Your\n"
      "    source: https://github.com/pytorch/pytorch/blob/main/torch/cuda/__init__.py (_warn_unsupported_code; read in the torch 2.13 wheel)\n",
      "", PASTE, "the newest torch wording of 'does not include kernels for this GPU' is deleted"),
    m("collect-env-gpu-list-first-only", "paste", "torchdoctor/importers/collect_env/scan.py",
      'if _GPU_LINE.match(stripped) or stripped.startswith("MIG "):', 'if stripped.startswith("MIG "):',
      PASTE, "collect_env's GPU list of 3 is read as 1 (the continuation lines are dropped)"),
    m("collect-env-gpu-entries-first-only", "paste", "torchdoctor/importers/collect_env/gpu.py",
      "            if len(entries) >= MAX_GPUS:", "            if len(entries) >= 1:", PASTE,
      "the GPU entries stop after the first"),
    m("paste-gpu-group-not-extended", "paste", "torchdoctor/importers/paste/reader.py",
      "                    group.names.extend(entries)\n", "                    pass\n", PASTE,
      "a pasted 'GPU N: name' line after the first does not join the list"),
    m("paste-gpu-list-items-first-only", "paste", "torchdoctor/importers/paste/reader.py",
      "        self.gpu_list.names.append((len(self.gpu_list.names), name, cc))\n",
      "        self.gpu_list.names.append((len(self.gpu_list.names), name, cc))\n"
      "        if len(self.gpu_list.names) > 1:\n            self.gpu_list.names.pop()\n",
      PASTE, "a 'GPU:' label followed by one name per line keeps only the first name"),
    m("sandbox-private-attr", "sandbox", "torchdoctor/sandbox.py",
      'if isinstance(node, nodes.Getattr) and node.attr.startswith("_"):',
      'if isinstance(node, nodes.Getattr) and node.attr.startswith("\\0"):', SANDBOX,
      "the load-time check of '_' attributes is removed"),
    m("sandbox-private-key", "sandbox", "torchdoctor/sandbox.py",
      'and isinstance(node.arg.value, str) and node.arg.value.startswith("_")):',
      'and isinstance(node.arg.value, str) and node.arg.value.startswith("\\0")):', SANDBOX,
      "the load-time check of '_' keys is removed"),
    m("sandbox-private-name", "sandbox", "torchdoctor/sandbox.py",
      'if isinstance(node, nodes.Name) and node.name.startswith("_"):',
      'if isinstance(node, nodes.Name) and node.name.startswith("\\0"):', SANDBOX,
      "the load-time check of '_' names is removed"),
    m("redact-env-name-address", "paste", "torchdoctor/redact.py",
      'if _ENV_NAME_BEFORE_REVERSED.match(before) and "NOISREV" not in before.upper():', "if False:",
      ("tests/test_redaction.py", M17), "'NAME=1.2.3.4' is no longer an address"),
    m("safeio-exact-limit-refused", "paste", "torchdoctor/safeio.py",
      "    if len(data) > limit:", "    if len(data) >= limit:", ("tests/test_faults.py", M17),
      "a file of exactly the size limit is refused"),
    m("safeio-read-stops-at-limit", "paste", "torchdoctor/safeio.py",
      "        while total <= limit:", "        while total < limit:", ("tests/test_faults.py", M17),
      "reading stops at the limit, so a file one byte over it (read in chunks) is accepted"),
    m("safeio-read-one-short", "paste", "torchdoctor/safeio.py",
      "min(1 << 20, limit + 1 - total)", "min(1 << 20, limit - total)", ("tests/test_faults.py", M17),
      "the read never asks for the byte past the limit: an oversized file is accepted, cut"),
    # ---------------------------------------------------------------- lint
    m("lint-typo-limit", "lint", "torchdoctor/lint/checks.py",
      "limit = 1 if len(name) < 8 else (2 if len(name) < 14 else 3)",
      "limit = 2 if len(name) < 8 else (2 if len(name) < 14 else 3)", LINT,
      "short names accept two edits: 'versoin'-style near misses of other kinds get suggestions"),
    m("lint-typo-any-kind", "lint", "torchdoctor/lint/checks.py",
      'if settable and info.get("kind") != "flag":', 'if False:', LINT,
      "an assignment is offered a function or object name as its did-you-mean"),
    m("lint-distance-no-transposition", "lint", "torchdoctor/lint/checks.py",
      "cur[j] = min(cur[j], prev2[j - 2] + 1)", "cur[j] = cur[j]", LINT,
      "a transposition counts 2 edits"),
    m("lint-private-attrs-checked", "lint", "torchdoctor/lint/checks.py",
      '        if attr.startswith("_"):\n            continue\n', "", LINT,
      "private torch.backends attributes are reported as unknown names"),
    m("lint-guarded-ignored", "lint", "torchdoctor/lint/checks.py",
      'if use.guarded or not use.name.startswith(BACKENDS) or use.ctx == "del":',
      'if not use.name.startswith(BACKENDS) or use.ctx == "del":', LINT,
      "a use inside a version or hasattr guard is still reported as an unknown name"),
    m("lint-in-range-lower", "lint", "torchdoctor/lint/versions.py",
      "(lo is None or version >= lo)", "(lo is None or version > lo)", LINT,
      "a name added in X is missing in torch X itself"),
    m("lint-in-range-upper", "lint", "torchdoctor/lint/versions.py",
      "(hi is None or version < hi)", "(hi is None or version <= hi)", LINT,
      "a name removed in X still exists in torch X"),
    m("lint-guard-ge", "lint", "torchdoctor/lint/guards.py",
      "return version >= bound if m.group(1).lower()", "return version > bound if m.group(1).lower()", LINT,
      "_TORCH_GREATER_EQUAL_2_1 is false on 2.1"),
    m("lint-guard-not", "lint", "torchdoctor/lint/guards.py",
      "return inner if inner is None or inner is NEUTRAL else not inner",
      "return inner", LINT, "'not <version test>' is read as the test itself"),
    # ---------------------------------------------------------------- bench
    m("bench-busy-both", "bench", "torchdoctor/bench/stats.py",
      "return bool(known) and max(known) > max(1, cpus) * 0.75 + 1",
      "return bool(known) and min(known) > max(1, cpus) * 0.75 + 1", BENCH,
      "a run is busy only when the load was high both before and after"),
    m("bench-paired-band-threshold", "bench", "torchdoctor/bench/stats.py",
      "if len(common) >= 5 and plan is not best:", "if len(common) > 5 and plan is not best:", BENCH,
      "five shared rounds no longer pair the noise band"),
    m("bench-beyond-noise-inclusive", "bench", "torchdoctor/bench/stats.py",
      "beyond = r > band", "beyond = r >= band", BENCH,
      "a regret equal to the noise counts as a real difference"),
    m("measured-within-noise-exclusive", "bench", "torchdoctor/bench/measured.py",
      "if r <= band:  # not a measured difference", "if r < band:  # not a measured difference", BENCH,
      "a regret equal to the noise replaces the plan"),
    m("measured-numerics-ignored", "bench", "torchdoctor/bench/measured.py",
      "                and set(m.config.numerics) <= allowed\n", "", BENCH,
      "--measured takes a configuration whose numerics the workload did not allow"),
    m("measured-defaults-eligible", "bench", "torchdoctor/bench/measured.py",
      'return (m.median_s is not None and not m.config.compile and m.config.roles != ["defaults"]',
      "return (m.median_s is not None and not m.config.compile", BENCH,
      "torch's bare defaults can win --measured"),
    m("measured-busy-threads-decide", "bench", "torchdoctor/bench/measured.py",
      "        knob_keys -= sensitive\n        kept_plan = {s.key: s.value for s in report.settings}\n"
      "        keep = {k: kept_plan.get(k) for k in sensitive}\n",
      "        kept_plan = {}\n        keep = {}\n", BENCH,
      "a run on a busy machine decides the thread count (removing only `knob_keys -= sensitive` is "
      "an equivalent mutant: `keep` pins the planned thread count too)"),
    # ---------------------------------------------------------------- distributed
    m("dist-differs-always", "distributed", "torchdoctor/distributed/compare.py",
      "return len({key(v) for _, v in pairs}) > 1", "return len({key(v) for _, v in pairs}) >= 1", DIST,
      "every fact differs across ranks"),
    m("dist-majority-tie-highest-rank", "distributed", "torchdoctor/distributed/compare.py",
      "for _, v in sorted(pairs, key=lambda p: p[0]):", "for _, v in sorted(pairs, key=lambda p: -p[0]):", DIST,
      "a tie for the common value goes to the highest rank"),
    m("dist-keys-differing-missing-key", "distributed", "torchdoctor/distributed/compare.py",
      "values = {key(m.get(name) if isinstance(m, dict) else None) for _, m in maps}",
      "values = {key(m.get(name)) for _, m in maps if isinstance(m, dict) and name in m}", DIST,
      "a variable set on some ranks and unset on others does not differ"),
    m("dist-busbw-factor", "distributed", "torchdoctor/distributed/bandwidth.py",
      '"all_reduce": lambda n: 2 * (n - 1) / n,', '"all_reduce": lambda n: (n - 1) / n,', DIST,
      "all_reduce's bus bandwidth uses all_gather's factor"),
    m("dist-rank-equal-world", "distributed", "torchdoctor/distributed/launch.py",
      "if rank >= world:", "if rank > world:", DIST, "RANK == WORLD_SIZE is accepted"),
    m("dist-liar-rank", "distributed", "torchdoctor/distributed/job.py",
      "        if parsed.rank != r:\n", "        if False:\n", DIST,
      "a rank that sends another rank's facts is believed"),
    m("dist-text-unbounded", "distributed", "torchdoctor/distributed/job.py",
      "return out if len(out) <= limit else out[: limit - 1] + \"…\"", "return out", DIST,
      "what another rank sent (host name, error) is echoed unbounded"),
    # ---------------------------------------------------------------- paste readers
    m("paste-best-gpus-worst", "paste", "torchdoctor/importers/paste/evidence.py",
      "return min(self.gpu_groups, key=lambda g: (g.rank, g.line))",
      "return max(self.gpu_groups, key=lambda g: (g.rank, g.line))", PASTE,
      "the GPUs come from the least reliable line, not the best"),
    m("paste-row-later-wins", "paste", "torchdoctor/importers/paste/evidence.py",
      "if old is None or rank < old[0].rank:", "if old is None or rank <= old[0].rank:", PASTE,
      "of two package rows of the same rank the later line wins"),
    m("paste-nested-repetition-allowed", "paste", "torchdoctor/importers/paste/wording.py",
      "                if inside and high > 1:\n", "                if False:\n",
      ("tests/test_paste_shapes.py", "tests/test_importer_fuzz.py"),
      "a pattern with a repetition inside a repetition (catastrophic backtracking) loads"),
    m("paste-unbounded-repetition-allowed", "paste", "torchdoctor/importers/paste/wording.py",
      "                if high == unbounded:\n", "                if False:\n",
      ("tests/test_paste_shapes.py", "tests/test_importer_fuzz.py"),
      "a pattern with '*' or '+' loads"),
    # ---------------------------------------------------------------- sandbox
    m("sandbox-output-uncut", "sandbox", "torchdoctor/sandbox.py",
      "                if total > MAX_OUTPUT:", "                if total > MAX_OUTPUT * 64:", SANDBOX,
      "a rendered message is not cut at MAX_OUTPUT characters"),
    m("sandbox-repeat-unchecked", "sandbox", "torchdoctor/sandbox.py",
      "if n > 0 and len(seq) * n > MAX_VALUE:", "if n > 0 and len(seq) > MAX_VALUE:", SANDBOX,
      "'a' * 10**9 is computed before it is refused"),
    m("sandbox-recursive-loop", "sandbox", "torchdoctor/sandbox.py",
      "if isinstance(node, nodes.For) and node.recursive:", "if False:", SANDBOX,
      "recursive loops are allowed"),
    m("sandbox-any-filter", "sandbox", "torchdoctor/sandbox.py",
      "if isinstance(node, nodes.Filter) and node.name not in FILTERS:", "if False:", SANDBOX,
      "any jinja filter (center, indent, format) is allowed"),
    m("sandbox-power-unchecked", "sandbox", "torchdoctor/sandbox.py",
      "if left.bit_length() * right > MAX_INT_BITS:", "if left.bit_length() > MAX_INT_BITS:", SANDBOX,
      "2 ** 10000000 is computed"),
    # ---------------------------------------------------------------- rule cache
    m("cache-shared-dir-used", "cache", "torchdoctor/rulecache.py",
      "    return not (st.st_mode & 0o022)", "    return True", CACHE,
      "a cache directory others can write is used"),
    m("cache-key-not-checked", "cache", "torchdoctor/rulecache.py",
      'entry.get("format") != FORMAT or entry.get("key") != key:', 'entry.get("format") != FORMAT:', CACHE,
      "an entry is used whatever its key (a stale or forged entry is trusted)"),
    m("cache-follows-symlinks", "cache", "torchdoctor/rulecache.py",
      'flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) |', 'flags = os.O_RDONLY |', CACHE,
      "an entry that is a symlink is followed"),
    m("cache-prune-off-by-one", "cache", "torchdoctor/rulecache.py",
      "        if len(entries) <= MAX_ENTRIES:", "        if len(entries) <= MAX_ENTRIES + 1:", CACHE,
      "the cache keeps one entry more than MAX_ENTRIES"),
    m("cache-roundtrip-unchecked", "cache", "torchdoctor/rulecache.py",
      "        if json.loads(text, object_hook=_decode_map)[\"data\"] != data:",
      "        if False:", CACHE,
      "data that does not come back from JSON exactly (tuples) is cached anyway"),
]


# ----------------------------------------------------------------------------------------
# running
# ----------------------------------------------------------------------------------------


@dataclass
class Outcome:
    mutant: Mutant
    status: str
    """killed | survived | stale | ambiguous | timeout (counted killed)"""
    seconds: float = 0.0
    detail: str = ""
    failed: list = field(default_factory=list)


def repo_files(root: Path) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                         cwd=root, capture_output=True, check=True).stdout
    return sorted({p for p in out.decode("utf-8", "surrogateescape").split("\0") if p})


def make_copy(root: Path, dest: Path) -> None:
    for rel in repo_files(root):
        src = root / rel
        if not src.is_file() or src.is_symlink() and not src.exists():
            continue  # deleted in the work tree but still in the index, or a dangling link
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), target)
        else:
            shutil.copy2(src, target)


def environment(copy: Path, scratch: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TORCHDOCTOR_CACHE_DIR")}
    # TMPDIR stays as it is: some tests match messages that echo a temporary path clipped
    env.update(PYTHONPATH=str(copy), PYTHONDONTWRITEBYTECODE="1", XDG_CACHE_HOME=str(scratch / "cache"))
    (scratch / "cache").mkdir(exist_ok=True)
    return env


def run_tests(python: str, copy: Path, env: dict, tests: tuple, timeout: float) -> tuple[str, float, list]:
    """('passed' | 'failed' | 'timeout', seconds, the failing test ids)."""
    argv = [python, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-p", "no:randomly",
            "--no-header", "-rf", *tests]
    start = time.monotonic()
    proc = subprocess.Popen(argv, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, 9)
        except OSError:
            pass
        proc.communicate()
        return "timeout", time.monotonic() - start, []
    failed = [ln.split(" ", 1)[1].split(" - ", 1)[0] for ln in out.splitlines()
              if ln.startswith(("FAILED ", "ERROR "))]
    status = "passed" if proc.returncode == 0 else "failed"
    if proc.returncode not in (0, 1):  # 2: collection/usage error, 5: no tests collected
        failed = failed or [f"pytest exit {proc.returncode}: {out.strip().splitlines()[-1:] or ''}"]
    return status, time.monotonic() - start, failed


def apply(copy: Path, mutant: Mutant) -> Optional[tuple[Path, str, str]]:
    """Write the mutant into the copy; (path, original text, status) or None with a status."""
    path = copy / mutant.file
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    return path, text, {0: "stale", 1: "ok"}.get(text.count(mutant.original), "ambiguous")


def write(path: Path, text: str) -> None:
    """Write ``text`` and drop any compiled copy of it (a restored file may have the mutant's
    size and mtime second, which a stale .pyc would not notice)."""
    path.write_text(text, encoding="utf-8")
    shutil.rmtree(path.parent / "__pycache__", ignore_errors=True)


def check(mutants: list[Mutant], python: str, timeout: float, keep: bool, out=print) -> list[Outcome]:
    scratch = Path(tempfile.mkdtemp(prefix="td-mutation-"))
    copy = scratch / "repo"
    copy.mkdir()
    make_copy(REPO, copy)
    env = environment(copy, scratch)
    where = subprocess.run([python, "-c", "import torchdoctor; print(torchdoctor.__file__)"], cwd=copy,
                           env=env, capture_output=True, text=True).stdout.strip()
    if not where.startswith(str(copy)):
        raise SystemExit(f"mutation_check: the copy's tests would import torchdoctor from {where!r}, "
                         f"not from the copy {copy}; refusing to run")
    out(f"copy of {REPO} in {copy} ({len(repo_files(REPO))} files); python {python}")
    results: list[Outcome] = []
    baseline: dict[tuple, tuple[str, list]] = {}
    try:
        for mutant in mutants:
            applied = apply(copy, mutant)
            if applied is None or applied[2] != "ok":
                status = "stale" if applied is None else applied[2]
                results.append(Outcome(mutant, status, detail=f"snippet {'not found' if status == 'stale' else 'occurs more than once'} in {mutant.file}"))
                out(f"{status:9} {mutant.id}: {results[-1].detail}")
                continue
            if mutant.tests not in baseline:
                got, secs, failed = run_tests(python, copy, env, mutant.tests, timeout)
                baseline[mutant.tests] = (got, failed)
                out(f"baseline  {' '.join(mutant.tests)}: {got} ({secs:.0f} s){' ' + ', '.join(failed[:3]) if failed else ''}")
            if baseline[mutant.tests][0] != "passed":
                results.append(Outcome(mutant, "baseline-failed",
                                       detail=f"the tests fail unmutated: {', '.join(baseline[mutant.tests][1][:3])}"))
                out(f"{'skipped':9} {mutant.id}: {results[-1].detail}")
                continue
            path, original, _ = applied
            try:
                write(path, original.replace(mutant.original, mutant.replacement))
                got, secs, failed = run_tests(python, copy, env, mutant.tests, timeout)
            finally:
                write(path, original)
            status = {"passed": "survived", "failed": "killed", "timeout": "timeout"}[got]
            results.append(Outcome(mutant, status, secs, failed=failed))
            out(f"{status:9} {mutant.id} ({secs:.0f} s){': ' + failed[0] if failed else ''}")
    finally:
        if keep:
            out(f"kept {scratch}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return results


def summary(results: list[Outcome], out=print) -> int:
    killed = [r for r in results if r.status in ("killed", "timeout")]
    survived = [r for r in results if r.status == "survived"]
    other = [r for r in results if r not in killed and r not in survived]
    total = len(killed) + len(survived)
    score = len(killed) / total if total else 1.0
    out("")
    out(f"mutants: {len(results)}; killed {len(killed)}, survived {len(survived)}, "
        f"not run {len(other)} (stale/ambiguous/baseline-failed); score {len(killed)}/{total} = {score:.0%}")
    for r in survived:
        out(f"  SURVIVED {r.mutant.id} [{r.mutant.file}]: {r.mutant.what}")
    for r in other:
        out(f"  {r.status.upper()} {r.mutant.id} [{r.mutant.file}]: {r.detail}")
    return 0 if not survived else 1


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="", help="comma-separated mutant ids")
    ap.add_argument("--area", default="", help="lint, bench, distributed, paste, sandbox or cache")
    ap.add_argument("--list", action="store_true", help="list the catalogue and exit")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per test run (default 600)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter with pytest (default: this one)")
    ap.add_argument("--tests", default="", help="run these pytest arguments (space-separated) for every "
                    "chosen mutant instead of its own (e.g. to show one test file kills them)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy")
    ap.add_argument("--json", default="", help="also write the outcomes to this file")
    args = ap.parse_args(argv)
    ids = [m.id for m in MUTANTS]
    dupes = {i for i in ids if ids.count(i) > 1}
    if dupes:
        print(f"mutation_check: duplicate mutant ids: {sorted(dupes)}", file=sys.stderr)
        return 2
    chosen = MUTANTS
    if args.only:
        wanted = [x.strip() for x in args.only.split(",") if x.strip()]
        unknown = [w for w in wanted if w not in ids]
        if unknown:
            print(f"mutation_check: no mutant {', '.join(unknown)}", file=sys.stderr)
            return 2
        chosen = [m for m in MUTANTS if m.id in wanted]
    if args.area:
        chosen = [m for m in chosen if m.area == args.area]
    if args.tests:
        chosen = [Mutant(**{**mu.__dict__, "tests": tuple(args.tests.split())}) for mu in chosen]
    if args.list:
        for mu in chosen:
            print(f"{mu.id:36} {mu.area:12} {mu.file}: {mu.what}")
        print(f"{len(chosen)} mutants")
        return 0
    results = check(chosen, args.python, args.timeout, args.keep)
    code = summary(results)
    if args.json:
        Path(args.json).write_text(json.dumps([
            {"id": r.mutant.id, "area": r.mutant.area, "file": r.mutant.file, "what": r.mutant.what,
             "status": r.status, "seconds": round(r.seconds, 1), "failed": r.failed, "detail": r.detail}
            for r in results], indent=2) + "\n", encoding="utf-8")
    return code


if __name__ == "__main__":
    sys.exit(main())
