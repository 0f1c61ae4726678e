"""Sizes in bytes as users write them: ``16G``, ``512M``, ``2.5GiB``, ``64k``, ``1000000`` (K, M, G, T:
powers of 1,024; case, a trailing ``B`` or ``iB`` and spaces around ignored). One grammar for every option
that takes a size (``--max-memory``, ``--gpu-memory``)."""

import re

from nwalign.errors import NwalignError

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*")
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
LARGEST = 1 << 60  # no machine's memory comes near: a larger number is a typing slip


def size_bytes(text: str) -> int | None:
    """Bytes of ``text``, or None where it is not a size (or is beyond :data:`LARGEST`).

    >>> size_bytes("2.5GiB"), size_bytes(" 64k "), size_bytes("300mb"), size_bytes("0")
    (2684354560, 65536, 314572800, 0)
    >>> size_bytes("1e9"), size_bytes("-1G"), size_bytes("12X")
    (None, None, None)
    """
    match = _SIZE.fullmatch(str(text).lower())
    if not match:
        return None
    value = int(float(match.group(1)) * _UNITS[match.group(2)])
    return value if value <= LARGEST else None


def gpu_memory_bytes(text) -> int:
    """Bytes of a ``gpu_memory`` size (``--gpu-memory``): an int, or a size as :func:`size_bytes` reads it.

    Raises:
        NwalignError: not a size, or zero.
    """
    value = size_bytes(text)
    if not value:
        raise NwalignError(f"gpu_memory {text!r}: give a size such as 16G or 512M",
                           cli=f"--gpu-memory {text}: give a size such as 16G or 512M")
    return value
