"""Warm starts of a layer's first solves: which solved neighbour's regrets start each state.

Neighbouring states (one unit moved between two players) with the same tree shape have nearly the
same strategies, so a layer's first outer iteration solves its states in waves, each started from
a neighbour solved in the wave before (:func:`warm_start_waves`), the same on any number of
threads.
"""

from __future__ import annotations

import numpy as np

from engine import states
from engine.cfr import HandSolver
from engine.hand import BIG_BLIND, SMALL_BLIND


def neighbour_table(stacks: np.ndarray) -> np.ndarray:
    """(m, n·(n − 1)) state indices one unit away: column i·(n − 1) + … moves a unit from player j
    to player i (j ≠ i, in increasing order); −1 where player j has a single unit."""
    m, n = stacks.shape
    out = np.full((m, n * (n - 1)), -1, np.int64)
    col = 0
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            ok = stacks[:, j] > 1
            moved = stacks[ok].astype(np.int64)
            moved[:, i] += 1
            moved[:, j] -= 1
            out[ok, col] = states.state_indices(moved)
            col += 1
    return out


def tree_shape(stacks: np.ndarray) -> np.ndarray:
    """Per state, which blinds are all-in: 2·(SB posts all of his stack) + (BB does).

    Within a layer this alone sets a hand's tree (:func:`engine.hand.hand_tree` builds the node
    structure from these two facts), so states of equal shape have the same nodes and their
    regrets can seed each other. Read from the stacks, without compiling any hand (the 135,751
    hands of the 45-unit 5-player layer take minutes to compile).
    """
    n = stacks.shape[1]
    return 2 * (stacks[:, n - 2] <= SMALL_BLIND).astype(np.int64) + (stacks[:, n - 1] <= BIG_BLIND)


WARM_CHAIN = 16
"""Longest chain of warm starts in a layer's first outer iteration (see :func:`warm_start_waves`)."""


def warm_start_waves(stacks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per state, the wave of its first solve and the state whose regrets start it (−1: none).

    Strategies change little between neighbouring stacks, so a never-solved state starts from
    the regrets of a solved neighbour (one unit moved between two players, same tree shape):
    its first iterates are already close to sparse ranges (cheaper passes), measured 1.3–2× less
    time to gamma on 45-unit states. The sources come from a breadth-first search over the
    neighbours of each tree shape, started at its lowest-numbered state (the source of a state in
    wave w is in wave w − 1), and the first outer iteration solves wave after wave. So which
    regrets a state starts from does not depend on which thread finished first, and a layer
    solve gives the same result on any number of threads.

    Regrets copied along a chain accumulate every state's iterations, and large regrets adapt
    slowly: a state whose breadth-first depth is a multiple of :data:`WARM_CHAIN` starts cold,
    so no chain is longer. The first two outer iterations of the 45-unit 3-player layer (2 cores,
    sampled tables): 4,408 + 5,277 CFR+ iterations with unbounded chains (up to 43 long),
    3,549 + 4,026 with chains of at most 16, 3,512 + 3,938 with at most 8; every state cold,
    8,294 + 4,775.
    """
    m = len(stacks)
    wave = np.full(m, -1, np.int64)
    source = np.full(m, -1, np.int64)
    if not m:
        return wave, source
    shape = tree_shape(stacks)
    neighbours = neighbour_table(stacks)
    for seed in range(m):
        if wave[seed] >= 0:
            continue
        wave[seed] = 0
        frontier = np.array([seed])
        depth = 0
        while len(frontier):
            depth += 1
            parent = np.repeat(frontier, neighbours.shape[1])
            child = neighbours[frontier].ravel()
            ok = child >= 0
            parent, child = parent[ok], child[ok]
            ok = (wave[child] < 0) & (shape[child] == shape[parent])
            child, first = np.unique(child[ok], return_index=True)  # first parent in (frontier, column) order
            wave[child] = depth
            source[child] = parent[ok][first] if depth % WARM_CHAIN else -1
            frontier = child
    return wave, source


def start_from_neighbour(solver: HandSolver, other: HandSolver) -> None:
    """Copy a solved neighbour's regrets, predictions and regret weight into a never-solved state's
    solver, and the jam chances and depth-2 sums it kept (see :meth:`HandSolver.copy_kept_sums`)."""
    if other.iterations:
        solver.copy_regrets(other)
        solver.copy_kept_sums(other)
