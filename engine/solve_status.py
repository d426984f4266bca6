"""Where a game's long steps stand, read from their checkpoint files without loading any solver.

A `thesis` build runs for a day and more, through interrupts and restarts; its log says where it
is only while it runs. The checkpoints say it at any time. A layer solve's ``layer{n}.npz`` holds
the layer's log and outer-iteration count (a few small members of a file of up to 15 GB, read
without touching the rest); the block files of the step in progress hold the states finished in
it, as do those of a profile's hand-outcome pass (:mod:`engine.profile_outcomes`) and of a nemesis
check's round (:mod:`engine.best_response`, whose ``nemesis{n}.npz`` logs its finished rounds); a
folder's ``.lock`` says which process is solving (see :func:`engine.checkpoint.folder_lock`).
Nothing here writes or locks anything, so it is safe to run beside the build.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.atomic_files import process_running
from engine.best_response import round_blocks, rounds_saved
from engine.checkpoint import layer_path, read_log, reading_checkpoint, step_blocks
from engine.profile_outcomes import outcome_blocks
from engine.sweep_checkpoint import layer_saved_at, part_paths, saved_layer_wall_s
from engine.target_ladder import values_cycling


@dataclass(frozen=True)
class BlocksKept:
    """The work of a step in progress that its block checkpoints keep: ``states`` finished in it,
    ``elapsed_s`` seconds of work (all its runs together), ``saved_at`` when its last block was
    written (POSIX time; None without blocks)."""

    states: int = 0
    elapsed_s: float = 0.0
    saved_at: float | None = None


def blocks_kept(paths: Iterable[Path], seconds: str = "elapsed") -> BlocksKept:
    """What the block files ``paths`` of one step hold (each has its ``states`` and, but for the
    oldest layer blocks, the step's seconds when it was saved, in its member ``seconds``: a model
    sweep's parts call it ``wall_s``). A block deleted by the running work meanwhile (its step
    saved whole) is passed over."""
    done, elapsed, saved_at = 0, 0.0, None
    for block in paths:
        try:
            when = block.stat().st_mtime
            with reading_checkpoint(block), np.load(block) as data:
                states = len(data["states"])
                took = float(data[seconds]) if seconds in data else 0.0
        except FileNotFoundError:
            continue
        done, elapsed, saved_at = done + states, max(elapsed, took), max(saved_at or 0.0, when)
    return BlocksKept(done, elapsed, saved_at)


@dataclass(frozen=True)
class LayerStatus:
    """One layer's solve as its checkpoints record it.

    ``outer_done``: outer iterations finished and saved; ``last``: the log entry of the last of
    them (``LOG_FIELDS``: target and max exploitability in $, wall_s in seconds), None before the
    first; ``max_exploitability``: $, the largest measured exploitability over the layer's states
    once it has finished (None before); ``current``: the states finished in the outer iteration in
    progress (or measured, once ``settled``), kept in its block files; ``saved_at``: when
    ``layer{n}.npz`` was last written (POSIX time; None before), which for a finished layer is
    when its solution was. ``cycled``: the layer's values cycled instead of settling, and its solve
    stopped (:func:`engine.target_ladder.values_cycling`)."""

    players: int
    states: int
    outer_done: int
    finished: bool
    settled: bool
    last: dict | None
    max_exploitability: float | None
    current: BlocksKept
    saved_at: float | None = None
    cycled: bool = False

    @property
    def started(self) -> bool:
        return self.outer_done > 0 or self.current.states > 0


def layer_status(folder: Path, n: int, states: int, open_prizes: float) -> LayerStatus:
    """The ``n``-player layer's status (``states`` in the layer) from the checkpoints in ``folder``;
    ``open_prizes`` ($, the prizes its players still play for) tells whether its values cycled.

    Blocks of any other step than the one in progress (left by an interrupt between a layer save
    and their deletion, which the next resume deletes) are not counted."""
    outer, finished, settled, last, worst, saved_at, cycled = 0, False, False, None, None, None, False
    path = layer_path(folder, n)
    if path.exists():
        with reading_checkpoint(path), np.load(path) as data:
            outer = int(data["outer"])
            finished = bool(data["finished"]) if "finished" in data else False
            settled = bool(data["settled"]) if "settled" in data else False
            log = read_log(data)
            last = (log or [None])[-1]
            cycled = values_cycling(log, open_prizes)
            if finished and "bound" in data:
                worst = float(np.max(data["bound"])) if len(data["bound"]) else 0.0
        saved_at = path.stat().st_mtime
    # (a layer that finished above gamma is reopened by the next build: its blocks come before
    # the layer file says it is unfinished again)
    step = "measure" if settled and not finished else "outer"
    current = blocks_kept(block for k, _, block in step_blocks(folder, f"layer{n}", step) if k == outer)
    return LayerStatus(players=n, states=states, outer_done=outer, finished=finished, settled=settled, last=last,
                       max_exploitability=worst, current=current, saved_at=saved_at, cycled=cycled)


def outcomes_status(folder: Path, n: int) -> BlocksKept:
    """The states of the n-player layer whose hand outcomes a profile's pass (finishing
    probabilities, a model's ex post check) has kept in ``folder``, its work folder."""
    return blocks_kept(outcome_blocks(folder, n))


@dataclass(frozen=True)
class NemesisStatus:
    """An n-player layer's nemesis check (ex post) as its work folder records it: the log of its
    finished ``rounds`` (``bellman_residual`` $, ``deviating_rows``, ``wall_s`` s), whether it has
    ``converged``, and the states of the round in progress that its blocks keep."""

    rounds: list[dict]
    converged: bool
    current: BlocksKept


def nemesis_status(folder: Path, n: int) -> NemesisStatus:
    """The nemesis check of the n-player layer whose work folder is ``folder``."""
    saved = rounds_saved(folder, n)
    rounds, converged = saved if saved is not None else ([], False)
    now = len(rounds) + 1
    return NemesisStatus(rounds, converged,
                         blocks_kept(path for k, _, path in round_blocks(folder, n) if k == now))


def lock_holder(folder: Path) -> int | None:
    """The process holding ``folder``'s lock (a solve or build running in it), or None.

    Read from Linux's ``/proc/locks`` (the flock on ``folder/.lock``'s inode), so that asking never
    takes the lock itself: a build starting at that moment would find it taken and stop. A build
    in another PID namespace (another container) is not listed there. Where there is no
    ``/proc/locks`` (not Linux) this is a guess: the process the lock file names, while it is
    alive (the file keeps the last holder's number after the lock is released)."""
    lock = folder / ".lock"
    try:
        text = lock.read_bytes().strip()
        info = lock.stat()
    except OSError:
        return None
    named = int(text) if text.isascii() and text.isdigit() else None
    try:
        table = Path("/proc/locks").read_text()
    except OSError:
        return named if named is not None and process_running(named) else None
    device = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}".lower()
    for line in table.splitlines():
        fields = line.split()  # "1: FLOCK  ADVISORY  WRITE 1072 fe:00:2188523 0 EOF"
        if len(fields) < 6 or fields[1] != "FLOCK" or not fields[4].isdigit():
            continue
        pid, where = int(fields[4]), fields[5].lower()
        # the same device and inode; or the same inode held by the process the file names (some
        # file systems, btrfs subvolumes, show another device number there than stat() gives)
        if where == device or (where.rsplit(":", 1)[-1] == str(info.st_ino) and pid == named):
            return pid
    return None


@dataclass(frozen=True)
class SweepStatus:
    """A model sweep (:mod:`engine.sweep_checkpoint`) as its checkpoint folder records it: the
    layers saved (player counts, in order) with their seconds, when the last was saved (POSIX
    time; None before), and the layer in progress (None once every layer is saved) with the
    states its parts keep."""

    label: str
    saved: dict[int, float]
    saved_at: float | None
    in_progress: int | None
    current: BlocksKept


def sweep_status(folder: Path, label: str, players: list[int]) -> SweepStatus:
    """Sweep ``label``'s layers (``players``, in the order it solves them) in ``folder``."""
    saved, saved_at = {}, None
    for n in players:
        when = layer_saved_at(folder, label, n)
        if when is None:
            return SweepStatus(label, saved, saved_at, n, blocks_kept(part_paths(folder, label, n), "wall_s"))
        saved[n] = saved_layer_wall_s(folder, label, n)
        saved_at = max(saved_at or 0.0, when)
    return SweepStatus(label, saved, saved_at, None, BlocksKept())
