# Fake torch whose import never finishes (like tests/data/fake_torch/hang), after writing the
# id of its process to the file named by TORCHDOCTOR_FAULTS_PIDFILE: a test then knows that the
# torch child is running, and which process it is, before it signals torchdoctor.
import os
import time

_path = os.environ.get("TORCHDOCTOR_FAULTS_PIDFILE")
if _path:
    with open(_path + ".tmp", "w") as _fh:
        _fh.write(str(os.getpid()))
    os.replace(_path + ".tmp", _path)


def _wait_for_driver():
    time.sleep(600)


_wait_for_driver()
