"""The home page: what the site is, the headline of this build (how far each model is from the
equilibrium, `model_scorecard`), the game's config and tables, and how to rebuild and query it."""

from __future__ import annotations

import json

import duckdb
import numpy as np
import pandas as pd

from sitegen.charts import ICM_FAMILY
from sitegen.pages import (game_info, is_compared, is_modelled, is_simulated, is_solved, query_block, site_table,
                           tables_used)
from sitegen.pages_models import report_order

CONFIG_FIELDS = ("name", "players", "units", "payouts", "gamma", "start", "rollout_pairs", "rollout_triples",
                 "rollout_samples", "rollout_seed", "examples", "fgs_depth", "simulation_tournaments",
                 "direct_match_tournaments", "simulation_seed")
"""The fields of a game config (`engine.config.GameConfig`, read here from the warehouse's `games`
row: the site does not import the engine), in the order a config file lists them."""


def game_toml(cfg: dict) -> str:
    """The game's config as a TOML file that `./lab build --config` reads back to the same game
    (JSON's numbers, strings and lists are TOML's too)."""
    return "\n".join(f"{key} = {json.dumps(cfg[key])}" for key in CONFIG_FIELDS if key in cfg)


def scorecard_sql(game: str) -> str:
    """The home page's headline table: `model_scorecard` of the game, in the pages' row order."""
    return f"""SELECT model, mapd_pct, mapd_pa_pct, mad, sim_roi_pct, sim_roi_se_pct, nemesis_start_roi_pct,
       nemesis_max_gain
FROM model_scorecard WHERE game = '{game}' ORDER BY {report_order()}"""


PLAY_RANKED_AT = 3
"""The findings name the best and the worst model in play only when their simulated ROIs differ by
at least this many standard errors of the difference (the ROIs are Monte Carlo means)."""


def model_name(model: str) -> str:
    """A model as the pages' prose names it: "Harville", "FGS-2"."""
    return model.capitalize() if model in ICM_FAMILY else model


def _extremes(card: pd.DataFrame, column: str) -> tuple[pd.Series, pd.Series] | None:
    """The models' rows (not the equilibrium's) with the smallest and the largest ``column``, or
    None when fewer than two models have it."""
    rows = card[(card["model"] != "equilibrium") & card[column].notna()]
    if len(rows) < 2:
        return None
    return rows.loc[rows[column].idxmin()], rows.loc[rows[column].idxmax()]


def scorecard_findings(card: pd.DataFrame) -> list[str]:
    """The headline in words, each sentence read off the scorecard's rows: the models closest to and
    farthest from the equilibrium in payoffs, best and worst in play, least and most exploitable
    (a sentence only where at least two models have the number)."""
    found = []
    payoffs = _extremes(card, "mapd_pct")
    if payoffs is not None:
        low, high = payoffs
        found.append(f"In payoffs, {model_name(low.model)} is the closest to the equilibrium (MAPD "
                     f"{low.mapd_pct:.2f} %) and {model_name(high.model)} the farthest ({high.mapd_pct:.2f} %).")
    play = _extremes(card, "sim_roi_pct")
    if play is not None:
        low, high = play
        if high.sim_roi_pct - low.sim_roi_pct >= PLAY_RANKED_AT * np.hypot(high.sim_roi_se_pct, low.sim_roi_se_pct):
            found.append(f"In play, a player on {model_name(high.model)}'s strategies does best against an "
                         f"equilibrium table (ROI {high.sim_roi_pct:+.2f} ± {high.sim_roi_se_pct:.2f} %) and one on "
                         f"{model_name(low.model)}'s worst ({low.sim_roi_pct:+.2f} ± {low.sim_roi_se_pct:.2f} %).")
        else:
            found.append(f"In play, the models' simulated ROIs ({low.sim_roi_pct:+.2f} to {high.sim_roi_pct:+.2f} %) "
                         f"differ by less than {PLAY_RANKED_AT} standard errors of the difference: these "
                         f"tournaments do not tell the models apart.")
    nemesis = _extremes(card, "nemesis_start_roi_pct")
    if nemesis is not None:
        low, high = nemesis
        found.append(f"A nemesis wins least against {model_name(low.model)}'s profile from the start state "
                     f"({low.nemesis_start_roi_pct:.2f} % of a fair share) and most against "
                     f"{model_name(high.model)}'s ({high.nemesis_start_roi_pct:.2f} %).")
    return found


def scorecard_section(con: duckdb.DuckDBPyConnection, game: str) -> str:
    """"What this build found": the scorecard, its findings in words and the pages behind each
    column; empty until the equilibrium is solved (before that no column has a number)."""
    if not is_solved(con, game):
        return ""
    card = con.execute(scorecard_sql(game)).df()
    if card.empty:
        return ""
    link = {True: "[{}]({}.md)", False: "{}"}
    models_page = link[is_compared(con, game)].format("Models vs equilibrium", "models")
    simulation_page = link[is_simulated(con, game)].format("Simulation", "simulation")
    ex_post_page = link[is_modelled(con, game)].format("Ex post", "ex-post")
    blanks = card.drop(columns="model")[card["model"] != "equilibrium"].isna().to_numpy().any()
    blank_note = (" A blank cell is an analysis this build has not run for that profile (yet): a `--skip-models` "
                  "build compares the ICM family's payoffs but plays and checks only the equilibrium."
                  if blanks else "")
    findings = " ".join(scorecard_findings(card))
    return f"""## What this build found

{findings}

The table says how far each equity model is from the equilibrium of this game (view
`model_scorecard`). In payoffs: the mean absolute percentage deviation of the model's values from
the equilibrium's over every state and position, plain (`mapd_pct`) and position-averaged
(`mapd_pa_pct`), and the mean absolute deviation in $ (`mad`; page {models_page}). In play: the
ROI of one player on the model's strategies at a table of equilibrium players, mean over his
starting seats, with its standard error (`sim_roi_pct`, `sim_roi_se_pct`; page {simulation_page}).
Exploitability: a nemesis's mean gain against the profile from the start state, as a share of a
fair share (`nemesis_start_roi_pct`), and his largest gain in any state, in $ (`nemesis_max_gain`;
page {ex_post_page}). The equilibrium's row is the reference: its simulated ROI is the control
(zero within its error) and its nemesis gains are what the per-hand tolerance gamma leaves.{blank_note}

{site_table(card, decimals=4)}

"""


def home_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    cfg = game_info(con, game)
    builds_sql = f"""SELECT kind, rollout, mode, boards_per_matchup, precision, rows, round(wall_s, 1) AS wall_s,
       date_trunc('second', built_at) AS built_at
FROM rollout_tables WHERE {tables_used(cfg)} ORDER BY kind"""
    builds = con.execute(builds_sql).df()
    params = pd.DataFrame([
        ("players", cfg["players"]), ("units (SB = 1, BB = 2)", cfg["units"]),
        ("payouts ($)", ", ".join(f"{p:g}" for p in cfg["payouts"])), ("gamma ($ per hand)", cfg["gamma"]),
        ("start stacks (acting order)", ", ".join(map(str, cfg["start"]))),
        ("pair table", cfg["pairs_id"]), ("triple table", cfg["triples_id"] or "none (a heads-up game)")],
        columns=["parameter", "value"])
    solved = is_solved(con, game)
    equilibrium_links = ("- [Equilibrium](equilibrium.md) — equilibrium payoffs, finishing and winning probabilities by stack.\n"
                         "- [Push/fold charts](push-fold.md) — jam ranges at every decision node of notable states, "
                         "and of any state picked from a layer small enough to put on the page.\n"
                         "- [Solve quality](solve-quality.md) — per-state exploitability and the PI-CFR+ convergence log.\n"
                         if solved else "")
    model_links = ("- [Models vs equilibrium](models.md) — each model's payoffs against the equilibrium's: deviation "
                   "statistics, by stack size, FGS depth.\n" if is_compared(con, game) else "")
    model_links += ("- [Model ranges](model-ranges.md) — the models' jamming and calling ranges at every decision "
                    "node of the start state next to the equilibrium's.\n"
                    "- [Ex post](ex-post.md) — how much a nemesis wins against each model's strategy profile.\n"
                    if is_modelled(con, game) else "")
    model_links += ("- [Simulation](simulation.md) — Monte Carlo tournaments from the start state: the equilibrium "
                    "against itself (the control), one model player against an equilibrium table, and direct "
                    "matches against Harville (a build still sweeping its models says which are to come).\n"
                    if is_simulated(con, game) else "")
    headline = scorecard_section(con, game)
    return f"""# The open tournament equity lab

This site publishes a reproducible study of **poker tournament endgames** played jam-or-fold by 2–5
players: it builds exact all-in showdown tables for the 169 preflop hand classes, evaluates the
popular tournament *equity models* (ICM / Malmuth-Harville, Malmuth-Weitzman, Roberts, and Future
Game Simulation), solves the whole tournament to a near-exact Nash equilibrium, and measures against
it how wrong those models are: in payoffs, in play, and in tournaments played out.

Every number on these pages is a row of a table or view in the DuckDB warehouse; the
[Warehouse](warehouse.md) page lists them all, and each page ends with the SQL behind it. A
reference such as "SPEC §6" names the section of the lab's rulebook (`SPEC.md`, the rules of the
game, the tables, the models and the analyses) where a definition comes from; the rulebook is kept
beside the code, not published here, and each page says in its own words what it shows.

{headline}## This build: game `{game}`

{site_table(params)}

### Showdown tables used

{site_table(builds) if len(builds) else "_not built yet_"}

Exact tables enumerate every board for every deal (suit symmetry and board grouping make that
fast); sampled tables draw a stated number of boards per matchup with a fixed seed, and
`precision` is the largest standard error of any probability in the table.

## Reproduce it

This game's config, as built (save it as `{game}.toml`):

```toml
{game_toml(cfg)}
```

```bash
# in a checkout of the lab's repository, with {game}.toml saved in it:
./lab build --config {game}.toml           # the environment from uv.lock, the game, this site
./lab test                                 # the test suite
JAMFOLD_CONFIG={game}.toml ./lab dagster   # the Dagster UI on the game's assets
```

`./lab build` alone builds the default game `quick`, and `--profile gs08` or `--profile thesis`
the lab's other named games. The warehouse is `warehouse/lab.duckdb`; query it with
`./lab jamfold sql "SELECT * FROM games"` (read-only; `--csv` for every row as CSV), from the
lab's Python (`.venv/bin/python`) with `duckdb.connect(..., read_only=True)`, or with DuckDB's
own shell, `duckdb -readonly warehouse/lab.duckdb`, if you installed it.

## Query it

The game's parameters (its config as JSON, with the prize pool) and the showdown tables it used:
{query_block(f"SELECT * FROM games WHERE game = '{game}'")}
{query_block(builds_sql)}
{"The headline table:" + query_block(scorecard_sql(game)) if headline else ""}

## Pages

- [Showdown tables](showdown.md) — heads-up equity of every class against every class, notable matchups.
- [Equity models](equity-models.md) — the three models on the config's example stacks and across the game's states.
{equilibrium_links}{model_links}- [Warehouse](warehouse.md) — every table and view, its columns and units, and example queries.
"""
