"""What the CLI writes and reads, and how: stdout carries the report (written whole, to a closed
pipe or a full disk with one line and the right exit status), stderr everything else (redacted,
every line bounded), ``--output`` replaces a file atomically, and user files are read bounded.

``cli.py`` decides what to say; this module only says it. It imports nothing but click at the
top, like ``cli.py`` (``--help`` stays light).
"""

from __future__ import annotations

import os
import sys
from typing import Optional, Sequence

import click

class Abort(Exception):
    """Raised inside commands to exit 2 with one line on stderr."""


class StdoutClosed(Exception):
    """stdout's reader went away (EPIPE): exit 141 quietly, as Unix tools do."""


EXIT_STDOUT_CLOSED = 141
MAX_MESSAGE_CHARS = 500
"""The longest line of a message torchdoctor prints on stderr (longer ones are cut)."""
_redact_stderr = True
"""Messages on stderr are redacted like the report, unless --no-redact was given."""


def redact_messages(on: bool) -> None:
    """Redact what stderr says (the default) or not (``--no-redact``)."""
    global _redact_stderr
    _redact_stderr = on


def message(msg: str) -> str:
    """A message for stderr: redacted (secrets echoed from an input file stay out of CI
    logs), every line without terminal escapes, controls or bidi overrides (a file name or a
    value it echoes is anyone's text) and cut to MAX_MESSAGE_CHARS."""
    from torchdoctor.sanitize import one_line

    msg = str(msg)
    if len(msg) > 1 << 20:  # bound the redaction's (linear) work; only the ends are shown
        msg = msg[: 1 << 19] + "\n" + msg[-(1 << 19):]
    if _redact_stderr:
        from torchdoctor.redact import redact_text

        msg = redact_text(msg)
    return "\n".join(_cut(one_line(line.replace("\t", " "))) for line in msg.split("\n"))


def _cut(line: str) -> str:
    """A line of at most MAX_MESSAGE_CHARS: cut in the middle, where a long path or value is,
    so that both what is named (the start) and the reason (the end) stay."""
    if len(line) <= MAX_MESSAGE_CHARS:
        return line
    head = MAX_MESSAGE_CHARS * 3 // 5
    return line[:head] + "…" + line[len(line) - (MAX_MESSAGE_CHARS - head - 1):]


def stderr(line: str) -> None:
    try:
        click.echo(line, err=True)
    except OSError:  # stderr closed or full: nowhere left to say anything
        pass


def error(msg: str) -> None:
    stderr(f"torchdoctor: error: {message(msg)}")


def warn(msg: str) -> None:
    stderr(f"torchdoctor: warning: {message(msg)}")


def note(msg: str) -> None:
    stderr(f"torchdoctor: note: {message(msg)}")



MAX_INPUT_BYTES = 5 * 1024 * 1024


def read_input(name: str) -> bytes:
    """Read a user file (or '-' for stdin) of at most MAX_INPUT_BYTES: a regular file only
    (a FIFO with no writer, /dev/zero or a directory is refused at once with one line)."""
    from torchdoctor.safeio import read_bounded

    return read_bounded(name, MAX_INPUT_BYTES)


def emit(text: str, output: Optional[str], inputs: Sequence[Optional[str]] = ()) -> None:
    """Write the report to stdout, or to --output (never clobbering an input).

    A regular file (or a new path) is replaced atomically: a temporary file made with
    ``mkstemp`` (O_EXCL, never following a symlink) beside it, given the old file's mode,
    then renamed over it; the temporary file is removed on any failure, Ctrl-C included.
    A symlink to a regular file is followed: its target is replaced and the link kept.
    A character device (/dev/null, a terminal) or a FIFO is written in place, never
    replaced; a FIFO with no reader is refused after FIFO_WAIT_S. Directories, sockets and
    block devices are refused.
    """
    if not output or output == "-":
        stdout_write(text)
        return
    import stat

    _check_link(output)
    real_out = os.path.realpath(output)
    for name in inputs:
        if name and name != "-" and os.path.exists(name) and os.path.realpath(name) == real_out:
            raise Abort(f"--output {output} is also an input file; refusing to overwrite it")
    data = text.encode("utf-8")
    try:
        st: Optional[os.stat_result] = os.stat(real_out)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise Abort(f"--output {output}: cannot write: {exc.strerror or exc}") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            _write_in_place(output, real_out, data, fifo=stat.S_ISFIFO(st.st_mode))
            return
        raise Abort(f"--output {output}: {_file_kind(st.st_mode)}; write the report to a file, "
                    "a FIFO or stdout")
    _write_atomically(output, real_out, data, st)


def _check_link(output: str) -> None:
    """--output that is a symlink: followed only to an existing file, and not when the link
    belongs to someone else in a sticky world-writable directory (/tmp): the rule the kernel's
    fs.protected_symlinks applies to open(), which a rename would otherwise bypass."""
    import stat

    try:
        link = os.lstat(output)
    except OSError:
        return
    if not stat.S_ISLNK(link.st_mode):
        return
    if not os.path.exists(output):
        raise Abort(f"--output {output}: a symbolic link to nothing; refusing to create its target")
    try:
        parent = os.stat(os.path.dirname(os.path.abspath(output)))
    except OSError:
        return
    shared = parent.st_mode & stat.S_ISVTX and parent.st_mode & stat.S_IWOTH
    if shared and hasattr(os, "geteuid") and link.st_uid not in (os.geteuid(), parent.st_uid):
        raise Abort(f"--output {output}: a symbolic link of another user in a shared directory; "
                    "refusing to follow it")


FIFO_WAIT_S = 5.0
"""How long --output FIFO waits for a reader to open the FIFO's other end."""


def _file_kind(mode: int) -> str:
    import stat

    for test, kind in ((stat.S_ISDIR, "is a directory"), (stat.S_ISSOCK, "is a socket"),
                       (stat.S_ISBLK, "is a block device")):
        if test(mode):
            return kind
    return "is not a regular file"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _write_in_place(output: str, real_out: str, data: bytes, fifo: bool) -> None:
    """Write to a character device or FIFO as it is (no temporary file, no rename): opened
    without blocking, so a FIFO nobody reads is refused instead of waiting for ever."""
    import time

    flags = os.O_WRONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    flags |= getattr(os, "O_NOCTTY", 0)
    deadline = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(real_out, flags)
            break
        except OSError as exc:
            import errno

            if fifo and exc.errno == errno.ENXIO:  # no reader at the other end (yet)
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                raise Abort(f"--output {output}: a FIFO that nobody reads (waited {FIFO_WAIT_S:g} s "
                            "for a reader)") from None
            raise Abort(f"--output {output}: cannot write: {exc.strerror or exc}") from None
    try:
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)  # a reader is there: write all of it, as `cat > FIFO` does
        _write_all(fd, data)
    except OSError as exc:
        raise Abort(f"--output {output}: cannot write: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _write_atomically(output: str, real_out: str, data: bytes, st: Optional[os.stat_result]) -> None:
    import tempfile

    directory, base = os.path.split(real_out)
    directory = directory or "."
    mode = (st.st_mode & 0o777) if st is not None else (0o666 & ~_umask())
    tmp: Optional[str] = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{base[:64]}.", suffix=".torchdoctor.tmp", dir=directory)
        try:
            if hasattr(os, "fchmod"):
                os.fchmod(fd, mode)  # mkstemp made it 0600
            if st is not None and hasattr(os, "fchown") and hasattr(os, "geteuid") and os.geteuid() == 0:
                try:  # root rewriting someone's report keeps it theirs
                    os.fchown(fd, st.st_uid, st.st_gid)
                except OSError:
                    pass
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, real_out)
        tmp = None
    except OSError as exc:
        raise Abort(f"--output {output}: cannot write: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:  # any failure, Ctrl-C and SIGTERM included
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _umask() -> int:
    """The process umask (what a plain open() would apply to a new file)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)  # no /proc: read it by setting it (and put it back at once)
    os.umask(mask)
    return mask


def stdout_write(text: str) -> None:
    """The report on stdout. Its reader gone (EPIPE) -> StdoutClosed; any other failure
    (ENOSPC: ``> /dev/full``) -> one line, exit 2. Either way stdout is then pointed at
    /dev/null, so that the interpreter's last flush has nothing left to fail on."""
    stream = sys.stdout
    try:
        try:
            stream.write(text)
        except UnicodeEncodeError:
            # a locale without UTF-8 (LANG=C on old Pythons): degrade characters, keep the report
            data = text.encode(getattr(stream, "encoding", None) or "ascii", errors="replace")
            stream.flush()
            stream.buffer.write(data)
        stream.flush()
    except BrokenPipeError:
        silence_stdout()
        raise StdoutClosed() from None
    except OSError as exc:
        silence_stdout()
        raise Abort(f"cannot write the report to stdout: {exc.strerror or exc}") from None


def raised_by_click_echo(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name == "echo" and os.path.basename(os.path.dirname(code.co_filename)) == "click":
            return True
        tb = tb.tb_next
    return False


def click_saw_epipe() -> bool:
    """click swallows EPIPE on its own output by wrapping the streams and exiting 1; undo the
    wrapping (a later run in this process gets the real streams) and say it happened."""
    seen = False
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if type(stream).__name__ == "_PacifyFlushWrapper":
            setattr(sys, name, stream.wrapped)
            seen = True
    if seen:
        silence_stdout()
    return seen


def silence_stdout() -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
    except OSError:
        pass



def terminal_style(max_width: int) -> tuple[bool, int]:
    """Colour only on a terminal without NO_COLOR (any non-empty value, no-color.org).
    Width: COLUMNS when set (also when piped, as shutil.get_terminal_size reads it), else the
    terminal's width, else 100; never one too narrow to render (some CI ptys report 0)."""
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    width = 100
    columns = 0
    env_columns = os.environ.get("COLUMNS", "").strip()
    if env_columns.isdigit() and int(env_columns) >= 40:
        columns = int(env_columns)
    elif sys.stdout.isatty():
        try:
            columns = os.get_terminal_size(sys.stdout.fileno()).columns
        except OSError:
            columns = 0
    if columns >= 40:
        width = min(columns, max_width)
    return color, width


class FiniteRange(click.ParamType):
    """A finite number from ``lo`` to ``hi``: ``nan`` (which every comparison lets through, so
    ``click.FloatRange`` accepts it), ``inf`` and ``-inf`` are refused with one line naming the
    option and the clipped value, exit 2."""

    name = "number"

    def __init__(self, lo: float, hi: float, unit: str = ""):
        self.lo, self.hi, self.unit = lo, hi, unit

    def convert(self, value, param, ctx):
        import math

        from torchdoctor.safeio import clip

        try:
            number = value if isinstance(value, float) else float(str(value).strip())
        except (ValueError, OverflowError):
            number = math.nan
        if not (math.isfinite(number) and self.lo <= number <= self.hi):
            unit = f" {self.unit}" if self.unit else ""
            self.fail(f"{clip(value)}: not a finite number{unit} from {self.lo:g} to {self.hi:g}", param, ctx)
        return number


def workload_options(what: str):
    """The workload flags `recommend` and `bench` share (the same names, the same meaning);
    ``what`` completes the --workload help."""
    options = [
        click.option("--task", help="Task preset (rules/tasks.yaml; listed in `recommend --help`)."),
        click.option("--workload", "workload_file", type=str, metavar="FILE",
                     help=f"Workload YAML file ({what})."),
        click.option("--input", "input_shapes", help="fixed | multiscale | variable-length"),
        click.option("--precision", help="auto | fp32 | tf32 | bf16 | fp16 | fp8"),
        click.option("--model-family", "model_family", help="conv | transformer | mixed"),
        click.option("--distributed", help="none | ddp | fsdp"),
        click.option("--reproducible", "reproducibility", help="none | seeded | bitwise"),
        click.option("--inference", is_flag=True, default=None, help="Inference rather than training."),
    ]

    def apply(func):
        for option in reversed(options):
            func = option(func)
        return func

    return apply
