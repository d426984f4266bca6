"""Monte Carlo tournaments (engine/simulation.py) against exact policy evaluation.

A tiny game (3 players, 6 units, payouts 50/30/20: every place pays, so shared places matter)
is solved; its equilibrium and other profiles are simulated and compared with the exact values
and finishing probabilities of :mod:`engine.policy_evaluation`, including a player who keeps his
own profile through the seat changes (exact values over (state, his position)).
"""

from __future__ import annotations

import numba
import numpy as np
import pytest
import scipy.sparse as sp

from engine.cfr import HandSolver
from engine.game_tree import compile_hand, utilities
from engine.hand import hand_tree
from engine.policy_evaluation import finishing_probabilities, layer_transitions, solve_layer
from engine.packed_game import pack_game
from engine.simulation import (CompactProfile, ShowdownSampler, compact_profile, direct_match, match_summary,
                               pack_profile, simulate, simulate_against)
from engine.simulation_kernel import (ORDER_ONE, SORTED_TO_DEAL, TRIPLE_ROWS, TWO32, _sort3, jams, sample_deals,
                                      sample_orders, triple_row)
from engine.states import enumerate_states, state_index
from engine.tournament import solve_tournament

UNITS, PLAYERS, PAYOUTS = 6, 3, (50.0, 30.0, 20.0)
START = (2, 2, 2)
T = 400_000


@pytest.fixture(scope="module")
def solved(tiny_tensors):
    return solve_tournament(UNITS, PLAYERS, PAYOUTS, 1e-3, tiny_tensors, threads=2)


@pytest.fixture(scope="module")
def game():
    return pack_game(UNITS, PLAYERS, PAYOUTS)


@pytest.fixture(scope="module")
def sampler(tiny_tensors):
    return ShowdownSampler.from_tensors(tiny_tensors)


@pytest.fixture(scope="module")
def eq(game, solved):
    return pack_profile(game, {n: layer.strategy for n, layer in solved.items()})


def _z(res, exact):
    return np.abs(res.mean - exact) / res.se


# --------------------------------------------------------------------------------------------
# packing
# --------------------------------------------------------------------------------------------


def test_packed_game_matches_compiled_hands(game):
    for n in range(2, PLAYERS + 1):
        for s, row in enumerate(enumerate_states(UNITS, n)):
            stacks = tuple(int(x) for x in row)
            hand = compile_hand(stacks, PAYOUTS, state_index)
            g = game.state_id(stacks)
            assert g == game.layer_start[n] + s and game.state_players[g] == n
            k = game.state_key[g]
            kn = slice(game.key_node_off[k], game.key_node_off[k + 1])
            assert np.array_equal(game.node_actor[kn], hand.node_actor)
            assert np.array_equal(game.node_fold[kn], hand.node_fold)
            assert np.array_equal(game.node_jam[kn], hand.node_jam)
            assert game.key_root[k] == hand.root
            for t in range(len(hand.term_kind)):
                kt = game.key_term_off[k] + t
                assert game.term_orders[kt] == hand.term_orders[t]
                for o in range(hand.term_orders[t]):
                    out = game.state_out[g] + game.term_out[kt] + o
                    nxt, m = hand.term_next[t, o], hand.term_next_players[t, o]
                    assert game.out_next[out] == (game.layer_start[m] + nxt if nxt >= 0 else -1)
                    code = game.out_code[out, :n].astype(int)
                    np.testing.assert_array_equal(np.where(code >= 0, code, -1), hand.term_seat[t, o])
                    v = np.maximum(-code, 0)
                    prize = np.where(code < 0, game.share[v >> 3, np.minimum(v & 7, 3)], 0.0)
                    np.testing.assert_allclose(prize, hand.term_prize[t, o], atol=1e-12)


def test_a_game_packed_in_chunks_or_in_worker_processes_is_the_game_packed_whole(game):
    """The 45-unit 5-player game (149,985 states) is packed in chunks of states, in worker processes:
    chunks of 4 states (layers of 5 and 10 states here, so the last chunk of each is partial), in
    one process and in two, give every array of the game packed in one piece."""
    from dataclasses import fields

    for processes in (1, 2):
        chunked = pack_game(UNITS, PLAYERS, PAYOUTS, processes=processes, chunk=4)
        for field in fields(game):
            mine, theirs = getattr(chunked, field.name), getattr(game, field.name)
            assert np.array_equal(mine, theirs) if isinstance(theirs, np.ndarray) else mine == theirs, field.name


def test_a_saved_packed_game_loads_back_whole_and_the_benchmark_refuses_a_wrong_or_damaged_cache(
        game, tmp_path, capsys, bench_tensors_released):
    """`./lab bench simulation --cache` keeps the packed game (minutes to pack at 45 units): saved
    complete or not at all (no temporary left), loaded back equal, and a cache of another game or
    a damaged one is refused naming the flag instead of timing the wrong game or a traceback."""
    from engine import bench_simulation
    from engine.packed_game import PackedGame

    path = tmp_path / "game.npz"
    game.save(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["game.npz"]
    back = PackedGame.load(path)
    assert (back.units, back.players, back.payouts) == (game.units, game.players, game.payouts)
    for name, value in vars(game).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(back, name), value)
    for argv, needle in [(["--units", "7"], "holds the 6-unit 3-player game, not the 7-unit 3-player one"),
                         (["--players", "2"], "holds the 6-unit 3-player game, not the 6-unit 2-player one")]:
        with pytest.raises(SystemExit) as exc:
            bench_simulation.main(["--units", "6", "--players", "3", "--cache", str(path), *argv])
        assert exc.value.code == 2 and needle in capsys.readouterr().err
    path.write_bytes(path.read_bytes()[:1000])  # a truncated cache
    with pytest.raises(SystemExit) as exc:
        bench_simulation.main(["--units", "6", "--players", "3", "--cache", str(path)])
    assert exc.value.code == 2 and "is not a readable packed game" in capsys.readouterr().err


def _printed_payoffs_and_finishing(out: str) -> tuple[list[float], np.ndarray]:
    """What `./lab bench simulation` prints of its tournaments: the mean payoffs per starting
    position, each followed by its standard error ($), and the finishing matrix (rows = position)."""
    import re

    payoffs = [float(x) for x in re.search(r"per starting position: (.*)", out).group(1).replace("±", ",").split(",")]
    rows = re.search(r"columns = place\):\n(.*)", out, re.S).group(1)
    return payoffs, np.array([[float(x) for x in row.strip(" []").split()] for row in rows.splitlines()])


def test_the_simulation_benchmark_reports_its_rates_from_its_timings(capsys, monkeypatch, bench_tensors_released):
    """The rates `./lab bench simulation` prints (the figure issue #4 is judged by) are the tournaments
    over the best wall time, hands per second that times the mean hands, and so on (the timings fixed
    here, the tournaments played for real); its payoffs share out the prize pool, its finishing
    rows are distributions, and the compact profile plays the dense profile's tournaments."""
    from engine import bench_simulation

    real, played, timings = bench_simulation._timed, [], [(0.5, 0.8), (1.25, 1.0)]  # (s: all threads, then 1)

    def timed(*args, **kwargs):
        _, _, res = real(*args, **kwargs)
        played.append(res)
        return (*timings[len(played) - 1], res)

    monkeypatch.setattr(bench_simulation, "_timed", timed)
    T = 20_000
    bench_simulation.main(["--units", "6", "--players", "3", "--tournaments", str(T)])
    out = capsys.readouterr().out
    assert len(played) == 2
    for (wall, cpu), res in zip(timings, played):
        rate, hands = T / wall, res.mean_hands
        line = next(x for x in out.splitlines() if f"tournaments in {wall:.2f} s (best of 3)" in x)
        assert f"= {rate:,.0f} tournaments/s, {rate * hands:,.0f} hands/s; CPU {cpu:.2f} s = " \
               f"{T / cpu:,.0f} tournaments per CPU-second, {cpu / (T * hands) * 1e9:.0f} ns CPU" in line
    assert "the dense float32 profile plays the same tournaments: True" in out
    payoffs, finishing = _printed_payoffs_and_finishing(out)
    assert sum(payoffs[0::2]) == pytest.approx(100.0, abs=0.01)  # 50 + 30 + 20, to the printed 3 decimals
    assert finishing.shape == (3, 3) and np.allclose(finishing.sum(axis=0), 1, atol=1e-3)
    assert np.allclose(finishing.sum(axis=1), 1, atol=1e-3)


def test_the_simulation_benchmark_plays_a_single_tournament(capsys, bench_tensors_released):
    """`--tournaments 1`, the least the benchmark accepts, times one tournament with every thread
    count: each starting position finishes in exactly one place, and the payoffs share out the pool."""
    import re

    from engine import bench_simulation

    bench_simulation.main(["--units", "6", "--players", "3", "--tournaments", "1"])
    out = capsys.readouterr().out
    assert len(re.findall(r"thread\(s\): 1 tournaments in ", out)) == 2
    payoffs, finishing = _printed_payoffs_and_finishing(out)
    assert sorted(map(tuple, finishing)) == [(0, 0, 1), (0, 1, 0), (1, 0, 0)]  # one place each, none shared
    assert sum(payoffs[0::2]) == pytest.approx(100.0, abs=0.01) and payoffs[1::2] == [0.0] * 3


def test_the_simulation_benchmarks_synthetic_profile_jams_the_top_x_of_hands(tiny_showdown):
    """The profile the simulation benchmark plays (its docstring's rule): at every node the hands
    jammed are the best ones by equity against a random hand, and they are x of all hands, x =
    min(1, 3/E)/(1 + (behind − 1)/4) opening and min(1, 2/E)/2^(jams − 1) facing jams, E the
    effective stack in big blinds (recomputed here node by node; 16 units, so that E reaches 7)."""
    from engine.bench_simulation import threshold_profile
    from engine.cards import CLASS_COMBO_COUNT

    p1 = CLASS_COMBO_COUNT / 1326.0
    equity = tiny_showdown.win2_vs_random
    game = pack_game(16, 3, PAYOUTS)
    profile = threshold_profile(game, equity, p1, chunk=7)  # (chunks of a few rows: every row filled)
    state, _, actor, depth = game.node_rows()
    assert profile.shape == (len(state), 169) and len(state) > 7
    by_equity = np.argsort(-equity, kind="stable")
    for row in range(len(state)):
        stacks = [int(x) for x in game.state_stacks[state[row]]]
        me = int(actor[row])
        effective_bb = min(stacks[me], max(x for i, x in enumerate(stacks) if i != me)) / 2
        behind = int(game.state_players[state[row]]) - 1 - me
        jams = int(depth[row])
        x = (min(1, 3 / effective_bb) / (1 + (behind - 1) / 4) if jams == 0
             else min(1, 2 / effective_bb) / 2 ** (jams - 1))
        assert float(p1 @ profile[row]) == pytest.approx(min(x, 1.0), rel=1e-5, abs=1e-7), row
        assert np.all(np.diff(profile[row][by_equity]) <= 0), row  # the best hands first


def test_a_packed_game_is_read_back_by_the_next_run_of_the_same_engine_only(game, tmp_path, monkeypatch):
    """`simulate` and `simulations` keep the packed game in the cache (74 s to pack the `thesis`
    game): the next run reads it instead of packing, the arrays equal; a pack by other engine code,
    of another game or damaged is never read (packed again), and other code's packs are deleted
    once unused for a week."""
    import os
    import pathlib
    import re
    import time

    from engine import packed_game
    from engine.packed_game import load_or_pack_game

    def age(path, days):
        then = time.time() - days * 86400
        os.utime(path, (then, then))

    first, how = load_or_pack_game(tmp_path, UNITS, PLAYERS, PAYOUTS)
    (mine,) = tmp_path.iterdir()
    assert re.fullmatch(rf"packed in \d+\.\d s, saved to {re.escape(str(mine))}", how)
    packs = []
    real_pack = packed_game.pack_game
    monkeypatch.setattr(packed_game, "pack_game", lambda *a, **k: packs.append(a) or real_pack(*a, **k))
    back, how = load_or_pack_game(tmp_path, UNITS, PLAYERS, [50, 30, 20])
    assert how == f"read from {mine}" and packs == []
    for name, value in vars(game).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(back, name), value)
            np.testing.assert_array_equal(getattr(first, name), value)
    # another game beside it: its own file; its third place paying nothing is the same game
    other, how = load_or_pack_game(tmp_path, UNITS, PLAYERS, (70.0, 30.0))
    (other_file,) = set(tmp_path.iterdir()) - {mine}
    assert how.endswith(f" s, saved to {other_file}") and other.payouts == (70.0, 30.0) and len(packs) == 1
    assert load_or_pack_game(tmp_path, UNITS, PLAYERS, (70, 30, 0))[1] == f"read from {other_file}"
    # other engine code: never reads the first code's packs, and deletes the one unused for a week
    monkeypatch.setattr(packed_game, "engine_digest", lambda: "0123456789ab")
    age(mine, 8)
    _, how = load_or_pack_game(tmp_path, UNITS, PLAYERS, PAYOUTS)
    (new,) = tmp_path.glob("*-0123456789ab.npz")
    assert how.endswith(f" s, saved to {new}") and len(packs) == 2
    assert set(tmp_path.iterdir()) == {new, other_file}  # the first code's 70/30 pack, used just now, is kept
    # a pack of the running code is never deleted, however old; reading it marks it used
    age(new, 30)
    assert load_or_pack_game(tmp_path, UNITS, PLAYERS, PAYOUTS)[1] == f"read from {new}"
    assert new.stat().st_mtime > time.time() - 600 and other_file.exists()
    # damaged: packed again and rewritten, then read; a cleanup that cannot delete still saved
    new.write_bytes(new.read_bytes()[:500])
    age(other_file, 8)

    unlink = pathlib.Path.unlink

    def refuse(self, missing_ok=False):  # another user's file in a shared cache
        if self == other_file:
            raise PermissionError(13, "Permission denied", str(self))
        return unlink(self, missing_ok=missing_ok)

    monkeypatch.setattr(pathlib.Path, "unlink", refuse)
    _, how = load_or_pack_game(tmp_path, UNITS, PLAYERS, PAYOUTS)
    assert how.endswith(f" s, saved to {new}") and len(packs) == 3 and other_file.exists()
    monkeypatch.setattr(pathlib.Path, "unlink", unlink)
    assert load_or_pack_game(tmp_path, UNITS, PLAYERS, PAYOUTS)[1] == f"read from {new}"
    assert not other_file.exists()  # (deleted once it could be)
    # packed by worker processes (which import the engine anew) after the source changed: not kept
    monkeypatch.setattr(packed_game, "_source_digest", lambda: "fedcba987654")
    _, how = load_or_pack_game(tmp_path / "workers", UNITS, PLAYERS, PAYOUTS, processes=2)
    assert how.endswith("(not saved for the next run: the engine's source changed since this process started)")
    assert not (tmp_path / "workers").exists()
    # a folder it cannot make: the game all the same, said not saved
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    played, how = load_or_pack_game(blocked / "packed", UNITS, PLAYERS, PAYOUTS)
    assert "(not saved for the next run: " in how and played.units == UNITS
    # a folder whose parents do not exist yet (a fresh JAMFOLD_CACHE): made with them, the pack saved
    _, how = load_or_pack_game(tmp_path / "fresh" / "cache", UNITS, PLAYERS, PAYOUTS)
    (saved,) = (tmp_path / "fresh" / "cache").iterdir()
    assert how.endswith(f" s, saved to {saved}")


@pytest.mark.parametrize("field", ["state_node", "state_out"])
def test_a_game_too_large_for_the_outcome_records_is_refused(game, field):
    """The kernel's outcome records hold a state's first profile row and first outcome in 4 bytes:
    a game whose rows or outcomes reach 2³² is refused, not written with its indices cut short
    (2³² − 1 fits)."""
    import dataclasses

    def with_last(value):
        column = getattr(game, field).copy()
        column[-1] = value
        return dataclasses.replace(game, **{field: column})

    with pytest.raises(ValueError, match="too many profile rows or outcomes for the 4-byte fields"):
        with_last(2**32).kernel_records
    fits = with_last(2**32 - 1)  # (the largest that fits: its state record carries it whole)
    assert fits.kernel_records[0][-1, 2:].tolist() == [fits.state_node[-1], fits.state_out[-1]]


def test_pack_profile_checks_shapes(game, solved):
    bad = {n: layer.strategy for n, layer in solved.items()}
    states = len(bad[3])
    bad[3] = bad[3][:-1]
    with pytest.raises(ValueError, match=f"layer 3 needs {states} state strategies; got {states - 1}"):
        pack_profile(game, bad)


def test_a_matchs_summary_weights_each_seating_by_its_seats():
    """match_summary over hand-made seatings of a 3-player match: each side's ROI is the mean over
    its seats (a seating with two A players counts twice for A), and the standard errors of the
    independent seatings add in quadrature with the same weights."""
    from types import SimpleNamespace

    from engine.simulation import MatchSeating

    result = SimpleNamespace(mean=np.zeros(3))  # (b_seats reads the players from it)
    one_a = MatchSeating((0,), 3.0, 0.3, -1.5, 0.2, result)
    two_a = MatchSeating((0, 1), -6.0, 0.4, 12.0, 0.5, result)
    summary = match_summary([one_a, two_a])
    assert summary["roi_a"] == pytest.approx((3.0 - 2 * 6.0) / 3)
    assert summary["roi_a_se"] == pytest.approx(np.hypot(0.3, 2 * 0.4) / 3)
    assert summary["roi_b"] == pytest.approx((2 * -1.5 + 12.0) / 3)
    assert summary["roi_b_se"] == pytest.approx(np.hypot(2 * 0.2, 0.5) / 3)


def test_stacked_profiles_decide_as_each_profile_alone():
    """Several profiles go to the kernel as one rows array and one thresholds array (profile i's
    rows from i · R, their threshold indices shifted past the earlier profiles'): each stacked row
    must decide every (class, draw) as its own profile's row does — three profiles, so that a shift
    applied to the wrong profile's rows shows."""
    from engine.simulation import _stack_profiles

    rng = np.random.default_rng(5)
    R = 40
    profiles = []
    for _ in range(3):
        dense = rng.random((R, 169)).astype(np.float32)
        dense[rng.random((R, 169)) < 0.6] = 0.0  # pure and mixed classes in every row (about 47 mixed ones)
        dense[rng.random((R, 169)) < 0.3] = 1.0
        profiles.append(compact_profile(dense))
    assert all(len(p.thresholds) > 0 for p in profiles)
    rows, thresholds = _stack_profiles(profiles)
    assert rows.shape == (3 * R, 8) and len(thresholds) == sum(len(p.thresholds) for p in profiles)
    for i, p in enumerate(profiles):
        for r in range(R):
            for c in range(169):
                for u32 in rng.integers(0, 2**32, 3, dtype=np.uint64):
                    assert jams(rows, thresholds, i * R + r, c, u32) == jams(p.rows, p.thresholds, r, c, u32)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8])
def test_compact_profile_decides_exactly_as_the_dense_one(dtype):
    """Every (row, class) of a random profile with pure, mixed and extreme entries: the compact
    form jams for exactly the draws u (low 32 bits) with u < e · 2³² / top, at the boundary too."""
    rng = np.random.default_rng(3)
    if dtype == np.float32:
        dense = rng.choice(np.array([0.0, 1.0, 0.37, 1e-9, 1 - 1e-7, 0.5], np.float32), size=(40, 169))
        some = rng.random(dense.shape) < 0.3
        dense[some] = rng.random(int(some.sum()))
        scale = TWO32
    else:
        dense = rng.integers(0, 256, size=(40, 169)).astype(np.uint8)
        dense[:, ::3] = 255
        scale = TWO32 / 255
    dense[5] = 0  # a pure row, no mixed classes
    compact = compact_profile(dense)
    assert isinstance(compact, CompactProfile) and compact.rows.shape == (40, 8) and compact.shape == dense.shape
    mixed = 0
    for r in range(dense.shape[0]):
        for c in range(169):
            v = float(dense[r, c]) * scale
            mixed += 0 < v < TWO32
            for u in {0, max(int(np.ceil(v)) - 1, 0), min(int(np.ceil(v)), 2 ** 32 - 1), 2 ** 32 - 1}:
                assert jams(compact.rows, compact.thresholds, r, c, np.uint64(u)) == (u < v), (r, c, u, v)
    assert len(compact.thresholds) == mixed > 0
    assert compact_profile(compact) is compact
    with pytest.raises(ValueError):
        compact_profile(dense.astype(np.float64))


# --------------------------------------------------------------------------------------------
# card model and showdowns
# --------------------------------------------------------------------------------------------


def _chi2_ok(counts, expected):
    keep = expected > 0
    assert counts[~keep].sum() == 0, "a cell with probability 0 was sampled"
    stat = float(((counts[keep] - expected[keep]) ** 2 / expected[keep]).sum())
    df = int(keep.sum()) - 1
    assert abs(stat - df) < 5 * np.sqrt(2 * df), (stat, df)


def test_dealt_classes_follow_the_card_model(tiny_tensors):
    N = 2_000_000
    deals = sample_deals(11, N, 2)
    _chi2_ok(np.bincount(deals[:, 0], minlength=169), tiny_tensors.p1 * N)
    joint = np.bincount(deals[:, 0] * 169 + deals[:, 1], minlength=169 * 169)
    _chi2_ok(joint, tiny_tensors.joint2.ravel() * N)
    # three hands: pair / suited / offsuit kinds of (first, second, third), from joint3
    kind = np.array([0 if i == j else (1 if i < j else 2) for i in range(13) for j in range(13)])
    deals3 = sample_deals(12, N, 3)
    counts = np.bincount((kind[deals3] * [9, 3, 1]).sum(axis=1), minlength=27)
    expected = np.zeros(27)
    code = (kind[:, None, None] * 9 + kind[None, :, None] * 3 + kind[None, None, :]).ravel()
    np.add.at(expected, code, tiny_tensors.joint3.ravel())
    _chi2_ok(counts, expected * N)


def test_deals_follow_the_documented_splitmix64_streams():
    """The kernel's streams, replayed in plain Python from its docstring's rule: tournament t starts
    at mix64(mix64(seed) + (t + 1)·γ), each draw adds γ and outputs mix64 of the state, a combo is
    (x >> 32)·1326 >> 32, redrawn while it shares a card with the hands dealt before. Pins the
    streams (and so every seeded result) through any rewrite of how the kernel carries them."""
    from engine.cards import COMBO_OFFSETS, COMBOS

    mask, gamma = 2 ** 64 - 1, 0x9E3779B97F4A7C15

    def mix64(z):
        z &= mask
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        return z ^ (z >> 31)

    combo_class = np.searchsorted(COMBO_OFFSETS, np.arange(len(COMBOS)), side="right") - 1
    seed, samples, hands = 3, 50, 3
    expected = np.empty((samples, hands), np.int64)
    for t in range(samples):
        state, used = mix64(mix64(seed) + (t + 1) * gamma), set()
        for h in range(hands):
            while True:
                state = (state + gamma) & mask
                combo = ((mix64(state) >> 32) * 1326) >> 32
                cards = {int(c) for c in COMBOS[combo]}
                if not cards & used:
                    break
            used |= cards
            expected[t, h] = combo_class[combo]
    np.testing.assert_array_equal(sample_deals(seed, samples, hands), expected)


def test_kernel_removes_in_pot_cards(game, tiny_tensors):
    """Fake showdown table: the first dealt hand wins iff both hands have the same class, which
    is much rarer with card removal (Σ joint2[a, a] = 0.47 %) than without (Σ p1² = 0.74 %)."""
    same = ShowdownSampler(np.eye(169), np.full((TRIPLE_ROWS, 5), ORDER_ONE, np.uint32))
    p_same = float(np.trace(tiny_tensors.joint2))
    jam = np.ones((game.total_nodes, 169), np.float32)
    N = 400_000
    se = np.sqrt(p_same * (1 - p_same) / N)
    # (3, 3): SB jams, BB calls (both deciders); the SB wins the tournament iff same class
    res = simulate(game, [jam], [0, 0], (3, 3), N, seed=21, tensors=same)
    assert abs((res.mean[0] - 30.0) / 20.0 - p_same) < 4 * se
    # (1, 5): SB all-in from the blind, BB calls automatically: both dealt at the showdown; an SB
    # win leaves the tournament running, stopped by max_hands=1
    res = simulate(game, [jam], [0, 0], (1, 5), N, seed=22, tensors=same, max_hands=1)
    assert abs(res.unfinished / N - p_same) < 4 * se


def _order3(tiny_tensors, c0, c1, c2):
    """P(each finishing order, lexicographic over the deal positions) from the solver's tensors."""
    return tiny_tensors.m3j[c0, c1, c2] / tiny_tensors.joint3[c0, c1, c2]


def test_showdown_orders_follow_the_tables(tiny_tensors, sampler):
    N = 400_000
    win2 = tiny_tensors.win2
    counts = sample_orders(3, N, 2, 13, 168, 0, sampler.win2, sampler.order3)
    _chi2_ok(counts[:2], np.array([win2[13, 168], 1 - win2[13, 168]]) * N)
    # AA, AKo, 22 in every deal order (the kernel sorts them and maps the drawn order back), and
    # a triple with a repeated class (AKo twice: the table is symmetric in those two hands)
    for k, triple in enumerate([(0, 13, 168), (168, 0, 13), (13, 168, 0), (13, 13, 168), (168, 13, 13)]):
        _chi2_ok(sample_orders(4 + k, N, 3, *triple, sampler.win2, sampler.order3), _order3(tiny_tensors, *triple) * N)


def test_three_way_table_holds_every_ordered_triple(tiny_tensors, sampler):
    """The sorted-triple rows reproduce the full 169³ order table of the solver for every deal
    order, to the table's 2⁻³¹ resolution (checked on 3,000 random ordered triples and on all
    orderings of some with repeated classes)."""
    rows = np.array([triple_row(a, b, c) for c in range(169) for b in range(c + 1) for a in range(b + 1)])
    assert np.array_equal(rows, np.arange(TRIPLE_ROWS))
    rng = np.random.default_rng(5)
    triples = [tuple(int(x) for x in t) for t in rng.integers(0, 169, (3000, 3))]
    triples += [(7, 7, 100), (7, 100, 7), (100, 7, 7), (50, 50, 50)]
    checked = 0
    for c0, c1, c2 in triples:
        if tiny_tensors.joint3[c0, c1, c2] == 0:
            continue
        s, a, b, c = _sort3(c0, c1, c2)
        assert a <= b <= c and sorted((c0, c1, c2)) == [a, b, c]
        cum = np.append(sampler.order3[triple_row(a, b, c)].astype(np.float64) / ORDER_ONE, 1.0)
        p_sorted = np.diff(cum, prepend=0.0)
        p_deal = np.zeros(6)
        np.add.at(p_deal, SORTED_TO_DEAL[s], p_sorted)
        assert np.abs(p_deal - _order3(tiny_tensors, c0, c1, c2)).max() < 4 / ORDER_ONE
        checked += 1
    assert checked > 2500
    with pytest.raises(ValueError, match="order3"):  # e.g. the 169³ table this one replaced
        ShowdownSampler(sampler.win2, np.ones((169, 169, 169, 6), np.float32))


# --------------------------------------------------------------------------------------------
# equilibrium self-play against policy evaluation
# --------------------------------------------------------------------------------------------


def test_equilibrium_self_play_matches_values(game, solved, eq, sampler):
    worst = 0.0
    for n in range(2, PLAYERS + 1):
        layer = solved[n]
        for s, row in enumerate(layer.stacks):
            res = simulate(game, [eq], [0] * n, tuple(row), T, seed=100 + s, tensors=sampler)
            assert res.se.max() < 0.1 and res.unfinished == 0
            assert abs(res.mean.sum() - sum(PAYOUTS[:n])) < 1e-9
            # ROI is against an even share of the prizes still in play ($80 heads-up, the third paid)
            assert res.fair == pytest.approx(sum(PAYOUTS[:n]) / n)
            assert abs(res.roi.sum()) < 1e-9  # every tournament finished: the seats' ROIs sum to 0
            worst = max(worst, float(_z(res, layer.values[s]).max()))
    assert worst < 4.0  # 10 three-player states × 3 positions + 5 heads-up × 2: 40 comparisons


def test_finishing_distribution_matches(game, solved, eq, sampler):
    finishing = {}
    for n in range(2, PLAYERS + 1):
        layer = solved[n]
        finishing[n] = finishing_probabilities(layer.hands, layer.order_probs, n, finishing, PLAYERS)
    res = simulate(game, [eq], [0, 0, 0], START, T, seed=7, tensors=sampler)
    exact = finishing[3][state_index(START)]
    se = np.sqrt(exact * (1 - exact) / T) + 1e-12
    assert np.abs(res.finishing - exact).max() / se.max() < 4.0
    assert (np.abs(res.finishing - exact) <= 4 * se + 1e-9).all()
    np.testing.assert_allclose(res.finishing.sum(axis=0), 1.0, atol=1e-12)  # every place taken once
    np.testing.assert_allclose(res.finishing.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(res.finishing @ np.array(PAYOUTS), res.mean, atol=0.3)


# --------------------------------------------------------------------------------------------
# a player keeping his own profile through the seat changes
# --------------------------------------------------------------------------------------------


def _hero_values(solved, strategies, model, tensors):
    """Exact payoff ($) of a hero playing ``model`` while the others play ``strategies``:
    H[n][s, p] for the hero in position p of state s (chain over (state, hero position))."""
    out = {}
    for n in range(2, PLAYERS + 1):
        layer = solved[n]
        probs = [[None] * len(layer.hands) for _ in range(n)]
        for s, hand in enumerate(layer.hands):
            solver = HandSolver(hand, tensors)
            U = utilities(hand, {k: v.values for k, v in solved.items()})
            for p in range(n):
                sigma = np.where((hand.node_actor == p)[:, None], model[n][s], strategies[n][s])
                solver.evaluate(sigma, U, orders=True)
                probs[p][s] = solver.order_probs.copy()
        P = None
        c = np.zeros(len(layer.hands) * n)
        for p in range(n):
            P_p, c_p = layer_transitions(layer.hands, probs[p], n, out)
            mask = np.zeros((len(layer.hands), n), bool)
            mask[:, p] = True
            rows = mask.ravel()
            P_p = sp.diags(rows.astype(np.float64)) @ P_p
            P = P_p if P is None else P + P_p
            c += np.where(rows, c_p, 0.0)
        X, _ = solve_layer(P, c, upper=max(PAYOUTS))
        out[n] = X.reshape(len(layer.hands), n)
    return out


def test_hero_profile_is_tracked_through_seat_changes(game, solved, eq, sampler, tiny_tensors):
    strategies = {n: layer.strategy for n, layer in solved.items()}
    model = {n: [np.ones_like(s) for s in layer] for n, layer in strategies.items()}  # always jam
    hero = _hero_values(solved, strategies, model, tiny_tensors)
    jam = pack_profile(game, model)
    reported = []
    results = simulate_against(game, jam, eq, START, T, seed=5, tensors=sampler,
                               on_result=lambda h, r: reported.append((h, r)))
    # each hero's result reported as it finishes, in order
    assert [h for h, _ in reported] == [0, 1, 2] and all(r is results[h] for h, r in reported)
    # each hero its own stream, seeded as documented (one shared stream would correlate them)
    assert [r.seed for r in results] == [5 * 1_000_003 + h for h in range(3)]
    g = state_index(START)
    for h, res in enumerate(results):
        assert res.seat_profile == tuple(int(i == h) for i in range(3))
        assert abs(res.mean[h] - hero[3][g, h]) < 3 * res.se[h], (h, res.mean[h], hero[3][g, h], res.se[h])
        assert abs(res.mean.sum() - sum(PAYOUTS)) < 1e-9
    # the deviation matters: an always-jam hero differs from the equilibrium by many SE somewhere
    assert max(abs(res.mean[h] - solved[3].values[g, h]) / res.se[h] for h, res in enumerate(results)) > 10
    # a mixed-profile state that is not symmetric, heads-up hero included
    res = simulate(game, [eq, jam], [0, 1, 0], (1, 2, 3), T, seed=6, tensors=sampler)
    assert abs(res.mean[1] - hero[3][state_index((1, 2, 3)), 1]) < 3 * res.se[1]
    res = simulate(game, [eq, jam], [1, 0], (4, 2), T, seed=8, tensors=sampler)
    assert abs(res.mean[0] - hero[2][state_index((4, 2)), 0]) < 3 * res.se[0]


# --------------------------------------------------------------------------------------------
# reproducibility and bookkeeping
# --------------------------------------------------------------------------------------------


def test_results_depend_only_on_seed_and_count(game, eq, sampler):
    before = numba.get_num_threads()
    try:
        numba.set_num_threads(1)
        one = simulate(game, [eq], [0, 0, 0], START, 50_000, seed=9, tensors=sampler)
        numba.set_num_threads(max(2, before))
        two = simulate(game, [eq], [0, 0, 0], START, 50_000, seed=9, tensors=sampler)
    finally:
        numba.set_num_threads(before)
    again = simulate(game, [eq], [0, 0, 0], START, 50_000, seed=9, tensors=sampler)
    other = simulate(game, [eq], [0, 0, 0], START, 50_000, seed=10, tensors=sampler)
    for a, b in ((one, two), (one, again)):
        assert np.array_equal(a.mean, b.mean) and np.array_equal(a.cov, b.cov)
        assert np.array_equal(a.finishing, b.finishing) and a.mean_hands == b.mean_hands
    assert not np.array_equal(one.mean, other.mean)


def test_played_in_chunks_with_progress_the_results_are_those_of_one_piece(game, eq, sampler, monkeypatch):
    """With a progress callback the tournaments are played a chunk of blocks at a time; every
    figure is the same as in one call (streams by tournament index, sums in block order)."""
    import engine.simulation as simulation

    whole = simulate(game, [eq], [0, 0, 0], START, 10_000, seed=4, tensors=sampler)
    monkeypatch.setattr(simulation, "PROGRESS_CHUNK", 3 * 1024)  # 10 blocks in chunks of 3, 3, 3 and 1
    reports = []
    chunked = simulate(game, [eq], [0, 0, 0], START, 10_000, seed=4, tensors=sampler,
                       progress=lambda done, total: reports.append((done, total)))
    assert reports == [(0, 10_000), (3072, 10_000), (6144, 10_000), (9216, 10_000), (10_000, 10_000)]
    assert np.array_equal(whole.mean, chunked.mean) and np.array_equal(whole.cov, chunked.cov)
    assert np.array_equal(whole.finishing, chunked.finishing) and whole.mean_hands == chunked.mean_hands
    assert whole.hand_events == chunked.hand_events and whole.unfinished == chunked.unfinished


def test_a_profile_given_twice_is_stacked_once_and_plays_the_same_tournaments(game, eq, sampler, monkeypatch):
    """The control (the equilibrium against itself) hands the kernel one copy of the profile's rows,
    not two; the tournaments are those of two distinct copies."""
    import engine.simulation as simulation

    copy = CompactProfile(*(a.copy() for a in vars(compact_profile(eq)).values()))
    same = compact_profile(eq)
    stacked = []
    kernel_call = simulation.kernel.simulate_blocks

    def recording(*args):
        stacked.append((args[2].shape[0], tuple(args[1])))
        return kernel_call(*args)

    monkeypatch.setattr(simulation.kernel, "simulate_blocks", recording)
    twice = simulate(game, [same, copy], [0, 1, 0], START, 20_000, seed=3, tensors=sampler)
    once = simulate(game, [same, same], [0, 1, 0], START, 20_000, seed=3, tensors=sampler)
    heroes = simulate_against(game, eq, eq, START, 20_000, seed=3, tensors=sampler)
    rows = game.total_nodes
    assert stacked[0] == (2 * rows, (0, 1, 0)) and stacked[1] == (rows, (0, 0, 0))
    assert all(entry == (rows, (0, 0, 0)) for entry in stacked[2:]) and len(stacked) == 2 + len(START)
    assert np.array_equal(twice.mean, once.mean) and np.array_equal(twice.finishing, once.finishing)
    assert once.seat_profile == (0, 1, 0) and len(heroes) == len(START)


def test_integer_profiles_play_pure_strategies_exactly(game, solved, eq, sampler):
    strategies = {n: [np.ones_like(s) if s0 % 2 else (s > 0.5).astype(float) for s0, s in enumerate(layer.strategy)]
                  for n, layer in solved.items()}  # a pure profile: rounded equilibrium, some states always jam
    f32 = pack_profile(game, strategies)
    u8 = pack_profile(game, strategies, dtype=np.uint8)
    assert u8.dtype == np.uint8 and set(np.unique(u8)) == {0, 255}
    ref = simulate(game, [f32, f32], [0, 1, 0], START, 50_000, seed=2, tensors=sampler)
    res = simulate(game, [u8, u8], [0, 1, 0], START, 50_000, seed=2, tensors=sampler)
    assert np.array_equal(res.mean, ref.mean) and np.array_equal(res.finishing, ref.finishing)
    assert not np.array_equal(res.mean, simulate(game, [eq], [0, 0, 0], START, 50_000, seed=2, tensors=sampler).mean)
    # mixed strategies are rounded to 1/255: close to, but not the same as, float32
    assert np.abs(pack_profile(game, {n: l.strategy for n, l in solved.items()}, dtype=np.uint8) / 255.0
                  - eq).max() <= 0.5 / 255 + 1e-7
    mixed_types = simulate(game, [f32, u8], [0, 1, 0], START, 50_000, seed=2, tensors=sampler)
    assert np.array_equal(mixed_types.mean, ref.mean)
    with pytest.raises(ValueError):
        simulate(game, [f32.astype(np.float64)], [0, 0, 0], START, 10, seed=1, tensors=sampler)
    with pytest.raises(KeyError):
        pack_profile(game, strategies, dtype=np.uint16)


def _pure_path(tree, child: str) -> tuple[int, int]:
    """(decisions, hands at the showdown) of a hand in which every decider takes ``child``."""
    ref, decisions = tree.root, 0
    while ref[0] == "node":
        decisions += 1
        ref = getattr(tree.nodes[ref[1]], child)
    contesting = len(tree.terminals[ref[1]].contesting)
    return decisions, contesting if contesting >= 2 else 0


def test_hand_events_count_decisions_and_showdowns(game, sampler):
    """One hand from every state under the pure profiles "all fold" and "all jam": the counted
    decisions and showdowns are those of the path through the state's hand tree (walked here
    from :func:`engine.hand.hand_tree`), and the hand is counted heads-up or three-handed by the
    state's players; a coin-flip profile heads-up at (3, 3) gives 1.5
    decisions (the BB decides after a jam) and a showdown a quarter of the time."""
    rows = game.total_nodes
    for name, dense, child in [("fold", np.zeros((rows, 169), np.float32), "fold_child"),
                               ("jam", np.ones((rows, 169), np.float32), "jam_child")]:
        for n in range(2, PLAYERS + 1):
            for row in enumerate_states(UNITS, n):
                stacks = tuple(int(x) for x in row)
                decisions, showdown = _pure_path(hand_tree(stacks, PAYOUTS), child)
                ev = simulate(game, [dense], [0] * n, stacks, 50, seed=3, tensors=sampler, max_hands=1).hand_events
                assert (ev["decisions"], ev["two_way"], ev["three_way"]) == (
                    decisions, float(showdown == 2), float(showdown == 3)), (name, stacks)
                assert (ev["heads_up"], ev["three_handed"]) == (float(n == 2), float(n == 3)), (name, stacks)
    coin = np.full((rows, 169), 0.5, np.float32)
    N = 200_000
    ev = simulate(game, [coin], [0, 0], (3, 3), N, seed=4, tensors=sampler, max_hands=1).hand_events
    assert abs(ev["decisions"] - 1.5) < 4 * 0.5 / np.sqrt(N) and ev["three_way"] == 0.0
    assert abs(ev["two_way"] - 0.25) < 4 * np.sqrt(0.25 * 0.75 / N)


def test_heads_up_hands_are_the_general_tree_walks_hands(game, sampler, monkeypatch):
    """The kernel plays heads-up hands from trees written out in code (:data:`HEADS_UP_KEYS`, two
    seats in registers); packed games of 2 to 5 players have exactly those trees, and with the
    general tree walk instead the tournaments are the same to the bit: every blind all-in case
    (at 6 units heads-up stacks of 1 and 2 put the blinds all-in), random mixed profiles, and
    tournaments cut short by the hand cap before, at and after heads-up play began."""
    import engine.simulation as simulation
    from engine.simulation_kernel import heads_up_layout_ok

    def layout(g):
        return (g.key_root, g.key_node_off, g.key_term_off, g.node_actor, g.node_fold, g.node_jam, g.term_ndeal,
                g.term_out)

    for n in (2, 4, 5):
        assert heads_up_layout_ok(*layout(pack_game(7, n, PAYOUTS[:min(n, 3)]))), n
    assert heads_up_layout_ok(*layout(game))
    swapped = list(layout(game))
    swapped[5] = game.node_fold.copy()  # every jam child made a fold child: not the written-out trees
    assert not heads_up_layout_ok(*swapped)

    rng = np.random.default_rng(5)
    rows = game.total_nodes
    mixed = rng.random((rows, 169)).astype(np.float32)
    jammy = np.where(rng.random((rows, 169)) < 0.7, 1.0, rng.random((rows, 169))).astype(np.float32)
    assert {2 * int(a <= 1) + int(b <= 2) for a, b in enumerate_states(UNITS, 2)} == {0, 1, 2}
    three = pack_game(3, 2, PAYOUTS[:2])  # both blinds all-in (key 3) needs stacks (1, 2)
    coin = np.full((three.total_nodes, 169), 0.5, np.float32)
    cases = [(game, [mixed], [0, 0, 0], START, 100_000), (game, [jammy, mixed], [1, 0, 1], START, 100_000),
             (game, [mixed], [0, 0, 0], START, 1), (game, [jammy], [0, 0, 0], START, 3),
             (game, [mixed], [0, 0, 0], START, 6), (three, [coin], [0, 0], (1, 2), 100_000),
             (three, [coin], [0, 0], (2, 1), 100_000)]
    for g, profiles, seats, start, max_hands in cases:
        fast = simulate(g, profiles, seats, start, 30_000, seed=8, tensors=sampler, max_hands=max_hands)
        with monkeypatch.context() as m:
            m.setattr(simulation.kernel, "heads_up_layout_ok", lambda *arrays: False)
            walked = simulate(g, profiles, seats, start, 30_000, seed=8, tensors=sampler, max_hands=max_hands)
        assert np.array_equal(fast.mean, walked.mean) and np.array_equal(fast.cov, walked.cov), max_hands
        assert np.array_equal(fast.finishing, walked.finishing) and fast.mean_hands == walked.mean_hands
        assert fast.hand_events == walked.hand_events and fast.unfinished == walked.unfinished
        assert (fast.unfinished > 0) == (max_hands < 100_000)
        # every hand from a 2- or 3-player start is heads-up or three-handed; the heads-up ones are
        # counted by the written-out hands' loop in one run and hand by hand in the other
        ev = fast.hand_events
        heads_up_hands = ev["heads_up"] * fast.mean_hands * fast.tournaments
        assert abs(ev["heads_up"] + ev["three_handed"] - 1.0) < 1e-12
        assert abs(heads_up_hands - round(heads_up_hands)) < 1e-6
        assert (ev["three_handed"] > 0) == (len(start) == 3), start


def test_hand_cap_counts_unfinished_tournaments(game, eq, sampler):
    res = simulate(game, [eq], [0, 0, 0], START, 20_000, seed=1, tensors=sampler, max_hands=1)
    assert res.mean_hands == 1.0 and 0 < res.unfinished < 20_000
    assert res.mean.sum() < sum(PAYOUTS)
    with pytest.raises(ValueError):
        simulate(game, [eq[:-1]], [0, 0, 0], START, 10, seed=1, tensors=sampler)
    with pytest.raises(ValueError):
        simulate(game, [eq], [0, 1, 0], START, 10, seed=1, tensors=sampler)


# --------------------------------------------------------------------------------------------
# direct matches
# --------------------------------------------------------------------------------------------


def test_direct_match_sides_share_the_prize_pool(game, solved, eq, sampler):
    jam = np.ones_like(eq)
    reported = []
    seatings = direct_match(game, eq, jam, START, 100_000, seed=3, tensors=sampler, on_seating=reported.append)
    assert len(seatings) == 2 ** 3 - 2
    assert len(reported) == len(seatings) and all(r is s for r, s in zip(reported, seatings))  # as each finishes
    assert [sum(1 << i for i in s.a_seats) for s in seatings] == list(range(1, 2 ** 3 - 1))  # in mask order
    assert sorted(s.a_seats for s in seatings) == sorted(
        tuple(i for i in range(3) if m >> i & 1) for m in range(1, 7))
    for s in seatings:
        na = len(s.a_seats)
        assert abs(na * s.roi_a + (3 - na) * s.roi_b) < 1e-9
        assert abs(s.result.mean.sum() - sum(PAYOUTS)) < 1e-9
        assert s.roi_a_se > 0 and s.roi_b_se > 0
        # each side's mean prize and finishing distribution, from its positions' own rows
        payoff_a, payoff_b = s.payoffs
        fair = sum(PAYOUTS) / 3
        assert payoff_a == pytest.approx(fair * (1 + s.roi_a / 100))
        assert payoff_b == pytest.approx(fair * (1 + s.roi_b / 100))
        assert na * payoff_a + (3 - na) * payoff_b == pytest.approx(sum(PAYOUTS))
        finishing_a, finishing_b = s.finishing
        assert finishing_a.sum() == pytest.approx(1) and finishing_b.sum() == pytest.approx(1)
        assert na * finishing_a + (3 - na) * finishing_b == pytest.approx(np.ones(3))  # every place taken once
        # (prizes follow the places only in expectation: tied busts split the prize but draw a place)
    assert max(abs(s.roi_a) / s.roi_a_se for s in seatings) > 5  # always-jam is not the equilibrium
    assert match_summary(seatings)["roi_a"] > 3 * match_summary(seatings)["roi_a_se"]  # equilibrium wins


def test_solved_values_sum_to_the_open_prizes_of_each_layer(solved):
    """With three paid places the layers' values sum to different open prizes: $100 with three
    players left, $80 (50 + 30) heads-up, where the third prize is already paid. (The solver's own
    tests pay two places, where every layer's open prizes are the whole pool.)"""
    for n, open_prizes in ((2, 80.0), (3, 100.0)):
        assert np.abs(solved[n].values.sum(axis=1) - open_prizes).max() < 1e-9
        assert solved[n].values.min() >= PAYOUTS[n - 1] - 1e-9  # a seat is worth at least the last open prize


def test_standard_errors_match_the_spread_over_seeds(game, eq, sampler):
    """The reported standard error of a mean payoff is the spread of that mean over independent
    runs: 40 seeds of 20,000 tournaments each, per position, the standard deviation of the 40
    means against the reported errors (an error off by a factor such as √2 or the wrong T would
    fall outside; the ratio's sampling spread at 40 runs is about 11 %)."""
    runs = [simulate(game, [eq], [0, 0, 0], START, 20_000, seed=100 + k, tensors=sampler) for k in range(40)]
    means = np.array([r.mean for r in runs])
    reported = np.sqrt(np.mean([r.se ** 2 for r in runs], axis=0))
    ratio = means.std(axis=0, ddof=1) / reported
    assert np.all((0.7 < ratio) & (ratio < 1.35)), ratio
    roi_se = np.sqrt(np.mean([r.roi_se ** 2 for r in runs], axis=0))
    roi_ratio = np.array([r.roi for r in runs]).std(axis=0, ddof=1) / roi_se
    assert np.allclose(roi_ratio, ratio)


def test_direct_match_with_the_sides_swapped_plays_the_same_seatings(game, eq, sampler):
    """A against B and B against A seat the same profiles in the same places at complementary masks:
    each seating's A result of the one equals the B result of the other within their errors (the
    two calls play independent streams), and the summaries swap. A mix-up of which side a seat
    plays shows as a gap of many standard errors (always-jam against the equilibrium loses a lot,
    and by seat)."""
    jam = np.ones_like(eq)
    ab = {s.a_seats: s for s in direct_match(game, eq, jam, START, 100_000, seed=11, tensors=sampler)}
    ba = {s.b_seats: s for s in direct_match(game, jam, eq, START, 100_000, seed=12, tensors=sampler)}
    assert ab.keys() == ba.keys()
    gaps = []
    for seats, s in ab.items():
        t = ba[seats]  # the equilibrium on the same seats, now side B
        assert t.a_seats == s.b_seats
        gaps += [(s.roi_a - t.roi_b) / np.hypot(s.roi_a_se, t.roi_b_se),
                 (s.roi_b - t.roi_a) / np.hypot(s.roi_b_se, t.roi_a_se)]
    assert max(abs(g) for g in gaps) < 4, gaps
    assert max(abs(s.roi_b) / s.roi_b_se for s in ab.values()) > 10  # the sides do differ, seat by seat
    x, y = match_summary(list(ab.values())), match_summary(list(ba.values()))
    assert abs(x["roi_a"] - y["roi_b"]) < 4 * np.hypot(x["roi_a_se"], y["roi_b_se"])


def test_profile_against_itself_breaks_even(game, eq, sampler):
    seatings = direct_match(game, eq, eq, (1, 2, 3), 100_000, seed=4, tensors=sampler)
    summary = match_summary(seatings)
    assert abs(summary["roi_a"]) < 3 * summary["roi_a_se"] and abs(summary["roi_b"]) < 3 * summary["roi_b_se"]
    # every seat alike: the sides' means are opposites (each seating's are, weighted by its seats)
    assert all(s.result.unfinished == 0 for s in seatings)
    assert summary["roi_a"] == pytest.approx(-summary["roi_b"], abs=1e-9)
    k = np.array([len(s.a_seats) for s in seatings])
    assert summary["roi_a"] == pytest.approx(np.array([s.roi_a for s in seatings]) @ k / k.sum(), rel=1e-12)
    # a seating's ROI is the mean positional ROI of its seats in plain self-play
    ref = simulate(game, [eq], [0, 0, 0], (1, 2, 3), 400_000, seed=5, tensors=sampler)
    assert np.abs(ref.roi).max() > 10 * ref.roi_se.max()  # positions differ a lot at (1, 2, 3)
    for s in seatings:
        expect = ref.roi[list(s.a_seats)].mean()
        assert abs(s.roi_a - expect) < 4 * np.hypot(s.roi_a_se, ref.roi_se.max()), (s.a_seats, s.roi_a, expect)
