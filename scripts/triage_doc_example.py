"""Write the example comments of docs/github-action.md from real fixtures (between its example markers), or check
that they are current (``--check``: exit 1 when the doc is stale; tests/test_triage_docs.py runs it).

Usage: python scripts/triage_doc_example.py [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DOC = REPO / "docs" / "github-action.md"
EXAMPLES = {
    # name in the doc -> (fixture, what it is)
    "glibc": (REPO / "tests" / "data" / "cases3" / "case301.txt",
              "KumaTea/pytorch-aarch64#16 (tests/data/cases3/case301)"),
    "template": (REPO / "tests" / "data" / "triage" / "pytorch-83987.json",
                 "pytorch/pytorch#83987 (tests/data/triage/pytorch-83987.json)"),
    "project": (REPO / "tests" / "data" / "cases3" / "case330.txt",
                "facebookresearch/detectron2#460 (tests/data/cases3/case330), an issue of a project whose own "
                "command prints no driver version"),
}
REPOSITORY = {"project": "facebookresearch/detectron2"}
"""The repository an example's plain body is an issue of (as its event would say)."""


def rendered(name: str) -> str:
    from torchdoctor.triage import triage_issue
    from torchdoctor.triage.labels import load_mapping

    path, cite = EXAMPLES[name]
    text = path.read_text(encoding="utf-8")
    issue = json.loads(text) if path.suffix == ".json" else text
    if name in REPOSITORY:
        issue = {"action": "opened", "repository": {"full_name": REPOSITORY[name]}, "issue": {"body": text}}
    r = triage_issue(issue, labels=load_mapping(str(REPO / "examples" / "triage-labels.yml")))
    labels = ", ".join(f"`{x}`" for x in r["labels"]) or "none"
    return (f"The comment for {cite} (labels with examples/triage-labels.yml: {labels}):\n\n"
            f"````markdown\n{r['comment'].rstrip()}\n````")


def updated(doc: str) -> str:
    for name in EXAMPLES:
        start, end = f"<!-- example:{name} -->", f"<!-- /example:{name} -->"
        head, found, rest = doc.partition(start)
        if not found:
            raise SystemExit(f"{DOC}: no {start} marker")
        _, found, tail = rest.partition(end)
        if not found:
            raise SystemExit(f"{DOC}: no {end} marker")
        doc = f"{head}{start}\n{rendered(name)}\n{end}{tail}"
    return doc


def main(argv: list[str]) -> int:
    doc = DOC.read_text(encoding="utf-8")
    new = updated(doc)
    if "--check" in argv:
        if new != doc:
            print(f"{DOC.relative_to(REPO)} is stale: run python scripts/triage_doc_example.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
