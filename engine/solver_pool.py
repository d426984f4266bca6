"""Running one hand at a time on every core: the thread pool of the heavy loops and their order.

The numba kernels release the GIL, so a pool of threads, each with its own workspace, runs the
states of a layer in parallel: a layer solve's outer iteration, a model sweep, a nemesis round, a
profile's hand outcomes. The states go out heaviest first so that no thread idles at the end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

from engine.cores import configured_threads
from engine.game_tree import CompiledHand, pass_cost
from engine.hand_pass import Workspace
from engine.memory import release_free_memory

Item = TypeVar("Item")
Result = TypeVar("Result")


class SolverPool:
    """Threads with one workspace each (the numba kernels release the GIL); ``threads=None`` means
    NUMBA_NUM_THREADS (all cores unless set).

    Every heavy loop (a layer solve, a model sweep, a nemesis, a profile's hand outcomes) starts by
    making one, so it first hands back to the system what earlier work freed
    (:func:`~engine.memory.release_free_memory`): the assets run in one process, and glibc kept a
    finished layer's solvers resident after they were dropped (the 45-unit game's 4-player layer
    read back from its checkpoint: 0.93 GiB, of which 0.91 stayed until the trim; its 5-player
    layer holds 13.9 GiB), where the next loop's threads would not reuse it."""

    def __init__(self, threads: int | None, hand: CompiledHand):
        release_free_memory()
        self.threads = max(1, threads or configured_threads())
        self.local = threading.local()
        self.template = hand
        self.executor = ThreadPoolExecutor(self.threads)

    def workspace(self) -> Workspace:
        ws = getattr(self.local, "ws", None)
        if ws is None:
            ws = self.local.ws = Workspace.for_hand(self.template)
        return ws

    def imap_done(self, fn: Callable[[Item], Result], items: Iterable[Item],
                  chunk: int = 8) -> Iterator[tuple[Item, Result]]:
        """fn over items on the threads: ``(item, result)`` pairs, yielded as the threads finish them.

        In the order they finish, not the items' order: the long loops hand each finished state to
        a :class:`~engine.checkpoint.BlockSaver`, and in the items' order every state finished
        after a slow one waited for it, unsaved, while the other threads went on (with 2 threads
        and one state at a stalled hand's 80,000-iteration cap, minutes of the other thread's
        work; with 16, fifteen threads'), which an interrupt then lost.
        Items go to the threads in chunks of up to ``chunk`` (fewer when there are too few items
        to keep every thread busy), in the items' order: each handed-out task costs the main
        thread GIL time, which a layer solve, with one item per state and outer iteration,
        otherwise spends by the ten thousands. A chunk's pairs are yielded when the whole chunk
        is done.
        """
        items = list(items)
        size = max(1, min(chunk, len(items) // (4 * self.threads)))
        chunks = [items[i:i + size] for i in range(0, len(items), size)]
        futures = [self.executor.submit(lambda part: [(x, fn(x)) for x in part], part) for part in chunks]
        try:
            for future in as_completed(futures):
                yield from future.result()
        finally:  # (a consumer that stops early, or an error: the chunks not started are dropped)
            for future in futures:
                future.cancel()

    def close(self) -> None:
        """Wait for the running items only: after an interrupt the queued ones are dropped."""
        self.executor.shutdown(cancel_futures=True)


def heaviest_first(hands: list[CompiledHand]) -> list[int]:
    """State indices by decreasing cost of a hand pass (:func:`~engine.game_tree.pass_cost`).

    Handing the two threads the expensive hands first keeps one from idling at the end of a
    layer while the other finishes a dense 5-player hand (longest-processing-time order).
    """
    cost = [pass_cost(h) for h in hands]
    return sorted(range(len(hands)), key=lambda s: -cost[s])


def largest_hand(hands: list[CompiledHand]) -> CompiledHand:
    """The hand needing the biggest workspace (most nodes, terminals, depth-2 nodes)."""
    return max(hands, key=lambda h: (len(h.node_actor), len(h.term_kind), int((h.node_depth == 2).sum())))
