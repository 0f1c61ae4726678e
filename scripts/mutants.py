#!/usr/bin/env python3
"""The mutation probe: one-line mutants of the rules a user sees, each applied to the tree in turn, the CPU
tests that pin the rule run against it, and the mutants that survive (no test fails) printed. Run it when a
rule changes (docs/testing.md); every mutant on the list is caught today. Not part of CI: a few minutes on
two cores.

    python3 scripts/mutants.py [NAME ...]      # or: make mutants; names: --list

Each mutant is (name, file, the exact text, its replacement, the test files that should catch it). A
mutant whose text is no longer in its file is reported as "moved": update the list where the code now lives.
"""

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MUTANTS = [
    ("sam-flag-any-strand", "nwalign/output/writers/sam.py", 'flag = 16 if aln.strand == "minus" else 0',
     "flag = 16 if aln.strand else 0", ["tests/results/test_rules_at_the_bounds.py"]),
    ("strand-tie-to-minus", "nwalign/results/strands.py", "if kept is None or hit.aln.score > kept.aln.score:",
     "if kept is None or hit.aln.score >= kept.aln.score:", ["tests/results/test_rules_at_the_bounds.py"]),
    ("min-score-reported", "nwalign/results/hits.py", "scores[k] >= min_score]", "scores[k] > min_score]",
     ["tests/results/test_rules_at_the_bounds.py"]),
    ("min-score-top-hits", "nwalign/records/candidates.py", "order = order[scores[order] >= min_score]",
     "order = order[scores[order] > min_score]", ["tests/results/test_rules_at_the_bounds.py"]),
    ("max-evalue-at-the-cut", "nwalign/results/hits.py", "evalue > max_evalue:", "evalue >= max_evalue:",
     ["tests/results/test_rules_at_the_bounds.py"]),
    ("top-tie-later-subject", "nwalign/records/candidates.py", "order = cand[np.lexsort((cand, -scores[cand]",
     "order = cand[np.lexsort((-cand, -scores[cand]", ["tests/results/test_rules_at_the_bounds.py"]),
    ("empty-local-hit-reported", "nwalign/jobs/search/options.py", "max(int(self.min_score), 1)",
     "int(self.min_score)", ["tests/results/test_rules_at_the_bounds.py"]),
    ("min-identity-at-the-bound", "nwalign/jobs/allpairs/run.py", "aln.identity >= min_identity",
     "aln.identity > min_identity", ["tests/results/test_rules_at_the_bounds.py"]),
    ("identity-lengths-at-the-bound", "nwalign/jobs/allpairs/run.py", "np.minimum(m, n) >= min_identity",
     "np.minimum(m, n) > min_identity", ["tests/results/test_rules_at_the_bounds.py"]),
    ("complement-r-y-swapped", "nwalign/io/sequences.py", '"TGCAAYRMKVBHDSWNXtgcaayrmkvbhdswnx-"',
     '"TGCAARYMKVBHDSWNXtgcaayrmkvbhdswnx-"', ["tests/results/test_rules_at_the_bounds.py"]),
    ("cigar-i-d-swapped", "nwalign/records/alignment.py", '_CIGAR_SYMBOL = {0: "=", 1: "X", 2: "I", 3: "D"}',
     '_CIGAR_SYMBOL = {0: "=", 1: "X", 2: "D", 3: "I"}', ["tests/output/test_rules.py"]),
    ("tie-e-before-diagonal", "nwalign/backends/cpu/dp.py", "    if e > h:", "    if e >= h:",
     ["tests/output/test_rules.py"]),
    ("minus-strand-coordinates", "nwalign/output/columns.py",
     "return aln.query_length - aln.query_end + 1, aln.query_length - aln.query_start, aln.target_end, \\",
     "return aln.query_start + 1, aln.query_end, aln.target_end, \\",
     ["tests/results/test_strands.py", "tests/results/test_rules_at_the_bounds.py"]),
    ("btop-minus-orientation", "nwalign/output/columns.py", "        columns.reverse()", "        pass",
     ["tests/results/test_strands.py"]),
]


def run(name: str, path: str, old: str, new: str, tests: list[str]) -> str:
    """``killed``, ``SURVIVED`` or ``moved`` for one mutant; the file is restored whatever happens."""
    target = ROOT / path
    text = target.read_text()
    if text.count(old) != 1:
        return "moved"
    try:
        target.write_text(text.replace(old, new))
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m",
                               "not gpu", *tests], cwd=ROOT, capture_output=True, text=True)
    finally:
        target.write_text(text)
    return "killed" if done.returncode != 0 else "SURVIVED"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--list", action="store_true", help="list the mutants and exit")
    args = parser.parse_args()
    chosen = [m for m in MUTANTS if not args.names or m[0] in args.names]
    if args.list:
        for name, path, *_ in chosen:
            print(f"{name}\t{path}")
        return 0
    bad = 0
    for mutant in chosen:
        outcome = run(*mutant)
        bad += outcome != "killed"
        print(f"{outcome:9s} {mutant[0]} ({mutant[1]})", flush=True)
    print(f"{len(chosen) - bad} of {len(chosen)} mutants killed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
