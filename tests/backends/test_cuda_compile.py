"""Every CUDA source compiles with nvcc for sm_80 and sm_90 without register spills (no GPU needed)."""

import re
import shutil
import subprocess

import pytest

from nwalign.backends.cuda.modules import KERNEL_DIR

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
    every kernel the host asks for (scan, batch and banded kernels), under the mangled names it looks up."""
    import json

    from nwalign.backends.cuda.batch import KERNEL_NAMES
    from nwalign.backends.cuda.modules import CUBIN_DIR, PREBUILT, source_digest
    from nwalign.backends.cuda.scanplan import (CONFIGS, GROUPS, PROFILE_CONFIGS_GLOCAL, WIDE_SINGLE, WIDER_SINGLE, _mangled,
                                                _profile_mangled, profile_kernel_names)

    manifest = json.loads((CUBIN_DIR / "manifest.json").read_text())
    for name, archs in PREBUILT.items():
        assert manifest[name]["sha256"] == source_digest(name), \
            f"{name}.cu or a header changed: run python3 scripts/build_cubins.py {name}"
        for arch in archs:
            data = (CUBIN_DIR / f"{name}.sm_{arch}.cubin").read_bytes()
            if name == "sw_search":
                single, r_multi, wide = CONFIGS[arch >= 90]
                configs = [(False, g, r, False) for g, r in single + WIDE_SINGLE[arch >= 90] + WIDER_SINGLE[arch >= 90]]
                configs += [(False, g, r_multi, True) for g in GROUPS] + [(True, *wide, True)]
                names = [_mangled(*c, glocal) for c in configs for glocal in (False, True)] + ["sw_gather"]
            elif name == "sw_profile":  # local and glocal instances
                names = profile_kernel_names() + [_profile_mangled(g, r, True) for g, r in PROFILE_CONFIGS_GLOCAL]
            elif name == "batch_align":
                names = list(KERNEL_NAMES)
            else:  # the rest are looked up by the names the host writes (next test)
                names = list(manifest[name]["kernels"].values())
            assert names
            for mangled in names:
                assert mangled.encode() + b"\0" in data, f"{mangled} missing from {name}.sm_{arch}.cubin"


def test_every_default_kernel_ships_under_the_name_the_host_asks_for():
    """pair's wavefront kernels, allpairs' score kernels and the banded traceback are found in the shipped
    cubins by the names their host modules launch them with (a name missing here would be compiled by
    NVRTC on a user's first run: up to a minute for wave_score.cu)."""
    from nwalign.backends.cuda import allpairs
    from nwalign.backends.cuda import wavefront
    from nwalign.backends.cuda.modules import kernel_key, shipped_symbol

    wanted = {"wave_score": wavefront.WAVE_SCORE_NAMES, "wave_score16": wavefront.WAVE_SCORE16_NAMES,
              "wavefront": wavefront.WAVEFRONT_NAMES + ("wave_trace",), "allpairs": allpairs._NAMES,
              "banded_align": ("banded_align_global", "banded_score_global"),
              "antidiagonal": ("adiag_step", "adiag_sweep"), "skewed_lockfree": ("skewed_lockfree",),
              "diagonal_block": tuple(f"diagonal_block<{h}, {w}, {s}>" for h, w in ((8, 8), (16, 16), (32, 32))
                                      for s in ("true", "false"))}
    for source, names in wanted.items():
        assert names
        for name in names:
            assert shipped_symbol(source, name), f"{name} is not in the shipped {source} cubins"
    assert kernel_key(" wave_score<0,4,  false , false>") == "wave_score<0, 4, false, false>"
    assert shipped_symbol("wave_score", "wave_score<0, 4, false>") is None  # defaults are written out


def _members(body: str) -> list[str]:
    """The member names of a C struct body, in order ('const u8 *q, *t;' -> q, t)."""
    names = []
    for decl in re.sub(r"//[^\n]*", "", body).split(";"):
        decl = decl.strip()
        if not decl:
            continue
        for k, part in enumerate(decl.split(",")):
            names.append(re.findall(r"[A-Za-z_]\w*", part)[-1])
    return names


def test_kernel_argument_structs_match_their_numpy_mirrors(tmp_path):
    """Every struct a kernel takes by value, compiled on the host from its CUDA source, has the field
    offsets and size of its dtype in nwalign.backends.cuda.structs (a mismatch would pass garbage to the GPU)."""
    import shutil

    from nwalign.backends.cuda import structs
    from nwalign.backends.cuda.modules import KERNEL_DIR

    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no host C++ compiler")
    mirrored = {cname for cname, _ in structs.SOURCES.values()}  # others (device-side helpers) are not host C++
    bodies = {}
    for path in sorted(KERNEL_DIR.glob("*.cu")) + sorted(KERNEL_DIR.glob("*.cuh")):
        for name, body in re.findall(r"^struct (\w+) \{(.*?)^\};", path.read_text(), re.S | re.M):
            if name in mirrored:
                bodies[name] = body
    lines = ["#include <cstddef>", "#include <cstdio>", "typedef unsigned char u8;",
             "typedef unsigned long long u64;", "struct alignas(8) uint2 { unsigned x, y; };  // CUDA's vector type"]
    order = ["ScoreArgs"] + [n for n in bodies if n != "ScoreArgs"]  # Score16Args holds a ScoreArgs
    lines += [f"struct {n} {{{bodies[n]}}};" for n in order]
    lines.append("int main() {")
    for key, (cname, source) in structs.SOURCES.items():
        assert cname in bodies, f"struct {cname} not found in {source}"
        lines.append(f'printf("{key} size %zu\\n", sizeof({cname}));')
        for member in _members(bodies[cname]):
            lines.append(f'printf("{key} {member} %zu\\n", offsetof({cname}, {member}));')
    lines.append("return 0; }")
    src = tmp_path / "layout.cpp"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "layout"
    subprocess.run([compiler, "-std=c++17", "-o", str(exe), str(src)], check=True, capture_output=True)
    printed = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    got: dict = {}
    for line in filter(None, printed):
        key, field, value = line.split()
        got.setdefault(key, []).append((field, int(value)))
    for key, (cname, _) in structs.SOURCES.items():
        dtype = getattr(structs, key)
        sizes = dict(got[key])
        assert sizes.pop("size") == dtype.itemsize, key
        c_offsets = [v for f, v in got[key] if f != "size"]
        np_offsets = [dtype.fields[name][1] for name in dtype.names]
        assert c_offsets == np_offsets, (key, list(zip(dtype.names, np_offsets, c_offsets)))
