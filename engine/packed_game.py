"""The whole abstract game packed into flat arrays for the simulation kernel (SPEC §2).

:func:`pack_game` flattens every state of layers 2..players into numba-friendly arrays. A hand's
action tree depends only on the player count and on which blinds are all-in (a *key*, at most 4
per player count), so nodes and terminals are stored once per key; per state there are only the
profile rows of its nodes and the outcomes of its terminals (next state, and per old position its
new seat or its place). Global state id = ``layer_start[n]`` + the state's index in its layer
(:func:`engine.states.state_index`); the profile rows of a state are its nodes in the order of
:func:`engine.game_tree.compile_hand` (= the solver's strategy rows). The rules themselves (blinds,
side pots, eliminations, shared places, the button) come from :func:`engine.hand.hand_tree`, built
once per state: packing is the simulation's only copy of them, so it cannot drift from the solver's.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from itertools import permutations
from multiprocessing import get_context
from pathlib import Path
from typing import Sequence

import numpy as np

from engine.config import paid_places
from engine.cores import configured_threads
from engine.hand import hand_tree
from engine.states import enumerate_states, state_index


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
    def kernel_records(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(st_rec int64[S, 4], out_rec uint8[O, 16], the same outcome records as uint32[O, 4]): the
        per-state fields (players, key, first profile row, first outcome) and the per-outcome
        records of :mod:`engine.simulation_kernel`, which carry the next state's fields, so that a
        hand reads one 16-byte record between its outcome and the next state's profile rows
        (0.93 of the time with the state's record read in between; PERFORMANCE.md)."""
        from engine.simulation_kernel import MAX_SEATS, OUT_CODES, OUT_KEY, OUT_PLAYERS, OUT_RECORD_BYTES, OVER

        st_rec = np.stack([self.state_players, self.state_key, self.state_node, self.state_out], axis=1)
        if self.players > MAX_SEATS:  # (and so at most 4 · (MAX_SEATS − 1) keys, all below OVER)
            raise ValueError(f"the simulation plays at most {MAX_SEATS} players")
        if max(self.state_node.max(initial=0), self.state_out.max(initial=0)) >= 2 ** 32:
            raise ValueError("too many profile rows or outcomes for the 4-byte fields of an outcome record")
        out_rec = np.zeros((len(self.out_next), OUT_RECORD_BYTES), np.uint8)
        words = out_rec.view(np.uint32)  # (O, 4), the same memory
        nxt = self.out_next.astype(np.int64)
        live = nxt >= 0
        words[live, 0] = self.state_node[nxt[live]]
        words[live, 1] = self.state_out[nxt[live]]
        out_rec[:, OUT_KEY] = OVER
        out_rec[live, OUT_KEY] = self.state_key[nxt[live]]
        out_rec[live, OUT_PLAYERS] = self.state_players[nxt[live]]
        out_rec[:, OUT_CODES:OUT_CODES + self.players] = self.out_code.view(np.uint8)
        return np.ascontiguousarray(st_rec, dtype=np.int64), out_rec, words

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


def default_processes() -> int:
    """Worker processes for packing: the cores numba would use."""
    return configured_threads()


def _source_digest() -> str:
    """sha1 of the engine's source files (``engine/*.py`` but hidden ones, as the shell's
    ``engine/*.py`` of ``./lab``); a file that cannot be read (an editor's lock link) counts by name."""
    h = hashlib.sha1()
    for path in sorted(Path(__file__).resolve().parent.glob("*.py")):
        if path.name.startswith("."):
            continue
        try:
            content = path.read_bytes()
        except OSError:
            content = b"(unreadable)"
        h.update(path.name.encode() + b"\0" + content + b"\0")
    return h.hexdigest()[:12]


_ENGINE_DIGEST = _source_digest()  # taken at import, with the engine modules this process runs


def engine_digest() -> str:
    """A digest of the engine's source (every ``engine/*.py``, as ``./lab`` keys numba's cache) as
    it was when this process imported the engine: a packed game saved by other code may follow
    other rules, so it is never read back, and a long build whose engine files are edited while it
    runs still names its packs after the code it runs."""
    return _ENGINE_DIGEST


STALE_PACK_DAYS = 7
"""Packs made by other engine code (never read) are deleted once not used for this many days (a
read marks a pack used): two checkouts of different code sharing a cache keep theirs."""


def load_or_pack_game(folder: str | os.PathLike, units: int, players: int, payouts: Sequence[float],
                      processes: int = 1) -> tuple[PackedGame, str]:
    """:func:`pack_game`, saved in ``folder`` and read back next time: (the game, what was done, in
    words for a log line: read from the file, or packed in so many seconds and saved or not).

    The 45-unit 5-player game takes about 74 s to pack on 2 cores and under a second to read, and
    every `jamfold simulate` and `simulations` run needs it. The file is named by the game (units,
    players, payouts without trailing zeros) and by :func:`engine_digest`, so a pack made by other
    engine code is never read (and is deleted once unused for :data:`STALE_PACK_DAYS`, by the next
    run of any game there). A file that cannot be read (or holds another game) is packed again and
    replaced; a folder that cannot be read, made or written (a full disk, a read-only checkout)
    only costs the next run the packing.
    """
    prizes = paid_places(payouts)
    folder = Path(folder)
    game_tag = hashlib.sha1(json.dumps([int(units), int(players), prizes]).encode()).hexdigest()[:10]
    path = folder / f"{players}p{units}u-{game_tag}-{engine_digest()}.npz"
    try:
        game = PackedGame.load(path)
    except Exception:  # missing, unreadable or damaged in any way numpy's reader can report: packed below
        game = None
    if game is not None and (game.units, game.players, paid_places(game.payouts)) == (units, players, prizes):
        _tidy(folder, used=path)
        return game, f"read from {path}"
    t0 = time.perf_counter()
    game = pack_game(units, players, payouts, processes=processes)
    done = f"packed in {time.perf_counter() - t0:.1f} s"
    if processes > 1 and _source_digest() != engine_digest():  # the workers imported the engine anew
        return game, f"{done} (not saved for the next run: the engine's source changed since this process started)"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        game.save(path)
    except OSError as exc:
        return game, f"{done} (not saved for the next run: {exc})"
    _tidy(folder, used=path)
    return game, f"{done}, saved to {path}"


def _tidy(folder: Path, used: Path) -> None:
    """Mark ``used`` as used now, and delete the temporaries of dead writers and the packs of other
    engine code unused for :data:`STALE_PACK_DAYS`; a file that cannot be touched or deleted (another
    user's, in a shared cache) is left as it is."""
    from engine.atomic_files import drop_dead_temporaries

    stale = time.time() - STALE_PACK_DAYS * 86400
    mine = f"-{engine_digest()}.npz"
    try:
        os.utime(used)
    except OSError:
        pass
    try:
        drop_dead_temporaries(folder)
    except OSError:
        pass
    try:
        packs = list(folder.glob(f"*-{'?' * 12}.npz"))
    except OSError:
        return
    for old in packs:
        try:
            if not old.name.endswith(mine) and old.stat().st_mtime < stale:
                old.unlink()
        except OSError:
            continue
