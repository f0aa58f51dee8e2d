# Fake torch that dies of SIGSEGV during import, as a broken native library would.
import os
import signal

os.kill(os.getpid(), signal.SIGSEGV)
