"""flow.backends.cpu: what the CPU kernels may use."""


def get_cpu_capability():
    """ "AVX512", "AVX2" or "DEFAULT", as torch.backends.cpu.get_cpu_capability names them."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if "flags" in line), [])
    except OSError:
        return "DEFAULT"
    if "avx512f" in flags:
        return "AVX512"
    return "AVX2" if "avx2" in flags else "DEFAULT"
