"""A heads-up game never goes three ways, so it reads no triple table: tensors made without one
give the same equilibrium and the same simulated tournaments as the full tensors, refuse hands
of three or more players, and a heads-up build through the Dagster graph makes no triple table."""

import numpy as np
import pytest

from engine.cfr import HandSolver
from engine.game_tree import compile_hand
from engine.hand_pass import SolverTensors
from engine.rollout import build_pair_table
from engine.showdown import showdown_tensors
from engine.packed_game import pack_game
from engine.simulation import ShowdownSampler, pack_profile, simulate
from engine.states import state_index
from engine.tournament import solve_tournament

UNITS, PAYOUTS, GAMMA = 8, (100.0,), 1e-3


@pytest.fixture(scope="module")
def heads_up_tensors(tiny_tables):
    """Tensors from the pair table of ``tiny_tensors`` (conftest: 64 boards, seed 5) and no triple table."""
    return SolverTensors(showdown_tensors(tiny_tables[0], None))


def test_heads_up_tensors_have_no_three_way_part(heads_up_tensors, tiny_tensors):
    assert not heads_up_tensors.three_way and tiny_tensors.three_way
    assert heads_up_tensors.m3p.size == heads_up_tensors.m3jq.size == heads_up_tensors.joint3.size == 0
    for name in ("p1", "joint2", "cond2", "win2", "wr1"):  # the heads-up part is the full tensors' own
        assert np.array_equal(getattr(heads_up_tensors, name), getattr(tiny_tensors, name)), name


def test_heads_up_and_three_way_tensors_give_the_kernels_the_same_types(heads_up_tensors, tiny_tensors):
    """numba compiles a kernel once per signature, and the pass (hand_pass, cfr_plus_iterations)
    takes 20–40 s to compile: tensors whose arrays differ in layout (a strided view where the
    other is contiguous) would make a build or a test run that solves both kinds compile it twice."""
    import numba

    assert [numba.typeof(a) for a in heads_up_tensors.args()] == [numba.typeof(a) for a in tiny_tensors.args()]
    assert all(a.flags.c_contiguous for a in tiny_tensors.args())


def test_a_heads_up_game_solves_and_plays_the_same_without_the_triple_table(heads_up_tensors, tiny_tensors):
    """The same equilibrium to the bit (nothing of a two-player hand reads the three-way tensors),
    and the same tournaments from the same seed."""
    alone = solve_tournament(UNITS, 2, PAYOUTS, GAMMA, heads_up_tensors, threads=2)[2]
    full = solve_tournament(UNITS, 2, PAYOUTS, GAMMA, tiny_tensors, threads=2)[2]
    assert np.array_equal(alone.values, full.values) and len(alone.strategy) == len(full.strategy)
    assert all(np.array_equal(a, b) for a, b in zip(alone.strategy, full.strategy))
    assert np.array_equal(alone.exploitability, full.exploitability) and alone.exploitability.max() <= GAMMA
    game = pack_game(UNITS, 2, PAYOUTS)
    eq = pack_profile(game, {2: alone.strategy})
    sampler = ShowdownSampler.from_tensors(heads_up_tensors)
    assert sampler.order3.shape == (0, 5)
    played = [simulate(game, [eq], [0, 0], (3, 5), 20_000, seed=4, tensors=t) for t in (sampler, tiny_tensors)]
    assert np.array_equal(played[0].mean, played[1].mean) and np.array_equal(played[0].finishing, played[1].finishing)


def test_a_process_keeps_heads_up_tensors_apart_from_full_ones_of_the_same_pair_table(tiny_tensors):
    """The tensors a process keeps are found by the digest of the tables they were made from: a
    heads-up game's (no triple table) and a bigger game's with the same pair table differ."""
    from assets.solve import _tables_digest
    from engine.rollout import build_triple_table

    pairs = build_pair_table("sampled", samples=64, seed=5)
    triples = build_triple_table("sampled", samples=8, seed=5)
    assert _tables_digest(pairs, None) == _tables_digest(pairs, None) != _tables_digest(pairs, triples)


def test_progress_names_no_triple_table_for_a_heads_up_game(tmp_path):
    from engine.config import make_config
    from jamfold.status_report import triple_table_line

    heads_up = make_config(name="hu", players=2, units=8, payouts=[100], rollout_triples="sampled")
    assert triple_table_line(heads_up, tmp_path, solve_started=False) is None
    three = make_config(name="three", players=3, units=8, payouts=[100], rollout_triples="sampled")
    assert triple_table_line(three, tmp_path, solve_started=False) == "sampled triple table: not started"


def test_heads_up_tensors_refuse_hands_of_three_players(heads_up_tensors):
    with pytest.raises(ValueError, match="3-player hand needs the three-way showdown tensors"):
        HandSolver(compile_hand((2, 2, 2), (50.0, 30.0, 20.0), state_index), heads_up_tensors)
    game = pack_game(6, 3, (50.0, 30.0, 20.0))
    profile = np.zeros((game.total_nodes, 169), np.float32)
    with pytest.raises(ValueError, match="3-player game needs the three-way showdown table"):
        simulate(game, [profile], [0, 0, 0], (2, 2, 2), 1_000, seed=1, tensors=heads_up_tensors)


HEADS_UP_TOML = """
name = "heads-up"
players = 2
units = 8
payouts = [100]
gamma = 0.001
rollout_pairs = "sampled"
rollout_triples = "sampled"
rollout_samples = 4
rollout_seed = 3
fgs_depth = 1
simulation_tournaments = 20000
direct_match_tournaments = 5000
"""


def test_a_heads_up_build_makes_no_triple_table_and_its_site_says_so(tmp_path, monkeypatch):
    """Every asset materializes (the triple table's step records that none is needed, its check
    passes saying so), the warehouse holds no triple table and the game names none, and the site's
    pages say so and print only queries that return rows."""
    import dagster as dg
    import duckdb

    from assets.definitions import ALL_ASSETS
    from assets.resources import GameResource, WarehouseResource
    from conftest import printed_queries

    config, warehouse = tmp_path / "heads-up.toml", tmp_path / "lab.duckdb"
    config.write_text(HEADS_UP_TOML)
    monkeypatch.setenv("JAMFOLD_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setenv("JAMFOLD_CACHE", str(tmp_path / "cache"))
    result = dg.materialize(ALL_ASSETS, resources={"game": GameResource(config_file=str(config)),
                                                   "warehouse": WarehouseResource(path=str(warehouse))})
    assert result.success
    mats = {e.asset_key.to_user_string(): e.event_specific_data.materialization.metadata
            for e in result.get_asset_materialization_events()}
    assert mats["rollout_triples"]["needed"].value is False
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert checks["triple_rows_and_weights"].passed
    assert all(c.passed for c in checks.values()), [n for n, c in checks.items() if not c.passed]
    assert not (tmp_path / "cache" / "rollout").exists()  # no chunk of a triple table was computed
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT rollout_triples FROM games").fetchall() == [(None,)]
        assert con.execute("SELECT kind FROM rollout_tables").fetchall() == [("pairs",)]
        assert con.execute("SELECT count(*) FROM rollout_triples").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM simulation WHERE model = 'equilibrium'").fetchone()[0] == 2
        site = tmp_path / "build" / "site"
        assert "uses no triple table" in (site / "showdown.html").read_text()
        assert "none (a heads-up game)" in (site / "index.html").read_text()
        empty = []
        for page in ("index.html", "showdown.html", "warehouse.html"):
            queries = printed_queries((site / page).read_text())
            assert queries and not [q for q in queries if "rollout_triples" in q and "games" not in q], page
            empty += [(page, q[:80]) for q in queries if not con.execute(q).fetchall()]
        assert not empty
