"""Reading what people paste: every shape of issue 9 item 7, from real tickets (tests/data/cases2).

Each test reads a recorded paste through ``torchdoctor.importers.paste.facts_from_text`` (what
``check --from-report`` reads) and asserts the facts it states, where each came from
(``facts.sources``), and that what it does not state stays unknown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from torchdoctor import tables
from torchdoctor.facts import Facts, Unavailable
from torchdoctor.importers import collect_env as ce
from torchdoctor.importers import paste
from torchdoctor.importers.paste import PASTE_SILENT, facts_from_text

CASES2 = Path(__file__).resolve().parent / "data" / "cases2"
DATA = Path(__file__).resolve().parent / "data"


def read(name: str) -> Facts:
    return facts_from_text((CASES2 / f"{name}.txt").read_text(encoding="utf-8"))


def unknown(value) -> str:
    assert isinstance(value, Unavailable), value
    return value.unavailable


# ------------------------------------------------------------------------- torch's messages


def test_incompatible_gpu_warning_states_gpu_capability_and_arch_list():
    f = read("case201")  # RTX 5090 with the sm_50..sm_90 warning, nothing else
    assert f.gpu.name == "NVIDIA GeForce RTX 5090"
    assert f.gpu.max_compute_capability == 12.0 and f.gpu.count == 1
    assert f.torch.arch_list == ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    assert f.torch.import_status == "ok"  # the warning comes from torch's own code
    assert "sm_120 is not compatible" in f.torch.cuda_init_error
    assert f.sources["torch.arch_list"] == "torch message, line 7"
    assert f.sources["gpu.name"] == "torch message, line 6"
    assert unknown(f.torch.version) == PASTE_SILENT
    assert unknown(f.torch.cuda_build) == PASTE_SILENT
    assert unknown(f.system) == PASTE_SILENT


def test_old_arch_list_with_ptx_and_a_capability_the_table_does_not_need():
    f = read("case203")  # "... sm_86 sm_90 compute_37." on a laptop RTX 5070
    assert f.torch.arch_list[-1] == "compute_37" and "sm_37" in f.torch.arch_list
    assert f.gpu.devices[0].compute_capability == 12.0


def test_found_gpu_range_warning_gives_capability():
    f = read("case218")  # "Found GPU0 ... which is of cuda capability 6.1" + (7.0) - (12.0)
    assert f.gpu.name == "NVIDIA GeForce GTX 1080 Ti"
    assert f.gpu.min_compute_capability == 6.1
    assert "Minimum and Maximum cuda capability" in f.torch.cuda_init_error
    assert f.system.python_version == "3.12"  # .../venv/lib/python3.12/site-packages/torch/...
    assert f.sources["system.python_version"].startswith("site-packages path")


@pytest.mark.parametrize(("case", "cuda"), [("case205", "11.0"), ("case207", "11.4"),
                                            ("case208", "9.0"), ("case224", "12.8")])
def test_driver_too_old_states_the_drivers_cuda_version(case, cuda):
    f = read(case)  # CUDA initialization warning, RuntimeError and the old multi-line AssertionError
    assert f.gpu.cuda_driver_version == cuda
    assert f.torch.cuda_available is False
    assert "too old (found version" in f.torch.cuda_init_error
    assert f.sources["gpu.cuda_driver_version"].startswith("torch message")


def test_dynamo_refusal_is_a_compile_error_not_an_import_failure():
    f = read("case209")
    assert f.torch.compile_error.startswith("Dynamo is not supported on Python 3.12+")
    assert f.torch.import_status == "ok"
    assert f.system.python_version == "3.12"


def test_import_traceback_is_an_import_failure_with_the_symbol():
    f = read("case214")
    assert f.torch.import_status == "import-error"
    assert f.torch.missing_symbol == "iJIT_NotifyEvent"
    assert f.sources["torch.import_status"] == "traceback, line 7"


def test_template_version_with_a_failing_import_traceback():
    f = read("case231")  # "**PyTorch version**: 2.5.1" but `import torch` fails
    assert f.torch.version == "2.5.1"
    assert f.torch.import_status == "import-error"
    assert f.torch.missing_symbol.startswith("__nvJitLinkComplete_12_4")
    assert f.gpu.count == 3 and f.gpu.name == "NVIDIA RTX A6000"  # "3x NVIDIA RTX A6000"


def test_cudnn_incompatibility_states_both_versions():
    for case, built, runtime in (("case240", "8.3.2", "8.0.3"), ("case241", "8.7.0", "8.2.4")):
        f = read(case)
        assert (f.torch.cudnn_compiled_version, f.torch.cudnn_version) == (built, runtime)


def test_not_compiled_with_cuda_is_a_build_without_cuda():
    f = read("case220")  # ComfyUI on an Intel Arc (XPU) build
    assert f.torch.cuda_build is None
    assert isinstance(f.gpu, Unavailable) or unknown(f.gpu.count)  # no GPU count is invented


def test_mps_error_with_sw_vers_and_platform_string():
    f = read("case249")
    assert f.system.os == "Darwin" and f.system.os_version == "12.7.6"
    assert f.system.machine == "arm64"
    assert f.torch.version == "2.5.1" and f.sources["torch.version"].startswith("prose")
    assert f.torch.import_status == "ok"


# ------------------------------------------------------------------------- tools' layouts


def test_sglang_check_env_lists_gpus_by_index():
    f = read("case230")  # "GPU 0,1,2,3,4,5,6,7: NVIDIA H100 80GB HBM3"
    assert f.gpu.count == 8 and f.gpu.min_compute_capability == 9.0
    assert f.torch.cuda_available is True
    assert f.system.python_version == "3.12.3"


def test_sglang_versions_and_driver():
    f = read("case245")
    assert f.torch.version == "2.3.1+cu121" and f.torch.cuda_build == "12.1"
    assert f.gpu.driver_version == "535.54.03" and f.gpu.name == "Tesla T4"
    assert f.system.cuda_toolkit_version == "12.6"
    assert f.packages.versions["flashinfer"] == "0.1.3"
    assert f.packages.versions["vllm"] == "0.5.3.post1"


def test_vllm_banner_layout():
    f = read("case236")
    assert f.torch.version == "2.11.0+cu130" and f.torch.cuda_build == "13.0"
    assert f.gpu.driver_version == "595.95" and f.system.wsl == 2


def test_diffusers_bullets_wsl1_and_gpu_question_mark():
    f = read("case215")  # "PyTorch version (GPU?): 1.12.1+cu116 (False)", Linux-4.4.0-19041-Microsoft
    assert f.torch.version == "1.12.1+cu116" and f.torch.cuda_build == "11.6"
    assert f.torch.cuda_available is False
    assert f.system.wsl == 1


def test_transformers_accelerator_na_means_no_cuda():
    f = read("case255")
    assert f.torch.cuda_available is False and f.torch.cuda_build == "12.6"
    assert f.packages.versions["transformers"] == "4.54.1"


@pytest.mark.parametrize("case", ["case216", "case217"])
def test_comfyui_system_information(case):
    f = read(case)  # bold bullets; case217 quoted with "> "
    assert f.system.os == "Windows"
    assert f.gpu.count == 1 and f.gpu.name.startswith("NVIDIA GeForce")
    assert f.torch.cuda_available is True  # the device in use is cuda:0
    assert f.torch.cuda_build in ("13.0", "12.6")


def test_bare_bullets_name_gpu_os_and_torch():
    f = read("case219")
    assert f.gpu.name == "NVIDIA GeForce GTX 1080 Ti" and f.gpu.min_compute_capability == 6.1
    assert f.system.os == "Windows"
    assert f.torch.version == "2.8.0+cu128" and f.torch.cuda_build == "12.8"
    assert f.sources["gpu.name"] == "bare line, line 3"


def test_lightning_sections():
    f = read("case221")
    assert f.gpu.name == "NVIDIA GeForce RTX 4080 Laptop GPU"
    assert f.torch.cuda_available is True and f.torch.cuda_build == "12.6"
    assert f.torch.version == "2.6.0+cu126"
    assert f.packages.versions["torchvision"] == "0.21.0+cu126"
    g = read("case223")  # "- GPU: None", "available: False": no GPU is listed, none is counted
    assert g.torch.cuda_available is False
    assert isinstance(g.gpu, Unavailable) or unknown(g.gpu.count)


def test_detectron2_table_states_extension_archs():
    f = read("case246")
    assert f.packages.extension_archs == {"detectron2": ["sm_37"]}
    assert f.gpu.name == "Tesla V100-SXM2-16GB" and f.gpu.max_compute_capability == 7.0
    g = read("case248")  # "GPU 0  GeForce RTX 3090 (arch=8.6)", arch flags "8.0" and "3.5, 5.0, ..."
    assert g.packages.extension_archs["detectron2"] == ["sm_80"]
    assert g.packages.extension_archs["torchvision"][:2] == ["sm_35", "sm_50"]
    assert g.gpu.devices[0].name == "GeForce RTX 3090" and g.gpu.max_compute_capability == 8.6
    h = read("case247")  # "GPU 0,1,2,3,4,5,6,7     Tesla P40" behind log prefixes
    assert h.gpu.count == 8 and h.gpu.min_compute_capability == 6.1


def test_ultralytics_checks_and_banner():
    f = read("case258")
    assert f.gpu.name == "NVIDIA GeForce RTX 4080 SUPER"  # ", 16376MiB" is not part of the name
    assert f.torch.version == "2.6.0+cu126"  # "torch  ✅ 2.6.0+cu126>=1.8.0"
    assert f.system.os == "Windows"
    g = read("case256")  # two banners: the first environment is read, and that is said
    assert g.torch.version == "1.8.1+cu111"
    assert any("several environments" in n for n in g.notes)


# ------------------------------------------------------------------------- lists, commands, tools


def test_conda_list_rows_and_python():
    f = read("case211")
    assert f.torch.version == "2.2.2" and f.system.python_version == "3.12.2"
    row = next(d for d in f.packages.distributions if d.name == "pytorch")
    assert row.build == "py3.12_cuda12.1_cudnn8.9.2_0" and row.channel == "pytorch"
    # a package list shows what is installed, not whether it imports
    assert "does not show whether it imports" in unknown(f.torch.import_status)


def test_pip_list_with_proc_driver_version():
    f = read("case233")
    assert f.torch.version == "2.5.0.dev20240720+cu124" and f.torch.cuda_build == "12.4"
    assert f.gpu.driver_version == "550.90.07"
    assert f.sources["gpu.driver_version"].startswith("/proc/driver/nvidia/version, line ")
    assert f.torch.import_status == "import-error"


def test_wheel_file_names_in_an_install_command():
    f = read("case210")
    assert f.torch.version == "2.3.1+cu121" and f.system.python_version == "3.12"
    assert f.sources["torch.version"] == "wheel file name, line 4"


def test_a_failed_install_states_no_version():
    f = read("case242")  # pip install torch==2.6.0 -> "No matching distribution found"
    assert unknown(f.torch.version) == PASTE_SILENT
    g = read("case251")  # collect_env N/A + a nightly index URL that found nothing
    assert unknown(g.torch.cuda_build)


def test_nvidia_smi_header_and_print_version():
    f = read("case239")
    assert f.gpu.driver_version == "450.51.05" and f.gpu.cuda_driver_version == "11.0"
    assert f.system.cuda_toolkit_version == "10.2"  # nvcc -V
    assert f.torch.version == "1.8.1+cu102"  # print(torch.__version__) then its output
    assert f.torch.import_status == "ok"


def test_printed_expressions_and_their_output():
    f = facts_from_text('$ python -c "import torch; print(torch.__version__, torch.version.cuda, '
                        'torch.cuda.is_available())"\n2.1.0+cu121 12.1 False\n')
    assert (f.torch.version, f.torch.cuda_build, f.torch.cuda_available) == ("2.1.0+cu121", "12.1", False)
    assert f.torch.import_status == "ok" and f.sources["torch.cuda_available"] == "shell output, line 2"
    g = facts_from_text(">>> torch.cuda.is_available()\nFalse\n>>> torch.__version__\n'2.0.0+cpu'\n")
    assert (g.torch.version, g.torch.cuda_build, g.torch.cuda_available) == ("2.0.0+cpu", None, False)


def test_nvidia_smi_table_rows():
    text = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 525.85.12    Driver Version: 525.85.12    CUDA Version: 12.0     |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
|===============================+======================+======================|
|   0  NVIDIA A100-SXM...  On   | 00000000:07:00.0 Off |                    0 |
|   1  NVIDIA GeForce ...  Off  | 00000000:0F:00.0 Off |                  N/A |
|   2  Tesla V100-SXM2-32GB  On   | 00000000:10:00.0 Off |                    0 |
"""
    f = facts_from_text(text)
    assert f.gpu.driver_version == "525.85.12" and f.gpu.cuda_driver_version == "12.0"
    assert f.gpu.count == 3
    assert [d.name for d in f.gpu.devices][2] == "Tesla V100-SXM2-32GB"
    # nvidia-smi cuts long names ("NVIDIA A100-SXM..."): the capability of a cut name is unknown
    assert isinstance(f.gpu.devices[1].compute_capability, Unavailable)


def test_pip_freeze_and_pip_show():
    f = facts_from_text("torch==2.5.1+cu121\ntorchvision==0.20.1+cu121\nnumpy==2.1.0\nrequests==2.32.3\n")
    assert f.torch.version == "2.5.1+cu121" and f.torch.cuda_build == "12.1"
    assert f.packages.versions == {"torch": "2.5.1+cu121", "torchvision": "0.20.1+cu121", "numpy": "2.1.0"}
    assert f.sources["torch.version"] == "pip freeze, line 1"
    g = facts_from_text("Name: torch\nVersion: 2.4.0\nSummary: Tensors and Dynamic neural networks\n"
                        "Location: /usr/lib/python3/dist-packages\n")
    assert g.torch.version == "2.4.0" and g.sources["torch.version"] == "pip show, line 2"


def test_windows_dll_failure_is_torchs_import_failure():
    # pytorch/pytorch#131662 (torch 2.4.0 on Windows)
    text = (
        "Traceback (most recent call last):\n"
        '  File "<string>", line 1, in <module>\n'
        '  File "C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\__init__.py", line 148, in <module>\n'
        "    raise err\n"
        '''OSError: [WinError 126] The specified module could not be found. Error loading '''
        '''"C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\lib\\fbgemm.dll" or one of its dependencies.\n'''
    )
    f = facts_from_text(text)
    assert f.torch.import_status == "import-error"
    assert f.torch.missing_library == "fbgemm.dll"


def test_an_import_error_of_another_package_is_not_torchs():
    text = (
        "WARNING 10-07 03:01:24 _core_ext.py:180] Failed to import from vllm._core_C with "
        "ImportError('libtorch_cuda.so: cannot open shared object file')\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/app.py", line 3, in <module>\n'
        "    import flash_attn\n"
        "ImportError: /srv/venv/lib/python3.10/site-packages/flash_attn_2_cuda.cpython-310-x86_64-"
        "linux-gnu.so: undefined symbol: _ZN3c104cuda9SetDeviceEi\n"
    )
    f = facts_from_text(text)
    assert unknown(f.torch.import_status) == PASTE_SILENT
    assert f.system.python_version == "3.10"


# ------------------------------------------------------------------------- collect_env stays the same


def test_collect_env_reports_read_as_before():
    """Every fact collect_env's own reader states about the 93 recorded reports is unchanged."""
    from torchdoctor.diff import flatten

    changed = []
    for d in ("corpus", "cases"):
        for txt in sorted((DATA / d).glob("case*.txt")):
            text = txt.read_text(encoding="utf-8", errors="replace")
            old, new = flatten(ce.parse_collect_env(text)), flatten(facts_from_text(text))
            for path, value in old.items():
                # paste.*: what the text says besides facts (its known messages), new in the paste reader
                if (path != "sources" and not path.startswith("paste.")
                        and not isinstance(value, Unavailable) and new.get(path) != value):
                    changed.append((txt.name, path, value, new.get(path)))
    assert not changed, changed[:5]


def test_warning_pasted_with_a_collect_env_report_adds_the_arch_list():
    f = facts_from_text((DATA / "cases" / "case101.txt").read_text(encoding="utf-8"))
    assert f.torch.arch_list[-1] == "sm_90" and f.sources["torch.arch_list"].startswith("torch message")
    assert f.torch.version == "2.6.0+cu126" and "torch.version" not in f.sources  # the report's own


# ------------------------------------------------------------------------- provenance, unknowns, refusals


def test_sources_name_kinds_of_line_never_user_text():
    text = "- GPU: NVIDIA GeForce RTX 4090 secret-hostname-42\n- PyTorch Version: 2.5.1+cu124\n"
    f = facts_from_text(text)
    assert f.gpu.name == "NVIDIA GeForce RTX 4090 secret-hostname-42"
    for path, where in f.sources.items():
        assert re.fullmatch(r"[A-Za-z/ .-]{1,40}, line \d{1,6}", where), (path, where)
        assert "secret" not in where


def test_unstated_facts_are_the_paste_does_not_say():
    f = read("case207")  # one line of torch's error
    assert unknown(f.torch.version) == PASTE_SILENT
    assert unknown(f.gpu.driver_version) == PASTE_SILENT
    assert unknown(f.cpu) == PASTE_SILENT
    assert any("not a collect_env report" in n for n in f.notes)


@pytest.mark.parametrize("text", [
    "hello world\nthis is not a report\n",
    "I tried everything and it still does not work. Any ideas?\n" * 20,
    "```\n```\n",
])
def test_text_without_environment_facts_is_read_and_said_so(text):
    f = facts_from_text(text)
    assert f.notes == [
        "report: the text states no environment fact and holds no known error message; run "
        "`python -m torch.utils.collect_env` (or `torchdoctor report`) where the problem happens "
        "and paste its output"
    ]
    assert all(isinstance(getattr(f, ns), Unavailable) for ns in ("torch", "gpu", "system"))


def test_facts_with_sources_round_trip_through_json():
    f = read("case246")
    assert Facts.model_validate_json(f.model_dump_json()) == f
    old = json.loads(f.model_dump_json())
    del old["sources"], old["torch"]["compile_error"], old["packages"]["extension_archs"]
    assert Facts.model_validate(old).sources == {}  # facts recorded before these fields still load


# ------------------------------------------------------------------------- bounds and patterns


def test_every_pattern_is_linear_and_compiles():
    p = paste.patterns()
    assert p.messages and p.paths
    with pytest.raises(tables.DataFileError, match="nested repetition"):
        paste._check_linear(r"(?:a{1,3}){1,9}", "test")
    with pytest.raises(tables.DataFileError, match="unbounded repetition"):
        paste._check_linear(r"a+b", "test")
    with pytest.raises(tables.DataFileError, match="unbounded repetition"):
        paste._check_linear(r"(?:x|y*)", "test")


def test_hostile_input_is_bounded():
    line = "torch==1." + "1" * 5000 + "\n"
    rows = "".join(f"nvidia-pkg{i}-cu12 12.{i}.0\n" for i in range(paste.MAX_ROWS + 500))
    long = "NVIDIA GeForce RTX 4090 with CUDA capability sm_89 " + "x" * 100_000 + "\n"
    f = facts_from_text(line + rows + long + "The NVIDIA driver on your system is too old (found version 99999999999)\n")
    assert len(f.packages.distributions) <= paste.MAX_ROWS
    assert all(len(d.name) <= 90 for d in f.packages.distributions)
    # a 5,000-digit torch version is not a version; a 11-digit driver number is not read
    assert isinstance(f.torch.version, Unavailable)
    assert isinstance(f.gpu, Unavailable) or isinstance(f.gpu.cuda_driver_version, Unavailable)


# ------------------------------------------------------------------------- through the CLI


def test_check_from_report_reads_a_torch_warning(tmp_path, capsys):
    """Before round 2 every one of these was refused with exit 2 ("not a collect_env report")."""
    from torchdoctor.cli import main

    code = main(["check", "--from-report", str(CASES2 / "case201.txt"), "--format", "json",
                 "--fail-on", "never"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    ids = {f["id"] for f in out["findings"]}
    assert "gpu-arch-rejected-by-torch" in ids
    assert out["facts"]["sources"]["torch.arch_list"] == "torch message, line 7"


def test_check_from_report_reads_text_without_facts(tmp_path, capsys):
    """Issue 18: prose is not refused (exit 0, one note); binary still is (exit 2, one line)."""
    from torchdoctor.cli import main

    report = tmp_path / "issue.txt"
    report.write_text("It crashes when I run my training script, please help.\n")
    code = main(["check", "--from-report", str(report), "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [f["id"] for f in out["findings"]] == ["reading-note"]
    assert "torchdoctor report" in out["findings"][0]["message"]
    report.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    code = main(["check", "--from-report", str(report)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "binary data" in err[0]
