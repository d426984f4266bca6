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

With a ``checkpoint`` folder the states finished so far are saved there every
:data:`CHECKPOINT_EVERY` seconds (``outcomes.layer{n}.block{b}.npz``), so an interrupted pass
resumes with them and computes only the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.cfr import HandSolver
from engine.checkpoint import BlockSaver, RowStream, next_block_path, reading_checkpoint, step_blocks, write_npz
from engine.game_tree import CompiledHand
from engine.hand_pass import SolverTensors
from engine.solve_progress import kinded_clock, states_done_events
from engine.solver_pool import SolverPool, heaviest_first, largest_hand

PROGRESS_EVERY_S = 30.0
"""Seconds between progress events (states done, time left) within a layer."""

CHECKPOINT_EVERY = 300.0
"""Seconds between block checkpoints of the states finished, when a checkpoint folder is given."""


def outcome_probabilities(hands: list[CompiledHand], strategies: list[np.ndarray], tensors: SolverTensors, *,
                          threads: int | None = None,
                          progress: Callable[[dict], None] | None = None,
                          checkpoint: Path | None = None,
                          checkpoint_every: float = CHECKPOINT_EVERY) -> list[np.ndarray]:
    """Per state, the (terminals, 6) outcome probabilities of the profile ``strategies`` (per state,
    its (nodes × 169) jam probabilities), on ``threads`` threads (default: NUMBA_NUM_THREADS).

    ``progress`` gets ``{"event": "outcome_states", "players", "done", "states", "wall_s",
    "left_s"}`` every :data:`PROGRESS_EVERY_S` seconds; a resumed pass also sends
    ``{"event": "outcome_resumed", "players", "states"}`` once (``wall_s`` counts the earlier
    runs' seconds too). ``checkpoint``: a folder for the block checkpoints of this profile's
    layers, each layer's blocks named by its player count (the caller keeps it apart from other
    profiles' and deletes it once the result is kept); the
    last block is saved with the last state, so a caller interrupted later (a model's ex post
    check, hours of nemesis rounds after its outcomes) reads the whole layer back. The result does
    not depend on the threads or on interrupts.
    """
    if not hands:
        return []
    t0 = time.perf_counter()
    n = hands[0].n_players
    out: list[np.ndarray | None] = [None] * len(hands)
    elapsed = 0.0
    if checkpoint is not None:
        for path in outcome_blocks(checkpoint, n):  # (other layers' kept)
            elapsed = max(elapsed, _load_block(path, out))
        t0 -= elapsed
        if progress is not None and any(p is not None for p in out):
            progress({"event": "outcome_resumed", "players": n, "states": sum(p is not None for p in out)})
    todo = [s for s in heaviest_first(hands) if out[s] is None]
    if not todo:
        return out
    pool = SolverPool(threads, largest_hand(hands))

    def one(s: int) -> np.ndarray:
        solver = HandSolver(hands[s], tensors)  # made per state and dropped: only its pass is needed
        solver.evaluate(strategies[s], np.zeros_like(hands[s].term_prize), pool.workspace())
        return solver.order_probs.copy()

    try:
        clock = kinded_clock(hands, todo)
        results = states_done_events(pool.imap_done(clock.timed(one), todo), len(todo), progress, PROGRESS_EVERY_S,
                                     {"event": "outcome_states", "players": n}, clock=clock,
                                     done_before=len(hands) - len(todo), states=len(hands),
                                     wall_before=time.perf_counter() - t0)
        blocks = BlockSaver(None if checkpoint is None else lambda states: _save_block(
            checkpoint, n, states, out, time.perf_counter() - t0), checkpoint_every)
        for s, probs in results:
            out[s] = probs
            blocks.add(s)
        blocks.flush()  # the last states too: the caller keeps the layer's outcomes only later
    finally:
        pool.close()
    return out


def outcome_blocks(folder: Path, n: int) -> list[Path]:
    """The block files of the n-player layer's pass in ``folder``, in order."""
    return [p for k, _, p in step_blocks(folder, "outcomes", "layer") if k == n]


def _save_block(folder: Path, n: int, states: list[int], out: list, elapsed: float) -> None:
    """The outcome probabilities of the finished ``states``, as the layer's next block, with the
    pass's seconds so far (``elapsed``, over all its runs)."""
    small = {"states": np.array(states, np.int64), "terminals": np.array([len(out[s]) for s in states], np.int64),
             "elapsed": np.array(float(elapsed))}
    write_npz(next_block_path(folder, "outcomes", "layer", n), small,
              {"probs": (np.float64, 6, [out[s] for s in states])})


def _load_block(path: Path, out: list) -> float:
    """Put a block's outcome probabilities back into ``out``; the pass's seconds when it was saved."""
    with reading_checkpoint(path), np.load(path) as data:
        probs = RowStream(data, "probs")
        try:
            for s, t in zip(data["states"].tolist(), data["terminals"].tolist()):
                out[s] = probs.take(t)
        finally:
            probs.close()
        return float(data["elapsed"])
