"""Benchmark of the equity models: the time to evaluate every state of a game.

Prints, after a warm-up call that triggers (or loads) the numba compilation:

* Harville with 20 players (one stack vector);
* each model over every state of a game (default: 45 units, 2..5 players = 149,985 states),
  evaluated with :func:`engine.equity_models.finishing_matrices`, and the total;
* Roberts with 9 players (one stack vector).

Times are the best of ``--repeat`` runs (wall clock).
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from engine.bench_cli import run_benchmark
from engine.config import MAX_UNITS
from engine.equity_models import MODELS, finishing_matrices, finishing_matrix
from engine.states import enumerate_states


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="./lab bench models", description=__doc__.split("\n")[0])
    ap.add_argument("--units", type=int, default=45, help="total units of the state game (45)")
    ap.add_argument("--max-players", type=int, default=5, help="states with 2..this many players (5)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per timing, best is reported (3)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if not 2 <= args.max_players <= 5:
        ap.error(f"--max-players must be 2 to 5 (got {args.max_players})")
    if not args.max_players <= args.units <= MAX_UNITS:
        ap.error(f"--units must be from --max-players to {MAX_UNITS} (got {args.units})")
    if args.repeat < 1:
        ap.error(f"--repeat must be at least 1 (got {args.repeat})")
    if args.seed < 0:
        ap.error(f"--seed must be >= 0 (got {args.seed})")

    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    for model in MODELS:  # compile or load from cache
        finishing_matrix(model, [1.0, 2.0, 3.0])
        finishing_matrices(model, np.array([[1.0, 2.0, 3.0]]))
    print(f"warm-up (numba compile/cache load): {time.perf_counter() - t0:.2f} s; "
          f"numba threads: {numba.get_num_threads()}")

    x20 = rng.uniform(1.0, 50.0, 20)
    t = _best(lambda: finishing_matrix("harville", x20), args.repeat)
    print(f"Harville, 20 players (1 stack vector): {t * 1e3:.1f} ms")

    layers = [enumerate_states(args.units, n).astype(np.float64) for n in range(2, args.max_players + 1)]
    m = sum(len(s) for s in layers)
    total = 0.0
    for model in MODELS:
        t = _best(lambda: [finishing_matrices(model, s) for s in layers], args.repeat)
        total += t
        print(f"{model:<9} all {m:,} states ({args.units} units, 2..{args.max_players} players): {t:.3f} s")
    print(f"total, three models: {total:.3f} s")

    x9 = rng.uniform(1.0, 50.0, 9)
    t = _best(lambda: finishing_matrix("roberts", x9), args.repeat)
    print(f"Roberts, 9 players (1 stack vector): {t * 1e3:.1f} ms")
    return 0


if __name__ == "__main__":
    run_benchmark(main, "./lab bench models")
