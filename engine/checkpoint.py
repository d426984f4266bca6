"""Checkpoints of a layer solve: a killed solve resumes where it stopped, on the same path.

Three kinds of file in the checkpoint folder, each written to a temporary name and renamed into
place (a file is complete or absent, never half written):

- ``layer{n}.npz`` after every outer iteration: the layer values, the log, and every state's
  record — its solver (regrets, predictions, certified profile, its gains, iteration count,
  decision margins) and what the layer solve knows about it (gains and outcome probabilities when
  last checked, which outer iteration's values that was against, the drift of its utilities
  since, its exploitability bound, whether it is held at the CFR+ iteration cap). Also the
  values of the outer iterations that records refer to, and whether the layer has finished.
- ``layer{n}.outer{k}.block{b}.npz`` within outer iteration k, every few minutes: the records of
  the states finished since the last block, with the CFR+ iterations each spent. A
  resumed outer iteration takes those states as done (a 5-player outer iteration is hours of
  work; a 4-player one at 45 units 10–20 minutes). Blocks of an outer iteration are deleted once
  its ``layer{n}.npz`` is written.
- ``layer{n}.measure{k}.block{b}.npz`` once the layer has settled (after k outer iterations),
  every few minutes of its final exact measurement of the states skipped or screened last: the
  exploitability of each state measured (the 45-unit 5-player layer's measurement took about 23
  minutes). Deleted with the outer iterations' blocks when ``layer{n}.npz`` is written.

A state's work depends only on its own record, its warm-start source's and the layer values, so
a resumed solve takes the same path as one never interrupted; the one exception is the depth-2
jam chances a layer keeps when they fit its memory budget (a cache updated incrementally, not
saved: rebuilt from scratch they differ in the last bits).

Arrays are streamed state by state under one ``.npy`` header each, so saving copies none of the
solvers' memory (the 45-unit 5-player layer's solvers hold about 14 GiB). Files written before
the state records existed still load: their states are simply checked afresh.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.atomic_files import atomic_path, write_text_atomic
from engine.cfr import NC, REGRET_ARRAYS, HandSolver

LOG_FIELDS = {"players": int, "outer_iteration": int, "target": float, "states_updated": int, "states_skipped": int,
              "states_screened": int, "states_checked": int, "cfr_iterations": int, "max_delta_v": float,
              "max_exploitability": float,
              "wall_s": float}
"""Fields of a layer's per-outer-iteration log entry (the ``solve_log`` table), in order, with their types."""


class FolderBusy(RuntimeError):
    """A checkpoint folder another process is working in."""


@contextmanager
def folder_lock(folder: Path, what: str) -> Iterator[None]:
    """Hold ``folder`` for this process while ``what`` works in it (an exclusive ``flock`` on
    ``folder/.lock``, released when the block ends or the process dies): two processes writing the
    same checkpoints would overwrite each other's temporary files and block numbers."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / ".lock"
    with open(path, "a+") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.seek(0)
            holder = f.read().strip() or "another process"
            raise FolderBusy(f"{what} is already running in {folder} (process {holder}); wait for it to end or "
                             f"stop it, then run this again") from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


class DamagedCheckpoint(ValueError):
    """A checkpoint file that cannot be read back (empty or cut short on disk)."""


@contextmanager
def reading_checkpoint(path: Path) -> Iterator[None]:
    """Name a damaged checkpoint file, and what to do about it, instead of a zip or numpy traceback
    at every restart. (Files are written complete or not at all, see :mod:`engine.atomic_files`;
    this is for a disk that lost or changed their bytes: reading a member to its end checks the
    zip's CRC-32 of it, which a changed byte fails. Bytes that are not a zip archive at all, which
    numpy takes for a pickle it refuses or for a lone array, fail in numpy or in the reader: any
    error while the file is no zip archive is named the same way.)"""
    try:
        yield
    except (zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise _damaged(path, str(exc)) from None
    except DamagedCheckpoint:
        raise
    except Exception:
        if path.is_file() and not zipfile.is_zipfile(path):
            raise _damaged(path, "not a zip archive") from None  # (numpy's own words advise unpickling it)
        raise


def _damaged(path: Path, why: str) -> DamagedCheckpoint:
    return DamagedCheckpoint(f"checkpoint {path} cannot be read back ({why}); delete it to redo the work it held, "
                             f"then run the same command again")


@dataclass
class Ledger:
    """What a layer solve knows about each of its m states between outer iterations.

    ``gains`` ($ per player) and ``order_probs`` are those of the state's profile when last
    checked, against the values of outer iteration ``checked_at`` (−1: never; ``V_at`` holds
    those values while a state refers to them); ``drift`` ($) bounds how far its utilities moved
    since; ``bound`` ($) is its exploitability or a bound on it; ``skipped`` / ``screened`` mark
    the states of the last outer iteration that were not checked exactly, ``checked`` those whose
    profile it measured exactly before deciding whether to solve them again. ``held_target`` and
    ``held_exploitability`` ($; inf and 0 for none) say at which target a state's last solve ran
    out of CFR+ iterations and how exploitable it was left: the layer does not solve it again at
    that target unless it has become more exploitable (see ``solve_layer``). ``held_retries``
    counts the times the layer, settled at gamma with such states above gamma, tried them again
    with a larger cap, and ``held_retries_allowed`` how many it may (see
    :data:`engine.tournament.HELD_RETRIES`). ``settled``: the layer's outer iterations are over
    (settled at gamma, no retry left to make); only the final exact measurement is left.
    """

    bound: np.ndarray
    gains: np.ndarray
    drift: np.ndarray
    checked_at: np.ndarray
    skipped: np.ndarray
    screened: np.ndarray
    checked: np.ndarray
    order_probs: list[np.ndarray]
    V_at: dict[int, np.ndarray]
    held_target: np.ndarray
    held_exploitability: np.ndarray
    held_retries: int = 0
    held_retries_allowed: int = 0
    settled: bool = False

    @classmethod
    def empty(cls, terminals: list[int], n: int) -> "Ledger":
        m = len(terminals)
        return cls(bound=np.zeros(m), gains=np.full((m, n), np.inf), drift=np.zeros(m),
                   checked_at=np.full(m, -1, np.int64), skipped=np.zeros(m, bool), screened=np.zeros(m, bool),
                   checked=np.zeros(m, bool), order_probs=[np.zeros((t, 6)) for t in terminals], V_at={},
                   held_target=np.full(m, np.inf), held_exploitability=np.zeros(m))


class BlockSaver:
    """Hands the states a long pass finishes to ``save`` in blocks, one every ``every`` seconds.

    Every long pass (a layer's outer iteration and its final measurement, a model sweep, the hand
    outcomes, a nemesis round) keeps its finished states this way, so an interrupt loses at most
    ``every`` seconds of its work. ``save(states)`` writes one block of the states finished since
    the last; with ``save=None`` (no checkpoint folder) nothing is written. The clock restarts
    after each save, so a slow save does not make the next block due at once."""

    def __init__(self, save: Callable[[list[int]], None] | None, every: float) -> None:
        self.save, self.every = save, every
        self.pending: list[int] = []  # finished since the last block
        self.last = time.perf_counter()

    def add(self, state: int) -> bool:
        """``state`` is finished; a block is saved if one is due. True when one was."""
        if self.save is None:  # nothing to keep the states for
            return False
        self.pending.append(state)
        if time.perf_counter() - self.last >= self.every:
            return self.flush()
        return False

    def flush(self) -> bool:
        """Save the states finished since the last block, if any. True when a block was saved."""
        if self.save is None or not self.pending:
            return False
        self.save(self.pending)
        self.pending, self.last = [], time.perf_counter()
        return True


def layer_path(folder: Path, n: int) -> Path:
    """The layer's checkpoint after its last finished outer iteration."""
    return folder / f"layer{n}.npz"


def step_blocks(folder: Path, stem: str, step: str) -> list[tuple[int, int, Path]]:
    """(step, block number, path) of the block files ``{stem}.{step}{k}.block{b}.npz`` in
    ``folder``, in order: the states a long loop finished within its step ``k`` (a layer solve's
    outer iteration, a nemesis round) before an interrupt."""
    found = []
    for p in folder.glob(f"{stem}.{step}*.block*.npz"):
        match = re.fullmatch(rf"{re.escape(stem)}\.{step}(\d+)\.block(\d+)\.npz", p.name)
        if match:
            found.append((int(match[1]), int(match[2]), p))
    return sorted(found)


def blocks_of_step(folder: Path, stem: str, step: str, k: int) -> list[Path]:
    """The block files of step ``k``, in order; those of other steps (left by an interrupt between
    the save of a whole step and the deletion of its blocks) are deleted."""
    kept = []
    for j, _, path in step_blocks(folder, stem, step):
        if j == k:
            kept.append(path)
        else:
            path.unlink()
    return kept


def next_block_path(folder: Path, stem: str, step: str, k: int) -> Path:
    """Where step ``k``'s next block goes: numbered after its blocks already saved."""
    number = max((b for j, b, _ in step_blocks(folder, stem, step) if j == k), default=-1) + 1
    return folder / f"{stem}.{step}{k}.block{number:05d}.npz"


def block_paths(folder: Path, n: int) -> list[tuple[int, int, Path]]:
    """(outer iteration, block number, path) of the layer's block files, in order."""
    return step_blocks(folder, f"layer{n}", "outer")


def write_npz(path: Path, small: dict[str, np.ndarray], streams: dict[str, tuple[np.dtype, int, list]],
              compress: bool = False) -> None:
    """An .npz of ``small`` arrays and of streamed (rows, width) arrays written piece by piece
    (deflated with ``compress``: for files kept long, e.g. strategies that are mostly exact 0 and 1)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    with atomic_path(path) as tmp, \
            zipfile.ZipFile(tmp, "w", mode, allowZip64=True, compresslevel=1 if compress else None) as zf:
        for name, array in small.items():
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array(f, array, allow_pickle=False)
        for name, (dtype, width, pieces) in streams.items():
            rows = sum(len(p) for p in pieces)
            header = {"descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
                      "shape": (rows, width)}
            with zf.open(name + ".npy", "w", force_zip64=True) as f:
                np.lib.format.write_array_header_1_0(f, header)
                for p in pieces:
                    f.write(np.ascontiguousarray(p, dtype=dtype).tobytes())


def solver_records(states: np.ndarray, solvers: list[HandSolver], ledger: Ledger | None) -> tuple[dict, dict]:
    """The small arrays and streams holding the records of ``states``."""
    chosen = [solvers[s] for s in states]
    n = chosen[0].hand.n_players if chosen else 0
    small = {"states": states.astype(np.int64),
             "sizes": np.array([len(s.hand.node_actor) for s in chosen], np.int64),
             "iterations": np.array([s.iterations for s in chosen], np.int64),
             "regret_weight": np.array([s.regret_weight for s in chosen], np.float64),
             "has_solution": np.array([s.solution is not None for s in chosen]),
             "solver_gains": np.array([s.gains if s.gains is not None else np.full(n, np.nan) for s in chosen],
                                      np.float64).reshape(len(chosen), n),
             "has_margins": np.array([s.margins is not None for s in chosen])}
    regret_dtype = chosen[0].regret_jam.dtype if chosen else np.float64
    streams = {name: (regret_dtype, NC, [getattr(s, name) for s in chosen]) for name in REGRET_ARRAYS}
    streams["solution"] = (np.float64, NC, [s.strategy() for s in chosen])
    with_margins = [s for s in chosen if s.margins is not None]
    streams["margin_advantage"] = (np.float32, NC, [s.margins[0] for s in with_margins])
    streams["margin_mass"] = (np.float32, NC, [s.margins[1] for s in with_margins])
    if ledger is not None:
        small.update(bound=ledger.bound[states], gains=ledger.gains[states], drift=ledger.drift[states],
                     checked_at=ledger.checked_at[states], skipped=ledger.skipped[states],
                     screened=ledger.screened[states], checked=ledger.checked[states],
                     held_target=ledger.held_target[states],
                     held_exploitability=ledger.held_exploitability[states],
                     terminals=np.array([len(ledger.order_probs[s]) for s in states], np.int64))
        streams["order_probs"] = (np.float64, 6, [ledger.order_probs[s] for s in states])
    return small, streams


def lower_fingerprint(lower_values: Mapping[int, np.ndarray]) -> str:
    """SHA-1 of the smaller layers' values a layer is solved against: its checkpoint keeps it, so a
    checkpoint is not taken up against other values (a smaller layer solved again differently).
    Values are rounded to 1e-9 $ first (and -0 made 0), so that the same values read back another
    way (from the warehouse, from a checkpoint) give the same fingerprint."""
    digest = hashlib.sha1()
    for k in sorted(lower_values):
        digest.update(f"{k}:".encode())
        digest.update((np.round(np.asarray(lower_values[k], np.float64), 9) + 0.0).tobytes())
    return digest.hexdigest()


def check_lower_fingerprint(folder: Path, n: int, expected: str) -> None:
    """Refuse the layer's checkpoints (``layer{n}.npz`` and its blocks) when they were solved against
    other smaller layers' values than ``expected`` (:func:`lower_fingerprint`), as the stamp
    ``layer{n}.lower`` written at the solve's start records. A folder without them (a fresh start)
    gets a new stamp; checkpoints from before stamps are taken as they are."""
    stamp = folder / f"layer{n}.lower"
    started = any(folder.glob(f"layer{n}.*npz"))
    saved = stamp.read_text().strip() if stamp.exists() else None
    if started and saved is not None and saved != expected:
        raise ValueError(f"the {n}-player layer's checkpoints in {folder} were solved against other values of the "
                         f"smaller layers than theirs now (one was solved again since); delete its files "
                         f"(layer{n}.*) to solve it against them")
    if saved != expected:
        write_text_atomic(stamp, expected + "\n")


def save_layer(folder: Path, n: int, V: np.ndarray, log: list[dict], outer: int, solvers: list[HandSolver],
               ledger: Ledger, finished: bool = False) -> None:
    """The layer after ``outer`` outer iterations (``finished``: solved and measured); drops its blocks."""
    small, streams = solver_records(np.arange(len(solvers)), solvers, ledger)
    referenced = sorted(ledger.V_at)
    small.update(V=V, outer=np.array(outer), finished=np.array(finished),
                 held_retries=np.array([ledger.held_retries, ledger.held_retries_allowed], np.int64),
                 settled=np.array(ledger.settled),
                 log=np.array([[e[k] for k in LOG_FIELDS] for e in log], dtype=np.float64).reshape(len(log), -1),
                 log_keys=np.array(list(LOG_FIELDS)), V_at_keys=np.array(referenced, np.int64),
                 V_at=np.array([ledger.V_at[k] for k in referenced]).reshape(len(referenced), *V.shape))
    write_npz(layer_path(folder, n), small, streams)
    for _, _, p in block_paths(folder, n) + step_blocks(folder, f"layer{n}", "measure"):
        p.unlink()


def save_block(folder: Path, n: int, outer: int, spent: dict[int, int], states: list[int],
               solvers: list[HandSolver], ledger: Ledger, elapsed: float = 0.0) -> Path:
    """The records of ``states``, finished in outer iteration ``outer`` (0-based), and the CFR+
    iterations each spent in it (their bounds and how they were checked are in the ledger);
    ``elapsed``: seconds the outer iteration has run so far, over all its runs (see
    :func:`load_blocks`)."""
    idx = np.array(states, np.int64)
    small, streams = solver_records(idx, solvers, ledger)
    small.update(spent=np.array([spent[s] for s in states], np.int64), elapsed=np.array(float(elapsed)))
    path = next_block_path(folder, f"layer{n}", "outer", outer)
    write_npz(path, small, streams)
    return path


class RowStream:
    """The rows of one (rows, width) array of a checkpoint, read in order, a state's rows at a time.

    Reading an ``.npz`` member whole (``data[name]``) holds a second copy of the solvers' memory
    while the records are put back: resuming the 45-unit 5-player layer from its full checkpoint
    went past 24 GB that way (its profiles alone are a float64 array of several GiB). Streamed
    from the zip member, a restore holds one state's rows beyond the solvers. A plain dict of
    arrays (no zip behind it) is sliced instead.
    """

    def __init__(self, data, name: str):
        self.array = None if hasattr(data, "zip") else np.asarray(data[name])
        self.row = 0
        if self.array is None:
            self.file = data.zip.open(name + ".npy")
            version = np.lib.format.read_magic(self.file)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else \
                np.lib.format.read_array_header_2_0
            shape, fortran, self.dtype = read_header(self.file)
            if fortran or len(shape) != 2:
                raise ValueError(f"checkpoint member {name} is not a C-ordered 2-d array")
            self.width = shape[1]

    def take(self, k: int) -> np.ndarray:
        """The next ``k`` rows, as a new array."""
        if self.array is not None:
            self.row += k
            return self.array[self.row - k:self.row].copy()
        out = np.empty((k, self.width), self.dtype)
        self._fill(out)
        return out

    def into(self, dest: np.ndarray) -> None:
        """Copy the next ``len(dest)`` rows into ``dest`` (read in place where the layouts agree)."""
        if self.array is not None or dest.dtype != self.dtype or not dest.flags.c_contiguous:
            dest[:] = self.take(len(dest))
        else:
            self._fill(dest)

    def skip(self, k: int) -> None:
        if self.array is not None:
            self.row += k
        elif k:
            self.take(k)

    def _fill(self, out: np.ndarray) -> None:
        view = memoryview(out.reshape(-1).view(np.uint8))
        done = 0
        while done < len(view):
            got = self.file.readinto(view[done:])
            if not got:
                raise ValueError("checkpoint member ends early")
            done += got

    def close(self) -> None:
        if self.array is None:
            self.file.close()


def restore_records(data: Mapping[str, np.ndarray], solvers: list[HandSolver], ledger: Ledger | None,
                    profiles: bool = True) -> np.ndarray:
    """Put the records in ``data`` back into their solvers (and ledger); returns their state indices.

    Without ``profiles`` only the regrets, predictions and clocks are restored (not the certified
    profiles, their gains and decision margins): enough for a warm start, in about half the memory.
    The long arrays are streamed state by state (:class:`RowStream`), never read whole."""
    states = data["states"] if "states" in data else np.arange(len(solvers))
    sizes = np.array([len(solvers[s].hand.node_actor) for s in states])
    if len(sizes) != len(data["sizes"]) or not np.array_equal(sizes, data["sizes"]):
        raise ValueError("checkpoint does not match this game (delete it to start over)")
    for name in REGRET_ARRAYS:
        rows = RowStream(data, name)
        for i, s in enumerate(states):
            rows.into(getattr(solvers[s], name))
        rows.close()
    has_solution = data["has_solution"] if "has_solution" in data and profiles else np.zeros(len(states), bool)
    solver_gains = data["solver_gains"] if "solver_gains" in data and profiles else None
    has_margins = data["has_margins"] if "has_margins" in data and profiles else np.zeros(len(states), bool)
    solution = RowStream(data, "solution") if has_solution.any() else None
    advantage = RowStream(data, "margin_advantage") if has_margins.any() else None
    mass = RowStream(data, "margin_mass") if has_margins.any() else None
    iterations = data["iterations"]  # (an NpzFile reads a member anew at every index)
    # (checkpoints from before the discounted regrets hold a plain sum over their iterations)
    regret_weight = data["regret_weight"] if "regret_weight" in data else iterations.astype(np.float64)
    for i, s in enumerate(states):
        solver = solvers[s]
        solver.iterations = int(iterations[i])
        solver.regret_weight = float(regret_weight[i])
        solver.restart_average()
        if has_solution[i]:
            solver.solution = solution.take(sizes[i])
        else:
            solver.solution = None
            if solution is not None:  # (every state's profile is written, certified or not)
                solution.skip(sizes[i])
        if solver_gains is not None and not np.isnan(solver_gains[i]).any():
            solver.gains = solver_gains[i].copy()
        solver.margins = (advantage.take(sizes[i]), mass.take(sizes[i])) if has_margins[i] else None
    for stream in (solution, advantage, mass):
        if stream is not None:
            stream.close()
    if ledger is not None and "gains" in data:
        ledger.bound[states] = data["bound"]
        ledger.gains[states] = data["gains"]
        ledger.drift[states] = data["drift"]
        ledger.checked_at[states] = data["checked_at"]
        ledger.skipped[states] = data["skipped"]
        ledger.screened[states] = data["screened"]
        if "checked" in data:  # (checkpoints from before the count of exact checks: none counted)
            ledger.checked[states] = data["checked"]
        if "held_target" in data:  # (checkpoints from before held states: none held)
            ledger.held_target[states] = data["held_target"]
            ledger.held_exploitability[states] = data["held_exploitability"]
        probs = RowStream(data, "order_probs")
        for s, t in zip(states, data["terminals"]):
            ledger.order_probs[s] = probs.take(int(t))
        probs.close()
    return states


def read_log(data) -> list[dict]:
    """The per-outer-iteration log of a ``layer{n}.npz`` (its ``LOG_FIELDS``; a checkpoint from
    before a field existed lacks it: 0)."""
    keys = [str(k) for k in data["log_keys"]]
    return [{k: kind(dict(zip(keys, row)).get(k, 0)) for k, kind in LOG_FIELDS.items()} for row in data["log"]]


def finished_layer(folder: Path, n: int) -> tuple[np.ndarray, list[dict], str | None, int] | None:
    """(values $, log, the smaller layers' fingerprint it was solved against, decision nodes) of a finished
    ``layer{n}.npz``, read without its state records (a few MB of the 45-unit 5-player layer's 15 GB
    checkpoint); None where the layer has no checkpoint or has not finished. For a rebuild to tell
    whether the warehouse already holds this layer (``assets.solve``) without compiling its hands
    and reading the records back (minutes on that layer)."""
    path = layer_path(folder, n)
    if not path.exists():
        return None
    with reading_checkpoint(path), np.load(path) as data:
        if "finished" not in data or not bool(data["finished"]):
            return None
        stamp = folder / f"layer{n}.lower"
        lower = stamp.read_text().strip() if stamp.exists() else None
        return data["V"], read_log(data), lower, int(data["sizes"].sum())


def load_layer(folder: Path, n: int, solvers: list[HandSolver], ledger: Ledger | None = None,
               profiles: bool = True) -> tuple[np.ndarray, list[dict], int, bool]:
    """(values, log, outer iterations done, finished) from ``layer{n}.npz``, its records put back
    (without ``profiles``: only what a warm start needs, see :func:`restore_records`)."""
    path = layer_path(folder, n)
    with reading_checkpoint(path):
        data = np.load(path)
        try:
            restore_records(data, solvers, ledger, profiles)
        except ValueError as exc:
            raise ValueError(f"checkpoint {path}: {exc}") from None
        if ledger is not None and "V_at_keys" in data:
            ledger.V_at = {int(k): v for k, v in zip(data["V_at_keys"], data["V_at"])}
        if ledger is not None and "held_retries" in data:  # (checkpoints from before the retries: none tried)
            ledger.held_retries, ledger.held_retries_allowed = (int(x) for x in data["held_retries"])
        if ledger is not None:  # (checkpoints from before: not settled, the next run checks once more)
            ledger.settled = bool(data["settled"]) if "settled" in data else False
        log = read_log(data)
        finished = bool(data["finished"]) if "finished" in data else False
        return data["V"], log, int(data["outer"]), finished


def load_blocks(folder: Path, n: int, outer: int, solvers: list[HandSolver],
                ledger: Ledger) -> tuple[dict[int, int], float]:
    """CFR+ iterations spent by each state finished in outer iteration ``outer`` before an interrupt,
    their records put back, and the seconds the outer iteration had run when its last block was
    saved (the resumed run goes on from there, so the solve log's ``wall_s`` counts every run's
    kept work, not only the last run's); blocks of other outer iterations (left by a crash between
    a layer save and their deletion) are dropped."""
    done: dict[int, int] = {}
    elapsed = 0.0
    for path in blocks_of_step(folder, f"layer{n}", "outer", outer):
        with reading_checkpoint(path):
            data = np.load(path)
            try:
                states = restore_records(data, solvers, ledger)
            except ValueError as exc:
                raise ValueError(f"checkpoint {path}: {exc}") from None
            done.update(zip(states.tolist(), data["spent"].tolist()))
            if "elapsed" in data:  # (blocks from before the time was kept: none counted)
                elapsed = max(elapsed, float(data["elapsed"]))
    return done, elapsed


def save_measure_block(folder: Path, n: int, outer: int, states: list[int], bound: np.ndarray,
                       elapsed: float) -> None:
    """The exact exploitability ($) of ``states``, measured after the layer settled in ``outer``
    outer iterations, and the measurement's seconds so far (``elapsed``, over all its runs)."""
    write_npz(next_block_path(folder, f"layer{n}", "measure", outer),
              {"states": np.array(states, np.int64), "bound": bound[states].astype(np.float64),
               "elapsed": np.array(float(elapsed))}, {})


def load_measure_blocks(folder: Path, n: int, outer: int, bound: np.ndarray) -> tuple[list[int], float]:
    """The states measured before an interrupt, their exploitability put back into ``bound``, and
    the measurement's seconds at its last block."""
    done: list[int] = []
    elapsed = 0.0
    for path in blocks_of_step(folder, f"layer{n}", "measure", outer):
        with reading_checkpoint(path), np.load(path) as data:
            bound[data["states"]] = data["bound"]
            done.extend(data["states"].tolist())
            elapsed = max(elapsed, float(data["elapsed"]))
    return done, elapsed
