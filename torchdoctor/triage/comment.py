"""The triage comment (Markdown) of a triage result: the verdict on one line, the findings with their rule ids and
fixes, what the issue does not say and the one command that would say it, junk named, the rest in ``<details>``,
and a hidden marker so the same comment is updated, never duplicated.

The values come from a hostile body (a GPU name, a field's heading, the facts the importer read), so every one is
shown through :func:`inline`: redacted again, on one line, cut, HTML-escaped outside code spans (``</details>``,
``<img>`` and ``<!--`` cannot open or close anything), ``@mentions`` neutralised (``@``+U+200B: no one is pinged,
no team is notified), and a code span whose backticks do not pair is escaped. No template engine runs: the comment
is assembled from strings, so nothing in a body is ever evaluated."""

from __future__ import annotations

import re

from torchdoctor.render.text import first_sentence, html_escape, no_mentions

MARKER = "<!-- torchdoctor-triage -->"
"""The hidden first line of every comment triage writes: how `--post` finds its own comment again."""
MAX_COMMENT_CHARS = 60_000
"""GitHub refuses comments over 65,536 characters."""
MAX_FINDINGS = 20
MAX_TITLE_CHARS = 400
MAX_FIX_CHARS = 800
MAX_SHORT_FIX_CHARS = 400
"""A fix longer than this is shown by its first sentence."""
MAX_COMMAND_CHARS = 160
"""The command asked for (a project's, rules/data/triage.yaml, is at most this long; a mapping's at most 120)."""
_ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}


def _redact(text: str) -> str:
    from torchdoctor.redact import redact_text

    return redact_text(text)


def inline(text: object, limit: int = MAX_TITLE_CHARS) -> str:
    """Any value as one line of safe Markdown prose: redacted, cut at ``limit`` (``…``), HTML escaped outside
    code spans, mentions neutralised, no line break, no fence."""
    s = " ".join(_redact(str(text)[: limit * 2]).split())
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    parts = s.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: show it, start no code span
        parts = [s.replace("`", "'")]
    for i in range(len(parts)):
        if i % 2 == 0:
            parts[i] = html_escape(parts[i], quote=False).replace("[", "\\[")
    return no_mentions("`".join(parts))


def code(text: object, limit: int = 120) -> str:
    """A value as an inline code span that it cannot close."""
    s = no_mentions(" ".join(_redact(str(text)[: limit * 2]).split())[:limit])
    longest = max((len(r) for r in re.findall(r"`+", s)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _and(words: list) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def verdict_line(result: dict) -> str:
    serious = [f for f in result["findings"] if f["severity"] in ("error", "warning")]
    if serious:
        ids = ", ".join(dict.fromkeys(f.get("message_id") or f["id"] for f in serious[:4]))
        return f"{_plural(len(serious), 'environment problem')} found in this issue ({ids})."
    junk = [j for j in result["junk_details"] if j["kind"] != "cut" or not result["facts_read"]]
    if junk:
        return f"the environment in this issue cannot be read: {junk[0]['says']}."
    if result["junk_details"]:  # a cut collect_env that still stated facts
        return f"no known environment problem in what this issue states, but {result['junk_details'][0]['says']}."
    if result["read"]:
        return "no known environment problem in what this issue states."
    return "this issue states no environment that torchdoctor can read."


def _finding(f: dict) -> list[str]:
    ident = code(f["id"])
    if f.get("message_id"):
        lines = ", ".join(str(n) for n in f.get("lines", [])[:3])
        ident = f"{code(f['message_id'])} (rule {code(f['id'])}{', line ' + lines if lines else ''})"
    out = [f"- {_ICON.get(f['severity'], '')} **{f['severity']}** {ident}: {inline(f['title'])}"]
    if f.get("fix"):
        fix = f["fix"]
        if len(fix) > MAX_SHORT_FIX_CHARS:  # a long fix: its first sentence, the rest in `rules explain`
            head, more = first_sentence(fix)
            fix = head + (f" (more: `torchdoctor rules explain {f['id']}`)" if more else "")
        out.append(f"  **Fix:** {inline(fix, MAX_FIX_CHARS)}")
    return out


def render_comment(result: dict) -> str:
    lines = [MARKER, f"**torchdoctor triage**: {inline(result['verdict'], 600)}", ""]
    serious = [f for f in result["findings"] if f["severity"] in ("error", "warning")]
    info = [f for f in result["findings"] if f["severity"] not in ("error", "warning")]
    for f in serious[:MAX_FINDINGS]:
        lines += _finding(f)
    if len(serious) > MAX_FINDINGS:
        lines.append(f"- … and {len(serious) - MAX_FINDINGS} more")
    if serious:
        lines.append("")
    for j in result["junk_details"]:
        lines.append(f"- 🗑️ {inline(j['says'][:1].upper() + j['says'][1:])}.")
    if result["junk_details"]:
        lines.append("")
    if result["missing"]:
        said = _and([m["words"] for m in result["missing"]])
        also = ""
        fallback = result.get("command_fallback") or {}
        words = {m["path"]: m["words"] for m in result["missing"]}
        unsaid = [words[p] for p in fallback.get("facts", ()) if p in words]
        if unsaid:  # the project's command does not print all of it
            also = f" (all but {inline(_and(unsaid))}, which {code(fallback['command'], MAX_COMMAND_CHARS)} states)"
        lines.append(f"**Not in the issue:** {inline(said)}. Running {code(result['command'], MAX_COMMAND_CHARS)} "
                     f"and pasting its output (as text, in a code block) would say it{also}.")
        lines.append("")
    lines += ["<details>", "<summary>What torchdoctor read</summary>", ""]
    if result["facts_read"]:
        for fr in result["facts_read"]:
            where = f" ({inline(fr['where'], 80)})" if fr.get("where") else ""
            lines.append(f"- {inline(fr['words'])}: {code(fr['value'])}{where}")
    else:
        lines.append("- no environment fact")
    for f in info[:MAX_FINDINGS]:
        lines += _finding(f)
    issue = result.get("issue") or {}
    if issue.get("cut"):
        lines.append(f"- the issue body has {issue.get('size', 0):,} characters; only the first part was read")
    lines += ["", "Read by deterministic rules (no AI model) from the text of this issue; nothing in it was run. "
              "Values are redacted. Rule ids are explained by `torchdoctor rules explain ID`.", "", "</details>"]
    text = "\n".join(lines) + "\n"
    if len(text) > MAX_COMMENT_CHARS:  # cannot happen with the caps above; never post what GitHub refuses
        text = text[: MAX_COMMENT_CHARS - 40].rsplit("\n", 1)[0] + "\n\n… (cut)\n\n</details>\n"
    return text
