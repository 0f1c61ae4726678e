"""Where a job runs, resolved once before its input is read: in this process (on the CPU engine or one
GPU), one worker process per GPU of this host, or Dask workers (:func:`check_spread`, :func:`local_gpus`),
with the same checks and messages for every command."""

from __future__ import annotations

import dataclasses
import logging
import os

from nwalign import backends
from nwalign.errors import NwalignError
from nwalign.parallel import cluster as scaleout
from nwalign.plan.options import Placement  # noqa: F401  (the doctest makes one)

log = logging.getLogger("nwalign")


def within_machine(placement):
    """``placement`` with at most as many local workers as this machine has cores: more only start
    processes that wait (``--workers 99999999999999999999`` once grew to 24 GB before the kernel killed it;
    ``--workers 999`` was still starting after two minutes). Said once where it is capped.

    >>> within_machine(Placement(workers=10**20)).workers == (os.cpu_count() or 1)
    True
    """
    cores = os.cpu_count() or 1
    if placement.workers == 1:
        log.info("--workers 1: the job runs in this process (2 or more start worker processes)")
    if placement.workers <= cores:
        return placement
    log.warning("warning: --workers %d: this machine has %d CPU cores; %d local workers (more hosts: "
                "--scheduler)", placement.workers, cores, cores)
    return dataclasses.replace(placement, workers=cores)


def check_spread(workers: int, scheduler: str | None, client, devices, backend: str) -> bool:
    """Whether a job runs on Dask workers it is given (``workers`` > 1 local CPU processes, a running
    cluster at ``scheduler``, or a ``distributed.Client``); the combinations no job accepts refused.

    Raises:
        NwalignError: ``devices`` named with workers/scheduler/client, ``backend`` cuda with local
            workers (those run the CPU engine), an empty scheduler, or a scheduler file that does not exist
            (Dask would wait for it to appear).
    """
    if scheduler is not None and not scheduler.strip():
        raise NwalignError("scheduler: give an address (tcp://HOST:PORT) or a scheduler file (*.json)",
                           cli="--scheduler: give an address (tcp://HOST:PORT) or a scheduler file (*.json)")
    if scheduler is not None and scheduler.endswith(".json"):
        _check_scheduler_file(scheduler)
    spread = workers > 1 or scheduler is not None or client is not None
    if spread and devices not in (None, "auto"):
        raise NwalignError("devices and workers/scheduler/client: choose one",
                           cli="--devices and --workers/--scheduler: choose one")
    if spread and backends.for_workers(backend).on_gpu and workers > 1:
        raise NwalignError("workers run the CPU engine: for GPUs use devices, or a cluster of GPU workers "
                           "(scheduler or client) with backend 'cuda'", cli="--workers runs the CPU engine: "
                           "for GPUs use --devices, or --scheduler with --backend cuda")
    return spread


def local_gpus(devices, backend: str, device: int, cells: int | None) -> tuple[int, list[int] | None]:
    """(device, gpus) of a job on this host: ``gpus`` two or more GPUs to run one worker process each
    (:func:`nwalign.parallel.cluster.resolve_devices`, ``cells`` the job's DP cells for ``devices`` auto), or
    None with ``device`` the one GPU (or the CPU's backend) of a job in this process.

    Raises:
        NwalignError: GPUs named that do not exist or cannot be used.
    """
    gpus = scaleout.usable(scaleout.resolve_devices(devices, backend, device, cells), devices)
    if gpus is not None and len(gpus) == 1:
        return gpus[0], None
    return device, gpus


def _check_scheduler_file(path: str) -> None:
    """A scheduler file exists and names an address (Dask waits for a missing or unfinished one to be
    written, up to its connect timeout)."""
    import json

    if not os.path.isfile(path):
        raise NwalignError(f"scheduler {path}: no such scheduler file", cli=f"--scheduler {path}: no such scheduler file")
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            address = json.load(handle).get("address")
    except (OSError, ValueError, AttributeError):
        address = None
    if not isinstance(address, str) or not address:
        why = "not a Dask scheduler file (no JSON object with an address)"
        raise NwalignError(f"scheduler {path}: {why}", cli=f"--scheduler {path}: {why}")
