"""Dagster definitions: the asset graph from showdown tables to the results site.

Which game is built comes from the environment (JAMFOLD_PROFILE or JAMFOLD_CONFIG); `./lab build`
and `./lab dagster` set it. See the README.
"""

from __future__ import annotations

import dagster as dg

from assets import deviation, ex_post, fgs, finishing, model_analysis, model_ex_post, models, rollout, simulation, site, solve
from assets.resources import column_schema, default_resources

ASSET_TABLES = {"hand_classes": "hand_classes", "rollout_pairs": "rollout_pairs", "rollout_triples": "rollout_triples",
                "game_states": "states", "equity_model_tables": "model_payoffs",
                **{f"solve_{n}p": solve.PRIMARY_TABLE for n in solve.LAYERS},
                **{f"finishing_{n}p": "finishing" for n in solve.LAYERS},
                **{f"ex_post_{n}p": "nemesis_values" for n in solve.LAYERS},
                "model_strategies": "model_nodes", "fgs_strategies": "fgs_values",
                "deviation_statistics": "deviation_summary", "ex_post_models": "nemesis_values",
                "simulations": "simulation"}
"""The warehouse table each asset's row count (``dagster/row_count``) counts, whose columns the
Dagster UI shows with it; an asset writes others too (their counts are in its metadata)."""


def _with_columns(spec: dg.AssetSpec) -> dg.AssetSpec:
    table = ASSET_TABLES.get(spec.key.to_user_string())
    if table is None:  # (the site)
        return spec
    return spec.merge_attributes(metadata={"dagster/column_schema": column_schema(table), "warehouse_table": table})


ALL_ASSETS = [rollout.hand_classes, rollout.rollout_pairs, rollout.rollout_triples,
              models.game_states, models.equity_model_tables, *solve.LAYER_ASSETS, *finishing.FINISHING_ASSETS, *ex_post.EX_POST_ASSETS,
              model_analysis.model_strategies, fgs.fgs_strategies, deviation.deviation_statistics,
              model_ex_post.ex_post_models, simulation.simulations,
              site.results_site]

build_all = dg.define_asset_job("build_all", selection=dg.AssetSelection.all(),
                                description="Every asset of the configured game, showdown tables to site.")

# One process: the numba kernels compile once and use every core, and the DuckDB file has one writer.
# (the UI's definitions carry each asset's table columns; `jamfold build` materializes ALL_ASSETS as they are)
defs = dg.Definitions(assets=dg.map_asset_specs(_with_columns, ALL_ASSETS), jobs=[build_all],
                      resources=default_resources(), executor=dg.in_process_executor)
