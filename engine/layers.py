"""The layers of a game: every state with the same number of players, compiled for the solvers.

A layer's states are enumerated in acting order (:mod:`engine.states`) and each gets its compiled
hand (:mod:`engine.game_tree`), which refers to its successors by their index in their own layer.
The equity models' payoffs of a layer ($) are the starting values of the equilibrium solve
(Harville) and the successor values of the model strategies.
"""

from __future__ import annotations

import functools

import numpy as np

from engine import equity_models, states
from engine.game_tree import CompiledHand, compile_hand
from engine.hand import hand_tree
from engine.memory import release_free_memory


def model_layer_values(model: str, stacks: np.ndarray, payouts: tuple[float, ...]) -> np.ndarray:
    """An equity model's payoffs ($) of a layer: the players present compete for places 1..n."""
    n = stacks.shape[1]
    prizes = np.zeros(n)
    k = min(n, len(payouts))
    prizes[:k] = payouts[:k]
    return equity_models.payoffs(equity_models.finishing_matrices(model, stacks.astype(np.float64)), prizes)


def icm_values(stacks: np.ndarray, payouts: tuple[float, ...]) -> np.ndarray:
    """Harville payoffs ($) of a layer (the PI-CFR+ starting values)."""
    return model_layer_values("harville", stacks, payouts)


def compile_layer(units: int, n: int, payouts: tuple[float, ...]) -> tuple[np.ndarray, list[CompiledHand]]:
    """All states of the n-player layer and their compiled hands.

    Every step that works on a whole layer starts here (the finishing probabilities, the ex post
    checks, the model sweeps), in the process that ran the steps before it: the memory those freed
    goes back to the system first (:func:`engine.memory.release_free_memory`), or this layer's
    hands (about 1.3 GiB of the 45-unit 5-player layer) and the strategies read after them would be
    added on top of what a finished solve left in glibc's arenas."""
    release_free_memory()
    stacks = states.enumerate_states(units, n)
    # the layer's hands reach each successor state from many states (about 80 lookups per 5-player
    # hand, under 150,000 distinct successors in the 45-unit game): ranking each once halves the build
    successor_index = functools.lru_cache(maxsize=None)(states.state_index)
    hands = []
    for row in stacks:
        key = tuple(int(x) for x in row)
        hands.append(compile_hand(key, payouts, successor_index, hand_tree(key, payouts)))
    return stacks, hands


def compile_game(units: int, players: int, payouts: tuple[float, ...]
                 ) -> tuple[dict[int, np.ndarray], dict[int, list[CompiledHand]]]:
    """:func:`compile_layer` for every layer 2 .. ``players``: (stacks, hands), each keyed by player count."""
    stacks, hands = {}, {}
    for n in range(2, players + 1):
        stacks[n], hands[n] = compile_layer(units, n, payouts)
    return stacks, hands
