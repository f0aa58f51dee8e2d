"""Where torchdoctor is published. The one setting is ``[project.urls]`` in pyproject.toml
(``Repository``), read at run time from the installed distribution's metadata (its
``Project-URL`` entries), so a new name or address is one line there. Without metadata (a
source tree run without installing it) the documentation in the tree, as ``file:`` URIs, and
None where there is none."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Optional

DISTRIBUTION = "torchdoctor"
_LABELS = ("repository", "source", "homepage")
"""Project-URL labels tried in order for the repository address."""


@functools.lru_cache(maxsize=1)
def repository_url() -> Optional[str]:
    """The https address of ``[project.urls]`` in the installed metadata, or None."""
    try:
        from importlib.metadata import metadata

        entries = metadata(DISTRIBUTION).get_all("Project-URL") or []
    except Exception:  # noqa: BLE001 - not installed, or unreadable metadata: the fallback
        return None
    urls = {}
    for entry in entries:
        label, _, url = str(entry).partition(",")
        url = url.strip().rstrip("/")
        if url.startswith("https://") and len(url) <= 200 and not any(c.isspace() for c in url):
            urls.setdefault(label.strip().lower(), url)
    return next((urls[label] for label in _LABELS if label in urls), None)


def docs_uri(page: str, anchor: str = "") -> Optional[str]:
    """A page of docs/ (``lint.md``, anchor ``fake-backends-setting``): in the repository of
    the metadata, else the file in this source tree, else None."""
    fragment = f"#{anchor}" if anchor else ""
    url = repository_url()
    if url:
        return f"{url}/blob/main/docs/{page}{fragment}"
    local = Path(__file__).resolve().parent.parent / "docs" / page
    return local.as_uri() + fragment if local.is_file() else None
