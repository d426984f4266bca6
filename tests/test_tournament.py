"""PI-CFR+ over layers on tiny games: every state within gamma, values consistent, resumable."""

import re
from pathlib import Path

import numpy as np
import pytest

from engine import state_resolve
from engine.layers import icm_values
from engine.tournament import solve_layer, solve_tournament


def _scripted_clock(values):
    """A stand-in for ``time.perf_counter`` (patched on the shared ``time`` module) that gives this
    thread ``values`` in turn; any other thread (one an earlier test left running) reads the real
    clock instead of taking the script's values."""
    import threading
    import time

    real, caller, script = time.perf_counter, threading.get_ident(), iter(values)
    return lambda: next(script) if threading.get_ident() == caller else real()


def _add_kept_seconds(blocks, seconds: float) -> None:
    """Rewrite checkpoint blocks as if their earlier run had worked ``seconds`` longer: a resumed
    run's times must then count them, whatever the machine's speed (a wall-clock race on a slow CI
    machine, 1.2 s resumed against 1.08 s kept, had failed a test that slept instead)."""
    for block in blocks:
        _rewrite_members(block, lambda members: members.update(elapsed=members["elapsed"] + seconds))

PAYOUTS = (70.0, 30.0)
GAMMA = 1e-3


@pytest.fixture(scope="module")
def solved(tiny_tensors):
    return solve_tournament(units=6, players=3, payouts=PAYOUTS, gamma=GAMMA, tensors=tiny_tensors, threads=2)


def assert_certified_from_scratch(layer, lower, tensors):
    """Every state's certified profile is within GAMMA under the layer's final values, checked by a
    new solver (none of the layer solve's kept caches)."""
    from engine.cfr import HandSolver
    from engine.game_tree import utilities

    values = {**lower, layer.players: layer.values}
    for s, hand in enumerate(layer.hands):
        e, _ = HandSolver(hand, tensors).exploitability(utilities(hand, values), sigma=layer.strategy[s])
        assert e <= GAMMA + 1e-12, s


def test_every_state_within_gamma(solved):
    """The layers end certified, at the first outer iteration at gamma that updated and screened no
    state (a screening one included: with nothing screened it checked every state)."""
    for n, layer in solved.items():
        assert layer.exploitability.max() <= GAMMA, n
        assert layer.log[-1]["states_updated"] == 0 and layer.log[-1]["states_screened"] == 0
        assert not [e for e in layer.log[:-1] if e["target"] <= GAMMA and e["states_updated"] == 0
                    and e["states_screened"] == 0], n


def test_the_log_counts_the_exact_checks(solved):
    """Every state of an outer iteration is skipped, screened, checked exactly or solved without a
    check (a first solve, or surely above the target); the last outer iteration, which updates and
    screens none, checks exactly every state it does not skip, and the first checks none (some
    layer of the small game checks at all: its bounds do not settle everything)."""
    for n, layer in solved.items():
        m = len(layer.hands)
        for entry in layer.log:
            assert entry["states_skipped"] + entry["states_screened"] + entry["states_checked"] <= m
            assert entry["states_updated"] <= m - entry["states_skipped"] - entry["states_screened"]
        assert layer.log[0]["states_checked"] == 0
        assert layer.log[-1]["states_skipped"] + layer.log[-1]["states_checked"] == m, n
    assert sum(e["states_checked"] for layer in solved.values() for e in layer.log) > 0


def test_reported_exploitability_is_exact_under_the_final_values(solved, tiny_tensors):
    """States whose re-check was skipped (bounded by their successors' drift) are measured at the end."""
    from engine.cfr import HandSolver
    from engine.game_tree import utilities

    values = {n: layer.values for n, layer in solved.items()}
    for n, layer in solved.items():
        for s, hand in enumerate(layer.hands):
            e, _ = HandSolver(hand, tiny_tensors).exploitability(utilities(hand, values), sigma=layer.strategy[s])
            assert e == pytest.approx(layer.exploitability[s], abs=1e-9), (n, s)


def test_values_sum_to_open_prizes(solved):
    for n, layer in solved.items():
        np.testing.assert_allclose(layer.values.sum(axis=1), sum(PAYOUTS[:n]), atol=1e-9)
        assert (layer.values >= 0).all()


def test_heads_up_values_are_close_to_proportional(solved):
    hu = solved[2]
    p_win = (hu.values - PAYOUTS[1]) / (PAYOUTS[0] - PAYOUTS[1])
    proportional = hu.stacks / 6
    # issue #3's bound for the 2-player layer (0.5 percentage points); the 45-unit game's is 0.22 points
    assert np.abs(p_win - proportional).max() < 0.005


def test_equilibrium_differs_from_icm_start(solved):
    three = solved[3]
    assert np.abs(three.values - icm_values(three.stacks, PAYOUTS)).max() > 1e-3


def test_log_records_outer_iterations(solved):
    log = solved[3].log
    assert [e["outer_iteration"] for e in log] == list(range(1, len(log) + 1))
    assert all(e["max_delta_v"] >= 0 and e["wall_s"] >= 0 for e in log)


def test_the_log_s_max_delta_v_is_the_values_move(tmp_path, tiny_tensors, solved):
    """`max_delta_v` of outer iteration k is the largest |V_k − V_(k−1)| ($) over the layer's
    (state, position) pairs, V_0 the ICM start: checked on layers stopped after one and two outer
    iterations (the second resumed from the first's checkpoint)."""
    lower = {2: solved[2].values}
    one = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path, max_outer=1)
    two = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path, max_outer=2)
    first = np.abs(one.values - icm_values(one.stacks, PAYOUTS)).max()
    assert one.log[0]["max_delta_v"] == pytest.approx(first, rel=1e-12) and first > 0.01
    assert two.log[1]["max_delta_v"] == pytest.approx(np.abs(two.values - one.values).max(), rel=1e-9, abs=1e-12)


def test_resume_from_checkpoint_matches(tmp_path, tiny_tensors, solved):
    lower = {2: solved[2].values}
    first = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path, max_outer=1)
    assert len(first.log) == 1 and (tmp_path / "layer3.npz").exists()
    resumed = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path)
    assert resumed.log[0] == first.log[0] and resumed.log[-1]["states_updated"] == 0
    assert resumed.exploitability.max() <= GAMMA
    np.testing.assert_allclose(resumed.values, solved[3].values, atol=5 * GAMMA)


def test_an_outer_iteration_is_announced_only_once_saved(tmp_path, tiny_tensors, solved, monkeypatch):
    """The 'outer iteration done' line comes after its checkpoint: a run killed while saving the
    second outer iteration (the `thesis` 5-player layer's save writes gigabytes) has announced the
    first alone, and the run that resumes it announces the second once, as the one it did."""
    import engine.tournament as tournament

    lower = {2: solved[2].values}
    save_layer, saves = tournament.save_layer, []

    class Killed(Exception):
        pass

    def killed_in_the_second_save(*args, **kw):
        saves.append(args[4])
        if len(saves) == 2:
            raise Killed
        save_layer(*args, **kw)

    monkeypatch.setattr(tournament, "save_layer", killed_in_the_second_save)
    events: list[dict] = []
    with pytest.raises(Killed):
        solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path,
                    progress=events.append)
    assert saves == [1, 2] and [e["outer_iteration"] for e in events if e["event"] == "outer"] == [1]
    monkeypatch.setattr(tournament, "save_layer", save_layer)
    events.clear()
    resumed = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path,
                          progress=events.append)
    announced = [e["outer_iteration"] for e in events if e["event"] == "outer"]
    assert announced == list(range(2, len(resumed.log) + 1)) and len(resumed.log) >= 2


def test_a_checkpoint_solved_against_other_smaller_layers_is_refused(tmp_path, tiny_tensors, solved):
    """A layer's checkpoints (its file and the blocks of an outer iteration) are stamped with a
    fingerprint of the smaller layers' values they were solved against: resumed against other
    values (a smaller layer solved again differently) they are refused, naming the files, not taken
    up as if they still held; the same values, read back as float64 from elsewhere (rounded to
    1e-12 $), resume them; with the files deleted, the layer starts afresh against the new values."""
    lower = {2: solved[2].values}
    solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path, max_outer=1)
    moved = {2: solved[2].values + np.array([[1e-3, -1e-3]])}
    refused = r"3-player layer's checkpoints in .* were solved against other values of the smaller layers.*layer3\.\*"
    with pytest.raises(ValueError, match=refused):
        solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, moved, threads=1, checkpoint=tmp_path, max_outer=2)
    same = {2: np.round(solved[2].values, 12)}
    again = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, same, threads=1, checkpoint=tmp_path, max_outer=2)
    assert len(again.log) == 2
    (tmp_path / "layer3.npz").rename(tmp_path / "layer3.outer2.block00000.npz")  # blocks only: refused too
    with pytest.raises(ValueError, match=refused):
        solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, moved, threads=1, checkpoint=tmp_path, max_outer=2)
    for p in tmp_path.glob("layer3.*"):
        p.unlink()
    fresh = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, moved, threads=1, checkpoint=tmp_path, max_outer=1)
    assert len(fresh.log) == 1


def test_a_resumed_solve_writes_new_records_into_the_restored_ones(tmp_path, tiny_tensors, solved, monkeypatch):
    """The records a resume restores (made in the main thread) take the re-solves' new ones in their
    own memory, so the freed pages a trim cannot hand back never pile up (engine.memory): each state
    ends with the very arrays restored for it, holding the resumed solve's results."""
    import engine.tournament as tournament

    lower = {2: solved[2].values}
    solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path, max_outer=1)
    restored, load_layer = {}, tournament.load_layer

    def load_and_note(folder, n, solvers, ledger=None, profiles=True):
        out = load_layer(folder, n, solvers, ledger, profiles)
        restored.update(solution=[x.solution for x in solvers], order_probs=list(ledger.order_probs))
        return out

    monkeypatch.setattr(tournament, "load_layer", load_and_note)
    resumed = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path)
    assert sum(entry["states_updated"] for entry in resumed.log[1:]) > 0  # re-solves replaced records
    assert all(x is not None for x in restored["solution"])
    assert all(a is b for a, b in zip(resumed.strategy, restored["solution"]))
    assert all(a is b for a, b in zip(resumed.order_probs, restored["order_probs"]))
    np.testing.assert_allclose(resumed.values, solved[3].values, atol=5 * GAMMA)
    assert_certified_from_scratch(resumed, lower, tiny_tensors)


def test_checkpoint_round_trip_is_exact(tmp_path, tiny_tensors, solved):
    """The array-at-a-time checkpoint file restores each state's record bit for bit: regrets,
    predictions, iteration count and regret weight, certified profile and its gains, decision margins, and what the
    layer solve knows about it (the average only lives during a solve)."""
    from engine.cfr import REGRET_ARRAYS, HandSolver
    from engine.checkpoint import Ledger, load_layer, restore_records, save_layer
    from engine.layers import compile_layer

    _, hands = compile_layer(6, 3, PAYOUTS)
    solvers = [HandSolver(h, tiny_tensors) for h in hands]
    ledger = Ledger.empty([len(h.term_kind) for h in hands], 3)
    rng = np.random.default_rng(4)
    for i, s in enumerate(solvers):
        for name in REGRET_ARRAYS:
            getattr(s, name)[:] = rng.random(getattr(s, name).shape)
        s.iterations = int(rng.integers(1, 100))
        s.regret_weight = float(rng.random() * s.iterations)
        s.solution = rng.random(s.regret_jam.shape) if i % 2 else None
        s.gains = rng.random(3) if i % 2 else None
        s.margins = tuple(rng.random(s.regret_jam.shape).astype(np.float32) for _ in range(2)) if i % 3 else None
        ledger.order_probs[i] = rng.random(ledger.order_probs[i].shape)
    m = len(hands)
    ledger.bound[:], ledger.gains[:], ledger.drift[:] = rng.random(m), rng.random((m, 3)), rng.random(m)
    ledger.checked_at[:] = rng.integers(-1, 2, m)
    ledger.skipped[:], ledger.screened[:] = rng.random(m) < 0.5, rng.random(m) < 0.3
    ledger.checked[:] = rng.random(m) < 0.4
    ledger.held_target[:] = np.where(rng.random(m) < 0.3, rng.random(m), np.inf)
    ledger.held_exploitability[:] = rng.random(m)
    ledger.V_at = {0: rng.random((m, 3)), 1: rng.random((m, 3))}
    ledger.held_retries, ledger.held_retries_allowed = 3, 4
    ledger.settled = True
    V = rng.random((m, 3))
    log = [{"players": 3, "outer_iteration": 1, "target": 0.01, "states_updated": 5, "states_skipped": 0,
            "states_screened": 3, "states_checked": 2, "cfr_iterations": 40, "max_delta_v": 0.5,
            "max_exploitability": 0.01, "wall_s": 1.5}]
    save_layer(tmp_path, 3, V, log, 1, solvers, ledger)
    back = [HandSolver(h, tiny_tensors) for h in hands]
    ledger_back = Ledger.empty([len(h.term_kind) for h in hands], 3)
    V2, log2, outer, finished = load_layer(tmp_path, 3, back, ledger_back)
    assert np.array_equal(V2, V) and log2 == log and outer == 1 and not finished
    assert sorted(p.name for p in tmp_path.iterdir()) == ["layer3.npz"]
    for s, t in zip(solvers, back):
        for name in REGRET_ARRAYS:
            assert np.array_equal(getattr(s, name), getattr(t, name))
        assert s.iterations == t.iterations and t.avg_num is None and t.avg_start == t.iterations
        assert s.regret_weight == t.regret_weight
        for name in ("solution", "gains"):
            assert (getattr(t, name) is None) == (getattr(s, name) is None)
            if getattr(s, name) is not None:
                assert np.array_equal(getattr(s, name), getattr(t, name))
        assert (t.margins is None) == (s.margins is None)
        if s.margins is not None:
            assert all(np.array_equal(a, b) for a, b in zip(s.margins, t.margins))
    for name in ("bound", "gains", "drift", "checked_at", "skipped", "screened", "checked", "held_target",
                 "held_exploitability"):
        assert np.array_equal(getattr(ledger, name), getattr(ledger_back, name)), name
    assert all(np.array_equal(a, b) for a, b in zip(ledger.order_probs, ledger_back.order_probs))
    assert (ledger_back.held_retries, ledger_back.held_retries_allowed) == (3, 4) and ledger_back.settled
    assert ledger_back.V_at.keys() == ledger.V_at.keys()
    assert all(np.array_equal(ledger.V_at[k], ledger_back.V_at[k]) for k in ledger.V_at)

    # The long arrays are streamed from the file state by state, never read whole: read whole, a
    # resume of the 45-unit 5-player layer from its full checkpoint held two copies and passed 24 GB.
    class Guarded:
        def __init__(self, data):
            self.data, self.zip = data, data.zip

        def __contains__(self, name):
            return name in self.data

        def __getitem__(self, name):
            assert name not in (*REGRET_ARRAYS, "solution", "margin_advantage", "margin_mass", "order_probs"), name
            return self.data[name]

    streamed = [HandSolver(h, tiny_tensors) for h in hands]
    ledger_streamed = Ledger.empty([len(h.term_kind) for h in hands], 3)
    restore_records(Guarded(np.load(tmp_path / "layer3.npz")), streamed, ledger_streamed)
    for s, t in zip(back, streamed):
        assert all(np.array_equal(getattr(s, name), getattr(t, name)) for name in REGRET_ARRAYS)
        assert (s.solution is None and t.solution is None) or np.array_equal(s.solution, t.solution)
        assert (s.margins is None) == (t.margins is None)
    assert all(np.array_equal(a, b) for a, b in zip(ledger.order_probs, ledger_streamed.order_probs))

    # a plain dict of the members (no zip behind it) restores the same records, sliced instead of streamed
    with np.load(tmp_path / "layer3.npz") as data:
        members = {name: data[name] for name in data.files}
    sliced = [HandSolver(h, tiny_tensors) for h in hands]
    ledger_sliced = Ledger.empty([len(h.term_kind) for h in hands], 3)
    restore_records(members, sliced, ledger_sliced)
    for s, t in zip(back, sliced):
        assert all(np.array_equal(getattr(s, name), getattr(t, name)) for name in REGRET_ARRAYS)
        assert (s.solution is None and t.solution is None) or np.array_equal(s.solution, t.solution)
        assert (s.margins is None and t.margins is None) or all(map(np.array_equal, s.margins, t.margins))
    assert all(np.array_equal(a, b) for a, b in zip(ledger.order_probs, ledger_sliced.order_probs))

    # a warm start's read (profiles=False): regrets, predictions and clocks, no certified profiles
    warm = [HandSolver(h, tiny_tensors) for h in hands]
    load_layer(tmp_path, 3, warm, profiles=False)
    for s, t in zip(solvers, warm):
        assert all(np.array_equal(getattr(s, name), getattr(t, name)) for name in REGRET_ARRAYS)
        assert (t.iterations, t.regret_weight) == (s.iterations, s.regret_weight)
        assert t.solution is None and t.gains is None and t.margins is None


def _rewrite_members(path: Path, edit) -> None:
    """Rewrite the .npz at ``path`` with its members (a dict by name) as ``edit`` leaves them."""
    with np.load(path) as data:
        members = {name: data[name] for name in data.files}
    edit(members)
    with open(path, "wb") as f:  # (np.savez on a path would add ".npz" to a name without it)
        np.savez(f, **members)


def _strip_members(path: Path, *names: str) -> None:
    """Rewrite the .npz at ``path`` without the members ``names``, as an earlier version wrote it."""
    _rewrite_members(path, lambda members: [members.pop(name) for name in names])


def test_a_checkpoint_of_another_game_is_refused(tmp_path, tiny_tensors):
    """Records are put back by position, so a checkpoint whose states do not have this game's
    decision nodes (another game's, or one whose states were numbered otherwise) is refused with
    what to do, not read into the wrong solvers."""
    from engine.cfr import HandSolver
    from engine.checkpoint import LOG_FIELDS, Ledger, load_layer, save_layer
    from engine.layers import compile_layer

    _, hands = compile_layer(6, 3, PAYOUTS)
    solvers = [HandSolver(h, tiny_tensors) for h in hands]
    ledger = Ledger.empty([len(h.term_kind) for h in hands], 3)
    save_layer(tmp_path, 3, np.zeros((len(hands), 3)), [dict.fromkeys(LOG_FIELDS, 0)], 1, solvers, ledger)
    path = tmp_path / "layer3.npz"
    refused = f"checkpoint {re.escape(str(path))}: checkpoint does not match this game \\(delete it to start over\\)"

    _, other = compile_layer(7, 3, PAYOUTS)  # more states
    with pytest.raises(ValueError, match=refused):
        load_layer(tmp_path, 3, [HandSolver(h, tiny_tensors) for h in other])

    with np.load(path) as data:
        assert len(set(data["sizes"].tolist())) > 1
    _rewrite_members(path, lambda members: members.update(sizes=np.roll(members["sizes"], 1)))  # numbered otherwise
    with pytest.raises(ValueError, match=refused):
        load_layer(tmp_path, 3, [HandSolver(h, tiny_tensors) for h in hands])


def test_checkpoints_written_before_their_later_members_still_load(tmp_path, tiny_tensors):
    """A checkpoint folder outlives versions of the code (the 45-unit 5-player layer's took 16 h of
    solving): each member added since the first checkpoints has a default that an older file gets —
    a plain sum of regrets (weight = iterations), no exact check counted, no state held at the cap,
    no retries tried, not settled, not finished, no values referred to, no kept seconds — and a
    file from before the state records restores the solvers alone (their states are checked afresh)."""
    from engine.cfr import REGRET_ARRAYS, HandSolver
    from engine.checkpoint import Ledger, finished_layer, load_blocks, load_layer, save_block, save_layer
    from engine.layers import compile_layer
    from engine.solve_status import layer_status

    _, hands = compile_layer(6, 3, PAYOUTS)
    m, terminals = len(hands), [len(h.term_kind) for h in hands]
    solvers = [HandSolver(h, tiny_tensors) for h in hands]
    ledger = Ledger.empty(terminals, 3)
    rng = np.random.default_rng(7)
    for s in solvers:
        for name in REGRET_ARRAYS:
            getattr(s, name)[:] = rng.random(getattr(s, name).shape)
        s.iterations, s.regret_weight = int(rng.integers(2, 50)), 0.5
    ledger.bound[:], ledger.gains[:], ledger.drift[:] = rng.random(m), rng.random((m, 3)), rng.random(m)
    ledger.checked_at[:], ledger.checked[:] = 0, True
    ledger.held_target[:], ledger.held_exploitability[:] = 0.01, 0.02
    ledger.V_at = {0: rng.random((m, 3))}
    ledger.held_retries, ledger.held_retries_allowed, ledger.settled = 1, 2, True
    V = rng.random((m, 3))
    log = [{"players": 3, "outer_iteration": k, "target": 0.001, "states_updated": 4, "states_skipped": 0,
            "states_screened": 0, "states_checked": 4, "cfr_iterations": 30, "max_delta_v": 0.1,
            "max_exploitability": 0.001, "wall_s": 0.5} for k in (1, 2)]
    save_layer(tmp_path, 3, V, log, 2, solvers, ledger, finished=True)
    assert finished_layer(tmp_path, 3) is not None
    status = layer_status(tmp_path, 3, m, 100.0)
    assert (status.outer_done, status.finished, status.settled) == (2, True, True)

    path = tmp_path / "layer3.npz"
    _strip_members(path, "regret_weight", "checked", "held_target", "held_exploitability", "held_retries",
                   "settled", "finished", "V_at_keys", "V_at")
    assert finished_layer(tmp_path, 3) is None  # (not known to be finished: the layer is solved on)
    status = layer_status(tmp_path, 3, m, 100.0)  # (what `jamfold progress` reads: the same)
    assert (status.outer_done, status.finished, status.settled, status.last) == (2, False, False, log[-1])
    back, ledger_back = [HandSolver(h, tiny_tensors) for h in hands], Ledger.empty(terminals, 3)
    V2, log2, outer, finished = load_layer(tmp_path, 3, back, ledger_back)
    assert np.array_equal(V2, V) and log2 == log and outer == 2 and not finished
    for s, t in zip(solvers, back):
        assert all(np.array_equal(getattr(s, name), getattr(t, name)) for name in REGRET_ARRAYS)
        assert t.iterations == s.iterations and t.regret_weight == float(s.iterations)
    assert np.array_equal(ledger_back.bound, ledger.bound) and np.array_equal(ledger_back.gains, ledger.gains)
    assert not ledger_back.checked.any() and np.isinf(ledger_back.held_target).all()
    assert not ledger_back.held_exploitability.any() and ledger_back.V_at == {}
    assert (ledger_back.held_retries, ledger_back.held_retries_allowed, ledger_back.settled) == (0, 0, False)

    # a log from before its field `states_checked`: 0 for it, the other fields in their places
    def drop_states_checked(members: dict) -> None:
        keep = members["log_keys"] != "states_checked"
        members["log"], members["log_keys"] = members["log"][:, keep], members["log_keys"][keep]

    _rewrite_members(path, drop_states_checked)
    _, log2, _, _ = load_layer(tmp_path, 3, [HandSolver(h, tiny_tensors) for h in hands])
    assert log2 == [{**e, "states_checked": 0} for e in log]

    # before the state records: the solvers' regrets only, the ledger left as a fresh one
    _strip_members(path, "bound", "gains", "drift", "checked_at", "skipped", "screened", "terminals", "order_probs")
    back, ledger_back = [HandSolver(h, tiny_tensors) for h in hands], Ledger.empty(terminals, 3)
    load_layer(tmp_path, 3, back, ledger_back)
    assert all(np.array_equal(s.regret_jam, t.regret_jam) for s, t in zip(solvers, back))
    fresh = Ledger.empty(terminals, 3)
    assert np.array_equal(ledger_back.gains, fresh.gains) and np.array_equal(ledger_back.checked_at, fresh.checked_at)

    # a block of an outer iteration from before its seconds were kept: its states count, no time
    block = save_block(tmp_path, 3, 2, {1: 5, 3: 7}, [1, 3], solvers, ledger, elapsed=9.0)
    _strip_members(block, "elapsed")
    resumed = [HandSolver(h, tiny_tensors) for h in hands]
    done, elapsed = load_blocks(tmp_path, 3, 2, resumed, Ledger.empty(terminals, 3))
    assert done == {1: 5, 3: 7} and elapsed == 0.0


def test_interrupted_solve_resumes_on_the_same_path(tmp_path, tiny_tensors, monkeypatch):
    """Killed twice inside an outer iteration (the first time among the first outer iteration's
    warm-started waves), the solve resumes with the states its block checkpoints hold, does not
    solve them again, and ends exactly where a solve never interrupted does; asked again, the
    finished layer is read back without any work."""
    import engine.tournament as tournament

    # the kept depth-2 jam chances are a cache updated incrementally: rebuilt after a resume they
    # differ in the last bits, so without them the two paths must agree to the bit
    monkeypatch.setattr(tournament, "JAM_CHANCE_BUDGET", 0)
    lower = {2: solve_layer(8, 2, PAYOUTS, GAMMA, tiny_tensors, {}, threads=1).values}
    whole = solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2)
    assert len(whole.log) >= 3

    class Interrupt(Exception):
        pass

    events: list[dict] = []

    def stop_at(outer: int, blocks: int):
        def progress(event: dict) -> None:
            events.append(event)
            saved = [e for e in events if e["event"] == "block_saved" and e["outer_iteration"] == outer]
            if len(saved) == blocks:
                raise Interrupt
        return progress

    for outer in (1, 3):
        events.clear()
        with pytest.raises(Interrupt):
            solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2, checkpoint=tmp_path,
                        checkpoint_every=0.0, progress=stop_at(outer, 5))
        assert len(list(tmp_path.glob(f"layer3.outer{outer - 1}.block*.npz"))) == 5
    events.clear()
    ordered, estimable_order = [], tournament.estimable_order

    def noted(order, *args, **kw):
        ordered.append(order.tolist())
        return estimable_order(order, *args, **kw)

    monkeypatch.setattr(tournament, "estimable_order", noted)
    resumed = solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2, checkpoint=tmp_path,
                          progress=events.append)
    assert [e["outer"] for e in events if e["event"] == "resumed"] == [2]
    back = [e for e in events if e["event"] == "resumed_states"]
    assert [e["done"] for e in back] == [5]
    # the resumed iteration's time-left pilots come from the states left, not from the five done
    assert len(ordered[0]) == back[0]["states"] - 5 and all(len(o) == back[0]["states"] for o in ordered[1:])
    assert not list(tmp_path.glob("*.block*")) and not list(tmp_path.glob("*.tmp*"))

    def same(a, b):
        assert np.array_equal(a.values, b.values) and np.array_equal(a.exploitability, b.exploitability)
        assert np.array_equal(a.iterations, b.iterations)  # no state was solved twice
        assert all(np.array_equal(x, y) for x, y in zip(a.strategy, b.strategy))
        assert [{k: v for k, v in e.items() if k != "wall_s"} for e in a.log] == \
            [{k: v for k, v in e.items() if k != "wall_s"} for e in b.log]

    same(resumed, whole)
    events.clear()
    again = solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2, checkpoint=tmp_path,
                        progress=events.append)
    assert [e["event"] for e in events] == ["preparing", "resumed", "prepared", "layer_done"] and events[1]["finished"]
    same(again, whole)


def test_an_interrupted_final_measurement_resumes_with_the_states_it_measured(tmp_path, tiny_tensors, monkeypatch):
    """Killed three states into the final exact measurement of the states skipped last (about 23
    minutes on the 45-unit 5-player layer, all of it lost before), the solve resumes in the
    measurement: no further outer iteration, the three states read back, the others measured, and
    the layer ends exactly as one never interrupted; its measurement blocks are gone."""
    import time

    import engine.tournament as tournament
    from engine.solve_progress import layer_log_line

    monkeypatch.setattr(tournament, "JAM_CHANCE_BUDGET", 0)  # (see test_interrupted_solve_resumes_on_the_same_path)
    monkeypatch.setattr(tournament, "PROGRESS_EVERY_S", 0.0)
    lower = {2: solve_layer(8, 2, PAYOUTS, GAMMA, tiny_tensors, {}, threads=1).values}
    events: list[dict] = []
    whole = solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2, progress=events.append)
    measured = [e for e in events if e["event"] == "measuring"][0]["states"]
    assert measured > 5

    class Interrupt(Exception):
        pass

    def stop(event: dict) -> None:
        if event["event"] == "measuring_states" and event["done"] == 3:
            raise Interrupt
        if event["event"] == "measuring_states":
            time.sleep(0.3)  # the first run's work, as time: its blocks must keep it

    with pytest.raises(Interrupt):
        solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2, checkpoint=tmp_path, checkpoint_every=0.0,
                    progress=stop)
    blocks = list(tmp_path.glob(f"layer3.measure{len(whole.log)}.block*.npz"))
    assert len(blocks) == 3
    kept = max(float(np.load(p)["elapsed"]) for p in blocks)
    assert kept >= 0.6
    _add_kept_seconds(blocks, 1000.0)
    kept += 1000.0
    # what `jamfold progress` says of it meanwhile
    from engine.solve_status import layer_status
    from jamfold.status_report import layer_lines

    lines = layer_lines(layer_status(tmp_path, 3, len(whole.values), 100.0), GAMMA)
    assert lines[0].startswith(f"3-player layer ({len(whole.values)} states): {len(whole.log)} outer iterations done")
    assert lines[1:] == [f"  final exact measurement: 3 states measured at its last block checkpoint "
                         f"({kept / 60:.1f} min of work kept, saved " + lines[1].split(", saved ")[1]]
    events.clear()
    started = time.perf_counter()
    resumed = solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2, checkpoint=tmp_path,
                          checkpoint_every=0.0, progress=events.append)
    own = time.perf_counter() - started
    kinds = [e["event"] for e in events]
    assert "outer" not in kinds and "states" not in kinds
    back = events[kinds.index("resumed")]
    assert back["settled"] and not back["finished"] and back["outer"] == len(whole.log)
    assert layer_log_line(back)[1].endswith("settled: only its final exact measurement is left")
    start = events[kinds.index("measuring")]
    assert (start["states"], start["done"]) == (measured, 3)
    assert "(3 already measured in an earlier run)" in layer_log_line(start)[1]
    ticks = [e["done"] for e in events if e["event"] == "measuring_states"]
    assert ticks == list(range(4, measured))
    # the first run's seconds too, and this run's
    assert all(kept <= e["wall_s"] <= kept + own for e in events if e["event"] == "measuring_states")
    assert layer_log_line(events[kinds.index("measuring_states")])[1].startswith(
        "3-player layer, final exact measurement: 4/")
    assert np.array_equal(resumed.values, whole.values) and np.array_equal(resumed.exploitability, whole.exploitability)
    assert all(np.array_equal(x, y) for x, y in zip(resumed.strategy, whole.strategy))
    assert [{k: v for k, v in e.items() if k != "wall_s"} for e in resumed.log] == \
        [{k: v for k, v in e.items() if k != "wall_s"} for e in whole.log]
    assert not list(tmp_path.glob("*.block*")) and not list(tmp_path.glob("*.tmp*"))


def test_an_interrupted_outer_iteration_logs_the_time_of_all_its_runs(tmp_path, tiny_tensors, solved):
    """The solve log's wall_s of an outer iteration resumed from its block checkpoints counts the
    time its earlier run had spent up to its last block, not only the resumed run's: the `thesis`
    game's logs undercounted every outer iteration that an interrupt had split."""
    import time

    lower = {2: solved[2].values}

    class Interrupt(Exception):
        pass

    saved: list[float] = []

    def slow_then_stop(event: dict) -> None:
        if event["event"] == "block_saved":
            saved.append(event["wall_s"])
            if len(saved) == 3:
                raise Interrupt
            time.sleep(0.4)  # the earlier run's work, as time: its blocks must keep it

    with pytest.raises(Interrupt):
        solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path, checkpoint_every=0.0,
                    progress=slow_then_stop)
    assert saved[-1] >= 0.8
    blocks = sorted(tmp_path.glob("layer3.outer0.block*.npz"))
    assert [float(np.load(b)["elapsed"]) for b in blocks] == saved  # (the time each block keeps, to the bit)
    _add_kept_seconds(blocks, 1000.0)  # (far beyond what resuming takes)
    kept = saved[-1] + 1000.0
    t0 = time.perf_counter()
    import engine.tournament as tournament

    events = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tournament, "PROGRESS_EVERY_S", 0.0)
        resumed = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1, checkpoint=tmp_path,
                              progress=events.append)
    own = time.perf_counter() - t0
    assert kept <= resumed.log[0]["wall_s"] <= kept + own
    ticks = [e["wall_s"] for e in events if e["event"] == "states" and e["outer_iteration"] == 1]
    assert ticks and kept <= min(ticks) and max(ticks) <= resumed.log[0]["wall_s"]  # its 'states done' lines too
    # the states the blocks kept count as done: the lines go on from them, every state but the last
    back, = [e for e in events if e["event"] == "resumed_states"]
    assert [e["done"] for e in events if e["event"] == "states" and e["outer_iteration"] == 1] == \
        list(range(back["done"] + 1, back["states"]))
    prepared, = [e for e in events if e["event"] == "prepared"]  # (this run's preparing, not the earlier one's)
    assert 0 <= prepared["wall_s"] <= own


def test_a_resumed_outer_iteration_reports_its_seconds_with_its_earlier_runs(monkeypatch):
    """The 'states done' lines of an outer iteration resumed from its block checkpoints count its
    seconds from its start, as its log row does: they said '53,360/135,751 states done, 74 s' an
    hour and a half into the `thesis` layer's nineteenth. A scripted clock: 600 s kept, 2 s a state."""
    from engine import tournament

    monkeypatch.setattr(tournament.time, "perf_counter",
                        _scripted_clock([1000.0] + [1000.0 + 2 * k for k in range(1, 6)]))
    ticks = []
    todo = np.array([False] * 5 + [True] * 5)
    ticker = tournament._Ticker(ticks.append, n=5, outer=19, kinds=np.zeros(10, np.int64), todo=todo, every=0.0,
                                wall_before=600.0)
    for s in range(5, 9):
        ticker.tick(s, started=1000.0 + 2 * (s - 5))
    assert [(e["done"], e["wall_s"]) for e in ticks] == [(6, 602.0), (7, 604.0), (8, 606.0), (9, 608.0)]


@pytest.mark.parametrize("benchmark, argv, message", [
    ("bench_layer", ["--players", "7"], "--players must be 2 to 5"),
    ("bench_layer", ["--players", "4", "--units", "3"], "--units must be at least --players"),
    ("bench_layer", ["--samples", "0"], "--samples must be at least 1"),
    ("bench_layer", ["--gamma", "0"], "--gamma must be a finite number > 0"),
    ("bench_layer", ["--seed", "-1"], "--seed must be >= 0"),
    ("bench_solver", ["--units", "4"], "--units must be at least 5"),
    ("bench_solver", ["--iterations", "0"], "--iterations must be at least 1"),
    ("bench_solver", ["--layer-players", "6"], "--layer-players must be 2 to 5"),
    ("bench_solver", ["--layer-players", "4", "--layer-units", "3"], "--layer-units must be at least --layer-players"),
    ("bench_solver", ["--layer-gamma", "0"], "--layer-gamma must be a finite number > 0"),
    ("bench_solver", ["--sweep-units", "2"], "--sweep-units must be 0 (no sweeps) or at least 3"),
    ("bench_solver", ["--layer-sweeps"], "--layer-sweeps needs --checkpoint"),
])
def test_solver_benchmarks_reject_bad_arguments(benchmark, argv, message, capsys):
    import importlib

    main = importlib.import_module(f"engine.{benchmark}").main
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err


def test_layer_benchmark_projects_a_small_layer(capsys, bench_tensors_released):
    from engine.bench_layer import main

    main(["--units", "8", "--players", "3", "--samples", "2", "--gamma", "1e-2"])
    out = capsys.readouterr().out
    assert "8-unit 3-player layer: 21 states" in out and "projection on" in out and "GiB for the layer" in out
    # the strata (which blinds are all-in) share out the layer's states, and no solve of the sampled
    # states took longer than all of them together
    assert sum(int(n) for n in re.findall(r"^  [a-zA-Z -]+: ([0-9,]+) states \(", out, re.M)) == 21
    wall = float(re.search(r"sampled states solved .* in ([0-9.]+) s on", out).group(1))
    seconds = [float(x) for x in re.findall(r"(?:cold|from a neighbour|warm) ([0-9.]+) s", out)]
    assert len(seconds) >= 9 and max(seconds) <= wall + 0.05  # (the wall printed to 0.1 s)
    assert "from a neighbour" in out and "the first solve of every state" in out
    # the whole layer is the first solves plus the measured range of warm passes (hours, 3 significant digits)
    from engine.bench_layer import WARM_PASSES_PER_LAYER

    first = float(re.search(r"elsewhere, ([0-9.e+-]+) h;", out).group(1))
    warm = float(re.search(r"one warm pass over every state ([0-9.e+-]+) h", out).group(1))
    low, high = (float(x) for x in re.search(r"took, see WARM_PASSES_PER_LAYER\): ([0-9.e+-]+)–([0-9.e+-]+) h",
                                             out).groups())
    for printed, k in ((low, WARM_PASSES_PER_LAYER[0]), (high, WARM_PASSES_PER_LAYER[1])):
        assert printed == pytest.approx(first + k * warm, rel=0.01)


def test_solver_benchmark_rejects_a_checkpoint_that_is_a_file(tmp_path, capsys):
    from engine.bench_solver import main

    path = tmp_path / "not-a-folder"
    path.write_text("")
    with pytest.raises(SystemExit) as exc:
        main(["--checkpoint", str(path)])
    assert exc.value.code == 2 and f"--checkpoint must be a folder: {path} is a file" in capsys.readouterr().err


def test_solver_benchmark_solves_into_a_checkpoint_and_reads_it_back(tmp_path, capsys, monkeypatch,
                                                                   bench_tensors_released):
    """With --checkpoint and --verbose the benchmark prints every outer iteration and its counts; run
    again on the same folder, it reads the finished layers back instead of solving them; --no-kept-sums
    sets the layer solve's budget for kept depth-2 sums to 0; --layer-sweeps times the model sweeps over
    the solved game, warm-started from the checkpoint's regrets, every state within gamma."""
    from engine import tournament
    from engine.bench_solver import main

    monkeypatch.setattr(tournament, "DEPTH2_SUM_BUDGET", tournament.DEPTH2_SUM_BUDGET)  # restored afterwards
    argv = ["--units", "6", "--iterations", "2", "--layer-units", "6", "--layer-players", "3", "--layer-gamma",
            "1e-2", "--sweep-units", "0", "--checkpoint", str(tmp_path / "ckpt"), "--verbose", "--no-kept-sums"]
    main(argv)
    first = capsys.readouterr().out
    assert tournament.DEPTH2_SUM_BUDGET == 0
    # one CFR+ timing per player count 2..5, from an even split of the units, after 2 + --iterations
    per_count = re.findall(r"^(\d) players \(([0-9, ]+)\): \d+ nodes, first iterations [0-9.]+ ms, mean of next 2 "
                           r"[0-9.]+ ms/iteration, exploitability after (\d+) iterations ([0-9.e+-]+) \$", first, re.M)
    assert [(n, stacks, its) for n, stacks, its, _ in per_count] == [
        ("2", "3, 3", "4"), ("3", "2, 2, 2", "4"), ("4", "2, 2, 1, 1", "4"), ("5", "2, 1, 1, 1, 1", "4")]
    assert all(float(e) >= 0 for *_, e in per_count)
    assert re.search(r"^  3-player layer, outer iteration 1: target 1\.0e\+00 \$ \(level 1 of 5\), ", first, re.M)
    assert "checked exactly" in first
    assert "PI-CFR+ of a 3-player 6-unit game to gamma 0.01: 15 states" in first and "exact checks [" in first
    main(argv + ["--layer-sweeps"])
    again = capsys.readouterr().out
    assert "3-player layer read back solved from its checkpoint" in again and "outer iteration 1:" not in again
    sweeps = re.findall(r"  (\S+) from (.+?): [0-9.]+ s \(2p 5 states .*, 3p 10 states .* ms/state\); "
                        r"max exploitability ([0-9.e+-]+) \$", again)
    assert [(label, start.split("'")[0]) for label, start, _ in sweeps] == [
        ("harville", "the equilibrium"), ("weitzman", "Harville"), ("FGS-1", "Harville")]
    assert all(float(e) <= 1e-2 for *_, e in sweeps)
    main(argv + ["--ex-post", "--layer-sweeps"])
    ex_post = re.findall(r"ex post of (.+?), (\d)-player layer \((\d+) states\): (\d+) rounds, .* ms per "
                         r"state, largest gain ([0-9.e+-]+) \$", capsys.readouterr().out)
    assert [(p, n, m) for p, n, m, *_ in ex_post] == [(p, n, m) for p in ("the equilibrium", "harville", "weitzman",
                                                                         "FGS-1") for n, m in (("2", "5"), ("3", "10"))]
    # nemesis gains: non-negative; the equilibrium's (solved to $0.01 per hand) a few hands' worth at most
    assert all(int(r) >= 1 and float(g) >= -1e-9 for *_, r, g in ex_post)
    assert all(float(g) < 0.1 for p, *_, g in ex_post if p == "the equilibrium")


def test_solver_benchmark_times_model_sweeps_of_a_3_player_game(capsys, bench_tensors_released):
    """--sweep-units N times a Harville sweep over every state of the N-unit 3-player game from cold,
    then FGS-1 and Roberts warm-started from it; a game of as many units as players (the least
    --layer-units takes) is solved first."""
    from engine.bench_solver import main
    from engine.states import enumerate_states

    main(["--units", "5", "--iterations", "1", "--layer-units", "2", "--layer-players", "2", "--layer-gamma", "1e-2",
          "--sweep-units", "4"])
    out = capsys.readouterr().out
    assert "PI-CFR+ of a 2-player 2-unit game to gamma 0.01: 1 states, " in out
    states = len(enumerate_states(4, 2)) + len(enumerate_states(4, 3))
    cold = re.search(rf"^model sweep, 4-unit 3-player game \({states} states, gamma 1e-4\): Harville cold [0-9.]+ s, "
                     r"(\d+) CFR\+ iterations \([0-9]+ ms per state\)$", out, re.M)
    warm = re.findall(r"^  (FGS-1|Roberts) warm-started from the Harville sweep: [0-9.]+ s, (\d+) CFR\+ iterations$",
                      out, re.M)
    assert cold and int(cold.group(1)) >= states  # (every state solved, at least one iteration each)
    assert [label for label, _ in warm] == ["FGS-1", "Roberts"] and all(int(its) > 0 for _, its in warm)


def test_resolve_keeps_regrets_near_the_target_and_rescales_far_off(tiny_tensors):
    """A profile a little above the target continues from its regrets as they are (the re-solve stays near
    the old profile); one far above has them scaled to RESTART_WEIGHT iterations' worth."""
    from engine.cfr import HandSolver
    from engine.layers import compile_layer
    from engine.state_resolve import prepare_resolve

    _, hands = compile_layer(6, 3, PAYOUTS)
    rng = np.random.default_rng(2)
    far = state_resolve.RESCALE_ABOVE * 1e-3
    for e, rescaled in ((0.97 * far, False), (1.03 * far, True)):
        solver = HandSolver(hands[0], tiny_tensors)
        solver.regret_jam[:] = rng.random(solver.regret_jam.shape)
        solver.iterations = 40
        solver.regret_weight = 25.0  # (discounted: fewer iterations' worth than were run)
        before = solver.regret_jam.copy()
        assert prepare_resolve(solver, e, 1e-3) is rescaled
        expected = before * (state_resolve.RESTART_WEIGHT / 25) if rescaled else before
        np.testing.assert_allclose(solver.regret_jam, expected, rtol=1e-6)
        assert solver.regret_weight == (state_resolve.RESTART_WEIGHT if rescaled else 25.0)
        assert solver.avg_start == 40 and solver.avg_num is None


def test_a_state_skips_its_check_only_when_the_bounds_decide_the_resolve():
    """needs_no_check: only when the state is surely above target, and the bounds settle the rescale."""
    from engine.state_resolve import RESCALE_ABOVE, needs_no_check

    t = 1e-3
    assert not needs_no_check(0.9 * t, 5 * t, t)  # may be within target: check
    assert needs_no_check(2 * t, 5 * t, t)  # above, and surely not far off: no rescale either way
    assert needs_no_check(2 * RESCALE_ABOVE * t, 3 * RESCALE_ABOVE * t, t)  # surely far off: rescale
    assert not needs_no_check(2 * t, 2 * RESCALE_ABOVE * t, t)  # the rescale is open: check


def test_screening_never_ends_a_layer_uncertified(tiny_tensors, solved, monkeypatch):
    """Even screening every state whose rigorous bound fails, the layer ends certified.

    With SCREEN_FRACTION = 0 a screening outer iteration re-checks nothing but fresh or
    out-of-target states, so only the unscreened outer iterations can catch drift; the layer must
    still end with every state exactly within gamma under the final values.
    """

    monkeypatch.setattr(state_resolve, "SCREEN_FRACTION", 0.0)
    lower = {2: solved[2].values}
    layer = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2)
    assert any(e["states_screened"] for e in layer.log)
    for before, after in zip(layer.log, layer.log[1:]):  # (see _screens)
        if before["target"] <= GAMMA and before["states_updated"] == 0:
            assert after["states_screened"] == 0
    last = layer.log[-1]
    assert last["states_screened"] == 0 and last["states_updated"] == 0 and last["target"] <= GAMMA
    assert_certified_from_scratch(layer, lower, tiny_tensors)


def test_an_outer_iteration_without_screening_follows_one_at_gamma_that_updated_none():
    """An outer iteration that screens states cannot end a layer: after one at gamma that updated
    no state the next screens none, so it checks every state it does not skip and can end the
    layer; every other outer iteration of a loose solve screens, none of a strict one."""
    from engine.tournament import _screens

    def entry(target, updated):
        return {"target": target, "states_updated": updated}

    g = GAMMA
    assert _screens(g, [], True, 4 * g)  # the first outer iteration
    assert _screens(g, [entry(4 * g, 0)], True, g)  # the first at gamma: the last one was looser
    assert _screens(g, [entry(4 * g, 0), entry(g, 3)], True, g)  # at gamma, still updating
    assert not _screens(g, [entry(g, 3), entry(g, 0)], True, g)  # settled (perhaps): check everything
    assert _screens(g, [entry(g, 0), entry(g, 2)], True, g)  # that check updated some: screen again
    assert not any(_screens(g, log, False, g) for log in ([], [entry(g, 3)], [entry(g, 0)]))


def test_only_the_first_outer_iteration_prices_its_states_as_first_solves(tiny_tensors, solved, monkeypatch):
    """The time left of the first outer iteration is priced per kind of state split by how it
    starts, cold (no warm-start source) or from a neighbour's regrets; later outer iterations,
    where every state has been solved, price the kinds alone."""
    import engine.tournament as tournament
    from engine.warm_starts import warm_start_waves

    masks, first_solve_kinds = [], tournament.first_solve_kinds

    def noted(kinds, prior, cold):
        masks.append(cold.copy())
        return first_solve_kinds(kinds, prior, cold)

    monkeypatch.setattr(tournament, "first_solve_kinds", noted)
    layer = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, {2: solved[2].values}, threads=1)
    assert len(layer.log) > 1
    _, source = warm_start_waves(layer.stacks)
    assert len(masks) == 1 and np.array_equal(masks[0], source < 0) and 0 < masks[0].sum() < len(source)


def test_a_state_skipped_or_screened_carries_a_bound_on_its_exploitability_now(tiny_tensors, solved, monkeypatch):
    """A state whose turn ends on its bounds keeps, as its exploitability, the rigorous upper bound
    under this outer iteration's values, not what an earlier turn measured under older ones: the
    outer iteration's logged max exploitability, a held state's retry and the final measurement
    read it."""
    from engine.cfr import HandSolver
    from engine.game_tree import utilities
    from engine.state_resolve import StateResolver

    turn, seen = StateResolver.turn, []

    def checked(self, s, outer, target, screen, values):
        result = turn(self, s, outer, target, screen, values)
        if self.ledger.skipped[s] or self.ledger.screened[s]:
            hand = self.solvers[s].hand
            exact, _ = HandSolver(hand, tiny_tensors).exploitability(utilities(hand, values),
                                                                     sigma=self.solvers[s].strategy())
            seen.append((float(self.ledger.bound[s]), exact))
        return result

    monkeypatch.setattr(StateResolver, "turn", checked)
    monkeypatch.setattr(state_resolve, "SCREEN_FRACTION", 0.0)  # (screen some states too)
    solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, {2: solved[2].values}, threads=1)
    assert len(seen) > 10
    assert all(bound >= exact - 1e-12 for bound, exact in seen)


def test_loose_levels_cap_their_resolves_and_the_layer_still_ends_certified(tiny_tensors, solved, monkeypatch):
    """While the target is looser than gamma a re-solve stops after LOOSE_MAX_ITERATIONS (here 2, so
    that some hit it); solves to gamma are not capped, and the layer ends with every state within
    gamma under the final values."""
    from engine.cfr import HandSolver

    monkeypatch.setattr(state_resolve, "LOOSE_MAX_ITERATIONS", 2)
    calls = []
    solve = HandSolver.solve

    def spy(self, U, target, **kwargs):
        e, spent = solve(self, U, target, **kwargs)
        calls.append((target, kwargs["max_iterations"], e))
        return e, spent

    monkeypatch.setattr(HandSolver, "solve", spy)
    lower = {2: solved[2].values}
    layer = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2)
    slack = state_resolve.SOLVE_SLACK.get(3, 1.0)
    loose = [(t, cap, e) for t, cap, e in calls if t > slack * GAMMA * 1.0001]
    tight = [(t, cap, e) for t, cap, e in calls if t <= slack * GAMMA * 1.0001]
    assert loose and tight and {cap for _, cap, _ in loose} == {2} and {cap for _, cap, _ in tight} == {20_000}
    assert any(e > t for t, _, e in loose)  # some re-solves stopped at the cap above their target
    assert layer.exploitability.max() <= GAMMA
    assert_certified_from_scratch(layer, lower, tiny_tensors)


@pytest.mark.parametrize("keep, budget_name", [("keep_jam_chances", "JAM_CHANCE_BUDGET"),
                                               ("keep_depth2_sums", "DEPTH2_SUM_BUDGET")])
@pytest.mark.parametrize("budget, kept", [(0, False), (2 << 30, True)])
def test_per_state_caches_are_kept_between_outer_iterations_within_budget(tiny_tensors, solved, monkeypatch, keep,
                                                                         budget_name, budget, kept):
    """States keep their depth-2 jam chances (HandSolver.keep_jam_chances) and their depth-2 sums
    in outcome space (HandSolver.keep_depth2_sums) for their next check only if all of them fit
    the budget; either way every state's certified profile is within gamma when checked from
    scratch (the kept caches only change the rounding of the layer's own checks)."""
    from engine import tournament
    from engine.cfr import HandSolver

    calls = []
    original = getattr(HandSolver, keep)
    monkeypatch.setattr(tournament, budget_name, budget)
    monkeypatch.setattr(HandSolver, keep, lambda self, ws: (calls.append(1), original(self, ws)))
    lower = {2: solved[2].values}
    layer = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2)
    assert bool(calls) == kept
    assert layer.exploitability.max() <= GAMMA
    assert_certified_from_scratch(layer, lower, tiny_tensors)


def test_the_target_tightens_by_root_ten_once_a_level_settles():
    from engine.target_ladder import SETTLED_FRACTION, inner_target

    gamma, m = 1e-4, 1000
    assert inner_target(gamma, [], True, m) == pytest.approx(100 * gamma)
    assert inner_target(gamma, [], True, m, 1000.0) == pytest.approx(1000 * gamma)
    assert inner_target(gamma, [], False, m, 1000.0) == gamma
    assert inner_target(gamma, [], False, m) == gamma
    busy = {"target": 1e-2, "states_updated": int(SETTLED_FRACTION * m) + 1}
    settled = {"target": 1e-2, "states_updated": int(SETTLED_FRACTION * m)}
    assert inner_target(gamma, [busy], True, m) == 1e-2
    assert inner_target(gamma, [settled], True, m) == pytest.approx(1e-2 / 10 ** 0.5)
    assert inner_target(gamma, [{"target": 1.5e-4, "states_updated": 0}], True, m) == gamma  # never below gamma


def test_values_cycling_needs_a_whole_window_of_large_moves_at_one_target():
    from engine.target_ladder import CYCLE_SHARE, CYCLE_WINDOW, values_cycling

    def entry(target, delta, updated=3):
        return {"target": target, "max_delta_v": delta, "states_updated": updated}

    pool = 100.0
    big = 2 * CYCLE_SHARE * pool
    cycle = [entry(1e-2, big)] * CYCLE_WINDOW
    assert values_cycling(cycle, pool)
    assert not values_cycling(cycle, 3 * pool)  # the same moves are small in a larger pool
    assert values_cycling([entry(1e-2, big)] * (CYCLE_WINDOW - 1) + [entry(float(np.float32(1e-2)), big)], pool)
    assert not values_cycling(cycle[1:], pool)  # one outer iteration short
    assert not values_cycling(cycle[:-1] + [entry(1e-2, CYCLE_SHARE * pool / 2)], pool)  # one small move
    assert not values_cycling(cycle[:-1] + [entry(1e-2, big, updated=0)], pool)  # an outer iteration updating nothing
    assert values_cycling([entry(1e-2, big, updated=1)] * CYCLE_WINDOW, pool)  # one state updated each time is enough
    assert not values_cycling([entry(10 ** -1.5, big)] + cycle[1:], pool)  # the window spans two targets
    # a settling layer: a first level moving values by dollars for a few outer iterations, then
    # shrinking 3× per outer iteration; a long tail at gamma moving them by up to $0.3
    settling = [entry(0.1, 9.5 / 3 ** k) for k in range(5)] + [entry(1e-4, 0.3)] * (3 * CYCLE_WINDOW)
    assert not any(values_cycling(settling[:k], pool) for k in range(len(settling) + 1))


def test_a_layer_whose_values_cycle_stops_and_says_so(tiny_tensors, tmp_path):
    """With flat top prizes the 3-player layer's values cycle for ever (PI-CFR+ is not sure to
    converge): the solve stops after a window of such outer iterations, sends ``not_converging``,
    and still measures every state under its final values; solved again from its checkpoint, it
    is read back as it ended (no outer iteration moves its values again, which would also void the
    next layer's checkpoints); a game with prizes that differ settles."""
    from engine.cfr import HandSolver
    from engine.game_tree import utilities
    from engine.target_ladder import CYCLE_WINDOW, values_cycling

    flat = (50.0, 50.0, 0.0)
    lower = {2: solve_layer(6, 2, flat, GAMMA, tiny_tensors, {}, threads=1).values}
    events: list[dict] = []
    layer = solve_layer(6, 3, flat, GAMMA, tiny_tensors, lower, threads=1, max_outer=5 * CYCLE_WINDOW,
                        progress=events.append, checkpoint=tmp_path)
    assert CYCLE_WINDOW <= len(layer.log) < 5 * CYCLE_WINDOW and values_cycling(layer.log, sum(flat))
    assert [e["outer_iteration"] for e in events if e["event"] == "not_converging"] == [len(layer.log)]
    assert [e["why"] for e in events if e["event"] == "measuring"] == ["its values cycle"]
    values = {**lower, 3: layer.values}
    for s, hand in enumerate(layer.hands):
        e, _ = HandSolver(hand, tiny_tensors).exploitability(utilities(hand, values), sigma=layer.strategy[s])
        assert e == pytest.approx(layer.exploitability[s], abs=1e-9), s
    assert layer.exploitability.max() > GAMMA  # (else the stop would not matter: it would be an equilibrium)
    again: list[dict] = []
    kept = solve_layer(6, 3, flat, GAMMA, tiny_tensors, lower, threads=1, max_outer=5 * CYCLE_WINDOW,
                       progress=again.append, checkpoint=tmp_path)
    assert np.array_equal(kept.values, layer.values) and len(kept.log) == len(layer.log)
    assert np.array_equal(kept.exploitability, layer.exploitability)
    assert not any(e["event"] in ("outer", "not_converging", "measuring") for e in again)

    # interrupted in its final measurement, the stopped layer resumes there, with no outer iteration more
    from engine import tournament

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    folder = tmp_path / "interrupted"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tournament, "_measure_last", interrupted)
        with pytest.raises(KeyboardInterrupt):
            solve_layer(6, 3, flat, GAMMA, tiny_tensors, lower, threads=1, max_outer=5 * CYCLE_WINDOW,
                        checkpoint=folder)
    again.clear()
    resumed = solve_layer(6, 3, flat, GAMMA, tiny_tensors, lower, threads=1, max_outer=5 * CYCLE_WINDOW,
                          progress=again.append, checkpoint=folder)
    assert len(resumed.log) == len(layer.log) and np.array_equal(resumed.values, layer.values)
    assert not any(e["event"] == "outer" for e in again) and any(e["event"] == "measuring" for e in again)

    events.clear()
    apart = (65.0, 35.0, 0.0)
    lower = {2: solve_layer(6, 2, apart, GAMMA, tiny_tensors, {}, threads=1).values}
    layer = solve_layer(6, 3, apart, GAMMA, tiny_tensors, lower, threads=1, max_outer=5 * CYCLE_WINDOW,
                        progress=events.append)
    assert layer.exploitability.max() <= GAMMA and not any(e["event"] == "not_converging" for e in events)


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_the_ladder_progress_names_is_the_one_the_solve_climbs_down(players):
    """`target_levels` (which `jamfold progress` numbers a layer's level by) lists the targets that
    inner_target gives a layer whose every outer iteration settles: the `thesis` game's 5-player
    ladder is $0.1 … $0.0001 in 7 levels."""
    from engine.target_ladder import FIRST_TARGET, FIRST_TARGET_DEFAULT, inner_target, level_of, target_levels

    gamma, m, log = 1e-4, 500, []
    while not log or log[-1]["target"] > gamma:
        log.append({"target": inner_target(gamma, log, True, m, FIRST_TARGET.get(players, FIRST_TARGET_DEFAULT)),
                    "states_updated": 0})
    assert [e["target"] for e in log] == target_levels(gamma, players)
    assert [level_of(float(np.float32(e["target"])), gamma, players) for e in log] == list(range(1, len(log) + 1))
    if players == 5:
        assert target_levels(gamma, players) == pytest.approx([1e-1, 10 ** -1.5, 1e-2, 10 ** -2.5, 1e-3, 10 ** -3.5, 1e-4])


def test_neighbour_table_moves_one_unit_between_two_players():
    from engine.states import enumerate_states, state_index
    from engine.warm_starts import neighbour_table

    stacks = enumerate_states(9, 4)
    table = neighbour_table(stacks)
    assert table.shape == (len(stacks), 4 * 3)
    for s, row in enumerate(stacks):
        expected = []  # column by column: a unit from j to i, (i, j) in order, j ≠ i; −1 where j has one unit
        for i in range(4):
            for j in range(4):
                if i != j:
                    moved = row.copy()
                    moved[i] += 1
                    moved[j] -= 1
                    expected.append(state_index(moved) if row[j] > 1 else -1)
        assert table[s].tolist() == expected


@pytest.mark.parametrize("units,players", [(6, 2), (9, 3), (11, 4), (12, 5)])
def test_tree_shape_groups_states_with_the_same_hand_tree(units, players):
    """States share a tree_shape exactly when their compiled hands have the same nodes."""
    from engine.layers import compile_layer
    from engine.warm_starts import tree_shape

    stacks, hands = compile_layer(units, players, (50.0, 30.0, 20.0)[:max(2, min(players, 3))])
    shape = tree_shape(stacks)
    trees = [h.node_depth.tobytes() + h.node_actor.tobytes() + h.node_fold.tobytes() + h.node_jam.tobytes()
             for h in hands]
    pairs = set(zip(shape.tolist(), trees))
    assert len(pairs) == len(set(trees)) == len(set(shape.tolist())) >= 2


@pytest.mark.parametrize("chain", [16, 3])
def test_warm_start_waves_take_each_source_from_the_wave_before(monkeypatch, chain):
    """Every never-solved state starts from a neighbour of the same shape solved in the previous wave,
    but for one seed per connected group of same-shape neighbours and the states at multiples of the
    longest warm-start chain."""
    from engine import warm_starts
    from engine.layers import compile_layer
    from engine.warm_starts import neighbour_table, warm_start_waves

    monkeypatch.setattr(warm_starts, "WARM_CHAIN", chain)
    stacks, hands = compile_layer(12, 4, (50.0, 30.0, 20.0))
    wave, source = warm_start_waves(stacks)
    neighbours = neighbour_table(stacks)
    assert (wave >= 0).all()
    shapes = [h.node_depth.tobytes() for h in hands]
    for s in range(len(hands)):
        if source[s] < 0:
            assert wave[s] % chain == 0
            continue
        assert source[s] in neighbours[s] and shapes[source[s]] == shapes[s]
        assert wave[source[s]] == wave[s] - 1
    # one seed per connected group of same-shape neighbours: the group's lowest-numbered state
    group = list(range(len(hands)))

    def root(x):
        while group[x] != x:
            x = group[x]
        return x

    for s, row in enumerate(neighbours):
        for k in row[row >= 0]:
            if shapes[k] == shapes[s]:
                group[max(root(s), root(k))] = min(root(s), root(k))
    lowest = sorted({root(s) for s in range(len(hands))})
    assert np.flatnonzero(wave == 0).tolist() == lowest
    assert len(lowest) < len(hands) // 10
    assert ((source < 0) == (wave % chain == 0)).all()
    assert (chain == 3) == (wave.max() >= chain)  # the cap binds in the 3-long case only


def test_a_layer_solve_gives_the_same_result_on_one_and_two_threads(tiny_tensors):
    """Warm starts in waves and workspaces that forget between states: thread timing cannot change the result."""
    lower = {2: solve_layer(8, 2, PAYOUTS, GAMMA, tiny_tensors, {}, threads=1).values}
    one = solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1)
    two = solve_layer(8, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2)
    assert [e["cfr_iterations"] for e in one.log] == [e["cfr_iterations"] for e in two.log]
    np.testing.assert_array_equal(one.values, two.values)
    np.testing.assert_array_equal(one.exploitability, two.exploitability)
    for a, b in zip(one.strategy, two.strategy):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("slack", [{}, {3: 0.5}])
def test_states_are_solved_to_the_slack_times_the_target(tiny_tensors, solved, monkeypatch, slack):
    """A state that must be solved aims at SOLVE_SLACK × the outer iteration's target, while the
    layer's checks and its certification still use the target itself."""
    from engine.cfr import HandSolver

    targets = []
    original = HandSolver.solve

    def solve(self, U, target, *args, **kwargs):
        targets.append(target)
        return original(self, U, target, *args, **kwargs)

    monkeypatch.setattr(state_resolve, "SOLVE_SLACK", slack)
    monkeypatch.setattr(HandSolver, "solve", solve)
    lower = {2: solved[2].values}
    layer = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=2)
    factor = slack.get(3, 1.0)
    levels = {e["target"] for e in layer.log if e["states_updated"]}
    aimed = sorted({float(np.float32(t / factor)) for t in targets})
    assert aimed == sorted({float(np.float32(t)) for t in levels})
    assert layer.exploitability.max() <= GAMMA


def test_a_state_is_resolved_unchecked_only_when_its_check_would_fail(tiny_tensors, solved, monkeypatch):
    """A layer solve re-solves a state without its exact check first (needs_no_check) only when the
    check would have found it above the target: every such skip is verified against an exact
    evaluation of the state's profile in a fresh solver and workspace, right before the re-solve.
    The tiny layer must hit the skip, and it still ends with every state within gamma."""
    from engine.cfr import HandSolver
    from engine.hand_pass import Workspace

    lower = {2: solved[2].values}
    decide, resolve = state_resolve.needs_no_check, HandSolver.solve
    pending: list[float] = []  # the layer target of a state just skipped, until its re-solve
    verified: list[tuple[float, float]] = []

    def needs_no_check(lower_bound, upper_bound, target):
        skip = decide(lower_bound, upper_bound, target)
        if skip:
            pending.append(target)
        return skip

    def solve(self, U, *args, **kwargs):
        if pending:
            target = pending.pop()
            e, _ = HandSolver(self.hand, self.tensors).exploitability(U, self.solution,
                                                                      ws=Workspace.for_hand(self.hand))
            verified.append((e, target))
        return resolve(self, U, *args, **kwargs)

    monkeypatch.setattr(state_resolve, "needs_no_check", needs_no_check)
    monkeypatch.setattr(HandSolver, "solve", solve)
    layer = solve_layer(6, 3, PAYOUTS, GAMMA, tiny_tensors, lower, threads=1)
    assert verified and not pending
    assert all(e > target for e, target in verified)
    assert_certified_from_scratch(layer, lower, tiny_tensors)


@pytest.mark.parametrize("items,threads", [(0, 2), (5, 2), (7, 16), (100, 2), (1001, 3)])
def test_solver_pool_yields_every_result_once_with_its_item(items, threads):
    """The pool hands states out in chunks but must yield every (item, result) pair once."""
    from engine.game_tree import compile_hand
    from engine.states import state_index
    from engine.solver_pool import SolverPool

    pool = SolverPool(threads, compile_hand((3, 3), (1.0,), state_index))
    try:
        out = list(pool.imap_done(lambda x: x * x, range(items)))
    finally:
        pool.close()
    assert sorted(out) == [(x, x * x) for x in range(items)]


def test_solver_pool_does_not_hold_finished_results_behind_a_slow_one():
    """A slow state must not keep the states finished after it from the main thread, which saves
    them in blocks: an interrupt would lose them however long ago they were done. The first item
    waits until the other nine have reached the consumer (an ordered pool would give it first,
    after the wait's 10 s timeout)."""
    import threading

    from engine.game_tree import compile_hand
    from engine.states import state_index
    from engine.solver_pool import SolverPool

    release = threading.Event()

    def fn(x: int) -> int:
        if x == 0:
            release.wait(10.0)
        return x

    pool = SolverPool(2, compile_hand((3, 3), (1.0,), state_index))
    received = []
    try:
        for item, _ in pool.imap_done(fn, range(10)):
            received.append(item)
            if len(received) == 9:
                release.set()
    finally:
        release.set()
        pool.close()
    assert received[:9] == list(range(1, 10)) and received[9] == 0


def test_a_hand_left_above_target_at_the_iteration_cap_is_reported(tiny_tensors, solved):
    """A solve that runs out of CFR+ iterations leaves its state above the target; the layer says so
    (an "uncertified" progress event: stacks, exploitability, iterations). Forced here with a cap
    of one batch of 8 iterations, in the layer's first outer iteration, which solves every state
    under ICM's successor values. (Stopped there by ``max_outer``, the layer then measures every
    state under its own values; that is tested below.)"""
    from engine.cfr import HandSolver
    from engine.game_tree import utilities

    events: list[dict] = []
    layer = solve_layer(6, 3, PAYOUTS, GAMMA / 100, tiny_tensors, {2: solved[2].values}, threads=1, max_outer=1,
                        max_iterations=8, loose=False, progress=events.append)
    left = [e for e in events if e["event"] == "uncertified"]
    assert left, "no state hit the cap"
    icm = {2: solved[2].values, 3: icm_values(layer.stacks, PAYOUTS)}  # the values the states were solved under
    solved_under_icm = [HandSolver(hand, tiny_tensors).exploitability(utilities(hand, icm), sigma=layer.strategy[s])[0]
                        for s, hand in enumerate(layer.hands)]
    for e in left:
        s = next(i for i, st in enumerate(layer.stacks.tolist()) if st == e["stacks"])
        assert e["exploitability"] > e["target"] == GAMMA / 100 and e["cfr_iterations"] == 8
        assert solved_under_icm[s] == pytest.approx(e["exploitability"])
    above = {tuple(st) for st, x in zip(layer.stacks.tolist(), solved_under_icm) if x > GAMMA / 100}
    assert above <= {tuple(e["stacks"]) for e in left}  # every state left above the target is reported


@pytest.mark.parametrize("held_slack,ends", [(2.0, True), (0.0, False)])
def test_a_layer_with_hands_held_at_the_iteration_cap_still_ends(tiny_tensors, solved, monkeypatch, held_slack,
                                                                    ends):
    """A state left above the target at the CFR+ iteration cap is not solved again at that target
    until it is HELD_SLACK times as exploitable as it was left, so the layer ends (an outer
    iteration at gamma updates no state) instead of spending the cap on it in every outer
    iteration up to max_outer; its exploitability is still measured and reported. Without holding
    (HELD_SLACK 0) the same layer never ends: stopped by max_outer, it too reports every state's
    exploitability measured under its final values (it used to keep those its last outer iteration
    had solved under the values before that iteration's policy evaluation)."""
    from engine.cfr import HandSolver
    from engine.game_tree import utilities

    monkeypatch.setattr(state_resolve, "HELD_SLACK", held_slack)
    events: list[dict] = []
    max_outer = 12
    layer = solve_layer(6, 3, PAYOUTS, GAMMA / 100, tiny_tensors, {2: solved[2].values}, threads=1,
                        max_outer=max_outer, max_iterations=8, loose=False, progress=events.append,
                        held_retries=0)  # (the retries with a larger cap are tested below)
    assert (len(layer.log) < max_outer and layer.log[-1]["states_updated"] == 0) == ends
    if ends:
        reported = {tuple(e["stacks"]) for e in events if e["event"] == "uncertified"}
        above = {tuple(st) for st, x in zip(layer.stacks.tolist(), layer.exploitability) if x > GAMMA / 100}
        assert above and above <= reported
    values = {2: solved[2].values, 3: layer.values}
    for s, hand in enumerate(layer.hands):  # measured under the final values, held or not, settled or not
        e, _ = HandSolver(hand, tiny_tensors).exploitability(utilities(hand, values), sigma=layer.strategy[s])
        assert e == pytest.approx(layer.exploitability[s], abs=1e-9), s


def _over(layer, target: float) -> set[tuple[int, ...]]:
    return {tuple(st) for st, x in zip(layer.stacks.tolist(), layer.exploitability) if x > target}


def test_a_layer_settled_above_gamma_retries_its_held_states_with_a_larger_cap(tiny_tensors, solved):
    """States held at gamma (their solves ran into the CFR+ iteration cap, 8 here) would end the
    layer above gamma, and its blocking check would stop the build for good. Settled so, the layer
    solves them again with twice the cap; then every state is within gamma, measured exactly under
    the final values. Without retries the same layer ends with them above."""
    from engine.cfr import HandSolver
    from engine.game_tree import utilities
    from engine.solve_progress import layer_log_line

    target, lower = GAMMA / 100, {2: solved[2].values}
    without = solve_layer(6, 3, PAYOUTS, target, tiny_tensors, lower, threads=1, max_iterations=8, loose=False,
                          held_retries=0)
    assert _over(without, target), "no state was held above gamma: the cap no longer forces the case"
    events: list[dict] = []
    layer = solve_layer(6, 3, PAYOUTS, target, tiny_tensors, lower, threads=1, max_iterations=8, loose=False,
                        held_retries=2, progress=events.append)
    retries = [e for e in events if e["event"] == "retrying_held"]
    assert [(e["retry"], e["states"], e["max_iterations"]) for e in retries] == [(1, len(_over(without, target)), 16)]
    at = events.index(retries[0])  # announced right after the outer iteration that settled (and its save)
    assert events[at - 1]["event"] == "outer" and events[at - 1]["outer_iteration"] == retries[0]["outer_iteration"]
    assert retries[0]["exploitability"] == pytest.approx(max(without.exploitability))
    assert layer_log_line(retries[0])[0] == "warning" and "16" in layer_log_line(retries[0])[1]
    assert not _over(layer, target) and len(layer.log) > len(without.log)
    values = {**lower, 3: layer.values}
    for s, hand in enumerate(layer.hands):
        e, _ = HandSolver(hand, tiny_tensors).exploitability(utilities(hand, values), sigma=layer.strategy[s])
        assert e <= target and e == pytest.approx(layer.exploitability[s], abs=1e-12), s


def test_a_layer_finished_above_gamma_is_reopened_by_the_next_run(tiny_tensors, solved, tmp_path):
    """A layer that finished above gamma (its retries spent, none here) is read back from its
    checkpoint and tried again by the next run (a rebuild: what the failed check tells the user to
    do); a layer finished within gamma is only read back."""
    target, lower = GAMMA / 100, {2: solved[2].values}
    kwargs = dict(threads=1, max_iterations=8, loose=False, checkpoint=tmp_path)
    first = solve_layer(6, 3, PAYOUTS, target, tiny_tensors, lower, held_retries=0, **kwargs)
    over = _over(first, target)
    assert over
    events: list[dict] = []
    second = solve_layer(6, 3, PAYOUTS, target, tiny_tensors, lower, held_retries=2, progress=events.append, **kwargs)
    resumed = next(e for e in events if e["event"] == "resumed")
    assert resumed["over_gamma"] == len(over) and resumed["outer"] == len(first.log)
    retries = [e for e in events if e["event"] == "retrying_held"]
    assert [(e["outer_iteration"], e["states"], e["max_iterations"]) for e in retries] == [(len(first.log), len(over), 16)]
    assert not _over(second, target) and second.log[:len(first.log)] == first.log
    reopened = second.log[len(first.log)]  # the retry is the reopened layer's first work, at gamma
    assert reopened["states_updated"] >= len(over) and reopened["target"] == target
    events.clear()
    third = solve_layer(6, 3, PAYOUTS, target, tiny_tensors, lower, held_retries=2, progress=events.append, **kwargs)
    resumed = next(e for e in events if e["event"] == "resumed")
    assert resumed["finished"] and not resumed["over_gamma"] and not any(e["event"] == "outer" for e in events)
    np.testing.assert_array_equal(third.values, second.values)
    assert third.log == second.log


def test_outcome_probabilities_of_the_stored_profile_are_the_solves(tiny_tensors, solved):
    """A profile read back (its strategies only) gives the outcome probabilities the solve evaluated
    its layer with, on any number of threads; with them, the policy evaluation gives back its values."""
    from engine.policy_evaluation import evaluate_layer
    from engine.profile_outcomes import outcome_probabilities

    lower = {}
    for n, layer in sorted(solved.items()):
        events = []
        one = outcome_probabilities(layer.hands, layer.strategy, tiny_tensors, threads=1)
        two = outcome_probabilities(layer.hands, layer.strategy, tiny_tensors, threads=2, progress=events.append)
        for s in range(len(layer.hands)):
            np.testing.assert_array_equal(one[s], two[s])
            np.testing.assert_allclose(one[s], layer.order_probs[s], atol=1e-12)
        np.testing.assert_allclose(evaluate_layer(layer.hands, one, n, lower), layer.values, atol=1e-9)
        lower[n] = layer.values


def test_outcome_probabilities_interrupted_keep_the_states_they_finished(tiny_tensors, solved, tmp_path, monkeypatch):
    """Killed after three states of the 3-player layer (a block checkpoint after every state here,
    every 5 minutes in a build), the pass resumes with those read back, computes only the others,
    and gives the uninterrupted result to the bit."""
    import time

    import engine.profile_outcomes as po
    from engine.cfr import HandSolver
    from engine.solve_progress import outcome_log_line

    layer = solved[3]
    m = len(layer.hands)
    assert m > 5
    straight = po.outcome_probabilities(layer.hands, layer.strategy, tiny_tensors, threads=2)

    class Interrupt(Exception):
        pass

    def stop(event):
        if event["event"] == "outcome_states" and event["done"] == 3:
            raise Interrupt
        if event["event"] == "outcome_states":
            time.sleep(0.3)  # the first run's work, as time: its blocks must keep it

    monkeypatch.setattr(po, "PROGRESS_EVERY_S", 0.0)
    with pytest.raises(Interrupt):
        po.outcome_probabilities(layer.hands, layer.strategy, tiny_tensors, threads=2, progress=stop,
                                 checkpoint=tmp_path, checkpoint_every=0.0)
    blocks = list(tmp_path.glob("outcomes.layer3.block*.npz"))
    assert len(blocks) == 3
    kept = max(float(np.load(p)["elapsed"]) for p in blocks)
    assert kept >= 0.6
    _add_kept_seconds(blocks, 1000.0)
    kept += 1000.0
    events, computed = [], []
    monkeypatch.setattr(po, "HandSolver", lambda hand, tensors: computed.append(hand) or HandSolver(hand, tensors))
    started = time.perf_counter()
    resumed = po.outcome_probabilities(layer.hands, layer.strategy, tiny_tensors, threads=2, progress=events.append,
                                       checkpoint=tmp_path, checkpoint_every=0.0)
    spent = time.perf_counter() - started
    assert len(computed) == m - 3
    assert events[0] == {"event": "outcome_resumed", "players": 3, "states": 3}
    assert outcome_log_line(events[0]) == ("3-player layer, hand outcomes of the profile: 3 states already done "
                                           "in an earlier run")
    assert [e["done"] for e in events[1:]] == list(range(4, m))
    assert all(kept <= e["wall_s"] <= kept + spent for e in events[1:])  # the interrupted run's seconds count too
    resumed_blocks = [p for p in tmp_path.glob("outcomes.layer3.block*.npz") if p not in blocks]
    assert len(resumed_blocks) == m - 3  # (one a state here) and each keeps the seconds of both runs so far
    assert all(kept <= float(np.load(p)["elapsed"]) <= kept + spent for p in resumed_blocks)
    for s in range(m):
        np.testing.assert_array_equal(resumed[s], straight[s])

    # the last block goes with the last state: a caller interrupted after the pass reads it all back
    whole, fresh = tmp_path / "whole", []
    po.outcome_probabilities(layer.hands, layer.strategy, tiny_tensors, threads=2, checkpoint=whole,
                             checkpoint_every=1e9, progress=fresh.append)
    assert len(list(whole.glob("outcomes.layer3.block*.npz"))) == 1
    assert "outcome_resumed" not in {e["event"] for e in fresh}  # (nothing read back: no resume to report)
    computed.clear()
    again = po.outcome_probabilities(layer.hands, layer.strategy, tiny_tensors, threads=2, checkpoint=whole)
    assert computed == [] and all(np.array_equal(a, b) for a, b in zip(again, straight))


def test_time_left_leaves_out_the_first_state(monkeypatch):
    """The estimate of the time left within an outer iteration (and a sweep's, a nemesis round's)
    runs at the rate of the states finished after the first: the first holds numba's compile. A
    scripted clock: the first state 100 s, then 1 s each. Counted in, the first state made a layer
    of seconds read "about 33 min left"."""
    import engine.solve_progress as sp
    from engine import tournament

    monkeypatch.setattr(sp.time, "perf_counter", _scripted_clock([0.0] + [100.0 + k for k in range(20)]))
    events = []
    list(sp.states_done_events(range(20), 20, events.append, every=0.0, event={"event": "x"}))
    assert "left_s" not in events[0] and events[0]["done"] == 1
    assert [e["left_s"] for e in events[1:]] == [1.0 * (20 - e["done"]) for e in events[1:]]

    monkeypatch.setattr(tournament.time, "perf_counter", _scripted_clock([0.0] + [100.0 + k for k in range(20)]))
    ticks = []
    ticker = tournament._Ticker(ticks.append, n=4, outer=1, kinds=np.zeros(20, np.int64), todo=np.ones(20, bool),
                                every=0.0)
    for s in range(20):
        ticker.tick(s, started=0.0 if s == 0 else 99.0 + s)
    assert "left_s" not in ticks[0] and ticks[0]["wall_s"] == 100.0
    assert "left_s" not in ticks[1]  # nor is the first state of a kind (see KindedClock)
    assert [e["left_s"] for e in ticks[2:]] == [1.0 * (20 - e["done"]) for e in ticks[2:]]


def test_states_done_events_come_at_most_every_period_and_count_earlier_runs(monkeypatch):
    """The one throttle of the sweeps', nemesis rounds' and hand outcomes' loops: an event once at
    least ``every`` seconds have passed since the last, none after the last state (the loop's own
    line says that), counting the states and seconds of earlier runs. A scripted clock: 9 states
    finished at 3, 6, …, 24 and 30 s, every 10 s, 5 states and 100 s done before."""
    import engine.solve_progress as sp

    finished = [3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0, 24.0, 30.0]
    monkeypatch.setattr(sp.time, "perf_counter", _scripted_clock([0.0] + finished))
    events = []
    results = list(sp.states_done_events(iter("abcdefghi"), 9, events.append, every=10.0, event={"event": "x"},
                                         done_before=5, wall_before=100.0))
    assert results == list("abcdefghi")
    # left: at the rate of the states after the first (3 s each), for the states left in this run
    assert events == [{"event": "x", "done": 9, "states": 14, "wall_s": 112.0, "left_s": 15.0},
                      {"event": "x", "done": 13, "states": 14, "wall_s": 124.0, "left_s": 3.0}]
    monkeypatch.setattr(sp.time, "perf_counter", _scripted_clock([0.0] + finished))
    events = []
    list(sp.states_done_events(range(9), 9, events.append, every=10.0, event={"event": "x"}, states=20))
    assert [(e["done"], e["states"], e["wall_s"]) for e in events] == [(4, 20, 12.0), (8, 20, 24.0)]


def test_time_left_prices_each_kind_of_state_at_its_own_cost():
    """A first outer iteration solves wave after wave, each wave's cold starts several times a warm
    start's cost: at the rate of all states, the 45-unit 5-player layer's estimate swung from 14.6
    to 4.6 h within three minutes. Priced per kind, the estimate is the time the states left take
    as soon as each kind has been seen. A scripted single thread: a first state of 50 s (the
    compile), four cold states of 10 s, then warm ones of 1 s, with 5 cold and 10 warm left."""
    from engine.solve_progress import KindedClock, seconds_left

    kinds = np.array([1] * 5 + [0] * 10 + [1] * 5 + [0] * 10)  # 1 = cold, 0 = warm
    clock = KindedClock(kinds, np.ones(len(kinds), bool))
    t, estimates, plain, truth = 0.0, [], [], []
    cost = {0: 1.0, 1: 10.0}
    for s, kind in enumerate(kinds):
        took = 50.0 if s == 0 else cost[int(kind)]
        clock.finished(s, t, t + took)
        t += took
        estimates.append(clock.seconds_left(t).get("left_s"))
        plain.append(seconds_left(t - 50.0, s, len(kinds) - 1 - s).get("left_s"))  # the rate of all states
        truth.append(sum(cost[int(k)] for k in kinds[s + 1:]))
    assert estimates[0] is None and estimates[1] is None  # the start-up, a kind's first state: not a rate
    assert estimates[2:6] == pytest.approx([10.0 * (len(kinds) - 1 - s) for s in range(2, 6)])  # warm not timed yet
    assert estimates[6:] == pytest.approx(truth[6:])  # both kinds timed: exact
    assert max(abs(a - b) / b for a, b in zip(plain[5:15], truth[5:15])) > 1.0  # the plain rate: off by over 2×

    # a kind not seen yet (here the warm one, for four states) is priced by its cost relative to the seen ones
    clock, t, estimates = KindedClock(kinds, np.ones(len(kinds), bool), prior=np.array([1.0, 10.0])), 0.0, []
    for s, kind in enumerate(kinds):
        took = 50.0 if s == 0 else cost[int(kind)]
        clock.finished(s, t, t + took)
        t += took
        estimates.append(clock.seconds_left(t).get("left_s"))
    assert estimates[2:] == pytest.approx(truth[2:])


def test_time_left_measures_the_parallelism():
    """Thread seconds become wall seconds at the parallelism measured since the first state
    finished: two threads, each finishing a 2-s state every 2 s, with 10 left: 10 s of wall time."""
    from engine.solve_progress import KindedClock

    clock = KindedClock(np.zeros(16, np.int64), np.ones(16, bool))
    clock.finished(0, 0.0, 30.0)  # the start-up: both threads waited for the compile
    for k in range(3):  # both threads ran states of 2 s side by side
        clock.finished(1 + 2 * k, 30.0 + 2 * k, 32.0 + 2 * k)
        clock.finished(2 + 2 * k, 30.0 + 2 * k, 32.0 + 2 * k)
    assert clock.seconds_left(36.0)["left_s"] == pytest.approx(9 * 2.0 / 2)


def test_time_left_counts_the_states_still_running():
    """Right after a resume both threads are in long states: the one short state finished so far
    must not make the run look single-threaded at a tenth of its speed. Two threads: thread A's
    start-up state ends at 30 s, then two 0.1-s states, then a long one still running at 31 s; thread
    B's first state, started in the start-up, still running. At 31 s two thread-seconds were spent
    in one wall second: the 13 states left at 0.1 s each take 0.65 s (counted only once finished,
    0.2 thread-seconds in that wall second: 6.5 s)."""
    from engine.solve_progress import KindedClock

    clock = KindedClock(np.zeros(16, np.int64), np.ones(16, bool))
    clock.begin(0, 0.0)
    clock.begin(1, 0.0)
    clock.finished(0, 0.0, 30.0)
    clock.begin(2, 30.0)
    clock.finished(2, 30.0, 30.1)  # (the kind's first state: not counted in its mean)
    clock.begin(3, 30.1)
    clock.finished(3, 30.1, 30.2)
    clock.begin(4, 30.2)
    assert clock.seconds_left(31.0)["left_s"] == pytest.approx(13 * 0.1 * 1.0 / 2.0)


def test_the_loops_time_their_states_into_the_kinded_clock(monkeypatch):
    """The sweeps', nemesis rounds' and hand outcomes' loops time each state (``KindedClock.timed``)
    and report the clock's estimate; a state's kind is its tree (one pass cost per tree shape)."""
    import engine.solve_progress as sp
    from engine.solve_progress import cost_kinds, kinded_clock
    from engine.layers import compile_layer
    from engine.warm_starts import tree_shape

    stacks, hands = compile_layer(12, 4, (50.0, 30.0, 20.0))
    kinds, prior = cost_kinds(hands)
    shape = tree_shape(stacks)
    assert len(set(zip(kinds.tolist(), shape.tolist()))) == len(set(shape.tolist())) == len(prior) == 4
    assert prior[kinds].tolist() == [float(int((h.node_depth == 2).sum()) * 169 * 169 + len(h.node_actor) * 169)
                                     for h in hands]

    order = [int(s) for s in np.argsort(-prior[kinds], kind="stable")]  # the heaviest trees first
    costs = {k: 0.001 * (1 + k) for k in range(len(prior))}
    t = [0.0]
    monkeypatch.setattr(sp.time, "perf_counter", lambda: t[0])

    def work(s: int) -> int:
        t[0] += 100.0 if s == order[0] else costs[int(kinds[s])]
        return s

    clock = kinded_clock(hands, order)
    events = []
    out = list(sp.states_done_events(map(clock.timed(work), order), len(order), events.append, every=0.0,
                                     event={"event": "x"}, clock=clock))
    assert out == order
    def every_tree_timed(done: int) -> bool:  # two states of each after the start-up (the first is not counted)
        return bool((np.bincount(kinds[order[1:done]], minlength=len(prior)) >= 2).all())

    for e in events[1:]:
        left = sum(costs[int(kinds[s])] for s in order[e["done"]:])
        if every_tree_timed(e["done"]):  # exact
            assert e["left_s"] == pytest.approx(left)
    assert any(every_tree_timed(e["done"]) for e in events)


def test_compile_layer_ranks_successors_as_state_index_does():
    """compile_layer ranks each successor state once (a cache over the layer): its hands are the
    ones compiled with the plain, validating state_index."""
    import dataclasses

    from engine.game_tree import compile_hand
    from engine.hand import hand_tree
    from engine.states import state_index
    from engine.layers import compile_layer

    payouts = (50.0, 30.0, 20.0)
    stacks, hands = compile_layer(12, 4, payouts)
    assert len(hands) == len(stacks) == 165
    for row, hand in zip(stacks, hands):
        key = tuple(int(x) for x in row)
        plain = compile_hand(key, payouts, state_index, hand_tree(key, payouts))
        for f in dataclasses.fields(plain):
            a, b = getattr(plain, f.name), getattr(hand, f.name)
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, (key, f.name)


def _resident_mib() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * 4096 / 2**20


def _replace_in_threads(records: list) -> None:
    """Each record replaced by a new one made in one of two threads, as solver threads replace the
    records a restore made in the main thread: the old ones are freed into the main thread's arena."""
    import threading

    def replace(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            records[i] = np.ones((20, 169))

    n = len(records)
    threads = [threading.Thread(target=replace, args=(k * n // 2, (k + 1) * n // 2)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def _in_a_fresh_process(body) -> None:
    """Run ``body``, a function of this module, in a new Python process, and fail with its error.

    Resident memory measured there does not depend on the heap that the suite's earlier tests left
    in this worker, which changes with the order xdist hands them out (in one whole-suite run only
    99 of 206 freed MiB went back to the system in a worker)."""
    import subprocess
    import sys

    from engine.memory import release_free_memory

    if not Path("/proc/self/statm").exists():
        pytest.skip("reads resident memory from /proc")
    if not release_free_memory():
        pytest.skip("the C library has no malloc_trim")
    here = Path(__file__).resolve().parent
    code = f"import sys; sys.path[:0] = [{str(here)!r}]; import test_tournament; test_tournament.{body.__name__}()"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=here.parent)
    assert done.returncode == 0, done.stderr


def test_freed_records_go_back_to_the_system():
    """Records made in the main thread (a restore) and replaced by solver threads stay in the main
    thread's arena: resident memory doubles until ``release_free_memory`` hands the pages back."""
    _in_a_fresh_process(_freed_records_go_back_to_the_system)


def _freed_records_go_back_to_the_system() -> None:
    from engine.memory import release_free_memory

    records = [np.ones((20, 169)) for _ in range(8000)]  # 26 KiB each, about 206 MiB
    before = _resident_mib()
    _replace_in_threads(records)
    assert _resident_mib() - before > 150  # the replaced records are still held
    release_free_memory()
    assert _resident_mib() - before < 50


RELEASED_MIB = 150
"""Of the about 206 MiB of freed records below, what a release must hand back (MiB of resident memory;
202 MiB went back each time in a fresh process, none without the release)."""


def test_heavy_loops_start_by_handing_back_freed_memory():
    """The assets run in one process: what one asset freed (a finished layer's solvers) stayed
    resident, out of the next loop's threads' reach. A layer solve and a solver pool (every heavy
    loop makes one) hand it back before they allocate: about 200 MiB of freed records, left in the
    main thread's arena as a finished layer's are, gone by the solve's first progress event."""
    _in_a_fresh_process(_heavy_loops_start_by_handing_back_freed_memory)


def _heavy_loops_start_by_handing_back_freed_memory() -> None:
    from conftest import tiny_pair_table
    from engine.hand_pass import SolverTensors
    from engine.layers import compile_layer
    from engine.showdown import showdown_tensors
    from engine.solver_pool import SolverPool

    # heads-up tensors (no triple table): the layer below is the 2-player one, and this process
    # makes its own tensors (0.4 s against 4.4 s with a sampled triple table)
    heads_up_tensors = SolverTensors(showdown_tensors(tiny_pair_table(), None))

    def leave_freed_records() -> list:
        records = [np.ones((20, 169)) for _ in range(8000)]  # about 206 MiB
        _replace_in_threads(records)
        return records

    _, hands = compile_layer(6, 2, PAYOUTS)
    kept = leave_freed_records()
    held = _resident_mib()
    SolverPool(1, hands[0]).close()
    assert held - _resident_mib() > RELEASED_MIB

    kept += leave_freed_records()
    held = _resident_mib()
    seen = []
    solve_layer(6, 2, PAYOUTS, 1e-2, heads_up_tensors, {}, threads=1,
                progress=lambda e: seen.append(_resident_mib()) if e["event"] == "preparing" else None)
    assert held - seen[0] > RELEASED_MIB

    # the finishing probabilities, the ex post checks and the sweeps start by compiling their layers
    kept += leave_freed_records()
    held = _resident_mib()
    compile_layer(6, 2, PAYOUTS)
    assert held - _resident_mib() > RELEASED_MIB
    assert len(kept) == 24_000


def test_a_layer_solve_drops_its_solvers_and_hands_their_memory_back_before_it_returns(tiny_tensors, tmp_path,
                                                                                        monkeypatch):
    """The build runs its assets in one process: the 5-player layer's solvers (about 10 GiB) are
    dropped and their pages handed back when the solve returns, so the next asset's allocations are
    not added on top of them. Counted at each trim: no solver is left at the last."""
    import gc
    import weakref

    import engine.tournament as tournament

    made = []

    class CountedSolver(tournament.HandSolver):  # this solve's solvers only, whatever other tests left
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(weakref.ref(self))

    alive = []

    def count_solvers_then_trim() -> bool:
        gc.collect()
        alive.append(sum(ref() is not None for ref in made))
        return True

    monkeypatch.setattr(tournament, "HandSolver", CountedSolver)
    monkeypatch.setattr(tournament, "release_free_memory", count_solvers_then_trim)
    solution = solve_layer(6, 2, PAYOUTS, 1e-2, tiny_tensors, {}, threads=1, checkpoint=tmp_path)
    assert max(alive) >= len(solution.hands) and alive[-1] == 0  # (trims at the checkpoints saw them)


def test_estimable_order_samples_every_kind_first():
    """A re-solving outer iteration takes a few random states of every kind first, then the rest
    heaviest kind first: the same states, every kind met within the first turn, repeatable."""
    from engine.solve_progress import estimable_order

    rng = np.random.default_rng(0)
    kinds = rng.integers(0, 6, 500)
    order = np.argsort(kinds, kind="stable")[::-1].copy()  # "heaviest first": kind 5 first
    got = estimable_order(order, kinds, seed=3, pilot=4)
    assert sorted(got.tolist()) == list(range(500))
    assert np.array_equal(got, estimable_order(order, kinds, seed=3, pilot=4))
    assert not np.array_equal(got, estimable_order(order, kinds, seed=4, pilot=4))
    assert kinds[got[:6]].tolist() == [5, 4, 3, 2, 1, 0]  # the first turn: one of each, heaviest first
    assert sorted(kinds[got[:24]].tolist()) == sorted([k for k in range(6)] * 4)
    rest = kinds[got[24:]]
    assert np.all(np.diff(rest) <= 0)  # then kind by kind, as in the order given


def test_estimable_loop_leaves_out_what_is_done_and_meets_every_tree_first():
    """A model sweep's order (resumed with some states done): every state not done, once; a state
    of every tree among the first; the same order again for the same seed."""
    from engine.solve_progress import cost_kinds, estimable_loop
    from engine.layers import compile_layer
    from engine.solver_pool import heaviest_first

    _, hands = compile_layer(12, 4, (50.0, 30.0, 20.0))
    kinds, _ = cost_kinds(hands)
    done = set(range(0, len(hands), 3))
    todo, clock = estimable_loop(hands, heaviest_first(hands), done, seed=4)
    assert sorted(todo) == [s for s in range(len(hands)) if s not in done]
    kinds_left = set(kinds[todo].tolist())
    assert len(kinds_left) >= 3 and set(kinds[todo[:len(kinds_left)]].tolist()) == kinds_left
    assert todo == estimable_loop(hands, heaviest_first(hands), done, seed=4)[0]
    assert np.array_equal(clock.left, np.bincount(kinds[todo], minlength=len(clock.left)))  # the states left


def test_estimable_order_prices_kinds_by_their_own_states():
    """Scripted costs where the pass-cost prior is wrong (the lightest tree costs most, as the
    lighter trees' re-solves did in the thesis layer's second outer iteration): a tenth of the way
    in, heaviest first misses the truth by far more than the pilot order does."""
    from engine.solve_progress import KindedClock, estimable_order

    kinds = np.repeat([0, 1, 2], [400, 400, 400])
    prior = np.array([3.0, 2.0, 1.0])  # pass costs: kind 0 heaviest
    cost = np.array([1.0, 1.0, 5.0])[kinds]  # but kind 2 needs many more iterations
    heaviest = np.arange(1200)

    def estimate_at_a_tenth(order):
        clock, t = KindedClock(kinds, np.ones(1200, bool), prior), 0.0
        for s in order[:120]:
            clock.finished(int(s), t, t + cost[s])
            t += cost[s]
        return clock.seconds_left(t)["left_s"], cost[order[120:]].sum()

    plain, truth = estimate_at_a_tenth(heaviest)
    assert plain < 0.5 * truth
    sampled, truth = estimate_at_a_tenth(estimable_order(heaviest, kinds, seed=1))
    assert sampled == pytest.approx(truth, rel=0.05)


def test_a_kinds_first_state_is_not_its_price():
    """The first state of a tree may compile the kernels only that tree uses: one 40-s state among
    0.1-s ones would price the kind's 300 states left at about 2 minutes instead of 30 s."""
    from engine.solve_progress import KindedClock

    kinds = np.array([0] + [1] * 310)
    clock, t = KindedClock(kinds, np.ones(len(kinds), bool)), 0.0
    for s, took in enumerate([5.0, 40.0] + [0.1] * 9):  # the start-up, then the tree's compile
        clock.finished(s, t, t + took)
        t += took
    assert clock.seconds_left(t)["left_s"] == pytest.approx(300 * 0.1)
