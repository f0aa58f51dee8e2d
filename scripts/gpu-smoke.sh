#!/usr/bin/env bash
# One prepared GPU check for a session that is lent the device machine (an H200 with CUDA torch).
# Not run yet: no session so far was lent a GPU. What it records becomes test fixtures:
#   $OUT/probe.json      `torchdoctor probe` (redacted) -> tests/machines/h200-<torch>.json
#   $OUT/check.json      `torchdoctor check --format json`
#   $OUT/recommend.txt   plan + snippet for llm-training and classification
#   $OUT/pytest.log      the torch/gpu-marked tests and the probe tests, on a real GPU
#
# The device image has torch, click, jinja2, rich, PyYAML, psutil, py-cpuinfo, nvidia-ml-py,
# packaging, pytest and hypothesis, but not pydantic, simpleeval or syrupy: download their wheels
# here first (device README), into .whl/ at the repository root, and carry .whl:
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform any -d .whl \
#     pydantic pydantic-core annotated-types typing-inspection simpleeval syrupy
# Then: run(command="bash scripts/gpu-smoke.sh", carry=[".whl"], timeout_s=420)
set -uo pipefail
OUT=${OUT:-/tmp/gpu-smoke}
mkdir -p "$OUT"
PY=python3
$PY -m pip install -q --no-index --find-links .whl --target /tmp/td-deps pydantic simpleeval syrupy 2>&1 | tail -3
export PYTHONPATH="$PWD:/tmp/td-deps"
{
  nvidia-smi -q > "$OUT/nvidia-smi-q.txt" 2>&1
  nvidia-smi -q -x > "$OUT/nvidia-smi-q.xml" 2>&1
  $PY -m torchdoctor probe > "$OUT/probe.json"
  $PY -m torchdoctor check --format json --fail-on never > "$OUT/check.json"
  for task in llm-training classification; do
    echo "=== $task"; $PY -m torchdoctor recommend --task "$task" --explain --fail-on never
    $PY -m torchdoctor recommend --task "$task" --snippet
  done > "$OUT/recommend.txt" 2>&1
  timeout 300 $PY -m pytest -q -p no:cacheprovider -m "gpu or torch" tests/probes tests/test_runtime.py \
    tests/test_plans.py > "$OUT/pytest.log" 2>&1
} || true
tail -5 "$OUT/pytest.log"
$PY - <<'PY'
import json, os
facts = json.load(open(os.path.join(os.environ.get("OUT", "/tmp/gpu-smoke"), "probe.json")))
gpu, torch = facts["gpu"], facts["torch"]
print("gpu:", gpu.get("name"), gpu.get("max_compute_capability"), gpu.get("driver_version"))
print("torch:", torch.get("version"), torch.get("cuda_available"), torch.get("arch_list"))
PY
