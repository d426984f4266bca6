"""The whole Dagster graph on a tiny game: every asset materializes, checks pass, tables hold what they should."""

import duckdb
import numpy as np
import pytest

from assets.definitions import defs
from engine import equity_models
from engine.states import n_states


def test_definitions_load():
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"hand_classes", "rollout_pairs", "rollout_triples", "game_states", "equity_model_tables",
            "solve_2p", "solve_3p", "solve_4p", "solve_5p", "ex_post_equilibrium", "results_site"} <= keys


def test_every_asset_and_check_succeeds(tiny_build):
    result = tiny_build["result"]
    assert result.success
    checks = result.get_asset_check_evaluations()
    assert {c.asset_check_key.name for c in checks} == {
        "combos_total_1326", "pair_rows_and_weights", "triple_rows_and_weights", "state_counts",
        "finishing_rows_and_columns_sum_to_1", "payoffs_sum_to_open_prizes",
        "values_sum_to_open_prizes", "exploitability_within_gamma", "finishing_probabilities_sum_to_1",
        "nemesis_at_least_profile", "policy_iteration_converged"}
    failed = [(c.asset_check_key.name, c.metadata) for c in checks if not c.passed]
    assert not failed


def test_rollout_metadata_records_mode_and_precision(tiny_build):
    events = tiny_build["result"].get_asset_materialization_events()
    mats = {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata for e in events}
    meta = mats["rollout_triples"]
    assert meta["mode"].value == "sampled" and meta["boards_per_matchup"].value == 4
    assert meta["rows"].value == 818_805 and meta["precision (max std error)"].value > 0


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
    # pair_equities view: both orders, complementary
    p1, p2 = con.execute("""SELECT (SELECT p_win FROM pair_equities WHERE hand = 'AA' AND versus = 'KK'),
                                   (SELECT p_win FROM pair_equities WHERE hand = 'KK' AND versus = 'AA')""").fetchone()
    assert p1 + p2 == pytest.approx(1)


def test_rematerialize_reuses_complete_tables(tiny_build):
    import dagster as dg

    from assets.resources import GameResource, WarehouseResource
    from assets.rollout import rollout_pairs

    result = dg.materialize([rollout_pairs], resources={
        "game": GameResource(config_file=str(tiny_build["config"])),
        "warehouse": WarehouseResource(path=str(tiny_build["warehouse"]))})
    meta = result.get_asset_materialization_events()[0].event_specific_data.materialization.metadata
    assert meta["reused_existing"].value is True


def test_readme_queries_run(tiny_build):
    """The README's example queries are valid SQL against the schema (the tiny game may return no rows)."""
    from pathlib import Path

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = readme.split("```sql")[1].split("```")[0]
    queries = [q.strip() for q in block.split(";") if q.strip()]
    assert len(queries) == 3
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    for q in queries:
        con.execute(q).fetchall()


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
                          JOIN equilibrium_values v USING (game, players, state_id, position)""").fetchone()[0]
    assert diff < 1e-12
    summary = con.execute("SELECT * FROM ex_post WHERE game = 'tiny' AND profile = 'equilibrium'").df().iloc[0]
    start = con.execute("""SELECT list(n.gain) FROM nemesis_values n JOIN states s USING (game, players, state_id)
                           WHERE n.game = 'tiny' AND s.stacks = [2, 2, 2]""").fetchone()[0]
    assert summary["start_max_gain"] == pytest.approx(max(start))
    assert summary["start_mean_roi_pct"] == pytest.approx(100 * np.mean(start) / (100 / 3))
    assert summary["pairs"] == sum(rows.values())
    # a solved game is hard to exploit: much less than a cent per (state, position) on average
    assert 0 <= summary["all_mean_gain"] < 0.05
