"""A ``.nwdb`` written whole or not at all: through a temporary file beside it and an atomic rename, never
over something that is not a regular file."""

from __future__ import annotations

import os
import stat
import tempfile

from nwalign.errors import NwalignError


def check_database_path(path: str) -> None:
    """Refuse a ``.nwdb`` path that exists as something other than a regular file: a FIFO, a device (as
    root, ``-o /dev/null`` was once replaced by a regular file), a directory, a socket.

    Raises:
        NwalignError: what it is, naming ``path`` as given.
    """
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
            "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
        raise NwalignError(f"{path}: {kind}; a .nwdb is memory-mapped, so it is written to a regular file "
                           "(nothing was written)")


def written_atomically(path: str, write) -> None:
    """Call ``write(file)`` on a unique temporary file beside ``path`` (opened ``wb+``), then make it
    readable as the umask allows and rename it to ``path`` (a symbolic link's target is replaced).

    Raises:
        NwalignError: ``path`` is something other than a regular file (a FIFO, a device, a directory: never
            replaced), or the file cannot be written (the temporary file is removed).
    """
    check_database_path(path)
    given, path = path, os.path.realpath(path)
    directory = os.path.dirname(path)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=directory)
        with os.fdopen(fd, "wb+") as out:
            write(out)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; a database is shared (cluster workers) as any output
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp and os.path.exists(tmp):
            os.remove(tmp)
        if isinstance(exc, OSError):
            raise NwalignError(f"{given}: cannot write the database ({exc.strerror or exc})") from None
        raise
