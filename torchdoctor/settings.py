"""The closed registry of recommendable settings (mechanism; the table is rules/settings.yaml).

Each key knows its kind (env var before import, attribute assignment, call, code-level
value), its type, the torch versions in which it exists, and the Python statement that sets
it. ``Setting.render(value, torch_version)`` is the only place a value becomes Python source:
values are validated against the type first and written with ``repr()``, so user text can
never reach the snippet unescaped.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Literal, Optional, Union

from torchdoctor import yamlio
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict, ValidationError

from torchdoctor.errors import RuleFileError
from torchdoctor.paths import default_rules_dir

Kind = Literal["env", "assign", "call", "code"]
KIND_ORDER = {"env": 0, "call": 1, "assign": 1, "code": 2}


class Variant(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    torch: str
    python: Optional[str] = None
    since: Optional[str] = None
    until: Optional[str] = None


class Setting(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    key: str
    kind: Kind
    type: Literal["bool", "int", "float", "str", "enum"]
    python: str
    summary: str
    references: list[str]
    choices: Optional[list[str]] = None
    min: Optional[float] = None
    since: Optional[str] = None
    until: Optional[str] = None
    guard: Optional[Literal["cuda"]] = None
    variants: list[Variant] = []
    unverified: Optional[str] = None
    notes: Optional[str] = None

    # -- validation of values -----------------------------------------------------------
    def validate_value(self, value: Any) -> Any:
        """Return the value coerced to the setting's type, or raise ValueError."""
        t = self.type
        if t == "bool":
            if isinstance(value, bool):
                return value
            raise ValueError(f"{self.key} expects true/false, got {value!r}")
        if t in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{self.key} expects a number, got {value!r}")
            if t == "int":
                if int(value) != value:
                    raise ValueError(f"{self.key} expects an integer, got {value!r}")
                value = int(value)
            if self.min is not None and value < self.min:
                raise ValueError(f"{self.key} must be >= {self.min:g}, got {value!r}")
            return value
        if not isinstance(value, str):
            raise ValueError(f"{self.key} expects text, got {value!r}")
        if t == "enum" and value not in (self.choices or []):
            raise ValueError(f"{self.key} must be one of {', '.join(self.choices or [])}, got {value!r}")
        if t == "str":
            # free text never reaches generated code: only printable, no quotes/newlines
            if any(c in value for c in "\"'\\\n\r") or not value.isprintable():
                raise ValueError(f"{self.key}: refusing a value with quotes or control characters")
        return value

    # -- versions -----------------------------------------------------------------------
    def resolve(self, torch_version: Optional[str]) -> "Setting":
        """The setting as it applies to ``torch_version`` (variants applied)."""
        v = _version(torch_version)
        if v is None:
            return self
        for variant in self.variants:
            if v in SpecifierSet(variant.torch):
                changes = {k: getattr(variant, k) for k in ("python", "since", "until")}
                return self.model_copy(update={k: x for k, x in changes.items() if x is not None})
        return self

    def available_in(self, torch_version: Optional[str]) -> bool:
        """Whether the setting exists and works in ``torch_version`` (unknown -> True)."""
        s = self.resolve(torch_version)
        v = _version(torch_version)
        if v is None:
            return True
        if s.since is not None and v < Version(s.since):
            return False
        if s.until is not None and v >= Version(s.until):
            return False
        return True

    def render(self, value: Any, torch_version: Optional[str] = None) -> str:
        value = self.validate_value(value)
        s = self.resolve(torch_version)
        raw = value if (self.type == "enum" and str(value).isidentifier()) else "INVALID"
        return s.python.replace("{value}", repr(value)).replace("{raw}", str(raw))


def _version(text: Optional[str]) -> Optional[Version]:
    if not text:
        return None
    try:
        v = Version(str(text))
    except InvalidVersion:
        return None
    return Version(v.base_version)  # 2.13.0+cpu / 2.13.0.dev2026 compare as 2.13.0


class Registry(BaseModel):
    model_config = ConfigDict(frozen=True)
    settings: dict[str, Setting]

    def __contains__(self, key: str) -> bool:
        return key in self.settings

    def __getitem__(self, key: str) -> Setting:
        return self.settings[key]

    def keys(self) -> list[str]:
        return list(self.settings)


def load_registry(path: Optional[Path] = None) -> Registry:
    return _load_registry(str(path or default_rules_dir() / "settings.yaml"))


@functools.lru_cache(maxsize=4)
def _load_registry(path: str) -> Registry:
    raw = yamlio.read_file(path, RuleFileError)
    if not isinstance(raw, dict) or not isinstance(raw.get("settings"), dict):
        raise RuleFileError(f"{path}: expected a mapping with a 'settings' table")
    out: dict[str, Setting] = {}
    for key, body in raw["settings"].items():
        try:
            setting = Setting.model_validate({"key": key, **(body or {})})
            for spec in [v.torch for v in setting.variants]:
                SpecifierSet(spec)
        except (ValidationError, InvalidSpecifier, TypeError) as exc:
            first = str(exc).splitlines()
            raise RuleFileError(f"{path}: setting {key}: {' '.join(first[:3])}") from None
        out[key] = setting
    return Registry(settings=out)


def kind_order(setting: Union[Setting, str]) -> int:
    kind = setting.kind if isinstance(setting, Setting) else setting
    return KIND_ORDER[kind]
