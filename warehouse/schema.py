"""The warehouse schema: the one place that knows table names, columns, units and meaning.

Assets write these tables, the site reads them, and the site's Warehouse page is generated from
this module, so the documentation cannot drift from the database.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    description: str


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]  # the columns one materialization replaces rows by (e.g. game, rollout)
    kind: str = "table"  # 'table' or 'view'
    view_sql: str = ""

    def ddl(self) -> str:
        if self.kind == "view":
            return f"CREATE OR REPLACE VIEW {self.name} AS {self.view_sql}"
        cols = ",\n  ".join(f"{c.name} {c.type}" for c in self.columns)
        return f"CREATE TABLE IF NOT EXISTS {self.name} (\n  {cols}\n)"

    @property
    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]


def _c(name: str, type_: str, description: str) -> Column:
    return Column(name, type_, description)


ROLLOUT = _c("rollout", "VARCHAR", "which table build: 'exact' or 'sampled-<boards>-seed<seed>'")
GAME = _c("game", "VARCHAR", "game config name (see `games`)")
MODEL = _c("model", "VARCHAR", "equity model: 'harville' (ICM), 'weitzman' or 'roberts'")

TABLES: dict[str, Table] = {}


def _add(t: Table) -> None:
    TABLES[t.name] = t


_add(Table(
    "games", "One row per game config that has been built: its parameters as used.",
    (GAME, _c("players", "INTEGER", "players at the start"),
     _c("units", "INTEGER", "total chips in small-blind units (SB = 1, BB = 2)"),
     _c("payouts", "DOUBLE[]", "prize in $ for 1st, 2nd, …"),
     _c("prize_pool", "DOUBLE", "sum of the payouts, $"),
     _c("gamma", "DOUBLE", "per-hand equilibrium target ε, $"),
     _c("start", "INTEGER[]", "start stacks in acting order, units"),
     _c("rollout_pairs", "VARCHAR", "rollout id of the pair table the game uses"),
     _c("rollout_triples", "VARCHAR", "rollout id of the triple table the game uses"),
     _c("config_json", "VARCHAR", "the full validated config as JSON")),
    key=("game",)))

_add(Table(
    "hand_classes", "The 169 preflop hand classes on the 13×13 grid (rows/columns A…2).",
    (_c("class_id", "SMALLINT", "13·row + column"),
     _c("label", "VARCHAR", "e.g. 'AA', 'AKs', 'AKo'"),
     _c("grid_row", "SMALLINT", "row on the grid, 0 = A … 12 = 2"),
     _c("grid_col", "SMALLINT", "column on the grid, 0 = A … 12 = 2"),
     _c("kind", "VARCHAR", "'pair', 'suited' (above the diagonal) or 'offsuit' (below)"),
     _c("combos", "SMALLINT", "card combinations: 6 pair, 4 suited, 12 offsuit"),
     _c("high_rank", "VARCHAR", "higher rank character"),
     _c("low_rank", "VARCHAR", "lower rank character")),
    key=()))

_add(Table(
    "rollout_tables", "One row per built showdown table: how it was made and how precise it is.",
    (ROLLOUT, _c("kind", "VARCHAR", "'pairs' or 'triples'"),
     _c("mode", "VARCHAR", "'exact' (all boards) or 'sampled'"),
     _c("boards_per_matchup", "INTEGER", "boards sampled per matchup (NULL when exact)"),
     _c("seed", "BIGINT", "random seed (NULL when exact)"),
     _c("precision", "DOUBLE", "largest standard error of a probability in the table (0 when exact)"),
     _c("rows", "BIGINT", "rows written"),
     _c("wall_s", "DOUBLE", "build time, seconds"),
     _c("built_at", "TIMESTAMP", "when the build finished (UTC)")),
    key=("rollout", "kind")))

_add(Table(
    "rollout_pairs",
    "Heads-up all-in showdowns of every class multiset {a ≤ b}. To read (x, y) with x > y, use the "
    "row (y, x) and 1 − p_first_wins.",
    (ROLLOUT, _c("a", "SMALLINT", "first class id (a ≤ b)"), _c("b", "SMALLINT", "second class id"),
     _c("weight", "BIGINT", "deals of this multiset: ordered card-disjoint combo pairs whose classes are {a, b} in either order; all weights add to 1,326·1,225"),
     _c("p_first_wins", "DOUBLE", "probability a beats b over all deals and boards, ties split evenly")),
    key=("rollout",)))

_ORDERS = ("abc", "acb", "bac", "bca", "cab", "cba")
_add(Table(
    "rollout_triples",
    "Three-way all-in showdowns of every class multiset {a ≤ b ≤ c}: the probability of each strict "
    "finishing order (ties broken uniformly at random). To read a permuted matchup, permute the "
    "letters: for hands (x, y, z) = (b, a, c), P(x best, y second) = p_bac. Undealable multisets "
    "(e.g. AA, AA, AA) have weight 0 and NULL probabilities.",
    (ROLLOUT, _c("a", "SMALLINT", "first class id (a ≤ b ≤ c)"), _c("b", "SMALLINT", "second class id"),
     _c("c", "SMALLINT", "third class id"),
     _c("weight", "BIGINT", "deals of this multiset: ordered pairwise card-disjoint combo triples whose classes are {a, b, c} in any order; all weights add to 1,326·1,225·1,128"),
     *(_c(f"p_{o}", "DOUBLE", f"probability that {o[0]} finishes best, {o[1]} second, {o[2]} last")
       for o in _ORDERS)),
    key=("rollout",)))

_add(Table(
    "states", "Every state of a game: stack vectors in acting order, for each player count.",
    (GAME, _c("state_id", "INTEGER", "index of the state within its player count (lexicographic order of stacks)"),
     _c("players", "SMALLINT", "players in the state"),
     _c("stacks", "SMALLINT[]", "stacks in acting order, units"),
     _c("positions", "VARCHAR[]", "position names in acting order (e.g. BU, SB, BB)")),
    key=("game",)))

_add(Table(
    "model_finishing", "Finishing probabilities of every (state, position, place) under each equity model.",
    (GAME, MODEL, _c("players", "SMALLINT", "players in the state"),
     _c("state_id", "INTEGER", "see `states`"), _c("position", "SMALLINT", "0-based acting position"),
     _c("place", "SMALLINT", "finishing place, 1 = winner"),
     _c("probability", "DOUBLE", "probability of finishing in that place")),
    key=("game",)))

_add(Table(
    "model_payoffs", "Each equity model's expected prize for every (state, position).",
    (GAME, MODEL, _c("players", "SMALLINT", "players in the state"),
     _c("state_id", "INTEGER", "see `states`"), _c("position", "SMALLINT", "0-based acting position"),
     _c("stack", "SMALLINT", "the position's stack, units"),
     _c("payoff", "DOUBLE", "expected prize, $")),
    key=("game",)))

_add(Table(
    "model_examples",
    "The equity models on the config's example stack vectors (SPEC §4's oracle is the default example).",
    (GAME, MODEL, _c("example", "SMALLINT", "index of the example in the config"),
     _c("player", "SMALLINT", "0-based player index in the example"),
     _c("stack", "DOUBLE", "the player's stack, chips"),
     _c("place", "SMALLINT", "finishing place, 1 = winner"),
     _c("probability", "DOUBLE", "probability of finishing in that place"),
     _c("payoff", "DOUBLE", "the player's expected prize, $ (same on every place row)")),
    key=("game",)))

PLAYERS = _c("players", "SMALLINT", "players in the state")
STATE = _c("state_id", "INTEGER", "see `states`")
POSITION = _c("position", "SMALLINT", "0-based acting position (see `states.positions`)")

_add(Table(
    "equilibrium_values", "Equilibrium payoff of every (state, position): the PI-CFR+ profile's exact values.",
    (GAME, PLAYERS, STATE, POSITION, _c("value", "DOUBLE", "expected prize under the equilibrium profile, $")),
    key=("game", "players")))

_add(Table(
    "equilibrium_nodes",
    "The equilibrium strategy: for every state and decision node, the jam probability of each of the 169 "
    "hand classes (list indexed by class_id). See the view `equilibrium_jam` for one row per hand class.",
    (GAME, PLAYERS, STATE, _c("node", "SMALLINT", "decision node index within the state's hand (pre-order, fold first)"),
     _c("actor", "SMALLINT", "acting position"),
     _c("actor_name", "VARCHAR", "acting position name (e.g. BU)"),
     _c("jammed_before", "VARCHAR[]", "names of the positions that jammed before this decision"),
     _c("jam", "DOUBLE[]", "jam probability of each class, list position = class_id + 1")),
    key=("game", "players")))

_add(Table(
    "state_quality", "How well each state's hand is solved: best-response gain against the final profile.",
    (GAME, PLAYERS, STATE,
     _c("exploitability", "DOUBLE", "largest gain of a best response in the hand, $ (≤ gamma when solved)"),
     _c("cfr_iterations", "INTEGER", "CFR+ iterations spent on the state over all outer iterations")),
    key=("game", "players")))

_add(Table(
    "solve_log", "One row per outer PI-CFR+ iteration of each layer.",
    (GAME, PLAYERS, _c("outer_iteration", "INTEGER", "1, 2, … within the layer"),
     _c("states_updated", "INTEGER", "states whose hand was above gamma and got more CFR+ iterations"),
     _c("cfr_iterations", "BIGINT", "CFR+ iterations spent in this outer iteration, all states"),
     _c("max_delta_v", "DOUBLE", "largest change of a value by the policy evaluation, $"),
     _c("max_exploitability", "DOUBLE", "largest per-state exploitability before the evaluation, $"),
     _c("wall_s", "DOUBLE", "seconds")),
    key=("game", "players")))

_add(Table(
    "finishing", "Equilibrium finishing probabilities of every (state, position, place).",
    (GAME, PLAYERS, STATE, POSITION, _c("place", "SMALLINT", "finishing place, 1 = winner"),
     _c("probability", "DOUBLE", "probability of finishing in that place")),
    key=("game", "players")))


_add(Table(
    "nemesis_values",
    "Ex post check (SPEC §6): for a strategy profile, the value of a single 'nemesis' player who best-responds "
    "over the whole remaining tournament while everybody else keeps the profile, per (state, position). "
    "gain = nemesis_value − profile_value is the profile's tournament exploitability there.",
    (GAME, _c("profile", "VARCHAR", "whose strategies the others play: 'equilibrium' (or a model's name)"),
     PLAYERS, STATE, POSITION,
     _c("profile_value", "DOUBLE", "the position's expected prize under the profile, $"),
     _c("nemesis_value", "DOUBLE", "the expected prize of the nemesis in that position, $"),
     _c("gain", "DOUBLE", "nemesis_value − profile_value, $ (≥ 0)")),
    key=("game", "profile")))


# Convenience views (no data of their own).
_add(Table(
    "pair_equities", "rollout_pairs with labels, both orders: one row per ordered class pair (x, y).",
    (ROLLOUT, _c("hand", "VARCHAR", "label of x"), _c("versus", "VARCHAR", "label of y"),
     _c("x", "SMALLINT", "class id of x"), _c("y", "SMALLINT", "class id of y"),
     _c("weight", "BIGINT", "deal weight of the matchup"),
     _c("p_win", "DOUBLE", "probability x beats y, ties split evenly")),
    key=(), kind="view",
    view_sql="""
      SELECT r.rollout, ha.label AS hand, hb.label AS versus, r.a AS x, r.b AS y, r.weight, r.p_first_wins AS p_win
      FROM rollout_pairs r JOIN hand_classes ha ON ha.class_id = r.a JOIN hand_classes hb ON hb.class_id = r.b
      UNION ALL
      SELECT r.rollout, hb.label, ha.label, r.b, r.a, r.weight, 1 - r.p_first_wins
      FROM rollout_pairs r JOIN hand_classes ha ON ha.class_id = r.a JOIN hand_classes hb ON hb.class_id = r.b
      WHERE r.a <> r.b"""))


_add(Table(
    "equilibrium_jam", "equilibrium_nodes unnested: one row per (state, node, hand class).",
    (GAME, PLAYERS, STATE, _c("node", "SMALLINT", "decision node"), _c("actor_name", "VARCHAR", "acting position"),
     _c("jammed_before", "VARCHAR[]", "positions that jammed before"), _c("class_id", "SMALLINT", "hand class"),
     _c("label", "VARCHAR", "hand class label"), _c("jam_probability", "DOUBLE", "probability of jamming")),
    key=(), kind="view",
    view_sql="""
      SELECT n.game, n.players, n.state_id, n.node, n.actor_name, n.jammed_before, h.class_id, h.label,
             n.jam[h.class_id + 1] AS jam_probability
      FROM equilibrium_nodes n CROSS JOIN hand_classes h"""))


_add(Table(
    "ex_post", "Summary of the ex post check per game and profile: the start state and all states.",
    (GAME, _c("profile", "VARCHAR", "see `nemesis_values`"),
     _c("start_mean_gain", "DOUBLE", "mean nemesis gain over the start state's positions, $"),
     _c("start_max_gain", "DOUBLE", "largest nemesis gain over the start state's positions, $"),
     _c("start_mean_roi_pct", "DOUBLE", "start_mean_gain / fair share (prize pool / players) × 100, %"),
     _c("start_max_roi_pct", "DOUBLE", "start_max_gain / fair share × 100, %"),
     _c("all_mean_gain", "DOUBLE", "mean gain over every (state, position) of every layer, $"),
     _c("all_max_gain", "DOUBLE", "largest gain over every (state, position), $"),
     _c("pairs", "BIGINT", "(state, position) pairs checked")),
    key=(), kind="view",
    view_sql="""
      SELECT n.game, n.profile,
             avg(n.gain) FILTER (WHERE s.stacks = g.start) AS start_mean_gain,
             max(n.gain) FILTER (WHERE s.stacks = g.start) AS start_max_gain,
             100 * avg(n.gain) FILTER (WHERE s.stacks = g.start) / (g.prize_pool / g.players) AS start_mean_roi_pct,
             100 * max(n.gain) FILTER (WHERE s.stacks = g.start) / (g.prize_pool / g.players) AS start_max_roi_pct,
             avg(n.gain) AS all_mean_gain, max(n.gain) AS all_max_gain, count(*) AS pairs
      FROM nemesis_values n JOIN states s USING (game, players, state_id) JOIN games g USING (game)
      GROUP BY n.game, n.profile, g.prize_pool, g.players"""))


def ordered_ddl() -> list[str]:
    """CREATE statements, tables before the views that read them."""
    tables = [t.ddl() for t in TABLES.values() if t.kind == "table"]
    views = [t.ddl() for t in TABLES.values() if t.kind == "view"]
    return tables + views
