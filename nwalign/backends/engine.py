"""Run alignments: pick the backend, plan memory, call the kernels, and build result records."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from nwalign.backends import cpu
from nwalign import names
from nwalign.errors import NwalignError
from nwalign.ops import format_bytes
from nwalign.records.alignment import Alignment, column_stats
from nwalign.scoring.schemes import Scoring, make_scoring
from nwalign.io.sequences import Record, as_records, detect_alphabet

log = logging.getLogger("nwalign")

BACKENDS, DEFAULT_MAX_MEMORY = names.BACKENDS, names.DEFAULT_MAX_MEMORY


@dataclass(frozen=True)
class Encoded:
    """A record and its residue codes (uint8, shape (len,))."""

    record: Record
    codes: np.ndarray


def encode_all(records: list[Record], scoring: Scoring, source: str) -> list[Encoded]:
    """Encode every record, raising NwalignError on the first letter outside the alphabet."""
    out = []
    for rec in records:
        out.append(Encoded(rec, scoring.encode(rec, source)))
    return out


def pair_plan(queries: list, targets: list) -> list[tuple[int, int]]:
    """Which records to align: one query against every target, every query against one target, or
    query i against target i when both files hold the same number of records.

    Raises:
        NwalignError: the record counts differ and neither side has exactly one record.
    """
    if len(queries) == 1:
        return [(0, k) for k in range(len(targets))]
    if len(targets) == 1:
        return [(k, 0) for k in range(len(queries))]
    if len(queries) == len(targets):
        return [(k, k) for k in range(len(queries))]
    raise NwalignError(
        f"cannot pair {len(queries)} query records with {len(targets)} target records: give one "
        "record on one side, or the same number on both"
    )


def align_pair(query: Encoded, target: Encoded, scoring: Scoring, score_only: bool = False,
               max_memory: int = DEFAULT_MAX_MEMORY, band_rows: int | None = None, backend: str = "cpu",
               cuda_options=None, progress=None) -> Alignment:
    """Align one query against one target.

    Arguments:
        query, target: encoded records (see :func:`encode_all`).
        scoring: the scoring scheme (mode, matrix, gaps).
        score_only: return the optimal score without traceback (linear memory, fastest).
        max_memory: byte budget for the traceback; beyond it the checkpointed linear-space traceback runs.
        band_rows: force the linear-space band height (for tests).
        backend: ``cpu`` or ``cuda`` (resolve ``auto`` with :func:`nwalign.backends.choose_name` first).
        cuda_options: :class:`nwalign.backends.cuda.pair.Options` (kernel, block shape, device) for ``cuda``.
        progress: optional callable given the fraction done (0..1) by the CPU engine's traceback.

    Returns:
        An :class:`~nwalign.records.alignment.Alignment` with statistics filled in.

    Raises:
        NwalignError: scores could overflow, the traceback cannot fit in ``max_memory`` (or GPU memory),
            or the CUDA backend is unavailable.
    """
    q, t = query.codes, target.codes
    scoring.check_lengths(len(q), len(t))
    base = dict(query_id=query.record.id, target_id=target.record.id, mode=scoring.mode,
                query_length=len(q), target_length=len(t))
    if backend == "cuda":
        from nwalign.backends.cuda.pair import Options, run_kernel

        path, _ = run_kernel(q, t, scoring, not score_only, cuda_options or Options())
        if score_only:
            return Alignment(score=path[0], **base)
        return alignment_from_path(query, target, scoring, path)
    if score_only:
        score = _interruptible(len(q) * len(t), _cpu_score, q, t, scoring)
        return Alignment(score=score, **base)
    if len(q) * len(t) >= 10**8 and scoring.mode == "local":
        log.info("traceback %s x %s: a score pass, then the direction bytes of the alignment's box", len(q), len(t))
    elif len(q) * len(t) >= 10**8:  # say which memory path a large traceback takes
        from nwalign.backends.cpu.budget import rows_per_band
        rows = rows_per_band(len(q), len(t), max_memory) if band_rows is None else band_rows
        if rows >= len(q):
            log.info("traceback %s x %s: full direction matrix, %s", len(q), len(t),
                     format_bytes(len(q) * (len(t) + 1)))
        else:
            log.info("traceback %s x %s: linear space, checkpoints every %d rows (a matrix of %s kept whole "
                     "only up to %s)", len(q), len(t), rows, format_bytes(len(q) * (len(t) + 1)),
                     format_bytes(min(max_memory, 64 << 20)))
    path = _interruptible(len(q) * len(t), cpu.align_codes, q, t, scoring.matrix, scoring.gap_open,
                          scoring.gap_extend, scoring.mode_code, max_memory, band_rows, progress)
    return alignment_from_path(query, target, scoring, path)


def alignment_from_path(query: Encoded, target: Encoded, scoring: Scoring, path,
                        stats: dict | None = None) -> Alignment:
    """The complete :class:`~nwalign.records.alignment.Alignment` of an engine's path: ``path`` is the tuple
    (score, query_start, query_end, target_start, target_end, ops) that :func:`nwalign.backends.cpu.align_codes`,
    the CUDA pair kernels and :class:`nwalign.backends.cuda.batch.BatchAligner` return (0-based half-open
    coordinates; ops uint8, 0 a residue pair, 1 a query residue against a gap, 2 the reverse); ``stats``:
    the column statistics computed already (:func:`nwalign.records.alignment.column_stats_many`)."""
    score, qs, qe, ts, te, ops = path
    if stats is None:
        stats = column_stats(ops, query.codes, target.codes, qs, ts, scoring)
    return Alignment(query_id=query.record.id, target_id=target.record.id, mode=scoring.mode, score=score,
                     query_length=len(query.codes), target_length=len(target.codes), query_start=qs,
                     query_end=qe, target_start=ts, target_end=te, ops=ops, query_seq=query.record.seq,
                     target_seq=target.record.seq, **stats)


def alternative_alignments(query: Encoded, target: Encoded, scoring: Scoring, first: list[Alignment], keep,
                           most: int, max_memory: int = DEFAULT_MAX_MEMORY) -> list[Alignment]:
    """The local alignments of ``query`` and ``target`` after ``first`` (aligned already, best first), in
    Waterman and Eggert's order (:mod:`nwalign.backends.cpu.alternatives`): each the best that aligns no
    residue pair of those before it, while ``keep(score)`` holds and at most ``most`` are known in all.
    With ``first`` empty the first is the Smith-Waterman alignment. On the CPU, whatever the backend
    (each costs a pass over the pair's matrix: the hits' alignments, not the scan).

    Raises:
        NwalignError: a traceback cannot fit in ``max_memory``.
    """
    from nwalign.backends.cpu.alternatives import alternative_paths

    paths = [(a.score, a.query_start, a.query_end, a.target_start, a.target_end, a.ops) for a in first]
    found = alternative_paths(query.codes, target.codes, scoring.matrix, scoring.gap_open, scoring.gap_extend,
                              paths, keep, most, max_memory)
    return [alignment_from_path(query, target, scoring, path) for path in found]


def next_alternative_scores(query: Encoded, targets: list[np.ndarray], scoring: Scoring,
                            firsts: list[Alignment | None]) -> np.ndarray:
    """The score of each pair's next local alignment after ``firsts[k]`` (Waterman and Eggert's: the best
    that aligns no residue pair of it; None: the pair's Smith-Waterman score), for ``query`` against
    each of ``targets`` (uint8 codes): int64 (len(targets),), 0 where none scores above 0. The pass
    :func:`alternative_alignments` makes first, for many pairs in one call without the GIL (a query's
    reported subjects: most have no second alignment that passes an E-value cut, and this tells which)."""
    from nwalign.backends.cpu.alternatives import barred_bests

    lengths = [len(t) for t in targets]
    t_off = np.zeros(len(targets) + 1, dtype=np.int64)
    np.cumsum(lengths, out=t_off[1:])
    paths = [np.zeros(0, np.uint8) if a is None else np.asarray(a.ops, dtype=np.uint8) for a in firsts]
    o_off = np.zeros(len(paths) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in paths], out=o_off[1:])
    q_start = np.array([0 if a is None else a.query_start for a in firsts], dtype=np.int64)
    t_start = np.array([0 if a is None else a.target_start for a in firsts], dtype=np.int64)
    out = np.zeros(len(targets), dtype=np.int64)
    if targets:
        barred_bests(np.ascontiguousarray(query.codes, dtype=np.uint8), np.ascontiguousarray(scoring.matrix, np.int32),
                     int(scoring.gap_open), int(scoring.gap_extend),
                     np.concatenate(targets).astype(np.uint8, copy=False), t_off,
                     np.concatenate(paths) if paths else np.zeros(0, np.uint8), o_off, q_start, t_start, out)
    return out


def _cpu_score(q: np.ndarray, t: np.ndarray, scoring: Scoring) -> int:
    """One pair's optimal score on the CPU: parasail's striped SIMD kernels where they give nwalign's
    score (:mod:`nwalign.backends.cpu.striped`), else the Numba engine."""
    from nwalign.backends.cpu.striped import striped_score

    found = striped_score(q, t, scoring) if len(q) * len(t) >= 4096 else None  # tiny pairs: no conversion
    if found is not None:
        return found
    return cpu.score_codes(q, t, scoring.matrix, scoring.gap_open, scoring.gap_extend, scoring.mode_code)


def _interruptible(cells: int, fn, *args):
    """Run a CPU-engine call; a long one (over 10**8 cells) on the main thread runs in a worker thread (the
    Numba kernels release the GIL) while the main thread waits in short joins, so that Ctrl-C stops the
    command at once instead of when the kernel ends (the abandoned worker dies with the process)."""
    import threading

    if cells < 10**8 or threading.current_thread() is not threading.main_thread():
        return fn(*args)
    box: dict = {}

    def run():
        try:
            box["value"] = fn(*args)
        except BaseException as exc:  # handed to the caller's thread
            box["error"] = exc

    worker = threading.Thread(target=run, daemon=True, name="nwalign-cpu")
    worker.start()
    while worker.is_alive():
        worker.join(0.1)
    if "error" in box:
        raise box["error"]
    return box["value"]


def align_pairs(pairs: Iterable[tuple[Encoded, Encoded]], scoring: Scoring, score_only: bool = False,
                max_memory: int = DEFAULT_MAX_MEMORY, threads: int = 1, backend: str = "cpu",
                cuda_options=None, progress=None) -> Iterator[Alignment]:
    """Align many pairs, yielding results in input order.

    The Numba kernels release the GIL, so ``threads`` > 1 aligns several pairs at once on the CPU; each
    of the threads in use (no more than the pairs) gets ``max_memory / threads`` for its traceback, and a
    pair that cannot fit is refused before the first result is yielded. The CUDA backend runs pairs one after another.
    ``progress`` (fraction done) is passed to a lone pair's CPU traceback.

    Raises:
        NwalignError: (at the call, before any result) a pair's traceback cannot fit in its share of
            ``max_memory``.
    """
    pairs = list(pairs)
    threads = max(1, min(threads, len(pairs)))  # memory goes to the work in flight, not to idle threads
    if backend == "cpu" and not score_only:  # refused here, before any result, not at the first big pair
        from nwalign.backends.cpu.pair import plan_bands

        for q, t in pairs:
            plan_bands(len(q.codes), len(t.codes), max(1, max_memory // threads))
    return _align_pairs(pairs, scoring, score_only, max_memory, threads, backend, cuda_options, progress)


def _align_pairs(pairs, scoring, score_only, max_memory, threads, backend, cuda_options, progress):
    if backend == "cuda" or threads <= 1:
        for q, t in pairs:
            yield align_pair(q, t, scoring, score_only, max_memory, backend=backend, cuda_options=cuda_options,
                             progress=progress if len(pairs) == 1 else None)
        return
    budget = max(1, max_memory // threads)
    with ThreadPoolExecutor(max_workers=threads) as pool:
        # A bounded window keeps memory flat while results still come out in order.
        window = []
        for q, t in pairs:
            window.append(pool.submit(align_pair, q, t, scoring, score_only, budget))
            if len(window) >= 2 * threads:
                yield window.pop(0).result()
        for fut in window:
            yield fut.result()


def align(query: str, target: str, mode: str = "global", alphabet: str | None = None,
          matrix: str | None = None, match: int | None = None, mismatch: int | None = None,
          gap_open: int | None = None, gap_extend: int | None = None, score_only: bool = False,
          max_memory: int = DEFAULT_MAX_MEMORY) -> Alignment:
    """Align two sequences with the command line's defaults: each a ``str``, ``bytes``, Biopython ``Seq``
    or ``SeqRecord``, or a :class:`~nwalign.io.sequences.Record` (anything
    :func:`nwalign.io.sequences.as_records` takes for one sequence).

    >>> aln = align("GATTACA", "GATCACA", mode="global")
    >>> aln.score, aln.cigar()
    (26, '3=1X3=')

    Raises:
        NwalignError: bad letters, an empty sequence, unknown matrix or mode, negative penalties.
    """
    (q,) = as_records(query, "query")
    (t,) = as_records(target, "target")
    # an unnamed sequence keeps the name it has always had here
    q = q if hasattr(query, "id") else Record("query", "query", q.seq)
    t = t if hasattr(target, "id") else Record("target", "target", t.seq)
    scoring = make_scoring(alphabet or detect_alphabet([q, t]), mode, matrix, match, mismatch,
                           gap_open, gap_extend)
    return align_pair(Encoded(q, scoring.encode(q)), Encoded(t, scoring.encode(t)), scoring, score_only,
                      max_memory)
