"""The perf symbol map names numba kernels where perf can attribute samples to them."""

import numba as nb
import numpy as np

from engine.perf_map import write_perf_map


@nb.njit(cache=False)
def _doubled_sum_for_the_perf_map(x):
    s = 0.0
    for v in x:
        s += 2.0 * v
    return s


def test_perf_map_lists_a_freshly_compiled_kernel_with_disjoint_ranges(tmp_path):
    assert _doubled_sum_for_the_perf_map(np.arange(4.0)) == 12.0
    path = tmp_path / "perf.map"
    named = write_perf_map(path)
    entries = [line.split(" ", 2) for line in path.read_text().splitlines()]
    assert named == len(entries) > 0
    assert any("_doubled_sum_for_the_perf_map" in name for _, _, name in entries)
    starts = [int(a, 16) for a, _, _ in entries]
    sizes = [int(s, 16) for _, s, _ in entries]
    assert all(s > 0 for s in sizes)
    # sorted by address, each function's range ends where the next begins at the latest
    assert all(starts[i] + sizes[i] <= starts[i + 1] for i in range(len(starts) - 1))
