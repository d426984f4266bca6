"""Benchmarks of the evaluator and the rollout tables.

    ./lab bench rollout evaluator              # evaluations/s (one core)
    ./lab bench rollout pairs                  # exact pair table, wall time
    ./lab bench rollout triples-sampled        # sampled triple table, 2,000 boards/row
    ./lab bench rollout triples-exact-sample N # N random triple rows, projected table
    ./lab bench rollout all                    # everything (N = 4,000)

Targets (2-core machine): evaluator ≥ 300 M/s enumerating, exact pair table ≤ 60 s, sampled
triple table ≤ 2 min, exact triple table ≤ 2 h (stretch 30 min). Each timing follows a warm-up
call so numba compilation (or cache loading) is not counted. Timings on a shared machine are
noisy; the load average is printed alongside.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from numba import get_num_threads, njit

from engine.bench_cli import run_benchmark
from engine.evaluator import CARD_BIT, CARD_KEY, category_counts_all, evaluate_many, value_from_keys
from engine.rollout import (
    N_TRIPLE_ROWS,
    build_pair_table,
    build_triple_table,
    pair_rows_exact,
    triple_rows_exact,
    triple_rows_sampled,
)

COMMANDS = ("evaluator", "pairs", "triples-sampled", "triples-exact-sample", "all")


@njit(cache=True)
def enumerate_boards(h0, h1):
    """Evaluate the 7-card hand of hole cards (h0, h1) on every board of the other 50 cards
    (one core, incremental key sums). Returns (checksum, evaluations)."""
    k0 = CARD_KEY[h0] + CARD_KEY[h1]
    m0 = CARD_BIT[h0] | CARD_BIT[h1]
    acc = 0
    n = 0
    for a in range(48):
        if a == h0 or a == h1:
            continue
        ka = k0 + CARD_KEY[a]
        ma = m0 | CARD_BIT[a]
        for b in range(a + 1, 49):
            if b == h0 or b == h1:
                continue
            kb = ka + CARD_KEY[b]
            mb = ma | CARD_BIT[b]
            for c in range(b + 1, 50):
                if c == h0 or c == h1:
                    continue
                kc = kb + CARD_KEY[c]
                mc = mb | CARD_BIT[c]
                for d in range(c + 1, 51):
                    if d == h0 or d == h1:
                        continue
                    kd = kc + CARD_KEY[d]
                    md = mc | CARD_BIT[d]
                    for e in range(d + 1, 52):
                        if e == h0 or e == h1:
                            continue
                        acc += value_from_keys(kd + CARD_KEY[e], md | CARD_BIT[e])
                        n += 1
    return acc, n


def _load() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:  # pragma: no cover - platform without getloadavg
        return "load average n/a"


def _header() -> None:
    print(f"numba threads: {get_num_threads()}, cpus: {os.cpu_count()}, {_load()}")


def bench_evaluator() -> None:
    rng = np.random.default_rng(0)
    holes = [tuple(sorted(rng.choice(52, 2, replace=False))) for _ in range(60)]
    enumerate_boards(0, 1)
    t0 = time.perf_counter()
    total = sum(enumerate_boards(a, b)[1] for a, b in holes)
    dt = time.perf_counter() - t0
    print(f"evaluator, enumerating boards (one core): {total / dt / 1e6:.0f} M evaluations/s ({total:,} in {dt:.2f} s)")
    hands = np.tile(np.argsort(rng.random((200_000, 52)), axis=1)[:, :7].astype(np.uint8), (10, 1))
    evaluate_many(hands[:10])
    t0 = time.perf_counter()
    evaluate_many(hands)
    dt = time.perf_counter() - t0
    print(f"evaluator, random hands (one core):        {len(hands) / dt / 1e6:.0f} M evaluations/s")
    category_counts_all()
    t0 = time.perf_counter()
    category_counts_all()
    dt = time.perf_counter() - t0
    print(f"all C(52,7) hands by category ({get_num_threads()} threads): {dt:.2f} s ({133_784_560 / dt / 1e6:.0f} M/s)")


def bench_pairs() -> None:
    pair_rows_exact(np.arange(3))
    table = build_pair_table("exact")
    print(f"exact pair table (14,365 rows): {table.wall_s:.1f} s  [target ≤ 60 s]")


def bench_triples_sampled(samples: int = 2000) -> None:
    triple_rows_sampled(np.arange(3), samples=10)
    table = build_triple_table("sampled", samples=samples, seed=0)
    print(
        f"sampled triple table ({samples:,} boards/row): {table.wall_s:.1f} s, "
        f"precision (max s.e.) {table.precision:.4f}  [target ≤ 120 s]"
    )


def bench_triples_exact(n_rows: int) -> None:
    rng = np.random.default_rng(12345)
    rows = np.sort(rng.choice(N_TRIPLE_ROWS, size=n_rows, replace=False))
    triple_rows_exact(rows[:2])
    t0 = time.perf_counter()
    triple_rows_exact(rows)
    dt = time.perf_counter() - t0
    per_row = dt / n_rows
    full = per_row * N_TRIPLE_ROWS
    print(
        f"exact triple rows: {n_rows:,} random rows in {dt:.1f} s = {per_row * 1e3:.2f} ms/row -> "
        f"full table ≈ {full / 60:.0f} min  [target ≤ 120 min, stretch 30 min]"
    )


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    usage = f"usage: ./lab bench rollout {{{'|'.join(COMMANDS)}}} [N]"
    if args[:1] in (["-h"], ["--help"]):
        print(f"{usage}\n\n{__doc__.strip()}")
        return 0
    if not args or args[0] not in COMMANDS:
        print(usage, file=sys.stderr)
        return 2
    cmd = args[0]
    n_rows = 4000
    if len(args) > 1:
        try:
            n_rows = int(args[1])
        except ValueError:
            n_rows = 0
        if n_rows <= 0 or cmd != "triples-exact-sample":
            print(f"{usage}\nN (rows to time) is an int > 0, only for triples-exact-sample", file=sys.stderr)
            return 2
    _header()
    if cmd in ("evaluator", "all"):
        bench_evaluator()
    if cmd in ("pairs", "all"):
        bench_pairs()
    if cmd in ("triples-sampled", "all"):
        bench_triples_sampled()
    if cmd in ("triples-exact-sample", "all"):
        bench_triples_exact(n_rows)
    print(_load())
    return 0


if __name__ == "__main__":
    run_benchmark(main, "./lab bench rollout")
