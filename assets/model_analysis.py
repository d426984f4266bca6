"""The equity models' strategy profiles (SPEC §7.1): the ICM family's sweeps, and what every model
sweep shares.

`model_strategies` solves every state's hand once per ICM-family model with the successor states
valued by the model: Harville warm-started from the equilibrium's regrets (taking over its
solvers), Weitzman and Roberts from Harville's. It writes `model_nodes` and `model_sweeps` as
each sweep finishes. Memory stays at one layer of solvers and one sweep's strategies: Weitzman's
and Roberts' solvers are made and dropped state by state, and a stored sweep's strategies are
released. Every finished layer of every sweep is checkpointed in `.cache/models/` (see
:mod:`engine.sweep_checkpoint`), so an interrupted run resumes with the sweeps it finished and
gives the same tables, and a rebuild of the same game reads every sweep back (without its
strategies, and writing nothing, where the warehouse holds it already: :func:`sweeps_held`); Harville's solvers
stay there for `fgs_strategies` (:mod:`assets.fgs`), which continues them into the FGS chain
and then deletes them. Downstream: `deviation_statistics` (:mod:`assets.deviation`),
`ex_post_models` (:mod:`assets.model_ex_post`) and `simulations`.
"""

import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import dagster as dg
import duckdb
import numpy as np
import pandas as pd

from assets.models import equity_model_tables
from assets.resources import GameResource, WarehouseResource, blocking_checks
from assets.resume import game_cache_dir, games_with_equilibrium, rows_digest
from assets.solve import LAYER_ASSETS, NODE_ROW_STATES, checkpoint_dir, equilibrium_tensors
from engine.config import GameConfig
from engine.equity_models import MODELS
from engine.hand_pass import SolverTensors
from engine.model_strategies import Sweep, equilibrium_solvers, model_values, solve_sweep
from engine.solve_progress import sweep_log_line
from engine.sweep_checkpoint import drop_solvers, saved_sweep_summary, sweep_saved
from engine.layers import compile_game
from engine.states import n_states
from warehouse import db


def sweep_checkpoint_dir(cfg: GameConfig) -> Path:
    """Where the model sweeps of a game checkpoint (keyed like the equilibrium's: game, tables, gamma)."""
    return game_cache_dir("models", cfg)


def strategies_fingerprint(con: duckdb.DuckDBPyConnection, cfg: GameConfig) -> str | None:
    """A digest of the game's model sweeps as the warehouse holds them (per model and layer: states,
    CFR+ iterations, largest exploitability; None before any sweep). Work done against model
    strategies (nemesis checks, simulations) is kept across an interrupt only while it is unchanged:
    a sweep recomputed to the same strategies (solves are deterministic) keeps it, any other sweep
    changes it."""
    return rows_digest(con, "SELECT model, players, states, cfr_iterations, max_exploitability FROM model_sweeps "
                            "WHERE game = ? ORDER BY model, players", [cfg.name])


def _node_rows(sweep: Sweep, layers: dict) -> Iterator[pd.DataFrame]:
    for n, strategies in sweep.strategies.items():
        for lo in range(0, len(strategies), NODE_ROW_STATES):
            part = strategies[lo:lo + NODE_ROW_STATES]
            sid = np.concatenate([np.full(len(s), lo + i) for i, s in enumerate(part)])
            node = np.concatenate([np.arange(len(s)) for s in part])
            actor = np.concatenate([h.node_actor for h in layers[n][lo:lo + NODE_ROW_STATES]])
            jam = np.concatenate(part)
            yield pd.DataFrame({"players": n, "state_id": sid, "node": node, "actor": actor, "jam": list(jam)})


def _sweep_rows(sweep: Sweep, layer_wall: dict[int, float]) -> pd.DataFrame:
    return pd.DataFrame([{"players": n, "states": len(sweep.iterations[n]),
                          "cfr_iterations": int(sweep.iterations[n].sum()),
                          "max_exploitability": float(sweep.exploitability[n].max()), "wall_s": layer_wall.get(n, 0.0)}
                         for n in sorted(sweep.iterations)])


def sweep_logger(context: dg.AssetExecutionContext, layer_wall: dict[str, dict[int, float]],
                 read_back: list[str]) -> Callable[[dict], None]:
    """A sweep progress callback: logs every finished (or read back) layer and the states done
    within long ones; records each layer's seconds in ``layer_wall`` and the layers read back from
    the checkpoint in ``read_back``."""
    def progress(event: dict) -> None:
        if event["event"] != "sweep_layer":  # states done within a layer, or read back from its parts
            context.log.info(sweep_log_line(event))
            return
        layer_wall.setdefault(event["label"], {})[event["players"]] = event["wall_s"]
        if event.get("resumed"):
            read_back.append(f"{event['label']} {event['players']}p")
        how = "read back from its checkpoint, solved in " if event.get("resumed") else ""
        context.log.info(f"{event['label']}: {event['players']}-player layer, {event['states']} states, "
                         f"{event['cfr_iterations']} CFR+ iterations, max exploitability "
                         f"{event['max_exploitability']:.2e} $ ({how}{event['wall_s']:.1f} s)")
    return progress


def sweeps_held(warehouse: WarehouseResource, cfg: GameConfig, labels: list[str]) -> dict[str, bool]:
    """Per sweep label, whether the warehouse already holds the sweep its checkpoint has saved in
    full: the same `model_sweeps` rows (states, CFR+ iterations, largest exploitability, seconds, per
    layer) and all its `model_nodes` rows. A rebuild or a resumed build then reads no strategies
    back for it and writes nothing (about a minute each way for a sweep of the 45-unit 5-player
    layer, at every resume of the `thesis` model analyses: up to 13 sweeps)."""
    folder, players = sweep_checkpoint_dir(cfg), list(range(2, cfg.players + 1))
    fields = ("players", "states", "cfr_iterations", "max_exploitability", "wall_s")
    held = {}
    with warehouse.connect() as con:
        for label in labels:
            saved = saved_sweep_summary(folder, label, players)
            if saved is None:
                held[label] = False
                continue
            stored = con.execute(f"SELECT {', '.join(fields)} FROM model_sweeps WHERE game = ? AND model = ? "
                                 "ORDER BY players", [cfg.name, label]).fetchall()
            nodes, = con.execute("SELECT count(*) FROM model_nodes WHERE game = ? AND model = ?",
                                 [cfg.name, label]).fetchone()
            held[label] = (stored == [tuple(r[k] for k in fields) for r in saved]
                           and nodes == sum(r["nodes"] for r in saved))
    return held


def hold_sweeps(context: dg.AssetExecutionContext, warehouse: WarehouseResource, cfg: GameConfig,
                labels: list[str]) -> dict[str, bool]:
    """:func:`sweeps_held`, after copying in the warehouse each sweep this game lacks that another
    game of the same equilibrium holds as the shared checkpoint has it (a build of `thesis` with an
    analysis flag, `thesis-<hash>`: its 13 sweeps' rows copied instead of read back and written
    again, a few minutes each)."""
    held = sweeps_held(warehouse, cfg, labels)
    missing = [label for label in labels if not held[label]]
    if not missing:
        return held
    with warehouse.connect() as con:
        others = games_with_equilibrium(con, cfg)
    for other in others:
        theirs = sweeps_held(warehouse, replace(cfg, name=other), missing)
        for label in [label for label in missing if theirs[label]]:
            t0 = time.perf_counter()
            with warehouse.connect() as con:
                rows = db.copy_rows(con, ("model_nodes", "model_sweeps"), {"game": other, "model": label},
                                    {"game": cfg.name, "model": label})
            context.log.info(f"{label}: swept, and in the warehouse under game '{other}' (the same equilibrium): its "
                             f"{sum(rows.values()):,} rows copied in {time.perf_counter() - t0:.1f} s")
            held[label] = True
        missing = [label for label in missing if not held[label]]
        if not missing:
            break
    return held


def all_held_line(labels: list[str]) -> str:
    """The log line of an asset whose sweeps ``labels`` the warehouse all holds (:func:`sweeps_held`)."""
    return (f"every sweep ({', '.join(labels)}) is in the warehouse as its checkpoint holds it: nothing to solve, "
            "read back or write")


def log_held(context: dg.AssetExecutionContext, held: dict[str, bool]) -> None:
    """Log the sweeps the warehouse holds (:func:`sweeps_held`), if any, before the others are solved."""
    if any(held.values()):
        context.log.info("in the warehouse as their checkpoints hold them (nothing to read back or write): "
                         + ", ".join(label for label, is_held in held.items() if is_held))


def store_sweep(warehouse: WarehouseResource, cfg: GameConfig, layers: dict, sweep: Sweep,
                layer_wall: dict[int, float], rows: dict[str, int], held: bool = False) -> None:
    """Write a finished sweep's rows to `model_nodes` and `model_sweeps` (one transaction
    for both), count them in ``rows``, and drop its strategies from memory: the thesis game's would
    hold about 4 GiB per sweep. ``held``: the warehouse holds it already (:func:`sweeps_held`; read
    back without its strategies): nothing is written."""
    if held:
        sweep.release()
        return
    key = {"game": cfg.name, "model": sweep.label}
    with warehouse.connect() as con:
        written = db.replace_tables(con, [db.Replacement("model_nodes", _node_rows(sweep, layers), key),
                                          db.Replacement("model_sweeps", _sweep_rows(sweep, layer_wall), key)])
        nodes, sweeps = written["model_nodes"], written["model_sweeps"]
    rows["model_nodes"] = rows.get("model_nodes", 0) + nodes
    rows["model_sweeps"] = rows.get("model_sweeps", 0) + sweeps
    sweep.release()


HARVILLE_READ_BACK = "none needed (the Harville sweep is read back)"


def harville_sweep(cfg: GameConfig, layers: dict, stacks: dict, tensors: SolverTensors,
                   progress: Callable[[dict], None], read_strategies: bool = True) -> tuple[Sweep, str]:
    """The Harville sweep, its solvers kept for the sweeps that warm-start from it: read back from
    the sweep checkpoint when saved (with its solvers while they are kept there; its strategies only
    with ``read_strategies``), else solved warm-started from the equilibrium's regrets. Returns
    (sweep, how it was started)."""
    folder = sweep_checkpoint_dir(cfg)
    warm = None
    if sweep_saved(folder, "harville", list(layers)):  # read back: no warm start (nor 7 GiB of thesis regrets) needed
        warm_start = HARVILLE_READ_BACK
    else:
        warm = equilibrium_solvers(layers, tensors, checkpoint_dir(cfg))
        warm_start = "the equilibrium's regrets" if warm else "none (no solve checkpoint)"
    sweep = solve_sweep("harville", layers, model_values("harville", stacks, cfg.payouts), cfg.gamma, tensors,
                        warm=warm, progress=progress, checkpoint=folder, keep_solvers=True, consume_warm=True,
                        read_strategies=read_strategies)
    return sweep, warm_start


def sweep_totals(con: duckdb.DuckDBPyConnection, cfg: GameConfig, models: list[str]
                 ) -> tuple[dict[str, float], dict[str, int]]:
    """Per model of ``models`` in `model_sweeps`: its sweep's seconds and CFR+ iterations over all layers
    (the asset metadata, the same whether the sweep was solved, read back or held)."""
    found = con.execute("SELECT model, sum(wall_s), sum(cfr_iterations) FROM model_sweeps WHERE game = ? AND "
                        "list_contains(?, model) GROUP BY model", [cfg.name, models]).fetchall()
    totals = {m: (round(float(s), 1), int(k)) for m, s, k in found}
    return ({m: totals[m][0] for m in models if m in totals}, {m: totals[m][1] for m in models if m in totals})


def sweep_checks(con: duckdb.DuckDBPyConnection, cfg: GameConfig, models: list[str]
                 ) -> tuple[dg.AssetCheckResult, dict, str]:
    """The `every_state_within_gamma` check of the sweeps of ``models`` (the largest exploitability
    in `model_sweeps`, $, and every (model, layer) present with all its states and a measured, finite
    exploitability: a sweep missing from the table, or one whose exploitability is NULL or NaN, fails
    it rather than passing on nothing), the metadata it adds to the asset, and a markdown preview of
    those sweeps."""
    sweeps = con.execute("""SELECT model, players, states, cfr_iterations, max_exploitability,
                                   round(wall_s, 1) AS wall_s
                            FROM model_sweeps WHERE game = ? AND list_contains(?, model)
                            ORDER BY list_position(?, model), players""", [cfg.name, models, models]).df()
    found = {(m, int(n)): int(k) for m, n, k in zip(sweeps["model"], sweeps["players"], sweeps["states"])}
    missing = [f"{m} {n}p" for m in models for n in range(2, cfg.players + 1)
               if found.get((m, n)) != n_states(cfg.units, n)]
    measured = np.isfinite(sweeps["max_exploitability"].to_numpy(np.float64))
    unmeasured = [f"{m} {n}p" for m, n, ok in zip(sweeps["model"], sweeps["players"], measured) if not ok]
    # (0 where none is expected, or none is measured: the check fails on those lists then)
    worst = float(sweeps["max_exploitability"][measured].max()) if measured.any() else 0.0
    check = dg.AssetCheckResult(
        check_name="every_state_within_gamma", passed=bool(not missing and not unmeasured and worst <= cfg.gamma),
        metadata={"max_exploitability_usd": worst, "gamma_usd": cfg.gamma,
                  **({"sweeps_missing_or_incomplete": missing} if missing else {}),
                  **({"sweeps_unmeasured": unmeasured} if unmeasured else {})},
        description=None if models else "not applicable: no model to sweep (fgs_depth 0)")
    return check, {"max_exploitability_usd": worst}, db.frame_markdown(sweeps)


@dg.asset(group_name="analysis", kinds={"numba", "duckdb"}, deps=[equity_model_tables, *LAYER_ASSETS],
          check_specs=blocking_checks("model_strategies", {
              "every_state_within_gamma": "every state's hand solved to gamma $ in every model's sweep, every layer's "
                                          "sweep recorded in model_sweeps"}),
          description="The ICM family's strategy profiles (SPEC §7.1): every state's hand solved with CFR+ to gamma "
                      "with successors valued by Harville, Weitzman or Roberts. Tables `model_nodes`, "
                      "`model_sweeps`; view `model_jam`. Harville's solvers stay in the sweep checkpoint for "
                      "`fgs_strategies` to continue.")
def model_strategies(context: dg.AssetExecutionContext, game: GameResource,
                     warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    t0 = time.perf_counter()
    folder = sweep_checkpoint_dir(cfg)
    layer_wall: dict[str, dict[int, float]] = {}
    read_back: list[str] = []
    progress = sweep_logger(context, layer_wall, read_back)
    rows: dict[str, int] = {}
    held = hold_sweeps(context, warehouse, cfg, list(MODELS))
    if all(held.values()):  # (no hand compiled: minutes for the thesis game, at every resume of its analyses)
        context.log.info(all_held_line(list(MODELS)))
        warm_start = "none needed (every sweep is in the warehouse)"
    else:
        warm_start = _solve_icm_sweeps(context, cfg, warehouse, held, progress, layer_wall, rows)
    if cfg.fgs_depth == 0:
        drop_solvers(folder)  # no FGS sweep continues Harville's; the results stay for a rebuild to read back
    with warehouse.connect() as con:
        check, quality, preview = sweep_checks(con, cfg, list(MODELS))
        seconds, iterations = sweep_totals(con, cfg, list(MODELS))
        nodes, = con.execute("SELECT count(*) FROM model_nodes WHERE game = ? AND list_contains(?, model)",
                             [cfg.name, list(MODELS)]).fetchone()
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "models": list(MODELS), **{f"rows_{k}": v for k, v in rows.items()},
                  "dagster/row_count": int(nodes),  # the three models' strategy rows, written now or kept
                  "sweep_s": seconds, "cfr_iterations": iterations, **quality, "warm_start": warm_start,
                  "layers_read_back": read_back,  # sweep layers finished before an interrupt
                  "wall_s": round(time.perf_counter() - t0, 2), "sweeps": dg.MetadataValue.md(preview)},
        check_results=[check])


def _solve_icm_sweeps(context: dg.AssetExecutionContext, cfg: GameConfig, warehouse: WarehouseResource,
                      held: dict[str, bool], progress: Callable[[dict], None], layer_wall: dict[str, dict[int, float]],
                      rows: dict[str, int]) -> str:
    """Solve (or read back) the ICM family's sweeps and store those the warehouse does not hold
    (``held``, :func:`sweeps_held`); returns how Harville's was started."""
    tensors = equilibrium_tensors(warehouse.path, cfg)
    stacks, layers = compile_game(cfg.units, cfg.players, cfg.payouts)
    folder = sweep_checkpoint_dir(cfg)
    # Harville first (warm from the equilibrium, whose solvers it takes over); Weitzman and Roberts
    # start from Harville's regrets (their values are closer to Harville's than to the
    # equilibrium's: on the quick game Weitzman 40 s instead of 73 s, Roberts 54 s instead of
    # 94 s), each state's solver dropped once solved. So one layer of solvers is in memory at a
    # time, and one sweep's strategies.
    log_held(context, held)
    harville, warm_start = harville_sweep(cfg, layers, stacks, tensors, progress, read_strategies=not held["harville"])
    context.log.info(f"Harville's warm start: {warm_start}")
    store_sweep(warehouse, cfg, layers, harville, layer_wall["harville"], rows, held["harville"])
    for model in [m for m in MODELS if m != "harville"]:
        sweep = solve_sweep(model, layers, model_values(model, stacks, cfg.payouts), cfg.gamma, tensors,
                            warm=harville.solvers, progress=progress, checkpoint=folder, keep_solvers=False,
                            read_strategies=not held[model])
        store_sweep(warehouse, cfg, layers, sweep, layer_wall[model], rows, held[model])
    return warm_start
