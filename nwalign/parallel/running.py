"""Joining a cluster that is already running (``--scheduler``): the connection with a deadline and a
refusal said at once, the wait for its first worker, Dask's settings checked, and what a lost scheduler
looks like to a client."""

from __future__ import annotations

import logging
import os
import threading

from nwalign.errors import NwalignError

log = logging.getLogger("nwalign")


def lost_connection() -> tuple:
    """Dask's exceptions of a client whose scheduler went away: every future cancelled, the comm closed."""
    import asyncio

    from distributed import client as dask_client
    from distributed.comm.core import CommClosedError

    cancelled = tuple(getattr(dask_client, name) for name in ("FutureCancelledError", "FuturesCancelledError")
                      if hasattr(dask_client, name))
    return cancelled + (asyncio.CancelledError, CommClosedError)


def check_dask_config() -> None:
    """Refuse a Dask setting that Dask cannot read (a ``DASK_*`` environment variable or a Dask config
    file), in one line before any cluster starts: a garbage ``DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT``
    ended in Dask's KeyError traceback.

    Raises:
        NwalignError: naming the setting.
    """
    import dask
    from dask.utils import parse_timedelta

    for key in ("distributed.comm.timeouts.connect", "distributed.comm.timeouts.tcp",
                "distributed.scheduler.idle-timeout", "distributed.worker.lifetime.duration"):
        value = dask.config.get(key, None)
        if value is None:
            continue
        try:
            parse_timedelta(value)
        except (KeyError, ValueError, TypeError) as exc:
            variable = "DASK_" + key.upper().replace(".", "__").replace("-", "_")
            raise NwalignError(f"Dask setting {key} = {value!r} is no time span ({variable}, or a Dask config "
                               f"file): {str(exc).split('. ')[0].strip(repr(''))}") from None


WORKERS_WAIT_SECONDS = 120.0  # how long a running cluster may have no worker (NWALIGN_WORKERS_WAIT)


def wait_for_workers(client, scheduler: str) -> None:
    """Wait until the running cluster has a worker, saying so, for :data:`WORKERS_WAIT_SECONDS` at most
    (``$NWALIGN_WORKERS_WAIT`` seconds where set): a scheduler with no workers once kept a search waiting
    in silence for ever.

    Raises:
        NwalignError: no worker joined in time.
    """
    if client.scheduler_info().get("workers"):
        return
    try:
        wait = float(os.environ.get("NWALIGN_WORKERS_WAIT", WORKERS_WAIT_SECONDS))
    except ValueError:
        wait = WORKERS_WAIT_SECONDS
    log.warning("warning: the cluster at %s has no workers yet; waiting up to %.0f s for one "
                "(NWALIGN_WORKERS_WAIT sets how long)", scheduler, wait)
    try:
        client.wait_for_workers(1, timeout=wait)
    except Exception:  # Dask's TimeoutError (its module differs by version)
        raise NwalignError(f"scheduler {scheduler}: no worker joined in {wait:.0f} s",
                           cli=f"--scheduler {scheduler}: no worker joined in {wait:.0f} s; start workers "
                               "(dask worker ADDRESS) or set NWALIGN_WORKERS_WAIT") from None


CONNECT_SECONDS = 5.0  # the most a running cluster's handshake may take (Dask's own timeout, if shorter)


def refused(scheduler: str, wait: float) -> None:
    """Say at once that nothing listens at a ``tcp://HOST:PORT`` address (Dask retries a refused connection
    until its timeout, then says "Timed out").

    Raises:
        NwalignError: the connection is refused.
    """
    import socket
    from urllib.parse import urlsplit

    if not scheduler.startswith("tcp://"):
        return
    try:
        parts = urlsplit(scheduler)
        host, port = parts.hostname, parts.port
    except ValueError:
        return
    if not host or not port:
        return
    try:
        socket.create_connection((host, port), timeout=wait).close()
    except ConnectionRefusedError:
        why = f"connection refused: no Dask scheduler listens at {host}:{port}"
        raise NwalignError(f"scheduler {scheduler}: {why}", cli=f"--scheduler {scheduler}: {why}") from None
    except OSError:  # unreachable or slow: Dask's own attempt says how
        pass


def connect(Client, scheduler: str):
    """A client of the running cluster at ``scheduler`` (an address, or a ``*.json`` scheduler file), made
    in a thread with a deadline: a refused address took Dask 31 s, and an endpoint that is no Dask
    scheduler (an HTTP server) kept the handshake waiting for ever. Anything that goes wrong is one
    NwalignError; a handshake still hanging at the deadline is left to its daemon thread.

    Raises:
        NwalignError: no answer within the deadline, a refused connection, or not a Dask scheduler.
    """
    import dask
    from dask.utils import parse_timedelta

    wait = min(CONNECT_SECONDS, parse_timedelta(dask.config.get("distributed.comm.timeouts.connect")))
    refused(scheduler, wait)
    # A reply that is not Dask's protocol: Dask logs a CRITICAL traceback before the error that is said here.
    logging.getLogger("distributed.protocol.core").setLevel(logging.CRITICAL + 1)
    got: dict = {}

    def connect():
        try:
            got["client"] = Client(scheduler_file=scheduler, timeout=wait) if scheduler.endswith(".json") else \
                Client(scheduler, timeout=wait)
        except BaseException as exc:  # Dask's own errors, and an AssertionError on a garbage file
            got["error"] = exc

    thread = threading.Thread(target=connect, daemon=True, name="nwalign-connect")
    thread.start()
    thread.join(wait + 2.0)
    if "client" in got:
        return got["client"]
    exc = got.get("error")
    why = f"no Dask scheduler answered within {wait:g} s" if exc is None else \
        f"cannot connect ({type(exc).__name__}: {exc})" if isinstance(exc, (OSError, TimeoutError)) else \
        "not a Dask scheduler (its reply is not Dask's protocol)" if _garbled(exc) else \
        f"not a Dask scheduler ({type(exc).__name__}: {exc})"
    raise NwalignError(f"scheduler {scheduler}: {why}", cli=f"--scheduler {scheduler}: {why}")


def _garbled(exc: BaseException) -> bool:
    """A reply in no protocol Dask reads: a bogus frame length (MemoryError), or bytes msgpack refuses."""
    return isinstance(exc, MemoryError) or type(exc).__module__.startswith("msgpack")
