"""CFR+ for one jam/fold hand with the successor values given (SPEC §5).

**The pass** that evaluates a profile exactly (values, reaches, counterfactual values under the
card model) is :func:`engine.hand_pass.hand_pass`.

**Exploitability.** Player k decides once per path and his nodes' reach does not depend on his
own play, so his best-response gain is Σ_{h of k} Σ_c [max(cf_jam, cf_fold) − (σ cf_jam +
(1 − σ) cf_fold)], in $ averaged over the deal (:func:`exploitability_from_cf`).

**CFR+** (Tammelin 2014): regret-matching+ (cumulative regrets floored at zero), simultaneous
updates, here predictive and with linearly discounted regrets (see :class:`HandSolver`); the
first iterate within the target (else the average strategy) is the solver's output.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from engine.depth2 import NC, keep_depth2_sums
from engine.game_tree import CompiledHand
from engine.hand_pass import SolverTensors, Workspace, decision_reach, hand_pass, layout, outcome_probs

REGRET_DTYPE = np.float32
"""Storage type of the cumulative regrets and predictions, the bulk of a layer solve's memory.

Every update is computed in float64 and rounded once when stored; regret matching only uses
ratios of the regrets, so the rounding moves a jam probability by about 1e-7, far below any
exploitability target (values, counterfactual values and the certified profile stay float64).
Halves the regrets: 45-unit 5-player layer, 134 → 80 KiB per state between solves."""


REGRET_ARRAYS = ("regret_jam", "regret_fold", "pred_jam", "pred_fold")
"""A :class:`HandSolver`'s (nodes × 169) regret state: what a warm start copies and a checkpoint keeps."""

STALL_ITERATIONS = 512
"""CFR+ iterations after which a solve that no profile has certified yet (no iterate within the
target, nor the average at its checks) is taken to have stalled and drops the regret discount.

Found in the 45-unit 4-player layer (2026-11-25, sampled tables): the state (4, 17, 19, 5) at
the values of the solve's 23rd outer iteration, target $0.00032. Solved cold, its iterate cycled
at $0.003–0.004 and its average stayed at $0.00085–0.001 from iteration 500 to 10,000; in the
layer it ran into the cap of 20,000 iterations at $0.00095 in every outer iteration from the
18th on, so the layer could never have ended. Without the discount (predictions kept) the same
hand solved cold has its average at $0.0002 after 1,000 iterations and $0.00006 after 2,000;
continuing the stalled solver undiscounted from its regrets as they are did not help (still
$0.0008 after 3,000 more), from its regrets scaled to 2 iterations' worth and a fresh average it
reached $0.00008 after 1,500 more. Typical solves take tens of iterations (a few hundred at
most), so they never reach this point."""

STALL_RESTART_WEIGHT = 2.0
"""Iterations' worth of regret a stalled solve keeps when it drops the discount (see above)."""

STALL_RESTART_EVERY = 4
"""A solve still uncertified this many times as many iterations after a stall restart restarts
again the same way, switching the discount back on (then off, …): at 512, 2,048, 8,192, …
iterations (checks of the average fall on every power of two from 32 on).

Found in the 45-unit 4-player layer (2026-11-26, sampled tables): the state (14, 9, 4, 18) at
the values of the solve's 27th outer iteration, target $0.0001 (gamma). Undiscounted after the
stall its iterate stayed near $0.0002 up to the cap of 20,000 iterations, so it was held and the
layer ended with that state at $0.00027, above gamma. Restarted discounted from its regrets
after 512 iterations, scaled to 2 iterations' worth, it was within gamma after 100 more; at the
layer's final values, from the regrets it was held with, after 172. The hand of
:data:`STALL_ITERATIONS` is the other way round (undiscounted, certified after about 1,100
iterations), so each restart switches."""


class HandSolver:
    """CFR+ state of one state's hand (regrets, average strategy): small, kept for warm starts.

    Evaluations run in a :class:`Workspace` (one per thread). After :meth:`evaluate`, the
    workspace holds root values, counterfactual values and outcome probabilities of the
    evaluated profile; :meth:`evaluate` returns views of them sized to this hand.

    The update is predictive CFR+ (Farina, Kroer & Sandholm 2021): regret-matching+ with the
    cumulative regrets floored at zero, as in CFR+, but each strategy is computed from the
    regrets plus the last instantaneous regret (the prediction), and the average weights
    iterate t by t². On our hands it needs about 40 % fewer iterations than plain CFR+ for the
    same exploitability; the average strategy is the fallback output.

    The cumulative regrets are also discounted linearly, as in linear CFR (Brown & Sandholm 2019):
    before iteration t adds its regrets, the sum is multiplied by t/(t + 1), so iteration s
    weighs s + 1 in the sum instead of 1. Early iterates, far from equilibrium, stop holding the
    near-indifferent classes back. t is :attr:`regret_weight` + 1, the iterations' worth of
    regret the solver holds (a warm start or a rescale sets it; see
    :func:`engine.state_resolve.prepare_resolve`). Cold solves to $0.0001 with ICM successor values
    (45 units, sampled tables, iterations until an iterate is within target): 10 three-player
    states 735 iterations undiscounted, 207 linear (weights s^1.5: 343 via DCFR's t^1.5/(t^1.5 + 1)
    factor; s^2: 440; s^3: 426; constant factor 0.9: 480); 8 four-player states 1,307
    undiscounted, 498 linear (s^0.5: 481, s^1.5: 446, but those lose on three players).

    These are multi-player general-sum games, where no CFR variant is guaranteed to approach a
    Nash equilibrium, and a few hands stall with the discount: neither the iterate nor the
    average gets within the target. So a solve not certified after :data:`STALL_ITERATIONS`
    goes on without the discount, from its regrets scaled down to :data:`STALL_RESTART_WEIGHT`
    iterations' worth and a fresh average (see :meth:`solve`).
    """

    def __init__(self, hand: CompiledHand, tensors: SolverTensors):
        if hand.n_players >= 3 and not tensors.three_way:
            raise ValueError(f"a {hand.n_players}-player hand needs the three-way showdown tensors; these were "
                             "made without a triple table (heads-up hands only)")
        self.hand = hand
        self.tensors = tensors
        K = len(hand.node_actor)
        self.node_off, self.term_off = layout(hand.node_depth, hand.term_depth)
        self.has_depth2 = bool((hand.node_depth == 2).any())  # three-way showdowns: the kept sums' hands
        self.regret_jam = np.zeros((K, NC), REGRET_DTYPE)
        self.regret_fold = np.zeros((K, NC), REGRET_DTYPE)
        self.pred_jam = np.zeros((K, NC), REGRET_DTYPE)
        self.pred_fold = np.zeros((K, NC), REGRET_DTYPE)
        self.avg_num: np.ndarray | None = None  # allocated while a solve averages (see restart_average)
        self.avg_den = 0.0
        self.iterations = 0
        self.regret_weight = 0.0  # iterations' worth of regret held: the discount clock (see above)
        self.avg_start = 0
        self.solution: np.ndarray | None = None  # the profile certified by the last solve
        self.gains: np.ndarray | None = None  # its best-response gain per player ($) when certified
        self.margins: tuple[np.ndarray, np.ndarray] | None = None  # see keep_margins
        self.jam_chances: tuple[np.ndarray, ...] | None = None  # see keep_jam_chances
        self.borrowed_jam_chances = False  # they are a neighbour's (copy_kept_sums): never written
        self.depth2_sums: tuple[np.ndarray, ...] | None = None  # see keep_depth2_sums
        self._last_iterate: tuple | None = None  # (sigma, exploitability, gains) during a solve

    def restart_average(self) -> None:
        """Keep the regrets (the warm start) but average only the iterates from now on.

        Used when the successor values change: iterates computed against old values would
        otherwise hold the weighted average back for many iterations. The average's array is
        freed until the next iteration needs it: between solves a solver keeps only its regrets
        and certified profile (a sixth less memory; 45-unit 5-player layer: 21 → 17 GiB).
        """
        self.avg_num = None
        self.avg_den = 0.0
        self.avg_start = self.iterations

    def forget_profile(self) -> None:
        """Drop the certified profile and what was kept from its evaluation (gains, decision margins,
        jam chances, depth-2 sums), keeping the regrets: a solver that goes on to the same hand
        under other successor values then starts as a fresh one given these regrets would."""
        self.solution = self.gains = self.margins = None
        self.jam_chances, self.borrowed_jam_chances = None, False
        self.depth2_sums = None

    def copy_regrets(self, other: "HandSolver") -> None:
        """Start from ``other``'s regrets, predictions and regret weight (a hand of the same tree shape)."""
        for name in REGRET_ARRAYS:
            getattr(self, name)[:] = getattr(other, name)
        self.regret_weight = other.regret_weight

    def copy_kept_sums(self, other: "HandSolver") -> None:
        """Start from ``other``'s kept jam chances and depth-2 sums (a hand of the same tree).

        Both depend on the profile and the showdown tensors, not on the stacks or utilities
        (:meth:`keep_jam_chances`, :meth:`keep_depth2_sums`), so a never-solved state warm-started
        from a solved neighbour's regrets evaluates its first iterate, close to the neighbour's
        profile, by the classes and pairs that differ instead of from scratch. The jam chances (1.4 MB
        per depth-2 node) are only read before this state keeps its own, so they are shared.
        """
        same_tree = all(np.array_equal(getattr(self.hand, a), getattr(other.hand, a))
                        for a in ("node_depth", "node_fold", "node_jam", "term_kind"))
        if not same_tree:
            raise ValueError("kept sums can only seed a hand of the same tree")
        self.jam_chances, self.borrowed_jam_chances = other.jam_chances, other.jam_chances is not None
        self.depth2_sums = None if other.depth2_sums is None else tuple(x.copy() for x in other.depth2_sums)

    def rescale_regrets(self, weight: float) -> None:
        """Scale the regrets and predictions to ``weight`` iterations' worth; the discount clock follows.

        Regret matching only reads their direction, so the strategy is unchanged, but a new
        iteration's regrets now weigh against ``weight`` iterations instead of all those summed.
        """
        scale = weight / max(self.regret_weight, 1.0)
        for name in REGRET_ARRAYS:
            getattr(self, name)[:] *= scale
        self.regret_weight = weight

    def evaluate(self, sigma: np.ndarray, U: np.ndarray, ws: Workspace | None = None, orders: bool = True
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
        """Exact evaluation of ``sigma``: (root values $, cf_fold, cf_jam, order_probs), views into ``ws``.

        Without a workspace the solver uses one of its own (convenient for single states; a
        layer solve passes a per-thread workspace instead). The results are also kept as
        ``self.root_values``, ``self.cf_fold``, ``self.cf_jam`` and ``self.order_probs``. The
        outcome probabilities are computed only when ``orders`` (else None is returned for them).
        """
        ws = self._workspace(ws)
        head, tail = self._bind(ws, U)
        hand_pass(*head, sigma, *tail)
        self._keep_views(ws)
        if not orders:
            return self.root_values, self.cf_fold, self.cf_jam, None
        self._outcome_probs(ws)
        return self.root_values, self.cf_fold, self.cf_jam, self.order_probs

    def _bind(self, ws: Workspace, U: np.ndarray) -> tuple[tuple, tuple]:
        """Bind ``ws`` to this hand and U; the arguments of :func:`hand_pass` before and after sigma."""
        h = self.hand
        K = len(h.node_actor)
        if ws.bind(h, U, int(self.node_off[-1]) + 1) and self.jam_chances is not None:
            G, Gsig, G_ready, Gvalid = self.jam_chances  # the hand is new to ws: its kept jam chances
            ws.G[:len(G)] = G
            ws.Gsig[:K] = Gsig
            ws.G_ready[:K] = G_ready
            ws.Gvalid[:K] = Gvalid
        head = (h.n_players, h.node_actor, h.node_depth, h.node_fold, h.node_jam, h.node_creator, h.root,
                h.term_kind, h.term_depth, U)
        tail = (*self.tensors.args(), self.node_off, self.term_off, ws.R, ws.S, ws.G, ws.Q, ws.Tbuf, ws.RT,
                ws.cf_fold, ws.cf_jam, ws.root_values, ws.J3, ws.J3_ready, ws.Gsig, ws.G_ready, ws.Gvalid,
                ws.pairs, ws.pair_sums, ws.W, ws.C, ws.C_ready, ws.P, ws.P_valid, ws.XY,
                *(self.depth2_sums or ws.no_depth2_sums))
        return head, tail

    def _keep_views(self, ws: Workspace) -> None:
        h = self.hand
        K = len(h.node_actor)
        self.root_values, self.cf_fold, self.cf_jam = ws.root_values[:h.n_players], ws.cf_fold[:K], ws.cf_jam[:K]

    def jam_chance_bytes(self) -> int:
        """Memory (bytes) :meth:`keep_jam_chances` holds for this hand; 0 without depth-2 nodes."""
        if not self.has_depth2:
            return 0
        return int(self.node_off[-1]) * 6 * 8 + len(self.hand.node_actor) * (NC * 9 + 1)

    def keep_jam_chances(self, ws: Workspace) -> None:
        """Keep the depth-2 jam chances of the profile last evaluated in ``ws`` (this hand's).

        They depend on the hand and the depth-2 strategies, not on the utilities, so the next
        evaluation of this hand in any workspace starts from them (see :func:`_three_way_chances`:
        only the classes whose strategy changed since are summed) instead of from scratch. In a
        layer solve, every state's next exact re-check and re-solve is such an evaluation; a
        from-scratch sum reads up to 116 MB of showdown tensor. 1.4 MB per depth-2 node.
        """
        if self.jam_chance_bytes() == 0:
            return
        K = len(self.hand.node_actor)
        current = (ws.G[:int(self.node_off[-1]) * 6], ws.Gsig[:K], ws.G_ready[:K], ws.Gvalid[:K])
        if self.jam_chances is None or self.borrowed_jam_chances:
            self.jam_chances = tuple(x.copy() for x in current)
            self.borrowed_jam_chances = False
        else:  # overwrite the last outer iteration's copy in place
            for kept, x in zip(self.jam_chances, current):
                kept[:] = x

    def depth2_sum_bytes(self) -> int:
        """Memory (bytes) :meth:`keep_depth2_sums` holds for this hand; 0 without depth-2 nodes."""
        if not self.has_depth2:
            return 0
        return int(self.node_off[-1]) * 8 + len(self.hand.node_actor) * (2 * NC * 6 * 8 + 1 + 2 * NC * 8)

    def keep_depth2_sums(self, ws: Workspace) -> None:
        """Keep the depth-2 counterfactual sums of the profile last evaluated in ``ws`` (this hand's)
        in outcome space, so that its next evaluation under other utilities starts from them.

        The counterfactual jam value of a depth-2 node is linear in the three-way showdown's
        utilities, cf_jam(c) = Σ_o M[c, o] U[o], with M summed over the reached pairs from the
        showdown tensor (:func:`keep_depth2_sums`); so is the fold value when the fold child is a
        two-jammer showdown. Summing them in $ instead means reading 6 numbers per class for every
        reached pair again each time U changes: in a layer solve, every exact re-check of a state
        under the new successor values. Kept per state: the reach weights (228 KB per depth-2
        node) and 16 KB of sums; updating them after a re-solve reads only the pairs whose reach
        moved.
        """
        if self.depth2_sum_bytes() == 0:
            return
        K = len(self.hand.node_actor)
        if self.depth2_sums is None:
            self.depth2_sums = (np.zeros(int(self.node_off[-1])), np.zeros((K, NC, 6)), np.zeros((K, 6, NC)),
                                np.zeros(K, np.uint8), np.zeros((K, 2, NC)))
        h, t = self.hand, self.tensors
        keep_depth2_sums(h.node_depth, h.node_fold, h.term_kind, self.node_off, ws.R, ws.XY, t.joint3, t.m3j, t.win2,
                         t.or3r, *self.depth2_sums)

    def _workspace(self, ws: Workspace | None) -> Workspace:
        if ws is None:
            if getattr(self, "_own_ws", None) is None:
                self._own_ws = Workspace.for_hand(self.hand)
            ws = self._own_ws
        return ws

    def _outcome_probs(self, ws: Workspace) -> None:
        """``self.order_probs`` of the profile the last :meth:`evaluate` in ``ws`` evaluated."""
        hand, tn = self.hand, self.tensors
        outcome_probs(hand.node_depth, hand.node_jam, hand.root, hand.term_kind, hand.term_depth, tn.p1, tn.joint2,
                      tn.win2, tn.wr1, tn.or3r, tn.or3rr, self.node_off, self.term_off, ws.R, ws.RT, ws.G,
                      ws.order_probs)
        self.order_probs = ws.order_probs[:len(hand.term_kind)]

    def keep_margins(self, ws: Workspace | None = None) -> None:
        """Keep, for the profile the last :meth:`evaluate` in ``ws`` evaluated (the certified one),
        every decision's jam advantage cf_jam − cf_fold ($) and reach mass (probability), K × 169.

        With them :func:`engine.exploitability_bounds.margin_bounds` bound the profile's
        exploitability under other successor values without a pass. Stored as float32 (the bound
        allows for the rounding): 45-unit 5-player layer, 32 KiB per state.
        """
        ws = self._workspace(ws)
        K = len(self.hand.node_actor)
        t = self.tensors
        mass = np.empty((K, NC))
        decision_reach(self.hand.node_depth, t.p1, t.joint2, t.joint3, self.node_off, ws.R, mass)
        self.margins = ((ws.cf_jam[:K] - ws.cf_fold[:K]).astype(np.float32), mass.astype(np.float32))

    def continue_from_check(self) -> None:
        """Take the profile just checked as this solver's next CFR+ iterate: its regrets under the new
        utilities, from the counterfactual values the check left (:meth:`exploitability`), go into
        the regret sum and become the prediction, as if a CFR+ iteration had played it.

        A re-solve after an exact check would otherwise start from the prediction of the old
        utilities and spend its first pass on the next iterate; this way the check's pass counts
        as the re-solve's first iteration.
        """
        sigma = self.strategy()
        if self.avg_num is None:
            self.avg_num = np.zeros((len(self.hand.node_actor), NC))
        clock = np.array([self.iterations, self.regret_weight, self.avg_start, self.avg_den], np.float64)
        count_iterate(sigma, self.cf_fold, self.cf_jam, self.regret_jam, self.regret_fold, self.pred_jam,
                      self.pred_fold, self.avg_num, clock, 0, True)
        self.iterations, self.regret_weight, self.avg_den = int(clock[0]), float(clock[1]), float(clock[3])

    def current_strategy(self) -> np.ndarray:
        return current_strategy(self.regret_jam, self.regret_fold, self.pred_jam, self.pred_fold)

    def average_strategy(self) -> np.ndarray:
        if self.avg_den == 0.0 or self.avg_num is None:
            return self.current_strategy()
        return self.avg_num / self.avg_den

    def strategy(self) -> np.ndarray:
        """The solver's output: the profile its last :meth:`solve` certified, else the average."""
        return self.solution if self.solution is not None else self.average_strategy()

    def iterate(self, U: np.ndarray, iterations: int, delay: int = 0, ws: Workspace | None = None,
                target: float | None = None, discounted: bool = True) -> float:
        """Up to ``iterations`` predictive CFR+ iterations against utilities U; averaging skips the first ``delay``.

        An iteration's counterfactual values are those of its iterate, so the iterate's
        exploitability costs nothing extra: with a ``target`` ($), iterating stops at the first
        iterate within it, which becomes :attr:`solution`. Returns the exploitability ($) of the
        last iterate when a target is given (else inf).

        The iterations run in one compiled call (:func:`cfr_plus_iterations`) that holds no GIL:
        a layer solve's threads meet in Python once per call (:meth:`solve` runs everything up to
        its next check of the average as one call) instead of once per iteration.
        """
        if iterations <= 0:
            return np.inf
        ws = self._workspace(ws)
        head, tail = self._bind(ws, U)
        h = self.hand
        avg = self.avg_num if self.avg_num is not None else np.zeros((len(h.node_actor), NC))
        clock = np.array([self.iterations, self.regret_weight, self.avg_start, self.avg_den], np.float64)
        certified, e, gains, sigma = cfr_plus_iterations(
            iterations, delay, np.inf if target is None else float(target), target is not None, discounted,
            self.regret_jam, self.regret_fold, self.pred_jam, self.pred_fold, avg, clock, h.node_actor, h.n_players,
            ws.cf_fold[:len(h.node_actor)], ws.cf_jam[:len(h.node_actor)], head, tail)
        self.iterations, self.regret_weight, self.avg_den = int(clock[0]), float(clock[1]), float(clock[3])
        if self.avg_den > 0.0:
            self.avg_num = avg
        self._keep_views(ws)
        self._last_iterate = (sigma, e, gains) if target is not None else None  # for solve's fallback at its cap
        if certified:
            self.solution, self.gains = sigma, gains
            self._outcome_probs(ws)  # the pass's buffers still hold this iterate
        return e

    def solve(self, U: np.ndarray, target: float, ws: Workspace | None = None, batch: int = 8, delay: int = 0,
              max_iterations: int = 20_000) -> tuple[float, int]:
        """CFR+ until a profile is within ``target`` ($): (its exploitability, iterations spent).

        Two candidates: every iterate (free, see :meth:`iterate`) and the average strategy,
        checked after 4, 8, 16, … × ``batch`` iterations. Predictive CFR+'s last iterate is almost
        always the first within target (on 45-unit 3-player hands it was 2–3× less exploitable
        than the average after the same iterations; in a 25-unit 3-player PI-CFR+ solve with the
        average checked every 8 iterations, it won 8 of 3,846 solves) and sparser, so cheaper to
        evaluate downstream. The average is the fallback for hands whose iterates keep cycling;
        checking it costs a pass over a dense profile and breaks the incremental three-way
        showdown sums of the next iterate, hence the doubling schedule. A solve with no profile
        within target at the check after :data:`STALL_ITERATIONS` has stalled and goes on without
        the regret discount from a light start, and restarts so again, the discount switched,
        every :data:`STALL_RESTART_EVERY` times as many iterations. The certified profile is kept
        as :attr:`solution` and left evaluated (with outcome probabilities) in the workspace. A
        solve that reaches ``max_iterations`` above the target keeps the less exploitable of its
        last iterate and its average (a layer caps re-solves at loose targets,
        :data:`engine.state_resolve.LOOSE_MAX_ITERATIONS`).
        """
        start = self.iterations
        self.solution = None
        next_average = 4 * batch
        budget = -(-max_iterations // batch) * batch  # whole batches, as if run batch by batch
        discounted = True
        restart_at = STALL_ITERATIONS  # the next stall restart (see STALL_ITERATIONS), iterations into the solve
        checked = None  # (iterations, average, exploitability, gains) of the last average checked
        while self.iterations - start < max_iterations:
            # every iterate is checked as it comes, so the batches up to the next average check run as one call
            e = self.iterate(U, min(next_average, budget) - (self.iterations - start), delay=delay, ws=ws,
                             target=target, discounted=discounted)
            if self.solution is not None:
                break  # an iterate: evaluated (gains, outcome probabilities) by the iteration itself
            if self.iterations - start < next_average:
                continue
            next_average *= 2
            average = self.average_strategy()
            e, gains = self.exploitability(U, sigma=average, ws=ws)
            if e <= target:
                self.solution, self.gains = average, gains
                break
            checked = (self.iterations, average, e, gains)
            if self.iterations - start >= restart_at:
                # stalled (see STALL_ITERATIONS): from a light start, the discount switched
                discounted = not discounted
                restart_at *= STALL_RESTART_EVERY
                self.rescale_regrets(STALL_RESTART_WEIGHT)
                self.restart_average()
                checked = None
        if self.solution is None:  # the cap: the less exploitable of the average and the last iterate
            if checked is not None and checked[0] == self.iterations:  # checked just now: still evaluated in ws
                _, self.solution, e, self.gains = checked
            else:
                self.solution = self.average_strategy()
                e, self.gains = self.exploitability(U, sigma=self.solution, ws=ws)
            last = self._last_iterate
            if last is not None and last[1] < e:
                self.solution, e, self.gains = last[0], float(last[1]), last[2]
                self.evaluate(self.solution, U, ws)  # left evaluated in the workspace, as documented
        self._last_iterate = None
        self.restart_average()  # the certified profile is the output; a later solve averages anew
        return e, self.iterations - start

    def exploitability(self, U: np.ndarray, sigma: np.ndarray | None = None,
                       ws: Workspace | None = None) -> tuple[float, np.ndarray]:
        """(max gain, gain per player) in $ of ``sigma`` (default: :meth:`strategy`).

        Leaves the evaluation of ``sigma`` in ``ws`` (root values, outcome probabilities).
        """
        sigma = self.strategy() if sigma is None else sigma
        _, cf_fold, cf_jam, _ = self.evaluate(sigma, U, ws)
        gains = exploitability_from_cf(sigma, cf_fold, cf_jam, self.hand.node_actor, self.hand.n_players)
        return float(gains.max()) if len(gains) else 0.0, gains


@nb.njit(cache=True, nogil=True)
def cfr_plus_iterations(iterations, delay, target, has_target, discounted, regret_jam, regret_fold, pred_jam, pred_fold,
                        avg_num, clock, node_actor, n_players, cf_fold, cf_jam, pass_head, pass_tail):
    """Up to ``iterations`` predictive CFR+ iterations (see :meth:`HandSolver.iterate`), compiled whole.

    ``clock`` holds the solver's [iterations, regret_weight, avg_start, avg_den] and is advanced
    in place, as are the regrets, predictions and ``avg_num``. With ``has_target`` each iterate's
    exploitability ($) is measured from its own pass and the loop stops after the first within
    ``target``. ``pass_head`` and ``pass_tail`` are :func:`hand_pass`'s arguments before and
    after sigma; the pass fills ``cf_fold`` and ``cf_jam`` (K × 169, views of its buffers).
    Without ``discounted`` the regrets are summed as they come (see :data:`STALL_ITERATIONS`).
    Returns (certified, exploitability of the last iterate or inf, its gains per player, the
    last iterate).
    """
    K = node_actor.shape[0]
    e = np.inf
    gains = np.zeros(n_players)
    sigma = np.empty((K, NC))
    for _ in range(iterations):
        sigma = current_strategy(regret_jam, regret_fold, pred_jam, pred_fold)
        hand_pass(*pass_head, sigma, *pass_tail)
        if has_target:
            gains = exploitability_from_cf(sigma, cf_fold, cf_jam, node_actor, n_players)
            e = gains.max() if gains.shape[0] else 0.0
        count_iterate(sigma, cf_fold, cf_jam, regret_jam, regret_fold, pred_jam, pred_fold, avg_num, clock, delay,
                      discounted)
        if has_target and e <= target:
            return True, e, gains, sigma
    return False, e, gains, sigma


@nb.njit(cache=True, nogil=True)
def count_iterate(sigma, cf_fold, cf_jam, regret_jam, regret_fold, pred_jam, pred_fold, avg_num, clock, delay,
                  discounted):
    """Count the evaluated profile ``sigma`` as the solver's next CFR+ iteration: its regrets into the
    (discounted) sum and the prediction, the clock ([iterations, regret_weight, avg_start,
    avg_den]) advanced, and sigma into the t²-weighted average once past ``delay``."""
    discount = (clock[1] + 1.0) / (clock[1] + 2.0) if discounted else 1.0
    cfr_plus_update(sigma, cf_fold, cf_jam, regret_jam, regret_fold, pred_jam, pred_fold, discount)
    clock[0] += 1.0
    clock[1] += 1.0
    since = clock[0] - clock[2]
    if since > delay:
        w = (since - delay) ** 2
        for k in range(sigma.shape[0]):
            for c in range(NC):
                avg_num[k, c] += w * sigma[k, c]
        clock[3] += w


@nb.njit(cache=True, nogil=True)
def current_strategy(regret_jam, regret_fold, pred_jam, pred_fold):
    """Predictive regret matching+: jam probability ∝ [R_jam + m_jam]⁺ (½ where both are 0)."""
    K = regret_jam.shape[0]
    sigma = np.empty((K, NC))
    for h in range(K):
        for c in range(NC):
            rj = np.float64(regret_jam[h, c]) + np.float64(pred_jam[h, c])
            rf = np.float64(regret_fold[h, c]) + np.float64(pred_fold[h, c])
            rj = rj if rj > 0.0 else 0.0
            rf = rf if rf > 0.0 else 0.0
            s = rj + rf
            sigma[h, c] = rj / s if s > 0.0 else 0.5
    return sigma


@nb.njit(cache=True, nogil=True)
def cfr_plus_update(sigma, cf_fold, cf_jam, regret_jam, regret_fold, pred_jam, pred_fold, discount=1.0):
    """Multiply the regrets by ``discount``, add the instantaneous regrets of ``sigma`` (floored at zero)
    and keep those as the next prediction."""
    K = sigma.shape[0]
    for h in range(K):
        for c in range(NC):
            diff = cf_jam[h, c] - cf_fold[h, c]
            s = sigma[h, c]
            ij = (1.0 - s) * diff
            ifo = -s * diff
            rj = discount * regret_jam[h, c] + ij
            rf = discount * regret_fold[h, c] + ifo
            regret_jam[h, c] = rj if rj > 0.0 else 0.0
            regret_fold[h, c] = rf if rf > 0.0 else 0.0
            pred_jam[h, c] = ij
            pred_fold[h, c] = ifo


@nb.njit(cache=True, nogil=True)
def exploitability_from_cf(sigma, cf_fold, cf_jam, node_actor, n):
    gains = np.zeros(n)
    for h in range(sigma.shape[0]):
        k = node_actor[h]
        for c in range(NC):
            s = sigma[h, c]
            cur = s * cf_jam[h, c] + (1.0 - s) * cf_fold[h, c]
            best = cf_jam[h, c] if cf_jam[h, c] > cf_fold[h, c] else cf_fold[h, c]
            gains[k] += best - cur
    return gains
