"""Where results go: stdout, or a file written atomically (:func:`output_stream`, refusing paths that
would destroy something: :func:`check_output`), and allpairs' distance matrix (:func:`distance_matrix`,
PHYLIP or a memory-mapped ``.npy``). NumPy is imported by the matrix alone: the command line's help
loads none of it."""

from __future__ import annotations

import errno
import itertools
import os
import stat
import sys
import tempfile
from contextlib import contextmanager

from nwalign.errors import NwalignError


def check_output(path: str | None, inputs=(), option: str = "-o") -> None:
    """Refuse an output path that would destroy something: one of the inputs, a directory, a read-only
    file, or a directory nwalign cannot write in.

    Raises:
        NwalignError: one line saying which.
    """
    if path is None or path == "-":
        return
    if not path:
        raise NwalignError(f"{option} '': give a file name (or - for standard output)")
    for source in inputs:
        if source and source != "-" and os.path.exists(source) and os.path.exists(path) \
                and os.path.samefile(source, path):
            raise NwalignError(f"{option} {path}: is also an input ({source}); write the result elsewhere")
    if os.path.isdir(path):
        raise NwalignError(f"{option} {path}: is a directory")
    if _special(path):  # a FIFO, a device, /dev/stdout on a pipe: written directly, as it is
        if not os.access(path, os.W_OK):
            raise NwalignError(f"{option} {path}: cannot be written")
        return
    target = os.path.realpath(path)
    if os.path.exists(target) and os.path.isfile(target) and not os.access(target, os.W_OK):
        raise NwalignError(f"{option} {path}: read-only file, not replaced")
    directory = os.path.dirname(target)
    if not os.path.isdir(directory):
        raise NwalignError(f"{option} {path}: directory {directory} does not exist")
    if os.path.isfile(target) or not os.path.exists(target):
        if not os.access(directory, os.W_OK | os.X_OK):
            raise NwalignError(f"{option} {path}: cannot write in directory {directory}")
    try:
        longest = os.pathconf(directory, "PC_NAME_MAX")
    except (OSError, ValueError):
        longest = 255
    if len(os.path.basename(target).encode()) > longest:
        raise NwalignError(f"{option} {path}: a file name longer than {longest} bytes")
    fd, probe = _temporary_beside(target, f"{option} {path}")  # what access() cannot tell (/proc, root)
    os.close(fd)
    os.unlink(probe)


def _special(path: str) -> bool:
    """Whether ``path`` exists as something other than a regular file or a directory (a FIFO, a device, a
    socket, ``/dev/stdout`` on a pipe), stat'ed as given: resolved by hand, ``/dev/stdout`` names no file."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


class ClosedPipe(Exception):
    """The reader of stdout went away (``| head``)."""


@contextmanager
def output_stream(path: str | None, inputs=(), option: str = "-o"):
    """stdout, or a file written atomically: a temporary file beside it, renamed only on success (a
    symbolic link's target is the file replaced). A path that exists but is not a regular file (a FIFO,
    /dev/stdout) is written directly. See :func:`check_output` for what is refused."""
    if path is None or path == "-":
        if sys.stdout is None:
            raise NwalignError(f"standard output is closed: give {option} FILE")
        try:
            yield sys.stdout
            sys.stdout.flush()
        except BrokenPipeError:  # not an OSError past here: Click would turn it into exit status 1
            raise ClosedPipe() from None
        except OSError as exc:
            _full(exc, "stdout")
        return
    check_output(path, inputs, option)
    if _special(path):
        try:
            with open(path, "wb") as raw, _text(raw, path) as handle:
                yield handle
        except OSError as exc:
            _full(exc, f"{option} {path}")
        return
    target = os.path.realpath(path)
    fd, tmp = _temporary_beside(target, f"{option} {path}")
    try:
        with os.fdopen(fd, "wb") as raw, _text(raw, path) as handle:
            yield handle
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; a result file gets the usual permissions
        os.replace(tmp, target)
    except BaseException as exc:
        os.unlink(tmp)
        if isinstance(exc, OSError):
            _full(exc, f"{option} {path}")
        raise


def _text(raw, path: str):
    """A text stream over the binary file ``raw``: gzip-compressed when ``path`` ends in ``.gz`` (ISA-L's
    deflate where python-isal is installed, else zlib's), plain otherwise."""
    import io

    if path.endswith(".gz"):
        try:
            from isal import igzip as gzip
        except ImportError:
            import gzip
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw, mode="wb", mtime=0), encoding="utf-8", newline="\n")
    return io.TextIOWrapper(raw, encoding="utf-8", newline="\n", write_through=False)


def _temporary_beside(target: str, where: str, suffix: str = "") -> tuple[int, str]:
    """A new temporary file in ``target``'s directory (fd, name); a directory that takes no new file (such
    as /proc) is an error naming the user's path (``where``), not the temporary file's name."""
    try:
        return tempfile.mkstemp(prefix=".nwalign-", suffix=suffix, dir=os.path.dirname(target))
    except OSError as exc:
        raise NwalignError(f"{where}: cannot write ({exc.strerror or exc})") from None


_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EIO)


def _full(exc: OSError, where: str) -> None:
    """An output that could not be written (a full disk or quota, a read-only file system) in one line
    naming it; any other OSError goes on as it is."""
    if exc.errno in _FULL:
        raise NwalignError(f"{where}: cannot write ({exc.strerror})") from None
    raise exc


def fill_distances(dist, block, n_a: int, n_b: int | None) -> None:
    """Put a block's distances (1 - identity, pair order) into the matrix: both halves within one set."""
    import numpy as np

    from nwalign.plan.pairorder import pair_batches  # NumPy's side: loaded with the matrix only

    if block.stop == block.start:
        return
    ij = np.concatenate(list(pair_batches(n_a, n_b, block.stop - block.start, (block.start, block.stop))))
    dist[ij[:, 0], ij[:, 1]] = block.distances
    if n_b is None:
        dist[ij[:, 1], ij[:, 0]] = block.distances


@contextmanager
def distance_matrix(path: str | None, shape: tuple[int, int], names: list[str]):
    """The distance matrix to fill (None without --matrix-out). A .npy is a memory map of a temporary file
    beside ``path`` (so 25,000 sequences need no 2.5 GB of RAM), renamed on success; a PHYLIP matrix
    (names cut or padded to 10 characters, as PHYLIP reads them, and kept distinct: :func:`phylip_names`) is
    written from memory at the end."""
    import numpy as np

    if path is None:
        yield None
        return
    if path.endswith(".phy"):
        dist = np.zeros(shape, dtype=np.float32)
        yield dist
        with output_stream(path, option="--matrix-out") as out:
            phylip_matrix(out, names, dist)
        return
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise NwalignError(f"{path}: directory {directory} does not exist")
    fd, tmp = _temporary_beside(os.path.join(directory, "x.npy"), f"--matrix-out {path}", suffix=".npy")
    os.close(fd)
    try:
        dist = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.float32, shape=shape)
        _reserve(tmp, path)  # a sparse map on a full disk ends in SIGBUS after all the work
        yield dist
        dist.flush()
        del dist
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _reserve(tmp: str, path: str) -> None:
    """Allocate a memory-mapped file's blocks now (where the file system can), so that a full disk is
    said at once, in one line, instead of a bus error when the map is written."""
    try:
        with open(tmp, "r+b") as handle:
            os.posix_fallocate(handle.fileno(), 0, os.path.getsize(tmp))
    except AttributeError:  # no posix_fallocate on this system
        return
    except OSError as exc:
        if exc.errno in (errno.EOPNOTSUPP, errno.EINVAL):  # a file system that cannot: go on as before
            return
        raise NwalignError(f"--matrix-out {path}: cannot reserve {os.path.getsize(tmp)} bytes ({exc.strerror})") \
            from None


def phylip_matrix(out, names: list[str], dist) -> None:
    """A square distance matrix in PHYLIP's format (names cut or padded to 10 characters, kept distinct:
    :func:`phylip_names`)."""

    out.write(f"{len(names)}\n")
    for name, row in zip(phylip_names(names), dist):
        out.write(f"{name:<10} " + " ".join(f"{v:.6f}" for v in row) + "\n")


def phylip_names(names: list[str], width: int = 10) -> list[str]:
    """Names cut to PHYLIP's ``width`` characters and still distinct: where cuts would coincide, a name
    keeps its first characters and ends in ``~`` and its 1-based row number (``Bacteria;Proteo...`` in
    row 12 becomes ``Bacteri~12``), and where that too is taken (by a name given so), ``~12-1``, ``~12-2``...

    >>> phylip_names(["abcdef", "abcdeg", "abc~2"], width=5)
    ['abc~1', 'a~2-1', 'abc~2']
    """
    from collections import Counter

    cut = [n[:width] for n in names]
    clash = {c for c, n in Counter(cut).items() if n > 1}
    used = {c for c in cut if c not in clash}
    out = []
    for k, (name, c) in enumerate(zip(names, cut), start=1):
        if c in clash:
            tries = (f"~{k}" if j == 0 else f"~{k}-{j}" for j in itertools.count())
            c = next(cand for cand in (name[:max(0, width - len(tag))] + tag for tag in tries) if cand not in used)
            used.add(c)
        out.append(c)
    return out
