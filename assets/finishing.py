"""The equilibrium's finishing probabilities (SPEC §6): for every state and position, the
probability of finishing in each place.

They are the same policy evaluation as the equilibrium's values, with the unit prize vectors
(1, 0, …), (0, 1, 0, …), … in place of the payouts (:func:`engine.policy_evaluation.finishing_probabilities`),
layer by layer from 2 players up. The strategies are read back from the warehouse
(`equilibrium_nodes`) and each state's hand outcomes computed from them
(:mod:`engine.profile_outcomes`), so the asset also checks the stored equilibrium against the
solve: the finishing probabilities weighted by the payouts must give back `equilibrium_values`.
Each finished layer is kept while the equilibrium is the same (:mod:`assets.resume`, in
`.cache/finishing/`): an interrupted run goes on with the next layer, a rebuild reads them all.
Within a layer, the hand outcomes of the states finished are saved every 5 minutes (the 45-unit
5-player layer's take about a quarter of an hour), so an interrupt loses at most those minutes.
"""

import time

import dagster as dg
import numpy as np
import pandas as pd

from assets.ex_post import equilibrium_fingerprint, read_strategies
from assets.resources import GameResource, WarehouseResource, blocking_checks, cache_dir
from assets.resume import UnitCheckpoint, game_key
from assets.solve import LAYER_ASSETS, equilibrium_tensors, read_layer_table
from engine.config import GameConfig
from engine.policy_evaluation import finishing_probabilities as layer_finishing
from engine.profile_outcomes import outcome_probabilities
from engine.solve_progress import outcome_log_line
from engine.layers import compile_layer
from warehouse import db

CHECKS = {
    "finishing_probabilities_sum_to_1": "over the places of every (state, position) and over the positions of every "
                                        "(state, place), within 1e-6",
    "finishing_gives_back_the_values": "Σ place probability × payout equals the stored equilibrium value of every "
                                       "(state, position) within 1e-6 $: the warehouse's strategies are the solve's",
}


def finishing_rows(fin: np.ndarray) -> pd.DataFrame:
    """Rows of `finishing` for one layer's (states, n, places) table: places 1 … n only."""
    m, n, places = fin.shape
    sid, pos, place = np.meshgrid(np.arange(m), np.arange(n), np.arange(places), indexing="ij")
    keep = place.ravel() < n
    return pd.DataFrame({"state_id": sid.ravel()[keep], "position": pos.ravel()[keep], "place": place.ravel()[keep] + 1,
                         "probability": fin.ravel()[keep]})


def _errors(con, cfg: GameConfig) -> tuple[float, float]:
    """(largest |Σ − 1| over the places of a (state, position) and over the positions of a (state,
    place), largest |Σ_q P(place q)·payout_q − equilibrium value| in $) over every layer."""
    sums = con.execute("""
        SELECT coalesce(max(abs(s - 1)), 0) FROM (
          SELECT sum(probability) s FROM finishing WHERE game = ? GROUP BY players, state_id, position
          UNION ALL
          SELECT sum(probability) FROM finishing WHERE game = ? GROUP BY players, state_id, place)""",
                       [cfg.name, cfg.name]).fetchone()[0]
    values = con.execute("""
        SELECT coalesce(max(abs(f.paid - v.value)), 0) FROM (
          SELECT f.players, f.state_id, f.position,
                 sum(f.probability * coalesce(list_extract(g.payouts, f.place), 0)) AS paid
          FROM finishing f JOIN games g USING (game) WHERE f.game = ? GROUP BY ALL) f
        JOIN equilibrium_values v USING (players, state_id, position) WHERE v.game = ?""",
                         [cfg.name, cfg.name]).fetchone()[0]
    return float(sums), float(values)


@dg.asset(group_name="equilibrium", kinds={"numba", "duckdb"}, deps=LAYER_ASSETS,
          check_specs=blocking_checks("finishing_probabilities", CHECKS),
          description="The equilibrium's finishing probabilities (SPEC §6): for every (state, position) the "
                      "probability of each place, by the policy evaluation of the stored strategies with unit prize "
                      "vectors, layer by layer. Table `finishing`. Checks that they give back the solve's values.")
def finishing_probabilities(context: dg.AssetExecutionContext, game: GameResource,
                            warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    t0 = time.perf_counter()
    with warehouse.connect() as con:
        done = UnitCheckpoint(cache_dir("finishing", game_key(cfg)),
                              {"equilibrium": equilibrium_fingerprint(con, cfg.name)})
    lower: dict[int, np.ndarray] = {}
    rows, layer_s = 0, {}
    for n in range(2, cfg.players + 1):
        stacks, hands = compile_layer(cfg.units, n, cfg.payouts)
        unit = done.load(f"layer{n}")
        if unit is not None:  # finished by an earlier run for this equilibrium: kept while its rows are all there
            with warehouse.connect() as con:
                kept = con.execute("SELECT count(*) FROM finishing WHERE game = ? AND players = ?",
                                   [cfg.name, n]).fetchone()[0]
                if kept == unit["rows"]:
                    lower[n] = read_layer_table(con, cfg, n, "finishing", "probability", len(stacks),
                                                places=cfg.players)
            if n in lower:
                rows += kept
                context.log.info(f"{n}-player layer: finishing probabilities kept from an earlier run ({kept} rows)")
                continue
        t1 = time.perf_counter()
        with warehouse.connect() as con:
            strategies = read_strategies(con, cfg.name, n, len(stacks))
        probs = outcome_probabilities(hands, strategies, equilibrium_tensors(warehouse.path, cfg),
                                      progress=lambda event: context.log.info(outcome_log_line(event)),
                                      checkpoint=done.work_dir(f"layer{n}"))
        lower[n] = layer_finishing(hands, probs, n, lower, cfg.players)  # lower: the layers below n
        frame = finishing_rows(lower[n])
        with warehouse.connect() as con:
            rows += db.replace_rows(con, "finishing", frame, {"game": cfg.name, "players": n})
        done.save(f"layer{n}", {"rows": len(frame)})
        layer_s[f"{n}p"] = round(time.perf_counter() - t1, 2)
        context.log.info(f"{n}-player layer: finishing probabilities of {len(stacks):,} states in {layer_s[f'{n}p']} s")
    with warehouse.connect() as con:
        sum_err, value_err = _errors(con, cfg)
        preview = db.preview_markdown(con, """
            SELECT s.positions[f.position + 1] AS seat, list(round(f.probability, 4) ORDER BY f.place) AS places
            FROM finishing f JOIN states s USING (game, players, state_id) JOIN games g USING (game)
            WHERE f.game = ? AND s.stacks = g.start GROUP BY ALL ORDER BY any_value(f.position)""", [cfg.name])
    checks = [
        dg.AssetCheckResult(check_name="finishing_probabilities_sum_to_1", passed=bool(sum_err <= 1e-6),
                            metadata={"max_error": sum_err,
                                      "rule": "over the places of every (state, position) and over the positions "
                                              "of every (state, place)"}),
        dg.AssetCheckResult(check_name="finishing_gives_back_the_values", passed=bool(value_err <= 1e-6),
                            metadata={"max_error_usd": value_err,
                                      "rule": "Σ_place P(place)·payout = the equilibrium value, every (state, position)"}),
    ]
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "rows": rows, "seconds_per_layer": layer_s,
                  "wall_s": round(time.perf_counter() - t0, 2),
                  "start_state": dg.MetadataValue.md(preview)},
        check_results=checks)
