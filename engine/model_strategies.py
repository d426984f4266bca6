"""Equity-model strategies and Future Game Simulation (SPEC §7.1–7.2).

A model M turns into a strategy profile by solving every state's hand (CFR+, SPEC §5) with the
successor states valued by M instead of by the equilibrium: the players act as if M were the
truth one hand ahead. One such pass over all states is a **sweep**. A sweep also yields each
state's hand value under its solved strategy, which is how FGS is defined:

* v⁰ = Harville;  vᵈ(s) = the value of the hand at s solved with successor values vᵈ⁻¹.
* Model "FGS-d" values states by vᵈ; its strategies are the sweep with successor values vᵈ.

So FGS-1…FGS-D take D + 1 sweeps: sweep k (k = 1 … D + 1) uses vᵏ⁻¹, gives the strategies of
model FGS-(k−1) (FGS-0 = Harville) and the values vᵏ. Every sweep warm-starts each state from
the regrets of the previous sweep's solver of that state (neighbouring depths differ little),
the first from the equilibrium's regrets when a solve checkpoint is given (scaled down: see
:func:`warm_start`). Weitzman and Roberts start from the Harville sweep's regrets (the ICM-family
values are closer to each other than to the equilibrium's).

Values are in $, exploitability in $ (largest best-response gain in the hand, ≤ gamma).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.atomic_files import drop_dead_temporaries
from engine.cfr import HandSolver
from engine.checkpoint import BlockSaver, layer_path, load_layer
from engine.game_tree import CompiledHand, utilities
from engine.hand_pass import SolverTensors
from engine.memory import release_free_memory
from engine.policy_evaluation import evaluate_layer
from engine.solve_progress import ProgressFn, estimable_loop, states_done_events
from engine.sweep_checkpoint import (drop_solvers, load_sweep_layer, load_sweep_parts, save_sweep_layer,
                                     save_sweep_part)
from engine.layers import model_layer_values
from engine.solver_pool import SolverPool, heaviest_first, largest_hand

Layers = dict[int, list[CompiledHand]]

PART_EVERY_S = 300.0
"""Seconds between the part checkpoints of a sweep layer being solved (see
:mod:`engine.sweep_checkpoint`): an interrupt loses at most this much of a layer's work."""

PROGRESS_EVERY_S = 30.0
"""Seconds between the progress events of a sweep layer being solved (states done, time left)."""


@dataclass
class Sweep:
    """One sweep: every state's hand solved against fixed successor values."""

    label: str  # the model whose strategies these are, e.g. 'harville', 'FGS-2'
    hand_values: dict[int, np.ndarray]  # n -> (m, n) $ value of each hand under its solved strategy
    strategies: dict[int, list[np.ndarray]]  # n -> per state (nodes, 169) jam probabilities
    order_probs: dict[int, list[np.ndarray]]  # n -> per state (terminals, 6) outcome probabilities
    exploitability: dict[int, np.ndarray]  # n -> (m,) $
    iterations: dict[int, np.ndarray]  # n -> (m,) CFR+ iterations spent in this sweep
    solvers: dict[int, list[HandSolver]]  # kept for the next sweep's warm start
    wall_s: float  # seconds spent solving its layers (when read back from a checkpoint: when they were solved)

    def release(self) -> None:
        """Drop the strategies and outcome probabilities (about 4 GiB per sweep of the 45-unit
        5-player game) once they are stored; values, exploitability and iterations stay."""
        self.strategies, self.order_probs = {}, {}


def model_values(model: str, stacks: dict[int, np.ndarray], payouts: tuple[float, ...]) -> dict[int, np.ndarray]:
    """An equity model's payoffs ($) for every layer's states."""
    return {n: model_layer_values(model, st, payouts) for n, st in stacks.items()}


def equilibrium_solvers(layers: Layers, tensors: SolverTensors, checkpoint: Path | None) -> dict[int, list[HandSolver]] | None:
    """Solvers holding the equilibrium solve's final regrets (from its checkpoint), or None if absent.

    Only the regrets (and clocks) are restored, not the certified profiles and decision margins: a
    warm start reads nothing else (45-unit 5-player layer: about 7 instead of 14 GiB)."""
    if checkpoint is None:
        return None
    out = {}
    for n, hands in layers.items():
        if not layer_path(checkpoint, n).exists():
            return None
        solvers = [HandSolver(h, tensors) for h in hands]
        try:
            load_layer(checkpoint, n, solvers, profiles=False)
        except ValueError:
            return None
        out[n] = solvers
    return out


WARM_WEIGHT = 2.0
"""Iterations' worth of regret a warm start keeps (see :func:`warm_start`)."""


def warm_start(new: HandSolver, old: HandSolver, weight: float = WARM_WEIGHT) -> None:
    """Start ``new`` from ``old``'s regrets, scaled to ``weight`` iterations' worth.

    The regret-matched strategy only depends on the direction of the regrets, so the scaled
    regrets start from the same strategy; but regrets accumulated over hundreds of iterations of
    another game (other successor values) take as long to unwind, while scaled ones are
    overwritten within a few iterations. Measured on the quick game's 3-player layer (Harville
    sweep from the equilibrium's regrets): 1,344 CFR+ iterations unscaled (no better than a cold
    start, 1,312), 488 at weight 10, 368 at weight 2.
    """
    new.copy_regrets(old)
    _restart(new, old.iterations, weight)


def warm_start_in_place(solver: HandSolver, weight: float = WARM_WEIGHT) -> None:
    """:func:`warm_start` of a solver from its own regrets, for a sweep that takes over the previous
    sweep's solvers (which nothing needs after): the same start, without a second layer of solvers
    in memory (a 5-player 45-unit layer's hold about 10 GiB)."""
    solver.forget_profile()
    _restart(solver, solver.iterations, weight)


def _restart(solver: HandSolver, iterations: int, weight: float) -> None:
    solver.rescale_regrets(weight)
    solver.iterations = max(iterations, 1)
    solver.restart_average()  # average only the iterates against the new successor values


def solve_sweep(label: str, layers: Layers, successor_values: dict[int, np.ndarray], gamma: float,
                tensors: SolverTensors, warm: dict[int, list[HandSolver]] | None = None, threads: int | None = None,
                batch: int = 8, max_iterations: int = 20_000, progress: ProgressFn | None = None,
                checkpoint: Path | None = None, keep_solvers: bool = True, consume_warm: bool = False,
                read_strategies: bool = True) -> Sweep:
    """Solve every state's hand to exploitability ≤ gamma ($) with successors valued by ``successor_values``.

    ``successor_values[n]`` is the (states, n) $ table of every layer a hand can lead to (its own
    included). ``warm[n][s]`` (optional) is a solver whose regrets start state s; with
    ``consume_warm`` the sweep continues those solvers in place (:func:`warm_start_in_place`, the
    same results) and they hold this sweep's state afterwards. ``keep_solvers``: the sweep's
    solvers are returned (and, with a ``checkpoint``, saved) for a later sweep to warm-start
    from; without it each state's solver is made when the state is solved and dropped after, so
    no layer of solvers is held. With a ``checkpoint`` folder each finished layer is saved there
    and a layer already saved is read back instead of solved (:mod:`engine.sweep_checkpoint`);
    without ``read_strategies`` a layer read back brings no strategies nor outcome probabilities.
    """
    if checkpoint is not None:  # a save killed outright (up to 10 GiB of solvers): never read
        drop_dead_temporaries(checkpoint)
    out = Sweep(label, {}, {}, {}, {}, {}, {}, 0.0)
    pool = SolverPool(threads, largest_hand([h for hands in layers.values() for h in hands]))
    try:
        for n, hands in sorted(layers.items()):
            saved = (load_sweep_layer(checkpoint, label, n, hands, tensors, strategies=read_strategies)
                     if checkpoint is not None else None)
            layer = saved or _solve_sweep_layer(hands, n, successor_values, gamma, tensors, pool,
                                                None if warm is None else warm.get(n), batch, max_iterations,
                                                keep_solvers, consume_warm, checkpoint, label, progress)
            if saved is None and checkpoint is not None:
                save_sweep_layer(checkpoint, label, n, layer, keep_solvers)
            out.wall_s += layer["wall_s"]
            out.hand_values[n], out.strategies[n] = layer["values"], layer["strategies"]
            out.order_probs[n], out.exploitability[n] = layer["order_probs"], layer["exploitability"]
            out.iterations[n] = layer["iterations"]
            if keep_solvers and layer["solvers"] is not None:
                out.solvers[n] = layer["solvers"]
            if progress:
                progress({"event": "sweep_layer", "label": label, "players": n, "states": len(hands),
                          "cfr_iterations": int(layer["iterations"].sum()),
                          "max_exploitability": float(layer["exploitability"].max()),
                          "wall_s": layer["wall_s"], "resumed": saved is not None})
    finally:
        pool.close()
    return out


def _solve_sweep_layer(hands: list[CompiledHand], n: int, successor_values: dict[int, np.ndarray], gamma: float,
                       tensors: SolverTensors, pool: SolverPool, warm: list[HandSolver] | None, batch: int,
                       max_iterations: int, keep_solvers: bool = True, consume_warm: bool = False,
                       checkpoint: Path | None = None, label: str = "", progress: ProgressFn | None = None) -> dict:
    """One layer of :func:`solve_sweep`, as :func:`engine.sweep_checkpoint.load_sweep_layer` returns one
    (``solvers`` None unless ``keep_solvers``).

    With a ``checkpoint`` folder the states finished so far are saved every :data:`PART_EVERY_S`
    seconds and a layer interrupted before is resumed from them. ``progress`` gets
    ``sweep_resumed_states`` once (states read back from the parts) and ``sweep_states`` events
    every :data:`PROGRESS_EVERY_S` seconds: states done, seconds so far and an estimate of the
    seconds left (from this run's rate)."""
    m = len(hands)
    solvers: list[HandSolver] | None = None
    if warm is not None and consume_warm:
        solvers = warm
        for solver in solvers:
            warm_start_in_place(solver)
    elif keep_solvers:
        solvers = [HandSolver(h, tensors) for h in hands]
        if warm is not None:
            for new, old in zip(solvers, warm):
                warm_start(new, old)
    values = np.zeros((m, n))
    strategies: list[np.ndarray] = [np.zeros(0)] * m
    order_probs: list[np.ndarray] = [np.zeros(0)] * m
    expl = np.zeros(m)
    spent = np.zeros(m, dtype=np.int64)

    layer = {"values": values, "strategies": strategies, "order_probs": order_probs, "exploitability": expl,
             "iterations": spent}
    kept = solvers if keep_solvers else None  # the solvers the layer hands on (and its parts save)
    done, wall_before = [], 0.0
    if checkpoint is not None:
        done, wall_before = load_sweep_parts(checkpoint, label, n, hands, layer, kept)
        if done and progress:
            progress({"event": "sweep_resumed_states", "label": label, "players": n, "done": len(done), "states": m})

    def work(s: int) -> int:
        ws = pool.workspace()
        ws.forget()  # a state's results must not depend on which states this thread ran before
        if solvers is not None:
            solver = solvers[s]
        else:  # made for this state and dropped once its results are taken
            solver = HandSolver(hands[s], tensors)
            if warm is not None:
                warm_start(solver, warm[s])
        U = utilities(solver.hand, successor_values)
        # the first iterate is the warm start's strategy, checked for free
        e, spent[s] = solver.solve(U, gamma, ws=ws, batch=batch, delay=2 if solver.iterations == 0 else 0,
                                   max_iterations=max_iterations)
        values[s] = solver.root_values
        strategies[s] = solver.strategy()
        order_probs[s] = solver.order_probs.copy()
        expl[s] = e
        return s

    t0 = time.perf_counter()
    finished = set(done)
    # a few states of every tree first, so that the time left is priced by each tree's own
    # re-solves; each state's results are the same in any order (its own solver, a fresh workspace)
    todo, clock = estimable_loop(hands, heaviest_first(hands), finished, seed=n)
    solved = states_done_events(pool.imap_done(clock.timed(work), todo), len(todo), progress, PROGRESS_EVERY_S,
                                {"event": "sweep_states", "label": label, "players": n}, done_before=len(done),
                                wall_before=wall_before, clock=clock)

    def save_part(states: list[int]) -> None:
        save_sweep_part(checkpoint, label, n, states, layer, kept, wall_before + time.perf_counter() - t0)
        release_free_memory()  # records restored in this thread and replaced by the solver threads

    parts = BlockSaver(save_part if checkpoint is not None else None, PART_EVERY_S)
    for count, (s, _) in enumerate(solved, start=1):
        if count < len(todo):  # (the last state is kept by the layer's save that follows)
            parts.add(s)
    return {**layer, "wall_s": wall_before + time.perf_counter() - t0, "solvers": kept}


def profile_values(layers: Layers, order_probs: dict[int, list[np.ndarray]]) -> dict[int, np.ndarray]:
    """Exact values ($) of a strategy profile when everybody plays it: policy evaluation, layer by layer."""
    out: dict[int, np.ndarray] = {}
    for n in sorted(layers):
        out[n] = evaluate_layer(layers[n], order_probs[n], n, {k: v for k, v in out.items()})
    return out


def fgs_sweeps(layers: Layers, harville: dict[int, np.ndarray], depth: int, gamma: float, tensors: SolverTensors,
               warm: dict[int, list[HandSolver]] | None = None, threads: int | None = None,
               progress: ProgressFn | None = None, first: Sweep | None = None, checkpoint: Path | None = None,
               on_sweep: Callable[[Sweep], None] | None = None,
               read_strategies: Callable[[str], bool] | None = None) -> tuple[list[Sweep], list[dict[int, np.ndarray]]]:
    """The D + 1 FGS sweeps and the value tables v⁰ … v^D.

    Returns (sweeps, values): sweeps[k] holds the strategies of model FGS-k (k = 0 is Harville)
    and values[d] = vᵈ ($ per layer), values[0] = Harville. ``first``: the Harville sweep if
    already solved; FGS-1 continues its solvers in place (so nothing may need them after), as
    each depth continues the previous one's: one layer of solvers in memory at a time.
    ``checkpoint``: see :func:`solve_sweep`; a sweep's saved solvers are deleted once the next
    depth is saved. ``on_sweep`` is called with each sweep this call solves (or reads back) as
    soon as it is finished, e.g. to store its strategies and :meth:`Sweep.release` them.
    ``read_strategies(label)``: whether a sweep read back from the checkpoint needs its strategies
    (default: all do; see :func:`solve_sweep`).
    """
    values = [harville]
    sweeps: list[Sweep] = []
    for k in range(depth + 1):
        label = "harville" if k == 0 else f"FGS-{k}"
        if k == 0 and first is not None:
            sweep = first
        else:
            sweep = solve_sweep(label, layers, values[k], gamma, tensors, warm=warm, threads=threads,
                                progress=progress, checkpoint=checkpoint, keep_solvers=k < depth, consume_warm=k > 0,
                                read_strategies=True if read_strategies is None else read_strategies(label))
            if on_sweep is not None:
                on_sweep(sweep)
        sweeps.append(sweep)
        warm = sweep.solvers
        if k < depth:
            values.append(sweep.hand_values)
        if k:
            sweeps[k - 1].solvers = {}  # only the latest solvers are needed for warm starts
            if checkpoint is not None:
                drop_solvers(checkpoint, sweeps[k - 1].label)
    return sweeps, values
