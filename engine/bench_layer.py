"""Layer projection benchmark: what solving a whole 45-unit layer would cost, from a sample of its states.

    ./lab bench layer [--units 45] [--players 5] [--samples 24] [--gamma 1e-4] [--seed 1] [--perf-map]

A PI-CFR+ layer solve (:func:`engine.tournament.solve_layer`) is one cold solve of every state,
then warm re-solves of the states whose successor values moved. This samples states uniformly
from the layer and measures both building blocks on each, with the layer solve's own settings:

* **cold**: a fresh solver, successor values from Harville (the PI-CFR+ start), solved to
  ``gamma`` ($, the state's single-hand exploitability);
* **from a neighbour**: as the layer's first outer iteration starts a state, from the regrets of
  the neighbour :func:`engine.warm_starts.warm_start_waves` picks for it (one unit moved between
  two players), that neighbour solved cold first; same values and target. States whose wave
  starts a warm-start chain have no source and start cold. In the layer the source has itself
  started from a neighbour (chains up to ``WARM_CHAIN`` long), which one link does not copy;
* **warm**: the cold solver, its regrets rescaled and its average restarted as in an outer
  iteration, re-solved against successor values from Malmuth-Weitzman instead — a change of the
  size an outer iteration makes (dollars to cents; printed as max |ΔU|).

The cost depends mostly on the tree shape, i.e. which blinds are all-in, so the sample is
stratified by it (``--samples`` states with no blind all-in, a quarter as many of each other
shape) and the projection weights each stratum by its exact share of the layer. Prints per shape
the states, nodes, CFR+ iterations and seconds cold, from a neighbour and warm, and the cost of
one CFR+ iteration, then projections on the machine's threads: one cold pass over every state of
the layer, the first solve of every state as the first outer iteration does it (cold where a
chain starts, from a neighbour elsewhere), one warm pass over every state, and the whole layer
as the first solves plus :data:`WARM_PASSES_PER_LAYER` warm passes (what 4- and 5-player layers
solved end to end took; the gs08 3-player layer needed about one cold pass and the equivalent
of a handful of warm passes, see PERFORMANCE.md). Also prints the solver memory per state (regrets, predictions and decision margins in
float32, certified profile in float64; the average only lives during a solve) and for the layer.

Showdown tensors come from sampled tables (a CFR+ iteration costs the same with any table).
``--perf-map`` names the compiled kernels for a ``perf record`` of the run (see :mod:`engine.perf_map`).
"""

from __future__ import annotations

import argparse
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from engine.bench_cli import run_benchmark
from engine.bench_tables import bench_solver_tensors
from engine.cfr import HandSolver
from engine.config import MAX_UNITS
from engine.cores import configured_threads
from engine.game_tree import compile_hand, utilities
from engine.hand_pass import SolverTensors, Workspace
from engine.perf_map import write_perf_map
from engine.states import enumerate_states, state_index
from engine.layers import model_layer_values
from engine.state_resolve import restart_regrets
from engine.warm_starts import start_from_neighbour, tree_shape, warm_start_waves

NC = 169

WARM_PASSES_PER_LAYER = (0.85, 1.0)
"""What a whole PI-CFR+ layer solve cost, in units of this benchmark's projections: the first solves
plus this many warm passes (2 threads, sampled tables, the projection run within the hour of the
solve, code of 2026-11-26). Measured: the 45-unit 4-player layer 2,718 s against 0.36 h of first
solves and 0.45 h per warm pass (0.88); the 20-unit 5-player layer 1,197 s against 0.21 h and
0.145 h (0.85); the 20-unit 4-player layer 160 s against 0.0314 h and 0.013 h (1.0); the 45-unit
4-player layer again with the loose levels' re-solves capped, 2,677 s against 0.318 h and 0.413 h
(0.99 without the 63 s that tests run beside its first outer iteration cost). Earlier code took
0.96 and 1.2 warm passes on the 45-unit 4-player layer (PERFORMANCE.md)."""


def _hours(seconds: float) -> str:
    """Hours with three significant digits: a small layer's projection still reads (0.0312, not 0.03)."""
    return f"{seconds / 3600:.3g}"


def _solve_state(stacks: tuple[int, ...], source: tuple[int, ...] | None, payouts: tuple[float, ...], harville: dict,
                 weitzman: dict, tensors: SolverTensors, gamma: float) -> dict:
    hand = compile_hand(stacks, payouts, state_index)
    ws = Workspace.for_hand(hand)
    u_cold, u_warm = utilities(hand, harville), utilities(hand, weitzman)
    nb_its, t_nb = -1, float("nan")
    if source is not None:  # the source solved cold, then this state started from its regrets
        near = compile_hand(source, payouts, state_index)
        donor = HandSolver(near, tensors)
        donor.solve(utilities(near, harville), gamma, ws=ws, delay=2)
        ws.forget()
        solver = HandSolver(hand, tensors)
        start_from_neighbour(solver, donor)
        t0 = time.perf_counter()
        _, nb_its = solver.solve(u_cold, gamma, ws=ws, delay=2)
        t_nb = time.perf_counter() - t0
        ws.forget()
    solver = HandSolver(hand, tensors)
    t0 = time.perf_counter()
    e_cold, it_cold = solver.solve(u_cold, gamma, ws=ws, delay=2)
    t_cold = time.perf_counter() - t0
    restart_regrets(solver)
    solver.restart_average()
    t0 = time.perf_counter()
    e_warm, it_warm = solver.solve(u_warm, gamma, ws=ws)
    t_warm = time.perf_counter() - t0
    solver.keep_margins(ws)  # as a layer solve does after certifying (for margin_bounds)
    memory = sum(a.nbytes for a in (solver.regret_jam, solver.regret_fold, solver.pred_jam, solver.pred_fold,
                                     solver.solution, *solver.margins) if a is not None)
    return {"stacks": stacks, "nodes": len(hand.node_actor), "depth2": int((hand.node_depth == 2).sum()),
            "cold_its": it_cold, "cold_s": t_cold, "cold_e": e_cold, "nb_its": nb_its, "nb_s": t_nb,
            "warm_its": it_warm, "warm_s": t_warm,
            "warm_e": e_warm, "du": float(np.abs(u_warm - u_cold).max()), "bytes": memory}


def _check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject bad arguments before any work, naming the flag and the rule (exit code 2)."""
    if not 2 <= args.players <= 5:
        parser.error(f"--players must be 2 to 5 (got {args.players})")
    if args.units < args.players:
        parser.error(f"--units must be at least --players: every stack is at least 1 unit (got {args.units})")
    if args.samples < 1:
        parser.error(f"--samples must be at least 1 (got {args.samples})")
    if args.units > MAX_UNITS:
        parser.error(f"--units must be at most {MAX_UNITS} (got {args.units})")
    if not (args.gamma > 0 and math.isfinite(args.gamma)):
        parser.error(f"--gamma must be a finite number > 0 $ (got {args.gamma})")
    if args.seed < 0:
        parser.error(f"--seed must be >= 0 (got {args.seed})")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="./lab bench layer", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=45)
    parser.add_argument("--players", type=int, default=5)
    parser.add_argument("--samples", type=int, default=24)
    parser.add_argument("--gamma", type=float, default=1e-4, help="target single-hand exploitability ($)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--perf-map", action="store_true",
                        help="write /tmp/perf-<pid>.map naming the numba kernels for perf (run with a fresh NUMBA_CACHE_DIR)")
    args = parser.parse_args(argv)
    _check_arguments(parser, args)
    payouts = (50.0, 30.0, 20.0)
    threads = configured_threads()
    t0 = time.perf_counter()
    tensors = bench_solver_tensors()
    print(f"tensors (sampled tables): {time.perf_counter() - t0:.1f} s; {threads} threads")
    layers = {m: enumerate_states(args.units, m) for m in range(2, args.players + 1)}
    harville = {m: model_layer_values("harville", st, payouts) for m, st in layers.items()}
    weitzman = {m: model_layer_values("weitzman", st, payouts) for m, st in layers.items()}
    states = layers[args.players]
    n = args.players
    # strata: the tree shape, i.e. which blinds are all-in (SB <= 1, BB <= 2 units), which sets the cost
    shape = tree_shape(states)
    wave, source = warm_start_waves(states)
    rng = np.random.default_rng(args.seed)
    sample, sources, strata, cold_starts = [], [], {}, {}
    for k in np.unique(shape):
        members = np.flatnonzero(shape == k)
        take = args.samples if k == 0 else max(2, args.samples // 4)  # the full trees cost the most
        pick = rng.choice(members, min(take, len(members)), replace=False)
        strata[int(k)] = (len(members), len(sample), len(sample) + len(pick))
        cold_starts[int(k)] = int((source[members] < 0).sum())
        sample += [tuple(int(x) for x in states[s]) for s in pick]
        sources += [tuple(int(x) for x in states[source[s]]) if source[s] >= 0 else None for s in pick]
    # warm up numba (compile or load the cache) on a small hand
    _solve_state(sample[-1], sources[-1], payouts, harville, weitzman, tensors, 1e-2)

    t0 = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        rows = list(pool.map(lambda job: _solve_state(*job, payouts, harville, weitzman, tensors, args.gamma),
                             zip(sample, sources)))
    wall = time.perf_counter() - t0
    m = len(states)
    print(f"{args.units}-unit {n}-player layer: {m:,} states; {len(rows)} sampled states solved to {args.gamma:g} $ "
          f"(cold from Harville successor values, then warm against Malmuth-Weitzman ones) in {wall:.1f} s on "
          f"{threads} threads")
    cold_total = first_total = warm_total = mem_total = 0.0
    for k, (count, lo, hi) in strata.items():
        part = rows[lo:hi]
        cold_s = np.array([r["cold_s"] for r in part])
        warm_s = np.array([r["warm_s"] for r in part])
        near = [r for r in part if r["nb_its"] >= 0]
        its = sum(r["cold_its"] + r["warm_its"] + max(r["nb_its"], 0) for r in part)
        per_it = (cold_s.sum() + warm_s.sum() + sum(r["nb_s"] for r in near)) / max(its, 1)
        blinds = {0: "no blind all-in", 1: "BB all-in", 2: "SB all-in", 3: "both blinds all-in"}[k]
        nb_s = np.array([r["nb_s"] for r in near]) if near else cold_s  # no sampled state had a source
        print(f"  {blinds}: {count:,} states ({part[0]['nodes']} nodes, {part[0]['depth2']} depth-2), "
              f"{cold_starts[k]:,} starting cold in the first outer iteration; {len(part)} sampled:")
        print(f"    cold {cold_s.mean():.2f} s per state (median {np.median(cold_s):.2f}, max {cold_s.max():.2f}), "
              f"{np.mean([r['cold_its'] for r in part]):.0f} CFR+ iterations")
        if near:
            print(f"    from a neighbour {nb_s.mean():.2f} s (median {np.median(nb_s):.2f}, max {nb_s.max():.2f}), "
                  f"{np.mean([r['nb_its'] for r in near]):.0f} iterations ({len(near)} of the sampled states have a "
                  f"source; the same states cold: {np.mean([r['cold_s'] for r in near]):.2f} s, "
                  f"{np.mean([r['cold_its'] for r in near]):.0f} iterations)")
        print(f"    warm {warm_s.mean():.2f} s (median {np.median(warm_s):.2f}, max {warm_s.max():.2f}), "
              f"{np.mean([r['warm_its'] for r in part]):.0f} iterations; {per_it * 1e3:.1f} ms per iteration")
        for r in sorted(part, key=lambda r: -r["cold_s"])[:3]:
            print(f"      e.g. {r['stacks']}: cold {r['cold_its']} its {r['cold_s']:.2f} s, from a neighbour "
                  + (f"{r['nb_its']} its {r['nb_s']:.2f} s" if r["nb_its"] >= 0 else "- (starts a chain)")
                  + f", warm {r['warm_its']} its {r['warm_s']:.2f} s (max |dU| {r['du']:.2f} $)")
        cold_total += count * cold_s.mean()
        first_total += cold_starts[k] * cold_s.mean() + (count - cold_starts[k]) * nb_s.mean()
        warm_total += count * warm_s.mean()
        mem_total += count * float(np.mean([r["bytes"] for r in part]))
    first_pass_s, warm_pass_s = first_total / threads, warm_total / threads
    print(f"  projection on {threads} threads: one cold pass over the layer {_hours(cold_total / threads)} h; "
          f"the first solve of every state, cold where a warm-start chain starts and from a neighbour elsewhere, "
          f"{_hours(first_pass_s)} h; one warm pass over every state {_hours(warm_pass_s)} h")
    low, high = (_hours(first_pass_s + k * warm_pass_s) for k in WARM_PASSES_PER_LAYER)
    print(f"  the whole layer, at the first solves plus {WARM_PASSES_PER_LAYER[0]}–{WARM_PASSES_PER_LAYER[1]} warm "
          f"passes (what the layers solved end to end took, see WARM_PASSES_PER_LAYER): {low}–{high} h")
    print(f"  solver memory between solves (float32 regrets, predictions and decision margins, float64 certified "
          f"profile): {mem_total / m / 1024:.0f} KiB per state on average, {mem_total / 2**30:.1f} GiB for the layer")
    if args.perf_map:
        named = write_perf_map()
        print(f"  perf map: {named} compiled functions named in /tmp/perf-{os.getpid()}.map"
              + ("" if named else " (none: every kernel came from the on-disk cache; use a fresh NUMBA_CACHE_DIR)"))


if __name__ == "__main__":
    run_benchmark(main, "./lab bench layer")
