"""Monte Carlo tournaments of the abstract game (SPEC §7.6).

Whole tournaments are played from a start state: hands are dealt card by card under the card
model, every decision follows the acting player's strategy profile, showdowns are drawn from the
same class-level tables the solver uses, and eliminations, shared places and prizes follow the
rules of :mod:`engine.hand`. The players are tracked through the seat changes, so a player can
keep his own profile (a model) for the whole tournament while the others play another one.

**Packing.** :func:`pack_game` flattens every state of layers 2..players into numba-friendly
arrays. A hand's action tree depends only on the player count and on which blinds are all-in
(a *key*, at most 4 per player count), so nodes and terminals are stored once per key; per state
there are only the profile rows of its nodes and the outcomes of its terminals (next state, and
per old position its new seat or its place). Global state id = ``layer_start[n]`` + the state's
index in its layer (:func:`engine.states.state_index`); the profile rows of a state are its
nodes in the order of :func:`engine.game_tree.compile_hand` (= the solver's strategy rows).

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
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from itertools import permutations
from multiprocessing import get_context
from typing import TYPE_CHECKING, Callable, Mapping, Sequence, Union

import numpy as np

from engine import simulation_kernel as kernel
from engine.cores import configured_threads
from engine.hand import hand_tree
from engine.states import enumerate_states, state_index

if TYPE_CHECKING:
    from engine.hand_pass import SolverTensors
    from engine.showdown import ShowdownTensors

NC = 169


# --------------------------------------------------------------------------------------------
# the packed game
# --------------------------------------------------------------------------------------------


@dataclass
class PackedGame:
    """Every state of layers 2..players as flat arrays (see the module docstring).

    S states, K keys (tree shapes), KN / KT nodes / terminals over all keys, O outcomes.
    """

    units: int
    players: int
    payouts: tuple[float, ...]
    layer_start: np.ndarray  # int64[players + 2]: first global id of layer n (n = 2..players+1)
    state_players: np.ndarray  # int8[S]
    state_stacks: np.ndarray  # int16[S, players] stacks in acting order, 0-padded
    state_key: np.ndarray  # int16[S]
    state_node: np.ndarray  # int64[S] first profile row of the state
    state_out: np.ndarray  # int64[S] first outcome of the state
    key_root: np.ndarray  # int16[K] root: node index, or -1 - terminal index
    key_node_off: np.ndarray  # int64[K+1]
    key_term_off: np.ndarray  # int64[K+1]
    key_outcomes: np.ndarray  # int64[K] outcomes per state of that key
    node_actor: np.ndarray  # int8[KN]
    node_depth: np.ndarray  # int8[KN] jammers before the node
    node_fold: np.ndarray  # int16[KN] child: node index or -1 - terminal index (within the key)
    node_jam: np.ndarray  # int16[KN]
    term_ndeal: np.ndarray  # int8[KT] hands at the showdown (0 = no showdown, 2 or 3)
    term_deal: np.ndarray  # int8[KT, 3] deal order: jammers (acting order), then showdown-only
    term_out: np.ndarray  # int16[KT] first outcome of the terminal within the state's outcomes
    term_orders: np.ndarray  # int8[KT] outcomes of the terminal (1, 2 or 6)
    out_next: np.ndarray  # int32[O] global id of the next state, -1 when the tournament ended
    out_code: np.ndarray  # int8[O, players] new seat (>= 0) or -(8·best place + tied) (see kernel)
    share: np.ndarray  # float64[players+2, 4]: share[best, tied] $ to each of tied players sharing places best..

    @property
    def states(self) -> int:
        return len(self.state_players)

    @property
    def total_nodes(self) -> int:
        """Rows of a packed profile."""
        k = self.state_key[-1]
        return int(self.state_node[-1] + self.key_node_off[k + 1] - self.key_node_off[k])

    @cached_property
    def kernel_records(self) -> tuple[np.ndarray, np.ndarray]:
        """(st_rec int64[S, 4], out_rec uint8[O, 3 + players]): the per-state and per-outcome
        fields packed so that each is one cache line (see :mod:`engine.simulation_kernel`)."""
        st_rec = np.stack([self.state_players, self.state_key, self.state_node, self.state_out], axis=1)
        out_rec = np.empty((len(self.out_next), 3 + self.players), np.uint8)
        nxt = self.out_next.astype(np.int64) + 1
        if nxt.size and nxt.max() >= 2 ** 24:
            raise ValueError("too many states for the 3-byte next-state field")
        for j in range(3):
            out_rec[:, j] = (nxt >> (8 * j)) & 0xFF
        out_rec[:, 3:] = self.out_code.view(np.uint8)
        return np.ascontiguousarray(st_rec, dtype=np.int64), out_rec

    def state_id(self, stacks: Sequence[int]) -> int:
        """Global id of the state ``stacks`` (acting order; must sum to ``units``)."""
        stacks = tuple(int(x) for x in stacks)
        if sum(stacks) != self.units or not 2 <= len(stacks) <= self.players or min(stacks) < 1:
            raise ValueError(f"stacks must be {2}..{self.players} positive stacks summing to {self.units}; "
                             f"got {stacks}")
        return int(self.layer_start[len(stacks)]) + state_index(stacks)

    def node_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Per profile row: (global state, node index within the state, actor position, depth)."""
        counts = np.diff(self.key_node_off)[self.state_key]
        state = np.repeat(np.arange(self.states), counts)
        local = np.arange(len(state)) - self.state_node[state]
        kn = self.key_node_off[self.state_key[state]] + local
        return state, local, self.node_actor[kn].astype(np.int64), self.node_depth[kn].astype(np.int64)

    def save(self, path: str | os.PathLike) -> None:
        """Write the packed arrays to an ``.npz`` file (packing the 45-unit game takes minutes),
        complete or not at all: an interrupted save leaves no half-written cache to load next time."""
        from engine.atomic_files import atomic_path

        arrays = {k: v for k, v in vars(self).items() if isinstance(v, np.ndarray)}  # no cached records
        with atomic_path(path) as tmp, open(tmp, "wb") as out:  # a file object: np.savez would add ".npz" to a bare name
            np.savez(out, units=self.units, players=self.players, payouts=np.array(self.payouts), **arrays)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "PackedGame":
        """Read a game written by :meth:`save`."""
        with np.load(path) as data:
            fields = {k: data[k] for k in data.files if k not in ("units", "players", "payouts")}
            return cls(units=int(data["units"]), players=int(data["players"]),
                       payouts=tuple(float(x) for x in data["payouts"]), **fields)


def _key_id(n: int, sb_allin: bool, bb_allin: bool) -> int:
    return 4 * (n - 2) + 2 * int(sb_allin) + int(bb_allin)


def _deal_orders(term) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """(deal order, outcome orders) of a terminal, exactly as :func:`engine.game_tree.compile_hand`."""
    jam = tuple(term.jammers)
    showdown_only = tuple(p for p in term.contesting if p not in jam)
    if len(term.contesting) < 2:
        return (), [term.outcomes[0].order]
    deal = jam + showdown_only
    return deal, [tuple(deal[i] for i in perm) for perm in permutations(range(len(deal)))]


def _structures(players: int, payouts: tuple[float, ...]):
    """Per key: (nodes, terminals, outcome index maps) from a representative hand tree."""
    out = {}
    for n in range(2, players + 1):
        for sb_ai in (False, True):
            for bb_ai in (False, True):
                stacks = [3] * n
                stacks[n - 2] = 1 if sb_ai else 3
                stacks[n - 1] = 2 if bb_ai else 3
                tree = hand_tree(tuple(stacks), payouts)
                omaps, deals = [], []
                for term in tree.terminals:
                    deal, orders = _deal_orders(term)
                    index = {o.order: i for i, o in enumerate(term.outcomes)}
                    omaps.append([index[order] for order in orders])
                    deals.append(deal)
                out[_key_id(n, sb_ai, bb_ai)] = (tree, omaps, deals)
    return out


def _share_table(players: int, payouts: tuple[float, ...]) -> np.ndarray:
    """share[best, tied] = $ to each of ``tied`` players sharing places best..best+tied−1."""
    pay = list(payouts) + [0.0] * (players + 4)
    share = np.zeros((players + 2, 4))
    for best in range(1, players + 1):
        for tied in range(1, 4):
            share[best, tied] = sum(pay[best - 1:best - 1 + tied]) / tied
    return share


def _pack_states(units: int, n: int, lo: int, hi: int, players: int, payouts: tuple[float, ...]):
    """Outcomes of the states lo..hi−1 of layer n: (keys, outcomes per state, out_next, out_code)."""
    structures = _structures(players, payouts)
    share = _share_table(players, payouts)
    ids: dict[tuple[int, ...], int] = {}
    start = 0
    for m in range(2, n + 1):
        for i, row in enumerate(enumerate_states(units, m)):
            ids[tuple(row.tolist())] = start + i
        start += math.comb(units - 1, m - 1)
    codes_memo: dict = {}
    rows = enumerate_states(units, n)[lo:hi]
    keys = np.empty(len(rows), np.int16)
    counts = np.empty(len(rows), np.int64)
    nxt: list[int] = []
    code_rows: list[tuple[int, ...]] = []
    for r, row in enumerate(rows):
        stacks = tuple(row.tolist())
        tree = hand_tree(stacks, payouts)
        k = _key_id(n, stacks[n - 2] <= 1, stacks[n - 1] <= 2)
        keys[r] = k
        omaps = structures[k][1]
        before = len(nxt)
        for t, term in enumerate(tree.terminals):
            outs = term.outcomes
            for idx in omaps[t]:
                o = outs[idx]
                nxt.append(ids[o.next_stacks] if o.next_stacks else -1)
                memo_key = (o.new_position, o.places, o.prize)
                code = codes_memo.get(memo_key)
                if code is None:
                    code = codes_memo[memo_key] = _codes(o, players, share)
                code_rows.append(code)
        counts[r] = len(nxt) - before
    return keys, counts, np.array(nxt, np.int32), np.array(code_rows, np.int8).reshape(-1, players)


def _codes(outcome, players: int, share: np.ndarray) -> tuple[int, ...]:
    """Per old position: new seat, or -(8·best place + tied); checks the prize against ``share``."""
    places = outcome.places
    code = [0] * players
    for p, seat in enumerate(outcome.new_position):
        if seat >= 0:
            code[p] = seat
            continue
        tied = sum(1 for y in places if y == places[p])
        best = int(round(places[p] - (tied - 1) / 2))
        if abs(share[best, tied] - outcome.prize[p]) > 1e-9:
            raise AssertionError(f"prize {outcome.prize[p]} of place {places[p]} != share {share[best, tied]}")
        code[p] = -(8 * best + tied)
    return tuple(code)


def pack_game(units: int, players: int, payouts: Sequence[float], processes: int = 1,
              chunk: int = 20_000) -> PackedGame:
    """Pack every state of layers 2..players of the game (units, players, payouts $).

    Builds each state's :func:`engine.hand.hand_tree` (≈ 0.3 ms per state; the 45-unit
    5-player game has 149,985 states). ``processes`` > 1 builds chunks of ``chunk`` states in
    worker processes, when the game has more than ``chunk`` states (starting a worker process
    takes seconds: longer than packing a small game).
    """
    payouts = tuple(float(x) for x in payouts)
    structures = _structures(players, payouts)
    K = 4 * (players - 1)
    key_nodes = np.array([len(structures[k][0].nodes) for k in range(K)], np.int64)
    key_terms = np.array([len(structures[k][0].terminals) for k in range(K)], np.int64)
    key_node_off = np.concatenate([[0], np.cumsum(key_nodes)])
    key_term_off = np.concatenate([[0], np.cumsum(key_terms)])
    node_actor, node_depth, node_fold, node_jam, key_root = [], [], [], [], []
    term_ndeal, term_deal, term_out, term_orders, key_outcomes = [], [], [], [], []

    def ref(child) -> int:
        return child[1] if child[0] == "node" else -1 - child[1]

    for k in range(K):
        tree, omaps, deals = structures[k]
        key_root.append(ref(tree.root))
        for nd in tree.nodes:
            node_actor.append(nd.actor)
            node_depth.append(len(nd.jammers_before))
            node_fold.append(ref(nd.fold_child))
            node_jam.append(ref(nd.jam_child))
        total = 0
        for deal, omap in zip(deals, omaps):
            term_ndeal.append(len(deal))
            term_deal.append(list(deal) + [-1] * (3 - len(deal)))
            term_out.append(total)
            term_orders.append(len(omap))
            total += len(omap)
        key_outcomes.append(total)

    layer_start = np.zeros(players + 2, np.int64)
    for n in range(2, players + 1):
        layer_start[n + 1] = layer_start[n] + math.comb(units - 1, n - 1)
    jobs = [(units, n, lo, min(lo + chunk, math.comb(units - 1, n - 1)), players, payouts)
            for n in range(2, players + 1) for lo in range(0, math.comb(units - 1, n - 1), chunk)]
    if processes > 1 and len(jobs) > 1 and layer_start[players + 1] > chunk:
        with ProcessPoolExecutor(processes, mp_context=get_context("spawn")) as pool:
            parts = list(pool.map(_pack_states_job, jobs))
    else:
        parts = [_pack_states(*job) for job in jobs]
    state_key = np.concatenate([p[0] for p in parts])
    out_counts = np.concatenate([p[1] for p in parts])
    state_node = np.concatenate([[0], np.cumsum(key_nodes[state_key])[:-1]]).astype(np.int64)
    state_out = np.concatenate([[0], np.cumsum(out_counts)[:-1]]).astype(np.int64)
    state_stacks = np.zeros((int(layer_start[players + 1]), players), np.int16)
    for n in range(2, players + 1):
        state_stacks[layer_start[n]:layer_start[n + 1], :n] = enumerate_states(units, n)
    game = PackedGame(
        units=units, players=players, payouts=payouts, layer_start=layer_start,
        state_players=(state_key // 4 + 2).astype(np.int8), state_stacks=state_stacks, state_key=state_key,
        state_node=state_node,
        state_out=state_out, key_root=np.array(key_root, np.int16), key_node_off=key_node_off,
        key_term_off=key_term_off, key_outcomes=np.array(key_outcomes, np.int64),
        node_actor=np.array(node_actor, np.int8), node_depth=np.array(node_depth, np.int8),
        node_fold=np.array(node_fold, np.int16), node_jam=np.array(node_jam, np.int16),
        term_ndeal=np.array(term_ndeal, np.int8), term_deal=np.array(term_deal, np.int8).reshape(-1, 3),
        term_out=np.array(term_out, np.int16), term_orders=np.array(term_orders, np.int8),
        out_next=np.concatenate([p[2] for p in parts]), out_code=np.concatenate([p[3] for p in parts]),
        share=_share_table(players, payouts))
    if not np.array_equal(out_counts, game.key_outcomes[state_key]):
        raise AssertionError("outcome counts differ from the tree shapes")
    return game


def _pack_states_job(args):
    return _pack_states(*args)


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
    hand_events: dict[str, float]  # per hand: decisions, two_way and three_way showdowns (what a hand costs)
    unfinished: int  # tournaments stopped at max_hands (remaining players paid 0)
    wall_s: float

    def group_mean(self, members: Sequence[int]) -> tuple[float, float]:
        """Mean payoff per player of a group of starting positions and its standard error ($)."""
        w = np.zeros(len(self.mean))
        w[list(members)] = 1.0 / len(members)
        return float(w @ self.mean), float(math.sqrt(max(w @ self.cov @ w, 0.0) / self.tournaments))


Tensors = Union["ShowdownTensors", "SolverTensors", ShowdownSampler]
HAND_EVENTS = ("decisions", "two_way", "three_way")
"""Keys of :attr:`SimulationResult.hand_events`: per hand, the decisions (a dealt hand and its
jam/fold: a profile row read) and the showdowns of two and of three hands; they say what a hand
costs (a 3-way showdown reads a 16 MB table, every decision a 64-byte row of the profile)."""


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
    st_rec, out_rec = game.kernel_records
    nb = -(-tournaments // kernel.BLOCK)
    pay_sum = np.zeros((nb, n))
    pay_cross = np.zeros((nb, n, n))
    place_cnt = np.zeros((nb, n, n), np.int64)
    hands = np.zeros(nb, np.int64)
    unfinished = np.zeros(nb, np.int64)
    events = np.zeros((nb, 3), np.int64)
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
                               game.term_out, out_rec, game.share, sampler.win2, sampler.order3,
                               pay_sum[lo:hi], pay_cross[lo:hi], place_cnt[lo:hi], hands[lo:hi], unfinished[lo:hi],
                               events[lo:hi])
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


def default_processes() -> int:
    """Worker processes for packing: the cores numba would use."""
    return configured_threads()
