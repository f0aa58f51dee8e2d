"""An RTX 5090 (Blackwell, 12.0) under the 2.5.1+cu124 wheel, whose newest code is sm_90:
torch imports, CUDA initialises, and torch warns that the GPU "is not compatible with the
current PyTorch installation" (pytorch/pytorch#145949). Memory total: NVML's, from
tests/data/machines/nvidia-smi-q/rtx-5090.txt."""

DEVICES = [
    {"name": "NVIDIA GeForce RTX 5090", "major": 12, "minor": 0, "total_memory": 32607 * 2**20,
     "multi_processor_count": 170, "L2_cache_size": 96 * 2**20},
]
ARCH_LIST = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
CUDNN_RUNTIME = (9, 1, 0)
NCCL = (2, 21, 5)
CPU_THREADS = 16
