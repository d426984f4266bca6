"""Checkpoints of the model sweeps (:mod:`engine.model_strategies`): an interrupted analysis keeps
every layer of every sweep it finished.

Per sweep and layer, two files in the checkpoint folder, each written to a temporary name and
renamed into place (complete or absent):

- ``{label}.layer{n}.npz``: what the sweep produced for the layer — each state's hand value ($),
  certified strategy, outcome probabilities, exploitability ($) and CFR+ iterations, and the
  layer's wall time (s); deflated (certified strategies are mostly exact 0 and 1) and kept after
  the analysis, so a rebuild reads every sweep back instead of solving it again;
- ``{label}.layer{n}.solvers.npz``: the layer's solvers (regrets, predictions, regret weight,
  iteration count; see :mod:`engine.checkpoint`), only while a later sweep still warm-starts from
  them (:func:`drop_solvers` deletes them after).
- ``{label}.layer{n}.part{k}.npz`` while the layer is being solved, every few minutes: the same
  results for the states finished since the last part, their solvers' records too when the
  sweep keeps its solvers, and the layer's seconds so far. A 5-player layer of the 45-unit game
  takes 10–16 hours on 2 cores; an interrupted one resumes with the states its parts hold. The
  parts are deleted once the layer's own file is written.

A sweep read back this way is the sweep that was saved, to the bit, and later sweeps warm-start
from the same regrets, so a resumed analysis gives the tables of one never interrupted. (Each
state's solve depends only on its own warm start and the sweep's successor values, so the same
holds for a layer resumed from its parts.)
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from engine.cfr import HandSolver
from engine.checkpoint import RowStream, reading_checkpoint, restore_records, solver_records, write_npz
from engine.game_tree import CompiledHand
from engine.hand_pass import SolverTensors


def _paths(folder: Path, label: str, n: int) -> tuple[Path, Path]:
    return folder / f"{label}.layer{n}.npz", folder / f"{label}.layer{n}.solvers.npz"


def _result_arrays(strategies: list[np.ndarray], order_probs: list[np.ndarray]) -> tuple[dict, dict]:
    """The per-state row counts (``sizes``: nodes, ``terminals``) and the streams of a sweep's
    strategies (nodes × 169) and outcome probabilities (terminals × 6), for :func:`write_npz`."""
    small = {"sizes": np.array([len(x) for x in strategies], np.int64),
             "terminals": np.array([len(p) for p in order_probs], np.int64)}
    return small, {"strategies": (np.float64, 169, strategies), "order_probs": (np.float64, 6, order_probs)}


def _split_results(data) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each state's strategy and outcome probabilities from a file written with :func:`_result_arrays`."""
    strategies, probs = RowStream(data, "strategies"), RowStream(data, "order_probs")
    try:  # streamed state by state: read whole, a 5-player layer's strategies were held twice
        return [strategies.take(int(k)) for k in data["sizes"]], [probs.take(int(t)) for t in data["terminals"]]
    finally:
        strategies.close()
        probs.close()


def part_paths(folder: Path, label: str, n: int) -> list[Path]:
    """The part files of sweep ``label``'s layer ``n``, in the order they were written."""
    prefix = f"{label}.layer{n}.part"
    found = [(int(m[1]), p) for p in folder.glob(f"{prefix}*.npz")
             if (m := re.fullmatch(re.escape(prefix) + r"(\d+)\.npz", p.name))]
    return [p for _, p in sorted(found)]


def save_sweep_part(folder: Path, label: str, n: int, states: list[int], layer: dict,
                    solvers: list[HandSolver] | None, wall_s: float) -> Path:
    """The results of ``states`` (finished since the last part) of the layer being solved; ``layer``
    holds the layer's arrays as :func:`load_sweep_layer` returns them, indexed by state, and
    ``solvers`` (when the sweep keeps them for the next one) the states' solvers. ``wall_s``: the
    layer's seconds so far, interrupted runs included."""
    number = len(part_paths(folder, label, n))  # parts go only all together, with the layer's save
    idx = np.array(states, np.int64)
    small: dict[str, np.ndarray] = {}
    streams: dict = {}
    if solvers is not None:
        small, streams = solver_records(idx, solvers, None)
    counts, results = _result_arrays([layer["strategies"][s] for s in states],
                                     [layer["order_probs"][s] for s in states])
    small.update(counts, states=idx, values=layer["values"][idx], exploitability=layer["exploitability"][idx],
                 spent=layer["iterations"][idx].astype(np.int64), wall_s=np.array(wall_s))
    streams.update(results)
    path = folder / f"{label}.layer{n}.part{number:05d}.npz"
    write_npz(path, small, streams)
    return path


def load_sweep_parts(folder: Path, label: str, n: int, hands: list[CompiledHand], layer: dict,
                     solvers: list[HandSolver] | None) -> tuple[list[int], float]:
    """Put the parts saved for the layer being solved back into ``layer``'s arrays (and, where a
    part holds them, the states' solver records into ``solvers``); returns the states they hold
    and the layer's seconds so far (0 without parts)."""
    done: list[int] = []
    wall_s = 0.0
    for path in part_paths(folder, label, n):
        with reading_checkpoint(path):
            data = np.load(path)
            states = data["states"]
            if not np.array_equal([len(hands[s].node_actor) for s in states], data["sizes"]):
                raise ValueError(f"checkpoint {path} does not match this game (delete it to start over)")
            if solvers is not None and "regret_jam" in data:
                restore_records(data, solvers, None)
            layer["values"][states] = data["values"]
            layer["exploitability"][states] = data["exploitability"]
            layer["iterations"][states] = data["spent"]
            for s, strategy, probs in zip(states.tolist(), *_split_results(data)):
                layer["strategies"][s], layer["order_probs"][s] = strategy, probs
            done += states.tolist()
            wall_s = float(data["wall_s"])
    return done, wall_s


def save_sweep_layer(folder: Path, label: str, n: int, layer: dict, keep_solvers: bool) -> None:
    """One finished layer of sweep ``label`` (a dict as :func:`load_sweep_layer` returns); its
    solvers too when ``keep_solvers`` (written first, so a layer whose results exist always has
    them when they were meant to be kept)."""
    results, solver_file = _paths(folder, label, n)
    if keep_solvers:
        solvers = layer["solvers"]
        small, streams = solver_records(np.arange(len(solvers)), solvers, None)
        write_npz(solver_file, small, streams)
    small, streams = _result_arrays(layer["strategies"], layer["order_probs"])
    small.update(values=layer["values"], exploitability=layer["exploitability"],
                 iterations=layer["iterations"].astype(np.int64), wall_s=np.array(layer["wall_s"]))
    write_npz(results, small, streams, compress=True)
    for part in part_paths(folder, label, n):
        part.unlink()


def load_sweep_layer(folder: Path, label: str, n: int, hands: list[CompiledHand],
                     tensors: SolverTensors, strategies: bool = True) -> dict | None:
    """The saved layer of sweep ``label``, None if absent: values, strategies, order_probs,
    exploitability, iterations, wall_s, and ``solvers``: the layer's solvers with their saved
    regrets while the sweep's solvers are kept, else None (none are built then: a 5-player layer's
    solvers hold about 10 GiB). Without ``strategies`` the strategies and outcome probabilities
    are left unread (empty lists): a sweep wanted only for its values and solvers, as the FGS
    chain wants Harville's, skips most of the file (about 4 GiB of the 45-unit 5-player layer)."""
    results, solver_file = _paths(folder, label, n)
    if not results.exists():
        return None
    for part in part_paths(folder, label, n):  # left by an interrupt between the layer's save and their deletion
        part.unlink()
    with reading_checkpoint(results):
        data = np.load(results)
        sizes = data["sizes"]
        if len(sizes) != len(hands) or any(int(k) != len(h.node_actor) for k, h in zip(sizes, hands)):
            raise ValueError(f"checkpoint {results} does not match this game (delete it to start over)")
        kept, order_probs = _split_results(data) if strategies else ([], [])
        found = {"values": data["values"], "exploitability": data["exploitability"], "iterations": data["iterations"],
                 "wall_s": float(data["wall_s"]), "strategies": kept, "order_probs": order_probs}
    solvers = None
    if solver_file.exists():
        solvers = [HandSolver(h, tensors) for h in hands]
        with reading_checkpoint(solver_file):
            restore_records(np.load(solver_file), solvers, None)
    return {**found, "solvers": solvers}


def layer_saved_at(folder: Path, label: str, n: int) -> float | None:
    """When sweep ``label``'s finished layer ``n`` was saved (POSIX time), None before."""
    try:
        return _paths(folder, label, n)[0].stat().st_mtime
    except FileNotFoundError:
        return None


def saved_layer_wall_s(folder: Path, label: str, n: int) -> float:
    """The seconds sweep ``label``'s saved layer ``n`` took (one small member of its file)."""
    path = _paths(folder, label, n)[0]
    with reading_checkpoint(path), np.load(path) as data:
        return float(data["wall_s"])


def saved_sweep_summary(folder: Path, label: str, players: list[int]) -> list[dict] | None:
    """Per layer of sweep ``label`` (``players``, in order), what a warehouse's `model_sweeps` row
    holds (players, states, cfr_iterations, max_exploitability $, wall_s) and its decision nodes
    (``nodes``, the rows of its `model_nodes`), read from small members of the saved layers; None
    unless every layer is saved. For a rebuild to tell whether the warehouse already holds the
    sweep without reading its strategies (about 4 GiB of the 45-unit 5-player layer)."""
    if not sweep_saved(folder, label, players):
        return None
    rows = []
    for n in players:
        path = _paths(folder, label, n)[0]
        with reading_checkpoint(path), np.load(path) as data:
            rows.append({"players": n, "states": len(data["iterations"]),
                         "cfr_iterations": int(data["iterations"].sum()),
                         "max_exploitability": float(data["exploitability"].max()),
                         "wall_s": float(data["wall_s"]), "nodes": int(data["sizes"].sum())})
    return rows


def saved_sweep_values(folder: Path, label: str, players: list[int]) -> dict[int, np.ndarray]:
    """The hand values ($, states × n per layer ``players``) of sweep ``label``'s saved layers: one
    small member of each file, the FGS chain's next depth's successor values."""
    values = {}
    for n in players:
        path = _paths(folder, label, n)[0]
        with reading_checkpoint(path), np.load(path) as data:
            values[n] = data["values"]
    return values


def sweep_saved(folder: Path, label: str, players: list[int]) -> bool:
    """Whether every layer (``players``) of sweep ``label`` is saved, so none needs a warm start."""
    return all(_paths(folder, label, n)[0].exists() for n in players)


def drop_solvers(folder: Path, label: str | None = None) -> None:
    """Delete the kept solvers of sweep ``label`` (no later sweep warm-starts from them), or of
    every sweep."""
    for path in folder.glob(f"{label or '*'}.layer*.solvers.npz"):
        path.unlink()
