"""The report of ``nwalign bench``: rows as a table (Rich), JSON, TSV and a plot."""

from __future__ import annotations

import json
from dataclasses import asdict

from nwalign.errors import NwalignError
from nwalign.bench.harness import Row


def rows_to_tsv(rows: list[Row]) -> str:
    cols = [f for f in Row.__dataclass_fields__ if f != "versions"]
    lines = ["\t".join(cols)]
    for r in rows:
        d = asdict(r)
        lines.append("\t".join("" if d[c] is None else (f"{d[c]:.6g}" if isinstance(d[c], float) else str(d[c]))
                               for c in cols))
    return "\n".join(lines) + "\n"


def plot(rows: list[Row], path: str) -> None:
    """Time and GCUPS against size (log axes), one line per kernel."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise NwalignError("--plot needs matplotlib (pip install nwalign[bench])") from None
    fig, (ax_t, ax_g) = plt.subplots(1, 2, figsize=(11, 4.2))
    for kernel in dict.fromkeys(r.kernel for r in rows):
        pts = sorted((r.query_length, r.median_s, r.gcups) for r in rows if r.kernel == kernel)
        x = [p[0] for p in pts]
        ax_t.plot(x, [p[1] for p in pts], marker="o", label=kernel)
        ax_g.plot(x, [p[2] for p in pts], marker="o", label=kernel)
    for ax, label in ((ax_t, "median time (s)"), (ax_g, "GCUPS")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("query length (residues)")
        ax.set_ylabel(label)
        ax.grid(True, which="both", alpha=0.3)
    ax_g.legend(fontsize=7, loc="best")
    device = next((r.device for r in rows if r.device != "cpu"), "cpu")
    fig.suptitle(f"nwalign bench ({device}, {rows[0].mode if rows else ''})")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def rows_to_json(rows: list[Row]) -> str:
    """The rows as a JSON array of objects (every :class:`Row` field)."""
    return json.dumps([asdict(r) for r in rows], indent=1)


def table(rows: list[Row], workload: str, mode: str, score_only: bool):
    """A Rich table of the rows: median (min-max) seconds, GCUPS, speedups and verification per kernel
    (allpairs: its configuration, pairs and pairs per second)."""
    from rich.table import Table

    mode = rows[0].mode if rows else mode or ("local" if workload == "search" else "global")
    what = f"search, {mode}, score only" if workload == "search" else f"allpairs, {mode}, score only" \
        if workload == "allpairs" else f"{workload}, {mode}, {'score only' if score_only else 'traceback'}"
    out = Table(title=f"nwalign bench: {what}")
    ap = workload == "allpairs"
    cols = ("kernel", "config", "mean length", "pairs", "median s (min-max)", "pairs/s", "GCUPS", "vs cpu",
            "verified") if ap else \
        ("kernel", "query x target", "median s (min-max)", "GCUPS", "vs cpu", "vs serial", "verified")
    for col in cols:
        out.add_column(col, justify="left" if col in ("kernel", "query x target", "config") else "right")
    for r in rows:
        timing = f"{r.median_s:.4g} ({r.min_s:.3g}-{r.max_s:.3g})"
        vs_cpu = "" if r.speedup_cpu is None else f"{r.speedup_cpu:.3g}x"
        ok = "yes" if r.verified else "[red]NO[/red]"
        if ap:
            out.add_row(r.kernel, r.config, str(r.query_length), str(r.pairs), timing, f"{r.pairs_per_s:,.0f}",
                        f"{r.gcups:.3g}", vs_cpu, ok)
        else:
            out.add_row(r.kernel, f"{r.query_length} x {r.target_length}", timing, f"{r.gcups:.3g}", vs_cpu,
                        "" if r.speedup_serial is None else f"{r.speedup_serial:.3g}x", ok)
    return out
