"""How a benchmark started from ``./lab bench`` prints and ends.

A benchmark's output is often piped (``| tee bench.log``, ``| head -3``) or sent to a file, where
Python would hold its lines back until the end: a layer projection or a long solve would then show
nothing for minutes. And its user may stop it: with Ctrl-C, or by a reader that stops reading early,
either of which ended in a Python traceback.
"""

from __future__ import annotations

import os
import sys
from typing import Callable, NoReturn

INTERRUPTED_STATUS = 130
"""Exit status after Ctrl-C (128 + SIGINT), as the shell and the jamfold CLI give it."""


def detach_stdout() -> None:
    """Point standard output at the null device, so that Python's flush of it at exit, after its
    reader has gone, raises nothing more."""
    if sys.stdout is not None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def run_benchmark(main: Callable[[], int | None], prog: str) -> NoReturn:
    """Run a benchmark's ``main`` and exit with its status (0 for ``None``).

    Standard output is line-buffered, so each printed figure shows as soon as it is measured even
    when piped. Ctrl-C exits with status 130 and ``<prog>: interrupted`` on standard error (a solve
    given ``--checkpoint`` keeps its finished work there); a reader gone early (``| head -2``) exits
    with status 1; neither prints a traceback."""
    if sys.stdout is not None and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(line_buffering=True)
    try:
        status = main()
        if sys.stdout is not None:
            sys.stdout.flush()  # (here, so that a reader gone early is caught below, not at the exit's flush)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        raise SystemExit(INTERRUPTED_STATUS) from None
    except BrokenPipeError:
        detach_stdout()
        raise SystemExit(1) from None
    raise SystemExit(status or 0)
