"""The hand outcomes of a fixed strategy profile: what policy evaluation needs from each state.

A profile's values and finishing probabilities (:mod:`engine.policy_evaluation`) need, per state,
the probability of each outcome of its hand (terminal × showdown order), which depends on the
profile only, not on any values: one exact pass of the hand per state
(:meth:`engine.cfr.HandSolver.evaluate`). A solve has them at hand; an analysis that reads a
profile back from the warehouse (the equilibrium's finishing probabilities, a model's ex post
check) computes them here, on every core. Measured on 2 threads (2026-11-26, sampled tables,
the solved equilibria of the benchmark checkpoints): 5.1 ms per state over the 20-unit 5-player
layer (3,876 states, 19.7 s), 3.2 ms over the 45-unit 4-player layer (13,244 states, 42.5 s), so
the 45-unit 5-player layer's 135,751 states take about 13–16 minutes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from engine.cfr import HandSolver
from engine.game_tree import CompiledHand
from engine.hand_pass import SolverTensors
from engine.solve_progress import kinded_clock, states_done_events
from engine.tournament import SolverPool, heaviest_first, largest_hand

PROGRESS_EVERY_S = 30.0
"""Seconds between progress events (states done, time left) within a layer."""


def outcome_probabilities(hands: list[CompiledHand], strategies: list[np.ndarray], tensors: SolverTensors, *,
                          threads: int | None = None,
                          progress: Callable[[dict], None] | None = None) -> list[np.ndarray]:
    """Per state, the (terminals, 6) outcome probabilities of the profile ``strategies`` (per state,
    its (nodes × 169) jam probabilities), on ``threads`` threads (default: NUMBA_NUM_THREADS).

    ``progress`` gets ``{"event": "outcome_states", "players", "done", "states", "wall_s",
    "left_s"}`` every :data:`PROGRESS_EVERY_S` seconds. The result does not depend on the threads.
    """
    if not hands:
        return []
    pool = SolverPool(threads, largest_hand(hands))

    def one(s: int) -> np.ndarray:
        solver = HandSolver(hands[s], tensors)  # made per state and dropped: only its pass is needed
        solver.evaluate(strategies[s], np.zeros_like(hands[s].term_prize), pool.workspace())
        return solver.order_probs.copy()

    out: list[np.ndarray | None] = [None] * len(hands)
    order = heaviest_first(hands)
    try:
        clock = kinded_clock(hands, order)
        results = states_done_events(pool.imap(clock.timed(one), order), len(hands), progress, PROGRESS_EVERY_S,
                                     {"event": "outcome_states", "players": hands[0].n_players}, clock=clock)
        for s, probs in zip(order, results):
            out[s] = probs
    finally:
        pool.close()
    return out
