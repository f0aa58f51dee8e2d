def is_available():
    return False  # torch 2.5 has torch.xpu; the CUDA wheel is not an XPU build
