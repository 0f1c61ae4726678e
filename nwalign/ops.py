"""Alignment column codes shared by the engines and the result records (no heavy imports)."""

OP_MATCH, OP_INS, OP_DEL = 0, 1, 2  # alignment columns: residue pair, query residue only, target only
