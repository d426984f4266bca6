"""Hand classes and the range notation of the CLI's push/fold ranges (`jamfold state`)."""

from hypothesis import given, settings
from hypothesis import strategies as st

from engine.cards import CLASS_COMBO_COUNT, N_CLASSES, class_label, range_string

RANKS = "AKQJT98765432"  # strongest first


def _label(hi: str, lo: str, kind: str) -> str:
    return hi + lo + kind if hi != lo else hi + lo


def expand(text: str) -> set[str]:
    """Hand labels named by a range string, read with the usual poker conventions (written here
    independently of the code under test): 'TT+' = TT…AA, 'K9s+' = K9s…KQs, '55-88' and 'A2o-A5o'
    = the runs between, 'any two' = every hand."""
    if text == "any two":
        return {_label(RANKS[min(i, j)], RANKS[max(i, j)], "s" if i < j else "o")
                for i in range(13) for j in range(13)}
    hands: set[str] = set()
    for token in filter(None, text.split(", ")):
        if token.endswith("+"):
            base = token[:-1]
            if base[0] == base[1]:  # pairs from base up to AA
                hands |= {r + r for r in RANKS[:RANKS.index(base[0]) + 1]}
            else:  # the kicker up to one below the high card
                hi, kind = base[0], base[2]
                hands |= {hi + k + kind for k in RANKS[RANKS.index(hi) + 1:RANKS.index(base[1]) + 1]}
        elif "-" in token:
            low, high = token.split("-")
            if low[0] == low[1]:
                hands |= {r + r for r in RANKS[RANKS.index(high[0]):RANKS.index(low[0]) + 1]}
            else:
                assert low[0] == high[0] and low[2] == high[2], token
                hands |= {low[0] + k + low[2] for k in RANKS[RANKS.index(high[1]):RANKS.index(low[1]) + 1]}
        else:
            hands.add(token)
    return hands


def test_known_ranges():
    ids = {class_label(c): c for c in range(N_CLASSES)}

    def ranged(*labels: str) -> str:
        return range_string([ids[label] for label in labels])

    assert ranged("AA", "KK", "QQ") == "QQ+"
    assert ranged("55", "66", "77", "88") == "55-88"
    assert ranged("AKs", "AQs", "AJs", "KQs", "AKo") == "AJs+, KQs, AKo"
    assert ranged("A5o", "A4o", "A3o", "A2o") == "A2o-A5o"
    assert ranged("72o") == "72o"
    assert range_string([]) == ""
    assert range_string(range(N_CLASSES)) == "any two"
    assert sum(CLASS_COMBO_COUNT) == 1326


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(0, N_CLASSES - 1)))
def test_range_string_names_exactly_its_classes(classes):
    assert expand(range_string(classes)) == {class_label(c) for c in classes}


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 12), st.integers(0, 12), st.integers(0, 12))
def test_top_sets_are_written_with_plus(pair_floor, suited_floor, offsuit_floor):
    """Threshold ranges (every pair from 22 up, Ax suited and offsuit from a kicker up) come out as
    one '+' token each, the way a player writes them."""
    ids = {class_label(c): c for c in range(N_CLASSES)}
    labels = [r + r for r in RANKS[:pair_floor + 1]]
    labels += ["A" + k + "s" for k in RANKS[1:max(suited_floor, 1) + 1]]
    labels += ["A" + k + "o" for k in RANKS[1:max(offsuit_floor, 1) + 1]]
    text = range_string([ids[label] for label in labels])
    assert len(text.split(", ")) <= 3 and expand(text) == set(labels)
    assert pair_floor == 0 or text.startswith(RANKS[pair_floor] * 2 + "+")


def _ranks_needed(label: str) -> dict[str, int]:
    """Cards of each rank a hand of the class holds ('AA': two aces, 'AKs': an ace and a king)."""
    need: dict[str, int] = {}
    for r in label[:2]:
        need[r] = need.get(r, 0) + 1
    return need


_ACES_AND_KINGS = st.sampled_from([0, 1, 13, 14, 2, 26])  # AA AKs AKo KK AQs AQo


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.integers(0, N_CLASSES - 1), _ACES_AND_KINGS, _ACES_AND_KINGS, _ACES_AND_KINGS),
                min_size=2, max_size=3))
def test_classes_can_be_dealt_together_when_no_rank_runs_out(classes):
    """Two or three hands can be dealt exactly when no rank is needed more than four times: suits
    never stand in the way of so few hands (written from the rank counts, not from combos). Most
    draws come from a few classes of aces and kings, so that ranks do run out."""
    from engine.cards import can_be_dealt_together

    total: dict[str, int] = {}
    for c in classes:
        for r, k in _ranks_needed(class_label(c)).items():
            total[r] = total.get(r, 0) + k
    assert can_be_dealt_together(classes) == (max(total.values()) <= 4)


def test_known_deals():
    from engine.cards import can_be_dealt_together, parse_class

    def ok(*labels):
        return can_be_dealt_together([parse_class(x) for x in labels])

    assert not ok("AA", "AA", "AA") and not ok("AA", "AA", "AKs") and not ok("AA", "AKo", "AKs", "A2s")
    assert ok("AA", "AA") and ok("AA", "AA", "KK") and ok("AKs", "AKs", "AKs") and ok("AA", "AKs", "AKo")


def test_class_ids_labels_and_combos_follow_spec_section_3():
    """SPEC §3 fixes the numbering: ranks A, K, …, 2 index 0..12, cell (i, j) is id 13·i + j, i = j a
    pair, i < j suited ('AKs' at row A, column K), i > j offsuit ('AKo' at row K, column A); 6, 4
    and 12 combos. Checked cell by cell against the rule itself, and every combo by its cards'
    ranks and suits, independently of parse_class (which the other tests go through)."""
    from itertools import combinations

    from engine.cards import card_label, class_combos, class_label, parse_class

    ranks = "AKQJT98765432"
    assert (class_label(1), class_label(13), class_label(0), class_label(168)) == ("AKs", "AKo", "AA", "22")
    seen = set()
    for i, j in ((i, j) for i in range(13) for j in range(13)):
        cid = 13 * i + j
        hi, lo = ranks[min(i, j)], ranks[max(i, j)]
        expected = hi + lo if i == j else hi + lo + ("s" if i < j else "o")
        assert class_label(cid) == expected
        # and back from the label, its ranks in either order and either case ('AKs', 'kas')
        assert parse_class(expected) == parse_class((expected[1::-1] + expected[2:]).lower()) == cid
        combos = [tuple(sorted(card_label(int(c)) for c in combo)) for combo in class_combos(cid)]
        assert len(combos) == {True: 6, False: 4 if i < j else 12}[i == j] == len(set(combos))
        for a, b in combos:
            assert sorted((a[0], b[0])) == sorted((hi, lo))
            assert (a[1] == b[1]) == (i < j)  # suited exactly when the class is
        seen.update(combos)
    every_hand = {tuple(sorted(pair)) for pair in combinations([r + s for r in ranks for s in "cdhs"], 2)}
    assert seen == every_hand and len(seen) == 1326
