"""The ex post check of every model's strategy profile (SPEC §6, §7.5).

For every model (Harville, Weitzman, Roberts, FGS-1 … FGS-D), its strategies are read back from
`model_nodes`, its profile's exact values computed (everybody playing it), and a nemesis
best-responds over the whole tournament (:func:`engine.best_response.ex_post`); the rows go to
`nemesis_values` with profile = model, and the `ex_post` view lists them beside the
equilibrium's. One model at a time; a rerun after an interrupt, or a rebuild, keeps the models
already checked against the same model strategies (:mod:`assets.resume`, in `.cache/ex_post/`),
and within a model the nemesis rounds it finished.
"""

import time
from functools import cache

import dagster as dg
import numpy as np

from assets.ex_post import EX_POST_ASSETS, ex_post_checks, nemesis_frame, read_strategies
from assets.fgs import fgs_strategies
from assets.model_analysis import model_strategies, strategies_fingerprint
from assets.resources import GameResource, WarehouseResource, blocking_checks
from assets.resume import UnitCheckpoint, game_cache_dir, rows_of_kept_unit, warehouse_rows_digest
from assets.solve import equilibrium_tensors, require_strategies
from engine.best_response import ex_post
from engine.config import model_names
from engine.model_strategies import profile_values
from engine.profile_outcomes import outcome_probabilities
from engine.solve_progress import nemesis_log_line, outcome_log_line
from engine.layers import compile_game
from warehouse import db

CHECKS = {
    "nemesis_at_least_profile": "for every model, the nemesis gains at least 0 over the profile in every (state, seat) "
                                "(within 1e-8 $)",
    "policy_iteration_converged": "for every model, the nemesis' values solve his Bellman equation (largest residual "
                                  "within 1e-8 $)",
    "profile_values_sum_to_open_prizes": "for every model, the profile's exact values of every state sum to the "
                                         "prizes of the places still open (within 1e-6 $)",
}


@dg.asset(group_name="analysis", kinds={"numba", "duckdb"}, deps=[model_strategies, fgs_strategies, *EX_POST_ASSETS],
          check_specs=blocking_checks("ex_post_models", CHECKS),
          description="Ex post check of every model's strategy profile (SPEC §7.5): the profile's exact values when "
                      "everybody plays it, and a nemesis best-responding over the whole tournament. Rows in "
                      "`nemesis_values` with profile = model; summary in the `ex_post` view.")
def ex_post_models(context: dg.AssetExecutionContext, game: GameResource,
                   warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    t0 = time.perf_counter()
    # the hand trees and tables only once a model needs checking: minutes for the thesis game, whose
    # resumes keep most models
    game_hands = cache(lambda: compile_game(cfg.units, cfg.players, cfg.payouts))
    checked = []  # (least gain $, largest Bellman residual $, largest open-prize error $) of each model
    rows = 0
    # a model already checked (by an interrupted run or an earlier build) against the same model strategies is kept
    with warehouse.connect() as con:
        fingerprint = strategies_fingerprint(con, cfg)
        require_strategies(con, cfg, "ex_post_models", profiles=model_names(cfg.fgs_depth))
    done = UnitCheckpoint(game_cache_dir("ex_post", cfg), {"model_strategies": fingerprint})
    for model in model_names(cfg.fgs_depth):
        record = done.load(model)
        if record is not None and "value_error" in record:  # (records before the convergence checks: check again)
            key = {"game": cfg.name, "profile": model}
            with warehouse.connect() as con:
                held, = con.execute("SELECT count(*) FROM nemesis_values WHERE game = ? AND profile = ?",
                                    [cfg.name, model]).fetchone()
                # (or checked for a game of another name with the same equilibrium and model strategies)
                found = rows_of_kept_unit(con, done, model, record, "nemesis_values", key, record["rows"], held)
                count, low, mean, high = con.execute(
                    "SELECT count(*), min(gain), avg(gain), max(gain) FROM nemesis_values WHERE game = ? AND profile = ?",
                    [cfg.name, model]).fetchone()
            if found is not None and count == record["rows"]:
                rows += count
                checked.append((float(low), record["worst_residual"], record["value_error"]))
                context.log.info(f"{model}: mean nemesis gain {mean:.4f} $, max {high:.4f} $ (checked earlier "
                                 "against the same strategies)")
                continue
        stacks, layers = game_hands()
        tensors = equilibrium_tensors(warehouse.path, cfg)
        with warehouse.connect() as con:
            strategies = {n: read_strategies(con, cfg.name, n, len(stacks[n]), model) for n in layers}

        def outcome_progress(event: dict, model: str = model) -> None:
            context.log.info(f"{model}: {outcome_log_line(event)}")

        work = done.work_dir(model)  # the model's hand outcomes and nemesis rounds so far
        probs = {n: outcome_probabilities(layers[n], strategies[n], tensors, progress=outcome_progress,
                                          checkpoint=work)
                 for n in layers}
        V = profile_values(layers, probs)
        result = ex_post({n: (layers[n], strategies[n], V[n]) for n in layers}, tensors,
                         progress=lambda event, model=model: context.log.info(nemesis_log_line(event, model)),
                         checkpoint=work)
        frame = nemesis_frame(result, V)
        record = {"rows": len(frame), "worst_residual": max(log[-1]["bellman_residual"] for _, log in result.values()),
                  "value_error": max(float(np.abs(V[n].sum(axis=1) - sum(cfg.payouts[:n])).max()) for n in V)}
        checked.append((float(frame["gain"].min()), record["worst_residual"], record["value_error"]))
        with warehouse.connect() as con:
            key = {"game": cfg.name, "profile": model}
            rows += db.replace_rows(con, "nemesis_values", frame, key)
            record["rows_digest"] = warehouse_rows_digest(con, "nemesis_values", key)
        done.save(model, record, rows=frame)
        context.log.info(f"{model}: mean nemesis gain {frame['gain'].mean():.4f} $, max {frame['gain'].max():.4f} $")
    lows, residuals, value_errors = zip(*checked)
    min_gain, residual, value_err = min(lows), max(residuals), max(value_errors)
    with warehouse.connect() as con:
        summary = con.execute("SELECT * FROM ex_post WHERE game = ? ORDER BY profile", [cfg.name]).df()
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "rows": rows, "dagster/row_count": rows,
                  **{f"all_mean_gain_usd_{r.profile}": float(r.all_mean_gain) for r in summary.itertuples(index=False)},
                  "wall_s": round(time.perf_counter() - t0, 2),
                  "summary": dg.MetadataValue.md(db.frame_markdown(summary, decimals=5))},
        check_results=[
            *ex_post_checks({"min_gain": float(min_gain), "worst_residual": residual}),
            dg.AssetCheckResult(check_name="profile_values_sum_to_open_prizes", passed=bool(value_err <= 1e-6),
                                metadata={"max_error_usd": value_err}),
        ])
