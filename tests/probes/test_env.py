"""env probe: only allow-listed variables are read, values survive any bytes."""

from __future__ import annotations

import os
import sys

import pytest

from torchdoctor import tables
from torchdoctor.facts import EnvFacts
from torchdoctor.probes import ProbeContext, _sys, collect, env

SECRETS = ("HOME", "USER", "AWS_SECRET_ACCESS_KEY", "HF_TOKEN", "NVIDIA_API_KEY", "GITHUB_TOKEN")


def test_allowlist_has_the_variables_pytorch_users_set():
    allow = env.load_allowlist()
    for prefix in (
        "CUDA_",
        "NCCL_",
        "OMP_",
        "MKL_",
        "KMP_",
        "GOMP_",
        "PYTORCH_",
        "TORCH_",
        "CUBLAS_",
        "CUBLASLT_",
        "CUDNN_",
        "NVIDIA_",
        "TORCHINDUCTOR_",
        "TRITON_",
        "HIP_",
        "ROCM_",
        "HSA_",
    ):
        assert prefix in allow.prefixes
    for name in (
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "DYLD_LIBRARY_PATH",
        "CONDA_PREFIX",
        "CONDA_DEFAULT_ENV",
        "VIRTUAL_ENV",
        "KINETO_USE_DAEMON",
        "MALLOC_CONF",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "RANK",
        "LOCAL_RANK",
        "MASTER_ADDR",
        "MASTER_PORT",
        "HF_HUB_OFFLINE",
    ):
        assert name in allow.names


def test_every_allowlist_entry_has_reason_and_source():
    data = tables.load("env_allowlist")
    for key, field in (("prefixes", "prefix"), ("names", "name")):
        for entry in data[key]:
            assert entry[field] and entry["reason"] and entry["source"], entry


@pytest.mark.parametrize(
    "name, allowed",
    [
        ("OMP_NUM_THREADS", True),
        ("CUDA_VISIBLE_DEVICES", True),
        ("PYTORCH_CUDA_ALLOC_CONF", True),
        ("TORCHINDUCTOR_MAX_AUTOTUNE", True),
        ("LD_PRELOAD", True),
        ("container", True),
        ("HOME", False),
        ("USER", False),
        ("HF_TOKEN", False),
        ("HF_HOME", False),
        ("AWS_SECRET_ACCESS_KEY", False),
        ("NVIDIA_API_KEY", False),  # allowed prefix, secret-looking name
        ("TRITON_AUTH_TOKEN", False),
        ("TORCH_PASS", False),  # PASS, PWD, KEY as whole parts of a name are secrets too
        ("NCCL_PWD", False),
        ("NCCL_IB_KEY", False),
        ("TORCH_PW", False),
        ("NCCL_P2P_DISABLE", True),  # ...but not inside other words
        ("NCCL_BYPASS_SHM", True),
        ("CUDAHOSTCXX", False),  # prefix needs its underscore
        ("omp_num_threads", False),  # names are case-sensitive on POSIX
        ("LD_PRELOAD_EXTRA", False),  # exact names are exact
    ],
)
def test_allows(name, allowed):
    assert env.load_allowlist().allows(name) is allowed


def _plant(monkeypatch, variables: dict[str, str]) -> list[str]:
    """Fake environment; returns the list of names whose value was read."""
    read: list[str] = []

    def getenv(name):
        read.append(name)
        return variables.get(name)

    monkeypatch.setattr(_sys, "environ_names", lambda: sorted(variables))
    monkeypatch.setattr(_sys, "getenv", getenv)
    return read


def test_secrets_are_never_read(monkeypatch):
    planted = {name: "do-not-read" for name in SECRETS}
    planted.update({"OMP_NUM_THREADS": "4", "CUDA_VISIBLE_DEVICES": "", "NCCL_P2P_DISABLE": "1"})
    read = _plant(monkeypatch, planted)

    facts = env.probe(ProbeContext())

    assert facts.variables == {
        "CUDA_VISIBLE_DEVICES": "",
        "NCCL_P2P_DISABLE": "1",
        "OMP_NUM_THREADS": "4",
    }
    assert sorted(read) == ["CUDA_VISIBLE_DEVICES", "NCCL_P2P_DISABLE", "OMP_NUM_THREADS"]
    assert not set(read) & set(SECRETS)


def test_non_utf8_value_is_kept_with_escapes(monkeypatch):
    # what os.environ holds for LD_LIBRARY_PATH=/opt/caf\xe9/lib set from a Latin-1 shell
    value = os.fsdecode(b"/opt/caf\xe9/lib:/usr/lib")
    _plant(monkeypatch, {"LD_LIBRARY_PATH": value, "TORCH_HOME": "/data/\udcff\udcfe"})

    facts = env.probe(ProbeContext())

    assert facts.variables["LD_LIBRARY_PATH"] == "/opt/caf\\xe9/lib:/usr/lib"
    assert facts.variables["TORCH_HOME"] == "/data/\\xff\\xfe"
    EnvFacts.model_validate_json(facts.model_dump_json())  # JSON round trip works


def test_lone_surrogate_that_is_not_a_byte_escape_does_not_crash(monkeypatch):
    _plant(monkeypatch, {"OMP_NUM_THREADS": "4\ud800"})
    assert env.probe(ProbeContext()).variables == {"OMP_NUM_THREADS": "4\\ud800"}


def test_variable_unset_between_listing_and_reading_is_absent(monkeypatch):
    monkeypatch.setattr(_sys, "environ_names", lambda: ["OMP_NUM_THREADS"])
    monkeypatch.setattr(_sys, "getenv", lambda name: None)
    assert env.probe(ProbeContext()).variables == {}


def test_real_environment(monkeypatch):
    """The real seam on this machine: set variables are found, secrets are not read."""
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    if os.name == "posix":
        monkeypatch.setenv("TORCH_EXTENSIONS_DIR", os.fsdecode(b"/tmp/ext-\xff"))
    real_getenv = _sys.getenv
    read: list[str] = []

    def spy(name):
        read.append(name)
        return real_getenv(name)

    monkeypatch.setattr(_sys, "getenv", spy)

    facts = env.probe(ProbeContext())

    assert facts.variables["OMP_NUM_THREADS"] == "3"
    assert "MKL_NUM_THREADS" not in facts.variables
    if os.name == "posix":
        assert facts.variables["TORCH_EXTENSIONS_DIR"] == "/tmp/ext-\\xff"
    assert "HF_TOKEN" not in read and "AWS_SECRET_ACCESS_KEY" not in read and "HOME" not in read
    assert "hf_secret" not in facts.model_dump_json()


def test_collect_puts_env_in_facts(monkeypatch):
    _plant(monkeypatch, {"OMP_NUM_THREADS": "8", "HOME": "/root"})
    facts = collect(ProbeContext(python=sys.executable), only=["env"])
    assert facts.env.variables == {"OMP_NUM_THREADS": "8"}
    assert facts.problems == []


def test_broken_allowlist_fails_with_the_file_name(tmp_path):
    (tmp_path / "env_allowlist.yaml").write_text(
        "prefixes:\n  - prefix: CUDA\n    reason: r\n    source: s\n"
    )
    with pytest.raises(tables.DataFileError, match="must end with '_'"):
        env.load_allowlist(str(tmp_path))
    (tmp_path / "env_allowlist.yaml").write_text("names:\n  - name: RANK\n")
    tables.load.cache_clear()
    with pytest.raises(tables.DataFileError, match="needs `reason` and `source`"):
        env.load_allowlist(str(tmp_path))
    tables.load.cache_clear()
