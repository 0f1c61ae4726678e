"""The scan's launch plan: which kernel (sw_profile.cu or sw_search.cu, group size G, columns per thread R,
one pass or several) scores which length range of the length-sorted database, the kernels' mangled
names, and the substitution tables they read. Plain NumPy; the host side that launches them is
:mod:`nwalign.backends.cuda.search`."""

from __future__ import annotations

import numpy as np

from nwalign.backends.cuda import modules


QPAD = 32  # SW_QPAD in sw_search.cu
PLANS = ("auto", "wider", "wide", "single", "cost", "profile")
#: Plan ``profile``: database sequences up to this length take sw_profile.cu (longer ones would hold one
#: group of the persistent grid for longer than the average group's whole share of the launch).
PROFILE_MAX_LEN = 4096
#: Residues per chunk of plan profile's sequences (bounds the boundary rows at 4 bytes a residue: 1 GiB).
PROFILE_CHUNK_RESIDUES = 1 << 28


def bound_words(residues: int, longest: int) -> int:
    """uint64 words of sw_profile.cu's boundary rows for a piece of ``residues`` residues whose longest
    (first) sequence has ``longest``: a pair of lengths n0 >= n1 keeps n0 words from (o0 + longest - n0) / 2,
    the last ending by (residues + longest) / 2."""
    return (residues + longest) // 2 + 1


def profile_chunks_of(sorted_lengths: np.ndarray, first: int, residues: int) -> list[tuple[int, int, int, int]]:
    """Cut sequences ``first``.. (length order) into contiguous chunks of at most ``residues`` residues
    (or one sequence pair, if longer) that start at an even distance from ``first``; each as (first,
    count, first residue, residues)."""
    ends = np.cumsum(sorted_lengths, dtype=np.int64)
    start = int(ends[first - 1]) if first else 0
    out = []
    while first < sorted_lengths.size:
        k = int(np.searchsorted(ends, start + residues, side="right"))  # sequences first..k-1 fit
        k = max(k - (k - first) % 2, first + 2) if k < sorted_lengths.size else k
        k = min(k, sorted_lengths.size)
        out.append((first, k - first, start, int(ends[k - 1]) - start))
        first, start = k, int(ends[k - 1])
    return out


#: Plan ``auto`` takes plan ``profile`` for databases of at least this many residues per multiprocessor
#: (50.7 M on an H100): below it the profile launches are too short for their fill and tail, and plan
#: ``wider`` is faster (measured on either side of it: docs/performance.md).
PROFILE_MIN_RESIDUES_PER_SM = 384_000
#: sw_profile.cu's instantiations (threads per group G, query rows per thread R), sm_90 only.
PROFILE_CONFIGS = [(4, r) for r in (16, 20, 24, 28, 32, 36)] + [(g, r) for g in (8, 16) for r in (16, 20, 24, 28, 32)] \
    + [(32, r) for r in (16, 20, 24, 28)]
#: The glocal instantiations: up to 28 rows a thread (at 32 and 36 their column-0 set-up spills).
PROFILE_CONFIGS_GLOCAL = [(g, r) for g, r in PROFILE_CONFIGS if r <= 28]


def profile_shared_bytes(G: int, R: int, A1: int, threads: int = 256) -> int:
    """Dynamic shared memory of sw_profile<G, R> for A1 letters (its layout: the profile tile, padded and,
    for groups of 4, twice; then a ring of 4 pairs per group)."""
    seg = ((R // 4) | 1) * 4
    row = G * seg + (16 if G == 4 else 0)
    copies = 2 if G == 4 else 1
    return 4 * copies * (A1 * row + (16 if copies > 1 else 0)) + (threads // G) * 16 * 4


def profile_config(m: int, glocal: bool = False) -> tuple[int, int, int]:
    """(G, R, passes) of sw_profile.cu for a query of ``m`` residues: the fewest row slots (passes x G x R),
    each thread's per-column work besides its R cells counted as 3 more, groups of 32 threads 5 % more (fewer
    pairs in flight: measured slower at 729-5,147 residues) and each pass as 16 (the launch's tail), then the
    fewest passes (``scripts/profiling/profile_configs.py``); ``glocal``: among :data:`PROFILE_CONFIGS_GLOCAL`."""
    def cost(c):
        g, r = c
        p = -(-m // (g * r))
        return (p * g * r * (1 + 3 / r) * (1.05 if g == 32 else 1) + 16 * p, p)
    g, r = min(PROFILE_CONFIGS_GLOCAL if glocal else PROFILE_CONFIGS, key=cost)
    return g, r, -(-m // (g * r))


def _profile_mangled(G: int, R: int, glocal: bool = False) -> str:
    """The mangled name of ``sw_profile<G, R, glocal>(SpArgs)`` in a cubin."""
    return f"_Z10sw_profileILi{G}ELi{R}ELb{int(glocal)}EEv6SpArgs"


def _profile_name(G: int, R: int, glocal: bool) -> str:
    return f"sw_profile<{G}, {R}, {'true' if glocal else 'false'}>"


def profile_kernel_names() -> list[str]:
    """Mangled names of every sw_profile.cu kernel plan ``profile`` may launch (for ``warm_up``)."""
    return [_profile_mangled(g, r) for g, r in PROFILE_CONFIGS]


def profile_kernel(G: int, R: int, glocal: bool = False):
    """sw_profile<G, R, glocal> from the shipped cubin when it fits this GPU and the sources, else compiled
    by NVRTC."""
    names = tuple(_profile_name(g, r, False) for g, r in PROFILE_CONFIGS) + \
        tuple(_profile_name(g, r, True) for g, r in PROFILE_CONFIGS_GLOCAL)
    return modules.kernel("sw_profile", _profile_mangled(G, R, glocal), _profile_name(G, R, glocal), names)

_PAD_SCORE = -16384  # substitution score of the padding letter (rows and columns outside the sequences)
# Per architecture (sm_90's DPX instructions, or their emulation, which needs more registers): the
# single-pass configurations (threads per group G, columns per thread R), the columns per thread of the
# multi-pass form (any G of 4, 8, 16, 32), and the 32-bit multi-pass form (recomputation).
# sw_search.cu instantiates exactly these.
CONFIGS = {
    True: ([(4, r) for r in (4, 8, 12, 16)] + [(g, r) for g in (8, 16) for r in (10, 12, 14, 16, 18)]
           + [(32, r) for r in (10, 12, 14, 16, 18, 20)], 14, (32, 14)),
    False: ([(4, r) for r in (4, 8, 12)] + [(g, r) for g in (8, 16, 32) for r in (8, 10, 12)], 6, (32, 14)),
}
#: Single-pass configurations beyond 128 registers (one block of 256 threads per SM), used by the ``wide``
#: plan: sequences up to 896 residues without a second pass.
WIDE_SINGLE = {True: [(32, 24), (32, 28)], False: []}
#: Wider still (213-228 registers; plan ``wider``: up to 1,280 residues in one pass).
WIDER_SINGLE = {True: [(32, 32), (32, 40)], False: []}
GROUPS = (4, 8, 16, 32)
#: Threads per block where not 256, by configuration (G, R, multi). Empty: blocks of 192 for G=32, R=24
#: (168 registers: two blocks, 12 warps per SM instead of 8) measured within the run-to-run noise
#: (docs/performance.md), so the simpler rule stays.
BLOCK_THREADS: dict = {}
MIN_THREADS = 16384  # a launch with fewer threads than this is merged into the next longer range




class Part:
    def __init__(self, G, R, multi, first, count):
        self.G, self.R, self.multi, self.first, self.count = G, R, multi, first, count

    def __repr__(self):
        return f"Part(G={self.G}, R={self.R}, multi={self.multi}, first={self.first}, count={self.count})"


def _flag(b: bool) -> str:
    return "true" if b else "false"


def _name(wide: bool, G: int, R: int, multi: bool, glocal: bool = False) -> str:
    return f"sw_scan<{_flag(wide)}, {G}, {R}, {_flag(multi)}, {_flag(glocal)}>"


def _configs(hopper: bool) -> list[tuple[bool, int, int, bool]]:
    """Every (wide, G, R, multi) instantiation of ``sw_scan`` a GPU with (or without) DPX instructions uses."""
    single, r_multi, wide = CONFIGS[hopper]
    return [(False, g, r, False) for g, r in single + WIDE_SINGLE[hopper] + WIDER_SINGLE[hopper]] + \
        [(False, g, r_multi, True) for g in GROUPS] + [(True, *wide, True)]


def _names(hopper: bool) -> tuple[str, ...]:
    return tuple(_name(*c, gl) for gl in (False, True) for c in _configs(hopper))


def _mangled(wide: bool, G: int, R: int, multi: bool, glocal: bool = False) -> str:
    """The C++ (Itanium) mangled name of ``sw_scan<wide, G, R, multi, glocal>(SwArgs)``, as it stands in a cubin."""
    return f"_Z7sw_scanILb{int(wide)}ELi{G}ELi{R}ELb{int(multi)}ELb{int(glocal)}EEv6SwArgs"


def kernel_names(hopper: bool = True) -> list[str]:
    """Mangled names of the scan kernels the default plan may launch on a GPU with (``hopper``) or
    without DPX instructions, and the gather and scatter kernels: for :func:`nwalign.backends.cuda.warm_up`."""
    return [_mangled(*c) for c in _configs(hopper)] + ["sw_gather", "sw_scatter_scores"]


def scan_kernel(hopper: bool, wide: bool, G: int, R: int, multi: bool, glocal: bool = False):
    """The kernel from the shipped cubin when it fits this GPU and the sources, else compiled by NVRTC."""
    return modules.kernel("sw_search", _mangled(wide, G, R, multi, glocal), _name(wide, G, R, multi, glocal),
                          _names(hopper))


def length_partitions(sorted_lengths: np.ndarray, packed16: bool, hopper: bool, m: int, single_pass: bool = False,
                min_threads: int = None, wide: bool = False, wider: bool = False) -> list:
    """Contiguous ranges of the length-sorted (longest first) database, each with its kernel
    configuration, for a query of ``m`` residues.

    The database is cut at the widths G x R of the single-pass configurations (and above the largest).
    For each range the configuration with the fewest cell slots is chosen: a pass of a group costs
    (m + G - 1 + 4) steps of G x R columns (the pipeline's fill and drain, a little set-up), over
    ceil(L / (G x R)) passes for a sequence of L residues; single-pass configurations that hold the
    range and the multi-pass form at every group size compete. Neighbouring ranges with the same
    configuration are merged. ``single_pass``: the smallest single-pass configuration that holds each
    range, multi-pass with groups of 32 only beyond. A range of fewer than ``min_threads`` threads
    (default :data:`MIN_THREADS`) is merged into the next longer one. Without packed16 everything takes the 32-bit
    multi-pass form."""
    n = sorted_lengths.size
    single, r_multi, wide32 = CONFIGS[hopper]
    if wide:
        single = single + WIDE_SINGLE[hopper] + (WIDER_SINGLE[hopper] if wider else [])
    if not packed16:
        return [Part(*wide32, True, 0, n)]
    asc = -sorted_lengths  # ascending, for searchsorted
    widths = sorted({g * r: (g, r) for g, r in reversed(single)}.items())  # smallest G for each width
    cuts = [0] + [w for w, _ in widths] + [None]
    parts: list = []
    for lo_len, hi_len in reversed(list(zip(cuts[:-1], cuts[1:]))):  # longest first
        a = 0 if hi_len is None else int(np.searchsorted(asc, -hi_len, side="left"))  # first with length <= hi
        b = int(np.searchsorted(asc, -lo_len, side="left"))                          # first with length <= lo
        if b <= a:
            continue
        lengths = sorted_lengths[a:b]
        holding = [(g, r, False) for g, r in single if hi_len is not None and g * r >= hi_len]
        if single_pass or not holding:
            # Beyond the largest width: groups of 32, so that the longest sequence (one group for all its
            # passes) does not outlast the rest of the scan.
            options = [min(holding, key=lambda o: (o[0] * o[1], o[0]))] if holding else [(GROUPS[-1], r_multi, True)]
        else:
            options = holding + [(g, r_multi, True) for g in GROUPS]
        cost = [int(np.sum(-(-lengths // (g * r)))) * g * r * (m + g - 1 + 4) for g, r, _ in options]
        cfg = options[int(np.argmin(cost))]
        if parts and (parts[-1].G, parts[-1].R, parts[-1].multi) == cfg and parts[-1].first + parts[-1].count == a:
            parts[-1].count += b - a
        else:
            parts.append(Part(*cfg, a, b - a))
    # A range too small to fill the GPU would run as a latency-bound launch of its own: the next longer
    # range's configuration holds it as well.
    min_threads = MIN_THREADS if min_threads is None else min_threads
    k = len(parts) - 1
    while k > 0:
        if (parts[k].count + 1) // 2 * parts[k].G < min_threads:
            parts[k - 1].count += parts[k].count
            del parts[k]
        k -= 1
    return parts


def table_words(A: int, wide: bool, glocal: bool = False) -> int:
    return (A + 1 + int(glocal)) * (A + 1) * (1 if wide else 32)


def scores_plus_go(matrix: np.ndarray, go: int, ge: int | None = None) -> np.ndarray:
    """S + go (int64, (A + 1, A + 1)) with the padding letter A, which scores _PAD_SCORE against everything.

    Glocal (``ge`` given; sw_search.cu's header says why): (A + 2, A + 1), the padding letter scoring
    -(go + ge + 1) and row A + 1, the rows before the query, 0 (S + go = go) against everything."""
    A = matrix.shape[0]
    pad = _PAD_SCORE if ge is None else -(go + ge + 1)
    s = np.full((A + 1 + int(ge is not None), A + 1), pad, dtype=np.int64)
    s[:A, :A] = matrix
    if ge is not None:
        s[A + 1] = 0
    return s + go


def score_table(matrix: np.ndarray, go: int, wide: bool, ge: int | None = None) -> np.ndarray:
    """The kernel's shared-memory score table (uint32 words), S + go with a padding letter A (glocal, with
    ``ge``: and the row before the query, :func:`scores_plus_go`).

    wide: word [a][b] = S(a, b) + go. Packed: word [(a * (A + 1) + b) * 32 + l] = (S(a, b) + go) & 0xffff
    for every lane l (32 interleaved copies, so that lane l's loads stay in bank l).
    """
    s = scores_plus_go(matrix, go, ge).ravel()
    if wide:
        return s.astype(np.int32).view(np.uint32)
    return np.repeat((s & 0xFFFF).astype(np.uint32), 32)
