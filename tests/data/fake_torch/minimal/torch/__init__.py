# Fake torch that imports fine but has almost nothing (an ancient or stripped build), and
# writes noise to stdout during import, from Python and from native code (fd 1).
import os

print("noise from torch's import on stdout")
os.write(1, b"{not json either\n")

__version__ = "0.4.1"
