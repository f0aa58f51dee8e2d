"""`torchdoctor bench`: the click command (imports only click at import time; cli.py registers it)."""

from __future__ import annotations

import sys

import click

from torchdoctor.cli_io import FiniteRange, workload_options


@click.command("bench", context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@workload_options("as `recommend`")
@click.option("--budget", type=FiniteRange(10, 86400, "of seconds"), default=None,
              help="Seconds the whole command may take, reading the machine, starting and warming "
                   "up each configuration included (default in rules/bench.yaml: 140).")
@click.option("--exhaustive", is_flag=True, help="Also measure the full grid of knob options.")
@click.option("--measured", type=str, metavar="FILE",
              help="Measure the plan `recommend --measured FILE` makes instead of the rules' plan.")
@click.option("--format", "fmt", type=click.Choice(["terminal", "json", "markdown"]), default="terminal",
              show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the result to FILE (atomically).")
@click.option("--schema", "show_schema", is_flag=True, help="Print the JSON schema of --format json and exit.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def bench(task, workload_file, input_shapes, precision, model_family, distributed, reproducibility,
          inference, budget, exhaustive, measured, fmt, output, show_schema, debug) -> None:
    """Measure the recommended settings on this machine against torch's defaults and every
    one-setting change around them, with small representative workloads (docs/bench.md).

    Each configuration runs in its own process; the table is sorted by step time, with the
    plan's regret against the best configuration found. Exit 0, or 2 for a usage error, 130 on
    Ctrl-C (after printing what was measured).
    """
    import time

    started = time.monotonic()  # --budget bounds the whole command from here
    from torchdoctor.cli_io import Abort, emit, note, stderr, terminal_style
    from torchdoctor.render import bench as render_bench

    if show_schema:
        emit(render_bench.schema(), output)
        return
    if not task and not workload_file and not model_family:
        raise Abort("bench needs a workload: --task NAME (as `torchdoctor recommend --help` lists) "
                    "or --model-family")
    from torchdoctor.api import probe
    from torchdoctor.bench.core import plan_for, run_bench
    from torchdoctor.workload import build_workload, load_workload_file

    overrides = {"input_shapes": input_shapes, "precision": precision, "model_family": model_family,
                 "distributed": distributed, "reproducibility": reproducibility,
                 "mode": "inference" if inference else None}
    notices: list[str] = []
    if workload_file:
        workload = load_workload_file(workload_file, task=task, overrides=overrides,
                                      flag_names={}, notices=notices, override_source="command line")
    else:
        workload = build_workload(task=task, overrides=overrides, source="command line")
    for notice in notices:
        note(notice)
    stderr("torchdoctor bench: reading this machine ...")
    facts = probe()
    plan = plan_for(facts, workload, measured=measured)
    with _ProgressBar() as bar:
        result = run_bench(facts, workload, plan, budget_s=budget, exhaustive=exhaustive,
                           progress=bar.update, started_at=started,
                           plan_source=f"measured:{measured}" if measured else "rules")
    color, width = terminal_style(140)
    text = render_bench.render(result, fmt, color=color and not output, width=width)
    emit(text, output, [workload_file, measured])
    if fmt != "terminal" or output:
        stderr(f"torchdoctor bench: {result.verdict.summary}")
    sys.exit(130 if result.interrupted else 0)


class _ProgressBar:
    """A rich progress bar on stderr with the time left (nothing when stderr is not a terminal)."""

    def __enter__(self) -> "_ProgressBar":
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        console = Console(stderr=True)
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeRemainingColumn(), console=console, transient=True,
                                 disable=not console.is_terminal)
        self.progress.__enter__()
        self.task = self.progress.add_task("starting", total=1)
        return self

    def update(self, what: str, done: float, total: float) -> None:
        self.progress.update(self.task, description=what, completed=done, total=max(total, 1))

    def __exit__(self, *exc) -> None:
        self.progress.__exit__(*exc)
