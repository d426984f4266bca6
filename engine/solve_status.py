"""Where a layer solve stands, read from its checkpoint folder without loading the solvers.

A `thesis` build runs for a day and more, through interrupts and restarts; its log says where it
is only while it runs. The checkpoints say it at any time: ``layer{n}.npz`` holds the layer's log
and outer-iteration count (a few small members of a file of up to 15 GB, read without touching
the rest), the block files of the outer iteration in progress hold the states finished in it,
and the folder's ``.lock`` says which process is solving (see
:func:`engine.checkpoint.folder_lock`). Nothing here writes or locks anything, so it is safe to
run beside the build.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.checkpoint import layer_path, read_log, reading_checkpoint, step_blocks


@dataclass(frozen=True)
class LayerStatus:
    """One layer's solve as its checkpoints record it.

    ``outer_done``: outer iterations finished and saved; ``last``: the log entry of the last of
    them (``LOG_FIELDS``: target and max exploitability in $, wall_s in seconds), None before the
    first; ``max_exploitability``: $, the largest measured exploitability over the layer's states
    once it has finished (None before); ``current_states``: states finished in the outer
    iteration in progress (or measured, once ``settled``), kept in its block files;
    ``current_elapsed_s``: seconds of that work kept; ``current_saved_at``: when its last block
    was written (POSIX time; None without blocks)."""

    players: int
    states: int
    outer_done: int
    finished: bool
    settled: bool
    last: dict | None
    max_exploitability: float | None
    current_states: int
    current_elapsed_s: float
    current_saved_at: float | None

    @property
    def started(self) -> bool:
        return self.outer_done > 0 or self.current_states > 0


def layer_status(folder: Path, n: int, states: int) -> LayerStatus:
    """The ``n``-player layer's status (``states`` in the layer) from the checkpoints in ``folder``.

    Blocks of any other step than the one in progress (left by an interrupt between a layer save
    and their deletion, which the next resume deletes) are not counted."""
    outer, finished, settled, last, worst = 0, False, False, None, None
    path = layer_path(folder, n)
    if path.exists():
        with reading_checkpoint(path), np.load(path) as data:
            outer = int(data["outer"])
            finished = bool(data["finished"]) if "finished" in data else False
            settled = bool(data["settled"]) if "settled" in data else False
            last = (read_log(data) or [None])[-1]
            if finished and "bound" in data:
                worst = float(np.max(data["bound"])) if len(data["bound"]) else 0.0
    # (a layer that finished above gamma is reopened by the next build: its blocks come before
    # the layer file says it is unfinished again)
    step = "measure" if settled and not finished else "outer"
    done, elapsed, saved_at = 0, 0.0, None
    for k, _, block in step_blocks(folder, f"layer{n}", step):
        if k != outer:
            continue
        try:
            with reading_checkpoint(block), np.load(block) as data:
                done += len(data["states"])
                if "elapsed" in data:
                    elapsed = max(elapsed, float(data["elapsed"]))
            saved_at = max(saved_at or 0.0, block.stat().st_mtime)
        except FileNotFoundError:  # deleted meanwhile by the running solve's layer save
            continue
    return LayerStatus(players=n, states=states, outer_done=outer, finished=finished, settled=settled, last=last,
                       max_exploitability=worst, current_states=done, current_elapsed_s=elapsed,
                       current_saved_at=saved_at)


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
        return named if named is not None and _alive(named) else None
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


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
