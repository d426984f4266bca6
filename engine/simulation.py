"""Monte Carlo tournaments of the abstract game (SPEC §7.6).

Whole tournaments are played from a start state: hands are dealt card by card under the card
model, every decision follows the acting player's strategy profile, showdowns are drawn from the
same class-level tables the solver uses, and eliminations, shared places and prizes follow the
rules of :mod:`engine.hand`. The players are tracked through the seat changes, so a player can
keep his own profile (a model) for the whole tournament while the others play another one.

The game is played from its packed form (:mod:`engine.packed_game`: every state's hand tree
flattened into arrays, a profile row per decision node).

**Results** are per player, indexed by starting position: mean payoff ($) with its standard
error, ROI % = (mean − fair)/fair·100 with fair = prize money still in play / players at the
start state, and the finishing distribution (probabilities of places 1..n). Eliminations in the
same hand are placed by starting stack; equal stacks share the prizes of their places (the payoff
is the shared prize) and the *sampled* place is a uniformly random one of the shared places.

**Profiles** are (total_nodes, 169) arrays from :func:`pack_profile`: float32 jam probabilities
(exact) or uint8 levels (exact for pure strategies). The kernel plays their exact compact form
(:func:`compact_profile`: one 64-byte row of class bit masks per node plus the thresholds of the
few mixed classes, ~10× smaller than float32, so the visited rows stay in cache far more often).
Several profiles can share a table (``seat_profile`` says who plays which).

See :mod:`engine.simulation_kernel` for the random numbers, the card model and reproducibility.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping, Sequence, Union

import numpy as np

from engine import simulation_kernel as kernel
from engine.packed_game import PackedGame

if TYPE_CHECKING:
    from engine.hand_pass import SolverTensors
    from engine.showdown import ShowdownTensors

NC = 169


# --------------------------------------------------------------------------------------------
# profiles
# --------------------------------------------------------------------------------------------


PROFILE_DTYPES = {np.dtype(np.float32): 1.0, np.dtype(np.uint8): 255.0}
"""Profile storage types and the entry that means "always jam": float32 probabilities (exact), or
uint8 levels round(p · 255) — 4× less memory and faster simulations, exact for pure strategies,
within 1/510 of p for mixed ones."""


def pack_profile(game: PackedGame, strategies: Mapping[int, Sequence[np.ndarray]],
                 dtype: type = np.float32) -> np.ndarray:
    """A profile as a (total_nodes, 169) array of jam probabilities in packed row order.

    ``strategies[n][s]`` is the (nodes, 169) jam-probability array of state s of layer n (the
    solver's :attr:`engine.tournament.LayerSolution.strategy`); every layer 2..players is needed.
    ``dtype``: float32 (exact) or uint8 levels (see :data:`PROFILE_DTYPES`).
    """
    top = PROFILE_DTYPES[np.dtype(dtype)]
    out = np.empty((game.total_nodes, NC), dtype)
    for n in range(2, game.players + 1):
        layer = strategies[n]
        lo, hi = int(game.layer_start[n]), int(game.layer_start[n + 1])
        if len(layer) != hi - lo:
            raise ValueError(f"layer {n} needs {hi - lo} state strategies; got {len(layer)}")
        for s, sigma in enumerate(layer):
            g = lo + s
            k = game.state_key[g]
            rows = int(game.key_node_off[k + 1] - game.key_node_off[k])
            sigma = np.asarray(sigma, dtype=np.float64)
            if sigma.shape != (rows, NC):
                raise ValueError(f"state {s} of layer {n}: strategy shape {sigma.shape}, expected {(rows, NC)}")
            if sigma.size and (np.isnan(sigma).any() or sigma.min() < 0 or sigma.max() > 1):
                raise ValueError(f"state {s} of layer {n}: jam probabilities must lie in [0, 1]")
            out[game.state_node[g]:game.state_node[g] + rows] = sigma if top == 1.0 else np.rint(sigma * top)
    return out


@dataclass(frozen=True)
class CompactProfile:
    """A packed profile in the kernel's exact compact form (:func:`engine.simulation_kernel.compact_rows`):
    one 64-byte row per profile row (always-jam and mixed class bits) and the mixed classes'
    integer jam thresholds. About 10× smaller than float32 (the 45-unit 5-player game: 178 MiB of
    rows instead of 1.8 GiB), so more of the rows a simulation visits stay in cache."""

    rows: np.ndarray  # uint64 (total_nodes, 8)
    thresholds: np.ndarray  # uint64 (mixed entries,)

    @property
    def shape(self) -> tuple[int, int]:
        """(profile rows, classes), as the dense profile it was made from."""
        return (self.rows.shape[0], NC)


def compact_profile(profile: Union[np.ndarray, CompactProfile]) -> CompactProfile:
    """The compact form of a dense profile from :func:`pack_profile` (float32 or uint8; the same
    decisions, see :data:`PROFILE_DTYPES`); a CompactProfile is returned as it is."""
    if isinstance(profile, CompactProfile):
        return profile
    dense = np.ascontiguousarray(profile)
    if dense.dtype not in PROFILE_DTYPES:
        raise ValueError(f"profiles must be float32 or uint8 (see pack_profile); got {dense.dtype}")
    if dense.ndim != 2 or dense.shape[1] != NC:
        raise ValueError(f"a profile has one column per hand class ({NC}); got shape {dense.shape}")
    rows, thresholds = kernel.compact_rows(dense, kernel.TWO32 / PROFILE_DTYPES[dense.dtype])
    return CompactProfile(rows, thresholds)


def _stack_profiles(profiles: Sequence[CompactProfile]) -> tuple[np.ndarray, np.ndarray]:
    """One rows array and one thresholds array for the kernel: profile i's rows start at
    i · total_nodes, and their threshold indices are shifted past the earlier profiles'."""
    if len(profiles) == 1:
        return profiles[0].rows, profiles[0].thresholds
    rows = np.concatenate([p.rows for p in profiles])
    shift = np.cumsum([0] + [len(p.thresholds) for p in profiles[:-1]])
    R = profiles[0].rows.shape[0]
    for i, d in enumerate(shift):
        rows[i * R:(i + 1) * R, 6] += np.uint64(d)
    return rows, np.concatenate([p.thresholds for p in profiles])


# --------------------------------------------------------------------------------------------
# showdown sampling tables
# --------------------------------------------------------------------------------------------


@dataclass
class ShowdownSampler:
    """What the kernel draws showdowns from: win2[a, b] (float64, P(first dealt wins)) and the 3-way
    table ``order3`` of :func:`engine.simulation_kernel.order3_thresholds` (uint32, one row of
    cumulative order probabilities per class multiset, 16 MB), or no rows for a heads-up game
    (tensors without the three-way part, :func:`engine.showdown.showdown_tensors`)."""

    win2: np.ndarray
    order3: np.ndarray

    def __post_init__(self) -> None:
        if self.win2.shape != (NC, NC) or self.order3.shape not in ((kernel.TRIPLE_ROWS, 5), (0, 5)):
            raise ValueError(f"a sampler needs win2 {(NC, NC)} and order3 {(kernel.TRIPLE_ROWS, 5)} (or (0, 5) "
                             f"for heads-up games); got {self.win2.shape} and {self.order3.shape}")
        self.win2 = np.ascontiguousarray(self.win2, dtype=np.float64)
        self.order3 = np.ascontiguousarray(self.order3, dtype=np.uint32)

    @classmethod
    def from_tensors(cls, tensors: "Tensors") -> "ShowdownSampler":
        """From :class:`engine.showdown.ShowdownTensors` or :class:`engine.hand_pass.SolverTensors`
        (only the sorted class triples are read: rows with repeated classes are symmetric)."""
        if isinstance(tensors, ShowdownSampler):
            return tensors
        if not tensors.three_way:
            return cls(np.asarray(tensors.win2, dtype=np.float64), np.zeros((0, 5), np.uint32))
        if hasattr(tensors, "order3"):
            def probs(a, b, c):
                return tensors.order3[:, a, b, c].T
        else:  # SolverTensors keep joint3 · order3
            def probs(a, b, c):
                with np.errstate(invalid="ignore", divide="ignore"):
                    return tensors.m3j[a, b, c] / tensors.joint3[a, b, c][:, None]
        return cls(np.asarray(tensors.win2, dtype=np.float64), kernel.order3_thresholds(probs))


# --------------------------------------------------------------------------------------------
# simulation
# --------------------------------------------------------------------------------------------


@dataclass
class SimulationResult:
    """Per player, indexed by starting position (payoffs in $, ROI in %, places 1..n)."""

    start: tuple[int, ...]
    seat_profile: tuple[int, ...]
    tournaments: int
    seed: int
    mean: np.ndarray  # (n,) mean payoff $
    se: np.ndarray  # (n,) standard error of the mean $
    roi: np.ndarray  # (n,) % relative to fair
    roi_se: np.ndarray  # (n,) %
    fair: float  # $ per player: prize money in play / n
    finishing: np.ndarray  # (n, n) probability of finishing in place q+1
    cov: np.ndarray  # (n, n) covariance of the players' payoffs in one tournament ($²)
    mean_hands: float  # hands per tournament
    hand_events: dict[str, float]  # per hand: decisions, showdowns, shares heads-up / three-handed (HAND_EVENTS)
    unfinished: int  # tournaments stopped at max_hands (remaining players paid 0)
    wall_s: float

    def group_mean(self, members: Sequence[int]) -> tuple[float, float]:
        """Mean payoff per player of a group of starting positions and its standard error ($)."""
        w = np.zeros(len(self.mean))
        w[list(members)] = 1.0 / len(members)
        return float(w @ self.mean), float(math.sqrt(max(w @ self.cov @ w, 0.0) / self.tournaments))


Tensors = Union["ShowdownTensors", "SolverTensors", ShowdownSampler]
HAND_EVENTS = ("decisions", "two_way", "three_way", "heads_up", "three_handed")
"""Keys of :attr:`SimulationResult.hand_events`: per hand, the decisions (a dealt hand and its
jam/fold: a profile row read) and the showdowns of two and of three hands; they say what a hand
costs (a 3-way showdown reads a 16 MB table, every decision a 64-byte row of the profile). Then the
shares of the hands played heads-up and three-handed (the rest had four or more players): a
heads-up hand, played from trees written out in the kernel with its rows in cache, costs a small
part of a five-handed one (23 against 82 ns of CPU on the bench's profile before those trees were
written out, less since), so the shares say how much a profile gains from them (PERFORMANCE.md,
"The simulation")."""


def describe_hand_events(events: dict[str, float]) -> str:
    """:attr:`SimulationResult.hand_events` in words, for a log or a CLI line ("2.20 decisions, …")."""
    return (f"{events['decisions']:.2f} decisions, {events['two_way']:.3f} two-way and {events['three_way']:.3f} "
            f"three-way showdowns ({events['heads_up']:.1%} of the hands heads-up, {events['three_handed']:.1%} "
            "three-handed)")


Profile = Union[np.ndarray, CompactProfile]
PROGRESS_CHUNK = 1 << 21
"""Tournaments between two progress reports of :func:`simulate` (2,097,152: about 2–5 s on 2 cores)."""


def simulate(game: PackedGame, profiles: Sequence[Profile], seat_profile: Sequence[int], start: Sequence[int],
             tournaments: int, seed: int, tensors: Tensors, max_hands: int = 100_000,
             progress: Callable[[int, int], None] | None = None) -> SimulationResult:
    """Play ``tournaments`` tournaments from ``start`` (stacks in acting order).

    The player starting in position i uses ``profiles[seat_profile[i]]`` for the whole tournament:
    packed profiles (:func:`pack_profile`, float32 or uint8) or their compact forms
    (:func:`compact_profile`; dense ones are compacted here, so compact them once for many
    calls). ``tensors``: ShowdownTensors, SolverTensors or a prebuilt :class:`ShowdownSampler`
    (build it once for many calls).
    Tournaments still running after ``max_hands`` hands (a profile can let chips circulate
    forever) are stopped: their remaining players get $0 and no place, and ``unfinished`` counts
    them. Reproducible: the result depends only on (seed, tournaments), not on the number of numba
    threads. Runs on all numba threads (``numba.set_num_threads``). ``progress(done, total)``, if
    given, is called with ``done`` 0 before the first tournament and after every
    :data:`PROGRESS_CHUNK` tournaments (played chunk by chunk, with the same result as in one piece).
    """
    start = tuple(int(x) for x in start)
    n = len(start)
    g = game.state_id(start)
    seat_profile = tuple(int(x) for x in seat_profile)
    if not profiles:
        raise ValueError("at least one profile")
    if len(seat_profile) != n or min(seat_profile) < 0 or max(seat_profile) >= len(profiles):
        raise ValueError(f"seat_profile must give one profile index 0..{len(profiles) - 1} per position; "
                         f"got {seat_profile}")
    # a profile given twice (the equilibrium against itself: the control) is stacked once, the same
    # decisions from half the rows (the `thesis` control played 0.47 million tournaments a second
    # stacked twice, 0.54-0.60 million alone)
    index: dict[int, int] = {}  # id of a given profile -> its place among the distinct ones
    compact = []
    for p in profiles:
        if id(p) not in index:
            index[id(p)] = len(compact)
            compact.append(compact_profile(p))
    kernel_seats = np.array([index[id(profiles[i])] for i in seat_profile], np.int64)
    for p in compact:
        if p.shape != (game.total_nodes, NC):
            raise ValueError(f"profiles must have shape {(game.total_nodes, NC)} (pack_profile); got {p.shape}")
    if tournaments < 1 or max_hands < 1:
        raise ValueError("tournaments and max_hands must be >= 1")
    sampler = ShowdownSampler.from_tensors(tensors)
    if game.players >= 3 and len(sampler.order3) == 0:
        raise ValueError(f"a {game.players}-player game needs the three-way showdown table; these tensors "
                         "were made without a triple table (heads-up hands only)")
    rows, thresholds = _stack_profiles(compact)
    st_rec, out_rec, out_words = game.kernel_records
    heads_up = kernel.heads_up_layout_ok(game.key_root, game.key_node_off, game.key_term_off, game.node_actor,
                                         game.node_fold, game.node_jam, game.term_ndeal, game.term_out)
    nb = -(-tournaments // kernel.BLOCK)
    pay_sum = np.zeros((nb, n))
    pay_cross = np.zeros((nb, n, n))
    place_cnt = np.zeros((nb, n, n), np.int64)
    hands = np.zeros(nb, np.int64)
    unfinished = np.zeros(nb, np.int64)
    events = np.zeros((nb, len(HAND_EVENTS)), np.int64)
    t0 = time.perf_counter()
    step = nb if progress is None else PROGRESS_CHUNK // kernel.BLOCK
    if progress is not None:
        progress(0, tournaments)
    for lo in range(0, nb, step):
        hi = min(nb, lo + step)
        kernel.simulate_blocks(np.int64(g), kernel_seats, rows, thresholds,
                               np.int64(game.total_nodes), np.uint64(seed % 2**64), np.int64(tournaments),
                               np.int64(lo), np.int64(max_hands), st_rec, game.key_root, game.key_node_off,
                               game.key_term_off, game.node_actor, game.node_fold, game.node_jam, game.term_ndeal,
                               game.term_out, out_rec, out_words, game.share, sampler.win2, sampler.order3,
                               pay_sum[lo:hi], pay_cross[lo:hi], place_cnt[lo:hi], hands[lo:hi], unfinished[lo:hi],
                               events[lo:hi], heads_up)
        if progress is not None:
            progress(min(hi * kernel.BLOCK, tournaments), tournaments)
    wall = time.perf_counter() - t0
    T = tournaments
    mean = pay_sum.sum(axis=0) / T
    cov = pay_cross.sum(axis=0) / T - np.outer(mean, mean)
    cov = cov * T / max(T - 1, 1)
    se = np.sqrt(np.maximum(np.diag(cov), 0.0) / T)
    fair = sum(game.payouts[:n]) / n
    return SimulationResult(start=start, seat_profile=seat_profile, tournaments=T, seed=int(seed), mean=mean, se=se,
                            roi=(mean - fair) / fair * 100.0, roi_se=se / fair * 100.0, fair=fair,
                            finishing=place_cnt.sum(axis=0) / T, cov=cov, mean_hands=float(hands.sum()) / T,
                            hand_events=dict(zip(HAND_EVENTS,
                                                 (events.sum(axis=0) / max(int(hands.sum()), 1)).tolist())),
                            unfinished=int(unfinished.sum()), wall_s=wall)


def _sub_seed(seed: int, k: int) -> int:
    """Seed of the k-th simulation of a series: independent streams, reproducible from ``seed``."""
    return (int(seed) * 1_000_003 + k) % 2 ** 64


def _compact_pair(a: Profile, b: Profile) -> tuple[CompactProfile, CompactProfile]:
    """Both profiles compacted once for a series of simulations; one object when they are the same
    profile (the equilibrium against itself), which :func:`simulate` then stacks once."""
    ca = compact_profile(a)
    return ca, ca if b is a else compact_profile(b)


def simulate_against(game: PackedGame, model_profile: Profile, equilibrium_profile: Profile,
                     start: Sequence[int], tournaments: int, seed: int, tensors: Tensors,
                     on_result: Callable[[int, SimulationResult], None] | None = None,
                     heroes: Sequence[int] | None = None,
                     progress: Callable[[int, int, int], None] | None = None) -> list[SimulationResult]:
    """One result per hero starting position h (every position, or those of ``heroes``): the hero
    plays ``model_profile``, everybody else ``equilibrium_profile``; the hero's figures are
    ``result.mean[h]``, ``result.roi[h]`` … Each h gets its own stream (seed ``_sub_seed(seed, h)``),
    so the results are independent, and the same whichever other heroes are played.
    ``on_result(h, result)`` is called as each finishes (a progress line: on the 45-unit 5-player
    game 100 million tournaments take over a minute), ``progress(h, done, tournaments)`` within
    each (see :func:`simulate`)."""
    sampler = ShowdownSampler.from_tensors(tensors)
    n = len(start)
    equilibrium_profile, model_profile = _compact_pair(equilibrium_profile, model_profile)
    out = []
    for h in (range(n) if heroes is None else heroes):
        report = None if progress is None else (lambda done, total, h=h: progress(h, done, total))
        out.append(simulate(game, [equilibrium_profile, model_profile], [int(i == h) for i in range(n)], start,
                            tournaments, _sub_seed(seed, h), sampler, progress=report))
        if on_result is not None:
            on_result(h, out[-1])
    return out


@dataclass
class MatchSeating:
    """One seating of a direct match: starting positions of side A, the rest are side B."""

    a_seats: tuple[int, ...]
    roi_a: float  # % mean ROI per A player
    roi_a_se: float
    roi_b: float
    roi_b_se: float
    result: SimulationResult

    @property
    def b_seats(self) -> tuple[int, ...]:
        return tuple(i for i in range(len(self.result.mean)) if i not in self.a_seats)

    @property
    def payoffs(self) -> tuple[float, float]:
        """Mean prize ($) of an A player and of a B player (|A|·a + |B|·b = the prize pool when every
        tournament finishes)."""
        return self.result.group_mean(self.a_seats)[0], self.result.group_mean(self.b_seats)[0]

    @property
    def finishing(self) -> tuple[np.ndarray, np.ndarray]:
        """An A player's and a B player's frequency of finishing in place q + 1 (each sums to 1 when
        every tournament finishes): the mean of the side's positions' rows of ``result.finishing``."""
        return (self.result.finishing[list(self.a_seats)].mean(axis=0),
                self.result.finishing[list(self.b_seats)].mean(axis=0))


def direct_match(game: PackedGame, profile_a: Profile, profile_b: Profile, start: Sequence[int],
                 tournaments: int, seed: int, tensors: Tensors,
                 on_seating: Callable[[MatchSeating], None] | None = None) -> list[MatchSeating]:
    """Profile A against profile B over all 2^n − 2 seatings (non-empty proper subsets of the
    starting positions play A; seating ``mask`` puts position i on A when bit i is set, and gets
    its own stream ``_sub_seed(seed, mask)``). Per seating, the mean ROI (%) of an A player and of
    a B player with standard errors; |A|·roi_a + |B|·roi_b = 0 when every tournament finishes.
    Positions are not symmetric (blinds, stacks), so a single seating's ROI is not 0 even for
    A = B; :func:`match_summary` averages over the seats of all seatings. ``on_seating(seating)`` is called
    as each seating finishes (2^n − 2 of them: a progress line)."""
    sampler = ShowdownSampler.from_tensors(tensors)
    n = len(start)
    profile_a, profile_b = _compact_pair(profile_a, profile_b)
    out = []
    for mask in range(1, 2 ** n - 1):
        seats = [0 if mask >> i & 1 else 1 for i in range(n)]
        res = simulate(game, [profile_a, profile_b], seats, start, tournaments, _sub_seed(seed, mask), sampler)
        a = tuple(i for i in range(n) if seats[i] == 0)
        b = tuple(i for i in range(n) if seats[i] == 1)
        ma, sa = res.group_mean(a)
        mb, sb = res.group_mean(b)
        out.append(MatchSeating(a, (ma - res.fair) / res.fair * 100, sa / res.fair * 100,
                                (mb - res.fair) / res.fair * 100, sb / res.fair * 100, res))
        if on_seating is not None:
            on_seating(out[-1])
    return out


def match_summary(seatings: Sequence[MatchSeating]) -> dict[str, float]:
    """ROI (%) of an A player and of a B player over all the seatings, every seat weighted alike
    (a seating with k of n players on A counts k times for A and n − k times for B), with standard
    errors (the seatings are independent streams). The two are opposites when every tournament
    finishes: |A|·roi_a + |B|·roi_b = 0 in each seating, and over all 2^n − 2 seatings A and B hold
    equally many seats. For A = B both are 0 in expectation: every position is on A in equally many
    seatings, and the positional ROIs add up to 0."""
    def side(roi: list[float], se: list[float], seats: list[int]) -> tuple[float, float]:
        w = np.array(seats, np.float64)
        return float(w @ roi / w.sum()), float(np.sqrt(np.sum((w * se) ** 2)) / w.sum())

    roi_a, roi_a_se = side([s.roi_a for s in seatings], [s.roi_a_se for s in seatings],
                           [len(s.a_seats) for s in seatings])
    roi_b, roi_b_se = side([s.roi_b for s in seatings], [s.roi_b_se for s in seatings],
                           [len(s.b_seats) for s in seatings])
    return {"roi_a": roi_a, "roi_a_se": roi_a_se, "roi_b": roi_b, "roi_b_se": roi_b_se}
