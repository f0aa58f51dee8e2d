"""Read environment facts out of whatever people paste into a ticket.

collect_env's own layout is read by :mod:`torchdoctor.importers.collect_env`. Tickets carry the
environment in many other shapes as well: vLLM's and sglang's collectors (``Key : Value`` under
``=====`` banners), issue-template bullets (``- GPU: NVIDIA GeForce RTX 5090``), Lightning's,
transformers', ComfyUI's, Ultralytics' and detectron2's tables, ``pip list`` / ``pip freeze`` /
``pip show`` / ``conda list``, ``nvidia-smi``, install commands, and torch's own warnings and
errors, which often say more than the rest ("NVIDIA GeForce RTX 5090 with CUDA capability sm_120
is not compatible with the current PyTorch installation. The current PyTorch install supports
CUDA capabilities sm_50 ... sm_90").

How it works:

- The text is read line by line (at most ``MAX_LINES`` lines, each cut at ``MAX_LINE_CHARS``
  characters, quote marks, bullets and markdown removed). Every regular expression runs on one
  such line, only where its literal ``needle`` occurs, and is linear (checked when the patterns
  are loaded: no nested quantifier, no unbounded repetition).
- Each line that states something becomes *evidence*: a value, its line number, the kind of line
  (``torch warning``, ``pip list``, ``prose`` ...) and a rank (tool output and torch's own
  messages 1; package lists, paths and platform strings 2; install commands 3; prose 4). For
  each fact the best rank wins, then the earliest line.
- What the evidence says is turned into facts the way a collect_env report is (the same code:
  the evidence becomes collect_env fields and package rows), then torch's messages add what no
  report field holds: the compiled arch list, a GPU's compute capability as torch states it,
  the driver's CUDA version, torch's import failure, cuDNN versions, torch.compile's refusal,
  an extension's arch flags.
- ``Facts.sources`` records, for every fact taken from outside collect_env's own fields, where
  it came from (``"gpu.name": "torch warning, line 3"``); the text itself is never copied there.
  What the paste does not state is ``Unavailable("the paste does not say")``.

All knowledge of wordings (labels, torch's messages, tool formats) is in
``rules/data/paste_patterns.yaml``; this package is the mechanism.

Known error and warning messages (``rules/data/known_messages.yaml``: "GLIBC_2.28 not found",
NumPy 1.x/2.x, DataLoader bus errors, NCCL's shared-memory failures, ...) are found by
:mod:`.messages` anywhere in the text, quoted or wrapped, into ``Facts.paste.messages`` with the
lines they stand on. No text is refused: one that states nothing gets a note saying so.

The package: :mod:`.wording` loads and checks the patterns, :mod:`.evidence` holds what the
reader found (``Paste``), :mod:`.reader` reads the lines, and :mod:`.merge` turns the evidence
into facts (:func:`facts_from_text`). The names other modules use are re-exported here.
"""

from __future__ import annotations

from torchdoctor.importers.paste.evidence import (
    MAX_GPUS,
    MAX_LABEL_CHARS,
    MAX_LINE_CHARS,
    MAX_LINES,
    MAX_MESSAGE_CHARS,
    MAX_NAME_LOOKUPS,
    MAX_ROWS,
    MAX_VALUE_CHARS,
    PASTE_SILENT,
    RANK_INSTALL,
    RANK_LIST,
    RANK_PROSE,
    RANK_TOOL,
    Evidence,
    Paste,
)
from torchdoctor.importers.paste.merge import facts_from_text
from torchdoctor.importers.paste.reader import read_paste
from torchdoctor.importers.paste.wording import (
    PATTERNS_FILE,
    _check_linear,
    _compile,
    _norm_label,
    patterns,
)

__all__ = [
    "MAX_GPUS",
    "MAX_LABEL_CHARS",
    "MAX_LINE_CHARS",
    "MAX_LINES",
    "MAX_MESSAGE_CHARS",
    "MAX_NAME_LOOKUPS",
    "MAX_ROWS",
    "MAX_VALUE_CHARS",
    "PASTE_SILENT",
    "PATTERNS_FILE",
    "RANK_INSTALL",
    "RANK_LIST",
    "RANK_PROSE",
    "RANK_TOOL",
    "Evidence",
    "Paste",
    "facts_from_text",
    "patterns",
    "read_paste",
]
