"""Rules of one jam/fold hand and where it leads (SPEC §2 "One hand" and "After the hand").

Pure rules: no cards and no equities (the showdown probabilities come from the rollout tables
and the strategies from the CFR+ hand solver). Everything here is exact integer chip arithmetic.

Units: stacks, blinds, contributions and pots are whole **chips in small-blind units**
(SB = 1, BB = 2); prizes are in **$** (the ``payouts`` vector, prize of place q =
``payouts[q-1]``, 0 beyond the list).

Positions are indices in **acting order** 0..n−1 (2 ≤ n ≤ 6).

* n ≥ 3: button (BU) = n−3, small blind (SB) = n−2, big blind (BB) = n−1.
* n = 2: position 0 is button and SB and acts first, position 1 is BB.
* Seats clockwise follow acting order: BB (n−1) is followed by position 0.

**One hand.**

1. SB posts min(1, stack), BB posts min(2, stack). A blind whose whole stack is posted is
   *all-in from the blind* ("blind all-in") and never decides. No antes.
2. The other players ("deciders") act in acting order and either jam (whole stack) or fold.
3. At most 3 players are all-in in one hand, blind all-ins included; once 3 are all-in everyone
   still to act folds automatically (no decision node).
4. No node where it cannot matter: if nobody jammed and the SB is not blind all-in, the BB wins
   without a decision (a "walk"); if the SB is blind all-in and everybody else folded, the BB
   calls automatically (showdown SB vs BB, no node). A BB facing a jam smaller than his posted
   blind still gets a node (folding is legal, just dominated).

**Pots.** Contribution c_i: a jammer's or blind all-in's whole stack; a folded blind's posted
chips (dead money that stays in the pot); the walk / auto-calling BB's posted blind; 0 for other
folders. The *contesting* players are jammers + blind all-ins + the walk / auto-calling BB. With
the distinct contributions L_1 < … < L_K of the contesting players, the pot at level L_k takes
min(c_i, L_k) − min(c_i, L_{k−1}) from every player (folded ones included) and is eligible to the
contesting players with c_i ≥ L_k. Chips above L_K ("uncalled excess", e.g. a folded BB's second
chip behind a 1-chip jammer) go back to their owner. The contesting players finish in a strict
order (ties are broken at random in the rollout tables, not here) and every pot goes whole to its
best-placed eligible player.

**After the hand.** Players left with 0 chips are eliminated; with m survivors, the e players
eliminated in this hand take places m+1 … m+e by their stack at the start of the hand (larger =
better); equal starting stacks share the prizes of the places involved evenly (and get the mean
place, e.g. 3.5). With m = 1 the survivor takes 1st and the tournament ends. The new button is
the first survivor clockwise of the old button's seat (the old button's own seat excluded). With
m ≥ 3 the next two survivors clockwise are SB and BB and the new acting order starts with the
survivor after the new BB (button third from last); with m = 2 the new button is the SB and acts
first, the other survivor is the BB.

**Tree layout** (:func:`hand_tree`). Decision nodes are numbered in pre-order, the fold subtree
before the jam subtree; terminals are numbered in the order that walk meets them. The structure
(nodes, which players contest each terminal) depends only on the player count and on which blinds
are all-in, so it is built once per such key and shared (the :class:`Node` objects are
immutable); only the outcomes are computed per state. :func:`decision_node_count` is the generic
count (all stacks ≥ 3): sum over acting index k of C(k,0)+C(k,1)+C(k,2), minus 1.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from functools import lru_cache
from itertools import permutations
from typing import Sequence

__all__ = [
    "MIN_PLAYERS",
    "MAX_PLAYERS",
    "MAX_ALLIN",
    "SMALL_BLIND",
    "BIG_BLIND",
    "Outcome",
    "Terminal",
    "Node",
    "HandTree",
    "hand_tree",
    "resolve_pots",
    "next_hand",
    "decision_node_count",
    "button_position",
    "sb_position",
    "bb_position",
]

MIN_PLAYERS, MAX_PLAYERS = 2, 6
MAX_ALLIN = 3  # players all-in in one hand at most, blind all-ins included
SMALL_BLIND, BIG_BLIND = 1, 2  # chips (small-blind units)

Ref = tuple[str, int]  # ('node', i) or ('terminal', j)


# --------------------------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """Where one strict showdown order of a terminal leads.

    Attributes:
        order: contesting positions, best-placed first.
        final_stacks: chips of every old position after the hand (0 = eliminated); they add up to
            the chips before the hand.
        next_stacks: survivors' chips in the NEW acting order (the next state); empty if the
            tournament ended (one survivor).
        new_position: per old position, its index in ``next_stacks``; −1 if eliminated or if the
            tournament ended.
        prize: per old position, $ won now: an eliminated player's (shared) place prize, the
            tournament winner's 1st prize; 0 for players still playing.
        places: per old position, the finishing place decided now (shared places as their mean,
            e.g. 3.5); 0 for players still playing.
    """

    order: tuple[int, ...]
    final_stacks: tuple[int, ...]
    next_stacks: tuple[int, ...]
    new_position: tuple[int, ...]
    prize: tuple[float, ...]
    places: tuple[float, ...]


@dataclass(frozen=True)
class Terminal:
    """A leaf of the action tree: who is still in, and every way the showdown can end.

    Attributes:
        contesting: positions still in the hand (jammers + blind all-ins + the walk or
            auto-calling BB), acting order.
        jammers: deciders who jammed, acting order.
        blind_allin: blind all-in positions (all of them contest), acting order.
        outcomes: one per strict order of ``contesting``, the orders in lexicographic order of
            the permutations of ``contesting`` (1, 2 or 6 outcomes).
        contributions: chips every position put into the pot (see the module docstring; before
            the uncalled excess is returned).
    """

    contesting: tuple[int, ...]
    jammers: tuple[int, ...]
    blind_allin: tuple[int, ...]
    outcomes: tuple[Outcome, ...]
    contributions: tuple[int, ...]


@dataclass(frozen=True)
class Node:
    """A decision: ``actor`` jams or folds, having seen ``jammers_before`` jam.

    Attributes:
        actor: position deciding.
        jammers_before: deciders who jammed before this node, acting order.
        fold_child, jam_child: ``('node', i)`` or ``('terminal', j)`` (indices into
            :attr:`HandTree.nodes` / :attr:`HandTree.terminals`).
    """

    actor: int
    jammers_before: tuple[int, ...]
    fold_child: Ref
    jam_child: Ref


@dataclass(frozen=True)
class HandTree:
    """The whole jam/fold hand of one state.

    Attributes:
        stacks: chips per position at the start of the hand (acting order).
        posted: blinds posted per position (chips; 0 for non-blinds).
        blind_allin: positions all-in from their blind (they never decide).
        nodes: decision nodes in pre-order (fold subtree first); ``nodes[0]`` is the root
            decision; empty when the hand needs no decision (e.g. heads-up with the SB all-in
            from the blind).
        root: ``('node', 0)`` or, without decisions, ``('terminal', 0)``.
        terminals: the leaves, in the order a pre-order walk (fold first) meets them.
    """

    stacks: tuple[int, ...]
    posted: tuple[int, ...]
    blind_allin: tuple[int, ...]
    nodes: tuple[Node, ...]
    root: Ref
    terminals: tuple[Terminal, ...]

    @property
    def n_players(self) -> int:
        """Players in the hand."""
        return len(self.stacks)


# --------------------------------------------------------------------------------------------
# positions and counts
# --------------------------------------------------------------------------------------------


def _check_n(n) -> int:
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ValueError(f"n_players must be an integer; got {n!r}")
    n = int(n)
    if not MIN_PLAYERS <= n <= MAX_PLAYERS:
        raise ValueError(f"n_players must be {MIN_PLAYERS}..{MAX_PLAYERS}; got {n}")
    return n


def button_position(n: int) -> int:
    """Button's position in acting order: n−3 with n ≥ 3 players; 0 heads-up (button = SB)."""
    n = _check_n(n)
    return n - 3 if n >= 3 else 0


def sb_position(n: int) -> int:
    """Small blind's position in acting order: n−2 (0 heads-up)."""
    return _check_n(n) - 2


def bb_position(n: int) -> int:
    """Big blind's position in acting order: n−1 (always last)."""
    return _check_n(n) - 1


def decision_node_count(n_players: int) -> int:
    """Generic number of decision nodes of an n-player hand (all stacks ≥ 3 chips, no blind
    all-in): sum over acting index k of C(k,0)+C(k,1)+C(k,2), minus 1 (no BB node in a walk).
    2 → 2, 3 → 6, 4 → 13, 5 → 24, 6 → 40."""
    n = _check_n(n_players)
    return sum(1 + k + k * (k - 1) // 2 for k in range(n)) - 1


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


def _check_stacks(stacks, name: str = "stacks", lo: int = 1) -> tuple[int, ...]:
    try:
        s = tuple(stacks)
    except TypeError:
        raise ValueError(f"{name} must be a sequence of integers (chips); got {stacks!r}") from None
    if not MIN_PLAYERS <= len(s) <= MAX_PLAYERS:
        raise ValueError(f"{name} must list {MIN_PLAYERS} to {MAX_PLAYERS} players; got {len(s)}")
    for x in s:
        if isinstance(x, bool) or not isinstance(x, numbers.Integral):
            raise ValueError(f"{name} must be whole chips (integers); got {list(s)!r}")
        if x < lo:
            rule = "positive integers (every player holds at least 1 chip)" if lo == 1 else "integers >= 0"
            raise ValueError(f"{name} must be {rule}; got {list(s)!r}")
    return tuple(int(x) for x in s)


def _check_payouts(payouts) -> tuple[float, ...]:
    try:
        p = tuple(payouts)
    except TypeError:
        raise ValueError(f"payouts must be a sequence of prizes ($); got {payouts!r}") from None
    out = []
    for x in p:
        if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(x) or x < 0:
            raise ValueError(f"payouts must be finite numbers >= 0 ($); got {list(p)!r}")
        out.append(float(x))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# pots
# --------------------------------------------------------------------------------------------


def _resolve(s: tuple[int, ...], c: tuple[int, ...], order: Sequence[int]) -> tuple[int, ...]:
    """Final stacks, no checks. Walking the order best first, a player whose contribution is
    above the level already paid out wins every side pot between that level and his own
    contribution (exactly the pots he is the best-placed eligible player of); whatever lies
    above the last level is uncalled excess and goes back to its owner."""
    n = len(s)
    f = [s[i] - c[i] for i in range(n)]
    covered = 0
    for p in order:
        cp = c[p]
        if cp > covered:
            won = 0
            for cj in c:
                if cj > covered:
                    won += (cj if cj < cp else cp) - covered
            f[p] += won
            covered = cp
    for j in range(n):
        if c[j] > covered:
            f[j] += c[j] - covered
    return tuple(f)


def resolve_pots(stacks: Sequence[int], contributions: Sequence[int], contesting: Sequence[int],
                 order: Sequence[int]) -> tuple[int, ...]:
    """Final stacks (chips per position) after the pots are shown down.

    Args:
        stacks: chips per position before the hand.
        contributions: chips each position put in (0 ≤ c_i ≤ stacks_i); folded players' chips
            stay in the pot, chips above the highest contesting contribution are returned.
        contesting: positions still in the hand (each with c_i ≥ 1).
        order: a strict order of ``contesting``, best-placed first; each side pot goes whole to
            its best-placed eligible player.
    """
    s = _check_stacks(stacks)
    c = tuple(int(x) for x in contributions)
    n = len(s)
    if len(c) != n or any(not 0 <= c[i] <= s[i] for i in range(n)):
        raise ValueError(f"contributions must list one value 0..stack per position; got {list(c)!r}")
    cont = tuple(int(p) for p in contesting)
    if not cont or len(set(cont)) != len(cont) or any(not 0 <= p < n for p in cont):
        raise ValueError(f"contesting must be distinct positions 0..{n - 1}; got {list(cont)!r}")
    if any(c[p] < 1 for p in cont):
        raise ValueError("contesting players must have contributed at least 1 chip")
    o = tuple(int(p) for p in order)
    if sorted(o) != sorted(cont):
        raise ValueError(f"order must be a permutation of contesting {list(cont)!r}; got {list(o)!r}")
    # only contesting players can win pots; the order is over them
    return _resolve(s, c, o)


# --------------------------------------------------------------------------------------------
# after the hand
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=None)
def _seating(n: int, elim: tuple[int, ...], ties: tuple[bool, ...], pay: tuple[float, ...]):
    """Everything about the next hand that depends on who is out, not on chip counts.

    ``elim``: eliminated positions, best place first (larger starting stack first);
    ``ties[t]``: elim[t] started the hand with the same stack as elim[t−1].
    Returns (new acting order as old positions, new_position, prize, places)."""
    prize = [0.0] * n
    places = [0.0] * n
    out = set(elim)
    survivors = [i for i in range(n) if i not in out]
    m = len(survivors)
    q = m + 1  # best place still to hand out
    j = 0
    while j < len(elim):
        k = j + 1
        while k < len(elim) and ties[k]:
            k += 1
        cnt = k - j
        share = sum(pay[r - 1] for r in range(q, q + cnt) if r <= len(pay)) / cnt
        place = q + (cnt - 1) / 2
        for t in range(j, k):
            prize[elim[t]] = share
            places[elim[t]] = place
        q += cnt
        j = k
    if m == 1:
        w = survivors[0]
        prize[w] = pay[0] if pay else 0.0
        places[w] = 1.0
        return (), (-1,) * n, tuple(prize), tuple(places)
    b = n - 3 if n >= 3 else 0  # old button
    cyc = [(b + d) % n for d in range(1, n + 1)]  # seats clockwise after the old button's
    cyc = [p for p in cyc if p not in out]  # survivors clockwise, new button first
    new_order = cyc if m == 2 else cyc[3:] + cyc[:3]
    new_pos = [-1] * n
    for idx, p in enumerate(new_order):
        new_pos[p] = idx
    return tuple(new_order), tuple(new_pos), tuple(prize), tuple(places)


def _next_hand(after: tuple[int, ...], old: tuple[int, ...], pay: tuple[float, ...]):
    """(next_stacks, new_position, prize, places); no checks."""
    n = len(old)
    zeros = after.count(0)
    if zeros == 0:
        order, new_pos, prize, places = _seating(n, (), (), pay)
    elif zeros == 1:
        order, new_pos, prize, places = _seating(n, (after.index(0),), (False,), pay)
    else:
        elim = sorted((i for i in range(n) if after[i] == 0), key=lambda i: (-old[i], i))
        ties = (False,) + tuple(old[elim[t]] == old[elim[t - 1]] for t in range(1, len(elim)))
        order, new_pos, prize, places = _seating(n, tuple(elim), ties, pay)
    return tuple([after[p] for p in order]), new_pos, prize, places


def next_hand(stacks_after: Sequence[int], old_stacks: Sequence[int], payouts: Sequence[float]
              ) -> tuple[tuple[int, ...], tuple[int, ...], tuple[float, ...], tuple[float, ...]]:
    """Eliminations, places, prizes and the next state after a hand.

    Args:
        stacks_after: chips per old position after the hand (0 = eliminated).
        old_stacks: chips per old position at the start of the hand (break elimination ties).
        payouts: prize in $ of place 1, 2, … (0 beyond the list).

    Returns:
        ``(next_stacks, new_position, prize, places)`` as in :class:`Outcome`.
    """
    old = _check_stacks(old_stacks, "old_stacks")
    after = _check_stacks(stacks_after, "stacks_after", lo=0)
    if len(after) != len(old):
        raise ValueError(f"stacks_after must list {len(old)} players like old_stacks; got {len(after)}")
    if sum(after) != sum(old):
        raise ValueError(f"stacks_after must keep the chips: sum {sum(after)} != sum(old_stacks) {sum(old)}")
    return _next_hand(after, old, _check_payouts(payouts))


# --------------------------------------------------------------------------------------------
# the tree
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _TermSpec:
    contesting: tuple[int, ...]
    jammers: tuple[int, ...]
    blind_allin: tuple[int, ...]
    orders: tuple[tuple[int, ...], ...]
    jam_mask: tuple[bool, ...]  # contribution = stack (True) or posted (False)


@lru_cache(maxsize=None)
def _structure(n: int, sb_allin: bool, bb_allin: bool):
    """Nodes, root and terminal specs of an n-player hand; depends on stacks only through
    which blinds are all-in."""
    sb, bb = n - 2, n - 1
    blind_ai = tuple(p for p, f in ((sb, sb_allin), (bb, bb_allin)) if f)
    nodes: list = []
    terms: list[_TermSpec] = []

    def terminal(jammers: tuple[int, ...], bb_in: bool) -> Ref:
        cont = set(jammers) | set(blind_ai)
        if bb_in:
            cont.add(bb)
        cont_t = tuple(sorted(cont))
        mask = tuple(p in jammers or p in blind_ai for p in range(n))
        terms.append(_TermSpec(cont_t, jammers, blind_ai, tuple(permutations(cont_t)), mask))
        return ("terminal", len(terms) - 1)

    def build(k: int, jammers: tuple[int, ...]) -> Ref:
        while k < n and k in blind_ai:
            k += 1
        if k >= n or len(jammers) + len(blind_ai) >= MAX_ALLIN:
            return terminal(jammers, False)  # everyone left folds (automatically or by choice)
        if k == bb and not jammers:
            # everybody folded to a BB who is not all-in: a walk, or his automatic call of the
            # SB's blind all-in
            return terminal(jammers, True)
        idx = len(nodes)
        nodes.append(None)
        fold = build(k + 1, jammers)
        jam = build(k + 1, jammers + (k,))
        nodes[idx] = Node(k, jammers, fold, jam)
        return ("node", idx)

    root = build(0, ())
    return tuple(nodes), root, tuple(terms), blind_ai


def hand_tree(stacks: Sequence[int], payouts: Sequence[float]) -> HandTree:
    """The jam/fold hand of the state ``stacks`` (chips in acting order, 2..6 players, each ≥ 1)
    with every terminal and every showdown order resolved into final stacks, eliminations,
    prizes ($, from ``payouts``) and the next state.

    Fast enough to call for every state: the stack-independent structure (nodes, terminal
    specs, seatings after eliminations) is memoised, and outcomes with equal final stacks share
    their next-hand data; all 135,751 five-player states of the 45-unit game take ~40 s in pure
    Python (≈0.3 ms per state, 85 outcomes each)."""
    s = _check_stacks(stacks)
    pay = _check_payouts(payouts)
    n = len(s)
    sb, bb = n - 2, n - 1
    posted = [0] * n
    posted[sb] = min(SMALL_BLIND, s[sb])
    posted[bb] = min(BIG_BLIND, s[bb])
    nodes, root, specs, blind_ai = _structure(n, s[sb] <= SMALL_BLIND, s[bb] <= BIG_BLIND)

    after_cache: dict = {}  # final stacks -> (next_stacks, new_position, prize, places)
    rot, rot_pos, no_prize, no_places = _seating(n, (), (), pay)  # nobody eliminated
    terminals = []
    rng = range(n)
    for spec in specs:
        mask = spec.jam_mask
        c = tuple([s[i] if mask[i] else posted[i] for i in rng])
        # Same pots as _resolve, precomputed per terminal: cum[L] = chips in all pots up to
        # level L; a record-setting player in the order wins cum[c_p] - cum[previous level].
        levels = {c[p] for p in spec.contesting}
        top = max(levels)
        base = [s[j] - (c[j] if c[j] < top else top) for j in rng]  # excess already returned
        cum = {L: sum([cj if cj < L else L for cj in c]) for L in levels}
        outs = []
        for order in spec.orders:
            f = base[:]
            covered = 0
            paid = 0
            for p in order:
                cp = c[p]
                if cp > covered:
                    cl = cum[cp]
                    f[p] += cl - paid
                    paid = cl
                    covered = cp
                    if cp == top:
                        break
            f = tuple(f)
            nh = after_cache.get(f)
            if nh is None:
                if 0 in f:
                    nh = _next_hand(f, s, pay)
                else:
                    nh = (tuple([f[p] for p in rot]), rot_pos, no_prize, no_places)
                after_cache[f] = nh
            outs.append(Outcome(order, f, *nh))
        terminals.append(Terminal(spec.contesting, spec.jammers, spec.blind_allin, tuple(outs), c))
    return HandTree(s, tuple(posted), blind_ai, nodes, root, tuple(terminals))
