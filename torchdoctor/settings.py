"""The closed registry of recommendable settings (mechanism; the table is rules/settings.yaml).

Each key knows its kind (env var before import, attribute assignment, call, code-level
value), its type, the torch versions in which it exists, the Python statement that sets it
(one for every value, or one per value: ``values``), and the settings it only makes sense
with (``requires``). ``Setting.render(value, torch_version)`` is the only place a value
becomes Python source: values are validated against the type first and written with
``repr()``, so user text can never reach the snippet unescaped.
"""

from __future__ import annotations

import functools
import math
import re
from pathlib import Path
from typing import Any, Literal, Optional, Union

from torchdoctor import yamlio
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version
from torchdoctor.model import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from torchdoctor.errors import RuleFileError
from torchdoctor.paths import default_rules_dir
from torchdoctor.safeio import clip

MAX_INT = 2**63 - 1
"""Largest integer a setting takes (a thread count, a seed): what torch's C++ side holds."""
MAX_TEXT = 4096
"""Longest text value of a setting."""

Kind = Literal["env", "assign", "call", "code"]
When = Literal["torch-import", "cuda-init", "distributed-init", "first-use"]
KIND_ORDER = {"env": 0, "call": 1, "assign": 1, "code": 2}


def value_key(value: Any) -> str:
    """How a value is named in a ``values:`` table (YAML true/false -> "true"/"false")."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _value_table(raw: Any) -> Any:
    if isinstance(raw, dict):
        return {value_key(k): v for k, v in raw.items()}
    return raw


class _Writers(BaseModel):
    """How a setting is written and in which torch versions: shared by a setting and its
    per-version variants."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    python: Optional[str] = None
    values: Optional[dict[str, str]] = None
    since: Optional[str] = None
    until: Optional[str] = None
    note: Optional[str] = None

    @field_validator("values", mode="before")
    @classmethod
    def value_names(cls, raw: Any) -> Any:
        return _value_table(raw)


class Variant(_Writers):
    """How the setting is written in the torch versions matching ``torch``. A variant that
    gives ``python`` or ``values`` replaces both writers of the setting: a value it has no
    writer for does not exist in those versions (``note`` says why, in the plan's drop reason)."""

    torch: str


class Requirement(BaseModel):
    """Another setting this one only makes sense with (``values``: with one of these values)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    setting: str
    values: Optional[list[Union[bool, str]]] = None
    reason: str


class Getter(BaseModel):
    """How the current value is read back, as data: an attribute path on torch, a function of
    torch called without arguments, or an environment variable (never code)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    attribute: Optional[str] = None
    call: Optional[str] = None
    env: Optional[str] = None
    result: Optional[Literal["enum-name"]] = None
    """``enum-name``: the value is an enum, read as its lower-case member name."""
    probe: bool = True
    """False: read back by apply() only, not reported among the torch facts."""

    def as_data(self) -> dict[str, Any]:
        """The getter as the torch child takes it (``_child_settings.read``)."""
        return self.model_dump(exclude_defaults=True)


class TakesEffect(BaseModel):
    """When the library reads the setting: apply() tells "changed" from "set, but takes effect
    only in new processes" with it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    when: When
    source: str
    references: list[str] = []


class Use(BaseModel):
    """A constant the snippet defines for the user's own code, and how that code takes it."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    how: str


class _FakeAdvice(BaseModel):
    """What audit() says of a fake name (a fake look-alike, or an entry of ``fakes:``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    did_you_mean: Optional[str] = None
    """A fake's real statement, as audit() offers it; ``{value}`` is the assigned value."""
    by_value: Optional[dict[bool, str]] = None
    """A did_you_mean per assigned True/False, used first."""
    note: Optional[str] = None
    """One line of context audit() shows with the finding (lint, where there is no advice)."""
    category: Optional[str] = None
    """The category of audit()'s finding (default performance)."""


_IDENT = r"^[A-Za-z_][A-Za-z0-9_]*$"


class Rewrite(BaseModel):
    """A deprecated callable's safe rewrite (``torchdoctor lint --fix``): ``call`` the new dotted
    name, with ``prepend`` (an argument written first) or ``append`` (a keyword written last).
    ``params`` are the positional parameters of the old callable (``keywords`` its keyword-only
    ones) and ``new_params`` those of the new one (``new_keywords`` its keyword-only ones), from the torch sources of every
    release the rewrite is offered for: positional arguments are mapped by name, and a call
    they cannot be mapped for gets no fix."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    call: str = Field(pattern=r"^torch(\.[A-Za-z_][A-Za-z0-9_]*)+$")
    prepend: Optional[str] = Field(default=None, pattern=r"^\"[a-z]+\"$")
    append: Optional[str] = Field(default=None, pattern=r"^[a-z_]+=\"[a-z]+\"$")
    params: list[str] = Field(default=[], max_length=16)
    keywords: list[str] = Field(default=[], max_length=16)
    new_params: list[str] = Field(default=[], max_length=16)
    new_keywords: list[str] = Field(default=[], max_length=16)

    @field_validator("params", "keywords", "new_params", "new_keywords")
    @classmethod
    def _idents(cls, value: list) -> list:
        for name in value:
            if not re.match(_IDENT, name):
                raise ValueError(f"{clip(name, 40)!r} is not a parameter name")
        return value


class LookAlike(_FakeAdvice):
    """A name people use for the same thing: the legacy or new API of it (read by the probe:
    an ``observed`` entry), an alias, or a fake that torch silently accepts and ignores."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    name: str
    relation: Literal["legacy", "new-api", "alias", "fake", "deprecated"]
    since: Optional[str] = None
    until: Optional[str] = None
    deprecated: Optional[str] = None
    """The torch release from which using the name warns that it is deprecated (required for
    relation ``deprecated``)."""
    deprecated_until: Optional[str] = None
    """The first release that no longer warns (exclusive), when torch took the notice back."""
    advice: Optional[str] = None
    """What to write instead, in words or code (lint and audit show it)."""
    rewrite: Optional[Rewrite] = None
    """A deprecated callable's safe rewrite (:class:`Rewrite`)."""
    references: list[str] = []


class FakeName(_FakeAdvice):
    """A name under torch.backends that looks like a setting but belongs to no entry."""

    advice: Optional[str] = None
    references: list[str] = Field(min_length=1)


class Observed(BaseModel):
    """A setting torchdoctor reads but never recommends."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    getter: Getter
    look_alikes: list[LookAlike] = []
    """Fake or deprecated names people write for it (relation fake or deprecated only)."""


class Setting(_Writers):
    key: str
    kind: Kind
    type: Literal["bool", "int", "float", "str", "enum"]
    summary: str
    references: list[str]
    choices: Optional[list[str]] = None
    min: Optional[float] = None
    guard: Optional[Literal["cuda"]] = None
    variants: list[Variant] = []
    requires: list[Requirement] = []
    unverified: Optional[str] = None
    notes: Optional[str] = None
    getter: Optional[Getter] = None
    """How apply() and the torch probe read the value back (env, assign, call)."""
    takes_effect: Optional[TakesEffect] = None
    """When the library reads it (env: at import, at CUDA init, at the first communicator)."""
    uses: list[Use] = []
    """code: the constants the snippet defines and how the user's code takes them."""
    look_alikes: list[LookAlike] = []

    # -- validation of values -----------------------------------------------------------
    def validate_value(self, value: Any) -> Any:
        """Return the value coerced to the setting's type, or raise ValueError (whose message
        echoes the value through ``clip``: a computed value may be any size)."""
        t = self.type
        if t == "bool":
            if isinstance(value, bool):
                return value
            raise ValueError(f"{self.key} expects true/false, got {clip(value)}")
        if t in ("int", "float"):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"{self.key} expects a number, got {clip(value)}")
            if isinstance(value, int) and abs(value) > MAX_INT:
                raise ValueError(f"{self.key}: {clip(value)} is out of range (at most {MAX_INT})")
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{self.key} expects a finite number, got {clip(value)}")
            if t == "int":
                if int(value) != value:
                    raise ValueError(f"{self.key} expects an integer, got {clip(value)}")
                value = int(value)
            if self.min is not None and value < self.min:
                raise ValueError(f"{self.key} must be >= {self.min:g}, got {clip(value)}")
            return value
        if not isinstance(value, str):
            raise ValueError(f"{self.key} expects text, got {clip(value)}")
        if len(value) > MAX_TEXT:
            raise ValueError(f"{self.key}: a value of {len(value)} characters (at most {MAX_TEXT})")
        if t == "enum" and value not in (self.choices or []):
            raise ValueError(f"{self.key} must be one of {', '.join(self.choices or [])}, got {clip(value)}")
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
                changes: dict[str, Any] = {
                    k: getattr(variant, k) for k in ("since", "until") if getattr(variant, k)
                }
                if variant.python is not None or variant.values is not None:
                    # both writers, as a unit: a value without one does not exist there
                    changes.update(python=variant.python, values=variant.values)
                changes["note"] = variant.note
                return self.model_copy(update=changes)
        return self

    def writer(self, value: Any) -> Optional[str]:
        """The statement template for ``value`` (this setting already resolved), or None."""
        if self.values is not None and value_key(value) in self.values:
            return self.values[value_key(value)]
        return self.python

    def available_in(self, torch_version: Optional[str], value: Any = ...) -> bool:
        """Whether the setting exists and works in ``torch_version`` (unknown -> True); with a
        ``value``, whether that value can be written there."""
        s = self.resolve(torch_version)
        v = _version(torch_version)
        if v is not None:
            if s.since is not None and v < Version(s.since):
                return False
            if s.until is not None and v >= Version(s.until):
                return False
        if value is ...:
            return s.python is not None or bool(s.values)
        return s.writer(value) is not None

    def render(self, value: Any, torch_version: Optional[str] = None) -> str:
        value = self.validate_value(value)
        code = self.resolve(torch_version).writer(value)
        if code is None:
            raise ValueError(f"{self.key} = {clip(value)} cannot be written for torch {str(torch_version)[:80]}")
        raw = value if (self.type == "enum" and str(value).isidentifier()) else "INVALID"
        return code.replace("{value}", repr(value)).replace("{raw}", str(raw))


def _version(text: Optional[str]) -> Optional[Version]:
    if not text:
        return None
    try:
        v = Version(str(text))
    except (InvalidVersion, ValueError):  # ValueError: a release number over 4300 digits
        return None
    return Version(v.base_version)  # 2.13.0+cpu / 2.13.0.dev2026 compare as 2.13.0


class Registry(BaseModel):
    model_config = ConfigDict(frozen=True)
    settings: dict[str, Setting]
    observed: dict[str, Observed] = {}
    fakes: dict[str, FakeName] = {}
    """Fake names that belong to no setting (``fakes:`` in settings.yaml)."""
    _digest: str = PrivateAttr("")
    """SHA-256 of the settings file it was loaded from (part of the rule cache's key)."""

    def __contains__(self, key: str) -> bool:
        return key in self.settings

    def __getitem__(self, key: str) -> Setting:
        return self.settings[key]

    def keys(self) -> list[str]:
        return list(self.settings)

    def getters(self) -> list[tuple[str, dict[str, Any]]]:
        """``[(key, getter)]`` of every setting and observed entry, as the torch child reads
        them back (``torchdoctor.probes._child_settings.read``)."""
        out = [(k, s.getter.as_data()) for k, s in self.settings.items() if s.getter]
        return out + [(k, o.getter.as_data()) for k, o in self.observed.items()]

    def fake_table(self) -> dict[str, dict[str, Any]]:
        """Every fake name (the fake look-alikes and ``fakes:``) -> what audit() says of it:
        ``did_you_mean``, ``by_value``, ``note``, ``category``."""
        fields = ("did_you_mean", "by_value", "note", "category")
        out: dict[str, dict[str, Any]] = {}
        for entry in [*self.settings.values(), *self.observed.values()]:
            for alike in entry.look_alikes:
                if alike.relation == "fake":
                    out[alike.name] = {f: getattr(alike, f) for f in fields}
        for name, fake in self.fakes.items():
            out[name] = {f: getattr(fake, f) for f in fields}
        return out


def load_registry(path: Optional[Path] = None) -> Registry:
    return _load_registry(str(path or default_rules_dir() / "settings.yaml"))


@functools.lru_cache(maxsize=4)
def settings_digest(path: Optional[str] = None) -> str:
    """``load_registry(path)._digest`` without building the registry: the SHA-256 of the file's text (the rule
    cache's key needs only this)."""
    from torchdoctor import rulecache

    text = yamlio.read_text(path or str(default_rules_dir() / "settings.yaml"), RuleFileError, what="settings file")
    return rulecache.sha256(text.encode("utf-8")).hexdigest()


class LazyRegistry:
    """The shipped registry, built when first used: a check whose findings recommend nothing never needs it."""

    def __getattr__(self, name: str) -> Any:
        return getattr(load_registry(), name)

    def __getitem__(self, key: str) -> Setting:
        return load_registry()[key]

    def __contains__(self, key: str) -> bool:
        return key in load_registry()


CHECKED_ENTRY = "settings-checked"
"""The rule cache's entry (one per settings file) saying these bytes passed every check of :func:`_load_registry`."""


@functools.lru_cache(maxsize=4)
def _load_registry(path: str) -> Registry:
    from torchdoctor import rulecache

    # parsed once, then from the rule cache; the model validates every load. The checks across settings (writers,
    # requirements, kinds, getters: pure functions of the file's bytes and this code) run until a load passed them
    # for these bytes, recorded in the rule cache as CHECKED_ENTRY (the trust of the rule cache's other entries)
    text, raw = yamlio.read_cached(path, RuleFileError, what="settings file", kind="settings")
    if not isinstance(raw, dict) or not isinstance(raw.get("settings"), dict):
        raise RuleFileError(f"{path}: expected a mapping with a 'settings' table")
    checked_key = rulecache.make_key([("checked " + path, text.encode("utf-8"))])
    checked_name = rulecache.entry_name(CHECKED_ENTRY, [path])
    vouched = rulecache.load(checked_name, checked_key) is True
    out: dict[str, Setting] = {}
    for key, body in raw["settings"].items():
        try:
            setting = Setting.model_validate({"key": key, **(body or {})})
            if not vouched:
                for spec in [v.torch for v in setting.variants]:
                    SpecifierSet(spec)
                _check_writers(setting)
        except (ValidationError, InvalidSpecifier, TypeError, ValueError) as exc:
            first = str(exc).splitlines()
            raise RuleFileError(f"{path}: setting {str(key)[:80]}: {' '.join(first[:3])[:300]}") from None
        out[key] = setting
    if not vouched:
        _check_requires(path, out)
        for key, setting in out.items():  # after the writers and requirements of every setting
            try:
                _check_kind(setting)
            except ValueError as exc:
                raise RuleFileError(f"{path}: setting {str(key)[:80]}: {str(exc)[:300]}") from None
    observed = _load_observed(path, raw.get("observed"), out, vouched)
    registry = Registry(settings=out, observed=observed, fakes=_load_fakes(path, raw.get("fakes"), out, observed))
    if not vouched:
        _check_getters_scan(path, text, registry)
        rulecache.store(checked_name, checked_key, True)
    registry._digest = rulecache.sha256(text.encode("utf-8")).hexdigest()
    return registry


def _check_getter(getter: Optional[Getter]) -> None:
    if getter is not None:
        from torchdoctor.probes._child_settings import check_getter

        check_getter(getter.as_data())


def _check_kind(setting: Setting) -> None:
    """What the setting's kind needs: a getter for anything apply() sets (and read back the
    way it is written), when an environment variable is read, how user code takes a value."""
    getter, kind = setting.getter, setting.kind
    _check_getter(getter)
    if kind == "env":
        name = setting.key.split(".", 1)[1] if setting.key.startswith("env.") else ""
        if getter is None or getter.env != name:
            raise ValueError(f"an env setting needs `getter: {{env: {name or 'NAME'}}}` (key env.NAME)")
        if setting.takes_effect is None:
            raise ValueError("an env setting needs `takes_effect` (when the library reads it)")
    elif kind in ("assign", "call"):
        if getter is None or getter.env is not None:
            raise ValueError(f"apply() sets this `{kind}` setting: it needs a `getter` "
                             "({attribute: torch.a.b} or {call: torch.get_x}) to read it back")
    elif not setting.uses:
        raise ValueError("a code setting needs `uses` (the constant it defines and how user code takes it)")
    text = "\n".join([setting.python or ""] + list((setting.values or {}).values())
                     + [v.python or "" for v in setting.variants]
                     + [t for v in setting.variants for t in (v.values or {}).values()])
    for use in setting.uses:
        if not use.name.isidentifier() or re.search(rf"^{use.name}\b", text, re.M) is None:
            raise ValueError(f"uses: {use.name[:80]} is not a constant its statements define")


def _load_observed(path: str, raw: Any, settings: dict[str, Setting], vouched: bool = False) -> dict[str, Observed]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise RuleFileError(f"{path}: 'observed' must be a mapping")
    out: dict[str, Observed] = {}
    for key, body in raw.items():
        try:
            if key in settings:
                raise ValueError("is also a setting (one entry per setting)")
            entry = Observed.model_validate(body)
            if not vouched:
                _check_getter(entry.getter)
            if entry.getter.env is not None:
                raise ValueError("observed entries read torch (attribute or call)")
        except (ValidationError, TypeError, ValueError) as exc:
            first = str(exc).splitlines()
            raise RuleFileError(f"{path}: observed {str(key)[:80]}: {' '.join(first[:3])[:300]}") from None
        out[str(key)] = entry
    for key, entry in out.items():
        if any(a.relation not in ("fake", "deprecated") for a in entry.look_alikes):
            raise RuleFileError(f"{path}: observed {key[:80]}: look-alikes of an observed entry are "
                                "fake or deprecated")
    for key, setting in [*settings.items(), *out.items()]:
        for alike in setting.look_alikes:
            if alike.relation == "deprecated" and not alike.deprecated:
                raise RuleFileError(f"{path}: {key}: deprecated look-alike {alike.name[:80]} needs "
                                    "`deprecated:` (the release from which it warns)")
            real = alike.relation in ("legacy", "new-api")
            if real and alike.name not in out:
                raise RuleFileError(f"{path}: setting {key}: look-alike {alike.name[:80]} "
                                    "needs an `observed` entry (its getter)")
            if alike.relation == "fake" and (alike.name in out or alike.name in settings):
                raise RuleFileError(f"{path}: setting {key}: fake look-alike {alike.name[:80]} is real")
    return out


def _load_fakes(path: str, raw: Any, settings: dict[str, Setting],
                observed: dict[str, Observed]) -> dict[str, FakeName]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RuleFileError(f"{path}: 'fakes' must be a mapping")
    alikes = {a.name for e in [*settings.values(), *observed.values()] for a in e.look_alikes}
    out: dict[str, FakeName] = {}
    for key, body in raw.items():
        try:
            if key in settings or key in observed:
                raise ValueError("is a real setting")
            if key in alikes:
                raise ValueError("is already a look-alike of an entry (one place per name)")
            out[str(key)] = FakeName.model_validate(body)
        except (ValidationError, TypeError, ValueError) as exc:
            first = str(exc).splitlines()
            raise RuleFileError(f"{path}: fakes {str(key)[:80]}: {' '.join(first[:3])[:300]}") from None
    return out


def _check_getters_scan(path: str, text: str, registry: Registry) -> None:
    """The torch child reads the getters without YAML (one line each): it must read exactly
    what YAML parsed."""
    from torchdoctor.probes._child_settings import scan

    try:
        scanned = scan(text)
    except ValueError as exc:
        raise RuleFileError(f"{path}: {str(exc)[:300]}") from None
    want = registry.getters()
    if scanned != want:
        got = dict(scanned)
        bad = next((k for k, g in want if got.get(k) != g), None) or next(
            (k for k, _ in scanned if k not in dict(want)), "?")
        raise RuleFileError(
            f"{path}: setting {bad[:80]}: write `getter:` on one line, indented 4, as a flow "
            "mapping such as {attribute: torch.a.b} (the torch child reads it without YAML)")


def _check_writers(setting: Setting) -> None:
    """Every writer table names valid values; the setting has a writer for some value."""
    if setting.python is None and not setting.values:
        raise ValueError("needs `python` or `values`")
    for table in [setting.values] + [v.values for v in setting.variants]:
        for name in table or {}:
            sample: Any = name
            if setting.type == "bool":
                sample = {"true": True, "false": False}.get(name, name)
            if setting.type in ("int", "float"):
                raise ValueError("`values` tables are for bool and enum settings")
            setting.validate_value(sample)


def _check_requires(path: str, settings: dict[str, Setting]) -> None:
    for key, setting in settings.items():
        for req in setting.requires:
            if req.setting not in settings or req.setting == key:
                raise RuleFileError(
                    f"{path}: setting {key}: requires unknown setting {req.setting!r}"
                )
            for value in req.values or []:
                try:
                    settings[req.setting].validate_value(value)
                except ValueError as exc:
                    raise RuleFileError(f"{path}: setting {key}: requires {exc}") from None
    # no cycles: each chain of requirements ends
    def walk(key: str, seen: tuple[str, ...]) -> None:
        if key in seen:
            chain = " -> ".join(seen + (key,))
            raise RuleFileError(f"{path}: settings require each other: {chain}")
        for req in settings[key].requires:
            walk(req.setting, seen + (key,))

    for key in settings:
        walk(key, ())


def kind_order(setting: Union[Setting, str]) -> int:
    kind = setting.kind if isinstance(setting, Setting) else setting
    return KIND_ORDER[kind]


def settings_schema_text() -> str:
    """JSON schema of rules/settings.yaml, from the registry's model (what editors validate
    the file against; tests/test_rules_meta.py keeps rules/settings.schema.json current). An
    entry's ``key`` is its name in the ``settings`` mapping, not a field of the entry."""
    import json

    schema = Registry.model_json_schema()
    entry = schema["$defs"]["Setting"]
    entry["properties"].pop("key", None)
    entry["required"] = [name for name in entry.get("required", []) if name != "key"]
    schema["title"] = "torchdoctor settings registry"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"
