"""Pair and triple showdown tables: indexing, weights, the grouped exact algorithm against plain
enumeration, an independent evaluator, the permutation rule and the sampled mode."""

from __future__ import annotations

import itertools
from fractions import Fraction
from functools import cache
from math import comb

import numpy as np
import pytest
from phevaluator import evaluate_cards

import engine.rollout as ro
from engine.cards import N_CLASSES, class_combos, parse_class
from engine.rollout_exact import (
    N_BOARDS,
    ORDER_PLAYERS,
    brute_force_deal,
    brute_force_matchup,
    grouped_deal_hist,
    matchup_hist,
)


@cache
def pair_weights() -> np.ndarray:
    return ro.pair_weights()


@cache
def triple_weights() -> np.ndarray:
    return ro.triple_weights()


def cls(*labels: str) -> list[int]:
    return [parse_class(x) for x in labels]


def deal(text: str) -> np.ndarray:
    """'AsKs QhQd' -> (n, 2) card ints."""
    from engine.cards import card

    return np.array([[card(h[0], h[1]), card(h[2], h[3])] for h in text.split()], dtype=np.int64)


def ordered_deals(classes: list[int]) -> list[tuple[tuple[int, int], ...]]:
    """All ordered, pairwise card-disjoint combo tuples of the classes (plain Python)."""
    out = []
    for combos in itertools.product(*(map(tuple, class_combos(c).tolist()) for c in classes)):
        cards = [x for cmb in combos for x in cmb]
        if len(set(cards)) == len(cards):
            out.append(combos)
    return out


# --------------------------------------------------------------------------------------------
# rows and weights
# --------------------------------------------------------------------------------------------


def test_boards_per_deal():
    assert N_BOARDS == {2: comb(48, 5), 3: comb(46, 5)}


def test_row_counts_and_canonical_order():
    assert ro.N_PAIR_ROWS == 14_365 and ro.N_TRIPLE_ROWS == 818_805
    pairs, triples = ro.pair_classes(), ro.triple_classes()
    assert pairs.dtype == np.int16 and triples.dtype == np.int16
    assert pairs.tolist() == [list(t) for t in itertools.combinations_with_replacement(range(N_CLASSES), 2)]
    expected = np.array(list(itertools.combinations_with_replacement(range(N_CLASSES), 3)), dtype=np.int16)
    assert np.array_equal(triples, expected)


def test_row_index_functions_match_enumeration():
    for i, (a, b) in enumerate(ro.pair_classes().tolist()):
        assert ro.pair_row(a, b) == i and ro.pair_row(b, a) == i
    triples = ro.triple_classes()
    rng = np.random.default_rng(0)
    n = ro.N_TRIPLE_ROWS
    picks = np.concatenate([np.arange(200), np.arange(n - 200, n), rng.integers(0, n, 5000)])
    for i in picks:
        t = [int(x) for x in triples[i]]
        for perm in itertools.permutations(t):
            assert ro.triple_row(*perm) == i


def test_row_index_rejects_bad_class_ids():
    with pytest.raises(ValueError, match="hand class id"):
        ro.pair_row(0, 169)
    with pytest.raises(ValueError, match="hand class id"):
        ro.triple_row(-1, 0, 0)
    with pytest.raises(ValueError, match="hand class id"):
        ro.pair_matchup(1.5, 3)


def test_weights_total_and_undealable_triples():
    pw = ro.pair_weights()
    assert pw.sum() == 1326 * 1225 and (pw > 0).all()
    tw = ro.triple_weights()
    assert tw.sum() == 1326 * 1225 * 1128
    zero = np.flatnonzero(tw == 0)
    assert zero.size == 325
    assert ro.triple_row(*cls("AA", "AA", "AA")) in zero
    assert ro.triple_row(*cls("AA", "AA", "AKs")) in zero
    assert ro.triple_row(*cls("AA", "AA", "KK")) not in zero
    # an undealable triple needs some rank five or more times (or a combo clash)
    for row in zero[:40]:
        assert not ordered_deals([int(x) for x in ro.triple_classes()[row]])


@pytest.mark.parametrize(
    "labels",
    [
        ("AA", "KK"), ("AKs", "AKo"), ("AA", "AA"), ("72o", "AKs"),
        ("AA", "AKs", "KK"), ("AKo", "AKo", "AKs"), ("T9s", "T9s", "T9s"),
    ],
)
def test_weight_is_ordered_disjoint_tuples_over_all_orderings(labels):
    classes = cls(*labels)
    expected = sum(len(ordered_deals(list(p))) for p in set(itertools.permutations(classes)))
    if len(classes) == 2:
        assert pair_weights()[ro.pair_row(*classes)] == expected
        assert ro.pair_matchup(*classes)[0] == expected
    else:
        assert triple_weights()[ro.triple_row(*classes)] == expected
        assert ro.triple_matchup(*classes)[0] == expected
    assert expected == len(ordered_deals(classes)) * ro.distinct_orderings(*classes)


# --------------------------------------------------------------------------------------------
# the grouped exact algorithm against plain enumeration
# --------------------------------------------------------------------------------------------

DEALS = [
    "AsKs QhQd",  # suited vs pair
    "AsKs QsJs",  # both suited in the same suit: two possible flushers
    "AsAh AdKd",  # shared rank, dominated
    "7c2d 7d2c",  # same ranks, offsuit
    "AsKs QsJs 2s3s",  # six spades in the hole
    "AhAd KhKd QhQd",  # three pairs, two suits
    "Td9d 9c8c 8dTc",  # shared ranks across three hands
    "5h4h Ac2c 3d3s",  # wheel draws
]


@pytest.mark.parametrize("text", DEALS)
def test_grouped_deal_equals_brute_force(text):
    holes = deal(text)
    hist = grouped_deal_hist(holes)
    assert np.array_equal(hist, brute_force_deal(holes))
    assert hist.sum() == N_BOARDS[len(holes)]


def test_grouped_deal_equals_brute_force_random_deals():
    rng = np.random.default_rng(11)
    for n in (2, 3, 2, 3, 3):
        holes = rng.choice(52, 2 * n, replace=False).reshape(n, 2).astype(np.int64)
        assert np.array_equal(grouped_deal_hist(holes), brute_force_deal(holes))


@pytest.mark.parametrize(
    "labels",
    [
        ("AA", "KK"), ("AKs", "QQ"), ("JTs", "JTs"),
        ("AKs", "QQ", "76s"), ("AKs", "AKs", "AKs"), ("KK", "KQs", "QJs"), ("AA", "AA", "KK"),
    ],
)
def test_matchup_equals_brute_force(labels):
    classes = np.zeros(3, np.int64)
    classes[: len(labels)] = cls(*labels)
    hist = np.zeros(27, np.int64)
    deals = matchup_hist(len(labels), classes, hist)
    ref, ref_deals = brute_force_matchup(len(labels), classes)
    assert deals == ref_deals
    assert np.array_equal(hist, ref)


@pytest.mark.slow
@pytest.mark.parametrize("labels", [("AKo", "QJo"), ("AKo", "KQo", "QJo"), ("T9o", "98s", "T8o")])
def test_matchup_equals_brute_force_offsuit(labels):
    classes = np.zeros(3, np.int64)
    classes[: len(labels)] = cls(*labels)
    hist = np.zeros(27, np.int64)
    deals = matchup_hist(len(labels), classes, hist)
    ref, ref_deals = brute_force_matchup(len(labels), classes)
    assert deals == ref_deals and np.array_equal(hist, ref)


# --------------------------------------------------------------------------------------------
# known values and an independent evaluator
# --------------------------------------------------------------------------------------------


def test_aces_vs_kings_exact_value():
    weight, p = ro.pair_matchup(*cls("AA", "KK"))
    # 36 deals × 1,712,304 boards: 50,371,344 wins, 285,228 ties, 10,986,372 losses for AA
    assert p == float(Fraction(2 * 50_371_344 + 285_228, 2 * 36 * 1_712_304)) == float(Fraction(255_121, 311_328))
    assert abs(p - 0.8195) < 1e-3
    assert weight == 72
    assert ro.pair_matchup(*cls("KK", "AA"))[1] == 1.0 - p


def phe_pair_estimate(a: int, b: int, n: int, seed: int) -> float:
    """P(a beats b) by Monte Carlo with phevaluator (ties count 1/2)."""
    rng = np.random.default_rng(seed)
    deals = ordered_deals([a, b])
    score = 0.0
    for _ in range(n):
        x, y = deals[rng.integers(len(deals))]
        rest = np.setdiff1d(np.arange(52), [*x, *y])
        board = [int(c) for c in rng.choice(rest, 5, replace=False)]
        va, vb = evaluate_cards(*x, *board), evaluate_cards(*y, *board)
        score += 1.0 if va < vb else (0.5 if va == vb else 0.0)
    return score / n


@pytest.mark.parametrize("labels", [("AKs", "QQ"), ("72o", "32s"), ("JTs", "99"), ("A5s", "KQo"),
                                    ("AKo", "AKs")])  # the last chops most boards: ties split evenly
def test_pair_rows_agree_with_phevaluator_monte_carlo(labels):
    a, b = cls(*labels)
    n = 8000
    _, p = ro.pair_matchup(a, b)
    est = phe_pair_estimate(a, b, n, seed=a * 1000 + b)
    assert abs(est - p) < 4.5 * np.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("labels", [("AKo", "QQ", "T9s"),
                                    ("AKo", "AKo", "72o")])  # two hands that chop most boards: tie shares
def test_triple_row_agrees_with_phevaluator_monte_carlo(labels):
    """Finishing-order probabilities against a Monte Carlo with an independent evaluator, ties
    split evenly over the orders they allow (SPEC §3)."""
    classes = cls(*labels)
    _, p = ro.triple_matchup(*classes)
    rng = np.random.default_rng(5)
    deals = ordered_deals(classes)
    n = 6000
    counts = np.zeros(6)
    for _ in range(n):
        hands = deals[rng.integers(len(deals))]
        rest = np.setdiff1d(np.arange(52), [c for h in hands for c in h])
        board = [int(c) for c in rng.choice(rest, 5, replace=False)]
        v = [evaluate_cards(*h, *board) for h in hands]
        orders = [o for o, pl in enumerate(ORDER_PLAYERS) if v[pl[0]] <= v[pl[1]] <= v[pl[2]]]
        counts[orders] += 1.0 / len(orders)
    est = counts / n
    assert np.all(np.abs(est - p) < 4.5 * np.sqrt(p * (1 - p) / n) + 1e-9)


@pytest.mark.slow
def test_single_deal_exact_against_phevaluator_enumeration():
    holes = deal("AsKs QhQd")
    (a0, a1), (b0, b1) = holes.tolist()
    rest = [c for c in range(52) if c not in (a0, a1, b0, b1)]
    win = tie = 0
    for board in itertools.combinations(rest, 5):
        va, vb = evaluate_cards(a0, a1, *board), evaluate_cards(b0, b1, *board)
        win += va < vb
        tie += va == vb
    hist = grouped_deal_hist(holes)
    assert hist[18:27].sum() == win and hist[9:18].sum() == tie


# --------------------------------------------------------------------------------------------
# probabilities, symmetry and the permutation rule
# --------------------------------------------------------------------------------------------


def test_triple_rows_sum_to_one_and_undealable_rows_are_nan():
    zero = np.flatnonzero(triple_weights() == 0)
    rng = np.random.default_rng(2)
    rows = np.concatenate([rng.integers(0, ro.N_TRIPLE_ROWS, 150), zero[:3]])
    p = ro.triple_rows_exact(rows)
    assert p.shape == (rows.size, 6)
    assert np.isnan(p[-3:]).all()
    assert np.allclose(p[:-3].sum(axis=1), 1.0, atol=1e-12) and (p[:-3] >= 0).all()


def test_pair_rows_equal_classes_are_exactly_half():
    rows = [ro.pair_row(c, c) for c in range(0, N_CLASSES, 7)]
    assert (ro.pair_rows_exact(rows) == 0.5).all()


def partial_triple_table(rows: np.ndarray) -> ro.TripleTable:
    """A TripleTable with only ``rows`` filled in (exact), NaN elsewhere."""
    classes = ro.triple_classes()
    p = np.full((ro.N_TRIPLE_ROWS, 6), np.nan)
    p[rows] = ro.triple_rows_exact(rows)
    return ro.TripleTable(
        classes[:, 0], classes[:, 1], classes[:, 2], triple_weights(), p, "exact", None, None, 0.0, 0.0
    )


PERMUTATION_CASES = [
    ("AKs", "QQ", "76s"), ("AA", "AA", "KK"), ("KK", "AA", "KK"), ("72o", "72o", "72o"), ("T9s", "AKo", "T9s"),
]


def test_triple_lookup_follows_the_permutation_rule():
    cases = [cls(*labels) for labels in PERMUTATION_CASES]
    table = partial_triple_table(np.array(sorted({ro.triple_row(*c) for c in cases})))
    for classes in cases:
        base_weight, base = ro.triple_lookup(table, *classes)
        for sigma in itertools.permutations(range(3)):
            permuted = [classes[i] for i in sigma]  # caller's player k holds classes[sigma[k]]
            weight, p = ro.triple_lookup(table, *permuted)
            assert weight == base_weight
            w2, p2 = ro.triple_matchup(*permuted)
            assert w2 == weight and np.array_equal(p, p2)
            for o, pl in enumerate(ORDER_PLAYERS):
                # the same physical finishing order, named in the original labels
                original = tuple(sigma[int(k)] for k in pl)
                o_base = next(i for i, q in enumerate(ORDER_PLAYERS) if tuple(q) == original)
                assert p[o] == pytest.approx(base[o_base], abs=1e-15)


def test_repeated_classes_are_symmetric():
    _, p = ro.triple_matchup(*cls("AA", "AA", "KK"))
    assert p[0] == p[2] and p[1] == p[3] and p[4] == p[5]  # abc=bac, acb=bca, cab=cba
    _, p = ro.triple_matchup(*cls("QQ", "AKs", "AKs"))
    assert p[0] == p[1] and p[2] == p[4] and p[3] == p[5]  # swapping b and c
    _, p = ro.triple_matchup(*cls("T9s", "T9s", "T9s"))
    assert np.allclose(p, 1 / 6, atol=1e-15)


def test_pair_lookup_reads_both_orders():
    a, b = cls("AKs", "QQ")
    rows = [ro.pair_row(a, b), ro.pair_row(a, a)]
    classes = ro.pair_classes()
    p = np.full(ro.N_PAIR_ROWS, np.nan)
    p[rows] = ro.pair_rows_exact(rows)
    table = ro.PairTable(classes[:, 0], classes[:, 1], pair_weights(), p, "exact", None, None, 0.0, 0.0)
    w, pab = ro.pair_lookup(table, a, b)
    w2, pba = ro.pair_lookup(table, b, a)
    assert w == w2 and pab + pba == 1.0
    assert (w, pab) == ro.pair_matchup(a, b) and (w2, pba) == ro.pair_matchup(b, a)
    assert ro.pair_lookup(table, a, a)[1] == 0.5


def test_a_third_hand_lowers_the_first_place_probability():
    # sanity: P(AA first) in AA-KK-72o is below its heads-up equity against KK
    _, p = ro.triple_matchup(*cls("AA", "KK", "72o"))
    assert p[0] + p[1] < ro.pair_matchup(*cls("AA", "KK"))[1]


# --------------------------------------------------------------------------------------------
# sampled mode
# --------------------------------------------------------------------------------------------


def test_sampled_rows_reproducible_and_independent_of_chunking():
    rows = np.array([5, 77, 4000, 9000, 14_000])
    p1 = ro.pair_rows_sampled(rows, samples=500, seed=3)
    p2 = ro.pair_rows_sampled(rows, samples=500, seed=3)
    assert np.array_equal(p1, p2)
    assert not np.array_equal(p1, ro.pair_rows_sampled(rows, samples=500, seed=4))
    single = np.array([ro.pair_rows_sampled([r], samples=500, seed=3)[0] for r in rows])
    assert np.array_equal(single, p1)


def test_the_sampled_tables_generator_is_splitmix64():
    """The boards of a sampled table come from splitmix64 (its published outputs from state 0, upper
    32 bits): a table of a given seed is the same on every machine and in every version, as the
    warehouse's table ids (mode, boards, seed) promise."""
    from engine.rollout_sampled import _next32

    state, outputs = np.uint64(0), []
    for _ in range(3):
        state, bits = _next32(np.uint64(state))  # (numba hands the state back as a Python int)
        outputs.append(int(bits))
    assert outputs == [0xE220A839, 0x6E789E6A, 0x06C45D18]


def test_sampled_pair_table_matches_rows_and_is_close_to_exact():
    table = ro.build_pair_table("sampled", samples=1000, seed=9)
    assert table.mode == "sampled" and table.boards_per_matchup == 1000 and table.seed == 9
    assert table.a.dtype == table.b.dtype == np.int16 and table.weight.dtype == np.int64
    assert table.p_first_wins.dtype == np.float64 and table.wall_s > 0
    assert np.array_equal(table.weight, pair_weights())
    assert 0 < table.precision <= 0.5 / np.sqrt(1000) + 1e-12
    rng = np.random.default_rng(4)
    rows = rng.integers(0, ro.N_PAIR_ROWS, 300)
    assert np.array_equal(table.p_first_wins[rows], ro.pair_rows_sampled(rows, samples=1000, seed=9))
    exact = ro.pair_rows_exact(rows)
    se = np.sqrt(exact * (1 - exact) / 1000) + 1e-12
    z = (table.p_first_wins[rows] - exact) / se
    assert np.abs(z).max() < 5 and abs(z.mean()) < 0.3


def test_sampled_triples_close_to_exact():
    """Random rows, and rows with repeated classes (whose estimates are averaged over the players'
    relabelings) of each kind."""
    rng = np.random.default_rng(8)
    repeated = [ro.triple_row(*cls(*labels)) for labels in (("AA", "KK", "KK"), ("QQ", "QQ", "72o"), ("T9s",) * 3)]
    rows = np.concatenate([rng.integers(0, ro.N_TRIPLE_ROWS, 60), repeated])
    exact = ro.triple_rows_exact(rows)
    est = ro.triple_rows_sampled(rows, samples=4000, seed=1)
    ok = ~np.isnan(exact[:, 0])
    assert np.array_equal(np.isnan(est[:, 0]), ~ok)
    assert np.allclose(est[ok].sum(axis=1), 1.0)
    se = np.sqrt(exact[ok] * (1 - exact[ok]) / 4000) + 1e-4
    assert (np.abs(est[ok] - exact[ok]) < 5 * se).all()


def test_sampled_triple_table_checkpoints_and_resumes(tmp_path, monkeypatch):
    monkeypatch.setattr(ro, "SAMPLED_CHUNK_DRAWS", 4 * 100_000)  # 9 chunks of 100,000 rows
    calls: list[tuple[int, int]] = []
    table = ro.build_triple_table(
        "sampled", samples=4, seed=2, progress=lambda d, t: calls.append((d, t)), checkpoint_dir=str(tmp_path)
    )
    assert calls[-1] == (ro.N_TRIPLE_ROWS, ro.N_TRIPLE_ROWS) and len(calls) == 9
    files = sorted(tmp_path.glob("*.npy"))
    assert len(files) == 9 and not list(tmp_path.glob("*.tmp*"))
    assert table.weight.sum() == 1326 * 1225 * 1128 and np.isnan(table.p).any(axis=1).sum() == 325
    # an "interrupted" build: one chunk missing; only that chunk is computed again
    assert ro.triple_rows_saved(tmp_path, "sampled", 4, 2) == ro.N_TRIPLE_ROWS
    files[3].unlink()
    files[5].write_bytes(b"truncated")  # unreadable chunks are recomputed too
    files[6].write_bytes(files[6].read_bytes()[:-8])  # cut short by its last number (a whole header)
    killed = tmp_path / f"{files[3].name}.tmp{2**22 + 7}"  # a chunk's writer killed outright (no such pid)
    killed.write_bytes(b"half a chunk")
    # the rows a resumed build will read back, for its time-left estimate: exactly those it loads
    assert ro.triple_rows_saved(tmp_path, "sampled", 4, 2) == ro.N_TRIPLE_ROWS - 3 * 100_000
    computed = []
    real = ro._sampled_rows
    monkeypatch.setattr(ro, "_sampled_rows", lambda cl, ids, *a: computed.append(ids[0]) or real(cl, ids, *a))
    again = ro.build_triple_table("sampled", samples=4, seed=2, checkpoint_dir=str(tmp_path))
    assert computed == [300_000, 500_000, 600_000] and not killed.exists()
    assert np.array_equal(again.p, table.p, equal_nan=True)
    assert np.array_equal(again.weight, table.weight)


# --------------------------------------------------------------------------------------------
# argument validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"mode": "fast"}, "mode must be one of"),
        ({"mode": "sampled"}, "samples is required in sampled mode"),
        ({"mode": "sampled", "samples": 0}, "samples must be an int > 0"),
        ({"mode": "sampled", "samples": 2.5}, "samples must be an int > 0"),
        ({"mode": "exact", "samples": 100}, "samples must be None in exact mode"),
        ({"mode": "sampled", "samples": 10, "seed": -1}, "seed must be an int"),
        ({"progress": "yes"}, "progress must be a callable"),
    ],
)
def test_build_arguments_are_validated(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ro.build_pair_table(**kwargs)
    with pytest.raises(ValueError, match=message):
        ro.build_triple_table(**kwargs)


def test_checkpoint_dir_is_validated():
    with pytest.raises(ValueError, match="checkpoint_dir must be a directory path"):
        ro.build_triple_table("sampled", samples=1, checkpoint_dir=3)


# --------------------------------------------------------------------------------------------
# full tables (slow)
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_exact_pair_table():
    table = ro.build_pair_table("exact")
    assert table.mode == "exact" and table.precision == 0.0 and table.seed is None
    assert table.weight.sum() == 1326 * 1225
    assert (table.p_first_wins[table.a == table.b] == 0.5).all()
    assert ro.pair_lookup(table, *cls("AA", "KK")) == ro.pair_matchup(*cls("AA", "KK"))
    assert ro.pair_lookup(table, *cls("KK", "AA")) == ro.pair_matchup(*cls("KK", "AA"))


def test_benchmark_command_line(capsys):
    from engine.bench_rollout import main

    assert main(["bogus"]) == 2
    assert main(["pairs", "5"]) == 2
    assert main(["triples-exact-sample", "x"]) == 2
    assert main(["triples-exact-sample", "20"]) == 0
    assert "full table" in capsys.readouterr().out
    assert main(["--help"]) == 0 and "usage: ./lab bench rollout {evaluator|" in capsys.readouterr().out


def test_the_evaluator_benchmark_evaluates_what_it_counts(capsys, monkeypatch):
    """`./lab bench rollout evaluator` times three things and prints their counts: the enumeration of
    every board of the other 50 cards for 60 hole pairs (each hand of it evaluated once: its
    checksum is the sum of those hands' values by `evaluate_many`), 2 million random hands, and the
    category count of all C(52,7) hands (recorded here, not run)."""
    import itertools
    from math import comb

    from engine import bench_rollout
    from engine.evaluator import evaluate_many

    boards = np.array(list(itertools.combinations(range(2, 52), 5)), np.uint8)
    hands = np.hstack([np.zeros((len(boards), 1), np.uint8), np.ones((len(boards), 1), np.uint8), boards])
    assert bench_rollout.enumerate_boards(0, 1) == (int(evaluate_many(hands).astype(np.int64).sum()), comb(50, 5))
    assert bench_rollout.enumerate_boards(13, 40)[1] == comb(50, 5)  # (hole cards inside the board's range)
    evaluated, counted = [], []
    monkeypatch.setattr(bench_rollout, "evaluate_many", lambda h: evaluated.append(h.shape) or evaluate_many(h))
    monkeypatch.setattr(bench_rollout, "category_counts_all", lambda: counted.append(1))
    assert bench_rollout.main(["evaluator"]) == 0
    out = capsys.readouterr().out
    assert "evaluator, enumerating boards (one core): " in out and f"({60 * comb(50, 5):,} in " in out
    assert evaluated == [(10, 7), (2_000_000, 7)] and "evaluator, random hands (one core): " in out
    assert counted == [1, 1] and "all C(52,7) hands by category (" in out  # (a warm-up call, then the timed one)


def test_the_benchmarks_tensors_are_made_once_a_process_until_released(monkeypatch, bench_tensors_released):
    """The benchmarks' sampled tensors (about 0.7 GB) are made once and shared by every benchmark run
    of a process, and `release` drops them, so that the next run makes them anew (the tables'
    making is stood in for here)."""
    from engine import bench_tables

    bench_tables.release()
    made = []
    monkeypatch.setattr(bench_tables, "_sampled_showdown", lambda: made.append("tables") or object())
    monkeypatch.setattr(bench_tables, "SolverTensors", lambda showdown: ("solver tensors of", showdown))
    showdown, solver = bench_tables.bench_showdown(), bench_tables.bench_solver_tensors()
    assert bench_tables.bench_showdown() is showdown and bench_tables.bench_solver_tensors() is solver
    assert len(made) == 2  # (one making each: the solver's tensors keep no showdown tensors)
    bench_tables.release()
    assert bench_tables.bench_showdown() is not showdown and bench_tables.bench_solver_tensors() is not solver
    assert len(made) == 4
