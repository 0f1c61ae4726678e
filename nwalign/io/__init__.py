"""Reading and writing sequences: FASTA (`sequences`, `fastastream`), the `.nwdb` database (`database`, `nwdb_names`, `mapped`, `makedb`), seeded random and mutated sequences (`simulate`)."""
