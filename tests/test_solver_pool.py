"""engine/solver_pool.py: the threads of the long loops stop taking work when they should. An
interrupted layer solve must not go on computing its queued states for minutes (with one item per
state, thousands of them) before the build can end."""

from __future__ import annotations

import time

from engine.solver_pool import SolverPool


def _slow(started: list[int]):
    def fn(x: int) -> int:
        started.append(x)
        time.sleep(0.2)
        return x
    return fn


def test_the_items_not_started_are_dropped_when_the_consumer_stops():
    pool, started = SolverPool(2, None), []  # (a workspace is made only for a loop that asks for one)
    done = pool.imap_done(_slow(started), (x for x in range(40)), chunk=1)  # (any iterable of items)
    first = next(done)
    done.close()  # as a loop that stops early, or raises
    time.sleep(0.5)
    assert first[0] == first[1] and len(started) <= 6  # the running ones only, not 4 s of queued work
    pool.close()


def test_closing_the_pool_waits_for_the_running_items_only():
    pool, started = SolverPool(2, None), []
    done = pool.imap_done(_slow(started), list(range(40)), chunk=1)
    next(done)
    t0 = time.perf_counter()
    pool.close()  # the generator still open, as after an interrupt in the consumer
    assert time.perf_counter() - t0 < 1.0 and len(started) <= 6  # not the 4 s the queued items take
    done.close()
