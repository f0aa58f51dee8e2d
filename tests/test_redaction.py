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


# ----------------------------------------------------------------------------------------
# one test per secret pattern, planted where no other rule can catch it
# ----------------------------------------------------------------------------------------
#
# Each kind of secret sits in free text (not an environment value, where the random-string
# fallback would catch it, and not after a secret-looking name), in a pasted report's line
# (torch's "CUDA initialization:" warning, kept as torch.cuda_init_error) and in a facts
# field (a problem line). Deleting one pattern from redact.py makes exactly its own test
# fail; tokens are shaped so that no other pattern matches them (no 40-character base64 run
# for the AWS-secret pattern, no '@' right after the secret for the e-mail pattern).

PLANTED = {
    # pattern name: (text carrying the secret, the secret)
    "huggingface": ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345_old", "AbCdEfGhIjKlMnOpQrStUvWxYz012345"),
    "aws-key-id": ("AKIAZ7QWERTYUIOP2345_backup", "AKIAZ7QWERTYUIOP2345"),
    "github": ("ghp_Zz09Yy18Xx27Ww36Vv45Uu54Tt63Ss72Rr81", "Zz09Yy18Xx27Ww36Vv45Uu54Tt63Ss72Rr81"),
    "github-pat": ("github_pat_11AAQQ55Y0abcdefghij_KLMNOPqrstuv0123456789wxyzABCDEFGHIJKLMNOPQRST",
                   "KLMNOPqrstuv0123456789wxyzABCDEFGHIJKLMNOPQRST"),
    "gitlab": ("glpat-xYz12AbC34dEf56GhI78", "xYz12AbC34dEf56GhI78"),
    "slack": ("xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx", "AbCdEfGhIjKlMnOpQrStUvWx"),
    "openai-anthropic-stripe": ("sk-proj-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12",
                                "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12"),
    "google-api-key": ("AIzaSyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q", "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"),
    "npm": ("npm_AbCdEf0123456789GhIjKl0123456789MnOp", "AbCdEf0123456789GhIjKl0123456789MnOp"),
    "pypi": ("pypi-AgEIcHlwaS5vcmcCJDEyMzQ1Njc4LTEyMzQtMTIzNC0xMjM0LTEyMzQ1Njc4OTAxMgACKlsz",
             "AgEIcHlwaS5vcmcCJDEyMzQ1Njc4LTEyMzQtMTIzNC0xMjM0LTEyMzQ1Njc4OTAxMgACKlsz"),
    # a JWT with a short signature (and one whose algorithm is "none": no signature at all)
    "jwt": ("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.Zm9v", "eyJzdWIiOiJhbGljZSJ9"),
    "private-key": ("-----BEGIN RSA PRIVATE KEY----- MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM "
                    "-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM"),
    # an AWS secret access key with '/' in it (split by '/', no piece is long enough to look
    # random to the environment-value fallback)
    "aws-secret-key": ("secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY in text",
                       "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "url-credentials": ("clone https://deploy:Tr0ub4dor&3~@git.example.net/repo.git", "Tr0ub4dor&3~"),
    "assignment": ("launched with TORCH_PASS=Hunt3rTwo and NCCL_PWD: letmein99", "Hunt3rTwo"),
    "email": ("contact mwatanabe.ops+torch@corp.example.net", "ops+torch@corp"),
    "cisco-mac": ("bond0 hwaddr aabb.ccdd.eeff up", "aabb.ccdd.eeff"),
}
assert set(redact.SECRET_PATTERNS) <= set(PLANTED), "a secret pattern without a test"


def report_with(line: str) -> str:
    """case023 with torch's CUDA warning carrying ``line``, as pasted from stderr."""
    text = (CORPUS / "case023.txt").read_text()
    return text + f"\nCUDA initialization: marker-3141 {line}\n"


def facts_with_problem(line: str) -> Path:
    return planted_facts().model_copy(update={"problems": [f"marker-2718 {line}"]})


@pytest.mark.parametrize("pattern", sorted(PLANTED))
def test_each_secret_kind_is_redacted_in_text_report_and_facts(capsys, tmp_path, pattern):
    text, secret = PLANTED[pattern]
    # free text
    out = redact.redact_text(f"note: {text} (end)", "message", ("facts",))
    assert secret not in out, out
    # a line of a pasted collect_env report
    report = tmp_path / "report.txt"
    report.write_text(report_with(text))
    code, out, err = run(capsys, "check", "--from-report", report, "--format", "json")
    assert code in (0, 1), err
    assert "marker-3141" in out and secret not in out
    # a field of a facts JSON
    facts = tmp_path / "facts.json"
    facts.write_text(facts_with_problem(text).model_dump_json())
    for fmt in ("json", "markdown"):
        code, out, err = run(capsys, "check", "--facts", facts, "--format", fmt)
        assert code in (0, 1), err
        assert "marker-2718" in out and secret not in out, fmt


def test_secret_named_variables_from_the_environment(capsys, monkeypatch, tmp_path):
    """TORCH_PASS and NCCL_PWD: the live env probe never reads them (PASS, PWD, PW are whole
    parts of their names); where they arrive in facts recorded elsewhere, their names say what
    they hold, so their whole values go, however plain."""
    import torchdoctor.probes

    real_collect = torchdoctor.probes.collect
    monkeypatch.setenv("TORCH_PASS", "hunter2")
    monkeypatch.setenv("NCCL_PWD", "letmein")
    monkeypatch.setenv("TORCH_DB_PW", "opensesame")
    monkeypatch.setenv("NCCL_BYPASS_NOTE", "plainword")  # BYPASS is not PASS
    monkeypatch.setattr(torchdoctor.probes, "collect",
                        lambda ctx=None, **kw: real_collect(ctx, only=["env"]))
    code, out, err = run(capsys, "probe", "--no-redact")
    assert code == 0, err
    facts = json.loads(out)
    variables = facts["env"]["variables"]
    assert not {"TORCH_PASS", "NCCL_PWD", "TORCH_DB_PW"} & set(variables)
    assert variables["NCCL_BYPASS_NOTE"] == "plainword"
    # the same variables in a facts file from another machine (an older torchdoctor read them)
    variables.update({"TORCH_PASS": "hunter2", "NCCL_PWD": "letmein", "TORCH_DB_PW": "opensesame"})
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(facts), encoding="utf-8")
    code, out, err = run(capsys, "check", "--facts", str(path), "--format", "json", "--fail-on", "never")
    assert code == 0, err
    shown = json.loads(out)["facts"]["env"]["variables"]
    assert shown["TORCH_PASS"] == shown["NCCL_PWD"] == shown["TORCH_DB_PW"] == "<redacted>"
    assert shown["NCCL_BYPASS_NOTE"] == "plainword"
    assert not {"hunter2", "letmein", "opensesame"} & set(out.split('"'))


@pytest.mark.parametrize("text,key,path,expected", [
    # an address in a version-labelled fact is still an address where it is not the version
    ("Ubuntu 22.04.3 LTS 192.168.1.7", "os_name", ("system",), "Ubuntu 22.04.3 LTS <ip>"),
    ("Ubuntu 22.04 (10.0.0.5)", "os_name", ("system",), "Ubuntu 22.04 (<ip>)"),
    ("http://10.1.2.3:8080/conda", "channel", (), "http://<ip>:8080/conda"),
    # ... and a version stays a version, even one shaped like a private address
    ("10.3.2.106", "nvidia-curand-cu12", ("packages", "versions"), "10.3.2.106"),
    ("tensorrt 10.0.1.6 and cuDNN 9.1.0.70", "message", (), "tensorrt 10.0.1.6 and cuDNN 9.1.0.70"),
    ("libze1 1.21.9.0-1136~22.04", "intel_driver_version", ("gpu",), "libze1 1.21.9.0-1136~22.04"),
    ("a8d6afb511a69687bbb2b7e88a3cf67917e1697e", "git_version", ("torch",), "a8d6afb511a69687bbb2b7e88a3cf67917e1697e"),
    # a dotted quad whose first number is over 99 is an address even after a version word
    ("driver 192.168.0.1", "message", (), "driver <ip>"),
    ("192.168.0.1", "driver_version", ("gpu",), "<ip>"),
    # user@host is an address, not a version after '@'
    ("ssh user@10.1.2.3", "message", (), "ssh user@<ip>"),
    ("aabb.ccdd.eeff", "os_name", ("system",), "<mac>"),
    ("0050.5689.1a2b on eth0", "message", (), "<mac> on eth0"),
    ("AKIAZ7QWERTYUIOP2345_backup", "message", (), "<redacted>_backup"),
    ("eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", "message", (), "<redacted>"),
    ("BYPASS=1 pass: 5 tests", "message", (), "BYPASS=1 pass: 5 tests"),
])
def test_redaction_gaps(text, key, path, expected):
    assert redact.redact_text(text, key, path) == expected


def test_addresses_in_version_labelled_report_lines(capsys, tmp_path):
    text = (CORPUS / "case023.txt").read_text()
    text = text.replace("OS: Ubuntu 22.04.1 LTS (x86_64)", "OS: Ubuntu 22.04.1 LTS 10.20.30.40 (x86_64)")
    text = text.replace("[conda] torch                     1.12.1+cu116             pypi_0    pypi",
                        "[conda] torch                     1.12.1+cu116             py3.9_0    http://10.20.30.41:8080/conda")
    path = tmp_path / "report.txt"
    path.write_text(text)
    code, out, err = run(capsys, "check", "--from-report", path, "--format", "json")
    assert code in (0, 1), err
    assert IP not in out and IP2 not in out
    facts = json.loads(out)["facts"]
    assert facts["system"]["os_name"] == "Ubuntu 22.04.1 LTS <ip>"
    torch_row = [d for d in facts["packages"]["distributions"] if d["source"] == "report-conda" and d["name"] == "torch"]
    assert torch_row[0]["channel"] == "http://<ip>:8080/conda" and torch_row[0]["version"] == "1.12.1+cu116"


# ----------------------------------------------------------------------------------------
# large and adversarial inputs: still correct (speed is measured by benchmarks/redaction.py)
# ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("filler", ["a.", "ab.c-d_e+f%", "a@", "x://", "10.1.2.3 ", "TOKEN_"])
def test_large_adversarial_text_is_redacted_correctly(filler):
    """A megabyte of near misses around real secrets: every secret still goes, nothing else."""
    body = (filler * (1_000_000 // len(filler)))
    text = f"mail {USER}@example.com {body} key {HF} url https://bob:{URL_PASS}~@h.example/x end"
    out = redact.redact_text(text, "message")
    assert USER not in out and HF not in out and URL_PASS not in out
    assert out.endswith("url https://<redacted>@h.example/x end")
    assert out.startswith("mail <email> ")
    if filler in ("a.", "ab.c-d_e+f%", "x://"):
        assert body in out  # near misses are left alone


def test_a_large_environment_value_is_redacted_correctly():
    value = "a" * 60_000 + ":" + RANDOM + ":" + "b." * 300_000
    out = redact.redact_text(value, "PYTORCH_BLOB", ("env", "variables"))
    assert RANDOM not in out and out.count("<redacted>") == 1


def test_secrets_split_by_control_characters_are_still_redacted(capsys, tmp_path):
    """The importer removes control characters and escape sequences before redaction runs,
    so a token or a secret name split by them is whole again, and caught."""
    data = json.loads(planted_facts().model_dump_json())
    data["problems"] = [f"marker-1618 {HF[:10]}\x00{HF[10:]} and {GHP[:12]}\x1b[0m{GHP[12:]}"]
    data["env"]["variables"] = {"NCCL_\x1b[2JPWD": "plainpass", "TORCH_PA\x07SS": "hunter2"}
    path = tmp_path / "split.json"
    path.write_text(json.dumps(data))
    code, out, err = run(capsys, "check", "--facts", path, "--format", "json")
    assert code in (0, 1), err
    assert "marker-1618" in out
    assert HF not in out and GHP not in out and HF[10:] not in out and GHP[12:] not in out
    variables = json.loads(out)["facts"]["env"]["variables"]
    assert variables == {"NCCL_PWD": "<redacted>", "TORCH_PASS": "<redacted>"}
