"""torch/backends/cuda/__init__.py of torch 2.5.1: the cuBLAS attribute controller, the
linear-algebra and BLAS library choice and the SDPA switches."""

import torch


def is_built():
    return torch._C._has_cuda if hasattr(torch._C, "_has_cuda") else True


class cuBLASModule:
    def __getattr__(self, name):
        if name == "allow_tf32":
            return torch._C._get_cublas_allow_tf32()
        elif name == "allow_fp16_reduced_precision_reduction":
            return torch._C._get_cublas_allow_fp16_reduced_precision_reduction()
        elif name == "allow_bf16_reduced_precision_reduction":
            return torch._C._get_cublas_allow_bf16_reduced_precision_reduction()
        raise AttributeError("Unknown attribute " + name)

    def __setattr__(self, name, value):
        if name == "allow_tf32":
            return torch._C._set_cublas_allow_tf32(value)
        elif name == "allow_fp16_reduced_precision_reduction":
            return torch._C._set_cublas_allow_fp16_reduced_precision_reduction(value)
        elif name == "allow_bf16_reduced_precision_reduction":
            return torch._C._set_cublas_allow_bf16_reduced_precision_reduction(value)
        raise AttributeError("Unknown attribute " + name)


matmul = cuBLASModule()


def preferred_linalg_library(backend=None):
    if backend is not None:
        torch._C._linalg[0] = backend
    return torch._C._get_linalg_preferred_backend()


def preferred_blas_library(backend=None):
    if backend is not None:
        torch._C._blas[0] = backend
    return torch._C._get_blas_preferred_backend()


def flash_sdp_enabled():
    return torch._C._get_flash_sdp_enabled()


def enable_flash_sdp(enabled):
    torch._C._set_sdp_use_flash(enabled)


def mem_efficient_sdp_enabled():
    return torch._C._get_mem_efficient_sdp_enabled()


def enable_mem_efficient_sdp(enabled):
    torch._C._set_sdp_use_mem_efficient(enabled)


def math_sdp_enabled():
    return torch._C._get_math_sdp_enabled()


def enable_math_sdp(enabled):
    torch._C._set_sdp_use_math(enabled)


def cudnn_sdp_enabled():
    return torch._C._get_cudnn_sdp_enabled()


def enable_cudnn_sdp(enabled):
    torch._C._set_sdp_use_cudnn(enabled)
