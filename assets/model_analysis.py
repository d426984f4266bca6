"""Equity models against the equilibrium (SPEC §7): model strategies, FGS, ex post of every model.

`model_strategies` solves every state's hand once per model with the successor states valued by
the model (Harville, Weitzman, Roberts, FGS-1 … FGS-D): Harville warm-started from the
equilibrium's regrets, Weitzman, Roberts and FGS-1 from Harville's, each deeper FGS depth from the
previous one; it writes `model_nodes` and `model_sweeps` as each sweep finishes, then
`fgs_values`. Memory stays at one layer of solvers and one sweep's strategies: the sweeps that
warm-start the next take over the previous one's solvers, the others drop each state's solver
once it is solved, and a stored sweep's strategies are released. Every finished layer of
every sweep is checkpointed in `.cache/models/` (see :mod:`engine.sweep_checkpoint`), so an
interrupted run resumes with the sweeps it finished and gives the same tables, and a rebuild of
the same game reads every sweep back. The deviation views (`model_values`, `deviation_summary`,
`deviation_by_stack`) read those tables. `ex_post_models` runs the nemesis check of every model's
strategy profile into `nemesis_values` (the `ex_post` view then lists the equilibrium and every
model), one model at a time; a rerun after an interrupt, or a rebuild, keeps the models already
checked against the same model strategies (:mod:`assets.resume`, in `.cache/ex_post/`).
"""

import time
from collections.abc import Iterator
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd

from assets.ex_post import ex_post_equilibrium, nemesis_frame, read_strategies
from assets.models import equity_model_tables
from assets.resources import GameResource, WarehouseResource, cache_dir
from assets.resume import UnitCheckpoint, game_key, rows_digest
from assets.solve import LAYER_ASSETS, NODE_ROW_STATES, checkpoint_dir, equilibrium_tensors
from engine.best_response import ex_post
from engine.cfr import HandSolver
from engine.config import GameConfig
from engine.equity_models import MODELS
from engine.hand_pass import Workspace
from engine.model_strategies import (Sweep, equilibrium_solvers, fgs_sweeps, model_values, profile_values,
                                     solve_sweep)
from engine.solve_progress import nemesis_log_line, sweep_log_line
from engine.sweep_checkpoint import drop_solvers, sweep_saved
from engine.tournament import compile_game, largest_hand
from warehouse import db

SWEEP_CHECKS = ("every_state_within_gamma", "fgs_values_sum_to_open_prizes")


def sweep_checkpoint_dir(cfg: GameConfig) -> Path:
    """Where the model sweeps of a game checkpoint (keyed like the equilibrium's: game, tables, gamma)."""
    return cache_dir("models", game_key(cfg))


def strategies_fingerprint(con, cfg: GameConfig) -> str | None:
    """A digest of the game's model sweeps as the warehouse holds them (per model and layer: states,
    CFR+ iterations, largest exploitability; None before any sweep). Work done against model
    strategies (nemesis checks, simulations) is kept across an interrupt only while it is unchanged:
    a sweep recomputed to the same strategies (solves are deterministic) keeps it, any other sweep
    changes it."""
    return rows_digest(con, "SELECT model, players, states, cfr_iterations, max_exploitability FROM model_sweeps "
                            "WHERE game = ? ORDER BY model, players", [cfg.name])


def model_names(cfg: GameConfig) -> list[str]:
    """The models of a game, in report order: the ICM family, then FGS-1 … FGS-D."""
    return [*MODELS, *(f"FGS-{d}" for d in range(1, cfg.fgs_depth + 1))]


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


@dg.asset(group_name="analysis", kinds={"numba", "duckdb"}, deps=[equity_model_tables, *LAYER_ASSETS],
          check_specs=[dg.AssetCheckSpec(c, asset="model_strategies", blocking=True) for c in SWEEP_CHECKS],
          description="Each equity model's strategy profile (SPEC §7.1): every state's hand solved with CFR+ to gamma "
                      "with successors valued by the model — Harville, Weitzman, Roberts and FGS-1 … FGS-D (§7.2, "
                      "D = fgs_depth). Tables `model_nodes`, `fgs_values`, `model_sweeps`; views `model_values`, "
                      "`deviation_summary`, `deviation_by_stack`, `model_jam`.")
def model_strategies(context: dg.AssetExecutionContext, game: GameResource,
                     warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    t0 = time.perf_counter()
    tensors = equilibrium_tensors(warehouse.path, cfg)
    stacks, layers = compile_game(cfg.units, cfg.players, cfg.payouts)
    folder = sweep_checkpoint_dir(cfg)
    warm = None
    if sweep_saved(folder, "harville", list(layers)):  # read back: no warm start (nor 7 GiB of thesis regrets) needed
        warm_start = "none needed (the Harville sweep is read back)"
    else:
        warm = equilibrium_solvers(layers, tensors, checkpoint_dir(cfg))
        warm_start = "the equilibrium's regrets" if warm else "none (no solve checkpoint)"
    context.log.info(f"warm start: {warm_start}")
    layer_wall: dict[str, dict[int, float]] = {}
    read_back: list[str] = []

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

    rows = {"model_nodes": 0, "model_sweeps": 0}

    def store(sweep: Sweep) -> None:
        """Write a finished sweep's rows (one transaction per table) and drop its strategies from
        memory: the thesis game's would hold about 4 GiB per sweep, 13 sweeps."""
        key = {"game": cfg.name, "model": sweep.label}
        with warehouse.connect() as con:
            rows["model_nodes"] += db.replace_rows(con, "model_nodes", _node_rows(sweep, layers), key)
            rows["model_sweeps"] += db.replace_rows(con, "model_sweeps", _sweep_rows(sweep, layer_wall[sweep.label]),
                                                    key)
        sweep.release()

    # Harville first (warm from the equilibrium, whose solvers it takes over); the other ICM-family
    # models start from Harville's regrets (their values are closer to Harville's than to the
    # equilibrium's: on the quick game Weitzman 40 s instead of 73 s, Roberts 54 s instead of
    # 94 s), then FGS-1 … FGS-D as a chain, FGS-1 taking over Harville's solvers. So one layer of
    # solvers is in memory at a time, and one sweep's strategies.
    harville_values = model_values("harville", stacks, cfg.payouts)
    harville = solve_sweep("harville", layers, harville_values, cfg.gamma, tensors, warm=warm, progress=progress,
                           checkpoint=folder, keep_solvers=True, consume_warm=True)
    del warm
    store(harville)
    others = []
    for model in [m for m in MODELS if m != "harville"]:
        others.append(solve_sweep(model, layers, model_values(model, stacks, cfg.payouts), cfg.gamma, tensors,
                                  warm=harville.solvers, progress=progress, checkpoint=folder, keep_solvers=False))
        store(others[-1])
    fgs, values = fgs_sweeps(layers, harville_values, cfg.fgs_depth, cfg.gamma, tensors, progress=progress,
                             first=harville, checkpoint=folder, on_sweep=store)
    sweeps: list[Sweep] = [*fgs, *others]
    fgs_frames = []
    for d in range(1, len(values)):
        for n, V in values[d].items():
            sid, pos = np.meshgrid(np.arange(len(V)), np.arange(n), indexing="ij")
            fgs_frames.append(pd.DataFrame({"depth": d, "players": n, "state_id": sid.ravel(), "position": pos.ravel(),
                                            "value": V.ravel()}))
    with warehouse.connect() as con:
        fgs_frame = pd.concat(fgs_frames, ignore_index=True) if fgs_frames else pd.DataFrame(
            columns=["depth", "players", "state_id", "position", "value"])
        rows["fgs_values"] = db.replace_rows(con, "fgs_values", fgs_frame, {"game": cfg.name})
        worst = con.execute("SELECT coalesce(max(max_exploitability), 0) FROM model_sweeps WHERE game = ?",
                            [cfg.name]).fetchone()[0]
        fgs_err = con.execute(
            """SELECT coalesce(max(abs(s - open_prize)), 0) FROM (
                 SELECT players, sum(value) s FROM fgs_values WHERE game = ? GROUP BY depth, players, state_id) t
               JOIN (SELECT unnest(range(2, ?)) AS players) p USING (players)
               CROSS JOIN LATERAL (SELECT list_sum(g.payouts[1:t.players]) AS open_prize FROM games g WHERE g.game = ?)""",
            [cfg.name, cfg.players + 1, cfg.name]).fetchone()[0]
        summary = con.execute("""SELECT model, averaging, mapd_pct, mad, max_relative_pct, min_relative_pct
                                 FROM deviation_summary WHERE game = ? AND players IS NULL
                                 ORDER BY averaging, model""", [cfg.name]).df()
    drop_solvers(folder)  # the sweeps are done: their results stay, for a rebuild to read back
    checks = [
        dg.AssetCheckResult(check_name="every_state_within_gamma", passed=bool(worst <= cfg.gamma),
                            metadata={"max_exploitability_usd": float(worst), "gamma": cfg.gamma}),
        dg.AssetCheckResult(check_name="fgs_values_sum_to_open_prizes", passed=bool(fgs_err <= 1e-6),
                            metadata={"max_error_usd": float(fgs_err)}),
    ]
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "models": model_names(cfg), **{f"rows_{k}": v for k, v in rows.items()},
                  "sweep_s": {s.label: round(s.wall_s, 1) for s in sweeps},
                  "cfr_iterations": {s.label: int(sum(int(v.sum()) for v in s.iterations.values())) for s in sweeps},
                  "warm_start": warm_start,
                  "layers_read_back": read_back,  # sweep layers finished before an interrupt
                  "wall_s": round(time.perf_counter() - t0, 2),
                  "deviation_summary": dg.MetadataValue.md(db.frame_markdown(summary, decimals=4))},
        check_results=checks)


def outcome_probabilities(layers: dict, strategies: dict[int, list[np.ndarray]], tensors) -> dict[int, list[np.ndarray]]:
    """Per state, the (terminals, 6) outcome probabilities of a fixed profile (one exact pass per state)."""
    out = {}
    ws = Workspace.for_hand(largest_hand([h for hands in layers.values() for h in hands]))
    for n, hands in layers.items():
        probs = []
        for hand, sigma in zip(hands, strategies[n]):
            solver = HandSolver(hand, tensors)
            U = np.zeros_like(hand.term_prize)
            solver.evaluate(sigma, U, ws)
            probs.append(solver.order_probs.copy())
        out[n] = probs
    return out


@dg.asset(group_name="analysis", kinds={"numba", "duckdb"}, deps=[model_strategies, ex_post_equilibrium],
          check_specs=[dg.AssetCheckSpec("nemesis_at_least_profile", asset="ex_post_models", blocking=True)],
          description="Ex post check of every model's strategy profile (SPEC §7.5): the profile's exact values when "
                      "everybody plays it, and a nemesis best-responding over the whole tournament. Rows in "
                      "`nemesis_values` with profile = model; summary in the `ex_post` view.")
def ex_post_models(context: dg.AssetExecutionContext, game: GameResource,
                   warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    t0 = time.perf_counter()
    tensors = equilibrium_tensors(warehouse.path, cfg)
    stacks, layers = compile_game(cfg.units, cfg.players, cfg.payouts)
    min_gain = np.inf
    rows = 0
    # a model already checked (by an interrupted run or an earlier build) against the same model strategies is kept
    with warehouse.connect() as con:
        fingerprint = strategies_fingerprint(con, cfg)
    done = UnitCheckpoint(cache_dir("ex_post", game_key(cfg)), {"model_strategies": fingerprint})
    for model in model_names(cfg):
        if done.load(model) is not None:
            with warehouse.connect() as con:
                count, low, mean, high = con.execute(
                    "SELECT count(*), min(gain), avg(gain), max(gain) FROM nemesis_values WHERE game = ? AND profile = ?",
                    [cfg.name, model]).fetchone()
            if count:
                rows += count
                min_gain = min(min_gain, float(low))
                context.log.info(f"{model}: mean nemesis gain {mean:.4f} $, max {high:.4f} $ (checked earlier "
                                 "against the same strategies)")
                continue
        with warehouse.connect() as con:
            strategies = {n: read_strategies(con, cfg.name, n, len(stacks[n]), model) for n in layers}
        probs = outcome_probabilities(layers, strategies, tensors)
        V = profile_values(layers, probs)
        result = ex_post({n: (layers[n], strategies[n], V[n]) for n in layers}, tensors,
                         progress=lambda event, model=model: context.log.info(nemesis_log_line(event, model)),
                         checkpoint=done.work_dir(model))
        frame = nemesis_frame(result, V)
        min_gain = min(min_gain, float(frame["gain"].min()))
        with warehouse.connect() as con:
            rows += db.replace_rows(con, "nemesis_values", frame, {"game": cfg.name, "profile": model})
        done.save(model, {"rows": len(frame)})
        context.log.info(f"{model}: mean nemesis gain {frame['gain'].mean():.4f} $, max {frame['gain'].max():.4f} $")
    with warehouse.connect() as con:
        summary = con.execute("SELECT * FROM ex_post WHERE game = ? ORDER BY profile", [cfg.name]).df()
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "rows": rows, "wall_s": round(time.perf_counter() - t0, 2),
                  "summary": dg.MetadataValue.md(db.frame_markdown(summary, decimals=5))},
        check_results=[dg.AssetCheckResult(check_name="nemesis_at_least_profile", passed=bool(min_gain >= -1e-8),
                                           metadata={"min_gain_usd": min_gain})])
