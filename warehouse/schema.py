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

    def ddl(self, temp: bool = False) -> str:
        """CREATE statement; ``temp`` for a view: a connection-local view over the file's tables, which a
        read-only connection may create (see :func:`warehouse.db.connect`)."""
        if self.kind == "view":
            return f"CREATE OR REPLACE {'TEMP ' if temp else ''}VIEW {self.name} AS {self.view_sql}"
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
     _c("rollout_triples", "VARCHAR",
        "rollout id of the triple table the game uses (NULL: a heads-up game, which never goes three ways, uses none)"),
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
     _c("wall_s", "DOUBLE", "build time, seconds (of the run that finished it: a triple table resumed "
                            "from its chunk checkpoints counts the chunks computed in that run only)"),
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
     _c("target", "DOUBLE", "exploitability the hands were solved to in this outer iteration, $: looser than gamma "
                            "while the values still move (inexact policy iteration), gamma at the end"),
     _c("states_updated", "INTEGER", "states whose hand was above the target and got more CFR+ iterations"),
     _c("states_skipped", "INTEGER", "states not re-evaluated because a bound on their exploitability is within the "
                                     "target: per player, gain when last checked + the largest change of his "
                                     "utilities since − the change of his expected utility under the profile"),
     _c("states_screened", "INTEGER", "states not re-evaluated in a screening outer iteration because the gain when "
                                      "last checked + 10 % of the room the bound allows is within the target (a "
                                      "heuristic; the layer only ends after an outer iteration that screened none)"),
     _c("states_checked", "INTEGER", "states whose profile was measured exactly under the new values (a full pass "
                                     "over the hand) before deciding whether to solve them again; the rest of the "
                                     "states not skipped or screened were solved for the first time or were surely "
                                     "above the target"),
     _c("cfr_iterations", "BIGINT", "CFR+ iterations spent in this outer iteration, all states"),
     _c("max_delta_v", "DOUBLE", "largest change of a value by the policy evaluation, $"),
     _c("max_exploitability", "DOUBLE", "largest per-state exploitability before the evaluation, $ (for a state "
                                         "not re-evaluated, the bound)"),
     _c("wall_s", "DOUBLE", "seconds; for an outer iteration an interrupt split, the earlier runs' time up to "
                            "their last block checkpoint plus the run that finished it")),
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
    "gain = nemesis_value − profile_value is the profile's tournament exploitability there. The equilibrium's "
    "rows are written layer by layer, as each layer is checked (`ex_post_2p` … `ex_post_5p`); a model's rows, "
    "all its layers at once (`ex_post_models`).",
    (GAME, _c("profile", "VARCHAR", "whose strategies the others play: 'equilibrium' (or a model's name)"),
     PLAYERS, STATE, POSITION,
     _c("profile_value", "DOUBLE", "the position's expected prize under the profile, $"),
     _c("nemesis_value", "DOUBLE", "the expected prize of the nemesis in that position, $"),
     _c("gain", "DOUBLE", "nemesis_value − profile_value, $ (≥ 0)")),
    key=("game", "profile", "players")))


_add(Table(
    "model_nodes",
    "Each equity model's strategy (SPEC §7.1): every state's hand solved with CFR+ to gamma with the successor "
    "states valued by the model. The layout of `equilibrium_nodes` without its actor_name and jammed_before; the view `model_jam` unnests it.",
    (GAME, _c("model", "VARCHAR", "'harville', 'weitzman', 'roberts' or 'FGS-d'"), PLAYERS, STATE,
     _c("node", "SMALLINT", "decision node index within the state's hand (as in `equilibrium_nodes`)"),
     _c("actor", "SMALLINT", "acting position"),
     _c("jam", "DOUBLE[]", "jam probability of each class, list position = class_id + 1")),
    key=("game", "model")))

_add(Table(
    "fgs_values",
    "Future Game Simulation values (SPEC §7.2): v⁰ = Harville, vᵈ(s) = value of the hand at s solved with "
    "successor values vᵈ⁻¹. Model 'FGS-d' values every state by vᵈ.",
    (GAME, _c("depth", "SMALLINT", "d = 1 … fgs_depth"), PLAYERS, STATE, POSITION,
     _c("value", "DOUBLE", "vᵈ of the position, $")),
    key=("game",)))

_add(Table(
    "model_sweeps",
    "One row per model strategy sweep and layer: how the per-state CFR+ solves went.",
    (GAME, _c("model", "VARCHAR", "whose strategies the sweep computed"), PLAYERS,
     _c("states", "INTEGER", "states solved"),
     _c("cfr_iterations", "BIGINT", "CFR+ iterations spent, all states (warm-started)"),
     _c("max_exploitability", "DOUBLE", "largest per-state exploitability after the sweep, $ (≤ gamma)"),
     _c("wall_s", "DOUBLE", "seconds for the layer")),
    key=("game", "model")))


_add(Table(
    "simulation",
    "Monte Carlo tournaments from the start state (SPEC §7.6): one player (the hero) on a model's strategies for "
    "the whole tournament, the others on the equilibrium; one row per model and hero starting position. "
    "model = 'equilibrium' is the control (everybody on the equilibrium: ROI ≈ 0 up to position effects).",
    (GAME, _c("model", "VARCHAR", "the hero's strategies: 'equilibrium', 'harville', 'weitzman', 'roberts', 'FGS-d'"),
     _c("hero_position", "SMALLINT", "the hero's 0-based starting position"),
     _c("hero_seat", "VARCHAR", "its name (5-handed: HJ, CO, BU, SB, BB)"),
     _c("mean_payoff", "DOUBLE", "the hero's mean prize, $"),
     _c("standard_error", "DOUBLE", "standard error of mean_payoff, $"),
     _c("roi_pct", "DOUBLE", "(mean_payoff − fair share) / fair share × 100, %; fair share = prize pool / players"),
     _c("roi_se_pct", "DOUBLE", "standard error of roi_pct, %"),
     _c("finishing", "DOUBLE[]", "the hero's frequency of finishing 1st, 2nd, … (list position = place)"),
     _c("mean_hands", "DOUBLE", "hands per tournament"),
     _c("tournaments", "BIGINT", "tournaments played for this row"),
     _c("seed", "BIGINT", "random seed of this row (results depend only on seed and tournaments)")),
    key=("game",)))

_add(Table(
    "direct_matches",
    "Two models against each other (SPEC §7.6): every seating of the start state where model_a plays the "
    "positions in a_positions and model_b the others (2^players − 2 seatings).",
    (GAME, _c("model_a", "VARCHAR", "strategies of side A"), _c("model_b", "VARCHAR", "strategies of side B"),
     _c("a_positions", "VARCHAR[]", "starting positions playing model_a"),
     _c("a_players", "SMALLINT", "how many players are on side A"),
     _c("roi_a_pct", "DOUBLE", "mean ROI of an A player, %"), _c("roi_a_se_pct", "DOUBLE", "its standard error, %"),
     _c("roi_b_pct", "DOUBLE", "mean ROI of a B player, %"), _c("roi_b_se_pct", "DOUBLE", "its standard error, %"),
     _c("tournaments", "BIGINT", "tournaments played for this seating"),
     _c("seed", "BIGINT", "random seed of this seating"),
     _c("payoff_a", "DOUBLE", "mean prize of an A player, $ (this and the next three are NULL for seatings a "
        "build kept from before 2026-11-30: delete `.cache/simulations/<game key>/match-<model_a>.json` to play "
        "them again)"),
     _c("payoff_b", "DOUBLE", "mean prize of a B player, $"),
     _c("finishing_a", "DOUBLE[]", "an A player's frequency of finishing 1st, 2nd, … (list position = place)"),
     _c("finishing_b", "DOUBLE[]", "a B player's frequency of finishing 1st, 2nd, …")),
    key=("game",)))


# Convenience views (no data of their own).
_add(Table(
    "pair_equities", "rollout_pairs with labels, both orders: one row per ordered class pair (x, y).",
    (ROLLOUT, _c("hand", "VARCHAR", "label of x"), _c("versus", "VARCHAR", "label of y"),
     _c("x", "SMALLINT", "class id of x"), _c("y", "SMALLINT", "class id of y"),
     _c("weight", "BIGINT", "deal weight of the unordered matchup {x, y} (rollout_pairs.weight: ordered deals of "
                             "both orders when x ≠ y)"),
     _c("deals", "BIGINT", "ordered deals of a hand of x then a hand of y (card-disjoint): weight / 2 when x ≠ y, "
                           "weight when x = y; Σ over y of deals × p_win / Σ deals is x's P(win) against a random hand"),
     _c("p_win", "DOUBLE", "probability x beats y, ties split evenly")),
    key=(), kind="view",
    view_sql="""
      SELECT r.rollout, ha.label AS hand, hb.label AS versus, r.a AS x, r.b AS y, r.weight,
             CASE WHEN r.a = r.b THEN r.weight ELSE r.weight // 2 END AS deals, r.p_first_wins AS p_win
      FROM rollout_pairs r JOIN hand_classes ha ON ha.class_id = r.a JOIN hand_classes hb ON hb.class_id = r.b
      UNION ALL
      SELECT r.rollout, hb.label, ha.label, r.b, r.a, r.weight, r.weight // 2, 1 - r.p_first_wins
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
     _c("start_mean_gain", "DOUBLE", "mean nemesis gain over the start state's positions, $ (null until the "
                                     "start state's layer is checked)"),
     _c("start_max_gain", "DOUBLE", "largest nemesis gain over the start state's positions, $"),
     _c("start_mean_roi_pct", "DOUBLE", "start_mean_gain / fair share (prize pool / players) × 100, %"),
     _c("start_max_roi_pct", "DOUBLE", "start_max_gain / fair share × 100, %"),
     _c("all_mean_gain", "DOUBLE", "mean gain over every (state, position) of every layer checked, $ (a build "
                                   "under way may have checked the smaller layers only)"),
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


_add(Table(
    "simulation_summary",
    "`simulation` per game and model, over the hero's starting seats: the headline numbers of the Simulation page.",
    (GAME, _c("model", "VARCHAR", "the hero's strategies (see `simulation`)"),
     _c("seats", "BIGINT", "hero starting seats simulated"),
     _c("mean_roi_pct", "DOUBLE", "mean of roi_pct over the seats, %"),
     _c("mean_roi_se_pct", "DOUBLE", "its standard error, %: sqrt(Σ roi_se_pct²) / seats (the seats are "
                                     "independent runs)"),
     _c("finishing", "DOUBLE[]", "the hero's finishing frequencies averaged over the seats (list position = place)"),
     _c("mean_hands", "DOUBLE", "hands per tournament, mean over the seats"),
     _c("tournaments", "BIGINT", "tournaments played, all seats")),
    key=(), kind="view",
    view_sql="""
      WITH places AS (
        SELECT game, model, hero_position, generate_subscripts(finishing, 1) AS place, unnest(finishing) AS p
        FROM simulation),
      mean_places AS (
        SELECT game, model, list(p ORDER BY place) AS finishing
        FROM (SELECT game, model, place, avg(p) AS p FROM places GROUP BY game, model, place)
        GROUP BY game, model)
      SELECT s.game, s.model, count(*) AS seats, avg(s.roi_pct) AS mean_roi_pct,
             sqrt(sum(s.roi_se_pct ^ 2)) / count(*) AS mean_roi_se_pct, any_value(m.finishing) AS finishing,
             avg(s.mean_hands) AS mean_hands, sum(s.tournaments)::BIGINT AS tournaments
      FROM simulation s JOIN mean_places m USING (game, model)
      GROUP BY s.game, s.model"""))

_add(Table(
    "direct_match_summary",
    "`direct_matches` per game and pair of models, over the seatings: the table of the Simulation page.",
    (GAME, _c("model_a", "VARCHAR", "strategies of side A"), _c("model_b", "VARCHAR", "strategies of side B"),
     _c("seatings", "BIGINT", "seatings played (2^players − 2)"),
     _c("mean_roi_a_pct", "DOUBLE", "ROI of an A player over all seatings, every seat alike: Σ a_players·roi_a_pct "
        "/ Σ a_players, %; the opposite of mean_roi_b_pct when every tournament finishes"),
     _c("mean_roi_a_se_pct", "DOUBLE", "its standard error, %: sqrt(Σ (a_players·roi_a_se_pct)²) / Σ a_players "
        "(independent runs)"),
     _c("mean_roi_b_pct", "DOUBLE", "ROI of a B player over all seatings, every seat alike (weights players − "
        "a_players), %"),
     _c("mean_roi_b_se_pct", "DOUBLE", "its standard error, %"),
     _c("tournaments", "BIGINT", "tournaments played, all seatings")),
    key=(), kind="view",
    view_sql="""
      SELECT game, model_a, model_b, count(*) AS seatings,
             sum(a_players * roi_a_pct) / sum(a_players) AS mean_roi_a_pct,
             sqrt(sum((a_players * roi_a_se_pct) ^ 2)) / sum(a_players) AS mean_roi_a_se_pct,
             sum(b_players * roi_b_pct) / sum(b_players) AS mean_roi_b_pct,
             sqrt(sum((b_players * roi_b_se_pct) ^ 2)) / sum(b_players) AS mean_roi_b_se_pct,
             sum(tournaments)::BIGINT AS tournaments
      FROM (SELECT m.*, g.players - m.a_players AS b_players FROM direct_matches m JOIN games g USING (game))
      GROUP BY game, model_a, model_b"""))


_add(Table(
    "model_values",
    "Every model's payoff for every (state, position) next to the equilibrium payoff (SPEC §7.3). Models: the "
    "ICM family from `model_payoffs` and FGS-d from `fgs_values`. `*_pa` columns are position-averaged: "
    "averaged over every distinct seating of the same multiset of stacks (same player count, same stack).",
    (GAME, _c("model", "VARCHAR", "'harville', 'weitzman', 'roberts' or 'FGS-d'"), PLAYERS, STATE, POSITION,
     _c("stack", "SMALLINT", "the position's stack, units"),
     _c("payoff", "DOUBLE", "the model's payoff, $"),
     _c("equilibrium", "DOUBLE", "the equilibrium payoff, $"),
     _c("deviation", "DOUBLE", "payoff − equilibrium, $"),
     _c("relative_deviation_pct", "DOUBLE", "(payoff − equilibrium) / equilibrium × 100, %"),
     _c("payoff_pa", "DOUBLE", "position-averaged model payoff, $ (the model's payoffs of the stack averaged over "
        "the same seatings as `equilibrium_pa`: the same as `payoff` for Harville, Weitzman and Roberts, which pay a "
        "stack the same in every seat; FGS-d, which sees the blinds, is compared with its own average)"),
     _c("equilibrium_pa", "DOUBLE", "position-averaged equilibrium payoff, $")),
    key=(), kind="view",
    view_sql="""
      WITH m AS (
        SELECT game, model, players, state_id, position, payoff FROM model_payoffs
        UNION ALL
        SELECT game, 'FGS-' || depth, players, state_id, position, value FROM fgs_values),
      j AS (
        SELECT m.game, m.model, m.players, m.state_id, m.position, s.stacks[m.position + 1] AS stack,
               list_sort(s.stacks) AS multiset, m.payoff, e.value AS equilibrium
        FROM m JOIN equilibrium_values e USING (game, players, state_id, position)
               JOIN states s USING (game, players, state_id))
      SELECT game, model, players, state_id, position, stack, payoff, equilibrium,
             payoff - equilibrium AS deviation,
             100 * (payoff - equilibrium) / nullif(equilibrium, 0) AS relative_deviation_pct,
             avg(payoff) OVER w AS payoff_pa, avg(equilibrium) OVER w AS equilibrium_pa
      FROM j WINDOW w AS (PARTITION BY game, model, players, multiset, stack)"""))

_add(Table(
    "deviation_summary",
    "How far each model's payoffs are from the equilibrium (SPEC §7.3), over all (state, position) pairs and per "
    "player count, plain and position-averaged.",
    (GAME, _c("model", "VARCHAR", "see `model_values`"),
     _c("averaging", "VARCHAR", "'plain' or 'position-averaged'"),
     _c("players", "SMALLINT", "player count, NULL = all layers together"),
     _c("mapd_pct", "DOUBLE", "mean |relative deviation|, %"),
     _c("min_relative_pct", "DOUBLE", "smallest relative deviation, %"),
     _c("max_relative_pct", "DOUBLE", "largest relative deviation, %"),
     _c("mad", "DOUBLE", "mean |payoff − equilibrium|, $"),
     _c("min_deviation", "DOUBLE", "smallest payoff − equilibrium, $"),
     _c("max_deviation", "DOUBLE", "largest payoff − equilibrium, $"),
     _c("pairs", "BIGINT", "(state, position) pairs")),
    key=(), kind="view",
    view_sql="""
      WITH d AS (
        SELECT game, model, players, 'plain' AS averaging, payoff - equilibrium AS dev,
               100 * (payoff - equilibrium) / nullif(equilibrium, 0) AS rel FROM model_values
        UNION ALL
        SELECT game, model, players, 'position-averaged', payoff_pa - equilibrium_pa,
               100 * (payoff_pa - equilibrium_pa) / nullif(equilibrium_pa, 0) FROM model_values)
      SELECT game, model, averaging, players, avg(abs(rel)) AS mapd_pct, min(rel) AS min_relative_pct,
             max(rel) AS max_relative_pct, avg(abs(dev)) AS mad, min(dev) AS min_deviation,
             max(dev) AS max_deviation, count(*) AS pairs
      FROM d GROUP BY GROUPING SETS ((game, model, averaging), (game, model, averaging, players))"""))

_add(Table(
    "deviation_by_stack",
    "Per player count and stack size (SPEC §7.4): the mean equilibrium payoff, each model's mean signed and "
    "absolute deviation from it, and the equilibrium's finishing and winning probabilities.",
    (GAME, _c("model", "VARCHAR", "see `model_values`"), PLAYERS, _c("stack", "SMALLINT", "units"),
     _c("mean_equilibrium", "DOUBLE", "mean equilibrium payoff of the stack, $"),
     _c("mean_payoff", "DOUBLE", "mean model payoff of the stack, $"),
     _c("mean_deviation", "DOUBLE", "mean (model − equilibrium), $"),
     _c("mean_abs_deviation", "DOUBLE", "mean |model − equilibrium|, $"),
     _c("finishing", "DOUBLE[]", "mean equilibrium probability of finishing 1st, 2nd, … (list position = place)"),
     _c("p_win", "DOUBLE", "mean equilibrium probability of finishing 1st"),
     _c("proportional", "DOUBLE", "stack / units, the chip-proportional winning probability"),
     _c("p_win_relative_pct", "DOUBLE", "(p_win − proportional) / proportional × 100, %"),
     _c("pairs", "BIGINT", "(state, position) pairs with this stack")),
    key=(), kind="view",
    view_sql="""
      WITH f AS (
        SELECT f.game, f.players, s.stacks[f.position + 1] AS stack, f.place, avg(f.probability) AS p
        FROM finishing f JOIN states s USING (game, players, state_id) GROUP BY ALL),
      fl AS (
        SELECT game, players, stack, list(p ORDER BY place) AS finishing,
               max(p) FILTER (WHERE place = 1) AS p_win FROM f GROUP BY ALL)
      SELECT v.game, v.model, v.players, v.stack, avg(v.equilibrium) AS mean_equilibrium,
             avg(v.payoff) AS mean_payoff, avg(v.deviation) AS mean_deviation,
             avg(abs(v.deviation)) AS mean_abs_deviation, any_value(fl.finishing) AS finishing,
             any_value(fl.p_win) AS p_win, v.stack / any_value(u.units) AS proportional,
             100 * (any_value(fl.p_win) - v.stack / any_value(u.units)) / (v.stack / any_value(u.units)) AS p_win_relative_pct,
             count(*) AS pairs
      FROM model_values v JOIN (SELECT game, units FROM games) u ON u.game = v.game
           LEFT JOIN fl ON fl.game = v.game AND fl.players = v.players AND fl.stack = v.stack
      GROUP BY v.game, v.model, v.players, v.stack"""))

_add(Table(
    "fgs_value_moves",
    "How far each Future Game Simulation depth still moves the values (SPEC §7.2): |vᵈ − vᵈ⁻¹| over every "
    "(state, position), v⁰ = Harville, overall and per player count. FGS-d approaches a fixed point as the "
    "moves shrink.",
    (GAME, _c("depth", "SMALLINT", "d = 1 … fgs_depth"),
     _c("players", "SMALLINT", "player count, NULL = all layers together"),
     _c("max_abs_move", "DOUBLE", "largest |vᵈ − vᵈ⁻¹|, $"),
     _c("mean_abs_move", "DOUBLE", "mean |vᵈ − vᵈ⁻¹|, $"),
     _c("pairs", "BIGINT", "(state, position) pairs")),
    key=(), kind="view",
    view_sql="""
      WITH v AS (
        SELECT game, depth, players, state_id, position, value FROM fgs_values
        UNION ALL
        SELECT game, 0::SMALLINT, players, state_id, position, payoff FROM model_payoffs WHERE model = 'harville')
      SELECT a.game, a.depth, a.players, max(abs(a.value - b.value)) AS max_abs_move,
             avg(abs(a.value - b.value)) AS mean_abs_move, count(*) AS pairs
      FROM v a JOIN v b ON b.game = a.game AND b.depth = a.depth - 1 AND b.players = a.players
                        AND b.state_id = a.state_id AND b.position = a.position
      WHERE a.depth >= 1
      GROUP BY GROUPING SETS ((a.game, a.depth), (a.game, a.depth, a.players))"""))

_add(Table(
    "model_jam", "model_nodes unnested: one row per (model, state, node, hand class).",
    (GAME, _c("model", "VARCHAR", "see `model_nodes`"), PLAYERS, STATE, _c("node", "SMALLINT", "decision node"),
     _c("actor", "SMALLINT", "acting position"), _c("class_id", "SMALLINT", "hand class"),
     _c("label", "VARCHAR", "hand class label"), _c("jam_probability", "DOUBLE", "probability of jamming")),
    key=(), kind="view",
    view_sql="""
      SELECT n.game, n.model, n.players, n.state_id, n.node, n.actor, h.class_id, h.label,
             n.jam[h.class_id + 1] AS jam_probability
      FROM model_nodes n CROSS JOIN hand_classes h"""))

_add(Table(
    "model_scorecard",
    "The home page's headline: one row per game and profile (the equilibrium, then each model), how far the "
    "profile is from the equilibrium in payoffs (`deviation_summary`, all layers), in play (`simulation_summary`) "
    "and how exploitable its strategies are (`ex_post`). NULL where that analysis has not run for the profile yet "
    "(a `--skip-models` build compares the ICM family's payoffs but plays and checks only the equilibrium) or does "
    "not apply (the equilibrium's deviation from itself).",
    (GAME, _c("model", "VARCHAR", "'equilibrium' or a model (see `model_values`)"),
     _c("mapd_pct", "DOUBLE", "mean |payoff − equilibrium| / equilibrium over every (state, position), % "
                              "(`deviation_summary`, plain)"),
     _c("mapd_pa_pct", "DOUBLE", "the same, position-averaged, %"),
     _c("mad", "DOUBLE", "mean |payoff − equilibrium| over every (state, position), $ (plain)"),
     _c("sim_roi_pct", "DOUBLE", "ROI of one player on the profile's strategies against an equilibrium table, mean "
                                 "over his starting seats, % (`simulation_summary.mean_roi_pct`; the equilibrium's "
                                 "row is the control)"),
     _c("sim_roi_se_pct", "DOUBLE", "its standard error, %"),
     _c("nemesis_start_roi_pct", "DOUBLE", "a nemesis's mean gain over the start state's positions against the "
                                           "profile, as a share of the fair share, % (`ex_post.start_mean_roi_pct`)"),
     _c("nemesis_max_gain", "DOUBLE", "the largest nemesis gain over every (state, position) checked, $ "
                                      "(`ex_post.all_max_gain`)")),
    key=(), kind="view",
    view_sql="""
      WITH d AS (
        SELECT game, model, max(mapd_pct) FILTER (WHERE averaging = 'plain') AS mapd_pct,
               max(mapd_pct) FILTER (WHERE averaging = 'position-averaged') AS mapd_pa_pct,
               max(mad) FILTER (WHERE averaging = 'plain') AS mad
        FROM deviation_summary WHERE players IS NULL GROUP BY game, model),
      s AS (SELECT game, model, mean_roi_pct AS sim_roi_pct, mean_roi_se_pct AS sim_roi_se_pct
            FROM simulation_summary),
      x AS (SELECT game, profile AS model, start_mean_roi_pct AS nemesis_start_roi_pct,
                   all_max_gain AS nemesis_max_gain FROM ex_post),
      k AS (SELECT game, model FROM d UNION SELECT game, model FROM s UNION SELECT game, model FROM x)
      SELECT k.game, k.model, d.mapd_pct, d.mapd_pa_pct, d.mad, s.sim_roi_pct, s.sim_roi_se_pct,
             x.nemesis_start_roi_pct, x.nemesis_max_gain
      FROM k LEFT JOIN d USING (game, model) LEFT JOIN s USING (game, model) LEFT JOIN x USING (game, model)"""))
