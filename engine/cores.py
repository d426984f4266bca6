"""How many cores the heavy loops use: ``NUMBA_NUM_THREADS`` where it is set, else all of them.

numba reads the variable itself (its ``prange`` kernels), and the engine's own thread pools and
process pools follow it, so one setting bounds them all. numba only warns about a value it cannot
read and stops with a traceback at 0, so the CLI and ``./lab dagster`` check it first
(:func:`configured_threads`), naming the variable and the rule.
"""

from __future__ import annotations

import os

from engine.config import ConfigError

THREADS_VARIABLE = "NUMBA_NUM_THREADS"


def configured_threads() -> int:
    """The cores to use: ``NUMBA_NUM_THREADS`` (a whole number ≥ 1) if set and not empty, else
    every core of the machine. Raises :class:`~engine.config.ConfigError` for any other value."""
    raw = os.environ.get(THREADS_VARIABLE, "").strip()
    if not raw:
        return os.cpu_count() or 1
    try:
        threads = int(raw)
    except ValueError:
        threads = 0
    if threads < 1:
        raise ConfigError(THREADS_VARIABLE, "must be a whole number of threads ≥ 1 (or unset: every core)", raw)
    return threads
