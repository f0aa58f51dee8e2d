import torch


def is_available():
    return torch._nnpack_available()


def set_flags(_enabled):
    orig_flags = (torch._C._get_nnpack_enabled(),)
    torch._C._set_nnpack_enabled(_enabled)
    return orig_flags
