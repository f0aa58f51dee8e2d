"""What the models of the data files are made of: value types (a number that is not a bool, a
version, a specifier, a CUDA version, an arch, a gfx target, a linear regex), the two
exceptions a validator raises (``Bad``: the value of a field; ``Wrong``: a whole sentence, with
where), and the three kinds of mapping (closed, open, sourced)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Optional

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version
from pydantic import AfterValidator, BaseModel, ConfigDict, StrictBool

from torchdoctor.safeio import clip
from torchdoctor.tables._parse import _ARCH_RE, _cuda, _tokens


class Bad(ValueError):
    """A value its field cannot hold; the message follows the field's name ("'cc' must be ...")."""


class Wrong(ValueError):
    """A whole-sentence problem, optionally at ``at`` (a location below the model that raised it)."""

    def __init__(self, text: str, at: tuple = ()):
        super().__init__(text)
        self.at = at


# ----------------------------------------------------------------------------------------
# value types
# ----------------------------------------------------------------------------------------


def _number(value: Any) -> Any:
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise Bad(f"must be a number, got {clip(value)}")
    return value


def _version(value: Any) -> Any:
    if value is not None:
        try:
            Version(str(value))
        except ValueError:  # InvalidVersion, or a release number over 4300 digits
            raise Bad(f"is not a version: {clip(value)}") from None
    return value


def _specifier(value: Any) -> Any:
    try:
        SpecifierSet(str(value))
    except InvalidSpecifier:
        raise Bad(f"is not a version specifier: {clip(value)}") from None
    return value


def _cuda_version(value: Any) -> Any:
    if value is not None and _cuda(value) is None:
        raise Bad(f"must be a CUDA version, got {clip(value)}")
    return value


def _arch(value: Any) -> Any:
    if not isinstance(value, str) or not _ARCH_RE.match(value):
        raise Wrong(f"bad arch {clip(value)} (expected sm_XY or compute_XY)")
    return value


def _gfx(value: Any) -> Any:
    if not re.fullmatch(r"gfx[0-9a-f]{3,4}", str(value)):
        raise Bad(f"is not a gfx target: {clip(value)}")
    return value


def _pattern(value: Any) -> Any:
    try:
        re.compile(value)
    except (re.error, TypeError) as exc:
        raise Wrong(f"bad pattern {clip(value)}: {exc}") from None
    return value


def _match_text(value: Any) -> Any:
    if not isinstance(value, str) or not _tokens(value):
        raise Wrong(f"bad match string {clip(value)}")
    return value


Number = Annotated[Any, AfterValidator(_number)]
"""An int or float (not a bool, not a string); None where the field is optional."""
VersionText = Annotated[Any, AfterValidator(_version)]
"""Anything ``packaging`` reads as a version ("2.7", 12.8 as YAML writes it)."""
Specifier = Annotated[Any, AfterValidator(_specifier)]
CudaVersion = Annotated[Any, AfterValidator(_cuda_version)]
Arch = Annotated[Any, AfterValidator(_arch)]
Gfx = Annotated[Any, AfterValidator(_gfx)]
Pattern = Annotated[Any, AfterValidator(_pattern)]
MatchText = Annotated[Any, AfterValidator(_match_text)]


class Closed(BaseModel):
    """An entry whose keys are all known: a misspelt key is an error."""

    model_config = ConfigDict(extra="forbid", defer_build=True)


class Open(BaseModel):
    """A mapping other areas may extend (only the keys the lookups read are checked)."""

    model_config = ConfigDict(extra="allow", defer_build=True)


class Sourced(Closed):
    """The bookkeeping keys every entry may carry."""

    source: Any = None
    sources: Optional[list[Any]] = None
    note: Any = None
    notes: Any = None
    verified: Optional[StrictBool] = None
