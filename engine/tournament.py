"""PI-CFR+: the whole tournament solved layer by layer (SPEC §6).

A layer is every state with the same number of players; a hand only leads to states of its own
layer or of smaller ones, so layers are solved 2, 3, …, players. Within a layer:

1. initialise the values V (m states × n positions, $) with ICM (Malmuth-Harville);
2. (a) for every state whose hand, with successor values from V, is more than ``gamma``
   exploitable, continue CFR+ (warm: regrets and average strategy are kept) until it is not;
3. (b) policy evaluation: solve the linear system of the layer's Markov chain for V exactly;
4. stop when, after (b), no state needs (a).

Most of a late outer iteration is spent confirming that states are still within target; a
state's turn in it (bound, check, re-solve) is :mod:`engine.state_resolve`'s. A state is skipped
when a rigorous bound on its exploitability (:mod:`engine.exploitability_bounds`) is within
target; while the layer is not yet settled, outer iterations also *screen*: a state whose bound
fails but whose exploitability probably moved little (:data:`~engine.state_resolve.SCREEN_FRACTION`)
waits for a later check. The layer only stops after an outer iteration that screens no state
updates none, so the result is as certified as without it. A state whose solve ends at the CFR+
iteration cap above the target is *held* there (:data:`~engine.state_resolve.HELD_SLACK`):
reported, measured, but not solved in vain in every outer iteration. A layer that settles at
gamma with held states above it tries them again with a larger cap before it ends
(:data:`HELD_RETRIES`).

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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine import states
from engine.cfr import HandSolver
from engine.checkpoint import (BlockSaver, Ledger, check_lower_fingerprint, layer_path, load_blocks, load_layer,
                               folder_lock, load_measure_blocks, lower_fingerprint, save_block, save_layer,
                               save_measure_block)
from engine.game_tree import CompiledHand, utilities
from engine.hand_pass import SolverTensors
from engine.layers import compile_layer, icm_values
from engine.memory import release_free_memory
from engine.policy_evaluation import evaluate_layer
from engine.solve_progress import (KindedClock, ProgressFn, cost_kinds, estimable_order, first_solve_kinds,
                                  states_done_events)
from engine import state_resolve
from engine.solver_pool import SolverPool, heaviest_first, largest_hand
from engine.state_resolve import StateResolver
from engine.target_ladder import CYCLE_WINDOW, first_target, inner_target, level_of, target_levels, values_cycling
from engine.warm_starts import warm_start_waves


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


HELD_RETRIES = 2
"""Times a layer solve tries its held states again once its outer iterations at gamma have
settled with some of them above gamma, each time with
:data:`~engine.state_resolve.HELD_RETRY_GROWTH` times the CFR+ iteration cap of the time before
(20,000, then 40,000 and 80,000).

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
    """Whether the next outer iteration screens (see :data:`engine.state_resolve.SCREEN_FRACTION`).

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
        return _LayerSolve(*args).run()
    with folder_lock(checkpoint, f"the {n}-player layer's solve"):
        for left in checkpoint.glob(f"layer{n}*.tmp*"):  # a save a kill cut short (up to 15 GB): never read
            left.unlink()
        return _LayerSolve(*args).run()


class _LayerSolve:
    """One run of :func:`solve_layer`: the layer's solvers, values ($) and ledger between outer
    iterations, read back from the checkpoint where there is one."""

    def __init__(self, units: int, n: int, payouts: tuple[float, ...], gamma: float, tensors: SolverTensors,
                 lower_values: dict[int, np.ndarray], threads: int | None, batch: int, max_outer: int | None,
                 max_iterations: int, checkpoint: Path | None, progress: ProgressFn | None, loose: bool,
                 checkpoint_every: float, held_retries: int):
        self.n, self.gamma, self.lower_values, self.max_outer = n, gamma, lower_values, max_outer
        self.max_iterations, self.checkpoint, self.progress, self.loose = max_iterations, checkpoint, progress, loose
        self.checkpoint_every = checkpoint_every
        self.open_prizes = float(sum(payouts[:n]))  # ($: what the layer's values share, see values_cycling)
        self.t_start = time.perf_counter()
        release_free_memory()  # what earlier work freed, before this layer's solvers are made (SolverPool)
        if progress:  # (the 45-unit 5-player layer's hands take minutes to build)
            progress({"event": "preparing", "players": n, "states": states.n_states(units, n)})
        self.stacks, self.hands = compile_layer(units, n, payouts)
        hands = self.hands
        self.m = m = len(hands)
        self.solvers = [HandSolver(h, tensors) for h in hands]
        self.V = icm_values(self.stacks, payouts)
        # per state: gains, bounds, records of its last check and how far its utilities moved since
        # (see engine.state_resolve.StateResolver)
        self.ledger = Ledger.empty([len(h.term_kind) for h in hands], n)
        self.ledger.held_retries_allowed = held_retries
        self.log: list[dict] = []
        self.start_outer = 0
        self.finished = self.cycling = False
        if checkpoint is not None:
            check_lower_fingerprint(checkpoint, n, lower_fingerprint(lower_values))
            if layer_path(checkpoint, n).exists():
                self._resume(held_retries)
        self.successors = [np.unique(h.term_next[h.term_next_players == n]) for h in hands]
        self.order = np.array(heaviest_first(hands), dtype=np.int64)
        self.wave, self.source = warm_start_waves(self.stacks)
        self.tree_kinds = cost_kinds(hands)  # (kinds, prior) of the time-left estimates
        self.converged = self.ledger.settled and not self.finished  # (resumed in its final measurement)
        self.pool = SolverPool(threads, largest_hand(hands))  # (last: run() closes it, whatever happens there)
        self.resolver = StateResolver(
            n=n, gamma=gamma, stacks=self.stacks, solvers=self.solvers, ledger=self.ledger,
            lower_values=lower_values, source=self.source, pool=self.pool, max_iterations=max_iterations, batch=batch,
            keep_jam_chances=sum(s.jam_chance_bytes() for s in self.solvers) <= JAM_CHANCE_BUDGET,
            keep_depth2_sums=sum(s.depth2_sum_bytes() for s in self.solvers) <= DEPTH2_SUM_BUDGET,
            progress=progress)
        if progress:
            progress({"event": "prepared", "players": n, "states": m, "wall_s": time.perf_counter() - self.t_start})

    def _resume(self, held_retries: int) -> None:
        """Read the layer back from its checkpoint; one that finished above gamma may retry its held states."""
        ledger, gamma = self.ledger, self.gamma
        self.V, self.log, self.start_outer, self.finished = load_layer(self.checkpoint, self.n, self.solvers, ledger)
        self.cycling = values_cycling(self.log, self.open_prizes)  # stopped by a cycle: kept as it ended
        over = np.flatnonzero(ledger.bound > gamma) if self.finished else np.zeros(0, np.int64)
        if self.progress:
            self.progress({"event": "resumed", "players": self.n, "outer": self.start_outer,
                           "finished": self.finished, "over_gamma": len(over), "settled": ledger.settled})
        if len(over) and not self.cycling:  # finished above gamma: this run may retry its held states (HELD_RETRIES)
            ledger.held_retries_allowed = ledger.held_retries + held_retries
            self.finished = not self._retry_held(over)
            if not self.finished:
                self._announce_retry(over, self.start_outer)

    def _retry_held(self, over: np.ndarray) -> bool:
        """Solve the held states ``over`` (above gamma) again with a larger cap, if a retry is left
        (the caller says so, with :meth:`_announce_retry`, once the retry is saved or about to run)."""
        ledger = self.ledger
        if not len(over) or ledger.held_retries >= ledger.held_retries_allowed:
            return False
        ledger.held_retries += 1
        ledger.settled = False
        ledger.held_target[over], ledger.held_exploitability[over] = np.inf, 0.0
        return True

    def _announce_retry(self, over: np.ndarray, outer_iteration: int) -> None:
        """The progress event of the retry :meth:`_retry_held` has just granted the states ``over``."""
        ledger = self.ledger
        if self.progress:
            self.progress({"event": "retrying_held", "players": self.n, "outer_iteration": outer_iteration,
                           "states": len(over), "exploitability": float(ledger.bound[over].max()),
                           "max_iterations": self.max_iterations
                           * state_resolve.HELD_RETRY_GROWTH ** ledger.held_retries,
                           "retry": ledger.held_retries, "retries": ledger.held_retries_allowed})

    def run(self) -> LayerSolution:
        """Outer iterations until the layer settles at gamma, cycles, or reaches ``max_outer``; then the
        exact measurement of what the last one only bounded."""
        try:
            if not (self.finished or self.converged or self.cycling):
                outers = itertools.count(self.start_outer) if self.max_outer is None \
                    else range(self.start_outer, self.max_outer)
                for outer in outers:
                    if self._outer_iteration(outer):
                        break
            if not self.finished:
                self._measure_final()
        finally:
            self.pool.close()
        n, solvers = self.n, self.solvers
        if self.progress:
            self.progress({"event": "layer_done", "players": n, "states": self.m,
                           "wall_s": time.perf_counter() - self.t_start})
        solution = LayerSolution(players=n, stacks=self.stacks, values=self.V, strategy=[s.strategy() for s in solvers],
                                 exploitability=self.ledger.bound.copy(),
                                 iterations=np.array([s.iterations for s in solvers]), hands=self.hands,
                                 order_probs=self.ledger.order_probs, log=self.log)
        # the solvers' regrets and records (about 10 GiB of the 45-unit 5-player layer's 19) go back to the
        # system now, not after the next asset's first allocations: it runs in this process (engine.memory)
        solvers.clear()
        release_free_memory()
        return solution

    def _outer_iteration(self, outer: int) -> bool:
        """Outer iteration ``outer`` (0-based): every state's turn, then the policy evaluation. True when
        the layer stops after it (settled at gamma, or its values cycle)."""
        n, m, ledger, solvers, progress = self.n, self.m, self.ledger, self.solvers, self.progress
        t0 = time.perf_counter()
        values = {**self.lower_values, n: self.V}
        ledger.skipped[:] = False
        ledger.screened[:] = False
        ledger.checked[:] = False
        spent: dict[int, int] = {}  # CFR+ iterations per state finished in this outer iteration
        if self.checkpoint is not None and outer == self.start_outer:
            spent, elapsed = load_blocks(self.checkpoint, n, outer, solvers, ledger)
            t0 -= elapsed  # the outer iteration's time counts its earlier runs' kept work
            if spent and progress:
                progress({"event": "resumed_states", "players": n, "outer_iteration": outer + 1,
                          "done": len(spent), "states": m})
        never_solved = np.array([solver.iterations == 0 for solver in solvers], dtype=bool)
        todo = np.ones(m, dtype=bool)
        todo[list(spent)] = False
        kinds, prior = first_solve_kinds(*self.tree_kinds, (self.source < 0) & never_solved) if never_solved.any() \
            else self.tree_kinds
        ticker = _Ticker(progress, n, outer + 1, kinds, todo, prior, wall_before=time.perf_counter() - t0)
        target = inner_target(self.gamma, self.log, self.loose, m, first_target(n))
        screen = _screens(self.gamma, self.log, self.loose, target)

        def work(s: int) -> tuple[int, int]:
            started = time.perf_counter()
            ticker.begin(s, started)
            result = self.resolver.turn(s, outer, target, screen, values)
            ticker.tick(s, started)
            return result

        def save_states(pending: list[int]) -> None:
            elapsed = time.perf_counter() - t0  # (the event says what the block keeps)
            save_block(self.checkpoint, n, outer, spent, pending, solvers, ledger, elapsed=elapsed)
            release_free_memory()  # the restored records the threads replaced (engine.memory)
            if progress:
                progress({"event": "block_saved", "players": n, "outer_iteration": outer + 1,
                          "states": len(pending), "done": len(spent), "wall_s": elapsed})

        ledger.V_at[outer] = self.V
        blocks = BlockSaver(save_states if self.checkpoint is not None else None, self.checkpoint_every)
        for segment in self._segments(outer, spent):
            for _, (s, its) in self.pool.imap_done(work, [s for s in segment.tolist() if s not in spent]):
                spent[s] = its
                blocks.add(s)
        return self._close_outer(outer, target, spent, t0)

    def _segments(self, outer: int, spent: dict[int, int]) -> list[np.ndarray]:
        """The states of an outer iteration in the order they are run: the first solves wave after wave
        (see warm_start_waves), later ones all at once, their time-left pilots taken from the states
        left (a resumed iteration had run its first pilots before the interrupt, so a kind not reached
        yet would be priced by its pass cost alone until its turn)."""
        order = self.order
        if outer == 0:
            return [order[self.wave[order] == w] for w in range(int(self.wave.max(initial=-1)) + 1)]
        left = order[~np.isin(order, np.fromiter(spent, np.int64, len(spent)))]
        return [estimable_order(left, self.tree_kinds[0], seed=outer)]

    def _close_outer(self, outer: int, target: float, spent: dict[int, int], t0: float) -> bool:
        """The policy evaluation after outer iteration ``outer``, its log entry and checkpoint; True
        when the layer stops here."""
        n, ledger, progress = self.n, self.ledger, self.progress
        referenced = set(ledger.checked_at.tolist())
        for k in [k for k in ledger.V_at if k not in referenced]:
            del ledger.V_at[k]
        updated = sum(its > 0 for its in spent.values())
        V_new = evaluate_layer(self.hands, ledger.order_probs, n, self.lower_values)
        moved = np.abs(V_new - self.V).max(axis=1)
        for s, succ in enumerate(self.successors):
            if len(succ):
                ledger.drift[s] += moved[succ].max()
        self.V = V_new
        entry = {"players": n, "outer_iteration": outer + 1, "target": target, "states_updated": int(updated),
                 "states_skipped": int(ledger.skipped.sum()), "states_screened": int(ledger.screened.sum()),
                 "states_checked": int(ledger.checked.sum()),
                 "cfr_iterations": int(sum(spent.values())), "max_delta_v": float(moved.max()) if self.m else 0.0,
                 "max_exploitability": float(ledger.bound.max()) if self.m else 0.0,
                 "wall_s": time.perf_counter() - t0}
        self.log.append(entry)
        # (a screening outer iteration that screened no state checked every one like any other)
        settled = updated == 0 and target <= self.gamma and not ledger.screened.any()
        # held above gamma: solved again with a larger cap (see HELD_RETRIES)
        held = np.flatnonzero(ledger.bound > self.gamma)
        retry = settled and self._retry_held(held)
        ledger.settled = settled and not retry
        if self.checkpoint is not None:
            save_layer(self.checkpoint, n, self.V, self.log, outer + 1, self.solvers, ledger)
            release_free_memory()
        if progress:  # only once saved: a run killed before the save repeats this outer iteration
            # (with the target's place on the layer's ladder, for the log)
            levels = {"level": level_of(target, self.gamma, n), "levels": len(target_levels(self.gamma, n))}
            progress({"event": "outer", **entry, **(levels if self.loose else {})})
            if retry:
                self._announce_retry(held, outer + 1)
        if ledger.settled:
            self.converged = True
            return True
        if values_cycling(self.log, self.open_prizes):
            self.cycling = True
            if progress:
                progress({"event": "not_converging", "players": n, "outer_iteration": outer + 1,
                          "target": target, "window": CYCLE_WINDOW,
                          "max_delta_v": min(e["max_delta_v"] for e in self.log[-CYCLE_WINDOW:])})
            return True
        return False

    def _measure_final(self) -> None:
        """The exact exploitability of what the last outer iteration only bounded, and the layer saved
        as finished (unless stopped by ``max_outer``: a later call goes on from the checkpoint)."""
        ends = self.converged or self.cycling
        checkpoint = self.checkpoint if ends else None
        _measure_last(self.n, {**self.lower_values, self.n: self.V}, self.hands, self.solvers, self.ledger, self.pool,
                      self.order, self.tree_kinds, len(self.log), checkpoint, self.checkpoint_every, self.progress,
                      every_state=not self.converged,
                      why="its values cycle" if self.cycling else "at its cap of outer iterations")
        if checkpoint is not None:
            save_layer(checkpoint, self.n, self.V, self.log, len(self.log), self.solvers, self.ledger, finished=True)


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
