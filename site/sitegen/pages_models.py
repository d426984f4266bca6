"""Model pages: deviation of every equity model from the equilibrium, ex post of every profile, model ranges."""

from __future__ import annotations

import re

import duckdb
import numpy as np
import pandas as pd

from sitegen import charts
from sitegen.embed import chart_html
from sitegen.pages import game_info, node_name_sql, query_block, site_table


def model_order(models: list[str]) -> list[str]:
    """ICM family first, then FGS by depth."""
    def key(m: str):
        fgs = re.fullmatch(r"FGS-(\d+)", m)
        return (1, int(fgs.group(1))) if fgs else (0, charts.ICM_FAMILY.index(m) if m in charts.ICM_FAMILY else 9)
    return sorted(models, key=key)


def configured_models(cfg: dict) -> list[str]:
    """The models the game is configured to evaluate: the ICM family and FGS-1 … FGS-fgs_depth."""
    return [*charts.ICM_FAMILY, *[f"FGS-{d}" for d in range(1, int(cfg.get("fgs_depth", 0)) + 1)]]


def _models_named(cfg: dict) -> str:
    """The configured models in words: no FGS range for fgs_depth 0 ("FGS-1 … FGS-0") or 1."""
    depth = int(cfg.get("fgs_depth", 0))
    fgs = {0: "", 1: " and FGS-1", 2: ", FGS-1 and FGS-2"}.get(depth, f" and FGS-1 … FGS-{depth}")
    explained = " (Future Game Simulation: d hands solved ahead, then Harville)" if depth else ""
    return f"Harville (ICM), Weitzman, Roberts{fgs}{explained}"


def report_order(column: str = "model") -> str:
    """SQL sort key of the pages' row order: the equilibrium, then :func:`model_order`'s (the ICM
    family, FGS by depth), so that a page's printed query lists its rows as its table does."""
    return (f"CASE {column} WHEN 'equilibrium' THEN -1 WHEN 'harville' THEN 0 WHEN 'weitzman' THEN 1 "
            f"WHEN 'roberts' THEN 2 ELSE 100 + TRY_CAST(split_part({column}, '-', 2) AS INTEGER) END")


def _summary(con: duckdb.DuckDBPyConnection, game: str, averaging: str) -> pd.DataFrame:
    df = con.execute("""SELECT model, mapd_pct, min_relative_pct, max_relative_pct, mad, min_deviation, max_deviation,
                               pairs FROM deviation_summary WHERE game = ? AND averaging = ? AND players IS NULL""",
                     [game, averaging]).df()
    order = model_order(list(df["model"]))
    return df.set_index("model").loc[order].reset_index()


def _moves_block(moves: pd.DataFrame) -> str:
    """How far each FGS depth still moves the values (nothing when the game has no FGS depth)."""
    if moves.empty:
        return ""
    return f"""
How far each depth still moves the values: |vᵈ − vᵈ⁻¹| over every (state, position), in $
(view `fgs_value_moves`; v⁰ = Harville).

{site_table(moves, decimals=4)}
"""


def _pending_block(pending: list[str]) -> str:
    """The configured FGS depths this build has not compared, and why (a `--skip-models` build)."""
    if not pending:
        return ""
    return f"""
**Not compared yet: {", ".join(pending)}.** Their values come from the model sweeps (asset
`fgs_strategies`, SPEC §7.2), which are not in the warehouse yet: left out by `./lab build
--skip-models`, or still to run in a build under way. The models'
strategies, and with them the Model ranges and Ex post pages and the models' simulated
tournaments, wait on those sweeps too.
The same command without `--skip-models` runs them.
"""


def _depth_block(depth: pd.DataFrame, moves: pd.DataFrame) -> str:
    """The FGS depth curve, once some FGS depth is compared (Harville alone makes no curve)."""
    if not (depth["depth"] > 0).any():
        return ""
    return f"""## FGS depth

MAPD and MAD of FGS-d against the depth d (d = 0 is Harville, the starting point of FGS).
{chart_html(charts.depth_curve(depth[["depth", "mapd_pct", "mad"]]), "fgs-depth")}
{_moves_block(moves)}"""


def _sweeps_block(sweeps: pd.DataFrame, gamma: float) -> str:
    """The model sweeps' totals (table `model_sweeps`), or a note that none has run."""
    if sweeps.empty:
        return ("No model's strategy has been solved yet (assets `model_strategies`, `fgs_strategies`); the "
                "payoffs above need none: the ICM family's come from the stacks alone.")
    return f"""Each model's strategy: every state's hand solved with CFR+ to gamma = {gamma:g} $ with the
successor states valued by the model (table `model_sweeps`).

{site_table(sweeps, decimals=6)}"""


def _mapd_by_players(rows: pd.DataFrame) -> pd.DataFrame:
    """MAPD (%) of each model (rows, in report order) for each player count (columns)."""
    wide = rows.pivot_table(index="model", columns="players", values="mapd_pct")
    wide = wide.loc[model_order(list(wide.index))]
    wide.columns = [f"MAPD % ({c} players)" for c in wide.columns]
    return wide.reset_index()


def deviation_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    cfg = game_info(con, game)
    plain = _summary(con, game, "plain")
    if plain.empty:
        return ("# Models vs equilibrium\n\nNo model has been compared with the equilibrium yet (assets "
                "`model_strategies`, `fgs_strategies`, `deviation_statistics`).\n")
    averaged = _summary(con, game, "position-averaged")
    per_layer_sql = f"""SELECT averaging, model, players, mapd_pct, mad, min_relative_pct, max_relative_pct
FROM deviation_summary WHERE game = '{game}' AND players IS NOT NULL ORDER BY averaging, {report_order()}, players"""
    per_layer = con.execute(per_layer_sql).df()
    wide = {how: _mapd_by_players(per_layer[per_layer["averaging"] == how]) for how in ("plain", "position-averaged")}
    by_stack_sql = f"""SELECT players, stack, model, mean_deviation, mean_abs_deviation
FROM deviation_by_stack WHERE game = '{game}' ORDER BY players, model, stack"""
    by_stack = con.execute(by_stack_sql).df().rename(columns={"model": "series"})
    models = model_order(list(by_stack["series"].unique()))
    by_stack["series"] = pd.Categorical(by_stack["series"], models)
    by_stack = by_stack.sort_values(["series", "players", "stack"])
    by_stack["series"] = by_stack["series"].astype(str)
    signed = by_stack.rename(columns={"mean_deviation": "value"})[["players", "stack", "series", "value"]]
    absolute = by_stack.rename(columns={"mean_abs_deviation": "value"})[["players", "stack", "series", "value"]]
    depth = plain[plain["model"].str.startswith("FGS") | (plain["model"] == "harville")].copy()
    depth["depth"] = depth["model"].map(lambda m: 0 if m == "harville" else int(m.split("-")[1]))
    moves_sql = f"""SELECT 'FGS-' || depth AS model, max_abs_move, mean_abs_move
FROM fgs_value_moves WHERE game = '{game}' AND players IS NULL ORDER BY depth"""
    moves = con.execute(moves_sql).df()
    sweeps_sql = f"""SELECT model, sum(states)::BIGINT AS states, sum(cfr_iterations)::BIGINT AS cfr_iterations,
       max(max_exploitability) AS max_exploitability, round(sum(wall_s), 1) AS wall_s
FROM model_sweeps WHERE game = '{game}' GROUP BY model ORDER BY {report_order()}"""
    sweeps = con.execute(sweeps_sql).df()  # (in the page's order: report_order is model_order in SQL)
    sweeps["wall_s"] = sweeps["wall_s"].map("{:.1f}".format)  # seconds to 0.1 s, not 6 decimals
    pending = [m for m in configured_models(cfg) if m.startswith("FGS-") and m not in set(plain["model"])]
    compared = sorted(set(per_layer["players"].astype(int)))
    unsolved = [n for n in range(2, int(cfg["players"]) + 1) if n not in compared]
    partial = (f"\n**Layers compared so far: {', '.join(map(str, compared))} players of {cfg['players']}.** The "
               f"statistics cover only their states and positions: the equilibrium of the "
               f"{', '.join(map(str, unsolved))}-player layer is not in the warehouse yet.\n") if unsolved else ""
    return f"""# Models vs equilibrium

How far each equity model's payoffs are from the equilibrium payoffs of game `{game}`, over every
(state, position) pair of every player count (SPEC §7.3). Models: {_models_named(cfg)}.
Relative deviation = (model − equilibrium) / equilibrium; MAPD = mean |relative deviation| in %,
MAD = mean |model − equilibrium| in $.
{partial}{_pending_block(pending)}
## Deviation summary

{site_table(plain, decimals=4)}

**Position-averaged** (each stack's payoffs averaged over every distinct seating of the same
multiset of stacks, which removes the effect of the blinds and position. SPEC §7.3 averages the
equilibrium's payoffs; the model's are averaged the same way, which changes nothing for Harville,
Weitzman and Roberts, whose payoffs do not depend on the seat, and compares FGS-d, which sees the
blinds, with its own average instead of counting its seat-by-seat values as errors):

{site_table(averaged, decimals=4)}

**MAPD per player count**

{site_table(wide["plain"], decimals=4)}

**MAPD per player count, position-averaged**

{site_table(wide["position-averaged"], decimals=4)}

## By stack size

Mean (model − equilibrium) in $ for each stack size, all models in one chart per player count:
above zero the model overvalues the stack.
{chart_html(charts.value_by_stack(signed, "mean (model − equilibrium) ($)"), "dev-signed-by-stack")}

Mean |model − equilibrium| in $ for each stack size:
{chart_html(charts.value_by_stack(absolute, "mean |model − equilibrium| ($)"), "dev-abs-by-stack")}

{_depth_block(depth, moves)}
## The model strategy solves

{_sweeps_block(sweeps, cfg['gamma'])}

## Query it

{query_block(f"SELECT * FROM deviation_summary WHERE game = '{game}' AND players IS NULL ORDER BY averaging, "
                f"{report_order()}")}

The MAPD per player count, and the by-stack charts (`SELECT *` for every column of `deviation_by_stack`):
{query_block(per_layer_sql)}
{query_block(by_stack_sql)}
{query_block(f'''SELECT model, stack, payoff, equilibrium, relative_deviation_pct FROM model_values
WHERE game = '{game}' AND players = {cfg['players']} ORDER BY abs(relative_deviation_pct) DESC LIMIT 10''')}

How far each FGS depth still moves the values (`fgs_value_moves`), and the model strategy solves
summed over the layers (`model_sweeps`, one row per model and layer):

{query_block(moves_sql)}
{query_block(sweeps_sql)}
"""


def ex_post_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    cfg = game_info(con, game)
    summary = con.execute("""SELECT profile, start_mean_roi_pct, start_max_roi_pct, start_mean_gain, start_max_gain,
                                    all_mean_gain, all_max_gain, pairs FROM ex_post WHERE game = ?""", [game]).df()
    if summary.empty:
        return "# Ex post\n\nNo profile has been checked yet (assets `ex_post_2p` … `ex_post_5p`, `ex_post_models`).\n"
    profiles = ["equilibrium", *model_order([p for p in summary["profile"] if p != "equilibrium"])]
    summary = summary.set_index("profile").loc[[p for p in profiles if p in set(summary["profile"])]].reset_index()
    fair = float(sum(cfg["payouts"])) / cfg["players"]
    by_layer_sql = f"""SELECT profile AS series, players, avg(gain) AS mean_gain, max(gain) AS max_gain
FROM nemesis_values WHERE game = '{game}' GROUP BY ALL ORDER BY ALL"""
    by_layer = con.execute(by_layer_sql).df()
    return f"""# Ex post: how exploitable is each profile?

For the equilibrium and for every model's strategy profile, a single *nemesis* player
best-responds over the whole remaining tournament while everybody else plays the profile (SPEC
§6, §7.5). His gain over the profile's own value, in $, measures how much the profile leaves on
the table. Start-state ROI = gain / fair share ({fair:g} $) × 100. The equilibrium's gain is only
the accumulated per-hand tolerance gamma = {cfg['gamma']:g} $; a model's gain is what a player who
knows the model is wrong could win against a table that believes it.

{site_table(summary, decimals=5)}

{chart_html(charts.ex_post_bars(by_layer, profiles), "ex-post-bars")}

## Query it

The table (`ex_post`), the chart's gains per player count, and the largest gains:

{query_block(f"SELECT * FROM ex_post WHERE game = '{game}' ORDER BY {report_order('profile')}")}
{query_block(by_layer_sql)}
{query_block(f'''SELECT profile, players, state_id, position, profile_value, nemesis_value, gain
FROM nemesis_values WHERE game = '{game}' ORDER BY gain DESC LIMIT 10''')}
"""


def model_ranges_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    cfg = game_info(con, game)
    start = list(cfg["start"])
    stacks = f"[{', '.join(map(str, start))}]"
    grids_sql = f"""WITH s AS (SELECT players, state_id FROM states WHERE game = '{game}' AND stacks = {stacks}),
profiles AS (
  SELECT 'equilibrium' AS model, j.players, j.state_id, j.node, j.class_id, j.jam_probability
  FROM equilibrium_jam j JOIN s USING (players, state_id) WHERE j.game = '{game}'
  UNION ALL
  SELECT m.model, m.players, m.state_id, m.node, m.class_id, m.jam_probability
  FROM model_jam m JOIN s USING (players, state_id) WHERE m.game = '{game}')
SELECT b.model, b.node, {node_name_sql('e')} AS node_name, len(e.jammed_before) = 0 AS first_in,
       h.grid_row, h.grid_col, h.label, h.combos, b.jam_probability
FROM profiles b JOIN equilibrium_nodes e ON e.game = '{game}' AND e.players = b.players
                                        AND e.state_id = b.state_id AND e.node = b.node
JOIN hand_classes h ON h.class_id = b.class_id"""
    share_sql = f"""SELECT model, node, node_name, first_in, 100 * sum(combos * jam_probability) / 1326 AS jam_pct
FROM ({grids_sql})
GROUP BY model, node, node_name, first_in"""
    grids = con.execute(grids_sql).df()
    if grids.empty or set(grids["model"]) == {"equilibrium"}:
        return "# Model ranges\n\nNo model strategies yet (assets `model_strategies`, `fgs_strategies`).\n"
    models = ["equilibrium", *model_order([m for m in grids["model"].unique() if m != "equilibrium"])]
    rank = {m: i for i, m in enumerate(models)}
    share = con.execute(share_sql).df()
    nodes = share.drop_duplicates("node").sort_values("node")
    table = share.pivot_table(index="node_name", columns="model", values="jam_pct")
    table = table.loc[nodes["node_name"], [m for m in models if m in table.columns]].reset_index()
    table = table.rename(columns={"node_name": "decision node"}).rename_axis(columns=None)
    first_in = nodes.loc[nodes["first_in"], "node_name"].tolist()
    facing = nodes.loc[~nodes["first_in"], "node_name"].tolist()
    # the charts' rows carry only the columns they draw: the page inlines every row, and a 5-player
    # start state with FGS-1…10 has about 57,000 cells (a row per grid: see charts.grid_rows)
    drawn = ["panel", "order", "grid_row", "grid_col", "label", "jam_probability"]
    panels = grids[grids["node_name"].isin(first_in)].assign(
        panel=lambda d: d["model"] + " · " + d["node_name"],
        order=lambda d: d["model"].map(rank) * 100 + d["node"])[drawn]
    facing_chart = ""
    if facing:
        by_model = grids[grids["node_name"].isin(facing)].assign(
            panel=lambda d: d["model"], node=lambda d: d["node_name"],
            order=lambda d: d["model"].map(rank))[["node", *drawn]]
        which = "the node" if len(facing) == 1 else f"the {len(facing)} nodes"
        facing_chart = f"""
## Facing a jam

The calling ranges of {which} where someone has jammed before: pick the node under the chart;
the equilibrium comes first, then each model.

{chart_html(charts.push_fold_grids_by_node(by_model, "jam (call) probability: ", facing,
                                           columns=min(3, len(models))), "model-ranges-facing")}
"""
    return f"""# Model ranges

Jamming ranges at the start state ({', '.join(map(str, start))}) of game `{game}`: the
equilibrium's and each model's (the model's strategy is the hand solved with successors valued
by the model). The table gives the share of all 1,326 hands jammed at every decision node, in %;
the grids below show every model's first-in ranges, a row of first-in nodes per model under the
equilibrium's, and then, one node at a time, the ranges that call a jam.

{site_table(table, decimals=2)}

## First in

{chart_html(charts.push_fold_grids(panels, "jam probability: the equilibrium, then each model",
                                   columns=len(first_in)), "model-ranges")}
{facing_chart}
## Query it

The jam probabilities of every node and model (the charts), the share of hands each jams
(the table), and the hands where a model's play differs most from the equilibrium's:

{query_block(grids_sql)}
{query_block(share_sql)}
{query_block(f'''SELECT m.model, m.node, m.label, m.jam_probability, e.jam_probability AS equilibrium
FROM model_jam m JOIN equilibrium_jam e USING (game, players, state_id, node, class_id)
JOIN states s USING (game, players, state_id)
WHERE m.game = '{game}' AND s.stacks = [{', '.join(map(str, start))}] AND m.jam_probability <> e.jam_probability
ORDER BY abs(m.jam_probability - e.jam_probability) DESC LIMIT 20''')}
"""


def simulation_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    cfg = game_info(con, game)
    sim = con.execute("""SELECT model, hero_position, hero_seat, mean_payoff, standard_error, roi_pct, roi_se_pct,
                                finishing, mean_hands, tournaments, seed FROM simulation WHERE game = ?""", [game]).df()
    if sim.empty:
        return "# Simulation\n\nNo simulation yet (asset `simulations`).\n"
    models = ["equilibrium", *model_order([m for m in sim["model"].unique() if m != "equilibrium"])]
    seats = sim.sort_values("hero_position")["hero_seat"].drop_duplicates().tolist()
    roi = sim.pivot_table(index="model", columns="hero_seat", values="roi_pct").loc[models, seats]
    roi_se = sim.pivot_table(index="model", columns="hero_seat", values="roi_se_pct").loc[models, seats]
    table = roi.copy().astype(object)
    for m in models:
        for s in seats:
            table.loc[m, s] = f"{roi.loc[m, s]:+.3f} ± {roi_se.loc[m, s]:.3f}"
    summary_sql = f"SELECT * FROM simulation_summary WHERE game = '{game}'"
    summary = con.execute(summary_sql).df().set_index("model").loc[models]
    table.insert(0, "mean ROI % over seats", [f"{summary.loc[m, 'mean_roi_pct']:+.3f} ± "
                                              f"{summary.loc[m, 'mean_roi_se_pct']:.3f}" for m in models])
    places = len(summary["finishing"].iloc[0])
    fin_table = pd.DataFrame(np.stack(summary["finishing"].to_numpy()), index=models,
                             columns=[f"P{q}" for q in range(1, places + 1)])
    depth_sql = f"""SELECT CASE WHEN s.model = 'harville' THEN 0 ELSE CAST(split_part(s.model, '-', 2) AS INTEGER) END
         AS depth, s.mean_roi_pct AS roi_pct, s.mean_roi_se_pct AS roi_se_pct, d.mapd_pct
FROM simulation_summary s JOIN deviation_summary d USING (game, model)
WHERE s.game = '{game}' AND (s.model = 'harville' OR s.model LIKE 'FGS-%')
  AND d.averaging = 'plain' AND d.players IS NULL ORDER BY depth"""
    depth = con.execute(depth_sql).df()
    matches_sql = f"""SELECT model_a, model_b, seatings, mean_roi_a_pct, mean_roi_a_se_pct, mean_roi_b_pct, mean_roi_b_se_pct,
       tournaments
FROM direct_match_summary WHERE game = '{game}' ORDER BY {report_order("model_b")}, {report_order("model_a")}"""
    matches = con.execute(matches_sql).df()
    per_seating = ", ".join(f"{t:,}" for t, in con.execute(
        "SELECT DISTINCT tournaments FROM direct_matches WHERE game = ? ORDER BY 1", [game]).fetchall())
    start_list = "[" + ", ".join(map(str, cfg["start"])) + "]"
    control_sql = f"""SELECT s.hero_seat, s.mean_payoff, s.standard_error, v.value AS equilibrium_value,
       (s.mean_payoff - v.value) / s.standard_error AS z
FROM simulation s
JOIN states t ON t.game = s.game AND t.players = {len(cfg["start"])} AND t.stacks = {start_list}
JOIN equilibrium_values v ON v.game = s.game AND v.players = t.players AND v.state_id = t.state_id
                         AND v.position = s.hero_position
WHERE s.game = '{game}' AND s.model = 'equilibrium' ORDER BY s.hero_position"""
    control = con.execute(control_sql).df()
    T, hands = int(sim["tournaments"].iloc[0]), float(sim["mean_hands"].mean())
    start = ", ".join(map(str, cfg["start"]))
    pending = [m for m in configured_models(cfg) if m not in models]
    pending_text = (f"\n\nNot simulated yet: {', '.join(pending)}. Their strategies need the model sweeps, which "
                    "this build left out (`--skip-models`) or has still to run; the same command without "
                    "`--skip-models` runs them.") if pending else ""
    depth_block = (f"""## FGS depth curve

Mean hero ROI over the seats (left: the FGS-d player's mean payoff against the fair share, the other
players on the equilibrium; bars ± one standard error) and MAPD of the payoffs against the
equilibrium (right) for FGS-d, d = 0 (Harville) … {cfg.get('fgs_depth', 0)}.
{chart_html(charts.depth_roi_curve(depth[["depth", "roi_pct", "roi_se_pct", "mapd_pct"]]), "sim-fgs-depth")}
""" if (depth["depth"] > 0).any() else "")
    matches_block = (f"""## Direct matches against Harville

Each model (side A) against Harville (ICM, side B) over all {2 ** cfg['players'] - 2} seatings of the
start state, {per_seating} tournaments a seating; mean ROI of a player on each side over all the
seatings, every seat alike (a seating with k players on A counts k times for A), ± one standard error.
The sides' ROIs are opposites: in every seating they sum to zero weighted by their seat counts, and
over all seatings the two sides hold equally many seats.

{site_table(matches, decimals=4)}
""" if not matches.empty else "")
    return f"""# Simulation

Monte Carlo tournaments of game `{game}` from the start state ({start}), drawing hands card by card
under the card model and showdown orders from the same class-level tables the solver uses (SPEC
§7.6). In each row one player — the hero — plays a model's strategies for the whole tournament,
and the other players the equilibrium; {T:,} tournaments per model and hero seat (about
{hands:.1f} hands each; each row's seed is in the table `simulation`, below). ROI = (mean prize −
fair share) / fair share × 100 with fair share = prize pool / players; ± is one standard error.
The `equilibrium` row is the control: everybody on the equilibrium, so its ROI is only the value of
the seat.{pending_text}

## Hero ROI (%) by starting seat

{site_table(table.reset_index().rename(columns={"model": "hero plays"}))}

## The control against the solved values

The all-equilibrium table's simulated mean payoff of each seat next to the equilibrium's value of
the start state from the exact policy evaluation ($); z = difference / standard error. The asset
check `equilibrium_matches_its_values` asks |z| ≤ 4 at every seat of every run, the seats beside
the hero's included (everybody plays the equilibrium), so its largest |z| (the asset's
`max_abs_z`) may exceed this table's.

{site_table(control, decimals=5)}

## The hero's finishing distribution (mean over seats)

{site_table(fin_table.reset_index().rename(columns={"index": "hero plays"}), decimals=4)}

{depth_block}
{matches_block}
## Query it

The ROI by seat (`simulation`), the means over the seats and the finishing distribution
(`simulation_summary`), the control against the solved values, the FGS depth curve, the direct
matches (`direct_match_summary`) and their seatings (`direct_matches`):

{query_block(f"SELECT model, hero_seat, roi_pct, roi_se_pct, finishing, tournaments, seed FROM simulation "
            f"WHERE game = '{game}' ORDER BY model, hero_position")}
{query_block(summary_sql)}
{query_block(control_sql)}
{query_block(depth_sql)}
{query_block(matches_sql)}
{query_block(f"SELECT * FROM direct_matches WHERE game = '{game}' ORDER BY model_a, a_players")}

More tournaments of your own on the stored strategies — from other stacks, with another seed or
count, one model's hero at one seat — and what they cost (tournaments a second, hands a tournament):
`./lab jamfold simulate` with the game's `--profile` or `--config` (`--help` lists its options).
With a model and no `--stacks`, `--tournaments` or `--seed`, it plays that model's rows of
`simulation` again and says so (with `--json` it prints their stored values exactly).
"""
