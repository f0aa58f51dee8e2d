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
          "repeats-default", "parse-error")
"""The matcher mechanisms (torchdoctor.lint.checks) a lint rule may name in ``check``."""
RULE_FIELDS = {"id", "kind", "check", "severity", "tags", "summary", "why", "fix", "message",
               "references", "examples", "params", "default", "version_dependent"}
HELP_URI = "https://github.com/torchdoctor/torchdoctor/blob/main/docs/lint.md#{id}"
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

    def rule(self, rule_id: str) -> Optional[LintRule]:
        return next((r for r in self.rules if r.id == rule_id), None)


def lint_dir() -> Path:
    return default_rules_dir() / "lint"


def _inputs() -> list:
    base = default_rules_dir()
    files = sorted(p for p in lint_dir().glob("*.yaml"))
    return files + [lint_dir() / "data" / "torch_backends.yaml", base / "settings.yaml",
                    base / "data" / "torch_releases.yaml"]


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
    if data is None:
        raw = {str(p): yamlio.load_text(t, str(p), RuleFileError, aliases="scalars")
               for p, t in zip(paths, texts)}
        data = _compile(raw, [str(p) for p in paths])
        rulecache.store(name, key, data)
    return _knowledge(data)


def _knowledge(data: dict) -> Knowledge:
    rules = [LintRule(**r) for r in data["rules"]]
    return Knowledge(rules=rules, names=data["names"], introspected=data["introspected"],
                     look_alikes=data["look_alikes"], fake_notes=data["fake_notes"],
                     env_when=data["env_when"], env_until=data["env_until"],
                     tf32_legacy=data["tf32_legacy"], cublas_range=tuple(data["cublas_range"]),
                     newest_torch=data["newest_torch"], present=data["present"])


def _compile(raw: dict, order: list) -> dict:
    base = default_rules_dir()
    settings_path = str(base / "settings.yaml")
    rule_paths = [p for p in order if Path(p).parent.name == "lint" or p not in (
        settings_path, str(base / "data" / "torch_releases.yaml"), str(lint_dir() / "data" / "torch_backends.yaml"))]
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
            "newest_torch": newest, "present": present}


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
