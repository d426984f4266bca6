"""Model strategies and FGS (SPEC §7.1–7.2) checked against the path-enumeration reference hand evaluator.

For every state of a tiny game, the reference (:mod:`brute_hand`) rebuilds the utilities from the
hand's outcomes and the successor values, evaluates the sweep's strategy by listing every decision
path, and computes exact best responses. So a sweep must give: strategies within gamma of a best
response, hand values equal to the reference's root values, and FGS-d values equal to the hand
values under the previous depth's values.
"""

import numpy as np
import pytest

from brute_hand import CardModel, PathEvaluator, utilities_from_outcomes
from engine.hand import hand_tree
from engine.model_strategies import fgs_sweeps, model_values, profile_values, solve_sweep
from engine.states import state_index
from engine.layers import compile_layer

UNITS, PLAYERS, PAY, GAMMA = 7, 3, (50.0, 30.0, 20.0), 1e-3


@pytest.fixture(scope="module")
def game(tiny_showdown, tiny_tensors):
    stacks, layers = {}, {}
    for n in range(2, PLAYERS + 1):
        stacks[n], layers[n] = compile_layer(UNITS, n, PAY)
    return tiny_tensors, CardModel(tiny_showdown), stacks, layers


def reference(stacks_row, values, model):
    tree = hand_tree(tuple(int(x) for x in stacks_row), PAY)
    ev = PathEvaluator(tree, model)
    U = np.nan_to_num(utilities_from_outcomes(tree, ev.paths, values, state_index))
    return ev, U


@pytest.mark.parametrize("name", ["roberts", "weitzman"])
def test_sweep_strategies_are_gamma_best_responses_to_model_values(game, name):
    tensors, model, stacks, layers = game
    values = model_values(name, stacks, PAY)
    sweep = solve_sweep(name, layers, values, GAMMA, tensors, threads=2)
    for n in layers:
        assert sweep.exploitability[n].max() <= GAMMA
        for s in range(0, len(stacks[n]), 3):
            ev, U = reference(stacks[n][s], values, model)
            sigma = sweep.strategies[n][s]
            assert ev.best_response_gains(sigma, U).max() <= GAMMA * (1 + 1e-9)
            np.testing.assert_allclose(sweep.hand_values[n][s], ev.root_values(sigma, U), rtol=1e-10, atol=1e-10)
    # different models, different strategies somewhere
    other = solve_sweep("harville", layers, model_values("harville", stacks, PAY), GAMMA, tensors, threads=2)
    assert max(np.abs(a - b).max() for a, b in zip(other.strategies[3], sweep.strategies[3])) > 0.05


def test_fgs_values_follow_the_recursion(game):
    """vᵈ is the hand value under the strategies solved against vᵈ⁻¹; each sweep reports its seconds,
    hands its solvers on to the next depth only (the last keeps none), and :meth:`Sweep.release`
    drops what the warehouse has stored (about 4 GiB per sweep of the 45-unit 5-player game)."""
    import time

    tensors, model, stacks, layers = game
    harville = model_values("harville", stacks, PAY)
    started = time.perf_counter()
    sweeps, values = fgs_sweeps(layers, harville, 2, GAMMA, tensors, threads=2)
    took = time.perf_counter() - started
    assert [s.label for s in sweeps] == ["harville", "FGS-1", "FGS-2"]
    assert all(0 < s.wall_s for s in sweeps) and sum(s.wall_s for s in sweeps) <= took
    assert [bool(s.solvers) for s in sweeps] == [False, False, False]  # (FGS-2 is the last depth: none kept)
    assert len(values) == 3 and values[0] is harville
    for d in (1, 2):
        for n in layers:
            # vᵈ = value of each hand under the strategy solved against vᵈ⁻¹ (that of model FGS-(d−1))
            for s in range(0, len(stacks[n]), 2):
                ev, U = reference(stacks[n][s], values[d - 1], model)
                sigma = sweeps[d - 1].strategies[n][s]
                np.testing.assert_allclose(values[d][n][s], ev.root_values(sigma, U), rtol=1e-10, atol=1e-10)
            # the open prizes are handed out in every state
            np.testing.assert_allclose(values[d][n].sum(axis=1), sum(PAY[:n]), rtol=1e-12)
    # FGS moves away from Harville
    assert np.abs(values[1][3] - harville[3]).max() > 0.1
    sweeps[0].release()
    assert sweeps[0].strategies == {} and sweeps[0].order_probs == {} and set(sweeps[0].hand_values) == set(layers)


def test_profile_values_of_a_model_profile(game):
    tensors, model, stacks, layers = game
    sweep = solve_sweep("harville", layers, model_values("harville", stacks, PAY), GAMMA, tensors, threads=2)
    V = profile_values(layers, sweep.order_probs)
    for n in layers:
        np.testing.assert_allclose(V[n].sum(axis=1), sum(PAY[:n]), rtol=1e-9)
        # the exact values are a fixed point: every hand's value with successors valued by V is V
        for s in range(len(stacks[n])):
            ev, U = reference(stacks[n][s], V, model)
            np.testing.assert_allclose(ev.root_values(sweep.strategies[n][s], U), V[n][s], atol=1e-9)


def _all_sweeps(game, folder, progress):
    """The model sweeps in the analysis' order: Harville, the other ICM-family models from Harville's
    regrets, then FGS-1 … FGS-2 as a chain (as assets/model_analysis.py and assets/fgs.py run them)."""
    tensors, _, stacks, layers = game
    harville_values = model_values("harville", stacks, PAY)
    harville = solve_sweep("harville", layers, harville_values, GAMMA, tensors, threads=2, progress=progress,
                           checkpoint=folder, keep_solvers=True)
    others = [solve_sweep(m, layers, model_values(m, stacks, PAY), GAMMA, tensors, warm=harville.solvers, threads=2,
                          progress=progress, checkpoint=folder, keep_solvers=False) for m in ("weitzman", "roberts")]
    fgs, values = fgs_sweeps(layers, harville_values, 2, GAMMA, tensors, threads=2, progress=progress,
                             first=harville, checkpoint=folder)
    return [*fgs, *others], values


def _assert_same_sweeps(straight, straight_values, resumed, resumed_values) -> None:
    """Every table of two runs of the sweeps equal to the bit."""
    for a, b in zip(straight, resumed):
        assert a.label == b.label
        for n in a.strategies:
            np.testing.assert_array_equal(a.hand_values[n], b.hand_values[n])
            np.testing.assert_array_equal(a.iterations[n], b.iterations[n])
            np.testing.assert_array_equal(a.exploitability[n], b.exploitability[n])
            for x, y in zip(a.strategies[n], b.strategies[n]):
                np.testing.assert_array_equal(x, y)
            for x, y in zip(a.order_probs[n], b.order_probs[n]):
                np.testing.assert_array_equal(x, y)
    for va, vb in zip(straight_values, resumed_values):
        for n in va:
            np.testing.assert_array_equal(va[n], vb[n])


def test_interrupted_sweeps_resume_with_the_same_results(game, tmp_path, monkeypatch):
    """Killed while solving its 6th sweep layer (of 10), a rerun reads the 5 saved ones back and
    solves the rest from the same regrets: every table equals an uninterrupted run's to the bit.
    Solvers are kept on disk only while a later sweep warm-starts from them."""
    import engine.model_strategies as ms

    straight, straight_values = _all_sweeps(game, tmp_path / "straight", None)

    saves = []
    original = ms.save_sweep_layer

    def killed_after_five(*args, **kwargs):
        if len(saves) == 5:
            raise KeyboardInterrupt
        saves.append(args[1:3])
        return original(*args, **kwargs)

    monkeypatch.setattr(ms, "save_sweep_layer", killed_after_five)
    with pytest.raises(KeyboardInterrupt):
        _all_sweeps(game, tmp_path / "resumed", None)
    monkeypatch.setattr(ms, "save_sweep_layer", original)
    events = []
    resumed, resumed_values = _all_sweeps(game, tmp_path / "resumed", events.append)

    layers_done = [e for e in events if e["event"] == "sweep_layer"]
    assert [(e["label"], e["players"]) for e in layers_done if e["resumed"]] == saves
    assert sum(not e["resumed"] for e in layers_done) == 10 - 5
    _assert_same_sweeps(straight, straight_values, resumed, resumed_values)
    assert not list((tmp_path / "resumed").glob("*.solvers.npz"))  # FGS-2 done: no sweep warm-starts any more


def test_a_sweep_layer_interrupted_midway_resumes_from_its_parts(game, tmp_path, monkeypatch):
    """Killed inside a layer (FGS-1's 3-player one: its solvers are kept for FGS-2, so the parts hold
    them too), a rerun takes the states its part checkpoints hold as done, solves only the others
    and ends with every table, and FGS-2's warm start, equal to an uninterrupted run's to the bit."""
    import engine.model_strategies as ms
    from engine.sweep_checkpoint import part_paths

    straight, straight_values = _all_sweeps(game, tmp_path / "straight", None)
    monkeypatch.setattr(ms, "PART_EVERY_S", 0.0)  # a part after every state
    monkeypatch.setattr(ms, "PROGRESS_EVERY_S", 0.0)
    parts = []
    original = ms.save_sweep_part

    def killed_after_seven(folder, label, n, states, *args):
        if (label, n) == ("FGS-1", 3) and len(parts) == 7:
            raise KeyboardInterrupt
        path = original(folder, label, n, states, *args)
        if (label, n) == ("FGS-1", 3):
            parts.append((path, list(states)))
        return path

    monkeypatch.setattr(ms, "save_sweep_part", killed_after_seven)
    folder = tmp_path / "resumed"
    with pytest.raises(KeyboardInterrupt):
        _all_sweeps(game, folder, None)
    assert part_paths(folder, "FGS-1", 3) == [p for p, _ in parts]
    saved_states = [s for _, states in parts for s in states]
    assert len(saved_states) == 7

    solved = []
    real_solve = ms.HandSolver.solve

    def counting_solve(self, *args, **kwargs):
        solved.append(self.hand)
        return real_solve(self, *args, **kwargs)

    monkeypatch.setattr(ms.HandSolver, "solve", counting_solve)
    monkeypatch.setattr(ms, "save_sweep_part", original)
    # and a save that a SIGKILL cut short, by a process gone since: the rerun deletes it
    (folder / "FGS-1.layer3.solvers.npz.tmp999999999").write_bytes(b"PK half a file")
    events = []
    resumed, resumed_values = _all_sweeps(game, folder, events.append)

    _, _, stacks, layers = game
    assert [(e["label"], e["players"], e["done"]) for e in events if e["event"] == "sweep_resumed_states"] == \
        [("FGS-1", 3, 7)]
    fgs1 = [e for e in events if e["event"] == "sweep_states" and e["label"] == "FGS-1" and e["players"] == 3]
    assert fgs1 and all(7 < e["done"] < len(stacks[3]) for e in fgs1)
    # an estimate once a state started after the run's first one finished has finished, then at every event
    has = [("left_s" in e) for e in fgs1]
    assert has == sorted(has) and has[-1] and all(e.get("left_s", 0) >= 0 for e in fgs1)
    # solved again: FGS-1's 3-player states that no part holds, then FGS-2 (the rest is read back)
    rest = len(layers[3]) - 7
    assert len(solved) == rest + len(layers[2]) + len(layers[3])
    assert sorted(map(id, solved[:rest])) == sorted(id(h) for s, h in enumerate(layers[3]) if s not in saved_states)
    _assert_same_sweeps(straight, straight_values, resumed, resumed_values)
    assert not list(folder.glob("*.part*")) and not list(folder.glob("*.tmp*"))


def test_sweep_progress_lines():
    """The model assets' log lines for a sweep layer's progress: counts, time so far, time left."""
    from engine.solve_progress import duration, sweep_log_line

    assert [duration(x) for x in (45, 89.4, 90, 720, 5399, 5400, 12_240)] == \
        ["45 s", "89 s", "2 min", "12 min", "90 min", "1.5 h", "3.4 h"]
    event = {"event": "sweep_states", "label": "FGS-3", "players": 5, "done": 12_345, "states": 135_751,
             "wall_s": 2_400.0, "left_s": 26_000.0}
    assert sweep_log_line(event) == "FGS-3: 5-player layer: 12,345/135,751 states done, 40 min, about 7.2 h left"
    resumed = {"event": "sweep_resumed_states", "label": "harville", "players": 4, "done": 800, "states": 13_244}
    assert sweep_log_line(resumed) == ("harville: 4-player layer: 800/13,244 states read back from an earlier "
                                       "run's checkpoint")


def _live_solvers() -> int:
    import gc

    from engine.cfr import HandSolver
    gc.collect()
    return sum(isinstance(o, HandSolver) for o in gc.get_objects())


def test_sweeps_hold_one_layer_of_solvers_at_a_time(game, tmp_path):
    """In the analysis' order (Harville, Weitzman and Roberts from Harville's regrets, FGS-1 … FGS-2
    as a chain), no more solvers than the game has states are alive at any point, beyond the
    threads' in-flight ones: Weitzman's and Roberts' are dropped state by state, each FGS depth
    takes over the previous depth's. (Holding a second layer of them, as copies, would cost the
    45-unit 5-player game another 10 GiB per sweep.)"""
    _, _, stacks, layers = game
    states = sum(len(s) for s in stacks.values())
    base = _live_solvers()
    seen = []
    _all_sweeps(game, tmp_path, lambda event: seen.append(_live_solvers() - base))
    assert len(seen) == 10 and max(seen) <= states + 2


def test_sweeps_taking_over_solvers_match_copies(game):
    """A sweep that continues the previous sweep's solvers in place gives, to the bit, what a sweep
    warm-started from copies of them gives (strategies, values, iterations)."""
    tensors, _, stacks, layers = game
    harville = model_values("harville", stacks, PAY)
    first = solve_sweep("harville", layers, harville, GAMMA, tensors, threads=2)
    copied = solve_sweep("FGS-1", layers, first.hand_values, GAMMA, tensors, warm=first.solvers, threads=2)
    in_place = solve_sweep("FGS-1", layers, first.hand_values, GAMMA, tensors, warm=first.solvers, threads=2,
                           consume_warm=True)
    assert in_place.solvers[3][0] is first.solvers[3][0] and copied.solvers[3][0] is not first.solvers[3][0]
    for n in layers:
        np.testing.assert_array_equal(copied.iterations[n], in_place.iterations[n])
        np.testing.assert_array_equal(copied.hand_values[n], in_place.hand_values[n])
        for a, b in zip(copied.strategies[n], in_place.strategies[n]):
            np.testing.assert_array_equal(a, b)
    assert sum(int(v.sum()) for v in in_place.iterations.values()) > 0


def test_equilibrium_solvers_restore_only_what_a_warm_start_reads(game, tmp_path):
    """From a solve checkpoint, the warm-start solvers get the final regrets, predictions and clocks
    (as a full restore has them) but no certified profiles or margins, and a Harville sweep started
    from them equals one started from fully restored solvers, to the bit."""
    from engine.cfr import REGRET_ARRAYS, HandSolver
    from engine.checkpoint import load_layer
    from engine.model_strategies import equilibrium_solvers
    from engine.tournament import solve_layer

    tensors, _, stacks, layers = game
    lower = {}
    for n in layers:
        lower[n] = solve_layer(UNITS, n, PAY, GAMMA, tensors, dict(lower), threads=2, checkpoint=tmp_path).values
    light = equilibrium_solvers(layers, tensors, tmp_path)
    full = {n: [HandSolver(h, tensors) for h in hands] for n, hands in layers.items()}
    for n in layers:
        load_layer(tmp_path, n, full[n])
        assert any(s.solution is not None for s in full[n]) and any(s.margins is not None for s in full[n])
        for a, b in zip(light[n], full[n]):
            assert a.solution is None and a.margins is None and a.gains is None
            assert (a.iterations, a.regret_weight) == (b.iterations, b.regret_weight)
            for name in REGRET_ARRAYS:
                np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    harville = model_values("harville", stacks, PAY)
    one = solve_sweep("harville", layers, harville, GAMMA, tensors, warm=light, threads=2, consume_warm=True)
    two = solve_sweep("harville", layers, harville, GAMMA, tensors, warm=full, threads=2, consume_warm=True)
    for n in layers:
        np.testing.assert_array_equal(one.iterations[n], two.iterations[n])
        for a, b in zip(one.strategies[n], two.strategies[n]):
            np.testing.assert_array_equal(a, b)


def test_a_sweep_gives_the_same_results_in_any_order(game, monkeypatch):
    """A sweep hands out its states in :func:`~engine.solve_progress.estimable_loop`'s order (a few
    states of every tree first, for the time-left estimate); its results must not depend on that
    order: with the order reversed, every table equals the sweep's to the bit."""
    import engine.model_strategies as ms

    tensors, _, stacks, layers = game
    harville = model_values("harville", stacks, PAY)
    straight = solve_sweep("harville", layers, harville, GAMMA, tensors, threads=2)
    real = ms.estimable_loop
    orders = []

    def reversed_loop(*args, **kwargs):
        todo, clock = real(*args, **kwargs)
        orders.append(todo)
        return todo[::-1], clock

    monkeypatch.setattr(ms, "estimable_loop", reversed_loop)
    backwards = solve_sweep("harville", layers, harville, GAMMA, tensors, threads=2)
    assert [sorted(o) for o in orders] == [list(range(len(layers[n]))) for n in sorted(layers)]
    for n in layers:
        np.testing.assert_array_equal(straight.iterations[n], backwards.iterations[n])
        np.testing.assert_array_equal(straight.hand_values[n], backwards.hand_values[n])
        np.testing.assert_array_equal(straight.exploitability[n], backwards.exploitability[n])
        for a, b in zip(straight.strategies[n], backwards.strategies[n]):
            np.testing.assert_array_equal(a, b)


def _sweep_layer(hands, tensors, rng, with_solvers: bool) -> dict:
    """A layer dict as a sweep holds it, filled with random results (and solvers with random regrets)."""
    from engine.cfr import REGRET_ARRAYS, HandSolver

    m = len(hands)
    solvers = None
    if with_solvers:
        solvers = [HandSolver(h, tensors) for h in hands]
        for s in solvers:
            for name in REGRET_ARRAYS:
                getattr(s, name)[:] = rng.random(getattr(s, name).shape)
            s.iterations, s.regret_weight = int(rng.integers(1, 40)), float(rng.random())
    return {"values": rng.random((m, PLAYERS)), "exploitability": rng.random(m) * 1e-3,
            "iterations": rng.integers(1, 500, m), "wall_s": 12.5, "solvers": solvers,
            "strategies": [np.round(rng.random((len(h.node_actor), 169))) for h in hands],
            "order_probs": [rng.random((len(h.term_kind), 6)) for h in hands]}


def test_a_sweeps_layer_files_keep_its_results_and_their_solvers_to_the_bit(game, tmp_path):
    """What a sweep's checkpoint files give back (engine.sweep_checkpoint): the parts of a layer being
    solved, in order, with the layer's seconds at the last; the finished layer, deflated, its parts
    gone; the summary only once every layer is saved; and the kept solvers dropped per sweep."""
    import zipfile

    from engine.cfr import REGRET_ARRAYS, HandSolver
    from engine.sweep_checkpoint import (drop_solvers, layer_saved_at, load_sweep_layer, load_sweep_parts,
                                         part_paths, save_sweep_layer, save_sweep_part, saved_layer_wall_s,
                                         saved_sweep_summary, saved_sweep_values, sweep_saved)

    tensors, _, _, layers = game
    hands = layers[3]
    m = len(hands)
    rng = np.random.default_rng(11)
    layer = _sweep_layer(hands, tensors, rng, with_solvers=True)

    def empty_layer() -> dict:
        return {"values": np.zeros((m, PLAYERS)), "exploitability": np.zeros(m), "iterations": np.zeros(m, np.int64),
                "strategies": [None] * m, "order_probs": [None] * m}

    assert load_sweep_parts(tmp_path, "icm", 3, hands, empty_layer(), None) == ([], 0.0)
    first, second = [4, 0, 2], [1, 5]
    save_sweep_part(tmp_path, "icm", 3, first, layer, layer["solvers"], wall_s=3.0)
    save_sweep_part(tmp_path, "icm", 3, second, layer, layer["solvers"], wall_s=7.5)
    # read by a run that keeps no solvers (no later sweep warm-starts from this one): the results alone
    assert load_sweep_parts(tmp_path, "icm", 3, hands, empty_layer(), None) == (first + second, 7.5)
    resumed, solvers = empty_layer(), [HandSolver(h, tensors) for h in hands]
    done, wall_s = load_sweep_parts(tmp_path, "icm", 3, hands, resumed, solvers)
    assert done == first + second and wall_s == 7.5
    for s in done:
        assert np.array_equal(resumed["values"][s], layer["values"][s])
        assert resumed["exploitability"][s] == layer["exploitability"][s]
        assert resumed["iterations"][s] == layer["iterations"][s]
        assert np.array_equal(resumed["strategies"][s], layer["strategies"][s])
        assert np.array_equal(resumed["order_probs"][s], layer["order_probs"][s])
        assert all(np.array_equal(getattr(solvers[s], a), getattr(layer["solvers"][s], a)) for a in REGRET_ARRAYS)
    untouched = sorted(set(range(m)) - set(done))
    assert all(resumed["strategies"][s] is None for s in untouched) and not resumed["values"][untouched].any()
    with pytest.raises(ValueError, match="does not match this game"):
        load_sweep_parts(tmp_path, "icm", 3, hands[1:] + hands[:1], empty_layer(), None)

    assert layer_saved_at(tmp_path, "icm", 3) is None
    save_sweep_layer(tmp_path, "icm", 3, layer, keep_solvers=True)
    assert part_paths(tmp_path, "icm", 3) == []
    assert layer_saved_at(tmp_path, "icm", 3) == (tmp_path / "icm.layer3.npz").stat().st_mtime
    with zipfile.ZipFile(tmp_path / "icm.layer3.npz") as zf:  # (strategies of exact 0 and 1 deflate)
        assert {i.compress_type for i in zf.infolist()} == {zipfile.ZIP_DEFLATED}
    back = load_sweep_layer(tmp_path, "icm", 3, hands, tensors)
    for key in ("values", "exploitability", "iterations"):
        assert np.array_equal(back[key], layer[key]), key
    assert back["wall_s"] == saved_layer_wall_s(tmp_path, "icm", 3) == 12.5
    assert len(back["strategies"]) == len(back["order_probs"]) == m
    assert all(map(np.array_equal, back["strategies"], layer["strategies"]))
    assert all(map(np.array_equal, back["order_probs"], layer["order_probs"]))
    for s, t in zip(back["solvers"], layer["solvers"]):
        assert all(np.array_equal(getattr(s, a), getattr(t, a)) for a in REGRET_ARRAYS)
        assert (s.iterations, s.regret_weight) == (t.iterations, t.regret_weight)
    values_only = load_sweep_layer(tmp_path, "icm", 3, hands, tensors, strategies=False)
    assert values_only["strategies"] == [] and np.array_equal(values_only["values"], layer["values"])
    with pytest.raises(ValueError, match="does not match this game"):
        load_sweep_layer(tmp_path, "icm", 3, hands[:-1], tensors)

    assert not sweep_saved(tmp_path, "icm", [2, 3]) and saved_sweep_summary(tmp_path, "icm", [2, 3]) is None
    small = _sweep_layer(layers[2], tensors, rng, with_solvers=False)
    save_sweep_layer(tmp_path, "icm", 2, small, keep_solvers=False)
    rows = saved_sweep_summary(tmp_path, "icm", [2, 3])
    assert [r["players"] for r in rows] == [2, 3]
    kept_values = saved_sweep_values(tmp_path, "icm", [2, 3])
    assert np.array_equal(kept_values[2], small["values"]) and np.array_equal(kept_values[3], layer["values"])
    assert rows[1] == {"players": 3, "states": m, "cfr_iterations": int(layer["iterations"].sum()),
                       "max_exploitability": float(layer["exploitability"].max()), "wall_s": 12.5,
                       "nodes": sum(len(h.node_actor) for h in hands)}
    assert load_sweep_layer(tmp_path, "icm", 2, layers[2], tensors)["solvers"] is None  # none kept for it

    other = _sweep_layer(hands, tensors, rng, with_solvers=True)
    save_sweep_layer(tmp_path, "roberts", 3, other, keep_solvers=True)
    drop_solvers(tmp_path, "icm")  # one sweep's solvers: the other's stay
    assert sorted(p.name for p in tmp_path.glob("*.solvers.npz")) == ["roberts.layer3.solvers.npz"]
    drop_solvers(tmp_path)
    assert list(tmp_path.glob("*.solvers.npz")) == [] and sweep_saved(tmp_path, "roberts", [3])
