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
    assert not list(folder.glob("*.tmp"))
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
