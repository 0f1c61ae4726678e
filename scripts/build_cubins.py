#!/usr/bin/env python3
"""Build the shipped cubins (nwalign/cuda/kernels/cubins/): the search scan (26 template instantiations),
the batched alignment (search hits, allpairs, many pairs) and allpairs' banded kernels, so that a first
search or allpairs compiles nothing with NVRTC.

    python3 scripts/build_cubins.py        # needs nvcc; rerun after any change to the sources below

Writes <name>.sm_80.cubin and <name>.sm_90.cubin for each source in modules.PREBUILT, and manifest.json (the SHA-256 of the sources
they were built from, and nvcc's version). At run time (nwalign.cuda.modules.prebuilt_function) a cubin
is used only when its manifest hash equals the installed sources' and the GPU's major architecture
matches; otherwise, or if the driver cannot load it, the kernel is compiled from source as before.
tests/test_cuda_compile.py checks that the manifest matches the sources.
"""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nwalign.cuda.modules import CUBIN_DIR, KERNEL_DIR, PREBUILT, source_digest  # noqa: E402


def main() -> int:
    CUBIN_DIR.mkdir(exist_ok=True)
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[-1]
    manifest = {}
    for name, archs in PREBUILT.items():
        for arch in archs:
            out = CUBIN_DIR / f"{name}.sm_{arch}.cubin"
            subprocess.run(["nvcc", "-std=c++17", f"-arch=sm_{arch}", "-cubin", "-I", str(KERNEL_DIR), "-o", str(out),
                            str(KERNEL_DIR / f"{name}.cu")], check=True)
            print(f"{out.relative_to(ROOT)}: {out.stat().st_size} bytes")
        manifest[name] = {"sha256": source_digest(name), "nvcc": version, "archs": list(archs)}
    (CUBIN_DIR / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
