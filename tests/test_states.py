"""Game states and their lexicographic indexing (SPEC §2)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.states import (
    binomial_table,
    comb_nb,
    enumerate_states,
    n_states,
    state_from_index,
    state_index,
    state_index_nb,
    state_index_table_nb,
    state_indices,
)

INT64_MAX = 2**63 - 1

THESIS_COUNTS = {2: 44, 3: 946, 4: 13_244, 5: 135_751}


def _strictly_lex_increasing(S: np.ndarray) -> bool:
    d = np.diff(S.astype(np.int64), axis=0)
    nz = d != 0
    if not nz.any(axis=1).all():
        return False  # duplicate rows
    first = nz.argmax(axis=1)
    return bool(np.all(d[np.arange(len(d)), first] > 0))


def test_counts_45_units():
    for n, count in THESIS_COUNTS.items():
        assert n_states(45, n) == count
    assert sum(THESIS_COUNTS.values()) == 149_985
    assert n_states(45, 1) == 1 and n_states(3, 5) == 0


@pytest.mark.parametrize("players", [2, 3, 4, 5])
def test_enumerate_45_units(players):
    S = enumerate_states(45, players)
    assert S.shape == (THESIS_COUNTS[players], players)
    assert S.dtype == np.int32
    assert S.min() >= 1
    assert np.all(S.sum(axis=1) == 45)
    assert _strictly_lex_increasing(S)
    np.testing.assert_array_equal(state_indices(S), np.arange(len(S)))
    assert tuple(S[0]) == (1,) * (players - 1) + (45 - players + 1,)
    assert tuple(S[-1]) == (45 - players + 1,) + (1,) * (players - 1)


def test_matches_itertools_order():
    for units in range(1, 9):
        for players in range(1, units + 1):
            want = [c for c in itertools.product(range(1, units - players + 2), repeat=players)
                    if sum(c) == units]
            got = enumerate_states(units, players)
            assert [tuple(r) for r in got] == want  # product() yields lexicographic order
            assert n_states(units, players) == len(want)


def test_documented_example():
    want = [(1, 1, 3), (1, 2, 2), (1, 3, 1), (2, 1, 2), (2, 2, 1), (3, 1, 1)]
    assert [tuple(r) for r in enumerate_states(5, 3)] == want
    assert [state_index(s) for s in want] == list(range(6))


def test_round_trip_all_4_player_states():
    S = enumerate_states(45, 4)
    for i in range(len(S)):
        np.testing.assert_array_equal(state_from_index(45, 4, i), S[i])
        assert state_index(S[i]) == i


def test_round_trip_5_player_sample_and_kernels():
    S = enumerate_states(45, 5)
    T = binomial_table(45, 5)
    rng = np.random.default_rng(0)
    for i in list(rng.integers(0, len(S), 500)) + [0, len(S) - 1]:
        s = state_from_index(45, 5, int(i))
        np.testing.assert_array_equal(s, S[i])
        assert state_index_nb(s) == i
        assert state_index_nb(S[i]) == i  # a row of a 2-D array: the kernel reads its own row only
        assert state_index_table_nb(S[i], T) == i


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=60), min_size=1, max_size=9))
def test_round_trip_hypothesis(stacks):
    units, players = sum(stacks), len(stacks)
    i = state_index(stacks)
    assert 0 <= i < n_states(units, players)
    np.testing.assert_array_equal(state_from_index(units, players, i), stacks)


def test_mixed_sums_and_dtypes():
    rows = np.array([[1, 1, 3], [3, 1, 1], [10, 20, 15]], dtype=np.int16)
    got = state_indices(rows)
    assert got.dtype == np.int64
    assert list(got) == [0, 5, state_index([10, 20, 15])]
    assert state_index(np.array([2.0, 2.0])) == 1  # whole-valued floats are accepted
    S16 = enumerate_states(45, 3, dtype=np.int16)
    assert S16.dtype == np.int16
    np.testing.assert_array_equal(S16, enumerate_states(45, 3))


def test_validation():
    with pytest.raises(ValueError, match="units must be >= players"):
        enumerate_states(3, 5)
    with pytest.raises(ValueError, match="players must be >= 1"):
        enumerate_states(45, 0)
    with pytest.raises(ValueError, match="players must be an integer"):
        n_states(45, 2.5)
    with pytest.raises(ValueError, match="idx must be < n_states"):
        state_from_index(45, 2, 44)
    with pytest.raises(ValueError, match="idx must be >= 0"):
        state_from_index(45, 2, -1)
    with pytest.raises(ValueError, match="stacks must all be >= 1"):
        state_index([3, 0, 2])
    with pytest.raises(ValueError, match="stacks must be whole units"):
        state_index([1.5, 2])
    with pytest.raises(ValueError, match="stacks must be a 2-D array"):
        state_indices([1, 2, 3])
    with pytest.raises(ValueError, match="dtype must be an integer dtype"):
        enumerate_states(200, 2, dtype=np.int8)
    with pytest.raises(ValueError, match="max_k must be >= 0"):
        binomial_table(10, -1)
    with pytest.raises(ValueError, match="max_n must be an integer"):
        binomial_table(10.0, 2)


def test_compiled_binomial_is_exact_wherever_the_result_fits():
    """comb_nb against Python's exact integers: C(n, k) wherever it fits in int64, also where the
    plain running product n·(n − 1)·… would pass 2⁶³ first (C(62, 28), C(66, 33)), and 0 for
    k < 0 or k > n."""
    for n in range(-2, 70):
        for k in range(-2, 72):
            exact = math.comb(n, k) if n >= 0 and k >= 0 else 0
            if exact <= INT64_MAX:
                assert comb_nb(n, k) == exact, (n, k)


def test_indices_are_exact_up_to_the_int64_limit():
    """The largest 3-player game int64 can index (C(units − 1, 2) ≤ 2⁶³ − 1): its first and last
    states rank 0 and n_states − 1, and one unit more is refused before any index is computed."""
    units = 4_294_967_297
    assert math.comb(units - 1, 2) <= INT64_MAX < math.comb(units, 2)
    assert state_index([1, 1, units - 2]) == 0
    assert state_index([1, units - 2, 1]) == units - 3
    assert state_index([units - 2, 1, 1]) == n_states(units, 3) - 1 == math.comb(units - 1, 2) - 1
    np.testing.assert_array_equal(state_indices(np.array([[units - 2, 1, 1], [2, 3, 4]])),
                                  [math.comb(units - 1, 2) - 1, state_index([2, 3, 4])])
    with pytest.raises(ValueError, match="too many states for int64 indexing: units=4294967298"):
        state_index([units - 1, 1, 1])
