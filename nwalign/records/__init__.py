"""The records every engine fills: `Alignment`, `PairResult`, `Block` (`alignment`), their columns made fast (`columns`)."""
