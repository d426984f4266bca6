"""Page builders: each reads warehouse tables for one game and returns a markdown page.

Every number on a page comes from a table or view listed on the Warehouse page, and each page
ends with the SQL that reproduces what it shows.
"""

from __future__ import annotations

import json

import duckdb
import pandas as pd

from sitegen import charts
from sitegen.charts import ICM_FAMILY
from sitegen.embed import chart_html
from warehouse.db import frame_markdown
from warehouse.schema import TABLES

NOTABLE_PAIRS = [("AA", "KK"), ("KK", "AKs"), ("QQ", "AKo"), ("AKo", "22"), ("AKs", "JTs"), ("JJ", "AQs"),
                 ("KQo", "AJs"), ("A5s", "KQo"), ("72o", "AA"), ("T9s", "AKo"), ("22", "32o"), ("AKs", "AKo")]
NOTABLE_TRIPLES = [("AA", "KK", "QQ"), ("AKs", "QQ", "JTs"), ("22", "AKo", "KQs"), ("A5s", "K9o", "76s")]


def breakable(name: str) -> str:
    """A column name that may wrap after an underscore (``<wbr>``), not before a last piece of one
    or two letters (``wall_s``): long SQL names such as ``start_mean_roi_pct`` otherwise set a
    column's width alone."""
    pieces = name.split("_")
    out = pieces[0]
    for i, piece in enumerate(pieces[1:], 1):
        last_short = i == len(pieces) - 1 and len(piece) <= 2
        out += ("_" if last_short or not piece else "_<wbr>") + piece
    return out


def site_table(df: pd.DataFrame, digits: int = 6, decimals: int | None = None) -> str:
    """A page's markdown table (:func:`warehouse.db.frame_markdown`) whose headers may wrap after
    underscores, so wide tables fit the text column."""
    return frame_markdown(df.rename(columns=lambda c: breakable(str(c))), digits=digits, decimals=decimals)


def node_name_sql(alias: str) -> str:
    """SQL naming a decision node from its table's ``actor_name`` and ``jammed_before`` (alias
    ``alias``) as the push/fold charts do: "BU first in", "BB after BU + SB jam"."""
    return (f"{alias}.actor_name || CASE WHEN len({alias}.jammed_before) = 0 THEN ' first in' "
            f"ELSE ' after ' || array_to_string({alias}.jammed_before, ' + ') || ' jam' END")


def query_block(sql: str) -> str:
    return "\n```sql\n" + sql.strip() + "\n```\n"


HISTOGRAM_BINS = 40
VS_RANDOM_SQL = """SELECT h.grid_row, h.grid_col, h.label, sum(p.deals * p.p_win) / sum(p.deals) AS p_vs_random
FROM pair_equities p JOIN hand_classes h ON h.class_id = p.x
WHERE p.rollout = '{rollout}' GROUP BY ALL ORDER BY p_vs_random DESC"""
"""Each class's P(win) against a hand dealt at random from the rest of the deck: the opponent
classes weighted by their ordered deals (`pair_equities.deals`)."""
"""Bins of the exploitability histograms, over the range of the log10 gains."""


def log10_histogram_sql(table: str, column: str, where: str, bins: int = HISTOGRAM_BINS) -> str:
    """The query that bins ``column`` of ``table`` (rows matching ``where``) by log10 $ into ``bins``
    equal bins over the range of its positive values, per player count; exact zeros have no log and
    are left out (:func:`zero_rows` counts them: drawn at 1e-12 $, they stretched the axis so far that
    the other states filled a few bars). Columns: players, bin_start, bin_end (log10 $), count.

    The charts carry these counts, not one row per state: the 45-unit 5-player game's nemesis
    gains are 734,657 (state, position) pairs, some 60 MB of inline JSON on one page. The page
    shows the query beside its chart."""
    return f"""WITH g AS (SELECT players, log10({column}) AS x FROM {table} WHERE {where} AND {column} > 0),
     r AS (SELECT min(x) AS lo, (CASE WHEN max(x) > min(x) THEN max(x) ELSE min(x) + 1 END - min(x)) / {bins} AS w FROM g),
     b AS (SELECT players, least(floor((x - lo) / w), {bins - 1})::INTEGER AS bin, lo, w FROM g, r)
SELECT players, any_value(lo) + bin * any_value(w) AS bin_start, any_value(lo) + (bin + 1) * any_value(w) AS bin_end,
       count(*) AS count
FROM b GROUP BY players, bin ORDER BY players, bin"""


def _game_rows(game: str, condition: str) -> str:
    return "game = '" + game.replace("'", "''") + "'" + (f" AND ({condition})" if condition else "")


def log10_histogram(con: duckdb.DuckDBPyConnection, table: str, column: str, game: str,
                    condition: str = "") -> tuple[pd.DataFrame, str]:
    """The binned counts of :func:`log10_histogram_sql` over ``game``'s rows (and ``condition``),
    and the query itself, the game written into it (for the page)."""
    sql = log10_histogram_sql(table, column, _game_rows(game, condition))
    return con.execute(sql).df(), sql


def zero_rows(con: duckdb.DuckDBPyConnection, table: str, column: str, game: str, condition: str = "") -> int:
    """How many of ``game``'s rows (and ``condition``) hold 0 $ or less in ``column`` (a nemesis
    gain may round to −1e-15): the ones a :func:`log10_histogram` leaves out."""
    return con.execute(f"SELECT count(*) FROM {table} WHERE {_game_rows(game, condition)} AND {column} <= 0"
                       ).fetchone()[0]


def game_info(con: duckdb.DuckDBPyConnection, game: str) -> dict:
    """The game's config as built, plus the rollout ids of its tables (`pairs_id`, `triples_id`)."""
    row = con.execute("SELECT config_json, rollout_pairs, rollout_triples FROM games WHERE game = ?", [game]).fetchone()
    if row is None:
        raise LookupError(f"game {game!r} is not in the warehouse: materialize its assets first")
    return {**json.loads(row[0]), "pairs_id": row[1], "triples_id": row[2]}


def is_solved(con: duckdb.DuckDBPyConnection, game: str) -> bool:
    """The game's equilibrium is in the warehouse: its pages (Equilibrium, Push/fold charts, Solve
    quality) are built."""
    return con.execute("SELECT count(*) FROM equilibrium_values WHERE game = ?", [game]).fetchone()[0] > 0


def is_compared(con: duckdb.DuckDBPyConnection, game: str) -> bool:
    """The game's equilibrium and some model's payoffs are in the warehouse: the Models vs equilibrium
    page is built (the ICM family's payoffs need no model sweep, so a `--skip-models` build has it)."""
    return is_solved(con, game) and con.execute("SELECT count(*) FROM model_payoffs WHERE game = ?",
                                                [game]).fetchone()[0] > 0


def is_modelled(con: duckdb.DuckDBPyConnection, game: str) -> bool:
    """The game's equilibrium and model strategies are in the warehouse: the pages that need the model
    sweeps (Model ranges, Ex post) are built."""
    return is_solved(con, game) and con.execute("SELECT count(*) FROM model_nodes WHERE game = ?",
                                                [game]).fetchone()[0] > 0


def is_simulated(con: duckdb.DuckDBPyConnection, game: str) -> bool:
    """The game's tournaments are simulated: the Simulation page is built (a `--skip-models` build
    plays the equilibrium's control without any model)."""
    return is_solved(con, game) and con.execute("SELECT count(*) FROM simulation WHERE game = ?",
                                                [game]).fetchone()[0] > 0


def tables_used(cfg: dict) -> str:
    """SQL condition on `rollout_tables` for the showdown tables the game uses (a heads-up game has no
    triple table)."""
    if cfg["triples_id"] is None:
        return f"rollout = '{cfg['pairs_id']}' AND kind = 'pairs'"
    return (f"(rollout, kind) IN (('{cfg['pairs_id']}', 'pairs'), ('{cfg['triples_id']}', 'triples'))")


def showdown_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    cfg = game_info(con, game)
    pairs_id, triples_id = cfg["pairs_id"], cfg["triples_id"]
    labels = [r[0] for r in con.execute("SELECT label FROM hand_classes ORDER BY class_id").fetchall()]
    grid_sql = f"SELECT hand, versus, round(p_win, 5) AS p_win FROM pair_equities WHERE rollout = '{pairs_id}'"
    grid = con.execute(grid_sql).df()
    build_sql = f"""SELECT mode, boards_per_matchup, precision, rows, round(wall_s, 1) AS wall_s FROM rollout_tables
WHERE rollout = '{pairs_id}' AND kind = 'pairs'"""
    build = con.execute(build_sql).df()
    pairs_list = ", ".join(f"({k}, '{a}', '{b}')" for k, (a, b) in enumerate(NOTABLE_PAIRS))
    notable_sql = f"""SELECT hand, versus, round(p_win, 4) AS p_win, round(1 - p_win, 4) AS p_versus, weight
FROM pair_equities JOIN (VALUES {pairs_list}) n(k, hand, versus) USING (hand, versus)
WHERE rollout = '{pairs_id}' ORDER BY n.k"""
    notable = con.execute(notable_sql).df()
    vs_random = con.execute(VS_RANDOM_SQL.format(rollout=pairs_id)).df()
    if triples_id is None:
        three_way, triples_queries = HEADS_UP_TRIPLES, ""
    else:
        triples_sql = notable_triples_sql(con, triples_id)
        triples = con.execute(triples_sql).df()
        three_way = f"""## Three-way all-ins (triple table `{triples_id}`)

{site_table(triples) if len(triples) else "_triple table not built_"}

`P(x best)` sums the finishing orders in which that hand is best. The table stores the six strict
orders of each class multiset a ≤ b ≤ c; its `weight` counts the card-disjoint deals of the three
classes to three players in every order (AA, KK, QQ: 6 × 6 × 6 combos × 6 orders = 1,296).
"""
        triples_queries = f"""{query_block(triples_sql)}
{query_block(f'''SELECT t.*, ha.label, hb.label, hc.label FROM rollout_triples t
JOIN hand_classes ha ON ha.class_id = t.a JOIN hand_classes hb ON hb.class_id = t.b JOIN hand_classes hc ON hc.class_id = t.c
WHERE t.rollout = '{triples_id}' AND (ha.label, hb.label, hc.label) = ('AA', 'KK', 'QQ')''')}
"""
    heat = charts.pair_equity_heatmap(grid, labels)
    strength = charts.hand_strength_grid(vs_random, "p_vs_random", "Heads-up equity against a random hand",
                                         "P(win) vs random")
    return f"""# Showdown tables

All-in probabilities for every matchup of hand classes, after random tie-breaking (a tie is a coin
flip, so every showdown ends in a strict order). The tournament solver reads these tables; they
are built once per rollout id and shared by every game.

**Pair table `{pairs_id}`:**

{site_table(build)}

## Heads-up equity of every class against every class

Rows and columns run in the order of `hand_classes.class_id` (AA, AKs, AQs, …, 22); hover for values.
{chart_html(heat, "pair-heatmap", "Cell (row, column) = probability that the row hand beats the column hand: "
                                    "the third query under “Query it”.")}

## Notable matchups

{site_table(notable, decimals=4)}

`weight` counts the ordered, card-disjoint combo pairs of the multiset {{hand, versus}}, both orders
(`pair_equities.deals` counts one order).

## Equity against a random hand

{chart_html(strength, "vs-random", "The row hand's P(win) against every class, weighted by its deals: the "
                                    "fifth query under “Query it”.")}

{three_way}
## Query it

{query_block(build_sql)}
{query_block(notable_sql)}
{query_block(grid_sql)}
{query_block(f"SELECT hand, versus, p_win FROM pair_equities WHERE rollout = '{pairs_id}' AND hand = 'AKs' ORDER BY p_win")}
{query_block(VS_RANDOM_SQL.format(rollout=pairs_id))}
{triples_queries}"""


HEADS_UP_TRIPLES = """## Three-way all-ins

A heads-up game never goes three ways, so it uses no triple table: its build makes none (a game of
three or more players does, and its showdown page shows it here).
"""


def notable_triples_sql(con: duckdb.DuckDBPyConnection, rollout_id: str) -> str:
    """The three-way table of the showdown page: the rows of NOTABLE_TRIPLES (in that order) with
    each hand's chance to finish best, the sums of the two strict orders that put it first."""
    ids = {label: cid for cid, label in con.execute("SELECT class_id, label FROM hand_classes").fetchall()}
    rows = ", ".join(f"({k}, {', '.join(str(c) for c in sorted(ids[h] for h in hands))})"
                     for k, hands in enumerate(NOTABLE_TRIPLES))
    return f"""SELECT ha.label || ', ' || hb.label || ', ' || hc.label AS "a, b, c", t.weight,
       round(t.p_abc + t.p_acb, 4) AS "P(a best)", round(t.p_bac + t.p_bca, 4) AS "P(b best)",
       round(t.p_cab + t.p_cba, 4) AS "P(c best)", round(t.p_abc, 4) AS "P(a, b, c in that order)"
FROM rollout_triples t JOIN (VALUES {rows}) n(k, a, b, c) USING (a, b, c)
JOIN hand_classes ha ON ha.class_id = t.a JOIN hand_classes hb ON hb.class_id = t.b
JOIN hand_classes hc ON hc.class_id = t.c
WHERE t.rollout = '{rollout_id}' ORDER BY n.k"""


def _example_section(ex: pd.DataFrame, index: int, count: int, stacks: list[float], prizes: str) -> str:
    """One example's finishing matrices (a table per model) and bar chart, from its `model_examples` rows."""
    blocks, order = [], [m for m in ICM_FAMILY if m in set(ex.model)]
    for m in order:
        sub = ex[ex.model == m]
        wide = sub.pivot_table(index=["player", "stack", "payoff"], columns="place", values="probability").reset_index()
        wide.columns = ["player", "stack", "payoff $", *[f"P{c}" for c in wide.columns[3:]]]
        wide["player"] = wide["player"] + 1
        wide["stack"] = wide["stack"].map("{:g}".format)
        blocks.append(f"### {m.capitalize()}\n\n{site_table(wide, decimals=4)}\n")
    bars = ex.assign(player_label=lambda d: "player " + (d.player + 1).astype(str) + " (" + d["stack"].map("{:g}".format) + ")")
    # SPEC's example stacks (the thesis's) unless the config gave its own; numbered if it gave several
    thesis = list(stacks) == [2, 5, 8, 13, 17]
    if count == 1:
        name = "The thesis example" if thesis else "The example"
    else:
        name = f"Example {index + 1}" + (" (the thesis example)" if thesis else "")
    return f"""## {name}: stacks {", ".join(f"{x:g}" for x in stacks)}, prizes {prizes}

Rows are players (numbered from 1 here; the table's `player` counts from 0), P1 … P{len(stacks)} the
probabilities of finishing 1st … last (table `model_examples`, `example = {index}`).

{chr(10).join(blocks)}
{chart_html(charts.example_finishing_bars(bars, order), "example-bars" if index == 0 else f"example-bars-{index}")}
"""


def equity_models_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    cfg = game_info(con, game)
    examples = con.execute("SELECT * FROM model_examples WHERE game = ? ORDER BY example, model, player, place",
                           [game]).df()
    by_stack_sql = f"""SELECT p.model, p.stack, avg(p.payoff) AS payoff,
       p.stack / any_value(g.units) * any_value(g.prize_pool) AS proportional
FROM model_payoffs p JOIN games g USING (game)
WHERE p.game = '{game}' AND p.players = {cfg['players']} GROUP BY p.model, p.stack ORDER BY p.model, p.stack"""
    by_stack = con.execute(by_stack_sql).df()
    prizes = ", ".join(f"{p:g}" for p in cfg["payouts"])
    sections = [_example_section(examples[examples.example == i], i, len(cfg["examples"]), stacks, prizes)
                for i, stacks in enumerate(cfg["examples"])]
    return f"""# Equity models

An equity model turns a stack vector into a **finishing matrix** P (players × places) and payoffs
v = P·R for the prize vector R. All three give P(player i wins) = x_i / Σx; they differ in the lower
places:

- **Malmuth-Harville (ICM)** — places are handed out top down, each to a remaining player with
  probability proportional to his stack. Computed over subsets of placed players, O(n·2ⁿ).
- **Malmuth-Weitzman** — the next player *eliminated* is chosen with probability ∝ 1/x_i and his
  chips are split evenly among the survivors. Computed over subsets of eliminated players.
- **Roberts** — the next player eliminated is chosen with probability ∝ (1/x_i²)·Σ_(j≠i) 1/x_j and his chips
  go to the survivors in proportion to 1/x_j. Computed over elimination orders.

{chr(10).join(sections)}
## Payoff against stack across the game

Mean payoff of a stack of each size over all {cfg['players']}-player states of game `{game}` (every state
and position counted once), with the chip-proportional payoff stack / {cfg['units']} × {sum(cfg['payouts']):g} $ for
reference. The example stacks and the game are set in the game config (`examples`, `units`, `payouts`).
{chart_html(charts.payoff_vs_stack(by_stack), "payoff-vs-stack")}

## Query it

{query_block(f"SELECT example, model, player, stack, place, probability, payoff FROM model_examples "
             f"WHERE game = '{game}' ORDER BY example, model, player, place")}
{query_block(f'''SELECT s.stacks, p.model, p.position, p.payoff
FROM model_payoffs p JOIN states s USING (game, players, state_id)
WHERE p.game = '{game}' AND s.stacks = [{', '.join(map(str, cfg['start']))}] ORDER BY p.model, p.position''')}

The payoff-against-stack chart:

{query_block(by_stack_sql)}
"""


def example_queries(game: str, cfg: dict) -> list[tuple[str, str]]:
    """(title, SQL) of the warehouse page's examples, written for this game: its own showdown tables
    (exact or sampled, by its config) and its start state, so that each query returns rows."""
    start = ", ".join(map(str, cfg["start"]))
    three_way = [] if cfg["triples_id"] is None else [  # a heads-up game has no triple table
        ("Who wins AA vs KK vs QQ, and how often each finishing order happens",
         f"SELECT * FROM rollout_triples\nWHERE rollout = '{cfg['triples_id']}' AND (a, b, c) = (0, 14, 28);"
         f"  -- AA = 0, KK = 14, QQ = 28 (see hand_classes)")]
    return [
        ("Heads-up equity of AKs against every pair",
         f"SELECT versus, round(p_win, 4) AS p_win FROM pair_equities\nWHERE rollout = '{cfg['pairs_id']}' "
         f"AND hand = 'AKs' AND versus IN (SELECT label FROM hand_classes WHERE kind = 'pair')\nORDER BY p_win;"),
        *three_way,
        ("ICM payoffs next to Weitzman and Roberts for the start state",
         "SELECT p.position, s.positions[p.position + 1] AS seat, p.model, round(p.payoff, 3) AS payoff\n"
         "FROM model_payoffs p JOIN states s USING (game, players, state_id)\n"
         f"WHERE p.game = '{game}' AND s.stacks = [{start}]\nORDER BY p.position, p.model;"),
    ]


def warehouse_page(con: duckdb.DuckDBPyConnection, game: str) -> str:
    parts = ["""# Warehouse

All results live in one DuckDB file, `warehouse/lab.duckdb` (override with `JAMFOLD_WAREHOUSE`).
Query it read-only while nothing is building, one query at a time from the lab's CLI (DuckDB's
table of the rows, or every row as CSV with `--csv`):

```bash
./lab jamfold sql "SELECT * FROM games"
```

or from the lab's Python (`.venv/bin/python`, which has the `duckdb` package):

```python
import duckdb
con = duckdb.connect("warehouse/lab.duckdb", read_only=True)
con.sql("SELECT * FROM games").show()
```

or with DuckDB's own shell, if you installed it (it is not part of the lab's environment):

```bash
duckdb -readonly warehouse/lab.duckdb
```

Tables keyed by `game` hold one game config each (see `games`); the showdown tables are keyed by
`rollout` and shared by the games that use them. Units: stacks in small-blind units (SB = 1,
BB = 2), prizes and payoffs in $, probabilities in [0, 1].

## Example queries
"""]
    for title, sql in example_queries(game, game_info(con, game)):
        parts.append(f"**{title}**\n{query_block(sql)}")
    counts = {}
    for name, t in TABLES.items():
        try:
            counts[name] = con.execute(f"SELECT count(*) FROM {name}").fetchone()[0]
        except duckdb.Error:
            counts[name] = None
    games = [g for (g,) in con.execute("SELECT game FROM games ORDER BY game").fetchall()]
    others = [g for g in games if g != game]
    parts.append("## Tables and views\n")
    if others:  # (the counts are of the file, not of this page's game)
        parts.append(f"The row counts are of the whole file, which holds {len(games)} games: `{game}` and "
                     f"{', '.join(f'`{g}`' for g in others)}.\n")
    for name, t in TABLES.items():
        kind = "view" if t.kind == "view" else "table"
        n = counts[name]
        rows = "not built" if n is None else f"{n:,} row" + ("" if n == 1 else "s")
        cols = pd.DataFrame([(c.name, c.type, c.description) for c in t.columns], columns=["column", "type", "meaning"])
        key = f" Rows are replaced per `{', '.join(t.key)}`." if t.key else ""
        parts.append(f"### `{name}` ({kind}, {rows})\n\n{t.description}{key}\n\n{site_table(cols)}\n")
    return "\n".join(parts)
