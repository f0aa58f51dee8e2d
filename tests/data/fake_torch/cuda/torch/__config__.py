"""torch.__config__ of the Linux 2.5.1+cu124 wheel (the lines collect_env prints as
"PyTorch compiling details"; build settings shortened)."""

import fake_cuda_machine as _machine

_SHOW = """PyTorch built with:
  - GCC 9.3
  - C++ Version: 201703
  - Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64 architecture applications
  - Intel(R) MKL-DNN v3.5.3 (Git Hash 66f0cb9eb66affd2da3bf5f8d897376f04aae6af)
  - OpenMP 201511 (a.k.a. OpenMP 4.5)
  - LAPACK is enabled (usually provided by MKL)
  - NNPACK is enabled
  - CPU capability usage: AVX512
  - CUDA Runtime 12.4
  - NVCC architecture flags: -gencode;arch=compute_50,code=sm_50;-gencode;arch=compute_60,code=sm_60;-gencode;arch=compute_70,code=sm_70;-gencode;arch=compute_75,code=sm_75;-gencode;arch=compute_80,code=sm_80;-gencode;arch=compute_86,code=sm_86;-gencode;arch=compute_90,code=sm_90
  - CuDNN 90.1  (built against CUDA 12.4)
  - Magma 2.6.1
  - Build settings: BLAS_INFO=mkl, BUILD_TYPE=Release, CUDA_VERSION=12.4, CUDNN_VERSION=9.1.0, TORCH_VERSION=2.5.1, USE_CUDA=ON, USE_CUDNN=ON, USE_MKL=ON, USE_MKLDNN=ON, USE_NCCL=1, USE_NNPACK=ON, USE_OPENMP=ON, USE_ROCM=OFF,
"""


def show():
    return _SHOW


def parallel_info():
    threads = _machine.CPU_THREADS
    return (
        "ATen/Parallel:\n"
        f"\tat::get_num_threads() : {threads}\n"
        f"\tat::get_num_interop_threads() : {threads}\n"
        "OpenMP 201511 (a.k.a. OpenMP 4.5)\n"
        f"\tomp_get_max_threads() : {threads}\n"
        "Intel(R) oneAPI Math Kernel Library Version 2024.2-Product Build 20240605 for Intel(R) 64 architecture applications\n"
        f"\tmkl_get_max_threads() : {threads}\n"
        "Intel(R) MKL-DNN v3.5.3 (Git Hash 66f0cb9eb66affd2da3bf5f8d897376f04aae6af)\n"
        "std::thread::hardware_concurrency() : {}\n"
        "Environment variables:\n"
        "\tOMP_NUM_THREADS : [not set]\n"
        "\tMKL_NUM_THREADS : [not set]\n"
        "ATen parallel backend: OpenMP\n"
    ).format(threads)
