"""4x A100-SXM4-80GB where the cuDNN loaded at run time (9.0.0, an older
nvidia-cudnn-cu12 pinned by another package) is older than the 9.1.0 torch was built
against: torch.backends.cudnn.version() raises torch's "cuDNN version incompatibility"
error, the library's own getRuntimeVersion() still answers. Memory total: NVML's
(tests/data/machines/nvidia-smi-q/a100-sxm4-80gb-x4.txt)."""

DEVICES = [
    {"name": "NVIDIA A100-SXM4-80GB", "major": 8, "minor": 0, "total_memory": 81920 * 2**20,
     "multi_processor_count": 108, "L2_cache_size": 40 * 2**20},
] * 4
ARCH_LIST = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
CUDNN_RUNTIME = (9, 0, 0)
NCCL = (2, 21, 5)
CPU_THREADS = 64
