from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
DATA = TESTS / "data"
REPO = TESTS.parent


def _restore_ctrl_c() -> None:
    """A suite started as a background job (`.ci/run &` from a script) inherits SIGINT
    ignored, and so would every torchdoctor it starts: the Ctrl-C tests would then test the
    shell, not torchdoctor (a user's Ctrl-C reaches a process whose SIGINT is the default).
    A handler, unlike an ignore, is reset to the default in the children at exec."""
    import signal

    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


_restore_ctrl_c()


def _torch_importable() -> bool:
    return importlib.util.find_spec("torch") is not None


def _gpu_usable() -> bool:
    if not _torch_importable():
        return False
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


def pytest_collection_modifyitems(config, items):
    has_torch = _torch_importable()
    gpu_checked = None
    for item in items:
        if "torch" in item.keywords and not has_torch:
            item.add_marker(pytest.mark.skip(reason="torch is not installed (pip install torch==2.13.0)"))
        if "gpu" in item.keywords:
            if gpu_checked is None:
                gpu_checked = _gpu_usable()
            if not gpu_checked:
                item.add_marker(pytest.mark.skip(reason="no CUDA GPU usable by torch on this machine"))


@pytest.fixture
def data_dir() -> Path:
    return DATA


@pytest.fixture
def facts_file(tmp_path):
    """Facts of a CPU-only machine with torch 2.13 (modules with their own `facts_file` override it)."""
    from torchdoctor.facts import Facts, GpuFacts, TorchFacts

    facts = Facts(
        origin="json",
        torch=TorchFacts(import_status="ok", version="2.13.0+cpu", cuda_build=None, cuda_available=False),
        gpu=GpuFacts(count=0, devices=[], name=None, min_compute_capability=None, max_compute_capability=None),
    )
    path = tmp_path / "facts.json"
    path.write_text(facts.model_dump_json())
    return path


@pytest.fixture(scope="session", autouse=True)
def _private_rule_cache(tmp_path_factory):
    """The suite never reads or fills the user's rule cache (~/.cache/torchdoctor): every run
    starts from an empty cache of its own, which the torchdoctor subprocesses inherit too."""
    import os

    old = os.environ.get("TORCHDOCTOR_CACHE_DIR")
    os.environ["TORCHDOCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("rulecache"))
    yield
    if old is None:
        os.environ.pop("TORCHDOCTOR_CACHE_DIR", None)
    else:
        os.environ["TORCHDOCTOR_CACHE_DIR"] = old
