"""The machine under tests/data/fake_torch/cuda: an A100 and an RTX 4090 (8.0 and 8.9), the
cuDNN 9.1.0 and NCCL 2.21.5 that the 2.5.1+cu124 wheel's nvidia-* dependencies install.
Names, SM counts and L2 sizes are NVIDIA's; memory totals are NVML's (nvidia-smi
recordings tests/data/machines/nvidia-smi-q/a100-sxm4-80gb-x4.txt, rtx-4090-x8.txt)."""

DEVICES = [
    {"name": "NVIDIA A100-SXM4-80GB", "major": 8, "minor": 0, "total_memory": 81920 * 2**20,
     "multi_processor_count": 108, "L2_cache_size": 40 * 2**20},
    {"name": "NVIDIA GeForce RTX 4090", "major": 8, "minor": 9, "total_memory": 24564 * 2**20,
     "multi_processor_count": 128, "L2_cache_size": 72 * 2**20},
]
ARCH_LIST = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
CUDNN_RUNTIME = (9, 1, 0)
NCCL = (2, 21, 5)
CPU_THREADS = 32
