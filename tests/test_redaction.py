"""Redaction: on by default in every command and format; --no-redact turns it off with a warning.

Secrets are planted in a facts file built from a real collect_env report
(tests/data/corpus/case023.txt): tokens in allow-listed variables, the user name and home in
paths, the host name, IP and MAC addresses, GPU UUIDs and serial numbers. The identity of
"this machine" is pinned by replacing ``torchdoctor.redact._identity``, so nothing depends on
who runs the tests.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from torchdoctor import redact
from torchdoctor.cli import main
from torchdoctor.facts import Facts
from torchdoctor.importers import load_report

DATA = Path(__file__).resolve().parent / "data"
CORPUS = DATA / "corpus"

USER = "mwatanabe"
HOME = f"/home/{USER}"
HOST = "dgxbox17.corp.example.net"
GPU_UUID = "GPU-8f6a2b1c-3d4e-5f60-7182-93a4b5c6d7e8"
SERIAL = "1652321012345"
HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
AWS = "AKIAIOSFODNN7EXAMPLE"
GHP = "ghp_0123456789abcdefghijABCDEFGHIJ012345"
URL_PASS = "S3cr3tPassw0rd"
NAMED = "plainvalue123"
RANDOM = "Zx9Qw8Er7Ty6Ui5Op4As3Df2Gh1Jk0LzXcVbNm"
IP = "10.20.30.40"
IP2 = "10.20.30.41"
IPV6 = "fe80::1ff:fe23:4567:890a"
MAC = "02:42:ac:11:00:02"

SECRETS = [USER, "dgxbox17", HOST, "8f6a2b1c", SERIAL, HF, AWS, GHP, URL_PASS, NAMED, RANDOM,
           IP, IP2, IPV6, MAC]
KEEP = ["8.9.2.26", "515.65.01", "1.12.1+cu116", "NVIDIA GeForce RTX 3090"]  # not secrets


@pytest.fixture(autouse=True)
def identity(monkeypatch):
    monkeypatch.setattr(redact, "_identity", lambda: (USER, HOME, HOST))


def planted_facts() -> Facts:
    base = load_report((CORPUS / "case023.txt").read_bytes(), "case023.txt")
    data = json.loads(base.model_dump_json())
    data["origin"] = "json"
    data["env"] = {"variables": {
        "TORCH_HOME": f"{HOME}/.cache/torch",
        "NCCL_DEBUG_FILE": "/tmp/nccl.dgxbox17.%p.log",
        "TORCH_NCCL_TRACE_BUFFER_NOTE": HF,
        "NCCL_PLUGIN_OPTS": f"aws={AWS}",
        "TORCH_HUB_URL": f"https://{USER}:{URL_PASS}@hub.example.net/models",
        "TORCHINDUCTOR_REMOTE_CACHE": GHP,
        "NCCL_API_KEY": NAMED,
        "PYTORCH_BLOB": RANDOM,
        "MASTER_ADDR": IP,
        "NCCL_COMM_ID": f"[{IPV6}]:29500",
        "CUDA_VISIBLE_DEVICES": GPU_UUID,
        "NCCL_IB_HCA_MAC": MAC,
        "TORCH_CUDA_ARCH_LIST": "8.6",
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
    }}
    for dev in data["gpu"]["devices"]:
        dev["uuid"] = GPU_UUID
        dev["serial"] = SERIAL
        dev["pci_bus_id"] = f"00000000:{dev['index'] + 0x3B:02X}:00.0"
    data["torch"]["python_executable"] = f"{HOME}/miniconda3/envs/train/bin/python"
    data["torch"]["module_path"] = f"{HOME}/miniconda3/envs/train/lib/python3.9/site-packages/torch"
    data["packages"]["torch_module_path"] = data["torch"]["module_path"]
    data["packages"]["versions"]["nvidia-cudnn-cu12"] = "8.9.2.26"
    data["problems"] = [f"probe gpu: nvidia-smi on {HOST} ({IP2}) timed out; see {HOME}/nvsmi.log"]
    return Facts.model_validate(data)


@pytest.fixture
def facts_file(tmp_path) -> Path:
    path = tmp_path / "planted.json"
    path.write_text(planted_facts().model_dump_json(indent=2))
    return path


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def squeeze(text: str) -> str:
    """Output without whitespace and table borders, so a value wrapped by the terminal
    renderer is still found."""
    return re.sub(r"[\s│┃║|─━]+", "", text)


def leaked(text: str) -> list[str]:
    flat = squeeze(text)
    return [s for s in SECRETS if s in text or squeeze(s) in flat]


COMMANDS = [
    ("check", "--format", "terminal"),
    ("check", "--format", "json"),
    ("check", "--format", "markdown"),
    ("report",),
    ("report", "--format", "json"),
    ("recommend", "--task", "classification", "--format", "json"),
    ("recommend", "--task", "classification", "--format", "terminal"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c))
def test_nothing_planted_appears_in_any_output(capsys, facts_file, command):
    code, out, err = run(capsys, *command, "--facts", facts_file)
    assert code in (0, 1), err
    assert out
    assert leaked(out) == [] and leaked(err) == []
    assert "--no-redact" not in err


@pytest.mark.parametrize("fmt", ["json", "markdown", "terminal"])
def test_diff_output_is_redacted(capsys, facts_file, fmt):
    code, out, err = run(capsys, "diff", facts_file, CORPUS / "case019.txt", "--format", fmt, "--all")
    assert code == 1
    assert leaked(out) == [] and leaked(err) == []


def test_probe_output_is_redacted(capsys, monkeypatch):
    import torchdoctor.probes

    monkeypatch.setattr(torchdoctor.probes, "collect", lambda ctx=None, **kw: planted_facts())
    code, out, err = run(capsys, "probe")
    assert code == 0
    assert leaked(out) == []
    data = json.loads(out)
    assert data["gpu"]["devices"][0]["uuid"] == "<redacted>"
    assert data["gpu"]["devices"][0]["serial"] == "<redacted>"
    assert data["env"]["variables"]["TORCH_HOME"] == "~/.cache/torch"
    assert data["env"]["variables"]["MASTER_ADDR"] == "<ip>"
    assert data["env"]["variables"]["NCCL_COMM_ID"] == "[<ip>]:29500"
    assert data["env"]["variables"]["NCCL_IB_HCA_MAC"] == "<mac>"
    assert data["env"]["variables"]["CUDA_VISIBLE_DEVICES"] == "GPU-<redacted>"
    assert data["env"]["variables"]["TORCH_HUB_URL"] == "https://<redacted>@hub.example.net/models"
    assert data["env"]["variables"]["NCCL_API_KEY"] == "<redacted>"
    assert data["env"]["variables"]["NCCL_DEBUG_FILE"] == "/tmp/nccl.<host>.%p.log"
    # what a maintainer needs is untouched
    assert data["env"]["variables"]["TORCH_CUDA_ARCH_LIST"] == "8.6"
    assert data["env"]["variables"]["PYTORCH_CUDA_ALLOC_CONF"] == "expandable_segments:True"
    assert data["packages"]["versions"]["nvidia-cudnn-cu12"] == "8.9.2.26"
    assert data["gpu"]["driver_version"] == "515.65.01"
    assert data["gpu"]["devices"][0]["pci_bus_id"] == "00000000:3B:00.0"
    assert data["torch"]["python_executable"] == "~/miniconda3/envs/train/bin/python"


@pytest.mark.parametrize("command", [("check", "--format", "json"), ("report", "--format", "json"),
                                     ("recommend", "--task", "classification", "--format", "json")],
                         ids=lambda c: " ".join(c))
def test_versions_are_not_taken_for_addresses(capsys, facts_file, command):
    code, out, _ = run(capsys, *command, "--facts", facts_file)
    for keep in KEEP:
        assert keep in out, keep


@pytest.mark.parametrize("command", [*COMMANDS, ("probe",)], ids=lambda c: " ".join(c))
def test_no_redact_shows_everything_and_warns(capsys, facts_file, monkeypatch, command):
    import torchdoctor.probes

    monkeypatch.setattr(torchdoctor.probes, "collect", lambda ctx=None, **kw: planted_facts())
    args = [*command, "--no-redact"] + ([] if command == ("probe",) else ["--facts", facts_file])
    code, out, err = run(capsys, *args)
    assert code in (0, 1)
    assert "warning: --no-redact" in err
    if "json" in command or command == ("probe",):
        for secret in (USER, AWS, HF, IP, MAC, SERIAL, GPU_UUID, NAMED, RANDOM):
            assert secret in out, secret
    else:  # the problem line (host name, IP, home) is a finding in every format
        assert "dgxbox17" in squeeze(out) and IP2 in squeeze(out)


def test_diff_no_redact_warns_once(capsys, facts_file):
    code, out, err = run(capsys, "diff", facts_file, facts_file, "--no-redact", "--format", "json")
    assert code == 0
    assert err.count("warning: --no-redact") == 1


def test_pasted_report_from_another_machine(capsys, tmp_path):
    # the report's author is not this machine's user: only the home-path rule can catch them
    text = (CORPUS / "case023.txt").read_text().replace(
        "CUDA runtime version: 11.6.124", "CUDA runtime version: see /home/kpatel/cuda-11.6/bin/nvcc")
    assert "kpatel" in text
    path = tmp_path / "issue.txt"
    path.write_text(text)
    for command in (("check", "--format", "json"), ("check", "--format", "markdown"),
                    ("report",), ("report", "--format", "json")):
        code, out, _ = run(capsys, *command, "--from-report", path)
        assert "kpatel" not in out, command
        if "json" in command:
            reason = json.loads(out)["facts"]["system"]["cuda_toolkit_version"]["unavailable"]
            assert "/home/<user>/cuda-11.6/bin/nvcc" in reason


# ----------------------------------------------------------------------------------------
# redact_text: what is and is not replaced
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,key,path,expected", [
    ("cuDNN 8.9.2.26 is loaded", "message", (), "cuDNN 8.9.2.26 is loaded"),
    ("nvidia-cudnn-cu12==8.9.2.26", "message", (), "nvidia-cudnn-cu12==8.9.2.26"),
    ("[pip3] nvidia-cublas-cu12==12.1.3.1", "message", (), "[pip3] nvidia-cublas-cu12==12.1.3.1"),
    ("8.9.2.26", "nvidia-cudnn-cu12", ("packages", "versions"), "8.9.2.26"),
    ("8.9.2.26", "cudnn_version", ("torch",), "8.9.2.26"),
    ("driver 535.104.05 supports CUDA 12.2", "message", (), "driver 535.104.05 supports CUDA 12.2"),
    ("libcudnn.so.8.9.2.26", "import_error", (), "libcudnn.so.8.9.2.26"),
    ("3.9.13 (main, Aug 25 2022, 23:26:10)", "message", (), "3.9.13 (main, Aug 25 2022, 23:26:10)"),
    ("0000:3b:00.0", "pci_bus_id", (), "0000:3b:00.0"),
    ("c10::cuda::getCurrentCUDAStream", "import_error", (), "c10::cuda::getCurrentCUDAStream"),
    ("Linux-5.15.0-48-generic-x86_64-with-glibc2.35", "message", (), "Linux-5.15.0-48-generic-x86_64-with-glibc2.35"),
    ("false", "TOKENIZERS_PARALLELISM", ("env", "variables"), "false"),
    ("/tmp/pytorch-2-1-cuda-12-1-environment-x", "CONDA_PREFIX", ("env", "variables"), "/tmp/pytorch-2-1-cuda-12-1-environment-x"),
    ("MASTER_ADDR=10.0.0.1", "message", (), "MASTER_ADDR=<ip>"),
    ("10.0.0.1:29500", "NCCL_COMM_ID", ("env", "variables"), "<ip>:29500"),
    ("connect to 192.168.1.20 failed.", "message", (), "connect to <ip> failed."),
    ("2001:0db8:85a3:0000:0000:8a2e:0370:7334", "message", (), "<ip>"),
    ("AA-BB-CC-DD-EE-FF", "message", (), "<mac>"),
    ("C:\\Users\\bob\\AppData\\torch", "location", (), "C:\\Users\\<user>\\AppData\\torch"),
    ("C:/Users/bob/AppData", "location", (), "C:/Users/<user>/AppData"),
    ("/Users/Shared/conda", "location", (), "/Users/Shared/conda"),
    ("/home/mwatanabe2/x", "location", (), "/home/<user>/x"),
    ("/tmp/torchinductor_mwatanabe", "TORCHINDUCTOR_CACHE_DIR", ("env", "variables"), "/tmp/torchinductor_<user>"),
    ("ip-10-0-1-23.ec2.internal", "message", (), "<host>"),
    ("mail mwatanabe@example.com", "message", (), "mail <email>"),
    ("HF_TOKEN=abc TOKENIZERS_PARALLELISM=false", "message", (), "HF_TOKEN=<redacted> TOKENIZERS_PARALLELISM=false"),
    ("anything", "HF_TOKEN", ("env", "variables"), "<redacted>"),
    ("MIG-GPU-8f6a2b1c-3d4e-5f60-7182-93a4b5c6d7e8/1/0", "message", (), "MIG-GPU-<redacted>"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
     "message", (), "<redacted>"),
])
def test_redact_text(text, key, path, expected):
    assert redact.redact_text(text, key, path) == expected


def test_generic_user_names_are_not_replaced_as_words(monkeypatch):
    monkeypatch.setattr(redact, "_identity", lambda: ("nvidia", "/home/nvidia", "ubuntu"))
    text = "nvidia-cudnn-cu12 on Ubuntu 22.04 (ubuntu kernel), /home/nvidia/x"
    assert redact.redact_text(text, "message") == "nvidia-cudnn-cu12 on Ubuntu 22.04 (ubuntu kernel), ~/x"


def test_a_home_that_is_not_the_users_own_is_not_replaced(monkeypatch):
    monkeypatch.setattr(redact, "_identity", lambda: ("mwatanabe", "/tmp", None))
    assert redact.redact_text("/tmp/torch_cache", "x") == "/tmp/torch_cache"


def test_redaction_reads_no_environment_variable_itself(monkeypatch):
    """Only the standard library's user/home lookups touch the environment (HOME, USER ...);
    the allow-list of variables is the env probe's job."""

    class Recording(dict):
        seen: set = set()

        def __getitem__(self, k):
            Recording.seen.add(k)
            return super().__getitem__(k)

        def get(self, k, default=None):
            Recording.seen.add(k)
            return super().get(k, default)

        def __contains__(self, k):
            Recording.seen.add(k)
            return super().__contains__(k)

    monkeypatch.undo()  # the real _identity, not the pinned one
    recording = Recording(os.environ)
    monkeypatch.setattr(os, "environ", recording)
    redact._identity.cache_clear()
    try:
        redact.redact_report(planted_facts())
    finally:
        redact._identity.cache_clear()
    allowed = {"HOME", "USER", "LOGNAME", "LNAME", "USERNAME", "USERPROFILE", "HOMEDRIVE", "HOMEPATH"}
    assert Recording.seen <= allowed, Recording.seen - allowed
    source = Path(redact.__file__).read_text()
    assert "os.environ" not in source and "getenv" not in source


def test_redact_report_keeps_the_model_type():
    facts = planted_facts()
    out = redact.redact_report(facts)
    assert isinstance(out, Facts)
    assert out.gpu.devices[0].uuid == "<redacted>" and out.gpu.devices[0].name == "NVIDIA GeForce RTX 3090"
    assert out.problems == ["probe gpu: nvidia-smi on <host> (<ip>) timed out; see ~/nvsmi.log"]
