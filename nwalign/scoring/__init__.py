"""Scoring: substitution matrices, gap costs and the letter -> code encoding (`schemes`); BLAST's published Karlin-Altschul tables (`blast_tables`)."""
