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
