"""Safe YAML loading, through libyaml's C safe loader when PyYAML was built with it.

``yaml.load(text, Loader=CSafeLoader)`` is exactly ``yaml.safe_load`` (same safe constructor),
about 8x faster on our rule files; that is what keeps rule loading out of `check`'s budget.
"""

from __future__ import annotations

from typing import Any

import yaml

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
YAMLError = yaml.YAMLError


def safe_load(text: Any) -> Any:
    return yaml.load(text, Loader=SafeLoader)  # noqa: S506 - a SafeLoader


def error_line(exc: BaseException) -> str:
    """':N' for a YAML error with a position, else ''."""
    mark = getattr(exc, "problem_mark", None)
    return f":{mark.line + 1}" if mark is not None else ""


def read_file(path: Any, error: type) -> Any:
    """Parse a YAML file; any problem raises ``error("path[:line]: what")``."""
    from pathlib import Path

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        return safe_load(text)
    except YAMLError as exc:
        raise error(f"{path}{error_line(exc)}: invalid YAML: {getattr(exc, 'problem', None) or exc}") from None
