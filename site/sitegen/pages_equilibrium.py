"""Equilibrium pages: payoffs and finishing probabilities by stack, push/fold charts, solve quality."""

from __future__ import annotations

import duckdb
import pandas as pd

from sitegen import charts
from sitegen.embed import chart_html
from sitegen.pages import (game_info, is_modelled, log10_histogram, node_name_sql, query_block, site_table,
                           zero_rows)


def _solved_layers(con: duckdb.DuckDBPyConnection, game: str) -> list[int]:
    return [r[0] for r in con.execute("SELECT DISTINCT players FROM equilibrium_values WHERE game = ? ORDER BY 1",
                                      [game]).fetchall()]


def equilibrium_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    cfg = game_info(con, game)
    layers = _solved_layers(con, game)
    if not layers:
        return f"# Equilibrium\n\nNo layer of game `{game}` is solved in this warehouse yet (assets `solve_2p` … `solve_5p`).\n"
    units = cfg["units"]
    payoff_sql = f"""SELECT e.players, e.stack, e.equilibrium, m.harville,
       e.stack / g.units * list_sum(g.payouts[1:e.players]) AS proportional
FROM (SELECT v.game, v.players, s.stacks[v.position + 1] AS stack, avg(v.value) AS equilibrium
      FROM equilibrium_values v JOIN states s USING (game, players, state_id)
      WHERE v.game = '{game}' GROUP BY ALL) e
JOIN games g USING (game)
LEFT JOIN (SELECT players, stack, avg(payoff) AS harville FROM model_payoffs
      WHERE game = '{game}' AND model = 'harville' GROUP BY ALL) m ON m.players = e.players AND m.stack = e.stack
ORDER BY e.players, e.stack"""
    payoffs = con.execute(payoff_sql).df()
    by_stack = payoffs.melt(id_vars=["players", "stack"], value_vars=["equilibrium", "harville", "proportional"],
                            var_name="series", value_name="value").dropna(subset=["value"])
    by_stack = by_stack.sort_values(["players", "series", "stack"])
    win_sql = f"""SELECT w.players, w.stack, w.p_win, w.stack / g.units AS proportional,
       100 * (w.p_win - w.stack / g.units) / (w.stack / g.units) AS relative_difference_pct
FROM (SELECT f.game, f.players, s.stacks[f.position + 1] AS stack, avg(f.probability) AS p_win
      FROM finishing f JOIN states s USING (game, players, state_id)
      WHERE f.game = '{game}' AND f.place = 1 GROUP BY ALL) w
JOIN games g USING (game) ORDER BY w.players, w.stack"""
    win = con.execute(win_sql).df()
    finished = set(win["players"].tolist()) & set(layers)
    win = win[win["players"].isin(finished)].copy()
    missing = [n for n in layers if n not in finished]
    not_yet = (f"Not computed yet for {', '.join(map(str, missing))} players: the finishing probabilities "
               f"(table `finishing`) come from the assets `finishing_2p` … `finishing_5p`, each of which runs "
               f"once its layer is solved.\n") if missing else ""
    win_chart = win.melt(id_vars=["players", "stack"], value_vars=["p_win", "proportional"], var_name="series",
                         value_name="value").replace({"series": {"p_win": "equilibrium"}})
    finishing_sql = f"""SELECT f.players, s.stacks[f.position + 1] AS stack, f.place, avg(f.probability) AS p
FROM finishing f JOIN states s USING (game, players, state_id)
WHERE f.game = '{game}' GROUP BY ALL ORDER BY ALL"""
    finishing = con.execute(finishing_sql).df()
    fin_tables = []
    for n in sorted(finished):
        fin = finishing[finishing["players"] == n]
        wide = fin.pivot_table(index="stack", columns="place", values="p").reset_index()
        wide.columns = ["stack", *[f"P{c}" for c in wide.columns[1:]]]
        fin_tables.append(f"**{n} players**\n\n{site_table(wide, decimals=3)}\n")
    win_tables = []
    for n in sorted(finished):
        table = win[win["players"] == n][["stack", "p_win", "proportional", "relative_difference_pct"]]
        win_tables.append(f"**{n} players**\n\n{site_table(table, decimals=4)}\n")
    win_section = not_yet + (f"""{chart_html(charts.value_by_stack(win_chart, "P(win)"), "eq-win-vs-proportional")}

{chr(10).join(win_tables)}""" if finished else "")
    return f"""# Equilibrium

The near-exact Nash equilibrium of game `{game}` ({cfg['players']} players, {units} units, payouts
{', '.join(f'{p:g}' for p in cfg['payouts'])} $), solved layer by layer with PI-CFR+ to a per-hand
exploitability of at most {cfg['gamma']:g} $ (see [Solve quality](solve-quality.md)). Layers solved: {', '.join(map(str, layers))} players.

## Equilibrium payoff by stack size

Mean equilibrium payoff of a stack of each size over every state and position of a player count,
next to ICM (Harville) and the chip-proportional payoff stack / {units} × open prize money.
{chart_html(charts.value_by_stack(by_stack, "mean payoff ($)"), "eq-payoff-by-stack")}

## Winning probability against proportional

Mean equilibrium probability of finishing first for each stack size, against the proportional
x / {units}; a table per player count gives both and the relative difference in % (below zero: the
equilibrium wins less often than the stack's share of the chips).

{win_section}

## Average finishing probabilities by stack size

{not_yet}{chr(10).join(fin_tables)}

## Query it

The start state's equilibrium payoffs, then the three sections above in order: payoffs by stack
(with ICM and the proportional payoff), winning probabilities by stack, finishing probabilities by
stack (one row per place):

{query_block(f'''SELECT s.stacks, s.positions, list(round(v.value, 4) ORDER BY v.position) AS equilibrium
FROM equilibrium_values v JOIN states s USING (game, players, state_id)
WHERE v.game = '{game}' AND s.stacks = [{', '.join(map(str, cfg['start']))}] GROUP BY ALL''')}
{query_block(payoff_sql)}
{query_block(win_sql)}
{query_block(finishing_sql)}
"""


def _state_grids(con: duckdb.DuckDBPyConnection, game: str, stacks: list[int]) -> pd.DataFrame:
    return con.execute(
        f"""SELECT j.node AS "order", {node_name_sql('j')} AS panel, h.grid_row, h.grid_col, h.label, j.jam_probability
           FROM equilibrium_jam j JOIN states s USING (game, players, state_id) JOIN hand_classes h USING (class_id, label)
           WHERE j.game = ? AND s.stacks = ?""", [game, stacks]).df()


ANY_STATE_MAX_CELLS = 1_000_000
"""The most grid cells (decision nodes × 169) a layer may have for the push/fold page to inline every
state of it behind a state picker. The 45-unit game's 3-player layer has 5,253 nodes (887,757
cells; with the 2-player layer's, 2.33 MB of the page); its 4-player layer, about 30 million
cells, does not fit."""


def layer_grids_sql(game: str, players: int) -> str:
    """Every decision node's jam probabilities in every state of a layer, a row per (node, class):
    the state by its stacks in acting order ("7, 2, 1"), its node's name and order."""
    return f"""SELECT array_to_string(s.stacks, ', ') AS state, j.node AS "order", {node_name_sql('j')} AS panel,
       h.grid_row, h.grid_col, h.label, j.jam_probability
FROM equilibrium_jam j JOIN states s USING (game, players, state_id) JOIN hand_classes h USING (class_id, label)
WHERE j.game = '{game}' AND j.players = {players}
ORDER BY s.state_id, j.node, j.class_id"""


def _any_state_section(con: duckdb.DuckDBPyConnection, game: str, layers: list[int]) -> tuple[str, str]:
    """The push/fold page's state pickers, one chart per solved layer whose grids fit
    ``ANY_STATE_MAX_CELLS``, and a line on the layers too large for one; and the query the charts
    draw (empty if no layer has a chart)."""
    nodes = dict(con.execute("SELECT players, count(*) FROM equilibrium_nodes WHERE game = ? GROUP BY players",
                             [game]).fetchall())
    shown = [n for n in layers if 0 < nodes.get(n, 0) * 169 <= ANY_STATE_MAX_CELLS]
    too_big = [n for n in layers if nodes.get(n, 0) * 169 > ANY_STATE_MAX_CELLS]
    if not shown and not too_big:
        return "", ""
    parts = [f"## Any state of the {_counts(shown)}-player layer{'s' if len(shown) > 1 else ''}\n"] if shown else [
        "## Any state\n"]
    if shown:
        parts.append("Pick a state's stacks (in acting order) under a chart to draw the grids of its every decision "
                     "node; a chart opens on the layer's most even stacks. The states where nobody decides (the "
                     "blinds all in) are left out.\n")
    for n in shown:
        grids = con.execute(layer_grids_sql(game, n)).df()
        options = list(dict.fromkeys(grids["state"]))  # the states with a node (blinds all in: no decision)
        stacks = [list(map(int, option.split(", "))) for option in options]
        first = options[min(range(len(options)), key=lambda i: max(stacks[i]) - min(stacks[i]))]
        (positions,) = con.execute("SELECT any_value(positions) FROM states WHERE game = ? AND players = ?",
                                   [game, n]).fetchone()
        most = int(grids.groupby("state")["order"].nunique().max())
        chart = charts.push_fold_grids_picked(
            grids, "jam probability per decision node, stacks ", "state", options,
            f"stacks ({', '.join(positions)}) ", first=first, columns=min(3, most))
        parts.append(f"### {n} players ({len(options):,} states with a decision)\n\n"
                     f"{chart_html(chart, f'pf-any-{n}p')}")
    if too_big:
        sizes = " and ".join(f"{nodes[n]:,} nodes of the {n}-player layer" for n in too_big)
        parts.append(f"The {sizes} are too many to put on one page (over {ANY_STATE_MAX_CELLS:,} cells each): "
                     "`./lab jamfold state --stacks …` prints any state's ranges, and the queries below draw "
                     "them.\n")
    return "\n".join(parts), layer_grids_sql(game, shown[-1]) if shown else ""


def _counts(players: list[int]) -> str:
    """2 → "2", [2, 3] → "2- and 3", [2, 3, 4] → "2-, 3- and 4" (before "-player")."""
    words = [str(n) for n in players]
    return words[0] if len(words) == 1 else "-, ".join(words[:-1]) + "- and " + words[-1]


def push_fold_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    cfg = game_info(con, game)
    layers = _solved_layers(con, game)
    if not layers:
        return "# Push/fold charts\n\nNo layer is solved yet.\n"
    start = list(cfg["start"])
    sections = []
    examples = [("start state", start)]
    n = max(layers)
    units = cfg["units"]
    if n >= 3:
        base, extra = divmod(units - 1, n - 1)
        examples.append(("a big blind all-in for 1 unit", [base + (1 if i < extra else 0) for i in range(n - 1)] + [1]))
    examples.append(("heads-up, even stacks", [units // 2, units - units // 2]))
    titles: dict[tuple[int, ...], list[str]] = {}  # one chart per state, however many examples it is
    for title, stacks in examples:
        if sum(stacks) == units and min(stacks) >= 1:
            titles.setdefault(tuple(stacks), []).append(title)
    pending = []  # examples whose layer has no strategies yet (a site built while the game is solved)
    for stacks, names in titles.items():
        title = names[0] + "".join(f" (also {name})" for name in names[1:])
        stacks = list(stacks)
        grids = _state_grids(con, game, stacks) if len(stacks) in layers else pd.DataFrame()
        if grids.empty:
            pending.append(f"{title}, stacks {', '.join(map(str, stacks))} ({len(stacks)}-player layer)")
            continue
        cid = "pf-" + "-".join(map(str, stacks))
        sections.append(f"## {title.capitalize()}: stacks {', '.join(map(str, stacks))}\n\n"
                        f"{chart_html(charts.push_fold_grids(grids, f'jam probability per decision node, stacks {stacks}'), cid)}")
    any_state, any_sql = _any_state_section(con, game, layers)
    layer_query = (f"The state pickers draw this query's rows, a layer at a time (`j.players`):\n\n"
                   f"{query_block(any_sql)}" if any_sql else "")
    return f"""# Push/fold charts

13×13 grids of the equilibrium jam probability of each hand class (pairs on the diagonal, suited
above, offsuit below) at every decision node of a state: the acting position and who jammed
before. First a few example states, then, for each layer whose grids fit on one page, a chart that
draws any of its states (pick the stacks under it). Any state's charts can be drawn from the view
`equilibrium_jam`; `./lab jamfold state --stacks …` prints the same ranges as range strings.
{f"{chr(10)}Not solved yet: {'; '.join(pending)}.{chr(10)}" if pending else ""}
{chr(10).join(sections)}

{any_state}
## Query it

{query_block(f'''SELECT j.actor_name, j.jammed_before, j.label, j.jam_probability
FROM equilibrium_jam j JOIN states s USING (game, players, state_id)
WHERE j.game = '{game}' AND s.stacks = [{', '.join(map(str, start))}] AND j.jam_probability > 0
ORDER BY j.node, j.class_id''')}

Each example chart above is this query for its state's stacks (in acting order), every class included.
{layer_query}"""


def _log_tables(log: pd.DataFrame) -> str:
    """The solve log of each layer as a table folded under a line that sums it up (the 45-unit
    layers run to 74 outer iterations and more: one open table would fill pages). The line sums the
    logged seconds (whole ones from 10 s, hundredths below); the table shows each to 0.01 s (summing
    the rounded figures could move the total)."""
    blocks = []
    for n, rows in log.groupby("players", sort=True):
        wall = rows["wall_s"].sum()
        seconds = f"{wall:,.0f}" if wall >= 10 else f"{wall:.2f}"  # (a small layer's 0.3 s showed as "0 s")
        summary = (f"{n} players: {len(rows)} outer iterations, {int(rows['cfr_iterations'].sum()):,} CFR+ "
                   f"iterations, {seconds} s")
        shown = rows.drop(columns="players").assign(wall_s=rows["wall_s"].round(2))
        blocks.append(f'<details markdown="1">\n<summary>{summary}</summary>\n\n'
                      f'{site_table(shown)}\n\n</details>')
    return "\n\n".join(blocks)


def solve_quality_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    cfg = game_info(con, game)
    bins, bins_sql = log10_histogram(con, "state_quality", "exploitability", game)
    zeros = zero_rows(con, "state_quality", "exploitability", game)
    if bins.empty and not zeros:
        return "# Solve quality\n\nNo layer is solved yet.\n"
    summary_sql = f"""SELECT players, count(*) AS states, max(exploitability) AS max_exploitability,
       avg(exploitability) AS mean_exploitability, sum(cfr_iterations)::BIGINT AS cfr_iterations,
       count(*) FILTER (WHERE exploitability > {cfg['gamma']!r}) AS states_above_gamma
FROM state_quality WHERE game = '{game}' GROUP BY players ORDER BY players"""
    summary = con.execute(summary_sql).df()
    log = con.execute("""SELECT players, outer_iteration, target, states_updated, states_skipped, states_screened,
                                states_checked, cfr_iterations, max_delta_v, max_exploitability, wall_s
                         FROM solve_log WHERE game = ? ORDER BY players, outer_iteration""", [game]).df()
    ex_post = _ex_post_section(con, game, cfg)
    log_totals_sql = f"""SELECT players, count(*) AS outer_iterations, sum(cfr_iterations)::BIGINT AS cfr_iterations,
       CASE WHEN sum(wall_s) >= 10 THEN round(sum(wall_s)) ELSE round(sum(wall_s), 2) END AS wall_s
FROM solve_log WHERE game = '{game}' GROUP BY players ORDER BY players"""
    return f"""# Solve quality

Every state's hand is solved until no player gains more than gamma = {cfg['gamma']:g} $ by a best
response (computed exactly from counterfactual values, in $ averaged over his deal), and each
layer's outer loop stops when an outer iteration at gamma updates no state and screens none
(states held above gamma by the re-solve cap are solved again first; a layer that still ends with
one above gamma fails its asset check `exploitability_within_gamma`).

## Per layer

{site_table(summary)}

{chart_html(charts.exploitability_histogram(bins, cfg['gamma'], zeros=zeros), "expl-hist")}

{ex_post}

## Convergence log (outer PI-CFR+ iterations)

Each outer iteration solves the hands above its target under the layer's current values, then
evaluates the layer exactly; the target tightens by √10 once an outer iteration updates at most
3 % of the layer, down to gamma, and the layer ends after an outer iteration at gamma that
updates no state and screens none.
{chart_html(charts.convergence_lines(log), "convergence")}

{_log_tables(log)}

## Query it

{query_block(f"SELECT * FROM solve_log WHERE game = '{game}' ORDER BY players, outer_iteration")}
{query_block(summary_sql)}

The convergence log's summary lines (outer iterations, CFR+ iterations and seconds per layer):
{query_block(log_totals_sql)}

The exploitability histogram's bins (the ex post one bins `gain` of `nemesis_values` with
`profile = 'equilibrium'` the same way):

{query_block(bins_sql)}
"""


def _ex_post_section(con: duckdb.DuckDBPyConnection, game: str, cfg: dict) -> str:
    """Tournament exploitability (nemesis gains) of the equilibrium, or a note that it is not computed."""
    summary = con.execute("""SELECT profile, start_mean_gain, start_max_gain, start_mean_roi_pct, start_max_roi_pct,
                                    all_mean_gain, all_max_gain, pairs
                             FROM ex_post WHERE game = ? AND profile = 'equilibrium'""", [game]).df()
    if summary.empty:
        return "## Ex post check\n\nNot computed yet for this game (assets `ex_post_2p` … `ex_post_5p`).\n"
    per_layer_sql = f"""SELECT players, avg(gain) AS mean_gain, max(gain) AS max_gain,
       arg_max(state_id, gain) AS worst_state_id, count(*) AS pairs
FROM nemesis_values WHERE game = '{game}' AND profile = 'equilibrium'
GROUP BY players ORDER BY players"""
    per_layer = con.execute(per_layer_sql).df()
    checked = per_layer["players"].astype(int).tolist()
    partial = "" if cfg["players"] in checked else (
        f"\nChecked so far: the layers of {', '.join(map(str, checked))} players. The start state's "
        f"{cfg['players']}-player layer is not checked yet (asset `ex_post_{cfg['players']}p`, which runs once "
        f"that layer is solved): the start-state columns stay empty and the all-state figures cover the "
        f"layers checked.\n")
    gains, _ = log10_histogram(con, "nemesis_values", "gain", game, "profile = 'equilibrium'")
    gain_zeros = zero_rows(con, "nemesis_values", "gain", game, "profile = 'equilibrium'")
    fair = float(sum(cfg["payouts"])) / cfg["players"]
    models_link = (" The same check of every model's strategy profile is on the [Ex post](ex-post.md) page."
                   if is_modelled(con, game) else "")  # the page exists only once the models are solved
    return f"""## Ex post check (tournament exploitability)

A single *nemesis* player best-responds over the whole remaining tournament while the others keep
the equilibrium strategies; his gain over the equilibrium value, in $, is the profile's
tournament exploitability at that state and position (SPEC §6). ROI = gain / fair share
({fair:g} $ = prize pool / players) × 100. The gain stacks up per-hand errors ≤ gamma over the
hands still to play, so it can exceed gamma.{models_link}

{site_table(summary, decimals=6)}
{partial}
**Per layer**

{site_table(per_layer, decimals=6)}

{chart_html(charts.exploitability_histogram(gains, cfg['gamma'], title="nemesis gain ($)",
                                            count_title="(state, position) pairs", zeros=gain_zeros),
             "ex-post-hist")}

{query_block(f"SELECT * FROM ex_post WHERE game = '{game}' AND profile = 'equilibrium'")}
{query_block(per_layer_sql)}
{query_block(f"SELECT * FROM nemesis_values WHERE game = '{game}' AND profile = 'equilibrium' ORDER BY gain DESC LIMIT 10")}
"""
