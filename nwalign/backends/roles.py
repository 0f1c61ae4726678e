"""The roles every engine plays, as protocols: what a job may ask of ``cpu/`` and ``cuda/`` alike.

Each engine (:mod:`nwalign.backends.cpu.engine`, :mod:`nwalign.backends.cuda.engine`) implements
:class:`Engine` in full; the jobs call only these methods and attributes (typing checks them; the tests
check that both engines have every one). One pair, many pairs, all-pairs scores and the banded aligner
are reached through :class:`nwalign.backends.aligner.Aligner`, made for an engine.

Shapes and dtypes: query and database codes are uint8 arrays (one sequence, or a database concatenated
with int64 ``offsets`` of shape (count + 1,)); scores are int64 (count,); a path is the tuple (score,
query_start, query_end, target_start, target_end, ops: uint8) of 0-based half-open coordinates.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Scanner(Protocol):
    """One query at a time against a database the engine holds (Smith-Waterman scores of the query
    against every sequence): ``submit`` then ``result``, up to ``slots`` queries in flight."""

    slots: int            # queries in flight at once (1: submit computes the scores)
    asynchronous: bool    # whether the scan runs while the host works (a GPU's): hits aligned meanwhile
    chunked: bool         # False

    def submit(self, query: np.ndarray) -> object: ...
    def result(self, ticket: object) -> np.ndarray: ...
    def describe(self, longest: int) -> str: ...
    def timing(self) -> str: ...


@runtime_checkable
class ChunkedScanner(Protocol):
    """A database held a chunk at a time (larger than the engine's memory): queries in batches, each batch
    over every chunk in turn, the best candidates per query kept."""

    chunked: bool         # True

    def best(self, queries: list, top: int, progress=None) -> list[tuple[np.ndarray, np.ndarray]]: ...
    def describe(self, longest: int) -> str: ...
    def timing(self) -> str: ...


@runtime_checkable
class HitAligner(Protocol):
    """Full alignments of many (query codes, subject codes) pairs at once: ``submit(pairs).result()`` ->
    one path per pair, in order."""

    def submit(self, pairs: list[tuple[np.ndarray, np.ndarray]]) -> object: ...


@runtime_checkable
class SearchPlace(Protocol):
    """Where a search's database lives on one engine, resolved once per search: made when the database is
    loaded (a GPU's copy starts then, while the queries are read), then asked for one (scanner, hit aligner
    or None) per device once the scoring is known."""

    def upload_to(self, devices: list[int]) -> None: ...
    def leads(self, devices: list[int], codes, scoring, query_lengths: list[int], align: bool) -> list[tuple]: ...


@runtime_checkable
class Engine(Protocol):
    """An engine: its name (for messages and worker tasks), whether it runs on a GPU, and its roles."""

    name: str
    on_gpu: bool

    def search_place(self, database, kernel: str, gpu_memory: int | None, threads: int,
                     sort: bool = True) -> SearchPlace: ...
    def shard_scanner(self, sub: np.ndarray, offsets: np.ndarray, scoring, threads: int,
                      held=None) -> Scanner | ChunkedScanner: ...
    def hold_shard(self, sub: np.ndarray, offsets: np.ndarray, preloaded=None): ...
    def hit_aligner(self, scoring, device: int) -> HitAligner | None: ...
    def use(self, device: int) -> None: ...
    def preload_database(self, codes: np.ndarray, offsets: np.ndarray): ...
    def pair_options(self, kernel: str, block, shared: bool, device: int, max_memory, spread: tuple): ...
    def check_traceback(self, m: int, n: int, budget: int) -> None: ...
    def one_query_scorer(self, codes: np.ndarray, offsets: np.ndarray, scoring): ...
    def pair_wave(self, codes: list, scoring, kernel: str, slice_k, block, device: int, total: int) -> int: ...


def roles_of(engine) -> list[str]:
    """The :class:`Engine` members that ``engine`` lacks (empty: it plays every role).

    >>> from nwalign.backends import named
    >>> roles_of(named("cpu")), roles_of(named("cuda"))
    ([], [])
    """
    wanted = [name for name in dir(Engine) if not name.startswith("_")] + list(Engine.__annotations__)
    return sorted({name for name in wanted if not hasattr(engine, name)})
