"""Pair and triple showdown tables of the 169 hand classes (SPEC §3).

**Rows.** A table has one row per multiset of classes, stored canonically with a ≤ b (≤ c) by
class id, rows in lexicographic order: 14,365 pair rows and 818,805 triple rows.
:func:`pair_row` / :func:`triple_row` give a row index in closed form (sorting first).

**Weight.** ``weight[row]`` = number of ordered, pairwise card-disjoint combo tuples whose
classes form the row's multiset, in any order (SPEC §3). Summed over all rows this is
1,326·1,225 for pairs and 1,326·1,225·1,128 for triples. For a specific order of the classes —
player 1 holds a, player 2 holds b, … — the number of deals is ``weight / distinct_orderings``
(:func:`distinct_orderings`: 1, 2, 3 or 6). 325 triples (e.g. {AA, AA, AA}, {AA, AA, AKs}) can
never be dealt: weight 0 and NaN probabilities.

**Probabilities.** Over all deals of the canonical order (uniformly weighted) and all boards of
the remaining cards, ties broken uniformly at random:

* pairs: ``p_first_wins`` = P(the hand of class a beats the hand of class b);
* triples: ``p[row]`` = P(each strict finishing order), in the order of :data:`ORDERS`
  ("abc", "acb", "bac", "bca", "cab", "cba"; "bac" = b best, a second, c last). A 3-way tie
  gives 1/6 to every order, a 2-way tie for a place splits the two orders involved.

**Reading any order (permutation rule).** For players holding classes (x, y, z) in some order,
sort them to the canonical row (a, b, c); caller's player i is the canonical player at position
pos(i). The caller's order "first, second, third" = (i, j, k) is the canonical order
(pos(i), pos(j), pos(k)). Rows with repeated classes are symmetric in those players (exactly, in
exact mode; sampled rows are symmetrized), so ties in the sort do not matter.
:func:`pair_lookup` and :func:`triple_lookup` apply the rule; a pair read as (b, a) gives
1 − p, and a == b gives exactly 0.5.

**Modes.** ``exact``: full enumeration (:mod:`engine.rollout_exact`), precision 0.
``sampled``: ``samples`` random (deal, board) draws per row with per-row random streams from
``seed`` (:mod:`engine.rollout_sampled`); weights stay exact and ``precision`` is the largest
standard error sqrt(p(1 − p)/samples) over all rows and orders.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from math import comb
from pathlib import Path

import numpy as np

from engine.atomic_files import atomic_path, drop_dead_temporaries
from engine.cards import N_CLASSES
from engine.rollout_exact import ORDER_PLAYERS, ORDERS, deal_counts, matchup_hists, order_shares
from engine.rollout_sampled import sample_hists

__all__ = [
    "ORDERS",
    "N_PAIR_ROWS",
    "N_TRIPLE_ROWS",
    "PairTable",
    "TripleTable",
    "pair_row",
    "triple_row",
    "pair_classes",
    "triple_classes",
    "distinct_orderings",
    "pair_lookup",
    "triple_lookup",
    "pair_matchup",
    "triple_matchup",
    "pair_weights",
    "triple_weights",
    "pair_rows_exact",
    "triple_rows_exact",
    "pair_rows_sampled",
    "triple_rows_sampled",
    "build_pair_table",
    "build_triple_table",
]

N_PAIR_ROWS = comb(N_CLASSES + 1, 2)  # 14,365
N_TRIPLE_ROWS = comb(N_CLASSES + 2, 3)  # 818,805
MODES = ("exact", "sampled")

# Rows per chunk (a chunk is one parallel kernel call, then a progress callback); about 1–5 s
# of work each on two cores.
EXACT_PAIR_CHUNK = 2048
EXACT_TRIPLE_CHUNK = 2500
EXACT_TRIPLE_TAG = "triples_exact"  # the names of the exact triple table's chunk checkpoints
SAMPLED_CHUNK_DRAWS = 20_000_000  # rows per sampled chunk = this / samples


@dataclass
class PairTable:
    """Showdown table of all 14,365 class pairs {a ≤ b} (see the module docstring)."""

    a: np.ndarray  # int16 class ids
    b: np.ndarray
    weight: np.ndarray  # int64
    p_first_wins: np.ndarray  # float64
    mode: str  # 'exact' | 'sampled'
    boards_per_matchup: int | None  # samples per row in sampled mode, None when exact
    seed: int | None
    precision: float  # max standard error over rows (0 when exact)
    wall_s: float


@dataclass
class TripleTable:
    """Showdown table of all 818,805 class triples {a ≤ b ≤ c} (see the module docstring)."""

    a: np.ndarray  # int16 class ids
    b: np.ndarray
    c: np.ndarray
    weight: np.ndarray  # int64, 0 for the 325 undealable triples
    p: np.ndarray  # float64 (rows, 6) in ORDERS order; NaN rows where weight == 0
    mode: str
    boards_per_matchup: int | None
    seed: int | None
    precision: float
    wall_s: float


# --------------------------------------------------------------------------------------------
# Row indexing
# --------------------------------------------------------------------------------------------


def _check_class(name: str, value) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a hand class id (int 0..168), got {value!r}")
    if not 0 <= int(value) < N_CLASSES:
        raise ValueError(f"{name} must be a hand class id 0..168, got {value}")
    return int(value)


def pair_row(a: int, b: int) -> int:
    """Row of the multiset {a, b}: rows before first class a, then b − a (after sorting)."""
    a, b = sorted((_check_class("a", a), _check_class("b", b)))
    return comb(N_CLASSES + 1, 2) - comb(N_CLASSES + 1 - a, 2) + (b - a)


def triple_row(a: int, b: int, c: int) -> int:
    """Row of the multiset {a, b, c} (after sorting a ≤ b ≤ c): the C(n+2, 3)-style count of
    triples with a smaller first class, then pairs (b', c') with a ≤ b' < b, then c − b."""
    a, b, c = sorted((_check_class("a", a), _check_class("b", b), _check_class("c", c)))
    n = N_CLASSES
    return (comb(n + 2, 3) - comb(n + 2 - a, 3)) + (comb(n + 1 - a, 2) - comb(n + 1 - b, 2)) + (c - b)


def pair_classes() -> np.ndarray:
    """Canonical class pairs of all rows, shape (14,365, 2), int16, in row order."""
    a, b = np.triu_indices(N_CLASSES)
    return np.stack([a, b], axis=1).astype(np.int16)


def triple_classes() -> np.ndarray:
    """Canonical class triples of all rows, shape (818,805, 3), int16, in row order."""
    out = np.empty((N_TRIPLE_ROWS, 3), dtype=np.int16)
    start = 0
    for a in range(N_CLASSES):
        b, c = np.triu_indices(N_CLASSES - a)
        stop = start + b.size
        out[start:stop, 0] = a
        out[start:stop, 1] = b + a
        out[start:stop, 2] = c + a
        start = stop
    return out


def distinct_orderings(*classes: int) -> int:
    """Number of distinct orderings of a multiset of classes (pairs 1 or 2; triples 1, 3, 6)."""
    k = len(set(classes))
    if len(classes) == 2:
        return 2 if k == 2 else 1
    return {1: 1, 2: 3, 3: 6}[k]


def _multiset_factor(classes: np.ndarray) -> np.ndarray:
    """distinct_orderings for each canonical row of ``classes`` (rows × 2 or 3)."""
    if classes.shape[1] == 2:
        return np.where(classes[:, 0] == classes[:, 1], 1, 2)
    n_distinct = 1 + (classes[:, 0] != classes[:, 1]) + (classes[:, 1] != classes[:, 2])
    return np.choose(n_distinct - 1, [1, 3, 6])


# --------------------------------------------------------------------------------------------
# Permutations of orders
# --------------------------------------------------------------------------------------------

_ORDER_INDEX = {tuple(int(x) for x in pl): o for o, pl in enumerate(ORDER_PLAYERS)}


def _relabel(sigma: tuple[int, int, int]) -> np.ndarray:
    """perm[o] = index of the order obtained from order o by renaming player i to sigma[i]."""
    return np.array([_ORDER_INDEX[tuple(sigma[int(i)] for i in pl)] for pl in ORDER_PLAYERS], dtype=np.int64)


_SWAP_AB = _relabel((1, 0, 2))
_SWAP_BC = _relabel((0, 2, 1))


def _symmetrize(p: np.ndarray, classes: np.ndarray) -> np.ndarray:
    """Average estimated order probabilities over relabelings of players holding equal classes."""
    p = p.copy()
    if classes.shape[1] == 2:
        same = classes[:, 0] == classes[:, 1]
        p[same] = 0.0
        p[same, 0] = p[same, 2] = 0.5  # "ab" and "ba"
        return p
    a, b, c = classes[:, 0], classes[:, 1], classes[:, 2]
    all_eq = (a == b) & (b == c)
    ab = (a == b) & ~all_eq
    bc = (b == c) & ~all_eq
    p[ab] = 0.5 * (p[ab] + p[ab][:, _SWAP_AB])
    p[bc] = 0.5 * (p[bc] + p[bc][:, _SWAP_BC])
    p[all_eq & ~np.isnan(p[:, 0])] = 1.0 / 6.0
    return p


# --------------------------------------------------------------------------------------------
# Lookups and single matchups
# --------------------------------------------------------------------------------------------


def pair_lookup(table: PairTable, a: int, b: int) -> tuple[int, float]:
    """(weight of {a, b}, P(the hand of class a beats the hand of class b)) from a pair table."""
    row = pair_row(a, b)
    p = float(table.p_first_wins[row])
    return int(table.weight[row]), (p if a <= b else 1.0 - p)


def _canonical_positions(classes: tuple[int, int, int]) -> tuple[int, int, int]:
    """pos[i] = canonical position (after a stable sort) of caller's player i."""
    perm = sorted(range(3), key=lambda i: classes[i])
    pos = [0, 0, 0]
    for k, i in enumerate(perm):
        pos[i] = k
    return pos[0], pos[1], pos[2]


def triple_lookup(table: TripleTable, a: int, b: int, c: int) -> tuple[int, np.ndarray]:
    """(weight of {a, b, c}, p[6]) with p in :data:`ORDERS` order for the caller's players
    (a, b, c as given, not sorted). p is NaN for an undealable triple."""
    row = triple_row(a, b, c)
    idx = _relabel(_canonical_positions((a, b, c)))
    return int(table.weight[row]), table.p[row][idx].copy()


def _padded(classes: np.ndarray) -> np.ndarray:
    out = np.zeros((classes.shape[0], 3), dtype=np.int64)
    out[:, : classes.shape[1]] = classes
    return out


def _exact_rows(classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(deals per canonical order, p (rows × 6)) of canonical rows ``classes`` (rows × n)."""
    hist, deals = matchup_hists(classes.shape[1], _padded(classes))
    return deals, order_shares(hist)


def _sampled_rows(classes, row_ids, deals, samples, seed) -> np.ndarray:
    """Unsymmetrized sampled p (rows × 6); ``row_ids`` (global row indices) pick the streams."""
    hist = sample_hists(classes.shape[1], _padded(classes), row_ids, deals > 0, samples, seed)
    return order_shares(hist)


def _as_rows(rows, n_rows: int) -> np.ndarray:
    rows = np.atleast_1d(np.asarray(rows, dtype=np.int64))
    if rows.ndim != 1 or rows.size and (rows.min() < 0 or rows.max() >= n_rows):
        raise ValueError(f"rows must be a 1-d array of row indices in 0..{n_rows - 1}")
    return rows


def pair_weights() -> np.ndarray:
    """``weight`` column of the pair table (exact; about 0.1 s)."""
    classes = pair_classes()
    return deal_counts(2, _padded(classes)) * _multiset_factor(classes)


def triple_weights() -> np.ndarray:
    """``weight`` column of the triple table (exact; about a second)."""
    classes = triple_classes()
    return deal_counts(3, _padded(classes)) * _multiset_factor(classes)


def pair_rows_exact(rows: np.ndarray) -> np.ndarray:
    """Exact ``p_first_wins`` of the given pair rows (indices into the canonical order)."""
    rows = _as_rows(rows, N_PAIR_ROWS)
    return _exact_rows(pair_classes()[rows])[1][:, [0, 1]].sum(axis=1)


def triple_rows_exact(rows: np.ndarray) -> np.ndarray:
    """Exact order probabilities (len(rows), 6) of the given triple rows (NaN if undealable).
    Computes just those rows — for tests and spot checks of the full table."""
    rows = _as_rows(rows, N_TRIPLE_ROWS)
    return _exact_rows(triple_classes()[rows])[1]


def pair_rows_sampled(rows: np.ndarray, samples: int, seed: int = 0) -> np.ndarray:
    """Sampled ``p_first_wins`` of the given pair rows — identical to the same rows of
    ``build_pair_table("sampled", samples, seed)``."""
    _validate("sampled", samples, seed, None)
    rows = _as_rows(rows, N_PAIR_ROWS)
    classes = pair_classes()[rows]
    deals = deal_counts(2, _padded(classes))
    p = _symmetrize(_sampled_rows(classes, rows, deals, samples, seed), classes)
    return p[:, [0, 1]].sum(axis=1)


def triple_rows_sampled(rows: np.ndarray, samples: int, seed: int = 0) -> np.ndarray:
    """Sampled order probabilities of the given triple rows — identical to the same rows of
    ``build_triple_table("sampled", samples, seed)``."""
    _validate("sampled", samples, seed, None)
    rows = _as_rows(rows, N_TRIPLE_ROWS)
    classes = triple_classes()[rows]
    deals = deal_counts(3, _padded(classes))
    return _symmetrize(_sampled_rows(classes, rows, deals, samples, seed), classes)


def pair_matchup(a: int, b: int) -> tuple[int, float]:
    """Exact (weight of {a, b}, P(class a beats class b)) for classes in any order — equal to
    ``pair_lookup`` on an exact table."""
    a, b = _check_class("a", a), _check_class("b", b)
    lo, hi = sorted((a, b))
    deals, p6 = _exact_rows(np.array([[lo, hi]]))
    p = float(p6[0, [0, 1]].sum())
    return int(deals[0]) * distinct_orderings(a, b), (p if a <= b else 1.0 - p)


def triple_matchup(a: int, b: int, c: int) -> tuple[int, np.ndarray]:
    """Exact (weight of {a, b, c}, p[6] in the caller's order) for classes in any order — equal
    to ``triple_lookup`` on an exact table."""
    cls = (_check_class("a", a), _check_class("b", b), _check_class("c", c))
    deals, p6 = _exact_rows(np.array([sorted(cls)]))
    p = p6[0]
    return int(deals[0]) * distinct_orderings(*cls), p[_relabel(_canonical_positions(cls))]


# --------------------------------------------------------------------------------------------
# Table builds
# --------------------------------------------------------------------------------------------


def _validate(mode, samples, seed, progress, checkpoint_dir=None) -> None:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if mode == "exact" and samples is not None:
        raise ValueError(f"samples must be None in exact mode (every board is enumerated), got {samples!r}")
    if mode == "sampled":
        if samples is None:
            raise ValueError("samples is required in sampled mode: the number of boards per matchup (int > 0)")
        if isinstance(samples, (bool, np.bool_)) or not isinstance(samples, (int, np.integer)) or samples <= 0:
            raise ValueError(f"samples must be an int > 0 (boards per matchup), got {samples!r}")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**63:
        raise ValueError(f"seed must be an int in 0..2**63-1, got {seed!r}")
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be a callable progress(done, total) or None, got {progress!r}")
    if checkpoint_dir is not None and not isinstance(checkpoint_dir, (str, os.PathLike)):
        raise ValueError(f"checkpoint_dir must be a directory path or None, got {checkpoint_dir!r}")


def _save_atomic(path: Path, arr: np.ndarray) -> None:
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        np.save(f, arr)


def _load_chunk(path: Path | None, rows: int, mmap_mode: str | None = None) -> np.ndarray | None:
    """A saved chunk (rows × 7: deals, p[6]) or None when absent or not of the expected shape;
    ``mmap_mode="r"`` maps it instead of reading it (a cut-short file cannot be mapped to its
    header's size, so it is refused all the same)."""
    if path is None or not path.exists():
        return None
    try:
        saved = np.load(path, mmap_mode=mmap_mode)
    except (OSError, ValueError, EOFError):  # unreadable: computed again (a chunk is minutes of work)
        return None
    return saved if isinstance(saved, np.ndarray) and saved.shape == (rows, 7) else None


def _chunk_path(folder: Path, tag: str, start: int, stop: int) -> Path:
    return folder / f"{tag}_rows{start:06d}-{stop:06d}.npy"


def triple_chunks_saved(checkpoint_dir: str | os.PathLike, mode: str, samples: int | None,
                        seed: int) -> tuple[int, int, float | None]:
    """(chunks saved, chunks in all, when the last was saved: POSIX time or None) of a triple
    table being built with ``checkpoint_dir`` and these settings (for `jamfold progress`; reads
    nothing but the folder's names and times)."""
    saved, total = _saved_chunks(checkpoint_dir, mode, samples, seed)
    return len(saved), total, max((when for _, when in saved), default=None)


def triple_rows_saved(checkpoint_dir: str | os.PathLike, mode: str, samples: int | None, seed: int) -> int:
    """Rows of a triple table that its checkpoints in ``checkpoint_dir`` already hold (a resumed
    build loads them in an instant: its time left is reckoned from the rows it computes). A chunk
    file the build would not load (cut short, another shape: computed again) is not counted; its
    header and size are checked, its numbers are not read."""
    return sum(rows for rows, path in _triple_chunk_files(checkpoint_dir, mode, samples, seed)
               if _load_chunk(path, rows, mmap_mode="r") is not None)


def _saved_chunks(checkpoint_dir: str | os.PathLike, mode: str, samples: int | None,
                  seed: int) -> tuple[list[tuple[int, float]], int]:
    """([(rows, when saved)] of every chunk file present, chunks in all) of a triple table."""
    files = _triple_chunk_files(checkpoint_dir, mode, samples, seed)
    saved = []
    for rows, path in files:
        try:
            saved.append((rows, path.stat().st_mtime))
        except FileNotFoundError:
            continue
    return saved, len(files)


def _triple_chunk_files(checkpoint_dir: str | os.PathLike, mode: str, samples: int | None,
                        seed: int) -> list[tuple[int, Path]]:
    """(rows, file) of every chunk of a triple table built with these settings, present or not."""
    chunk, tag = _triple_chunking(mode, samples, seed)
    files = []
    for start in range(0, N_TRIPLE_ROWS, chunk):
        stop = min(start + chunk, N_TRIPLE_ROWS)
        files.append((stop - start, _chunk_path(Path(checkpoint_dir), tag, start, stop)))
    return files


def _triple_chunking(mode: str, samples: int | None, seed: int) -> tuple[int, str]:
    """(rows per chunk, the chunk files' name tag) of a triple table built with these settings."""
    if mode == "exact":
        return EXACT_TRIPLE_CHUNK, EXACT_TRIPLE_TAG
    return max(256, SAMPLED_CHUNK_DRAWS // samples), f"triples_sampled_n{samples}_seed{seed}"


def _build(classes, mode, samples, seed, progress, checkpoint_dir, chunk_rows, tag):
    """Deals per canonical order, probabilities (rows × 6) and precision of all rows of
    ``classes``, chunk by chunk (optionally checkpointed)."""
    n_rows, n = classes.shape
    ckpt = None
    if checkpoint_dir is not None:
        ckpt = Path(checkpoint_dir)
        ckpt.mkdir(parents=True, exist_ok=True)
        drop_dead_temporaries(ckpt)  # (a chunk's writer killed outright)
    deals = np.zeros(n_rows, np.int64)
    p = np.full((n_rows, 6), np.nan)
    if mode == "sampled":
        deals[:] = deal_counts(n, _padded(classes))
    for start in range(0, n_rows, chunk_rows):
        stop = min(start + chunk_rows, n_rows)
        path = _chunk_path(ckpt, tag, start, stop) if ckpt is not None else None
        saved = _load_chunk(path, stop - start)
        if saved is not None:
            deals[start:stop] = saved[:, 0].astype(np.int64)
            p[start:stop] = saved[:, 1:]
        else:
            if mode == "exact":
                deals[start:stop], p[start:stop] = _exact_rows(classes[start:stop])
            else:
                p[start:stop] = _sampled_rows(
                    classes[start:stop], np.arange(start, stop), deals[start:stop], samples, seed
                )
            if path is not None:
                _save_atomic(path, np.column_stack([deals[start:stop].astype(np.float64), p[start:stop]]))
        if progress is not None:
            progress(stop, n_rows)
    precision = 0.0
    if mode == "sampled":
        p = _symmetrize(p, classes)
        est = p[:, [0, 1]].sum(axis=1) if n == 2 else p
        # rows whose classes are all equal are known exactly by symmetry
        estimated = np.any(classes != classes[:, :1], axis=1)
        precision = float(np.nanmax(np.sqrt(est * (1.0 - est) / samples)[estimated]))
    return deals, p, precision


def build_pair_table(
    mode: str = "exact",
    samples: int | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> PairTable:
    """All 14,365 pair rows. Exact: ≈ 5 s on two cores. ``progress(done_rows, total_rows)`` is
    called after every chunk."""
    _validate(mode, samples, seed, progress)
    t0 = time.perf_counter()
    classes = pair_classes()
    chunk = EXACT_PAIR_CHUNK if mode == "exact" else max(256, SAMPLED_CHUNK_DRAWS // samples)
    deals, p, precision = _build(classes, mode, samples, seed, progress, None, chunk, "pairs")
    return PairTable(
        a=classes[:, 0].copy(),
        b=classes[:, 1].copy(),
        weight=deals * _multiset_factor(classes),
        p_first_wins=p[:, [0, 1]].sum(axis=1),
        mode=mode,
        boards_per_matchup=samples,
        seed=seed if mode == "sampled" else None,
        precision=precision,
        wall_s=time.perf_counter() - t0,
    )


def build_triple_table(
    mode: str = "exact",
    samples: int | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
    checkpoint_dir: str | None = None,
) -> TripleTable:
    """All 818,805 triple rows. Exact takes roughly 10 min on two cores (projected from a
    sample: ``python -m engine.bench_rollout triples-exact-sample``); sampled with 2,000 boards
    about a minute. With ``checkpoint_dir`` every finished chunk is saved there (atomically) and chunks
    already saved by an interrupted build with the same settings are loaded instead of
    recomputed."""
    _validate(mode, samples, seed, progress, checkpoint_dir)
    t0 = time.perf_counter()
    classes = triple_classes()
    chunk, tag = _triple_chunking(mode, samples, seed)
    deals, p, precision = _build(classes, mode, samples, seed, progress, checkpoint_dir, chunk, tag)
    return TripleTable(
        a=classes[:, 0].copy(),
        b=classes[:, 1].copy(),
        c=classes[:, 2].copy(),
        weight=deals * _multiset_factor(classes),
        p=p,
        mode=mode,
        boards_per_matchup=samples,
        seed=seed if mode == "sampled" else None,
        precision=precision,
        wall_s=time.perf_counter() - t0,
    )
