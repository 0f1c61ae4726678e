"""A job's options as a few typed objects instead of a long list of keywords: the scoring asked for
(:class:`nwalign.plan.prepare.ScoringRequest`), where the job runs (:class:`Placement`), and the job's own
options (``SearchOptions``, ``PairOptions``, ``AllPairsOptions`` beside each job). The command line builds
them once; the Python API also takes their fields as plain keywords (:func:`sort_keywords`).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class Placement:
    """Where a job runs, as asked (the job resolves it once: :mod:`nwalign.parallel.placement`).

    Fields:
        backend: ``auto`` (the GPU when CuPy sees one), ``cuda`` or ``cpu``.
        device: the GPU of a job in this process.
        devices: this host's GPUs to spread over (``auto``, ``all``, or numbers such as ``"0,1"``).
        threads: CPU threads (None: the job's default; 0: every core where the job allows it).
        workers, scheduler, client: Dask workers: a local cluster of ``workers`` CPU-engine processes, the
            running cluster at ``scheduler`` (an address or a scheduler file), or a ``distributed.Client``.
        shared_dir: where temporary ``.nwdb`` files for the workers go (every worker must read it).

    >>> Placement(backend="cpu", threads=2).threads
    2
    """

    backend: str = "auto"
    device: int = 0
    devices: object = None
    threads: int | None = None
    workers: int = 0
    scheduler: str | None = None
    client: object = None
    shared_dir: str | None = None


def sort_keywords(job: str, keywords: dict, *objects) -> list:
    """``objects`` (frozen dataclasses) with each of ``keywords`` given to the one that has a field of its
    name: how a job takes the flat keywords of earlier versions beside its option objects.

    >>> sort_keywords("Search", {"backend": "cpu"}, Placement())[0].backend
    'cpu'

    Raises:
        TypeError: a keyword that no object has (as for an unexpected keyword argument).
    """
    left, out = dict(keywords), []
    for obj in objects:
        mine = {f.name: left.pop(f.name) for f in fields(obj) if f.name in left}
        out.append(replace(obj, **mine) if mine else obj)
    if left:
        raise TypeError(f"{job}() got an unexpected keyword argument {next(iter(left))!r}")
    return out
