# Fake torch whose import prints 200 MiB on stdout and 50 MiB on stderr (a debug build tracing
# every op, a loop in a warning filter), between a first and a last line that say where they
# are, then imports fine: torchdoctor must keep the head and the tail of each stream, and cost
# about a megabyte for it, not the 250 MiB.
import os

_block = b"x" * (1 << 20)
os.write(1, b"FLOOD-STDOUT-FIRST-LINE\n")
os.write(2, b"FLOOD-STDERR-FIRST-LINE\n")
for _ in range(200):
    os.write(1, _block)
for _ in range(50):
    os.write(2, _block)
os.write(1, b"\nFLOOD-STDOUT-LAST-LINE\n")
os.write(2, b"\nFLOOD-STDERR-LAST-LINE\n")

__version__ = "0.4.1"
