#!/usr/bin/env python3
"""Build the shipped cubins (nwalign/backends/cuda/kernels/cubins/) of every kernel source a command launches by
default: the search scan, the batched and banded alignment kernels, allpairs' score kernels and the
wavefront (pair) kernels, so that a first run compiles nothing with NVRTC.

    python3 scripts/build_cubins.py [SOURCE ...]   # needs nvcc, nm and c++filt; rerun after any change

Writes <name>.sm_<arch>.cubin for each source and architecture in modules.PREBUILT (all of them, or the
SOURCEs named) and manifest.json: per source, the SHA-256 of the sources it was built from, nvcc's version
and ``kernels``, each kernel's name as the host writes it (``wave_score<0, 4, false, false>``) -> its
symbol in the cubin. At run time (nwalign.backends.cuda.modules.function) a cubin is used only when its manifest
hash equals the installed sources' and the GPU's major architecture matches; otherwise, or if the driver
cannot load it, the kernel is compiled from source by NVRTC (then cached on disk by CuPy).
tests/backends/test_cuda_compile.py checks that the manifest matches the sources and names every kernel the host
asks for.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from nwalign.backends.cuda.modules import CUBIN_DIR, KERNEL_DIR, PREBUILT, kernel_key, source_digest  # noqa: E402


def symbols(cubin: Path) -> dict[str, str]:
    """{the kernel's name as the host writes it: its symbol} for every kernel defined in ``cubin``."""
    listed = subprocess.run(["nm", str(cubin)], capture_output=True, text=True, check=True).stdout
    defined = [line.split()[-1] for line in listed.splitlines() if re.match(r"^[0-9a-f]+ T ", line)]
    names = subprocess.run(["c++filt"], input="\n".join(defined), capture_output=True, text=True,
                           check=True).stdout.splitlines()
    # "void wave_score<0, 4, false, false>(ScoreArgs)" -> "wave_score<0, 4, false, false>"
    return {kernel_key(re.sub(r"^void ", "", re.sub(r"\(.*\)$", "", name))): sym for name, sym in zip(names, defined)}


def build(name: str, archs, version: str) -> dict:
    kernels = {}
    for arch in archs:
        out = CUBIN_DIR / f"{name}.sm_{arch}.cubin"
        subprocess.run(["nvcc", "-std=c++17", f"-arch=sm_{arch}", "-cubin", "-I", str(KERNEL_DIR), "-o", str(out),
                        str(KERNEL_DIR / f"{name}.cu")], check=True)
        found = symbols(out)
        kernels.update(found)  # the union: sw_search instantiates more for sm_90
        print(f"{out.relative_to(ROOT)}: {out.stat().st_size} bytes, {len(found)} kernels")
    return {"sha256": source_digest(name), "nvcc": version, "archs": list(archs), "kernels": kernels}


def main(argv: list[str]) -> int:
    CUBIN_DIR.mkdir(exist_ok=True)
    version = subprocess.run(["nvcc", "--version"], capture_output=True, text=True, check=True).stdout.splitlines()[-1]
    path = CUBIN_DIR / "manifest.json"
    manifest = json.loads(path.read_text()) if argv and path.is_file() else {}
    for name, archs in PREBUILT.items():
        if not argv or name in argv:
            manifest[name] = build(name, archs, version)
    manifest = {name: manifest[name] for name in PREBUILT if name in manifest}
    path.write_text(json.dumps(manifest, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
