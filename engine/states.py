"""Game states and their compact indexing (SPEC §2).

A state with n players is a *composition* of ``units`` into n positive integer parts: the stacks
in acting order for the next hand. There are C(units − 1, n − 1) of them.

**Order.** States of one (units, players) pair are numbered 0 .. C(units−1, n−1) − 1 in
**lexicographic order** of the stack tuple read in acting order: the first stack varies slowest,
smaller stacks come first. For 5 units and 3 players::

    0 (1,1,3)  1 (1,2,2)  2 (1,3,1)  3 (2,1,2)  4 (2,2,1)  5 (3,1,1)

**Rank formula.** Let u_p be the units left before position p (u_0 = units) and r_p = n − p the
parts still to fill. Compositions that agree on positions < p and have a smaller value v < a_p
at position p number Σ_{v=1}^{a_p−1} C(u_p − v − 1, r_p − 2) = C(u_p − 1, r_p − 1) −
C(u_p − a_p, r_p − 1) (hockey-stick identity), so

    index(a) = Σ_{p=0}^{n−2} [ C(u_p − 1, n − p − 1) − C(u_p − a_p, n − p − 1) ].

Only the row's sum and length enter, so a row is always ranked within its own (units, players).
The numba kernels (:func:`state_index_nb`, :func:`state_index_table_nb`) can be called from other
njit code; the plain functions validate their input.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import DTypeLike
from numba import njit, prange

_INT64_MAX = np.iinfo(np.int64).max


# --------------------------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def comb_nb(n, k):
    """Binomial C(n, k) in int64 (0 when k < 0 or k > n); exact while the result fits.

    Each step takes C(n, i) to C(n, i + 1) = C(n, i)·(n − i)/(i + 1) with the division done
    first (quotient and remainder apart), so no intermediate exceeds the result: the plain
    product overflowed for results near 2⁶³ (C(62, 28), or the last 3-player state of
    4,294,967,297 units, ranked negative)."""
    if k < 0 or n < 0 or k > n:
        return np.int64(0)
    if k > n - k:
        k = n - k
    r = np.int64(1)
    for i in range(k):
        q, rem = divmod(r, np.int64(i + 1))
        r = q * (n - i) + rem * (n - i) // (i + 1)
    return r


@njit(cache=True)
def state_index_nb(stacks):
    """Lexicographic rank of one composition (1-D int array, all parts >= 1); no checks."""
    n = stacks.shape[0]
    u = np.int64(0)
    for p in range(n):
        u += stacks[p]
    idx = np.int64(0)
    for p in range(n - 1):
        r = n - p - 1
        a = np.int64(stacks[p])
        idx += comb_nb(u - 1, r) - comb_nb(u - a, r)
        u -= a
    return idx


@njit(cache=True)
def state_index_table_nb(stacks, binom):
    """As :func:`state_index_nb` with a precomputed table ``binom[a, b] = C(a, b)``
    (see :func:`binomial_table`); faster in hot loops."""
    n = stacks.shape[0]
    u = np.int64(0)
    for p in range(n):
        u += stacks[p]
    idx = np.int64(0)
    for p in range(n - 1):
        r = n - p - 1
        a = np.int64(stacks[p])
        idx += binom[u - 1, r] - binom[u - a, r]
        u -= a
    return idx


@njit(cache=True, parallel=True)
def _state_indices_kernel(S, out):
    for i in prange(S.shape[0]):
        out[i] = state_index_nb(S[i])


@njit(cache=True)
def _enumerate_kernel(units, players, out):
    n = players
    a = np.ones(n, np.int64)
    a[n - 1] = units - (n - 1)
    m = out.shape[0]
    for row in range(m):
        for j in range(n):
            out[row, j] = a[j]
        if row == m - 1:
            break
        # successor in lexicographic order: q = last position >= 1 holding more than one unit;
        # raise position q-1 by one and reset the tail to the smallest (1, …, 1, rest).
        q = n - 1
        while a[q] == 1:
            q -= 1
        p = q - 1
        tail = 0
        for j in range(p + 1, n):
            tail += a[j]
        a[p] += 1
        tail -= 1
        for j in range(p + 1, n - 1):
            a[j] = 1
        a[n - 1] = tail - (n - 2 - p)


@njit(cache=True)
def _from_index_kernel(units, players, idx, out):
    u = units
    for p in range(players - 1):
        r = players - p  # parts left, including this one
        v = 1
        while True:
            c = comb_nb(u - v - 1, r - 2)  # compositions of the rest with value v here
            if idx < c:
                break
            idx -= c
            v += 1
        out[p] = v
        u -= v
    out[players - 1] = u


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------


def _check_int(name: str, value, lo: int) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer; got {value!r}")
    v = int(value)
    if v < lo:
        raise ValueError(f"{name} must be >= {lo}; got {v}")
    return v


def _check_game(units, players) -> tuple[int, int]:
    players = _check_int("players", players, 1)
    units = _check_int("units", units, 1)
    if units < players:
        raise ValueError(
            f"units must be >= players (every stack holds at least 1 unit); "
            f"got units={units}, players={players}"
        )
    if math.comb(units - 1, players - 1) > _INT64_MAX:
        raise ValueError(f"too many states for int64 indexing: units={units}, players={players}")
    return units, players


def n_states(units: int, players: int) -> int:
    """Number of states C(units − 1, players − 1) (0 when units < players)."""
    players = _check_int("players", players, 1)
    units = _check_int("units", units, 1)
    return math.comb(units - 1, players - 1)


def binomial_table(max_n: int, max_k: int) -> np.ndarray:
    """int64 table T with T[a, b] = C(a, b) for 0 <= a <= max_n, 0 <= b <= max_k.

    For :func:`state_index_table_nb` on a game with ``units`` and ``players`` use
    ``binomial_table(units, players)``.
    """
    max_n = _check_int("max_n", max_n, 0)
    max_k = _check_int("max_k", max_k, 0)
    if math.comb(max_n, min(max_k, max_n // 2)) > _INT64_MAX:
        raise ValueError(f"binomial table overflows int64: max_n={max_n}, max_k={max_k}")
    T = np.zeros((max_n + 1, max_k + 1), np.int64)
    for a in range(max_n + 1):
        for b in range(min(a, max_k) + 1):
            T[a, b] = math.comb(a, b)
    return T


def enumerate_states(units: int, players: int, dtype: DTypeLike = np.int32) -> np.ndarray:
    """All states of (units, players) as an (n_states, players) array, row i = state i.

    Rows are in lexicographic order (see the module docstring). ``dtype`` is an integer dtype
    that holds ``units`` (int32 by default; int16 is enough up to 32,767 units).
    """
    units, players = _check_game(units, players)
    dt = np.dtype(dtype)
    if dt.kind not in "iu" or units > np.iinfo(dt).max:
        raise ValueError(f"dtype must be an integer dtype that holds {units}; got {dt}")
    m = math.comb(units - 1, players - 1)
    out = np.empty((m, players), dt)
    _enumerate_kernel(units, players, out)
    return out


def _as_compositions(stacks, ndim: int) -> np.ndarray:
    try:
        a = np.asarray(stacks)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"stacks must be integers; got {stacks!r}") from exc
    if a.ndim != ndim:
        shape = "a 1-D vector" if ndim == 1 else "a 2-D array (m, players)"
        raise ValueError(f"stacks must be {shape}; got shape {a.shape}")
    if a.shape[-1] < 1:
        raise ValueError("stacks must have at least 1 player")
    if a.dtype.kind == "f":
        if not (np.all(np.isfinite(a)) and np.all(a == np.round(a))):
            raise ValueError("stacks must be whole units (integers)")
    elif a.dtype.kind not in "iu":
        raise ValueError(f"stacks must be integers; got dtype {a.dtype}")
    if a.size and a.min() < 1:
        raise ValueError("stacks must all be >= 1 unit")
    a = np.ascontiguousarray(a, dtype=np.int64)
    for u in np.unique(a.sum(axis=-1)):
        if math.comb(int(u) - 1, a.shape[-1] - 1) > _INT64_MAX:
            raise ValueError(f"too many states for int64 indexing: units={int(u)}")
    return a


def state_index(stacks: Sequence[int]) -> int:
    """Rank of one state among all states with the same units (= sum) and players (= length)."""
    return int(state_index_nb(_as_compositions(stacks, 1)))


def state_indices(stacks_2d: np.ndarray) -> np.ndarray:
    """Ranks (int64, shape (m,)) of the rows of an (m, players) array; each row is ranked among
    the states with its own sum."""
    a = _as_compositions(stacks_2d, 2)
    out = np.empty(a.shape[0], np.int64)
    if a.shape[0]:
        _state_indices_kernel(a, out)
    return out


def state_from_index(units: int, players: int, idx: int) -> np.ndarray:
    """The state (int64 vector of length ``players``) with rank ``idx``; inverse of
    :func:`state_index`."""
    units, players = _check_game(units, players)
    idx = _check_int("idx", idx, 0)
    m = math.comb(units - 1, players - 1)
    if idx >= m:
        raise ValueError(f"idx must be < n_states({units}, {players}) = {m}; got {idx}")
    out = np.empty(players, np.int64)
    _from_index_kernel(units, players, idx, out)
    return out
