"""Every test helper, in one module: the data paths, seeds, Biopython's aligner as the oracle, random
sequences, search rows and the GPU-memory fakes of the streamed tests (``conftest.py`` holds only
fixtures and hooks)."""

import os

from Bio import Align
from Bio.Align import substitution_matrices

DNA = "ACGT"
# DNA with IUPAC ambiguity codes (about one letter in three), for the BLAST ambiguity rule.
DNA_IUPAC = "ACGT" * 6 + "RYMKWSBDHVN"
PROTEIN = "ACDEFGHIKLMNPQRSTVWY"


def biopython_aligner(mode, alphabet, gap_open, gap_extend, match=5, mismatch=-4, matrix="BLOSUM62"):
    """PairwiseAligner with nwalign's conventions (gap of length L costs open + (L-1) * extend)."""
    aligner = Align.PairwiseAligner()
    aligner.mode = "local" if mode == "local" else "global"
    if alphabet == "protein":
        aligner.substitution_matrix = substitution_matrices.load(matrix)
    else:
        # nwalign's nucleotide table: match/mismatch on A, C, G, T; ambiguity codes as NCBI BLAST scores them
        # (its values are checked against BLAST's rule and parasail in test_scoring.py).
        from nwalign.scoring.schemes import NUCLEOTIDE_CODES, blast_nucleotide_matrix

        aligner.substitution_matrix = substitution_matrices.Array(
            alphabet=NUCLEOTIDE_CODES, dims=2, data=blast_nucleotide_matrix(match, mismatch).astype(float))
    aligner.open_gap_score = -gap_open
    aligner.extend_gap_score = -gap_extend
    if mode == "semiglobal":
        aligner.end_gap_score = 0
    return aligner


def random_seq(rng, letters, length):
    return "".join(rng.choice(list(letters), size=length))


def mutate(rng, seq, letters, rate=0.1):
    """Substitutions and short indels, so alignments have gaps worth finding."""
    out = []
    for ch in seq:
        r = rng.random()
        if r < rate / 3:
            out.append(rng.choice(list(letters)))
        elif r < 2 * rate / 3:
            continue
        elif r < rate:
            out.append(ch + random_seq(rng, letters, int(rng.integers(1, 4))))
        else:
            out.append(ch)
    return "".join(out) or letters[0]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the repository
DATA = os.path.join(ROOT, "data")  # the shipped sequences
TEST_DATA = os.path.join(ROOT, "tests", "data")  # the peers' recorded outputs
GENOME_A = os.path.join(DATA, "sars-cov-2_wuhan-hu-1_MN908947.fasta")
GENOME_B = os.path.join(DATA, "batcov_RaTG13.fasta")


def seed_of(*parts) -> int:
    """A seed that is the same in every run (Python's ``hash`` of a string is not: it is salted per
    process), from the test's parameters."""
    import zlib

    return zlib.crc32(repr(parts).encode())


def tied_ecoli_nwdb(folder, every: int) -> str:
    """The E. coli proteome with every ``every``-th record repeated under another name at the end (ties
    across shards and chunks), written as ``tied.nwdb`` in ``folder``; its path."""
    from nwalign.io.makedb import makedb
    from nwalign.io.sequences import read_fasta

    recs = read_fasta(os.path.join(DATA, "swissprot_ecoli_k12_4306.fasta.gz"))
    text = "".join(f">{r.id}\n{r.seq}\n" for r in recs) + "".join(f">copy_{r.id}\n{r.seq}\n" for r in recs[::every])
    (folder / "tied.fa").write_text(text)
    makedb(str(folder / "tied.fa"), str(folder / "tied.nwdb"))
    return str(folder / "tied.nwdb")


def search_rows(results) -> list:
    """(query id, database index, score, CIGAR, E-value) of every hit of a search's results."""
    return [(q.id, h.db_index, h.aln.score, h.aln.cigar(), h.evalue) for q, hits in results for h in hits]


def whole_upload_fails(monkeypatch, budget: int) -> None:
    """A GPU on which the whole E. coli database's upload runs out of memory (more than 4,000 sequences)
    while chunks of it fit ``budget`` bytes (the streamed scan's reserve and smallest chunk made small)."""
    from nwalign.backends.cuda import devicedb
    from nwalign.backends.cuda import streamed

    real = devicedb.DeviceDatabase.__init__

    def small_only(self, codes, offsets, device=0, order=None, staged=None):
        if len(offsets) > 4000:  # the whole database, not a chunk
            raise devicedb.DoesNotFit("test: the database does not fit")
        real(self, codes, offsets, device, order, staged)

    monkeypatch.setattr(devicedb.DeviceDatabase, "__init__", small_only)
    monkeypatch.setattr(streamed, "RESERVE", 1 << 20)
    monkeypatch.setattr(streamed, "MIN_CHUNK_RESIDUES", 1 << 14)
    monkeypatch.setattr(streamed, "budget_of", lambda cupy, limit: (budget, "test"))
