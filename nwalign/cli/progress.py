"""Progress on stderr: a live status line and Rich progress bars, only when stderr is a terminal."""

from __future__ import annotations

import sys
import time


def status(label: str, quiet: bool):
    """A one-line live status on stderr for runs whose total is not known ahead (terminals only, not -q).
    Returns update(row): a bench Row to report, or None to close the line."""
    if quiet or not sys.stderr.isatty():
        return lambda row: None
    from rich.console import Console

    live = Console(stderr=True).status(f"{label}: starting")
    live.start()
    count = [0]

    def update(row) -> None:
        if row is None:
            live.stop()
            return
        count[0] += 1
        live.update(f"{label}: {count[0]} measured; last {row.kernel}, {row.query_length} x {row.target_length}: "
                    f"{row.gcups:.3g} GCUPS")
    return update


def progress(label: str, total: int, quiet: bool, unit: str = "", fraction: bool = False, tasks=None):
    """A Rich progress bar on stderr (done / total, or with ``unit`` "cells" the rate in GCUPS; the share
    done and the time left), only when stderr is a terminal and not ``-q``. Returns advance(n), or with
    ``fraction`` set(f) for the fraction f (0..1) done; the bar is redrawn at most ten times a second and
    closes when full. ``tasks``: a function giving (tasks done, tasks in all) of a job spread over
    workers, or None while it runs in this process, shown as "k/N tasks"."""
    if quiet or total <= 0 or not sys.stderr.isatty():
        return lambda n: None
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TaskProgressColumn, TextColumn,
                               TimeRemainingColumn)

    if unit == "cells":  # DP cells: the share done and the rate in GCUPS, not 12-digit counts
        counts = (TextColumn("{task.fields[gcups]}"), TextColumn("{task.fields[tasks]}"))
    else:
        counts = (MofNCompleteColumn(), TextColumn(unit))
    bar = Progress(TextColumn(label), BarColumn(), *counts, TaskProgressColumn(), TimeRemainingColumn(),
                   console=Console(stderr=True), transient=True)
    task = bar.add_task(label, total=total, gcups="", tasks="")
    bar.start()
    state = {"done": 0, "at": 0.0, "start": time.monotonic()}

    def advance(n) -> None:
        state["done"] = int(total * n) if fraction else state["done"] + n
        now = time.monotonic()
        if state["done"] >= total or now - state["at"] > 0.1:
            rate = state["done"] / max(now - state["start"], 1e-9) / 1e9
            counted = tasks() if tasks is not None else None
            bar.update(task, completed=state["done"], gcups=f"{rate:.1f} GCUPS",
                       tasks=f"{counted[0]}/{counted[1]} tasks" if counted else "")
            state["at"] = now
        if state["done"] >= total:
            bar.stop()
    return advance
