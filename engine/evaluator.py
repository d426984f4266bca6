"""Seven-card poker hand evaluator (OMPEval style), compiled with numba.

A hand of seven cards (ints 0..51, ``card = 4 * rank + suit``, see :mod:`engine.cards`) gets an
integer **value**: higher is stronger, equal values tie. Values are dense (1, 2, …, one per
distinct 7-card strength), so they fit an ``int16``.

How it works (the idea of Henri Mellin's OMPEval, our own keys and tables):

* Every rank r has a **rank key** ``RANK_KEYS[r]``. The keys are chosen (greedily, smallest
  first) so that every multiset of at most seven ranks with at most four copies of a rank has a
  distinct key sum. A non-flush hand's value depends only on its rank multiset, so it is
  ``RANK_TABLE[perfect_hash(sum of rank keys)]``.
* The sum of rank keys is at most ~1.8·10^7, too sparse for a direct table. A row-displacement
  **perfect hash** squeezes it: ``index = (key & HASH_MASK) + HASH_OFFSETS[key >> HASH_SHIFT]``,
  built once so that the 49,205 seven-card keys never collide.
* Suits are counted in the high half of the same 64-bit key (a nibble per suit, see
  ``CARD_KEY``). Adding 3 to every nibble sets its top bit exactly when a suit has five or more
  cards. A flush's value depends only on the ranks of that suit: ``FLUSH_TABLE[13-bit mask]``.
  With seven cards a flush can never coexist with quads or a full house, so the flush value,
  when there is one, is the hand's value.

Everything a hot loop touches is a module-level global array (numba freezes them into the
compiled code; passing them as arguments was measured 7–10× slower) and nothing allocates.

Enumerating loops should sum keys incrementally (``CARD_KEY``, ``CARD_BIT``) and finish with
:func:`value_from_keys`; :func:`evaluate7` does the whole sum for one hand.
"""

from __future__ import annotations

import itertools

import numpy as np
from numba import njit, prange

CATEGORY_NAMES = (
    "high card",
    "pair",
    "two pair",
    "three of a kind",
    "straight",
    "flush",
    "full house",
    "four of a kind",
    "straight flush",
)
"""Hand categories, index = :func:`hand_category` of a value (0 weakest … 8 strongest)."""

RANK_KEYS = np.array(
    [1, 5, 24, 112, 521, 2247, 9244, 30823, 103066, 250154, 667453, 1526359, 3453520],
    dtype=np.int64,
)
"""Per-rank keys (deuce … ace). Found by a greedy search: each key is the smallest integer above
the previous one that keeps the key sums of all rank multisets of size ≤ 7 (≤ 4 copies of a rank)
distinct. ``tests/test_evaluator.py`` re-checks the property for all 7-card multisets."""

SUIT_SHIFT = 32
"""Suit counters live in bits 32.. of a card key: a nibble per suit."""
FLUSH_CHECK_ADD = 0x3333
FLUSH_CHECK_MASK = 0x8888
HASH_SHIFT = 11
HASH_MASK = (1 << HASH_SHIFT) - 1
HASH_WINDOW = 16000
"""Perfect-hash layout: rows of 2,048 key columns; each row is placed within 16,000 slots of the
table's end (a full first-fit search packs ~20 % tighter but takes ~1 s at import). Result:
``RANK_TABLE`` ≈ 112k int16 entries (≈ 220 KiB) and ``HASH_OFFSETS`` ≈ 9k int32."""

CARD_KEY = np.array(
    [RANK_KEYS[c >> 2] + (1 << (SUIT_SHIFT + 4 * (c & 3))) for c in range(52)], dtype=np.int64
)
"""Key of one card: its rank key plus 1 in its suit's nibble. Keys of distinct cards add up."""

CARD_BIT = np.array([1 << (16 * (c & 3) + (c >> 2)) for c in range(52)], dtype=np.int64)
"""One bit per card, 16 bits per suit (bit ``16 * suit + rank``); the OR (= sum) of a hand's
bits gives each suit's 13-bit rank mask."""

_CATEGORY_SHIFT = 20  # raw strength codes: category << 20 | five 4-bit tie-break ranks


# --------------------------------------------------------------------------------------------
# Table construction (runs once at import; compiled with cache=True so later imports are fast)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _straight_high(mask):
    """Rank of the top card of the best straight inside a 13-bit rank mask, or -1."""
    for hi in range(12, 3, -1):
        m = 0x1F << (hi - 4)
        if mask & m == m:
            return hi
    wheel = (1 << 12) | 0xF  # A-2-3-4-5
    if mask & wheel == wheel:
        return 3
    return -1


@njit(cache=True)
def _top_ranks_code(mask, n):
    """The n highest ranks of a mask packed as 4-bit fields, most significant first (5 fields)."""
    code = 0
    taken = 0
    for r in range(12, -1, -1):
        if taken == n:
            break
        if mask >> r & 1:
            code = code * 16 + r
            taken += 1
    for _ in range(5 - taken):
        code *= 16
    return code


@njit(cache=True)
def _flush_code(mask):
    """Raw strength code of a flush made of the ranks in ``mask`` (≥ 5 bits)."""
    hi = _straight_high(mask)
    if hi >= 0:
        return (8 << _CATEGORY_SHIFT) | (hi << 16)
    return (5 << _CATEGORY_SHIFT) | _top_ranks_code(mask, 5)


@njit(cache=True)
def _nonflush_code(counts):
    """Raw strength code of a 7-card rank multiset (``counts[r]`` cards of rank r), ignoring
    suits. Codes order like hands: category first, then tie-break ranks."""
    present = 0
    quad = -1
    trips = -1
    trips2 = -1
    pair1 = -1
    pair2 = -1
    for r in range(12, -1, -1):
        c = counts[r]
        if c == 0:
            continue
        present |= 1 << r
        if c == 4:
            quad = r
        elif c == 3:
            if trips < 0:
                trips = r
            elif trips2 < 0:
                trips2 = r
        elif c == 2:
            if pair1 < 0:
                pair1 = r
            elif pair2 < 0:
                pair2 = r
    if quad >= 0:
        kick = present & ~(1 << quad)
        return (7 << _CATEGORY_SHIFT) | (quad << 16) | (_top_ranks_code(kick, 1) >> 4)
    if trips >= 0 and (trips2 >= 0 or pair1 >= 0):
        pr = max(trips2, pair1)
        return (6 << _CATEGORY_SHIFT) | (trips << 16) | (pr << 12)
    hi = _straight_high(present)
    if hi >= 0:
        return (4 << _CATEGORY_SHIFT) | (hi << 16)
    if trips >= 0:
        kick = present & ~(1 << trips)
        return (3 << _CATEGORY_SHIFT) | (trips << 16) | (_top_ranks_code(kick, 2) >> 4)
    if pair2 >= 0:
        kick = present & ~(1 << pair1) & ~(1 << pair2)
        return (2 << _CATEGORY_SHIFT) | (pair1 << 16) | (pair2 << 12) | (_top_ranks_code(kick, 1) >> 8)
    if pair1 >= 0:
        kick = present & ~(1 << pair1)
        return (1 << _CATEGORY_SHIFT) | (pair1 << 16) | (_top_ranks_code(kick, 3) >> 4)
    return _top_ranks_code(present, 5)


def rank_multisets(size: int) -> np.ndarray:
    """All rank count vectors with ``size`` cards and ≤ 4 per rank, shape (n, 13), int64, in the
    lexicographic order of the sorted rank tuples (49,205 rows for 7 cards, 6,175 for 5)."""
    tuples = np.array(list(itertools.combinations_with_replacement(range(13), size)), dtype=np.int64)
    counts = np.zeros((tuples.shape[0], 13), dtype=np.int64)
    np.add.at(counts, (np.arange(tuples.shape[0])[:, None], tuples), 1)
    return counts[counts.max(axis=1) <= 4]


@njit(cache=True)
def _raw_codes(multisets):
    keys = np.zeros(multisets.shape[0], np.int64)
    codes = np.zeros(multisets.shape[0], np.int64)
    for i in range(multisets.shape[0]):
        k = 0
        for r in range(13):
            k += multisets[i, r] * RANK_KEYS[r]
        keys[i] = k
        codes[i] = _nonflush_code(multisets[i])
    return keys, codes


@njit(cache=True)
def _flush_codes():
    codes = np.zeros(1 << 13, np.int64)
    for m in range(1 << 13):
        bits = 0
        x = m
        while x:
            x &= x - 1
            bits += 1
        if bits >= 5:
            codes[m] = _flush_code(m)
    return codes


@njit(cache=True)
def _next_free(parent, i):
    """First free slot ≥ i (union-find over runs of used slots, with path compression)."""
    root = i
    while parent[root] != root:
        root = parent[root]
    while parent[i] != root:
        nxt = parent[i]
        parent[i] = root
        i = nxt
    return root


@njit(cache=True)
def _build_perfect_hash(keys, shift, window):
    """Row-displacement perfect hash of distinct non-negative ``keys``.

    Row = key >> shift, column = key & mask. Rows are placed densest first, each at the smallest
    offset ≥ (current table size − ``window``) where none of its columns lands on a used slot
    (the window trades a little table size for a much shorter search). Returns
    (offsets per row, table size)."""
    mask = (1 << shift) - 1
    n_rows = (keys.max() >> shift) + 1
    row_count = np.zeros(n_rows, np.int64)
    for k in keys:
        row_count[k >> shift] += 1
    order = np.argsort(-row_count, kind="mergesort")
    starts = np.zeros(n_rows + 1, np.int64)
    for r in range(n_rows):
        starts[r + 1] = starts[r] + row_count[r]
    fill = starts[:-1].copy()
    cols = np.zeros(keys.shape[0], np.int64)
    for k in keys:
        r = k >> shift
        cols[fill[r]] = k & mask
        fill[r] += 1
    cap = 4 * keys.shape[0] + 4 * (mask + 1)
    parent = np.arange(cap + 1)  # parent[i] == i: slot i is free
    offsets = np.zeros(n_rows, np.int64)
    size = 0
    for oi in range(n_rows):
        r = order[oi]
        if row_count[r] == 0:
            break
        c0 = starts[r]
        c1 = starts[r + 1]
        min_col = cols[c0:c1].min()
        off = max(_next_free(parent, min_col) - min_col, size - window - min_col, 0)
        moved = True
        while moved:
            if off + mask >= cap:
                raise ValueError("perfect hash: table capacity exceeded")
            moved = False
            for j in range(c0, c1):
                p = off + cols[j]
                q = _next_free(parent, p)
                if q != p:  # slot taken: shift the row so this column meets the next free slot
                    off = q - cols[j]
                    moved = True
                    break
        for j in range(c0, c1):
            p = off + cols[j]
            parent[p] = p + 1
            size = max(size, p + 1)
        offsets[r] = off
    return offsets, size


def _build_tables():
    multisets = rank_multisets(7)
    keys, codes = _raw_codes(multisets)
    flush_codes = _flush_codes()
    flush_masks = np.flatnonzero(flush_codes)
    all_codes = np.unique(np.concatenate([codes, flush_codes[flush_masks]]))
    # dense values 1..n in code order (0 is reserved for "no hand")
    rank_values = np.searchsorted(all_codes, codes).astype(np.int16) + 1
    flush_table = np.zeros(1 << 13, np.int16)
    flush_table[flush_masks] = np.searchsorted(all_codes, flush_codes[flush_masks]) + 1
    offsets, size = _build_perfect_hash(keys, HASH_SHIFT, HASH_WINDOW)
    rank_table = np.zeros(size, np.int16)
    rank_table[(keys & HASH_MASK) + offsets[keys >> HASH_SHIFT]] = rank_values
    # first value of each category (category thresholds on the dense scale)
    cats = all_codes >> _CATEGORY_SHIFT
    starts = np.searchsorted(cats, np.arange(10)).astype(np.int32) + 1
    return rank_table, offsets.astype(np.int32), flush_table, starts


RANK_TABLE, HASH_OFFSETS, FLUSH_TABLE, CATEGORY_START = _build_tables()
"""RANK_TABLE[perfect hash of a 7-card rank key sum] = value of that rank multiset without flush;
FLUSH_TABLE[13-bit rank mask of the flush suit] = value of the flush (or straight flush);
CATEGORY_START[k] = smallest value of category k (CATEGORY_START[9] = largest value + 1)."""

N_VALUES = int(CATEGORY_START[9] - 1)
"""Number of distinct 7-card hand values (4,824)."""


# --------------------------------------------------------------------------------------------
# Evaluation (hot path)
# --------------------------------------------------------------------------------------------


@njit(cache=True, inline="always")
def rank_value(rank_key):
    """Value of a 7-card hand without a flush, from the sum of its cards' rank keys."""
    return RANK_TABLE[(rank_key & HASH_MASK) + HASH_OFFSETS[rank_key >> HASH_SHIFT]]


@njit(cache=True, inline="always")
def flush_value(mask):
    """Value of a flush whose suit holds the ranks of the 13-bit ``mask`` (≥ 5 bits set)."""
    return FLUSH_TABLE[mask]


@njit(cache=True, inline="always")
def flush_suit(key):
    """Suit (0..3) with five or more cards in a 7-card key, or -1."""
    f = ((key >> SUIT_SHIFT) + FLUSH_CHECK_ADD) & FLUSH_CHECK_MASK
    if f == 0:
        return -1
    if f & 0x8:
        return 0
    if f & 0x80:
        return 1
    if f & 0x800:
        return 2
    return 3


@njit(cache=True, inline="always")
def value_from_keys(key, bits):
    """Value of a 7-card hand from the sums of its ``CARD_KEY`` and ``CARD_BIT`` entries."""
    s = flush_suit(key)
    if s >= 0:
        return FLUSH_TABLE[(bits >> (16 * s)) & 0x1FFF]
    return rank_value(key & 0xFFFFFFFF)


@njit(cache=True)
def evaluate7(c0, c1, c2, c3, c4, c5, c6):
    """Value of the 7-card hand (cards 0..51, distinct): higher is stronger, equal is a tie."""
    key = (
        CARD_KEY[c0] + CARD_KEY[c1] + CARD_KEY[c2] + CARD_KEY[c3] + CARD_KEY[c4] + CARD_KEY[c5] + CARD_KEY[c6]
    )
    s = flush_suit(key)
    if s >= 0:
        mask = 0
        if c0 & 3 == s:
            mask |= 1 << (c0 >> 2)
        if c1 & 3 == s:
            mask |= 1 << (c1 >> 2)
        if c2 & 3 == s:
            mask |= 1 << (c2 >> 2)
        if c3 & 3 == s:
            mask |= 1 << (c3 >> 2)
        if c4 & 3 == s:
            mask |= 1 << (c4 >> 2)
        if c5 & 3 == s:
            mask |= 1 << (c5 >> 2)
        if c6 & 3 == s:
            mask |= 1 << (c6 >> 2)
        return FLUSH_TABLE[mask]
    return rank_value(key & 0xFFFFFFFF)


@njit(cache=True)
def hand_category(value):
    """Category of a hand value: 0 high card … 8 straight flush (see ``CATEGORY_NAMES``)."""
    k = 0
    while k < 8 and value >= CATEGORY_START[k + 1]:
        k += 1
    return k


@njit(cache=True)
def evaluate_many(hands):
    """Values of an (n, 7) array of hands (one core)."""
    out = np.empty(hands.shape[0], np.int16)
    for i in range(hands.shape[0]):
        h = hands[i]
        out[i] = evaluate7(h[0], h[1], h[2], h[3], h[4], h[5], h[6])
    return out


@njit(cache=True, parallel=True)
def category_counts_all():
    """Number of hands per category over all C(52,7) = 133,784,560 seven-card hands.

    Parallel over the first two cards (ordered heaviest first, dealt round-robin to threads);
    the remaining five are enumerated with incremental key sums."""
    n_pairs = 51 * 52 // 2
    first = np.empty(n_pairs, np.int64)
    second = np.empty(n_pairs, np.int64)
    i = 0
    for a in range(52):
        for b in range(a + 1, 52):
            first[i] = a
            second[i] = b
            i += 1
    n_workers = 64
    partial = np.zeros((n_workers, 9), np.int64)
    for w in prange(n_workers):
        for t in range(w, n_pairs, n_workers):
            a = first[t]
            b = second[t]
            k1 = CARD_KEY[a] + CARD_KEY[b]
            m1 = CARD_BIT[a] | CARD_BIT[b]
            for c in range(b + 1, 48):
                k2 = k1 + CARD_KEY[c]
                m2 = m1 | CARD_BIT[c]
                for d in range(c + 1, 49):
                    k3 = k2 + CARD_KEY[d]
                    m3 = m2 | CARD_BIT[d]
                    for e in range(d + 1, 50):
                        k4 = k3 + CARD_KEY[e]
                        m4 = m3 | CARD_BIT[e]
                        for f in range(e + 1, 51):
                            k5 = k4 + CARD_KEY[f]
                            m5 = m4 | CARD_BIT[f]
                            for g in range(f + 1, 52):
                                v = value_from_keys(k5 + CARD_KEY[g], m5 | CARD_BIT[g])
                                partial[w, hand_category(v)] += 1
    counts = np.zeros(9, np.int64)  # summed by hand: sum(axis=0) compiles numba's axis-error message (about 5 s)
    for w in range(n_workers):
        for k in range(9):
            counts[k] += partial[w, k]
    return counts
