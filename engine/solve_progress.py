"""Progress of the long loops and its readable lines: a layer solve (see
:func:`engine.tournament.solve_layer`), a model sweep's layer (:func:`engine.model_strategies.solve_sweep`),
a nemesis round (:func:`engine.best_response.ex_post`) and a profile's hand outcomes
(:func:`engine.profile_outcomes.outcome_probabilities`).

One wording for every place that shows them: the assets' Dagster log and ``./lab bench solver``;
one throttle for the states-done events of the last three (:func:`states_done_events`); one
estimate of the time left within them all, each kind of state priced at its own cost
(:class:`KindedClock`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import numpy as np

from engine.game_tree import CompiledHand, pass_cost

ProgressFn = Callable[[dict], None]
"""Receives a long computation's progress events (dicts with an ``event`` name), which the CLI's
and Dagster's loggers put into words."""

T = TypeVar("T")


def layer_log_line(event: dict) -> tuple[str, str] | None:
    """(level, message) for the log of a layer solve's progress event (see
    :func:`engine.tournament.solve_layer`); None for events the log leaves out."""
    kind, head = event["event"], f"{event['players']}-player layer"
    if "outer_iteration" in event:
        head += f", outer iteration {event['outer_iteration']}"
    if kind == "outer":
        level = f" (level {event['level']} of {event['levels']})" if "level" in event else ""
        return "info", (f"{head}: target {event['target']:.1e} ${level}, {event['states_updated']} states updated, "
                        f"{event['states_skipped']} skipped, {event['states_screened']} screened, "
                        f"{event['states_checked']} checked exactly, "
                        f"{event['cfr_iterations']} CFR+ iterations, max |ΔV| {event['max_delta_v']:.2e} $, "
                        f"max exploitability {event['max_exploitability']:.2e} $, {event['wall_s']:.1f} s")
    if kind == "states":
        return "info", f"{head}: {_states_done(event, ' in it')}"
    if kind == "resumed":
        if event.get("over_gamma"):
            return "info", (f"{head} finished above gamma in an earlier run ({event['over_gamma']:,} states), "
                            f"after outer iteration {event['outer']}")
        if event["finished"]:
            return "info", head + " read back solved from its checkpoint"
        return "info", head + (f" resumed after outer iteration {event['outer']}"
                               + (", settled: only its final exact measurement is left" if event.get("settled") else ""))
    if kind == "retrying_held":
        return "warning", (f"{head}: settled at gamma with {event['states']:,} states still above it (at most "
                           f"{event['exploitability']:.2e} $), their solves having run out of CFR+ iterations; "
                           f"the next outer iteration solves them again with up to "
                           f"{event['max_iterations']:,} (retry {event['retry']} of {event['retries']})")
    if kind == "resumed_states":
        return "info", f"{head}: {event['done']:,}/{event['states']:,} states already done in an earlier run"
    if kind == "uncertified":
        return "warning", (f"{head}: the hand at stacks {event['stacks']} is still {event['exploitability']:.2e} $ "
                           f"exploitable after {event['cfr_iterations']} CFR+ iterations (target "
                           f"{event['target']:.1e} $); at this target it is solved again only if it becomes "
                           f"{event['held_slack']:g} times as exploitable; if the layer settles at gamma with it above "
                           f"gamma, it is tried again with a larger cap, and the layer's exploitability check reports "
                           f"it if it ends above gamma")
    if kind == "not_converging":
        return "warning", (f"{head}: the values are cycling, not settling: {event['window']} outer iterations in a "
                           f"row at target {event['target']:.1e} $ each moved them by at least "
                           f"{event['max_delta_v']:.2e} $. PI-CFR+ does not converge on this game (flat top prizes, "
                           f"such as 50/50/0, do this), so the layer stops here and measures every state exactly; "
                           f"its exploitability check reports those above gamma")
    if kind == "preparing":
        return "info", f"{head}: building the hand trees of its {event['states']:,} states"
    if kind == "prepared":
        return "info", f"{head}: {event['states']:,} states ready in {duration(event['wall_s'])}"
    if kind == "measuring":
        resumed = f" ({event['done']:,} already measured in an earlier run)" if event.get("done") else ""
        if event.get("every_state"):
            why = event.get("why") or "at its cap of outer iterations"
            return "warning", (f"{head}: stopped before it settled ({why}); measuring exactly all "
                               f"{event['states']:,} states under its last values")
        return "info", (f"{head}: solved; measuring exactly the {event['states']:,} states skipped or screened "
                        f"in the last outer iteration{resumed}")
    if kind == "measuring_states":
        return "info", f"{head}, final exact measurement: {_states_done(event)}"
    if kind == "block_saved":
        return "info", (f"{head}: checkpoint of {event['states']:,} more states ({event['done']:,} done), "
                        f"{event['wall_s']:.0f} s")
    return None


def states_done_events(results: Iterable[T], todo: int, progress: Callable[[dict], None] | None, every: float,
                       event: dict, done_before: int = 0, states: int | None = None,
                       wall_before: float = 0.0, clock: KindedClock | None = None) -> Iterator[T]:
    """Pass on ``results`` (one per state, ``todo`` of them), sending ``progress`` the event
    ``{**event, "done", "states", "wall_s", "left_s"}`` at most every ``every`` seconds, never after
    the last: states done (``done_before`` finished earlier, e.g. read back from a checkpoint, plus
    this run's), of ``states`` (default: all of them), seconds so far (``wall_before`` + this run's)
    and, from the second state on, an estimate of the seconds left: from the ``clock`` that timed
    the states (:meth:`KindedClock.timed`) or else at the rate of all states (:func:`seconds_left`).
    The one throttle of the sweeps', the nemesis rounds' and the profile outcomes' long loops."""
    t0 = last = time.perf_counter()
    first = None
    for count, item in enumerate(results, start=1):
        yield item
        now = time.perf_counter()
        first = now if first is None else first
        if progress is not None and now - last >= every and count < todo:
            last = now
            tick = {**event, "done": done_before + count, "states": done_before + todo if states is None else states,
                    "wall_s": wall_before + now - t0}
            progress(tick | (clock.seconds_left(now) if clock is not None
                             else seconds_left(now - first, count - 1, todo - count)))


def seconds_left(since_first: float, done_since_first: int, left: int) -> dict:
    """``{"left_s": …}``, the seconds the ``left`` states will take at the rate of those finished
    since the first one, or ``{}`` before a second one has finished. The first state's time is left
    out because it holds the run's start-up (numba's compile, reading tables): counted in, it made a
    2-player layer that took seconds read "about 33 min left" after its first state."""
    return {"left_s": since_first / done_since_first * left} if done_since_first > 0 else {}


class KindedClock:
    """Time left in a loop over states of unlike cost, from what each kind of state has cost so far.

    A layer's first outer iteration solves its states wave after wave (see
    :func:`engine.warm_starts.warm_start_waves`): each wave's few cold starts take several times a
    warm start from a neighbour, and heaviest trees first within a wave. At the rate of all
    states finished, the 45-unit 5-player layer's estimate swung from 14.6 to 4.6 h within three
    minutes of one outer iteration (a cold wave, then a warm one). Here every finished state's own
    time counts towards the mean of its kind (``kinds``: one small integer per state); the states
    left are priced at their kind's mean, and thread seconds become wall seconds at the
    parallelism measured so far (threads, idle waits). A kind not yet seen (a resumed first outer
    iteration meets its next cold wave an hour later) is priced by ``prior``, its cost relative to
    the other kinds: the seen kinds' seconds per unit of prior cost times its own.

    As in :func:`seconds_left`, the run's start-up is left out: states started before the first
    one finished (numba's compile) count towards neither a mean nor the parallelism. The states
    still running (``begin``) count towards the parallelism with the time they have run: counted
    only once finished, a resumed 5-player outer iteration whose threads were still in their first
    long states read "about 412 h left" (8.7 h 15 s later, 3.0–3.6 h through the next minutes).
    Nor does each kind's first state count towards its mean: it may hold the compile of kernels
    only that tree uses (numba compiles a kernel at its first call), tens of seconds against a
    tenth of a second for the others; in a kind of a few hundred states that alone can multiply its
    price several times.
    """

    def __init__(self, kinds: np.ndarray, todo: np.ndarray, prior: np.ndarray | None = None):
        """``kinds`` per state; ``todo`` a mask of the states this loop still has to finish; ``prior``
        per kind, its expected cost relative to the others (default: all alike)."""
        self.kinds = np.asarray(kinds, dtype=np.int64)
        size = int(self.kinds.max(initial=-1)) + 1
        self.prior = np.ones(size) if prior is None else np.asarray(prior, dtype=np.float64)[:size]
        self.left = np.bincount(self.kinds[todo], minlength=size).astype(np.float64)
        self.count = np.zeros(size)
        self.seconds = np.zeros(size)  # thread seconds of the counted states, per kind
        self.busy = 0.0  # thread seconds spent after the first state finished
        self.since: float | None = None
        self.running: dict[int, float] = {}  # state → when it started, for the states not finished
        self.met = np.zeros(size, dtype=bool)  # whether a state of the kind finished since the start-up
        self.lock = threading.Lock()

    def timed(self, fn: Callable[[int], T]) -> Callable[[int], T]:
        """``fn`` (of a state), its every call timed into this clock (from any thread)."""
        def run(state: int) -> T:
            started = time.perf_counter()
            self.begin(state, started)
            result = fn(state)
            self.finished(state, started, time.perf_counter())
            return result
        return run

    def begin(self, state: int, started: float) -> None:
        """State ``state`` started on a thread at ``started`` (perf_counter seconds)."""
        with self.lock:
            self.running[state] = started

    def finished(self, state: int, started: float, ended: float) -> None:
        """State ``state`` ran on one thread from ``started`` to ``ended`` (perf_counter seconds)."""
        with self.lock:
            self.running.pop(state, None)
            kind = self.kinds[state]
            self.left[kind] -= 1
            if self.since is None:
                self.since = ended
                return
            self.busy += ended - max(started, self.since)
            if started >= self.since:
                if self.met[kind]:
                    self.count[kind] += 1
                    self.seconds[kind] += ended - started
                self.met[kind] = True

    def seconds_left(self, now: float) -> dict:
        """``{"left_s": …}`` (wall seconds), or ``{}`` before any state could be counted."""
        with self.lock:
            return self._seconds_left(now)

    def _seconds_left(self, now: float) -> dict:
        counted = self.count.sum()
        if self.since is None or counted == 0 or self.busy <= 0.0 or now <= self.since:
            return {}
        seen = self.count > 0
        per_prior = self.seconds[seen].sum() / (self.count[seen] * self.prior[seen]).sum()
        mean = np.where(seen, self.seconds / np.maximum(self.count, 1), self.prior * per_prior)
        thread_left = float((np.maximum(self.left, 0.0) * mean).sum())
        busy = self.busy + sum(max(0.0, now - max(started, self.since)) for started in self.running.values())
        return {"left_s": thread_left * (now - self.since) / busy}


def cost_kinds(hands: list[CompiledHand]) -> tuple[np.ndarray, np.ndarray]:
    """Per state, its kind for the time-left estimates (:class:`KindedClock`): states whose hand
    pass costs the same (:func:`~engine.game_tree.pass_cost`; in a layer, one tree shape),
    numbered; and per kind that cost, its prior."""
    kinds_cost, kinds = np.unique(np.array([pass_cost(h) for h in hands], dtype=np.float64), return_inverse=True)
    return kinds.astype(np.int64), kinds_cost


def kinded_clock(hands: list[CompiledHand], todo: list[int]) -> KindedClock:
    """A time-left clock over the states ``todo`` of a loop in which a state's cost is set by its
    tree (a model sweep's layer, a nemesis round, a profile's hand outcomes): :func:`cost_kinds`.
    The loops hand out the heaviest trees first, so at the rate of all states their estimates ran
    high until the cheap trees came."""
    return _clock_over(*cost_kinds(hands), todo)


def _clock_over(kinds: np.ndarray, prior: np.ndarray, todo: list[int]) -> KindedClock:
    mask = np.zeros(len(kinds), dtype=bool)
    mask[todo] = True
    return KindedClock(kinds, mask, prior)


PILOT_STATES = 16
"""States of each kind a re-solving outer iteration takes first, in random order, so that its
time-left estimate prices every kind by its own states (:func:`estimable_order`)."""


def estimable_order(order: np.ndarray, kinds: np.ndarray, seed: int, pilot: int = PILOT_STATES) -> np.ndarray:
    """``order`` (heaviest tree first) rearranged for a :class:`KindedClock`: first up to ``pilot``
    random states of every kind, the kinds taking turns, then the rest kind by kind as in ``order``,
    each kind's states in random order.

    A kind not yet timed is priced by its pass cost, but what a re-solve costs is its pass times
    its CFR+ iterations, and those differ by kind: in the `thesis` 5-player layer's second outer
    iteration, heaviest first, the estimate read "about 59 min left" for ten minutes while the
    lighter trees that followed went at half the rate (724 against about 1,500 states a minute);
    and within a kind the states came in index order (stack order), so a kind's first states need
    not be typical of it. Where a state's work
    does not depend on which states ran before it (outer iterations after the first), the order
    changes nothing but the estimate. ``seed`` makes it repeatable."""
    order = np.asarray(order, dtype=np.int64)
    if len(order) == 0:
        return order
    rng = np.random.default_rng(seed)
    of_order = kinds[order]
    first_seen = {}
    for position, kind in enumerate(of_order.tolist()):
        first_seen.setdefault(kind, position)
    rank = np.array([first_seen[k] for k in of_order.tolist()])
    shuffled = order[np.lexsort((rng.random(len(order)), rank))]  # kind by kind, random within a kind
    kind_of = kinds[shuffled]
    starts = np.flatnonzero(np.r_[True, kind_of[1:] != kind_of[:-1]])
    turn = np.arange(len(shuffled)) - np.repeat(starts, np.diff(np.r_[starts, len(shuffled)]))
    is_pilot = turn < pilot
    pilot_part = shuffled[is_pilot][np.argsort(turn[is_pilot], kind="stable")]
    return np.concatenate([pilot_part, shuffled[~is_pilot]])


def estimable_loop(hands: list[CompiledHand], order: list[int], done: set[int], seed: int
                   ) -> tuple[list[int], KindedClock]:
    """The states of ``order`` (heaviest tree first) not in ``done``, rearranged by
    :func:`estimable_order`, and a time-left clock over them, for a loop in which a state's cost is
    its tree's pass times CFR+ iterations that differ by tree (a model sweep's layer): priced by
    its pass cost alone until timed, a tree that comes last would be priced wrong for most of the
    loop. Only for loops whose states do not depend on which ran before them."""
    kinds, prior = cost_kinds(hands)
    left = np.array([s for s in order if s not in done], dtype=np.int64)
    todo = estimable_order(left, kinds, seed).tolist()  # the pilot taken from the states left
    return todo, _clock_over(kinds, prior, todo)


COLD_COST = 4.0
"""What a cold first solve costs against one started from a neighbour's regrets, for the time-left
estimate of a first outer iteration before it has met a cold state of a tree. The `thesis` game's
5-player layer in its first outer iteration (2 threads, target $0.1, 2026-11-27), states without a
blind all-in: 3.6 a second in a cold wave (the 16th) against 14.1 in the warm wave after it, 3.9×."""


def first_solve_kinds(kinds: np.ndarray, prior: np.ndarray, cold: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The kinds and priors of :func:`cost_kinds` split by a cold start (``cold``) or one from a
    neighbour's regrets, for a first outer iteration: kind = 2·kind + cold, its prior times
    :data:`COLD_COST` when cold."""
    return 2 * kinds + cold.astype(np.int64), np.repeat(prior, 2) * np.tile([1.0, COLD_COST], len(prior))


def duration(seconds: float) -> str:
    """Seconds as a reader takes them in: '45 s', '12 min', '3.4 h'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _states_done(event: dict, where: str = "") -> str:
    """'12,000/135,751 states done, 25 min, about 8.3 h left' (the estimate only when the event has one)."""
    text = f"{event['done']:,}/{event['states']:,} states done, {duration(event['wall_s'])}"
    return text + (f", about {duration(event['left_s'])} left{where}" if "left_s" in event else "")


def sweep_log_line(event: dict) -> str:
    """The log line of a model sweep's progress event within a layer: ``sweep_states`` (states done,
    time so far, an estimate of the time left) or ``sweep_resumed_states``."""
    head = f"{event['label']}: {event['players']}-player layer"
    if event["event"] == "sweep_resumed_states":
        return f"{head}: {event['done']:,}/{event['states']:,} states read back from an earlier run's checkpoint"
    return f"{head}: {_states_done(event)}"


def nemesis_log_line(event: dict, profile: str = "") -> str:
    """The log line of an ex post check's progress event (see :func:`engine.best_response.ex_post`):
    a finished round (``nemesis_round``), states done within one (``nemesis_states``), rounds
    read back from an earlier run (``nemesis_resumed``), or the states of a round read back from
    its block checkpoints (``nemesis_resumed_states``)."""
    if event["event"] == "nemesis_resumed":
        done = "the layer's check read back" if event["finished"] else "resumed"
        return (f"{profile + ': ' if profile else ''}{event['players']}-player layer: {done} after "
                f"{event['rounds']} nemesis rounds of an earlier run")
    head = f"{profile + ': ' if profile else ''}{event['players']}-player layer, nemesis round {event['round']}"
    if event["event"] == "nemesis_states":
        return f"{head}: {_states_done(event, ' in it')}"
    if event["event"] == "nemesis_resumed_states":
        return f"{head}: {event['done']:,}/{event['states']:,} states already done in an earlier run"
    return (f"{head}: Bellman residual {event['bellman_residual']:.2e} $, {event['deviating_rows']} (state, seat) "
            f"replies differ from the profile, {event['wall_s']:.1f} s")


def outcome_log_line(event: dict) -> str:
    """The log line of a progress event of :func:`engine.profile_outcomes.outcome_probabilities`:
    a layer's hand outcomes under a fixed profile, states done, or those read back from the block
    checkpoints of an earlier run (``outcome_resumed``)."""
    head = f"{event['players']}-player layer, hand outcomes of the profile"
    if event["event"] == "outcome_resumed":
        return f"{head}: {event['states']:,} states already done in an earlier run"
    return f"{head}: {_states_done(event)}"
