"""Future Game Simulation (SPEC §7.2): the FGS-1 … FGS-D strategy profiles and values.

v⁰ = Harville; vᵈ(s) is the value of state s's hand solved with successor values vᵈ⁻¹ (VI-CFR+,
one sweep per depth), and model FGS-d plays the strategies of sweep d. The chain continues
Harville's solvers (read back from the sweep checkpoint that `model_strategies` leaves them in)
and each depth continues the previous one's, so one layer of solvers is in memory at a time; each
sweep is written to `model_nodes` as soon as it finishes and checkpointed in `.cache/models/` like
the other sweeps (an interrupted chain resumes at the depth and states it reached). For the
`thesis` game this is 10 of its 13 sweeps, about 10–16 h each on 2 cores.
"""

import time

import dagster as dg
import numpy as np
import pandas as pd

from assets.model_analysis import (HARVILLE_READ_BACK, all_held_line, harville_sweep, hold_sweeps, log_held,
                                   model_strategies, store_sweep, sweep_checkpoint_dir, sweep_checks, sweep_logger,
                                   sweep_totals)
from assets.resources import GameResource, WarehouseResource, blocking_checks, open_prize_sums
from assets.solve import equilibrium_tensors
from engine.config import GameConfig
from engine.states import enumerate_states, n_states
from engine.model_strategies import fgs_sweeps, model_values
from engine.sweep_checkpoint import drop_solvers, saved_sweep_values, sweep_saved
from engine.layers import compile_game
from warehouse import db

FGS_CHECKS = {
    "every_state_within_gamma": "every state's hand solved to gamma $ at every FGS depth, every layer's sweep "
                                "recorded in model_sweeps",
    "fgs_values_sum_to_open_prizes": "every depth has a value for every (state, position), and a state's values sum "
                                     "to the prizes of the places still open (within 1e-6 $)",
}


def fgs_frame(values: list[dict[int, np.ndarray]]) -> pd.DataFrame:
    """Rows of `fgs_values` for the depths 1 … D of ``values`` (values[d][n] is vᵈ of layer n, $)."""
    frames = []
    for d in range(1, len(values)):
        for n, V in values[d].items():
            sid, pos = np.meshgrid(np.arange(len(V)), np.arange(n), indexing="ij")
            frames.append(pd.DataFrame({"depth": d, "players": n, "state_id": sid.ravel(), "position": pos.ravel(),
                                        "value": V.ravel()}))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
        columns=["depth", "players", "state_id", "position", "value"])


@dg.asset(group_name="analysis", kinds={"numba", "duckdb"}, deps=[model_strategies],
          check_specs=blocking_checks("fgs_strategies", FGS_CHECKS),
          description="Future Game Simulation (SPEC §7.2): FGS-1 … FGS-D (D = fgs_depth), each depth's sweep "
                      "solving every state's hand to gamma with successors valued by the previous depth, from "
                      "Harville up, continuing the previous depth's solvers. Tables `fgs_values` and the FGS rows "
                      "of `model_nodes` and `model_sweeps`; view `fgs_value_moves` (how far each depth still moves "
                      "the values).")
def fgs_strategies(context: dg.AssetExecutionContext, game: GameResource,
                   warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    t0 = time.perf_counter()
    labels = [f"FGS-{d}" for d in range(1, cfg.fgs_depth + 1)]
    layer_wall: dict[str, dict[int, float]] = {}
    read_back: list[str] = []
    rows: dict[str, int] = {}
    if cfg.fgs_depth:
        folder, players = sweep_checkpoint_dir(cfg), list(range(2, cfg.players + 1))
        held = hold_sweeps(context, warehouse, cfg, labels)
        if all(held.values()) and sweep_saved(folder, "harville", players):  # (no hand compiled: minutes for thesis)
            context.log.info(all_held_line(labels))
            # v⁰ is Harville's; vᵈ the hand values of the sweep before (Harville's, FGS-1's, …) in its checkpoint
            stacks = {n: enumerate_states(cfg.units, n) for n in players}
            values = [model_values("harville", stacks, cfg.payouts)] + [
                saved_sweep_values(folder, label, players) for label in ["harville", *labels[:-1]]]
        else:
            values = _fgs_chain(context, cfg, warehouse, held, layer_wall, read_back, rows)
        drop_solvers(folder)  # the chain is done: its results stay, for a rebuild to read back
    else:
        values = []
        context.log.info("fgs_depth = 0: no FGS model")
    with warehouse.connect() as con:
        rows["fgs_values"] = db.replace_rows(con, "fgs_values", fgs_frame(values), {"game": cfg.name})
        sweep_check, quality, preview = sweep_checks(con, cfg, labels)
        seconds, iterations = sweep_totals(con, cfg, labels)
        values_check = fgs_values_check(con, cfg)
        moves = {f"FGS-{d}": round(float(move), 6) for d, move in con.execute(
            "SELECT depth, max_abs_move FROM fgs_value_moves WHERE game = ? AND players IS NULL ORDER BY depth",
            [cfg.name]).fetchall()}
    for label, move in moves.items():
        context.log.info(f"{label}: values moved by up to {move:.4g} $ from the depth before (view fgs_value_moves)")
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "models": labels, **{f"rows_{k}": v for k, v in rows.items()},
                  "dagster/row_count": rows["fgs_values"],
                  "sweep_s": seconds, "cfr_iterations": iterations, "max_value_move_usd": moves, **quality,
                  "layers_read_back": read_back,  # FGS layers an interrupted run had finished
                  "wall_s": round(time.perf_counter() - t0, 2), "sweeps": dg.MetadataValue.md(preview)},
        check_results=[sweep_check, values_check])


def fgs_values_check(con, cfg: GameConfig) -> dg.AssetCheckResult:
    """`fgs_values_sum_to_open_prizes`: every depth's values of every state sum to the state's open
    prizes, and every (depth, state) has them (a sum over missing rows would pass on nothing)."""
    err, complete = open_prize_sums(con, "fgs_values", "value", cfg, by=("depth",))
    expected = cfg.fgs_depth * sum(n_states(cfg.units, n) for n in range(2, cfg.players + 1))
    return dg.AssetCheckResult(check_name="fgs_values_sum_to_open_prizes",
                               passed=bool(err <= 1e-6 and complete == expected),
                               metadata={"max_error_usd": err, "depth_state_pairs": complete,
                                         "expected_pairs": expected},
                               description=None if cfg.fgs_depth else "not applicable: the game's fgs_depth is 0")


def _fgs_chain(context: dg.AssetExecutionContext, cfg: GameConfig, warehouse: WarehouseResource,
               held: dict[str, bool], layer_wall: dict[str, dict[int, float]], read_back: list[str],
               rows: dict[str, int]) -> list[dict[int, np.ndarray]]:
    """Solve (or read back) the FGS chain from Harville's solvers, storing the sweeps the warehouse
    does not hold (``held``, :func:`sweeps_held`); returns the value tables v⁰ … v^D ($)."""
    tensors = equilibrium_tensors(warehouse.path, cfg)
    stacks, layers = compile_game(cfg.units, cfg.players, cfg.payouts)
    progress = sweep_logger(context, layer_wall, read_back)
    # the chain needs Harville's values (v¹) and solvers, not its strategies; its layers, always read
    # back from model_strategies' checkpoint here, are logged but not listed as read back (listed,
    # they made a build that was never interrupted look resumed)
    harville, warm_start = harville_sweep(cfg, layers, stacks, tensors, sweep_logger(context, layer_wall, []),
                                          read_strategies=False)
    harville.release()  # solved here when the checkpoint lost it
    if len(harville.solvers) == len(layers):
        context.log.info("FGS-1 continues Harville's solvers" + (
            ", read back from the sweep checkpoint" if warm_start == HARVILLE_READ_BACK
            else f" (Harville's sweep solved again here, warm start: {warm_start})"))
    else:  # the chain ran before: its sweeps are read back, or a depth missing from the checkpoint starts cold
        context.log.info("Harville's solvers are no longer kept: the FGS sweeps saved are read back, "
                         "any other starts cold")
    log_held(context, held)
    _, values = fgs_sweeps(layers, model_values("harville", stacks, cfg.payouts), cfg.fgs_depth, cfg.gamma, tensors,
                           progress=progress, first=harville, checkpoint=sweep_checkpoint_dir(cfg),
                           on_sweep=lambda s: store_sweep(warehouse, cfg, layers, s, layer_wall[s.label], rows,
                                                          held[s.label]),
                           read_strategies=lambda label: not held[label])
    return values
