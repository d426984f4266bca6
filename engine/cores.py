"""How many cores the heavy loops use: ``NUMBA_NUM_THREADS`` where it is set, else all of them.

numba reads the variable itself (its ``prange`` kernels), and the engine's own thread pools and
process pools follow it, so one setting bounds them all. numba only warns about a value it cannot
read and stops with a traceback at 0, so the CLI and ``./lab dagster`` check it first
(:func:`configured_threads`), naming the variable and the rule.
"""

from __future__ import annotations

import os
import re
import sys

from engine.config import ConfigError

THREADS_VARIABLE = "NUMBA_NUM_THREADS"
MAX_THREADS = 4096
"""The most threads the variable may ask for: numba starts that many workers (a value such as
10²⁰ passed the old check and left a simulation allocating per-thread buffers for a minute)."""


def configured_threads() -> int:
    """The cores to use: ``NUMBA_NUM_THREADS`` (a whole number from 1 to :data:`MAX_THREADS`) if set
    and not blank, else every core of the machine. Raises :class:`~engine.config.ConfigError` for any
    other value. A blank one counts as unset and is removed from the environment, since numba,
    which reads it when first imported, would print a traceback for it."""
    raw = os.environ.get(THREADS_VARIABLE, "").strip()
    if not raw:
        os.environ.pop(THREADS_VARIABLE, None)
        return os.cpu_count() or 1
    threads = int(raw) if re.fullmatch(r"\+?[0-9]{1,9}", raw) else 0  # (ASCII digits; int() takes '٢', '1_0')
    if not 1 <= threads <= MAX_THREADS:
        raise ConfigError(THREADS_VARIABLE, f"must be a whole number of threads from 1 to {MAX_THREADS} (or unset: "
                                            "every core)", raw)
    return threads


def exit_on_bad_threads(prog: str) -> None:
    """Exit with status 2 and ``<prog>: error: NUMBA_NUM_THREADS: <the rule> (got …)`` if the
    variable holds a value :func:`configured_threads` refuses. ``./lab bench`` calls it before a
    benchmark starts: each imports numba first, which fails with a traceback at 0 (and only warns
    about an unreadable value, where the benchmark's own count of threads would then fail)."""
    try:
        configured_threads()
    except ConfigError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
