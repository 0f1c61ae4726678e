"""The ``nwalign`` command group, and running it: exit codes, one-line errors, a closed pipe, signals."""

from __future__ import annotations

import os
import sys

import click

from nwalign.parallel import localworkers
from nwalign import __version__
from nwalign.errors import NwalignError, WorkerLost
from nwalign.output.files import ClosedPipe


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="nwalign")
def cli():
    """Exact pairwise sequence alignment (Needleman-Wunsch, Smith-Waterman, semi-global).

    Reads FASTA (plain, gzip, bzip2 or xz; '-' for stdin), writes results to stdout, logs to stderr.
    Run 'nwalign COMMAND --help' for a command's options.
    """


def _terminate(signum, frame):
    # SIGTERM / SIGHUP end the run like an error would, so that temporary output files are removed; Dask
    # workers started here are killed first (an orderly close takes seconds).
    localworkers.stop_now()
    raise SystemExit(128 + signum)


def _interrupt(signum, frame):
    localworkers.stop_now()
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 success, 2 bad input or usage, 1 other failure, 128 + N when
    stopped by signal N)."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, _terminate)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _interrupt)
    try:
        _check_environment()
        # Without standalone mode Click returns (not raises) the code of a click.exceptions.Exit.
        code = cli.main(args=argv, prog_name="nwalign", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except NwalignError as exc:
        click.echo(f"nwalign: error: {exc.cli}", err=True)  # the line that names command-line options
        return 2
    except click.exceptions.NoArgsIsHelpError as exc:
        click.echo(exc.ctx.get_help() if exc.ctx else str(exc), err=True)
        return 2
    except click.UsageError as exc:
        click.echo(f"nwalign: error: {exc.format_message()}", err=True)
        return 2
    except click.ClickException as exc:
        click.echo(f"nwalign: error: {exc.format_message()}", err=True)
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.Abort:
        click.echo("nwalign: interrupted", err=True)
        return 130
    except KeyboardInterrupt:
        click.echo("nwalign: interrupted", err=True)
        return 130
    except (BrokenPipeError, ClosedPipe):
        return _closed_pipe()
    except SystemExit as exc:
        # Click answers a closed pipe it sees itself with exit status 1 after wrapping the streams.
        if exc.code == 1 and type(sys.stdout).__name__ == "PacifyFlushWrapper":
            return _closed_pipe()
        if localworkers.stopped and isinstance(exc.code, int):  # a signal: leave at once (see entry)
            return exc.code
        raise
    except WorkerLost as exc:
        click.echo(f"nwalign: error: {exc}", err=True)
        return 1
    except OSError as exc:  # a file that cannot be opened or written: what and where, in one line
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"nwalign: error: {where}{exc.strerror or exc}", err=True)
        return 2
    except MemoryError:
        command = next((a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("-")), "")
        hint = {"pair": "lower --max-memory or align smaller pieces", "bench": "use smaller --sizes or --count",
                "allpairs": "lower --threads or use fewer or shorter sequences"}.get(command, "use a smaller input")
        click.echo(f"nwalign: error: out of memory; {hint}", err=True)
        return 2


def _closed_pipe() -> int:
    """The reader went away (``| head``): stop quietly with the shell's status for SIGPIPE, 141, as a
    command killed by it would (the Python docs' SIGPIPE note: send the rest of the output to devnull)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.__stdout__.fileno())
    except (OSError, ValueError):
        pass
    return 141


def entry() -> None:
    code = main()
    if localworkers.stopped:
        # Stopped by a signal with Dask workers running: the interpreter's teardown would wait on Dask's
        # event loop and print its complaints about the killed workers. A nanny may have restarted one.
        localworkers.stop_now(last=True)
        _leave(code)
    if "cupy" in sys.modules:
        # Leave without the interpreter's teardown: freeing CuPy's memory pools and the CUDA context took
        # ~0.2 s at the end of every GPU run, and the operating system reclaims both at once.
        _leave(code, closed_pipe_exits_normally=True)
    sys.exit(code)


def _leave(code: int, closed_pipe_exits_normally: bool = False) -> None:
    """Exit now, without the interpreter's teardown, once the output streams are flushed (where they
    cannot be, a closed pipe: the normal exit deals with it, or, after a signal, exit all the same)."""
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except Exception:
        if closed_pipe_exits_normally:
            sys.exit(code)
    os._exit(code)


def _check_environment() -> None:
    """Refuse an environment the engines cannot start in, in one line before any work (Numba raised a
    ValueError traceback at its first import with ``NUMBA_NUM_THREADS=0``).

    Raises:
        NwalignError: naming the variable.
    """
    import os

    threads = os.environ.get("NUMBA_NUM_THREADS", "").strip()
    if threads.lstrip("-").isdigit() and int(threads) < 1:
        raise NwalignError(f"NUMBA_NUM_THREADS={threads}: give a positive number of threads, or unset it")
