"""Ex post check of the equilibrium (SPEC §6): nemesis values over every state of the solved game.

One asset per layer (`ex_post_2p` … `ex_post_5p`), each run as soon as its layer is solved and the
layer below it checked: it reads the layer's equilibrium strategies and values and the smaller
layers' nemesis values from the warehouse, runs the nemesis policy iteration of
:mod:`engine.best_response` and writes the layer's `nemesis_values` (one row per state and
position; the view `ex_post` summarises them). A rebuild against the same equilibrium up to the
layer (:func:`equilibrium_fingerprint`) keeps the rows it wrote (:mod:`assets.resume`).
"""

import time

import dagster as dg
import duckdb
import numpy as np
import pandas as pd

from assets.paths import EQUILIBRIUM, ex_post_unit
from assets.resources import GameResource, WarehouseResource, skipped_layer
from assets.resume import (KEPT_UNIT_COMPUTED, UnitCheckpoint, game_cache_dir, rows_digest, rows_of_kept_unit,
                           warehouse_rows_digest)
from assets.solve import equilibrium_tensors, per_layer_asset, per_layer_chain, read_layer_table, require_strategies
from engine.best_response import nemesis_layer
from engine.config import GameConfig
from engine.solve_progress import nemesis_log_line
from engine.layers import compile_layer
from engine.states import n_states
from warehouse import db

PROFILE = EQUILIBRIUM
CHECKS = {
    "nemesis_at_least_profile": "the nemesis gains at least 0 over the profile in every (state, seat) (within 1e-8 $): "
                                "a best response never does worse",
    "policy_iteration_converged": "the nemesis' values solve his Bellman equation (largest residual within 1e-8 $)",
}


STRATEGY_READ_STATES = 2048
"""States per query of :func:`read_strategies`: about 66 MB of 5-player strategies a query."""


def read_strategies(con: duckdb.DuckDBPyConnection, game: str, n: int, m: int,
                    model: str | None = None) -> list[np.ndarray]:
    """Per state, the (nodes × 169) jam probabilities of the equilibrium (`equilibrium_nodes`) or of a model.

    The states' arrays are consecutive row blocks of one (rows, 169) float64 array, filled a block
    of :data:`STRATEGY_READ_STATES` states per query. The 45-unit 5-player layer has about 3
    million node rows, 500 million probabilities (4 GB as float64, about 16 GB as Python floats);
    read in one sorted query fetched as numpy arrays of lists, synthetic rows of that size took
    13.8 GiB at the peak for 4.1 GiB of arrays; read in pieces under :func:`db.capped_memory`,
    4.47 GiB.
    """
    table, where, params = ("equilibrium_nodes", "", [game, n]) if model is None else \
        ("model_nodes", " AND model = ?", [game, n, model])
    sids, nodes = con.execute(f"SELECT state_id, count(*) FROM {table} WHERE game = ? AND players = ?{where} "
                              "GROUP BY state_id", params).fetchnumpy().values()
    counts = np.zeros(m, dtype=np.int64)
    counts[np.asarray(sids, dtype=np.int64)] = np.asarray(nodes, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)])
    jam = np.empty((int(starts[-1]), 169))
    with db.capped_memory(con):
        for lo in range(0, m, STRATEGY_READ_STATES):
            hi = min(m, lo + STRATEGY_READ_STATES)
            if starts[hi] == starts[lo]:
                continue
            block = con.execute(f"SELECT jam FROM {table} WHERE game = ? AND players = ?{where} "
                                "AND state_id >= ? AND state_id < ? ORDER BY state_id, node",
                                [*params, lo, hi]).fetchnumpy()["jam"]
            jam[starts[lo]:starts[hi]] = np.stack(block)
    return np.split(jam, starts[1:-1])


def equilibrium_fingerprint(con: duckdb.DuckDBPyConnection, game: str, max_players: int = 99) -> str | None:
    """A digest of the game's equilibrium as the warehouse holds it, over its layers of at most
    ``max_players`` players: every state's exactly measured exploitability ($) and CFR+ iterations
    (None before a solve). A layer read back from its checkpoint, or solved again on the same path,
    gives the same digest; any other solve changes it."""
    return rows_digest(con, "SELECT players, state_id, exploitability, cfr_iterations FROM state_quality "
                            "WHERE game = ? AND players <= ? ORDER BY players, state_id", [game, max_players])


def nemesis_frame(result: dict, values: dict[int, np.ndarray]) -> pd.DataFrame:
    """`nemesis_values` rows (without game and profile) from :func:`engine.best_response.ex_post`'s
    result and the profile's own values ($) per layer."""
    frames = []
    for n, (W, _) in result.items():
        V = values[n]
        sid, pos = np.meshgrid(np.arange(len(V)), np.arange(n), indexing="ij")
        frames.append(pd.DataFrame({"players": n, "state_id": sid.ravel(), "position": pos.ravel(),
                                    "profile_value": V.ravel(), "nemesis_value": W.ravel(), "gain": (W - V).ravel()}))
    return pd.concat(frames, ignore_index=True)


def lower_nemesis_values(con: duckdb.DuckDBPyConnection, cfg: GameConfig, n: int) -> dict[int, np.ndarray]:
    """The equilibrium's nemesis values ($, states × positions) in every layer below n, from
    `nemesis_values`: the values an outcome of an n-player hand hands the nemesis on to."""
    out = {}
    for k in range(2, n):
        df = con.execute("SELECT state_id, position, nemesis_value FROM nemesis_values "
                         "WHERE game = ? AND profile = ? AND players = ?", [cfg.name, PROFILE, k]).df()
        m = n_states(cfg.units, k)
        if len(df) != k * m:
            raise dg.Failure(f"ex_post_{n}p: the {k}-player layer's nemesis values are not in the warehouse "
                             f"({len(df)} of {k * m} rows); materialize ex_post_{k}p first "
                             f"(this layer's nemesis goes on into it)")
        W = np.zeros((m, k))
        W[df["state_id"], df["position"]] = df["nemesis_value"]
        out[k] = W
    return out


def ex_post_checks(record: dict) -> list[dg.AssetCheckResult]:
    """The nemesis checks of a checked profile (the equilibrium's layer, or a model's profile):
    ``record["min_gain"]`` the least nemesis gain ($; a best response never does worse than the
    profile, up to rounding) and ``record["worst_residual"]`` the Bellman residual its policy
    iteration ended with ($)."""
    return [
        dg.AssetCheckResult(check_name="nemesis_at_least_profile", passed=bool(record["min_gain"] >= -1e-8),
                            metadata={"min_gain_usd": record["min_gain"]}),
        dg.AssetCheckResult(check_name="policy_iteration_converged", passed=bool(record["worst_residual"] <= 1e-8),
                            metadata={"bellman_residual_usd": record["worst_residual"]}),
    ]


def _ex_post_asset(n: int, deps: list) -> dg.AssetsDefinition:
    name = f"ex_post_{n}p"

    @per_layer_asset(name, deps, CHECKS,
                     f"Tournament exploitability of the equilibrium in the {n}-player layer: a nemesis "
                     f"best-responds over the whole remaining tournament (policy iteration over state × seat, "
                     f"on into the smaller layers' nemesis values). Table `nemesis_values`, summary view "
                     f"`ex_post`.")
    def layer_ex_post(context: dg.AssetExecutionContext, game: GameResource,
                      warehouse: WarehouseResource) -> dg.MaterializeResult:
        cfg = game.config()
        if n > cfg.players:
            return skipped_layer(cfg, CHECKS)
        t0 = time.perf_counter()
        m = n_states(cfg.units, n)
        unit = ex_post_unit(n)
        with warehouse.connect() as con:
            done = UnitCheckpoint(game_cache_dir("ex_post", cfg),
                                  {"equilibrium": equilibrium_fingerprint(con, cfg.name, max_players=n)})
            kept = con.execute("SELECT count(*) FROM nemesis_values WHERE game = ? AND profile = ? AND players = ?",
                               [cfg.name, PROFILE, n]).fetchone()[0]
            lower = lower_nemesis_values(con, cfg, n)
            require_strategies(con, cfg, name, layers=[n])
        record = done.load(unit)
        key = {"game": cfg.name, "profile": PROFILE, "players": n}
        computed = "in this run"
        if record is not None:  # checked by an earlier run for this equilibrium (maybe for a game of another name)
            with warehouse.connect() as con:
                found = rows_of_kept_unit(con, done, unit, record, "nemesis_values", key, n * m, kept)
            if found is None:
                record = None
            else:
                kept = n * m
                computed = KEPT_UNIT_COMPUTED[found]
                context.log.info(f"{n}-player layer: the nemesis values of this equilibrium are in the warehouse "
                                 f"already ({kept} rows)" if found == "held" else
                                 f"{n}-player layer: the nemesis values of this equilibrium, checked for a "
                                 f"game with the same equilibrium, taken from its checkpoint ({kept} rows)")
        if record is None:
            tensors = equilibrium_tensors(warehouse.path, cfg)
            stacks, hands = compile_layer(cfg.units, n, cfg.payouts)
            with warehouse.connect() as con:
                values = read_layer_table(con, cfg, n, "equilibrium_values", "value", len(stacks))
                strategies = read_strategies(con, cfg.name, n, len(stacks))
            W, log = nemesis_layer(hands, strategies, values, lower, tensors,
                                   progress=lambda event: context.log.info(nemesis_log_line(event)),
                                   checkpoint=done.work_dir(unit))
            frame = nemesis_frame({n: (W, log)}, {n: values})
            record = {"min_gain": float(frame["gain"].min()), "max_gain": float(frame["gain"].max()),
                      "mean_gain": float(frame["gain"].mean()), "worst_residual": log[-1]["bellman_residual"],
                      "rounds": len(log)}
            with warehouse.connect() as con:
                kept = db.replace_rows(con, "nemesis_values", frame, key)
                record["rows_digest"] = warehouse_rows_digest(con, "nemesis_values", key)
            done.save(unit, record, rows=frame)
            context.log.info(f"{n}-player layer: nemesis values of {m:,} states in {record['rounds']} rounds, "
                             f"{time.perf_counter() - t0:.1f} s; largest gain {record['max_gain']:.6f} $")
        with warehouse.connect() as con:
            summary = con.execute("SELECT * FROM ex_post WHERE game = ? AND profile = ?", [cfg.name, PROFILE]).df()
            held, = con.execute("SELECT list(DISTINCT players ORDER BY players) FROM nemesis_values "
                                "WHERE game = ? AND profile = ?", [cfg.name, PROFILE]).fetchone()
        # the view sums every layer the warehouse holds; its start_* columns fill in with the start's layer
        caption = (f"The game's `ex_post` view, over the layers whose nemesis values the warehouse holds "
                   f"({', '.join(f'{k}p' for k in held)})"
                   + (f"; its start_* columns stay empty until the start state's {cfg.players}-player layer is "
                      f"checked." if summary["start_mean_gain"].isna().all() else "."))
        return dg.MaterializeResult(
            metadata={"game": cfg.name, "computed": computed, "rows": kept, "dagster/row_count": kept,
                      "layer_max_gain_usd": record["max_gain"], "layer_mean_gain_usd": record["mean_gain"],
                      "rounds": record["rounds"], "wall_s": round(time.perf_counter() - t0, 2),
                      "summary": dg.MetadataValue.md(caption + "\n\n" + db.frame_markdown(summary, decimals=6))},
            check_results=ex_post_checks(record))

    return layer_ex_post


EX_POST_ASSETS = per_layer_chain(_ex_post_asset)
"""ex_post_2p … ex_post_5p: each layer's check needs its layer solved and the layers below it checked."""
