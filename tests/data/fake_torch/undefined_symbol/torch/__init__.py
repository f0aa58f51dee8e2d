# Fake torch whose import fails like a CUDA wheel resolving a symbol from the wrong NCCL.
raise ImportError(
    "/usr/local/lib/python3.10/dist-packages/torch/lib/libtorch_cuda.so: undefined symbol: ncclCommRegister"
)
