# Fake torch that dies of SIGILL during import, as a build using AVX on a CPU without it would.
import os
import signal

os.kill(os.getpid(), signal.SIGILL)
