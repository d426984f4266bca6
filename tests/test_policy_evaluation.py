"""Policy evaluation of a layer (engine/policy_evaluation.py) on tiny games.

Policy evaluation only needs each state's outcome probabilities, not how a profile produced
them, so these tests use synthetic probabilities (random, all-fold, coin-flip all-in) on the
real compiled hands of 2- and 3-player games.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import pytest

from engine.game_tree import compile_hand
from engine.policy_evaluation import (
    evaluate_layer,
    finishing_probabilities,
    layer_transitions,
    outcome_place_mass,
    solve_layer,
    value_iteration,
)
from engine.states import enumerate_states, state_index

PAYOUTS = (70.0, 30.0)


@lru_cache(maxsize=None)
def layer_hands(units: int, n: int, payouts: tuple[float, ...] = PAYOUTS):
    return tuple(compile_hand(tuple(int(x) for x in row), payouts, state_index)
                 for row in enumerate_states(units, n))


def valid_mask(h) -> np.ndarray:
    return np.arange(6)[None, :] < h.term_orders[:, None]


def random_probs(hands, rng) -> list[np.ndarray]:
    """A random distribution over every state's (terminal, outcome) pairs."""
    out = []
    for h in hands:
        p = np.zeros((len(h.term_orders), 6))
        mask = valid_mask(h)
        p[mask] = rng.dirichlet(np.full(mask.sum(), 0.5))
        out.append(p)
    return out


def fold_terminal(h) -> int:
    """The terminal everybody-folds reaches (follow fold edges from the root)."""
    r = h.root
    while r >= 0:
        r = h.node_fold[r]
    return -1 - r


def fold_probs(hands) -> list[np.ndarray]:
    """All probability on the all-fold terminal; its showdown orders (if any) equally likely."""
    out = []
    for h in hands:
        p = np.zeros((len(h.term_orders), 6))
        t = fold_terminal(h)
        p[t, :h.term_orders[t]] = 1.0 / h.term_orders[t]
        out.append(p)
    return out


def coinflip_probs(hands) -> list[np.ndarray]:
    """Heads-up: every hand is an all-in, each player wins with probability 1/2."""
    out = []
    for h in hands:
        p = np.zeros((len(h.term_orders), 6))
        (t,) = np.flatnonzero(h.term_orders == 2)  # the one showdown of a heads-up hand
        p[t, :2] = 0.5
        out.append(p)
    return out


def solve_game(units, players, probs_for, payouts=PAYOUTS):
    """V and probabilities of every layer 2..players."""
    V, probs = {}, {}
    for n in range(2, players + 1):
        hands = layer_hands(units, n, payouts)
        probs[n] = probs_for(hands)
        V[n] = evaluate_layer(list(hands), probs[n], n, {k: v for k, v in V.items() if k < n})
    return V, probs


# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("units,players", [(6, 3), (8, 3), (7, 4)])
def test_values_add_up_to_open_prizes(units, players):
    rng = np.random.default_rng(units * 10 + players)
    payouts = (50.0, 30.0, 20.0)
    V, probs = solve_game(units, players, lambda hs: random_probs(hs, rng), payouts)
    for n, Vn in V.items():
        assert Vn.shape == (math.comb(units - 1, n - 1), n)
        assert Vn.min() >= 0
        np.testing.assert_allclose(Vn.sum(axis=1), sum(payouts[:n]), atol=1e-9)
        # V solves its own system
        P, c = layer_transitions(list(layer_hands(units, n, payouts)), probs[n], n,
                                 {k: v for k, v in V.items() if k < n})
        assert P.shape == (Vn.size, Vn.size) and c.shape == (Vn.size,)
        np.testing.assert_allclose(Vn.ravel(), c + P @ Vn.ravel(), atol=1e-9)


def test_transition_matrix_structure():
    hands = list(layer_hands(8, 3))
    probs = random_probs(hands, np.random.default_rng(0))
    V2 = np.full((7, 2), 1.0)
    P, c = layer_transitions(hands, probs, 3, {2: V2})
    n = 3
    for s, (h, p) in enumerate(zip(hands, probs)):
        stay = p[h.term_next_players == 3].sum()
        row_sums = np.asarray(P[s * n:(s + 1) * n].sum(axis=1)).ravel()
        np.testing.assert_allclose(row_sums, stay, atol=1e-12)
        # with V2 = 1 every survivor into the 2-player layer is worth 1
        expect = (p[..., None] * h.term_prize).sum(axis=(0, 1))
        expect += (p[..., None] * ((h.term_next_players == 2)[..., None] & (h.term_seat >= 0))).sum(axis=(0, 1))
        np.testing.assert_allclose(c[s * n:(s + 1) * n], expect, atol=1e-12)


def _simulate(units, players, probs, payouts, start, sims, rng):
    """Play out the Markov chain: sample outcomes, follow next states down the layers."""
    flat = {}
    for n in range(2, players + 1):
        hands = layer_hands(units, n, payouts)
        rows = []
        for h, p in zip(hands, probs[n]):
            t, o = np.nonzero(valid_mask(h) & (p > 0))
            rows.append((np.cumsum(p[t, o]), h.term_prize[t, o], h.term_next_players[t, o], h.term_next[t, o],
                         h.term_seat[t, o]))
        flat[n] = rows
    pay = np.zeros((sims, players))
    for i in range(sims):
        n, s = players, start
        who = np.arange(players)  # who[p] = starting position of the player now in position p
        for _ in range(100_000):
            cum, prize, nxt_n, nxt, seat = flat[n][s]
            k = min(int(np.searchsorted(cum, rng.random() * cum[-1], side="right")), len(cum) - 1)
            pay[i, who] += prize[k]
            if nxt_n[k] == 0:
                break
            new = np.empty(nxt_n[k], dtype=np.int64)
            alive = seat[k] >= 0
            new[seat[k][alive]] = who[alive]
            who, n, s = new, int(nxt_n[k]), int(nxt[k])
        else:
            raise AssertionError("tournament did not end")
    return pay


def test_agrees_with_monte_carlo_play_out():
    units, players, payouts = 8, 3, (50.0, 30.0, 20.0)
    rng = np.random.default_rng(7)
    V, probs = solve_game(units, players, lambda hs: random_probs(hs, rng), payouts)
    for start in (0, 10, 20):
        pay = _simulate(units, players, probs, payouts, start, 2000, rng)
        mean, se = pay.mean(axis=0), pay.std(axis=0, ddof=1) / math.sqrt(len(pay))
        assert np.all(np.abs(mean - V[players][start]) <= 4 * se + 1e-9), (start, mean, V[players][start], se)


def test_value_iteration_equals_direct_and_gmres():
    units, players = 8, 3
    rng = np.random.default_rng(3)
    V, probs = solve_game(units, players, lambda hs: random_probs(hs, rng))
    P, c = layer_transitions(list(layer_hands(units, 3)), probs[3], 3, {2: V[2]})
    X_vi, its, ok = value_iteration(P, c, tol=1e-13)
    assert ok and its > 1
    X_direct, info_d = solve_layer(P, c, method="direct")
    X_gmres, info_g = solve_layer(P, c, method="iterative")
    assert info_d["method"] == "direct" and info_g["method"] == "iterative"
    assert info_d["fallback"] is None and info_g["fallback"] is None
    np.testing.assert_allclose(X_vi, X_direct, atol=1e-10)
    np.testing.assert_allclose(X_gmres, X_direct, atol=1e-10)
    np.testing.assert_allclose(X_direct.reshape(-1, 3), V[3], atol=1e-10)
    # warm start from the answer stops at once
    X_warm, info_w = solve_layer(P, c, method="iterative", x0=X_direct)
    np.testing.assert_allclose(X_warm, X_direct, atol=1e-10)
    assert info_w["iterations"] <= 1


def test_all_fold_profile_cycles_and_gets_the_minimal_solution():
    """Everybody always folds. Heads-up, the SB just hands one chip to the BB: (a, b) with a ≥ 2
    goes to (b+1, a−1), whose SB again holds ≥ 2, so those states form a closed set that never
    busts anyone: the minimal non-negative values are 0 there (I − P is singular). From (1, b)
    the blind all-in SB is called automatically: BB wins (prob 1/2) ends the tournament, SB wins
    leads to (b−1, 2), a cycling state."""
    units = 6
    hands2 = list(layer_hands(units, 2))
    probs2 = fold_probs(hands2)
    for h in hands2:
        t = fold_terminal(h)
        if h.stacks[0] >= 2:  # the closed set: stays heads-up, next SB has >= 2 chips
            assert h.term_orders[t] == 1 and h.term_next_players[t, 0] == 2
            a, b = h.stacks
            assert hands2[h.term_next[t, 0]].stacks == (b + 1, a - 1)
    P, c = layer_transitions(hands2, probs2, 2, {})
    assert np.any(np.abs(np.asarray(P.sum(axis=1)).ravel() - 1) < 1e-15)  # stochastic rows: I − P singular
    info = {}
    V2 = evaluate_layer(hands2, probs2, 2, {}, info=info)
    assert info["solved_rows"] < V2.size and info["fallback"] is None
    for s, h in enumerate(hands2):
        if h.stacks[0] >= 2:
            assert np.all(V2[s] == 0.0)
        else:  # (1, 5)
            np.testing.assert_allclose(V2[s], [0.5 * PAYOUTS[1], 0.5 * PAYOUTS[0]], atol=1e-12)
    X_vi, _, ok = value_iteration(P, c)
    assert ok
    np.testing.assert_allclose(V2.ravel(), X_vi, atol=1e-12)

    # 3 players: the blinds circulate; whatever the solver path, values stay the minimal solution
    hands3 = list(layer_hands(units, 3))
    probs3 = fold_probs(hands3)
    P3, c3 = layer_transitions(hands3, probs3, 3, {2: V2})
    X_vi3, _, ok = value_iteration(P3, c3)
    assert ok
    for method in ("auto", "direct", "iterative", "value_iteration"):
        info = {}
        V3 = evaluate_layer(hands3, probs3, 3, {2: V2}, method=method, info=info)
        assert V3.min() >= 0 and np.all(np.isfinite(V3))
        assert np.all(V3.sum(axis=1) <= sum(PAYOUTS) + 1e-9)
        np.testing.assert_allclose(V3.ravel(), X_vi3, atol=1e-10)
        assert np.any(V3.sum(axis=1) < sum(PAYOUTS) - 1)  # some states never finish
        assert np.any(V3 == 0)


def test_rejected_solution_falls_back_to_value_iteration():
    rng = np.random.default_rng(5)
    V, probs = solve_game(6, 3, lambda hs: random_probs(hs, rng))
    P, c = layer_transitions(list(layer_hands(6, 3)), probs[3], 3, {2: V[2]})
    X, info = solve_layer(P, c, method="direct", upper=1.0)  # a bound the true values break
    assert info["method"] == "value_iteration" and "above" in info["fallback"]
    np.testing.assert_allclose(X.reshape(-1, 3), V[3], atol=1e-9)


@pytest.mark.parametrize("units,players", [(8, 3), (7, 4)])
def test_finishing_probabilities(units, players):
    payouts = (50.0, 30.0, 20.0)
    rng = np.random.default_rng(11)
    V, probs = solve_game(units, players, lambda hs: random_probs(hs, rng), payouts)
    pay = np.array(payouts + (0.0,) * (players - len(payouts)))
    F = {}
    for n in range(2, players + 1):
        hands = list(layer_hands(units, n, payouts))
        F[n] = finishing_probabilities(hands, probs[n], n, dict(F), players)
        assert F[n].shape == (len(hands), n, players)
        assert F[n].min() >= -1e-12
        np.testing.assert_allclose(F[n].sum(axis=2), 1.0, atol=1e-10)
        np.testing.assert_allclose(F[n][:, :, :n].sum(axis=1), 1.0, atol=1e-10)
        assert np.all(F[n][:, :, n:] == 0)
        np.testing.assert_allclose(F[n] @ pay, V[n], atol=1e-9)


def test_place_mass_matches_prizes_and_splits_ties():
    payouts = (50.0, 30.0, 20.0)
    pay = np.array(payouts)
    seen_tie = False
    for n in (2, 3):
        for h in layer_hands(8, n, payouts):
            M = outcome_place_mass(h.stacks, 3)
            assert M.shape == h.term_prize.shape + (3,)
            np.testing.assert_allclose(M @ pay, h.term_prize, atol=1e-12)  # same outcome order as compile_hand
            for t in range(len(h.term_orders)):
                for o in range(h.term_orders[t]):
                    ended = h.term_next_players[t, o] == 0
                    decided = M[t, o].sum(axis=1)
                    out = (h.term_seat[t, o] < 0) | ended
                    np.testing.assert_allclose(decided, out.astype(float))  # mass 1 exactly for those decided
                    if np.any(M[t, o] == 0.5):
                        seen_tie = True
                        assert np.all(M[t, o].sum(axis=0)[-2:] == 1.0)  # the shared places are both handed out
    assert seen_tie  # e.g. (2, 2, 4): both 2-chip players bust in one hand


@pytest.mark.parametrize("units", [8, 13])
def test_coin_flip_all_in_wins_chip_proportionally(units):
    """If every heads-up hand is an even-money all-in, chips are a fair martingale, so a stack x
    wins with probability x / units."""
    hands = list(layer_hands(units, 2))
    F = finishing_probabilities(hands, coinflip_probs(hands), 2, {}, 2)
    stacks = np.array([h.stacks for h in hands], dtype=float)
    np.testing.assert_allclose(F[:, :, 0], stacks / units, atol=1e-12)
    V = evaluate_layer(hands, coinflip_probs(hands), 2, {})
    np.testing.assert_allclose(V, PAYOUTS[1] + (PAYOUTS[0] - PAYOUTS[1]) * stacks / units, atol=1e-10)


def test_bad_input_is_rejected():
    hands = list(layer_hands(6, 3))
    probs = random_probs(hands, np.random.default_rng(0))
    V2 = np.zeros((5, 2))
    with pytest.raises(ValueError, match="2-player layer"):
        evaluate_layer(hands, probs, 3, {})
    bad = [p.copy() for p in probs]
    bad[4] *= 0.5
    with pytest.raises(ValueError, match="state 4 sum to"):
        evaluate_layer(hands, bad, 3, {2: V2})
    with pytest.raises(ValueError, match="has 3 players"):
        evaluate_layer(hands, probs, 2, {})
    with pytest.raises(ValueError, match="shape"):
        evaluate_layer(hands, [p[:, :3] for p in probs], 3, {2: V2})
    with pytest.raises(ValueError, match="places"):
        finishing_probabilities(hands, probs, 3, {2: np.zeros((5, 2, 3))}, 2)


def test_gmres_converges_within_the_systems_size_like_full_gmres():
    """Below its restart length GMRES is full GMRES, which minimises the residual over a Krylov space
    that grows by one dimension a step: it reaches the exact solution within N steps (here a
    25-row system whose spectral radius 0.99 makes any stationary iteration take hundreds), and
    its own residual estimate is the true one."""
    import scipy.sparse as sp
    import scipy.sparse.linalg as spla

    from engine.policy_evaluation import gmres

    rng = np.random.default_rng(11)
    n = 25
    dense = rng.random((n, n)) * (rng.random((n, n)) < 0.4)
    dense *= 0.99 / dense.sum(axis=1, keepdims=True)
    P = sp.csr_matrix(dense)
    b = rng.random(n)
    x, steps, rel = gmres(P, b, rtol=1e-12)
    exact = spla.spsolve(sp.identity(n, format="csc") - P.tocsc(), b)
    np.testing.assert_allclose(x, exact, rtol=1e-9)
    assert steps <= n + 2
    true_rel = np.linalg.norm(b - (x - P @ x)) / np.linalg.norm(b)
    assert true_rel <= 1e-10 and rel == pytest.approx(true_rel, abs=1e-11)
