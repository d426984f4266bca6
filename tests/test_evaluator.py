"""The 7-card evaluator against an independent one (phevaluator) and the known category counts."""

from __future__ import annotations

import numpy as np
import pytest
from phevaluator import evaluate_cards

from engine.cards import card
from engine.evaluator import (
    CATEGORY_NAMES,
    HASH_MASK,
    HASH_OFFSETS,
    HASH_SHIFT,
    N_VALUES,
    RANK_KEYS,
    RANK_TABLE,
    category_counts_all,
    evaluate7,
    evaluate_many,
    hand_category,
    rank_multisets,
)

SPEC_COUNTS = {
    "straight flush": 41_584,
    "four of a kind": 224_848,
    "full house": 3_473_184,
    "flush": 4_047_644,
    "straight": 6_180_020,
    "three of a kind": 6_461_620,
    "two pair": 31_433_400,
    "pair": 58_627_800,
    "high card": 23_294_460,
}

# phevaluator ranks 1 (royal flush) … 7462; the standard category boundaries of that scale
PHE_CATEGORY_UPPER = [(10, 8), (166, 7), (322, 6), (1599, 5), (1609, 4), (2467, 3), (3325, 2), (6185, 1), (7462, 0)]


def phe_category(rank: int) -> int:
    return next(cat for upper, cat in PHE_CATEGORY_UPPER if rank <= upper)


def hand(text: str) -> list[int]:
    """'As Ks Qs Js Ts 2c 3d' -> card ints."""
    return [card(t[0], t[1]) for t in text.split()]


def value(text: str) -> int:
    return int(evaluate7(*hand(text)))


def random_hands(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n, 52)), axis=1)[:, :7].astype(np.int64)


def test_rank_keys_give_distinct_sums_for_all_seven_card_multisets():
    multisets = rank_multisets(7)
    assert multisets.shape == (49_205, 13)
    keys = multisets @ RANK_KEYS
    assert np.unique(keys).size == keys.size


def test_perfect_hash_has_no_collisions():
    keys = rank_multisets(7) @ RANK_KEYS
    index = (keys & HASH_MASK) + HASH_OFFSETS[keys >> HASH_SHIFT]
    assert np.unique(index).size == keys.size
    assert index.max() < RANK_TABLE.size
    assert (RANK_TABLE[index] > 0).all()


def test_same_ordering_as_phevaluator_on_200k_random_hands():
    hands = random_hands(200_000, seed=7)
    ours = evaluate_many(hands).astype(np.int64)
    theirs = np.array([evaluate_cards(*map(int, h)) for h in hands], dtype=np.int64)  # lower = stronger
    # The two scales must induce the same weak order: one phevaluator rank per value of ours,
    # one value of ours per phevaluator rank, and the map strictly decreasing.
    pairs = np.unique(np.stack([ours, theirs], axis=1), axis=0)  # sorted by ours
    assert np.unique(pairs[:, 0]).size == len(pairs)
    assert np.unique(pairs[:, 1]).size == len(pairs)
    assert (np.diff(pairs[:, 1]) < 0).all()
    # and the same categories
    cats = np.array([hand_category(v) for v in ours[:20_000]])
    assert (cats == np.array([phe_category(r) for r in theirs[:20_000]])).all()


def test_pairwise_comparisons_agree_with_phevaluator():
    a, b = random_hands(50_000, seed=1), random_hands(50_000, seed=2)
    ours = np.sign(evaluate_many(a).astype(np.int64) - evaluate_many(b))
    theirs = np.sign(
        np.array([evaluate_cards(*map(int, h)) for h in b]) - np.array([evaluate_cards(*map(int, h)) for h in a])
    )
    assert (ours == theirs).all()


@pytest.mark.parametrize(
    ("cards", "category"),
    [
        ("As Ks Qs Js Ts 2c 3d", "straight flush"),
        ("5h 4h 3h 2h Ah Kc Kd", "straight flush"),  # steel wheel beats the kings
        ("9c 9d 9h 9s Ac 2d 3h", "four of a kind"),
        ("9c 9d 9h Ks Kc Kd 2h", "full house"),  # two sets make a full house
        ("2s 7s 9s Js Ks Ac Ad", "flush"),
        ("Ac 2d 3h 4s 5c Kd Kh", "straight"),  # wheel
        ("Tc Jd Qh Ks Ac 2d 2h", "straight"),
        ("7c 7d 7h Ks 2c 4d 9h", "three of a kind"),
        ("7c 7d 9h 9s Kc Kd 2h", "two pair"),
        ("7c 7d 9h Js Kc 2d 4h", "pair"),
        ("7c 8d 9h Js Kc 2d 4h", "high card"),
    ],
)
def test_category_spot_checks(cards, category):
    assert CATEGORY_NAMES[hand_category(value(cards))] == category


def test_value_order_spot_checks():
    assert value("As Ks Qs Js Ts 2c 3d") > value("Ks Qs Js Ts 9s 2c 3d")  # royal > K-high SF
    assert value("5h 4h 3h 2h Ah 7c 8d") < value("6h 5h 4h 3h 2h 7c 8d")  # wheel SF lowest SF
    assert value("Ac 2d 3h 4s 5c 9d Jh") < value("2c 3d 4h 5s 6c 9d Jh")  # wheel lowest straight
    # three pairs: the best two pairs plus the best remaining card
    assert value("Kc Kd Qh Qs 2c 2d Ah") > value("Kc Kd Qh Qs 2c 2d Jh")
    assert value("Kc Kd Qh Qs Jc Jd 2h") == value("Kc Kd Qh Qs Jc 9d 2h")
    # board plays: the 7th card does not matter when it is below the best five
    assert value("Ac Kd Qh Js 9c 3d 2h") == value("Ac Kd Qh Js 9c 4d 2h")
    assert value("Ac Kd Qh Js 9c 3d 2h") < value("Ac Kd Qh Js Tc 3d 2h")  # high card < broadway
    assert hand_category(1) == 0 and hand_category(N_VALUES) == 8
    # 4,824 distinct 7-card hand values (7,462 five-card classes less those never best of seven),
    # the royal flush the highest of them
    assert N_VALUES == 4824 == value("Ah Kh Qh Jh Th 2c 3d")


def test_value_does_not_depend_on_card_order():
    rng = np.random.default_rng(3)
    for h in random_hands(200, seed=5):
        assert evaluate7(*h) == evaluate7(*rng.permutation(h))


def test_category_counts_of_all_seven_card_hands():
    """SPEC §3: the evaluator validated on all C(52,7) hands (about 0.3 s on one thread once compiled)."""
    counts = category_counts_all()
    assert counts.sum() == 133_784_560
    assert {CATEGORY_NAMES[k]: int(c) for k, c in enumerate(counts)} == SPEC_COUNTS
