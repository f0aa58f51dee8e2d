"""A training script that does everything right (no finding expected).

It mentions torch.backends.cudnn.fastest = True and torch.cuda.amp.autocast in this docstring.
"""
import os

os.environ.setdefault("OMP_NUM_THREADS", "4")  # before import torch
import torch  # noqa: E402
import torch.backends.cudnn as cudnn  # noqa: E402

# torch.backends.mkl.enabled = True  (a comment, not code)
SNIPPET = "torch.backends.cuda.allow_tf32 = True"


def setup(seed=None):
    if seed is not None:
        cudnn.deterministic = True
        cudnn.benchmark = False
    else:
        cudnn.benchmark = True
    torch.set_float32_matmul_precision("high")
    torch.backends.cuda.enable_flash_sdp(True)
    torch.backends.cuda.cufft_plan_cache.max_size = 1024
    if hasattr(torch.backends.cuda, "enable_cudnn_sdp"):
        torch.backends.cuda.enable_cudnn_sdp(False)
    try:
        from torch.amp import GradScaler
    except ImportError:
        from torch.cuda.amp import GradScaler
    with cudnn.flags(enabled=True, benchmark=True):
        pass
    with torch.amp.autocast("cuda", dtype=torch.bfloat16):
        pass
    return GradScaler


def shim():
    def sdp_kernel(**kwargs):
        return torch.nn.attention.sdpa_kernel([])

    torch.backends.cuda.sdp_kernel = sdp_kernel
