"""Issue rate of DPX operations on the GPU: __viaddmax_s32, __viaddmax_s16x2, add.s16x2 and max(x + 1, c), eight
independent chains per thread, 4 and 16 warps per SM (CUDA events). Usage (device machine):
python3 scripts/profiling/dpx_rate.py
"""
import cupy as cp

# One kernel per operation, eight independent chains per thread; OP updates x[k] (c: a runtime constant).
KERNEL = r"""
extern "C" __global__ void NAME(unsigned *out, int iters, int c) {
  unsigned x[8];
  for (int k = 0; k < 8; ++k) x[k] = threadIdx.x * (k + 3);
  for (int i = 0; i < iters; ++i)
    #pragma unroll
    for (int k = 0; k < 8; ++k) OP;
  unsigned r = 0; for (int k = 0; k < 8; ++k) r ^= x[k];
  out[blockIdx.x * blockDim.x + threadIdx.x] = r;
}
"""
OPS = {
    "kiadd": "x[k] = max((int)x[k] + 1, c)",  # IADD + IMNMX (fused by ptxas)
    "k32": "x[k] = __viaddmax_s32((int)x[k], 1, c)",
    "k16": "x[k] = __viaddmax_s16x2(x[k], 0x00010001u, (unsigned)c)",
    "kadd16": 'asm("add.s16x2 %0, %0, %1;" : "+r"(x[k]) : "r"(c))',
}
SRC = "".join(KERNEL.replace("NAME", name).replace("OP", op) for name, op in OPS.items())
mod = cp.RawModule(code=SRC, options=("-std=c++17",))
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
clock = cp.cuda.Device().attributes["ClockRate"] * 1e3  # Hz (max boost)
out = cp.zeros(sms * 1024, dtype=cp.uint32)
iters = 20000
for name in OPS:
    f = mod.get_function(name)
    for warps in (4, 16):
        f((sms,), (32 * warps,), (out, cp.int32(iters), cp.int32(-7)))
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record()
        f((sms,), (32 * warps,), (out, cp.int32(iters), cp.int32(-7)))
        e1.record(); e1.synchronize()
        sec = cp.cuda.get_elapsed_time(e0, e1) / 1e3
        ops = sms * 32 * warps * iters * 8  # thread-level ops (one source-level op each)
        per_clk_sm = ops / sec / clock / sms
        print(f"{name:7s} {warps:2d} warps/SM: {sec*1e3:7.2f} ms, {per_clk_sm:6.1f} thread-ops/clock/SM "
              f"({per_clk_sm/32:.2f} warp-instr/clock/SM)", flush=True)
