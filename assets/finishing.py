"""The equilibrium's finishing probabilities (SPEC §6): for every state and position, the
probability of finishing in each place.

They are the same policy evaluation as the equilibrium's values, with the unit prize vectors
(1, 0, …), (0, 1, 0, …), … in place of the payouts (:func:`engine.policy_evaluation.finishing_probabilities`),
one asset per layer (`finishing_2p` … `finishing_5p`), each run as soon as its layer is solved and
the layers below it are finished: a build stopped in its 5-player solve has the smaller layers'
probabilities already. The strategies are read back from the warehouse
(`equilibrium_nodes`) and each state's hand outcomes computed from them
(:mod:`engine.profile_outcomes`), so the asset also checks the stored equilibrium against the
solve: the finishing probabilities weighted by the payouts must give back `equilibrium_values`.
Each finished layer is kept while the equilibrium is the same (:mod:`assets.resume`, in
`.cache/finishing/`, stamped with a digest of the layers up to its own): a rebuild reads it back.
Within a layer, the hand outcomes of the states finished are saved every 5 minutes (the 45-unit
5-player layer's took 22.6 minutes), so an interrupt loses at most those minutes.
"""

import time

import dagster as dg
import duckdb
import numpy as np
import pandas as pd

from assets.ex_post import equilibrium_fingerprint, read_strategies
from assets.paths import finishing_unit
from assets.resources import GameResource, WarehouseResource, skipped_layer
from assets.resume import KEPT_UNIT_COMPUTED, UnitCheckpoint, game_cache_dir, rows_of_kept_unit, warehouse_rows_digest
from assets.solve import (equilibrium_tensors, lower_layers, per_layer_asset, per_layer_chain,
                          require_strategies)
from engine.config import GameConfig
from engine.policy_evaluation import finishing_probabilities as layer_finishing
from engine.profile_outcomes import outcome_probabilities
from engine.solve_progress import outcome_log_line
from engine.layers import compile_layer
from engine.states import n_states
from warehouse import db

CHECKS = {
    "finishing_probabilities_sum_to_1": "every (state, position, place) has a probability, and they sum to 1 over the "
                                        "places of every (state, position) and over the positions of every (state, "
                                        "place), within 1e-6",
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


def _errors(con, cfg: GameConfig, n: int) -> tuple[float, float, int, int]:
    """(largest |Σ − 1| over the places of a (state, position) and over the positions of a (state,
    place), largest |Σ_q P(place q)·payout_q − equilibrium value| in $, the non-NULL probabilities,
    the (state, position) pairs compared with a value) over the n-player layer. The counts tell a
    complete layer (states × n × n probabilities, states × n pairs) from one with rows missing,
    which the sums alone would not."""
    sums, probabilities = con.execute("""
        SELECT coalesce(max(abs(s - 1)), 0), (SELECT count(probability) FROM finishing WHERE game = ? AND players = ?)
        FROM (
          SELECT sum(probability) s FROM finishing WHERE game = ? AND players = ? GROUP BY state_id, position
          UNION ALL
          SELECT sum(probability) FROM finishing WHERE game = ? AND players = ? GROUP BY state_id, place)""",
                                      [cfg.name, n] * 3).fetchone()
    values, pairs = con.execute("""
        SELECT coalesce(max(abs(f.paid - v.value)), 0), count(v.value) FROM (
          SELECT f.players, f.state_id, f.position,
                 sum(f.probability * coalesce(list_extract(g.payouts, f.place), 0)) AS paid
          FROM finishing f JOIN games g USING (game) WHERE f.game = ? AND f.players = ? GROUP BY ALL) f
        JOIN equilibrium_values v USING (players, state_id, position) WHERE v.game = ?""",
                                [cfg.name, n, cfg.name]).fetchone()
    return float(sums), float(values), int(probabilities), int(pairs)


def _check_results(con, cfg: GameConfig, n: int) -> list[dg.AssetCheckResult]:
    sum_err, value_err, probabilities, pairs = _errors(con, cfg, n)
    m = n_states(cfg.units, n)
    return [
        dg.AssetCheckResult(check_name="finishing_probabilities_sum_to_1",
                            passed=bool(sum_err <= 1e-6 and probabilities == m * n * n),
                            metadata={"max_error": sum_err, "probabilities": probabilities,
                                      "expected_probabilities": m * n * n,
                                      "rule": "over the places of every (state, position) and over the positions "
                                              "of every (state, place)"}),
        dg.AssetCheckResult(check_name="finishing_gives_back_the_values",
                            passed=bool(value_err <= 1e-6 and pairs == m * n),
                            metadata={"max_error_usd": value_err, "pairs_compared": pairs, "expected_pairs": m * n,
                                      "rule": "Σ_place P(place)·payout = the equilibrium value, every (state, position)"}),
    ]


def _shown_state(con: duckdb.DuckDBPyConnection, cfg: GameConfig, n: int) -> int:
    """The state a layer's preview shows: the game's start state in its own layer, else state 0."""
    start = con.execute("""SELECT s.state_id FROM states s JOIN games g USING (game)
                           WHERE s.game = ? AND s.players = ? AND s.stacks = g.start""", [cfg.name, n]).fetchone()
    return int(start[0]) if start else 0


def _finishing_asset(n: int, deps: list) -> dg.AssetsDefinition:
    name = f"finishing_{n}p"

    @per_layer_asset(name, deps, CHECKS,
                     f"The equilibrium's finishing probabilities of the {n}-player layer (SPEC §6): for every "
                     f"(state, position) the probability of each place, by the policy evaluation of the stored "
                     f"strategies with unit prize vectors. Table `finishing`. Checks that they give back the "
                     f"solve's values.")
    def layer_finishing_asset(context: dg.AssetExecutionContext, game: GameResource,
                              warehouse: WarehouseResource) -> dg.MaterializeResult:
        cfg = game.config()
        if n > cfg.players:
            return skipped_layer(cfg, CHECKS)
        t0 = time.perf_counter()
        m = n_states(cfg.units, n)
        with warehouse.connect() as con:
            done = UnitCheckpoint(game_cache_dir("finishing", cfg),
                                  {"equilibrium": equilibrium_fingerprint(con, cfg.name, max_players=n)})
            kept, = con.execute("SELECT count(*) FROM finishing WHERE game = ? AND players = ?",
                                [cfg.name, n]).fetchone()
            lower = lower_layers(con, cfg, n, "finishing", "probability", "finishing", "finishing probabilities",
                                 places=cfg.players)
            require_strategies(con, cfg, name, layers=[n])
        unit = done.load(finishing_unit(n))
        found = None
        if unit is not None:  # finished by an earlier run for this equilibrium (maybe for a game of another name)
            with warehouse.connect() as con:
                found = rows_of_kept_unit(con, done, finishing_unit(n), unit, "finishing",
                                          {"game": cfg.name, "players": n}, unit["rows"], kept)
        computed = "in this run"
        if found is not None:
            rows = unit["rows"]
            computed = KEPT_UNIT_COMPUTED[found]
            context.log.info(f"{n}-player layer: finishing probabilities computed {computed} ({rows} rows)")
        else:  # the hand trees only when they are needed (about 2 minutes for the 45-unit 5-player layer)
            stacks, hands = compile_layer(cfg.units, n, cfg.payouts)
            with warehouse.connect() as con:
                strategies = read_strategies(con, cfg.name, n, len(stacks))
            probs = outcome_probabilities(hands, strategies, equilibrium_tensors(warehouse.path, cfg),
                                          progress=lambda event: context.log.info(outcome_log_line(event)),
                                          checkpoint=done.work_dir(finishing_unit(n)))
            frame = finishing_rows(layer_finishing(hands, probs, n, lower, cfg.players))  # lower: the layers below n
            key = {"game": cfg.name, "players": n}
            with warehouse.connect() as con:
                rows = db.replace_rows(con, "finishing", frame, key)
                record = {"rows": len(frame), "rows_digest": warehouse_rows_digest(con, "finishing", key)}
            done.save(finishing_unit(n), record, rows=frame)
            context.log.info(f"{n}-player layer: finishing probabilities of {m:,} states in "
                             f"{time.perf_counter() - t0:.2f} s")
        with warehouse.connect() as con:
            checks = _check_results(con, cfg, n)
            preview = db.preview_markdown(con, """
                SELECT s.stacks, s.positions[f.position + 1] AS seat, list(round(f.probability, 4) ORDER BY f.place)
                       AS places
                FROM finishing f JOIN states s USING (game, players, state_id)
                WHERE f.game = ? AND f.players = ? AND f.state_id = ? GROUP BY ALL ORDER BY any_value(f.position)""",
                                           [cfg.name, n, _shown_state(con, cfg, n)])
        return dg.MaterializeResult(
            metadata={"game": cfg.name, "computed": computed, "states": m, "rows": rows, "dagster/row_count": rows,
                      "wall_s": round(time.perf_counter() - t0, 2),
                      "preview": dg.MetadataValue.md(preview)},
            check_results=checks)

    return layer_finishing_asset


FINISHING_ASSETS = per_layer_chain(_finishing_asset)
"""finishing_2p … finishing_5p: each layer's asset needs its layer solved and the layers below it finished."""
