"""Warehouse: schema creation, atomic replacement, and a clear error when another process holds the file."""

import subprocess
import sys
import textwrap
import time
from contextlib import contextmanager

import duckdb
import pandas as pd
import pytest

from warehouse import db
from warehouse.schema import TABLES


def test_schema_creates_every_table_and_view(tmp_path):
    with db.session(tmp_path / "w.duckdb") as con:
        names = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        assert set(TABLES) <= names
        for name, spec in TABLES.items():  # the names and types the warehouse page documents, views included
            cols = [(r[0], r[1]) for r in con.execute(f"DESCRIBE {name}").fetchall()]
            assert cols == [(c.name, c.type) for c in spec.columns], name


def test_no_table_is_named_like_the_default_file():
    assert db.DEFAULT_PATH.stem not in TABLES


def _frame(game, n):
    return pd.DataFrame({"game": game, "model": "harville", "example": 0, "player": range(n), "stack": 1.0,
                         "place": 1, "probability": 0.5, "payoff": 1.0})


def test_replace_rows_replaces_only_its_key(tmp_path):
    with db.session(tmp_path / "w.duckdb") as con:
        db.replace_rows(con, "model_examples", _frame("a", 3), {"game": "a"})
        db.replace_rows(con, "model_examples", _frame("b", 2), {"game": "b"})
        db.replace_rows(con, "model_examples", _frame("a", 5), {"game": "a"})
        got = dict(con.execute("SELECT game, count(*) FROM model_examples GROUP BY game").fetchall())
    assert got == {"a": 5, "b": 2}


def test_failed_write_keeps_previous_rows(tmp_path):
    with db.session(tmp_path / "w.duckdb") as con:
        db.replace_rows(con, "model_examples", _frame("a", 3), {"game": "a"})
        broken = _frame("a", 4).astype({"player": object})
        broken.loc[2, "player"] = "not a number"  # the INSERT fails after the DELETE ran
        with pytest.raises(Exception):
            db.replace_rows(con, "model_examples", broken, {"game": "a"})
        assert con.execute("SELECT count(*) FROM model_examples WHERE game = 'a'").fetchone()[0] == 3


def test_frames_streamed_in_one_transaction(tmp_path):
    """An iterable of frames is written as one replacement: all of them, or (a later one failing,
    even one the generator had not made yet) none, the previous rows kept."""
    with db.session(tmp_path / "w.duckdb") as con:
        db.replace_rows(con, "model_examples", _frame("a", 3), {"game": "a"})
        assert db.replace_rows(con, "model_examples", (_frame("a", k) for k in (2, 4)), {"game": "a"}) == 6
        assert con.execute("SELECT count(*) FROM model_examples WHERE game = 'a'").fetchone()[0] == 6

        def chunks():
            yield _frame("a", 5)
            yield _frame("a", 1).drop(columns=["payoff"])
        with pytest.raises(ValueError, match="lacks columns"):
            db.replace_rows(con, "model_examples", chunks(), {"game": "a"})
        assert con.execute("SELECT count(*) FROM model_examples WHERE game = 'a'").fetchone()[0] == 6


def test_tables_replaced_together_are_kept_together_when_a_later_one_fails(tmp_path):
    """A layer's four tables (or a game and its states) are one replacement: the second table's
    failure leaves the first table's old rows too, so no reader sees values without their
    exploitability."""
    with db.session(tmp_path / "w.duckdb") as con:
        db.replace_rows(con, "model_examples", _frame("a", 3), {"game": "a"})
        db.replace_rows(con, "model_payoffs", _payoffs("a", 2), {"game": "a"})
        with pytest.raises(ValueError, match="lacks columns"):
            db.replace_tables(con, [db.Replacement("model_examples", _frame("a", 7), {"game": "a"}),
                                    db.Replacement("model_payoffs", _payoffs("a", 5).drop(columns=["payoff"]),
                                                   {"game": "a"})])
        assert con.execute("SELECT count(*) FROM model_examples WHERE game = 'a'").fetchone()[0] == 3
        assert con.execute("SELECT count(*) FROM model_payoffs WHERE game = 'a'").fetchone()[0] == 2
        assert db.replace_tables(con, [db.Replacement("model_examples", _frame("a", 7), {"game": "a"}),
                                       db.Replacement("model_payoffs", _payoffs("a", 5), {"game": "a"})]) == {
            "model_examples": 7, "model_payoffs": 5}
        assert con.execute("SELECT count(*) FROM model_payoffs WHERE game = 'a'").fetchone()[0] == 5


def test_copied_rows_replace_the_targets_rows_of_every_table_together(tmp_path):
    """Another game's rows of a key, copied under the target key (a game of the same equilibrium):
    the same rows but for the key, the target's old rows gone, the source's and other keys' rows
    kept; a failure in a later table leaves every table as it was."""
    with db.session(tmp_path / "w.duckdb") as con:
        db.replace_rows(con, "model_payoffs", _payoffs("a", 4), {"game": "a"})
        roberts = _payoffs("a", 3).assign(model="roberts", payoff=2.0)
        db.replace_rows(con, "model_payoffs", roberts, {"game": "a", "model": "roberts"})
        db.replace_rows(con, "model_examples", _frame("a", 3), {"game": "a"})
        db.replace_rows(con, "model_payoffs", _payoffs("b", 9).assign(payoff=7.0), {"game": "b"})
        db.replace_rows(con, "model_examples", _frame("b", 2), {"game": "b"})
        with pytest.raises(ValueError, match="same columns"):
            db.copy_rows(con, ["model_payoffs"], {"game": "a"}, {"game": "b", "model": "harville"})
        with pytest.raises(ValueError, match="not in the table"):  # the second table: the first is rolled back
            db.copy_rows(con, ["model_payoffs", "solve_log"], {"game": "a", "model": "harville"},
                         {"game": "b", "model": "harville"})
        assert con.execute("SELECT count(*), min(payoff) FROM model_payoffs WHERE game = 'b'").fetchone() == (9, 7.0)
        written = db.copy_rows(con, ["model_payoffs", "model_examples"], {"game": "a", "model": "harville"},
                               {"game": "b", "model": "harville"})
        assert written == {"model_payoffs": 4, "model_examples": 3}

        def rows(table, game):
            return con.execute(f"SELECT * EXCLUDE (game) FROM {table} WHERE game = ? ORDER BY ALL", [game]).fetchall()

        assert rows("model_examples", "b") == rows("model_examples", "a")
        assert rows("model_payoffs", "b") == [r for r in rows("model_payoffs", "a") if r[0] == "harville"]
        assert len(rows("model_payoffs", "a")) == 7  # the source as it was


def _payoffs(game, n):
    cols = [c.name for c in TABLES["model_payoffs"].columns]
    values = {"game": game, "model": "harville", "players": 2, "state_id": range(n), "position": 0, "stack": 1.0,
              "payoff": 1.0}
    return pd.DataFrame({c: values[c] for c in cols})


def test_a_warehouse_whose_folder_cannot_be_made_is_unusable_with_its_path(tmp_path):
    """--warehouse under a regular file: a clear WarehouseUnusable (the CLI's exit 2), not an OSError."""
    (tmp_path / "afile").write_text("x")
    with pytest.raises(db.WarehouseUnusable, match="cannot create the folder"):
        db.connect(tmp_path / "afile" / "w.duckdb")


def test_a_write_whose_query_ctrl_c_interrupted_raises_the_interrupt_and_keeps_the_old_rows(tmp_path):
    """DuckDB rolls back the transaction of a query that Ctrl-C interrupted, so the write's own
    ROLLBACK found none and its "no transaction is active" error hid the interrupt (a build
    interrupted while writing showed that traceback)."""
    with db.session(tmp_path / "w.duckdb") as con:
        db.replace_rows(con, "model_examples", _frame("a", 3), {"game": "a"})

        def chunks():
            yield _frame("a", 5)
            con.execute("ROLLBACK")  # what DuckDB does to the interrupted query's transaction
            raise RuntimeError("Query interrupted")
        with pytest.raises(RuntimeError, match="Query interrupted"):
            db.replace_rows(con, "model_examples", chunks(), {"game": "a"})
        assert con.execute("SELECT count(*) FROM model_examples WHERE game = 'a'").fetchone()[0] == 3


def test_constants_fill_columns(tmp_path):
    with db.session(tmp_path / "w.duckdb") as con:
        frame = _frame("x", 2).drop(columns=["game", "model"])
        db.replace_rows(con, "model_examples", frame, {"game": "g"}, constants={"model": "roberts"})
        assert con.execute("SELECT DISTINCT game, model FROM model_examples").fetchall() == [("g", "roberts")]


@contextmanager
def _held_by_another_process(path):
    """Another process holds the warehouse file open from the moment this enters until it is
    killed, or until ``let_go(seconds)`` (yielded) has told it to let go that many seconds later;
    ``let_go`` returns the time (``time.monotonic()``) at which it told it. Nothing depends on how
    soon this process reads the holder's "ready" (a slow CI machine may read it late)."""
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import duckdb, sys, time
        con = duckdb.connect({str(path)!r}); print("ready", flush=True)
        time.sleep(float(sys.stdin.readline()))""")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def let_go(seconds: float) -> float:
        told = time.monotonic()
        holder.stdin.write(f"{seconds}\n")
        holder.stdin.flush()
        return told

    try:
        line = holder.stdout.readline()
        assert line == "ready\n", line
        yield let_go
    finally:
        holder.kill()
        holder.wait()


def test_busy_warehouse_fails_fast_with_a_clear_message(tmp_path):
    path = tmp_path / "w.duckdb"
    db.connect(path).close()
    with _held_by_another_process(path):
        t0 = time.monotonic()
        with pytest.raises(db.WarehouseBusy, match=r"in use by .*PID \d+"):
            db.connect(path, wait_s=1.0)
        assert time.monotonic() - t0 < 10


def test_an_asset_waits_for_a_warehouse_another_process_holds_for_a_while(tmp_path, monkeypatch):
    """An asset's connection (WarehouseResource) waits ASSET_LOCK_WAIT_S for the file (60 s: it may
    have hours of work to write) where a plain connect gives up after its own wait; here the wait is
    10 s (room for a slow CI machine: it ends when the file is free) and another process lets the
    file go 2.5 s after it is told to."""
    from assets import resources

    path = tmp_path / "w.duckdb"
    db.connect(path).close()
    monkeypatch.setattr(resources, "ASSET_LOCK_WAIT_S", 10.0)
    with _held_by_another_process(path) as let_go:
        with pytest.raises(db.WarehouseBusy):
            db.connect(path, wait_s=0.5)
        told = let_go(2.5)
        resources.WarehouseResource(path=str(path)).connect().close()
        assert time.monotonic() - told >= 2.5


def test_a_warehouse_path_that_is_not_a_regular_file_is_refused_and_a_blank_variable_is_unset(tmp_path, monkeypatch):
    """A named pipe as the warehouse made DuckDB wait forever for a writer; a JAMFOLD_WAREHOUSE of
    blanks read as the file ' ' where an empty one reads as unset."""
    import os

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    for read_only in (True, False):
        with pytest.raises(db.WarehouseUnusable, match="is not a regular file"):
            db.connect(pipe, read_only=read_only)
    monkeypatch.setenv("JAMFOLD_WAREHOUSE", "  ")
    assert db.warehouse_path() == db.DEFAULT_PATH


def test_read_only_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="build it first"):
        db.connect(tmp_path / "nope.duckdb", read_only=True)


def test_older_warehouse_gains_new_columns_and_keeps_its_rows(tmp_path):
    """A warehouse built before a column was added is migrated in place, not rebuilt."""
    import duckdb

    path = tmp_path / "w.duckdb"
    spec = TABLES["solve_log"]
    old_cols = [c for c in spec.columns if c.name != "states_skipped"]
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE solve_log ({', '.join(f'{c.name} {c.type}' for c in old_cols)})")
    con.execute(f"INSERT INTO solve_log VALUES ({', '.join(['1'] * len(old_cols))})")
    con.close()
    with db.session(path) as con:
        assert "states_skipped" in [r[0] for r in con.execute("DESCRIBE solve_log").fetchall()]
        assert con.execute("SELECT count(*) FROM solve_log").fetchone()[0] == 1
        row = {c: 2 for c in spec.column_names if c != "game"}
        db.replace_rows(con, "solve_log", pd.DataFrame([row]), {"game": "x"})
        assert con.execute("SELECT states_skipped FROM solve_log WHERE game = 'x'").fetchone()[0] == 2



def test_a_warehouse_at_this_schema_is_left_alone_and_any_older_part_is_brought_up_to_date(tmp_path):
    """A build opens a connection for every asset: where the file holds this version's schema
    (every column, every view marked with a digest of its statement) the connection runs no DDL,
    so a view that carries the mark is not made again; a view an older version made (no mark), a
    dropped column or a dropped table is restored."""
    path = tmp_path / "w.duckdb"
    spec = TABLES["pair_equities"]
    with db.session(path) as con:
        mark = con.execute("SELECT comment FROM duckdb_views() WHERE view_name = 'pair_equities'").fetchone()[0]
        assert mark.startswith("jamfold view ")
        con.execute("CREATE OR REPLACE VIEW pair_equities AS SELECT 1 AS x")
        con.execute(f"COMMENT ON VIEW pair_equities IS '{mark}'")
    with db.session(path) as con:  # marked as this version's: left as it is
        assert [r[0] for r in con.execute("DESCRIBE pair_equities").fetchall()] == ["x"]
        con.execute("CREATE OR REPLACE VIEW pair_equities AS SELECT 1 AS x")  # as an older version would
        con.execute("ALTER TABLE solve_log DROP COLUMN states_skipped")
        con.execute("DROP TABLE model_examples")
    with db.session(path) as con:
        assert [r[0] for r in con.execute("DESCRIBE pair_equities").fetchall()] == [c.name for c in spec.columns]
        for name in ("solve_log", "model_examples"):
            columns = [r[0] for r in con.execute(f"DESCRIBE {name}").fetchall()]  # an added one comes last
            assert sorted(columns) == sorted(TABLES[name].column_names), name
        assert not db._missing_columns(con, missing_tables=True) and db._views_are_current(con)


def test_a_read_only_connection_sees_this_versions_views_over_an_older_file(tmp_path):
    """A warehouse whose views an older version wrote (pair_equities without `deals`, no
    simulation_summary): a read-only connection, as the site and the CLI open it, reads this
    version's views; the file itself is unchanged until a build writes to it."""
    path = tmp_path / "w.duckdb"
    with db.session(path) as con:
        con.execute("INSERT INTO rollout_pairs VALUES ('r', 0, 1, 24, 0.8), ('r', 0, 0, 6, 0.5)")
        con.execute("INSERT INTO hand_classes (class_id, label) VALUES (0, 'AA'), (1, 'KK')")
        con.execute("INSERT INTO games (game) VALUES ('g')")
        con.execute("""CREATE OR REPLACE VIEW pair_equities AS SELECT r.rollout, r.a AS x, r.p_first_wins AS p_win
                       FROM rollout_pairs r""")
        con.execute("DROP VIEW simulation_summary")
    with db.session(path, read_only=True) as con:
        assert sorted(con.execute("SELECT hand, versus, deals FROM pair_equities").fetchall()) == [
            ("AA", "AA", 6), ("AA", "KK", 12), ("KK", "AA", 12)]
        assert con.execute("SELECT count(*) FROM simulation_summary").fetchone()[0] == 0
    raw = duckdb.connect(str(path), read_only=True)
    assert "deals" not in [r[0] for r in raw.execute("DESCRIBE pair_equities").fetchall()]
    raw.close()

def test_model_strategies_round_trip_through_the_warehouse(tmp_path, monkeypatch):
    """A sweep's strategies written as `model_nodes` rows, frame by frame, read back as they were,
    a few states per query: every state's (nodes × 169) array, states without a decision included,
    and no other model's rows."""
    from types import SimpleNamespace

    import numpy as np

    import assets.ex_post as ex_post
    import assets.model_analysis as analysis
    from assets.ex_post import read_strategies
    from engine.model_strategies import Sweep

    monkeypatch.setattr(analysis, "NODE_ROW_STATES", 2)  # 3 frames for 5 states
    monkeypatch.setattr(ex_post, "STRATEGY_READ_STATES", 2)  # and 3 queries: [0, 2), [2, 4), [4, 5)
    rng = np.random.default_rng(0)
    sizes = [3, 0, 1, 4, 2]
    strategies = [rng.random((k, 169)) for k in sizes]
    hands = [SimpleNamespace(node_actor=np.arange(k) % 3) for k in sizes]
    sweep = Sweep("weitzman", {}, {3: strategies}, {}, {}, {3: np.zeros(5, np.int64)}, {}, 0.0)
    other = Sweep("roberts", {}, {3: [s[::-1] + 1 for s in strategies]}, {}, {}, {3: np.zeros(5, np.int64)}, {}, 0.0)
    with db.session(tmp_path / "w.duckdb") as con:
        db.replace_rows(con, "model_nodes", analysis._node_rows(other, {3: hands}), {"game": "g", "model": "roberts"})
        frames = analysis._node_rows(sweep, {3: hands})
        assert db.replace_rows(con, "model_nodes", frames, {"game": "g", "model": "weitzman"}) == sum(sizes)
        back = read_strategies(con, "g", 3, len(sizes), "weitzman")
        limit = con.execute("SELECT current_setting('memory_limit')").fetchone()[0]
        actors = con.execute("SELECT actor FROM model_nodes WHERE model = 'weitzman' ORDER BY state_id, node"
                             ).fetchnumpy()["actor"]
    assert limit not in ("244.1 MiB", "256.0 MiB")  # the read's cap is lifted again
    assert [b.shape for b in back] == [(k, 169) for k in sizes]
    for a, b in zip(strategies, back):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(actors, np.concatenate([h.node_actor for h in hands]))


def test_capped_memory_caps_duckdb_and_resets_it_even_when_the_query_fails(tmp_path):
    with db.session(tmp_path / "w.duckdb") as con:
        def limit() -> str:
            return con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]

        default = limit()
        with db.capped_memory(con):
            assert limit() == "244.1 MiB"  # 256 MB
        assert limit() == default
        with pytest.raises(duckdb.CatalogException), db.capped_memory(con, "100MB"):
            assert limit() == "95.3 MiB"
            con.execute("SELECT * FROM no_such_table")
        assert limit() == default
        seen = []

        def frames():  # consumed inside replace_rows' transaction
            for k in range(2):
                seen.append(limit())
                yield pd.DataFrame({"players": [k + 2], "state_id": [0], "position": [0], "value": [1.0]})

        assert db.replace_rows(con, "equilibrium_values", frames(), {"game": "g"}) == 2
        assert seen == ["244.1 MiB"] * 2 and limit() == default


def test_equilibrium_node_rows_frame_by_frame(tmp_path, monkeypatch):
    """A solved layer's `equilibrium_nodes` rows, written a few states per frame, hold every state's
    strategy and the nodes' actors as the hand tree has them."""
    import numpy as np

    import assets.solve as solve
    from assets.ex_post import read_strategies
    from engine.config import profile
    from engine.hand import hand_tree
    from engine.hand_pass import SolverTensors
    from engine.rollout import build_pair_table, build_triple_table
    from engine.showdown import showdown_tensors
    from engine.tournament import solve_layer

    cfg = profile("quick")
    tensors = SolverTensors(showdown_tensors(build_pair_table("sampled", samples=2, seed=1),
                                             build_triple_table("sampled", samples=2, seed=1)))
    lower = {2: solve_layer(6, 2, cfg.payouts, 1e-2, tensors, {}, threads=2).values}
    sol = solve_layer(6, 3, cfg.payouts, 1e-2, tensors, lower, threads=2)
    monkeypatch.setattr(solve, "NODE_ROW_STATES", 3)
    with db.session(tmp_path / "w.duckdb") as con:
        written = db.replace_rows(con, "equilibrium_nodes", solve._node_rows(cfg, sol), {"game": cfg.name, "players": 3})
        back = read_strategies(con, cfg.name, 3, len(sol.stacks))
        names = con.execute("SELECT state_id, node, actor_name, jammed_before FROM equilibrium_nodes "
                            "ORDER BY state_id, node").fetchall()
    assert written == sum(len(x) for x in sol.strategy) == len(names)
    for a, b in zip(sol.strategy, back):
        np.testing.assert_array_equal(a, b)
    positions = solve.position_names(3)
    for state_id, node, actor_name, jammed_before in names:
        tree_node = hand_tree(tuple(int(x) for x in sol.stacks[state_id]), cfg.payouts).nodes[node]
        assert actor_name == positions[tree_node.actor]
        assert jammed_before == [positions[j] for j in tree_node.jammers_before]
