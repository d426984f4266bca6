"""Cards and the 169 preflop hand classes (SPEC §3).

Two rank conventions meet here, and both are fixed once:

* **Cards** are ints 0..51, ``card = 4 * rank + suit`` with ``rank`` 0 = deuce … 12 = ace and
  ``suit`` 0..3. This is the evaluator's convention (higher rank = stronger).
* **Hand classes** sit on the 13×13 grid of SPEC §3, whose rows and columns run A, K, …, 2
  (grid index 0 = ace). Cell (i, j) has id ``13 * i + j``: i = j is a pair, i < j suited,
  i > j offsuit. So ``AKs`` is id 1, ``AKo`` is id 13, ``22`` is id 168.

A grid index g corresponds to card rank ``12 - g``.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

N_CLASSES = 169
N_COMBOS = 1326
GRID_RANKS = "AKQJT98765432"  # grid index 0..12
CARD_RANKS = "23456789TJQKA"  # card rank 0..12
SUITS = "cdhs"


def card(rank_char: str, suit_char: str) -> int:
    """Card int for e.g. ('A', 's')."""
    return 4 * CARD_RANKS.index(rank_char.upper()) + SUITS.index(suit_char.lower())


def card_label(c: int) -> str:
    """'As', 'Td', … for a card int."""
    return CARD_RANKS[c // 4] + SUITS[c % 4]


def class_grid(cid: int) -> tuple[int, int]:
    """(row, column) of a class on the 13×13 grid."""
    return divmod(int(cid), 13)


def class_kind(cid: int) -> str:
    """'pair', 'suited' or 'offsuit'."""
    i, j = class_grid(cid)
    return "pair" if i == j else ("suited" if i < j else "offsuit")


def class_label(cid: int) -> str:
    """Human label: 'AA', 'AKs', 'AKo' (higher rank first)."""
    if not 0 <= int(cid) < N_CLASSES:
        raise ValueError(f"hand class id must be 0..168, got {cid}")
    i, j = class_grid(cid)
    hi, lo = min(i, j), max(i, j)
    kind = class_kind(cid)
    suffix = "" if kind == "pair" else ("s" if kind == "suited" else "o")
    return GRID_RANKS[hi] + GRID_RANKS[lo] + suffix


def parse_class(label: str) -> int:
    """Class id of a label such as 'TT', 'AKs', 'ka o' is not accepted: 'KAo' and 'AKo' are.

    Raises ValueError with a message that says what is wrong with the label.
    """
    text = str(label).strip()
    rule = "a hand class is two ranks from AKQJT98765432 plus 's' or 'o' for non-pairs (e.g. AA, AKs, T9o)"
    if len(text) not in (2, 3):
        raise ValueError(f"unknown hand class {label!r}: {rule}")
    r1, r2 = text[0].upper(), text[1].upper()
    if r1 not in GRID_RANKS or r2 not in GRID_RANKS:
        raise ValueError(f"unknown hand class {label!r}: {rule}")
    g1, g2 = GRID_RANKS.index(r1), GRID_RANKS.index(r2)
    if g1 == g2:
        if len(text) != 2:
            raise ValueError(f"unknown hand class {label!r}: a pair takes no suffix (e.g. {r1}{r2})")
        return 13 * g1 + g1
    if len(text) != 3 or text[2].lower() not in "so":
        raise ValueError(f"unknown hand class {label!r}: a non-pair needs 's' (suited) or 'o' (offsuit)")
    hi, lo = min(g1, g2), max(g1, g2)
    return 13 * hi + lo if text[2].lower() == "s" else 13 * lo + hi


def _build_combos() -> tuple[np.ndarray, np.ndarray]:
    """All 1,326 two-card combos grouped by class: (offsets[170], combos[1326, 2])."""
    groups: list[list[tuple[int, int]]] = [[] for _ in range(N_CLASSES)]
    for c1 in range(52):
        for c2 in range(c1 + 1, 52):
            r1, s1, r2, s2 = c1 // 4, c1 % 4, c2 // 4, c2 % 4
            g1, g2 = 12 - r1, 12 - r2
            hi, lo = min(g1, g2), max(g1, g2)
            if g1 == g2:
                cid = 13 * hi + hi
            elif s1 == s2:
                cid = 13 * hi + lo
            else:
                cid = 13 * lo + hi
            groups[cid].append((c1, c2))
    offsets = np.zeros(N_CLASSES + 1, dtype=np.int64)
    flat: list[tuple[int, int]] = []
    for cid, g in enumerate(groups):
        flat.extend(g)
        offsets[cid + 1] = len(flat)
    return offsets, np.array(flat, dtype=np.int64)


COMBO_OFFSETS, COMBOS = _build_combos()
"""COMBOS[COMBO_OFFSETS[c]:COMBO_OFFSETS[c + 1]] are the (card, card) combos of class c."""

CLASS_COMBO_COUNT = np.diff(COMBO_OFFSETS)
"""6 per pair, 4 per suited, 12 per offsuit class."""


def class_combos(cid: int) -> np.ndarray:
    """The combos of one class as an array of shape (k, 2) of card ints."""
    return COMBOS[COMBO_OFFSETS[cid] : COMBO_OFFSETS[cid + 1]]


def can_be_dealt_together(class_ids: list[int]) -> bool:
    """Whether one combo of each class can be dealt with no card twice (AA, AA, AKs cannot: five
    aces). A search over the classes' combos (at most 12³ for three hands), so a matchup that has
    no deal is refused before any rollout; the rollouts' deal weight is 0 exactly for these."""
    def extend(k: int, used: frozenset) -> bool:
        if k == len(class_ids):
            return True
        return any(extend(k + 1, used | {int(a), int(b)})
                   for a, b in class_combos(class_ids[k]) if int(a) not in used and int(b) not in used)

    return extend(0, frozenset())


def hand_class_table() -> dict[str, list]:
    """Column-wise description of the 169 classes (what the ``hand_classes`` table holds)."""
    ids = list(range(N_CLASSES))
    grid = [class_grid(c) for c in ids]
    return {
        "class_id": ids,
        "label": [class_label(c) for c in ids],
        "grid_row": [g[0] for g in grid],
        "grid_col": [g[1] for g in grid],
        "kind": [class_kind(c) for c in ids],
        "combos": [int(CLASS_COMBO_COUNT[c]) for c in ids],
        "high_rank": [GRID_RANKS[min(g)] for g in grid],
        "low_rank": [GRID_RANKS[max(g)] for g in grid],
    }


def range_string(class_ids: Iterable[int]) -> str:
    """Compact poker range notation for a set of classes, e.g. '22+, A2s+, K9o+, QTs-QJs, 76s'.

    Pairs: 'TT+' (TT and better), '55-88' (a run), or single pairs. Non-pairs are grouped by the
    higher rank and suitedness: 'K9s+' means K9s up to KQs, 'A2o-A5o' a run of kickers. All 169
    classes are 'any two'.
    """
    chosen = {int(c) for c in class_ids}
    if len(chosen) == N_CLASSES:
        return "any two"
    parts: list[str] = []
    pairs = [g for g in range(13) if 13 * g + g in chosen]
    parts += _runs([GRID_RANKS[g] * 2 for g in pairs], pairs, top=0)
    for suited in (True, False):
        for hi in range(13):
            kick = [lo for lo in range(hi + 1, 13) if (13 * hi + lo if suited else 13 * lo + hi) in chosen]
            if kick:
                labels = [GRID_RANKS[hi] + GRID_RANKS[lo] + ("s" if suited else "o") for lo in kick]
                parts += _runs(labels, kick, top=hi + 1)
    return ", ".join(parts)


def _runs(labels: list[str], idx: list[int], top: int) -> list[str]:
    """Group consecutive grid indices; a run starting at ``top`` (the best possible) is written 'X+'."""
    out, i = [], 0
    while i < len(idx):
        j = i
        while j + 1 < len(idx) and idx[j + 1] == idx[j] + 1:
            j += 1
        if idx[i] == top and j > i:
            out.append(labels[j] + "+")
        elif j > i:
            out.append(f"{labels[j]}-{labels[i]}")
        else:
            out.append(labels[i])
        i = j + 1
    return out
