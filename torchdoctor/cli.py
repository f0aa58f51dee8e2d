"""Command line. The only module that reads argv, writes to stdout/stderr and chooses exit codes.

Exit codes: 0 nothing at or above --fail-on; 1 findings at or above it; 2 tool or usage
error (bad file, bad argument, internal error, stdout full); 130 interrupted (143 on SIGTERM);
141 stdout was closed by its reader (EPIPE, as in `torchdoctor check | head -1`: the status a
shell reports for a Unix tool killed by SIGPIPE; nothing is printed). A failed probe is never 2.

Start-up cost matters (``torchdoctor --help`` must stay well under 0.25 s): this module
imports only click at the top; everything else is imported inside the command that needs it.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional, Sequence

import click

from torchdoctor.cli_io import (  # noqa: F401 - Abort, StdoutClosed, MAX_MESSAGE_CHARS: used by tests
    EXIT_STDOUT_CLOSED,
    MAX_MESSAGE_CHARS,
    Abort,
    StdoutClosed,
    workload_options,
    click_saw_epipe,
    emit,
    error,
    message,
    note,
    raised_by_click_echo,
    read_input,
    redact_messages,
    silence_stdout,
    stderr,
    stdout_write,
    terminal_style,
    warn,
)
from torchdoctor.version import __version__

FAIL_ON = click.Choice(["error", "warning", "info", "never"])
FORMATS = click.Choice(["terminal", "json", "markdown"])
CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


# ----------------------------------------------------------------------------------------
# shared options
# ----------------------------------------------------------------------------------------


def output_options(f):
    f = click.option("--debug", is_flag=True, help="Show tracebacks and re-raise probe crashes.")(f)
    f = click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report to FILE (atomically).")(f)
    f = click.option("--format", "fmt", type=FORMATS, default="terminal", show_default=True)(f)
    return f


class Seconds(click.ParamType):
    """A timeout in seconds: a finite number from 1 to a day. ``inf``, ``nan`` and ``1e9``
    are refused here, before any child is started (the torch child starts first of all)."""

    name = "seconds"
    MIN, MAX = 1.0, 86400.0

    def convert(self, value, param, ctx):
        import math

        if isinstance(value, float):
            number = value
        else:
            try:
                number = float(str(value).strip())
            except (ValueError, OverflowError):
                number = math.nan
        if not (math.isfinite(number) and self.MIN <= number <= self.MAX):
            from torchdoctor.safeio import clip

            self.fail(f"{clip(value)}: not a number of seconds from {self.MIN:g} to "
                      f"{self.MAX:g} (a day)", param, ctx)
        return number


TIMEOUT = Seconds()


def fact_source_options(f):
    f = click.option("--timeout", type=TIMEOUT, default=60.0, show_default=True,
                     help="Seconds allowed for the torch child process (1 to 86400).")(f)
    f = click.option("--python", "python", type=click.Path(dir_okay=False),
                     help="Interpreter of the environment to diagnose (default: this one).")(f)
    f = click.option("--from-report", "from_report", type=str, metavar="FILE",
                     help="Read facts from a pasted `python -m torch.utils.collect_env` report or "
                          "torchdoctor JSON ('-' = stdin) instead of probing.")(f)
    f = click.option("--facts", "facts_file", type=str, metavar="FILE",
                     help="Load facts recorded with `torchdoctor probe` instead of probing.")(f)
    return f


def rules_options(f):
    f = click.option("--ignore", multiple=True, metavar="RULE_ID", help="Silence a rule (repeatable).")(f)
    f = click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=False),
                     metavar="DIR", help="Add a directory of your own rules (repeatable).")(f)
    f = click.option("--fail-on", type=FAIL_ON, default="error", show_default=True,
                     help="Exit 1 when a finding at or above this severity exists.")(f)
    f = click.option("--no-redact", is_flag=True, help="Do not redact user/host names, UUIDs and secrets.")(f)
    return f


# ----------------------------------------------------------------------------------------
# plumbing
# ----------------------------------------------------------------------------------------

def gather_facts(facts_file: Optional[str], from_report: Optional[str], python: Optional[str],
                 timeout: float, debug: bool, data: Optional[bytes] = None):
    from torchdoctor.facts import Facts

    if facts_file and from_report:
        raise Abort("use either --facts or --from-report, not both")
    source = facts_file or from_report
    if source and python:
        raise Abort(f"--python reads a live environment; it has no effect with "
                    f"{'--facts' if facts_file else '--from-report'}")
    if source:
        from torchdoctor.importers import ReportError, load_report

        data = read_input(source) if data is None else data
        try:
            facts = load_report(data, "<stdin>" if source == "-" else source)
        except ReportError as exc:
            raise Abort(str(exc)) from None
        if facts_file and facts.origin == "report":
            warn(f"{facts_file} is a collect_env report, not torchdoctor JSON; read it as a report")
        return facts
    from torchdoctor.probes import ProbeContext, collect, python_executable

    ctx = ProbeContext(python=target_python(python) or python_executable(), timeout=timeout,
                       debug=debug)
    facts: Facts = collect(ctx)
    return facts


def lean_for_report(source: str) -> bytes:
    """The report's bytes, read once; a report that is surely text (not facts JSON) is read, judged and rendered with
    the lean models (torchdoctor/model.py), which the shipped rules alone allow (a user's rule pack is validated by
    pydantic, whose words its errors are in)."""
    data = read_input(source)
    from torchdoctor.sniff import may_be_json

    if not may_be_json(data):
        from torchdoctor.model import use_lean

        use_lean()
    return data


def prestart(facts_file: Optional[str], from_report: Optional[str], python: Optional[str],
             timeout: float) -> None:
    """Start the torch child first: our own imports then overlap with its `import torch`."""
    if facts_file or from_report:
        return
    from torchdoctor.probes import python_executable, start_torch_child

    start_torch_child(target_python(python) or python_executable(), timeout)


_CHECKED_PYTHONS: dict = {}


def target_python(python: Optional[str]) -> Optional[str]:
    """The --python interpreter as an absolute path (a bare name is a file in the current
    directory, as for every other path option, not a PATH lookup), checked once: it must
    exist, be executable and answer as Python. Symlinks are kept (a venv's python is one)."""
    if not python:
        return None
    if python in _CHECKED_PYTHONS:
        return _CHECKED_PYTHONS[python]
    path = os.path.abspath(python)
    if not os.path.exists(path):
        raise Abort(f"--python {python}: no such interpreter")
    if not os.access(path, os.X_OK):
        raise Abort(f"--python {python}: not executable")
    from torchdoctor.probes import run_command

    # reopens the seam: an earlier run in this process (a test, the API) closed it
    done = run_command([path, "-c", "import sys; print(sys.hexversion)"], timeout=15)
    if done.timed_out:
        raise Abort(f"--python {python}: did not answer within 15 s")
    if not done.ok or not done.stdout.strip().isdigit():
        said = (done.stderr or done.stdout).strip().splitlines()
        why = f" ({said[-1][:120]})" if said else ""
        raise Abort(f"--python {python}: not a runnable Python interpreter{why}")
    _CHECKED_PYTHONS[python] = path
    return path


def load_all_rules(rules_dirs: Sequence[str]):
    from torchdoctor.rules import load_rules

    return load_rules([p for p in rules_dirs])


def maybe_redact(report_or_facts: Any, no_redact: bool):
    if no_redact:
        warn("--no-redact: the output may contain user names, host names, UUIDs and secrets")
        return report_or_facts
    from torchdoctor.redact import redact_report

    return redact_report(report_or_facts)


def render_report(report, fmt: str, explain: bool = False) -> str:
    from torchdoctor.render import render

    if fmt == "terminal":
        color, width = terminal_style(140)
        return render(report, "terminal", color=color, width=width, explain=explain)
    if fmt == "markdown":
        return render(report, fmt, explain=explain)
    return render(report, fmt)


def summary_line(report) -> str:
    """The status line on stderr (one implementation: render/summary.py)."""
    from torchdoctor.render.summary import status_line

    return status_line(report)


# ----------------------------------------------------------------------------------------
# commands
# ----------------------------------------------------------------------------------------


@click.group(context_settings=CONTEXT, invoke_without_command=True)
@click.version_option(__version__, "--version", prog_name="torchdoctor")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Diagnose a PyTorch environment and tell you how to configure it.

    \b
    torchdoctor check                      what is wrong with this environment
    torchdoctor recommend --task detection settings for a workload, with reasons
    torchdoctor recommend --task llm-training --snippet   Python to paste
    torchdoctor report -o env.md           redacted Markdown for a bug ticket
    torchdoctor check --from-report issue.txt   triage a pasted collect_env
    torchdoctor diff good.json bad.txt     what differs between two environments
    torchdoctor lint .                     fake settings, pitfalls, deprecated APIs in code
    torchdoctor bench --task classification   measure the plan on this machine
    torchdoctor triage --body issue.md     the comment for a GitHub issue (docs/github-action.md)
    torchrun --nproc-per-node 4 -m torchdoctor check --distributed   every rank of a job
    torchdoctor mcp                        the checks as MCP tools for coding agents (stdio)

    Exit codes: 0 ok, 1 findings at/above --fail-on, 2 usage or tool error, 130 interrupted.
    """
    if ctx.invoked_subcommand is None:
        stdout_write(ctx.get_help() + "\n")


@cli.command(context_settings=CONTEXT)
@fact_source_options
@rules_options
@output_options
@click.option("--explain", is_flag=True, help="Also list skipped rules and why.")
@click.option("--distributed", is_flag=True,
              help="Check every rank of a torchrun/srun job; --timeout bounds the run (docs/distributed.md).")
def check(facts_file, from_report, python, timeout, fail_on, rules_dirs, ignore, no_redact, fmt,
          output, debug, explain, distributed) -> None:
    """Probe this environment (or read facts/a report) and report what is wrong."""
    if distributed:
        from torchdoctor.distributed.command import check_job

        check_job(timeout=timeout, fail_on=fail_on, rules_dirs=rules_dirs, ignore=ignore, no_redact=no_redact,
                  fmt=fmt, output=output, debug=debug, all_ranks=debug, other_sources=[facts_file, from_report, python],
                  terminal=lambda: terminal_style(140), emit=lambda t, o: emit(t, o, []), stderr=stderr)
    prestart(facts_file, from_report, python, timeout)
    data = lean_for_report(from_report) if from_report and not (facts_file or rules_dirs or python) else None
    from torchdoctor.engine import evaluate
    from torchdoctor.report import exit_code

    rules = load_all_rules(rules_dirs)
    facts = gather_facts(facts_file, from_report, python, timeout, debug, data)
    report = evaluate(rules, facts, None, command="check", ignore=ignore)
    report = maybe_redact(report, no_redact)
    emit(render_report(report, fmt, explain=explain), output, [facts_file, from_report])
    if fmt != "terminal" or output:
        stderr(f"torchdoctor check: {summary_line(report)}")
    sys.exit(int(exit_code(report, fail_on)))


@cli.command(context_settings=CONTEXT)
@click.option("--python", "python", type=click.Path(dir_okay=False),
              help="Interpreter of the environment to probe (default: this one).")
@click.option("--timeout", type=TIMEOUT, default=60.0, show_default=True,
              help="Seconds allowed for the torch child process (1 to 86400).")
@click.option("--output", "-o", type=click.Path(dir_okay=False))
@click.option("--no-redact", is_flag=True, help="Do not redact user/host names, UUIDs and secrets.")
@click.option("--debug", is_flag=True)
@click.option("--schema", is_flag=True, help="Print the JSON schema of the facts (the fact reference) and exit.")
def probe(python, timeout, output, no_redact, debug, schema) -> None:
    """Print the facts of this environment as JSON (load them later with --facts)."""
    if schema:
        import json

        from torchdoctor.facts import json_schema

        emit(json.dumps(json_schema(), indent=2) + "\n", output)
        return
    prestart(None, None, python, timeout)
    facts = gather_facts(None, None, python, timeout, debug)
    facts = maybe_redact(facts, no_redact)
    emit(facts.model_dump_json(indent=2) + "\n", output)


WORKLOAD_FLAGS = {
    "input_shapes": "--input",
    "precision": "--precision",
    "model_family": "--model-family",
    "distributed": "--distributed",
    "reproducibility": "--reproducible",
    "mode": "--inference",
    "compile": "--compile",
    "dataloader_workers": "--workers",
    "local_world_size": "--local-world-size",
}
"""Workload field -> the recommend option that sets it."""


def task_names() -> list[str]:
    """The presets of rules/tasks.yaml, for `recommend --help`, which imports neither yaml nor
    pydantic (help stays light). Not a YAML parser: a line reader of the one shape the file is
    written in, block style: a top-level ``tasks:`` whose keys, one indentation level under
    it, are the names. It stops at the first line it does not understand (a flow mapping, a
    quoted or unusual key), and tests/test_cli.py checks that it reads exactly the names
    ``workload.load_tasks`` reads."""
    from torchdoctor.paths import default_rules_dir

    try:
        text = (default_rules_dir() / "tasks.yaml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    names: list[str] = []
    inside, level = False, 0
    for line in text.splitlines():
        body = line.lstrip(" ")
        if not body or body.startswith("#"):
            continue
        depth = len(line) - len(body)
        if depth == 0:
            if inside:
                break  # the next top-level key: the table is over
            inside = body.split("#", 1)[0].strip() == "tasks:"
        elif inside:
            level = level or depth
            if depth < level:
                break
            if depth == level:
                name, colon, _ = body.partition(":")
                if not colon or not name or not all(c.isalnum() or c in "-_." for c in name):
                    break
                names.append(name)
    return names


class RecommendCommand(click.Command):
    """`recommend`, whose help ends with the presets of rules/tasks.yaml (read only when help
    is shown; wrapped without breaking a name at its hyphen, as click's wrapper would)."""

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        import textwrap

        names = task_names()
        if names:
            with formatter.section("Task presets (--task)"):
                width = max(formatter.width - formatter.current_indent, 20)
                for line in textwrap.wrap(", ".join(names), width=width, break_on_hyphens=False):
                    formatter.write(f"{'':>{formatter.current_indent}}{line}\n")
        super().format_epilog(ctx, formatter)


def check_recommend_args(task: Optional[str], gpu_name: Optional[str], torch_version: Optional[str],
                         snippet: bool, fmt: str, explain: bool) -> None:
    """Usage errors found before anything is probed or loaded: one line, exit 2."""
    if task is not None and not task.strip():
        raise Abort("--task is empty; `torchdoctor recommend --help` lists the presets")
    if gpu_name is not None and not gpu_name.strip():
        raise Abort('--gpu is empty: give a GPU name ("A100", "4x RTX 4090") or "cpu"')
    if snippet and fmt != "terminal":
        raise Abort(f"--snippet prints only the Python snippet; it cannot be --format {fmt} "
                    "(that report already contains the snippet)")
    if snippet and explain:
        raise Abort("--snippet prints only the Python snippet; --explain has nothing to add to it "
                    "(use --explain without --snippet)")
    if torch_version is not None:
        from torchdoctor.synthetic import check_torch_version

        check_torch_version(torch_version, known_only=True)  # UserError: one line, exit 2


@cli.command(context_settings=CONTEXT, cls=RecommendCommand)
@workload_options("its values override the preset; flags override the file")
@click.option("--compile", "compile_", is_flag=True, default=None, help="The model runs under torch.compile.")
@click.option("--workers", type=click.IntRange(min=0), help="DataLoader workers you intend to use.")
@click.option("--local-world-size", type=click.IntRange(min=1), help="Processes per node (DDP/FSDP).")
@click.option("--gpu", "gpu_name",
              help='Plan for a machine you are not on: a GPU name, with a count for several '
                   '("A100", "RTX 4090", "8x H100"), or "cpu" (no GPU). NVIDIA GPUs and CPU only.')
@click.option("--torch-version", help="Write settings for this torch version (default: the target's; with "
              "--gpu, the torch installed for --python or this interpreter, else the newest release).")
@click.option("--snippet", is_flag=True, help="Print only the Python setup snippet (terminal format only).")
@click.option("--explain", is_flag=True, help="Also show overridden recommendations and skipped rules.")
@click.option("--measured", metavar="FILE", help="`torchdoctor bench --format json` result: measured speed decides the speed settings.")
@fact_source_options
@rules_options
@output_options
def recommend(task, workload_file, input_shapes, precision, model_family, distributed, reproducibility,
              inference, compile_, workers, local_world_size, gpu_name, torch_version, snippet,
              explain, measured, facts_file, from_report, python, timeout, fail_on, rules_dirs, ignore,
              no_redact, fmt, output, debug) -> None:
    """Recommend settings for a workload, each with its reason, and a setup snippet.

    Workload values: the --task preset, then a --workload file, then the flags (each overrides
    the one before; stderr says when a flag replaces a value of the file).
    """
    check_recommend_args(task, gpu_name, torch_version, snippet, fmt, explain)
    if not gpu_name:
        prestart(facts_file, from_report, python, timeout)
    from torchdoctor.api import plan_report
    from torchdoctor.report import exit_code
    from torchdoctor.workload import build_workload, load_workload_file

    overrides = {
        "input_shapes": input_shapes,
        "precision": precision,
        "model_family": model_family,
        "distributed": distributed,
        "reproducibility": reproducibility,
        "mode": "inference" if inference else None,
        "compile": True if compile_ else None,
        "dataloader_workers": workers,
        "local_world_size": local_world_size,
    }
    notices: list[str] = []
    if workload_file:
        workload = load_workload_file(workload_file, task=task, overrides=overrides,
                                      flag_names=WORKLOAD_FLAGS, notices=notices,
                                      override_source="command line")
    else:
        workload = build_workload(task=task, overrides=overrides, source="command line")
    for notice in notices:
        note(notice)
    rules = load_all_rules(rules_dirs)
    if gpu_name:
        from torchdoctor.importers.synthetic import plan_target

        if facts_file or from_report:
            raise Abort("--gpu plans for a machine you are not on; do not combine it with --facts/--from-report")
        from torchdoctor.probes import python_executable

        facts, planned_for = plan_target(gpu_name, torch_version, target_python(python) or python_executable(),
                                         timeout)
    else:
        facts, planned_for = gather_facts(facts_file, from_report, python, timeout, debug), None
    report = plan_report(rules, facts, workload, torch_version=torch_version, ignore=ignore, measured=measured)
    report = report.model_copy(update={"planned_for": planned_for})
    report = maybe_redact(report, no_redact)
    if snippet:
        emit(report.snippet or "", output, [facts_file, from_report, workload_file])
    else:
        emit(render_report(report, fmt, explain=explain), output, [facts_file, from_report, workload_file])
        if fmt != "terminal" or output:
            stderr(f"torchdoctor recommend: {summary_line(report)}")
    sys.exit(int(exit_code(report, fail_on)))


@cli.command("report", context_settings=CONTEXT)
@fact_source_options
@click.option("--rules", "rules_dirs", multiple=True, type=click.Path(exists=False),
              metavar="DIR", help="Add a directory of your own rules (repeatable).")
@click.option("--ignore", multiple=True, metavar="RULE_ID", help="Silence a rule (repeatable).")
@click.option("--format", "fmt", type=click.Choice(["markdown", "json"]), default="markdown",
              show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the report to FILE (atomically).")
@click.option("--no-redact", is_flag=True, help="Do not redact user/host names, UUIDs and secrets.")
@click.option("--debug", is_flag=True, help="Show tracebacks and re-raise probe crashes.")
def report_cmd(facts_file, from_report, python, timeout, rules_dirs, ignore, fmt, output, no_redact,
               debug) -> None:
    """Markdown for a bug ticket: summary, findings, collect_env-style facts (redacted).

    Exits 0 whatever it finds (it is not a gate); 2 on a tool error.
    """
    from torchdoctor.engine import evaluate

    rules = load_all_rules(rules_dirs)
    facts = gather_facts(facts_file, from_report, python, timeout, debug)
    report = evaluate(rules, facts, None, command="report", ignore=ignore)
    report = maybe_redact(report, no_redact)
    from torchdoctor.render import render

    text = render(report, "json" if fmt == "json" else "ticket")
    emit(text, output, [facts_file, from_report])
    if output and output != "-":
        stderr(f"torchdoctor report: wrote {output} ({summary_line(report)})")
    sys.exit(0)


DIFF_FORMATS = click.Choice(["terminal", "json", "markdown"])


def _load_side(name: str):
    from torchdoctor.importers import ReportError, load_report

    data = read_input(name)
    label = "<stdin>" if name == "-" else name
    try:
        facts = load_report(data, label)
    except ReportError as exc:
        raise Abort(str(exc)) from None
    if facts.paste.read_as == "prose":  # check reads such a text; a diff has nothing to compare
        raise Abort(f"{label}: the text states no environment fact to compare")
    return facts


@cli.command("diff", context_settings=CONTEXT)
@click.argument("left", metavar="A")
@click.argument("right", metavar="B")
@click.option("--all", "show_all", is_flag=True, help="Also list differences that do not matter.")
@click.option("--format", "fmt", type=DIFF_FORMATS, default="terminal", show_default=True)
@click.option("--output", "-o", type=click.Path(dir_okay=False), help="Write the comparison to FILE (atomically).")
@click.option("--no-redact", is_flag=True, help="Do not redact user/host names, UUIDs and secrets.")
@click.option("--debug", is_flag=True, help="Show tracebacks.")
def diff_cmd(left, right, show_all, fmt, output, no_redact, debug) -> None:
    """Compare two environments (torchdoctor JSON or pasted collect_env text, '-' = stdin).

    The differences that matter come first (torch, CUDA, cuDNN, driver, GPU, settings,
    threads, Python, OS, key packages); a value unknown on one side is listed apart, never
    counted as a difference. Other differences are counted (--all lists them; --format json
    always lists everything). Exit codes: 0 nothing relevant differs, 1 something does,
    2 unreadable input.
    """
    from torchdoctor.diff import diff_facts
    from torchdoctor.render.diff import headline, render_diff

    if left == "-" and right == "-":
        raise Abort("only one of A and B can be '-' (stdin)")
    a, b = _load_side(left), _load_side(right)
    if no_redact:
        warn("--no-redact: the output may contain user names, host names, UUIDs and secrets")
    else:
        from torchdoctor.redact import redact_report

        a, b = redact_report(a), redact_report(b)
    names = ["<stdin>" if n == "-" else os.path.basename(n) for n in (left, right)]
    if names[0] == names[1]:
        names = ["<stdin>" if n == "-" else n for n in (left, right)]
    if not no_redact:
        from torchdoctor.redact import redact_text

        names = [redact_text(n) for n in names]
    result = diff_facts(a, b, left_name=names[0], right_name=names[1])
    if fmt == "terminal":
        color, width = terminal_style(160)
        color = color and not output
        text = render_diff(result, "terminal", show_all=show_all, color=color, width=width)
    else:
        text = render_diff(result, fmt, show_all=show_all)
    emit(text, output, [left, right])
    if fmt != "terminal" or output:
        stderr(f"torchdoctor diff: {headline(result)}")
    sys.exit(result.exit_code)


def _short_version(value: Optional[str]) -> Optional[str]:
    """lint's --torch-version is echoed in every message: at most 64 characters (a 5,000-digit
    value is refused with one clipped line, exit 2)."""
    if value is not None and len(value) > 64:
        from torchdoctor.safeio import clip

        raise click.BadParameter(f"{clip(value)}: not a version such as 2.4 (at most 64 characters)")
    return value


@cli.command("lint", context_settings=CONTEXT)
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["full", "concise", "json", "sarif", "github"]))
@click.option("--fail-on", type=FAIL_ON, help="Lowest severity that exits 1 (default: warning).")
@click.option("--select", multiple=True, metavar="ID|TAG", help="Only these rules (ids, tags or kinds; ALL).")
@click.option("--ignore", multiple=True, metavar="ID|TAG", help="Leave these rules out.")
@click.option("--extend-select", multiple=True, metavar="ID|TAG", help="Also run these (off-by-default) rules.")
@click.option("--fix", is_flag=True, help="Apply safe fixes in place.")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff instead of applying them.")
@click.option("--unsafe-fixes", is_flag=True, help="Also apply fixes that may change behaviour.")
@click.option("--torch-version", callback=lambda ctx, param, value: _short_version(value),
              help="Target torch (default: the installed one, else the newest known).")
@click.option("--config", type=click.Path(dir_okay=False), help="pyproject.toml to read [tool.torchdoctor.lint] from.")
def lint_cmd(paths, **kw) -> None:
    """Find fake torch settings, replaced objects, pitfalls and deprecated APIs in PATH... (files,
    folders honouring .gitignore, notebooks, '-' for stdin; default '.'). Exit 0 clean, 1
    findings at or above --fail-on, 2 usage error. docs/lint.md lists the rules."""
    from torchdoctor.lint.command import main as lint_main

    lint_main(paths=paths, **kw)


# ----------------------------------------------------------------------------------------
# rules
# ----------------------------------------------------------------------------------------


@cli.group(context_settings=CONTEXT)
def rules() -> None:
    """List, explain and test rules."""


@rules.command("list")
@click.option("--rules", "rules_dirs", multiple=True, metavar="DIR")
@click.option("--format", "fmt", type=click.Choice(["terminal", "json"]), default="terminal")
def rules_list(rules_dirs, fmt) -> None:
    """List every rule (environment rules, then lint rules) with its severity, category and summary."""
    from torchdoctor.lint.knowledge import load as load_lint
    from torchdoctor.render.rules import listing

    stdout_write(listing(load_all_rules(rules_dirs), fmt, lint=load_lint().rules))


@rules.command("explain")
@click.argument("rule_id")
@click.option("--rules", "rules_dirs", multiple=True, metavar="DIR")
def rules_explain(rule_id, rules_dirs) -> None:
    """Show a rule's summary, why, fix, known problems and references."""
    import difflib

    loaded = {r.id: r for r in load_all_rules(rules_dirs)}
    from torchdoctor.lint.knowledge import explain_text, load as load_lint

    if rule_id not in loaded and load_lint().rule(rule_id):
        return stdout_write(explain_text(load_lint().rule(rule_id)))
    if rule_id not in loaded:
        close = difflib.get_close_matches(rule_id, list(loaded), n=3)
        raise Abort(f"unknown rule '{rule_id}'" + (f" (did you mean {', '.join(close)}?)" if close else ""))
    from torchdoctor.render.rules import explain

    text = explain(loaded[rule_id])
    if sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(text))
    else:
        stdout_write(text)


@rules.command("test")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
def rules_test(paths) -> None:
    """Run rule examples (fires / ok / skips) without pytest: for people writing rules."""
    from torchdoctor.rule_examples import run

    sys.exit(run(paths, stdout_write))


@rules.command("schema")
@click.option("--settings", "of_settings", is_flag=True,
              help="The schema of the settings registry (rules/settings.schema.json) instead.")
def rules_schema(of_settings) -> None:
    """Print the JSON schema of rule files (rules/schema.json)."""
    from torchdoctor.rules import rule_schema_text
    from torchdoctor.settings import settings_schema_text

    stdout_write(settings_schema_text() if of_settings else rule_schema_text())


# ----------------------------------------------------------------------------------------
# entry point
# ----------------------------------------------------------------------------------------


from torchdoctor.bench.command import bench  # noqa: E402 - click only; heavy imports run inside

cli.add_command(bench)

from torchdoctor.triage.command import triage  # noqa: E402 - click only; heavy imports run inside

cli.add_command(triage)

from torchdoctor.mcp_server.command import mcp  # noqa: E402 - click only; the SDK is imported inside

cli.add_command(mcp)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    # No third-party pydantic plugin runs inside torchdoctor: plugins observe the validation of
    # hostile input, and finding them scans every installed distribution's entry points
    # (about 30 ms of every run with torch's dependencies installed).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    redact_messages("--no-redact" not in args)
    _exit_on_sigterm()
    try:
        return _main(args, debug)
    finally:
        # no child started for this run (the early torch child, a probe) may outlive it
        if "torchdoctor.probes._prestart" in sys.modules:
            sys.modules["torchdoctor.probes._prestart"].discard()


def _exit_on_sigterm() -> None:
    """SIGTERM unwinds like an exit (status 143), so the finally below kills our children."""
    import signal

    def handler(signum, frame):  # noqa: ARG001
        raise SystemExit(128 + signum)

    try:
        signal.signal(signal.SIGTERM, handler)
    except (ValueError, OSError, AttributeError):  # not the main thread, or no SIGTERM
        pass


def _main(args: list[str], debug: bool) -> int:
    try:
        cli.main(args=args, prog_name="torchdoctor", standalone_mode=False)
    except (StdoutClosed, BrokenPipeError):
        # the reader of our output went away (`| head -1`): say nothing, as Unix tools do
        silence_stdout()
        return EXIT_STDOUT_CLOSED
    except SystemExit as exc:
        if click_saw_epipe():  # click's own output (--help, --version) hit a closed stdout
            return EXIT_STDOUT_CLOSED
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 2)
    except click.exceptions.Abort:
        stderr("torchdoctor: interrupted")
        return 130
    except KeyboardInterrupt:
        stderr("torchdoctor: interrupted")
        return 130
    except click.ClickException as exc:
        import io

        shown = io.StringIO()
        exc.show(file=shown)  # click's usage framing, then its message: redacted and cut
        for line in shown.getvalue().rstrip("\n").split("\n"):
            stderr(message(line))
        return 2
    except Abort as exc:
        if debug:
            raise
        error(str(exc))
        return 2
    except Exception as exc:  # noqa: BLE001 - the one place broad exceptions are caught
        from torchdoctor.errors import UserError

        if debug:
            raise
        if isinstance(exc, OSError) and raised_by_click_echo(exc):
            # click's own output (--help, --version) on a full stdout; stderr never gets here
            # (every stderr line goes through stderr, which swallows its errors)
            silence_stdout()
            error(f"cannot write the report to stdout: {exc.strerror or exc}")
        elif isinstance(exc, UserError):
            error(str(exc))
        else:
            error(f"internal error: {type(exc).__name__}: {exc} (rerun with --debug and report it)")
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
