"""Giving the heap's freed memory back to the operating system.

A resumed layer solve restores every state's record (its certified profile and decision margins,
about 54 KiB a 5-player state) in the main thread, and the solver threads then replace them as
they re-solve the states. glibc keeps the main thread's freed blocks in the main thread's arena,
where the solver threads never allocate, so resident memory grew by what each re-solve replaced:
the 45-unit 5-player layer, resumed from its full checkpoint, grew by about 57 KiB per state in
its second outer iteration (1 GiB every 19,000 states) and would have passed 24 GB before the end.
``malloc_trim(0)`` hands those free pages back (a toy of 40,000 such arrays: 2.05 → 1.09 GiB).
The same holds between the assets, which run in one process: a finished layer's dropped solvers
stayed resident (see :class:`engine.solver_pool.SolverPool`, which trims before every heavy loop).

The trim hands back whole free pages only, and a restore interleaves each state's records with
small ones that stay (gains, Python objects): the same layer, resumed with a trim at every block
checkpoint, still grew by about 22 KiB per state. So a layer solve writes a state's new records
into the memory of those it replaces (:func:`into_kept`) and the restored pages stay in use: the
low points after the trims then held at 18.7 GiB over the next 7,000 states, where they had
risen from 18.8 to 19.1 GiB over 14,000 (the same outer iteration, stop 43).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

import numpy as np


@functools.cache
def _malloc_trim():
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc (macOS, musl): nothing to do
        return None


def release_free_memory() -> bool:
    """Return the heap's free pages to the operating system (glibc's ``malloc_trim(0)``, a few
    milliseconds to a second on a 20 GiB heap); False where the C library has no such call."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True


def into_kept(kept: np.ndarray | None, new: np.ndarray) -> np.ndarray:
    """``new``'s values in ``kept``'s memory where they fit (same shape and dtype), else a copy of ``new``.

    For a record that replaces ``kept``, which nothing else may hold: the result never shares
    memory with ``new`` (often a view of a thread's workspace)."""
    if kept is new:
        return kept
    if kept is None or kept.shape != new.shape or kept.dtype != new.dtype:
        return new.copy()
    kept[...] = new
    return kept


BYTES_PER_STATE_NODE = 6.2 * 1024
"""Memory a build holds per (state, decision node) of its largest layer while solving it, in
bytes, all in: the `thesis` build's process held 19.3 GiB at most for the 45-unit 5-player layer,
135,751 states × 24 decision nodes (solver state, hand trees, showdown tensors, the lower layers,
Python, Dagster and DuckDB together)."""


def projected_solve_gib(players: int, units: int) -> float:
    """About how much memory (GiB) the solve of a game's largest layer will hold, from the measured
    per-(state, decision node) figure: a game too large for the machine is refused before any work
    instead of running out of memory hours into its solve."""
    from engine.hand import decision_node_count
    from engine.states import n_states

    return n_states(units, players) * decision_node_count(players) * BYTES_PER_STATE_NODE / 2**30


def physical_memory_gib() -> float | None:
    """This machine's physical memory in GiB (None where the OS does not say)."""
    import os

    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError, AttributeError):
        return None


def memory_shortfall(players: int, units: int) -> str | None:
    """Why a game's solve cannot fit this machine's memory, naming the field and the numbers, or
    None where it fits (or where the OS does not say how much memory there is). The CLI's build
    and the Dagster layer assets both refuse such a game before its solve starts."""
    from engine.states import n_states

    need, have = projected_solve_gib(players, units), physical_memory_gib()
    if have is None or need <= have:
        return None
    return (f"units: a {players}-player game of {units} units has {n_states(units, players):,} {players}-player "
            f"states, whose solve would hold about {need:,.1f} GiB; this machine has {have:.1f} GiB "
            f"(choose fewer units or players)")
