"""The engines behind one seam: the CPU engine (`cpu/`) and the CUDA kernels (`cuda/`)."""
