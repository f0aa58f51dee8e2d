"""Issue 8, the classes in rules, workloads and plans: a shared rule pack cannot run code or
exhaust the machine through its message templates (class 1); a workload file cannot explode
through YAML aliases (class 5) or hang on /dev/zero or a FIFO, nor can a rule file (class 6);
integers past Python's int-to-str limit and values of the wrong type are one line, exit 2,
never "internal error" (class 10).

Every command runs in-process through ``torchdoctor.cli.main`` in a thread that must finish
(a hang is a failure, not a stuck suite); every error is one line on stderr, exit 2."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest

from tests.test_faults import cli

POSIX_ONLY = pytest.mark.skipif(os.name != "posix", reason="FIFOs and /dev/zero")
LIMIT_S = 60.0
"""A command that has not returned by then is hung (the old code read /dev/zero forever)."""


def run(capsys, *args) -> tuple[int, str, str]:
    """``torchdoctor ARGS`` in-process, failing if it hangs (test_faults' runner)."""
    result = cli(capsys, *(str(a) for a in args), limit=LIMIT_S)
    return result.code, result.out, result.err


def one_line(code: int, out: str, err: str, *words: str) -> str:
    assert code == 2, (code, err)
    assert out == ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    line = lines[0]
    assert "Traceback" not in err and "internal error" not in line, line
    assert len(line) < 600, line  # every echoed value is clipped
    for word in words:
        assert word in line, (word, line)
    return line


def rule_text(rule_id: str, message: str) -> str:
    return (
        f"id: {rule_id}\n"
        "severity: warning\n"
        "category: performance\n"
        "summary: a rule of a shared pack\n"
        "why: because\n"
        'when: "True"\n'
        f"message: {message}\n"
        "fix: nothing\n"
        'references: ["https://example.com/"]\n'
        "examples:\n"
        "  fires: [{name: always, facts: {}}]\n"
        "  ok: [{name: never, facts: {}}]\n"
    )


def pack(tmp_path: Path, rule_id: str, message: str) -> Path:
    directory = tmp_path / "shared-pack"
    (directory / "team").mkdir(parents=True)
    (directory / "team" / f"{rule_id}.yaml").write_text(rule_text(rule_id, message), encoding="utf-8")
    return directory


COMMANDS = {
    "check": lambda facts, rules: ["check", "--facts", facts, "--rules", rules],
    "recommend": lambda facts, rules: ["recommend", "--task", "detection", "--facts", facts, "--rules", rules],
    "report": lambda facts, rules: ["report", "--facts", facts, "--rules", rules],
    "rules-test": lambda facts, rules: ["rules", "test", rules],
}


# ----------------------------------------------------------------------------------------
# class 1: template code execution and size bombs
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("payload", ["globals-by-attribute", "globals-by-attr-filter"])
def test_a_rule_message_cannot_run_a_command(capsys, tmp_path, facts_file, command, payload):
    marker = tmp_path / "pwned"
    if payload == "globals-by-attribute":  # the reproducer of the issue: refused at load
        message = f"\"{{{{ cycler.__init__.__globals__.os.system('touch {marker}') }}}}\""
    else:  # names built at run time: only the sandbox itself can refuse it
        message = ("\"{{ (v|attr('__glo' ~ 'bals__'))['__buil' ~ 'tins__']['__imp' ~ 'ort__']('os')"
                   f".system('touch {marker}') }}}}\"")
    rules = pack(tmp_path, "shared-pack-rule", message)
    line = one_line(*run(capsys, *COMMANDS[command](facts_file, rules)))
    assert not marker.exists(), "the template ran a shell command"
    rule_file = rules / "team" / "shared-pack-rule.yaml"
    assert f"{rule_file}:7:" in line, line  # path:line of `message:`


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize(
    ("message", "words"),
    [
        ("\"{{ ('a' * 10**9) | length }}\"", ["repeating a sequence", "1000000000"]),
        ("\"{{ 'a' * 10**9 }}\"", ["repeating a sequence"]),
        ("\"{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s }}\"",
         ["'~' would make a value of"]),
        ("\"{{ range(100000) | map('string') | join('x' * 100000) }}\"", ["join would make a value"]),
        ("\"{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}\"",
         ["loop iterations"]),
        ("\"{{ '%0999999999d' % 1 }}\"", ["format width"]),
        ("\"{{ 2 ** 10000000 }}\"", ["a power of more than"]),
        ("\"{{ 'a'.ljust(10**9) }}\"", ["may not call 'ljust'"]),
    ],
    ids=["repeat-length", "repeat", "doubling-loop", "join", "nested-loops", "percent-width", "power", "ljust"],
)
@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_a_rule_message_cannot_exhaust_memory_or_time(capsys, tmp_path, facts_file, command, message, words,
                                                     monkeypatch):
    """Each bomb is refused by its own budget, before it allocates, with one bounded line. The
    wall-clock backstop (sandbox.MAX_SECONDS, 2 s) is lifted here: on a busy machine it could
    fire first and hide which budget refused (or failed to refuse) the bomb; what is tested is
    the behaviour, not how fast this machine renders."""
    from torchdoctor import sandbox

    monkeypatch.setattr(sandbox, "MAX_SECONDS", 3600.0)
    rules = pack(tmp_path, "size-bomb", message)
    line = one_line(*run(capsys, *COMMANDS[command](facts_file, rules)), *words)
    assert f"{rules / 'team' / 'size-bomb.yaml'}:7: rule size-bomb: message:" in line


def test_a_size_bomb_is_refused_before_it_allocates():
    from torchdoctor import sandbox
    from torchdoctor.engine import functions

    fns = functions()
    tracemalloc.start()
    try:
        for source in ("{{ ('a' * 10**9) | length }}", "{{ [0] * 10**8 }}",
                       "{% set a = 'x' * 100000 %}{{ a | replace('x', a) | length }}"):
            with pytest.raises(sandbox.TemplateProblem):
                sandbox.render(source, dict(fns), fns)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024 * 1024, f"peak {peak} bytes"


@pytest.mark.parametrize(
    ("message", "words"),
    [
        ("\"{% macro m() %}x{% endmacro %}{{ m() }}\"", ["{% macro %} is not allowed"]),
        ("\"{{ torch.version | center(10) }}\"", ["filter 'center' is not allowed"]),
        ("\"{{ lipsum() }}\"", ["unknown name 'lipsum'"]),
        ("\"{{ torch.verison }}\"", ["unknown fact 'torch.verison'"]),
        ("\"{{ torch.version\"", ["template line 1"]),
    ],
    ids=["macro", "padding-filter", "jinja-global", "fact-typo", "syntax"],
)
def test_a_bad_message_fails_when_the_rule_loads(capsys, tmp_path, facts_file, message, words):
    rules = pack(tmp_path, "bad-message", message)
    for command in COMMANDS:
        line = one_line(*run(capsys, *COMMANDS[command](facts_file, rules)), *words)
        assert f"{rules / 'team' / 'bad-message.yaml'}:7: message" in line, line


def test_a_condition_calling_an_unknown_function_fails_when_the_rule_loads(capsys, tmp_path, facts_file):
    rules = pack(tmp_path, "unknown-function", "hello")
    path = rules / "team" / "unknown-function.yaml"
    path.write_text(path.read_text().replace('when: "True"', 'when: "no_such_table(torch.version) == 1"'))
    one_line(*run(capsys, "check", "--facts", facts_file, "--rules", rules),
             f"{path}:6: 'when' calls an unknown function 'no_such_table'")


@pytest.mark.slow  # measured with --durations (issue 21, item 13)
def test_shipped_messages_render_unchanged_in_the_sandbox():
    """The sandbox takes nothing a shipped message uses: every rule example that checks its
    message still gets exactly that message (run_examples renders through the sandbox)."""
    from torchdoctor.engine import run_examples
    from torchdoctor.rules import load_rules

    failed = [f"{r.rule}[{r.group}: {r.name}]: {r.detail}" for rule in load_rules()
              for r in run_examples(rule) if not r.passed and not r.xfail]
    assert failed == []


def test_a_long_fact_is_cut_not_an_error():
    from torchdoctor import sandbox

    out = sandbox.render("{% for i in range(100000) %}{{ text }}{% endfor %}", {"text": "y" * 100}, {})
    assert len(out) == sandbox.MAX_OUTPUT + 1 and out.endswith("…")


# ----------------------------------------------------------------------------------------
# class 5 and 6: workload files
# ----------------------------------------------------------------------------------------


def alias_bomb(levels: int = 6) -> str:
    lines = ['a0: &a0 ["fp16", "fp16", "fp16", "fp16", "fp16", "fp16", "fp16", "fp16", "fp16"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + f"\nprecision: *a{levels - 1}\n"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        (alias_bomb(), 1, ["a YAML anchor (&a0) is not allowed"]),
        ("task: detection\nprecision: &p bf16\nseed: 3\n", 2, ["a YAML anchor (&p)"]),
        ("task: detection\nworkload_defaults: &d {seed: 1}\nworkload: *d\n", 2, ["anchor"]),
    ],
    ids=["nested-alias-bomb", "scalar-anchor", "mapping-alias"],
)
def test_workload_aliases_are_refused_at_their_line(capsys, tmp_path, facts_file, text, line, words):
    workload = tmp_path / "workload.yaml"
    workload.write_text(text, encoding="utf-8")
    got = one_line(*run(capsys, "recommend", "--workload", workload, "--facts", facts_file), *words)
    assert f"{workload}:{line}:" in got


@POSIX_ONLY
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory", "oversize"])
def test_workload_file_that_is_not_a_small_regular_file(capsys, tmp_path, facts_file, kind):
    path = tmp_path / "workload.yaml"
    words = {"fifo": "not a regular file (a FIFO)", "dev-zero": "not a regular file (a character device)",
             "directory": "is a directory", "oversize": "larger than"}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
    elif kind == "directory":
        path.mkdir()
    else:
        path.write_text("task: detection\n" + "# padding\n" * 20000)
    line = one_line(*run(capsys, "recommend", "--workload", path, "--facts", facts_file), words)
    assert str(path) in line


@POSIX_ONLY
@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "oversize", "alias"])
@pytest.mark.parametrize("command", COMMANDS)
def test_rule_file_that_is_hostile(capsys, tmp_path, facts_file, kind, command):
    rules = tmp_path / "pack"
    (rules / "team").mkdir(parents=True)
    path = rules / "team" / "hostile-rule.yaml"
    if kind == "fifo":
        os.mkfifo(path)
        words = ["not a regular file (a FIFO)"]
    elif kind == "dev-zero":
        path.symlink_to("/dev/zero")
        words = ["not a regular file (a character device)"]
    elif kind == "oversize":
        path.write_text(rule_text("hostile-rule", "hello") + "# " + "x" * (1024 * 1024) + "\n")
        words = ["larger than"]
    else:
        path.write_text(rule_text("hostile-rule", "hello").replace("tags", "x") + "tags: &t [a]\n")
        words = [":13: a YAML anchor (&t)"]
    line = one_line(*run(capsys, *COMMANDS[command](facts_file, rules)), *words)
    assert str(path) in line and "pipe it to stdin" not in line


# ----------------------------------------------------------------------------------------
# class 10: huge integers and wrong types
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("task: detection\nseed: 0x" + "f" * 4000 + "\n", [":2:", "a number of 4002 characters"]),
        ("task: detection\nseed: " + "9" * 5000 + "\n", [":2:", "a number of 5000 characters"]),
        ("task: detection\nseed: 0x" + "f" * 900 + "\n", [":2: seed: must be an integer from 0 to",
                                                           "<an integer of 3600 bits>"]),
        ("task: detection\ndistributed: ddp\nlocal_world_size: " + "9" * 900 + "\n",
         [":3: local_world_size: must be an integer from 1 to 4096"]),
        ("task: detection\ndataloader_workers: " + "7" * 900 + "\n",
         [":2: dataloader_workers: must be an integer from 0 to 4096"]),
        ("task: detection\nlocal_world_size: 100000\n", [":2: local_world_size: must be an integer from 1 to"]),
        ("task: [detection]\n", [":1: task: must be a task name (text), got <a list of 1 item(s)>"]),
        ("workload:\n  task: {name: detection}\n", [":2: task: must be a task name (text)"]),
        ("1: detection\n", [":1: field names are text, got 1"]),
    ],
    ids=["seed-hex-4000", "seed-decimal-5000", "seed-hex-900", "local-world-size-900-digits",
         "workers-900-digits", "local-world-size-100000", "task-list", "task-mapping", "int-key"],
)
def test_workload_numbers_and_types_are_one_line(capsys, tmp_path, facts_file, text, words):
    workload = tmp_path / "workload.yaml"
    workload.write_text(text, encoding="utf-8")
    line = one_line(*run(capsys, "recommend", "--workload", workload, "--facts", facts_file), *words)
    assert str(workload) in line


@pytest.mark.parametrize(
    ("gpu", "words"),
    [
        ("9" * 5000 + "x A100", ["--gpu", "characters (at most 200)"]),
        ("9" * 150 + "x A100", ["the GPU count must be 1 to 64"]),
        ("0" * 100 + "4x A100", None),
        ("(" * 5000 + "A100", ["characters (at most 200)"]),
    ],
    ids=["count-5000-digits", "count-150-digits", "leading-zeros", "parentheses"],
)
def test_gpu_option_bounds(capsys, gpu, words):
    code, out, err = run(capsys, "recommend", "--task", "detection", "--gpu", gpu, "--format", "json")
    if words is None:
        assert code in (0, 1) and '"count": 4' in out, err
    else:
        one_line(code, out, err, *words)


@pytest.mark.parametrize("version", ["9" * 5000, "2." + "9" * 5000, "2.13.0+" + "x" * 5000])
def test_torch_version_past_the_int_limit_is_one_line(capsys, version):
    line = one_line(*run(capsys, "recommend", "--task", "detection", "--gpu", "A100", "--torch-version", version),
                    "--torch-version")
    assert "not a version" in line or "not a torch release" in line


def test_api_bounds_huge_integers_and_versions(facts_file):
    import torchdoctor
    from torchdoctor.errors import UserError
    from torchdoctor.importers import load_report

    facts = load_report(facts_file.read_bytes(), str(facts_file))
    for kwargs, words in [
        ({"torch_version": "9" * 5000}, "not a version"),
        ({"local_world_size": 10**5000}, "local_world_size: must be an integer from 1 to 4096"),
        ({"seed": int("f" * 5000, 16)}, "<an integer of 20000 bits>"),
        ({"task": ["detection"]}, "task: must be a task name"),
    ]:
        with pytest.raises(UserError, match=None) as info:
            torchdoctor.recommend(facts=facts, **kwargs)
        assert words in str(info.value) and len(str(info.value)) < 400


def test_values_past_the_int_limit_never_crash_a_lookup():
    from torchdoctor import engine, settings, tables

    assert tables._cuda("1" * 5000 + ".1") is None
    assert tables._majmin("1" * 5000 + ".1") is None
    assert tables._version("1" * 5000) is None
    assert tables.arch_for_cc("sm_" + "9" * 5000) is None
    with pytest.raises(engine.FactUnavailable):
        engine.v("2." + "1" * 5000)
    registry = settings.load_registry()
    threads = next(s for s in registry.settings.values() if s.type == "int")
    with pytest.raises(ValueError, match="out of range") as info:
        threads.validate_value(10**5000)
    assert len(str(info.value)) < 200


def test_a_huge_integer_in_a_rule_file_is_its_line(capsys, tmp_path, facts_file):
    rules = pack(tmp_path, "big-number", "hello")
    path = rules / "team" / "big-number.yaml"
    path.write_text(path.read_text().replace("examples:", "known_problems: 0x" + "f" * 5000 + "\nexamples:"))
    one_line(*run(capsys, "check", "--facts", facts_file, "--rules", rules), f"{path}:10:", "a number of")
