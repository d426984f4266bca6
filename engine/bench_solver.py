"""Solver benchmark: cost of one CFR+ iteration per player count, and a small layer solve.

    ./lab bench solver [--units 45] [--iterations 100] [--layer-units 8] [--layer-players 3]
                       [--layer-gamma 1e-3] [--sweep-units 20] [--checkpoint DIR] [--verbose]
                       [--no-kept-sums] [--layer-sweeps] [--ex-post]

Showdown tensors come from sampled tables built on the fly (the cost of a CFR+ iteration does not
depend on how the tables were made). Prints ms per iteration for the start-like state of each
player count (cold, i.e. first iterations, and after ``--iterations``), the exploitability
reached, the wall time of a full PI-CFR+ solve of a small game (its CFR+ iterations, outer
iterations and exact checks: the deterministic counts to compare two codes by), and
model-strategy sweeps over a 3-player game cold and warm-started (``--sweep-units``). A
``--checkpoint`` folder makes the solve resumable and keeps its finished layers (a long layer,
e.g. the 45-unit 4-player one, can be measured with the smaller layers read back);
``--verbose`` prints its progress (every outer iteration, states done, checkpoints);
``--no-kept-sums`` solves without the depth-2 sums kept between outer iterations, as the 45-unit
4- and 5-player layers must (they do not fit the budget), so a smaller layer can stand in for
them: e.g. ``--layer-units 20 --layer-players 4 --layer-gamma 1e-4 --sweep-units 0 --no-kept-sums``
with ``NUMBA_NUM_THREADS=1``. ``--layer-sweeps`` then times the model-strategy sweeps over that
solved game as ``model_strategies`` and ``fgs_strategies`` run them (needs ``--checkpoint``):
Harville warm-started from the equilibrium's regrets, Weitzman from Harville's, FGS-1 continuing
Harville's solvers; per layer, seconds, CFR+ iterations and ms per state. E.g. the 45-unit
4-player game, its layers read back from a finished checkpoint: ``--units 45 --iterations 20 --layer-units 45 --layer-players 4
--layer-gamma 1e-4 --sweep-units 0 --checkpoint DIR --layer-sweeps``. ``--ex-post`` times the
ex post check of the solved equilibrium (the nemesis' policy iteration), layer by layer, and with
``--layer-sweeps`` that of each sweep's profile too.
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from engine import tournament
from engine.bench_cli import run_benchmark
from engine.bench_tables import bench_solver_tensors
from engine.cfr import HandSolver
from engine.config import MAX_UNITS
from engine.cores import configured_threads
from engine.game_tree import compile_hand, utilities
from engine.hand_pass import SolverTensors
from engine.solve_progress import layer_log_line, nemesis_log_line
from engine.states import enumerate_states, state_index
from engine.layers import compile_game, icm_values
from engine.tournament import solve_tournament


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="./lab bench solver", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--units", type=int, default=45)
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--layer-units", type=int, default=8)
    parser.add_argument("--layer-players", type=int, default=3)
    parser.add_argument("--layer-gamma", type=float, default=1e-3,
                        help="gamma of the PI-CFR+ solve ($); gs08: --layer-units 45 --layer-players 3 --layer-gamma 1e-4")
    parser.add_argument("--sweep-units", type=int, default=20,
                        help="model-strategy sweeps (Harville cold, then FGS-1 warm) over every state of a 3-player "
                             "game with this many units; 0 skips")
    parser.add_argument("--checkpoint", type=Path, default=None,
                        help="checkpoint folder of the PI-CFR+ solve (resumes from it; finished layers are read back)")
    parser.add_argument("--verbose", action="store_true",
                        help="print the PI-CFR+ solve's progress: every outer iteration, states done, checkpoints")
    parser.add_argument("--no-kept-sums", action="store_true",
                        help="keep no depth-2 sums between outer iterations (DEPTH2_SUM_BUDGET 0), as the 45-unit "
                             "4- and 5-player layers run, to measure them on a smaller layer")
    parser.add_argument("--ex-post", action="store_true",
                        help="after the PI-CFR+ solve, time the ex post check (the nemesis' policy iteration) of its "
                             "equilibrium, layer by layer")
    parser.add_argument("--layer-sweeps", action="store_true",
                        help="after the PI-CFR+ solve, time the model sweeps over its game (Harville from the "
                             "equilibrium's regrets, Weitzman from Harville's, FGS-1 from Harville's); needs --checkpoint")
    args = parser.parse_args(argv)
    _check_arguments(parser, args)
    if args.no_kept_sums:
        tournament.DEPTH2_SUM_BUDGET = 0
    payouts = (50.0, 30.0, 20.0)
    t0 = time.perf_counter()
    tensors = bench_solver_tensors()
    print(f"tensors (sampled tables): {time.perf_counter() - t0:.1f} s; numba threads "
          f"{configured_threads()}")
    values = {m: icm_values(enumerate_states(args.units, m), payouts) for m in range(2, 6)}
    for n in range(2, 6):
        base, extra = divmod(args.units, n)
        stacks = tuple(base + (1 if i < extra else 0) for i in range(n))
        hand = compile_hand(stacks, payouts, state_index)
        U = utilities(hand, values)
        solver = HandSolver(hand, tensors)
        t0 = time.perf_counter()
        solver.iterate(U, 2)
        cold = (time.perf_counter() - t0) / 2
        t0 = time.perf_counter()
        solver.iterate(U, args.iterations)
        warm = (time.perf_counter() - t0) / args.iterations
        expl, _ = solver.exploitability(U)
        print(f"{n} players {stacks}: {len(hand.node_actor)} nodes, first iterations {cold * 1e3:.1f} ms, "
              f"mean of next {args.iterations} {warm * 1e3:.2f} ms/iteration, exploitability after "
              f"{solver.iterations} iterations {expl:.2e} $ (ICM successor values)")
    t0 = time.perf_counter()
    sol = solve_tournament(args.layer_units, args.layer_players, payouts[:args.layer_players], args.layer_gamma, tensors,
                           checkpoint=args.checkpoint, progress=_print_progress if args.verbose else None)
    its = sum(int(s.iterations.sum()) for s in sol.values())
    states = sum(len(s.stacks) for s in sol.values())
    print(f"PI-CFR+ of a {args.layer_players}-player {args.layer_units}-unit game to gamma {args.layer_gamma:g}: {states} states, "
          f"{its} CFR+ iterations, {time.perf_counter() - t0:.1f} s, outer iterations "
          f"{[len(s.log) for s in sol.values()]}, exact checks {[s.exact_checks for s in sol.values()]}, max "
          f"exploitability {max(float(s.exploitability.max()) for s in sol.values()):.2e} $; seconds per layer "
          f"{ {n: round(sum(e['wall_s'] for e in s.log), 1) for n, s in sol.items()} }")

    if args.ex_post:
        ex_post_figures("the equilibrium", {n: (s.hands, s.strategy, s.values) for n, s in sol.items()}, tensors)
    if args.layer_sweeps:
        layer_sweep_figures(args.layer_units, args.layer_players, payouts[:args.layer_players], args.layer_gamma,
                            tensors, args.checkpoint, args.ex_post)
    if args.sweep_units:
        model_sweep_figures(args.sweep_units, payouts, tensors)


def _check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Reject bad arguments before the tensors are built (exit 2, naming the argument and the rule)."""
    if args.units < 5:
        parser.error("--units must be at least 5 (one state per player count 2..5)")
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    if not 2 <= args.layer_players <= 5:
        parser.error("--layer-players must be 2 to 5")
    if args.layer_units < args.layer_players:
        parser.error("--layer-units must be at least --layer-players")
    if max(args.units, args.layer_units, args.sweep_units) > MAX_UNITS:
        parser.error(f"--units, --layer-units and --sweep-units must be at most {MAX_UNITS}")
    if not (args.layer_gamma > 0 and math.isfinite(args.layer_gamma)):
        parser.error("--layer-gamma must be a finite number > 0 $")
    if args.sweep_units and args.sweep_units < 3:
        parser.error("--sweep-units must be 0 (no sweeps) or at least 3")
    if args.checkpoint is not None and any(p.exists() and not p.is_dir()
                                           for p in (args.checkpoint, *args.checkpoint.parents)):
        parser.error(f"--checkpoint must be a folder: {args.checkpoint} is a file or lies under one")
    if args.layer_sweeps and args.checkpoint is None:
        parser.error("--layer-sweeps needs --checkpoint (the sweeps warm-start from the equilibrium's saved regrets)")


def _print_progress(event: dict) -> None:
    line = layer_log_line(event)
    if line is not None:
        print(f"  {line[1]}" if line[0] == "info" else f"  {line[0].upper()}: {line[1]}", flush=True)


def ex_post_figures(label: str, layers: dict, tensors: SolverTensors) -> None:
    """Time the ex post check of one strategy profile as the ``ex_post_<n>p`` assets and
    ``ex_post_models`` run it: ``layers[n] = (hands, strategies, the profile's own values)``.
    Prints, per layer, nemesis rounds, seconds, ms per state and the largest gain ($)."""
    from engine.best_response import ex_post

    t0 = time.perf_counter()
    result = ex_post(layers, tensors, progress=lambda event: print(f"  {nemesis_log_line(event)}", flush=True))
    for n, (W, rounds) in sorted(result.items()):
        wall = sum(e["wall_s"] for e in rounds)
        m = len(layers[n][0])
        print(f"ex post of {label}, {n}-player layer ({m} states): {len(rounds)} rounds, {wall:.1f} s, "
              f"{wall / m * 1e3:.1f} ms per state, largest gain {float((W - layers[n][2]).max()):.2e} $", flush=True)
    print(f"ex post of {label}: {time.perf_counter() - t0:.1f} s in all", flush=True)


def layer_sweep_figures(units: int, players: int, payouts: tuple[float, ...], gamma: float, tensors: SolverTensors,
                        checkpoint: Path, with_ex_post: bool = False) -> None:
    """Time the model sweeps over every state of the solved game as the ``model_strategies`` and
    ``fgs_strategies`` assets run them: Harville warm-started from the equilibrium's regrets (read
    from ``checkpoint``), Weitzman from Harville's, then FGS-1 continuing Harville's solvers. Prints each sweep's seconds,
    CFR+ iterations and ms per state for every layer (2 .. ``players``) and its largest
    exploitability ($, within ``gamma``); ``with_ex_post``: then the ex post check of each sweep's
    profile, as ``ex_post_models`` runs it."""
    from engine.model_strategies import equilibrium_solvers, model_values, profile_values, solve_sweep

    stacks, layers = compile_game(units, players, payouts)
    t0 = time.perf_counter()
    warm = equilibrium_solvers(layers, tensors, checkpoint)
    if warm is None:
        raise SystemExit(f"no equilibrium regrets for every layer in {checkpoint}")
    print(f"model sweeps, {units}-unit {players}-player game, gamma {gamma:g}: equilibrium regrets read in "
          f"{time.perf_counter() - t0:.1f} s")

    layer_wall: dict[tuple[str, int], float] = {}

    def progress(event: dict) -> None:
        if event["event"] == "sweep_layer":
            layer_wall[event["label"], event["players"]] = event["wall_s"]

    def report(sweep, start: str) -> None:
        per_layer = ", ".join(f"{n}p {len(layers[n])} states {layer_wall[sweep.label, n]:.1f} s "
                              f"{int(sweep.iterations[n].sum())} its "
                              f"{layer_wall[sweep.label, n] / len(layers[n]) * 1e3:.1f} ms/state"
                              for n in sorted(layers))
        expl = max(float(e.max()) for e in sweep.exploitability.values())
        print(f"  {sweep.label} from {start}: {sweep.wall_s:.1f} s ({per_layer}); max exploitability {expl:.2e} $",
              flush=True)
        if with_ex_post:
            V = profile_values(layers, sweep.order_probs)
            ex_post_figures(sweep.label, {n: (layers[n], sweep.strategies[n], V[n]) for n in layers}, tensors)

    harville = solve_sweep("harville", layers, model_values("harville", stacks, payouts), gamma, tensors, warm=warm,
                           consume_warm=True, progress=progress)
    del warm
    report(harville, "the equilibrium's regrets")
    weitzman = solve_sweep("weitzman", layers, model_values("weitzman", stacks, payouts), gamma, tensors,
                           warm=harville.solvers, keep_solvers=False, progress=progress)
    report(weitzman, "Harville's regrets")
    fgs1 = solve_sweep("FGS-1", layers, harville.hand_values, gamma, tensors, warm=harville.solvers, keep_solvers=False,
                       consume_warm=True, progress=progress)
    report(fgs1, "Harville's regrets (its solvers continued)")


def model_sweep_figures(units: int, payouts: tuple[float, ...], tensors: SolverTensors) -> None:
    """Time of a model-strategy sweep over all states (2 and 3 players), cold and warm-started."""
    from engine.model_strategies import model_values, solve_sweep

    stacks, layers = compile_game(units, 3, payouts)
    states_total = sum(len(v) for v in stacks.values())
    harville = model_values("harville", stacks, payouts)
    cold = solve_sweep("harville", layers, harville, 1e-4, tensors)
    its = sum(int(v.sum()) for v in cold.iterations.values())
    print(f"model sweep, {units}-unit 3-player game ({states_total} states, gamma 1e-4): Harville cold "
          f"{cold.wall_s:.1f} s, {its} CFR+ iterations ({cold.wall_s / states_total * 1e3:.0f} ms per state)")
    warm = solve_sweep("FGS-1", layers, cold.hand_values, 1e-4, tensors, warm=cold.solvers)
    its = sum(int(v.sum()) for v in warm.iterations.values())
    print(f"  FGS-1 warm-started from the Harville sweep: {warm.wall_s:.1f} s, {its} CFR+ iterations")
    roberts = solve_sweep("roberts", layers, model_values("roberts", stacks, payouts), 1e-4, tensors, warm=cold.solvers)
    its = sum(int(v.sum()) for v in roberts.iterations.values())
    print(f"  Roberts warm-started from the Harville sweep: {roberts.wall_s:.1f} s, {its} CFR+ iterations")


if __name__ == "__main__":
    run_benchmark(main, "./lab bench solver")
