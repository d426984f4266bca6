"""The benchmarks' showdown tensors: from sampled tables (16 boards per pair matchup, 4 per triple,
seed 1), made once a process.

The cost of a CFR+ iteration or of a simulated hand does not depend on how the tables were made, so
the benchmarks skip the exact tables' hours of rollouts. A process that runs a benchmark several
times (a test runs `bench solver` three times) samples the tables once. The cache holds the tensors
(about 0.7 GB for the solver's) until the process ends or :func:`release` is called.
"""

from functools import lru_cache

from engine.hand_pass import SolverTensors
from engine.rollout import build_pair_table, build_triple_table
from engine.showdown import ShowdownTensors, showdown_tensors


def _sampled_showdown() -> ShowdownTensors:
    return showdown_tensors(build_pair_table("sampled", samples=16, seed=1),
                            build_triple_table("sampled", samples=4, seed=1))


@lru_cache(maxsize=1)
def bench_showdown() -> ShowdownTensors:
    """Showdown tensors (probabilities) of the benchmarks' sampled tables (the simulation's)."""
    return _sampled_showdown()


@lru_cache(maxsize=1)
def bench_solver_tensors() -> SolverTensors:
    """The solver's tensors of the same tables (read only, shared by every solve of the process);
    the showdown tensors they are made from are not kept."""
    return SolverTensors(_sampled_showdown())


def release() -> None:
    """Drop the cached tensors (their memory goes back once no solver holds them)."""
    bench_showdown.cache_clear()
    bench_solver_tensors.cache_clear()
