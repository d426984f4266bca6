"""Policy evaluation of one layer of the tournament (SPEC §6 (b) and "Finishing probabilities").

Fix a strategy profile for every state of the n-player layer. Each state's hand then ends in
outcome (t, o) — terminal t, showdown order o, in the order of :mod:`engine.game_tree` — with a
known probability P_s(t, o) (``HandSolver.evaluate`` fills it as ``order_probs[t, o]``), and the
value of the player in position p of state s (in $) satisfies

    V[s, p] = Σ_{t,o} P_s(t, o) · ( prize[t, o, p] + [seat ≥ 0] · V_next[next[t, o], seat[t, o, p]] )

where V_next is this layer's own V when nobody busts (``term_next_players == n``) and the value
table of the smaller layer otherwise (layers are solved from 2 players up, so it is known).
Over the m·n pairs (state, position), index ``s*n + p``, this is the linear system

    V = c + P V,      i.e.      (I − P) V = c,

with P the *same-layer* transition matrix (row s*n+p has one entry per outcome that stays in the
layer, at column next*n + seat, duplicates summed) and c the expected $ that leave the layer:
prizes paid now plus values of seats in smaller layers.

**Which solution.** P is substochastic: every row sums to 1 − (probability of leaving the layer
in this hand). A profile can keep chips going round forever (e.g. everybody always folds: the
blinds just circulate), so I − P can be singular and the system can have many solutions; the
values of the profile are the *minimal non-negative* one, V* = Σ_k P^k c, the limit of value
iteration from V = 0 (SPEC §6). We compute it exactly, as follows (:func:`solve_layer`):

1. *Support.* For c ≥ 0, V* is zero on every row that cannot reach (in the graph of P) a row
   with c ≠ 0 — in particular on chains that never leave the layer. Those rows are found by one
   breadth-first search on the reversed graph (:mod:`scipy.sparse.csgraph`) and set to 0.
2. *Solve on the rest.* On the remaining rows R every row can reach a row with c ≠ 0, and such a
   row leaves the layer with positive probability (only outcomes that leave the layer pay prizes
   or carry smaller layers' values), so P restricted to R has spectral radius < 1: I − P_RR is
   non-singular and its unique solution is V* there. Tiny systems are solved with a direct
   sparse LU (SuperLU); all others with restarted GMRES (a numba kernel, warm start allowed),
   because LU fill-in on these matrices is severe (see :data:`DIRECT_MAX_ROWS`). (If a custom
   payoff pays on outcomes that stay in the layer, this guarantee is lost; step 3 still applies.)
3. *Verify.* The result must be finite, satisfy the equations (max-norm residual ≤ 1e-9 × scale),
   be non-negative and at most ``upper`` (every player's total is one exit payment, so V never
   exceeds the largest prize or smaller-layer value an outcome of this layer pays; 1 for
   finishing probabilities). If any check fails — a nearly singular system, e.g. exit
   probabilities around 1e-16 — it falls back to **value iteration** from V = 0 (V ← c + P V),
   which converges monotonically to V* from below, and reports it in ``info``.

**Finishing probabilities** are the same system with one "prize" column per place q: the
probability mass of finishing in place q decided by the outcome (ties: g players sharing g
places get 1/g of each) plus, on leaving the layer, the smaller layer's finishing probability of
the seat. Places are absolute (1 .. players of the whole tournament); the n players of a layer
compete for places 1 .. n. :func:`outcome_place_mass` builds the per-outcome place masses from
:func:`engine.hand.hand_tree`, in the outcome order of :func:`engine.game_tree.compile_hand`.

Units: V in $; finishing probabilities are probabilities; chips do not appear here.
"""

from __future__ import annotations

import math
import warnings
from functools import lru_cache
from itertools import permutations
from typing import Callable, Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph
from numba import njit
from scipy.sparse import linalg as spla

from engine.game_tree import MAX_ORDERS, CompiledHand
from engine.hand import HandTree, hand_tree

__all__ = [
    "layer_transitions",
    "evaluate_layer",
    "finishing_probabilities",
    "solve_layer",
    "value_iteration",
    "gmres",
    "outcome_place_mass",
]

Payoff = Callable[[int, CompiledHand], np.ndarray]

#: rows of (I − P) up to which :func:`solve_layer` uses a direct sparse LU (method "auto"); above
#: it GMRES. SuperLU's fill-in on these matrices is severe: with a 99%-walk profile of the 45-unit
#: game, 2,838 rows took 0.9 s (GMRES 0.01 s), 8,096 rows 29 s (GMRES 0.03 s), 52,976 rows > 9 min
#: (GMRES 0.15 s).
DIRECT_MAX_ROWS = 1_500
#: states per block when flattening hands (bounds the memory of the build)
CHUNK_STATES = 4096
#: tolerance on Σ_{t,o} P_s(t, o) = 1 and on stray probability in unused outcome slots
PROB_TOL = 1e-6


# --------------------------------------------------------------------------------------------
# per-outcome finishing places
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=4096)
def _places_to_mass(places: tuple[float, ...], n_places: int) -> np.ndarray:
    """(n, n_places) mass of each old position on each place from :attr:`Outcome.places`
    (memoised; the returned array is read-only).

    A mean place x shared by g players (g = how many players carry x) covers the places
    x − (g−1)/2 … x + (g−1)/2, each with mass 1/g per player."""
    n = len(places)
    mass = np.zeros((n, n_places))
    for p, x in enumerate(places):
        if x > 0:
            g = sum(1 for y in places if y == x)
            lo = int(round(x - (g - 1) / 2))
            if lo < 1 or lo + g - 1 > n_places:
                raise ValueError(f"place {x} shared by {g} players does not fit places 1..{n_places}")
            mass[p, lo - 1:lo - 1 + g] = 1.0 / g
    mass.flags.writeable = False
    return mass


def outcome_place_mass(stacks: Sequence[int], n_places: int, tree: HandTree | None = None) -> np.ndarray:
    """Finishing places decided by every outcome of the hand at ``stacks``.

    Args:
        stacks: chips per position (acting order) of the state.
        n_places: number of places of the whole tournament (≥ number of players here).
        tree: the state's :func:`engine.hand.hand_tree` if already built (payouts do not matter).

    Returns:
        float64 array ``mass[t, o, p, q]`` (T × 6 × n × n_places): probability mass that old
        position p finishes in place q+1 as decided by outcome o of terminal t (0 for players
        still playing; a tournament winner gets mass 1 on place 1; g players tied on g places
        get 1/g of each). Terminals and outcomes are ordered exactly as in
        :func:`engine.game_tree.compile_hand` (outcomes = permutations of the deal order —
        jammers, then showdown-only players); unused outcome slots are 0.
    """
    stacks = tuple(int(x) for x in stacks)
    n = len(stacks)
    if n_places < n:
        raise ValueError(f"n_places must be >= the number of players ({n}); got {n_places}")
    tree = tree or hand_tree(stacks, ())
    if tuple(tree.stacks) != stacks:
        raise ValueError(f"tree is for stacks {tree.stacks}, not {stacks}")
    T = len(tree.terminals)
    out = np.zeros((T, MAX_ORDERS, n, n_places))
    for t, term in enumerate(tree.terminals):
        # same ordering rule as compile_hand
        jam = tuple(term.jammers)
        showdown_only = tuple(p for p in term.contesting if p not in jam)
        showdown = len(term.contesting) >= 2
        by_order = {o.order: o for o in term.outcomes}
        deal = jam + showdown_only if showdown else ()
        orders = [tuple(deal[i] for i in perm) for perm in permutations(range(len(deal)))] if showdown \
            else [term.outcomes[0].order]
        for o, order in enumerate(orders):
            out[t, o] = _places_to_mass(by_order[order].places, n_places)
    return out


# --------------------------------------------------------------------------------------------
# building the linear system
# --------------------------------------------------------------------------------------------


def _layer_system(hands: Sequence[CompiledHand], order_probs: Sequence[np.ndarray], n: int,
                  lower: dict[int, np.ndarray], payoff: Payoff | None, chunk: int = CHUNK_STATES):
    """(P csr (m·n)², c (m·n, k), upper (k,), columns k, payoff had a column axis), built chunk by
    chunk of states (:data:`CHUNK_STATES`) so that the outcome arrays of a large layer stay small."""
    m = len(hands)
    if len(order_probs) != m:
        raise ValueError(f"order_probs must list one (T, 6) array per state: {len(order_probs)} != {m}")
    if m == 0:
        raise ValueError("the layer has no states")
    lower = {int(key): np.asarray(val, dtype=np.float64) for key, val in lower.items()}
    k = None
    vector_payoff = True
    data_parts, index_parts, rowcount_parts, c_parts = [], [], [], []
    upper = None
    stay_pays = False  # an outcome that stays in the layer pays something (only via a custom payoff)
    for lo in range(0, m, chunk):
        hi = min(m, lo + chunk)
        hs = hands[lo:hi]
        Ts = _outcome_counts(hs, order_probs[lo:hi], n, lo)
        prob, state, sel = _reached_outcomes(hs, order_probs[lo:hi], Ts, lo)
        nxt = np.concatenate([h.term_next for h in hs]).reshape(-1)[sel]
        npl = np.concatenate([h.term_next_players for h in hs]).reshape(-1)[sel]
        seat = np.concatenate([h.term_seat for h in hs]).reshape(-1, n)[sel]
        if payoff is None:
            rew = np.concatenate([h.term_prize for h in hs]).reshape(-1, n, 1)[sel]
            k = 1 if k is None else k
        else:
            rew, k, vector_payoff = _custom_rewards(hs, lo, Ts, sel, n, payoff, k, vector_payoff)
        K = prob.shape[0]
        same = npl == n
        if np.any(rew[same] != 0):
            stay_pays = True
        _add_lower_values(rew, npl, nxt, seat, n, lower, k, vector_payoff)
        hi_val = rew.max(axis=(0, 1)) if K else np.zeros(k)
        upper = hi_val if upper is None else np.maximum(upper, hi_val)
        # c: probability-weighted sum of the exit payments per state
        counts = np.bincount(state, minlength=hi - lo)
        ptr = np.concatenate([[0], np.cumsum(counts)])
        W = sp.csr_matrix((prob, np.arange(K), ptr), shape=(hi - lo, K))
        c_parts.append(np.asarray(W @ rew.reshape(K, n * k)).reshape((hi - lo) * n, k))
        data, idx, rowcount = _same_layer_entries(prob, state, nxt, seat, np.flatnonzero(same), n, m, hi - lo)
        data_parts.append(data)
        index_parts.append(idx)
        rowcount_parts.append(rowcount)
    indptr = np.concatenate([[0], np.cumsum(np.concatenate(rowcount_parts))])
    idx = np.concatenate(index_parts)
    itype = np.int32 if max(m * n, idx.size) < 2**31 else np.int64
    P = sp.csr_matrix((np.concatenate(data_parts), idx.astype(itype), indptr.astype(itype)), shape=(m * n, m * n))
    P.sum_duplicates()
    c = np.concatenate(c_parts)
    if stay_pays:
        upper = np.full(k, np.inf)  # the one-exit-payment bound needs rewards only on leaving
    return P, c, upper, k, vector_payoff


def _outcome_counts(hs: Sequence[CompiledHand], ps: Sequence[np.ndarray], n: int, lo: int) -> np.ndarray:
    """Terminals per state of a chunk (states ``lo``, ``lo`` + 1, …), after checking that each state
    belongs to the n-player layer and its outcome probabilities have its (terminals, 6) shape."""
    Ts = np.empty(len(hs), np.int64)
    for i, (h, pr) in enumerate(zip(hs, ps)):
        if h.n_players != n:
            raise ValueError(f"state {lo + i} has {h.n_players} players, the layer has {n}")
        T = h.term_orders.shape[0]
        if np.shape(pr) != (T, MAX_ORDERS):
            raise ValueError(f"order_probs[{lo + i}] must have shape ({T}, {MAX_ORDERS}); got {np.shape(pr)}")
        Ts[i] = T
    return Ts


def _reached_outcomes(hs: Sequence[CompiledHand], ps: Sequence[np.ndarray], Ts: np.ndarray,
                      lo: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunk's outcomes of positive probability: (their probabilities, their states within the
    chunk, the mask that selects them among all (terminal, order) slots). Raises unless every
    state's probabilities are finite, non-negative, zero on the slots beyond a terminal's orders
    and sum to 1 (within :data:`PROB_TOL`)."""
    prob = np.concatenate([np.asarray(pr, dtype=np.float64).reshape(-1) for pr in ps])
    orders = np.concatenate([h.term_orders for h in hs])
    valid = (np.arange(MAX_ORDERS)[None, :] < orders[:, None]).reshape(-1)
    if not np.all(np.isfinite(prob)):
        raise ValueError(f"order_probs of states {lo}..{lo + len(hs) - 1} contain non-finite values")
    if np.any(np.abs(prob[~valid]) > PROB_TOL):
        raise ValueError("order_probs put probability on outcome slots o >= term_orders[t]")
    if np.any(prob[valid] < -PROB_TOL):
        raise ValueError("order_probs must be non-negative")
    state = np.repeat(np.arange(len(hs)), Ts * MAX_ORDERS)
    totals = np.bincount(state[valid], weights=prob[valid], minlength=len(hs))
    bad = np.flatnonzero(np.abs(totals - 1.0) > PROB_TOL)
    if bad.size:
        raise ValueError(f"outcome probabilities of state {lo + int(bad[0])} sum to {totals[bad[0]]:.9g}, not 1")
    sel = valid & (prob > 0)
    return prob[sel], state[sel], sel


def _custom_rewards(hs: Sequence[CompiledHand], lo: int, Ts: np.ndarray, sel: np.ndarray, n: int, payoff: Payoff,
                    k: int | None, vector_payoff: bool) -> tuple[np.ndarray, int, bool]:
    """The chunk's selected outcomes' payments from ``payoff`` (K, n, k); the first state read fixes
    the columns k and whether the payoff has a column axis, which every later state must match."""
    blocks = []
    for i, h in enumerate(hs):
        r = np.asarray(payoff(lo + i, h), dtype=np.float64)
        vec = r.ndim == 3
        if vec:
            r = r[..., None]
        if k is None:
            k, vector_payoff = r.shape[3], vec
        if r.shape != (Ts[i], MAX_ORDERS, n, k) or vec != vector_payoff:
            raise ValueError(f"payoff for state {lo + i} must have shape ({Ts[i]}, {MAX_ORDERS}, {n}"
                             f"{'' if vector_payoff else f', {k}'}); got {np.shape(payoff(lo + i, h))}")
        blocks.append(r)
    return np.concatenate(blocks).reshape(-1, n, k)[sel], k, vector_payoff


def _add_lower_values(rew: np.ndarray, npl: np.ndarray, nxt: np.ndarray, seat: np.ndarray, n: int,
                      lower: dict[int, np.ndarray], k: int, vector_payoff: bool) -> None:
    """Add to ``rew`` (K, n, k; $) what each outcome that leaves the layer is worth to the seats
    still in: their values in the smaller layer's next state (``lower``)."""
    for nl in np.unique(npl):
        nl = int(nl)
        if nl == 0 or nl == n:
            continue
        if nl > n or nl not in lower:
            raise ValueError(f"an outcome leads to the {nl}-player layer: lower values for {nl} players "
                             f"are needed (have {sorted(lower)})")
        L = lower[nl]
        if L.ndim == 2:
            L = L[..., None]
        if L.ndim != 3 or L.shape[1] != nl or L.shape[2] != k:
            raise ValueError(f"lower table for {nl} players must have shape (states, {nl}"
                             f"{'' if k == 1 and vector_payoff else f', {k}'}); got {lower[nl].shape}")
        j = np.flatnonzero(npl == nl)
        sj = seat[j]
        alive = sj >= 0
        if np.any(nxt[j] < 0) or np.any(nxt[j] >= L.shape[0]):
            raise ValueError(f"next-state index out of range for the {nl}-player table")
        rew[j] += L[nxt[j][:, None], np.where(alive, sj, 0)] * alive[..., None]


def _same_layer_entries(prob: np.ndarray, state: np.ndarray, nxt: np.ndarray, seat: np.ndarray, js: np.ndarray,
                        n: int, m: int, states: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The chunk's rows of P: the outcomes ``js`` that keep all n players, in CSR order (state,
    position, outcome), as (data, column indices, entries per row)."""
    if np.any(seat[js] < 0):
        raise ValueError("an outcome that keeps all n players has a seat of -1")
    if np.any(nxt[js] < 0) or np.any(nxt[js] >= m):
        raise ValueError("next-state index out of range for this layer")
    cnt = np.bincount(state[js], minlength=states)  # same-layer outcomes per state
    start = np.concatenate([[0], np.cumsum(cnt)])[:-1]  # first entry of each state
    sj = state[js]
    off = np.arange(js.size) - start[sj]  # rank of the outcome within its state
    pos = (n * start[sj] + off)[:, None] + np.arange(n)[None, :] * cnt[sj][:, None]
    nnz = js.size * n
    data = np.empty(nnz)
    idx = np.empty(nnz, dtype=np.int64)
    data[pos] = prob[js][:, None]
    idx[pos] = nxt[js][:, None] * n + seat[js]
    return data, idx, np.repeat(cnt, n)


def layer_transitions(hands: list[CompiledHand], order_probs: list[np.ndarray], n: int,
                      lower_values: dict[int, np.ndarray],
                      payoff: Payoff | None = None) -> tuple[sp.csr_matrix, np.ndarray]:
    """The linear system V = c + P V of one layer under a fixed profile.

    Args:
        hands: the compiled hand of every state of the layer, in layer order (state s = hands[s]).
        order_probs: per state, a (T, 6) array: probability of outcome o of terminal t under the
            profile (entries o ≥ term_orders[t] must be 0; each array sums to 1). Copy arrays
            that are views into a solver workspace.
        n: players of the layer.
        lower_values: for every smaller layer n' some outcome leads to, its solved table
            (states of n', n') in $ — or (states, n', k) with a k-column payoff.
        payoff: optional ``payoff(s, hand) -> array`` of the amount paid *now* per outcome, shape
            (T, 6, n) or (T, 6, n, k) for k prize columns; default ``hand.term_prize`` ($).

    Returns:
        ``(P, c)``: P, a scipy CSR matrix (m·n × m·n) over the index s·n + p with
        P[s·n+p, s'·n+p'] = probability that the hand at s ends in the layer at state s' with
        the player of position p seated at p' (duplicates summed); c, shape (m·n,) — or
        (m·n, k) — the expected amount leaving the layer from each (state, position): prizes
        paid now plus values of the seats in smaller layers ($ by default).
    """
    P, c, _, k, vector = _layer_system(hands, order_probs, n, lower_values, payoff)
    return P, (c[:, 0] if vector and k == 1 else c)


# --------------------------------------------------------------------------------------------
# solving it
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _residual_matvec(indptr, indices, data, x, out):
    """out = x − P x for P in CSR form (serial; no BLAS threads)."""
    for i in range(x.shape[0]):
        acc = 0.0
        for k in range(indptr[i], indptr[i + 1]):
            acc += data[k] * x[indices[k]]
        out[i] = x[i] - acc


@njit(cache=True)
def _dot(a, b):
    acc = 0.0
    for i in range(a.shape[0]):
        acc += a[i] * b[i]
    return acc


@njit(cache=True)
def _gmres_kernel(indptr, indices, data, b, x, restart, max_steps, rtol):
    """Restarted GMRES(restart) for (I − P) x = b, in place on x (the starting guess).

    Modified Gram–Schmidt Arnoldi with Givens rotations (Saad, *Iterative Methods for Sparse
    Linear Systems*, §6.5). Serial numba loops: no BLAS thread pool to compete with the solver's
    own threads. Returns (matrix-vector products, final Arnoldi residual norm / ‖b‖)."""
    N = b.shape[0]
    bnorm = math.sqrt(_dot(b, b))
    if bnorm == 0.0:
        x[:] = 0.0
        return 0, 0.0
    V = np.empty((restart + 1, N))
    H = np.zeros((restart + 1, restart))
    cs = np.zeros(restart)
    sn = np.zeros(restart)
    g = np.zeros(restart + 1)
    y = np.zeros(restart)
    w = np.empty(N)
    steps = 0
    rel = 1.0
    while steps < max_steps:
        _residual_matvec(indptr, indices, data, x, w)
        for i in range(N):
            w[i] = b[i] - w[i]
        beta = math.sqrt(_dot(w, w))
        rel = beta / bnorm
        if rel <= rtol:
            break
        for i in range(N):
            V[0, i] = w[i] / beta
        g[:] = 0.0
        g[0] = beta
        H[:, :] = 0.0
        used = 0
        for j in range(restart):
            _residual_matvec(indptr, indices, data, V[j], w)
            steps += 1
            for i in range(j + 1):
                h = _dot(V[i], w)
                H[i, j] = h
                for q in range(N):
                    w[q] -= h * V[i, q]
            hn = math.sqrt(_dot(w, w))
            H[j + 1, j] = hn
            if hn > 0.0:
                for q in range(N):
                    V[j + 1, q] = w[q] / hn
            for i in range(j):  # earlier rotations on the new column
                t = cs[i] * H[i, j] + sn[i] * H[i + 1, j]
                H[i + 1, j] = -sn[i] * H[i, j] + cs[i] * H[i + 1, j]
                H[i, j] = t
            d = math.hypot(H[j, j], H[j + 1, j])
            cs[j] = H[j, j] / d if d > 0.0 else 1.0
            sn[j] = H[j + 1, j] / d if d > 0.0 else 0.0
            H[j, j] = d
            H[j + 1, j] = 0.0
            g[j + 1] = -sn[j] * g[j]
            g[j] = cs[j] * g[j]
            used = j + 1
            rel = abs(g[j + 1]) / bnorm
            if rel <= rtol or hn == 0.0 or steps >= max_steps:
                break
        for i in range(used - 1, -1, -1):  # back substitution H y = g
            t = g[i]
            for q in range(i + 1, used):
                t -= H[i, q] * y[q]
            y[i] = t / H[i, i] if H[i, i] != 0.0 else 0.0
        for i in range(used):
            for q in range(N):
                x[q] += y[i] * V[i, q]
        if hn == 0.0 and rel > rtol:
            rel = 1.0  # lucky breakdown with a singular H: let the caller check the true residual
            break
    return steps, rel


def gmres(P: sp.csr_matrix, b: np.ndarray, x0: np.ndarray | None = None, rtol: float = 1e-13,
          restart: int = 30, max_steps: int = 5000) -> tuple[np.ndarray, int, float]:
    """Solve (I − P) x = b by restarted GMRES (numba, serial). Returns (x, steps, relative residual)."""
    P = sp.csr_matrix(P)
    x = np.zeros(b.shape[0]) if x0 is None else np.array(x0, dtype=np.float64)
    steps, rel = _gmres_kernel(P.indptr, P.indices, P.data.astype(np.float64, copy=False),
                               np.ascontiguousarray(b, dtype=np.float64), x, int(restart), int(max_steps), float(rtol))
    return x, int(steps), float(rel)


def value_iteration(P: sp.spmatrix, c: np.ndarray, tol: float = 1e-12, max_iter: int = 1_000_000,
                    x0: np.ndarray | None = None) -> tuple[np.ndarray, int, bool]:
    """Iterate X ← c + P X from X = 0 (or ``x0`` ≤ the minimal solution) until converged.

    From 0 the iterates increase monotonically (for P, c ≥ 0) to the minimal non-negative
    solution. Stops when the estimated remaining error, ‖ΔX‖∞ · ρ / (1 − ρ) with ρ the observed
    contraction of successive steps, is ≤ ``tol`` (absolute), or when a step is exactly 0.

    Returns:
        ``(X, iterations, converged)``, X with the shape of c.
    """
    c = np.asarray(c, dtype=np.float64)
    X = np.zeros_like(c) if x0 is None else np.array(x0, dtype=np.float64)
    prev = None
    for it in range(1, max_iter + 1):
        Xn = c + P @ X
        d = float(np.max(np.abs(Xn - X))) if X.size else 0.0
        X = Xn
        if d == 0.0:
            return X, it, True
        if prev is not None and prev > 0:
            rho = min(d / prev, 1.0 - 1e-15)
            if d * rho / (1.0 - rho) <= tol:
                return X, it, True
        prev = d
    return X, max_iter, False


def _reaches_support(P: sp.csr_matrix, target: np.ndarray) -> np.ndarray:
    """Boolean mask of rows that can reach a ``target`` row along nonzero entries of P."""
    N = P.shape[0]
    if not target.any():
        return target.copy()
    # reversed graph (edge col -> row) plus a virtual source N pointing at every target row
    G = P.T.tocsr().astype(bool)
    src = sp.csr_matrix((np.ones(int(target.sum()), dtype=bool), np.flatnonzero(target),
                         [0, int(target.sum())]), shape=(1, N))
    G = sp.vstack([sp.hstack([G, sp.csr_matrix((N, 1), dtype=bool)]),
                   sp.hstack([src, sp.csr_matrix((1, 1), dtype=bool)])]).tocsr()
    order = csgraph.breadth_first_order(G, N, directed=True, return_predecessors=False)
    mask = np.zeros(N + 1, dtype=bool)
    mask[order] = True
    return mask[:N]


def solve_layer(P: sp.spmatrix, c: np.ndarray, *, method: str = "auto", upper: float | np.ndarray | None = None,
                x0: np.ndarray | None = None, rtol: float = 1e-13, check_tol: float = 1e-9,
                vi_max_iter: int = 20_000) -> tuple[np.ndarray, dict]:
    """Minimal non-negative solution of X = c + P X (see the module docstring).

    Args:
        P: substochastic same-layer matrix (N × N), entries ≥ 0.
        c: (N,) or (N, k), entries ≥ 0.
        method: "auto" (direct LU up to :data:`DIRECT_MAX_ROWS` rows of the reduced system,
            GMRES above), "direct", "iterative" (GMRES) or "value_iteration".
        upper: per-column upper bound used by the check (scalar or (k,)); None = no bound.
        x0: starting guess for GMRES (e.g. the previous outer iteration's values), shape of c.
        rtol: relative residual target of GMRES.
        check_tol: tolerance of the residual / sign / bound checks, relative to max(1, max c,
            upper).
        vi_max_iter: most value-iteration sweeps (method "value_iteration" or the fallback);
            stopping early warns and leaves lower bounds.

    Returns:
        ``(X, info)``; info holds ``method`` (what produced X), ``rows`` (N), ``solved_rows`` (rows
        that can reach a payment), ``residual`` (max-norm of X − c − P X), ``fallback`` (reason,
        or None) and ``iterations`` (GMRES/value iteration steps, summed over columns).
    """
    P = sp.csr_matrix(P)
    c = np.asarray(c, dtype=np.float64)
    vec = c.ndim == 1
    C = c[:, None] if vec else c
    N, k = C.shape
    if P.shape != (N, N):
        raise ValueError(f"P must be ({N}, {N}) like c; got {P.shape}")
    if method not in ("auto", "direct", "iterative", "value_iteration"):
        raise ValueError(f"method must be auto, direct, iterative or value_iteration; got {method!r}")
    if P.nnz and P.data.min() < 0:
        raise ValueError("P must be non-negative")
    if np.any(C < 0):
        raise ValueError("c must be non-negative (the minimal solution is defined for c >= 0)")
    up = None if upper is None else np.broadcast_to(np.asarray(upper, dtype=np.float64), (k,))
    scale = max(1.0, float(C.max()) if C.size else 0.0, float(np.max(up[np.isfinite(up)])) if up is not None
                and np.isfinite(up).any() else 0.0)
    tol = check_tol * scale
    X = np.zeros((N, k))
    info = {"rows": N, "solved_rows": 0, "method": method, "fallback": None, "iterations": 0, "residual": 0.0}
    R = np.flatnonzero(_reaches_support(P, np.any(C != 0, axis=1)))
    info["solved_rows"] = int(R.size)
    if R.size:
        PR = P if R.size == N else P[R][:, R].tocsr()
        CR = C[R]
        use = method
        if use == "auto":
            use = "direct" if R.size <= DIRECT_MAX_ROWS else "iterative"
        info["method"] = use
        XR = None
        try:
            if use == "direct":
                A = (sp.identity(R.size, format="csc") - PR.tocsc()).tocsc()
                XR = spla.splu(A).solve(CR.copy())
            elif use == "iterative":
                XR = np.zeros_like(CR)
                guess = None if x0 is None else np.asarray(x0, dtype=np.float64).reshape(N, k)[R]
                for j in range(k):
                    if CR[:, j].any():
                        XR[:, j], steps, _ = gmres(PR, CR[:, j], None if guess is None else guess[:, j], rtol=rtol)
                        info["iterations"] += steps
            else:
                XR = None  # value iteration below
        except (RuntimeError, MemoryError, np.linalg.LinAlgError) as exc:  # singular LU and the like
            info["fallback"] = f"{use} failed: {exc}"
            XR = None
        if XR is not None:
            reason = _check(PR, CR, XR, up, tol)
            if reason:
                info["fallback"] = reason
                XR = None
        if XR is None:
            XR, its, ok = value_iteration(PR, CR, tol=tol * 1e-3, max_iter=vi_max_iter)
            info["iterations"] += its
            info["method"] = "value_iteration"
            if not ok:
                info["fallback"] = (info["fallback"] or "") + f"; value iteration stopped after {its} steps"
                warnings.warn("policy evaluation: value iteration did not converge; values are lower bounds",
                              RuntimeWarning, stacklevel=2)
        X[R] = np.maximum(XR, 0.0)
        info["residual"] = float(np.max(np.abs(X - C - P @ X))) if N else 0.0
    return (X[:, 0] if vec else X), info


def _check(P: sp.csr_matrix, C: np.ndarray, X: np.ndarray, upper: np.ndarray | None, tol: float) -> str | None:
    """Why X is not accepted as the solution (None when it is)."""
    if not np.all(np.isfinite(X)):
        return "solution is not finite"
    res = float(np.max(np.abs(X - C - P @ X)))
    if res > tol:
        return f"residual {res:.3g} > {tol:.3g}"
    if X.min() < -tol:
        return f"negative value {X.min():.3g}"
    if upper is not None and np.any(X.max(axis=0) > upper + tol):
        return f"value {X.max():.6g} above the largest exit payment"
    return None


# --------------------------------------------------------------------------------------------
# public entry points
# --------------------------------------------------------------------------------------------


def evaluate_layer(hands: list[CompiledHand], order_probs: list[np.ndarray], n: int,
                   lower_values: dict[int, np.ndarray], *, method: str = "auto", x0: np.ndarray | None = None,
                   info: dict | None = None) -> np.ndarray:
    """Exact values of a fixed profile on one layer (policy evaluation, SPEC §6 (b)).

    Args:
        hands, order_probs, n, lower_values: as in :func:`layer_transitions` (values in $).
        method: see :func:`solve_layer`.
        x0: optional (m, n) starting guess for the iterative solver (e.g. the previous V).
        info: optional dict, filled with the solver's report (see :func:`solve_layer`).

    Returns:
        V, float64 (m, n): expected prize in $ of the player in position p of state s — the
        minimal non-negative solution (0 where the profile never lets the tournament end).
    """
    P, c, upper, _, _ = _layer_system(hands, order_probs, n, lower_values, None)
    X, rep = solve_layer(P, c, method=method, upper=upper, x0=None if x0 is None else np.reshape(x0, (-1, 1)))
    if info is not None:
        info.update(rep)
    return X.reshape(len(hands), n)


def finishing_probabilities(hands: list[CompiledHand], order_probs: list[np.ndarray], n: int,
                            lower_finishing: dict[int, np.ndarray], places: int, *,
                            place_mass: Callable[[int, CompiledHand], np.ndarray] | None = None,
                            method: str = "auto", info: dict | None = None) -> np.ndarray:
    """Probability of every finishing place for every (state, position) of one layer.

    Args:
        hands, order_probs, n: as in :func:`layer_transitions`.
        lower_finishing: for every smaller layer n' reached, its table (states of n', n', places).
        places: places of the whole tournament (≥ n); place q ↔ index q−1.
        place_mass: optional ``place_mass(s, hand) -> (T, 6, n, places)`` per-outcome place masses;
            default :func:`outcome_place_mass` of ``hand.stacks`` (rebuilds the hand's tree, ≈ 0.5 ms
            per state).
        method, info: see :func:`evaluate_layer`.

    Returns:
        F, float64 (m, n, places): F[s, p, q−1] = probability that the player in position p of
        state s finishes in place q. Rows sum to 1 and each place 1..n is taken by exactly one
        player (columns over positions sum to 1) when the profile ends the tournament with
        probability 1; places above n are 0 (already decided). Σ_q F[s, p, q−1] · payouts[q−1]
        equals :func:`evaluate_layer`'s V.
    """
    if not isinstance(places, (int, np.integer)) or places < n:
        raise ValueError(f"places must be an integer >= n = {n}; got {places!r}")
    places = int(places)
    mass = place_mass or (lambda s, h: outcome_place_mass(h.stacks, places))
    m = len(hands)
    F = np.zeros((m * n, places))
    # columns above n are identically 0 in this layer; solve only places 1..n
    lower = {key: np.asarray(val, dtype=np.float64)[..., :n] for key, val in lower_finishing.items()}
    for key, val in lower_finishing.items():
        if np.ndim(val) != 3 or np.shape(val)[2] != places:
            raise ValueError(f"lower_finishing[{key}] must have shape (states, {key}, {places}); got {np.shape(val)}")
    P, c, upper, _, _ = _layer_system(hands, order_probs, n, lower, lambda s, h: mass(s, h)[..., :n])
    X, rep = solve_layer(P, c, method=method, upper=np.minimum(upper, 1.0))
    if info is not None:
        info.update(rep)
    F[:, :n] = X
    return F.reshape(m, n, places)

