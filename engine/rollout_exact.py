"""Exact showdown enumeration for 2- and 3-hand matchups of hand classes (SPEC §3).

A **matchup** is an ordered tuple of hand classes, one per player (n = 2 or 3). Over every
ordered, card-disjoint tuple of combos of those classes (a **deal**) and every board of five of
the remaining cards, we count how the players' 7-card values compare. The result is a
**comparison histogram** ``hist[27]`` (int64): entry ``9·c01 + 3·c02 + c12`` counts (deal, board)
pairs where ``cij`` = 0, 1, 2 says player i's value is below, equal to or above player j's. For two
players, player 2 is a dummy that always loses. :func:`order_shares` turns a histogram into the
six strict finishing orders under random tie-breaking.

Plain enumeration (:func:`brute_force_deal`) evaluates 1.4–1.7 million boards per deal. The
grouped algorithm below gives the same integers far faster, using three facts:

1. **Without flushes, a 7-card value depends only on ranks.** Boards are grouped by their rank
   multiset (6,175 groups of five ranks, ≤ 4 per rank); a group holds
   ``∏_r C(avail_r, m_r)`` boards, where ``avail_r`` = 4 − hole cards of rank r. Pretending no
   one ever makes a flush, the histogram over all boards is the sum over groups — and it depends
   only on the hole *ranks*, so it is the same for every deal of the matchup (``non-flush part``).
2. **Flushes are a correction per suit.** A player can only flush in suit s when the board holds
   ≥ 3 cards of s, and a 5-card board can do that for at most one suit. So the true histogram of
   a deal is the non-flush part plus, for each suit s, a correction summed over boards with ≥ 3
   cards of s: (true comparison) − (non-flush comparison). With seven cards a flush excludes
   quads and full houses, so a flusher's true value is just its flush value.
3. **The correction for suit s depends only on which hole cards are of suit s.** Call that set
   T ⊆ slots (a slot is one hole card of one player; its rank is fixed by the classes). It fixes
   the suited cards left for the board, the non-s cards left per rank, and every flush value
   (``FLUSH_TABLE[player's suited ranks | board's suited ranks]``). Within the correction,
   boards are again grouped: k = 3, 4, 5 suited board cards as a 13-bit rank set, plus the
   5 − k off-suit cards as a rank multiset weighted by binomial counts.

Hence for a matchup: ``hist = W · nonflush + Σ_T count(T) · correction(T)`` where W is the
number of deals and count(T) the number of (deal, suit) pairs whose suit holds exactly the slots
T. This is suit isomorphism taken one step further: instead of canonical suit patterns of whole
deals, the four suits of a deal are handled independently (≤ 2^(2n) patterns per matchup).

All counts are exact integers (the final probabilities are single float64 divisions).
"""

from __future__ import annotations

import itertools
from math import comb

import numpy as np
from numba import njit, prange

from engine.cards import COMBO_OFFSETS, COMBOS
from engine.evaluator import (
    CARD_BIT,
    CARD_KEY,
    FLUSH_TABLE,
    RANK_KEYS,
    rank_multisets,
    rank_value,
    value_from_keys,
)

ORDERS = ("abc", "acb", "bac", "bca", "cab", "cba")
"""Strict finishing orders of players a, b, c (first = best): "bac" = b best, a second, c last."""

ORDER_PLAYERS = np.array([[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]], dtype=np.int64)
"""ORDER_PLAYERS[o] = players of order o from best to worst."""

N_CODES = 27


def _order_shares() -> np.ndarray:
    """ORDER_SHARES[code, o] = 6 · P(order o | comparison code) under uniform tie-breaking."""
    shares = np.zeros((N_CODES, 6), dtype=np.int64)
    for v in itertools.product(range(3), repeat=3):
        cmp = lambda x, y: 0 if x < y else (1 if x == y else 2)  # noqa: E731
        code = 9 * cmp(v[0], v[1]) + 3 * cmp(v[0], v[2]) + cmp(v[1], v[2])
        consistent = [o for o, pl in enumerate(ORDER_PLAYERS) if v[pl[0]] >= v[pl[1]] >= v[pl[2]]]
        shares[code] = 0
        for o in consistent:
            shares[code, o] = 6 // len(consistent)
    return shares


ORDER_SHARES = _order_shares()
"""Integer tie-splitting table: a 2-way tie gives 3/6 to each of its two orders, a 3-way tie 1/6
to each of the six. Codes that no value triple produces stay zero."""


def order_shares(hist: np.ndarray) -> np.ndarray:
    """Probabilities of the six finishing orders from comparison histogram(s) (..., 27)."""
    hist = np.asarray(hist, dtype=np.int64)
    scaled = hist @ ORDER_SHARES  # exact integers, in units of 1/6
    total = 6 * hist.sum(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return scaled / total


# --------------------------------------------------------------------------------------------
# Static board groups
# --------------------------------------------------------------------------------------------


def _board_groups() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """5-card rank multisets: key sums, distinct ranks (padded with 0) and their multiplicities."""
    counts = rank_multisets(5)
    keys = counts @ RANK_KEYS
    ranks = np.zeros((counts.shape[0], 5), dtype=np.int64)
    mults = np.zeros((counts.shape[0], 5), dtype=np.int64)
    for g, row in enumerate(counts):
        nz = np.flatnonzero(row)
        ranks[g, : nz.size] = nz
        mults[g, : nz.size] = row[nz]
    return keys, ranks, mults


GROUP_KEY, GROUP_RANK, GROUP_MULT = _board_groups()
"""The 6,175 rank multisets of a 5-card board; multiplicity 0 pads unused slots."""


def _rank_subsets() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """13-bit rank sets of size 3, 4, 5 (one after the other) and their rank key sums."""
    masks: list[int] = []
    starts = [0] * 7
    for k in range(3, 6):
        starts[k] = len(masks)
        masks.extend(sum(1 << r for r in c) for c in itertools.combinations(range(13), k))
    starts[6] = len(masks)
    masks_arr = np.array(masks, dtype=np.int64)
    keys = np.array([sum(int(RANK_KEYS[r]) for r in range(13) if m >> r & 1) for m in masks], dtype=np.int64)
    return masks_arr, keys, np.array(starts, dtype=np.int64)


SUBSET_MASK, SUBSET_KEY, SUBSET_START = _rank_subsets()
"""SUBSET_MASK[SUBSET_START[k]:SUBSET_START[k + 1]] are the 13-bit rank sets of size k = 3, 4, 5."""

def _combo_masks() -> np.ndarray:
    return (np.int64(1) << COMBOS[:, 0]) | (np.int64(1) << COMBOS[:, 1])


COMBO_MASK = _combo_masks()
"""52-bit card mask of every combo (same order as ``COMBOS``)."""


BINOM = np.array([[comb(n, k) for k in range(6)] for n in range(6)], dtype=np.int64)
"""BINOM[n, k] = C(n, k) for n, k ≤ 5."""

N_BOARDS = {2: comb(48, 5), 3: comb(46, 5)}
"""Boards per deal: C(48,5) = 1,712,304 for two hands, C(46,5) = 1,370,754 for three."""


# --------------------------------------------------------------------------------------------
# Kernels
# --------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def _cmp(x, y):
    if x < y:
        return 0
    if x == y:
        return 1
    return 2


@njit(cache=True, inline="always")
def comparison_code(v0, v1, v2):
    """Comparison code 9·c01 + 3·c02 + c12 of three values (cij = 0, 1, 2: below, equal, above)."""
    return 9 * _cmp(v0, v1) + 3 * _cmp(v0, v2) + _cmp(v1, v2)


@njit(cache=True)
def nonflush_hist(n, hole_key, holecount, hist):
    """Add, over all boards grouped by rank multiset, the comparison codes of the players'
    rank-only values (as if nobody could flush). ``hole_key[i]`` = rank key sum of player i's
    hole cards, ``holecount[r]`` = hole cards of rank r."""
    for g in range(GROUP_KEY.shape[0]):
        w = 1
        for t in range(5):
            m = GROUP_MULT[g, t]
            if m == 0:
                break
            w *= BINOM[4 - holecount[GROUP_RANK[g, t]], m]
        if w == 0:
            continue
        key = GROUP_KEY[g]
        v0 = rank_value(hole_key[0] + key)
        v1 = rank_value(hole_key[1] + key)
        v2 = 0
        if n == 3:
            v2 = rank_value(hole_key[2] + key)
        hist[comparison_code(v0, v1, v2)] += w


@njit(cache=True)
def flush_corrections(n, slot_rank, hole_key, holecount, pattern_count, hist):
    """Add the flush corrections of all suit patterns of a matchup, weighted by how often each
    occurs: ``pattern_count[T]`` (deal, suit) pairs whose suit holds exactly the hole slots in
    the bitmask T (slot j belongs to player j // 2 and has rank ``slot_rank[j]``).

    For one suit s with pattern T the correction is Σ over boards with ≥ 3 cards of s of
    (true comparison) − (non-flush comparison). Boards are grouped as k = 3, 4, 5 suited board
    ranks S (a 13-bit set avoiding T's ranks) plus a multiset O of 5 − k off-suit ranks weighted
    by ∏ C(off-suit cards left of rank r, multiplicity). The loops run over (k, S, O) outside and
    the patterns inside, so each board group's rank-only values are looked up once for all
    patterns; a pattern only pays for comparing codes."""
    n_pat = pattern_count.shape[0]
    pats = np.zeros(n_pat, np.int64)
    n_used = 0
    for t in range(n_pat):
        if pattern_count[t] > 0:
            pats[n_used] = t
            n_used += 1
    tmask = np.zeros((n_used, 3), np.int64)  # suited hole ranks per pattern and player
    tcount = np.zeros((n_used, 3), np.int64)
    hole_suited = np.zeros(n_used, np.int64)
    mult = np.zeros(n_used, np.int64)
    for p in range(n_used):
        t = pats[p]
        mult[p] = pattern_count[t]
        for j in range(2 * n):
            if t >> j & 1:
                tmask[p, j >> 1] |= 1 << slot_rank[j]
                tcount[p, j >> 1] += 1
                hole_suited[p] |= 1 << slot_rank[j]
    base_avail = np.zeros(13, np.int64)  # off-suit cards of rank r left when rank r has no suited hole card
    for r in range(13):
        base_avail[r] = 3 - holecount[r]
    active = np.zeros(n_used, np.int64)
    flusher = np.zeros((n_used, 3), np.bool_)
    valid = np.zeros(n_used, np.bool_)
    fval = np.zeros((n_used, 3), np.int64)
    nval = np.zeros(3, np.int64)
    for k in range(3, 6):
        n_act = 0
        for p in range(n_used):
            any_flusher = False
            for i in range(n):
                flusher[p, i] = tcount[p, i] + k >= 5
                any_flusher |= flusher[p, i]
            if any_flusher:
                active[n_act] = p
                n_act += 1
        if n_act == 0:
            continue
        for t in range(SUBSET_START[k], SUBSET_START[k + 1]):
            smask = SUBSET_MASK[t]
            skey = SUBSET_KEY[t]
            any_valid = False
            for a in range(n_act):
                p = active[a]
                valid[p] = smask & hole_suited[p] == 0
                if valid[p]:
                    any_valid = True
                    for i in range(n):
                        if flusher[p, i]:
                            fval[p, i] = FLUSH_TABLE[tmask[p, i] | smask]
            if not any_valid:
                continue
            pats = (active[:n_act], valid, hole_suited, mult, flusher, fval)
            if k == 5:
                _correct_group(n, hole_key, skey, -1, -1, base_avail, pats, nval, hist)
            elif k == 4:
                for r in range(13):
                    _correct_group(n, hole_key, skey + RANK_KEYS[r], r, -1, base_avail, pats, nval, hist)
            else:
                for r1 in range(13):
                    for r2 in range(r1, 13):
                        key = skey + RANK_KEYS[r1] + RANK_KEYS[r2]
                        _correct_group(n, hole_key, key, r1, r2, base_avail, pats, nval, hist)


@njit(cache=True, inline="always")
def _off_weight(r1, r2, base_avail, suited):
    """Number of ways to pick the off-suit board ranks {r1, r2} (−1 = no card) for one pattern."""
    if r1 < 0:
        return 1
    a1 = base_avail[r1] + (suited >> r1 & 1)
    if r2 < 0:
        return a1
    if r1 == r2:
        return BINOM[a1, 2]
    return a1 * (base_avail[r2] + (suited >> r2 & 1))


@njit(cache=True, inline="always")
def _correct_group(n, hole_key, board_key, r1, r2, base_avail, pats, nval, hist):
    """One group of flush boards (suited ranks fixed, off-suit ranks r1, r2; −1 = none): for
    every active pattern, move its weight from the non-flush comparison code to the true one.
    ``pats`` = (active pattern indices, valid, hole_suited, multiplicity, flusher, flush values)."""
    active, valid, hole_suited, mult, flusher, fval = pats
    # rank-only values are only defined for multisets with ≤ 4 cards per rank: look up lazily,
    # once some pattern gives the group a positive weight
    looked_up = False
    code_nf = 0
    for p in active:
        if not valid[p]:
            continue
        w = _off_weight(r1, r2, base_avail, hole_suited[p])
        if w == 0:
            continue
        if not looked_up:
            for i in range(n):
                nval[i] = rank_value(hole_key[i] + board_key)
            code_nf = comparison_code(nval[0], nval[1], nval[2] if n == 3 else 0)
            looked_up = True
        a0 = fval[p, 0] if flusher[p, 0] else nval[0]
        a1 = fval[p, 1] if flusher[p, 1] else nval[1]
        a2 = 0
        if n == 3:
            a2 = fval[p, 2] if flusher[p, 2] else nval[2]
        code = comparison_code(a0, a1, a2)
        if code != code_nf:
            hist[code] += w * mult[p]
            hist[code_nf] -= w * mult[p]


@njit(cache=True)
def suit_pattern_counts(n, classes, counts):
    """Enumerate the ordered, card-disjoint combo tuples of the classes; add to ``counts[T]``
    once per (deal, suit) whose suit holds exactly the slot set T. Returns the number of deals."""
    deals = 0
    c2lo = COMBO_OFFSETS[classes[2]] if n == 3 else 0
    c2hi = COMBO_OFFSETS[classes[2] + 1] if n == 3 else 1
    for x in range(COMBO_OFFSETS[classes[0]], COMBO_OFFSETS[classes[0] + 1]):
        for y in range(COMBO_OFFSETS[classes[1]], COMBO_OFFSETS[classes[1] + 1]):
            if COMBO_MASK[x] & COMBO_MASK[y]:
                continue
            for z in range(c2lo, c2hi):
                if n == 3 and (COMBO_MASK[x] | COMBO_MASK[y]) & COMBO_MASK[z]:
                    continue
                deals += 1
                t0 = 0
                t1 = 0
                t2 = 0
                t3 = 0
                for j in range(2 * n):
                    combo = x if j < 2 else (y if j < 4 else z)
                    s = COMBOS[combo, j & 1] & 3
                    if s == 0:
                        t0 |= 1 << j
                    elif s == 1:
                        t1 |= 1 << j
                    elif s == 2:
                        t2 |= 1 << j
                    else:
                        t3 |= 1 << j
                counts[t0] += 1
                counts[t1] += 1
                counts[t2] += 1
                counts[t3] += 1
    return deals


@njit(cache=True)
def _matchup_geometry(n, classes):
    """Slot ranks, per-player hole rank keys and per-rank hole counts of a matchup."""
    slot_rank = np.zeros(6, np.int64)
    hole_key = np.zeros(3, np.int64)
    holecount = np.zeros(13, np.int64)
    for i in range(n):
        first = COMBO_OFFSETS[classes[i]]
        for h in range(2):
            r = COMBOS[first, h] >> 2  # every combo of a class has the same ranks in each slot
            slot_rank[2 * i + h] = r
            hole_key[i] += RANK_KEYS[r]
            holecount[r] += 1
    return slot_rank, hole_key, holecount


@njit(cache=True)
def matchup_hist(n, classes, hist):
    """Exact comparison histogram of a matchup (all deals × all boards) into ``hist``.
    Returns the number of deals W (0 for an undealable matchup, hist untouched)."""
    counts = np.zeros(1 << (2 * n), np.int64)
    deals = suit_pattern_counts(n, classes, counts)
    if deals == 0:
        return 0
    slot_rank, hole_key, holecount = _matchup_geometry(n, classes)
    base = np.zeros(N_CODES, np.int64)
    nonflush_hist(n, hole_key, holecount, base)
    for c in range(N_CODES):
        hist[c] += deals * base[c]
    flush_corrections(n, slot_rank, hole_key, holecount, counts, hist)
    return deals


@njit(cache=True, parallel=True)
def matchup_hists(n, classes):
    """:func:`matchup_hist` for each row of ``classes`` (rows × n), in parallel.
    Rows are dealt round-robin to workers so uneven rows balance. Returns (hist, deals)."""
    rows = classes.shape[0]
    hist = np.zeros((rows, N_CODES), np.int64)
    deals = np.zeros(rows, np.int64)
    n_workers = min(rows, 256)
    for w in prange(n_workers):
        for i in range(w, rows, n_workers):
            deals[i] = matchup_hist(n, classes[i], hist[i])
    return hist, deals


@njit(cache=True)
def count_deals(n, classes):
    """Number of ordered, pairwise card-disjoint combo tuples of the classes."""
    total = 0
    for x in range(COMBO_OFFSETS[classes[0]], COMBO_OFFSETS[classes[0] + 1]):
        mx = COMBO_MASK[x]
        for y in range(COMBO_OFFSETS[classes[1]], COMBO_OFFSETS[classes[1] + 1]):
            mxy = mx | COMBO_MASK[y]
            if mx & COMBO_MASK[y]:
                continue
            if n == 2:
                total += 1
                continue
            for z in range(COMBO_OFFSETS[classes[2]], COMBO_OFFSETS[classes[2] + 1]):
                if mxy & COMBO_MASK[z] == 0:
                    total += 1
    return total


@njit(cache=True, parallel=True)
def deal_counts(n, classes):
    """:func:`count_deals` for each row of ``classes`` (rows × 3; the third column is ignored
    for n = 2)."""
    rows = classes.shape[0]
    out = np.zeros(rows, np.int64)
    n_workers = min(rows, 256)
    for w in prange(n_workers):
        for i in range(w, rows, n_workers):
            out[i] = count_deals(n, classes[i])
    return out


# --------------------------------------------------------------------------------------------
# Per-deal versions (specific hole cards): the grouped algorithm and plain brute force
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def grouped_deal_hist(holes):
    """Grouped algorithm for one deal: ``holes`` is (n, 2) card ints. Returns hist[27]."""
    n = holes.shape[0]
    slot_rank = np.zeros(6, np.int64)
    hole_key = np.zeros(3, np.int64)
    holecount = np.zeros(13, np.int64)
    suit_slots = np.zeros(4, np.int64)
    for i in range(n):
        for h in range(2):
            c = holes[i, h]
            slot_rank[2 * i + h] = c >> 2
            hole_key[i] += RANK_KEYS[c >> 2]
            holecount[c >> 2] += 1
            suit_slots[c & 3] |= 1 << (2 * i + h)
    hist = np.zeros(N_CODES, np.int64)
    nonflush_hist(n, hole_key, holecount, hist)
    counts = np.zeros(1 << (2 * n), np.int64)
    for s in range(4):
        counts[suit_slots[s]] += 1
    flush_corrections(n, slot_rank, hole_key, holecount, counts, hist)
    return hist


@njit(cache=True)
def brute_force_deal(holes):
    """Plain enumeration for one deal: every board of the remaining cards, every hand
    evaluated with the 7-card evaluator. ``holes`` is (n, 2) card ints. Returns hist[27]."""
    n = holes.shape[0]
    used = 0
    hk = np.zeros(3, np.int64)
    hb = np.zeros(3, np.int64)
    for i in range(n):
        for h in range(2):
            c = holes[i, h]
            used |= 1 << c
            hk[i] += CARD_KEY[c]
            hb[i] |= CARD_BIT[c]
    rest = np.zeros(52, np.int64)
    m = 0
    for c in range(52):
        if not used >> c & 1:
            rest[m] = c
            m += 1
    hist = np.zeros(N_CODES, np.int64)
    for a in range(m - 4):
        ka = CARD_KEY[rest[a]]
        ba = CARD_BIT[rest[a]]
        for b in range(a + 1, m - 3):
            kb = ka + CARD_KEY[rest[b]]
            bb = ba | CARD_BIT[rest[b]]
            for c in range(b + 1, m - 2):
                kc = kb + CARD_KEY[rest[c]]
                bc = bb | CARD_BIT[rest[c]]
                for d in range(c + 1, m - 1):
                    kd = kc + CARD_KEY[rest[d]]
                    bd = bc | CARD_BIT[rest[d]]
                    for e in range(d + 1, m):
                        k = kd + CARD_KEY[rest[e]]
                        bits = bd | CARD_BIT[rest[e]]
                        v0 = value_from_keys(hk[0] + k, hb[0] | bits)
                        v1 = value_from_keys(hk[1] + k, hb[1] | bits)
                        v2 = 0
                        if n == 3:
                            v2 = value_from_keys(hk[2] + k, hb[2] | bits)
                        hist[comparison_code(v0, v1, v2)] += 1
    return hist


@njit(cache=True, parallel=True)
def brute_force_matchup(n, classes):
    """Plain enumeration of a whole matchup: every deal × every board (reference for tests;
    ≈ 6 ms per 2-hand deal, 12 ms per 3-hand deal and core). Returns (hist[27], deals)."""
    deals = np.zeros((1728, 3, 2), np.int64)
    nd = 0
    c2lo = COMBO_OFFSETS[classes[2]] if n == 3 else 0
    c2hi = COMBO_OFFSETS[classes[2] + 1] if n == 3 else 1
    for x in range(COMBO_OFFSETS[classes[0]], COMBO_OFFSETS[classes[0] + 1]):
        for y in range(COMBO_OFFSETS[classes[1]], COMBO_OFFSETS[classes[1] + 1]):
            for z in range(c2lo, c2hi):
                cards = np.array([COMBOS[x, 0], COMBOS[x, 1], COMBOS[y, 0], COMBOS[y, 1], COMBOS[z, 0], COMBOS[z, 1]])
                used = np.uint64(0)  # the hands' cards as a bit set: a card held twice is no deal
                held_twice = False
                for i in range(2 * n):
                    bit = np.uint64(1) << np.uint64(cards[i])
                    held_twice = held_twice or (used & bit) != 0
                    used |= bit
                if held_twice:
                    continue
                for i in range(n):
                    deals[nd, i, 0] = cards[2 * i]
                    deals[nd, i, 1] = cards[2 * i + 1]
                nd += 1
    hists = np.zeros((nd, N_CODES), np.int64)
    for d in prange(nd):
        hist = brute_force_deal(deals[d, :n].copy())
        for code in range(N_CODES):  # (an array assignment would compile numba's shape-error message)
            hists[d, code] = hist[code]
    total = np.zeros(N_CODES, np.int64)  # (summed by hand: sum(axis=0) compiles numba's axis-error message)
    for d in range(nd):
        for code in range(N_CODES):
            total[code] += hists[d, code]
    return total, nd
