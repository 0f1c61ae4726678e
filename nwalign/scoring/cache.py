"""nwalign's per-user cache of what is slow to make again (Biopython's matrices, estimated Karlin-Altschul
parameters): ``$NWALIGN_CACHE_DIR``, else ``$XDG_CACHE_HOME/nwalign``, else ``~/.cache/nwalign``.

Every entry is JSON with the SHA-256 of its payload beside it, and what reads it checks both the checksum
and the values: an entry edited by hand, cut short or written by another version is made again, never
trusted (``-v`` says so). Entries are written atomically: a concurrent run reads the old entry or the
whole new one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile

log = logging.getLogger("nwalign")


def cache_dir() -> str:
    """nwalign's per-user cache: ``$NWALIGN_CACHE_DIR``, else ``$XDG_CACHE_HOME/nwalign``, else ``~/.cache/nwalign``."""
    return os.environ.get("NWALIGN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "nwalign")


def _digest(payload) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def read_entry(path: str, valid) -> dict | None:
    """The payload of the entry at ``path`` where its checksum holds and ``valid(payload)`` is true, else
    None (missing, unreadable, edited or invalid: its maker makes it again).

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "x.json")
    >>> write_entry(path, {"lambda": 0.27})
    >>> read_entry(path, lambda p: p["lambda"] > 0)
    {'lambda': 0.27}
    >>> _ = open(path, "w").write(open(path).read().replace("0.27", "-0.5"))
    >>> read_entry(path, lambda p: p["lambda"] > 0) is None
    True
    """
    try:
        with open(path) as handle:
            entry = json.load(handle)
        payload = entry["payload"]
        ok = isinstance(payload, dict) and entry["sha256"] == _digest(payload) and bool(valid(payload))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, KeyError, AttributeError, OverflowError):
        ok = False
    if not ok:
        log.info("cache: %s is damaged or of another version; made again", path)
        return None
    return payload


def write_entry(path: str, payload: dict) -> None:
    """Keep ``payload`` (JSON-able) at ``path`` with its checksum; a cache that cannot be written is
    skipped (the entry is made again next time)."""
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as handle:
            json.dump({"payload": payload, "sha256": _digest(payload)}, handle)
        os.replace(tmp, path)
    except OSError:
        pass
