"""What lint knows, loaded from YAML (no pydantic, no jinja on this path): the lint rules
(``rules/lint/*.yaml``), the settings registry (``rules/settings.yaml``: look-alikes, the
moment torch reads each environment variable, the TF32 APIs) and the names under
``torch.backends`` (``rules/lint/data/torch_backends.yaml``).

The compiled result is plain data, kept in :mod:`torchdoctor.rulecache` keyed by the bytes of
every input file, so a warm run does not import yaml either.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from torchdoctor.errors import RuleFileError
from torchdoctor.paths import default_rules_dir

KINDS = ("fake-setting", "replaced-object", "pitfall", "deprecated", "parse-error")
"""The fixed vocabulary of finding kinds: every lint rule has exactly one."""
SEVERITIES = ("error", "warning", "info")
CHECKS = ("unknown-name", "replaced-object", "cudnn-flags-defaults", "benchmark-with-deterministic",
          "deterministic-without-workspace", "env-after-read", "tf32-api-mix", "deprecated-name",
          "repeats-default", "parse-error", "deprecated-function", "missing-keyword", "attribute-typo",
          "deprecated-keyword")
"""The matcher mechanisms (torchdoctor.lint.checks) a lint rule may name in ``check``."""
RULE_FIELDS = {"id", "kind", "check", "severity", "tags", "summary", "why", "fix", "message",
               "references", "examples", "params", "default", "version_dependent"}
_ID = re.compile(r"^[a-z][a-z0-9-]{1,63}$")


@dataclass
class LintRule:
    id: str
    kind: str
    check: str
    severity: str
    tags: list
    summary: str
    why: str
    fix: str
    message: str
    references: list
    examples: dict
    params: dict
    default: bool
    path: str

    @property
    def all_tags(self) -> list:
        return [self.kind] + [t for t in self.tags if t != self.kind]


@dataclass
class Knowledge:
    rules: list
    names: dict
    """torch.backends names without the prefix -> {kind, since?}."""
    introspected: str
    look_alikes: dict
    """Fake/deprecated dotted name -> {relation, advice, since/until, deprecated, rewrite, setting}."""
    fake_notes: dict
    """Every fake name of the registry (fake look-alikes and ``fakes:``) -> did_you_mean / note
    / advice, as audit() reads them."""
    env_when: dict
    """Environment variable -> when torch reads it (torch-import, cuda-init, ...)."""
    env_until: dict = field(default_factory=dict)
    tf32_legacy: list = field(default_factory=list)
    """Legacy TF32 API names (settings and their legacy look-alikes that have a new-api twin)."""
    cublas_range: tuple = ("", "")
    """[since, until) of the CUBLAS_WORKSPACE_CONFIG requirement."""
    newest_torch: str = ""
    present: dict = field(default_factory=dict)
    """Dotted torch name -> [first release known to have it, exact]: exact (the backends table,
    the registry's settings with their ``since``) means the name is absent before that release;
    otherwise (a deprecated name, its replacement, a parent module) only presence from it is
    known."""
    python_cell_magics: list = field(default_factory=list)
    """IPython cell magics whose body is Python run in the notebook (ipython_magics.yaml)."""

    def presence(self, dotted: str, version: tuple) -> Optional[bool]:
        """Whether ``dotted`` exists in torch ``version``: True, False, or None (unknown)."""
        from torchdoctor.lint.versions import parse

        known = self.present.get(dotted)
        if known is not None:
            if version >= (parse(known[0]) or (0, 0, 0)):
                return True
            return False if known[1] else None
        if dotted.startswith("torch.backends."):
            parent = dotted[len("torch.backends."):].rpartition(".")[0]
            info = self.names.get(parent) if parent else {"kind": "module"}
            if info is not None and (info.get("kind") == "module" or (
                    info.get("kind") == "object" and any(q.startswith(parent + ".") for q in self.names))):
                return False  # the table lists every public name of a backends module
        return None

    def is_value(self, dotted: str) -> bool:
        """A torch name that holds a plain value (a flag, a read-only value, a constant of
        torch.backends): ``x = torch.backends.cudnn.benchmark`` copies it, it is no alias."""
        if not dotted.startswith("torch.backends."):
            return False
        info = self.names.get(dotted[len("torch.backends."):])
        return info is not None and info.get("kind") in ("flag", "readonly", "constant")

    def rule(self, rule_id: str) -> Optional[LintRule]:
        return next((r for r in self.rules if r.id == rule_id), None)


def lint_dir() -> Path:
    return default_rules_dir() / "lint"


def _inputs() -> list:
    base = default_rules_dir()
    files = sorted(p for p in lint_dir().glob("*.yaml"))
    return files + [lint_dir() / "data" / "torch_backends.yaml", base / "settings.yaml",
                    base / "data" / "torch_releases.yaml", lint_dir() / "data" / "ipython_magics.yaml"]


@functools.lru_cache(maxsize=2)
def load(extra: tuple = ()) -> Knowledge:
    """The lint knowledge (``extra``: more lint rule files, for `rules test PATH`)."""
    from torchdoctor import rulecache, yamlio

    paths = _inputs() + [Path(p) for p in extra]
    texts = []
    for p in paths:
        texts.append(yamlio.read_text(p, RuleFileError, what="lint knowledge file"))
    key = rulecache.make_key([(str(p), t.encode("utf-8")) for p, t in zip(paths, texts)])
    name = rulecache.entry_name("lint", [str(p) for p in paths])
    data = rulecache.load(name, key)
    if data is not None and problem(data) is not None:
        data = None  # an entry someone edited (or a bug wrote): compiled again, never used
    if data is None:
        raw = {str(p): yamlio.load_text(t, str(p), RuleFileError, aliases="scalars")
               for p, t in zip(paths, texts)}
        data = _compile(raw, [str(p) for p in paths])
        found = problem(data)
        if found is not None:
            raise RuleFileError(f"lint knowledge: {found}")
        rulecache.store(name, key, data)
    return _knowledge(data)


# -- the compiled data, checked on every load (a cache entry is re-validated like the rules
#    entry of torchdoctor.rules: it can hold nothing the YAML files could not) -----------------

_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}(?:\.[A-Za-z_][A-Za-z0-9_]{0,99}){0,15}")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}")
_TORCH_CALL = re.compile(r"torch(?:\.[A-Za-z_][A-Za-z0-9_]{0,99}){1,15}")
_LITERAL_ARG = re.compile(r'(?:[A-Za-z_][A-Za-z0-9_]{0,39}=)?"[A-Za-z0-9_.:-]{0,40}"')
"""What a rewrite may add to a call (``"cuda"``, ``device_type="cuda"``): a string literal,
optionally as a keyword; ``--fix`` writes it into users' files."""
NAME_KINDS = ("function", "import", "class", "flag", "module", "object", "constant", "readonly")
_LOOK_ALIKE_FIELDS = {"relation", "advice", "since", "until", "deprecated", "deprecated_until",
                      "rewrite", "references", "setting", "python"}
_RULE_ENTRY = {"id": str, "kind": str, "check": str, "severity": str, "tags": list, "summary": str,
               "why": str, "fix": str, "message": str, "references": list, "examples": dict,
               "params": dict, "default": bool, "path": str}
_TOP = {"rules": list, "names": dict, "introspected": str, "look_alikes": dict, "fake_notes": dict,
        "env_when": dict, "env_until": dict, "tf32_legacy": list, "cublas_range": list,
        "newest_torch": str, "present": dict, "python_cell_magics": list}
_PARAMS = {"call_fix": "dotted-list", "attr_fix": "dotted-ident", "functions": "str-list",
           "calls": "str-list", "torch_importers": "str-list", "for_children": "str-list",
           "benchmark": "str", "deterministic": "str", "function": "str", "since": "str",
           "moments": "str-lists", "in_process": "str-lists", "defaults": "scalars",
           "call_defaults": "scalars", "table": "table", "keyword": "ident", "until": "str",
           "position": "int", "typos": "ident-map", "prefixes": "str-list", "keywords": "str-list"}


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, bool, int, float))


def _strs(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _param_ok(name: str, v: Any) -> bool:
    shape = _PARAMS.get(name)
    if shape == "dotted-list":
        return _strs(v) and all(_DOTTED.fullmatch(x) for x in v)
    if shape == "dotted-ident":
        return isinstance(v, dict) and all(isinstance(k, str) and _DOTTED.fullmatch(k) and isinstance(x, str)
                                           and _IDENT.fullmatch(x) for k, x in v.items())
    if shape == "str-list":
        return _strs(v)
    if shape == "str":
        return isinstance(v, str)
    if shape == "str-lists":
        return isinstance(v, dict) and all(isinstance(k, str) and _strs(x) for k, x in v.items())
    if shape == "ident":
        return isinstance(v, str) and _IDENT.fullmatch(v) is not None
    if shape == "int":
        return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 64
    if shape == "ident-map":  # a rename --fix writes: names only
        return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str) and _IDENT.fullmatch(k)
                                           and _IDENT.fullmatch(x) for k, x in v.items())
    if shape == "table":  # dotted name -> its scalar fields; a `rename` is a dotted torch name
        return isinstance(v, dict) and all(
            isinstance(k, str) and _DOTTED.fullmatch(k) and isinstance(e, dict)
            and all(isinstance(f, str) and _scalar(x) for f, x in e.items())
            and (e.get("rename") is None or (isinstance(e["rename"], str) and _DOTTED.fullmatch(e["rename"])))
            for k, e in v.items())
    if shape == "scalars":
        return isinstance(v, dict) and all(isinstance(k, str) and _scalar(x) for k, x in v.items())
    # a parameter no mechanism reads: plain data only
    return _scalar(v) or (isinstance(v, list) and all(map(_scalar, v))) or (
        isinstance(v, dict) and all(isinstance(k, str) and (_scalar(x) or _strs(x)) for k, x in v.items()))


def _rule_problem(r: Any) -> Optional[str]:
    if not isinstance(r, dict) or set(r) != set(_RULE_ENTRY):
        return "a rule entry without exactly the fields of a lint rule"
    for k, typ in _RULE_ENTRY.items():
        if not isinstance(r[k], typ):
            return f"rule field {k} is not a {typ.__name__}"
    rid = r["id"]
    if not _ID.match(rid) or r["kind"] not in KINDS or r["check"] not in CHECKS or r["severity"] not in SEVERITIES:
        return f"rule {rid[:64]!r}: an id, kind, check or severity outside the vocabulary"
    if not (_strs(r["tags"]) and _strs(r["references"])):
        return f"rule {rid}: tags and references are lists of strings"
    ex = r["examples"]
    for group in ("fires", "ok"):
        cases = ex.get(group) or []
        if not isinstance(cases, list) or not all(isinstance(c, dict) and isinstance(c.get("code"), str)
                                                  for c in cases):
            return f"rule {rid}: examples.{group} are mappings with code"
    if not ex.get("fires"):
        return f"rule {rid}: no examples.fires"
    for name, v in r["params"].items():
        if not isinstance(name, str) or not _param_ok(name, v):
            return f"rule {rid}: params.{str(name)[:40]} is not what its mechanism reads"
    return None


def _look_alike_problem(name: Any, e: Any) -> Optional[str]:
    if not (isinstance(name, str) and _DOTTED.fullmatch(name)):
        return "a look-alike that is not a dotted name"
    if not isinstance(e, dict) or not set(e) <= _LOOK_ALIKE_FIELDS:
        return f"look-alike {name}: not a mapping of its fields"
    if not all(_scalar(e.get(k)) for k in _LOOK_ALIKE_FIELDS - {"rewrite", "references"}):
        return f"look-alike {name}: a field that is not a scalar"
    if not _strs(e.get("references", [])):
        return f"look-alike {name}: references are strings"
    rw = e.get("rewrite")
    if rw is None:
        return None
    if not isinstance(rw, dict) or not (isinstance(rw.get("call"), str) and _TORCH_CALL.fullmatch(rw["call"])):
        return f"look-alike {name}: a rewrite's call is a dotted torch name"
    for k, v in rw.items():
        if k in ("prepend", "append"):
            if v is not None and not (isinstance(v, str) and _LITERAL_ARG.fullmatch(v)):
                return f"look-alike {name}: a rewrite's {k} is a string literal argument"
        elif k != "call" and not (_name_or_names(v)):
            # parameter lists (params, new_params) and any later field: names, nothing else
            return f"look-alike {name}: a rewrite's {str(k)[:40]} is a name or a list of names"
    return None


def _name_or_names(v: Any) -> bool:
    if v is None or isinstance(v, bool):
        return True
    if isinstance(v, str):
        return _DOTTED.fullmatch(v) is not None
    return isinstance(v, list) and all(isinstance(x, str) and _DOTTED.fullmatch(x) for x in v)


def problem(data: Any) -> Optional[str]:
    """What is wrong with compiled lint knowledge (a fresh compile or a cache entry), or None:
    every field has its type, every rule its vocabulary and parameters of the shapes the
    mechanisms read, and everything ``--fix`` writes into a file (a renamed attribute, a
    rewrite's call and arguments, an attribute fix) is a name or a plain literal."""
    if not isinstance(data, dict) or set(data) != set(_TOP):
        return "not the fields of compiled lint knowledge"
    for k, typ in _TOP.items():
        if not isinstance(data[k], typ):
            return f"{k} is not a {typ.__name__}"
    for r in data["rules"]:
        found = _rule_problem(r)
        if found:
            return found
    for name, info in data["names"].items():
        if not (isinstance(name, str) and _DOTTED.fullmatch(name) and isinstance(info, dict)
                and set(info) <= {"kind", "since"} and info.get("kind") in NAME_KINDS and _scalar(info.get("since"))):
            return f"names: {str(name)[:80]!r} is not a torch.backends name with its kind"
    for name, e in data["look_alikes"].items():
        found = _look_alike_problem(name, e)
        if found:
            return found
    for name, note in data["fake_notes"].items():
        if not (isinstance(name, str) and isinstance(note, dict) and set(note) <= {"did_you_mean", "note"}
                and all(_scalar(v) for v in note.values())):
            return f"fake_notes: {str(name)[:80]!r} is not a note"
    for table in ("env_when", "env_until"):
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in data[table].items()):
            return f"{table} maps names to strings"
    if not (_strs(data["tf32_legacy"]) and _strs(data["cublas_range"]) and len(data["cublas_range"]) == 2):
        return "tf32_legacy and cublas_range are strings"
    for name, known in data["present"].items():
        if not (isinstance(name, str) and isinstance(known, list) and len(known) == 2
                and isinstance(known[0], str) and isinstance(known[1], bool)):
            return f"present: {str(name)[:80]!r} is not [since, exact]"
    if not (_strs(data["python_cell_magics"]) and all(_IDENT.fullmatch(m) for m in data["python_cell_magics"])):
        return "python_cell_magics are names"
    return None


def _knowledge(data: dict) -> Knowledge:
    rules = [LintRule(**r) for r in data["rules"]]
    return Knowledge(rules=rules, names=data["names"], introspected=data["introspected"],
                     look_alikes=data["look_alikes"], fake_notes=data["fake_notes"],
                     env_when=data["env_when"], env_until=data["env_until"],
                     tf32_legacy=data["tf32_legacy"], cublas_range=tuple(data["cublas_range"]),
                     newest_torch=data["newest_torch"], present=data["present"],
                     python_cell_magics=data["python_cell_magics"])


def _compile(raw: dict, order: list) -> dict:
    base = default_rules_dir()
    settings_path = str(base / "settings.yaml")
    magics_path = str(lint_dir() / "data" / "ipython_magics.yaml")
    rule_paths = [p for p in order if Path(p).parent.name == "lint" or p not in (
        settings_path, str(base / "data" / "torch_releases.yaml"), str(lint_dir() / "data" / "torch_backends.yaml"),
        magics_path)]
    rules, seen = [], set()
    for p in rule_paths:
        rule = _rule(p, raw[p])
        if rule["id"] in seen:
            raise RuleFileError(f"{p}: duplicate lint rule id '{rule['id']}'")
        seen.add(rule["id"])
        rules.append(rule)
    names_raw = raw[str(lint_dir() / "data" / "torch_backends.yaml")] or {}
    names = {str(k): dict(v) for k, v in (names_raw.get("names") or {}).items()}
    reg = raw[settings_path] or {}
    look_alikes: dict = {}
    env_when: dict = {}
    env_until: dict = {}
    tf32_legacy: list = []
    cublas = ("", "")
    entries = [(k, v or {}, "setting") for k, v in (reg.get("settings") or {}).items()]
    entries += [(k, v or {}, "observed") for k, v in (reg.get("observed") or {}).items()]
    for key, body, where in entries:
        alikes = body.get("look_alikes") or []
        if where == "setting" and body.get("kind") == "env":
            var = key.split(".", 1)[1]
            env_when[var] = (body.get("takes_effect") or {}).get("when", "")
            env_until[var] = body.get("until") or ""
            if var == "CUBLAS_WORKSPACE_CONFIG":
                cublas = (str(body.get("since") or ""), str(body.get("until") or ""))
        if any(a.get("relation") == "new-api" for a in alikes):
            tf32_legacy.append(key)
            tf32_legacy += [a["name"] for a in alikes if a.get("relation") == "legacy"]
        for a in alikes:
            if a.get("relation") in ("fake", "deprecated") or a.get("deprecated"):
                entry = {k: a.get(k) for k in ("relation", "advice", "since", "until", "deprecated",
                                               "deprecated_until", "rewrite")}
                entry["references"] = list(a.get("references") or [])
                entry["setting"] = key
                entry["python"] = body.get("python") if where == "setting" else None
                look_alikes[str(a["name"])] = entry
    fake_notes: dict = {}
    for _, body, _ in entries:
        for a in body.get("look_alikes") or []:
            if a.get("relation") == "fake":
                fake_notes[str(a["name"])] = {"did_you_mean": a.get("did_you_mean"), "note": a.get("note")}
    for name, body in (reg.get("fakes") or {}).items():
        body = body or {}
        fake_notes[str(name)] = {"did_you_mean": body.get("did_you_mean"), "note": body.get("note")}
        if body.get("advice"):
            look_alikes.setdefault(str(name), {"relation": "fake", "advice": body["advice"],
                                               "references": list(body.get("references") or []),
                                               "setting": None, "python": None})
    releases = raw[str(base / "data" / "torch_releases.yaml")] or {}
    newest = _newest(releases)
    present = _present(names, reg, look_alikes)
    return {"rules": rules, "names": names, "introspected": str(names_raw.get("introspected") or ""),
            "look_alikes": look_alikes, "fake_notes": fake_notes, "env_when": env_when,
            "env_until": env_until, "tf32_legacy": tf32_legacy, "cublas_range": list(cublas),
            "newest_torch": newest, "present": present,
            "python_cell_magics": sorted(str(k) for k in ((raw.get(magics_path) or {}).get("python") or {}))}


def _present(names: dict, reg: dict, look_alikes: dict) -> dict:
    """What is known about which torch names exist, for guards (``hasattr(torch.x, "y")``)."""
    from torchdoctor.lint.versions import parse

    out: dict = {}
    for rel, info in names.items():
        out["torch.backends." + rel] = [str(info.get("since") or "0"), True]
    for key, body in (reg.get("settings") or {}).items():
        body = body or {}
        if str(key).startswith("torch.") and body.get("kind") in ("call", "assign") and body.get("since"):
            out.setdefault(str(key), [str(body["since"]), True])
    for name, entry in look_alikes.items():
        if entry.get("deprecated"):  # deprecated means still there; so is the replacement
            since = str(entry["deprecated"])
            out.setdefault(name, [since, False])
            call = (entry.get("rewrite") or {}).get("call")
            if call:
                out.setdefault(str(call), [since, False])
    for name, (since, _) in list(out.items()):  # a parent exists where a child does
        parts = name.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            old = out.get(parent)
            if old is None or (not old[1] and (parse(since) or (0,)) < (parse(old[0]) or (0,))):
                out[parent] = [since, False] if old is None else [since, old[1]]
    return out


def _newest(releases: Any) -> str:
    from torchdoctor.lint.versions import parse

    found = [str(r.get("version")) for r in (releases.get("releases") or []) if isinstance(r, dict)
             and parse(str(r.get("version"))) is not None]
    return max(found, key=lambda v: parse(v)) if found else ""


def _rule(path: str, raw: Any) -> dict:
    def fail(what: str) -> RuleFileError:
        return RuleFileError(f"{path}: {what}")

    if not isinstance(raw, dict):
        raise fail("a lint rule file holds one mapping")
    unknown = set(raw) - RULE_FIELDS
    if unknown:
        raise fail(f"unknown field(s) {', '.join(sorted(map(str, unknown)))[:200]}")
    for req in ("id", "kind", "check", "severity", "summary", "why", "message", "examples"):
        if req not in raw:
            raise fail(f"missing required field '{req}'")
    rid = str(raw["id"])
    if not _ID.match(rid) or Path(path).stem != rid:
        raise fail(f"id '{rid[:64]}' must be lower-case-with-dashes and match the file name")
    if raw["kind"] not in KINDS:
        raise fail(f"kind must be one of {', '.join(KINDS)}")
    if raw["check"] not in CHECKS:
        raise fail(f"check must be one of {', '.join(CHECKS)}")
    if raw["severity"] not in SEVERITIES:
        raise fail(f"severity must be one of {', '.join(SEVERITIES)}")
    ex = raw["examples"]
    if not isinstance(ex, dict) or not ex.get("fires") or "ok" not in ex:
        raise fail("examples needs `fires` and `ok` cases (code snippets)")
    for group in ("fires", "ok"):
        for case in ex.get(group) or []:
            if not isinstance(case, dict) or not isinstance(case.get("code"), str):
                raise fail(f"each {group} example is a mapping with `code`")
    return {"id": rid, "kind": raw["kind"], "check": raw["check"], "severity": raw["severity"],
            "tags": [str(t) for t in raw.get("tags") or []], "summary": str(raw["summary"]).strip(),
            "why": str(raw["why"]).strip(), "fix": str(raw.get("fix") or "").strip(),
            "message": str(raw["message"]).strip(), "references": [str(r) for r in raw.get("references") or []],
            "examples": ex, "params": dict(raw.get("params") or {}),
            "default": bool(raw.get("default", True)), "path": path}


def explain_text(rule: LintRule) -> str:
    """Markdown for `torchdoctor rules explain ID` of a lint rule."""
    lines = [f"# {rule.id} ({rule.kind}, {rule.severity}{'' if rule.default else ', off by default'})", "",
             rule.summary, "", "## Why", "", rule.why, ""]
    if rule.fix:
        lines += ["## Fix", "", rule.fix, ""]
    fires = rule.examples.get("fires") or []
    if fires:
        lines += ["## Example", "", "```python", fires[0]["code"].rstrip(), "```", ""]
    if rule.references:
        lines += ["## References", ""] + [f"- {r}" for r in rule.references] + [""]
    lines += [f"Tags: {', '.join(rule.all_tags)}. Source: {rule.path}", ""]
    return "\n".join(lines)
