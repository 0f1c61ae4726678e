"""Which pairs, in which order: the job skeleton (`prepare`), the pair order of a set or A x B (`pairorder`), the widest band of an identity and its bound (`bands`)."""
