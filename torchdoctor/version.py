"""The version of torchdoctor, in a module of its own: modules that need it (the engine, the
snippet, the rule cache's key) import it from here, not from the package, whose lazy API
functions import most of the package (an import cycle)."""

__version__ = "0.1.0"
