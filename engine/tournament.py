"""PI-CFR+: the whole tournament solved layer by layer (SPEC §6).

A layer is every state with the same number of players; a hand only leads to states of its own
layer or of smaller ones, so layers are solved 2, 3, …, players. Within a layer:

1. initialise the values V (m states × n positions, $) with ICM (Malmuth-Harville);
2. (a) for every state whose hand, with successor values from V, is more than ``gamma``
   exploitable, continue CFR+ (warm: regrets and average strategy are kept) until it is not;
3. (b) policy evaluation: solve the linear system of the layer's Markov chain for V exactly;
4. stop when, after (b), no state needs (a).

Most of a late outer iteration is spent confirming that states are still within target. A state is
skipped when a rigorous bound on its exploitability (:mod:`engine.exploitability_bounds`) is
within target; while the layer is not yet settled, outer iterations also *screen*: a state whose bound fails but whose
exploitability probably moved little (:data:`SCREEN_FRACTION`) waits for a later check. The layer
only stops after an outer iteration that screens no state updates none, so the result is as
certified as without it. A state whose solve ends at the CFR+ iteration cap above the target is
*held* there (:data:`HELD_SLACK`): reported, measured, but not solved in vain in every outer
iteration. A layer that settles at gamma with held states above it tries them again with a larger
cap before it ends (:data:`HELD_RETRIES`).

Each outer iteration is logged (states updated, max |ΔV|, max exploitability, time). With a
checkpoint folder the solve is saved atomically after every outer iteration and every few minutes
within one and within the final exact measurement (:mod:`engine.checkpoint`), so an interrupted
solve resumes where it stopped, on the same path, and a finished layer is read back without any
work (unless it finished above gamma: then the next run reopens it for more retries).
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine import states
from engine.cfr import HandSolver
from engine.checkpoint import (BlockSaver, Ledger, check_lower_fingerprint, layer_path, load_blocks, load_layer,
                               folder_lock, load_measure_blocks, lower_fingerprint, save_block, save_layer,
                               save_measure_block)
from engine.exploitability_bounds import gain_bounds, margin_bounds
from engine.game_tree import CompiledHand, utilities
from engine.hand_pass import SolverTensors
from engine.layers import compile_layer, icm_values
from engine.memory import into_kept, release_free_memory
from engine.policy_evaluation import evaluate_layer
from engine.solve_progress import KindedClock, cost_kinds, estimable_order, first_solve_kinds, states_done_events
from engine.solver_pool import SolverPool, heaviest_first, largest_hand
from engine.target_ladder import CYCLE_WINDOW, first_target, inner_target, level_of, target_levels, values_cycling
from engine.warm_starts import start_from_neighbour, warm_start_waves

ProgressFn = Callable[[dict], None]


@dataclass
class LayerSolution:
    """The solved layer: per state its strategy (the CFR+ profile its last solve certified, else the
    average profile), values and quality."""

    players: int
    stacks: np.ndarray  # (m, n) units, acting order
    values: np.ndarray  # (m, n) $ equilibrium payoffs
    strategy: list[np.ndarray]  # per state (nodes, 169) jam probabilities
    exploitability: np.ndarray  # (m,) $ largest best-response gain of the state's hand
    iterations: np.ndarray  # (m,) CFR+ iterations spent on the state
    hands: list[CompiledHand]
    order_probs: list[np.ndarray]  # per state (terminals, 6) outcome probabilities of the profile
    log: list[dict] = field(default_factory=list)

    @property
    def exact_checks(self) -> int:
        """Exact exploitability checks the solve made, over all its outer iterations (``states_checked``)."""
        return int(sum(e["states_checked"] for e in self.log))


PROGRESS_EVERY_S = 15.0
"""Seconds between the 'states done' events within an outer iteration or the final measurement."""


class _Ticker:
    """Reports states finished within an outer iteration, at most every ``every`` seconds, with the
    time left priced per kind of state (:class:`~engine.solve_progress.KindedClock`; ``kinds``
    per state, ``todo`` a mask of the states this outer iteration still has to finish, ``prior``
    per kind)."""

    def __init__(self, progress: ProgressFn | None, n: int, outer: int, kinds: np.ndarray, todo: np.ndarray,
                 prior: np.ndarray | None = None, every: float | None = None, wall_before: float = 0.0):
        self.progress, self.n, self.outer, self.m = progress, n, outer, len(kinds)
        self.every = PROGRESS_EVERY_S if every is None else every
        self.count = self.m - int(np.count_nonzero(todo))
        self.clock = KindedClock(kinds, todo, prior)
        self.last = time.perf_counter()
        self.t0 = self.last - wall_before  # the outer iteration's seconds, its earlier runs' included
        self.lock = threading.Lock()

    def begin(self, state: int, started: float) -> None:
        """State ``state`` started at ``started`` (perf_counter)."""
        self.clock.begin(state, started)

    def tick(self, state: int, started: float) -> None:
        """State ``state``, started at ``started`` (perf_counter), has finished."""
        with self.lock:
            self.count += 1
            now = time.perf_counter()
            self.clock.finished(state, started, now)
            if self.progress is None or now - self.last < self.every or self.count == self.m:
                return
            self.last = now
            count, left = self.count, self.clock.seconds_left(now)
        self.progress({"event": "states", "players": self.n, "outer_iteration": self.outer, "done": count,
                       "states": self.m, "wall_s": now - self.t0} | left)


RESTART_WEIGHT: float | None = 2.0
"""When a solved state's successor values changed so much that its profile is more than
:data:`RESCALE_ABOVE` times the target exploitable, its regrets are scaled to this many
iterations' worth before CFR+ continues (None keeps them as they are); see
:func:`engine.model_strategies.warm_start`."""

RESCALE_ABOVE = 30.0
"""A re-solve keeps the state's regrets as they are while its profile is at most this many times
the target exploitable (see :func:`prepare_resolve`)."""


def _rescale_regrets(solver: HandSolver) -> None:
    if RESTART_WEIGHT is None or solver.regret_weight == 0.0:
        return
    solver.rescale_regrets(RESTART_WEIGHT)


def keep_records_in_place(solver: HandSolver, ledger: Ledger, s: int, solution: np.ndarray | None,
                          gains: np.ndarray | None, margins: tuple[np.ndarray, np.ndarray] | None) -> None:
    """Put state ``s``'s new records (certified profile, gains, decision margins, and its outcome
    probabilities into the ledger) into the memory of the ones they replace, where those fit.

    A resumed layer restores every record in the main thread; replaced by new ones made in the
    solver threads, they freed pages the trim could not hand back (:mod:`engine.memory`), and
    the 45-unit 5-player layer grew by about 22 KiB per state. The layer solve's own threads are
    the only readers of a state's records until it returns, so they are written in place."""
    if solver.solution is not None:
        solver.solution = into_kept(solution, solver.solution)
    if solver.gains is not None:
        solver.gains = into_kept(gains, solver.gains)
    if solver.margins is not None:
        solver.margins = tuple(into_kept(k, x) for k, x in zip(margins or (None, None), solver.margins))
    ledger.order_probs[s] = into_kept(ledger.order_probs[s], solver.order_probs)


def prepare_resolve(solver: HandSolver, exploitability: float, target: float) -> bool:
    """Get a solved state ready to be re-solved to ``target`` ($); True if its regrets were rescaled.

    A profile only a little above the target keeps its regrets as they are: large accumulated
    regrets move the iterate slowly, so the re-solve ends close to the previous profile. That
    matters because a hand has many ε-equilibria that give the *other* players different values;
    a re-solve that jumps to another one moves the layer's values by far more than ε and forces
    more outer iterations. A profile far off (its successor values moved a lot) has its regrets
    scaled to :data:`RESTART_WEIGHT` iterations' worth so CFR+ adapts quickly. Measured (2 cores,
    sampled tables), PI-CFR+ of the 25-unit 3-player game at
    $0.0001: 234 s rescaling every re-solve, 104 s never, 93 s above 10× the target, 78 s above
    3×; the quick 10-unit 5-player game at $0.001: 43, 50, 56 and 35 s; gs08 (45 units, 946
    three-player states) at $0.0001: 300 s above 3× (39 outer iterations; rescaling every re-solve
    had not finished in 900 s). The average restarts either way.

    Tried and dropped: measuring "far off" against max(target, gain when last certified), so that
    a tightened target alone does not rescale. On gs08 it was about as fast (212 vs 226 s, one run
    each), but the re-solves kept their whole history and the layer's result depended on the
    path: a 6-unit game solved in one go and resumed from a checkpoint ended 0.22 $ apart, both
    within gamma = 0.001 everywhere (with rescaling, within 0.005).

    Those figures predate the linearly discounted regrets (see :class:`engine.cfr.HandSolver`),
    which forget old iterations by themselves, so the threshold was measured again (2 cores,
    sampled tables, one run each, whole layer): gs08's 3-player layer 93 s at 3×, 77 s at 10×,
    76 s at 30×, 79 s never rescaling; the 16-unit 4-player layer 140 s at 3×, 118–122 s at 10×,
    98 s at 30×, 128 s at 100×, 148 s never.
    """
    rescale = exploitability > RESCALE_ABOVE * target
    if rescale:
        _rescale_regrets(solver)
    solver.restart_average()
    return rescale


def needs_no_check(lower: float, upper: float, target: float) -> bool:
    """Whether a solved state can be re-solved without first checking its profile exactly.

    ``lower`` and ``upper`` ($) bound the profile's exploitability under the new values. When
    even the lower bound is above the target the state must be re-solved anyway, and the exact
    exploitability would only decide whether its regrets are rescaled first
    (:func:`prepare_resolve`: above :data:`RESCALE_ABOVE` × target), which the bounds decide too
    unless they straddle that line. The check is a whole pass under new utilities (the most
    expensive kind: it fills the showdown values of every reached jammer pair). A checked state's
    re-solve counts the checked profile as its first CFR+ iterate
    (:meth:`~engine.cfr.HandSolver.continue_from_check`), so the check is not wasted there either;
    skipped, the re-solve starts from the regrets' next iterate instead, at the same cost. Both
    ways were measured with that in place (2026-11-26, the 20-unit 4-player layer without kept
    sums, one thread each, side by side): 269.9 s skipping against 273.0 s checking every state
    (4,634 against 10,308 exact checks, 86,697 against 88,716 CFR+ iterations in all layers), so
    the skip stays.
    """
    return lower > target and (lower > RESCALE_ABOVE * target or upper <= RESCALE_ABOVE * target)


SCREEN_FRACTION = 0.1
"""In a screening outer iteration (see :func:`solve_layer`) a state whose rigorous bound fails is
still not re-checked while gain_then + SCREEN_FRACTION · (bound − gain_then) is within the target.
Measured on the 25-unit 3-player game: a state's exploitability rose by a median 0 and a 99th
percentile 9 % of what :func:`~engine.exploitability_bounds.gain_bound` allowed, so exact checks
(a full hand pass each, most of the time of an outer iteration that updates few states) mostly
confirm what was known."""


SOLVE_SLACK = {3: 0.7}
"""Per layer size (players): a state that has to be (re)solved is solved to this fraction of the
outer iteration's target (missing: 1, no slack); checks still compare with the target itself.

A state solved with room to spare stays within target while the next outer iterations move its
successor values a little, so fewer states are checked exactly and re-solved; the price is more
CFR+ iterations per solve. That pays where an iteration is cheap next to the first pass after the
utilities changed (which refills the three-way showdown values). Measured on gs08's 3-player
layer (2 cores, sampled tables; this machine's speed varies by day and hour, so alternating
runs): 64.3, 61.4, 69.4 s without slack (39,801 CFR+ iterations, 34 outer iterations) against
57.8 and 54.0 s at 0.7 (49,047, 31); 0.5 gave 54.0 and 62.5 s (57,480), 0.35 65.7 and 64.9 s
(70,639); 0.7 at the last target level only, 63.9 s (46,391). Counted passes: 11,814 after a
change of utilities and 38,979 others without slack, 9,187 and 48,400 at 0.7. On the 16-unit
4-player layer the same 0.7 was slower, 103.9 and 113.6 s against 93.5 and 95.6 s (34,324
against 28,907 iterations; passes 5,078 + 34,140 against 6,215 + 28,646): there an iteration
costs about a quarter of a first pass (2 against 8 ms) and the slack buys too few saved passes.
The gs08 benchmark (its own sampled tables) gains less: 73.6 and 90.3 s against 75.7 and 94.9 s
in alternating runs an hour later, when the machine was slower (49,269 against 40,321
iterations, 40 against 34 outer iterations), so count on a few percent, not the 10–15 % above.
"""


HELD_SLACK = 2.0
"""A state whose solve ran out of CFR+ iterations (``max_iterations``, even after the stall
fallback of :meth:`HandSolver.solve`) above the target is *held*: at that target it is checked
like any other but solved again only once it is more than this many times as exploitable as it
was left. Solving it again would spend the whole cap for nothing and count as an update, so a
layer with such a hand could never end (it would run until stopped); held, the state is reported
(an ``uncertified`` progress event, its exploitability in the solution) and the layer ends. A
tighter target tries it afresh."""


HELD_RETRIES = 2
"""Times a layer solve tries its held states again once its outer iterations at gamma have
settled with some of them above gamma, each time with :data:`HELD_RETRY_GROWTH` times the
CFR+ iteration cap of the time before (20,000, then 40,000 and 80,000).

Held at gamma, a state would otherwise end the layer above gamma for good: the pipeline's blocking
check of every state's exploitability fails, the analyses after the layer do not run, and a
rebuild would read the same finished layer back. More iterations are the remedy at hand (with
three or more players CFR+ is not guaranteed to reach a Nash equilibrium, but the stalled hands
found so far certified within a few thousand more), and a new solve of the state also meets the
stall restarts of :meth:`HandSolver.solve` anew. A rebuild of a layer that finished above gamma
reopens it with this many more retries (160,000 and 320,000 iterations next), so running the
same command again is how a user asks for them. The 45-unit 4-player layers solved end to end
since :data:`engine.cfr.STALL_RESTART_EVERY` (sampled tables, and the `thesis` game's exact ones)
ended within gamma with no state held; this is the safety net for a layer ten times their size."""

HELD_RETRY_GROWTH = 2
"""Factor of the CFR+ iteration cap at gamma per retry of the held states (:data:`HELD_RETRIES`)."""


LOOSE_MAX_ITERATIONS = 64
"""CFR+ iterations a re-solve may spend while the layer's target is looser than gamma; past them
it keeps the less exploitable of its last iterate and its average and is held (see
:data:`HELD_SLACK`), its regrets carrying the work on to the next target level. Solves to gamma
itself are not capped (``max_iterations``).

A re-solve's iterations have a long tail: on sampled states of the solved 45-unit 4-player layer
(values moved about 0.03 $, re-solved to $0.0001) the median took 17 iterations, the mean 29, and
the tenth that took more than 50 spent 61 % of the re-solves' time, their iterates hovering at 2–5×
the target for a hundred or more iterations before one dipped below it (neither the average nor
the mean of the last 8, 16 or 32 iterates got there sooner in 7 of 8 such states). Few re-solves of
the loose levels are that long, but a stalled hand is: in the 45-unit 4-player layer (2026-11-26,
2 threads) the opening of the $0.00032 level took 203 s against 260 s uncapped (one hand held at
$0.025 there, solved to gamma later), and the layer 2,677 s against 2,718 s (1,093,352 against
1,102,854 CFR+ iterations; outer iterations 2–14, the same path in both runs, 1,158 against
1,164 s, and outer iteration 1 slowed by 63 s by tests run beside it). The 20-unit 4-player layer
without kept sums, side by side on one thread each: 308.3 against 309.5 s (85,652 against 87,243
CFR+ iterations)."""


CHECKPOINT_EVERY = 300.0
"""Seconds between the block checkpoints a layer solve saves within an outer iteration: an
interrupt loses at most about this much work, plus the chunks of states the threads are running at
the time (up to 8 states each; :meth:`~engine.solver_pool.SolverPool.imap_done`)."""


JAM_CHANCE_BUDGET = 2 << 30
"""Bytes a layer solve may spend keeping every state's depth-2 jam chances between outer
iterations (:meth:`HandSolver.keep_jam_chances`), so a state's next check starts from them
instead of summing them from scratch. All states or none: 1.4 MB per depth-2 node, so the
45-unit 3-player layer (946 states with one each, 1.3 GB) keeps them, the 4-player (58 GB) and
5-player layers do not."""


DEPTH2_SUM_BUDGET = 2 << 30
"""Bytes a layer solve may spend keeping every state's depth-2 counterfactual sums in outcome
space between outer iterations (:meth:`HandSolver.keep_depth2_sums`), so that re-checking an
unchanged profile under new successor values reads no showdown tensor. All states or none:
about 245 KB per depth-2 node, so the 45-unit 3-player layer (946 states with one each, 230 MB)
and the 16-unit 4-player layer (455 states with four, 420 MB) keep them, the 45-unit 4-player
(12 GB) and 5-player layers do not."""


def _screens(gamma: float, log: list[dict], loose: bool, target: float) -> bool:
    """Whether the next outer iteration screens (see :data:`SCREEN_FRACTION`).

    Only an outer iteration that screened no state (every state checked exactly or by a rigorous
    bound) can end the layer, so one without screening follows each outer iteration at gamma that
    updated no state but screened some.
    """
    if not loose:
        return False
    settled_at_gamma = target <= gamma and bool(log) and log[-1]["target"] <= gamma \
        and log[-1]["states_updated"] == 0
    return not settled_at_gamma


def solve_layer(units: int, n: int, payouts: tuple[float, ...], gamma: float, tensors: SolverTensors,
                lower_values: dict[int, np.ndarray], threads: int | None = None, batch: int = 8,
                max_outer: int | None = None, max_iterations: int = 20_000, checkpoint: Path | None = None,
                progress: ProgressFn | None = None, loose: bool = True,
                checkpoint_every: float = CHECKPOINT_EVERY, held_retries: int = HELD_RETRIES) -> LayerSolution:
    """Solve the n-player layer to per-state exploitability ≤ gamma ($) given solved smaller layers.

    With a ``checkpoint`` folder the solve saves itself after every outer iteration and, within
    one, the states finished every ``checkpoint_every`` seconds (see :mod:`engine.checkpoint`),
    and resumes from there: an interrupt loses at most that much work. A layer that settles at
    gamma with states held above it (their solves ran into the CFR+ iteration cap) tries them
    again ``held_retries`` times with a growing cap (see :data:`HELD_RETRIES`). The folder is
    locked while the solve runs: a second process solving into it (a `dagster dev` run beside a
    `./lab build` of the same game) is refused rather than mixing its blocks in.

    The layer ends when an outer iteration at gamma updates no state (SPEC §6), however many
    outer iterations that takes, unless ``max_outer`` caps their total (tests and benchmarks: a
    later call with a larger cap goes on from the checkpoint) or its values cycle instead of
    settling (:func:`engine.target_ladder.values_cycling`; progress event ``not_converging``; the
    layer is saved as finished, and a later call reads it back as it ended). A layer stopped by
    the cap or a cycle before it settled has every state's exploitability measured under its final
    values, so what it reports is what its profile is, not the bounds of an outer iteration whose
    values have since moved.
    """
    args = (units, n, payouts, gamma, tensors, lower_values, threads, batch, max_outer, max_iterations, checkpoint,
            progress, loose, checkpoint_every, held_retries)
    if checkpoint is None:
        return _solve_layer(*args)
    with folder_lock(checkpoint, f"the {n}-player layer's solve"):
        for left in checkpoint.glob(f"layer{n}*.tmp*"):  # a save a kill cut short (up to 15 GB): never read
            left.unlink()
        return _solve_layer(*args)


def _solve_layer(units, n, payouts, gamma, tensors, lower_values, threads, batch, max_outer, max_iterations,
                 checkpoint, progress, loose, checkpoint_every, held_retries) -> LayerSolution:
    slack = SOLVE_SLACK.get(n, 1.0)
    open_prizes = float(sum(payouts[:n]))  # ($: what the layer's values share, see values_cycling)
    t_start = time.perf_counter()
    release_free_memory()  # what earlier work freed, before this layer's solvers are made (SolverPool)
    if progress:  # (the 45-unit 5-player layer's hands take minutes to build)
        progress({"event": "preparing", "players": n, "states": states.n_states(units, n)})
    stacks, hands = compile_layer(units, n, payouts)
    m = len(hands)
    solvers = [HandSolver(h, tensors) for h in hands]
    V = icm_values(stacks, payouts)
    # per state: gains ($ per player) of its profile when last checked, and a bound on how far its
    # utilities moved since (sum of its same-layer successors' max |ΔV|): a state whose
    # max gain + 2·drift is within the target cannot be more exploitable than that, so the
    # evaluation is skipped (a utility change of δ moves each player's gain by at most 2δ).
    # Failing that, the sharper bounds of :mod:`engine.exploitability_bounds` from the per-player
    # gains and the layer values at the last check (kept per outer iteration while a state refers to them)
    ledger = Ledger.empty([len(h.term_kind) for h in hands], n)
    log: list[dict] = []
    start_outer = 0
    finished = cycling = False
    ledger.held_retries_allowed = held_retries

    def retry_held(over: np.ndarray, outer_iteration: int) -> bool:
        """Solve the held states ``over`` (above gamma) again with a larger cap, if a retry is left."""
        if not len(over) or ledger.held_retries >= ledger.held_retries_allowed:
            return False
        ledger.held_retries += 1
        ledger.settled = False
        if progress:
            progress({"event": "retrying_held", "players": n, "outer_iteration": outer_iteration,
                      "states": len(over), "exploitability": float(ledger.bound[over].max()),
                      "max_iterations": max_iterations * HELD_RETRY_GROWTH ** ledger.held_retries,
                      "retry": ledger.held_retries, "retries": ledger.held_retries_allowed})
        ledger.held_target[over], ledger.held_exploitability[over] = np.inf, 0.0
        return True

    if checkpoint is not None:
        check_lower_fingerprint(checkpoint, n, lower_fingerprint(lower_values))
    if checkpoint is not None and layer_path(checkpoint, n).exists():
        V, log, start_outer, finished = load_layer(checkpoint, n, solvers, ledger)
        cycling = values_cycling(log, open_prizes)  # stopped by a cycle: kept as it ended, or measured if not yet
        over = np.flatnonzero(ledger.bound > gamma) if finished else np.zeros(0, np.int64)
        if progress:
            progress({"event": "resumed", "players": n, "outer": start_outer, "finished": finished,
                      "over_gamma": len(over), "settled": ledger.settled})
        if len(over) and not cycling:  # finished above gamma: this run may retry its held states (HELD_RETRIES)
            ledger.held_retries_allowed = ledger.held_retries + held_retries
            finished = not retry_held(over, start_outer)
    pool = SolverPool(threads, largest_hand(hands))
    keep_jam_chances = sum(s.jam_chance_bytes() for s in solvers) <= JAM_CHANCE_BUDGET
    keep_depth2_sums = sum(s.depth2_sum_bytes() for s in solvers) <= DEPTH2_SUM_BUDGET
    successors = [np.unique(h.term_next[h.term_next_players == n]) for h in hands]
    order = np.array(heaviest_first(hands), dtype=np.int64)
    wave, source = warm_start_waves(stacks)
    tree_kinds = cost_kinds(hands)  # (kinds, prior) of the time-left estimates
    converged = ledger.settled and not finished  # (resumed in its final measurement)
    if progress:
        progress({"event": "prepared", "players": n, "states": m, "wall_s": time.perf_counter() - t_start})
    try:
        outers = itertools.count(start_outer) if max_outer is None else range(start_outer, max_outer)
        for outer in ([] if finished or converged or cycling else outers):
            t0 = time.perf_counter()
            values = {**lower_values, n: V}
            ledger.skipped[:] = False
            ledger.screened[:] = False
            ledger.checked[:] = False
            spent: dict[int, int] = {}  # CFR+ iterations per state finished in this outer iteration
            if checkpoint is not None and outer == start_outer:
                spent, elapsed = load_blocks(checkpoint, n, outer, solvers, ledger)
                t0 -= elapsed  # the outer iteration's time counts its earlier runs' kept work
                if spent and progress:
                    progress({"event": "resumed_states", "players": n, "outer_iteration": outer + 1,
                              "done": len(spent), "states": m})
            never_solved = np.array([solver.iterations == 0 for solver in solvers], dtype=bool)
            todo = np.ones(m, dtype=bool)
            todo[list(spent)] = False
            kinds, prior = first_solve_kinds(*tree_kinds, (source < 0) & never_solved) if never_solved.any() \
                else tree_kinds
            ticker = _Ticker(progress, n, outer + 1, kinds, todo, prior, wall_before=time.perf_counter() - t0)

            target = inner_target(gamma, log, loose, m, first_target(n))
            screen = _screens(gamma, log, loose, target)

            def work(s: int) -> tuple[int, int]:
                started = time.perf_counter()
                ticker.begin(s, started)
                result = solve_state(s)
                ticker.tick(s, started)
                return result

            def solve_state(s: int) -> tuple[int, int]:
                ws = pool.workspace()
                ws.forget()  # a state's results must not depend on which states this thread ran before
                solver = solvers[s]
                kept = (solver.solution, solver.gains, solver.margins)  # their memory takes the new ones
                U = utilities(solver.hand, values)
                fresh = solver.iterations == 0
                if not fresh:
                    then = ledger.gains[s].max()
                    bound = then + 2.0 * ledger.drift[s]
                    lower = then - 2.0 * ledger.drift[s]
                    if bound > target and ledger.checked_at[s] >= 0:
                        U_then = utilities(solver.hand, {**lower_values, n: ledger.V_at[int(ledger.checked_at[s])]})
                        bound, low = gain_bounds(ledger.gains[s], ledger.order_probs[s], U_then, U,
                                                 solver.hand.term_orders)
                        lower = max(lower, low)
                        if bound > target and solver.margins is not None:
                            high, low = margin_bounds(solver.strategy(), solver.margins, solver.hand,
                                                      ledger.order_probs[s], U_then, U)
                            bound, lower = min(bound, high), max(lower, low)
                    rigorous = bound <= target
                    if rigorous or (screen and np.isfinite(then) and then + SCREEN_FRACTION * (bound - then) <= target):
                        ledger.skipped[s], ledger.screened[s] = rigorous, not rigorous
                        ledger.bound[s] = bound
                        return s, 0
                held = ledger.held_target[s] <= target
                checked_now = False
                if fresh:
                    # no profile to check yet; the first iterate (from a neighbour's regrets) is checked for free
                    if source[s] >= 0:
                        start_from_neighbour(solver, solvers[source[s]])
                    e = np.inf
                elif np.isfinite(then) and needs_no_check(lower, bound, target) and not held:
                    e = lower  # above the target for sure: re-solved below, as the exact check would decide
                else:
                    e, gains = solver.exploitability(U, ws=ws)
                    ledger.gains[s] = gains
                    ledger.checked[s] = True
                    checked_now = True
                its = 0
                if e > target and not (held and e <= HELD_SLACK * ledger.held_exploitability[s]):
                    if not fresh:
                        prepare_resolve(solver, e, target)
                    if checked_now:
                        solver.continue_from_check()
                    cap = max_iterations * HELD_RETRY_GROWTH ** ledger.held_retries if target <= gamma \
                        else min(max_iterations, LOOSE_MAX_ITERATIONS)
                    e, its = solver.solve(U, slack * target, ws=ws, batch=batch, delay=2 if fresh else 0,
                                          max_iterations=cap)
                    its += checked_now  # the check's pass was the re-solve's first iteration
                    ledger.gains[s] = solver.gains
                    if e > target:  # the iteration cap, even after the stall fallback: held
                        ledger.held_target[s], ledger.held_exploitability[s] = target, e
                        if progress and cap == max_iterations:  # (a loose level's cap is routine)
                            progress({"event": "uncertified", "players": n, "outer_iteration": outer + 1,
                                      "stacks": [int(x) for x in stacks[s]], "exploitability": float(e),
                                      "target": float(target), "cfr_iterations": int(its),
                                      "held_slack": HELD_SLACK})
                    else:
                        ledger.held_target[s], ledger.held_exploitability[s] = np.inf, 0.0
                solver.keep_margins(ws)  # the workspace holds the certified profile's evaluation
                if keep_jam_chances:
                    solver.keep_jam_chances(ws)
                if keep_depth2_sums:
                    solver.keep_depth2_sums(ws)
                keep_records_in_place(solver, ledger, s, *kept)
                ledger.drift[s] = 0.0
                ledger.checked_at[s] = outer
                ledger.bound[s] = e
                return s, its

            ledger.V_at[outer] = V
            # first solves wave after wave (see warm_start_waves), later ones all at once, their
            # time-left pilots taken from the states left (a resumed iteration had run its first
            # pilots before the interrupt, so a kind not reached yet would be priced by its pass
            # cost alone until its turn)
            if outer == 0:
                segments = [order[wave[order] == w] for w in range(int(wave.max(initial=-1)) + 1)]
            else:
                left = order[~np.isin(order, np.fromiter(spent, np.int64, len(spent)))]
                segments = [estimable_order(left, tree_kinds[0], seed=outer)]

            def save_states(pending: list[int]) -> None:
                elapsed = time.perf_counter() - t0  # (the event says what the block keeps)
                save_block(checkpoint, n, outer, spent, pending, solvers, ledger, elapsed=elapsed)
                release_free_memory()  # the restored records the threads replaced (engine.memory)
                if progress:
                    progress({"event": "block_saved", "players": n, "outer_iteration": outer + 1,
                              "states": len(pending), "done": len(spent), "wall_s": elapsed})

            blocks = BlockSaver(save_states if checkpoint is not None else None, checkpoint_every)
            for segment in segments:
                for _, (s, its) in pool.imap_done(work, [s for s in segment.tolist() if s not in spent]):
                    spent[s] = its
                    blocks.add(s)
            referenced = set(ledger.checked_at.tolist())
            for k in [k for k in ledger.V_at if k not in referenced]:
                del ledger.V_at[k]
            spent_total = sum(spent.values())
            updated = sum(its > 0 for its in spent.values())
            V_new = evaluate_layer(hands, ledger.order_probs, n, lower_values)
            moved = np.abs(V_new - V).max(axis=1)
            delta = float(moved.max()) if m else 0.0
            for s_, succ in enumerate(successors):
                if len(succ):
                    ledger.drift[s_] += moved[succ].max()
            V = V_new
            entry = {"players": n, "outer_iteration": outer + 1, "target": target, "states_updated": int(updated),
                     "states_skipped": int(ledger.skipped.sum()), "states_screened": int(ledger.screened.sum()),
                     "states_checked": int(ledger.checked.sum()),
                     "cfr_iterations": int(spent_total), "max_delta_v": delta,
                     "max_exploitability": float(ledger.bound.max()) if m else 0.0,
                     "wall_s": time.perf_counter() - t0}
            log.append(entry)
            if progress:  # (with the target's place on the layer's ladder, for the log)
                progress({"event": "outer", **entry, **({"level": level_of(target, gamma, n),
                                                          "levels": len(target_levels(gamma, n))} if loose else {})})
            # (a screening outer iteration that screened no state checked every one like any other)
            settled = updated == 0 and target <= gamma and not ledger.screened.any()
            # held above gamma: solved again with a larger cap (see HELD_RETRIES)
            retry = settled and retry_held(np.flatnonzero(ledger.bound > gamma), outer + 1)
            ledger.settled = settled and not retry
            if checkpoint is not None:
                save_layer(checkpoint, n, V, log, outer + 1, solvers, ledger)
                release_free_memory()
            if ledger.settled:
                converged = True
                break
            if values_cycling(log, open_prizes):
                cycling = True
                if progress:
                    progress({"event": "not_converging", "players": n, "outer_iteration": outer + 1,
                              "target": target, "window": CYCLE_WINDOW,
                              "max_delta_v": min(e["max_delta_v"] for e in log[-CYCLE_WINDOW:])})
                break
        if not finished:
            _measure_last(n, {**lower_values, n: V}, hands, solvers, ledger, pool, order, tree_kinds, len(log),
                          checkpoint if converged or cycling else None, checkpoint_every, progress,
                          every_state=not converged,
                          why="its values cycle" if cycling else "at its cap of outer iterations")
            if checkpoint is not None and (converged or cycling):  # (stopped by max_outer: a later call goes on)
                save_layer(checkpoint, n, V, log, len(log), solvers, ledger, finished=True)
    finally:
        pool.close()
    if progress:
        progress({"event": "layer_done", "players": n, "states": m, "wall_s": time.perf_counter() - t_start})
    solution = LayerSolution(players=n, stacks=stacks, values=V, strategy=[s.strategy() for s in solvers],
                             exploitability=ledger.bound.copy(), iterations=np.array([s.iterations for s in solvers]),
                             hands=hands, order_probs=ledger.order_probs, log=log)
    # the solvers' regrets and records (about 10 GiB of the 45-unit 5-player layer's 19) go back to the
    # system now, not after the next asset's first allocations: it runs in this process (engine.memory)
    solvers.clear()
    release_free_memory()
    return solution


def _measure_last(n: int, values: dict[int, np.ndarray], hands: list[CompiledHand], solvers: list[HandSolver],
                  ledger: Ledger, pool: SolverPool, order: np.ndarray, tree_kinds: tuple[np.ndarray, np.ndarray],
                  outer: int, checkpoint: Path | None, checkpoint_every: float, progress: ProgressFn | None,
                  every_state: bool = False, why: str = "") -> None:
    """The exact exploitability ($, into ``ledger.bound``) of the states skipped or screened in the
    layer's last outer iteration (they carry only a bound). About 23 minutes on the `thesis`
    game's 45-unit 5-player layer (the 4-player layer's took 1.8 min), so with a ``checkpoint``
    the states measured are saved every ``checkpoint_every`` seconds (``outer``: the outer
    iterations the layer settled after) and an interrupted measurement resumes with them;
    progress events ``measuring`` (once) and ``measuring_states``. ``every_state``: every state's
    (a layer stopped before it settled, by ``max_outer`` or values that cycle, ``why`` saying which: the
    states its last outer iteration solved were measured under the values before its policy evaluation)."""
    t0 = time.perf_counter()
    last = np.arange(len(hands)) if every_state else np.flatnonzero(ledger.skipped | ledger.screened)
    done, elapsed = load_measure_blocks(checkpoint, n, outer, ledger.bound) if checkpoint is not None else ([], 0.0)
    t0 -= elapsed  # the measurement's seconds over all its runs
    wanted = np.zeros(len(hands), dtype=bool)
    wanted[last] = True
    wanted[done] = False
    todo = order[wanted[order]].tolist()  # heaviest first, as the layer's ``order``
    if progress and len(last):
        progress({"event": "measuring", "players": n, "states": len(last), "done": len(done),
                  "every_state": every_state, **({"why": why} if every_state else {})})

    def measure(s: int) -> None:
        solver = solvers[s]
        ws = pool.workspace()
        ws.forget()
        ledger.bound[s], _ = solver.exploitability(utilities(solver.hand, values), ws=ws)

    clock = KindedClock(tree_kinds[0], wanted, tree_kinds[1])  # (the layer's kinds, not computed again)
    results = states_done_events(pool.imap_done(clock.timed(measure), todo), len(todo), progress, PROGRESS_EVERY_S,
                                 {"event": "measuring_states", "players": n}, clock=clock, done_before=len(done),
                                 states=len(last), wall_before=time.perf_counter() - t0)
    blocks = BlockSaver(None if checkpoint is None else lambda states: save_measure_block(
        checkpoint, n, outer, states, ledger.bound, time.perf_counter() - t0), checkpoint_every)
    for s, _ in results:
        blocks.add(s)  # (the last ones are kept by the layer's save that follows)


def solve_tournament(units: int, players: int, payouts: tuple[float, ...], gamma: float, tensors: SolverTensors,
                     threads: int | None = None, checkpoint: Path | None = None,
                     progress: ProgressFn | None = None) -> dict[int, LayerSolution]:
    """Every layer 2..players, each solved given the smaller ones."""
    solved: dict[int, LayerSolution] = {}
    for n in range(2, players + 1):
        lower = {k: sol.values for k, sol in solved.items()}
        # a layer finished above gamma retries its held states when read back, which moves its values;
        # once the layer above has checkpoints solved against them, they stay (the Dagster graph never
        # gets there: a layer above gamma fails its blocking check before the next starts)
        above_started = checkpoint is not None and any(checkpoint.glob(f"layer{n + 1}.*npz"))
        solved[n] = solve_layer(units, n, payouts, gamma, tensors, lower, threads=threads, checkpoint=checkpoint,
                                progress=progress, held_retries=0 if above_started else HELD_RETRIES)
    return solved
