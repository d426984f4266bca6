"""Numba kernels of the Monte Carlo tournament simulation (see :mod:`engine.simulation`).

**Random numbers.** Every tournament has its own splitmix64 stream, started at
``mix64(mix64(seed) + (index + 1) · γ)`` (γ = 2⁶⁴/φ, the splitmix increment). Results therefore
depend only on (seed, tournament index), never on which thread ran a tournament or in which order;
blocks of :data:`BLOCK` tournaments are summed in block order, so even the floating-point sums are
the same for any thread count.

**Cards** (SPEC §2.6). A decider's hand is drawn uniformly from the 1,326 two-card combos that
miss the cards of the jammers already in the pot (rejection sampling on a card bit mask); a
folded hand goes back to the deck, i.e. nothing is removed. Players who reach the showdown
without deciding (blind all-ins, an automatically calling BB) are dealt at the showdown from the
deck minus every in-pot hand, in deal order. This reproduces the solver's p1 / cond2 / cond3.
The low 32 bits u of the draw that dealt a decider's hand decide: jam iff u < p · 2³² (so p = 0
never and p = 1 always jams, and no extra draw is needed).

**Showdown.** The finishing order of the in-pot classes (deal order) is drawn from ``win2``
(two hands: outcome 0 = first dealt wins) or, for three hands, from the order probabilities of
their sorted classes (:func:`order3_thresholds`): outcome o = the o-th permutation of the deal
order in lexicographic order, best first, the outcome numbering of
:func:`engine.game_tree.compile_hand`. The three classes are sorted, an order over the sorted
hands is drawn from the row of the class multiset {a ≤ b ≤ c} (:func:`triple_row`), and
:data:`SORTED_TO_DEAL` maps it back to the deal order. The showdown tables' rows with repeated
classes are symmetric in those hands (SPEC §3; exact, or symmetrized when sampled), so how ties
sort does not matter. 818,805 rows of 5 uint32 cumulative thresholds take 16 MB instead of the
116 MB of a float32 table over all 169³ ordered triples, so a 3-way showdown's row is more often
in cache (on a 15-unit game whose synthetic profile has 0.39 three-way showdowns a hand, 11 %
less time, interleaved A/B runs in one process; 5 % on its equilibrium, 0.045 a hand).

Outcome records (``out_rec[outcome]``, 16 bytes, :data:`OUT_RECORD_BYTES`): the next state's own
record, so that a hand goes from its outcome to the next state's profile rows without a load in
between — bytes 0–3 its first profile row and 4–7 its first outcome (two uint32), byte 8
its key (:data:`OVER` = the tournament is over), byte 9 its players — then from byte 10
(:data:`OUT_CODES`) one code byte per old position: < 128 = seat in the next state; otherwise
the player's place is decided now and ``256 − code = 8 · best_place + tied``, where
``tied`` players eliminated with equal starting stacks share the places best_place …
best_place+tied−1 (the tournament winner has best_place 1, tied 1). The prize ($) is
``share[best_place, tied]``; the *sampled* place of a tied player is a uniformly random one of the
shared places (a random permutation within the tie).

**Speed** (45-unit 5-player start, ``python -m engine.bench_simulation``, 2-core AMD EPYC VM,
a synthetic profile that mixes one class per node): about 70 ns per hand per thread, 1.2 M
tournaments/s on 2 threads (stop 57; 1.0–1.45 M on the 8 MiB-L3 VM after stop 79's changes below).
The time goes to chains of dependent cache misses (profile row per decision → outcome record,
which holds the next state's record → the next state's rows; a dependent load beyond ~8 MB
measured 110–210 ns here) and to mispredicted jam/fold branches, so the profile is played in its compact form
(:func:`compact_rows`: one 64-byte line per node instead of 169 float32 over 11 lines; 196 MiB
instead of 1.8 GiB for that game, so far more of the visited rows stay in the 32 MB L3):
1.24 M/s against 0.95 M/s for the dense float32 rows on the same day. Tried and measured
slower: branchless decisions (they stop the CPU from running ahead on the likely branch),
interleaving 8 tournaments per thread with software prefetches (and 2, in registers, with or
without prefetches: no gain on the 8 MiB-L3 VM either), playing groups of tournaments in
rounds taken in the order of their states (30–120 % slower: the hot states' rows are already in
cache), deciding an open actor's jam by
one draw against his row's P(jam) and dealing only a jammer's hand (4–33 % slower: the jammer's
hand, drawn by rejection from his range, costs as many deals as dealing every open actor, and the
extra jam-or-not branch is as unpredictable as the deal's), and prefetching a hand's profile rows
and outcome records when its state is read (within the machine's noise), and 32-byte rows with the
mixed classes in a side table (half the bytes, no faster; PERFORMANCE.md, "The simulation"). ``perf`` (``./lab bench simulation --perf-map``) puts about 40 % of the loop's
samples on four loads: the profile row (about a fifth), the outcome record, the next state's
record and ``win2``. Tied eliminations are placed
with a scratch buffer of the block: allocating one per tie cost 10 % more time on the 15-unit
profile above (whose equal stacks often bust together). The random stream's state is a scalar
that each draw returns, not a one-element array: 8–9 % less time (stop 78). Heads-up hands, 16.1
of the 23.4 a tournament plays from the 45-unit 5-player start, are played by :func:`_heads_up_hands`
from the four heads-up trees written out in code, the two seats in registers: the same draws and
tournaments as the general tree walk, in about 0.78 of the whole time (stop 79). Each outcome
record carries the next state's record, so no state record is read between two hands (another
0.93; both together 0.74–0.75 of stop 78's kernel, interleaved A/B; on real equilibria 0.83 for
`gs08`'s and 0.90 for a 20-unit 5-player game's, whose hands are 51 % and 26 % heads-up against the
bench's 69 %: ``hand_events`` counts the shares).
(The combo index ``(x >> 32) · 1326 >> 32`` is uniform up to a relative 1326/2³² ≈ 3e-7.)
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numba import njit, prange

from engine.cards import COMBO_OFFSETS, COMBOS, N_CLASSES
from engine.rollout import N_TRIPLE_ROWS, triple_classes

BLOCK = 1024  # tournaments per block (the unit of parallel work and of the ordered sums)
MAX_SEATS = 6
OUT_RECORD_BYTES = 16
"""Bytes of an outcome record (see the module docstring): 10 for the next state, one per seat."""
OUT_KEY = 8
OUT_PLAYERS = 9
OUT_CODES = 10
OVER = 255
"""The key byte of an outcome that ends the tournament."""

GAMMA = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_MASK32 = np.uint64(0xFFFFFFFF)
_U1326 = np.uint64(1326)
_S11 = np.uint64(11)
_S30 = np.uint64(30)
_S27 = np.uint64(27)
_S31 = np.uint64(31)
_S32 = np.uint64(32)
_S33 = np.uint64(33)
_ONE = np.uint64(1)
_S2 = np.uint64(2)
_S4 = np.uint64(4)
_S56 = np.uint64(56)
_B55 = np.uint64(0x5555555555555555)  # popcount masks
_B33 = np.uint64(0x3333333333333333)
_B0F = np.uint64(0x0F0F0F0F0F0F0F0F)
_B01 = np.uint64(0x0101010101010101)
TWO32 = 4294967296.0
_TWO_M53 = 1.0 / 9007199254740992.0

COMBO_BITS = np.array([(1 << int(a)) | (1 << int(b)) for a, b in COMBOS], dtype=np.uint64)
"""Card bit mask of each of the 1,326 combos (grouped by class, see :data:`engine.cards.COMBOS`)."""
COMBO_CLASS = np.repeat(np.arange(N_CLASSES), np.diff(COMBO_OFFSETS)).astype(np.uint8)


@njit(cache=True, inline="always")
def mix64(z):
    """splitmix64 finaliser: a bijective 64-bit hash."""
    z = (z ^ (z >> _S30)) * _M1
    z = (z ^ (z >> _S27)) * _M2
    return z ^ (z >> _S31)


@njit(cache=True, inline="always")
def next_u64(s):
    """The splitmix64 stream at state ``s`` one step on: (its new state, its output).

    The caller carries the state as a scalar, so that it stays in a register: kept in a one-element
    array, it was stored and loaded again at every draw, and the simulation took 8–10 % longer
    (interleaved A/B, the same tournaments; PERFORMANCE.md, "The simulation")."""
    s = s + GAMMA
    return s, mix64(s)


@njit(cache=True, inline="always")
def stream_start(seed, index):
    """The state that starts the stream of tournament ``index`` (counter-based: no dependence on
    other streams)."""
    return mix64(mix64(np.uint64(seed)) + (np.uint64(index) + _ONE) * GAMMA)


@njit(cache=True, inline="always")
def uniform(s):
    """(new state, a float64 uniform on [0, 1) with 53 random bits)."""
    s, x = next_u64(s)
    return s, np.float64(x >> _S11) * _TWO_M53


@njit(cache=True, inline="always")
def draw_hand(s, used):
    """A combo uniform among those missing the card mask ``used``: (new stream state, card bits,
    class, the low 32 bits of the accepted draw — independent of the combo, free for the decision)."""
    while True:
        s, x = next_u64(s)
        i = np.int64(((x >> _S32) * _U1326) >> _S32)
        bits = COMBO_BITS[i]
        if used & bits == 0:
            return s, bits, np.int64(COMBO_CLASS[i]), x & _MASK32


TRIPLE_ROWS = N_TRIPLE_ROWS
"""Multisets {a ≤ b ≤ c} of three of the 169 classes: C(171, 3) = 818,805, the showdown tables' rows."""
ORDER_ONE = 2 ** 31
"""Probability 1 in :func:`order3_thresholds` (31-bit fixed point, so that 1 fits a uint32)."""
_PERMS3 = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))  # lexicographic
SORTED_TO_DEAL = np.array([[_PERMS3.index(tuple(s[q] for q in _PERMS3[j])) for j in range(6)] for s in _PERMS3],
                          np.int64)
"""``SORTED_TO_DEAL[s, j]``: the deal-order outcome of sorted-order outcome j when the sort puts
the deal positions ``_PERMS3[s]`` first, second and third (sorted[i] = deal[_PERMS3[s][i]])."""


@njit(cache=True, inline="always")
def triple_row(a, b, c):
    """Row of the class multiset {a ≤ b ≤ c} in :func:`order3_thresholds` (rows ordered by c, b, a)."""
    return (c + 2) * (c + 1) * c // 6 + (b + 1) * b // 2 + a


@njit(cache=True, inline="always")
def _sort3(c0, c1, c2):
    """(index s of the sorting permutation in _PERMS3, smallest, middle, largest class)."""
    if c0 <= c1:
        if c1 <= c2:
            return 0, c0, c1, c2
        if c0 <= c2:
            return 1, c0, c2, c1
        return 4, c2, c0, c1
    if c0 <= c2:
        return 2, c1, c0, c2
    if c1 <= c2:
        return 3, c1, c2, c0
    return 5, c2, c1, c0


@njit(cache=True, inline="always")
def draw_order(s, nd, c0, c1, c2, win2, order3):
    """(new stream state, outcome index of a showdown among ``nd`` in-pot classes, in deal order;
    0 without showdown). ``order3``: the thresholds of :func:`order3_thresholds`."""
    if nd == 2:
        s, u = uniform(s)
        return s, np.int64(0 if u < win2[c0, c1] else 1)
    if nd == 3:
        return _draw_order3(s, c0, c1, c2, order3)
    return s, np.int64(0)


@njit(cache=True)
def _draw_order3(s, c0, c1, c2, order3):
    """A 3-way showdown's (new stream state, outcome in deal order); kept out of line, off the hot
    loop (rarer than 2-way)."""
    k, a, b, c = _sort3(c0, c1, c2)
    r = triple_row(a, b, c)
    s, x = next_u64(s)
    u = np.int64(x >> _S33)  # 31 random bits
    o = 0
    while o < 5 and u >= np.int64(order3[r, o]):
        o += 1
    return s, SORTED_TO_DEAL[k, o]


def order3_thresholds(order_probs: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray:
    """The kernel's 3-way showdown table: uint32 (TRIPLE_ROWS, 5), row :func:`triple_row` (a, b, c)
    holds round(2³¹ · P(one of the first k + 1 orders)) for k = 0..4, orders over the hands of
    classes (a, b, c) in that order, lexicographic, best first (the 6th cumulative is 1).
    ``order_probs(a, b, c)`` gives those probabilities (rows × 6) for arrays of sorted triples;
    rows that cannot be dealt (NaN) always draw order 0."""
    a, b, c = triple_classes().astype(np.int64).T  # the tables' sorted triples, in their row order
    cum = np.cumsum(np.asarray(order_probs(a, b, c), np.float64)[:, :5], axis=1)
    cum = np.where(np.isnan(cum).any(axis=1, keepdims=True), 1.0, cum)
    out = np.empty((TRIPLE_ROWS, 5), np.uint32)
    out[triple_row.py_func(a, b, c)] = np.rint(np.clip(cum, 0.0, 1.0) * ORDER_ONE)
    return out


ROW_WORDS = 8
"""uint64 words per compact profile row: 64 bytes, one cache line (see :func:`compact_rows`)."""


@njit(cache=True, inline="always")
def popcount(x):
    """Set bits of a uint64 (SWAR; numba has no popcnt intrinsic)."""
    x = x - ((x >> _ONE) & _B55)
    x = (x & _B33) + ((x >> _S2) & _B33)
    x = (x + (x >> _S4)) & _B0F
    return np.int64((x * _B01) >> _S56)


@njit(cache=True, parallel=True)
def compact_rows(dense, scale):
    """Compact exact form of a dense (R, 169) profile (float32 probabilities or uint8 levels).

    The kernel jams when u32 < e · ``scale`` (u32 uniform on 0 … 2³² − 1, e the dense entry), i.e.
    when u32 < ⌈e · scale⌉, so a row is stored as 8 uint64 words (64 bytes, one cache line instead
    of 169 entries over 3–11 lines): words 0–2 = the classes that always jam (bit c & 63 of word
    c >> 6), words 3–5 = the mixed classes (0 < e · scale < 2³²), word 6 = the index in
    ``thresholds`` of the row's first mixed class; the mixed classes' thresholds ⌈e · scale⌉
    (uint64) follow in class order. The decisions, and so the simulated tournaments, are exactly
    those of the dense profile; an equilibrium has a few mixed classes per node.
    Returns (rows uint64 (R, 8), thresholds uint64 (mixed entries,)).
    """
    R = dense.shape[0]
    count = np.zeros(R, np.int64)
    rows = np.zeros((R, ROW_WORDS), np.uint64)
    for r in prange(R):
        k = 0
        for c in range(dense.shape[1]):
            v = np.float64(dense[r, c]) * scale
            bit = _ONE << np.uint64(c & 63)
            if v >= TWO32:
                rows[r, c >> 6] |= bit
            elif v > 0.0:
                rows[r, 3 + (c >> 6)] |= bit
                k += 1
        count[r] = k
    first = np.zeros(R + 1, np.int64)
    for r in range(R):
        first[r + 1] = first[r] + count[r]
    thresholds = np.zeros(first[R], np.uint64)
    for r in prange(R):
        rows[r, 6] = np.uint64(first[r])
        k = first[r]
        for c in range(dense.shape[1]):
            v = np.float64(dense[r, c]) * scale
            if 0.0 < v < TWO32:
                thresholds[k] = np.uint64(np.ceil(v))
                k += 1
    return rows, thresholds


@njit(cache=True, inline="always")
def jams(rows, thresholds, r, c, u32):
    """Decision of compact row r for class c given the deal draw's low 32 bits (see :func:`compact_rows`)."""
    w = c >> 6
    bit = _ONE << np.uint64(c & 63)
    if rows[r, 3 + w] & bit:
        k = np.int64(rows[r, 6]) + popcount(rows[r, 3 + w] & (bit - _ONE))
        for i in range(w):
            k += popcount(rows[r, 3 + i])
        return u32 < thresholds[k]
    return rows[r, w] & bit != 0


@njit(cache=True, parallel=True)
def simulate_blocks(start, seat_prof, rows, thresholds, profile_rows, seed, tournaments, block0, max_hands,
                    st_rec, key_root, key_node_off, key_term_off, nd_actor, nd_fold, nd_jam,
                    tm_ndeal, tm_out, out_rec, out_words, share, win2, order3,
                    pay_sum, pay_cross, place_cnt, hands_sum, unfinished, events, heads_up=True):
    """Play blocks ``block0``, ``block0`` + 1, … (as many as ``pay_sum`` has rows) of the
    ``tournaments`` tournaments from global state ``start``; sums per block of BLOCK (row b of the
    outputs is block ``block0`` + b). A tournament's stream depends on its index alone, so playing
    the blocks in several calls gives the same sums as one call.

    The player starting in position i uses profile ``seat_prof[i]``: compact rows (see
    :func:`compact_rows`) ``seat_prof[i] · profile_rows`` … of the stacked ``rows``, whose word 6
    indexes the stacked ``thresholds``.
    ``st_rec[start]`` = (players, key, first profile row, first outcome) of the start state; every
    later state's are in the outcome record that leads to it (``out_rec``, and ``out_words`` = the
    same records as uint32, see :data:`OUT_RECORD_BYTES`). Writes,
    per block b: ``pay_sum[b, i]`` ($), ``pay_cross[b, i, j]`` (Σ pay_i·pay_j, $²),
    ``place_cnt[b, i, q]`` (finished in place q+1), ``hands_sum[b]``, ``events[b]`` = (decisions,
    2-way showdowns, 3-way showdowns, hands played heads-up, hands played three-handed) and
    ``unfinished[b]``
    (tournaments stopped after ``max_hands`` hands: the players still in are paid 0 and get no
    place).
    ``heads_up``: play heads-up hands in :func:`_heads_up_hands` (the caller checks the game's
    heads-up trees with :func:`heads_up_layout_ok`); False plays them through the general tree walk,
    the same tournaments to the bit, slower (kept so that a test can compare the two).
    """
    n0 = st_rec[start, 0]
    nblocks = pay_sum.shape[0]
    for b in prange(nblocks):
        seat_player = np.zeros(MAX_SEATS, np.int64)
        seat_base = np.zeros(MAX_SEATS, np.int64)  # first row of the profile of the player in each position
        new_seat = np.zeros(MAX_SEATS, np.int64)
        pay = np.zeros(MAX_SEATS)
        place = np.zeros(MAX_SEATS, np.int64)
        cls = np.zeros(3, np.int64)
        tied = np.zeros(MAX_SEATS, np.int64)
        group = np.zeros(MAX_SEATS, np.int64)
        # the block's sums stay local until its end (no false sharing between threads)
        b_sum = np.zeros(n0)
        b_cross = np.zeros((n0, n0))
        b_place = np.zeros((n0, n0), np.int64)
        b_hands = 0
        b_unfinished = 0
        b_decisions = 0
        b_two = 0
        b_three = 0
        b_heads_up = 0  # hands played heads-up and three-handed (the rest: four or more players)
        b_three_handed = 0
        lo_t = (block0 + b) * BLOCK
        hi_t = min(lo_t + BLOCK, tournaments)
        for t in range(lo_t, hi_t):
            s = stream_start(seed, t)  # the tournament's stream (a scalar: in a register)
            for i in range(n0):
                seat_player[i] = i
                seat_base[i] = seat_prof[i] * profile_rows
                pay[i] = 0.0
                place[i] = 0
            n = n0  # the hand's state: players, key, first profile row, first outcome (in registers)
            k = st_rec[start, 1]
            row0 = st_rec[start, 2]
            out0 = st_rec[start, 3]
            live = True
            hands = 0
            while live and hands < max_hands:
                hands += 1
                if n == 2 and heads_up:  # the rest of the tournament is heads-up (16 of 23 hands at 45 units)
                    first = hands
                    s, hands, out, decisions, showdowns = _heads_up_hands(
                        s, hands, max_hands, k, row0, out0, seat_player, seat_base, rows, thresholds, out_rec,
                        out_words, win2)
                    b_heads_up += hands - first + 1
                    b_decisions += decisions
                    b_two += showdowns
                    if out < 0:  # stopped at max_hands, still playing
                        break
                else:
                    if n == 2:
                        b_heads_up += 1
                    elif n == 3:
                        b_three_handed += 1
                    ref = np.int64(key_root[k])
                    koff = key_node_off[k]
                    used = np.uint64(0)
                    nj = 0
                    while ref >= 0:  # one decision: deal the actor's hand, jam with probability p
                        kn = koff + ref
                        b_decisions += 1
                        s, bits, c, u32 = draw_hand(s, used)
                        if jams(rows, thresholds, seat_base[nd_actor[kn]] + row0 + ref, c, u32):
                            used |= bits
                            cls[nj] = c
                            nj += 1
                            ref = np.int64(nd_jam[kn])
                        else:
                            ref = np.int64(nd_fold[kn])
                    kt = key_term_off[k] + (-1 - ref)
                    nd = tm_ndeal[kt]
                    if nd == 2:
                        b_two += 1
                    elif nd == 3:
                        b_three += 1
                    for i in range(nj, nd):  # showdown-only players are dealt now
                        s, bits, c, _ = draw_hand(s, used)
                        used |= bits
                        cls[i] = c
                    s, o = draw_order(s, nd, cls[0], cls[1], cls[2], win2, order3)
                    out = out0 + tm_out[kt] + o
                ntied = np.int64(0)  # (a literal 0 would compile _break_ties twice)
                for p in range(n):
                    code = np.int64(out_rec[out, OUT_CODES + p])
                    pid = seat_player[p]
                    if code < 128:
                        new_seat[code] = pid
                    else:
                        v = 256 - code
                        best = v >> 3
                        cnt = v & 7
                        pay[pid] = share[best, cnt]
                        place[pid] = best
                        if cnt > 1:
                            tied[ntied] = p
                            ntied += 1
                if ntied > 0:
                    s = _break_ties(s, tied, ntied, out_rec, out, seat_player, place, group)
                k = np.int64(out_rec[out, OUT_KEY])
                live = k != OVER
                if live:
                    n = np.int64(out_rec[out, OUT_PLAYERS])
                    row0 = np.int64(out_words[out, 0])
                    out0 = np.int64(out_words[out, 1])
                    for i in range(n):
                        pid = new_seat[i]
                        seat_player[i] = pid
                        seat_base[i] = seat_prof[pid] * profile_rows
            b_hands += hands
            if live:
                b_unfinished += 1
            for i in range(n0):
                b_sum[i] += pay[i]
                for j in range(n0):
                    b_cross[i, j] += pay[i] * pay[j]
                if place[i] > 0:
                    b_place[i, place[i] - 1] += 1
        hands_sum[b] = b_hands
        events[b, 0] = b_decisions
        events[b, 1] = b_two
        events[b, 2] = b_three
        events[b, 3] = b_heads_up
        events[b, 4] = b_three_handed
        unfinished[b] = b_unfinished
        pay_sum[b, :] = b_sum
        pay_cross[b, :, :] = b_cross
        place_cnt[b, :, :] = b_place


HEADS_UP_KEYS = (
    # (root, nodes as (actor, fold child, jam child), terminals as (hands at the showdown, first outcome))
    (0, ((0, -1, 1), (1, -2, -3)), ((0, 0), (0, 1), (2, 2))),  # both blinds covered: SB, then BB decides
    (0, ((0, -1, -2),), ((0, 0), (2, 1))),  # BB all-in by the blind: the SB alone decides
    (-1, (), ((2, 0),)),  # SB all-in by the blind: no decision
    (-1, (), ((2, 0),)),  # both all-in by the blinds
)
"""The heads-up hand trees that :func:`_heads_up_hands` plays without reading them: keys 0–3 of a
packed game (``4·(n − 2) + 2·[SB all-in] + [BB all-in]`` for n = 2; position 0 is the SB). Children:
a node index, or −1 − terminal index."""


def heads_up_layout_ok(key_root, key_node_off, key_term_off, node_actor, node_fold, node_jam, term_ndeal,
                       term_out) -> bool:
    """Whether a packed game's heads-up trees are :data:`HEADS_UP_KEYS` (then the kernel may play
    heads-up hands with :func:`_heads_up_hands`)."""
    if len(key_root) < len(HEADS_UP_KEYS):
        return False
    for k, (root, nodes, terms) in enumerate(HEADS_UP_KEYS):
        n0, n1 = int(key_node_off[k]), int(key_node_off[k + 1])
        t0, t1 = int(key_term_off[k]), int(key_term_off[k + 1])
        have_nodes = tuple(zip(node_actor[n0:n1].tolist(), node_fold[n0:n1].tolist(), node_jam[n0:n1].tolist()))
        have_terms = tuple(zip(term_ndeal[t0:t1].tolist(), term_out[t0:t1].tolist()))
        if int(key_root[k]) != root or have_nodes != nodes or have_terms != terms:
            return False
    return True


@njit(cache=True, inline="always")
def _heads_up_order(s, c0, c1, win2):
    """(new stream state, outcome of a heads-up showdown: 0 = the first dealt wins), as :func:`draw_order`."""
    s, u = uniform(s)
    return s, np.int64(0 if u < win2[c0, c1] else 1)


@njit(cache=True)
def _heads_up_hands(s, hands, max_hands, k, row0, out0, seat_player, seat_base, rows, thresholds, out_rec, out_words,
                    win2):
    """Heads-up hands from the state of key ``k``, first profile row ``row0`` and first outcome
    ``out0`` (hand number ``hands``) until one ends the tournament, with the trees of
    :data:`HEADS_UP_KEYS` written out and the two seats in registers. The same draws in the same
    order as the general tree walk of :func:`simulate_blocks`, so the same tournaments; the whole
    kernel took 0.78 of its time with it on the bench's 45-unit 5-player profile (interleaved A/B;
    PERFORMANCE.md, "The simulation"). Returns (stream state, hands, the last hand's outcome — or −1
    when ``max_hands`` stopped the tournament before its end —, decisions, showdowns); the caller
    settles the last outcome."""
    p0 = seat_player[0]
    p1 = seat_player[1]
    b0 = seat_base[0]
    b1 = seat_base[1]
    decisions = 0
    showdowns = 0
    while True:
        out = out0
        if k <= 1:  # the SB decides
            decisions += 1
            s, bits0, c0, u32 = draw_hand(s, np.uint64(0))
            if jams(rows, thresholds, b0 + row0, c0, u32):
                if k == 0:  # the BB decides
                    decisions += 1
                    s, bits1, c1, u32 = draw_hand(s, bits0)
                    if jams(rows, thresholds, b1 + row0 + 1, c1, u32):
                        showdowns += 1
                        s, o = _heads_up_order(s, c0, c1, win2)
                        out += 2 + o
                    else:
                        out += 1
                else:  # the BB is all-in: dealt at the showdown
                    showdowns += 1
                    s, _, c1, _ = draw_hand(s, bits0)
                    s, o = _heads_up_order(s, c0, c1, win2)
                    out += 1 + o
        else:  # the SB is all-in by the blind: both dealt at the showdown
            showdowns += 1
            s, bits0, c0, _ = draw_hand(s, np.uint64(0))
            s, _, c1, _ = draw_hand(s, bits0)
            s, o = _heads_up_order(s, c0, c1, win2)
            out += o
        k = np.int64(out_rec[out, OUT_KEY])
        if k == OVER:  # this hand ends the tournament
            break
        if out_rec[out, OUT_CODES] != 0:  # the SB moves to the BB (the button passes)
            p0, p1 = p1, p0
            b0, b1 = b1, b0
        row0 = np.int64(out_words[out, 0])
        out0 = np.int64(out_words[out, 1])
        if hands >= max_hands:
            out = -1
            break
        hands += 1
    seat_player[0] = p0
    seat_player[1] = p1
    seat_base[0] = b0
    seat_base[1] = b1
    return s, hands, out, decisions, showdowns


@njit(cache=True)
def _break_ties(s, tied, ntied, out_rec, out, seat_player, place, group):
    """Random places within each group of tied eliminations (same best place); ``group`` is a
    scratch buffer of MAX_SEATS (no allocation in the hot loop). Returns the new stream state."""
    for a in range(ntied):
        pa = tied[a]
        if pa < 0:
            continue
        v = 256 - np.int64(out_rec[out, OUT_CODES + pa])
        best = v >> 3
        m = 0
        for j in range(a, ntied):
            pj = tied[j]
            if pj >= 0 and 256 - np.int64(out_rec[out, OUT_CODES + pj]) == v:
                group[m] = pj
                m += 1
                tied[j] = -1
        for i in range(m - 1, 0, -1):  # Fisher–Yates
            s, x = next_u64(s)
            j = np.int64(x % np.uint64(i + 1))
            group[i], group[j] = group[j], group[i]
        for i in range(m):
            place[seat_player[group[i]]] = best + i
    return s


@njit(cache=True)
def sample_deals(seed, samples, hands):
    """``samples`` deals of ``hands`` (≤ 3) in-pot hands dealt one after the other as in the
    simulation (each from the deck minus the earlier ones); returns their classes (samples, hands)."""
    out = np.empty((samples, hands), np.int64)
    for k in range(samples):
        s = stream_start(seed, k)
        used = np.uint64(0)
        for h in range(hands):
            s, bits, c, _ = draw_hand(s, used)
            used |= bits
            out[k, h] = c
    return out


@njit(cache=True)
def sample_orders(seed, samples, nd, c0, c1, c2, win2, order3):
    """Counts of each showdown outcome index over ``samples`` draws for fixed classes."""
    counts = np.zeros(6, np.int64)
    for k in range(samples):
        _, o = draw_order(stream_start(seed, k), nd, c0, c1, c2, win2, order3)
        counts[o] += 1
    return counts
