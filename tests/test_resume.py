"""assets.resume: finished units are kept only against the same stamp, and written whole."""

import hashlib
import json

import numpy as np

from assets.resume import UnitCheckpoint, game_folder, game_key, unused_old_folders
from engine.config import profile, with_overrides
from jamfold.cli import main


def test_a_unit_is_kept_only_against_the_stamp_it_was_finished_with(tmp_path):
    folder = tmp_path / "sim"
    done = UnitCheckpoint(folder, {"run": "abc", "tournaments": 1000})
    assert done.load("hero-harville") is None
    record = {"rows": [{"mean_payoff": np.float64(20.5), "seed": np.int64(7), "finishing": np.array([0.25, 0.75])}]}
    done.save("hero-harville", record)
    assert done.load("hero-harville") == {"rows": [{"mean_payoff": 20.5, "seed": 7, "finishing": [0.25, 0.75]}]}
    assert not list(folder.glob("*.tmp*"))
    assert UnitCheckpoint(folder, {"run": "abc", "tournaments": 1000}).load("hero-harville") is not None
    assert UnitCheckpoint(folder, {"run": "xyz", "tournaments": 1000}).load("hero-harville") is None  # new strategies
    assert UnitCheckpoint(folder, {"run": "abc", "tournaments": 2000}).load("hero-harville") is None  # new count
    unknown = UnitCheckpoint(folder, {"run": None, "tournaments": 1000})  # upstream never materialized here
    unknown.save("hero-weitzman", {"rows": []})
    assert unknown.load("hero-harville") is None and not (folder / "hero-weitzman.json").exists()


def test_a_units_work_folder_belongs_to_its_stamp(tmp_path):
    """A unit's partial work (e.g. one profile's nemesis rounds) is resumed only against the same
    upstream results, and goes once the unit is finished."""
    folder = tmp_path / "ex_post"
    done = UnitCheckpoint(folder, {"model_strategies": "abc"})
    work = done.work_dir("harville")
    (work / "nemesis3.npz").write_bytes(b"rounds")
    assert UnitCheckpoint(folder, {"model_strategies": "abc"}).work_dir("harville") == work
    assert (work / "nemesis3.npz").exists()
    other = UnitCheckpoint(folder, {"model_strategies": "xyz"}).work_dir("harville")  # new strategies
    assert other != work and not work.exists() and not list(other.iterdir())
    weitzman = UnitCheckpoint(folder, {"model_strategies": "xyz"}).work_dir("weitzman")
    assert weitzman != other
    UnitCheckpoint(folder, {"model_strategies": "xyz"}).save("harville", {"rows": 3})
    assert not other.exists() and weitzman.exists()  # a finished unit drops its own work only
    assert UnitCheckpoint(folder, {"model_strategies": None}).work_dir("harville") is None  # nothing kept


def test_what_a_killed_writer_left_goes_when_the_units_are_next_opened(tmp_path):
    """A SIGKILL mid-write leaves `*.tmp<pid>` files (a unit's rows, a block: tens of MB in a big
    game), and one between a unit's record and the deletion of its work folder leaves that folder:
    both go when the folder's units are next opened. A live process's temporaries stay (it may be
    writing them now)."""
    import os
    import subprocess
    import sys

    folder = tmp_path / "finishing"
    done = UnitCheckpoint(folder, {"equilibrium": "abc"})
    work = done.work_dir("layer3")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)
    leftovers = [folder / f"layer3.rows.npz.tmp{dead_pid}", work / f"outcomes.block2.npz.tmp{dead_pid}"]
    live = folder / f"layer4.rows.npz.tmp{os.getpid()}"
    for path in [*leftovers, live]:
        path.write_bytes(b"cut short")
    (folder / "layer3.json").write_text(json.dumps({"stamp": {"equilibrium": "abc"}, "record": {"rows": 3}}))
    reopened = UnitCheckpoint(folder, {"equilibrium": "abc"})
    assert not any(p.exists() for p in leftovers) and live.exists()
    assert work.exists()  # (kept until its unit's record is read: a running unit's work is not touched)
    assert reopened.load("layer3") == {"rows": 3} and not work.exists()


def test_rows_of_another_run_with_the_same_count_are_not_taken_for_a_units_own(tmp_path):
    """A unit's record keeps a digest of the rows it wrote: where the warehouse holds as many rows
    under the unit's key but other ones (a game sharing the checkpoints whose equilibrium was solved
    again since), they are not "held" but replaced by the rows kept with the record."""
    import pandas as pd

    from assets.resume import rows_of_kept_unit, warehouse_rows_digest
    from warehouse import db

    def frame(shift: float) -> pd.DataFrame:
        return pd.DataFrame({"state_id": [0, 0, 1, 1], "position": [0, 1, 0, 1], "place": [1, 1, 2, 2],
                             "probability": [0.5 + shift, 0.5 - shift, 0.25, 0.75]})

    key = {"game": "g", "players": 2}
    done = UnitCheckpoint(tmp_path / "finishing", {"equilibrium": "e2"})
    with db.session(tmp_path / "w.duckdb") as con:
        db.replace_rows(con, "finishing", frame(0.125), key)  # the rows of equilibrium e2, recorded
        record = {"rows": 4, "rows_digest": warehouse_rows_digest(con, "finishing", key)}
        done.save("layer2", record, rows=frame(0.125))
        assert rows_of_kept_unit(con, done, "layer2", record, "finishing", key, 4, 4) == "held"
        db.replace_rows(con, "finishing", frame(0.0), key)  # as many rows of another equilibrium
        assert warehouse_rows_digest(con, "finishing", key) != record["rows_digest"]
        assert rows_of_kept_unit(con, done, "layer2", record, "finishing", key, 4, 4) == "restored"
        assert warehouse_rows_digest(con, "finishing", key) == record["rows_digest"]
        del record["rows_digest"]  # a record before the digests: the count alone, as before
        db.replace_rows(con, "finishing", frame(0.0), key)
        assert rows_of_kept_unit(con, done, "layer2", record, "finishing", key, 4, 4) == "held"

        # rows neither held nor kept in the expected count: the unit is to be done again, nothing written
        assert rows_of_kept_unit(con, done, "layer2", record, "finishing", key, 6, 4) is None
        assert con.execute("SELECT count(*) FROM finishing").fetchone()[0] == 4

        # a record saved before rows were kept with it (its stamp's keys unsorted): once its rows are
        # found held, they are kept with it, and another game of the same equilibrium takes them
        older = UnitCheckpoint(tmp_path / "finishing", {"tournaments": 10, "equilibrium": "e2"})
        older.save("layer2", {"rows": 4})
        assert not older.has_rows("layer2") and rows_of_kept_unit(con, older, "layer2", {"rows": 4}, "finishing",
                                                                     key, 4, 4) == "held"
        assert older.has_rows("layer2")
        other_key = {"game": "g2", "players": 2}
        assert rows_of_kept_unit(con, older, "layer2", {"rows": 4}, "finishing", other_key, 4, 0) == "restored"
        assert warehouse_rows_digest(con, "finishing", other_key) == warehouse_rows_digest(con, "finishing", key)
        older.save("layer3", {"rows": 4})  # no rows kept, none held: nothing to take
        assert rows_of_kept_unit(con, older, "layer3", {"rows": 4}, "finishing", {"game": "g3", "players": 3},
                                 4, 0) is None


def test_games_sharing_an_equilibrium_are_found_by_their_stored_configs(tmp_path):
    """The games whose rows a build may copy: those whose stored config has the same equilibrium,
    not the game itself, not another equilibrium, and not a config this version cannot read."""
    from assets.resume import games_with_equilibrium
    from warehouse import db

    quick = profile("quick")
    stored = {"quick": quick.to_json(), "quick-sims": with_overrides(quick, simulation_tournaments=1000).to_json(),
              "quick-g": with_overrides(quick, gamma=0.002).to_json(), "old": json.dumps({"players": 3, "blinds": 1}),
              "also": with_overrides(quick, name="also", fgs_depth=2).to_json()}
    with db.session(tmp_path / "w.duckdb") as con:
        for game, config_json in stored.items():
            con.execute("INSERT INTO games (game, config_json) VALUES (?, ?)", [game, config_json])
        assert games_with_equilibrium(con, quick) == ["also", "quick-sims"]


class _Clock:
    """A stand-in for time.perf_counter that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_units_rows_are_kept_with_its_record_and_only_while_it_is_valid(tmp_path):
    """The rows a unit wrote to the warehouse come back, column by column and to the bit, for a game
    of the same equilibrium whose warehouse lacks them; not against another stamp, and not once the
    unit is saved again without rows."""
    import pandas as pd

    folder = tmp_path / "finishing"
    frame = pd.DataFrame({"state_id": np.arange(300), "position": np.arange(300) % 5 - 1,
                          "probability": np.linspace(0, 1, 300) / 3})
    done = UnitCheckpoint(folder, {"equilibrium": "abc"})
    done.save("finishing-3p", {"rows": 300}, rows=frame)
    columns = done.load_rows("finishing-3p")
    assert columns["state_id"].dtype == np.uint16 and columns["position"].dtype == np.int8  # (a third of the bytes)
    pd.testing.assert_frame_equal(pd.DataFrame(columns), frame, check_dtype=False)
    assert (pd.DataFrame(columns)["probability"].to_numpy() == frame["probability"].to_numpy()).all()
    assert UnitCheckpoint(folder, {"equilibrium": "xyz"}).load_rows("finishing-3p") is None
    done.save("finishing-3p", {"rows": 2})
    assert done.load_rows("finishing-3p") is None and not (folder / "finishing-3p.rows.npz").exists()
    done.save("finishing-3p", {"rows": 300}, rows=frame)
    rows_file = (folder / "finishing-3p.rows.npz").read_bytes()
    UnitCheckpoint(folder, {"equilibrium": "xyz"}).save("finishing-3p", {"rows": 300}, rows=frame.iloc[::-1])
    (folder / "finishing-3p.json").write_text(json.dumps({"stamp": {"equilibrium": "abc"}, "record": {"rows": 300}}))
    assert done.load_rows("finishing-3p") is None  # a save cut between rows and record: not the other stamp's rows
    (folder / "finishing-3p.rows.npz").write_bytes(rows_file)
    assert done.load_rows("finishing-3p") is not None
    (folder / "finishing-3p.rows.npz").write_bytes(b"PK\x03\x04 cut short")  # a damaged file: the unit is redone
    assert done.load_rows("finishing-3p") is None
    with open(folder / "finishing-3p.rows.npz", "wb") as f:  # bytes numpy reads as a lone array, not an archive
        np.save(f, np.arange(300))
    assert done.load_rows("finishing-3p") is None and not done.has_rows("finishing-3p")


def test_games_with_the_same_equilibrium_share_their_checkpoint_folders():
    """The folders are keyed by what the equilibrium depends on, not by the game's name: a profile
    run with an analysis flag (another name) finds the profile's solves; another gamma does not."""
    thesis = profile("thesis")
    seeded = with_overrides(thesis, simulation_tournaments=1000, fgs_depth=2, direct_match_tournaments=1000)
    assert seeded.name != thesis.name and game_key(seeded) == game_key(thesis)
    assert game_key(thesis).startswith("5p45u-")
    assert game_key(with_overrides(thesis, gamma=1e-3)) != game_key(thesis)
    assert game_key(with_overrides(thesis, payouts=[65, 35])) != game_key(thesis)


def test_payouts_are_keyed_by_the_prizes_they_pay_and_old_keys_are_adopted(tmp_path):
    """`--payouts 50 30 20` (floats) and a trailing place that pays 0 are the same game as the
    profile's `[50, 30, 20]`: the same solve, not a new one (20 h for `thesis`). A checkpoint folder
    named by the key before (the payouts as given) is adopted whole."""
    from engine.config import make_config

    thesis = profile("thesis")
    assert game_key(with_overrides(thesis, payouts=[50.0, 30.0, 20.0])) == game_key(thesis)
    assert game_key(with_overrides(thesis, payouts=[50, 30, 20, 0, 0])) == game_key(thesis)
    assert game_key(with_overrides(thesis, payouts=[50.5, 30, 19.5])) != game_key(thesis)
    assert profile("quick").solve_key() == profile("quick").solve_key(legacy=True)  # (the profiles' keys stay)
    cfg = make_config(name="mine", players=3, units=10, payouts=[70.0, 30.0])
    legacy = hashlib.sha1(cfg.solve_key(legacy=True).encode()).hexdigest()[:10]
    assert not game_key(cfg).endswith(legacy)
    old = tmp_path / "solve" / f"3p10u-{legacy}"
    old.mkdir(parents=True)
    (old / "layer2.npz").write_text("solved")
    assert game_folder(tmp_path, "solve", cfg, adopt=False) == old
    assert unused_old_folders(tmp_path, cfg) == []
    adopted = game_folder(tmp_path, "solve", cfg)
    assert adopted.name == game_key(cfg) and (adopted / "layer2.npz").read_text() == "solved" and not old.exists()


def test_a_heads_up_games_key_leaves_out_the_triple_table_and_its_old_folder_is_adopted(tmp_path):
    """A heads-up game reads no triple table, so games that differ only in its settings share one
    equilibrium; its checkpoints under the key that named the triple table (until stop 73) are
    adopted whole. A game of three players keeps the triple table in its key."""
    from engine.config import make_config

    cfg = make_config(name="hu", players=2, units=20, payouts=[100], rollout_triples="sampled", rollout_samples=500)
    assert game_key(cfg) == game_key(make_config(name="hu", players=2, units=20, payouts=[100]))
    assert game_key(cfg) != game_key(make_config(name="hu", players=2, units=20, payouts=[100],
                                                 rollout_pairs="sampled"))  # (its pair table it does read)
    three = make_config(name="three", players=3, units=20, payouts=[100])
    assert game_key(three) != game_key(with_overrides(three, rollout_triples="sampled"))
    before = hashlib.sha1(cfg.solve_key(with_triples=True).encode()).hexdigest()[:10]
    assert not game_key(cfg).endswith(before)
    for kind in ("solve", "models"):
        old = tmp_path / kind / f"2p20u-{before}"
        old.mkdir(parents=True)
        (old / "layer2.npz").write_text(kind)
        assert game_folder(tmp_path, kind, cfg, adopt=False) == old
        adopted = game_folder(tmp_path, kind, cfg)
        assert adopted.name == game_key(cfg) and (adopted / "layer2.npz").read_text() == kind and not old.exists()


def test_a_folder_of_the_old_name_is_adopted_whole(tmp_path):
    """Folders named `<game name>-<digest>` (until 2026-11-29) are renamed to the new key with what
    they hold, the game's own first; `jamfold progress` (no adopt) reads them where they are."""
    cfg = profile("quick")
    digest = game_key(cfg).split("-")[1]
    own, other = tmp_path / "solve" / f"quick-{digest}", tmp_path / "solve" / f"quick-0c57c9-{digest}"
    for folder in (other, own):
        folder.mkdir(parents=True)
        (folder / "layer2.npz").write_text(folder.name)
    (tmp_path / "solve" / "quick-0123456789").mkdir()  # another equilibrium's: never taken
    assert game_folder(tmp_path, "solve", cfg, adopt=False) == own and own.exists()
    adopted = game_folder(tmp_path, "solve", cfg)
    assert adopted == tmp_path / "solve" / game_key(cfg) and not own.exists() and other.exists()
    assert (adopted / "layer2.npz").read_text() == f"quick-{digest}"
    assert game_folder(tmp_path, "solve", cfg) == adopted  # from now on, the new folder
    assert game_folder(tmp_path, "models", cfg) == tmp_path / "models" / game_key(cfg)  # none: not made either
    assert not (tmp_path / "models").exists()
    stray = tmp_path / "finishing" / f"quick-{digest}"  # a file of an old folder's name: not a folder to adopt
    stray.parent.mkdir()
    stray.write_text("not a checkpoint folder")
    assert game_folder(tmp_path, "finishing", cfg) == tmp_path / "finishing" / game_key(cfg) and stray.is_file()


def test_old_folders_no_build_uses_are_named_by_progress(tmp_path, monkeypatch, capsys):
    """After the game's own old folder is adopted, another game's old folder of the same
    equilibrium is never read again: `jamfold progress` names it, with its size, to be deleted.
    Before the adoption, the folder a build would take is not among them; another equilibrium's
    folders never are."""
    from jamfold.status_report import unused_folders_line

    cfg = profile("quick")
    digest = game_key(cfg).split("-")[1]
    own, other = tmp_path / "solve" / f"quick-{digest}", tmp_path / "models" / f"quick-0c57c9-{digest}"
    for folder in (own, other, tmp_path / "solve" / "quick-0123456789"):
        folder.mkdir(parents=True)
        (folder / "layer2.npz").write_bytes(b"x" * 1000)
    (tmp_path / "models" / game_key(cfg)).mkdir()  # the models' folder in use: the old one is left over
    assert unused_old_folders(tmp_path, cfg) == [other]
    game_folder(tmp_path, "solve", cfg)  # adopts quick's own
    assert unused_old_folders(tmp_path, cfg) == [other]
    line = unused_folders_line(cfg, tmp_path)
    assert f"models/quick-0c57c9-{digest}" in line and "0.00 GB" in line and "delete them" in line
    monkeypatch.setenv("JAMFOLD_CACHE", str(tmp_path))
    main(["progress", "--profile", "quick"])
    assert capsys.readouterr().out.splitlines()[-1] == line
    (tmp_path / "solve" / f"quick-1a2b3c-{digest}").mkdir()
    assert len(unused_old_folders(tmp_path, cfg)) == 2
    other.rename(tmp_path / "spare")
    (tmp_path / "solve" / f"quick-1a2b3c-{digest}").rmdir()
    assert unused_old_folders(tmp_path, cfg) == [] and unused_folders_line(cfg, tmp_path) is None
    main(["progress", "--profile", "quick"])
    out = capsys.readouterr().out
    assert "delete them" not in out and "None" not in out.splitlines() and "checkpoints: " in out


def test_block_saver_saves_the_states_since_the_last_block_once_a_block_is_due(monkeypatch):
    import engine.checkpoint as checkpoint

    clock = _Clock()
    monkeypatch.setattr(checkpoint.time, "perf_counter", clock)
    saved: list[list[int]] = []
    blocks = checkpoint.BlockSaver(lambda states: saved.append(list(states)), every=300.0)
    assert not blocks.add(7) and not blocks.add(3)  # not due yet
    clock.now += 299.0
    assert not blocks.add(5)
    clock.now += 1.0  # 300 s since the saver started: due
    assert blocks.add(9)
    assert saved == [[7, 3, 5, 9]]
    clock.now += 200.0
    assert not blocks.add(1)  # the clock restarted at the save
    clock.now += 100.0
    assert blocks.add(2)
    assert saved == [[7, 3, 5, 9], [1, 2]]
    assert not blocks.flush()  # nothing finished since: no empty block
    blocks.add(4)
    assert blocks.flush()
    assert saved[-1] == [4]


def test_block_saver_without_a_checkpoint_writes_nothing(monkeypatch):
    import engine.checkpoint as checkpoint

    clock = _Clock()
    monkeypatch.setattr(checkpoint.time, "perf_counter", clock)
    blocks = checkpoint.BlockSaver(None, every=0.0)
    for s in range(5):
        clock.now += 1.0
        assert not blocks.add(s)
    assert not blocks.flush() and blocks.pending == []


def test_a_cache_folder_is_made_when_missing_and_taken_as_it_is_when_there(tmp_path, monkeypatch):
    """`cache_dir` (the triple table's chunks): made with its parents on a first build, and found
    with what it holds by a build resuming from them."""
    from assets.paths import cache_dir

    monkeypatch.setenv("JAMFOLD_CACHE", str(tmp_path / "cache"))
    folder = cache_dir("rollout", "sampled-4-seed3")
    assert folder == tmp_path / "cache" / "rollout" / "sampled-4-seed3" and folder.is_dir()
    (folder / "chunk").write_text("kept")
    assert cache_dir("rollout", "sampled-4-seed3") == folder and (folder / "chunk").read_text() == "kept"
