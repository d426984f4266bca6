"""A state's hand compiled into flat arrays for the numba kernels (see :mod:`engine.hand_pass`).

The rules come from :mod:`engine.hand`; this module only re-indexes them for the solver:

* **Deal order.** Under the card model the in-pot hands are dealt one after another: the
  deciders who jammed, in acting order, and at showdown the players who never decided (blind
  all-ins and an automatically calling BB). Tensors over in-pot hands are indexed in this deal
  order, and a terminal's showdown orders are permutations of its deal-order players in
  lexicographic order — the same convention as :data:`engine.rollout.ORDERS` (0 = first dealt).
* **Depth.** A node's depth d is the number of jammers before it (0, 1 or 2); its reach and
  value tensors have 169^d entries. A terminal's depth is its number of jamming deciders (0–3).
* **Terminal kinds** say which showdown tensor resolves it (see ``KIND_*``).

Utilities are *not* stored: each outcome records the prize paid now ($) and, for players who
go on, their seat in the next state, so U = prize + V[next state][seat] can be rebuilt cheaply
whenever the value table V changes (policy iteration).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import permutations
from typing import Callable

import numba as nb
import numpy as np

from engine.hand import HandTree, hand_tree

# terminal kinds: (jamming deciders J, showdown-only players S)
KIND_NONE = 0  # one contestant, no showdown (walk, uncalled jam, lone blind all-in)
KIND_J2 = 1  # two jammers: win2
KIND_J1S1 = 2  # a jammer against a hand dealt at showdown: win2_vs_random
KIND_S2 = 3  # two hands dealt at showdown (blind all-ins / automatic call): 1/2 each
KIND_J3 = 4  # three jammers: order3 (only below depth-2 nodes)
KIND_J2S1 = 5  # order3_vs_random
KIND_J1S2 = 6  # order3_vs_two_random
_KINDS = {(0, 0): KIND_NONE, (1, 0): KIND_NONE, (2, 0): KIND_J2, (1, 1): KIND_J1S1, (0, 2): KIND_S2,
          (3, 0): KIND_J3, (2, 1): KIND_J2S1, (1, 2): KIND_J1S2}
MAX_ORDERS = 6


@dataclass
class CompiledHand:
    """One state's hand as arrays (K nodes, T terminals, n players)."""

    stacks: tuple[int, ...]
    n_players: int
    node_actor: np.ndarray  # int64[K]
    node_depth: np.ndarray  # int64[K]
    node_fold: np.ndarray  # int64[K]: child node index, or -1 - terminal index
    node_jam: np.ndarray  # int64[K]
    node_creator: np.ndarray  # int64[K]: for depth-2 nodes, the depth-1 node whose jam started their chain; else -1
    root: int  # node index, or -1 - terminal index
    term_kind: np.ndarray  # int64[T]
    term_depth: np.ndarray  # int64[T] number of jamming deciders
    term_orders: np.ndarray  # int64[T] number of outcomes (1, 2 or 6)
    term_prize: np.ndarray  # float64[T, 6, n] $ paid now to each old position
    # (the next three in the narrowest types that hold them: kept for every state of a layer all
    # through its solve: 1.2 instead of 6.8 KiB a 45-unit 5-player hand, 0.16 instead of 0.88 GiB in all)
    term_next: np.ndarray  # int32[T, 6] index of the next state in its layer, -1 if the tournament ended
    term_next_players: np.ndarray  # int8[T, 6] players in the next state (0 if ended)
    term_seat: np.ndarray  # int8[T, 6, n] old position -> seat in the next state, -1 if out
    utility_plan: list | None = field(default=None, repr=False, compare=False)  # see _utility_plan


def pass_cost(hand: CompiledHand) -> int:
    """The work of one hand pass, in strategy entries: 169² per depth-2 node (a class for each
    jammer before it), 169 per other node. Sets the order the layers hand out their states
    (heaviest first) and the kinds of their time-left estimates."""
    return int((hand.node_depth == 2).sum()) * 169 * 169 + len(hand.node_actor) * 169


def compile_hand(stacks: tuple[int, ...], payouts: tuple[float, ...],
                 state_index: Callable[[tuple[int, ...]], int], tree: HandTree | None = None) -> CompiledHand:
    """Compile the hand at ``stacks`` (acting order); ``state_index`` maps next stacks to their layer index."""
    tree = tree or hand_tree(stacks, payouts)
    n = len(stacks)
    T = len(tree.terminals)

    def ref(child: tuple[str, int]) -> int:
        return child[1] if child[0] == "node" else -1 - child[1]

    node_actor = np.array([nd.actor for nd in tree.nodes], dtype=np.int64)
    node_depth = np.array([len(nd.jammers_before) for nd in tree.nodes], dtype=np.int64)
    node_fold = np.array([ref(nd.fold_child) for nd in tree.nodes], dtype=np.int64)
    node_jam = np.array([ref(nd.jam_child) for nd in tree.nodes], dtype=np.int64)
    node_creator = _creators(node_depth, node_fold, node_jam)
    term_kind = np.zeros(T, dtype=np.int64)
    term_depth = np.zeros(T, dtype=np.int64)
    term_orders = np.zeros(T, dtype=np.int64)
    term_prize = np.zeros((T, MAX_ORDERS, n))
    term_next = np.full((T, MAX_ORDERS), -1, dtype=np.int32)
    term_next_players = np.zeros((T, MAX_ORDERS), dtype=np.int8)
    term_seat = np.full((T, MAX_ORDERS, n), -1, dtype=np.int8)
    for t, term in enumerate(tree.terminals):
        jam = tuple(term.jammers)
        showdown_only = tuple(p for p in term.contesting if p not in jam)
        showdown = len(term.contesting) >= 2
        key = (len(jam), len(showdown_only) if showdown else 0)
        term_kind[t] = _KINDS[key]
        term_depth[t] = len(jam)
        by_order = {o.order: o for o in term.outcomes}
        deal = jam + showdown_only if showdown else ()
        orders = [tuple(deal[i] for i in perm) for perm in permutations(range(len(deal)))] if showdown \
            else [term.outcomes[0].order]
        term_orders[t] = len(orders)
        for o, order in enumerate(orders):
            out = by_order[order]
            term_prize[t, o] = out.prize
            if out.next_stacks:
                term_next[t, o] = state_index(tuple(out.next_stacks))
                term_next_players[t, o] = len(out.next_stacks)
                term_seat[t, o] = out.new_position
    root = ref(tree.root)
    return CompiledHand(tuple(stacks), n, node_actor, node_depth, node_fold, node_jam, node_creator, root, term_kind,
                        term_depth, term_orders, term_prize, term_next, term_next_players, term_seat)


def _creators(node_depth: np.ndarray, node_fold: np.ndarray, node_jam: np.ndarray) -> np.ndarray:
    """For every depth-2 node, the depth-1 node whose jam led into its fold chain.

    The values of a depth-2 chain are only read by that node (its actor's counterfactuals and its
    own value), which lets the kernel restrict the 169² tensors to the entries it needs.
    """
    creator = np.full(len(node_depth), -1, dtype=np.int64)
    for h in range(len(node_depth)):  # pre-order: parents first
        j, f = node_jam[h], node_fold[h]
        if node_depth[h] == 1 and j >= 0:
            creator[j] = h
        if node_depth[h] == 2 and f >= 0:
            creator[f] = creator[h]
    return creator


def utilities(hand: CompiledHand, values: dict[int, np.ndarray]) -> np.ndarray:
    """U[t, o, p] in $: prize paid now plus the value of the seat in the next state.

    ``values[m]`` is the (states, m) value table of the m-player layer. A layer solve rebuilds
    every state's utilities once or twice per outer iteration, so the gather is planned once per
    hand (:func:`_utility_plan`) and done by one compiled call per layer reached that releases
    the GIL: a Python loop over the outcomes took 70 (170, 220) µs on a 20-unit 3-player (4-,
    5-player) hand, a numpy fancy index 6 (9) µs, and either held the GIL, which every solver
    thread of a layer solve needs between its compiled calls (a tenth of the interpreter time of
    a 3-player layer solve's threads was this gather).
    """
    U = hand.term_prize.copy()
    flat = U.reshape(-1)
    for m, positions, next_states, seats in _utility_plan(hand):
        _gather_add(flat, positions, values[m], next_states, seats)
    return U


@nb.njit(cache=True, nogil=True)
def _gather_add(flat, positions, table, next_states, seats):
    """flat[positions[i]] += table[next_states[i], seats[i]] (positions are distinct)."""
    for i in range(positions.shape[0]):
        flat[positions[i]] += table[next_states[i], seats[i]]


def _utility_plan(hand: CompiledHand) -> list[tuple[int, np.ndarray, np.ndarray, np.ndarray]]:
    """Per next-layer size m: the flat positions in U of the surviving seats' (t, o, p), their
    next states and their seats there. Built on first use and kept on the hand, in the narrowest
    types that hold them (int32, int32, int8: 9 instead of 24 bytes a seat; the 45-unit 5-player
    layer's plans about 0.33 instead of 0.89 GiB, which a resumed solve builds anew)."""
    plan = hand.utility_plan
    if plan is None:
        T, O, n = hand.term_seat.shape
        plan = []
        for m in np.unique(hand.term_next_players[hand.term_next_players > 0]).tolist():
            alive = (hand.term_next_players == m)[:, :, None] & (hand.term_seat >= 0)
            positions = np.flatnonzero(alive).astype(np.int32)
            next_states = np.broadcast_to(hand.term_next[:, :, None], (T, O, n))[alive]
            plan.append((int(m), positions, next_states, hand.term_seat[alive]))
        hand.utility_plan = plan
    return plan
