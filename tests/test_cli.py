"""The jamfold CLI as a user meets it: outputs, JSON, and exit code 2 with a clear message on bad input."""

import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import numba
import pytest

from engine import rollout
from engine.cards import parse_class
from jamfold.cli import main

ORACLE_HARVILLE_V = [5.89, 13.84, 20.48, 27.86, 31.94]
LAB = Path(__file__).resolve().parent.parent / "lab"  # the repository's entry point


def run(capsys, *argv):
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_equity_json_matches_oracle(capsys):
    code, out, _ = run(capsys, "equity", "--model", "harville", "--stacks", "2", "5", "8", "13", "17",
                       "--payouts", "50", "30", "20", "--json")
    assert code == 0
    data = json.loads(out)
    assert np.round(data["payoffs"], 2).tolist() == ORACLE_HARVILLE_V
    assert np.allclose(np.sum(data["finishing"], axis=1), 1) and np.allclose(np.sum(data["finishing"], axis=0), 1)


@pytest.mark.parametrize("argv, says", [
    (("equity", "--model", "foo", "--stacks", "1", "2", "--payouts", "1"), "jamfold equity: argument --model: invalid "
                                                                          "choice: 'foo'"),
    (("simulate", "--tournaments", "many"), "jamfold simulate: argument --tournaments: invalid int value: 'many'"),
    (("state", "--profile", "quick"), "jamfold state: the following arguments are required: --stacks"),
    (("equity", "--stacks", "1", "2", "--payouts", "1"),
     "jamfold equity: the following arguments are required: --model"),
    (("equity", "--model", "roberts", "--payouts", "1"),
     "jamfold equity: the following arguments are required: --stacks"),
    (("equity", "--model", "roberts", "--stacks", "1", "2"),
     "jamfold equity: the following arguments are required: --payouts"),
    ((), "jamfold: the following arguments are required: COMMAND"),
    (("equity", "--model", "harville", "--stacks", "2", "3", "--payouts", "1e308"), "--payouts: must sum to a prize "
                                                                                    "pool from 1e-06 to 1e+15 $"),
])
def test_argument_errors_are_one_line_naming_the_argument(capsys, argv, says):
    """argparse's own errors (a bad choice, a value of the wrong type, a missing argument) print the
    one line the CLI's errors do, not the usage block before it; exit status 2. `equity --payouts`
    takes prize pools a game config takes (1e308 printed a 300-digit payoff)."""
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("jamfold: error: ") and says in err, err


def test_equity_human_output(capsys):
    """The table a person reads carries the JSON's numbers, rounded: equal payouts are non-increasing,
    and a payout typed as -0 prints as 0."""
    argv = ("equity", "--model", "roberts", "--stacks", "1000", "2500.5", "4000", "--payouts", "50", "50", "-0")
    code, out, _ = run(capsys, *argv)
    assert code == 0
    code, data, _ = run(capsys, *argv, "--json")
    data = json.loads(data)
    lines = out.splitlines()
    assert lines[0] == "roberts finishing matrix (rows = players, columns = places), payouts 50, 50, 0"
    assert lines[1].split() == ["player", "stack", "P1", "P2", "P3", "payoff", "$"]
    for i, line in enumerate(lines[2:]):
        cells = line.split()
        assert cells[:2] == [str(i + 1), f"{data['stacks'][i]:g}"]
        assert [float(c) for c in cells[2:]] == pytest.approx([*data["finishing"][i], data["payoffs"][i]], abs=5e-5)
    assert len(lines) == 5 and data["payouts"] == [50, 50, 0] and str(data["payouts"][2]) == "0.0"


@pytest.mark.parametrize("argv, needle", [
    (["equity", "--model", "icm", "--stacks", "1", "2", "--payouts", "1"], "--model"),
    (["equity", "--model", "harville", "--stacks", "5", "--payouts", "1"], "--stacks: the harville model takes 2 to 20"),
    (["equity", "--model", "harville", "--stacks", *["1"] * 21, "--payouts", "1"], "2 to 20 stacks (got 21)"),
    (["equity", "--model", "roberts", "--stacks", *["1"] * 10, "--payouts", "1"], "2 to 9 stacks (got 10)"),
    (["equity", "--model", "harville", "--stacks", "1", "-2", "--payouts", "1"], "--stacks: every value must be"),
    (["equity", "--model", "harville", "--stacks", "1", "0", "--payouts", "1"], "--stacks: every value must be"),
    (["equity", "--model", "harville", "--stacks", "1", "nan", "--payouts", "1"], "--stacks: every value must be"),
    (["equity", "--model", "harville", "--stacks", "1", "abc", "--payouts", "1"], "--stacks: 'abc' is not a number"),
    (["equity", "--model", "harville", "--stacks", "1", "2", "--payouts", "20", "30"], "--payouts: must be non-increasing"),
    (["equity", "--model", "harville", "--stacks", "1", "2", "--payouts", "3", "2", "1"], "--payouts: pays 3 places"),
    (["showdown", "AA"], "hands: give 2 or 3"),
    (["showdown", "AA", "KK", "QQ", "JJ"], "hands: give 2 or 3"),
    (["showdown", "AA", "KX"], "unknown hand class 'KX'"),
    (["showdown", "AKx", "QQ"], "unknown hand class 'AKx'"),
    (["showdown", "AA", "AAs"], "a pair takes no suffix"),
    (["showdown", "AA", "AA", "AA"], "cannot be dealt together"),
    (["showdown", "AA", "AA", "AKs"], "cannot be dealt together"),
    (["rollout"], "exactly one of --exact or --samples"),
    (["rollout", "--samples", "0"], "--samples: must be a whole number"),
    (["rollout", "--samples", "3000000000"], "--samples: must be a whole number from 1 to 1,000,000"),
    (["rollout", "--samples", "5", "--seed", str(2**63)], "--seed: must be from 0 to 2^63"),
    (["rollout", "--samples", "1", "--seed", "-1"], "--seed: must be from 0"),  # (1 sample is taken)
    (["equity", "--model", "weitzman", "--stacks", "1e308", "1e308", "--payouts", "1"], "--stacks: every stack must be from"),
    (["equity", "--model", "harville", "--stacks", "1e-320", "1", "--payouts", "1"], "--stacks: every stack must be from"),
    (["equity", "--model", "harville", "--stacks", "1", "2", "--payouts", "1e308", "1e308"],
     "--payouts: must sum to a prize pool from 1e-06"),
    (["build", "--profile", "quick", "--simulation-seed", str(10**13)], "simulation_seed: must be a whole number from 0"),
    (["build", "--profile", "quick", "--units", "200"], "units: a 5-player game of 200 units has 63,391,251"),
    (["build", "--config", "/dev/null"], "config: is not a regular file"),
    (["build", "--profile", "nope"], "profile: unknown profile"),
    (["state", "--profile", "quick", "--stacks", "4", "4"], "--stacks: stacks must sum to the game's units (10)"),
    (["state", "--profile", "quick", "--stacks", "x", "16"], "--stacks: 'x' is not a whole number"),
    (["state", "--profile", "quick", "--stacks", "2", "2", "2", "2", "٢"], "--stacks: '٢' is not a whole number"),
    (["state", "--profile", "quick", "--stacks", "1_0"], "--stacks: '1_0' is not a whole number"),
    (["state", "--profile", "quick", "--stacks", "9" * 5000, "1"], "(5000 characters)' is not a whole number"),
    (["simulate", "--profile", "gs08", "--warehouse", ""], "warehouse: is empty"),
    (["site", "--profile", "gs08", "--warehouse", ""], "warehouse: is empty"),
    (["equity", "--model", "harville", "--stacks", "2", "٣", "--payouts", "1"], "--stacks: '٣' is not a number"),
    (["state", "--profile", "quick", "--stacks", "20"], "has states of 2 to 5 players"),
    # an option given twice (argparse kept the last one silently)
    (["equity", "--model", "harville", "--stacks", "2", "5", "--stacks", "3", "4", "--payouts", "50"],
     "jamfold equity: --stacks: given twice; give it once"),
    (["state", "--profile", "quick", "--profile", "gs08", "--stacks", "4", "3", "3"], "--profile: given twice"),
    (["build", "--profile", "quick", "--payouts", "50", "--payouts", "60", "40"], "--payouts: given twice"),
    (["state", "--profile", "gs08", "--stacks", "0", "45"], "every stack must be ≥ 1 unit"),
    (["state", "--profile", "gs08", "--stacks", "1", "41", "3", "--warehouse", "/nonexistent/w.duckdb"], "build it first"),
    (["state", "--profile", "gs08", "--stacks", "1", "41", "3", "--warehouse", ""], "warehouse: is empty"),
    (["site", "--profile", "gs08", "--warehouse", " "], "warehouse: is empty"),
    (["build", "--profile", "quick", "--payouts", "10", "20"], "payouts: must be non-increasing"),
    (["build", "--profile", "quick", "--start", "1", "2"], "start: must list one stack per player"),
    (["build", "--profile", "quick", "--gamma", "0"], "gamma: must be a finite number > 0"),
    (["build", "--profile", "quick", "--fgs-depth", "-1"], "fgs_depth: must be a whole number from 0 to 20"),
    (["build", "--profile", "quick", "--simulation-tournaments", "5"], "simulation_tournaments: must be a whole number"),
    (["build", "--profile", "quick", "--direct-match-tournaments", "5"], "direct_match_tournaments: must be 0"),
    (["build", "--profile", "quick", "--players", "7"], "players: must be a whole number from 2 to 5"),
    (["site", "--profile", "nope"], "profile: unknown profile"),
    (["site", "--profile", "gs08", "--warehouse", "/nonexistent/w.duckdb"], "build it first"),
    (["equity", "--model", "harville", "--stacks", "1", "2", "--payouts", "0", "0"], "--payouts: must pay a positive"),
    # negative numbers in exponent or infinity form are values, so their rule is named (argparse alone
    # would take them for options and say "expected one argument")
    (["equity", "--model", "harville", "--stacks", "10", "-1e3", "--payouts", "1"], "--stacks: every value must be"),
    (["build", "--profile", "quick", "--gamma", "-1e-3"], "gamma: must be a finite number > 0"),
    (["build", "--profile", "quick", "--gamma", "-inf"], "gamma: must be a finite number > 0"),
    (["build", "--profile", "quick", "--payouts", "50", "-1e1"], "payouts: must not be negative"),
    (["state", "--profile", "quick", "--stacks", "2", "2", "2", "6", "-2e0"], "--stacks: '-2e0' is not a whole number"),
    (["build", "--profile", "quick", "--payouts", "nan"], "payouts: must be finite numbers"),
    (["build", "--config", ""], "config: is empty"),
    (["state", "--config", "", "--stacks", "2", "2", "2", "2", "2"], "config: is empty"),
    (["simulate", "--profile", "quick", "--tournaments", "0"], "--tournaments: must be a whole number from 1 to 10^10"),
    (["simulate", "--profile", "quick", "--tournaments", str(10**10 + 1)], "--tournaments: must be a whole number"),
    (["simulate", "--profile", "quick", "--tournaments", str(10**10), "--hero", "BU"], "--hero: needs"),  # 10^10 taken
    (["simulate", "--profile", "quick", "--seed", "-5"], "--seed: must be from 0 to 10^12"),
    (["simulate", "--profile", "quick", "--model", "icm"], "--model: game 'quick' has the models harville, weitzman"),
    (["simulate", "--profile", "quick", "--hero", "BU"], "--hero: needs --model"),
    (["simulate", "--profile", "quick", "--model", "harville", "--hero", "UTG"],
     "--hero: a position of the 5-player start, one of HJ, CO, BU, SB, BB"),
    (["simulate", "--profile", "quick", "--stacks", "9", "1", "--model", "harville", "--hero", "BU"],
     "--hero: a position of the state 9 1, one of SB, BB"),
    (["simulate", "--profile", "quick", "--stacks", "4", "4"], "--stacks: stacks must sum to the game's units (10)"),
    (["simulate", "--profile", "nope"], "profile: unknown profile"),
    (["simulate", "--profile", "gs08", "--warehouse", "/nonexistent/w.duckdb"], "build it first"),
])
def test_bad_input_exits_2_with_message(capsys, argv, needle):
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert needle in err
    assert "Traceback" not in err


def test_stacks_of_any_smaller_layer_are_a_state_and_a_long_bad_value_is_shown_cut():
    from engine.config import profile
    from jamfold.common import UsageError, whole_stacks

    gs08 = profile("gs08")
    assert whole_stacks(["40", " 5 "], gs08) == [40, 5]  # a heads-up state of the 3-player game
    assert whole_stacks(["+1", "41", "3"], gs08) == [1, 41, 3]
    heads_up = profile("gs08", players=2, payouts=(70, 30))
    with pytest.raises(UsageError, match=r"has states of 2 players \(got 3 stacks\)"):
        whole_stacks(["1", "41", "3"], heads_up)
    with pytest.raises(UsageError, match="'abcdefghijklmnopqrst' is not a whole"):  # 20 characters: whole
        whole_stacks(["abcdefghijklmnopqrst", "1"], gs08)
    with pytest.raises(UsageError, match=r"'abcdefghijkl… \(21 characters\)' is not a whole"):
        whole_stacks(["abcdefghijklmnopqrstu", "1"], gs08)


def test_a_build_folder_is_made_with_its_parents_and_the_configs_live_under_dagsters_home(tmp_path, monkeypatch):
    from jamfold.common import configs_folder, usable_folder

    usable_folder("JAMFOLD_CACHE", tmp_path / "a" / "b" / "c")
    assert (tmp_path / "a" / "b" / "c").is_dir()
    usable_folder("JAMFOLD_CACHE", tmp_path / "a")  # there already: fine
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    assert configs_folder(tmp_path / "repo") == tmp_path / "home" / "configs"
    monkeypatch.delenv("DAGSTER_HOME")  # (`jamfold` run without ./lab)
    assert configs_folder(tmp_path / "repo") == tmp_path / "repo" / ".dagster_home" / "configs"


@pytest.mark.parametrize("variable", ["JAMFOLD_CACHE", "JAMFOLD_BUILD_DIR", "DAGSTER_HOME"])
def test_a_build_folder_that_cannot_be_made_is_refused_before_any_work(capsys, tmp_path, monkeypatch, variable):
    """A checkpoint, site or Dagster folder under a regular file: exit 2 naming the variable at the
    start, not a traceback in the asset that first writes there (the site: the last, hours later).
    No warehouse file is made."""
    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv(variable, str(tmp_path / "afile" / "sub"))
    warehouse = tmp_path / "w.duckdb"
    code, _, err = run(capsys, "build", "--profile", "quick", "--warehouse", str(warehouse))
    assert code == 2 and f"{variable}" in err and "cannot create the folder" in err, err
    assert "Traceback" not in err
    assert not warehouse.exists()  # the folders are checked before the warehouse is opened (and made)


@pytest.mark.parametrize("value", ["abc", "0", "-1", "99999999999999999999"])
def test_a_bad_numba_num_threads_exits_2_naming_it(capsys, monkeypatch, value):
    """numba itself warns about an unreadable value and fails with a traceback at 0 (and a huge one
    left a simulation allocating per-thread buffers): every command checks it first (here
    `progress`, which reads only a few files)."""
    monkeypatch.setenv("NUMBA_NUM_THREADS", value)
    code, _, err = run(capsys, "progress", "--profile", "quick")
    assert code == 2 and "NUMBA_NUM_THREADS: must be a whole number of threads from 1 to 4096" in err
    assert "Traceback" not in err


def test_a_blank_numba_num_threads_is_unset_for_numba_too():
    """numba reads the variable when first imported and prints a traceback for a blank one: the CLI
    removes it before any kernel loads, and so does ./lab for every command it runs."""
    import os
    import subprocess
    import sys

    from assets.paths import REPO_ROOT

    env = {**os.environ, "NUMBA_NUM_THREADS": " "}
    done = subprocess.run([sys.executable, "-m", "jamfold.cli", "equity", "--model", "harville", "--stacks", "1", "2",
                           "--payouts", "1"], capture_output=True, text=True, env=env, timeout=300, cwd=REPO_ROOT)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "NUMBA_NUM_THREADS" not in done.stderr
    shell = 'NUMBA_NUM_THREADS="  " ./lab jamfold equity --model harville --stacks 1 2 --payouts 1'
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr


def test_progress_refuses_a_checkpoint_folder_that_is_a_file_and_names_the_overrides(capsys, tmp_path, monkeypatch):
    """`progress` must not answer "nothing started" for a JAMFOLD_CACHE it cannot read, and the build
    command it suggests must name the same game, overrides included. An empty JAMFOLD_CACHE is unset,
    not the current folder."""
    from assets.paths import REPO_ROOT, cache_root

    (tmp_path / "afile").write_text("x")
    monkeypatch.setenv("JAMFOLD_CACHE", str(tmp_path / "afile"))
    code, _, err = run(capsys, "progress", "--profile", "quick")
    assert code == 2 and "JAMFOLD_CACHE (checkpoints):" in err and "is not a folder" in err
    monkeypatch.setenv("JAMFOLD_CACHE", "")
    assert cache_root() == REPO_ROOT / ".cache"
    monkeypatch.setenv("JAMFOLD_CACHE", str(tmp_path / "cache"))
    code, out, _ = run(capsys, "progress", "--profile", "quick", "--gamma", "0.002", "--payouts", "60", "40")
    assert code == 0 and "`./lab build --profile quick --payouts 60.0 40.0 --gamma 0.002` starts it" in out
    code, out, _ = run(capsys, "progress", "--profile", "quick", "--units", "200")  # (a build refuses it for memory)
    assert code == 0 and "`./lab build --profile quick --units 200` refuses this game here (units:" in out
    assert "starts it" not in out and "goes on" not in out


def test_a_second_build_of_the_same_game_is_refused_while_the_first_runs(capsys, tmp_path, monkeypatch):
    """One build of a game at a time (they would write the same checkpoints): the second says so in
    one line and exits 1, before any asset runs."""
    from assets.resume import game_key
    from engine.checkpoint import folder_lock
    from engine.config import profile

    monkeypatch.setenv("JAMFOLD_CACHE", str(tmp_path / "cache"))
    with folder_lock(tmp_path / "cache" / "builds" / game_key(profile("quick")), "a build of game 'quick'"):
        code, _, err = run(capsys, "build", "--profile", "quick", "--warehouse", str(tmp_path / "w.duckdb"))
        assert code == 1 and "a build of game 'quick', or of a game with its equilibrium (they share checkpoints), " \
            "is already running" in err and "Traceback" not in err, err
        # a game of other analysis fields shares the equilibrium's checkpoints, so its lock too
        code, _, err = run(capsys, "build", "--profile", "quick", "--simulation-seed", "7",
                           "--warehouse", str(tmp_path / "w.duckdb"))
        assert code == 1 and "is already running" in err and "Traceback" not in err, err


def test_the_definitions_load_whatever_game_the_environment_names(tmp_path):
    """`jamfold build --profile …` imports the Dagster definitions with a game of its own: a stale
    JAMFOLD_CONFIG (a file since moved) must not stop it there (`./lab dagster` checks it instead)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "JAMFOLD_CONFIG": str(tmp_path / "moved.toml"), "JAMFOLD_PROFILE": "bogus"}
    done = subprocess.run([sys.executable, "-c", "import assets.definitions"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_lab_dagster_refuses_a_bad_game_from_the_environment(tmp_path, monkeypatch, capsys):
    """`./lab dagster` checks JAMFOLD_PROFILE / JAMFOLD_CONFIG before starting the UI, which would
    otherwise fail only when an asset runs."""
    from jamfold.cli import check_dagster_env

    monkeypatch.setenv("JAMFOLD_PROFILE", "bogus")
    with pytest.raises(SystemExit) as info:
        check_dagster_env()
    assert info.value.code == 2 and "JAMFOLD_PROFILE: profile: unknown profile" in capsys.readouterr().err
    bad = tmp_path / "bad.toml"
    bad.write_text("players = 3\nunits = 10\nbogus = 1\n")
    monkeypatch.setenv("JAMFOLD_CONFIG", str(bad))
    with pytest.raises(SystemExit) as info:
        check_dagster_env()
    assert info.value.code == 2 and "JAMFOLD_CONFIG: bogus: is not a config field" in capsys.readouterr().err
    monkeypatch.setenv("JAMFOLD_CONFIG", "")
    monkeypatch.setenv("JAMFOLD_PROFILE", "gs08")
    check_dagster_env()  # a good one passes


def test_a_game_too_large_for_memory_is_refused_by_the_dagster_layer_assets_too(tmp_path, monkeypatch, capsys):
    """`jamfold build` refused such a game up front, but the Dagster UI's path would have started
    its solve and run out of memory hours later: `./lab dagster` now warns, and the first layer
    asset fails at once, naming the field and the numbers (here on a machine of 1 MiB)."""
    import dagster as dg

    import engine.memory
    from assets.resources import GameResource, WarehouseResource
    from assets.solve import LAYER_ASSETS
    from jamfold.cli import check_dagster_env

    monkeypatch.setattr(engine.memory, "physical_memory_gib", lambda: 2.0**-10)
    monkeypatch.setenv("JAMFOLD_PROFILE", "quick")
    check_dagster_env()  # the UI still starts (it serves the warehouse's tables) ...
    assert "warning: units: a 5-player game of 10 units has" in capsys.readouterr().err  # ... and says why solves will fail
    result = dg.materialize([LAYER_ASSETS[0]], raise_on_error=False, resources={
        "game": GameResource(profile="quick"), "warehouse": WarehouseResource(path=str(tmp_path / "lab.duckdb"))})
    assert not result.success
    failure = result.failure_data_for_node("solve_2p").user_failure_data
    assert "solve_2p: units: a 5-player game of 10 units has 126 5-player states" in failure.description
    assert not (tmp_path / "lab.duckdb").exists()  # refused before it touched anything


@pytest.mark.parametrize("benchmark, argv, needle", [
    ("bench_models", ["--repeat", "0"], "--repeat must be at least 1"),
    ("bench_models", ["--max-players", "1"], "--max-players must be 2 to 5"),
    ("bench_models", ["--units", "-1"], "--units must be from --max-players to 200"),
    ("bench_simulation", ["--players", "1"], "--players must be 2 to 5"),
    ("bench_simulation", ["--tournaments", "0"], "--tournaments must be at least 1"),
    ("bench_simulation", ["--seed", str(10**13)], "--seed must be from 0 to 10^12"),
    ("bench_simulation", ["--cache", "."], "--cache must name an npz file, not a folder (got .)"),
    ("bench_layer", ["--gamma", "inf"], "--gamma must be a finite number > 0"),
    ("bench_solver", ["--layer-gamma", "inf"], "--layer-gamma must be a finite number > 0"),
    ("bench_layer", ["--units", "100000"], "--units must be at most 200"),
])
def test_benchmarks_refuse_bad_arguments_before_any_work(benchmark, argv, needle, capsys):
    """The model and simulation benchmarks checked none of their flags (a zero repeat printed
    "inf ms", one player timed nothing); gamma = inf and huge games passed the solver's."""
    import importlib

    with pytest.raises(SystemExit) as exc:
        importlib.import_module(f"engine.{benchmark}").main(argv)
    assert exc.value.code == 2 and needle in capsys.readouterr().err


def test_a_warehouse_path_that_is_no_lab_warehouse_exits_2_naming_it(capsys, tmp_path):
    import duckdb

    text = tmp_path / "text.duckdb"
    text.write_text("hello\n")
    empty = tmp_path / "empty.duckdb"
    duckdb.connect(str(empty)).close()
    cases = [(text, "cannot be opened as a DuckDB file"), (tmp_path, "is a folder"),
             (empty, "without the lab's tables")]
    for path, needle in cases:
        for argv in (["state", "--stacks", "2", "2", "2", "2", "2"], ["site"], ["build", "--profile", "quick"]):
            if argv[0] == "build" and path == empty:
                continue  # a build writes its tables into an empty DuckDB file
            code, _, err = run(capsys, *argv, "--warehouse", str(path))
            assert code == 2, (argv, path, err)
            assert f"warehouse: {path}" in err and needle in err and "Traceback" not in err
    assert text.read_text() == "hello\n"  # left as it was


def test_showdown_pair_json_equals_table_row_function(capsys):
    code, out, _ = run(capsys, "showdown", "KK", "AA", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["hands"] == ["KK", "AA"]
    weight, p = rollout.pair_matchup(parse_class("KK"), parse_class("AA"))
    assert data["weight"] == weight and data["p_first_wins"] == pytest.approx(p, abs=0)
    assert 0.17 < data["p_first_wins"] < 0.19


def test_showdown_triple_json_and_human(capsys):
    """The JSON, and the lines a person reads: each finishing order's probability, and each hand's
    chance to be best (its two orders first)."""
    code, out, _ = run(capsys, "showdown", "AKs", "72o", "QQ", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["orders"] == ["abc", "acb", "bac", "bca", "cab", "cba"]
    assert sum(data["p"]) == pytest.approx(1, abs=1e-12) and data["weight"] > 0
    weight, p = rollout.triple_matchup(*(parse_class(h) for h in ("AKs", "72o", "QQ")))
    assert data["weight"] == weight and np.allclose(data["p"], p, atol=0, rtol=0)

    code, out, _ = run(capsys, "showdown", "AKs", "72o", "QQ")
    assert code == 0
    lines = out.splitlines()
    assert f"deal weight {weight:,} card-disjoint" in lines[1]
    orders = {line.split()[0]: float(line.split()[-1]) for line in lines[2:8]}
    assert orders == pytest.approx(dict(zip(rollout.ORDERS, p)), abs=5e-7)
    assert lines[2].split()[1:-1] == ["AKs", ">", "72o", ">", "QQ"]
    best = lines[8].removeprefix("  P(best): ").split(", ")
    assert [b.split()[0] for b in best] == ["AKs", "72o", "QQ"]
    assert [float(b.split()[1]) for b in best] == pytest.approx([p[0] + p[1], p[2] + p[3], p[4] + p[5]], abs=5e-7)


def test_rollout_writes_the_table_a_game_with_its_settings_reads(capsys, tmp_path, monkeypatch):
    """`jamfold rollout --samples N --seed S` keys its table as a game config with those settings
    names it, so a build of that game finds the table instead of making it again."""
    import duckdb

    from engine.config import profile, with_overrides

    monkeypatch.setenv("JAMFOLD_CACHE", str(tmp_path / "cache"))
    warehouse = tmp_path / "w.duckdb"
    code, out, err = run(capsys, "rollout", "--kind", "pairs", "--samples", "3", "--seed", "7",
                         "--warehouse", str(warehouse))
    assert code == 0, err
    game = with_overrides(profile("quick"), rollout_pairs="sampled", rollout_samples=3, rollout_seed=7)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        rows = con.execute("SELECT rollout, kind, boards_per_matchup, seed FROM rollout_tables").fetchall()
        pairs = con.execute("SELECT count(*) FROM rollout_pairs WHERE rollout = ?",
                            [game.rollout_id("pairs")]).fetchone()
    assert rows == [(game.rollout_id("pairs"), "pairs", 3, 7)] and pairs == (14_365,)
    assert f"(rollout '{game.rollout_id('pairs')}')" in out
    assert "| 14.4k/14.4k [" in err.split("\r")[-1]  # the bar, as it ends: every matchup done


def test_rollout_without_a_seed_samples_with_the_seed_a_game_takes_by_default():
    """So that `jamfold rollout --samples N` makes the table a game with `rollout_samples = N` and
    no seed of its own reads (the help says "default 1")."""
    from engine.config import GameConfig
    from jamfold.cli import build_parser

    assert build_parser().parse_args(["rollout", "--samples", "3"]).seed == GameConfig.rollout_seed == 1


def test_showdown_human(capsys):
    code, out, _ = run(capsys, "showdown", "AKs", "72o")
    assert code == 0 and "deal weight" in out
    _, p = rollout.pair_matchup(parse_class("AKs"), parse_class("72o"))
    wins = [line for line in out.splitlines() if " wins) " in line]
    assert [w.split()[0] for w in wins] == ["P(AKs", "P(72o"]
    assert [float(w.split()[-1]) for w in wins] == pytest.approx([p, 1 - p], abs=5e-7)
    assert len({w.rindex(" ") for w in wins}) == 1  # the two probabilities in one column
    code, out, _ = run(capsys, "showdown", "AA", "K2o")  # labels of other lengths, still one column
    wins = [line for line in out.splitlines() if " wins) " in line]
    assert len(wins) == 2 and len({w.rindex(" ") for w in wins}) == 1


def test_state_json_from_the_tiny_build(capsys, tiny_build, tmp_path, monkeypatch):
    code, out, err = run(capsys, "state", "--config", str(tiny_build["config"]), "--stacks", "3", "2", "1",
                         "--warehouse", str(tiny_build["warehouse"]), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["positions"] == ["BU", "SB", "BB"] and data["stacks"] == [3, 2, 1]
    assert sum(data["equilibrium"]) == pytest.approx(100) and sum(data["icm"]) == pytest.approx(100)
    assert np.allclose(np.sum(data["finishing"], axis=1), 1)
    assert 0 <= data["exploitability"] <= 1e-3
    assert data["nodes"] and all(len(node["jam"]) == 169 for node in data["nodes"])
    assert data["nodes"][0]["actor"] == "BU" and data["nodes"][0]["jammed_before"] == []
    code, out, _ = run(capsys, "state", "--config", str(tiny_build["config"]), "--stacks", "3", "2", "1",
                       "--warehouse", str(tiny_build["warehouse"]))
    assert code == 0 and "BU after nobody jammed" in out
    # a game the warehouse does not hold is named by the flag that chose it (it blamed --stacks)
    code, _, err = run(capsys, "state", "--profile", "gs08", "--stacks", "40", "5", "--warehouse",
                       str(tiny_build["warehouse"]))
    assert code == 2 and "--profile: game 'gs08' is not built in the warehouse (build it first: ./lab build " \
                         "--profile gs08); the warehouse holds tiny" in err
    # ... with the config file a build from flags wrote, where there is one (under DAGSTER_HOME)
    written = tmp_path / "dagster" / "configs" / "tiny.toml"
    written.parent.mkdir(parents=True)
    written.write_text(Path(tiny_build["config"]).read_text())
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster"))
    code, _, err = run(capsys, "state", "--profile", "gs08", "--stacks", "40", "5", "--warehouse",
                       str(tiny_build["warehouse"]))
    assert code == 2 and f"the warehouse holds tiny (--config {written})" in err


def test_state_prints_the_warehouses_numbers_and_icm_from_the_model(capsys, tiny_build):
    """`state`'s numbers, JSON and text alike: the equilibrium values, the finishing matrix (position ×
    place) and each node's jam probabilities as the warehouse holds them; ICM as Harville's model
    gives it for the stacks; the finishing probabilities paying back the values; each node's share
    of the 1,326 hands and its mixed classes as its jam probabilities say."""
    import re

    import duckdb

    from engine import equity_models
    from engine.cards import CLASS_COMBO_COUNT, range_string

    argv = ["state", "--config", str(tiny_build["config"]), "--stacks", "3", "2", "1",
            "--warehouse", str(tiny_build["warehouse"])]
    code, out, err = run(capsys, *argv, "--json")
    assert code == 0, err
    data = json.loads(out)
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        sid, = con.execute("SELECT state_id FROM states WHERE game = 'tiny' AND stacks = [3, 2, 1]").fetchone()
        values = [v for v, in con.execute("SELECT value FROM equilibrium_values WHERE game = 'tiny' AND players = 3 "
                                          "AND state_id = ? ORDER BY position", [sid]).fetchall()]
        fin = con.execute("SELECT position, place, probability FROM finishing WHERE game = 'tiny' AND players = 3 "
                          "AND state_id = ?", [sid]).fetchall()
        jams = [list(j) for j, in con.execute("SELECT jam FROM equilibrium_nodes WHERE game = 'tiny' AND players = 3 "
                                               "AND state_id = ? ORDER BY node", [sid]).fetchall()]
    assert data["equilibrium"] == pytest.approx(values, rel=1e-12)
    icm = equity_models.payoffs(equity_models.harville([3, 2, 1]), [70.0, 30.0, 0.0])
    assert data["icm"] == pytest.approx(icm.tolist(), rel=1e-9)
    assert len(fin) == 9 and all(data["finishing"][p][q - 1] == pytest.approx(prob, rel=1e-12) for p, q, prob in fin)
    np.testing.assert_allclose(np.array(data["finishing"]) @ [70.0, 30.0, 0.0], values, atol=1e-6)
    assert [list(node["jam"].values()) for node in data["nodes"]] == [pytest.approx(j, rel=1e-12) for j in jams]
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    lines = out.splitlines()
    for p, (pos, line) in enumerate(zip(["BU", "SB", "BB"], lines[2:5])):
        cells = line.split()
        assert cells[0] == pos and int(cells[1]) == [3, 2, 1][p]
        assert [float(x) for x in cells[2:]] == [pytest.approx(values[p], abs=5e-5), pytest.approx(icm[p], abs=5e-5),
                                                 *(pytest.approx(x, abs=5e-4) for x in data["finishing"][p])]
    nodes = [line for line in lines if " jammed: jams " in line]
    assert len(nodes) == len(jams)
    for line, jam in zip(nodes, jams):
        # jammed: the classes at probability 1 (to 0.001); mixed: those strictly between
        assert f" jams {range_string([c for c, p in enumerate(jam) if p >= 0.999]) or 'nothing'}" in line
        share = float(re.search(r"\(([\d.]+)% of hands\)$", line).group(1))
        assert share == pytest.approx(100 * float(np.dot(jam, CLASS_COMBO_COUNT)) / 1326, abs=0.05 + 1e-9)
        mixed = dict(re.findall(r"(\w+) (\d\.\d{3})", line.split("; mixes ")[1])) if "; mixes " in line else {}
        expected = {label: p for label, p in data["nodes"][nodes.index(line)]["jam"].items() if 0.001 < p < 0.999}
        assert mixed.keys() == expected.keys()
        assert all(float(mixed[label]) == pytest.approx(p, abs=5e-4) for label, p in expected.items())


def test_state_with_a_model_prints_its_payoffs_ranges_and_nemesis_gains_beside_the_equilibrium(capsys, tiny_build,
                                                                                               tmp_path):
    """`state --model`: the model's payoffs (Weitzman's as the equity model gives them for the stacks),
    its jam probabilities at every node (in the equilibrium's node order) and the nemesis's gains as
    the warehouse holds them, in JSON and text; a model the game lacks is refused before the
    warehouse is read; missing strategies or payoffs name what makes them, a missing ex post says so."""
    import re
    import shutil

    import duckdb

    from engine import equity_models
    from engine.cards import CLASS_COMBO_COUNT, range_string

    argv = ["state", "--config", str(tiny_build["config"]), "--stacks", "3", "2", "1"]
    code, out, err = run(capsys, *argv, "--warehouse", str(tiny_build["warehouse"]), "--model", "weitzman", "--json")
    assert code == 0, err
    data = json.loads(out)
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        sid, = con.execute("SELECT state_id FROM states WHERE game = 'tiny' AND stacks = [3, 2, 1]").fetchone()
        jams = [list(j) for j, in con.execute("SELECT jam FROM model_nodes WHERE game = 'tiny' AND model = 'weitzman' "
                                               "AND players = 3 AND state_id = ? ORDER BY node", [sid]).fetchall()]
        gains = [g for g, in con.execute("SELECT gain FROM nemesis_values WHERE game = 'tiny' AND profile = 'weitzman' "
                                          "AND players = 3 AND state_id = ? ORDER BY position", [sid]).fetchall()]
    weitzman = equity_models.payoffs(equity_models.weitzman([3, 2, 1]), [70.0, 30.0, 0.0])
    model = data["model"]
    assert model["name"] == "weitzman" and model["payoff"] == pytest.approx(weitzman.tolist(), rel=1e-9)
    assert len(gains) == 3 and model["nemesis_gain"] == pytest.approx(gains, rel=1e-12)
    assert len(jams) == len(data["nodes"]) >= 2
    assert [list(node["jam"].values()) for node in model["nodes"]] == [pytest.approx(j, rel=1e-12) for j in jams]
    assert [(m["actor"], m["jammed_before"]) for m in model["nodes"]] == [(e["actor"], e["jammed_before"])
                                                                          for e in data["nodes"]]
    assert jams != [list(node["jam"].values()) for node in data["nodes"]]  # (not the equilibrium's ranges again)
    code, out, err = run(capsys, *argv, "--warehouse", str(tiny_build["warehouse"]), "--model", "weitzman")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].split()[:7] == ["pos", "stack", "equilibrium", "$", "ICM", "$", "weitzman"]
    assert [float(line.split()[4]) for line in lines[2:5]] == [pytest.approx(x, abs=5e-5) for x in weitzman]
    assert re.findall(r"(BU|SB|BB) ([\d.]+) \$", next(line for line in lines if "a nemesis gains" in line)) == [
        (pos, f"{g:.4f}") for pos, g in zip(["BU", "SB", "BB"], gains)]
    model_lines = [line for line in lines if line.startswith("    weitzman: jams ")]
    assert len(model_lines) == len(jams)
    for line, jam in zip(model_lines, jams):  # each right under its node's equilibrium line
        assert lines[lines.index(line) - 1].split(" jammed: ")[0] in {f"{n['actor']} after "
                                                                      f"{', '.join(n['jammed_before']) or 'nobody'}"
                                                                      for n in data["nodes"]}
        assert f" jams {range_string([c for c, p in enumerate(jam) if p >= 0.999]) or 'nothing'}" in line
        share = float(re.search(r"\(([\d.]+)% of hands\)$", line).group(1))
        assert share == pytest.approx(100 * float(np.dot(jam, CLASS_COMBO_COUNT)) / 1326, abs=0.05 + 1e-9)
    # bad input, before the warehouse (which does not exist here) is opened
    code, _, err = run(capsys, *argv, "--warehouse", str(tmp_path / "none.duckdb"), "--model", "icm")
    assert code == 2 and "--model: game 'tiny' has the models harville, weitzman, roberts, FGS-1" in err
    assert "(got 'icm')" in err and not (tmp_path / "none.duckdb").exists()
    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM nemesis_values WHERE game = 'tiny' AND profile = 'weitzman'")
    code, out, err = run(capsys, *argv, "--warehouse", str(warehouse), "--model", "weitzman", "--json")
    assert code == 0 and json.loads(out)["model"]["nemesis_gain"] is None, err
    code, out, err = run(capsys, *argv, "--warehouse", str(warehouse), "--model", "weitzman")
    assert code == 0 and "weitzman's strategies ex post: not computed yet (materialize ex_post_models)" in out, err
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM model_sweeps WHERE game = 'tiny' AND model = 'weitzman' AND players = 3")
        con.execute("DELETE FROM fgs_values WHERE game = 'tiny' AND depth = 1")
    code, _, err = run(capsys, *argv, "--warehouse", str(warehouse), "--model", "weitzman")
    assert code == 2 and "--model: the warehouse holds no weitzman strategies of the 3-player layer of game 'tiny' " \
                         f"(its model sweep has not run: ./lab build --config {tiny_build['config']} without " \
                         "--skip-models)" in err
    code, _, err = run(capsys, *argv, "--warehouse", str(warehouse), "--model", "FGS-1")
    assert code == 2 and "--model: the FGS-1 payoffs of game 'tiny' are not computed yet " \
                         "(materialize fgs_strategies)" in err
    code, out, err = run(capsys, "state", "--config", str(tiny_build["config"]), "--stacks", "1", "5",
                         "--warehouse", str(tiny_build["warehouse"]), "--model", "FGS-1")
    assert code == 0 and "no decision in this hand" in out and " jams " not in out, err


def test_the_commands_that_read_a_game_take_the_flags_that_named_its_build(capsys, tiny_build, monkeypatch):
    """`state`, `simulate` and `site` take `build`'s game flags and name the game as it did: flags
    that change nothing name the game itself, flags that change a field another game (its name a
    digest of them), which this warehouse does not hold."""
    from engine.config import load_config, with_overrides

    monkeypatch.setenv("JAMFOLD_CACHE", str(tiny_build["root"] / "cache"))  # (simulate reads the packed game there)
    config, warehouse = str(tiny_build["config"]), str(tiny_build["warehouse"])
    code, out, err = run(capsys, "state", "--config", config, "--gamma", "0.001", "--players", "3", "--stacks", "3",
                         "2", "1", "--warehouse", warehouse, "--json")
    assert code == 0, err
    assert json.loads(out)["game"] == "tiny"
    code, out, err = run(capsys, "simulate", "--config", config, "--gamma", "0.001", "--tournaments", "2000",
                         "--warehouse", warehouse, "--json")
    assert code == 0, err
    assert json.loads(out)["game"] == "tiny"
    other = with_overrides(load_config(config), gamma=0.002).name
    for argv in (["state", "--stacks", "3", "2", "1"], ["simulate", "--tournaments", "1000"], ["site"]):
        code, _, err = run(capsys, *argv, "--config", config, "--gamma", "0.002", "--warehouse", warehouse)
        assert code == 2 and f"game '{other}' is not" in err and f"./lab build --config {config} --gamma 0.002" in err
    code, _, err = run(capsys, "simulate", "--config", config, "--units", "0", "--warehouse", warehouse)
    assert code == 2 and "units: must be a whole number" in err


def test_state_before_the_finishing_probabilities_says_so(capsys, tiny_build, tmp_path):
    """A layer solved but its `finishing_<n>p` not yet materialized (a long build under way):
    `jamfold state` says the probabilities are not computed, instead of printing zeros for them."""
    import shutil

    import duckdb

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    args = ("state", "--config", str(tiny_build["config"]), "--stacks", "3", "2", "1", "--warehouse", str(warehouse))
    code, out, _ = run(capsys, *args)
    assert code == 0 and " P1     P2     P3" in out and "not computed" not in out
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM finishing WHERE game = 'tiny'")
    code, out, _ = run(capsys, *args, "--json")
    assert code == 0 and json.loads(out)["finishing"] is None
    code, out, _ = run(capsys, *args)
    assert code == 0 and "finishing probabilities: not computed yet (materialize finishing_3p)" in out
    assert "P1" not in out and "BU after nobody jammed" in out
    with duckdb.connect(str(warehouse)) as con:  # a layer solved in the Dagster UI before the ICM tables
        con.execute("DELETE FROM model_payoffs WHERE game = 'tiny'")
    code, out, _ = run(capsys, *args, "--json")
    assert code == 0 and json.loads(out)["icm"] is None
    code, out, err = run(capsys, *args)
    assert code == 0 and "ICM payoffs: not computed yet (materialize equity_model_tables)" in out, err


def test_a_state_without_a_decision_says_why_and_output_cut_short_is_no_traceback(capsys, tiny_build, tmp_path):
    """A hand the blinds' all-ins decide prints its payoffs and says why no range follows; a reader
    that stops early (`| head -1`; here one that reads nothing, `| true`, gone before the command
    writes) gets no BrokenPipeError traceback."""
    import subprocess
    import sys

    args = ("state", "--config", str(tiny_build["config"]), "--warehouse", str(tiny_build["warehouse"]))
    code, out, _ = run(capsys, *args, "--stacks", "1", "5")
    assert code == 0 and "no decision in this hand: the blinds put players all in" in out
    shell = f"{sys.executable} -m jamfold.cli {' '.join(args)} --stacks 3 2 1 | true; echo status ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, timeout=300)
    assert done.stdout == "status 1\n" and "Traceback" not in done.stderr, done.stderr


def test_simulate_plays_the_warehouse_equilibrium_and_a_model_with_their_speed(capsys, tiny_build, monkeypatch):
    """`jamfold simulate` on the tiny build: everybody on the equilibrium agrees with the solved
    values within 4 standard errors; a model's hero at one seat gets one row, and from the start it
    replays the `simulations` asset's row by default; the speed is reported. The game packed by the
    build's `simulations` asset is read, not packed again."""
    import duckdb

    from assets.simulation import model_seed
    from engine.config import load_config

    monkeypatch.setenv("JAMFOLD_CACHE", str(tiny_build["root"] / "cache"))
    (pack,) = (tiny_build["root"] / "cache" / "packed").iterdir()
    base = ("simulate", "--config", str(tiny_build["config"]), "--warehouse", str(tiny_build["warehouse"]))
    code, out, err = run(capsys, *base, "--tournaments", "40000", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["positions"] == ["BU", "SB", "BB"] and data["stacks"] == [2, 2, 2] and data["model"] is None
    assert [r["position"] for r in data["rows"]] == ["BU", "SB", "BB"]
    assert sum(r["solved_value"] for r in data["rows"]) == pytest.approx(100)
    assert all(abs(r["z"]) < 4 and r["standard_error"] > 0 for r in data["rows"])
    for r in data["rows"]:  # z against the solved value in standard errors; ROI against the even share, $100 / 3
        assert r["z"] == pytest.approx((r["mean_payoff"] - r["solved_value"]) / r["standard_error"], rel=1e-9)
        assert r["roi_pct"] == pytest.approx((r["mean_payoff"] - 100 / 3) / (100 / 3) * 100, rel=1e-9, abs=1e-9)
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        solved = [v for v, in con.execute("""SELECT v.value FROM equilibrium_values v JOIN states s
                                             USING (game, players, state_id) WHERE v.game = 'tiny'
                                             AND s.stacks = [2, 2, 2] ORDER BY v.position""").fetchall()]
    assert [r["solved_value"] for r in data["rows"]] == pytest.approx(solved, rel=1e-12)
    assert np.allclose([sum(r["finishing"]) for r in data["rows"]], 1) and data["unfinished"] == 0
    assert data["tournaments_per_s"] > 0 and data["mean_hands"] > 1 and data["hand_events"]["decisions"] > 0
    shares = data["hand_events"]["heads_up"], data["hand_events"]["three_handed"]
    assert 0 < shares[0] < 1 and 0 < shares[1] < 1 and sum(shares) == pytest.approx(1)  # a 3-player game
    code, out, err = run(capsys, *base, "--tournaments", "20000", "--model", "harville", "--hero", "SB",
                         "--stacks", "3", "2", "1", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["model"] == "harville" and data["stacks"] == [3, 2, 1] and len(data["rows"]) == 1
    row = data["rows"][0]
    assert row["position"] == "SB" and abs(row["mean_payoff"] - row["solved_value"]) < 10 * row["standard_error"] + 1
    # from the start, with the build's tournaments and seed (the defaults), the hero plays the
    # `simulations` asset's tournaments again: its row to the bit; on another seed, an independent
    # stream that agrees with it within 4 standard errors of the difference
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        asset_mean, asset_se, asset_finishing, asset_seed = con.execute(
            "SELECT mean_payoff, standard_error, finishing, seed FROM simulation WHERE game = 'tiny' "
            "AND model = 'harville' AND hero_seat = 'SB'").fetchone()
    code, out, err = run(capsys, *base, "--model", "harville", "--hero", "SB", "--json")
    assert code == 0, err
    data = json.loads(out)
    row = data["rows"][0]
    assert data["replays_build"] and data["tournaments"] == 20000 and row["seed"] == asset_seed
    assert (row["mean_payoff"], row["standard_error"], row["finishing"]) == (asset_mean, asset_se, asset_finishing)
    code, out, err = run(capsys, *base, "--model", "harville", "--hero", "SB", "--seed", "1", "--json")
    assert code == 0, err
    data = json.loads(out)
    row = data["rows"][0]
    assert not data["replays_build"] and data["tournaments"] == 20000 and row["seed"] != asset_seed
    assert abs(row["mean_payoff"] - asset_mean) < 4 * np.hypot(row["standard_error"], asset_se)
    # the same count and seed given by hand are a replay too (what is played decides, not the flags)
    seed = model_seed(load_config(tiny_build["config"]), "harville")
    code, out, err = run(capsys, *base, "--model", "harville", "--hero", "SB", "--tournaments", "20000",
                         "--seed", str(seed), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["replays_build"] and data["seed"] == seed and data["rows"][0]["mean_payoff"] == asset_mean
    code, out, _ = run(capsys, *base, "--tournaments", "5000", "--model", "harville")
    assert code == 0 and "one player on harville's strategies" in out and "tournaments a second" in out
    assert "played again" not in out
    assert all(f"\n{pos:>4} " in out for pos in ("BU", "SB", "BB"))
    code, out, err = run(capsys, *base, "--model", "harville", "--hero", "SB")
    assert code == 0 and "20,000 tournaments per hero seat" in out and "`simulation` table, played again" in out
    assert f"the hand trees: read from {pack}; reading the strategies" in err
    assert list((tiny_build["root"] / "cache" / "packed").iterdir()) == [pack]
    # a cache it cannot write (here a file): the same tournaments, the game packed and not kept
    monkeypatch.setenv("JAMFOLD_CACHE", str(pack))
    code, out, err = run(capsys, *base, "--model", "harville", "--hero", "SB", "--json")
    assert code == 0 and json.loads(out)["rows"][0]["mean_payoff"] == asset_mean, err


def test_simulate_names_what_the_warehouse_lacks(capsys, tiny_build, tmp_path):
    """A model whose sweep is not stored, or a layer not solved yet, is refused with exit status 2
    before any tournament is played."""
    import shutil

    import duckdb

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    base = ("simulate", "--config", str(tiny_build["config"]), "--warehouse", str(warehouse), "--tournaments", "1000")
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM model_sweeps WHERE game = 'tiny' AND model = 'weitzman'")
    code, _, err = run(capsys, *base, "--model", "weitzman")
    assert code == 2 and "--model: the warehouse holds no weitzman strategies of game 'tiny'" in err
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM equilibrium_values WHERE game = 'tiny' AND players = 3")
    code, _, err = run(capsys, *base)
    assert code == 2 and "has no 3-player layer solved yet (materialize solve_3p)" in err and "Traceback" not in err


def test_simulate_checks_the_warehouse_before_counting_the_games_states(capsys, tmp_path, monkeypatch):
    """A big game's states (63 million for 200 units, 8 s and 1.5 GB) are counted only once the
    warehouse holds the game: a missing warehouse is named first."""
    import engine.states

    def no_enumeration(*_):
        raise AssertionError("states enumerated before the warehouse was checked")

    monkeypatch.setattr(engine.states, "enumerate_states", no_enumeration)
    code, _, err = run(capsys, "simulate", "--units", "200", "--warehouse", str(tmp_path / "none.duckdb"))
    assert code == 2 and f"warehouse: no file at {tmp_path / 'none.duckdb'}" in err


def _record(level, message, kind=None, step="solve_3p", data=None):
    import logging

    record = logging.LogRecord("jamfold.build", level, __file__, 0, message, None, None)
    event = SimpleNamespace(step_key=step, event_type_value=kind, event_specific_data=data) if kind else None
    record.dagster_meta = {"dagster_event": event, "op_name": step, "orig_message": message}
    return record


def test_site_rebuilds_the_pages_from_the_warehouse_as_it_is(capsys, tiny_build, tmp_path, monkeypatch):
    """`jamfold site` builds a game's site from the warehouse without materializing anything: in the
    middle of a build (the 3-player layer not written yet) its pages say what is still to come; a
    game the warehouse does not hold is refused with exit status 2, naming the build command."""
    import shutil

    import duckdb

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    with duckdb.connect(str(warehouse)) as con:
        for table in ("equilibrium_values", "equilibrium_nodes", "finishing"):
            con.execute(f"DELETE FROM {table} WHERE game = 'tiny' AND players = 3")
    monkeypatch.setenv("JAMFOLD_BUILD_DIR", str(tmp_path / "build"))
    code, out, err = run(capsys, "site", "--config", str(tiny_build["config"]), "--warehouse", str(warehouse))
    assert code == 0, err
    site = tmp_path / "build" / "site"
    assert f"site of 'tiny' built from the warehouse as it is now: {site / 'index.html'}" in out
    assert "Not solved yet: start state, stacks 2, 2, 2 (3-player layer)." in (site / "push-fold.html").read_text()
    assert "Layers solved: 2 players." in (site / "equilibrium.html").read_text()
    assert "Layers compared so far: 2 players of 3." in (site / "models.html").read_text()
    code, _, err = run(capsys, "site", "--profile", "gs08", "--warehouse", str(warehouse))
    assert code == 2 and "--profile: game 'gs08' is not in the warehouse" in err
    assert "./lab build --profile gs08" in err and "Traceback" not in err
    (tmp_path / "a-file").write_text("")  # a site folder that cannot be made: refused by name (it was a traceback)
    monkeypatch.setenv("JAMFOLD_BUILD_DIR", str(tmp_path / "a-file"))
    code, _, err = run(capsys, "site", "--config", str(tiny_build["config"]), "--warehouse", str(warehouse))
    assert code == 2 and "JAMFOLD_BUILD_DIR (the site): cannot create the folder" in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["example.org/lab/", "ftp://example.org/lab/", "https://", "https:///lab/",
                                   "https://example.org/lab/?page=1", "https://example.org/lab/#top"])
def test_a_bad_site_url_is_refused_before_any_work(capsys, tmp_path, monkeypatch, value):
    """JAMFOLD_SITE_URL is read by the site, a build's last asset: `build`, `site` and `./lab
    dagster` refuse a value that is not an http(s) address with a host (mkdocs would fail on some,
    and write dead links for others) at once, naming the variable and the rule. No warehouse file
    is made."""
    from jamfold.cli import check_dagster_env

    monkeypatch.setenv("JAMFOLD_SITE_URL", value)
    warehouse = tmp_path / "w.duckdb"
    for command in ("build", "site"):
        code, _, err = run(capsys, command, "--profile", "quick", "--warehouse", str(warehouse))
        assert code == 2 and "JAMFOLD_SITE_URL" in err and "must be http:// or https://, a host" in err, err
        assert "Traceback" not in err
    assert not warehouse.exists()
    with pytest.raises(SystemExit) as info:
        check_dagster_env()
    assert info.value.code == 2 and "JAMFOLD_SITE_URL" in capsys.readouterr().err


def test_the_site_url_is_read_blank_as_none_and_as_a_folder(monkeypatch):
    from sitegen.build import site_url

    for blank in ("", "  "):
        monkeypatch.setenv("JAMFOLD_SITE_URL", blank)
        assert site_url() is None
    monkeypatch.delenv("JAMFOLD_SITE_URL")
    assert site_url() is None
    monkeypatch.setenv("JAMFOLD_SITE_URL", " https://example.org/lab ")
    assert site_url() == "https://example.org/lab/"
    monkeypatch.setenv("JAMFOLD_SITE_URL", "http://localhost:8000/")
    assert site_url() == "http://localhost:8000/"


def test_a_site_url_points_the_404_page_the_canonical_links_and_the_sitemap_there(capsys, tiny_build, tmp_path,
                                                                                  monkeypatch):
    """Served from a sub-path, the 404 page (shown at any depth, so its links are absolute) needs the
    site's address: with JAMFOLD_SITE_URL its links go under that path, the sitemap lists the pages
    and each page names its canonical address; the pages still link one another relatively (the
    site still works from disk). Without it the 404 page's links start at the server's root."""
    import re

    monkeypatch.setenv("JAMFOLD_BUILD_DIR", str(tmp_path / "build"))
    monkeypatch.setenv("JAMFOLD_SITE_URL", "https://example.org/lab")
    code, _, err = run(capsys, "site", "--config", str(tiny_build["config"]), "--warehouse",
                       str(tiny_build["warehouse"]))
    assert code == 0, err
    site = tmp_path / "build" / "site"
    links = re.findall(r'href="([^"]+\.html)"', (site / "404.html").read_text())
    assert "/lab/index.html" in links and "/lab/showdown.html" in links
    assert all(link.startswith("/lab/") for link in links), links
    assert "<loc>https://example.org/lab/showdown.html</loc>" in (site / "sitemap.xml").read_text()
    index = (site / "index.html").read_text()
    assert '<link rel="canonical" href="https://example.org/lab/index.html">' in index
    assert 'href="showdown.html"' in index
    monkeypatch.delenv("JAMFOLD_SITE_URL")
    code, _, err = run(capsys, "site", "--config", str(tiny_build["config"]), "--warehouse",
                       str(tiny_build["warehouse"]))
    assert code == 0, err
    assert "/index.html" in re.findall(r'href="([^"]+\.html)"', (site / "404.html").read_text())
    assert "<loc>" not in (site / "sitemap.xml").read_text()
    assert 'rel="canonical"' not in (site / "index.html").read_text()


def test_build_progress_counts_finished_assets_and_keeps_only_their_messages():
    """The build's logger: a bar of the assets done (with the one running), the assets' own
    INFO-and-above messages, none of Dagster's DEBUG framework events."""
    import io
    import logging

    from jamfold.progress import BuildProgress

    stream = io.StringIO()
    progress = BuildProgress(total=2, stream=stream, bar=True)
    progress.emit(_record(logging.DEBUG, 'Started execution of step "solve_3p".', "STEP_START"))
    progress.emit(_record(logging.INFO, "3-player layer, outer iteration 1: 946 states updated"))
    progress.emit(_record(logging.DEBUG, 'Finished execution of step "solve_3p".', "STEP_SUCCESS"))
    progress.emit(_record(logging.DEBUG, "Started", "STEP_START", step="site"))
    progress.emit(_record(logging.DEBUG, "check", "ASSET_CHECK_EVALUATION", step="site",
                          data=SimpleNamespace(passed=False, check_name="pages_exist", metadata={"missing": 2})))
    progress.emit(_record(logging.ERROR, 'Execution of step "site" failed.', "STEP_FAILURE", step="site",
                          data=SimpleNamespace(error=SimpleNamespace(cls_name="OSError", to_string=lambda: "OSError: disk full\n"))))
    assert progress.bar.n == 1 and progress.failed == ["site"]
    assert progress.bar.postfix == "site"  # the asset running, after the bar
    progress.finish()
    text = stream.getvalue()
    assert "solve_3p - 3-player layer, outer iteration 1: 946 states updated" in text
    assert "site - WARNING: asset check 'pages_exist' failed (missing = 2)" in text
    assert 'site - ERROR: Execution of step "site" failed.\nOSError: disk full' in text  # the error itself
    assert "Started execution" not in text and "Finished execution" not in text
    assert "assets: 1/2" in text  # the bar, drawn on the stream


def test_a_failed_check_with_a_remedy_gives_the_builds_last_line():
    """A blocking check that says what to do (its `remedy`: states held above gamma, values that
    cycled) is what the build's last line repeats, instead of a bare "run the same command again",
    which does not help a layer whose values cycled; a step's own error still comes first."""
    import io
    import logging

    from jamfold.progress import BuildProgress

    def check(remedy):
        meta = {"states_over": SimpleNamespace(value=8), "remedy": SimpleNamespace(value=remedy)}
        return _record(logging.DEBUG, "check", "ASSET_CHECK_EVALUATION",
                       data=SimpleNamespace(passed=False, check_name="exploitability_within_gamma", metadata=meta))

    progress = BuildProgress(total=3, stream=io.StringIO(), bar=False)
    progress.emit(_record(logging.DEBUG, "check", "ASSET_CHECK_EVALUATION",
                          data=SimpleNamespace(passed=True, check_name="values_sum_to_open_prizes", metadata={})))
    progress.emit(check("PI-CFR+ does not settle on this game"))
    assert progress.remedies == ["solve_3p's check exploitability_within_gamma failed: PI-CFR+ does not settle on "
                                 "this game"]


def _tiny_game(tmp_path, setenv):
    """The tiny game's config in ``tmp_path``, with its own build, cache and Dagster folders there
    (each variable passed to ``setenv``); returns the config's path."""
    from conftest import TINY_TOML

    config = tmp_path / "tiny.toml"
    config.write_text(TINY_TOML)
    for name, sub in (("JAMFOLD_BUILD_DIR", "build"), ("JAMFOLD_CACHE", "cache"), ("DAGSTER_HOME", "dagster")):
        (tmp_path / sub).mkdir()
        setenv(name, str(tmp_path / sub))
    return config


def test_build_log_off_a_terminal_has_no_bar_and_no_framework_events(capsys, tmp_path, monkeypatch):
    """`jamfold build` of a tiny game (equilibrium skipped) into a log: the assets' lines, no bar."""
    config = _tiny_game(tmp_path, monkeypatch.setenv)
    code, out, err = run(capsys, "build", "--config", str(config), "--skip-solve",
                         "--warehouse", str(tmp_path / "lab.duckdb"))
    assert code == 0, err
    assert "built 'tiny'" in out
    assert f"site: {tmp_path / 'build' / 'site' / 'index.html'}" in out  # where it was built, not build/ in the repo
    assert (tmp_path / "build" / "site" / "index.html").is_file()
    # the game's config, written under DAGSTER_HOME for `jamfold state --config` and `dagster dev`
    from engine.config import load_config

    written = tmp_path / "dagster" / "configs" / "tiny.toml"
    assert f"its config: {written}" in out
    assert load_config(written) == load_config(config)
    cfg = load_config(config)
    assert err.startswith(f"building game 'tiny': {cfg.players} players, {cfg.units} units, payouts "
                          f"{list(cfg.payouts)}\n(equilibrium skipped: --skip-solve)\n")
    assert "rollout_triples - " in err and "results_site - site built" in err
    assert "STEP_START" not in err and " - DEBUG - " not in err and "assets:" not in err
    assert "Telemetry" not in err and "Welcome to Dagster" not in err  # a new DAGSTER_HOME gets dagster.yaml
    from jamfold.instance import DAGSTER_YAML

    assert (tmp_path / "dagster" / "dagster.yaml").read_text() == DAGSTER_YAML


def test_a_warehouse_taken_during_the_build_is_named_in_one_line_not_a_traceback(capsys, tmp_path, monkeypatch):
    """Another program opens the warehouse after the build's own check at its start (a duckdb
    shell left open during a long solve): each asset that cannot write says who holds the file in
    one line, and the build's last line repeats it; no stack trace."""
    import re

    from assets.resources import WarehouseResource
    from warehouse import db

    config = _tiny_game(tmp_path, monkeypatch.setenv)
    warehouse = tmp_path / "lab.duckdb"

    def taken(self, read_only=False):  # what db.connect raises once its wait for the lock runs out
        raise db.WarehouseBusy(f"the warehouse {warehouse} is in use by duckdb (PID 4242); close that program "
                               "(e.g. a duckdb shell or dagster dev run) and try again")

    monkeypatch.setattr(WarehouseResource, "connect", taken)  # the assets' connections, not the check at the start
    code, out, err = run(capsys, "build", "--config", str(config), "--skip-solve", "--warehouse", str(warehouse))
    assert code == 1
    assert "built 'tiny'" not in out
    failed = re.findall(r'(\w+) - ERROR: Execution of step "(\w+)" failed: the warehouse (\S+) is in use by', err)
    assert failed and all(step == named and path == str(warehouse) for step, named, path in failed)
    assert "Traceback" not in err and "Stack Trace" not in err and "WarehouseBusy" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"jamfold: build failed: the warehouse {warehouse} is in use by duckdb (PID 4242)")
    assert last.endswith("run the same command again to resume")


def test_build_progress_names_a_busy_warehouse_once_and_keeps_other_tracebacks():
    """Dagster wraps an asset's error in its own: the busy warehouse is found down the chain of
    causes and printed alone; an error of any other kind keeps its traceback."""
    import io
    import logging

    from jamfold.progress import BuildProgress

    def failure(step, cls_name, message, cause=None):
        error = SimpleNamespace(cls_name=cls_name, message=message, cause=cause,
                                to_string=lambda: f"Stack Trace: …\n{message}")
        return _record(logging.ERROR, f'Execution of step "{step}" failed.', "STEP_FAILURE", step=step,
                       data=SimpleNamespace(error=error))

    busy = SimpleNamespace(cls_name="WarehouseBusy", cause=None,
                           message="warehouse.db.WarehouseBusy: the warehouse w.duckdb is in use by duckdb (PID 7)\n")
    stream = io.StringIO()
    progress = BuildProgress(total=3, stream=stream, bar=False)
    for step in ("rollout_pairs", "rollout_triples"):
        progress.emit(failure(step, "DagsterExecutionStepExecutionError", "Error occurred while executing op", busy))
    progress.emit(failure("site", "OSError", "OSError: disk full"))
    text = stream.getvalue()
    assert 'rollout_pairs - ERROR: Execution of step "rollout_pairs" failed: the warehouse w.duckdb is in use by ' \
           "duckdb (PID 7)\n" in text
    assert text.count("Stack Trace") == 1 and "Stack Trace: …\nOSError: disk full" in text
    assert progress.reasons == ["the warehouse w.duckdb is in use by duckdb (PID 7)"]
    assert progress.failed == ["rollout_pairs", "rollout_triples", "site"]


def test_a_game_whose_values_cycle_ends_its_build_on_the_checks_remedy(capsys, tmp_path, monkeypatch):
    """The tiny game with flat top prizes (50/50/0): its 3-player layer's values cycle, the solve
    stops with a warning, the layer's check fails, and the build's last line gives the check's
    remedy (not "run the same command again to resume"); built again, the layer is read back as it
    ended, with the same failure and no outer iteration more."""
    import duckdb

    config = _tiny_game(tmp_path, monkeypatch.setenv)
    warehouse = tmp_path / "lab.duckdb"
    args = ("build", "--config", str(config), "--payouts", "50", "50", "0", "--skip-models", "--warehouse",
            str(warehouse))
    code, _, err = run(capsys, *args)
    assert code == 1 and "solve_3p - WARNING: 3-player layer, outer iteration" in err
    assert "the values are cycling, not settling: 24 outer iterations in a row" in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("jamfold: build failed: solve_3p's check exploitability_within_gamma failed: PI-CFR+ "
                           "does not settle on this game") and last.endswith("; finished assets are kept")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        log = con.execute("SELECT count(*) FROM solve_log WHERE players = 3").fetchone()[0]
    code, _, err = run(capsys, *args)
    assert code == 1 and "3-player layer finished above gamma in an earlier run" in err
    assert "the values are cycling" not in err and err.strip().splitlines()[-1] == last
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM solve_log WHERE players = 3").fetchone()[0] == log
    # `jamfold progress` says so too (it had promised that the next build reopens the layer)
    code, out, _ = run(capsys, "progress", "--config", str(config), "--payouts", "50", "50", "0")
    assert code == 0 and f"3-player layer (10 states): stopped after {log} outer iterations, its values cycling " \
                         "instead of settling" in out and "reopens" not in out


def test_build_skip_models_publishes_the_equilibrium_first(capsys, tmp_path, monkeypatch):
    """`jamfold build --skip-models`: the equilibrium, its checks and its pages, and the ICM family
    compared with it, but no model sweep (for the `thesis` game: those pages after its solve, not
    after the 140-175 h of model sweeps). The same command without the flag then goes on with the
    sweeps, the solve read back, and the comparison page gains the FGS depths."""
    import duckdb

    config = _tiny_game(tmp_path, monkeypatch.setenv)
    args = ("build", "--config", str(config), "--warehouse", str(tmp_path / "lab.duckdb"))
    code, _, err = run(capsys, *args, "--skip-models", "--skip-solve")
    assert code == 2 and "not allowed with argument" in err
    code, out, err = run(capsys, *args, "--skip-models")
    assert code == 0, err
    assert "(model sweeps skipped: --skip-models" in err and "solve_3p - " in err and "model_strategies" not in err
    assert "deviation_statistics - harville: MAPD" in err and "not compared yet" in err and "FGS-1, FGS-2, FGS-3" in err
    # the equilibrium's control tournaments, after the last solve, and no model's
    assert err.index("simulations - equilibrium vs equilibrium: ROI") > err.rindex("solve_3p - ")
    assert "simulations - not simulated yet (their strategies need the model sweeps, left out): harville, " in err
    site = tmp_path / "build" / "site"
    assert (site / "solve-quality.html").is_file() and (site / "push-fold.html").is_file()
    models_page = (site / "models.html").read_text()
    assert "Not compared yet: FGS-1, FGS-2, FGS-3." in models_page and "No model's strategy has been solved yet" in models_page
    assert "fgs-depth" not in models_page and 'href="models.html"' in (site / "index.html").read_text()
    assert not (site / "model-ranges.html").exists() and not (site / "ex-post.html").exists()
    sim_page = (site / "simulation.html").read_text()
    assert 'href="simulation.html"' in (site / "index.html").read_text() and "The control against the solved" in sim_page
    assert "Not simulated yet: harville, weitzman, roberts, FGS-1, FGS-2, FGS-3." in sim_page
    assert "sim-fgs-depth" not in sim_page and "Direct matches against Harville" not in sim_page

    def count(table: str, where: str = "TRUE") -> int:
        with duckdb.connect(str(tmp_path / "lab.duckdb"), read_only=True) as con:
            return con.execute(f"SELECT count(*) FROM {table} WHERE game = 'tiny' AND {where}").fetchone()[0]

    assert count("equilibrium_values") and count("finishing") and count("nemesis_values")
    assert count("model_nodes") == count("fgs_values") == count("direct_matches") == 0
    assert count("simulation") == count("simulation", "model = 'equilibrium'") == 3
    with duckdb.connect(str(tmp_path / "lab.duckdb"), read_only=True) as con:
        compared = dict(con.execute("SELECT model, pairs FROM deviation_summary WHERE game = 'tiny' "
                                    "AND players IS NULL AND averaging = 'plain'").fetchall())
        pairs = con.execute("SELECT sum(players) FROM states WHERE game = 'tiny'").fetchone()[0]
    assert compared == {"harville": pairs, "weitzman": pairs, "roberts": pairs}
    code, out, err = run(capsys, *args)
    assert code == 0, err
    assert "solve_3p - 3-player layer: solved, and in the warehouse as its finished checkpoint holds it" in err
    assert "model_strategies - " in err
    models_page = (site / "models.html").read_text()
    assert "Not compared yet" not in models_page and "fgs-depth" in models_page
    sim_page = (site / "simulation.html").read_text()
    assert "Not simulated yet" not in sim_page and "sim-fgs-depth" in sim_page and "Direct matches against" in sim_page
    assert count("model_nodes") and count("simulation") == 3 * 7 and count("direct_matches")


def test_lab_and_the_build_write_one_dagster_yaml(tmp_path):
    """./lab and `jamfold build` write one instance config into DAGSTER_HOME: into a new one, and over
    the telemetry-only file that earlier versions wrote; a user's own config is left alone."""
    import subprocess

    import yaml

    from jamfold.instance import DAGSTER_YAML, OLD_DAGSTER_YAML, write_instance_config

    assert yaml.safe_load(DAGSTER_YAML)["compute_logs"]["class"] == "NoOpComputeLogManager"
    lines = LAB.read_text().splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("if ") and "dagster.yaml" in x)
    block = "\n".join(lines[start:lines.index("fi", start) + 1])
    for before, after in ((None, DAGSTER_YAML), (OLD_DAGSTER_YAML, DAGSTER_YAML), ("mine: 1\n", "mine: 1\n")):
        for writer in ("lab", "build"):
            home = tmp_path / f"{writer}-{before is None}-{after == DAGSTER_YAML}"
            home.mkdir()
            if before is not None:
                (home / "dagster.yaml").write_text(before)
            if writer == "lab":
                subprocess.run(["bash", "-c", block], env={"DAGSTER_HOME": str(home)}, check=True)
            else:
                write_instance_config(home)
            assert (home / "dagster.yaml").read_text() == after, (writer, before)


def test_build_progress_says_interrupted_without_the_run_failure():
    """Ctrl-C: the running step reads 'interrupted' (no traceback of Dagster's interrupt error) and
    the run's 'interrupted unexpectedly … treating as failure' line is left out."""
    import io
    import logging

    import dagster as dg

    from jamfold.progress import INTERRUPTED, BuildProgress

    stream = io.StringIO()
    progress = BuildProgress(total=3, stream=stream, bar=False)
    progress.emit(_record(logging.INFO, "4-player layer, outer iteration 7: 1,824/13,244 states done"))
    error = SimpleNamespace(cls_name=INTERRUPTED, to_string=lambda: "Traceback …\nDagsterExecutionInterruptedError\n")
    progress.emit(_record(logging.ERROR, 'Execution of step "solve_3p" failed.', "STEP_FAILURE",
                          data=SimpleNamespace(error=error)))
    progress.emit(_record(logging.ERROR, 'Execution of run for "jamfold_build" failed. Execution was interrupted '
                          "unexpectedly.", dg.DagsterEventType.RUN_FAILURE.value, step=None,
                          data=SimpleNamespace(error=None)))
    progress.finish()
    text = stream.getvalue()
    assert progress.interrupted and progress.failed == ["solve_3p"]
    assert "solve_3p - interrupted" in text
    assert "Traceback" not in text and "ERROR" not in text and "unexpectedly" not in text


def _sigint_a_tiny_build(folder, after_s: float, sig: int | None = None, heads_up: bool = False
                         ) -> tuple[int, str, str]:
    """Run `jamfold build` of the tiny game in ``folder`` as its own process and send it SIGINT (or
    ``sig``) ``after_s`` seconds after its first layer logs; returns its exit status, stdout and stderr.
    ``heads_up``: the tiny game with two players (``--players 2``), whose first layer starts about
    5 s sooner (no triple table to sample, no three-way tensors) and whose build runs about 15 s more."""
    import os
    import signal
    import subprocess
    import sys
    import time

    env = {**os.environ}
    config = _tiny_game(folder, env.__setitem__)
    log = folder / "err.log"
    with open(log, "w") as err:
        players = ["--players", "2"] if heads_up else []
        proc = subprocess.Popen([sys.executable, "-c", "from jamfold.cli import main; main()", "build", "--config",
                                 str(config), "--warehouse", str(folder / "lab.duckdb"), *players],
                                env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        deadline = time.monotonic() + 300
        while " solve_" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if after_s == 0:
            assert proc.poll() is None, log.read_text()  # still building when the first layer logs
        time.sleep(after_s)
        proc.send_signal(signal.SIGINT if sig is None else sig)
        out, _ = proc.communicate(timeout=300)
    return proc.returncode, out, log.read_text()


def test_an_interrupted_build_says_so_and_exits_130(tmp_path):
    """SIGINT (Ctrl-C) during a real `jamfold build`: exit status 130, one line saying the finished
    work is kept, no traceback (the compute-log watchers printed two before)."""
    returncode, out, text = _sigint_a_tiny_build(tmp_path, after_s=0.0, heads_up=True)
    assert returncode == 130, text
    assert "jamfold: interrupted; finished work is kept, run the same command again to resume" in text
    assert " - interrupted" in text and "Traceback" not in text and "build failed" not in text
    assert "interrupted unexpectedly" not in text  # Dagster's run failure line, said in the build's words
    assert "built 'tiny'" not in out


def test_a_build_ended_by_sigterm_says_so_and_exits_143(tmp_path):
    """SIGTERM (`kill`, `timeout`, a service manager) stops a build as Ctrl-C does, keeping the
    finished work, but exits 143 and says it was terminated: 128 + 15, the status of a process
    that signal ended, which scripts and service managers read (it had exited 130, as for Ctrl-C)."""
    import signal

    returncode, out, text = _sigint_a_tiny_build(tmp_path, after_s=0.0, sig=signal.SIGTERM, heads_up=True)
    assert returncode == 143, text
    assert "jamfold: terminated (SIGTERM); finished work is kept, run the same command again to resume" in text
    assert "Traceback" not in text and "build failed" not in text and "built 'tiny'" not in out


@pytest.mark.slow
def test_ctrl_c_at_random_moments_of_a_build_always_exits_130(tmp_path):
    """SIGINT at 12 seeded-random moments 0–6 s after a tiny build's first layer logs (the solves,
    the ex post checks, the model analyses, their DuckDB writes): each build says it was
    interrupted and exits 130, with no traceback and no failed step. Before the SIGINT watch, 4
    of 18 such builds said "build failed" with DuckDB's "Query interrupted"."""
    import random

    moments = random.Random(2026).sample(range(0, 6000, 50), 12)
    interrupted = 0
    for k, ms in enumerate(moments):
        folder = tmp_path / str(k)
        folder.mkdir()
        returncode, out, text = _sigint_a_tiny_build(folder, after_s=ms / 1000)
        if "built 'tiny'" in out:  # the build ended before the signal: nothing to interrupt
            continue
        interrupted += 1
        assert returncode == 130, f"SIGINT {ms} ms in:\n{text}"
        assert "Traceback" not in text and "ERROR" not in text and "build failed" not in text, text
    assert interrupted, "every build ended before its SIGINT: the test interrupted nothing"


def test_ctrl_c_while_dagster_closes_a_connection_prints_no_traceback(capsys, monkeypatch):
    """Dagster raises its interrupt wherever the main thread is; caught closing one of the instance's
    SQLite connections, SQLAlchemy's pool printed "Exception closing connection" and a traceback
    before the build said it was interrupted (a test run on a busy machine). The build drops those
    records and no others."""
    import logging

    from dagster._core.errors import DagsterExecutionInterruptedError

    from jamfold.progress import quiet_interrupted_closes

    pool = logging.getLogger("sqlalchemy.pool")
    monkeypatch.setattr(pool, "handlers", [])
    monkeypatch.setattr(pool, "propagate", True)
    quiet_interrupted_closes()
    quiet_interrupted_closes()  # once per process: a second build in it adds no second handler
    assert len(pool.handlers) == 1
    log = logging.getLogger("sqlalchemy.pool.impl.NullPool")  # the logger name of SQLAlchemy's pools
    for error in (DagsterExecutionInterruptedError(), KeyboardInterrupt()):
        try:
            raise error
        except BaseException:
            log.error("Exception closing connection %r", "<sqlite3.Connection>", exc_info=True)
    assert capsys.readouterr().err == ""
    try:
        raise OSError("disk I/O error")
    except OSError:
        log.error("Exception closing connection %r", "<sqlite3.Connection>", exc_info=True)
    err = capsys.readouterr().err
    assert "Exception closing connection" in err and "disk I/O error" in err and "Traceback" in err


def _lab_bench(*args: str, **env: str):
    """`./lab bench ARGS…` run as a user runs it (with ``env`` added to the environment)."""
    import subprocess

    return subprocess.run([str(LAB), "bench", *args], capture_output=True, text=True, env={**os.environ, **env})


def test_lab_bench_help_lists_every_benchmark():
    """`./lab bench --help` lists the benchmarks the script dispatches (it used to answer 'unknown
    benchmark'), and an unknown name still exits 2."""
    import re

    arms = re.findall(r"^ {13}(\w+)\)\s", LAB.read_text(), re.M)  # the bench case's arms
    assert set(arms) >= {"rollout", "models", "solver", "simulation", "layer", "all"}
    out = _lab_bench("--help")
    assert out.returncode == 0 and [line.split()[0] for line in out.stdout.splitlines() if line.startswith("  ")] == arms
    bad = _lab_bench("nope")
    assert bad.returncode == 2 and "unknown benchmark 'nope'" in bad.stderr
    # each name runs its benchmark as a program (here refusing a bad argument, before any work)
    refusals = {"rollout": (["nope"], "usage: ./lab bench rollout {evaluator|pairs|"),
                "models": (["--repeat", "0"], "--repeat must be at least 1"),
                "solver": (["--iterations", "0"], "--iterations must be at least 1"),
                "simulation": (["--tournaments", "0"], "--tournaments must be at least 1"),
                "layer": (["--players", "7"], "--players must be 2 to 5")}
    for name, (argv, needle) in refusals.items():
        bad = _lab_bench(name, *argv)
        assert bad.returncode == 2 and needle in bad.stderr, (name, bad.stderr)


def test_lab_bench_refuses_a_bad_numba_num_threads_before_numba_starts():
    """Every benchmark imports numba first, which fails with a traceback at NUMBA_NUM_THREADS=0, and
    the layer benchmark read an unreadable value with int(): `./lab bench` checks the variable
    before it runs any of them (exit 2, naming it and the rule); its help needs no check."""
    rule = "./lab bench: error: NUMBA_NUM_THREADS: must be a whole number of threads from 1 to 4096"
    for name, value in [("rollout", "0"), ("models", "0"), ("solver", "0"), ("simulation", "0"), ("layer", "0"),
                        ("all", "0"), ("layer", "abc"), ("solver", "99999")]:
        bad = _lab_bench(name, NUMBA_NUM_THREADS=value)
        assert bad.returncode == 2 and rule in bad.stderr and f"(got '{value}')" in bad.stderr, (name, bad.stderr)
        assert "Traceback" not in bad.stderr and not bad.stdout
    help_ = _lab_bench("--help", NUMBA_NUM_THREADS="0")
    assert help_.returncode == 0 and "layer " in help_.stdout


def test_a_benchmark_whose_reader_stops_early_ends_without_a_traceback():
    """`./lab bench models | head -2`: the reader stops before the benchmark's output ends. That
    ended in a BrokenPipeError traceback; now the benchmark exits 1 and prints nothing more. Here
    the reader has gone before the first line is written."""
    import subprocess

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([str(LAB), "bench", "models", "--units", "8", "--max-players", "3", "--repeat", "1"],
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write_end)
    assert done.returncode == 1 and done.stderr == "", done.stderr


@pytest.mark.parametrize("name", ["rollout", "models", "solver", "simulation", "layer"])
def test_every_benchmark_runs_under_the_benchmark_exit_rules(name, monkeypatch):
    """Each benchmark, run as a program, goes through :func:`engine.bench_cli.run_benchmark` (the
    line-buffered output, the quiet Ctrl-C and the quiet broken pipe), under its own name."""
    import runpy

    from engine import bench_cli

    calls = []
    monkeypatch.setattr(bench_cli, "run_benchmark", lambda main, prog: calls.append((main.__name__, prog)))
    runpy.run_path(str(LAB.parent / "engine" / f"bench_{name}.py"), run_name="__main__")  # (as `python -m` runs it)
    assert calls == [("main", f"./lab bench {name}")]


def test_run_benchmark_exits_with_the_status_and_quietly_when_stopped(monkeypatch, capsys):
    """The status a benchmark returns is its exit status; Ctrl-C gives 130 and one line naming the
    benchmark; a reader gone early gives 1, with standard output detached (nothing more is written)."""
    from engine import bench_cli

    def exit_status(main):
        with pytest.raises(SystemExit) as stop:
            bench_cli.run_benchmark(main, "./lab bench x")
        return stop.value.code

    assert exit_status(lambda: None) == 0 and exit_status(lambda: 2) == 2
    assert capsys.readouterr().err == ""

    def interrupted():
        raise KeyboardInterrupt

    assert exit_status(interrupted) == 130 and capsys.readouterr().err == "./lab bench x: interrupted\n"
    detached = []
    monkeypatch.setattr(bench_cli, "detach_stdout", lambda: detached.append(True))

    def reader_gone():
        raise BrokenPipeError

    assert exit_status(reader_gone) == 1 and detached == [True] and capsys.readouterr().err == ""


def test_a_benchmark_shows_each_line_at_once_and_ends_quietly_on_ctrl_c():
    """A benchmark piped into another program (`| tee bench.log`) held its lines back until it
    ended, and Ctrl-C gave a traceback: each line now comes when printed, and SIGINT gives exit
    status 130 and one line saying so. (The models benchmark, at 300 repeats, runs for a minute
    after its first line.)"""
    import signal
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # (as most shells have it)
    # The benchmark starts with SIGINT's default action, as from a terminal. Tests run in the
    # background (`./lab test &`, nohup) ignore SIGINT, a child inherits that, and Python then
    # installs no KeyboardInterrupt handler: the benchmark ran to its end with status 0. A handler
    # here is reset to the default in the child at its exec.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([str(LAB), "bench", "models", "--repeat", "300"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, env=env)
    finally:
        signal.signal(signal.SIGINT, before)
    try:
        first = proc.stdout.readline()
        assert first.startswith("warm-up (numba compile/cache load):"), first
        assert proc.poll() is None, "the benchmark had ended: its output came only at its end"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 130 and err == "./lab bench models: interrupted\n", err


def test_lab_reads_relative_paths_from_the_callers_folder(tmp_path):
    """`./lab` works in its own folder, but a relative --config, --warehouse or JAMFOLD_WAREHOUSE is the
    caller's: from another folder they were looked up in the checkout ('file not found', or a new
    warehouse written there)."""
    import os
    import subprocess

    (tmp_path / "seven.toml").write_text("players = 7\nunits = 20\npayouts = [50, 30, 20]\n")
    env = {k: v for k, v in os.environ.items() if k != "JAMFOLD_WAREHOUSE"}
    bad = subprocess.run([str(LAB), "jamfold", "state", "--config", "seven.toml", "--stacks", "4", "4", "4"],
                         cwd=tmp_path, env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "players: must be a whole number from 2 to 5" in bad.stderr, bad.stderr
    for how in (["--warehouse", "mine.duckdb"], []):
        missing = subprocess.run([str(LAB), "jamfold", "sql", "SELECT 1", *how], cwd=tmp_path, capture_output=True,
                                 text=True, env={**env, "JAMFOLD_WAREHOUSE": "mine.duckdb"})
        assert missing.returncode == 2 and f"no file at {tmp_path / 'mine.duckdb'}" in missing.stderr, missing.stderr
    assert not (LAB.parent / "mine.duckdb").exists()
    blank = subprocess.run([str(LAB), "jamfold", "sql", "SELECT 1"], cwd=tmp_path, capture_output=True, text=True,
                           env={**env, "JAMFOLD_WAREHOUSE": "  "})  # (blank: unset, the checkout's warehouse)
    assert str(tmp_path) not in blank.stderr
    assert blank.returncode == 0 or f"no file at {LAB.parent / 'warehouse' / 'lab.duckdb'}" in blank.stderr
    # `./lab help` by a relative path from elsewhere, and a benchmark run beside another checkout's engine/
    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / "__init__.py").write_text('raise SystemExit("the engine of the caller\'s folder")\n')
    helped = subprocess.run(["bash", os.path.relpath(LAB, tmp_path), "help"], cwd=tmp_path, capture_output=True,
                            text=True)
    assert helped.returncode == 0 and helped.stdout.startswith("One entry point"), helped.stderr
    bench = subprocess.run([str(LAB), "bench", "simulation", "--help"], cwd=tmp_path, capture_output=True, text=True)
    assert bench.returncode == 0 and "usage: ./lab bench simulation" in bench.stdout, bench.stderr


def test_lab_byte_compiles_its_environment_where_python_writes_no_bytecode():
    """Where PYTHONDONTWRITEBYTECODE is set, `./lab` compiles .venv once per lock file: otherwise
    every process (a worker, a `jamfold state`, a build) compiled dagster & co. from their sources
    again, about 7 s each on 2 cores. Run through `./lab test`, the environment it set up is ours."""
    import importlib.util
    import os
    import sys
    from pathlib import Path

    import dagster
    import pandas

    root = Path(__file__).resolve().parent.parent
    if not os.environ.get("PYTHONDONTWRITEBYTECODE") or Path(sys.prefix).resolve() != (root / ".venv").resolve():
        pytest.skip("Python writes its own bytecode here, or this is not ./lab's environment")
    stamp = root / ".venv" / ".lab-bytecode"
    assert stamp.exists() and stamp.stat().st_mtime_ns >= (root / "uv.lock").stat().st_mtime_ns
    for module in (dagster, pandas):
        assert Path(importlib.util.cache_from_source(module.__file__)).exists(), module.__name__


def test_every_subcommand_and_option_explains_itself_in_help(capsys):
    """`jamfold COMMAND --help` starts with what the command does (`jamfold site --help` showed only
    its usage line), and every option and argument of every command has its own help text."""
    import argparse
    from jamfold.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert set(sub.choices) == {"equity", "showdown", "rollout", "state", "simulate", "site", "build", "progress",
                                "sql"}
    listed = {c.dest: c.help for c in sub._choices_actions}
    for name, parser in sub.choices.items():
        assert parser.description and parser.description.rstrip(".").lower() == listed[name].lower(), name
        silent = [a.option_strings or a.dest for a in parser._actions
                  if not isinstance(a, argparse._HelpAction) and not (a.help or "").strip()]
        assert silent == [], f"{name}: options without help {silent}"
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0
        out = capsys.readouterr().out
        assert listed[name].split()[0].capitalize() in out.split("\n\n")[1], name
        # the commands that read a built game list its flags under a heading that says they name it
        reads_a_build = name in {"state", "simulate", "site", "progress"}
        assert ("the game:\n  the flags its build took" in out) == reads_a_build, name


def test_only_a_ctrl_c_or_an_interrupted_query_ends_a_command_as_interrupted(monkeypatch, capsys):
    """A Ctrl-C, or DuckDB's "Query interrupted" (a Ctrl-C inside a query), ends a command as
    interrupted (exit 130); any other error keeps its traceback (a bug to report, not a one-line
    exit), an OSError too unless it is a full disk."""
    from jamfold import cli

    def command(message: str, kind: type) -> None:
        """The command line's command raises ``kind(message)``."""
        def run_it(args):
            raise kind(message)
        monkeypatch.setattr(cli._OneLineParser, "parse_args", lambda self, argv=None: SimpleNamespace(func=run_it))

    for message, kind in (("Query interrupted", RuntimeError), ("", KeyboardInterrupt)):
        command(message, kind)
        with pytest.raises(SystemExit) as exc:
            main(["showdown", "AA", "KK"])
        assert exc.value.code == 130
        assert capsys.readouterr().err == "jamfold: interrupted; finished work is kept\n"
    for message, kind in (("something else failed", RuntimeError), ("Query interrupted", ValueError),
                          ("a disk error that is no full disk", PermissionError)):
        command(message, kind)
        with pytest.raises(kind, match=message):
            main(["showdown", "AA", "KK"])


def _interrupt_first_write(monkeypatch, then_fail: bool) -> None:
    """Make the build's first table write receive a SIGINT the way a DuckDB query does: the signal
    lands while the query runs, Dagster's handler raises its interrupt error, and DuckDB swallows it
    to fail the query with "Query interrupted" (``then_fail``) or, with the query already done,
    drops it and goes on."""
    import signal

    from warehouse import db

    original = db.replace_rows
    calls = []

    def replace_rows(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            try:
                signal.raise_signal(signal.SIGINT)  # runs the handler in place now: Dagster's
            except BaseException:
                pass
            if then_fail:
                raise RuntimeError("Query interrupted")
        return original(*args, **kwargs)

    monkeypatch.setattr(db, "replace_rows", replace_rows)


@pytest.mark.parametrize("then_fail", [True, False], ids=["query-failed", "interrupt-dropped"])
def test_a_build_whose_interrupt_a_query_swallowed_still_stops_and_exits_130(capsys, tmp_path, monkeypatch, then_fail):
    """A SIGINT that DuckDB turned into a failed query ended the build with "build failed", a
    traceback and the other steps still running (4 of 18 Ctrl-Cs of a tiny build); one it dropped
    let the build finish and exit 0. Either way the build now stops at the next step and says it
    was interrupted."""
    config = _tiny_game(tmp_path, monkeypatch.setenv)
    _interrupt_first_write(monkeypatch, then_fail)
    code, out, err = run(capsys, "build", "--config", str(config), "--warehouse", str(tmp_path / "lab.duckdb"))
    assert code == 130, err
    assert "jamfold: interrupted; finished work is kept, run the same command again to resume" in err
    assert " - interrupted" in err
    assert "Traceback" not in err and "ERROR" not in err and "build failed" not in err, err
    assert "building pair table" not in err and " solve_" not in err, err  # stopped at the next step
    assert "built 'tiny'" not in out


def test_a_sigterm_as_the_run_closes_ends_the_build_as_terminated(capsys, tmp_path, monkeypatch):
    """After Dagster's run, its handlers gone, SIGTERM reaches Python's own SIGINT handler (where
    Dagster leaves it) and raises KeyboardInterrupt out of the build's watch: the build still says
    it was terminated and exits 143, as for a SIGTERM inside the run (it had said "interrupted", 130).
    The run is replaced by one that receives the signal as it closes."""
    import signal

    import dagster as dg

    config = _tiny_game(tmp_path, monkeypatch.setenv)

    class ClosingRun:
        def execute_in_process(self, **kwargs):
            signal.raise_signal(signal.SIGTERM)  # (Python's handler raises KeyboardInterrupt here)
            raise AssertionError("the signal was not raised")

    monkeypatch.setattr(dg.Definitions, "resolve_job_def", lambda self, name: ClosingRun())
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        code, out, err = run(capsys, "build", "--config", str(config), "--warehouse", str(tmp_path / "lab.duckdb"))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert code == 143, err
    assert "jamfold: terminated (SIGTERM); finished work is kept, run the same command again to resume" in err
    assert "Traceback" not in err and "built 'tiny'" not in out


def test_an_interrupt_a_finalizer_drops_after_a_sigint_is_not_printed(monkeypatch):
    """Dagster raises its interrupt wherever the main thread is; landed in a finalizer (llvmlite's, of
    a numba object), Python dropped it and printed its traceback under the build's "interrupted"
    line (a test run on a busy machine). Within the SIGINT watch, an interrupt dropped after a
    SIGINT goes unprinted; one dropped before any SIGINT, and every ordinary exception, go to the
    hook as before, and the hook is put back after."""
    import signal
    import sys

    from dagster._core.errors import DagsterExecutionInterruptedError

    from jamfold.interrupts import SigintWatch

    class Dropping:
        def __init__(self, error: BaseException) -> None:
            self.error = error

        def __del__(self) -> None:
            raise self.error

    seen = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(repr(unraisable.exc_value)))
    before = sys.unraisablehook
    previous = signal.signal(signal.SIGINT, lambda *_: None)  # (Dagster's handler raises; this one does nothing)
    try:
        with SigintWatch() as watch:
            Dropping(KeyboardInterrupt("before the signal"))
            signal.raise_signal(signal.SIGINT)
            Dropping(DagsterExecutionInterruptedError("the build's interrupt"))
            Dropping(KeyboardInterrupt("another"))
            Dropping(ValueError("a real error"))
        assert watch.received
    finally:
        signal.signal(signal.SIGINT, previous)
    assert seen == ["KeyboardInterrupt('before the signal')", "ValueError('a real error')"]
    assert sys.unraisablehook is before


def test_the_build_watch_counts_a_sigterm_as_an_interrupt():
    """Dagster maps SIGTERM (``timeout``, ``kill``) to its SIGINT handler; the watch records it too,
    so a SIGTERM whose interrupt Python dropped still stops the build (a `timeout 150` build whose
    interrupt landed in a garbage-collection callback ran on for ten minutes)."""
    import signal

    from jamfold.interrupts import SigintWatch

    previous = signal.signal(signal.SIGTERM, lambda *_: None)  # (not the default: that would end the tests)
    try:
        with SigintWatch() as watch:
            assert not watch.poll()
            signal.raise_signal(signal.SIGTERM)
            assert watch.poll() and watch.received
    finally:
        signal.signal(signal.SIGTERM, previous)


@numba.njit
def _add_one_shielded(x):
    return x + 1


def test_a_sigint_during_a_numba_compile_is_raised_once_the_compile_is_done():
    """Ctrl-C landing while numba compiles (or loads from its cache) could free an LLVM object
    twice and kill the build with SIGSEGV (exit -11 instead of 130, seen twice in fresh clones).
    Within the build's compile shield, the interrupt is held until numba releases its compiler
    lock: the kernel is compiled whole and the interrupt raised after it (without the shield it
    lands inside the compile and no signature is compiled: checked once by hand, not here, since
    an interrupted compile leaves numba's state off for the tests after it). The SIGINT handler is
    the same afterwards. (The kernel is module level: a local one, once freed, leaves numba's weak
    proxies of it behind, which break later scans of the garbage collector's objects.)"""
    import signal

    import numba.core.event as ev

    from jamfold.interrupts import numba_compile_shield

    class SigintInCompile(ev.Listener):  # a Ctrl-C at the start of the compile proper, with numba's lock held
        def on_start(self, event) -> None:
            signal.raise_signal(signal.SIGINT)

        def on_end(self, event) -> None:
            pass

    before = signal.signal(signal.SIGINT, signal.default_int_handler)  # (earlier tests may leave another)
    sender = SigintInCompile()
    ev.register("numba:compile", sender)
    try:
        with numba_compile_shield():
            with pytest.raises(KeyboardInterrupt):
                _add_one_shielded(1)
            assert len(_add_one_shielded.signatures) == 1 and _add_one_shielded(2) == 3  # whole, then interrupted
            with pytest.raises(KeyboardInterrupt):  # the next compile is shielded the same way
                _add_one_shielded(1.5)
            assert len(_add_one_shielded.signatures) == 2 and _add_one_shielded(2.5) == 3.5
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        ev.unregister("numba:compile", sender)
        signal.signal(signal.SIGINT, before)


def test_a_sigint_held_through_a_compile_says_so_and_a_second_one_is_raised_at_once(capfd):
    """A cold compile holds numba's lock for half a minute or more: the first Ctrl-C held says why
    the build has not stopped yet, and a second one reaches the build's handler at once (inside the
    compile), with nothing held for later. Driven through the shield's own events, not a compile."""
    import signal

    from jamfold.interrupts import HELD_MESSAGE, CompileShield

    calls = []
    before = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        shield = CompileShield()
        shield.on_start(None)  # the compiler lock taken, twice (re-entrant)
        shield.on_start(None)
        signal.raise_signal(signal.SIGINT)
        assert calls == [] and HELD_MESSAGE in capfd.readouterr().err
        signal.raise_signal(signal.SIGINT)
        assert calls == [signal.SIGINT] and capfd.readouterr().err == ""
        shield.on_end(None)
        shield.on_end(None)
        shield.on_start(None)  # a compile after it is not shielded: the build is stopping
        signal.raise_signal(signal.SIGINT)
        shield.on_end(None)
        shield.release()
        assert calls == [signal.SIGINT] * 2  # nothing held back raised again
    finally:
        signal.signal(signal.SIGINT, before)
    # the one-press case: held, then raised once the lock is released
    calls.clear()
    before = signal.signal(signal.SIGINT, lambda signum, frame: calls.append(signum))
    try:
        shield = CompileShield()
        shield.on_start(None)
        signal.raise_signal(signal.SIGINT)
        assert calls == []
        shield.on_end(None)
        assert calls == [signal.SIGINT]
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_sigterm_during_a_compile_is_held_too_and_raised_as_a_sigterm(capfd):
    """Dagster turns SIGTERM into the same interrupt as Ctrl-C, so it could land inside numba's
    compile as well: the shield holds it too, says so, and raises it (not a SIGINT) once the lock is
    released, so the build says it was terminated; a second signal of either kind gets through at once."""
    import signal

    from jamfold.interrupts import HELD_SIGTERM_MESSAGE, CompileShield

    calls = []
    before = {sig: signal.signal(sig, lambda signum, frame: calls.append(signum))
              for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        shield = CompileShield()
        shield.on_start(None)
        signal.raise_signal(signal.SIGTERM)
        assert calls == [] and HELD_SIGTERM_MESSAGE in capfd.readouterr().err
        shield.on_end(None)
        assert calls == [signal.SIGTERM]
        shield = CompileShield()  # a Ctrl-C held, then a SIGTERM: at once, and the build is terminated
        shield.on_start(None)
        signal.raise_signal(signal.SIGINT)
        assert calls == [signal.SIGTERM]
        signal.raise_signal(signal.SIGTERM)
        assert calls == [signal.SIGTERM] * 2
        shield.on_end(None)
        assert calls == [signal.SIGTERM] * 2
        assert all(signal.getsignal(sig) is not shield._hold for sig in before)  # the handlers put back
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def test_a_build_writes_a_config_file_only_for_a_game_that_is_not_a_profile_as_it_stands(tmp_path):
    """`jamfold build` writes the game's fields under DAGSTER_HOME/configs for a --config file's game
    and a profile its flags changed; `--gamma 0.001` on `quick`, whose gamma it is, builds `quick`
    itself and had still written `configs/quick.toml`, a copy of the profile."""
    from jamfold.cli import build_parser
    from jamfold.cmd_build import needs_config_file
    from jamfold.common import config_from_args

    def needs(*argv: str) -> bool:
        args = build_parser().parse_args(["build", *argv])
        return needs_config_file(args, config_from_args(args))

    assert not needs("--profile", "quick")
    assert not needs("--profile", "quick", "--gamma", "0.001", "--players", "5")
    assert needs("--profile", "quick", "--gamma", "0.002")
    assert needs("--profile", "quick", "--gamma", "0.001", "--units", "21")
    from conftest import TINY_TOML

    config = tmp_path / "tiny.toml"
    config.write_text(TINY_TOML)
    assert needs("--config", str(config))


def test_sql_prints_a_query_on_the_warehouse_as_a_table_or_csv(capsys, tiny_build):
    """`jamfold sql` runs one read-only query on the warehouse: DuckDB's table, or every row as CSV
    (lists as DuckDB writes them, NULL empty), the same rows a DuckDB connection gets."""
    import csv
    import io

    import duckdb

    warehouse = str(tiny_build["warehouse"])
    query = """SELECT state_id, stacks, exploitability FROM states JOIN state_quality USING (game, players, state_id)
               WHERE game = 'tiny' ORDER BY players, state_id"""
    with duckdb.connect(warehouse, read_only=True) as con:
        expect = con.execute(query).fetchall()
    code, out, err = run(capsys, "sql", query, "--warehouse", warehouse)
    assert code == 0, err
    assert "│ state_id │" in out and f"│ {expect[0][1]} " in out and f"{len(expect)} rows" in out
    code, out, err = run(capsys, "sql", query, "--csv", "--warehouse", warehouse)
    assert code == 0, err
    table = list(csv.reader(io.StringIO(out)))
    assert table[0] == ["state_id", "stacks", "exploitability"] and len(table) == len(expect) + 1 > 10
    assert [row[:2] for row in table[1:]] == [[str(s), str(stacks)] for s, stacks, _ in expect]
    assert [float(row[2]) for row in table[1:]] == [e for _, _, e in expect]  # (to the bit)
    table_out = run(capsys, "sql", query, "--warehouse", warehouse)[1]
    for ending in (";", " ; -- the states", " /* the states */;;\n"):  # (they broke the CSV's subquery, and
        for flags, printed in ((["--csv"], out), ([], table_out)):  # "; -- …" the table too)
            code, again, err = run(capsys, "sql", query + ending, *flags, "--warehouse", warehouse)
            assert code == 0 and again == printed, (ending, flags, err)
    code, out, _ = run(capsys, "sql", "SELECT NULL AS nothing, [1.5, 2.0] AS xs, 'a,b' AS s, [0.1::DOUBLE + 0.2, NULL] "
                       "AS d, {'a': [1, 2]} AS st, true AS b", "--csv", "--warehouse", warehouse)
    assert code == 0 and out == ('nothing,xs,s,d,st,b\n,"[1.5, 2.0]","a,b","[0.30000000000000004, NULL]",'
                                 '"{\'a\': [1, 2]}",true\n')
    # a statement that is not a SELECT (PRAGMA, CALL, EXPLAIN) cannot be a subquery: its rows as they come
    pragma = "PRAGMA table_info('games')"
    with duckdb.connect(warehouse, read_only=True) as con:
        columns = con.execute(pragma).fetchall()
    code, out, err = run(capsys, "sql", pragma, "--csv", "--warehouse", warehouse)
    assert code == 0, err
    table = list(csv.reader(io.StringIO(out)))
    assert table[0][:3] == ["cid", "name", "type"] and [row[1] for row in table[1:]] == [c[1] for c in columns]


@pytest.mark.parametrize("query, message", [
    ("SELEC 1", 'QUERY: Parser Error: syntax error at or near "SELEC"'),
    ("DELETE FROM games", 'QUERY: Invalid Input Error: Cannot execute statement of type "DELETE"'),
    ("SELECT * FROM no_such_table", "QUERY: Catalog Error: Table with name no_such_table does not exist!"),
    ("   ", 'QUERY: give one SQL query, e.g. "SELECT * FROM games"'),
    ("-- only a comment", "QUERY: give one SQL query; this has 0 statements"),
    ("SELECT 1 AS a; SELECT 2 AS b", "QUERY: give one SQL query; this has 2 statements"),
    ("SELECT '\udcff' AS s", "QUERY: is not UTF-8 text"),  # (a byte the shell passed, as Python reads it)
    ("COPY games TO '{folder}/games.csv'", "QUERY: Permission Error: Cannot access file"),
    ("ATTACH '{folder}/other.duckdb' AS other", "QUERY: Permission Error: Cannot access file"),
])
@pytest.mark.parametrize("csv", [False, True])
def test_sql_names_a_bad_query_in_one_line_and_writes_nothing(capsys, tiny_build, tmp_path, query, message, csv):
    """A query DuckDB refuses gets one line and exit 2, and nothing is written: not the warehouse
    (opened read-only) nor any other file (no COPY … TO, ATTACH or EXPORT: a hard link to the
    warehouse, attached read-write, would have been written)."""
    import shutil

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    before = warehouse.read_bytes()
    code, out, err = run(capsys, "sql", query.format(folder=tmp_path), *(["--csv"] if csv else []),
                         "--warehouse", str(warehouse))
    assert code == 2 and out == "" and "Traceback" not in err
    assert err.startswith(f"jamfold: error: {message}") and err.count("\n") == 1, err
    assert warehouse.read_bytes() == before  # (read-only: the DELETE never ran)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lab.duckdb"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_output_to_a_full_device_or_a_closed_stdout_is_no_traceback():
    """A command whose output cannot be written (a full disk; `> /dev/full`) says so in one line,
    exit 1; one started with stdout closed (`>&-`) runs and prints nothing. Both printed
    tracebacks (OSError ENOSPC, and AttributeError on the closed stdout's flush)."""
    import subprocess
    import sys

    from assets.paths import REPO_ROOT

    command = f"{sys.executable} -m jamfold.cli equity --model harville --stacks 1 2 --payouts 1"
    full = subprocess.run(["bash", "-c", f"{command} > /dev/full"], capture_output=True, text=True, timeout=300,
                          cwd=REPO_ROOT)
    assert full.returncode == 1 and full.stderr == "jamfold: error: no space left on the device (writing the output?)\n"
    closed = subprocess.run(["bash", "-c", f"{command} >&-"], capture_output=True, text=True, timeout=300,
                            cwd=REPO_ROOT)
    assert closed.returncode == 0 and closed.stderr == "", closed.stderr
