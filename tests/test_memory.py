"""engine/memory.py: the memory a game's solve is projected to need, this machine's memory, the
refusal of a game that would not fit, and records written into the memory they replace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import engine.memory as memory
from engine.memory import into_kept, memory_shortfall, physical_memory_gib, projected_solve_gib


def test_the_thesis_games_projection_is_what_its_build_held():
    """The per-(state, decision node) figure was measured on the `thesis` build: 19.3 GiB at most for
    its 45-unit 5-player layer (135,751 states of 24 decision nodes)."""
    assert projected_solve_gib(5, 45) == pytest.approx(19.3, abs=0.05)
    assert projected_solve_gib(3, 45) == pytest.approx(19.3 * 946 * 6 / (135_751 * 24), rel=0.01)  # per state and node


@pytest.mark.skipif(not Path("/proc/meminfo").exists(), reason="needs Linux's /proc/meminfo")
def test_physical_memory_is_the_kernels_total():
    """Against the kernel's own count (MemTotal leaves out the few per cent it reserves at boot)."""
    total_kib = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                     if line.startswith("MemTotal:"))
    assert 0.99 < physical_memory_gib() / (total_kib / 2**20) < 1.1


def test_a_game_is_refused_only_above_this_machines_memory(monkeypatch):
    need = projected_solve_gib(4, 30)
    monkeypatch.setattr(memory, "physical_memory_gib", lambda: need)
    assert memory_shortfall(4, 30) is None  # (just fits)
    monkeypatch.setattr(memory, "physical_memory_gib", lambda: need * 0.99)
    assert memory_shortfall(4, 30) == (f"units: a 4-player game of 30 units has 3,654 4-player states, whose solve "
                                       f"would hold about {need:,.1f} GiB; this machine has {need * 0.99:.1f} GiB "
                                       f"(choose fewer units or players)")
    monkeypatch.setattr(memory, "physical_memory_gib", lambda: None)  # an OS that does not say
    assert memory_shortfall(4, 30) is None


def test_free_memory_is_released_only_where_the_c_library_can(monkeypatch):
    calls = []
    monkeypatch.setattr(memory, "_malloc_trim", lambda: calls.append)
    assert memory.release_free_memory() is True and calls == [0]
    monkeypatch.setattr(memory, "_malloc_trim", lambda: None)  # (macOS, musl)
    assert memory.release_free_memory() is False


def test_a_record_goes_into_the_memory_it_replaces_only_where_it_fits():
    kept, new = np.zeros(5), np.arange(5.0)
    out = into_kept(kept, new)
    assert out is kept and np.array_equal(kept, new) and not np.shares_memory(out, new)
    for other in (np.zeros(4), np.zeros(5, dtype=np.float32), None):  # another shape or dtype, or nothing kept
        out = into_kept(other, new)
        assert out is not other and out.dtype == new.dtype and np.array_equal(out, new)
        assert not np.shares_memory(out, new)
    assert into_kept(new, new) is new
