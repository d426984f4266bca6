"""Equity models: finishing matrices and payoffs (SPEC §4).

Every model maps a stack vector ``x`` (n players, any positive scale) to the **finishing
matrix** ``P`` (float64, shape (n, n)): rows are the players in the order given, columns the
places 1..n, and ``P[i, k]`` is the probability that player i finishes in place k + 1. Rows and
columns sum to 1, and all three models give ``P[i, 0] = x_i / sum(x)`` exactly (up to rounding):

* **Harville** (Malmuth-Harville, "ICM"): places are handed out from 1st downwards; the next
  place goes to a remaining player with probability proportional to his stack. Computed by a DP
  over the set S of players already placed (the order inside S is irrelevant): if ``pr[S]`` is
  the probability that S took places 1..|S|, remaining player i takes place |S| + 1 with
  probability ``pr[S] * x_i / x(rest)``. O(n·2^n) time, 2^n memory; up to 20 players.
* **Weitzman** (Malmuth-Weitzman): players are eliminated from last place upwards; the next
  player out is chosen with probability proportional to 1 / (current stack), and his *current*
  stack is split evenly among the survivors. Every elimination gives every survivor the same
  amount, so after the set E has been eliminated each survivor holds ``x_j + c(E)`` with a
  common bonus, and chip conservation fixes it: ``c(E) = x(E) / (n - |E|)``. Survivor stacks
  therefore depend only on E, and a DP over subsets of eliminated players is exact. O(n·2^n);
  up to 20 players.
* **Roberts**: the next player out is chosen with probability proportional to
  ``(1/s_i²) · Σ_{j≠i} 1/s_j`` (current stacks s); his stack goes to the survivors in
  proportion to 1/s_j. Stacks depend on the elimination order, so this is a depth-first walk
  over all elimination orders (≈ e·n!/2 nodes); up to 9 players.

Why P(win) is exactly proportional for Weitzman and Roberts: in both processes every
player's stack is a martingale. Weitzman: with p_i = (1/s_i)/H, H = Σ 1/s, the expected
change of s_j is Σ_{i≠j} p_i s_i/(k-1) − p_j s_j = ((k-1)/(k-1) − 1)/H = 0. Roberts: with
w_i = (1/s_i²)Σ_{l≠i}1/s_l, p_i s_i / Σ_{l≠i}1/s_l = (1/s_i)/W, so the expected inflow of j is
(1/s_j)Σ_{i≠j}(1/s_i)/W = w_j s_j / W = p_j s_j, its expected outflow. The last survivor holds
everything, so P(j wins) = x_j / Σx.

Public API: :func:`harville`, :func:`weitzman`, :func:`roberts`, :func:`finishing_matrix`
(single stack vector, dispatch by name), :func:`finishing_matrices` (batch over the rows of an
(m, n) array, numba ``prange`` over rows), :func:`payoffs`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike
from numba import njit, prange

from engine.config import MODELS
MIN_PLAYERS = 2
MAX_PLAYERS = {"harville": 20, "weitzman": 20, "roberts": 9}


# --------------------------------------------------------------------------------------------
# kernels (one stack vector x, float64, n >= 2; P zero-filled (n, n) output)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _subset_tables(x):
    """sums[S] = Σ_{i∈S} x_i and cnt[S] = |S| for all subsets S of range(n)."""
    n = x.shape[0]
    size = 1 << n
    sums = np.empty(size)
    cnt = np.empty(size, np.int8)
    sums[0] = 0.0
    cnt[0] = 0
    for i in range(n):
        b = 1 << i
        xi = x[i]
        for s in range(b):
            sums[s | b] = sums[s] + xi
            cnt[s | b] = cnt[s] + 1
    return sums, cnt


# De Bruijn lookup: index of the single set bit of ``low`` (a power of two below 2^32)
_DEBRUIJN = np.zeros(32, np.int64)
for _i in range(32):
    _DEBRUIJN[((1 << _i) * 0x077CB531 & 0xFFFFFFFF) >> 27] = _i
del _i


@njit(cache=True, inline="always")
def _bit_index(low):
    return _DEBRUIJN[((low * 0x077CB531) & 0xFFFFFFFF) >> 27]


@njit(cache=True)
def _harville_kernel(x, P):
    n = x.shape[0]
    full = (1 << n) - 1
    sums, cnt = _subset_tables(x)
    prob = np.zeros(full + 1)
    prob[0] = 1.0
    for S in range(full):  # S = players already placed (1st .. |S|-th)
        rest = full ^ S
        f = prob[S] / sums[rest]  # sum of the remaining stacks, no cancellation
        k = cnt[S]
        while rest:  # every remaining player i takes place |S| + 1 with prob ∝ x_i
            low = rest & (-rest)
            i = _bit_index(low)
            t = f * x[i]
            P[i, k] += t
            prob[S | low] += t
            rest ^= low


@njit(cache=True)
def _weitzman_kernel(x, P):
    n = x.shape[0]
    full = (1 << n) - 1
    sums, cnt = _subset_tables(x)
    prob = np.zeros(full + 1)
    inv = np.empty(n)
    prob[0] = 1.0
    for E in range(full):  # E = players already eliminated (last .. (n-|E|+1)-th place)
        k = n - cnt[E]  # survivors; the next one out finishes in place k
        c = sums[E] / k  # common bonus every survivor has received
        h = 0.0
        rest = full ^ E
        while rest:
            low = rest & (-rest)
            i = _bit_index(low)
            v = 1.0 / (x[i] + c)
            inv[i] = v
            h += v
            rest ^= low
        f = prob[E] / h
        rest = full ^ E
        while rest:  # survivor i is out next with probability ∝ 1 / (x_i + c)
            low = rest & (-rest)
            i = _bit_index(low)
            t = f * inv[i]
            P[i, k - 1] += t
            if k > 1:
                prob[E | low] += t
            rest ^= low


@njit(cache=True)
def _roberts_weights(s, mask, w, n):
    """Fill w[j] (alive j) with (1/s_j²)·Σ_{l≠j} 1/s_l; return Σ w."""
    h = 0.0
    for j in range(n):
        if mask & (1 << j):
            h += 1.0 / s[j]
    tot = 0.0
    for j in range(n):
        if mask & (1 << j):
            v = 1.0 / s[j]
            wj = v * v * (h - v)
            w[j] = wj
            tot += wj
    return tot


@njit(cache=True)
def _roberts_kernel(x, P):
    n = x.shape[0]
    # per-depth state of an explicit depth-first walk over elimination orders
    s = np.zeros((n, n))  # s[d] = current stacks after d eliminations
    w = np.zeros((n, n))  # elimination weights at depth d
    wt = np.zeros(n)  # Σ w at depth d
    pr = np.zeros(n)  # probability of the path to depth d
    mask = np.zeros(n, np.int64)  # alive players at depth d
    nxt = np.zeros(n, np.int64)  # next candidate to eliminate at depth d
    for j in range(n):
        s[0, j] = x[j]
    mask[0] = (1 << n) - 1
    pr[0] = 1.0
    if n > 2:
        wt[0] = _roberts_weights(s[0], mask[0], w[0], n)
    d = 0
    while d >= 0:
        k = n - d
        m = mask[d]
        if k == 2:
            # two left: a is out with probability s_b / (s_a + s_b) (the general rule reduces to it)
            a = -1
            b = -1
            for j in range(n):
                if m & (1 << j):
                    if a < 0:
                        a = j
                    else:
                        b = j
            sa = s[d, a]
            sb = s[d, b]
            p = pr[d]
            qa = p * sa / (sa + sb)
            qb = p * sb / (sa + sb)
            P[a, 0] += qa
            P[a, 1] += qb
            P[b, 0] += qb
            P[b, 1] += qa
            d -= 1
            continue
        i = nxt[d]
        while i < n and (m & (1 << i)) == 0:
            i += 1
        if i >= n:
            d -= 1
            continue
        nxt[d] = i + 1
        q = pr[d] * w[d, i] / wt[d]
        P[i, k - 1] += q
        # child: i is out, his stack goes to the survivors in proportion to 1/s_j
        m2 = m & ~(1 << i)
        r = 0.0
        for j in range(n):
            if m2 & (1 << j):
                r += 1.0 / s[d, j]
        g = s[d, i] / r
        for j in range(n):
            if m2 & (1 << j):
                s[d + 1, j] = s[d, j] + g / s[d, j]
            else:
                s[d + 1, j] = 0.0
        d += 1
        mask[d] = m2
        pr[d] = q
        nxt[d] = 0
        if k - 1 > 2:
            wt[d] = _roberts_weights(s[d], m2, w[d], n)


@njit(cache=True)
def _kernel(model_id, x, P):
    if model_id == 0:
        _harville_kernel(x, P)
    elif model_id == 1:
        _weitzman_kernel(x, P)
    else:
        _roberts_kernel(x, P)


@njit(cache=True)
def _single(model_id, x):
    n = x.shape[0]
    P = np.zeros((n, n))
    _kernel(model_id, x, P)
    return P


@njit(cache=True, parallel=True)
def _batch(model_id, X, out):
    for r in prange(X.shape[0]):
        _kernel(model_id, X[r], out[r])


# --------------------------------------------------------------------------------------------
# validation and public API
# --------------------------------------------------------------------------------------------


def _model_id(model: str) -> int:
    if not isinstance(model, str) or model not in MODELS:
        raise ValueError(f"model must be one of {', '.join(MODELS)}; got {model!r}")
    return MODELS.index(model)


def _check_stacks(stacks, model: str, ndim: int) -> np.ndarray:
    try:
        x = np.asarray(stacks, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"stacks must be numeric; got {stacks!r}") from exc
    if x.ndim != ndim:
        shape = "a 1-D vector (n,)" if ndim == 1 else "a 2-D array (m, n)"
        raise ValueError(f"stacks must be {shape}; got shape {x.shape}")
    n = x.shape[-1]
    hi = MAX_PLAYERS[model]
    if not MIN_PLAYERS <= n <= hi:
        raise ValueError(
            f"stacks must have {MIN_PLAYERS}..{hi} players for model {model!r}; got {n}"
        )
    if not np.all(np.isfinite(x)):
        raise ValueError("stacks must be finite (no NaN or inf)")
    if not np.all(x > 0):
        raise ValueError("stacks must be > 0 (every player holds chips)")
    return np.ascontiguousarray(x)


def finishing_matrix(model: str, stacks: ArrayLike) -> np.ndarray:
    """Finishing matrix (n, n) of one stack vector under ``model`` (one of :data:`MODELS`)."""
    mid = _model_id(model)
    x = _check_stacks(stacks, model, 1)
    return _single(mid, x)


def harville(stacks: ArrayLike) -> np.ndarray:
    """Malmuth-Harville (ICM) finishing matrix; 2..20 players."""
    return finishing_matrix("harville", stacks)


def weitzman(stacks: ArrayLike) -> np.ndarray:
    """Malmuth-Weitzman finishing matrix; 2..20 players."""
    return finishing_matrix("weitzman", stacks)


def roberts(stacks: ArrayLike) -> np.ndarray:
    """Roberts finishing matrix; 2..9 players."""
    return finishing_matrix("roberts", stacks)


def finishing_matrices(model: str, stacks: np.ndarray) -> np.ndarray:
    """Finishing matrices (m, n, n) for every row of ``stacks`` (m, n), in parallel over rows."""
    mid = _model_id(model)
    X = _check_stacks(stacks, model, 2)
    m, n = X.shape
    out = np.zeros((m, n, n))
    if m:
        _batch(mid, X, out)
    return out


def payoffs(P: np.ndarray, payouts: ArrayLike) -> np.ndarray:
    """Expected prizes v = P @ R.

    ``P`` is one finishing matrix (n, n) or a stack of them (..., n, n); ``payouts`` lists the
    prizes of places 1, 2, … and is padded with zeros to n places. More places than players is
    an error.
    """
    P = np.asarray(P, dtype=np.float64)
    if P.ndim < 2 or P.shape[-1] != P.shape[-2]:
        raise ValueError(f"P must be a finishing matrix of shape (..., n, n); got {P.shape}")
    n = P.shape[-1]
    try:
        R = np.asarray(payouts, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"payouts must be numeric; got {payouts!r}") from exc
    if not np.all(np.isfinite(R)):
        raise ValueError("payouts must be finite")
    if R.size > n:
        raise ValueError(
            f"payouts must not list more places than players: {R.size} places for {n} players"
        )
    full = np.zeros(n)
    full[: R.size] = R
    return P @ full
