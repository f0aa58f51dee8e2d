# Fake torch whose import starts a process that leaves the torch child's session (setsid) and
# sleeps, as a daemon started by an import hook or a plugin would. $TORCHDOCTOR_FAULTS_SPAWN:
#   keep       the process keeps the torch child's stdout/stderr open; the import completes
#   keep-exit  the same, and then the torch child exits with status 3 without printing facts
#   quiet      the process closes its output first (a proper daemon); the import completes
# The process writes its id to $TORCHDOCTOR_FAULTS_PIDFILE (so a test knows it ran) and carries
# $TORCHDOCTOR_FAULTS_MARKER in its argv (and, inherited, in its environment).
import os
import sys

_mode = os.environ.get("TORCHDOCTOR_FAULTS_SPAWN", "keep")
_read, _write = os.pipe()
if os.fork() == 0:  # the process that escapes
    try:
        os.close(_read)
        os.setsid()
        if _mode == "quiet":
            _null = os.open(os.devnull, os.O_RDWR)
            for _fd in (0, 1, 2):
                os.dup2(_null, _fd)
        _path = os.environ.get("TORCHDOCTOR_FAULTS_PIDFILE")
        if _path:
            with open(_path + ".tmp", "w") as _fh:
                _fh.write(str(os.getpid()))
            os.replace(_path + ".tmp", _path)
        os.write(_write, b"started")
        os.close(_write)
        marker = os.environ.get("TORCHDOCTOR_FAULTS_MARKER", "")
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", marker])
    finally:
        os._exit(1)
os.close(_write)
os.read(_read, 16)  # go on once it runs (and has written its pid)
os.close(_read)
if _mode == "keep-exit":
    sys.stdout.flush()
    os._exit(3)

__version__ = "0.4.1"
