"""assets.resume: finished units are kept only against the same stamp, and written whole."""

import numpy as np

from assets.resume import UnitCheckpoint


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


class _Clock:
    """A stand-in for time.perf_counter that moves only when told."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


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
