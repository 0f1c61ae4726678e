"""Write a seeded UniRef50-sized protein FASTA fast: COUNT random proteins (uniform over the 20 amino acids)
with Swiss-Prot's length distribution (log-normal, mean ~360 residues, as nwalign.bench.synthetic_database),
ids UR50_000000000..., 60 residues per line. Blocks of records are formatted with NumPy in worker
processes and written in place (the file is sized first), so 50 M records (~18 G residues, ~20 GB) take
well under a minute on 16 cores.

    python3 benchmarks/uniref_like_fasta.py --count 50000000 -o u50.fa [--seed 11] [--workers 16]
"""

import argparse
import os
import time
from concurrent.futures import ProcessPoolExecutor

import numpy as np

AMINO = np.frombuffer(b"ACDEFGHIKLMNPQRSTVWY", dtype=np.uint8)
LINE = 60
DIGITS = 9
HEADER = b">UR50_" + b"0" * DIGITS + b" synthetic\n"
ID_AT = 6  # where the digits start in HEADER
RECORDS_PER_BLOCK = 20_000


def lengths_of(count: int, seed: int) -> np.ndarray:
    """The records' lengths (int64): log-normal around 360, clipped to 20-35,000."""
    rng = np.random.default_rng(seed)
    sigma = 0.55
    return np.clip(rng.lognormal(np.log(360) - sigma**2 / 2, sigma, size=count), 20, 35000).astype(np.int64)


def record_bytes(lengths: np.ndarray) -> np.ndarray:
    """Bytes of each record in the file: header, residues, a newline after every line."""
    return len(HEADER) + lengths + -(-lengths // LINE)


def block_text(first: int, lengths: np.ndarray, seed: int) -> np.ndarray:
    """The FASTA text (uint8) of records ``first``.. with these lengths."""
    rng = np.random.default_rng([seed, first])
    size = record_bytes(lengths)
    starts = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum(size[:-1], out=starts[1:])
    out = np.full(int(size.sum()), ord("\n"), dtype=np.uint8)
    # headers: the template, then the record number's digits
    h = np.arange(len(HEADER), dtype=np.int64)
    out[(starts[:, None] + h).ravel()] = np.tile(np.frombuffer(HEADER, dtype=np.uint8), lengths.size)
    numbers = first + np.arange(lengths.size, dtype=np.int64)
    for d in range(DIGITS):
        out[starts + ID_AT + DIGITS - 1 - d] = ord("0") + (numbers // 10**d) % 10
    # residues: i-th residue of a record at its start + header + i + i // LINE (a newline per full line)
    total = int(lengths.sum())
    first_residue = np.zeros(lengths.size, dtype=np.int64)
    np.cumsum(lengths[:-1], out=first_residue[1:])
    i = np.arange(total, dtype=np.int64) - np.repeat(first_residue, lengths)
    pos = np.repeat(starts + len(HEADER), lengths) + i + i // LINE
    out[pos] = AMINO[rng.integers(0, AMINO.size, size=total)]
    return out


def write_block(path: str, offset: int, first: int, lengths: np.ndarray, seed: int) -> None:
    text = block_text(first, lengths, seed)
    fd = os.open(path, os.O_WRONLY)
    try:
        view = memoryview(text)
        while view:
            done = os.pwrite(fd, view, offset)
            view, offset = view[done:], offset + done
    finally:
        os.close(fd)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=50_000_000)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--workers", type=int, default=os.cpu_count())
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    t0 = time.perf_counter()
    lengths = lengths_of(args.count, args.seed)
    offsets = np.zeros(args.count + 1, dtype=np.int64)
    np.cumsum(record_bytes(lengths), out=offsets[1:])
    with open(args.output, "wb") as out:
        out.truncate(int(offsets[-1]))
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        jobs = [pool.submit(write_block, args.output, int(offsets[a]), a, lengths[a:a + RECORDS_PER_BLOCK], args.seed)
                for a in range(0, args.count, RECORDS_PER_BLOCK)]
        for job in jobs:
            job.result()
    print(f"{args.output}: {args.count} sequences, {int(lengths.sum())} residues, {int(offsets[-1])} bytes, "
          f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
