"""Notebooks in `torchdoctor lint` (issue 21, items 1 and 2): cells read as IPython reads them
(IPython.core.inputtransformer2: escapes, cell magics, help syntax, `var = !cmd`), and findings
placed at their line of the raw .ipynb text in SARIF and GitHub annotations."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchdoctor.lint.ipython import mask_cell
from torchdoctor.lint.knowledge import load
from torchdoctor.lint.lines import split as split_lines
from torchdoctor.lint.notebook import NotJSON, scan

ROOT = Path(__file__).resolve().parents[1]
REAL = ROOT / "tests" / "data" / "real21"
MAGICS = load().python_cell_magics


def _run(args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), TORCHDOCTOR_NO_CACHE="1")
    return subprocess.run([sys.executable, "-m", "torchdoctor", "lint", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


# -- item 1: what IPython runs ---------------------------------------------------------------

# (cell, the Python IPython runs parses) - each checked against IPython 9.18's
# TransformerManager().transform_cell; the fairseq MMS cells are real.
VALID = [
    "for key in ['en_us', 'hi_in']:\n  !wget -O /tmp/x.mp3 https://x/{key}.mp3\n  !ffmpeg -y -i /tmp/x.mp3 {key}.wav\n",
    "! cd /tmp && wget https://x/KEY.PUB && \\\n    apt-key add KEY.PUB\n! rm -rf /usr/local/lib/libmkl*\n",
    "!python infer.py /content/models_lid/{model_name} --path /m.pt \\\n  --task audio_classification\n",
    "import os\n\n%cd \"/content/fairseq\"\n!pip install --editable ./ \n",
    "files = !ls\nenv = %env PATH\nprint(files, env)\n",
    "%%bash\nfor f in *; do echo \"$f\"; done\n",
    "\n%%time\nimport torch\n!nvidia-smi\n",
    "%%capture out\n%%time\nimport torch\n",
    "%%timeit -n 2\n  a = 1\n  b = 2\n",
    "%%writefile train.py\nimport torch\ndef broken(:\n",
    "torch.load?\n??torch\nx.y??\nx = 1\n",
    "if x == 1:\n    %cd /x\nelse:\n    !!ls\n",
    "a = 'it''s'  # !not a shell escape\n!echo \"it's\"\nprint(a)\n",
    "s = '''\n!text in a string\n'''\nprint(s)\n",
    "x = 1\n%%bash\nls\n",
    "  import os\n  !ls\n  print(os)\n",
    "for i in range(3):\n    ! echo \\\n      hi\n    print(i)\n",
    "%%time?\nx = 1\n",
]
# IPython rejects these too: they stay errors
INVALID = ["f(x)?\n", "x = 1?\n", "f(a,\n  !b)\n", "x == !ls\n"]


@pytest.mark.parametrize("cell", VALID)
def test_cells_ipython_runs_parse_and_keep_their_lines(cell):
    text, shifts = mask_cell(cell, MAGICS)
    ast.parse(text)
    assert len(split_lines(text)) == len(split_lines(cell)) == len(shifts)


@pytest.mark.parametrize("cell", INVALID)
def test_cells_ipython_rejects_stay_invalid(cell):
    with pytest.raises(SyntaxError):
        ast.parse(mask_cell(cell, MAGICS)[0])


def test_an_escape_keeps_the_block_shape_and_python_lines_stay_as_they_were():
    text, _ = mask_cell("for k in ks:\n  !wget {k}\nimport torch\n", MAGICS)
    assert text == "for k in ks:\n  pass\nimport torch\n"
    assert mask_cell("x = !ls\n", MAGICS)[0] == "x = ...\n"


def test_which_cell_magics_run_python_is_knowledge_with_references():
    assert {"time", "timeit", "capture", "prun", "debug"} == set(MAGICS)
    data = (ROOT / "rules" / "lint" / "data" / "ipython_magics.yaml").read_text(encoding="utf-8")
    assert "github.com/ipython/ipython/blob/" in data and "bash:" in data and "writefile:" in data


def _notebook(cells, **dump) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                                  "source": s} for s in cells], "metadata": {}, "nbformat": 4,
                       "nbformat_minor": 5}, **dump)


def test_a_cell_magic_body_is_linted_only_when_the_magic_runs_python(tmp_path):
    nb = tmp_path / "nb.ipynb"
    nb.write_text(_notebook(["import torch\n", "%%writefile t.py\nimport torch\ntorch.backends.mkl.enabled = True\n",
                             "%%time\ntorch.backends.mkl.enabled = True\n!nvidia-smi\n"], indent=1))
    got = [(f["cell"], f["line"], f["id"]) for f in json.loads(_run(["--format", "json", str(nb)]).stdout)]
    assert got == [(3, 2, "fake-backends-setting")]


@pytest.mark.parametrize("name", sorted(p.name for p in REAL.glob("*.ipynb")))
def test_real_notebooks_of_the_five_repositories_have_no_error_finding(name):
    """fairseq's MMS Colab tutorials gave four parse-errors (exit 1) before issue 21."""
    r = _run(["--format", "json", "--fail-on", "error", "--torch-version", "2.13", str(REAL / name)])
    assert r.returncode == 0, r.stdout + r.stderr
    assert [f for f in json.loads(r.stdout) if f["severity"] == "error"] == []


# -- item 2: where the finding is in the raw file --------------------------------------------

CODE = ["import torch\n", "x = 'caf\u00e9\\t'\n", "\ttorch.backends.mkl.enabled = True\n"]


def _layouts():
    """(name, raw notebook text): list and string sources, indented, compact, CRLF, ASCII-escaped."""
    cell2 = ["if True:\n", "    y = 1\n", "    torch.backends.mkl.enabled = True\n"]
    yield "list, indent=1", _notebook([CODE[:1], cell2], indent=1)
    yield "string source", _notebook(["".join(CODE[:1]), "".join(cell2)], indent=1)
    yield "compact, one line", _notebook([CODE[:1], cell2])
    yield "ascii escapes", _notebook([CODE[:2], cell2], indent=7, ensure_ascii=True)
    yield "CRLF between items", _notebook([CODE[:1], cell2], indent=2).replace(",\n", ",\r\n")
    yield "source split mid-line", _notebook([CODE[:1], ["if True:\n    y = 1\n    torch.back", "ends.mkl.enabled = True\n"]],
                                             indent=1)


@pytest.mark.parametrize("name,raw", list(_layouts()), ids=[n for n, _ in _layouts()])
def test_github_and_sarif_point_at_the_raw_ipynb_line(tmp_path, name, raw):
    nb = tmp_path / "nb.ipynb"
    nb.write_bytes(raw.encode("utf-8"))
    lines = split_lines(raw)
    g = _run(["--format", "github", str(nb)]).stdout.strip()
    props = dict(kv.split("=", 1) for kv in g.split("::")[1].split(" ", 1)[1].split(","))
    line, col = int(props["line"]), int(props["col"])
    assert lines[line - 1][col - 1:].startswith("torch.back"), (name, lines[line - 1])
    assert "::cell 2, line 3: " in g
    doc = json.loads(_run(["--format", "sarif", str(nb)]).stdout)
    (res,) = doc["runs"][0]["results"]
    region = res["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (line, col)
    assert res["message"]["text"].startswith("cell 2, line 3: ")
    assert res["locations"][0]["logicalLocations"] == [{"name": "cell 2", "kind": "module"}]
    (f,) = json.loads(_run(["--format", "json", str(nb)]).stdout)
    assert (f["cell"], f["line"], f["col"]) == (2, 3, 5) and f["file_region"]["line"] == line


def test_sarif_with_notebook_locations_validates_against_the_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads((ROOT / "tests" / "data" / "sarif-2.1.0.schema.json").read_text(encoding="utf-8"))
    nb = tmp_path / "nb.ipynb"
    nb.write_text(_notebook([CODE[:1], CODE[2:]], indent=1))
    doc = json.loads(_run(["--format", "sarif", str(nb)]).stdout)
    jsonschema.Draft4Validator(schema).validate(doc)
    assert doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] > 2


def test_the_json_scanner_is_json_loads_with_positions():
    raw = '{"a": ["x\\u00e9\\ud83d\\ude00", 1.5e3, -2, true, null], "b": {"c": "d"}}'
    doc = scan(raw)
    assert doc == json.loads(raw)
    assert raw[doc["a"][0].start] == '"' and raw[doc["b"]["c"].start:].startswith('"d"')
    for bad in ('{"a": }', '[1, 2', '{"a": 1} x', "[" * 1000 + "]" * 1000):
        with pytest.raises(NotJSON):
            scan(bad)
