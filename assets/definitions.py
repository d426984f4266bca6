"""Dagster definitions: the asset graph from showdown tables to the results site.

Which game is built comes from the environment (JAMFOLD_PROFILE or JAMFOLD_CONFIG); `./lab build`
and `./lab dagster` set it. See the README.
"""

from __future__ import annotations

import dagster as dg

from assets import deviation, ex_post, fgs, finishing, model_analysis, model_ex_post, models, rollout, simulation, site, solve
from assets.resources import default_resources

ALL_ASSETS = [rollout.hand_classes, rollout.rollout_pairs, rollout.rollout_triples,
              models.game_states, models.equity_model_tables, *solve.LAYER_ASSETS, *finishing.FINISHING_ASSETS, *ex_post.EX_POST_ASSETS,
              model_analysis.model_strategies, fgs.fgs_strategies, deviation.deviation_statistics,
              model_ex_post.ex_post_models, simulation.simulations,
              site.results_site]

build_all = dg.define_asset_job("build_all", selection=dg.AssetSelection.all(),
                                description="Every asset of the configured game, showdown tables to site.")

# One process: the numba kernels compile once and use every core, and the DuckDB file has one writer.
defs = dg.Definitions(assets=ALL_ASSETS, jobs=[build_all], resources=default_resources(),
                      executor=dg.in_process_executor)
