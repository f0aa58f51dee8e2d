"""Every install and link in the docs works from a clone (issue 21, item 14): torchdoctor is not
published, so no doc may say `pip install torchdoctor` or point at its future repository
address; that address is one setting, ``[project.urls]`` in pyproject.toml, which the SARIF
output reads from the installed metadata (torchdoctor/project.py), with a fallback without it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOCS = sorted([REPO / "README.md", REPO / ".pre-commit-hooks.yaml", *(REPO / "docs").glob("*.md")])

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
NAME = PYPROJECT["project"]["name"]
URLS = PYPROJECT["project"].get("urls", {})

# `pip install torchdoctor`, `pipx install 'torchdoctor[mcp]'`, `uv tool install torchdoctor`,
# `uvx torchdoctor ...` (without --from a path): all need a published package
_INSTALL = re.compile(r"\b(?:pip3?|pipx|uv pip|uv tool) install\s+(?:-\S+\s+)*['\"]?([^\s'\"&|;`)]+)")
_UVX = re.compile(r"\buvx\s+(?:--from\s+(\S+)\s+)?(\S+)")


def _published(target: str) -> bool:
    return re.fullmatch(rf"{re.escape(NAME)}(\[[^\]]*\])?([=<>~!].*)?", target) is not None


def _problems(text: str) -> list[str]:
    out = [f"`{m.group(0)}`" for m in _INSTALL.finditer(text) if _published(m.group(1))]
    out += [f"`{m.group(0)}`" for m in _UVX.finditer(text)
            if (m.group(1) is None and _published(m.group(2))) or (m.group(1) and _published(m.group(1)))]
    out += [f"link {url}" for url in URLS.values() if url.rstrip("/") in text]
    return out


def test_the_address_is_one_setting_of_pyproject():
    assert set(URLS) == {"Repository"} and URLS["Repository"].startswith("https://")


def test_the_checker_finds_what_would_not_work_from_a_clone():
    url = URLS["Repository"]
    for bad in ("pip install torchdoctor", "pipx install 'torchdoctor[mcp]'", "uvx torchdoctor check",
                "- run: pip install -U torchdoctor && torchdoctor lint", f"- repo: {url}",
                f"see {url}/blob/main/docs/lint.md"):
        assert _problems(bad), bad
    for good in ("pip install . && torchdoctor check", "pipx install .", "uvx --from . torchdoctor check",
                 "pip install torch==2.13.0 -e '.[test]'", "pip install ./tools/torchdoctor",
                 "/tmp/v/bin/pip install torchfix", "pipx install /path/to/torchdoctor"):
        assert not _problems(good), good


@pytest.mark.parametrize("path", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_install_and_link_works_from_a_clone(path):
    assert _problems(path.read_text(encoding="utf-8")) == []


def test_the_readme_installs_with_pip_pipx_and_uvx_from_the_clone():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for command in ("pip install .", "pipx install .", "uvx --from . torchdoctor"):
        assert command in readme


# -- SARIF: helpUri / informationUri from the metadata, with a fallback without it ------------


def _sarif(tmp_path, capsys) -> dict:
    from torchdoctor.cli import main

    script = tmp_path / "train.py"
    script.write_text("import torch\ntorch.backends.cudnn.determinstic = True\n", encoding="utf-8")
    main(["lint", "--format", "sarif", str(script)])
    return json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]


def _metadata(monkeypatch, entries):
    import importlib.metadata

    from torchdoctor import project

    class Meta:
        def get_all(self, key):
            return entries if key == "Project-URL" else None

    def metadata(name):
        if entries is None:
            raise importlib.metadata.PackageNotFoundError(name)
        return Meta()

    monkeypatch.setattr(importlib.metadata, "metadata", metadata)
    project.repository_url.cache_clear()


def test_sarif_links_come_from_the_installed_metadata(tmp_path, capsys, monkeypatch):
    from torchdoctor import project

    _metadata(monkeypatch, ["Homepage, https://example.org/home", "Repository, https://git.example.org/td/"])
    try:
        driver = _sarif(tmp_path, capsys)
    finally:
        project.repository_url.cache_clear()
    assert driver["informationUri"] == "https://git.example.org/td"
    rule = next(r for r in driver["rules"] if r["id"] == "fake-backends-setting")
    assert rule["helpUri"] == "https://git.example.org/td/blob/main/docs/lint.md#fake-backends-setting"


def test_sarif_without_metadata_links_the_docs_of_the_tree(tmp_path, capsys, monkeypatch):
    from torchdoctor import project

    _metadata(monkeypatch, None)
    try:
        driver = _sarif(tmp_path, capsys)
    finally:
        project.repository_url.cache_clear()
    assert "informationUri" not in driver
    rule = next(r for r in driver["rules"] if r["id"] == "fake-backends-setting")
    assert rule["helpUri"] == (REPO / "docs" / "lint.md").as_uri() + "#fake-backends-setting"


def test_the_installed_metadata_carries_pyprojects_address():
    import importlib.metadata

    from torchdoctor import project

    try:
        importlib.metadata.metadata(NAME)
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("torchdoctor is not installed (the README's test command installs it)")
    project.repository_url.cache_clear()
    assert project.repository_url() == URLS["Repository"].rstrip("/")
