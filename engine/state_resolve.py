"""One state's turn in an outer iteration of a layer solve (PI-CFR+, SPEC §6): bound, check, re-solve.

An outer iteration visits every state of the layer with the values of the last policy evaluation.
Most turns end without any pass: the state's profile, certified at an earlier check, is bounded
under the new values (:mod:`engine.exploitability_bounds`) and skipped or screened. The rest are
checked exactly, re-solved with CFR+ where above the target, and leave their records (gains,
outcome probabilities, margins, kept sums) for the next turn's bounds. The outer loop around
the turns, the policy evaluation and the checkpoints are :mod:`engine.tournament`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.cfr import HandSolver
from engine.checkpoint import Ledger
from engine.exploitability_bounds import gain_bounds, margin_bounds
from engine.game_tree import utilities
from engine.hand_pass import Workspace
from engine.memory import into_kept
from engine.solve_progress import ProgressFn
from engine.solver_pool import SolverPool
from engine.warm_starts import start_from_neighbour


RESTART_WEIGHT: float | None = 2.0
"""When a solved state's successor values changed so much that its profile is more than
:data:`RESCALE_ABOVE` times the target exploitable, its regrets are scaled to this many
iterations' worth before CFR+ continues (None keeps them as they are); see
:func:`engine.model_strategies.warm_start`."""

RESCALE_ABOVE = 30.0
"""A re-solve keeps the state's regrets as they are while its profile is at most this many times
the target exploitable (see :func:`prepare_resolve`)."""


def restart_regrets(solver: HandSolver) -> None:
    """Scale a far-off state's regrets to :data:`RESTART_WEIGHT` iterations' worth (see
    :func:`prepare_resolve`); a solver with no regrets yet, or a weight of None, is left as it is."""
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
        restart_regrets(solver)
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
"""In a screening outer iteration (see :func:`engine.tournament.solve_layer`) a state whose rigorous bound fails is
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


HELD_RETRY_GROWTH = 2
"""Factor of the CFR+ iteration cap at gamma per retry of the held states
(:data:`engine.tournament.HELD_RETRIES`)."""


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


@dataclass
class StateResolver:
    """What a state's turn needs of its layer: the solvers and their ``ledger``, the smaller layers'
    values ($), each state's warm-start ``source`` (a neighbour's index, or −1), the thread
    workspaces of ``pool``, the CFR+ caps, and which records the layer keeps between outer iterations
    (the depth-2 jam chances and counterfactual sums, as their memory budgets allow)."""

    n: int
    gamma: float
    stacks: np.ndarray
    solvers: list[HandSolver]
    ledger: Ledger
    lower_values: dict[int, np.ndarray]
    source: np.ndarray
    pool: SolverPool
    max_iterations: int
    batch: int
    keep_jam_chances: bool
    keep_depth2_sums: bool
    progress: ProgressFn | None

    def turn(self, s: int, outer: int, target: float, screen: bool, values: dict[int, np.ndarray]) -> tuple[int, int]:
        """State ``s``'s turn in outer iteration ``outer`` (0-based) at ``target`` ($) under ``values``
        (per layer, $): skipped or screened on its bounds, else checked and re-solved as needed.
        Returns (s, CFR+ iterations spent; 0 if the state was not updated)."""
        ws = self.pool.workspace()
        ws.forget()  # a state's results must not depend on which states this thread ran before
        ledger, solver = self.ledger, self.solvers[s]
        kept = (solver.solution, solver.gains, solver.margins)  # their memory takes the new ones
        U = utilities(solver.hand, values)
        fresh = solver.iterations == 0
        if not fresh:
            then, lower, bound = self._bounds(s, U, target)
            rigorous = bound <= target
            if rigorous or (screen and np.isfinite(then) and then + SCREEN_FRACTION * (bound - then) <= target):
                ledger.skipped[s], ledger.screened[s] = rigorous, not rigorous
                ledger.bound[s] = bound
                return s, 0
        held = ledger.held_target[s] <= target
        checked_now = False
        if fresh:
            # no profile to check yet; the first iterate (from a neighbour's regrets) is checked for free
            if self.source[s] >= 0:
                start_from_neighbour(solver, self.solvers[self.source[s]])
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
            e, its = self._resolve(s, U, ws, e, target, fresh, checked_now, outer)
        solver.keep_margins(ws)  # the workspace holds the certified profile's evaluation
        if self.keep_jam_chances:
            solver.keep_jam_chances(ws)
        if self.keep_depth2_sums:
            solver.keep_depth2_sums(ws)
        keep_records_in_place(solver, ledger, s, *kept)
        ledger.drift[s] = 0.0
        ledger.checked_at[s] = outer
        ledger.bound[s] = e
        return s, its

    def _bounds(self, s: int, U: np.ndarray, target: float) -> tuple[float, float, float]:
        """(gain when last checked, lower bound, upper bound), $, on state ``s``'s exploitability under
        the utilities ``U``.

        The ledger keeps, per state, its players' gains when last checked and how far its utilities
        moved since (the sum of its same-layer successors' max |ΔV|): a change of δ moves each
        player's gain by at most 2δ. Where that is not within the target, the sharper bounds of
        :mod:`engine.exploitability_bounds` from the gains, the outcome probabilities and the layer's
        values at the last check (kept per outer iteration while a state refers to them)."""
        ledger, solver = self.ledger, self.solvers[s]
        then = ledger.gains[s].max()
        bound = then + 2.0 * ledger.drift[s]
        lower = then - 2.0 * ledger.drift[s]
        if bound > target and ledger.checked_at[s] >= 0:
            U_then = utilities(solver.hand, {**self.lower_values, self.n: ledger.V_at[int(ledger.checked_at[s])]})
            bound, low = gain_bounds(ledger.gains[s], ledger.order_probs[s], U_then, U, solver.hand.term_orders)
            lower = max(lower, low)
            if bound > target and solver.margins is not None:
                high, low = margin_bounds(solver.strategy(), solver.margins, solver.hand, ledger.order_probs[s],
                                          U_then, U)
                bound, lower = min(bound, high), max(lower, low)
        return then, lower, bound

    def _resolve(self, s: int, U: np.ndarray, ws: Workspace, e: float, target: float, fresh: bool, checked_now: bool,
                 outer: int) -> tuple[float, int]:
        """Re-solve state ``s`` (exploitability ``e`` $ above ``target``) with CFR+; returns (its
        exploitability now, CFR+ iterations). Solved to :data:`SOLVE_SLACK` of the target; one that
        runs into its cap above the target is held (:data:`HELD_SLACK`)."""
        ledger, solver = self.ledger, self.solvers[s]
        if not fresh:
            prepare_resolve(solver, e, target)
        if checked_now:
            solver.continue_from_check()
        cap = self.max_iterations * HELD_RETRY_GROWTH ** ledger.held_retries if target <= self.gamma \
            else min(self.max_iterations, LOOSE_MAX_ITERATIONS)
        e, its = solver.solve(U, SOLVE_SLACK.get(self.n, 1.0) * target, ws=ws, batch=self.batch,
                              delay=2 if fresh else 0, max_iterations=cap)
        its += checked_now  # the check's pass was the re-solve's first iteration
        ledger.gains[s] = solver.gains
        if e > target:  # the iteration cap, even after the stall fallback: held
            ledger.held_target[s], ledger.held_exploitability[s] = target, e
            if self.progress and cap == self.max_iterations:  # (a loose level's cap is routine)
                self.progress({"event": "uncertified", "players": self.n, "outer_iteration": outer + 1,
                               "stacks": [int(x) for x in self.stacks[s]], "exploitability": float(e),
                               "target": float(target), "cfr_iterations": int(its), "held_slack": HELD_SLACK})
        else:
            ledger.held_target[s], ledger.held_exploitability[s] = np.inf, 0.0
        return e, its
