"""Deviation statistics (SPEC §7.3–7.4): how far every model's payoffs are from the equilibrium.

The statistics are DuckDB views over the sweeps' and the solve's tables (`model_values`,
`deviation_summary`, `deviation_by_stack`, defined in :mod:`warehouse.schema`), so a query always
sees the tables as they are. This asset is their node in the graph: it runs them once the model
sweeps are done, checks them (every model compared on every (state, position), the averaged
finishing probabilities of every stack summing to 1) and reports the headline figures, the
published result of the lab, in its metadata.

The ICM family's payoffs need no sweep (`equity_model_tables`), so a build that leaves the sweeps
out (`jamfold build --skip-models`, for the `thesis` game's 140-175 h of them) still compares those
three with the equilibrium as soon as it is solved: run with ``sweeps_left_out``, the asset expects
the ICM family and the FGS depths the warehouse already holds, and names the others as pending.
"""

import time

import dagster as dg
import pandas as pd
from pydantic import Field

from assets.fgs import fgs_strategies
from assets.finishing import FINISHING_ASSETS
from assets.model_analysis import model_strategies
from assets.models import equity_model_tables
from assets.resources import GameResource, WarehouseResource, blocking_checks
from engine.config import MODELS, model_names
from engine.states import n_states
from warehouse import db

DEVIATION_CHECKS = {
    "every_model_compared_everywhere": "every configured model has a payoff and an equilibrium value on every "
                                       "(state, position) of every layer of the game, and no other model appears "
                                       "(a build without the sweeps: the ICM family and the FGS depths already "
                                       "stored)",
    "finishing_by_stack_sums_to_1": "every (player count, stack) of the game is there, and its average finishing "
                                    "probabilities sum to 1 over the places (within 1e-9)",
}


class DeviationConfig(dg.Config):
    sweeps_left_out: bool = Field(default=False, description=(
        "The build leaves the model sweeps out (`--skip-models`): compare the ICM family and the FGS depths "
        "already in the warehouse, and report the other configured models as pending instead of failing."))


def expected_models(configured: list[str], present: set[str], sweeps_left_out: bool) -> list[str]:
    """The models that must be compared on every (state, position): all configured ones, or, when the
    sweeps are left out, the ICM family (valued without a sweep) and the FGS depths already stored."""
    if not sweeps_left_out:
        return configured
    return [m for m in configured if m in MODELS or m in present]


def _headline(con, game: str) -> pd.DataFrame:
    """MAPD (%) and MAD ($) per model over every layer, plain and position-averaged."""
    return con.execute("""
        SELECT model, round(any_value(mapd_pct) FILTER (WHERE averaging = 'plain'), 4) AS mapd_pct,
               round(any_value(mad) FILTER (WHERE averaging = 'plain'), 5) AS mad_usd,
               round(any_value(mapd_pct) FILTER (WHERE averaging = 'position-averaged'), 4) AS mapd_pa_pct,
               round(any_value(mad) FILTER (WHERE averaging = 'position-averaged'), 5) AS mad_pa_usd
        FROM deviation_summary WHERE game = ? AND players IS NULL GROUP BY model ORDER BY mapd_pct""",
                       [game]).df()


def _mapd_by_players(con, game: str) -> pd.DataFrame:
    """Plain MAPD (%) per model and player count, one column per player count."""
    df = con.execute("""SELECT model, players, mapd_pct FROM deviation_summary
                        WHERE game = ? AND averaging = 'plain' AND players IS NOT NULL""", [game]).df()
    if df.empty:
        return df
    wide = df.pivot(index="model", columns="players", values="mapd_pct").round(4)
    wide.columns = [f"{int(n)} players" for n in wide.columns]
    return wide.reset_index()


def _largest_deviations(con, game: str) -> pd.DataFrame:
    """Per model, the (state, position) where its payoff is furthest from the equilibrium's."""
    return con.execute("""
        SELECT v.model, s.stacks, s.positions[v.position + 1] AS seat, round(v.payoff, 4) AS payoff,
               round(v.equilibrium, 4) AS equilibrium, round(v.deviation, 4) AS deviation_usd
        FROM model_values v JOIN states s USING (game, players, state_id)
        WHERE v.game = ? QUALIFY row_number() OVER (PARTITION BY v.model ORDER BY abs(v.deviation) DESC,
                                                    v.players, v.state_id, v.position) = 1
        ORDER BY abs(v.deviation) DESC""", [game]).df()


@dg.asset(group_name="analysis", kinds={"duckdb"},
          deps=[equity_model_tables, model_strategies, fgs_strategies, *FINISHING_ASSETS],
          check_specs=blocking_checks("deviation_statistics", DEVIATION_CHECKS),
          description="How far each model's payoffs are from the equilibrium (SPEC §7.3–7.4): views `model_values` "
                      "(every model's payoff per state and position next to the equilibrium's, plain and "
                      "position-averaged), `deviation_summary` (MAPD, MAD, min/max, overall and per player count) "
                      "and `deviation_by_stack` (per player count and stack, with finishing and winning "
                      "probabilities). Checks that every model is compared on every (state, position); with "
                      "`sweeps_left_out` (`--skip-models`) only the ICM family and the FGS depths already stored.")
def deviation_statistics(context: dg.AssetExecutionContext, config: DeviationConfig, game: GameResource,
                         warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    t0 = time.perf_counter()
    with warehouse.connect() as con:
        pairs = con.execute("SELECT coalesce(sum(players), 0) FROM states WHERE game = ?", [cfg.name]).fetchone()[0]
        compared = dict(con.execute("""SELECT model, count(*) FILTER (WHERE payoff IS NOT NULL
                                                                AND equilibrium IS NOT NULL)
                                       FROM model_values WHERE game = ? GROUP BY model""", [cfg.name]).fetchall())
        fin_err, by_stack_rows, stacks_seen = con.execute(
            # a stack without finishing probabilities (NULL from the view's LEFT JOIN) counts as a sum of 0
            "SELECT coalesce(max(abs(coalesce(list_sum(finishing), 0) - 1)), 0), count(*), "
            "count(DISTINCT (players, stack)) FROM deviation_by_stack WHERE game = ?",
            [cfg.name]).fetchone()
        headline, by_players = _headline(con, cfg.name), _mapd_by_players(con, cfg.name)
        summary_rows, = con.execute("SELECT count(*) FROM deviation_summary WHERE game = ?", [cfg.name]).fetchone()
        largest = _largest_deviations(con, cfg.name)
    # what a whole game holds (so that an empty or partly built warehouse cannot pass): every
    # (state, position) pair of the 2..players layers, and every stack 1 … units − (n − 1) of each
    expected_pairs = sum(n * n_states(cfg.units, n) for n in range(2, cfg.players + 1))
    expected_stacks = sum(cfg.units - n + 1 for n in range(2, cfg.players + 1))
    configured = model_names(cfg.fgs_depth)
    models = expected_models(configured, set(compared), config.sweeps_left_out)
    pending = [m for m in configured if m not in models]
    if pending:
        context.log.info(f"not compared yet (their values need the model sweeps, left out): {', '.join(pending)}")
    short = {m: int(compared.get(m, 0)) for m in models if compared.get(m, 0) != pairs}
    extra = sorted(set(compared) - set(configured))
    for row in headline.itertuples(index=False):
        context.log.info(f"{row.model}: MAPD {row.mapd_pct:.4f} %, MAD {row.mad_usd:.5f} $ "
                         f"(position-averaged {row.mapd_pa_pct:.4f} %, {row.mad_pa_usd:.5f} $)")
    checks = [
        dg.AssetCheckResult(check_name="every_model_compared_everywhere",
                            passed=pairs == expected_pairs and not short and not extra,
                            metadata={"pairs_per_model": int(pairs), "pairs_expected": expected_pairs,
                                      "models_short": {m: f"{k} of {pairs}" for m, k in short.items()},
                                      "models_not_configured": extra}),
        dg.AssetCheckResult(check_name="finishing_by_stack_sums_to_1",
                            passed=bool(fin_err <= 1e-9) and stacks_seen == expected_stacks,
                            metadata={"max_error": float(fin_err), "rows": int(by_stack_rows),
                                      "stacks": int(stacks_seen), "stacks_expected": expected_stacks}),
    ]
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "models": models, "models_pending": pending, "pairs_per_model": int(pairs),
                  "rows_deviation_by_stack": int(by_stack_rows), "dagster/row_count": int(summary_rows),
                  "deviation_summary": dg.MetadataValue.md(db.frame_markdown(headline)),
                  "mapd_pct_by_players": dg.MetadataValue.md(db.frame_markdown(by_players)),
                  "largest_deviations": dg.MetadataValue.md(db.frame_markdown(largest)),
                  # (numbers, so that the UI can plot a model's MAPD across builds)
                  **{f"mapd_pct_{row.model}": float(row.mapd_pct) for row in headline.itertuples(index=False)},
                  "wall_s": round(time.perf_counter() - t0, 2)},
        check_results=checks)
