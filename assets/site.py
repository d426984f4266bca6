"""The results website: pages rendered from the warehouse, built with mkdocs-material."""


import time

import dagster as dg

from assets.models import equity_model_tables, game_states
from assets.paths import build_dir
from assets.resources import GameResource, WarehouseResource
from assets.rollout import hand_classes, rollout_pairs, rollout_triples
from assets.ex_post import EX_POST_ASSETS
from assets.deviation import deviation_statistics
from assets.fgs import fgs_strategies
from assets.finishing import FINISHING_ASSETS
from assets.model_analysis import model_strategies
from assets.model_ex_post import ex_post_models
from assets.simulation import simulations
from assets.solve import LAYER_ASSETS
from sitegen.build import build_site, site_url
from sitegen.pages_home import scorecard_sql
from warehouse import db


@dg.asset(group_name="site", kinds={"mkdocs"},
          deps=[hand_classes, rollout_pairs, rollout_triples, game_states, equity_model_tables, *LAYER_ASSETS,
                *FINISHING_ASSETS, *EX_POST_ASSETS, model_strategies, fgs_strategies, deviation_statistics,
                ex_post_models, simulations],
          description="Static site in build/site (open build/site/index.html): home, showdown tables, equity models, "
                      "equilibrium, push/fold, solve quality, models vs equilibrium, model ranges, ex post, simulation, warehouse reference. Rebuilt as a whole and swapped in only when complete.")
def results_site(context: dg.AssetExecutionContext, game: GameResource, warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    t0 = time.perf_counter()
    site = build_site(cfg.name, warehouse.path, build_dir())
    sizes = {p.name: p.stat().st_size for p in site.glob("*.html")}  # (charts inline their rows)
    pages = sorted(sizes)
    largest = max(pages, key=sizes.get)
    with warehouse.connect(read_only=True) as con:  # the home page's headline, for the UI
        headline = con.execute(scorecard_sql(cfg.name)).df()
    context.log.info(f"site built in {site}")
    return dg.MaterializeResult(metadata={
        "path": dg.MetadataValue.path(str(site / "index.html")), "pages": len(pages),
        "page_files": ", ".join(pages), "pages_mb": round(sum(sizes.values()) / 1e6, 3),
        "largest_page": f"{largest} ({sizes[largest] / 1e6:.3f} MB)",
        "headline": dg.MetadataValue.md(db.frame_markdown(headline, decimals=4) if len(headline) else
                                        "nothing compared with the equilibrium yet (view `model_scorecard`)"),
        "site_url": site_url() or "none (JAMFOLD_SITE_URL unset: the site works from disk or a server's root)",
        "wall_s": round(time.perf_counter() - t0, 2)})
