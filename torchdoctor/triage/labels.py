"""A repository's own label mapping (``--labels MAPPING.yaml``): which of its labels a finding's category, rule id,
known message id or a kind of junk earns, and the allow-list of the labels torchdoctor may add or remove at all.
torchdoctor never invents a label: without a mapping it proposes none, and a mapping that names a label outside its
own allow-list is refused (one line, exit 2). The file's shape (docs/github-action.md, examples/triage-labels.yaml):

    labels: ["module: cuda", "needs environment"]   # the allow-list
    categories: {cuda-unavailable: ["module: cuda"]}
    rules: {multiple-torch-installs: ["module: binaries"]}
    messages: {glibc-too-old: ["module: binaries"]}
    junk: {template: ["needs environment"], empty: ["needs environment"]}
    command: python -m torch.utils.collect_env      # optional: the command the comment asks for
"""

from __future__ import annotations

from typing import Any, Optional

from torchdoctor.errors import UserError

MAX_MAPPING_BYTES = 256 * 1024
MAX_LABELS = 100
MAX_LABEL_CHARS = 50
"""GitHub's limit on a label's name."""
SECTIONS = ("categories", "rules", "messages", "junk")
KEYS = frozenset(("labels", "command", *SECTIONS))


class MappingError(UserError):
    """A malformed label mapping: one line naming the file and what is wrong (exit 2)."""


def _label_list(value: Any, where: str) -> list[str]:
    from torchdoctor.safeio import clip

    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or len(value) > MAX_LABELS:
        raise MappingError(f"{where}: must be a list of label names (at most {MAX_LABELS}), got {clip(value)}")
    for name in value:
        if not isinstance(name, str) or not name.strip() or len(name) > MAX_LABEL_CHARS or "\n" in name:
            raise MappingError(f"{where}: {clip(name)} is not a label name (text of 1 to {MAX_LABEL_CHARS} "
                               "characters on one line)")
    return list(dict.fromkeys(value))


def check_mapping(data: Any, name: str) -> dict:
    """The mapping, checked: every section a mapping of names to labels, every label in the allow-list."""
    from torchdoctor.safeio import clip

    if not isinstance(data, dict):
        raise MappingError(f"{name}: a label mapping must be a mapping with 'labels' (the allow-list), "
                           f"got {type(data).__name__}")
    unknown = sorted(str(k) for k in data if k not in KEYS)
    if unknown:
        raise MappingError(f"{name}: unknown key {clip(unknown[0])} (known: {', '.join(sorted(KEYS))})")
    if "labels" not in data:
        raise MappingError(f"{name}: no 'labels' (the allow-list of the labels torchdoctor may add or remove)")
    allowed = _label_list(data["labels"], f"{name}: labels")
    out: dict = {"labels": allowed}
    for section in SECTIONS:
        value = data.get(section) or {}
        if not isinstance(value, dict):
            raise MappingError(f"{name}: {section}: must be a mapping of names to labels, got {clip(value)}")
        checked = {}
        for key, labels in value.items():
            where = f"{name}: {section}: {clip(key)}"
            checked[str(key)] = _label_list(labels, where)
            for label in checked[str(key)]:
                if label not in allowed:
                    raise MappingError(f"{where}: label {clip(label)} is not in the allow-list 'labels'")
        out[section] = checked
    command = data.get("command")
    if command is not None and (not isinstance(command, str) or not command.strip() or len(command) > 120
                                or "\n" in command):
        raise MappingError(f"{name}: command: must be one line of at most 120 characters, got {clip(command)}")
    if command:
        out["command"] = command.strip()
    return out


def load_mapping(path: str) -> dict:
    """Read and check a mapping file (bounded, YAML safe_load; a YAML error is one line with its line number)."""
    import yaml

    from torchdoctor.safeio import InputError, read_bounded

    try:
        raw = read_bounded(path, MAX_MAPPING_BYTES, what="--labels")
    except InputError as exc:
        raise MappingError(str(exc)) from None
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise MappingError(f"--labels {path}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        what = getattr(exc, "problem", None) or "not valid YAML"
        raise MappingError(f"--labels {path}{where}: {what}") from None
    return check_mapping(data, f"--labels {path}")


def labels_for(result: dict, mapping: Optional[dict]) -> list[str]:
    """The labels a triage result earns under ``mapping`` (in the allow-list's order); none without one."""
    if not mapping:
        return []
    earned: set[str] = set()
    for f in result["findings"]:
        if f["severity"] not in ("error", "warning"):
            continue
        earned.update(mapping["categories"].get(f["category"], ()))
        earned.update(mapping["rules"].get(f["id"], ()))
        if f.get("message_id"):
            earned.update(mapping["messages"].get(f["message_id"], ()))
    for kind in result["junk"]:
        earned.update(mapping["junk"].get(kind, ()))
    return [label for label in mapping["labels"] if label in earned]
