"""Equity models (SPEC §4): oracle, brute force, invariants, batch, validation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.equity_models import (
    MAX_PLAYERS,
    MODELS,
    finishing_matrices,
    finishing_matrix,
    harville,
    payoffs,
    roberts,
    weitzman,
)

# ---------------------------------------------------------------------------------------------
# SPEC §4 oracle: x = 2,5,8,13,17; R = 50,30,20,0,0
# ---------------------------------------------------------------------------------------------

ORACLE_X = [2, 5, 8, 13, 17]
ORACLE_R = [50, 30, 20, 0, 0]
ORACLE = {
    "harville": (
        [[.044, .060, .093, .180, .622], [.111, .142, .201, .331, .214],
         [.178, .211, .264, .246, .102], [.289, .287, .239, .145, .040],
         [.378, .300, .202, .098, .022]],
        [5.89, 13.84, 20.48, 27.86, 31.94],
    ),
    "weitzman": (
        [[.044, .071, .124, .240, .520], [.111, .159, .228, .294, .208],
         [.178, .223, .257, .212, .130], [.289, .277, .212, .142, .080],
         [.378, .269, .179, .112, .061]],
        [6.84, 14.89, 20.73, 26.99, 30.56],
    ),
    "roberts": (
        [[.044, .049, .073, .144, .690], [.111, .124, .191, .392, .182],
         [.178, .197, .290, .256, .078], [.289, .301, .252, .127, .031],
         [.378, .329, .194, .081, .019]],
        [5.16, 13.09, 20.61, 28.51, 32.63],
    ),
}


@pytest.mark.parametrize("model", MODELS)
def test_oracle(model):
    P = finishing_matrix(model, ORACLE_X)
    want_P, want_v = ORACLE[model]
    assert P.dtype == np.float64 and P.shape == (5, 5)
    np.testing.assert_allclose(np.round(P, 3), want_P, atol=1e-12)
    v = payoffs(P, ORACLE_R)
    np.testing.assert_allclose(np.round(v, 2), want_v, atol=1e-12)
    # the short payout list (places 4, 5 pay nothing) gives the same payoffs
    np.testing.assert_allclose(payoffs(P, ORACLE_R[:3]), v, atol=0)


def test_named_functions_match_dispatch():
    for fn, model in ((harville, "harville"), (weitzman, "weitzman"), (roberts, "roberts")):
        np.testing.assert_array_equal(fn(ORACLE_X), finishing_matrix(model, ORACLE_X))


# ---------------------------------------------------------------------------------------------
# independent straightforward implementations
# ---------------------------------------------------------------------------------------------


def harville_bruteforce(x):
    """Sum over all n! finishing orders (order[0] = 1st place)."""
    n = len(x)
    P = np.zeros((n, n))
    for order in itertools.permutations(range(n)):
        prob, left = 1.0, float(sum(x))
        for i in order:
            prob *= x[i] / left
            left -= x[i]
        for place, i in enumerate(order):
            P[i, place] += prob
    return P


def _elimination_recursion(x, choose, redistribute):
    """Plain recursion over elimination orders with explicit stack bookkeeping.

    ``choose(stacks)`` gives the unnormalised elimination weights of the alive players (dict),
    ``redistribute(stacks, out)`` the new stacks of the others after ``out`` is eliminated.
    """
    n = len(x)
    P = np.zeros((n, n))

    def rec(stacks, prob):
        alive = list(stacks)
        if len(alive) == 1:
            P[alive[0], 0] += prob
            return
        w = choose(stacks)
        tot = sum(w.values())
        for i in alive:
            q = prob * w[i] / tot
            P[i, len(alive) - 1] += q  # the k-th survivor out finishes k-th
            rec(redistribute(stacks, i), q)

    rec({i: float(v) for i, v in enumerate(x)}, 1.0)
    return P


def weitzman_bruteforce(x):
    def choose(s):
        return {i: 1.0 / v for i, v in s.items()}

    def redistribute(s, out):
        share = s[out] / (len(s) - 1)
        return {j: v + share for j, v in s.items() if j != out}

    return _elimination_recursion(x, choose, redistribute)


def roberts_bruteforce(x):
    def choose(s):
        return {i: (1.0 / v**2) * sum(1.0 / u for j, u in s.items() if j != i) for i, v in s.items()}

    def redistribute(s, out):
        others = {j: v for j, v in s.items() if j != out}
        norm = sum(1.0 / v for v in others.values())
        return {j: v + s[out] * (1.0 / v) / norm for j, v in others.items()}

    return _elimination_recursion(x, choose, redistribute)


BRUTE = {"harville": harville_bruteforce, "weitzman": weitzman_bruteforce, "roberts": roberts_bruteforce}


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_against_bruteforce(model, n):
    rng = np.random.default_rng(1000 * n + MODELS.index(model))
    cases = [rng.uniform(0.1, 10.0, n) for _ in range(3)]
    cases.append(rng.integers(1, 30, n).astype(float))  # integer stacks, ties likely
    cases.append(np.full(n, 3.0))
    for x in cases:
        np.testing.assert_allclose(finishing_matrix(model, x), BRUTE[model](x), rtol=1e-11, atol=1e-13)


def test_bruteforce_references_agree_with_oracle():
    # guards the references themselves: they too reproduce SPEC §4
    for model in MODELS:
        np.testing.assert_allclose(np.round(BRUTE[model](ORACLE_X), 3), ORACLE[model][0], atol=1e-12)


# ---------------------------------------------------------------------------------------------
# invariants
# ---------------------------------------------------------------------------------------------


def _check_invariants(P, x):
    n = len(x)
    assert P.shape == (n, n)
    assert np.all(P >= -1e-15) and np.all(P <= 1 + 1e-12)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(P.sum(axis=0), 1.0, atol=1e-12)
    # P(win) = x / sum(x) exactly for all three models (stacks are martingales)
    np.testing.assert_allclose(P[:, 0], np.asarray(x) / np.sum(x), rtol=1e-10, atol=1e-14)


stack_values = st.floats(min_value=0.05, max_value=100.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(
    model=st.sampled_from(MODELS),
    x=st.lists(stack_values, min_size=2, max_size=7),
    data=st.data(),
)
def test_invariants_hypothesis(model, x, data):
    P = finishing_matrix(model, x)
    _check_invariants(P, x)
    # permutation equivariance: permuting the players permutes the rows
    perm = data.draw(st.permutations(range(len(x))))
    Pp = finishing_matrix(model, [x[i] for i in perm])
    np.testing.assert_allclose(Pp, P[list(perm)], rtol=1e-10, atol=1e-13)
    # scale invariance: only relative stacks matter
    scale = data.draw(st.sampled_from([0.01, 3.0, 1000.0]))
    np.testing.assert_allclose(finishing_matrix(model, np.asarray(x) * scale), P, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("model", MODELS)
def test_two_players_and_equal_stacks(model):
    P = finishing_matrix(model, [1.0, 3.0])
    np.testing.assert_allclose(P, [[0.25, 0.75], [0.75, 0.25]], atol=1e-15)
    n = MAX_PLAYERS[model] if model == "roberts" else 8
    np.testing.assert_allclose(finishing_matrix(model, np.full(n, 7.0)), np.full((n, n), 1.0 / n), atol=1e-13)


@pytest.mark.parametrize("model", MODELS)
def test_largest_supported_size(model):
    n = MAX_PLAYERS[model]
    x = np.random.default_rng(7).uniform(1.0, 50.0, n)
    _check_invariants(finishing_matrix(model, x), x)


# ---------------------------------------------------------------------------------------------
# batch
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_batch_equals_single(model):
    rng = np.random.default_rng(3)
    for n in (2, 3, 5, 6):
        X = rng.integers(1, 40, size=(57, n)).astype(float)
        out = finishing_matrices(model, X)
        assert out.shape == (57, n, n) and out.dtype == np.float64
        for r in range(len(X)):
            np.testing.assert_allclose(out[r], finishing_matrix(model, X[r]), rtol=1e-14, atol=1e-16)
        # batch payoffs
        v = payoffs(out, [50, 30, 20][:n])
        assert v.shape == (57, n)
        np.testing.assert_allclose(v.sum(axis=1), sum([50, 30, 20][:n]), rtol=1e-12)
    # integer input and an empty batch
    np.testing.assert_array_equal(finishing_matrices(model, np.array([[2, 5, 8]])), finishing_matrices(model, [[2.0, 5.0, 8.0]]))
    assert finishing_matrices(model, np.zeros((0, 4))).shape == (0, 4, 4)


# ---------------------------------------------------------------------------------------------
# validation
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model, stacks, match",
    [
        ("harville", [5.0], r"stacks must have 2\.\.20 players"),
        ("harville", np.ones(21), r"stacks must have 2\.\.20 players"),
        ("weitzman", np.ones(21), r"stacks must have 2\.\.20 players"),
        ("roberts", np.ones(10), r"stacks must have 2\.\.9 players"),
        ("harville", [1.0, np.nan], "stacks must be finite"),
        ("weitzman", [1.0, np.inf], "stacks must be finite"),
        ("roberts", [1.0, 0.0], r"stacks must be > 0"),
        ("harville", [1.0, -2.0], r"stacks must be > 0"),
        ("harville", ["a", "b"], "stacks must be numeric"),
        ("harville", [[1.0, 2.0]], "stacks must be a 1-D vector"),
        ("icm", [1.0, 2.0], "model must be one of harville, weitzman, roberts"),
    ],
)
def test_validation_single(model, stacks, match):
    with pytest.raises(ValueError, match=match):
        finishing_matrix(model, stacks)


def test_validation_batch_and_payoffs():
    with pytest.raises(ValueError, match="stacks must be a 2-D array"):
        finishing_matrices("harville", [1.0, 2.0])
    with pytest.raises(ValueError, match=r"stacks must have 2\.\.9 players"):
        finishing_matrices("roberts", np.ones((3, 10)))
    with pytest.raises(ValueError, match="stacks must be > 0"):
        finishing_matrices("weitzman", [[1.0, 2.0], [0.0, 3.0]])
    with pytest.raises(ValueError, match="model must be one of"):
        finishing_matrices("malmuth", np.ones((2, 3)))
    P = harville([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="payouts must not list more places than players"):
        payoffs(P, [50, 30, 20, 10])
    with pytest.raises(ValueError, match="P must be a finishing matrix"):
        payoffs(np.ones((3, 4)), [1])
    np.testing.assert_allclose(payoffs(P, [1]), P[:, 0])


def test_the_models_benchmark_times_what_it_names(capsys, monkeypatch):
    """`./lab bench models` prints the time of each model over every state of the game it names (the
    states of 2 .. --max-players players), of Harville on 20 players and Roberts on 9: the calls it
    times are those, on every state once a run, --repeat runs each (here the calls are recorded), and
    the times it prints are those its clock read (here a clock that moves 0.25 s a reading)."""
    import itertools
    import re
    import types

    from engine import bench_models
    from engine.states import enumerate_states

    calls = []

    def spy(name, real):
        def call(model, stacks):
            calls.append((name, model, np.asarray(stacks).shape))
            return real(model, stacks)
        return call

    monkeypatch.setattr(bench_models, "finishing_matrix", spy("one", finishing_matrix))
    monkeypatch.setattr(bench_models, "finishing_matrices", spy("batch", finishing_matrices))
    clock = itertools.count(step=0.25)
    monkeypatch.setattr(bench_models, "time", types.SimpleNamespace(perf_counter=lambda: next(clock)))
    assert bench_models.main(["--units", "7", "--max-players", "4", "--repeat", "2"]) == 0
    out = capsys.readouterr().out
    warm_up = [("one", m, (3,)) for m in MODELS] + [("batch", m, (1, 3)) for m in MODELS]
    assert sorted(calls[:2 * len(MODELS)]) == sorted(warm_up)
    layers = [(len(enumerate_states(7, n)), n) for n in (2, 3, 4)]
    timed = calls[2 * len(MODELS):]
    assert timed == ([("one", "harville", (20,))] * 2
                     + [("batch", m, shape) for m in MODELS for _ in range(2) for shape in layers]
                     + [("one", "roberts", (9,))] * 2)
    states = sum(m for m, _ in layers)
    per_model = re.findall(rf"^(\w+) +all {states:,} states \(7 units, 2\.\.4 players\): ([0-9.]+) s$", out, re.M)
    assert per_model == [(m, "0.250") for m in MODELS]  # each run: one reading before, one after
    assert "\ntotal, three models: 0.750 s\n" in out
    assert "\nHarville, 20 players (1 stack vector): 250.0 ms\n" in out
    assert "\nRoberts, 9 players (1 stack vector): 250.0 ms\n" in out
