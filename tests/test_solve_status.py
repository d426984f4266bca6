"""`jamfold progress`: where a game's solve stands, read from its checkpoints (engine/solve_status.py).

A real tiny solve is checkpointed and interrupted as a long build would be; the command must
report what the solve itself logged (outer iterations, the last one's figures, the states of the
outer iteration in progress), see a running build by its lock without taking it, and never
disturb the checkpoints it reads.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from pathlib import Path

import pytest

from engine.tournament import solve_layer

PAYOUTS = (70.0, 30.0)
GAMMA = 1e-3


class Interrupt(Exception):
    pass


def _stop_at(outer: int, blocks: int):
    seen = []

    def progress(event: dict) -> None:
        if event["event"] == "block_saved" and event["outer_iteration"] == outer:
            seen.append(event)
            if len(seen) == blocks:
                raise Interrupt
    return progress


def _progress(config, capsys) -> str:
    from jamfold.cli import main

    main(["progress", "--config", str(config)])
    return capsys.readouterr().out


def test_progress_reports_what_the_checkpoints_hold_and_who_is_running(tiny_tensors, tmp_path, monkeypatch, capsys):
    from assets.resume import game_key
    from engine.checkpoint import folder_lock
    from engine.config import load_config

    config = tmp_path / "tiny.toml"
    config.write_text("players = 3\nunits = 8\npayouts = [70, 30]\ngamma = 0.001\n")
    cache = tmp_path / "cache"
    monkeypatch.setenv("JAMFOLD_CACHE", str(cache))
    cfg = load_config(config)
    folder = cache / "solve" / game_key(cfg)

    out = _progress(config, capsys)
    assert "game 'tiny': 3 players, 8 units, payouts $70/30, gamma $0.001" in out
    assert "no running build found, and no checkpoints" in out and "`./lab build --config" in out
    assert not cache.exists()  # asking made no folder

    two = solve_layer(8, 2, PAYOUTS, GAMMA, tiny_tensors, {}, threads=1, checkpoint=folder)
    with pytest.raises(Interrupt):
        solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, {2: two.values}, threads=2, checkpoint=folder,
                    checkpoint_every=0.0, progress=_stop_at(1, 4))
    out = _progress(config, capsys)
    line2 = re.search(r"2-player layer \(7 states\): solved, (\d+) outer iterations; max exploitability \$([\d.e+-]+) "
                      r"\(gamma \$0.001\)", out)
    assert line2 and int(line2[1]) == len(two.log) and float(line2[2]) == pytest.approx(two.exploitability.max(),
                                                                                      abs=5e-7)
    assert ("3-player layer (21 states): first outer iteration in progress\n  outer iteration 1 (target $0.1, level 1 "
            "of 5, from $0.1 down to gamma by √10 steps): 4 of 21 states done at its last block checkpoint (") in out

    with pytest.raises(Interrupt):  # on to the third outer iteration, stopped after 5 of its states
        solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, {2: two.values}, threads=2, checkpoint=folder,
                    checkpoint_every=0.0, progress=_stop_at(3, 5))
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    at_third = _progress(config, capsys)
    assert "of 5, from $0.1 down to gamma by √10 steps): 5 of 21 states done at its last block checkpoint (" in at_third
    assert "saved " in at_third
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before  # read, nothing written
    kept_block = folder / "kept.block"  # one of them, for the reopened layer below
    kept_block.write_bytes(sorted(folder.glob("layer3.outer2.block*.npz"))[0].read_bytes())

    with folder_lock(cache / "builds" / game_key(cfg), "a build of game 'tiny'"):  # as `jamfold build` holds it
        assert f"running: a build of game 'tiny', or of a game with its equilibrium (process {os.getpid()})" \
            in _progress(config, capsys)
    if Path("/proc/locks").exists():  # (elsewhere the lock file's live process is taken as running)
        assert "no running build found" in _progress(config, capsys)  # the file stays, its lock is gone
    (cache / "builds" / game_key(cfg) / ".lock").write_bytes(b"\xff\xfe garbage")  # a lock file of nonsense
    assert "no running build found" in _progress(config, capsys)

    whole = solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, {2: two.values}, threads=2, checkpoint=folder)
    line3 = re.search(r"3-player layer \(21 states\): solved, (\d+) outer iterations", _progress(config, capsys))
    assert line3 and int(line3[1]) == len(whole.log) >= 3
    last = whole.log[1]  # the second outer iteration's log entry, as the checkpoint had it before the third

    def level(target: float) -> int:  # the place of a target among $0.1, $0.1/√10, … $0.001
        return 1 + round(2 * math.log10(0.1 / target))

    assert (f"3-player layer (21 states): 2 outer iterations done; the last at target ${last['target']:.2g} "
            f"(level {level(last['target'])} of 5): {last['states_updated']:,} states updated, max |ΔV| "
            f"${last['max_delta_v']:.4g}") in at_third
    third = whole.log[2]["target"]  # what the solve went on to, as progress predicted from the checkpoint
    assert f"  outer iteration 3 (target ${third:.2g}, level {level(third)} of 5, from $0.1 down" in at_third
    assert level(whole.log[-1]["target"]) == 5 and whole.log[-1]["target"] == pytest.approx(GAMMA)

    # a solved layer reopened by a build (to retry states left above gamma) writes blocks of its next
    # outer iteration before its layer file says it is unfinished again
    kept_block.rename(folder / f"layer3.outer{len(whole.log)}.block00000.npz")
    out = _progress(config, capsys)
    assert (f"3-player layer (21 states): solved above gamma in {len(whole.log)} outer iterations" in out
            and f"; reopened\n  outer iteration {len(whole.log) + 1}: 1 of 21 states done at its last block "
                f"checkpoint (" in out)

    # a damaged checkpoint is named with what to do, and the other layers are still reported
    layer2 = folder / "layer2.npz"
    layer2.write_bytes(layer2.read_bytes()[:200])
    out = _progress(config, capsys)
    assert f"2-player layer: checkpoint {layer2} cannot be read back" in out and "delete it to redo" in out
    assert "3-player layer (21 states): solved above gamma" in out


def test_progress_refuses_a_bad_game_like_build(capsys):
    from jamfold.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["progress", "--profile", "quick", "--units", "3"])
    assert exc.value.code == 2 and "units" in capsys.readouterr().err


def test_progress_follows_the_finishing_probabilities_and_the_ex_post_check(tiny_build, tmp_path, monkeypatch,
                                                                           capsys):
    """After its solve, each layer's two long steps: the equilibrium's finishing probabilities and
    its ex post check, reported from their work folders while they run (both interrupted here
    within the 3-player layer, as a killed build leaves them) and from their records once done,
    with the figures the assets wrote to the warehouse; a record saved before its layers' last
    solve is reported stale."""
    import shutil

    import dagster as dg
    import duckdb

    import assets.ex_post as ex_post
    import assets.finishing as finishing
    import engine.best_response as br
    import engine.profile_outcomes as po
    from assets.resources import GameResource, WarehouseResource
    from assets.resume import game_folder
    from engine.config import load_config
    from engine.states import n_states

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    cache = tmp_path / "cache"
    shutil.copytree(tiny_build["root"] / "cache" / "solve", cache / "solve")  # the solved layers, mtimes kept
    monkeypatch.setenv("JAMFOLD_CACHE", str(cache))
    monkeypatch.setenv("JAMFOLD_BUILD_DIR", str(tmp_path / "build"))
    resources = {"game": GameResource(config_file=str(tiny_build["config"])),
                 "warehouse": WarehouseResource(path=str(warehouse))}
    config = tiny_build["config"]
    m2, m3 = n_states(6, 2), n_states(6, 3)

    out = _progress(config, capsys)
    assert out.count("  finishing probabilities: not started") == 2 and out.count("  ex post check: not started") == 2
    # the first minutes of the 2-player layer's: its work folder made, no block saved yet
    started = game_folder(cache, "finishing", load_config(config), adopt=False) / "layer2.work-0"
    started.mkdir(parents=True)
    assert ("  finishing probabilities: started; no block checkpoint of it yet (one is saved every 5 minutes of "
            "work)\n") in _progress(config, capsys)
    started.rmdir()

    # the finishing probabilities killed two states into the 3-player layer's hand outcomes
    monkeypatch.setattr(po, "PROGRESS_EVERY_S", 0.0)
    armed = [True]

    def outcomes(hands, strategies, tensors, *, progress, checkpoint):
        def stop(event):
            if armed[0] and hands[0].n_players == 3 and event["event"] == "outcome_states" and event["done"] == 2:
                raise Interrupt
            progress(event)
        return po.outcome_probabilities(hands, strategies, tensors, progress=stop, checkpoint=checkpoint,
                                        checkpoint_every=0.0)

    monkeypatch.setattr(finishing, "outcome_probabilities", outcomes)
    assert not dg.materialize(finishing.FINISHING_ASSETS, resources=resources, raise_on_error=False).success
    out = _progress(config, capsys)
    assert re.search(rf"2-player layer .*\n  finishing probabilities: done, {m2 * 4:,} rows \(saved ", out)
    assert (f"3-player layer ({m3} states): solved" in out and f"  finishing probabilities: hand outcomes of 2 of "
            f"{m3} states done at its last block checkpoint (" in out)

    # the ex post check killed after one state of the 3-player layer's second nemesis round
    monkeypatch.setattr(br, "PROGRESS_EVERY_S", 0.0)
    rounds = []

    def nemesis(*args, progress, checkpoint):
        def stop(event):
            if event["event"] == "nemesis_round":
                rounds.append(event)
            if (armed[0] and event["players"] == 3 and event["event"] == "nemesis_states" and event["round"] == 2
                    and event["done"] == 1):
                raise Interrupt
            progress(event)
        return br.nemesis_layer(*args, progress=stop, checkpoint=checkpoint, checkpoint_every=0.0)

    monkeypatch.setattr(ex_post, "nemesis_layer", nemesis)
    assert not dg.materialize(ex_post.EX_POST_ASSETS, resources=resources, raise_on_error=False).success
    first = [e for e in rounds if e["players"] == 3]
    assert len(first) == 1  # (the tiny game's 3-player check takes more than one round)
    out = _progress(config, capsys)
    assert (f"  ex post check: 1 nemesis round done (the last: Bellman residual ${first[0]['bellman_residual']:.3g}, "
            f"{first[0]['wall_s']:,.0f} s); round 2: 1 of {m3} states done at its last block checkpoint (") in out

    armed[0] = False
    assert dg.materialize([*finishing.FINISHING_ASSETS, *ex_post.EX_POST_ASSETS], resources=resources).success
    out = _progress(config, capsys)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for n, m in ((2, m2), (3, m3)):
            rows = con.execute("SELECT count(*) FROM finishing WHERE game = 'tiny' AND players = ?", [n]).fetchone()[0]
            high, mean = con.execute("SELECT max(gain), avg(gain) FROM nemesis_values WHERE game = 'tiny' AND "
                                     "profile = 'equilibrium' AND players = ?", [n]).fetchone()
            done = [e for e in rounds if e["players"] == n and e["round"] > (1 if n == 3 else 0)]
            assert rows == m * n * n and f"finishing probabilities: done, {rows:,} rows (saved " in out
            assert (f"ex post check: done in {done[-1]['round']} nemesis rounds, largest gain ${high:.4g}, "
                    f"mean ${mean:.4g} (saved ") in out

    # the 3-player layer solved again after them (as a build reopens it): its steps are stale, the
    # 2-player layer's not
    layer3 = next((cache / "solve").glob("*/layer3.npz"))
    later = time.time() + 60  # (after every record saved above)
    os.utime(layer3, (later, later))
    out = _progress(config, capsys)
    assert out.count("before the layers' last solve; the next build redoes it") == 2
    assert out.count("finishing probabilities: done") == 1 and out.count("ex post check: done") == 1


def test_progress_follows_the_model_sweeps_their_ex_post_checks_and_simulations(tiny_build, tmp_path, monkeypatch,
                                                                               capsys):
    """Each model's sweep (done with its seconds, or its layer in progress to its last part
    checkpoint), its ex post check (done, or where the check stands in its work folder) and its
    simulated tournaments, through a sweep and a model ex post check killed midway and the rerun."""
    import shutil

    import dagster as dg
    import duckdb

    import assets.model_ex_post as model_ex_post
    import engine.model_strategies as ms
    from assets.fgs import fgs_strategies
    from assets.model_analysis import model_strategies
    from engine.config import model_names
    from assets.resources import GameResource, WarehouseResource
    from assets.resume import game_folder, game_key
    from assets.simulation import simulations
    from engine.config import load_config
    from engine.states import n_states
    from jamfold.status_report import duration

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    cache = tmp_path / "cache"
    shutil.copytree(tiny_build["root"] / "cache" / "solve", cache / "solve")  # the equilibrium, no model work
    monkeypatch.setenv("JAMFOLD_CACHE", str(cache))
    monkeypatch.setenv("JAMFOLD_BUILD_DIR", str(tmp_path / "build"))
    resources = {"game": GameResource(config_file=str(tiny_build["config"])),
                 "warehouse": WarehouseResource(path=str(warehouse))}
    config = tiny_build["config"]
    models = model_names(load_config(config).fgs_depth)
    assert models[:5] == ["harville", "weitzman", "roberts", "FGS-1", "FGS-2"]
    out = _progress(config, capsys)
    assert "model sweeps: none saved yet" in out
    folder = game_folder(cache, "models", load_config(config), adopt=False)
    folder.mkdir(parents=True)  # as the first sweep leaves it in its first minutes, no part saved yet
    assert "model sweeps: none saved yet" in _progress(config, capsys)
    assert "\nthe equilibrium's simulated tournaments (the control): not played yet with this game's tournaments and seed (it " \
           "follows the solves)\n" in out

    # FGS-2 killed after three parts of its 3-player layer
    monkeypatch.setattr(ms, "PART_EVERY_S", 0.0)
    original, parts = ms.save_sweep_part, []

    def killed_after_three(folder, label, n, states, *args):
        if (label, n) == ("FGS-2", 3) and len(parts) == 3:
            raise Interrupt
        parts.extend(states if (label, n) == ("FGS-2", 3) else [])
        return original(folder, label, n, states, *args)

    monkeypatch.setattr(ms, "save_sweep_part", killed_after_three)
    assert not dg.materialize([model_strategies, fgs_strategies], resources=resources, raise_on_error=False).success
    out = _progress(config, capsys)
    for model in models[:4]:  # (FGS-2 on, and the models after it, not started)
        assert re.search(rf"\n  {model}: sweep done \([\d.]+ s over 2 layers\); ex post check not started; "
                         rf"not simulated yet\n", out)
    assert (f"\n  FGS-2: sweep: 1 layer saved, the 3-player layer: {len(parts)} of {n_states(6, 3)} states done "
            f"at its last part checkpoint (") in out
    assert all(f"\n  {model}: not started\n" in out for model in models[5:])
    assert "next: no part checkpoint" not in out
    # when each sweep was saved last: what tells whether a model's ex post check and simulations are current
    from engine.solve_status import sweep_status
    from engine.sweep_checkpoint import layer_saved_at

    done = sweep_status(folder, "harville", [2, 3])
    assert done.in_progress is None and set(done.saved) == {2, 3}
    assert done.saved_at == max(layer_saved_at(folder, "harville", n) for n in (2, 3))
    going = sweep_status(folder, "FGS-2", [2, 3])
    assert (going.in_progress, list(going.saved), going.current.states) == (3, [2], len(parts))
    assert going.saved_at == layer_saved_at(folder, "FGS-2", 2)

    # the ex post check of the models killed in its third (roberts), after its hand outcomes
    monkeypatch.setattr(ms, "save_sweep_part", original)
    assert dg.materialize([model_strategies, fgs_strategies], resources=resources).success
    calls = []

    def killed_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise Interrupt
        return real_ex_post(*args, **kwargs)

    real_ex_post = model_ex_post.ex_post
    monkeypatch.setattr(model_ex_post, "ex_post", killed_third)
    assert not dg.materialize([model_ex_post.ex_post_models], resources=resources, raise_on_error=False).success
    out = _progress(config, capsys)
    assert out.count("ex post check done (saved ") == 2
    assert ("\n  roberts: sweep done" in out and "; ex post check: the 2-player layer's nemesis round 1, no block "
            "checkpoint of it yet (" in out)
    assert out.count("ex post check not started") == len(models) - 3

    monkeypatch.setattr(model_ex_post, "ex_post", real_ex_post)
    result = dg.materialize([model_ex_post.ex_post_models, simulations], resources=resources)
    assert result.success
    max_abs_z = next(c.metadata["max_abs_z"].value for c in result.get_asset_check_evaluations()
                     if c.asset_check_key.name == "equilibrium_matches_its_values")
    out = _progress(config, capsys)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for model in models:
            wall = con.execute("SELECT sum(wall_s) FROM model_sweeps WHERE game = 'tiny' AND model = ?",
                               [model]).fetchone()[0]
            line = re.search(rf"\n  {model}: sweep done \(([\d.]+) s over 2 layers\); ex post check done \(saved "
                             rf"[^)]*\); its tournaments simulated\n", out)
            assert line and float(line[1]) == pytest.approx(float(duration(wall)[:-2]), abs=1)
        z = max(abs(m - v) / e for m, v, e in con.execute(
            """SELECT s.mean_payoff, v.value, s.standard_error FROM simulation s JOIN states t ON t.game = s.game
               AND t.stacks = [2, 2, 2] JOIN equilibrium_values v ON v.game = s.game AND v.players = 3
               AND v.state_id = t.state_id AND v.position = s.hero_position
               WHERE s.game = 'tiny' AND s.model = 'equilibrium'""").fetchall())
    line = re.search(r"\nthe equilibrium's simulated tournaments \(the control\): played \(60,000 tournaments over 3 "
                     r"starting seats, largest \|z\| against the solved values ([\d.]+); saved ", out)
    # the check's largest |z|, over every seat of each run: at least the hero seats' of the table
    assert line and float(line[1]) == pytest.approx(max_abs_z, abs=0.006) and max_abs_z >= z
    later = time.time() + 60  # the 3-player layer solved again after the tournaments were played
    os.utime(next((cache / "solve").glob("*/layer3.npz")), (later, later))
    assert "the equilibrium's simulated tournaments (the control): stale (" in _progress(config, capsys)
    record = cache / "simulations" / game_key(load_config(config)) / "hero-equilibrium.json"
    saved = json.loads(record.read_text())
    saved["stamp"]["seed"] += 1  # played with another seed: the next build plays them again
    record.write_text(json.dumps(saved))
    assert "the equilibrium's simulated tournaments (the control): not played yet with" in _progress(config, capsys)


@pytest.mark.parametrize("mode", ["exact", "sampled"])
def test_progress_counts_the_triple_tables_chunks(tmp_path, monkeypatch, capsys, mode):
    """The first quarter hour of a `thesis` build (exact), or the first minute of a quick one
    (sampled): the triple table's chunks saved so far, counted from the checkpoints an interrupted
    build leaves (the rollout itself stood in for by zeros and cut into 9 chunks: what is counted
    is the build's own files)."""
    import numpy as np

    import engine.rollout as ro

    monkeypatch.setattr(ro, "EXACT_TRIPLE_CHUNK", 100_000)  # 9 chunks
    monkeypatch.setattr(ro, "SAMPLED_CHUNK_DRAWS", 4 * 100_000)  # 9 chunks of 4 boards a row
    monkeypatch.setattr(ro, "_exact_rows", lambda classes: (np.zeros(len(classes), np.int64),
                                                           np.zeros((len(classes), 6))))
    monkeypatch.setattr(ro, "_sampled_rows", lambda classes, *args: np.zeros((len(classes), 6)))
    settings = dict(samples=4, seed=3) if mode == "sampled" else {}
    folder = "sampled-4-seed3" if mode == "sampled" else "exact"
    config = tmp_path / f"{mode}.toml"
    config.write_text(f'name = "{mode}"\nplayers = 3\nunits = 8\npayouts = [70, 30]\ngamma = 0.001\n'
                      f'rollout_pairs = "exact"\nrollout_triples = "{mode}"\n'
                      + ("rollout_samples = 4\nrollout_seed = 3\n" if mode == "sampled" else ""))
    cache = tmp_path / "cache"
    monkeypatch.setenv("JAMFOLD_CACHE", str(cache))
    assert "triple table" not in _progress(config, capsys)  # nothing yet: the early answer

    def stop_after_three(done, total):
        if done == 3 * 100_000:
            raise Interrupt
    with pytest.raises(Interrupt):
        ro.build_triple_table(mode, progress=stop_after_three, checkpoint_dir=str(cache / "rollout" / folder),
                              **settings)
    out = _progress(config, capsys)
    assert "no running build found: `./lab build --config" in out
    assert f"{mode} triple table: 3 of 9 chunks computed (the last saved " in out
    assert "2-player layer (7 states): not started" in out

    ro.build_triple_table(mode, checkpoint_dir=str(cache / "rollout" / folder), **settings)
    assert f"{mode} triple table: all 9 chunks computed (the last saved " in _progress(config, capsys)


def test_progress_says_times_and_counts_as_they_read(tmp_path, monkeypatch):
    """How long ago a checkpoint was saved, in seconds, minutes or hours (never a negative age for a
    clock set back), and a sweep's layers saved counted in the plural from two."""
    from engine.config import load_config
    from engine.solve_status import BlocksKept, SweepStatus
    import jamfold.status_report as status_report
    from jamfold.status_report import duration, when

    now = time.time()
    assert when(now - 30).endswith(", 30 s ago") and when(now - 300).endswith(", 5 min ago")
    assert when(now - 3 * 3600).endswith(", 3.0 h ago") and when(now + 50).endswith(", 0 s ago")
    assert when(now - 300).startswith(time.strftime("%Y-%m-%d %H:", time.localtime(now - 300)))
    assert (duration(90), duration(600), duration(9000)) == ("90 s", "10.0 min", "2.50 h")

    config = tmp_path / "four.toml"
    config.write_text("players = 4\nunits = 8\npayouts = [50, 30, 20]\ngamma = 0.001\n")
    cfg = load_config(config)
    status_report.game_folder(tmp_path, "models", cfg, adopt=False).mkdir(parents=True)
    sweeps = {"harville": SweepStatus("harville", {2: 1.0, 3: 2.0}, now, 4, BlocksKept(5, 60.0, now)),
              "weitzman": SweepStatus("weitzman", {2: 1.0}, now, 3, BlocksKept(2, 60.0, now))}
    monkeypatch.setattr(status_report, "sweep_status", lambda folder, model, players: sweeps.get(
        model, SweepStatus(model, {}, None, 2, BlocksKept())))
    lines = list(status_report.model_lines(cfg, tmp_path, now))
    assert lines[1].startswith("  harville: sweep: 2 layers saved, the 4-player layer: 5 of ")
    assert lines[2].startswith("  weitzman: sweep: 1 layer saved, the 3-player layer: 2 of ")


def test_progress_loads_neither_dagster_nor_duckdb_nor_pandas(tmp_path):
    """`progress` is asked beside a running build, often: it reads files only, and starts in a
    second or two instead of the ten that importing Dagster, DuckDB and pandas took (assets.paths
    names the folders and units without them)."""
    import subprocess
    import sys

    from assets.resume import game_key
    from engine.config import game_config

    (tmp_path / "solve" / game_key(game_config("quick"))).mkdir(parents=True)  # a solve started: the full report
    code = ("import sys; from jamfold.cli import main; main(['progress', '--profile', 'quick']); "
            "print(sorted(m for m in ('dagster', 'duckdb', 'pandas') if m in sys.modules))")
    run = subprocess.run([sys.executable, "-c", code], env={**os.environ, "JAMFOLD_CACHE": str(tmp_path)},
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "2-player layer (9 states): not started" in run.stdout and "model sweeps: none saved yet" in run.stdout
    assert run.stdout.strip().splitlines()[-1] == "[]"


def test_lock_holder_reads_proc_locks_and_falls_back_to_the_named_live_process(tmp_path, monkeypatch):
    """The holder of a folder's lock is the process ``/proc/locks`` lists on the lock file's device
    and inode; where that listing shows another device number for the same inode (btrfs
    subvolumes), the process the lock file names; without ``/proc/locks`` (not Linux), the named
    process while it is alive. A line of any other kind of lock, or of another process on the
    same inode, is not the holder."""
    import subprocess
    import sys

    import engine.solve_status as solve_status
    from engine.solve_status import lock_holder

    me = os.getpid()
    (tmp_path / ".lock").write_text(str(me))
    info = (tmp_path / ".lock").stat()
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    listing = {"text": ""}

    class FakePath:  # engine.solve_status reads nothing but /proc/locks through Path(...)
        def __init__(self, path: str):
            assert path == "/proc/locks"

        def read_text(self) -> str:
            if listing["text"] is None:
                raise FileNotFoundError("/proc/locks")
            return listing["text"]

    monkeypatch.setattr(solve_status, "Path", FakePath)

    def holder(text):
        listing["text"] = text
        return lock_holder(tmp_path)

    other = me + 1
    assert holder(f"1: FLOCK  ADVISORY  WRITE {other} {device} 0 EOF\n") == other  # the same file: whoever holds it
    assert holder(f"1: FLOCK  ADVISORY  WRITE {me} ff:7f:{info.st_ino} 0 EOF\n") == me  # btrfs: the named process
    assert holder(f"1: FLOCK  ADVISORY  WRITE {other} ff:7f:{info.st_ino} 0 EOF\n") is None  # someone else's
    assert holder(f"1: POSIX  ADVISORY  WRITE {other} {device} 0 EOF\n") is None  # not a flock
    assert holder(f"1: FLOCK  ADVISORY  WRITE {other} ff:7f:{info.st_ino + 1} 0 EOF\n") is None
    assert holder("") is None
    assert holder(None) == me  # no /proc/locks: the named process, alive
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (tmp_path / ".lock").write_text(str(gone.pid))
    assert holder(None) is None  # … but not once it has ended
