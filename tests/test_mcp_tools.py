"""The tools of `torchdoctor mcp` called in-process with hostile arguments (no SDK needed): any
JSON value for any argument gives either a result that follows the tool's published schema or a
ToolInputError of one line, never another exception and never an echo of a long value."""

from __future__ import annotations

import json

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchdoctor.mcp_server import tools
from torchdoctor.mcp_server.schemas import input_schemas, output_schemas

LONG = "Q" * 5000
"""A value no error line may carry whole."""

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20) | st.just(LONG) | st.sampled_from(["2.4", "A100", "cpu", "detection", "bf16"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6)


def _arguments(tool: str, always: dict):
    names = list(input_schemas()[tool]["properties"]) + ["bogus"]
    return st.dictionaries(st.sampled_from(names), json_values, max_size=4).map(lambda d: {**d, **always})


def _check(tool: str, arguments: dict) -> None:
    try:
        result = tools.call(tool, arguments)
    except tools.ToolInputError as exc:
        line = str(exc)
        assert "\n" not in line and len(line) <= tools.MAX_ERROR
        assert LONG[:100] not in line
        assert line.startswith(f"{tool}: ")
    else:
        jsonschema.Draft202012Validator(output_schemas()[tool]).validate(result)
        json.dumps(result)


FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(_arguments("explain_rule", {}))
def test_explain_rule_hostile_arguments(arguments):
    _check("explain_rule", arguments)


@FUZZ
@given(_arguments("lint", {}))
def test_lint_hostile_arguments(arguments):
    _check("lint", arguments)


@FUZZ
@given(_arguments("check", {"report": "PyTorch version: 2.4.0+cu121\nIs CUDA available: True\n"}))
def test_check_hostile_arguments(arguments):
    arguments.pop("facts", None)  # never both, never neither (neither probes this machine)
    arguments["report"] = arguments.get("report") or "x"
    _check("check", arguments)


@FUZZ
@given(_arguments("recommend", {"gpu": "A100"}))
def test_recommend_hostile_arguments(arguments):
    _check("recommend", arguments)


@pytest.mark.parametrize("arguments", [None, [], "check", 5])
def test_arguments_that_are_not_an_object(arguments):
    with pytest.raises(tools.ToolInputError, match="arguments must be an object|missing required"):
        tools.call("explain_rule", arguments)
