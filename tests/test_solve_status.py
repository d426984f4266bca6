"""`jamfold progress`: where a game's solve stands, read from its checkpoints (engine/solve_status.py).

A real tiny solve is checkpointed and interrupted as a long build would be; the command must
report what the solve itself logged (outer iterations, the last one's figures, the states of the
outer iteration in progress), see a running build by its lock without taking it, and never
disturb the checkpoints it reads.
"""

from __future__ import annotations

import os
import re
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
    assert "3-player layer (21 states): first outer iteration in progress\n  outer iteration 1: 4 of 21 states done at its last block checkpoint (" \
        in out

    with pytest.raises(Interrupt):  # on to the third outer iteration, stopped after 5 of its states
        solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, {2: two.values}, threads=2, checkpoint=folder,
                    checkpoint_every=0.0, progress=_stop_at(3, 5))
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    at_third = _progress(config, capsys)
    assert "  outer iteration 3: 5 of 21 states done at its last block checkpoint (" in at_third and "saved " in at_third
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before  # read, nothing written
    kept_block = folder / "kept.block"  # one of them, for the reopened layer below
    kept_block.write_bytes(sorted(folder.glob("layer3.outer2.block*.npz"))[0].read_bytes())

    with folder_lock(cache / "builds" / "tiny", "a build of game 'tiny'"):  # as `jamfold build` holds it
        assert f"running: a build of game 'tiny' (process {os.getpid()})" in _progress(config, capsys)
    if Path("/proc/locks").exists():  # (elsewhere the lock file's live process is taken as running)
        assert "no running build found" in _progress(config, capsys)  # the file stays, its lock is gone
    (cache / "builds" / "tiny" / ".lock").write_bytes(b"\xff\xfe garbage")  # a lock file of nonsense
    assert "no running build found" in _progress(config, capsys)

    whole = solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, {2: two.values}, threads=2, checkpoint=folder)
    line3 = re.search(r"3-player layer \(21 states\): solved, (\d+) outer iterations", _progress(config, capsys))
    assert line3 and int(line3[1]) == len(whole.log) >= 3
    last = whole.log[1]  # the second outer iteration's log entry, as the checkpoint had it before the third
    assert (f"3-player layer (21 states): 2 outer iterations done; the last at target ${last['target']:.2g}: "
            f"{last['states_updated']:,} states updated, max |ΔV| ${last['max_delta_v']:.4g}") in at_third

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
