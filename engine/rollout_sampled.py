"""Monte Carlo showdown estimates for 2- and 3-hand matchups of hand classes (SPEC §3, sampled
mode).

Each sample deals a uniformly random valid deal of the matchup (one combo per player, drawn
independently and redrawn as a whole until the cards are disjoint — rejection sampling, so every
card-disjoint combo tuple is equally likely) and a uniformly random board of five of the remaining
cards, evaluates every hand and adds the comparison code to a histogram (same codes as
:mod:`engine.rollout_exact`).

Randomness is a counter-based stream per matchup: the generator of row ``i`` starts from
``splitmix64(seed, i)``, so a row's estimate depends only on (seed, row index, samples) — not on
chunking, thread count or the order rows are computed in. Integers in [0, m) are drawn with
Lemire's multiply-shift method with rejection, so they are exactly uniform.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from engine.cards import COMBO_OFFSETS, COMBOS
from engine.evaluator import CARD_BIT, CARD_KEY, value_from_keys
from engine.rollout_exact import N_CODES, comparison_code

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)


@njit(cache=True, inline="always")
def _mix(z):
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def row_state(seed, row):
    """Initial generator state of one matchup row (splitmix64 of seed and row index)."""
    return _mix(_mix(np.uint64(seed) + _GOLDEN) ^ (np.uint64(row) * _GOLDEN))


@njit(cache=True, inline="always")
def _next32(state):
    """(new state, 32 random bits) — splitmix64 step."""
    state = state + _GOLDEN
    return state, _mix(state) >> np.uint64(32)


@njit(cache=True, inline="always")
def _below(state, m):
    """(new state, uniform int in [0, m)) for 1 ≤ m ≤ 2^32 (Lemire, with rejection)."""
    mm = np.uint64(m)
    state, x = _next32(state)
    prod = x * mm
    low = prod & _LOW32
    if low < mm:
        threshold = (np.uint64(1 << 32) - mm) % mm
        while low < threshold:
            state, x = _next32(state)
            prod = x * mm
            low = prod & _LOW32
    return state, np.int64(prod >> np.uint64(32))


@njit(cache=True)
def sample_matchup_hist(n, classes, samples, state, hist):
    """Add ``samples`` random (deal, board) comparison codes of one matchup to ``hist``.
    The matchup must be dealable (at least one disjoint combo tuple)."""
    lo = np.zeros(3, np.int64)
    size = np.zeros(3, np.int64)
    for i in range(n):
        lo[i] = COMBO_OFFSETS[classes[i]]
        size[i] = COMBO_OFFSETS[classes[i] + 1] - lo[i]
    hk = np.zeros(3, np.int64)
    hb = np.zeros(3, np.int64)
    for _ in range(samples):
        while True:  # a uniformly random card-disjoint deal
            used = np.int64(0)
            ok = True
            for i in range(n):
                state, j = _below(state, size[i])
                c0 = COMBOS[lo[i] + j, 0]
                c1 = COMBOS[lo[i] + j, 1]
                m = (np.int64(1) << c0) | (np.int64(1) << c1)
                if used & m:
                    ok = False
                    break
                used |= m
                hk[i] = CARD_KEY[c0] + CARD_KEY[c1]
                hb[i] = CARD_BIT[c0] | CARD_BIT[c1]
            if ok:
                break
        bk = np.int64(0)
        bb = np.int64(0)
        drawn = 0
        while drawn < 5:  # a uniformly random board of the remaining cards
            state, c = _below(state, 52)
            m = np.int64(1) << c
            if used & m:
                continue
            used |= m
            bk += CARD_KEY[c]
            bb |= CARD_BIT[c]
            drawn += 1
        v0 = value_from_keys(hk[0] + bk, hb[0] | bb)
        v1 = value_from_keys(hk[1] + bk, hb[1] | bb)
        v2 = 0
        if n == 3:
            v2 = value_from_keys(hk[2] + bk, hb[2] | bb)
        hist[comparison_code(v0, v1, v2)] += 1
    return state


@njit(cache=True, parallel=True)
def sample_hists(n, classes, row_ids, dealable, samples, seed):
    """Sampled histograms for each row of ``classes`` (rows × n); ``row_ids`` are the rows'
    global indices (they pick the random streams), rows with ``dealable`` False stay zero."""
    rows = classes.shape[0]
    hist = np.zeros((rows, N_CODES), np.int64)
    n_workers = min(rows, 256)
    for w in prange(n_workers):
        for i in range(w, rows, n_workers):
            if dealable[i]:
                sample_matchup_hist(n, classes[i], samples, row_state(seed, row_ids[i]), hist[i])
    return hist
