"""`torchdoctor bench`: measure the plan on this machine (docs/bench.md).

Importing this package imports nothing: ``results`` is pure data (the renderers read it),
``configs`` generates configurations, ``stats`` judges timings, ``runner`` drives the child
processes (``_child``, standard library and torch only), ``measured`` feeds results back into
``recommend --measured``, ``command`` is the CLI command.
"""
