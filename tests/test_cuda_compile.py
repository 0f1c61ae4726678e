"""Every CUDA source compiles with nvcc for sm_80 and sm_90 without register spills (no GPU needed)."""

import re
import shutil
import subprocess

import pytest

from nwalign.cuda.modules import KERNEL_DIR

SOURCES = sorted(KERNEL_DIR.glob("*.cu"))


def test_sources_exist():
    assert {p.stem for p in SOURCES} >= {"antidiagonal", "diagonal_block", "skewed_lockfree"}


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on the PATH")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source", SOURCES, ids=[p.name for p in SOURCES])
def test_compiles_without_spills(tmp_path, source, arch):
    proc = subprocess.run(["nvcc", "-std=c++17", f"-arch={arch}", "-Xptxas", "-v", "-I", str(KERNEL_DIR), "-c",
                           str(source), "-o", str(tmp_path / "k.o")], capture_output=True, text=True, timeout=600)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill (?:stores|loads)", log)]
    assert spills and max(spills) == 0, log


def test_shipped_cubins_match_the_sources():
    """The shipped cubins were built from the current sources (else rerun scripts/build_cubins.py) and hold
    every kernel the search asks for, under the mangled names the host looks up."""
    import json

    from nwalign.cuda.batch import _KERNELS
    from nwalign.cuda.modules import CUBIN_DIR, PREBUILT, source_digest
    from nwalign.cuda.search import CONFIGS, GROUPS, WIDE_SINGLE, WIDER_SINGLE, _mangled

    manifest = json.loads((CUBIN_DIR / "manifest.json").read_text())
    for name, archs in PREBUILT.items():
        assert manifest[name]["sha256"] == source_digest(name), \
            f"{name}.cu or a header changed: run python3 scripts/build_cubins.py"
        for arch in archs:
            data = (CUBIN_DIR / f"{name}.sm_{arch}.cubin").read_bytes()
            if name == "sw_search":
                single, r_multi, wide = CONFIGS[arch >= 90]
                names = [_mangled(False, g, r, False) for g, r in single + WIDE_SINGLE[arch >= 90] + WIDER_SINGLE[arch >= 90]]
                names += [_mangled(False, g, r_multi, True) for g in GROUPS] + [_mangled(True, *wide, True), "sw_gather"]
            else:
                names = list(_KERNELS.values())
            assert names
            for mangled in names:
                assert mangled.encode() + b"\0" in data, f"{mangled} missing from {name}.sm_{arch}.cubin"
