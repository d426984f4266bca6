"""The benchmarks' showdown tensors: from sampled tables (16 boards per pair matchup, 4 per triple,
seed 1), made once a process.

The cost of a CFR+ iteration or of a simulated hand does not depend on how the tables were made, so
the benchmarks skip the exact tables' hours of rollouts. A process that runs several benchmarks
(the test suite runs `bench solver` three times in one test) samples the tables once.
"""

from functools import lru_cache

from engine.hand_pass import SolverTensors
from engine.rollout import build_pair_table, build_triple_table
from engine.showdown import ShowdownTensors, showdown_tensors


@lru_cache(maxsize=1)
def bench_showdown() -> ShowdownTensors:
    """Showdown tensors (probabilities) of the benchmarks' sampled tables."""
    return showdown_tensors(build_pair_table("sampled", samples=16, seed=1),
                            build_triple_table("sampled", samples=4, seed=1))


@lru_cache(maxsize=1)
def bench_solver_tensors() -> SolverTensors:
    """The solver's tensors of :func:`bench_showdown` (read only, shared by every solve of the process)."""
    return SolverTensors(bench_showdown())
