"""The workloads of ``nwalign bench``: pair (one pair per size, every kernel and peer), search (queries
against a seeded Swiss-Prot-shaped database) and allpairs (all pairs of a seeded set), each timed and
verified by the harness.

Verification: GPU kernels and peers against the CPU engine's score; the CPU engine against Biopython
(or, where Biopython would take too long, the CPU engine's second, scalar implementation); every
traceback is rescored.
"""

from __future__ import annotations

import logging

import numpy as np

from nwalign import backends
from nwalign.backends import kernels as catalog
from nwalign.backends.kernels import GPU_ALLPAIRS_KERNELS as GPU_KERNELS, GPU_PAIR_KERNELS, cpu_scan
from nwalign.names import GPU_MODES
from nwalign.io.database import Database, database_from_records, encode_database, load_database
from nwalign.backends.engine import Encoded
from nwalign.errors import NwalignError
from nwalign.plan.pairorder import pair_batches
from nwalign.records.alignment import Alignment, rescore
from nwalign.scoring.schemes import Scoring, make_scoring
from nwalign.io.sequences import Record, detect_alphabet, read_fasta
from nwalign.io.simulate import mutate, random_records
from nwalign.bench.harness import (Row, Rows, wall_timer, without_gpu, workload_kernels, gpu_allowed, mismatch, spread, timed, versions)

log = logging.getLogger("nwalign")

SEARCH_KERNELS = ("cpu", "gsw", "scan")

GPU_SEARCH_KERNELS = ("gsw", "scan")

AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)

CPU_KERNELS = ("cpu", "cpu-serial")

PEERS = ("parasail", "biopython")

CPU_VERIFY_CELLS = 2 * 10**10  # above this the CPU engine would take minutes: check by consistency

BIOPYTHON_SCORE_CELLS = 2 * 10**9

BIOPYTHON_TRACE_CELLS = 10**9


def pair_inputs(sizes: list[int], inputs: list[str], seed: int, alphabet: str | None) -> list[tuple[Record, Record]]:
    """Seeded random query and a 10 %-mutated copy for each size, or the first record of each input."""
    if inputs:
        if len(inputs) not in (1, 2):
            raise NwalignError("--input: give one FASTA with two records, or two FASTA files")
        records = [r for path in inputs for r in read_fasta(path)]
        if len(records) != 2:  # a third one was silently left out
            raise NwalignError(f"--input: {len(records)} records; give two sequences (query and target): one file "
                               "with two records, or --input twice with one each")
        return [(records[0], records[1])]
    out = []
    for k, size in enumerate(sizes):
        (query,) = random_records([size], alphabet or "dna", seed + k)
        out.append((query, mutate(query, 0.1, seed + k + 1000)))
    return out


def _peer(name: str, q: Record, t: Record, scoring: Scoring, traceback: bool):
    """A callable returning the peer's score, or a reason string why the peer is skipped."""
    cells = len(q.seq) * len(t.seq)
    go, ge = scoring.gap_open, scoring.gap_extend
    if name == "parasail":
        try:
            import parasail
        except ImportError:
            return "parasail is not installed (pip install nwalign[bench])"
        if scoring.matrix_name.startswith("match="):
            matrix = parasail.matrix_create("".join(scoring.alphabet), int(scoring.matrix[0, 0]),
                                            int(scoring.matrix[0, 1]))
        elif hasattr(parasail, scoring.matrix_name.lower()):
            matrix = getattr(parasail, scoring.matrix_name.lower())
        else:
            return f"parasail has no matrix {scoring.matrix_name}"
        prefix = {"global": "nw", "local": "sw", "semiglobal": "sg", "glocal": "sg_dx"}[scoring.mode]
        fn = getattr(parasail, f"{prefix}_trace_scan_32" if traceback else f"{prefix}_scan_32")
        return lambda: int(fn(q.seq, t.seq, go, ge, matrix).score)
    from Bio import Align
    from Bio.Align import substitution_matrices

    if cells > (BIOPYTHON_TRACE_CELLS if traceback else BIOPYTHON_SCORE_CELLS):
        return f"Biopython would take minutes at {len(q.seq)} x {len(t.seq)}"
    aligner = Align.PairwiseAligner(mode="local" if scoring.mode == "local" else "global",
                                    open_gap_score=-go, extend_gap_score=-ge)
    if scoring.matrix_name.startswith("match="):
        aligner.match_score, aligner.mismatch_score = int(scoring.matrix[0, 0]), int(scoring.matrix[0, 1])
    else:
        aligner.substitution_matrix = substitution_matrices.load(scoring.matrix_name)
    if scoring.mode == "semiglobal":
        aligner.end_gap_score = 0
    elif scoring.mode == "glocal":  # Biopython's query is the second sequence: ours is whole, the target's ends free
        aligner.end_insertion_score = 0
    if traceback:
        return lambda: int(aligner.align(q.seq, t.seq)[0].score)
    return lambda: int(aligner.score(q.seq, t.seq))


def _kernel_list(kernels: str, backend: str, peers: bool) -> list[str]:
    gpu_ok = gpu_allowed(backend)
    if kernels == "all":
        names = list(CPU_KERNELS) + (list(GPU_PAIR_KERNELS) if gpu_ok else []) + (list(PEERS) if peers else [])
        if not gpu_ok:
            log.warning("GPU kernels skipped: %s", backends.why_no_gpu() if backends.may_use_gpu(backend) else "--backend cpu")
        return names
    names = [k.strip() for k in kernels.split(",") if k.strip()]
    known = set(CPU_KERNELS) | set(GPU_PAIR_KERNELS) | set(PEERS)
    for name in names:
        if name not in known:
            raise NwalignError(f"--kernels: unknown kernel {name!r} (known: all, {', '.join(sorted(known))})")
    return without_gpu(names, GPU_PAIR_KERNELS, gpu_ok, backend, kernels)


def run_pair(sizes: list[int], kernels: str = "all", repeats: int = 3, warmup: int = 1, mode: str = "global",
             traceback: bool = False, backend: str = "auto", blocks: list[tuple[int, int]] | None = None,
             shared: bool = True, inputs: list[str] | None = None, seed: int = 1, peers: bool = True,
             alphabet: str | None = None, progress=None) -> list[Row]:
    """Benchmark the pair workload. Returns one verified (or not) row per kernel and size.

    Raises:
        NwalignError: bad kernel names, ``--backend cuda`` without a GPU, bad inputs.
    """
    names = _kernel_list(kernels, backend, peers)
    if mode not in GPU_MODES:  # glocal: the wavefront kernel's instances; the other pair kernels refuse it
        skipped = [n for n in names if n in GPU_PAIR_KERNELS and n != "wavefront"]
        if skipped:
            log.warning("%s skipped: no %s instance (the wavefront kernel has one)", ", ".join(skipped), mode)
        names = [n for n in names if n not in skipped]
        if not names:
            raise NwalignError(f"--kernels {kernels}: none has a {mode} instance (the wavefront kernel and the "
                               "CPU engine have)")
    pairs = pair_inputs(sizes, inputs or [], seed, alphabet)
    kind = alphabet or detect_alphabet([r for p in pairs for r in p])
    scoring = make_scoring(kind, mode)
    device = (backends.device_info() or [{"name": "cpu only"}])[0]["name"]
    info = versions()
    rows: list[Row] = Rows(progress)
    for q, t in pairs:
        qc, tc = scoring.encode(q), scoring.encode(t)
        scoring.check_lengths(len(qc), len(tc))
        cells = len(qc) * len(tc)
        reference, ref_name = None, ""
        if cells <= CPU_VERIFY_CELLS:
            reference, ref_name = catalog.cpu_score(qc, tc, scoring), "cpu engine"
        base_rows = len(rows)
        for name in names:
            variants = [(name, None)]
            if name == "diagonal-block":
                variants = [(f"diagonal-block[{r}x{c}{'' if shared else ',no-shared'}]", (r, c))
                            for r, c in (blocks or [(32, 32)])]
            for label, block in variants:
                row = _measure(label, name, block, shared, q, t, qc, tc, scoring, traceback, repeats, warmup,
                               reference, ref_name, device, info)
                if row is None:
                    continue
                if reference is None:  # too large for the CPU engine: the first GPU result is the reference
                    reference, ref_name = row.score, f"{label} (CPU check skipped above {CPU_VERIFY_CELLS:.0e} cells)"
                    row.reference, row.verified = ref_name, row.verified
                rows.append(row)
        by_kernel = {r.kernel: r.median_s for r in rows[base_rows:]}
        for r in rows[base_rows:]:
            r.speedup_cpu = by_kernel["cpu"] / r.median_s if "cpu" in by_kernel else None
            r.speedup_serial = by_kernel["cpu-serial"] / r.median_s if "cpu-serial" in by_kernel else None
    return rows


def _measure(label, name, block, shared, q, t, qc, tc, scoring, traceback, repeats, warmup, reference, ref_name,
             device, info) -> Row | None:
    go, ge = scoring.gap_open, scoring.gap_extend
    timer = wall_timer
    check_ops = None
    if name in ("cpu", "cpu-serial"):  # cpu-serial: the papers' baseline, one thread, the scalar row kernel
        fn = catalog.pair_call(name, qc, tc, scoring, traceback)
    elif name in PEERS:
        fn = _peer(name, q, t, scoring, traceback)
        if isinstance(fn, str):
            log.warning("peer %s skipped: %s", name, fn)
            return None
    else:
        fn = catalog.pair_call(name, qc, tc, scoring, traceback, block, shared)
        timer = catalog.gpu_timer()
    times, result = timed(fn, repeats, warmup, timer)
    if isinstance(result, tuple):  # (score, qs, qe, ts, te, ops) or a run_kernel tuple
        score = int(result[0])
        if traceback and result[5] is not None:
            check_ops = Alignment(query_id="q", target_id="t", mode=scoring.mode, score=score, query_length=len(qc),
                                  target_length=len(tc), query_start=result[1], query_end=result[2],
                                  target_start=result[3], target_end=result[4], ops=result[5])
    else:
        score = int(result)
    verified = reference is None or score == reference
    ref = ref_name or "none"
    if name == "cpu" and len(qc) * len(tc) <= BIOPYTHON_SCORE_CELLS:  # the CPU engine against an independent one
        oracle = _peer("biopython", q, t, scoring, False)
        if not isinstance(oracle, str):
            verified &= oracle() == score
            ref = "biopython"
    elif name == "cpu":
        verified &= catalog.serial_score(qc, tc, scoring) == score
        ref = "cpu-serial"
    if check_ops is not None:
        verified &= rescore(check_ops, qc, tc, scoring.matrix, go, ge) == score
    runs, median, fastest, slowest = spread(times)
    if not verified:
        mismatch(f"{label} {len(qc)} x {len(tc)}: score {score}, reference {reference} ({ref})")
    return Row("pair", label, len(qc), len(tc), scoring.mode, traceback, runs, median, fastest, slowest,
               len(qc) * len(tc) / median / 1e9, score, bool(verified), ref,
               device if name in GPU_PAIR_KERNELS else "cpu", versions=info)


def synthetic_database(count: int, seed: int):
    """Seeded protein database with Swiss-Prot's length distribution (log-normal, mean ~360 residues)."""
    rng = np.random.default_rng(seed)
    sigma = 0.55
    lengths = np.clip(rng.lognormal(np.log(360) - sigma**2 / 2, sigma, size=count), 20, 35000).astype(np.int64)
    residues = np.frombuffer(AMINO[rng.integers(0, 20, size=int(lengths.sum()))].tobytes(), dtype=np.uint8)
    offsets = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    return Database(residues, offsets, [f"db{k}" for k in range(count)], [""] * count, f"synthetic-{count}")


def _search_inputs(query_lengths: list[int], db_size: int, inputs: list[str] | None, seed: int):
    """(queries, database) of the search workload: ``inputs`` (queries, and optionally a database), or
    seeded random proteins against a synthetic Swiss-Prot-like database."""
    if inputs and len(inputs) > 2:
        raise NwalignError("--input for search: give the query FASTA, and optionally the database FASTA")
    if inputs:
        queries = read_fasta(inputs[0])
    else:
        rng = np.random.default_rng(seed)
        queries = [Record(f"query_len{n}", "", AMINO[rng.integers(0, 20, size=n)].tobytes().decode())
                   for n in query_lengths]
    if inputs and len(inputs) == 2:
        return queries, load_database(inputs[1])
    return queries, synthetic_database(db_size, seed + 1)


def _search_check(name: str, scores, cpu_scores, other_gpu, reference) -> tuple[bool, str]:
    """(verified, against what) of one kernel's scores of a query: the CPU engine's on the whole database
    when it was timed, else on the first database sequences (``reference()``) and the other GPU kernel's."""
    if name == "cpu":
        ref = reference()  # the scan must not depend on the database around it
        return bool(np.array_equal(scores[:len(ref)], ref)), "cpu engine (subset rerun)"
    if cpu_scores is not None:
        return bool(np.array_equal(scores, cpu_scores)), "cpu engine (whole database)"
    ref = reference()
    verified, ref_name = bool(np.array_equal(scores[:len(ref)], ref)), f"cpu engine (first {len(ref)})"
    if name in GPU_SEARCH_KERNELS and other_gpu is not None:
        verified &= bool(np.array_equal(scores, other_gpu))
        ref_name += ", the other GPU kernel (whole database)"
    return verified, ref_name


def run_search(query_lengths: list[int], db_size: int, kernels: str = "all", repeats: int = 3, warmup: int = 1,
               backend: str = "auto", inputs: list[str] | None = None, seed: int = 1, matrix: str | None = None,
               gap_open: int | None = None, gap_extend: int | None = None, check: int = 2000,
               progress=None, mode: str = "local") -> list[Row]:
    """Benchmark the search workload: each query against the whole database, scores only; ``mode`` local
    or glocal (the scan kernel and the CPU engine: gsw is local only).

    Verification: every kernel's scores against the CPU engine's, on the whole database when the CPU
    kernel is timed too, else on the first ``check`` database sequences.
    """
    gpu_ok = gpu_allowed(backend)
    names = workload_kernels(kernels, SEARCH_KERNELS, "a search")
    names = without_gpu(names, GPU_SEARCH_KERNELS, gpu_ok, backend, kernels)
    if mode != "local" and "gsw" in names:
        names = [n for n in names if n != "gsw"]
        if not names:
            raise NwalignError(f"--kernels {kernels}: gsw is local only (glocal: scan or cpu)")
        log.warning("gsw skipped: the kernel is local only")
    queries, db = _search_inputs(query_lengths, db_size, inputs, seed)
    scoring = make_scoring("protein", mode, matrix, None, None, gap_open, gap_extend)
    codes = encode_database(db, scoring)
    threads = __import__("os").cpu_count() or 1
    sub = database_from_records([db.record(k) for k in range(min(check, db.count))], "check")
    sub_codes = encode_database(sub, scoring)
    gpu = {}
    if "gsw" in names:
        gpu["gsw"] = catalog.gpu_scanner("gsw", db, codes, scoring)
    if "scan" in names:
        gpu["scan"] = catalog.gpu_scanner("scan", db, codes, scoring)
    device = (backends.device_info() or [{"name": "cpu only"}])[0]["name"]
    info = versions()
    rows: list[Row] = Rows(progress)
    for q in queries:
        qc = scoring.encode(q)
        cpu_scores = other_gpu = None
        for name in names:
            if name == "cpu":
                fn, timer = (lambda: cpu_scan(qc, codes, db.offsets, scoring, threads)), wall_timer
            else:
                enc = Encoded(q, qc)
                fn, timer = (lambda: gpu[name].score_query(enc)), catalog.gpu_timer()
            times, scores = timed(fn, repeats, warmup, timer)
            verified, ref_name = _search_check(name, scores, cpu_scores, other_gpu,
                                               lambda: cpu_scan(qc, sub_codes, sub.offsets, scoring, threads))
            if name == "cpu":
                cpu_scores = scores
            if name in GPU_SEARCH_KERNELS and other_gpu is None:
                other_gpu = scores
            runs, median, fastest, slowest = spread(times)
            if not verified:
                mismatch(f"{name} query {q.id}: scores differ from the {ref_name}")
            rows.append(Row("search", name, len(qc), db.total_length, mode, False, runs, median, fastest, slowest,
                            len(qc) * db.total_length / median / 1e9, int(scores.max()), verified, ref_name,
                            device if name in GPU_SEARCH_KERNELS else "cpu", db_sequences=db.count, versions=info))
        by_kernel = {r.kernel: r.median_s for r in rows if r.query_length == len(qc)}
        for r in rows:
            if r.query_length == len(qc):
                r.speedup_cpu = by_kernel["cpu"] / r.median_s if "cpu" in by_kernel else None
    return rows


ALLPAIRS_KERNELS = ("cpu", "lazy-rscan", "rscan", "dscan", "tiled-dscan")



def allpairs_records(length: int, count: int, seed: int, inputs: list[str] | None, alphabet: str | None
                     ) -> list[Record]:
    """``count`` records: the first ones of ``inputs[0]``, or seeded 16S-like variants of one random
    sequence of ``length`` (15 % substitutions and small indels each, so lengths vary by a few %)."""
    if inputs:
        records = read_fasta(inputs[0])[:count]
        if len(records) < 2:
            raise NwalignError(f"--input {inputs[0]}: allpairs needs at least two records")
        return records
    (root,) = random_records([length], alphabet or "dna", seed)
    return [mutate(root, 0.15, seed + 1 + k, name=f"variant{k}") for k in range(count)]


def _allpairs_gpu_rows(rows, name, codes, scoring, pairs, sample, reference, first_gpu, slices, blocks, repeats,
                       warmup, context):
    """The rows of one GPU all-pairs kernel (each slice and block size that fits), verified against the CPU
    engine on the sampled pairs and against the first GPU kernel on every pair; returns that kernel's
    scores."""
    mean_len, cells, mode, device, info = context
    for k_slice in (slices if name == "lazy-rscan" else [None]):
        for block in blocks:
            if not catalog.allpairs_block_fits(name, block):
                continue
            scorer = catalog.allpairs_scorer(codes, scoring, name, k_slice, block)
            times, got = timed(lambda: scorer.scores(pairs, name), repeats, warmup, catalog.gpu_timer())
            verified = bool(np.array_equal(got[sample], reference))
            ref_name = f"cpu engine ({len(sample)} sampled pairs)"
            if first_gpu is None:
                first_gpu = got
            else:
                verified &= bool(np.array_equal(got, first_gpu))
                ref_name += ", other GPU kernels (all pairs)"
            runs, median, fastest, slowest = spread(times)
            config = catalog.allpairs_config(name, k_slice, block)
            if not verified:
                mismatch(f"allpairs {name} {config}: scores differ from the {ref_name}")
            rows.append(Row("allpairs", name, mean_len, mean_len, mode, False, runs, median,
                            fastest, slowest, cells / median / 1e9, int(got.max()), verified,
                            ref_name, device, pairs=len(pairs), pairs_per_s=len(pairs) / median,
                            config=config, versions=info))
    return first_gpu


def run_allpairs(sizes: list[int], count: int, kernels: str = "all", repeats: int = 3, warmup: int = 1,
                 mode: str = "global", backend: str = "auto", slices: list[int] | None = None,
                 blocks: list[int | None] | None = None, inputs: list[str] | None = None, seed: int = 1,
                 alphabet: str | None = None, check: int = 2000, progress=None) -> list[Row]:
    """Benchmark the allpairs workload: all ``count * (count - 1) / 2`` pairs of a set, scores only.

    Each GPU kernel is timed end to end (pair upload, sort, kernels, scores back) with CUDA events;
    ``cpu`` (the CPU engine on every core) on ``check`` sampled pairs. Verification: every kernel's scores
    on the sampled pairs against the CPU engine, and all GPU kernels against each other on every pair;
    the CPU engine against its scalar second implementation on 50 pairs.
    """
    import os
    from concurrent.futures import ThreadPoolExecutor

    gpu_ok = gpu_allowed(backend)
    names = workload_kernels(kernels, ALLPAIRS_KERNELS, "an allpairs")
    if count < 2:
        raise NwalignError("--count: allpairs needs at least 2 sequences")
    names = without_gpu(names, GPU_KERNELS, gpu_ok, backend, kernels)
    slices = slices or [32]
    blocks = blocks or [None]
    device = (backends.device_info() or [{"name": "cpu only"}])[0]["name"] if gpu_ok else "cpu"
    info = versions()
    threads = os.cpu_count() or 1
    rows: list[Row] = Rows(progress)
    for size in ([0] if inputs else sizes):
        records = allpairs_records(size, count, seed, inputs, alphabet)
        kind = alphabet or detect_alphabet(records)
        scoring = make_scoring(kind, mode)
        codes = [scoring.encode(r) for r in records]
        n = len(codes)
        pairs = np.concatenate(list(pair_batches(n, None, 1 << 20)))
        lengths = np.array([len(c) for c in codes], dtype=np.int64)
        cells = int((lengths[pairs[:, 0]] * lengths[pairs[:, 1]]).sum())
        rng = np.random.default_rng(seed)
        sample = np.sort(rng.choice(len(pairs), size=min(check, len(pairs)), replace=False))

        def score_sample(idx, pool):
            work = [(codes[i], codes[j]) for i, j in pairs[idx].tolist()]
            return np.fromiter(pool.map(lambda qt: catalog.cpu_score(qt[0], qt[1], scoring), work),
                               dtype=np.int64, count=len(work))

        with ThreadPoolExecutor(max_workers=threads) as pool:
            reference = score_sample(sample, pool)
            mean_len = int(round(float(lengths.mean())))
            first_gpu = None
            cpu_gcups = None
            for name in names:
                if name == "cpu":
                    sample_cells = int((lengths[pairs[sample, 0]] * lengths[pairs[sample, 1]]).sum())
                    times, got = timed(lambda: score_sample(sample, pool), repeats, warmup)
                    few = sample[:50]
                    serial = [catalog.serial_score(codes[i], codes[j], scoring) for i, j in pairs[few].tolist()]
                    verified = bool(np.array_equal(got, reference)) and list(got[:len(few)]) == serial
                    runs, median, fastest, slowest = spread(times)
                    cpu_gcups = sample_cells / median / 1e9
                    rows.append(Row("allpairs", "cpu", mean_len, mean_len, mode, False, runs, median,
                                    fastest, slowest, cpu_gcups, int(got.max()), verified,
                                    "cpu-serial (50 pairs)", "cpu", pairs=len(sample),
                                    pairs_per_s=len(sample) / median, config=f"{threads} threads", versions=info))
                    continue
                first_gpu = _allpairs_gpu_rows(rows, name, codes, scoring, pairs, sample, reference, first_gpu,
                                               slices, blocks, repeats, warmup, (mean_len, cells, mode, device, info))
            for r in rows:
                if r.query_length == mean_len and cpu_gcups:
                    r.speedup_cpu = r.gcups / cpu_gcups
    return rows
