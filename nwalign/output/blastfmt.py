"""Numbers as BLAST's tabular output prints them (E-values and bit scores: -outfmt 6 and 7), so that
nwalign's columns compare with BLAST's as text."""

from __future__ import annotations


def blast_evalue(evalue: float) -> str:
    """An E-value as BLAST's tabular output prints it.

    >>> [blast_evalue(e) for e in (1e-200, 4.02e-113, 1.18e-4, 0.0042, 0.18, 1.63, 250.4)]
    ['0.0', '4.02e-113', '1.18e-04', '0.004', '0.18', '1.6', '250']
    """
    if evalue < 1e-180:
        return "0.0"
    if evalue < 0.0009:
        return f"{evalue:.2e}"
    for limit, digits in ((0.1, 3), (1.0, 2), (10.0, 1)):
        if evalue < limit:
            return f"{evalue:.{digits}f}"
    return f"{evalue:.0f}"


def blast_bitscore(bits: float) -> str:
    """A bit score as BLAST's tabular output prints it (whole bits, rounded down, from 100).

    >>> [blast_bitscore(b) for b in (37.63, 355.97, 12345.6)]
    ['37.6', '355', '1.235e+04']
    """
    if bits > 9999:
        return f"{bits:.3e}"
    return str(int(bits)) if bits > 99.9 else f"{bits:.1f}"
