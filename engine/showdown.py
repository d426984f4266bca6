"""Dense showdown tensors for the hand solver, in *deal order* (SPEC §2 card model, §3 tables).

Under the card model only the hands of players in the pot remove cards from each other, and the
in-pot hands are dealt one after the other. So the class of the k-th in-pot hand, given the
earlier ones, is drawn with probability proportional to the number of its combos that are
card-disjoint from them, and a showdown among classes (x, y[, z]) is resolved by the rollout
tables. This module turns the canonical tables (a ≤ b ≤ c) into ordered tensors indexed by the
classes in deal order:

* ``p1[a]``            P(first in-pot hand has class a) = combos(a) / 1,326
* ``joint2[a, b]``     P(first two in-pot hands have classes a, b) (ordered, card-disjoint)
* ``joint3[a, b, c]``  likewise for three hands
* ``cond2[a, b]``      P(second = b | first = a) = joint2 / p1
* ``cond3[a, b, c]``   P(third = c | first two = a, b) = joint3 / joint2 (0 where undealable)
* ``win2[a, b]``       P(hand of class a beats hand of class b), ties split evenly
* ``order3[o, a, b, c]`` P(strict finishing order o of the three hands), orders as
  :data:`engine.rollout.ORDERS` read over positions (first, second, third): "bac" = second best,
  first second, third last.

Also the showdown probabilities against hands that are dealt at showdown time only (blind all-ins
and an automatically calling BB), averaged over their classes:

* ``win2_vs_random[a]``   P(a beats a random hand dealt from the rest)
* ``order3_vs_random[o, a, b]``  order probabilities of (a, b, random third hand)
* ``order3_vs_two_random[o, a]`` order probabilities of (a, random, random)

All arrays are float64; probabilities are exact functions of the tables (no sampling here).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

import numpy as np

from engine.cards import CLASS_COMBO_COUNT, COMBOS, N_CLASSES
from engine.rollout import ORDERS, PairTable, TripleTable

N = N_CLASSES
PAIR_DEALS = 1326 * 1225
TRIPLE_DEALS = 1326 * 1225 * 1128


@dataclass
class ShowdownTensors:
    p1: np.ndarray
    joint2: np.ndarray
    cond2: np.ndarray
    win2: np.ndarray
    joint3: np.ndarray
    cond3: np.ndarray
    order3: np.ndarray
    win2_vs_random: np.ndarray
    order3_vs_random: np.ndarray
    order3_vs_two_random: np.ndarray

    @property
    def three_way(self) -> bool:
        """Whether the three-way tensors are there (False: made for heads-up hands only)."""
        return self.joint3.size > 0


def _class_of_combo() -> np.ndarray:
    out = np.empty(1326, dtype=np.int64)
    from engine.cards import COMBO_OFFSETS

    for cid in range(N):
        out[COMBO_OFFSETS[cid]:COMBO_OFFSETS[cid + 1]] = cid
    return out


def ordered_pair_weights() -> np.ndarray:
    """W[a, b] = number of ordered card-disjoint combo pairs with classes (a, b); sums to 1,326·1,225."""
    cls = _class_of_combo()
    cards = COMBOS
    overlap = ((cards[:, None, 0] == cards[None, :, 0]) | (cards[:, None, 0] == cards[None, :, 1])
               | (cards[:, None, 1] == cards[None, :, 0]) | (cards[:, None, 1] == cards[None, :, 1]))
    w = np.zeros((N, N), dtype=np.int64)
    ia, ib = np.nonzero(~overlap)
    np.add.at(w, (cls[ia], cls[ib]), 1)
    return w


def win2_matrix(pairs: PairTable) -> np.ndarray:
    """win2[a, b] = P(a beats b) for every ordered class pair, from the canonical pair rows."""
    win = np.empty((N, N))
    a, b = pairs.a.astype(np.int64), pairs.b.astype(np.int64)
    win[a, b] = pairs.p_first_wins
    win[b, a] = 1.0 - pairs.p_first_wins
    win[np.arange(N), np.arange(N)] = 0.5
    return win


def order3_tensor(triples: TripleTable) -> tuple[np.ndarray, np.ndarray]:
    """(order3[6, N, N, N], W3[N, N, N]): order probabilities and ordered deal counts per class triple.

    A canonical row (a, b, c) with order probabilities p over ORDERS is written to every ordering
    (x, y, z) = (cls[π0], cls[π1], cls[π2]). An order over the caller's positions (i, j, k)
    corresponds to the canonical order (π_i, π_j, π_k).
    """
    cls = np.stack([triples.a, triples.b, triples.c], axis=1).astype(np.int64)
    p = np.nan_to_num(triples.p, nan=0.0)
    mult = np.ones(len(cls), dtype=np.int64)
    same_ab, same_bc = cls[:, 0] == cls[:, 1], cls[:, 1] == cls[:, 2]
    mult[same_ab ^ same_bc] = 3  # exactly two equal → 3 distinct orderings
    mult[~same_ab & ~same_bc] = 6
    mult[same_ab & same_bc] = 1
    ordered_w = triples.weight // mult
    order_index = {o: i for i, o in enumerate(ORDERS)}
    letters = "abc"
    order3 = np.zeros((6, N, N, N))
    w3 = np.zeros((N, N, N), dtype=np.int64)
    for perm in permutations(range(3)):
        x, y, z = cls[:, perm[0]], cls[:, perm[1]], cls[:, perm[2]]
        w3[x, y, z] = ordered_w
        for o_pos, order in enumerate(ORDERS):  # order over caller positions, e.g. "bac"
            canon = "".join(letters[perm[letters.index(ch)]] for ch in order)
            order3[o_pos, x, y, z] = p[:, order_index[canon]]
    return order3, w3


def showdown_tensors(pairs: PairTable, triples: TripleTable | None) -> ShowdownTensors:
    """All solver tensors from one pair table and one triple table.

    ``triples`` None: tensors for hands of at most two players (a heads-up game), which never
    reach a three-way showdown; the three-way tensors are then empty (size 0, the same number of
    dimensions, so the kernels take them as they are and read nothing from them)."""
    p1 = CLASS_COMBO_COUNT.astype(np.float64) / 1326.0
    w2 = ordered_pair_weights()
    joint2 = w2 / PAIR_DEALS
    with np.errstate(invalid="ignore", divide="ignore"):
        cond2 = np.where(p1[:, None] > 0, joint2 / p1[:, None], 0.0)
    win2 = win2_matrix(pairs)
    win2_vs_random = (cond2 * win2).sum(axis=1)
    if triples is None:
        return ShowdownTensors(p1=p1, joint2=joint2, cond2=cond2, win2=win2, joint3=np.zeros((0, 0, 0)),
                               cond3=np.zeros((0, 0, 0)), order3=np.zeros((6, 0, 0, 0)),
                               win2_vs_random=win2_vs_random, order3_vs_random=np.zeros((6, 0, 0)),
                               order3_vs_two_random=np.zeros((6, 0)))
    order3, w3 = order3_tensor(triples)
    joint3 = w3 / TRIPLE_DEALS
    with np.errstate(invalid="ignore", divide="ignore"):
        cond3 = np.where(joint2[:, :, None] > 0, joint3 / joint2[:, :, None], 0.0)
    order3_vs_random = np.einsum("abc,oabc->oab", cond3, order3)
    order3_vs_two_random = np.einsum("ab,oab->oa", cond2, order3_vs_random)
    return ShowdownTensors(p1=p1, joint2=joint2, cond2=cond2, win2=win2, joint3=joint3, cond3=cond3,
                           order3=order3, win2_vs_random=win2_vs_random, order3_vs_random=order3_vs_random,
                           order3_vs_two_random=order3_vs_two_random)
