"""Reasons of an unknown value (``Unavailable.unavailable``) that more than one layer must
recognise: the source that records one and the renderer that reads it back share the words
here, never a copy of them."""

COULD_NOT_COLLECT = "report says: could not collect"
"""A pasted collect_env report printed "Could not collect" for the value: the importer records
it, and the collect_env layout (render/collect_env.py) writes "Could not collect" back only
for it."""
