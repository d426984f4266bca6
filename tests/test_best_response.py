"""The ex post check (engine/best_response.py) against an independent value iteration.

The reference evaluates every hand by path enumeration (:mod:`brute_hand`), builds utilities
from the hand tree's outcomes, and runs plain value iteration of the nemesis MDP,
W ← root value + single-hand best-response gain, from the profile's own values — no policy
iteration, no sparse linear algebra, no CFR kernel.
"""

from __future__ import annotations

import shutil

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brute_hand import CardModel, PathEvaluator, utilities_from_outcomes
from engine.best_response import best_reply, ex_post, reply_key
from engine.game_tree import compile_hand
from engine.hand import hand_tree
from engine.states import enumerate_states, state_index

UNITS, PLAYERS, PAYOUTS = 5, 3, (70.0, 30.0)


@pytest.fixture(scope="module")
def game(tiny_showdown, tiny_tensors):
    tensors, model = tiny_tensors, CardModel(tiny_showdown)
    rng = np.random.default_rng(7)
    layers = {}
    for n in range(2, PLAYERS + 1):
        trees, hands, sigmas = [], [], []
        for row in enumerate_states(UNITS, n):
            stacks = tuple(int(x) for x in row)
            tree = hand_tree(stacks, PAYOUTS)
            trees.append(tree)
            hands.append(compile_hand(stacks, PAYOUTS, state_index, tree))
            # a range-like profile that is far from equilibrium: a random top set jams
            sigma = np.zeros((len(tree.nodes), 169))
            for h in range(len(tree.nodes)):
                sigma[h, rng.permutation(169)[:int(rng.integers(20, 150))]] = 1.0
                sigma[h, rng.integers(0, 169, 3)] = rng.uniform(0.1, 0.9, 3)
            sigmas.append(sigma)
        layers[n] = (trees, hands, sigmas)
    return tensors, model, layers


def _value_iteration(model, layers, start=None, tol: float = 1e-11):
    """Per layer, 2 players up: profile values (start=None, from 0) or nemesis values (from start)."""
    out = {}
    for n in sorted(layers):
        trees, _, sigmas = layers[n]
        evs = [PathEvaluator(t, model) for t in trees]
        X = np.zeros((len(trees), n)) if start is None else start[n].copy()
        for _ in range(5000):
            table = {**out, n: X}
            new = np.empty_like(X)
            for s, (ev, sigma) in enumerate(zip(evs, sigmas)):
                U = utilities_from_outcomes(ev.tree, ev.paths, table, state_index)
                new[s] = ev.root_values(sigma, U)
                if start is not None:
                    new[s] += ev.best_response_gains(sigma, U)
            done = np.abs(new - X).max() <= tol
            X = new
            if done:
                break
        out[n] = X
    return out


@pytest.fixture(scope="module")
def reference(game):
    """(profile values, nemesis values) per layer, by path enumeration and value iteration."""
    _, model, layers = game
    values = _value_iteration(model, layers)
    return values, _value_iteration(model, layers, start=values)


def test_nemesis_values_match_value_iteration(game, reference):
    tensors, _, layers = game
    values, nemesis = reference
    got = ex_post({n: (hands, sigmas, values[n]) for n, (_, hands, sigmas) in layers.items()}, tensors, threads=2)
    for n, (W, log) in got.items():
        np.testing.assert_allclose(W, nemesis[n], atol=1e-8)
        assert log[-1]["bellman_residual"] <= 1e-9
        assert len(log) < 10  # policy iteration: a handful of rounds


def test_gains_are_non_negative_and_real(game, reference):
    values, nemesis = reference
    for n in values:
        gain = nemesis[n] - values[n]
        assert gain.min() >= -1e-10
        assert gain.max() > 0.5  # the random profile is badly exploitable somewhere ($)


def test_best_reply_keeps_sigma_on_ties_and_other_players():
    sigma = np.full((3, 169), 0.5)
    cf_fold = np.zeros((3, 169))
    cf_jam = np.zeros((3, 169))
    cf_jam[0, :10] = 1.0
    cf_jam[0, 10:20] = -1.0
    reply = best_reply(sigma, cf_fold, cf_jam, np.array([0, 1, 0]), player=0)
    assert (reply[0, :10] == 1).all() and (reply[0, 10:20] == 0).all() and (reply[0, 20:] == 0.5).all()
    assert (reply[1] == 0.5).all() and (reply[2] == 0.5).all()


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_reply_keys_tell_replies_apart_exactly(seed):
    """The nemesis keeps a 1-byte key per (node, class) of a reply instead of the reply: two replies
    of a player to one σ (pure, mixed or partly tied) must have equal keys exactly when they are equal."""
    rng = np.random.default_rng(seed)
    actor = rng.integers(0, 3, size=6)
    sigma = rng.choice([0.0, 1.0, 0.25, 0.5], size=(6, 169))
    rows = actor == 1

    def reply():
        d = rng.choice([-1.0, 0.0, 1.0], size=(6, 169), p=[0.45, 0.1, 0.45]) * (rng.random((6, 169)) < 0.05)
        return best_reply(sigma, np.zeros((6, 169)), d, actor, player=1)

    a = reply()
    others = [a.copy(), reply(), reply()]
    # replies one decision apart from a: a pure action where a keeps σ, or σ kept where a is pure
    for i, j in ((i, j) for i in np.flatnonzero(rows) for j in range(169)):
        if len(others) >= 12:
            break
        for action in (0.0, 1.0):
            if a[i, j] == sigma[i, j] != action:
                b = a.copy()
                b[i, j] = action
                others.append(b)
            elif a[i, j] == action != sigma[i, j]:
                b = a.copy()
                b[i, j] = sigma[i, j]
                others.append(b)
    for b in others:
        assert np.array_equal(reply_key(a, sigma, rows), reply_key(b, sigma, rows)) == np.array_equal(a, b)


def test_ex_post_reports_states_done_within_a_round(game, reference, monkeypatch):
    """Within a nemesis round (about an hour on the 45-unit 5-player layer) the check reports states
    done and the time left; the log lines name the profile, the layer and the round."""
    import engine.best_response as br
    from engine.solve_progress import nemesis_log_line

    tensors, _, layers = game
    values, _ = reference
    monkeypatch.setattr(br, "PROGRESS_EVERY_S", 0.0)
    events = []
    ex_post({n: (hands, sigmas, values[n]) for n, (_, hands, sigmas) in layers.items()}, tensors, threads=2,
            progress=events.append)
    ticks = [e for e in events if e["event"] == "nemesis_states"]
    rounds = [e for e in events if e["event"] == "nemesis_round"]
    assert rounds and ticks
    for n, (_, hands, _) in layers.items():
        mine = [e for e in ticks if e["players"] == n and e["round"] == 1]
        assert [e["done"] for e in mine] == list(range(1, len(hands)))  # every state but the last
        assert all(e["states"] == len(hands) for e in mine)
        # an estimate of the time left once a state that started after the first one finished has
        # finished too (those started before it waited out the start-up), and from then on at every event
        has = [("left_s" in e) for e in mine]
        assert has == sorted(has) and all(e.get("left_s", 0) >= 0 for e in mine)
        assert len(hands) < 10 or has[-1]
    line = nemesis_log_line({"event": "nemesis_states", "players": 5, "round": 2, "done": 1_000, "states": 135_751,
                             "wall_s": 600.0, "left_s": 7_000.0}, "FGS-4")
    assert line == "FGS-4: 5-player layer, nemesis round 2: 1,000/135,751 states done, 10 min, about 1.9 h left in it"
    assert nemesis_log_line(rounds[0]).startswith(f"{rounds[0]['players']}-player layer, nemesis round 1: Bellman "
                                                  "residual ")


def test_an_interrupted_ex_post_resumes_from_its_last_round(game, reference, tmp_path, monkeypatch):
    """Killed in the 3-player layer's second round, the check resumes from the round it saved, reads
    the finished 2-player layer back, and ends with the nemesis values of an uninterrupted run to the bit."""
    from engine.solve_progress import nemesis_log_line

    tensors, _, layers = game
    values, _ = reference
    profile = {n: (hands, sigmas, values[n]) for n, (_, hands, sigmas) in layers.items()}
    straight = ex_post(profile, tensors, threads=2)
    assert len(straight[3][1]) >= 2

    class Interrupt(Exception):
        pass

    def stop(event):
        if event["event"] == "nemesis_states" and event["players"] == 3 and event["round"] == 2:
            raise Interrupt

    import engine.best_response as br
    monkeypatch.setattr(br, "PROGRESS_EVERY_S", 0.0)
    with pytest.raises(Interrupt):
        ex_post(profile, tensors, threads=2, progress=stop, checkpoint=tmp_path)
    monkeypatch.undo()
    events = []
    resumed = ex_post(profile, tensors, threads=2, progress=events.append, checkpoint=tmp_path)
    back = [(e["players"], e["rounds"], e["finished"]) for e in events if e["event"] == "nemesis_resumed"]
    assert back == [(2, len(straight[2][1]), True), (3, 1, False)]
    assert not [e for e in events if e["event"] == "nemesis_resumed_states"]  # (no block: no state of round 2 kept)
    assert [e["round"] for e in events if e["event"] == "nemesis_round"] == list(range(2, len(straight[3][1]) + 1))
    for n in straight:
        np.testing.assert_array_equal(straight[n][0], resumed[n][0])
        assert [e["round"] for e in resumed[n][1]] == [e["round"] for e in straight[n][1]]
    assert "read back" in nemesis_log_line([e for e in events if e["event"] == "nemesis_resumed"][0], "harville")
    again = []
    ex_post(profile, tensors, threads=2, progress=again.append, checkpoint=tmp_path)
    assert [e["event"] for e in again] == ["nemesis_resumed", "nemesis_resumed"]  # no work when finished


@pytest.mark.parametrize("older", [False, True], ids=["blocks", "blocks_without_replies"])
def test_an_ex_post_interrupted_within_a_round_keeps_the_states_it_finished(game, reference, tmp_path, monkeypatch,
                                                                            older):
    """Killed three states into the 3-player layer's second round (a block checkpoint after every
    state here, every 5 minutes in a build), the check resumes that round with those states read
    back, computes only the others, ends with the nemesis values of an uninterrupted run to the bit,
    and deletes the round's blocks once the round is saved. Blocks of an older version, which hold
    no deviating seats' replies, resume the same way (those seats' passes are done again)."""
    import engine.best_response as br
    from engine.solve_progress import nemesis_log_line

    tensors, _, layers = game
    values, _ = reference
    profile = {n: (hands, sigmas, values[n]) for n, (_, hands, sigmas) in layers.items()}
    straight = ex_post(profile, tensors, threads=2)
    m = len(layers[3][1])
    assert len(straight[3][1]) >= 2 and m > 5

    class Interrupt(Exception):
        pass

    def stop(event):
        if event["event"] == "nemesis_states" and event["players"] == 3 and event["round"] == 2 and event["done"] == 3:
            raise Interrupt

    monkeypatch.setattr(br, "PROGRESS_EVERY_S", 0.0)
    with pytest.raises(Interrupt):
        ex_post(profile, tensors, threads=2, progress=stop, checkpoint=tmp_path, checkpoint_every=0.0)
    assert len(list(tmp_path.glob("nemesis3.round2.block*.npz"))) == 3
    # a block of an older round, as an interrupt between that round's save and its blocks' deletion
    # leaves one: deleted on resuming, not read
    shutil.copy(next(tmp_path.glob("nemesis3.round2.block*.npz")), tmp_path / "nemesis3.round0.block00000.npz")
    for block in tmp_path.glob("nemesis3.round*.block*.npz") if older else ():
        with np.load(block) as data:
            members = {name: data[name] for name in data.files if name not in ("keys", "key_rows")}
        with open(block, "wb") as f:
            np.savez(f, **members)
    events = []
    resumed = ex_post(profile, tensors, threads=2, progress=events.append, checkpoint=tmp_path, checkpoint_every=0.0)
    back = [e for e in events if e["event"] == "nemesis_resumed_states"]
    assert [(e["players"], e["round"], e["done"], e["states"]) for e in back] == [(3, 2, 3, m)]
    assert nemesis_log_line(back[0]) == f"3-player layer, nemesis round 2: 3/{m:,} states already done in an earlier run"
    ticks = [e["done"] for e in events if e["event"] == "nemesis_states" and e["players"] == 3 and e["round"] == 2]
    assert ticks == list(range(4, m))  # the other states only, counted on from the three
    for n in straight:
        np.testing.assert_array_equal(straight[n][0], resumed[n][0])
        assert [e["round"] for e in resumed[n][1]] == [e["round"] for e in straight[n][1]]
    assert not list(tmp_path.glob("*.block*")) and not list(tmp_path.glob("*.tmp*"))


def _counting_passes(monkeypatch, layers):
    """Count the hand passes with outcome probabilities the check does, by (players, round, state):
    returns (their counter, a progress callback that closes a round's count at its end, a function
    that forgets the passes of a round left open)."""
    from collections import Counter

    import engine.best_response as br

    state_of = {id(hand): (n, s) for n, (_, hands, _) in layers.items() for s, hand in enumerate(hands)}
    open_passes: list[tuple[int, int]] = []
    counts: Counter = Counter()

    class Counting(br.HandSolver):
        def evaluate(self, sigma, U, ws, orders=False):
            if orders:
                open_passes.append(state_of[id(self.hand)])  # (list.append is atomic under the GIL)
            return super().evaluate(sigma, U, ws, orders=orders)

    def on_event(event):
        if event["event"] == "nemesis_round":  # every pass of the round is done by its end
            for n, s in open_passes:
                counts[(n, event["round"], s)] += 1
            open_passes.clear()

    monkeypatch.setattr(br, "HandSolver", Counting)
    return counts, on_event, open_passes.clear


@pytest.mark.parametrize("within_round", [False, True])
def test_a_resumed_ex_post_redoes_no_outcome_pass(game, reference, tmp_path, monkeypatch, within_round):
    """Interrupted between two rounds of the 3-player layer, or three states into the second, the
    resumed check takes σ's and the replies' outcome probabilities from the blocks the rounds kept,
    as an uninterrupted check takes them from its memory: it does exactly the passes with outcome
    probabilities that one does after the interrupt (the `thesis` equilibrium's check, cut in its
    first round, had redone about 8 minutes of them), and ends with its values to the bit."""
    import engine.best_response as br

    tensors, _, layers = game
    values, _ = reference
    profile = {n: (hands, sigmas, values[n]) for n, (_, hands, sigmas) in layers.items()}
    counts, on_event, forget_open = _counting_passes(monkeypatch, layers)
    straight = ex_post(profile, tensors, threads=2, progress=on_event)
    assert len(straight[3][1]) >= 2
    uninterrupted = dict(counts)

    class Interrupt(Exception):
        pass

    def stop(event):
        if event["event"] == "nemesis_states" and event["players"] == 3 and event["round"] == 2 and \
                event["done"] == (3 if within_round else 1):
            raise Interrupt

    monkeypatch.setattr(br, "PROGRESS_EVERY_S", 0.0)
    with pytest.raises(Interrupt):
        ex_post(profile, tensors, threads=2, progress=stop, checkpoint=tmp_path,
                checkpoint_every=0.0 if within_round else 300.0)
    done_before = {s for path in tmp_path.glob("nemesis3.round2.block*.npz") for s in np.load(path)["states"].tolist()}
    assert len(done_before) == (3 if within_round else 0)
    assert list(tmp_path.glob("nemesis3.round1.block*.npz"))  # round 1's outcome probabilities, kept for round 2
    counts.clear()
    forget_open()  # the interrupted round's passes
    resumed = ex_post(profile, tensors, threads=2, progress=on_event, checkpoint=tmp_path)
    expected = {(n, r, s): c for (n, r, s), c in uninterrupted.items()
                if n == 3 and r >= 2 and not (r == 2 and s in done_before)}
    assert any(r == 2 for _, r, _ in expected)  # (the second round does passes to save)
    assert dict(counts) == expected
    for n in straight:
        np.testing.assert_array_equal(straight[n][0], resumed[n][0])
    assert not list(tmp_path.glob("*.block*")) and not list(tmp_path.glob("*.tmp*"))
