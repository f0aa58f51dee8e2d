"""`torchdoctor lint`: settings that do nothing, objects replaced by plain values, pitfalls and
deprecated torch APIs, found statically in source files and notebooks (docs/lint.md).

Nothing here imports torch, pydantic, jinja2 or rich: lint runs where torch does not import
and costs a few tens of milliseconds per file.
"""
