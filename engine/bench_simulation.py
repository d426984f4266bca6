"""Simulation benchmark: tournaments per second from the start state of a big game.

    ./lab bench simulation [--units 45] [--players 5] [--tournaments N] [--cache FILE] [--perf-map]

The full 45-unit game is not solved, so every state gets a *synthetic* deterministic profile:
hands are ranked by their equity against a random hand (``win2_vs_random``) and a player jams
with the top x of all hands (combo-weighted). Opening (nobody in yet): x = min(1, 3 / E) /
(1 + (b − 1)/4) with E the effective stack in big blinds (min(own stack, largest other stack))
and b the players still to act behind him (heads-up SB: 1, so ≈ 67 % at 4.5 BB, the first of
five ≈ 38 %); facing j ≥ 1 jammers: x = min(1, 2 / E) / 2^(j−1) (≈ 44 % against one jam at
4.5 BB). Roughly the shape of push/fold charts without ICM. Like an equilibrium, each node
mixes at its boundary: the class straddling the top x jams with the fraction of its combos
that completes x, so one class per node is mixed. The float32 profile is simulated through its
exact compact form (:func:`engine.simulation.compact_profile`), which is what the product does.

Showdown tensors come from sampled tables (the simulation's speed does not depend on their
precision). Prints the packing time (building every state's hand tree, in worker processes),
the compaction time and sizes, the numba compile time, tournaments/s with all threads and with
one (and per CPU-second, which is what idle cores would give when other processes compete for
them), hands per tournament and the mean payoff and finishing distribution per starting
position. ``--cache FILE`` keeps the
packed game between runs.

``--perf-map`` names the compiled kernels for a ``perf record`` of the run and saves the
simulation kernel's machine code, so that ``python -m engine.perf_map annotate`` can show which
instructions take the time (see :mod:`engine.perf_map`)::

    NUMBA_CACHE_DIR=$(mktemp -d) NUMBA_NUM_THREADS=1 perf record -F 1999 -e cpu-clock -o /tmp/perf.data \\
        ./lab bench simulation --units 45 --players 4 --perf-map
    .venv/bin/python -m engine.perf_map annotate /tmp/perf.data /tmp/perf-code-<pid>
"""

from __future__ import annotations

import argparse
import os
import time

import numba
import numpy as np

from engine.bench_cli import run_benchmark
from engine.bench_tables import bench_showdown
from engine.config import MAX_SIMULATION_SEED, MAX_UNITS
from engine.perf_map import dump_code, write_perf_map
from engine.packed_game import PackedGame, default_processes, pack_game
from engine.simulation import NC, ShowdownSampler, compact_profile, describe_hand_events, simulate


def threshold_profile(game: PackedGame, equity: np.ndarray, p1: np.ndarray, chunk: int = 400_000) -> np.ndarray:
    """The synthetic profile of the module docstring, float32 (total_nodes, 169)."""
    order = np.argsort(-equity, kind="stable")
    top = np.empty(NC)
    top[order] = np.cumsum(p1[order]) - p1[order]  # share of hands strictly better than the class
    state, _, actor, depth = game.node_rows()
    out = np.empty((len(state), NC), np.float32)
    for lo in range(0, len(state), chunk):
        sl = slice(lo, lo + chunk)
        stacks = game.state_stacks[state[sl]].astype(np.float64)
        own = np.take_along_axis(stacks, actor[sl, None], axis=1)[:, 0]
        np.put_along_axis(stacks, actor[sl, None], 0.0, axis=1)
        eff_bb = np.minimum(own, stacks.max(axis=1)) / 2.0
        behind = (game.state_players[state[sl]] - 1 - actor[sl]).astype(np.float64)
        x_open = np.minimum(1.0, 3.0 / eff_bb) / (1.0 + (behind - 1.0) / 4.0)
        x_call = np.minimum(1.0, 2.0 / eff_bb) * 0.5 ** np.maximum(depth[sl] - 1, 0)
        x = np.where(depth[sl] == 0, x_open, x_call)
        out[sl] = np.clip((x[:, None] - top[None, :]) / p1[None, :], 0.0, 1.0)
    return out


def _timed(game, profile, seats, start, tournaments, seed, sampler, threads, reps=3):
    """Best-of-``reps`` wall time (s), the CPU time of that run (s, all threads) and the last
    result, on ``threads`` numba threads. CPU time tells what the run would take on idle cores
    when other processes compete for them."""
    numba.set_num_threads(threads)
    best, cpu, res = float("inf"), 0.0, None
    for _ in range(reps):
        c0 = time.process_time()
        res = simulate(game, [profile], seats, start, tournaments, seed, sampler)
        if res.wall_s < best:
            best, cpu = res.wall_s, time.process_time() - c0
    return best, cpu, res


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="./lab bench simulation", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=45)
    parser.add_argument("--players", type=int, default=5)
    parser.add_argument("--tournaments", type=int, default=2_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--cache", default=None, help="npz file: load the packed game from it, or write it there")
    parser.add_argument("--perf-map", action="store_true",
                        help="write /tmp/perf-<pid>.map and the kernel's code to /tmp/perf-code-<pid> for perf "
                             "(run with a fresh NUMBA_CACHE_DIR)")
    args = parser.parse_args(argv)
    if not 2 <= args.players <= 5:
        parser.error(f"--players must be 2 to 5 (got {args.players})")
    if not args.players <= args.units <= MAX_UNITS:
        parser.error(f"--units must be from --players to {MAX_UNITS} (got {args.units})")
    if args.tournaments < 1:
        parser.error(f"--tournaments must be at least 1 (got {args.tournaments})")
    if not 0 <= args.seed <= MAX_SIMULATION_SEED:
        parser.error(f"--seed must be from 0 to 10^12 (got {args.seed})")
    if args.cache is not None and os.path.isdir(args.cache):
        parser.error(f"--cache must name an npz file, not a folder (got {args.cache})")
    payouts = (50.0, 30.0, 20.0)[:args.players]
    threads = numba.get_num_threads()
    print(f"numba threads {threads}, cpus {os.cpu_count()}")

    t0 = time.perf_counter()
    sd = bench_showdown()
    sampler = ShowdownSampler.from_tensors(sd)
    print(f"tensors (sampled tables) and sampler: {time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    if args.cache and os.path.exists(args.cache):
        try:
            game = PackedGame.load(args.cache)
        except Exception as exc:  # damaged, truncated or not a packed game at all
            parser.error(f"--cache: {args.cache} is not a readable packed game ({type(exc).__name__}: {exc}); "
                         f"delete it to pack the game again")
        if (game.units, game.players) != (args.units, args.players):
            parser.error(f"--cache: {args.cache} holds the {game.units}-unit {game.players}-player game, not the "
                         f"{args.units}-unit {args.players}-player one asked for (name another file)")
        how = f"loaded from {args.cache}"
    else:
        procs = default_processes()
        game = pack_game(args.units, args.players, payouts, processes=procs)
        how = f"packed (hand trees of every state) with {procs} processes"
        if args.cache:
            game.save(args.cache)
    print(f"game {args.units} units, {args.players} players: {game.states:,} states, {game.total_nodes:,} profile "
          f"rows, {len(game.out_next):,} outcomes; {how} in {time.perf_counter() - t0:.1f} s")

    t0 = time.perf_counter()
    f32 = threshold_profile(game, sd.win2_vs_random, sd.p1)
    print(f"synthetic profile: {time.perf_counter() - t0:.1f} s. Rule: jam the top x of hands by equity vs a random "
          f"hand, x = min(1, 3/E)/(1 + (behind-1)/4) opening, min(1, 2/E)/2^(jammers-1) facing jams (E = effective "
          f"stack in BB); the boundary class mixes")
    compact_profile(f32[:1000])  # compile
    t0 = time.perf_counter()
    profile = compact_profile(f32)
    print(f"compact form: {time.perf_counter() - t0:.1f} s; float32 {f32.nbytes / 2**30:.2f} GiB -> compact "
          f"{(profile.rows.nbytes + profile.thresholds.nbytes) / 2**20:.0f} MiB ({len(profile.thresholds):,} mixed "
          f"entries, {np.mean((f32 > 0) & (f32 < 1)) * 100:.2f} % of all)")

    base, extra = divmod(args.units, args.players)
    start = tuple(base + (1 if i < extra else 0) for i in range(args.players))
    seats = [0] * args.players
    t0 = time.perf_counter()
    simulate(game, [profile], seats, start, 1000, args.seed, sampler)
    print(f"numba compile (or cache load) of the kernel: {time.perf_counter() - t0:.1f} s")
    simulate(game, [profile], seats, start, args.tournaments, args.seed, sampler)  # warm-up: page in the tables

    for nthreads in (threads, 1):
        wall, cpu, res = _timed(game, profile, seats, start, args.tournaments, args.seed, sampler, nthreads)
        rate = args.tournaments / wall
        print(f"{nthreads} thread(s): {args.tournaments:,} tournaments in {wall:.2f} s (best of 3) = {rate:,.0f} "
              f"tournaments/s, {rate * res.mean_hands:,.0f} hands/s; CPU {cpu:.2f} s = "
              f"{args.tournaments / cpu:,.0f} tournaments per CPU-second, "
              f"{cpu / (args.tournaments * res.mean_hands) * 1e9:.0f} ns CPU per hand")
    numba.set_num_threads(threads)
    dense = simulate(game, [f32], seats, start, 200_000, args.seed, sampler)
    same = simulate(game, [profile], seats, start, 200_000, args.seed, sampler)
    print(f"start {start}: {res.mean_hands:.2f} hands per tournament, unfinished {res.unfinished}; the dense float32 "
          f"profile plays the same tournaments: {np.array_equal(dense.mean, same.mean)}")
    print(f"per hand: {describe_hand_events(res.hand_events)}")
    print("mean payoff $ per starting position: " + ", ".join(f"{m:.3f} ± {s:.3f}" for m, s in zip(res.mean, res.se)))
    print("finishing distribution (rows = starting position, columns = place):")
    print(np.array2string(res.finishing, precision=4))
    if args.perf_map:
        named = write_perf_map()
        saved = dump_code(f"/tmp/perf-code-{os.getpid()}", ("simulate_blocks", "parfor_gufunc"))
        print(f"perf map: {named} compiled functions named in /tmp/perf-{os.getpid()}.map, {saved} kernels' code in "
              f"/tmp/perf-code-{os.getpid()}"
              + ("" if named else " (none: every kernel came from the on-disk cache; use a fresh NUMBA_CACHE_DIR)"))


if __name__ == "__main__":
    run_benchmark(main, "./lab bench simulation")
