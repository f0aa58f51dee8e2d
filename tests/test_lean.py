"""torchdoctor.lean against pydantic: the same declarations under both backends accept and refuse the same values
(lean refuses a few more, never fewer), give the same dumps, and behave the same as models; and on recorded real
inputs (every issue body and event in tests/data, real facts JSON) triage, the Report it is made from and the
facts read are identical with either backend (tests/lean_child.py runs each in its own process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pydantic
import pytest

from torchdoctor import lean, rulecache

REPO = Path(__file__).resolve().parent.parent

SOURCE = '''
from typing import Annotated, Any, Literal, Optional, TypeVar, Union

T = TypeVar("T")


class Unavailable(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    unavailable: str


Maybe = Annotated[Union[Unavailable, T], Field(union_mode="left_to_right")]


def _unknown():
    return Unavailable(unavailable="not recorded")


class Device(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    index: int
    name: Maybe[str] = Field(default_factory=_unknown)
    cc: Maybe[float] = Field(default_factory=_unknown)
    memory: Maybe[Optional[int]] = None


class Facts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    kind: Literal["probe", "report"] = "probe"
    devices: list[Device] = []
    by_name: dict[str, Device] = {}
    env: Maybe[dict[str, str]] = Field(default_factory=dict)
    tags: list[str] = Field(default=[], max_length=3)
    ident: str = Field(default="a", pattern=r"^[a-z]+$")
    count: Optional[StrictInt] = Field(None, ge=0, le=10)
    flag: StrictBool = False
    note: Optional[str] = Field(default=None, exclude=True)
    pair: tuple[int, str] = (0, "")
    ratio: float = 0.0
    anything: Any = None
    _secret: str = PrivateAttr("")

    @field_validator("tags", mode="before")
    @classmethod
    def _split(cls, v):
        return v.split(",") if isinstance(v, str) else v

    @field_validator("ident")
    @classmethod
    def _no_x(cls, v):
        if "x" in v:
            raise ValueError("no x")
        return v


class Loose(BaseModel):
    i: Optional[int] = None
    f: Optional[float] = None
    s: Optional[str] = None
    b: Optional[bool] = None
    l: Optional[list[int]] = None
'''


def declare(backend) -> types.ModuleType:
    """The declarations above, built with one backend's names (as torchdoctor/model.py hands them out)."""
    name = f"lean_decl_{backend.__name__.replace('.', '_')}"
    mod = types.ModuleType(name)
    mod.__dict__.update({n: getattr(backend, n) for n in ("BaseModel", "ConfigDict", "Field", "PrivateAttr",
                                                         "StrictBool", "StrictInt", "field_validator")})
    sys.modules[name] = mod  # annotations are evaluated in the declaring module
    exec(compile("from __future__ import annotations\n" + SOURCE, name, "exec"), mod.__dict__)  # noqa: S102
    return mod


P, L = declare(pydantic), declare(lean)

CASES = [
    {}, {"kind": "report"}, {"kind": "other"}, {"kind": None}, {"extra": 1},
    {"devices": [{"index": 0}]}, {"devices": [{"index": "1"}]}, {"devices": [{"index": 1.0}]},
    {"devices": [{"index": 1.5}]}, {"devices": [{"index": True}]}, {"devices": [{}]}, {"devices": "no"},
    {"devices": [{"index": 0, "cc": 8}]}, {"devices": [{"index": 0, "cc": "8.6"}]}, {"devices": [{"index": 0, "cc": None}]},
    {"devices": [{"index": 0, "cc": {"unavailable": "x"}}]}, {"devices": [{"index": 0, "name": {"unavailable": "x"}}]},
    {"devices": [{"index": 0, "name": 5}]}, {"devices": [{"index": 0, "memory": None}]},
    {"devices": [{"index": 0, "memory": "12"}]}, {"devices": [{"index": 0, "name": "A", "extra": 1}]},
    {"env": {"unavailable": "gone"}}, {"env": {"A": "1"}}, {"env": {"A": 1}}, {"env": {"unavailable": "x", "B": "2"}},
    {"by_name": {"x": {"index": 2}}}, {"by_name": {"x": {"index": "two"}}},
    {"tags": "a,b"}, {"tags": ["a", "b", "c", "d"]}, {"tags": [1]},
    {"ident": "abc"}, {"ident": "ABC"}, {"ident": "axe"},
    {"count": 5}, {"count": 11}, {"count": -1}, {"count": "5"}, {"count": True}, {"flag": 1}, {"flag": True},
    {"note": "hidden"}, {"pair": [1, "a"]}, {"pair": [1]}, {"pair": ("1", "a")}, {"ratio": 10**400}, {"ratio": 1},
    {"anything": {"a": [1]}},
]


def _run(module, data):
    try:
        return "ok", module.Facts.model_validate(data).model_dump(mode="json")
    except (pydantic.ValidationError, lean.ValidationError) as exc:
        return "refused", [tuple(e["loc"]) for e in exc.errors()]


@pytest.mark.parametrize("data", CASES, ids=[json.dumps(c)[:60] for c in CASES])
def test_both_backends_accept_refuse_and_dump_alike(data):
    p, lean_result = _run(P, data), _run(L, data)
    assert p[0] == lean_result[0], (p, lean_result)
    if p[0] == "ok":
        assert p[1] == lean_result[1]
    else:  # the same fields refused (below a union pydantic adds the member it tried to each location)
        assert {loc[:1] for loc in lean_result[1]} == {loc[:1] for loc in p[1]}, (lean_result, p)


LOOSE = {"i": [True, "1.0", " 7 ", "1e3", 2**70, 1e20, float("nan"), "+3", "1_000"],
         "f": [True, "nan", " 1.5 ", "1e400", "1_0.5", 10**400, "0x10"],
         "s": [1, b"x"], "b": [1, 0, "true", "yes", 2, "1"], "l": [(1, 2), {1, 2}, "12", {"a": 1}]}


@pytest.mark.parametrize("field,value", [(k, v) for k, vs in LOOSE.items() for v in vs],
                         ids=[f"{k}={v!r}"[:30] for k, vs in LOOSE.items() for v in vs])
def test_lean_never_accepts_what_pydantic_refuses_and_converts_alike(field, value):
    try:
        want = getattr(P.Loose(**{field: value}), field)
    except pydantic.ValidationError:
        with pytest.raises(lean.ValidationError):
            L.Loose(**{field: value})
        return
    try:
        got = getattr(L.Loose(**{field: value}), field)
    except lean.ValidationError:
        return  # stricter: pydantic's lax strings ("yes", "1_000", "1.0" for an int) are refused
    assert got == want or (got != got and want != want)  # nan == nan
    assert type(got) is type(want)


def test_models_behave_alike():
    for m in (P, L):
        facts = m.Facts(devices=[{"index": 0, "name": "H200"}], note="x", count=3)
        assert facts.devices[0].name == "H200" and isinstance(facts.devices[0].cc, m.Unavailable)
        with pytest.raises((pydantic.ValidationError, lean.ValidationError, TypeError, AttributeError)):
            facts.count = 4  # frozen
        copy = facts.model_copy(update={"count": 99})  # not validated, in both
        assert copy.count == 99 and facts.count == 3 and copy.devices is facts.devices
        assert "note" not in facts.model_dump() and facts.note == "x"  # excluded from dumps only
        assert facts.model_dump(exclude_defaults=True) == {"devices": [{"index": 0, "name": "H200"}], "count": 3}
        assert m.Facts(devices=[]).tags == [] and m.Facts().tags is not m.Facts().tags  # defaults not shared
        assert facts == m.Facts(devices=[{"index": 0, "name": "H200"}], note="x", count=3)
        assert hash(m.Device(index=1)) == hash(m.Device(index=1))
        assert facts._secret == ""
        assert list(m.Facts.model_fields)[:3] == ["kind", "devices", "by_name"]
        assert set(m.Facts.model_fields) >= {"note", "pair", "ratio"} and "_secret" not in m.Facts.model_fields
    lean_json = json.loads(L.Facts(devices=[{"index": 0}]).model_dump_json())
    assert lean_json == json.loads(P.Facts(devices=[{"index": 0}]).model_dump_json())


def test_annotations_are_stripped_of_the_outer_annotated_as_pydantic_does():
    for name in ("name", "cc", "memory"):
        p, lean_ann = P.Device.model_fields[name].annotation, L.Device.model_fields[name].annotation
        assert repr(p).replace("lean_decl_pydantic", "X") == repr(lean_ann).replace("lean_decl_torchdoctor_lean", "X")


def test_the_facade_chooses_once_per_process():
    code = ("import torchdoctor.model as m\nprint(m.use_lean(), m.backend(), m.use_lean())\n"
            "import torchdoctor.facts, sys\nprint('pydantic' in sys.modules)\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert run.stdout.split() == ["True", "lean", "True", "False"], run.stderr
    off = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO,
                         env=dict(os.environ, TORCHDOCTOR_LEAN="0"))
    assert off.stdout.split() == ["False", "pydantic", "False", "True"], off.stderr
    late = subprocess.run([sys.executable, "-c", "import torchdoctor.facts, torchdoctor.model as m\n"
                           "print(m.use_lean(), m.backend())"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert late.stdout.split() == ["False", "pydantic"], late.stderr


def _inputs() -> list[str]:
    data = REPO / "tests" / "data"
    bodies = [p for d in ("cases", "cases2", "cases3", "healthy") for p in sorted((data / d).glob("*.txt"))]
    events = sorted((data / "triage").glob("*.json"))
    facts = [data / "faults" / "dev-container-cpu-probe.json", data / "bench" / "facts.json"]
    return [str(p) for p in bodies + events + facts]


RUNS = (("pydantic", "pydantic", {}), ("lean", "lean", {}), ("jinja2", "pydantic", {"TORCHDOCTOR_MESSAGE_IR": "0"}))
"""pydantic first: the lean run reads a warm cache, as a second run does; and once more with every message
rendered by jinja2 (not from the cache's plain data, torchdoctor/sandbox_ir.py)."""


def _children(files: list[str], tmp_path: Path, runs: tuple = RUNS) -> dict:
    """label -> what tests/lean_child.py printed for ``files``, one child per run, sharing one rule cache."""
    env = {k: v for k, v in os.environ.items() if k not in (rulecache.ENV_DISABLE, "TORCHDOCTOR_LEAN")}
    env[rulecache.ENV_DIR] = str(tmp_path / "cache")
    out = {}
    for label, mode, extra in runs:
        run = subprocess.run([sys.executable, str(REPO / "tests" / "lean_child.py"), mode, *files],
                             capture_output=True, text=True, timeout=600, env={**env, **extra}, cwd=REPO)
        assert run.returncode == 0, run.stderr[-3000:]
        out[label] = json.loads(run.stdout)
    return out


@pytest.mark.slow
def test_real_inputs_give_the_same_triage_report_and_facts_with_either_backend(tmp_path):
    files = _inputs()
    assert len(files) > 200
    out = _children(files, tmp_path)
    assert out["lean"]["backend"] == "lean" and not out["lean"]["pydantic_imported"]
    assert out["pydantic"]["backend"] == "pydantic"
    errors = [k for k, v in out["pydantic"]["out"].items() if "error" in v]
    assert errors == [], errors[:5]
    for name in files:
        assert out["lean"]["out"][name] == out["pydantic"]["out"][name], name
        assert out["jinja2"]["out"][name] == out["pydantic"]["out"][name], name


def _hostile_bodies() -> dict[str, str]:
    from tests.test_triage_github import HOSTILE

    collect_env = (REPO / "tests" / "data" / "cases" / "case101.txt").read_text(encoding="utf-8")
    return {
        "hostile.txt": HOSTILE,
        "huge.txt": HOSTILE + ("x" * 1000 + "\n") * 300,
        "digits.txt": "PyTorch version: 2." + "9" * 5000 + "\nIs CUDA available: True\nGPU 0: " + "A" * 20000 + "\n",
        "numbers.txt": collect_env.replace("Is CUDA available", "Total memory: nan\nIs CUDA available", 1)
        + "\nCUDA used to build PyTorch: 1e400\nNumber of GPUs: 99999999999999999999999\n",
        "controls.txt": "torch==2.1.0\x1b[31m\u202e\ufeff\x07\nCUDA Version: 12.\u0661\nnvidia-smi\n" * 50,
        "facts.json": json.dumps({"schema_version": 1, "origin": "json", "gpu": {"count": "7", "devices": []},
                                  "torch": {"version": True}}),
        "facts-ok.json": json.dumps({"schema_version": 1, "origin": "json",
                                     "torch": {"import_status": "ok", "version": "2.4.0", "cuda_build": "12.1"}}),
        "array.json": "[1, 2, 3]",
        "not-json.txt": "{ this is not json: but starts like it",
    }


@pytest.mark.slow
def test_hostile_bodies_give_the_same_results_with_either_backend(tmp_path):
    files = []
    for name, body in _hostile_bodies().items():
        path = tmp_path / name.replace(".json", ".body")  # every one read as an issue body, JSON-like or not
        path.write_text(body, encoding="utf-8")
        files.append(str(path))
    out = {k: v["out"] for k, v in _children(files, tmp_path, RUNS[:2]).items()}
    for name in files:
        lean_out, pydantic_out = out["lean"][name], out["pydantic"][name]
        if name.endswith(".body") and "error" in pydantic_out:
            # torchdoctor's facts JSON pasted as a body: `triage` reads it with pydantic (never lean), so only
            # that both refuse it is asked here, not that they word the refusal alike
            assert "error" in lean_out, name
            continue
        assert lean_out == pydantic_out, name
    assert "triage" in out["lean"][files[0]] and "@octocat" not in out["lean"][files[0]]["triage"]["comment"]


_NASTY = ["9" * 400, "-1", "1e400", "nan", "inf", "\x1b[31mred\x1b[0m", "\u202egpu", "\ud800", "\x00", "{{ 7*7 }}",
          "@octocat", "</details>", "ghp_" + "C" * 36, "12.\u0661", "True", "None", "", " " * 300, "8.6" * 50]


def _mutated_bodies(count: int) -> list[str]:
    """Real bodies mutated the way pasted text goes wrong (lines dropped, repeated, swapped, cut; values replaced
    by hostile ones), derandomised: the same bodies every run."""
    import random

    rng = random.Random(20)
    data = REPO / "tests" / "data"
    sources = [p.read_text(encoding="utf-8", errors="replace").splitlines()
               for d in ("cases", "cases3") for p in sorted((data / d).glob("*.txt"))]
    out = []
    for _ in range(count):
        lines = list(rng.choice(sources))
        for _ in range(rng.randint(1, 6)):
            if not lines:
                break
            i = rng.randrange(len(lines))
            kind = rng.randrange(5)
            if kind == 0:
                del lines[i]
            elif kind == 1:
                lines.insert(i, lines[i])
            elif kind == 2:
                j = rng.randrange(len(lines))
                lines[i], lines[j] = lines[j], lines[i]
            elif kind == 3 and ":" in lines[i]:
                lines[i] = lines[i].split(":", 1)[0] + ": " + rng.choice(_NASTY)
            else:
                lines = lines[:max(i, 1)]
        out.append("\n".join(lines).replace("\x00", "\ufffd").encode("utf-8", "replace").decode("utf-8"))
    return out


@pytest.mark.slow
def test_mutated_real_bodies_give_the_same_results_with_either_backend(tmp_path):
    files = []
    for i, body in enumerate(_mutated_bodies(160)):
        path = tmp_path / f"m{i:03d}.txt"
        path.write_text(body, encoding="utf-8", errors="surrogatepass")
        files.append(str(path))
    out = {k: v["out"] for k, v in _children(files, tmp_path).items()}
    differ = [name for name in files if not out["lean"][name] == out["pydantic"][name] == out["jinja2"][name]]
    assert differ == [], (differ[:3], [out["lean"][d] for d in differ[:1]], [out["pydantic"][d] for d in differ[:1]])
    assert all("triage" in out["lean"][f] for f in files), [out["lean"][f] for f in files if "triage" not in
                                                            out["lean"][f]][:2]


def _backend_of(args: list[str], env: dict) -> str:
    code = ("import sys\nfrom torchdoctor.cli import main\nrc = main(sys.argv[1:])\nimport torchdoctor.model as m\n"
            "print('BACKEND', m.backend(), 'pydantic' in sys.modules, rc, file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120, env=env,
                         cwd=REPO)
    line = [ln for ln in run.stderr.splitlines() if ln.startswith("BACKEND ")]
    assert line, run.stderr[-2000:]
    return line[-1][len("BACKEND "):]


def test_check_from_report_of_text_uses_the_lean_models_and_a_rule_pack_pydantic(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in (rulecache.ENV_DISABLE, "TORCHDOCTOR_LEAN")}
    env[rulecache.ENV_DIR] = str(tmp_path / "cache")
    report = str(REPO / "tests" / "data" / "cases" / "case101.txt")
    args = ["check", "--from-report", report, "--format", "json", "--fail-on", "never"]
    _backend_of(args, env)  # fills the cache (the data tables' models are pydantic's)
    assert _backend_of(args, env) == "lean False 0"
    pack = tmp_path / "rules"
    pack.mkdir()
    assert _backend_of([*args, "--rules", str(pack)], env).startswith("pydantic True")
    facts = tmp_path / "facts.json"
    facts.write_text(json.dumps({"schema_version": 1, "origin": "json"}), encoding="utf-8")
    assert _backend_of(["check", "--from-report", str(facts), "--fail-on", "never"], env).startswith("pydantic True")
    assert _backend_of(args, dict(env, TORCHDOCTOR_LEAN="0")).startswith("pydantic True")


@pytest.mark.parametrize("text, json_like", [
    ('{"facts": {}}', True), ('\ufeff  {"a": 1}', True), ("x\x00y", True), (b"\xff\xfe{\x00", True),
    ("[1/90] Processing: test_000000\nTraceback", False),  # cases3/case321: a log line, text
    ("[pip3] numpy==1.26.4", False), ("[1, 2, 3]", False),  # an array is refused without models
    ("PyTorch version: 2.4.0", False), (b"Collecting environment information...", False),
])
def test_only_an_object_is_read_with_pydantics_models(text, json_like):
    from torchdoctor.sniff import may_be_json

    assert may_be_json(text) is json_like
