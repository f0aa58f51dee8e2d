"""packages probe: which relevant distributions the target interpreter has, and which torch.

The target interpreter is asked, not the running one: when it is the running interpreter
the scan runs in-process (``importlib.metadata``, no torch import); otherwise
``_interp_child.py`` runs under it with a timeout and answers in one JSON line. Which
distributions count as relevant is data (``rules/data/packages_of_interest.yaml``).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Optional

from torchdoctor.facts import Distribution, PackagesFacts, Unavailable
from torchdoctor.probes import ProbeContext, ProbeUnavailable, _interp_child, _sys
from torchdoctor.tables.interest import Interest, load_interest  # noqa: F401 - the probe's API

CHILD_SCRIPT = Path(__file__).resolve().with_name("_interp_child.py")
CHILD_TIMEOUT_S = 30.0
"""Upper bound for the child; a scan of a few hundred distributions takes well under 1 s."""
MODULE = "torch"


# --------------------------------------------------------------------------------------
# the target interpreter
# --------------------------------------------------------------------------------------


def resolve_python(python: str) -> str:
    """An absolute path for ``python`` ("python3" is looked up on PATH)."""
    if os.sep not in python and (os.altsep is None or os.altsep not in python):
        found = shutil.which(python)
        if found:
            return found
    return os.path.abspath(python)


def is_running_interpreter(ctx: ProbeContext) -> bool:
    """Whether ctx.python is this very interpreter *and environment*.

    A venv's ``bin/python`` is a symlink to the base interpreter: both resolve to the same
    file while the environment (pyvenv.cfg next to the link) differs, so ``is_self``
    compares unresolved paths and the directories must match too.
    """
    if not ctx.is_self:
        return False
    try:
        target = resolve_python(ctx.python)
        return os.path.dirname(target) == os.path.dirname(os.path.abspath(sys.executable))
    except OSError:
        return False


def read_target(
    ctx: ProbeContext, request: dict[str, Any], timeout: Optional[float] = None
) -> dict:
    """The target interpreter's answer to ``request`` (see ``_interp_child``).

    Raises ProbeUnavailable when the child cannot run, times out, crashes or answers garbage.
    """
    if is_running_interpreter(ctx):
        return _interp_child.collect(request)
    limit = min(ctx.timeout, CHILD_TIMEOUT_S) if timeout is None else timeout
    return run_child(ctx.python, request, limit)


def run_child(python: str, request: dict[str, Any], timeout: float) -> dict:
    """Run ``_interp_child.py`` under ``python`` and return its report."""
    argv = [python, str(CHILD_SCRIPT), json.dumps(request)]
    done = _sys.run(argv, timeout=timeout)
    if done.error is not None:
        raise ProbeUnavailable(f"cannot run the interpreter: {done.error}")
    if done.timed_out:
        raise ProbeUnavailable(f"the interpreter {python} did not answer within {timeout:g} s")
    if done.signal_name:
        raise ProbeUnavailable(f"the interpreter {python} was killed by {done.signal_name}")
    if done.returncode != 0:
        raise ProbeUnavailable(
            f"the interpreter {python} exited with status {done.returncode}: "
            f"{_last_line(done.stderr) or _last_line(done.stdout) or 'no output'}"
        )
    try:
        report = parse_child_output(done.stdout)
    except ValueError as exc:
        raise ProbeUnavailable(f"the interpreter {python} gave no usable answer: {exc}") from None
    if report.get("error"):
        raise ProbeUnavailable(f"the interpreter {python} failed to report: {report['error']}")
    return report


def parse_child_output(stdout: str) -> dict:
    """The report in the child's marker line; ValueError for anything else.

    Lines before it (a noisy sitecustomize or .pth file) are ignored.
    """
    for line in reversed(stdout.splitlines()):
        if line.startswith(_interp_child.MARKER):
            try:
                report = json.loads(line[len(_interp_child.MARKER) :])
            except json.JSONDecodeError as exc:
                raise ValueError(f"malformed JSON ({exc.msg})") from None
            if not isinstance(report, dict) or report.get("protocol") != _interp_child.PROTOCOL:
                raise ValueError("unexpected report format")
            return report
    snippet = _last_line(stdout)
    raise ValueError(f"unexpected output {snippet[:120]!r}" if snippet else "empty output")


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


# --------------------------------------------------------------------------------------
# facts
# --------------------------------------------------------------------------------------


def facts_from_report(report: dict) -> PackagesFacts:
    """PackagesFacts from a child report; ValueError when the report is malformed."""
    packages = report.get("packages")
    module = report.get("module")
    if not isinstance(packages, dict) or not isinstance(module, dict):
        raise ValueError("report lacks the packages or module section")

    if packages.get("error"):
        gone = Unavailable(unavailable=str(packages["error"]))
        versions: Any = gone
        distributions: Any = gone
        providers: Any = gone
    else:
        entries = packages.get("distributions")
        if not isinstance(entries, list):
            raise ValueError("distributions is not a list")
        distributions = [_distribution(e) for e in entries]
        versions = {}
        providers = []
        for dist in distributions:
            if isinstance(dist.version, str):
                versions.setdefault(dist.name, dist.version)  # first on sys.path wins
            if dist.provides_torch is True and dist.name not in providers:
                providers.append(dist.name)

    if module.get("error"):
        module_path: Any = Unavailable(unavailable=f"cannot locate {MODULE}: {module['error']}")
    else:
        path = module.get("path")
        if path is not None and not isinstance(path, str):
            raise ValueError("module path is not a string")
        module_path = path
    return PackagesFacts(
        versions=versions,
        distributions=distributions,
        torch_providers=providers,
        torch_module_path=module_path,
    )


def _distribution(entry: Any) -> Distribution:
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise ValueError(f"malformed distribution entry {entry!r:.80}")
    return Distribution(
        name=entry["name"],
        version=entry.get("version"),
        source="pip",
        build=None,
        channel=None,
        location=entry.get("location"),
        provides_torch=bool(entry.get("provides")),
    )


def probe(ctx: ProbeContext) -> PackagesFacts:
    interest = load_interest()
    report = read_target(ctx, {"packages": interest.request(), "module": MODULE})
    try:
        return facts_from_report(report)
    except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ProbeUnavailable(
            f"the interpreter {ctx.python} gave a malformed answer: {first}"
        ) from None


def installed_torch(python: str, timeout: float) -> Optional[str]:
    """The version of the torch distribution installed for ``python`` (``torch``, else the first
    distribution that provides the torch package), read from its metadata: torch is not
    imported. None when none is installed or the interpreter cannot tell."""
    try:
        report = read_target(ProbeContext(python=python, timeout=timeout),
                             {"packages": load_interest().request(), "module": MODULE})
        facts = facts_from_report(report)
    except (ProbeUnavailable, ValueError, TypeError):
        return None
    versions = facts.versions if isinstance(facts.versions, dict) else {}
    providers = facts.torch_providers if isinstance(facts.torch_providers, list) else []
    for name in ["torch"] + providers:
        if isinstance(versions.get(name), str):
            return versions[name]
    return None
