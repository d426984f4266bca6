"""The whole Dagster graph on a tiny game: every asset materializes, checks pass, tables hold what they should."""

import duckdb
import numpy as np
import pandas as pd
import pytest

from assets.definitions import defs
from assets.fgs import fgs_strategies
from assets.model_analysis import model_strategies
from engine import equity_models
from engine.states import n_states


def test_definitions_load():
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"hand_classes", "rollout_pairs", "rollout_triples", "game_states", "equity_model_tables",
            "solve_2p", "solve_3p", "solve_4p", "solve_5p", "finishing_2p", "finishing_3p", "finishing_4p",
            "finishing_5p", "ex_post_2p", "ex_post_3p", "ex_post_4p", "ex_post_5p", "model_strategies",
            "fgs_strategies", "deviation_statistics", "ex_post_models", "simulations", "results_site"} <= keys


def test_the_ui_shows_each_assets_table_columns_and_row_count(tiny_build):
    """Each asset but the site names the warehouse table it stands for, with that table's columns,
    types and docs (the UI's Columns tab), and its materialization reports `dagster/row_count` (the
    catalog's row count): that table's rows of the game (and layer) it wrote, counted here in SQL."""
    from warehouse.schema import TABLES

    graph = defs.resolve_asset_graph()
    tables = {}
    for key in graph.get_all_asset_keys():
        md = graph.get(key).metadata
        if key.to_user_string() == "results_site":
            assert "dagster/column_schema" not in md
            continue
        table = tables[key.to_user_string()] = md["warehouse_table"]
        columns = [(c.name, c.type, c.description) for c in md["dagster/column_schema"].columns]
        assert columns == [(c.name, c.type, c.description) for c in TABLES[table].columns]
    assert len(tables) == 22
    events = tiny_build["result"].get_asset_materialization_events()
    reported = {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata for e in events}
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    for name, table in tables.items():
        layer = name.rsplit("_", 1)[-1]
        if layer in ("4p", "5p"):  # no such layer in the tiny game: nothing written, no count
            assert "dagster/row_count" not in reported[name]
            continue
        where, params = ("", []) if table in ("hand_classes", "rollout_pairs", "rollout_triples") else \
            (" WHERE game = ?", ["tiny"])
        if layer in ("2p", "3p"):
            where, params = where + " AND players = ?", params + [int(layer[0])]
        if table == "nemesis_values":
            where += " AND profile " + ("= ?" if layer in ("2p", "3p") else "<> ?")
            params = params + ["equilibrium"]
        if name == "model_strategies":
            where += " AND model IN ('harville', 'weitzman', 'roberts')"
        expected, = con.execute(f"SELECT count(*) FROM {table}{where}", params).fetchone()
        assert reported[name]["dagster/row_count"].value == expected > 0, name


def test_every_asset_check_says_what_it_checks():
    """The Dagster UI shows each check's description beside its result ("No description provided" before);
    each check blocks the assets downstream of its asset (a layer above gamma must not feed the next)."""
    from assets.definitions import ALL_ASSETS

    specs = [spec for asset in ALL_ASSETS for spec in asset.check_specs]
    assert len(specs) == 41
    assert [spec.name for spec in specs if not (spec.description or "").strip()] == []
    assert [spec.name for spec in specs if not spec.blocking] == []


def test_every_config_field_says_what_it_sets():
    """The Launchpad shows each resource and op config field's description (attribute docstrings
    never reached it: every field read "no description")."""
    from assets.deviation import DeviationConfig
    from assets.resources import GameResource, WarehouseResource
    from assets.rollout import RolloutConfig
    from assets.simulation import SimulationConfig

    for config in (GameResource, WarehouseResource, RolloutConfig, DeviationConfig, SimulationConfig):
        fields = config.to_config_schema().as_field().config_type.fields
        assert fields and all((f.description or "").strip() for f in fields.values()), config.__name__


def test_every_asset_and_check_succeeds(tiny_build):
    result = tiny_build["result"]
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert {c.asset_check_key.name for c in checks} == {
        "combos_total_1326", "pair_rows_and_weights", "triple_rows_and_weights", "state_counts",
        "finishing_rows_and_columns_sum_to_1", "payoffs_sum_to_open_prizes",
        "values_sum_to_open_prizes", "exploitability_within_gamma", "finishing_probabilities_sum_to_1",
        "finishing_gives_back_the_values",
        "nemesis_at_least_profile", "policy_iteration_converged", "every_state_within_gamma",
        "fgs_values_sum_to_open_prizes", "profile_values_sum_to_open_prizes", "every_model_compared_everywhere",
        "finishing_by_stack_sums_to_1",
        "equilibrium_matches_its_values", "every_tournament_finished", "direct_match_payoffs_sum_to_prize_pool"}
    failed = [(c.asset_check_key.name, c.metadata) for c in checks if not c.passed]
    assert not failed
    # the 3-player game's 4- and 5-player layer assets pass their checks as not applicable, and say so
    skipped = [c for c in checks if c.asset_key.to_user_string() in {"solve_4p", "solve_5p", "finishing_5p"}]
    assert len(skipped) == 6 and all(c.description == "not applicable: no such layer in a 3-player game"
                                     for c in skipped)


def test_an_uninterrupted_build_reads_no_sweep_layer_back(tiny_build):
    """`layers_read_back` lists sweep layers an interrupted run had finished. The FGS chain always
    reads Harville's layers from model_strategies' checkpoint; listing them made a build that was
    never interrupted look resumed."""
    events = tiny_build["result"].get_asset_materialization_events()
    meta = {e.asset_key.to_user_string(): e.materialization.metadata for e in events}
    assert meta["model_strategies"]["layers_read_back"].value == []
    assert meta["fgs_strategies"]["layers_read_back"].value == []


def test_a_layer_above_gamma_fails_its_check_and_says_how_to_retry(tiny_build, tmp_path):
    """One state above gamma in `state_quality` fails `exploitability_within_gamma`, which counts it
    and tells the user that running the build again retries such states (see HELD_RETRIES), unless
    the layer's solve log shows values that cycled (then running again would not help)."""
    import shutil

    from assets.solve import _check_layer
    from engine.config import load_config

    cfg = load_config(tiny_build["config"])
    copy = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    con = duckdb.connect(str(copy))
    checks = {c.check_name: c for c in _check_layer(con, cfg, 3)}
    assert checks["exploitability_within_gamma"].passed and "remedy" not in checks["exploitability_within_gamma"].metadata
    con.execute("UPDATE state_quality SET exploitability = ? WHERE game = ? AND players = 3 AND state_id = 4",
                [3 * cfg.gamma, cfg.name])
    check = {c.check_name: c for c in _check_layer(con, cfg, 3)}["exploitability_within_gamma"]
    assert not check.passed
    meta = {k: getattr(v, "value", v) for k, v in check.metadata.items()}
    assert meta["states_over"] == 1 and meta["max_exploitability_usd"] == pytest.approx(3 * cfg.gamma)
    assert "run the same build again" in meta["remedy"] and "values_cycled" not in meta

    # a layer stopped because its values cycled: running again would not help, and the check says so
    from engine.target_ladder import CYCLE_WINDOW

    key = [cfg.name]
    con.execute("UPDATE solve_log SET target = 0.01, states_updated = 5, max_delta_v = 10.0 "
                "WHERE game = ? AND players = 3", key)
    count = "SELECT count(*) FROM solve_log WHERE game = ? AND players = 3"
    while con.execute(count, key).fetchone()[0] < CYCLE_WINDOW:
        con.execute("INSERT INTO solve_log SELECT * REPLACE (outer_iteration + (SELECT max(outer_iteration) FROM "
                    "solve_log WHERE game = $1 AND players = 3) AS outer_iteration) FROM solve_log "
                    "WHERE game = $1 AND players = 3", key)
    check = {c.check_name: c for c in _check_layer(con, cfg, 3)}["exploitability_within_gamma"]
    meta = {k: getattr(v, "value", v) for k, v in check.metadata.items()}
    assert not check.passed and meta["values_cycled"] is True
    assert "does not settle on this game" in meta["remedy"] and "run the same build again" not in meta["remedy"]


def test_a_layer_with_missing_rows_fails_its_checks(tiny_build, tmp_path):
    """The layer checks count the states, so rows lost from the warehouse fail them instead of
    passing on nothing: a state without values, a NULL exploitability, a state without one. (And a
    value that is off fails the sum.)"""
    import shutil

    from assets.solve import _check_layer
    from engine.config import load_config

    cfg = load_config(tiny_build["config"])
    copy = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    con = duckdb.connect(str(copy))

    def checks() -> dict:
        return {c.check_name: (c.passed, {k: getattr(v, "value", v) for k, v in c.metadata.items()})
                for c in _check_layer(con, cfg, 3)}

    assert checks()["values_sum_to_open_prizes"][0] and checks()["exploitability_within_gamma"][0]
    off = "UPDATE equilibrium_values SET value = value + ? WHERE game = ? AND players = 3 AND state_id = 7 " \
          "AND position = 2"
    con.execute(off, [0.01, cfg.name])  # a value off by a cent: the state's values miss the open prizes
    passed, meta = checks()["values_sum_to_open_prizes"]
    assert not passed and meta["max_error_usd"] == pytest.approx(0.01, rel=1e-6)
    con.execute(off, [-0.01, cfg.name])
    assert checks()["values_sum_to_open_prizes"][0]
    con.execute("DELETE FROM equilibrium_values WHERE game = ? AND players = 3 AND state_id = 7 AND position = 2",
                [cfg.name])
    passed, meta = checks()["values_sum_to_open_prizes"]
    assert not passed and meta["states_with_all_values"] == meta["states"] - 1 == n_states(6, 3) - 1
    con.execute("UPDATE state_quality SET exploitability = NULL WHERE game = ? AND players = 3 AND state_id = 4",
                [cfg.name])
    assert checks()["exploitability_within_gamma"][0] is False
    assert checks()["exploitability_within_gamma"][1]["states_over"] == 1
    con.execute("DELETE FROM state_quality WHERE game = ? AND players = 3 AND state_id = 5", [cfg.name])
    assert checks()["exploitability_within_gamma"][1]["states_over"] == 2
    con.execute("DELETE FROM equilibrium_values WHERE game = ? AND players = 3", [cfg.name])
    assert checks()["values_sum_to_open_prizes"][0] is False



def test_equity_model_checks_count_the_payoffs(tiny_build, tmp_path):
    """The equity models' checks fail on a payoff or probability that is off, and on a state whose
    payoffs (finishing matrix, example) are all missing, which leaves every remaining sum right: the
    checks count the (model, state) pairs, the finishing rows and the examples."""
    import shutil

    from assets.models import _check_models
    from engine.config import load_config

    cfg = load_config(tiny_build["config"])
    copy = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    con = duckdb.connect(str(copy))
    assert all(c.passed for c in _check_models(con, cfg))
    # a payoff or a finishing probability off: the sums catch it
    off = "UPDATE model_payoffs SET payoff = payoff + ? WHERE game = ? AND model = 'weitzman' AND players = 3 " \
          "AND state_id = 2 AND position = 1"
    con.execute(off, [0.01, cfg.name])
    check = {c.check_name: c for c in _check_models(con, cfg)}["payoffs_sum_to_open_prizes"]
    assert not check.passed and check.metadata["max_error_usd"].value == pytest.approx(0.01, rel=1e-6)
    con.execute(off, [-0.01, cfg.name])
    off = "UPDATE model_finishing SET probability = probability + ? WHERE game = ? AND model = 'roberts' " \
          "AND players = 3 AND state_id = 2 AND position = 0 AND place = 1"
    con.execute(off, [0.001, cfg.name])
    check = {c.check_name: c for c in _check_models(con, cfg)}["finishing_rows_and_columns_sum_to_1"]
    assert not check.passed and check.metadata["max_row_error"].value == pytest.approx(0.001, rel=1e-6)
    assert check.metadata["max_column_error"].value == pytest.approx(0.001, rel=1e-6)
    con.execute(off, [-0.001, cfg.name])
    assert all(c.passed for c in _check_models(con, cfg))
    con.execute("DELETE FROM model_payoffs WHERE game = ? AND model = 'roberts' AND players = 3 AND state_id = 3",
                [cfg.name])
    check = {c.check_name: c for c in _check_models(con, cfg)}["payoffs_sum_to_open_prizes"]
    assert not check.passed and check.metadata["max_error_usd"].value < 1e-9
    assert check.metadata["model_states_complete"].value == check.metadata["expected"].value - 1 \
        == 3 * (n_states(6, 2) + n_states(6, 3)) - 1
    con.execute("DELETE FROM model_finishing WHERE game = ? AND model = 'weitzman' AND players = 2 AND state_id = 1",
                [cfg.name])
    check = {c.check_name: c for c in _check_models(con, cfg)}["finishing_rows_and_columns_sum_to_1"]
    assert not check.passed and check.metadata["max_row_error"].value < 1e-9
    assert check.metadata["rows"].value == check.metadata["expected_rows"].value - 4  # (2 positions × 2 places)
    con.execute("UPDATE model_examples SET payoff = payoff + 1 WHERE game = ? AND model = 'harville' AND player = 0",
                [cfg.name])
    check = {c.check_name: c for c in _check_models(con, cfg)}["payoffs_sum_to_open_prizes"]
    assert check.metadata["examples_max_error_usd"].value == pytest.approx(1.0)
    con.execute("DELETE FROM model_examples WHERE game = ? AND model = 'roberts'", [cfg.name])
    check = {c.check_name: c for c in _check_models(con, cfg)}["payoffs_sum_to_open_prizes"]
    assert check.metadata["examples_complete"].value is False


def test_the_example_preview_shows_every_example_and_model(tiny_build, tmp_path):
    """The `equity_model_tables` preview (asset metadata) lists every example of the config, one row
    per player with each model's payoff in its own column, as the `model_examples` table holds them."""
    import shutil

    from assets.models import example_payoffs_preview

    copy = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    con = duckdb.connect(str(copy))
    con.execute("""INSERT INTO model_examples SELECT game, model, 1 AS example, player, stack * 2, place, probability,
                   payoff + player FROM model_examples WHERE game = 'tiny' AND example = 0""")
    lines = [line.strip("| ").split(" | ") for line in example_payoffs_preview(con, "tiny", rows=10).splitlines()]
    assert lines[0] == ["example", "player", "stack", *equity_models.MODELS]
    rows = [[float(x) for x in line] for line in lines[2:]]
    truth = con.execute("""SELECT example, player, any_value(stack), model, any_value(payoff) FROM model_examples
                           WHERE game = 'tiny' GROUP BY example, player, model""").fetchall()
    assert len(rows) == len(truth) // len(equity_models.MODELS) == 2 * 5
    by_key = {(e, p, m): (x, v) for e, p, x, m, v in truth}
    for e, p, x, *payoffs in rows:
        for m, v in zip(equity_models.MODELS, payoffs):
            assert by_key[(int(e), int(p), m)] == (x, pytest.approx(v, abs=0.005))


def test_finishing_checks_count_the_rows(tiny_build, tmp_path):
    """The finishing checks fail when a probability is off, and when a state's rows are missing
    altogether, which leaves every remaining sum at 1 and every remaining value given back."""
    import shutil

    from assets.finishing import _check_results
    from engine.config import load_config

    cfg = load_config(tiny_build["config"])
    copy = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    con = duckdb.connect(str(copy))
    assert all(c.passed for c in _check_results(con, cfg, 3))
    off = "UPDATE finishing SET probability = probability + ? WHERE game = ? AND players = 3 AND state_id = 2 " \
          "AND position = 0 AND place = 1"
    con.execute(off, [0.001, cfg.name])  # one probability off: its sums miss 1, its value is not given back
    checks = {c.check_name: c for c in _check_results(con, cfg, 3)}
    assert not checks["finishing_probabilities_sum_to_1"].passed
    assert checks["finishing_probabilities_sum_to_1"].metadata["max_error"].value == pytest.approx(0.001, rel=1e-6)
    assert not checks["finishing_gives_back_the_values"].passed
    con.execute(off, [-0.001, cfg.name])
    assert all(c.passed for c in _check_results(con, cfg, 3))
    # every row of one state gone: the sums left are all 1 and the values left all given back
    con.execute("DELETE FROM finishing WHERE game = ? AND players = 3 AND state_id = 2", [cfg.name])
    checks = {c.check_name: c for c in _check_results(con, cfg, 3)}
    meta = {k: getattr(v, "value", v) for k, v in checks["finishing_probabilities_sum_to_1"].metadata.items()}
    assert meta["max_error"] < 1e-9 and meta["probabilities"] == meta["expected_probabilities"] - 9
    assert not checks["finishing_probabilities_sum_to_1"].passed
    assert not checks["finishing_gives_back_the_values"].passed


def test_showdown_table_checks_fail_on_probabilities_off(tiny_build, tmp_path):
    """`pair_rows_and_weights` and `triple_rows_and_weights` read the probabilities too, not only the
    rows and weights: a pair's chance above 1 fails the first, a triple whose six order probabilities
    no longer sum to 1 the second."""
    import shutil

    from assets.rollout import _check_pairs, _check_triples

    copy = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    with duckdb.connect(str(copy)) as con:
        pairs, triples = con.execute("SELECT rollout_pairs, rollout_triples FROM games WHERE game = 'tiny'").fetchone()
        assert _check_pairs(con, pairs).passed and _check_triples(con, triples).passed
        con.execute("UPDATE rollout_pairs SET p_first_wins = 1.001 WHERE rollout = ? AND a = 0 AND b = 1", [pairs])
        check = _check_pairs(con, pairs)
        assert not check.passed and check.metadata["p_out_of_range"].value == 1
        con.execute("UPDATE rollout_triples SET p_abc = p_abc + 0.001 WHERE rollout = ? AND a = 0 AND b = 1 AND c = 2",
                    [triples])
        check = _check_triples(con, triples)
        assert not check.passed and check.metadata["max_row_sum_error"].value == pytest.approx(0.001, rel=1e-6)
        assert check.metadata["rows"].value == 169 * 170 * 171 // 6  # (every row still there)


def test_ex_post_checks_hold_the_nemesis_and_the_residual_to_their_rules():
    """A nemesis who does worse than the profile (beyond rounding) or a policy iteration left with a
    Bellman residual fails the ex post checks (of the equilibrium's layers and of the models'
    profiles alike); rounding-sized ones pass."""
    from assets.ex_post import ex_post_checks

    def passed(min_gain: float, residual: float) -> dict[str, bool]:
        return {c.check_name: c.passed for c in ex_post_checks({"min_gain": min_gain, "worst_residual": residual})}

    assert passed(-1e-10, 1e-10) == {"nemesis_at_least_profile": True, "policy_iteration_converged": True}
    assert passed(-1e-6, 1e-10) == {"nemesis_at_least_profile": False, "policy_iteration_converged": True}
    assert passed(0.0, 1e-6) == {"nemesis_at_least_profile": True, "policy_iteration_converged": False}


def test_rollout_metadata_records_mode_and_precision(tiny_build):
    events = tiny_build["result"].get_asset_materialization_events()
    mats = {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata for e in events}
    meta = mats["rollout_triples"]
    assert meta["mode"].value == "sampled" and meta["boards_per_matchup"].value == 4
    assert meta["rows"].value == 818_805 and meta["precision (max std error)"].value > 0
    # its chunks were checkpointed as they finished (a build interrupted in it resumes with them)
    from engine.rollout import triple_chunks_saved

    saved, total, _ = triple_chunks_saved(tiny_build["root"] / "cache" / "rollout" / "sampled-4-seed3", "sampled", 4, 3)
    assert saved == total >= 1  # (one chunk at 4 boards a matchup; 82 at the quick game's 2,000)


def test_a_resumed_triple_tables_time_left_counts_only_the_rows_it_computes(monkeypatch):
    """A triple table resumed from its checkpoints loads their rows in an instant; the time left is
    reckoned from the rows this run computes, where it had said "~1 s left" at 29 % of a sampled
    table whose computing took 44 s more."""
    import types

    import assets.rollout as asset_rollout

    lines, clock = [], iter([0.0, 0.1, 0.2, 10.0, 20.0])
    monkeypatch.setattr(asset_rollout, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    context = types.SimpleNamespace(log=types.SimpleNamespace(info=lines.append))
    report = asset_rollout._progress_logger(context, "triple table", saved=300_000)
    for done in (100_000, 300_000, 400_000, 500_000):  # two chunks loaded, then 100,000 rows per 10 s
        report(done, 800_000)
    loading = "0 s elapsed, reading back the 300,000 rows its checkpoints hold"
    assert lines == [f"triple table: 100,000/800,000 (12%), {loading}",
                     f"triple table: 300,000/800,000 (38%), {loading}",
                     "triple table: 400,000/800,000 (50%), 10 s elapsed, ~40 s left",
                     "triple table: 500,000/800,000 (62%), 20 s elapsed, ~30 s left"]
    # a line every 5 % of the rows (10 of 200), and the last
    monkeypatch.setattr(asset_rollout, "time", types.SimpleNamespace(perf_counter=lambda: 0.0))
    lines.clear()
    report = asset_rollout._progress_logger(context, "pair table")
    for done in range(1, 201):
        report(done, 200)
    assert [int(line.split()[2].split("/")[0]) for line in lines] == [*range(8, 200, 10), 200]
    assert lines[-1] == "pair table: 200/200 (100%), 0 s elapsed, ~0 s left"


def test_solve_metadata_matches_the_solve_log(tiny_build):
    """A layer's materialization reports its outer iterations, CFR+ iterations and exact checks, the
    same counts the warehouse's solve_log and state_quality hold for it."""
    events = tiny_build["result"].get_asset_materialization_events()
    mats = {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata for e in events}
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    for n in (2, 3):
        meta = mats[f"solve_{n}p"]
        outer, checks, wall = con.execute("SELECT count(*), sum(states_checked), sum(wall_s) FROM solve_log "
                                          "WHERE game = 'tiny' AND players = ?", [n]).fetchone()
        assert meta["computed"].value == "in this run"
        assert meta["outer_iterations_wall_s"].value == pytest.approx(wall, abs=0.006)
        its = con.execute("SELECT sum(cfr_iterations) FROM state_quality WHERE game = 'tiny' AND players = ?",
                          [n]).fetchone()[0]
        assert (meta["outer_iterations"].value, meta["exact_checks_in_outer_iterations"].value,
                meta["cfr_iterations"].value) == (outer, checks, its)
        assert outer > 0 and its > 0


def test_the_jam_views_unnest_each_nodes_list_by_class(tiny_build):
    """`equilibrium_jam` and `model_jam` (what the pages and the README's queries read) hold, for
    every node and class, the node's list entry of that class id, labelled as engine.cards labels it."""
    from engine.cards import class_label

    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        for nodes_sql, jam_sql in (
                ("SELECT players, state_id, node, jam FROM equilibrium_nodes WHERE game = 'tiny'",
                 "SELECT players, state_id, node, class_id, label, jam_probability FROM equilibrium_jam "
                 "WHERE game = 'tiny'"),
                ("SELECT players, state_id, node, jam FROM model_nodes WHERE game = 'tiny' AND model = 'FGS-2'",
                 "SELECT players, state_id, node, class_id, label, jam_probability FROM model_jam "
                 "WHERE game = 'tiny' AND model = 'FGS-2'")):
            lists = {(n, s, k): jam for n, s, k, jam in con.execute(nodes_sql).fetchall()}
            rows = con.execute(jam_sql).fetchall()
            assert lists and len(rows) == 169 * len(lists)
            assert all(p == lists[(n, s, k)][c] and label == class_label(c) for n, s, k, c, label, p in rows)
            assert any(0 < p < 1 for *_, p in rows)  # (mixed entries too, not only 0 and 1)


def test_tables(tiny_build):
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    assert con.execute("SELECT count(*) FROM hand_classes").fetchone()[0] == 169
    assert con.execute("SELECT rows, mode, boards_per_matchup, seed FROM rollout_tables WHERE kind = 'pairs'").fetchone() \
        == (14_365, "sampled", 4, 3)
    counts = dict(con.execute("SELECT players, count(*) FROM states WHERE game = 'tiny' GROUP BY players").fetchall())
    assert counts == {2: n_states(6, 2), 3: n_states(6, 3)}
    # model payoffs equal a direct engine call for one state, read back through the states table
    stacks, payoffs = con.execute(
        """SELECT s.stacks, list(p.payoff ORDER BY p.position) FROM model_payoffs p JOIN states s USING (game, players, state_id)
           WHERE p.game = 'tiny' AND p.model = 'weitzman' AND s.stacks = [1, 2, 3] GROUP BY s.stacks""").fetchone()
    expected = equity_models.payoffs(equity_models.weitzman(np.array(stacks, float)), [70, 30])
    assert np.allclose(payoffs, expected, atol=1e-12)
    # pair_equities view: both orders of every pair, each read as "hand beats versus" as the engine's
    # lookup reads the same table (rebuilt here with the tiny build's boards and seed)
    from engine.cards import parse_class
    from engine.rollout import build_pair_table, pair_lookup

    table = build_pair_table("sampled", samples=4, seed=3)
    view = con.execute("SELECT hand, versus, x, y, weight, p_win FROM pair_equities").df()
    assert len(view) == 169 * 169
    for hand, versus in [("AA", "KK"), ("KK", "AA"), ("72o", "AKs"), ("T9s", "T9o"), ("QQ", "QQ")]:
        row = view[(view["hand"] == hand) & (view["versus"] == versus)].iloc[0]
        a, b = parse_class(hand), parse_class(versus)
        assert (row["x"], row["y"]) == (a, b)
        assert (row["weight"], row["p_win"]) == pair_lookup(table, a, b)


def test_rematerialize_reuses_complete_tables(tiny_build):
    import dagster as dg

    from assets.resources import GameResource, WarehouseResource
    from assets.rollout import rollout_pairs

    result = dg.materialize([rollout_pairs], resources={
        "game": GameResource(config_file=str(tiny_build["config"])),
        "warehouse": WarehouseResource(path=str(tiny_build["warehouse"]))})
    meta = result.get_asset_materialization_events()[0].event_specific_data.materialization.metadata
    assert meta["reused_existing"].value is True
    # a reused table reports how it was built (its record in rollout_tables), not zeros
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    boards, precision, wall_s = con.execute("SELECT boards_per_matchup, precision, wall_s FROM rollout_tables "
                                            "WHERE kind = 'pairs'").fetchone()
    assert (meta["rows"].value, meta["boards_per_matchup"].value) == (14_365, boards) and boards > 0
    assert meta["precision (max std error)"].value == precision > 0
    assert meta["build_wall_s"].value == round(wall_s, 2) > 0


def test_readme_queries_run(tiny_build):
    """The README's example queries are valid SQL against the schema (the tiny game may return no rows)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = readme.split("```sql")[1].split("```")[0]
    queries = [q.strip() for q in block.split(";") if q.strip()]
    assert len(queries) == 5
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    for q in queries:
        con.execute(q).fetchall()


def test_ex_post_metadata_names_the_layers_gains_and_says_why_the_start_columns_are_empty(tiny_build):
    """Each ex_post_Np asset reports its own layer's gains (`layer_…`, against the summary view's
    game-wide ones), names the layers the view sums (a rebuild of a lower layer may find a higher
    one's rows from before) and says, while the start state's layer is missing, why the view's
    start_* columns are empty."""
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    events = tiny_build["result"].get_asset_materialization_events()
    meta = {e.asset_key.to_user_string(): e.materialization.metadata for e in events}
    for n in (2, 3):
        gains = con.execute("SELECT max(gain), avg(gain) FROM nemesis_values WHERE game = 'tiny' AND "
                            "profile = 'equilibrium' AND players = ?", [n]).fetchone()
        m = meta[f"ex_post_{n}p"]
        assert (m["layer_max_gain_usd"].value, m["layer_mean_gain_usd"].value) == pytest.approx(gains, rel=1e-12)
        caption = m["summary"].value.split("\n")[0]
        held = "2p" if n == 2 else "2p, 3p"  # (the build checks the layers in turn)
        assert caption.startswith(f"The game's `ex_post` view, over the layers whose nemesis values the warehouse "
                                  f"holds ({held})")
        assert ("start_* columns stay empty until the start state's 3-player layer is checked" in caption) == (n == 2)


def test_ex_post_tables(tiny_build):
    """nemesis_values covers every (state, position); the ex_post view agrees with plain SQL over it."""
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    rows = dict(con.execute("SELECT players, count(*) FROM nemesis_values WHERE game = 'tiny' AND profile = 'equilibrium' "
                            "GROUP BY players").fetchall())
    assert rows == {2: 2 * n_states(6, 2), 3: 3 * n_states(6, 3)}
    gains = con.execute("SELECT gain, nemesis_value - profile_value FROM nemesis_values WHERE game = 'tiny'").fetchnumpy()
    assert np.allclose(gains["gain"], gains["(nemesis_value - profile_value)"]) and gains["gain"].min() >= -1e-8
    # profile values are the equilibrium values
    diff = con.execute("""SELECT max(abs(n.profile_value - v.value)) FROM nemesis_values n
                          JOIN equilibrium_values v USING (game, players, state_id, position)
                          WHERE n.profile = 'equilibrium'""").fetchone()[0]
    assert diff < 1e-12
    summary = con.execute("SELECT * FROM ex_post WHERE game = 'tiny' AND profile = 'equilibrium'").df().iloc[0]
    start = con.execute("""SELECT list(n.gain) FROM nemesis_values n JOIN states s USING (game, players, state_id)
                           WHERE n.game = 'tiny' AND s.stacks = [2, 2, 2] AND n.profile = 'equilibrium'""").fetchone()[0]
    assert summary["start_max_gain"] == pytest.approx(max(start))
    assert summary["start_mean_gain"] == pytest.approx(np.mean(start))
    assert summary["start_mean_roi_pct"] == pytest.approx(100 * np.mean(start) / (100 / 3))
    assert summary["start_max_roi_pct"] == pytest.approx(100 * max(start) / (100 / 3))
    every = con.execute("SELECT gain FROM nemesis_values WHERE game = 'tiny' AND profile = 'equilibrium'").fetchnumpy()
    assert summary["all_mean_gain"] == pytest.approx(every["gain"].mean())
    assert summary["all_max_gain"] == pytest.approx(every["gain"].max())
    assert summary["pairs"] == sum(rows.values())
    # a solved game is hard to exploit: every hand is within gamma under the equilibrium's values, so a
    # nemesis gains about gamma a hand at most, and the tiny game's tournaments last 3.6 hands on average
    # (the simulated control); twice that many hands' worth bounds every state and seat
    gamma, hands = con.execute("""SELECT g.gamma, max(s.mean_hands) FROM games g JOIN simulation s USING (game)
                                  WHERE game = 'tiny' AND s.model = 'equilibrium' GROUP BY g.gamma""").fetchone()
    assert 0 <= summary["all_mean_gain"] <= summary["all_max_gain"] < 2 * gamma * hands


MODELS = ["harville", "weitzman", "roberts", "FGS-1", "FGS-2", "FGS-3"]
MODEL_SWEEPS = [model_strategies, fgs_strategies]  # the assets that write every model's strategies


def test_model_values_and_deviation_views_match_numpy(tiny_build):
    """model_values, deviation_summary and deviation_by_stack recomputed from the raw tables with pandas."""
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    states = con.execute("SELECT players, state_id, stacks FROM states WHERE game = 'tiny'").df()
    eq = con.execute("SELECT players, state_id, position, value AS equilibrium FROM equilibrium_values "
                     "WHERE game = 'tiny'").df()
    icm = con.execute("SELECT model, players, state_id, position, payoff FROM model_payoffs WHERE game = 'tiny'").df()
    fgs = con.execute("SELECT 'FGS-' || depth AS model, players, state_id, position, value AS payoff FROM fgs_values "
                      "WHERE game = 'tiny'").df()
    assert sorted(set(fgs["model"])) == ["FGS-1", "FGS-2", "FGS-3"]
    d = pd.concat([icm, fgs]).merge(eq, on=["players", "state_id", "position"]).merge(states, on=["players", "state_id"])
    assert len(d) == len(MODELS) * len(eq)
    d["stack"] = [st[p] for st, p in zip(d["stacks"], d["position"])]
    d["multiset"] = [tuple(sorted(st)) for st in d["stacks"]]
    grp = d.groupby(["model", "players", "multiset", "stack"])
    d["payoff_pa"] = grp["payoff"].transform("mean")
    d["equilibrium_pa"] = grp["equilibrium"].transform("mean")
    keys = ["model", "players", "state_id", "position"]
    view = con.execute("SELECT * FROM model_values WHERE game = 'tiny'").df().sort_values(keys).reset_index(drop=True)
    mine = d.sort_values(keys).reset_index(drop=True)
    assert len(view) == len(mine) and (view[keys] == mine[keys]).all().all()
    assert (view["stack"] == mine["stack"]).all()
    np.testing.assert_allclose(view["deviation"], mine["payoff"] - mine["equilibrium"], rtol=1e-12, atol=1e-12)
    relative = 100 * (mine["payoff"] - mine["equilibrium"]) / mine["equilibrium"]
    np.testing.assert_allclose(view["relative_deviation_pct"], relative, rtol=1e-9, atol=1e-12)
    for column in ("payoff", "equilibrium", "payoff_pa", "equilibrium_pa"):
        np.testing.assert_allclose(view[column], mine[column], rtol=1e-12, err_msg=column)
    summary = con.execute("SELECT * FROM deviation_summary WHERE game = 'tiny'").df()
    for model in MODELS:
        m = d[d["model"] == model]
        for averaging, (pay, ref) in {"plain": ("payoff", "equilibrium"),
                                      "position-averaged": ("payoff_pa", "equilibrium_pa")}.items():
            for players in (None, 2, 3):
                sub = m if players is None else m[m["players"] == players]
                dev = sub[pay] - sub[ref]
                rel = 100 * dev / sub[ref]
                row = summary[(summary["model"] == model) & (summary["averaging"] == averaging)
                              & (summary["players"].isna() if players is None else summary["players"] == players)]
                assert len(row) == 1, (model, averaging, players)
                row = row.iloc[0]
                assert row["mapd_pct"] == pytest.approx(rel.abs().mean(), rel=1e-9)
                assert row["max_relative_pct"] == pytest.approx(rel.max(), rel=1e-9, abs=1e-12)
                assert row["min_relative_pct"] == pytest.approx(rel.min(), rel=1e-9, abs=1e-12)
                assert row["mad"] == pytest.approx(dev.abs().mean(), rel=1e-9)
                assert row["min_deviation"] == pytest.approx(dev.min(), rel=1e-9, abs=1e-12)
                assert row["max_deviation"] == pytest.approx(dev.max(), rel=1e-9, abs=1e-12)
                assert row["pairs"] == len(sub)
    # Harville, Weitzman and Roberts agree at 2 players (proportional), so their deviations agree there
    two = summary[(summary["players"] == 2) & (summary["averaging"] == "plain")].set_index("model")
    assert two.loc["harville", "mad"] == pytest.approx(two.loc["roberts", "mad"], rel=1e-9)
    by_stack = con.execute("SELECT * FROM deviation_by_stack WHERE game = 'tiny'").df()
    fin = con.execute("SELECT players, state_id, position, place, probability AS p FROM finishing "
                      "WHERE game = 'tiny'").df().merge(states, on=["players", "state_id"])
    fin["stack"] = [st[p] for st, p in zip(fin["stacks"], fin["position"])]  # the seat's stack, in pandas
    fin = fin.groupby(["players", "stack", "place"], as_index=False)["p"].mean()
    assert len(by_stack) == len(MODELS) * (5 + 4)  # stacks 1..5 heads-up, 1..4 three-handed
    for (model, players, stack), g in d.groupby(["model", "players", "stack"]):
        row = by_stack[(by_stack["model"] == model) & (by_stack["players"] == players) & (by_stack["stack"] == stack)]
        assert len(row) == 1
        row = row.iloc[0]
        assert row["mean_payoff"] == pytest.approx(g["payoff"].mean(), rel=1e-12)
        assert row["pairs"] == len(g)
        assert row["mean_equilibrium"] == pytest.approx(g["equilibrium"].mean(), rel=1e-12)
        assert row["mean_deviation"] == pytest.approx((g["payoff"] - g["equilibrium"]).mean(), rel=1e-9, abs=1e-12)
        assert row["mean_abs_deviation"] == pytest.approx((g["payoff"] - g["equilibrium"]).abs().mean(), rel=1e-9)
        f = fin[(fin["players"] == players) & (fin["stack"] == stack)].sort_values("place")["p"].to_numpy()
        np.testing.assert_allclose(row["finishing"], f, rtol=1e-12)
        assert row["p_win"] == pytest.approx(f[0]) and row["proportional"] == pytest.approx(stack / 6)
        assert row["p_win_relative_pct"] == pytest.approx(100 * (f[0] - stack / 6) / (stack / 6), rel=1e-9)


def test_model_strategies_and_their_ex_post(tiny_build):
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    nodes = dict(con.execute("SELECT model, count(*) FROM model_nodes WHERE game = 'tiny' GROUP BY model").fetchall())
    eq_nodes = con.execute("SELECT count(*) FROM equilibrium_nodes WHERE game = 'tiny'").fetchone()[0]
    assert nodes == {m: eq_nodes for m in MODELS}
    worst = con.execute("SELECT max(max_exploitability) FROM model_sweeps WHERE game = 'tiny'").fetchone()[0]
    assert worst <= 0.001
    ex = con.execute("SELECT * FROM ex_post WHERE game = 'tiny'").df().set_index("profile")
    assert set(ex.index) == {"equilibrium", *MODELS}
    # every model profile's own values hand out the open prizes; a nemesis never loses
    err = con.execute("""SELECT max(abs(s - 100)) FROM (  -- tiny pays 70 + 30: 100 open in every state
                           SELECT profile, players, state_id, sum(profile_value) s FROM nemesis_values
                           WHERE game = 'tiny' GROUP BY ALL)""").fetchone()[0]
    assert err < 1e-9
    assert con.execute("SELECT min(gain) FROM nemesis_values WHERE game = 'tiny'").fetchone()[0] >= -1e-8
    # the equilibrium is much harder to exploit than a model that ignores the future hands
    assert ex.loc["harville", "all_mean_gain"] > 5 * ex.loc["equilibrium", "all_mean_gain"]
    # the sweeps' results stay for a rebuild to read back; their solvers (warm starts) are dropped
    models_cache = tiny_build["root"] / "cache" / "models"
    kept = [p.name for p in models_cache.rglob("*.npz")]
    assert sorted(kept) == sorted(f"{m}.layer{n}.npz" for m in MODELS for n in (2, 3))
    # the two sweep assets' metadata: each model's seconds and CFR+ iterations, and the rows written
    events = tiny_build["result"].get_asset_materialization_events()
    meta = {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata for e in events}
    sums = {model: (round(s, 1), int(k)) for model, s, k in con.execute(
        "SELECT model, sum(wall_s), sum(cfr_iterations) FROM model_sweeps WHERE game = 'tiny' GROUP BY model"
    ).fetchall()}
    for asset, models in (("model_strategies", MODELS[:3]), ("fgs_strategies", MODELS[3:])):
        m = meta[asset]
        assert m["sweep_s"].value == {model: sums[model][0] for model in models}
        assert m["cfr_iterations"].value == {model: sums[model][1] for model in models}
        assert m["rows_model_nodes"].value == sum(nodes[x] for x in models)
        assert m["rows_model_sweeps"].value == 2 * len(models)  # a row per layer
    assert meta["model_strategies"]["dagster/row_count"].value == sum(nodes[x] for x in MODELS[:3])
    fgs_rows, = con.execute("SELECT count(*) FROM fgs_values WHERE game = 'tiny'").fetchone()
    fgs = meta["fgs_strategies"]
    assert fgs["dagster/row_count"].value == fgs["rows_fgs_values"].value == fgs_rows


def test_simulation_tables(tiny_build):
    """Control rows match the equilibrium values; every seating of a direct match hands out the prize pool."""
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    sim = con.execute("SELECT * FROM simulation WHERE game = 'tiny'").df()
    assert set(sim["model"]) == {"equilibrium", *MODELS} and len(sim) == 3 * (1 + len(MODELS))
    assert (sim["tournaments"] == 20000).all() and sim["seed"].nunique() == len(sim)
    values = con.execute("""SELECT list(v.value ORDER BY v.position) FROM equilibrium_values v
                            JOIN states s USING (game, players, state_id) WHERE v.game = 'tiny' AND s.stacks = [2, 2, 2]""").fetchone()[0]
    control = sim[sim["model"] == "equilibrium"].sort_values("hero_position")
    assert np.all(np.abs(control["mean_payoff"].to_numpy() - values) <= 4 * control["standard_error"].to_numpy())
    for fin in sim["finishing"]:
        assert sum(fin) == pytest.approx(1.0)
    matches = con.execute("SELECT * FROM direct_matches WHERE game = 'tiny'").df()
    assert len(matches) == (len(MODELS) - 1) * (2 ** 3 - 2)
    # every other model against Harville, each over its 6 seatings (each model's match its own unit)
    assert matches.groupby(["model_a", "model_b"]).size().to_dict() == {(m, "harville"): 6 for m in MODELS[1:]}
    assert (matches["tournaments"] == 5000).all()  # the config's direct_match_tournaments, not the hero seats' 20,000
    weighted = matches["a_players"] * matches["roi_a_pct"] + (3 - matches["a_players"]) * matches["roi_b_pct"]
    assert np.abs(weighted).max() < 1e-9
    pool = matches["a_players"] * matches["payoff_a"] + (3 - matches["a_players"]) * matches["payoff_b"]
    assert np.abs(pool - 100).max() < 1e-9  # the tiny game's 70 + 30 $
    for fin_a, fin_b in zip(matches["finishing_a"], matches["finishing_b"]):
        assert sum(fin_a) == pytest.approx(1.0) and sum(fin_b) == pytest.approx(1.0)


def _metadata(result) -> dict:
    """Each materialized asset's metadata in a Dagster execution result, by asset name."""
    return {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata
            for e in result.get_asset_materialization_events()}


def _game_tables(warehouse, tables: tuple[str, ...]) -> dict:
    """The tiny game's rows of each of ``tables``, sorted, to compare a rebuild's tables with."""
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return {t: con.execute(f"SELECT * FROM {t} WHERE game = 'tiny' ORDER BY ALL").df() for t in tables}


def _assert_same_tables(before: dict, after: dict) -> None:
    for t in before:
        pd.testing.assert_frame_equal(before[t], after[t])


def _tiny_copy(tiny_build, tmp_path, monkeypatch):
    """A copy of the tiny build's warehouse with an empty cache (no checkpoints) in ``tmp_path``:
    (warehouse path, resources) for materializing single assets again."""
    import shutil

    from assets.resources import GameResource, WarehouseResource

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    monkeypatch.setenv("JAMFOLD_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("JAMFOLD_BUILD_DIR", str(tmp_path / "build"))
    return warehouse, {"game": GameResource(config_file=str(tiny_build["config"])),
                       "warehouse": WarehouseResource(path=str(warehouse))}


class _KilledAfter:
    """Stands in for ``fn``: a run killed after ``calls`` of it (raises on the next while armed).
    Counts the calls, from 0 again after :meth:`disarm`."""

    def __init__(self, fn, limit: int):
        self.fn, self.limit, self.calls, self.armed = fn, limit, 0, True

    def __call__(self, *args, **kwargs):
        if self.armed and self.calls == self.limit:
            raise RuntimeError("killed")
        self.calls += 1
        return self.fn(*args, **kwargs)

    def disarm(self) -> None:
        self.armed, self.calls = False, 0


def _interrupted_after_two(tiny_build, tmp_path, monkeypatch, module, name: str, asset):
    """A copy of the tiny build with its model strategies materialized, then ``asset`` killed after
    two calls of ``module.name``. Returns (warehouse, resources, instance, the stand-in, disarmed and
    left in place to count the rerun's calls)."""
    import dagster as dg

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize(MODEL_SWEEPS, instance=instance, resources=resources).success
    killed = _KilledAfter(getattr(module, name), 2)
    monkeypatch.setattr(module, name, killed)
    assert not dg.materialize([asset], instance=instance, resources=resources, raise_on_error=False).success
    killed.disarm()
    return warehouse, resources, instance, killed


def test_fgs_value_moves_are_how_far_each_depth_moves_the_values(tiny_build):
    """The view fgs_value_moves (and fgs_strategies' metadata from it) against max and mean
    |vᵈ − vᵈ⁻¹| recomputed with pandas from `fgs_values` and, for v⁰, Harville's `model_payoffs`."""
    events = tiny_build["result"].get_asset_materialization_events()
    meta = {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata for e in events}
    reported = meta["fgs_strategies"]["max_value_move_usd"].value
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    fgs = con.execute("SELECT depth, players, state_id, position, value FROM fgs_values WHERE game = 'tiny'").df()
    icm = con.execute("SELECT 0 AS depth, players, state_id, position, payoff AS value FROM model_payoffs "
                      "WHERE game = 'tiny' AND model = 'harville'").df()
    view = con.execute("SELECT * FROM fgs_value_moves WHERE game = 'tiny'").df()
    con.close()
    wide = pd.concat([fgs, icm]).pivot_table(index=["players", "state_id", "position"], columns="depth",
                                             values="value")
    assert reported.keys() == {"FGS-1", "FGS-2", "FGS-3"}
    for d in (1, 2, 3):
        move = (wide[d] - wide[d - 1]).abs()
        assert reported[f"FGS-{d}"] == pytest.approx(move.max(), abs=1e-6) and move.max() > 0
        for players, sub in [(None, move), *move.groupby(level="players")]:
            row = view[(view["depth"] == d) & (view["players"].isna() if players is None else view["players"] == players)]
            assert len(row) == 1
            assert row["max_abs_move"].iloc[0] == pytest.approx(sub.max(), rel=1e-12)
            assert row["mean_abs_move"].iloc[0] == pytest.approx(sub.mean(), rel=1e-12)
            assert row["pairs"].iloc[0] == len(sub)


def test_deviation_statistics_report_and_check_the_views(tiny_build, tmp_path, monkeypatch):
    """The asset's headline table is the deviation_summary view's; its checks fail when a model's
    values are missing for some (state, position) or a stack's finishing probabilities do not sum
    to 1."""
    import dagster as dg

    from assets.deviation import deviation_statistics

    events = tiny_build["result"].get_asset_materialization_events()
    meta = {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata for e in events}
    meta = meta["deviation_statistics"]
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    mapd = dict(con.execute("SELECT model, mapd_pct FROM deviation_summary WHERE game = 'tiny' AND players IS NULL "
                            "AND averaging = 'plain'").fetchall())
    pairs = con.execute("SELECT sum(players) FROM states WHERE game = 'tiny'").fetchone()[0]
    con.close()
    assert meta["pairs_per_model"].value == pairs
    rows = [line.strip("|").split("|") for line in meta["deviation_summary"].value.splitlines()[2:]]
    reported = {cells[0].strip(): float(cells[1]) for cells in rows}
    assert reported.keys() == set(MODELS)
    assert all(reported[m] == pytest.approx(mapd[m], abs=1e-4) for m in MODELS)
    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM fgs_values WHERE game = 'tiny' AND depth = 2 AND state_id = 0")
        con.execute("UPDATE finishing SET probability = probability * 1.01 WHERE game = 'tiny' AND place = 1")
    result = dg.materialize([deviation_statistics], resources=resources, raise_on_error=False)
    checks = {c.asset_check_key.name: c for c in result.get_asset_check_evaluations()}
    assert not checks["every_model_compared_everywhere"].passed
    assert "FGS-2" in checks["every_model_compared_everywhere"].metadata["models_short"].data
    assert not checks["finishing_by_stack_sums_to_1"].passed
    with duckdb.connect(str(warehouse)) as con:  # the sums right again, but a layer's probabilities gone
        con.execute("UPDATE finishing SET probability = probability / 1.01 WHERE game = 'tiny' AND place = 1")
        con.execute("DELETE FROM finishing WHERE game = 'tiny' AND players = 2")
    result = dg.materialize([deviation_statistics], resources=resources, raise_on_error=False)
    checks = {c.asset_check_key.name: c for c in result.get_asset_check_evaluations()}
    assert not checks["finishing_by_stack_sums_to_1"].passed
    assert checks["finishing_by_stack_sums_to_1"].metadata["max_error"].value == 1.0
    with duckdb.connect(str(warehouse)) as con:  # nothing to compare: both checks fail (they passed on 0 of 0)
        for table in ("states", "finishing", "model_payoffs", "fgs_values", "equilibrium_values"):
            con.execute(f"DELETE FROM {table} WHERE game = 'tiny'")
    result = dg.materialize([deviation_statistics], resources=resources, raise_on_error=False)
    checks = {c.asset_check_key.name: c for c in result.get_asset_check_evaluations()}
    assert not checks["every_model_compared_everywhere"].passed
    assert checks["every_model_compared_everywhere"].metadata["pairs_expected"].value == pairs
    assert not checks["finishing_by_stack_sums_to_1"].passed
    assert checks["finishing_by_stack_sums_to_1"].metadata["stacks"].value == 0
    assert checks["finishing_by_stack_sums_to_1"].metadata["stacks_expected"].value == 5 + 4  # 2 and 3 players, 6 units


def test_deviation_statistics_without_the_sweeps_expect_the_icm_family_and_the_stored_fgs_depths(
        tiny_build, tmp_path, monkeypatch):
    """Run as `--skip-models` runs it (``sweeps_left_out``), the asset passes with no FGS value stored
    and names those depths pending; the full build's run of it fails then. A stored depth, or an ICM
    model, that misses a (state, position) fails it either way."""
    import dagster as dg

    from assets.deviation import deviation_statistics

    left_out = {"ops": {"deviation_statistics": {"config": {"sweeps_left_out": True}}}}
    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)

    def compared_check(**kwargs):
        result = dg.materialize([deviation_statistics], resources=resources, raise_on_error=False, **kwargs)
        checks = {c.asset_check_key.name: c for c in result.get_asset_check_evaluations()}
        meta = {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata
                for e in result.get_asset_materialization_events()}["deviation_statistics"]
        return checks["every_model_compared_everywhere"], meta

    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM fgs_values WHERE game = 'tiny' AND depth > 1")
    check, meta = compared_check(run_config=left_out)
    assert check.passed and meta["models"].value == ["harville", "weitzman", "roberts", "FGS-1"]
    assert meta["models_pending"].value == ["FGS-2", "FGS-3"]
    check, meta = compared_check()
    assert not check.passed and set(check.metadata["models_short"].data) == {"FGS-2", "FGS-3"}
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM fgs_values WHERE game = 'tiny' AND depth = 1 AND state_id = 0")
    check, _ = compared_check(run_config=left_out)
    assert not check.passed and set(check.metadata["models_short"].data) == {"FGS-1"}
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM fgs_values WHERE game = 'tiny'")
        con.execute("DELETE FROM model_payoffs WHERE game = 'tiny' AND model = 'roberts' AND state_id = 0")
    check, _ = compared_check(run_config=left_out)
    assert not check.passed and set(check.metadata["models_short"].data) == {"roberts"}


def test_finishing_probabilities_resume_by_layer_and_check_the_stored_equilibrium(tiny_build, tmp_path,
                                                                                  monkeypatch):
    """The finishing probabilities killed in their second layer: the rerun computes only that layer and
    writes the table a run never interrupted writes. Its check fails when the stored values are not
    those of the stored strategies."""
    import dagster as dg

    import assets.finishing as finishing

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    query = "SELECT * FROM finishing WHERE game = 'tiny' ORDER BY ALL"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        straight = con.execute(query).df()
    killed = _KilledAfter(finishing.outcome_probabilities, 1)
    monkeypatch.setattr(finishing, "outcome_probabilities", killed)
    assert not dg.materialize(finishing.FINISHING_ASSETS, resources=resources, raise_on_error=False).success
    killed.disarm()
    assert dg.materialize(finishing.FINISHING_ASSETS, resources=resources).success
    assert killed.calls == 1  # the 3-player layer only: the 2-player one was kept
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pd.testing.assert_frame_equal(straight, con.execute(query).df())
    compiled, compile_layer = [], finishing.compile_layer  # a rebuild reads every layer back, no hand trees built
    monkeypatch.setattr(finishing, "compile_layer", lambda *a: compiled.append(a))
    assert dg.materialize(finishing.FINISHING_ASSETS, resources=resources).success and compiled == []
    monkeypatch.setattr(finishing, "compile_layer", compile_layer)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("UPDATE equilibrium_values SET value = value + 0.01 WHERE game = 'tiny' AND players = 3 "
                    "AND state_id = 0 AND position = 0")
    result = dg.materialize(finishing.FINISHING_ASSETS, resources=resources, raise_on_error=False)
    checks = {(c.asset_check_key.asset_key.to_user_string(), c.asset_check_key.name): c
              for c in result.get_asset_check_evaluations()}
    assert [key for key, c in checks.items() if not c.passed] == [("finishing_3p", "finishing_gives_back_the_values")]
    assert checks["finishing_3p", "finishing_gives_back_the_values"].metadata["max_error_usd"].value == pytest.approx(0.01)


def test_each_layers_finishing_and_ex_post_run_before_the_next_layer_is_solved(tiny_build):
    """A layer's finishing probabilities and ex post check are materialized as soon as the layer is
    solved, ahead of the next layer's solve (a build stopped in its 5-player solve keeps the smaller
    layers' ones)."""
    order = [e.asset_key.to_user_string() for e in tiny_build["result"].get_asset_materialization_events()]
    for layer_asset in ("finishing", "ex_post"):
        assert order.index("solve_2p") < order.index(f"{layer_asset}_2p") < order.index("solve_3p") \
            < order.index(f"{layer_asset}_3p") < order.index("solve_4p")


@pytest.mark.parametrize("table, layer_asset", [("finishing", "finishing"), ("nemesis_values", "ex_post"),
                                                ("equilibrium_values", "solve")])
def test_a_layers_solve_finishing_and_ex_post_need_the_layer_below(tiny_build, tmp_path, monkeypatch, table,
                                                                   layer_asset):
    """solve_3p (finishing_3p, ex_post_3p) materialized alone while the 2-player layer's rows are
    missing fails before any work, naming the asset to materialize first, and writes nothing (the
    solve failed on a NaN state count, or would have valued a partly written layer's states at 0)."""
    import dagster as dg

    import assets.ex_post as ex_post
    import assets.finishing as finishing
    import assets.solve as solve

    assets = {"finishing": finishing.FINISHING_ASSETS, "ex_post": ex_post.EX_POST_ASSETS,
              "solve": solve.LAYER_ASSETS}[layer_asset]
    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    with duckdb.connect(str(warehouse)) as con:
        con.execute(f"DELETE FROM {table} WHERE game = 'tiny' AND players = 2")
        before = con.execute(f"SELECT * FROM {table} WHERE game = 'tiny' ORDER BY ALL").df()
    result = dg.materialize([assets[1]], resources=resources, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert f"materialize {layer_asset}_2p first" in failure.step_failure_data.user_failure_data.description
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pd.testing.assert_frame_equal(before, con.execute(f"SELECT * FROM {table} WHERE game = 'tiny' ORDER BY ALL").df())


@pytest.mark.parametrize("asset, deleted, remedy", [
    ("finishing_3p", "equilibrium", "the equilibrium's strategies of the 3-player layer are not in the warehouse "
                                    "(0 of 10 states); materialize solve_3p first"),
    ("ex_post_3p", "equilibrium", "materialize solve_3p first"),
    ("ex_post_models", "weitzman", "model weitzman's strategies of the 3-player layer are not in the warehouse "
                                   "(0 of 10 states); materialize model_strategies first"),
    ("simulations", "weitzman", "materialize model_strategies first"),
    ("simulations", "FGS-1", "model FGS-1's strategies of the 3-player layer"),
])
def test_follow_ups_need_their_own_layers_strategies(tiny_build, tmp_path, monkeypatch, asset, deleted, remedy):
    """A layer's finishing probabilities or ex post check, the models' ex post check or the simulations
    materialized while the strategies they read are missing (the layer not solved, a model not swept)
    fail before any work, naming the asset to materialize: read anyway, the missing layer reached the
    compiled kernels as empty arrays, which they index unchecked."""
    import dagster as dg

    from assets.definitions import ALL_ASSETS

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    with duckdb.connect(str(warehouse)) as con:
        if deleted == "equilibrium":
            for table in ("equilibrium_values", "equilibrium_nodes", "state_quality", "solve_log"):
                con.execute(f"DELETE FROM {table} WHERE game = 'tiny' AND players = 3")
        else:
            for table in ("model_nodes", "model_sweeps"):
                con.execute(f"DELETE FROM {table} WHERE game = 'tiny' AND players = 3 AND model = ?", [deleted])
    selected = next(a for a in ALL_ASSETS if a.key.to_user_string() == asset)
    result = dg.materialize([selected], resources=resources, raise_on_error=False)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert f"{asset}: " in failure.step_failure_data.user_failure_data.description
    assert remedy in failure.step_failure_data.user_failure_data.description


def test_finishing_probabilities_interrupted_within_a_layer_keep_its_finished_states(tiny_build, tmp_path,
                                                                                      monkeypatch):
    """Killed two states into the 3-player layer's hand outcomes, the rerun finds those states in
    the layer's work folder, computes the others, writes the table an uninterrupted run writes, and
    leaves no work folder behind."""
    import dagster as dg

    import assets.finishing as finishing
    import engine.profile_outcomes as po

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    query = "SELECT * FROM finishing WHERE game = 'tiny' ORDER BY ALL"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        straight = con.execute(query).df()
    monkeypatch.setattr(po, "PROGRESS_EVERY_S", 0.0)
    found, armed = {}, [True]

    def interrupted(hands, strategies, tensors, *, progress, checkpoint):
        n = hands[0].n_players
        found[n] = len(list(checkpoint.glob(f"outcomes.layer{n}.block*.npz")))

        def stop(event):
            if armed[0] and n == 3 and event["event"] == "outcome_states" and event["done"] == 2:
                raise RuntimeError("killed")
            progress(event)

        return po.outcome_probabilities(hands, strategies, tensors, progress=stop, checkpoint=checkpoint,
                                        checkpoint_every=0.0)

    monkeypatch.setattr(finishing, "outcome_probabilities", interrupted)
    assert not dg.materialize(finishing.FINISHING_ASSETS, resources=resources, raise_on_error=False).success
    assert found == {2: 0, 3: 0}
    armed[0] = False
    found.clear()
    assert dg.materialize(finishing.FINISHING_ASSETS, resources=resources).success
    assert found == {3: 2}  # the 2-player layer kept whole, the 3-player one resumed with its two states
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pd.testing.assert_frame_equal(straight, con.execute(query).df())
    cache = tmp_path / "cache" / "finishing"
    assert {p.name for p in cache.rglob("*.json")} == {"layer2.json", "layer3.json"}
    assert not list(cache.rglob("*.work-*"))


def test_finished_ex_post_checks_leave_no_rounds_behind(tiny_build):
    """Each profile's nemesis rounds are checkpointed while it is checked and dropped once its record
    is kept: after a build only the records are left."""
    cache = tiny_build["root"] / "cache" / "ex_post"
    records = {p.stem for p in cache.rglob("*.json")}
    assert {"equilibrium.layer2", "equilibrium.layer3", "harville", "weitzman", "roberts", "FGS-1", "FGS-2"} <= records
    assert not list(cache.rglob("*.work-*"))


def test_an_interrupted_model_ex_post_keeps_the_models_it_checked(tiny_build, tmp_path, monkeypatch):
    """ex_post_models killed after two models: a rerun, model sweeps included (read back, or solved
    again), checks only the others (the first two are kept: the sweeps came out the same) and the
    table is the same."""
    import shutil

    import dagster as dg

    import assets.model_ex_post as analysis
    from engine.cfr import HandSolver

    warehouse, resources, instance, checked = _interrupted_after_two(tiny_build, tmp_path, monkeypatch, analysis,
                                                                     "ex_post", analysis.ex_post_models)
    # `./lab build` again: every model sweep is in the warehouse as .cache/models holds it (none read back) ...
    result = dg.materialize(MODEL_SWEEPS, instance=instance, resources=resources)
    meta = {node: result.asset_materializations_for_node(node)[0].metadata
            for node in ("model_strategies", "fgs_strategies")}
    assert meta["model_strategies"]["warm_start"].value == "none needed (every sweep is in the warehouse)"
    assert all(m["layers_read_back"].value == [] and "rows_model_nodes" not in m for m in meta.values())
    # ... or, that folder deleted, solved again to the same strategies (the solves are deterministic)
    shutil.rmtree(tmp_path / "cache" / "models")
    assert dg.materialize(MODEL_SWEEPS, instance=instance, resources=resources).success
    # the third model was killed in its nemesis, after its hand outcomes: those are kept whole
    kept = {p.name.split(".")[1] for p in (tmp_path / "cache" / "ex_post").rglob("outcomes.layer*.block*.npz")}
    assert kept == {"layer2", "layer3"}
    import engine.profile_outcomes as po
    passes = []
    monkeypatch.setattr(po, "HandSolver", lambda hand, tensors: passes.append(hand) or HandSolver(hand, tensors))
    assert dg.materialize([analysis.ex_post_models], instance=instance, resources=resources).success
    assert checked.calls == len(MODELS) - 2
    with duckdb.connect(str(warehouse), read_only=True) as con:
        states = con.execute("SELECT count(*) FROM states WHERE game = 'tiny'").fetchone()[0]
    assert len(passes) == (len(MODELS) - 3) * states  # the third model's outcomes were read back
    assert not list((tmp_path / "cache" / "ex_post").rglob("*.work-*"))
    query = "SELECT * FROM nemesis_values WHERE game = 'tiny' AND profile <> 'equilibrium' ORDER BY ALL"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        resumed = con.execute(query).df()
    assert dg.materialize([analysis.ex_post_models], instance=instance, resources=resources).success
    assert checked.calls == len(MODELS) - 2  # a rebuild checks nothing again
    shutil.rmtree(tmp_path / "cache" / "ex_post")  # without the records: every model checked afresh
    assert dg.materialize([analysis.ex_post_models], instance=instance, resources=resources).success
    assert checked.calls == 2 * len(MODELS) - 2
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pd.testing.assert_frame_equal(resumed, con.execute(query).df())


def test_interrupted_simulations_play_only_the_models_left(tiny_build, tmp_path, monkeypatch):
    """simulations killed after two models' tournaments: the rerun plays only the others, with the
    same seeds, and writes the tables a run never interrupted writes; a rebuild plays nothing, unless
    the equilibrium the others play has changed."""
    import shutil

    import dagster as dg

    import assets.simulation as simulation
    from engine.config import load_config

    warehouse, resources, instance, played = _interrupted_after_two(tiny_build, tmp_path, monkeypatch, simulation,
                                                                    "simulate_against", simulation.simulations)
    seats = []  # each hero seat's result this run plays, for its speed

    def recording(*args, **kwargs):
        results = played(*args, **kwargs)
        seats.extend(results)
        return results

    monkeypatch.setattr(simulation, "simulate_against", recording)
    resumed_run = dg.materialize([simulation.simulations], instance=instance, resources=resources)
    assert resumed_run.success
    assert played.calls == 1 + len(MODELS) - 2  # the equilibrium control and every model, less the two kept
    # its speed: the median over the seats it played (tournaments a second), not over the kept ones
    meta = resumed_run.get_asset_materialization_events()[0].event_specific_data.materialization.metadata
    T = load_config(tiny_build["config"]).simulation_tournaments
    assert meta["tournaments_per_s"].value == round(float(np.median([T / r.wall_s for r in seats])))
    queries = ["SELECT * EXCLUDE (game) FROM simulation WHERE game = 'tiny' ORDER BY model, hero_position",
               "SELECT * EXCLUDE (game) FROM direct_matches WHERE game = 'tiny' ORDER BY ALL"]
    with duckdb.connect(str(warehouse), read_only=True) as con:
        resumed = [con.execute(q).df() for q in queries]
    rebuilt = dg.materialize([simulation.simulations], instance=instance, resources=resources)
    assert played.calls == 1 + len(MODELS) - 2  # a rebuild plays nothing again
    meta = rebuilt.get_asset_materialization_events()[0].event_specific_data.materialization.metadata
    assert "tournaments_per_s" not in meta and meta["tournaments_per_s_earlier_run"].value > 0  # not this run's
    with duckdb.connect(str(warehouse)) as con:  # as if the equilibrium the others play had been solved again
        con.execute("UPDATE state_quality SET cfr_iterations = cfr_iterations + 1 WHERE game = 'tiny' AND state_id = 0")
    assert dg.materialize([simulation.simulations], instance=instance, resources=resources).success
    assert played.calls == 2 * (1 + len(MODELS)) - 2  # another equilibrium: every model played again
    shutil.rmtree(tmp_path / "cache" / "simulations")  # without the records: every model played afresh
    assert dg.materialize([simulation.simulations], instance=instance, resources=resources).success
    assert played.calls == 3 * (1 + len(MODELS)) - 2
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for q, before in zip(queries, resumed):
            pd.testing.assert_frame_equal(before, con.execute(q).df())




def test_model_sweep_checks_count_the_sweeps_and_the_fgs_values(tiny_build, tmp_path):
    """`every_state_within_gamma` of the model assets fails for a sweep missing from model_sweeps (it
    passed on the sweeps present), with no measured exploitability or with one above gamma, and
    `fgs_values_sum_to_open_prizes` for a value off or a state whose FGS values are missing; the
    sweeps' preview lists them in model order."""
    import shutil

    from assets.fgs import fgs_values_check
    from assets.resources import open_prize_sums
    from assets.model_analysis import sweep_checks
    from engine.config import load_config

    cfg = load_config(tiny_build["config"])
    copy = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    con = duckdb.connect(str(copy))
    check, quality, preview = sweep_checks(con, cfg, ["harville", "weitzman", "roberts"])
    assert check.passed and 0 < quality["max_exploitability_usd"] <= cfg.gamma
    assert [line.split("|")[1].strip() for line in preview.splitlines()[2:]] == \
        ["harville", "harville", "weitzman", "weitzman", "roberts", "roberts"]
    con.execute("DELETE FROM model_sweeps WHERE game = ? AND model = 'weitzman' AND players = 3", [cfg.name])
    check, _, _ = sweep_checks(con, cfg, ["harville", "weitzman", "roberts"])
    assert not check.passed and check.metadata["sweeps_missing_or_incomplete"].value == ["weitzman 3p"]
    for unmeasured in ("NULL", "'NaN'::DOUBLE"):  # (pandas' max skipped them: the check passed)
        con.execute(f"UPDATE model_sweeps SET max_exploitability = {unmeasured} WHERE game = ? AND model = 'roberts' "
                    "AND players = 2", [cfg.name])
        check, _, _ = sweep_checks(con, cfg, ["harville", "roberts"])
        assert not check.passed and check.metadata["sweeps_unmeasured"].value == ["roberts 2p"]
    con.execute("UPDATE model_sweeps SET max_exploitability = 2 * ? WHERE game = ? AND model = 'harville' "
                "AND players = 3", [cfg.gamma, cfg.name])
    check, quality, _ = sweep_checks(con, cfg, ["harville"])  # (complete and measured, but above gamma)
    assert not check.passed and quality["max_exploitability_usd"] == pytest.approx(2 * cfg.gamma)
    assert "sweeps_missing_or_incomplete" not in check.metadata and "sweeps_unmeasured" not in check.metadata
    check = fgs_values_check(con, cfg)
    expected = cfg.fgs_depth * (n_states(6, 2) + n_states(6, 3))
    assert check.passed and check.metadata["depth_state_pairs"].value == expected
    off = "UPDATE fgs_values SET value = value + ? WHERE game = ? AND depth = 1 AND players = 2 AND state_id = 2 " \
          "AND position = 0"
    con.execute(off, [0.01, cfg.name])
    check = fgs_values_check(con, cfg)
    assert not check.passed and check.metadata["max_error_usd"].value == pytest.approx(0.01, rel=1e-6)
    con.execute(off, [-0.01, cfg.name])
    con.execute("DELETE FROM fgs_values WHERE game = ? AND depth = 2 AND players = 3 AND state_id = 1", [cfg.name])
    check = fgs_values_check(con, cfg)
    assert not check.passed and check.metadata["depth_state_pairs"].value == expected - 1
    assert open_prize_sums(con, "fgs_values", "value", cfg, by=("depth",))[0] < 1e-9  # (the sums left are right)

def test_tournaments_stopped_at_the_hand_cap_fail_the_simulation_checks(tiny_build, tmp_path, monkeypatch):
    """With the engine's hand cap at 2 hands most tiny tournaments are stopped unfinished: their
    players get no place and no prize, which `every_tournament_finished` and the direct matches'
    prize-pool check both catch."""
    import functools

    import dagster as dg

    import assets.simulation as simulation
    import engine.simulation

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    monkeypatch.setattr(engine.simulation, "simulate", functools.partial(engine.simulation.simulate, max_hands=2))
    result = dg.materialize([simulation.simulations], resources=resources, raise_on_error=False)
    checks = {c.asset_check_key.name: c for c in result.get_asset_check_evaluations()}
    assert not checks["every_tournament_finished"].passed
    assert checks["every_tournament_finished"].metadata["max_abs_finishing_sum_error"].value > 0.01
    assert not checks["direct_match_payoffs_sum_to_prize_pool"].passed


def test_a_control_off_the_solved_values_fails_its_check(tiny_build, tmp_path, monkeypatch):
    """`equilibrium_matches_its_values` holds the control's simulated payoffs against the solved
    start values: with those moved by $2 between two seats (their sum, the prize money, kept), the
    same tournaments land many standard errors off and the check fails."""
    import dagster as dg

    import assets.simulation as simulation

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    with duckdb.connect(str(warehouse)) as con:
        moved = con.execute("""UPDATE equilibrium_values v SET value = value + (CASE position WHEN 0 THEN 2 ELSE -2 END)
                               FROM states s, games g WHERE v.game = 'tiny' AND s.game = v.game AND g.game = v.game
                               AND s.players = v.players AND s.state_id = v.state_id
                               AND s.stacks = g.start::SMALLINT[] AND v.position IN (0, 1)""").fetchone()[0]
    assert moved == 2
    result = dg.materialize([simulation.simulations], resources=resources, raise_on_error=False)
    check = {c.asset_check_key.name: c for c in result.get_asset_check_evaluations()}["equilibrium_matches_its_values"]
    assert not check.passed and check.metadata["max_abs_z"].value > 10
    # (every seat of every control run is compared; the table keeps each run's hero seat)
    with duckdb.connect(str(warehouse)) as con:
        control = con.execute(
            """SELECT m.mean_payoff, m.standard_error, v.value FROM simulation m
               JOIN states s ON s.game = m.game JOIN games g ON g.game = s.game AND s.stacks = g.start::SMALLINT[]
               JOIN equilibrium_values v ON v.game = s.game AND v.players = s.players AND v.state_id = s.state_id
                                        AND v.position = m.hero_position
               WHERE m.game = 'tiny' AND m.model = 'equilibrium'""").df()
    assert len(control) == 3
    hero_z = ((control["mean_payoff"] - control["value"]).abs() / control["standard_error"]).max()
    assert check.metadata["max_abs_z"].value >= (1 - 1e-9) * hero_z


def test_simulations_without_the_sweeps_play_the_control_and_the_swept_models(tiny_build, tmp_path, monkeypatch):
    """Run as `--skip-models` runs it (``sweeps_left_out``), the asset plays the equilibrium's control
    and only the models swept for every layer, with the seeds the full run gives them (the same rows
    to the bit), and no direct match until Harville's strategies are there; its checks pass. The
    control's tournaments are kept with no sweep stored, and a sweep stored later replays only the
    models."""
    import dagster as dg

    import assets.simulation as simulation
    from assets.simulation import simulations

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    real, played = simulation.simulate_against, []
    monkeypatch.setattr(simulation, "simulate_against",
                        lambda packed, prof, *a, **kw: (played.append(prof), real(packed, prof, *a, **kw))[1])
    left_out = {"ops": {"simulations": {"config": {"sweeps_left_out": True}}}}
    query = "SELECT * EXCLUDE (game) FROM simulation WHERE game = 'tiny' AND model IN ({}) ORDER BY model, hero_position"
    with duckdb.connect(str(warehouse)) as con:
        full = con.execute(query.format("'equilibrium', 'FGS-1'")).df()
        con.execute("CREATE TABLE sweeps_before AS SELECT * FROM model_sweeps WHERE game = 'tiny'")
        con.execute("DELETE FROM model_sweeps WHERE game = 'tiny' AND (model <> 'FGS-1' OR players = 2)")
    result = dg.materialize([simulations], resources=resources, run_config=left_out)  # nothing swept everywhere
    assert result.success and all(c.passed for c in result.get_asset_check_evaluations())
    meta = result.get_asset_materialization_events()[0].materialization.metadata
    assert meta["models_not_simulated"].value == ["harville", "weitzman", "roberts", "FGS-1", "FGS-2", "FGS-3"]
    assert meta["rows_direct_matches"].value == 0
    with duckdb.connect(str(warehouse)) as con:
        assert con.execute("SELECT DISTINCT model FROM simulation WHERE game = 'tiny'").fetchall() == [("equilibrium",)]
        pd.testing.assert_frame_equal(con.execute(query.format("'equilibrium'")).df(),
                                      full[full["model"] == "equilibrium"].reset_index(drop=True))
    assert len(played) == 1 and dg.materialize([simulations], resources=resources, run_config=left_out).success
    assert len(played) == 1  # the control kept
    with duckdb.connect(str(warehouse)) as con:
        # FGS-1 swept in both layers: it plays too, its own seeds (not those of the first model after the control)
        con.execute("INSERT INTO model_sweeps SELECT * FROM sweeps_before WHERE model = 'FGS-1' AND players = 2")
    result = dg.materialize([simulations], resources=resources, run_config=left_out)
    assert result.success and all(c.passed for c in result.get_asset_check_evaluations())
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pd.testing.assert_frame_equal(con.execute(query.format("'equilibrium', 'FGS-1'")).df(), full)
        assert con.execute("SELECT count(*) FROM direct_matches WHERE game = 'tiny'").fetchone()[0] == 0
    # the seeds themselves: FGS-1 is the 4th configured model, so its hero seat h plays the stream of
    # (simulation_seed + 4000, h) whoever else is simulated (tiny's simulation_seed is the default 1)
    assert full.loc[full["model"] == "FGS-1", "seed"].tolist() == [((1 + 4000) * 1_000_003 + h) % 2 ** 64
                                                                    for h in range(3)]
    assert len(played) == 2  # FGS-1's tournaments only


def test_model_profile_values_off_the_prize_money_fail_the_model_ex_post_check(tiny_build, tmp_path, monkeypatch):
    """ex_post_models checks each model profile's exact values against the open prize money: values
    shifted by a cent in one state fail it (the nemesis checks still pass)."""
    import dagster as dg

    import assets.model_ex_post as model_ex_post

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    real = model_ex_post.profile_values

    def shifted(*args, **kwargs):
        values = real(*args, **kwargs)
        values[3][5, 0] += 0.01
        return values

    monkeypatch.setattr(model_ex_post, "profile_values", shifted)
    result = dg.materialize([model_ex_post.ex_post_models], resources=resources, raise_on_error=False)
    checks = {c.asset_check_key.name: c for c in result.get_asset_check_evaluations()}
    assert not checks["profile_values_sum_to_open_prizes"].passed
    assert checks["profile_values_sum_to_open_prizes"].metadata["max_error_usd"].value == pytest.approx(0.01)
    assert checks["policy_iteration_converged"].passed

def test_a_rebuild_keeps_the_nemesis_values_of_the_same_equilibrium(tiny_build, tmp_path, monkeypatch):
    """The ex post assets again against an unchanged equilibrium: no policy iteration, the same rows
    and checks, also after the layers are solved again (to the same equilibrium). A changed
    3-player layer checks that layer again and keeps the 2-player one."""
    import dagster as dg

    import assets.ex_post as ex_post_asset
    from assets.solve import LAYER_ASSETS

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    real, runs = ex_post_asset.nemesis_layer, []
    monkeypatch.setattr(ex_post_asset, "nemesis_layer",
                        lambda hands, *a, **k: (runs.append(hands[0].n_players), real(hands, *a, **k))[1])
    query = "SELECT * FROM nemesis_values WHERE game = 'tiny' AND profile = 'equilibrium' ORDER BY ALL"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        before = con.execute(query).df()
    for resolve in (False, False, True):  # the first run has no record (a fresh cache); the others keep it
        if resolve:  # a rebuild solves the layers again (no checkpoint in this cache): the same equilibrium
            assert dg.materialize(LAYER_ASSETS, resources=resources).success
        result = dg.materialize(ex_post_asset.EX_POST_ASSETS, resources=resources)
        assert result.success and runs == [2, 3]
        assert all(c.passed for c in result.get_asset_check_evaluations())
        with duckdb.connect(str(warehouse), read_only=True) as con:
            pd.testing.assert_frame_equal(before, con.execute(query).df())
    with duckdb.connect(str(warehouse)) as con:
        con.execute("UPDATE state_quality SET cfr_iterations = cfr_iterations + 1 WHERE game = 'tiny' AND players = 3 "
                    "AND state_id = 0")
    assert dg.materialize(ex_post_asset.EX_POST_ASSETS, resources=resources).success
    assert runs == [2, 3, 3]
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pd.testing.assert_frame_equal(before, con.execute(query).df())
    # a kept record whose rows neither the warehouse nor the checkpoint holds: the layer is checked again
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM nemesis_values WHERE game = 'tiny' AND profile = 'equilibrium' AND players = 3")
    (rows_file,) = (tmp_path / "cache" / "ex_post").glob("*/equilibrium.layer3.rows.npz")
    rows_file.unlink()
    assert dg.materialize(ex_post_asset.EX_POST_ASSETS, resources=resources).success
    assert runs == [2, 3, 3, 3] and rows_file.exists()
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pd.testing.assert_frame_equal(before, con.execute(query).df())


def test_solver_tensors_are_made_once_for_the_same_tables_in_any_warehouse(tiny_build, tmp_path, monkeypatch):
    """Every asset of a build asks for the solver tensors, and each test's tiny build is another
    warehouse with the same showdown tables: the tensors (4 s for any game) are kept by the tables'
    content, so a copy of the warehouse reuses them and a changed table row makes new ones."""
    import shutil

    import assets.solve as solve
    from engine.config import load_config

    cfg = load_config(tiny_build["config"])
    same, changed = tmp_path / "same.duckdb", tmp_path / "changed.duckdb"
    shutil.copy(tiny_build["warehouse"], same)
    shutil.copy(tiny_build["warehouse"], changed)
    with duckdb.connect(str(changed)) as con:  # two orders' probabilities of one triple swapped
        a, b, c = con.execute("SELECT a, b, c FROM rollout_triples "
                              "WHERE weight > 0 AND p_abc <> p_acb LIMIT 1").fetchone()
        con.execute("UPDATE rollout_triples SET p_abc = p_acb, p_acb = p_abc "
                    "WHERE a = ? AND b = ? AND c = ?", [a, b, c])
    built = solve.equilibrium_tensors(str(tiny_build["warehouse"]), cfg)  # made by the tiny build, or now
    made = []
    real = solve.showdown_tensors
    monkeypatch.setattr(solve, "showdown_tensors", lambda pairs, triples: made.append(1) or real(pairs, triples))
    assert solve.equilibrium_tensors(str(same), cfg) is built and not made
    other = solve.equilibrium_tensors(str(changed), cfg)
    assert other is not built and len(made) == 1 and not np.array_equal(other.m3j, built.m3j)
    assert solve.equilibrium_tensors(str(tiny_build["warehouse"]), cfg) is built and len(made) == 1


def test_solver_tensors_read_the_warehouse_read_only(tiny_build, tmp_path):
    """The tensors only read the showdown tables, so they open the warehouse read-only: they can be
    made while a reader in the same process holds it open (DuckDB refuses a second connection of
    another configuration to a file the process holds), and `jamfold simulate` no longer opens a
    warehouse for writing, which a file its user may not write would refuse."""
    import shutil

    import assets.solve as solve
    from engine.config import load_config

    cfg = load_config(tiny_build["config"])
    copy = tmp_path / "lab.duckdb"  # (a path not read before: its tables are read, not taken from the cache)
    shutil.copy(tiny_build["warehouse"], copy)
    with duckdb.connect(str(copy), read_only=True) as reader:
        tensors = solve.equilibrium_tensors(str(copy), cfg)
        assert reader.execute("SELECT count(*) FROM rollout_pairs").fetchone()[0] > 0
    assert tensors is solve.equilibrium_tensors(str(tiny_build["warehouse"]), cfg)


def test_each_layers_ex_post_equals_the_whole_games_check(tiny_build):
    """The per-layer assets, each going on into the stored nemesis values of the layers below, give
    the gains of one ex post run over the whole game (engine.best_response.ex_post)."""
    from assets.ex_post import read_strategies
    from assets.solve import equilibrium_tensors, read_layer_table
    from engine.best_response import ex_post
    from engine.config import load_config
    from engine.layers import compile_layer

    cfg = load_config(tiny_build["config"])
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        stored = con.execute("SELECT players, state_id, position, nemesis_value FROM nemesis_values "
                             "WHERE game = 'tiny' AND profile = 'equilibrium' ORDER BY ALL").df()
        layers = {}
        for n in (2, 3):
            stacks, hands = compile_layer(cfg.units, n, cfg.payouts)
            layers[n] = (hands, read_strategies(con, cfg.name, n, len(stacks)),
                         read_layer_table(con, cfg, n, "equilibrium_values", "value", len(stacks)))
    whole = ex_post(layers, equilibrium_tensors(str(tiny_build["warehouse"]), cfg))
    for n in (2, 3):
        W = whole[n][0]
        rows = stored[stored["players"] == n]
        np.testing.assert_allclose(rows["nemesis_value"], W[rows["state_id"], rows["position"]], atol=1e-9)
        assert len(rows) == W.size


def test_a_layer_solve_logs_every_progress_event_it_emits(tiny_tensors, tmp_path):
    """The solve assets' log lines (assets.solve.layer_log_line) for the events a real layer solve
    emits — outer iterations, states done, checkpoints, a resume, and a hand left above the target
    at a CFR+ iteration cap (forced at 8), which must be a warning naming its stacks."""
    from assets.solve import layer_log_line
    from engine.tournament import solve_layer, solve_tournament

    lower = solve_tournament(units=6, players=2, payouts=(70.0, 30.0), gamma=1e-3, tensors=tiny_tensors, threads=1)
    events: list[dict] = []
    args = dict(units=6, n=3, payouts=(70.0, 30.0), gamma=1e-5, tensors=tiny_tensors,
                lower_values={2: lower[2].values}, threads=1, max_iterations=8, loose=False, checkpoint=tmp_path,
                checkpoint_every=0.0, progress=events.append)
    solve_layer(max_outer=2, **args)
    solve_layer(max_outer=3, **args)  # resumes after outer iteration 2
    kinds = {e["event"] for e in events}
    assert {"outer", "uncertified", "block_saved", "resumed", "preparing", "prepared", "measuring"} <= kinds
    lines = [(e, layer_log_line(e)) for e in events]
    for e, line in lines:
        if e["event"] == "layer_done":
            assert line is None
            continue
        level, text = line
        unsettled = e["event"] == "measuring" and e["every_state"]  # stopped by max_outer: not settled
        assert text.startswith("3-player layer") and level == ("warning" if e["event"] == "uncertified" or unsettled
                                                               else "info")
        if e["event"] == "uncertified":
            assert str(e["stacks"]) in text and f"{e['exploitability']:.2e}" in text
        if unsettled:
            assert f"before it settled (at its cap of outer iterations); measuring exactly all {e['states']} " \
                   "states" in text
    assert layer_log_line({"event": "resumed_states", "players": 5, "outer_iteration": 1, "done": 12_345,
                           "states": 135_751}) == ("info", "5-player layer, outer iteration 1: 12,345/135,751 states "
                                                            "already done in an earlier run")
    assert layer_log_line({"event": "block_saved", "players": 5, "outer_iteration": 1, "states": 1_234, "done": 12_345,
                           "wall_s": 301.2}) == ("info", "5-player layer, outer iteration 1: checkpoint of 1,234 more "
                                                         "states (12,345 done), 301 s")
    level, text = layer_log_line({"event": "not_converging", "players": 3, "outer_iteration": 40, "target": 0.01,
                                  "window": 24, "max_delta_v": 3.04})
    assert level == "warning" and text.startswith("3-player layer, outer iteration 40: the values are cycling")
    assert "24 outer iterations in a row at target 1.0e-02 $ each moved them by at least 3.04e+00 $" in text
    assert layer_log_line({"event": "measuring", "players": 3, "states": 10, "done": 0, "every_state": True,
                           "why": "its values cycle"})[1].startswith("3-player layer: stopped before it settled (its "
                                                                     "values cycle); measuring exactly all 10 states")
    assert layer_log_line({"event": "prepared", "players": 5, "states": 135_751, "wall_s": 150.0}) == \
        ("info", "5-player layer: 135,751 states ready in 2 min")
    ticker = {"event": "states", "players": 3, "outer_iteration": 4, "done": 7, "states": 10, "wall_s": 16.0}
    assert layer_log_line(ticker) == ("info", "3-player layer, outer iteration 4: 7/10 states done, 16 s")
    ticker = {**ticker, "done": 12_000, "states": 135_751, "wall_s": 1_500.0, "left_s": 30_000.0}
    assert layer_log_line(ticker) == ("info", "3-player layer, outer iteration 4: 12,000/135,751 states done, 25 min, "
                                              "about 8.3 h left in it")
    outer = {"event": "outer", "players": 4, "outer_iteration": 7, "target": 0.001, "states_updated": 1_203,
             "states_skipped": 9_000, "states_screened": 3_000, "states_checked": 41, "cfr_iterations": 52_340,
             "max_delta_v": 0.0123, "max_exploitability": 0.000987, "wall_s": 95.04}
    said = ("1203 states updated, 9000 skipped, 3000 screened, 41 checked exactly, 52340 CFR+ iterations, "
            "max |ΔV| 1.23e-02 $, max exploitability 9.87e-04 $, 95.0 s")
    assert layer_log_line(outer) == ("info", f"4-player layer, outer iteration 7: target 1.0e-03 $, {said}")
    assert layer_log_line({**outer, "level": 2, "levels": 5}) == \
        ("info", f"4-player layer, outer iteration 7: target 1.0e-03 $ (level 2 of 5), {said}")


def test_a_seats_long_simulation_logs_its_progress_at_most_every_minute():
    """`simulations` logs a hero seat's tournaments done at most every PROGRESS_EVERY_S seconds, with
    the time left at the rate so far, counted from the seat's own start, and not for the last chunk."""
    from assets.simulation import tournament_progress

    now = [1000.0]
    lines = []
    report = tournament_progress(lines.append, "harville vs equilibrium, hero BU", every_s=60.0, clock=lambda: now[0])
    now[0] = 1500.0  # the seats before this one took 500 s
    report(0, 100)
    for done, t in ((20, 1530.0), (40, 1560.0), (60, 1590.0), (80, 1610.0), (100, 1700.0)):
        now[0] = t
        report(done, 100)
    assert lines == ["harville vs equilibrium, hero BU: 40 of 100 tournaments (40 %), 60 s so far, about 90 s left"]


def test_a_solves_computed_metadata_follows_its_checkpoint_events():
    """The `computed` metadata: solved in this run, read back solved, resumed after an outer
    iteration, or read back and its held states solved again (a retry); another layer's events
    change nothing."""
    from assets.solve import computed_after

    fresh = "in this run"
    read_back = computed_after(fresh, {"event": "resumed", "players": 3, "finished": True, "outer": 9}, 3)
    assert read_back == "read back solved from its checkpoint (an earlier run solved it)"
    assert computed_after(fresh, {"event": "resumed", "players": 3, "finished": False, "outer": 4}, 3) \
        == "resumed from its checkpoint after outer iteration 4"
    assert computed_after(read_back, {"event": "retrying_held", "players": 3}, 3) \
        == "read back from its checkpoint, its states above gamma solved again in this run"
    assert computed_after(fresh, {"event": "retrying_held", "players": 3}, 3) == fresh  # (a retry within the run)
    assert computed_after(fresh, {"event": "resumed", "players": 2, "finished": True, "outer": 9}, 3) == fresh
    assert computed_after(fresh, {"event": "outer", "players": 3}, 3) == fresh


def test_a_rebuild_takes_a_finished_layer_the_warehouse_holds_as_it_is(tiny_build, tmp_path, monkeypatch):
    """With the finished checkpoints of the layers the warehouse holds, the solve assets solve
    nothing and write nothing (the 45-unit 5-player layer would compile its hands, read 15 GB back
    and write 3.3 million node rows at every resume of a build): the same rows, checks passed, the
    same counts in their metadata. A warehouse whose values differ from the checkpoint's by one
    rounding gets that layer read back from its checkpoint and written again, and only that layer."""
    import shutil

    import dagster as dg

    import assets.solve as solve_asset

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    shutil.copytree(tiny_build["root"] / "cache" / "solve", tmp_path / "cache" / "solve")
    solved = []
    real = solve_asset.solve_layer
    monkeypatch.setattr(solve_asset, "solve_layer",
                        lambda units, n, *a, **k: (solved.append(n), real(units, n, *a, **k))[1])
    tables = ("equilibrium_values", "equilibrium_nodes", "state_quality", "solve_log")
    before = _game_tables(warehouse, tables)
    first = _metadata(tiny_build["result"])
    result = dg.materialize(solve_asset.LAYER_ASSETS, resources=resources)
    assert result.success and solved == []
    assert all(c.passed for c in result.get_asset_check_evaluations())
    meta = _metadata(result)
    for name in ("solve_2p", "solve_3p"):
        assert "unchanged" in meta[name]
        assert meta[name]["computed"].value == "in an earlier run (the warehouse holds it)"
        for key in ("outer_iterations", "cfr_iterations", "exact_checks_in_outer_iterations", "max_exploitability_usd",
                    *(f"rows_{t}" for t in tables)):  # (the rows it holds, as a solve reports those it wrote)
            assert meta[name][key].value == first[name][key].value
    _assert_same_tables(before, _game_tables(warehouse, tables))

    with duckdb.connect(str(warehouse)) as con:
        con.execute("UPDATE equilibrium_values SET value = nextafter(value, 1e9) WHERE game = 'tiny' AND players = 3 "
                    "AND state_id = 0 AND position = 0")
    result = dg.materialize(solve_asset.LAYER_ASSETS, resources=resources)
    assert result.success and solved == [3]
    meta = _metadata(result)
    assert "unchanged" in meta["solve_2p"] and "unchanged" not in meta["solve_3p"]
    assert meta["solve_3p"]["computed"].value == "read back solved from its checkpoint (an earlier run solved it)"
    assert meta["solve_3p"]["outer_iterations_wall_s"].value == first["solve_3p"]["outer_iterations_wall_s"].value
    _assert_same_tables(before, _game_tables(warehouse, tables))


def test_a_rebuild_takes_the_sweeps_the_warehouse_holds_as_they_are(tiny_build, tmp_path, monkeypatch):
    """With the sweep checkpoints of the model sweeps the warehouse holds, `model_strategies` and
    `fgs_strategies` compile no hand, read no sweep back and write no `model_nodes` (minutes at every
    resume of the `thesis` model analyses): the same rows, the same metadata, checks passed. A sweep
    whose `model_sweeps` rows differ from its checkpoint is read back with its strategies and
    written again, and only that one (the others of its asset read back without theirs)."""
    import shutil

    import dagster as dg

    import assets.fgs as fgs
    import assets.model_analysis as model_analysis
    import engine.model_strategies as ms
    from assets.fgs import fgs_strategies
    from assets.model_analysis import model_strategies

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    shutil.copytree(tiny_build["root"] / "cache" / "models", tmp_path / "cache" / "models")
    read, compiled = [], []
    real = ms.load_sweep_layer
    monkeypatch.setattr(ms, "load_sweep_layer", lambda folder, label, n, *a, strategies=True, **k: (
        read.append((label, n, strategies)), real(folder, label, n, *a, strategies=strategies, **k))[1])
    for module in (model_analysis, fgs):
        monkeypatch.setattr(module, "compile_game", lambda *a, module=module, real=module.compile_game: (
            compiled.append(module.__name__), real(*a))[1])
    tables = ("model_nodes", "model_sweeps", "fgs_values")
    before = _game_tables(warehouse, tables)
    result = dg.materialize([model_strategies, fgs_strategies], resources=resources)
    assert result.success and all(c.passed for c in result.get_asset_check_evaluations())
    assert read == [] and compiled == []  # every sweep held: not even a hand compiled
    meta, first = _metadata(result), _metadata(tiny_build["result"])
    for asset in ("model_strategies", "fgs_strategies"):
        assert "rows_model_nodes" not in meta[asset]
        assert meta[asset]["cfr_iterations"].value == first[asset]["cfr_iterations"].value
        assert meta[asset]["sweep_s"].value == pytest.approx(first[asset]["sweep_s"].value, abs=0.11)
    _assert_same_tables(before, _game_tables(warehouse, tables))

    with duckdb.connect(str(warehouse)) as con:
        con.execute("UPDATE model_sweeps SET wall_s = wall_s + 1 WHERE game = 'tiny' AND model = 'weitzman' "
                    "AND players = 3")
    assert dg.materialize([model_strategies, fgs_strategies], resources=resources).success
    assert {(label, strategies) for label, _, strategies in read} == {("harville", False), ("weitzman", True),
                                                                      ("roberts", False)}
    assert compiled == ["assets.model_analysis"]  # the FGS sweeps, all held, need no hand
    _assert_same_tables(before, _game_tables(warehouse, tables))


def test_a_rebuild_keeping_every_models_ex_post_compiles_no_hand(tiny_build, tmp_path, monkeypatch):
    """`ex_post_models` with every model checked before against the same strategies: the same rows,
    checks passed, and the game's hands never compiled (minutes for the `thesis` game)."""
    import shutil

    import dagster as dg

    import assets.model_ex_post as model_ex_post

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    shutil.copytree(tiny_build["root"] / "cache" / "ex_post", tmp_path / "cache" / "ex_post")
    compiled = []
    monkeypatch.setattr(model_ex_post, "compile_game", lambda *a: compiled.append(a))
    query = "SELECT * FROM nemesis_values WHERE game = 'tiny' ORDER BY ALL"
    with duckdb.connect(str(warehouse), read_only=True) as con:
        before = con.execute(query).df()
    result = dg.materialize([model_ex_post.ex_post_models], resources=resources)
    assert result.success and all(c.passed for c in result.get_asset_check_evaluations()) and compiled == []
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pd.testing.assert_frame_equal(before, con.execute(query).df())
    # a model's rows that differ from those it was checked with (by their digest, not their count)
    # are put back from its checkpoint, still without a hand compiled
    with duckdb.connect(str(warehouse)) as con:
        con.execute("UPDATE nemesis_values SET gain = gain + 1 WHERE game = 'tiny' AND profile = 'roberts' "
                    "AND players = 3 AND state_id = 0 AND position = 0")
    result = dg.materialize([model_ex_post.ex_post_models], resources=resources)
    assert result.success and all(c.passed for c in result.get_asset_check_evaluations()) and compiled == []
    with duckdb.connect(str(warehouse), read_only=True) as con:
        pd.testing.assert_frame_equal(before, con.execute(query).df())


def test_a_rebuild_keeping_every_simulation_reads_no_strategy(tiny_build, tmp_path, monkeypatch):
    """`simulations` with every unit played before on the same strategies, counts and seeds: the
    same rows, checks passed, and neither a strategy read from the warehouse nor the game packed
    (the `thesis` game's 14 profiles take about 28 s each to read)."""
    import shutil

    import dagster as dg

    import assets.simulation as simulation

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    shutil.copytree(tiny_build["root"] / "cache" / "simulations", tmp_path / "cache" / "simulations")
    used = []
    monkeypatch.setattr(simulation, "read_strategies", lambda *a: used.append(a))
    monkeypatch.setattr(simulation, "load_or_pack_game", lambda *a: used.append(a))
    tables = ("simulation", "direct_matches")
    before = _game_tables(warehouse, tables)
    result = dg.materialize([simulation.simulations], resources=resources)
    assert result.success and all(c.passed for c in result.get_asset_check_evaluations()) and used == []
    _assert_same_tables(before, _game_tables(warehouse, tables))


def test_a_game_with_a_built_games_equilibrium_solves_and_sweeps_nothing_again(tiny_build, tmp_path, monkeypatch):
    """A game that differs from a built one only in analysis fields (here its name and seed; as
    `./lab build --profile thesis --simulation-tournaments …` makes `thesis-<hash>`) shares its
    checkpoints: a layer or model sweep the built game holds in the warehouse as the checkpoint has
    it is copied there (no hand compiled, nothing read back), one it does not hold is read back
    from its finished checkpoint (no outer iteration, no state swept), and the finishing
    probabilities and nemesis checks are taken from their units' kept rows (no hand compiled),
    where `thesis` would solve again for about 20 hours and sweep for some 150. Its tables hold the
    built game's numbers under its own name."""
    import shutil

    import dagster as dg

    import assets.ex_post as ex_post
    import assets.finishing as finishing
    import assets.model_ex_post as model_ex_post
    import assets.solve as solve_asset
    import engine.model_strategies as ms
    from assets.definitions import ALL_ASSETS
    from assets.resources import GameResource, WarehouseResource
    from conftest import TINY_TOML
    from warehouse import db

    warehouse, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    shutil.copytree(tiny_build["root"] / "cache", tmp_path / "cache")
    # records kept without their rows (before 2026-11-29) get them at their own game's next build
    kept_rows = sorted(p.relative_to(tmp_path) for p in (tmp_path / "cache").rglob("*.rows.npz"))
    assert len(kept_rows) == 2 + 2 + len(MODELS)  # finishing and ex post per layer, each model's ex post
    for path in kept_rows:
        (tmp_path / path).unlink()
    checks = [*finishing.FINISHING_ASSETS, *ex_post.EX_POST_ASSETS, model_ex_post.ex_post_models]
    result = dg.materialize(checks, resources=resources)
    assert result.success
    layer_units = [f"{kind}_{n}p" for kind in ("finishing", "ex_post") for n in (2, 3)]
    assert {name: meta["computed"].value for name, meta in _metadata(result).items() if name in layer_units} == \
        dict.fromkeys(layer_units, "in an earlier run (the warehouse holds them)")
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "cache").rglob("*.rows.npz")) == kept_rows
    config = tmp_path / "seeded.toml"
    config.write_text(TINY_TOML.replace('name = "tiny"', 'name = "tiny-seeded"') + "simulation_seed = 9\n")
    events, swept, compiled, copied = [], [], [], []
    real, real_copy = solve_asset.solve_layer, db.copy_rows

    def solve_layer(*args, progress, **kwargs):
        return real(*args, progress=lambda e: (events.append(e), progress(e)), **kwargs)

    def copy_rows(con, tables, source, target):
        copied.append((tuple(tables), dict(source), dict(target)))
        return real_copy(con, tables, source, target)

    monkeypatch.setattr(solve_asset, "solve_layer", solve_layer)
    monkeypatch.setattr(db, "copy_rows", copy_rows)
    with duckdb.connect(str(warehouse)) as con:  # the built game no longer holds its 3-player layer and Weitzman
        con.execute("DELETE FROM solve_log WHERE game = 'tiny' AND players = 3")
        con.execute("DELETE FROM model_sweeps WHERE game = 'tiny' AND model = 'weitzman'")
    monkeypatch.setattr(ms, "_solve_sweep_layer", lambda *a, **k: swept.append(a))
    for module in (ex_post, finishing):
        monkeypatch.setattr(module, "compile_layer", lambda *a: compiled.append(a))
    monkeypatch.setattr(model_ex_post, "compile_game", lambda *a: compiled.append(a))
    skipped = {"deviation_statistics", "simulations", "results_site"}  # (they reuse nothing of a solve)
    result = dg.materialize([a for a in ALL_ASSETS if a.key.to_user_string() not in skipped], resources={
        "game": GameResource(config_file=str(config)), "warehouse": WarehouseResource(path=str(warehouse))})
    assert result.success and all(c.passed for c in result.get_asset_check_evaluations())
    assert [(e["players"], e["finished"]) for e in events if e["event"] == "resumed"] == [(3, True)]
    assert not [e for e in events if e["event"] == "outer"] and swept == [] and compiled == []
    layer_tables = ("equilibrium_values", "equilibrium_nodes", "state_quality", "solve_log")
    assert copied == [(layer_tables, {"game": "tiny", "players": 2}, {"game": "tiny-seeded", "players": 2})] + [
        (("model_nodes", "model_sweeps"), {"game": "tiny", "model": m}, {"game": "tiny-seeded", "model": m})
        for m in MODELS if m != "weitzman"]
    solved = {e.asset_key.to_user_string(): e.materialization.metadata
              for e in result.get_asset_materialization_events()}
    assert "copied in the warehouse from game 'tiny'" in solved["solve_2p"]["unchanged"].value
    assert solved["solve_2p"]["computed"].value == "copied in the warehouse from game 'tiny', which holds it"
    assert "unchanged" not in solved["solve_3p"]
    assert {name: solved[name]["computed"].value for name in layer_units} == \
        dict.fromkeys(layer_units, "for a game with the same equilibrium, taken from its checkpoint")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        weitzman, = con.execute("SELECT count(*) FROM model_nodes WHERE game = 'tiny-seeded' AND model = 'weitzman'"
                                ).fetchone()
        # only Weitzman's sweep, read back, is written; the copied ones are not written again
        assert solved["model_strategies"]["rows_model_nodes"].value == weitzman > 0
        assert "rows_model_nodes" not in solved["fgs_strategies"]
        for table in ("equilibrium_values", "equilibrium_nodes", "state_quality", "model_nodes", "nemesis_values",
                      "finishing"):
            built, seeded = (con.execute(f"SELECT * EXCLUDE (game) FROM {table} WHERE game = ? ORDER BY ALL",
                                         [game]).df() for game in ("tiny", "tiny-seeded"))
            assert len(built) > 0
            pd.testing.assert_frame_equal(built, seeded)


def test_a_game_without_fgs_drops_harvilles_kept_solvers(tiny_build, tmp_path, monkeypatch):
    """With fgs_depth 0 no FGS sweep continues Harville's, so `model_strategies` deletes the solvers
    its sweep kept for one (here a stand-in file; on `thesis` several GiB), even when every sweep was
    taken from the warehouse; the sweeps' results stay for a rebuild to read back."""
    import shutil

    import dagster as dg

    from assets.model_analysis import sweep_checkpoint_dir
    from assets.resources import GameResource
    from assets.solve import LAYER_ASSETS
    from conftest import TINY_TOML
    from engine.config import load_config

    _, resources = _tiny_copy(tiny_build, tmp_path, monkeypatch)
    shutil.copytree(tiny_build["root"] / "cache", tmp_path / "cache")
    config = tmp_path / "no-fgs.toml"
    config.write_text(TINY_TOML.replace('name = "tiny"', 'name = "tiny-no-fgs"') + "fgs_depth = 0\n")
    folder = sweep_checkpoint_dir(load_config(config))
    results = sorted(p.name for p in folder.glob("*.npz"))
    assert results == sorted(f"{m}.layer{n}.npz" for m in MODELS for n in (2, 3))  # (the tiny game's, shared)
    (folder / "harville.layer3.solvers.npz").write_bytes(b"kept solvers")
    result = dg.materialize([*LAYER_ASSETS, model_strategies],
                            resources={**resources, "game": GameResource(config_file=str(config))})
    assert result.success
    assert sorted(p.name for p in folder.glob("*.npz")) == results


def test_direct_match_seatings_kept_from_before_their_payoffs_are_written_with_nulls(tiny_build, tmp_path):
    """A match unit kept by a run before 2026-11-30 has no payoffs or finishing lists: its rows go in
    with NULL there (a new run's rows with them), not a failed write."""
    import shutil

    from assets.simulation import _match_frame
    from warehouse import db

    copy = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    with db.session(copy) as con:
        new = con.execute("SELECT * EXCLUDE (game) FROM direct_matches WHERE game = 'tiny' ORDER BY ALL LIMIT 2").df()
        rows = [{k: (v.tolist() if hasattr(v, "tolist") else v) for k, v in r.items()} for r in new.to_dict("records")]
        old = {k: v for k, v in rows[0].items() if k not in ("payoff_a", "payoff_b", "finishing_a", "finishing_b")}
        db.replace_rows(con, "direct_matches", _match_frame([old, rows[1]]), {"game": "tiny"})
        back = con.execute("SELECT payoff_a, finishing_b FROM direct_matches WHERE game = 'tiny' "
                           "ORDER BY payoff_a NULLS FIRST").fetchall()
    assert back[0] == (None, None) and back[1][0] == pytest.approx(rows[1]["payoff_a"]) and len(back[1][1]) == 3
