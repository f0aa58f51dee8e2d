def get_cpu_capability():
    return "AVX512"
