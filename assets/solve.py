"""Equilibrium assets: one PI-CFR+ solve per layer (2, 3, 4, 5 players), SPEC §5–6.

Each layer asset reads the showdown tables and the smaller layers' values from the warehouse,
solves its layer (resuming from `.cache/solve/<game>-<config hash>/` after an interrupt), and
writes values, strategies, per-state exploitability and the solve log of its layer (the finishing
probabilities are `finishing_2p` … `finishing_5p`, :mod:`assets.finishing`). Layers above the game's
player count report that they do not apply.
"""

import hashlib
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import pandas as pd

from assets.models import game_states
from assets.resources import GameResource, WarehouseResource, blocking_checks, open_prize_sums, skipped_layer
from assets.resume import game_cache_dir, games_with_equilibrium
from assets.rollout import load_tables, rollout_pairs, rollout_triples
from engine.checkpoint import LOG_FIELDS, finished_layer, folder_lock, lower_fingerprint
from engine.config import GameConfig, position_names
from engine.hand import hand_tree
from engine.hand_pass import SolverTensors
from engine.memory import memory_shortfall
from engine.rollout import PairTable, TripleTable
from engine.showdown import showdown_tensors
from engine.solve_progress import layer_log_line
from engine.states import n_states
from engine.target_ladder import values_cycling
from engine.tournament import LayerSolution, solve_layer
from warehouse import db

LAYERS = (2, 3, 4, 5)
REOPEN_REMEDY = ("run the same build again: it reopens the layer and tries the states above gamma again with a "
                 "larger CFR+ iteration cap (engine.tournament.HELD_RETRIES)")
CYCLE_REMEDY = ("PI-CFR+ does not settle on this game: the layer's values cycled instead (its solve log's last "
                "outer iterations each moved them by over 1 % of the prize money; "
                "engine.target_ladder.values_cycling), and the layer is kept as it ended: building again does not "
                "change it. Games with flat top prizes, such as 50/50/0, do this: choose prizes that differ more")
LAYER_CHECKS = {
    "values_sum_to_open_prizes": "every state of the layer has a value for each position, and they sum to the "
                                 "prizes of the places still open (within 1e-6 $)",
    "exploitability_within_gamma": "every state's hand is at most gamma $ exploitable under the layer's final "
                                   "values (measured exactly); says how many states are over or unmeasured",
}


PRIMARY_TABLE = "equilibrium_values"
"""The table whose rows a layer's solve reports as its row count and whose columns the Dagster UI
shows (it writes `equilibrium_nodes`, `state_quality` and `solve_log` too; their counts are
metadata beside it)."""


TENSORS_HELD = 2
"""Solver tensors a process keeps (about 0.7 GB each for a game of three or more players, whatever
its size: the 169³ showdown tensors; a heads-up game's, without them, about 1 MB)."""
_tensors_by_tables: OrderedDict[str, SolverTensors] = OrderedDict()
_tables_at: dict[tuple[str, str], str] = {}  # (warehouse, game config) -> digest of the tables read there


def equilibrium_tensors(warehouse_path: str, cfg: GameConfig) -> SolverTensors:
    """Solver tensors from the game's showdown tables in the warehouse.

    Kept per process by the tables' content: every asset of a build asks for them, and a build
    into another warehouse with the same tables (each test's tiny build, a sibling game) reads the
    tables again (0.3 s) but does not remake the tensors (4 s for any game of three or more players)."""
    place = (str(warehouse_path), cfg.to_json())
    digest = _tables_at.get(place)
    if digest not in _tensors_by_tables:
        # read-only: it only reads, and every caller has closed its own connection by now (DuckDB
        # refuses a second connection of another configuration to a file the process holds open)
        with db.session(warehouse_path, read_only=True) as con:
            pairs, triples = load_tables(con, cfg)
        digest = _tables_at[place] = _tables_digest(pairs, triples)
        if digest not in _tensors_by_tables:
            _tensors_by_tables[digest] = SolverTensors(showdown_tensors(pairs, triples))
            while len(_tensors_by_tables) > TENSORS_HELD:
                _tensors_by_tables.popitem(last=False)
    _tensors_by_tables.move_to_end(digest)
    return _tensors_by_tables[digest]


def _tables_digest(pairs: PairTable, triples: TripleTable | None) -> str:
    """A digest of what :func:`engine.showdown.showdown_tensors` reads from the two tables (None:
    no triple table, a heads-up game's tensors)."""
    h = hashlib.blake2b(digest_size=16)
    columns = [pairs.a, pairs.b, pairs.weight, pairs.p_first_wins]
    if triples is not None:
        columns += [triples.a, triples.b, triples.c, triples.weight, triples.p]
    for column in columns:
        h.update(str((column.dtype, column.shape)).encode())
        h.update(np.ascontiguousarray(column).tobytes())
    return h.hexdigest()


def checkpoint_dir(cfg: GameConfig) -> Path:
    return game_cache_dir("solve", cfg)


def read_layer_table(con: duckdb.DuckDBPyConnection, cfg: GameConfig, n: int, table: str, column: str,
                     m: int | None = None, places: int | None = None) -> np.ndarray:
    """One layer's (states, n) table — or (states, n, places) with ``places`` — from the warehouse."""
    df = con.execute(f"SELECT * FROM {table} WHERE game = ? AND players = ?", [cfg.name, n]).df()
    m = int(df["state_id"].max()) + 1 if m is None else m
    if places is None:
        arr = np.zeros((m, n))
        arr[df["state_id"], df["position"]] = df[column]
    else:
        arr = np.zeros((m, n, places))
        arr[df["state_id"], df["position"], df["place"] - 1] = df[column]
    return arr


def lower_layers(con: duckdb.DuckDBPyConnection, cfg: GameConfig, n: int, table: str, column: str,
                 asset: str, what: str, places: int | None = None) -> dict[int, np.ndarray]:
    """The layers below n of a per-layer table ({players: array}, as :func:`read_layer_table` reads them).

    Each must be whole in the warehouse (k values a state, or k × k probabilities with ``places``),
    or this fails naming ``{asset}_{k}p`` to materialize first: from the Dagster UI a layer's asset
    can run before those below it, and a missing layer read as zeros would value its successors at 0
    (``what``: what the rows are, for the message)."""
    held = dict(con.execute(f"SELECT players, count(*) FROM {table} WHERE game = ? AND players < ? GROUP BY players",
                            [cfg.name, n]).fetchall())
    for k in range(2, n):
        expected = n_states(cfg.units, k) * k * (1 if places is None else k)
        if held.get(k, 0) != expected:
            raise dg.Failure(description=f"{asset}_{n}p: the {k}-player layer's {what} are not in the warehouse "
                                         f"({held.get(k, 0):,} of {expected:,} rows); materialize {asset}_{k}p first "
                                         f"(they are this layer's successors' {what})", allow_retries=False)
    return {k: read_layer_table(con, cfg, k, table, column, places=places) for k in range(2, n)}


def require_strategies(con: duckdb.DuckDBPyConnection, cfg: GameConfig, asset: str,
                       profiles: Iterable[str | None] = (None,), layers: Iterable[int] | None = None) -> None:
    """Fail, naming the asset to materialize first, unless every state of ``layers`` (default: all
    of the game's) has its strategies for each of ``profiles``: None for the equilibrium (a layer's
    `equilibrium_nodes` are written by ``solve_<n>p`` with its `state_quality`, one row a state), a
    model's name for its sweep (`model_nodes`, written with the sweep's `model_sweeps` row of the
    layer, which counts its states; a state whose hand has no decision has no node rows).

    From the Dagster UI a follow-up (finishing probabilities, an ex post check, the simulations) can
    run before the solve or the sweep it reads. Read anyway, a missing layer would reach the compiled
    kernels as empty (0 × 169) strategies, which they index unchecked: garbage or a crash, not an
    error. So this runs before any heavy work (hand trees, tables)."""
    layers = list(range(2, cfg.players + 1)) if layers is None else list(layers)
    held = {(None, n): k for n, k in con.execute(
        "SELECT players, count(*) FROM state_quality WHERE game = ? GROUP BY players", [cfg.name]).fetchall()}
    held.update({(m, n): k for m, n, k in con.execute(
        "SELECT model, players, states FROM model_sweeps WHERE game = ?", [cfg.name]).fetchall()})
    for profile in profiles:
        for n in layers:
            m, have = n_states(cfg.units, n), held.get((profile, n), 0)
            if have != m:
                whose, source = ("the equilibrium's", f"solve_{n}p") if profile is None else \
                    (f"model {profile}'s", "fgs_strategies" if profile.startswith("FGS-") else "model_strategies")
                raise dg.Failure(description=f"{asset}: {whose} strategies of the {n}-player layer are not in the "
                                             f"warehouse ({have:,} of {m:,} states); materialize {source} first",
                                 allow_retries=False)


NODE_ROW_STATES = 2_000
"""States per frame of node rows (`equilibrium_nodes`, `model_nodes`; at most 65 MB of strategies
for 5-player states): a layer's rows are written frame by frame in one transaction, never as one
copy of the whole layer (3 million rows for the 45-unit 5-player layer)."""


def _node_rows(cfg: GameConfig, sol: LayerSolution) -> Iterator[pd.DataFrame]:
    names = position_names(sol.players)
    for lo in range(0, len(sol.stacks), NODE_ROW_STATES):
        nodes = []
        for s in range(lo, min(lo + NODE_ROW_STATES, len(sol.stacks))):
            tree = hand_tree(tuple(int(x) for x in sol.stacks[s]), cfg.payouts)
            for k, node in enumerate(tree.nodes):
                nodes.append((s, k, node.actor, names[node.actor], [names[j] for j in node.jammers_before],
                              sol.strategy[s][k]))
        yield pd.DataFrame(nodes, columns=["state_id", "node", "actor", "actor_name", "jammed_before", "jam"])


def write_layer(con: duckdb.DuckDBPyConnection, cfg: GameConfig, sol: LayerSolution) -> dict:
    """Write one solved layer's tables, all four in one transaction (a reader never sees a layer's
    values without its strategies or exploitability); returns row counts."""
    n, m = sol.players, len(sol.stacks)
    key = {"game": cfg.name, "players": n}
    sid, pos = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
    return db.replace_tables(con, [
        db.Replacement("equilibrium_values", pd.DataFrame(
            {"state_id": sid.ravel(), "position": pos.ravel(), "value": sol.values.ravel()}), key),
        db.Replacement("equilibrium_nodes", _node_rows(cfg, sol), key),
        db.Replacement("state_quality", pd.DataFrame(
            {"state_id": np.arange(m), "exploitability": sol.exploitability, "cfr_iterations": sol.iterations}), key),
        db.Replacement("solve_log", pd.DataFrame(sol.log).drop(columns=["players"]), key)])


def _check_layer(con, cfg: GameConfig, n: int) -> list[dg.AssetCheckResult]:
    """The layer's invariants, read back from the warehouse. A state without its full rows fails
    both checks: a check over missing rows would otherwise pass on nothing."""
    open_prize = float(sum(cfg.payouts[:n]))
    m = n_states(cfg.units, n)
    err, complete = open_prize_sums(con, "equilibrium_values", "value", cfg, players=n)
    worst, over, measured = con.execute(
        """SELECT coalesce(max(exploitability), 0),
                  count(*) FILTER (WHERE exploitability > ? OR exploitability IS NULL), count(DISTINCT state_id)
           FROM state_quality WHERE game = ? AND players = ?""", [cfg.gamma, cfg.name, n]).fetchone()
    over += m - measured  # a state with no measured exploitability is not within gamma
    log = con.execute("SELECT target, states_updated, max_delta_v FROM solve_log WHERE game = ? AND players = ? "
                      "ORDER BY outer_iteration", [cfg.name, n]).df().to_dict("records")
    cycled = values_cycling(log, open_prize)
    return [
        dg.AssetCheckResult(check_name="values_sum_to_open_prizes", passed=bool(err <= 1e-6 and complete == m),
                            metadata={"max_error_usd": float(err), "open_prizes": open_prize,
                                      "states_with_all_values": int(complete), "states": m}),
        dg.AssetCheckResult(check_name="exploitability_within_gamma", passed=bool(over == 0),
                            metadata={"max_exploitability_usd": float(worst), "gamma_usd": cfg.gamma,
                                      "states_over": int(over), "states": m,
                                      **({"values_cycled": True} if cycled else {}),
                                      **({"remedy": CYCLE_REMEDY if cycled else REOPEN_REMEDY} if over else {})}),
    ]


def held_in_warehouse(con: duckdb.DuckDBPyConnection, cfg: GameConfig, n: int,
                      lower_values: dict[int, np.ndarray]) -> bool:
    """Whether the warehouse already holds what the layer's finished checkpoint holds: the same
    values (to the bit) and solve log, solved against the smaller layers' values the warehouse has
    now, with every state's rows there and within gamma. A rebuild or a resumed build then has
    nothing to do for the layer; solving it would compile its hands, read its checkpoint back and
    write its rows again (on the 45-unit 5-player layer about 2-5 minutes of hands, 15 GB of
    checkpoint and 3.3 million node rows, at every resume of a build that spans days). A layer
    finished above gamma is not held (its solve retries those states)."""
    saved = finished_layer(checkpoint_dir(cfg), n)
    if saved is None:
        return False
    values, log, lower, nodes = saved
    m = n_states(cfg.units, n)
    if lower != lower_fingerprint(lower_values) or values.shape != (m, n):
        return False
    count, = con.execute("SELECT count(*) FROM equilibrium_values WHERE game = ? AND players = ?",
                         [cfg.name, n]).fetchone()
    if count != m * n or not np.array_equal(read_layer_table(con, cfg, n, "equilibrium_values", "value", m), values):
        return False
    fields = [k for k in LOG_FIELDS if k != "players"]
    stored = con.execute(f"SELECT {', '.join(fields)} FROM solve_log WHERE game = ? AND players = ? "
                         "ORDER BY outer_iteration", [cfg.name, n]).fetchall()
    if stored != [tuple(e[k] for k in fields) for e in log]:
        return False
    measured, within, node_rows = con.execute(
        """SELECT count(DISTINCT state_id), count(*) FILTER (WHERE exploitability <= ?),
                  (SELECT count(*) FROM equilibrium_nodes WHERE game = ? AND players = ?)
           FROM state_quality WHERE game = ? AND players = ?""", [cfg.gamma, cfg.name, n, cfg.name, n]).fetchone()
    return measured == within == m and node_rows == nodes


LAYER_TABLES = ("equilibrium_values", "equilibrium_nodes", "state_quality", "solve_log")  # (as write_layer writes them)


def held_by_another_game(con: duckdb.DuckDBPyConnection, cfg: GameConfig, n: int,
                         lower_values: dict[int, np.ndarray]) -> str | None:
    """The name of another game in the warehouse with the same equilibrium that holds the layer as
    its finished checkpoint (shared, :func:`assets.resume.game_key`) has it (:func:`held_in_warehouse`),
    or None. A build of `thesis` with an analysis flag (`thesis-<hash>`) then copies its rows in
    the warehouse instead of compiling its hands, reading the checkpoint back and writing them."""
    for other in games_with_equilibrium(con, cfg):
        if held_in_warehouse(con, replace(cfg, name=other), n, lower_values):
            return other
    return None


def _layer_asset(n: int, previous):
    name = f"solve_{n}p"
    deps = [rollout_pairs, rollout_triples, game_states] + ([previous] if previous is not None else [])

    @dg.asset(name=name, group_name="equilibrium", kinds={"numba", "duckdb"}, deps=deps,
              check_specs=blocking_checks(name, LAYER_CHECKS),
              description=f"PI-CFR+ equilibrium of the {n}-player layer: values (`equilibrium_values`), strategies "
                          f"(`equilibrium_nodes`, view `equilibrium_jam`), per-state exploitability (`state_quality`), "
                          f"outer-iteration log (`solve_log`). Resumable.")
    def layer(context: dg.AssetExecutionContext, game: GameResource, warehouse: WarehouseResource) -> dg.MaterializeResult:
        cfg = game.config()
        if n > cfg.players:
            return skipped_layer(cfg, LAYER_CHECKS)
        why = memory_shortfall(cfg.players, cfg.units)  # refused at the first layer, not hours later
        if why is not None:
            raise dg.Failure(description=f"{name}: {why}", allow_retries=False)
        t0 = time.perf_counter()
        with warehouse.connect() as con:
            lower_values = lower_layers(con, cfg, n, "equilibrium_values", "value", "solve", "equilibrium values")
        with folder_lock(checkpoint_dir(cfg), f"the {n}-player layer's solve"), warehouse.connect() as con:
            if held_in_warehouse(con, cfg, n, lower_values):
                context.log.info(f"{n}-player layer: solved, and in the warehouse as its finished checkpoint holds "
                                 "it (the same values and solve log): nothing to solve, read back or write")
                return _held_result(con, cfg, n, time.perf_counter() - t0)
            other = held_by_another_game(con, cfg, n, lower_values)
            if other is not None:
                t_copy = time.perf_counter()
                rows = db.copy_rows(con, LAYER_TABLES, {"game": other, "players": n}, {"game": cfg.name, "players": n})
                context.log.info(f"{n}-player layer: solved, and in the warehouse under game '{other}' (the same "
                                 f"equilibrium): its {sum(rows.values()):,} rows copied in "
                                 f"{time.perf_counter() - t_copy:.1f} s; nothing to solve or read back")
                return _held_result(con, cfg, n, time.perf_counter() - t0, copied_from=other)
        tensors = equilibrium_tensors(warehouse.path, cfg)
        computed = ["in this run"]  # what this materialization did, for its metadata

        def progress(event: dict) -> None:
            computed[0] = computed_after(computed[0], event, n)
            line = layer_log_line(event)
            if line is not None:
                (context.log.warning if line[0] == "warning" else context.log.info)(line[1])

        sol = solve_layer(cfg.units, n, cfg.payouts, cfg.gamma, tensors, lower_values,
                          checkpoint=checkpoint_dir(cfg), progress=progress)
        context.log.info(f"{n}-player layer: writing its values, strategies, exploitability and log to the warehouse")
        t_write = time.perf_counter()
        with warehouse.connect() as con:
            rows = write_layer(con, cfg, sol)
            context.log.info(f"{n}-player layer: {sum(rows.values()):,} rows written in "
                             f"{time.perf_counter() - t_write:.0f} s")
            checks = _check_layer(con, cfg, n)
            preview = db.preview_markdown(con, """
                SELECT s.stacks, s.positions, list(round(v.value, 4) ORDER BY v.position) AS equilibrium
                FROM equilibrium_values v JOIN states s USING (game, players, state_id)
                WHERE v.game = ? AND v.players = ? GROUP BY ALL ORDER BY s.stacks""", [cfg.name, n])
        wall = time.perf_counter() - t0
        return dg.MaterializeResult(
            metadata={"game": cfg.name, "computed": computed[0], "states": len(sol.stacks),
                      "outer_iterations": len(sol.log), "cfr_iterations": int(sol.iterations.sum()),
                      "exact_checks_in_outer_iterations": sol.exact_checks,
                      "max_exploitability_usd": float(sol.exploitability.max()), "gamma_usd": cfg.gamma,
                      "outer_iterations_wall_s": round(sum(e["wall_s"] for e in sol.log), 2),
                      "wall_s": round(wall, 2), **{f"rows_{k}": v for k, v in rows.items()},
                      "dagster/row_count": rows[PRIMARY_TABLE], "preview": dg.MetadataValue.md(preview)},
            check_results=checks)

    return layer


def computed_after(computed: str, event: dict, n: int) -> str:
    """The `computed` metadata of the ``n``-player layer's solve once its progress ``event`` has come:
    how much of the layer this run solved, and how much it took from the layer's checkpoint."""
    if event.get("players") != n:
        return computed
    if event.get("event") == "resumed":
        return ("read back solved from its checkpoint (an earlier run solved it)" if event["finished"]
                else f"resumed from its checkpoint after outer iteration {event['outer']}")
    if event.get("event") == "retrying_held" and computed.startswith("read back"):
        return "read back from its checkpoint, its states above gamma solved again in this run"
    return computed


def _held_result(con: duckdb.DuckDBPyConnection, cfg: GameConfig, n: int, wall: float,
                 copied_from: str | None = None) -> dg.MaterializeResult:
    """The materialization of a layer the warehouse already holds (:func:`held_in_warehouse`), or
    has just copied from game ``copied_from`` (:func:`held_by_another_game`): its counts read from
    its rows, and its checks run on them as after a solve."""
    unchanged = ("the warehouse already holds this finished layer's checkpoint: nothing solved, read back or written"
                 if copied_from is None else
                 f"copied in the warehouse from game '{copied_from}', which holds this finished layer's checkpoint: "
                 "nothing solved or read back")
    outer, checks_done, outer_wall = con.execute("SELECT count(*), sum(states_checked), sum(wall_s) FROM solve_log "
                                                 "WHERE game = ? AND players = ?", [cfg.name, n]).fetchone()
    its, worst = con.execute("SELECT sum(cfr_iterations), max(exploitability) FROM state_quality WHERE game = ? "
                             "AND players = ?", [cfg.name, n]).fetchone()
    rows = {table: con.execute(f"SELECT count(*) FROM {table} WHERE game = ? AND players = ?",
                               [cfg.name, n]).fetchone()[0] for table in LAYER_TABLES}
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "computed": "in an earlier run (the warehouse holds it)" if copied_from is None
                  else f"copied in the warehouse from game '{copied_from}', which holds it",
                  "states": n_states(cfg.units, n), "outer_iterations": int(outer), "cfr_iterations": int(its),
                  "exact_checks_in_outer_iterations": int(checks_done), "max_exploitability_usd": float(worst),
                  "gamma_usd": cfg.gamma, "outer_iterations_wall_s": round(float(outer_wall), 2),
                  "wall_s": round(wall, 2), **{f"rows_{k}": v for k, v in rows.items()},
                  "dagster/row_count": rows[PRIMARY_TABLE], "unchanged": unchanged},
        check_results=_check_layer(con, cfg, n))


def _build():
    out, prev = [], None
    for n in LAYERS:
        prev = _layer_asset(n, prev)
        out.append(prev)
    return out


LAYER_ASSETS = _build()


LAYER_FIRST = {"dagster/priority": "1"}
"""Op tags of the assets that follow a layer's solve (finishing probabilities, ex post): Dagster
runs a ready step of higher priority first, so each runs as soon as its layer is solved, before the
next layer's solve, and a build stopped in its 5-player solve has the smaller layers' results."""


def per_layer_asset(name: str, deps: list, checks: dict[str, str], description: str) -> Callable:
    """The ``@dg.asset`` decorator of an asset that follows a layer's solve: group "equilibrium",
    :data:`LAYER_FIRST` priority, and ``checks`` (name → what it asserts) as blocking checks."""
    return dg.asset(name=name, group_name="equilibrium", kinds={"numba", "duckdb"}, deps=deps, op_tags=LAYER_FIRST,
                    check_specs=blocking_checks(name, checks), description=description)


def per_layer_chain(make: Callable[[int, list], dg.AssetsDefinition]) -> list[dg.AssetsDefinition]:
    """One asset per layer from ``make(n, deps)``, where deps are the layer's solve and the same
    asset of the layer below (its successors' results)."""
    out: list[dg.AssetsDefinition] = []
    for solve_asset, n in zip(LAYER_ASSETS, LAYERS):
        out.append(make(n, [solve_asset, *out[-1:]]))
    return out
