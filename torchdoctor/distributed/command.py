"""`torchdoctor check --distributed`, called by cli.check: run this rank, and on rank 0 build,
evaluate, render and write the report. Ends the process itself (:func:`rank.hard_exit`): a
thread stuck in gloo or NCCL must not hold the exit back."""

from __future__ import annotations

import os
import time
from typing import Any, Optional, Sequence

from torchdoctor.errors import UserError


def check_job(*, timeout: float, fail_on: str, rules_dirs: Sequence[str], ignore: Sequence[str],
              no_redact: bool, fmt: str, output: Optional[str], debug: bool, all_ranks: bool,
              other_sources: Sequence[Optional[str]], terminal: Any, emit: Any, stderr: Any) -> int:
    """``terminal()`` -> (color, width); ``emit(text, output)`` writes the report;
    ``stderr(line)`` the status line. Returns only for a usage error (raised); otherwise exits."""
    from torchdoctor.distributed.launch import from_env

    if any(other_sources):
        raise UserError("--distributed probes every rank of a running job; it cannot be combined "
                        "with --facts, --from-report or --python")
    launch = from_env(os.environ)
    from torchdoctor.distributed.job import build_job, evaluate_job, probe_rank, redact_job
    from torchdoctor.distributed.rank import RankRun, hard_exit

    run = RankRun(launch, timeout, debug=debug)
    run.arm()  # from here a launcher's SIGTERM is recorded, not fatal, on rank 0
    rules: list = []
    if launch.rank == 0:
        from torchdoctor.rules import load_rules

        rules = load_rules(list(rules_dirs))  # a broken --rules DIR fails here, before the job
    got = run.run(probe_rank)
    if launch.rank != 0:
        if all_ranks and got is None:
            stderr(f"torchdoctor check --distributed: rank {launch.rank} sent its facts to rank 0")
        hard_exit(0)
    assert got is not None
    try:
        from torchdoctor.render.distributed import render, status_line

        job = build_job(launch, timeout, got)
        report = evaluate_job(job, rules, ignore, seconds=time.monotonic() - run.start)
        if not no_redact:
            report = redact_job(report)
        options = {}
        if fmt == "terminal":
            options["width"] = terminal()[1]
        emit(render(report, fmt, **options), output)
        if fmt != "terminal" or output:
            stderr(f"torchdoctor check --distributed: {status_line(report)}")
        code = report.exit_code(fail_on)
    except Exception as exc:  # noqa: BLE001 - leave through hard_exit: gloo threads may be stuck
        code = _failed(exc, debug)
    hard_exit(code)
    return 0  # pragma: no cover


def _failed(exc: BaseException, debug: bool) -> int:
    """The exit code (and one line) for an error after the job ran, as cli._main would give."""
    from torchdoctor.cli_io import EXIT_STDOUT_CLOSED, StdoutClosed, error

    if isinstance(exc, (StdoutClosed, BrokenPipeError)):
        return EXIT_STDOUT_CLOSED
    if debug:
        import traceback

        traceback.print_exception(exc)
    if isinstance(exc, UserError):
        error(str(exc))
    else:
        error(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug and report it)")
    return 2
