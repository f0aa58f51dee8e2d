# Fake torch whose import fails on a missing pure-Python dependency (not on torch itself).
import typing_extensions_that_is_not_installed  # noqa: F401
