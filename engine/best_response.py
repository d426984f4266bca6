"""Tournament best response: the ex post check of a strategy profile (SPEC §6).

Fix a profile σ for every state of every layer. A single *nemesis* player deviates from it for
the whole remaining tournament while everybody else keeps playing σ; he faces a Markov decision
process over (state, his position). His optimal value W(s, p) is at least the profile's value
V(s, p), and the tournament exploitability of σ at (s, p) is

    ε(s, p) = W(s, p) − V(s, p)    ($).

Layers only lead to themselves or to smaller layers, so W is computed from 2 players up; the
values of seats in smaller layers are the nemesis values of those layers (he keeps deviating
after eliminations).

**Within a layer: policy iteration.** Start from W = V (σ's own values).

1. *Improvement.* For every state, one exact hand pass of σ with successor values from W gives,
   for every position p at once, the counterfactual values of p's information sets computed with
   p's own payoffs (those do not depend on the other players' payoffs). The best single-hand
   reply of p jams where cf_jam > cf_fold and folds where cf_jam < cf_fold (ties keep σ); its
   value is root value + best-response gain (the Bellman update of W).
2. *Evaluation.* With the nemesis in seat p playing that reply and the others σ, the hand's
   outcome probabilities give the transitions of the row (s, p) of the MDP's Markov chain; the
   chain over all (s, p) is solved exactly like a profile's values
   (:func:`engine.policy_evaluation.solve_layer`, minimal non-negative solution).
3. Stop when the Bellman residual max |update − W| is ≤ ``tol``.

Policy iteration improves monotonically and ends after finitely many policies; on our layers a
handful of rounds. Each round costs one hand pass per state plus one pass with outcome
probabilities per (state, position) whose reply differs from σ and from its reply of the
previous round (outcome probabilities depend on the profile only, not on W).

Units: values and gains in $.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from engine.cfr import NC, HandSolver, exploitability_from_cf
from engine.checkpoint import BlockSaver, RowStream, next_block_path, reading_checkpoint, step_blocks, write_npz
from engine.game_tree import CompiledHand, utilities
from engine.hand_pass import SolverTensors, Workspace
from engine.policy_evaluation import layer_transitions, solve_layer
from engine.solve_progress import ProgressFn, kinded_clock, states_done_events
from engine.solver_pool import SolverPool, heaviest_first, largest_hand

PROGRESS_EVERY_S = 30.0
"""Seconds between the progress events within a nemesis round (a round of the 45-unit 5-player
layer takes about an hour on 2 cores)."""


def best_reply(sigma: np.ndarray, cf_fold: np.ndarray, cf_jam: np.ndarray, node_actor: np.ndarray,
               player: int, tie: float = 1e-13) -> np.ndarray:
    """σ with ``player``'s nodes replaced by his pure best single-hand reply (ties keep σ)."""
    out = sigma.copy()
    rows = node_actor == player
    d = cf_jam[rows] - cf_fold[rows]
    out[rows] = np.where(d > tie, 1.0, np.where(d < -tie, 0.0, sigma[rows]))
    return out


def reply_key(reply: np.ndarray, sigma: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """A compact, exact stand-in for a reply of :func:`best_reply` to σ, to tell replies apart: its
    player's rows (``rows``) with 2 where it keeps σ, else its pure action (0 or 1). Two replies of
    one player to one σ are equal exactly when their keys are; a key is 1 byte per (node, class)
    of that player where the reply is 8 per (node, class) of the hand. The nemesis keeps one per
    deviating (state, seat), 3.7 per 5-player state: measured on the 20-unit game's ex post, the
    check grew by 729 MiB (mostly the threads' workspaces) where it grew by 1,144 MiB when it kept
    whole replies and a solver per state, about 110 KB more per 5-player state."""
    r = reply[rows]
    return np.where(r == sigma[rows], 2, r).astype(np.int8)


CHECKPOINT_EVERY = 300.0
"""Seconds between the block checkpoints within a nemesis round: the states finished since the last
one, with their Bellman updates and outcome probabilities, so that an interrupt loses minutes of a
round (about an hour on the 45-unit 5-player layer), not the round."""


def nemesis_layer(hands: list[CompiledHand], strategies: list[np.ndarray], values: np.ndarray,
                  lower_nemesis: dict[int, np.ndarray], tensors: SolverTensors, *, tol: float = 1e-9,
                  max_rounds: int = 50, threads: int | None = None,
                  progress: ProgressFn | None = None, checkpoint: Path | None = None,
                  checkpoint_every: float = CHECKPOINT_EVERY) -> tuple[np.ndarray, list[dict]]:
    """Nemesis values W (m × n, $) of one layer under the profile ``strategies``.

    Args:
        hands: compiled hands of the layer's states (layer order).
        strategies: per state, the (nodes × 169) jam probabilities of σ.
        values: σ's own values of the layer (m × n, $), the starting point.
        lower_nemesis: nemesis values of every smaller layer an outcome can reach.
        tensors: showdown tensors (the same as the solve's).
        tol: stop when the Bellman residual is at most this ($).
        checkpoint: a folder where W and the log are saved after every round
            (``nemesis{n}.npz``) and, within a round, the states finished every
            ``checkpoint_every`` seconds and at the round's end (``nemesis{n}.round{r}.block{b}.npz``,
            deleted with the next round's end); a check interrupted before resumes from its last
            round and the states of the next one already done, and ends with the values of one never
            interrupted (what a round keeps besides W and its results only saves work), and a
            finished layer is read back. The blocks also hold σ's and the deviating seats' outcome
            probabilities with the replies they belong to: a resumed round reuses those of the
            round before and of its own states done, as an uninterrupted one reuses its memory, and
            redoes no hand pass with outcome probabilities already done (the `thesis` equilibrium's
            check, cut in its first round, had spent about 8 minutes of its second redoing them).

    Returns:
        ``(W, log)``; log has one entry per round (residual $, rows whose reply differs from σ,
        wall time).
    """
    m, n = values.shape
    W = values.copy()
    log: list[dict] = []
    base_probs: list[np.ndarray | None] = [None] * m
    # the last reply of each (state, seat) that differed from σ (as :func:`reply_key`), and its
    # outcome probabilities: after the first rounds most replies repeat, and their orders pass is skipped
    last_reply: list[list[np.ndarray | None]] = [[None] * n for _ in range(m)]
    last_probs: list[list[np.ndarray | None]] = [[None] * n for _ in range(m)]

    first = 1
    if checkpoint is not None and _round_path(checkpoint, n).exists():
        W, log, finished = _load_rounds(checkpoint, n)
        if W.shape != values.shape:
            raise ValueError(f"checkpoint {_round_path(checkpoint, n)} does not match this layer (delete it to start over)")
        if progress:
            progress({"event": "nemesis_resumed", "players": n, "rounds": len(log), "finished": finished})
        if finished:
            for _, _, path in round_blocks(checkpoint, n):  # (an interrupt just after the last round's save)
                path.unlink()
            return W, log
        first = len(log) + 1

    order = heaviest_first(hands)
    pool = SolverPool(threads, largest_hand(hands))
    try:
        for rnd in range(first, max_rounds + 1):
            t0 = time.perf_counter()
            table = {**lower_nemesis, n: W}
            results = [None] * m
            done_before, elapsed = 0, 0.0
            if checkpoint is not None and rnd == first:  # the states this round finished before an interrupt
                restored, elapsed = _restore_blocks(checkpoint, n, rnd, base_probs, last_reply, last_probs)
                for s_, r in restored.items():
                    results[s_] = r
                done_before = len(restored)
                t0 -= elapsed
                if restored and progress:
                    progress({"event": "nemesis_resumed_states", "players": n, "round": rnd, "done": done_before,
                              "states": m})
            todo = [s_ for s_ in order if results[s_] is None]

            def improve(s: int) -> tuple[np.ndarray, list[np.ndarray], int]:
                return _improve_state(hands[s], strategies[s], tensors, pool.workspace(), table, s, base_probs,
                                      last_reply, last_probs)

            clock = kinded_clock(hands, todo)
            done = states_done_events(pool.imap_done(clock.timed(improve), todo), len(todo), progress, PROGRESS_EVERY_S,
                                      {"event": "nemesis_states", "players": n, "round": rnd}, clock=clock,
                                      done_before=done_before, states=m, wall_before=elapsed)
            blocks = BlockSaver(None if checkpoint is None else lambda states: _save_block(
                checkpoint, n, rnd, states, results, base_probs, last_reply, time.perf_counter() - t0),
                checkpoint_every)
            for s_, r in done:
                results[s_] = r
                blocks.add(s_)
            blocks.flush()  # every state of the round in its blocks: the next round's replies to reuse
            update = np.array([r[0] for r in results])
            residual = float(np.abs(update - W).max()) if m else 0.0
            deviating = int(sum(r[2] for r in results))
            entry = {"players": n, "round": rnd, "bellman_residual": residual, "deviating_rows": deviating}
            if residual > tol:
                W = _evaluate_nemesis(hands, [r[1] for r in results], n, lower_nemesis, W)
            entry["wall_s"] = time.perf_counter() - t0
            log.append(entry)
            if checkpoint is not None:
                _save_rounds(checkpoint, n, W, log, finished=residual <= tol)
                for k, _, path in round_blocks(checkpoint, n):  # the round is in W now; its own blocks
                    if k < rnd or residual <= tol:             # hold the next round's replies until it ends
                        path.unlink()
            if progress:
                progress({"event": "nemesis_round", **entry})
            if residual <= tol:
                break
    finally:
        pool.close()
    return W, log


def _improve_state(hand: CompiledHand, sigma: np.ndarray, tensors: SolverTensors, ws: Workspace,
                   table: dict[int, np.ndarray], s: int, base_probs: list, last_reply: list,
                   last_probs: list) -> tuple[np.ndarray, list[np.ndarray], int]:
    """State ``s``'s nemesis update under the values ``table`` (per layer, $): (each seat's value
    when it alone best-replies to σ = ``sigma``, $; per seat, the outcome probabilities of that
    reply, or σ's own where the reply is σ; the number of seats whose reply differs from σ).

    σ's outcome probabilities are computed once (``base_probs[s]``); a seat's reply that equals its
    last one (as :func:`reply_key`) reuses that reply's probabilities (``last_reply``, ``last_probs``)
    instead of another pass. The solver only evaluates σ and the replies, so it is made per state
    (15 µs) and dropped: kept for every state, their unused regrets and the whole replies once
    remembered took about 110 KB per 5-player state, about 15 GB on the 45-unit layer."""
    n = hand.n_players
    solver = HandSolver(hand, tensors)
    U = utilities(hand, table)
    root, cf_fold, cf_jam, probs = solver.evaluate(sigma, U, ws, orders=base_probs[s] is None)
    if base_probs[s] is None:
        base_probs[s] = probs.copy()
    update = root + exploitability_from_cf(sigma, cf_fold, cf_jam, hand.node_actor, n)
    replies = []
    for p in range(n):
        reply = best_reply(sigma, cf_fold, cf_jam, hand.node_actor, p)
        replies.append(None if np.array_equal(reply, sigma) else reply)
    per_seat = []
    for p, reply in enumerate(replies):
        if reply is None:
            per_seat.append(base_probs[s])
            continue
        key = reply_key(reply, sigma, hand.node_actor == p)
        if last_reply[s][p] is not None and np.array_equal(key, last_reply[s][p]):
            per_seat.append(last_probs[s][p])
        else:
            solver.evaluate(reply, U, ws, orders=True)
            last_reply[s][p], last_probs[s][p] = key, solver.order_probs.copy()
            per_seat.append(last_probs[s][p])
    return update, per_seat, sum(r is not None for r in replies)


def _round_path(folder: Path, n: int) -> Path:
    return folder / f"nemesis{n}.npz"


def _save_rounds(folder: Path, n: int, W: np.ndarray, log: list[dict], finished: bool) -> None:
    rows = np.array([[e["round"], e["bellman_residual"], e["deviating_rows"], e["wall_s"]] for e in log], np.float64)
    write_npz(_round_path(folder, n), {"W": W, "log": rows, "finished": np.array(finished)}, {})


def _load_rounds(folder: Path, n: int) -> tuple[np.ndarray, list[dict], bool]:
    with reading_checkpoint(_round_path(folder, n)), np.load(_round_path(folder, n)) as data:
        return data["W"], _rounds_log(data, n), bool(data["finished"])


def _rounds_log(data, n: int) -> list[dict]:
    return [{"players": n, "round": int(r), "bellman_residual": float(res), "deviating_rows": int(dev),
             "wall_s": float(wall)} for r, res, dev, wall in data["log"]]


def rounds_saved(folder: Path, n: int) -> tuple[list[dict], bool] | None:
    """The log of the nemesis rounds an n-player layer's check in ``folder`` has finished, and
    whether the check has converged; None before its first round ends. Reads only the log (for
    `jamfold progress`, beside the running check)."""
    path = _round_path(folder, n)
    try:
        with reading_checkpoint(path), np.load(path) as data:
            return _rounds_log(data, n), bool(data["finished"])
    except FileNotFoundError:  # (or deleted this moment with its work folder, the check done)
        return None


def round_blocks(folder: Path, n: int) -> list[tuple[int, int, Path]]:
    """(round, block number, path) of the block files the check's round in progress has saved."""
    return step_blocks(folder, f"nemesis{n}", "round")


def _save_block(folder: Path, n: int, rnd: int, states: list[int], results: list, base_probs: list,
                last_reply: list, elapsed: float) -> None:
    """The Bellman updates, deviating-seat counts and outcome probabilities of ``states``, finished
    in round ``rnd``: each state's own outcome probabilities (σ's) once, and those of every seat whose
    reply differs from σ with that reply (its :func:`reply_key`); ``elapsed``: the round's seconds so far."""
    own = np.array([[probs is not base_probs[s] for probs in results[s][1]] for s in states], bool).reshape(-1, n)
    keys = [last_reply[s][p] for s, mine in zip(states, own) for p in np.flatnonzero(mine)]
    small = {"states": np.array(states, np.int64), "terminals": np.array([len(base_probs[s]) for s in states], np.int64),
             "updates": np.array([results[s][0] for s in states], np.float64).reshape(-1, n),
             "deviating": np.array([results[s][2] for s in states], np.int64), "own": own,
             "key_rows": np.array([len(k) for k in keys], np.int64), "elapsed": np.array(float(elapsed))}
    seats = [probs for s, mine in zip(states, own) for probs, o in zip(results[s][1], mine) if o]
    streams = {"base": (np.float64, 6, [base_probs[s] for s in states]), "seats": (np.float64, 6, seats),
               "keys": (np.int8, NC, keys)}
    write_npz(next_block_path(folder, f"nemesis{n}", "round", rnd), small, streams)


def _restore_blocks(folder: Path, n: int, rnd: int, base_probs: list, last_reply: list,
                    last_probs: list) -> tuple[dict[int, tuple], float]:
    """What the blocks of an interrupted check hold, put back: the results of the states round
    ``rnd`` finished before the interrupt, with the round's seconds at its last block; and, from the
    blocks of round ``rnd`` − 1 and then of ``rnd``, σ's outcome probabilities (into ``base_probs``)
    and each deviating seat's reply and outcome probabilities (``last_reply``, ``last_probs``).
    Blocks of other rounds (left by an interrupt between a round's save and their deletion) are
    deleted. Blocks of an older version hold no replies: their seats' passes are done again."""
    restored: dict[int, tuple] = {}
    elapsed = 0.0
    for k, _, path in round_blocks(folder, n):
        if k not in (rnd - 1, rnd):
            path.unlink()
            continue
        with reading_checkpoint(path), np.load(path) as data:
            base, seats = RowStream(data, "base"), RowStream(data, "seats")
            keys = RowStream(data, "keys") if "keys" in data.files else None  # (older blocks hold no replies)
            key_rows = iter(data["key_rows"].tolist() if keys is not None else ())
            try:
                for s, t, update, deviating, own in zip(data["states"].tolist(), data["terminals"].tolist(),
                                                         data["updates"], data["deviating"].tolist(), data["own"]):
                    base_probs[s] = base.take(t)
                    per_seat = [seats.take(t) if o else base_probs[s] for o in own]
                    for p in np.flatnonzero(own) if keys is not None else ():
                        last_reply[s][p], last_probs[s][p] = keys.take(next(key_rows)), per_seat[p]
                    if k == rnd:
                        restored[s] = (update.copy(), per_seat, deviating)
            finally:
                for stream in (base, seats, keys):
                    if stream is not None:
                        stream.close()
            if k == rnd:
                elapsed = max(elapsed, float(data["elapsed"]))
    return restored, elapsed


def _evaluate_nemesis(hands: list[CompiledHand], per_seat_probs: list[list[np.ndarray]], n: int,
                      lower_nemesis: dict[int, np.ndarray], W_prev: np.ndarray) -> np.ndarray:
    """Exact values of the nemesis policy: row (s, p) of the chain uses seat p's outcome probabilities."""
    m = len(hands)
    rows_P, rows_c = [], []
    mask = np.zeros((m, n), dtype=bool)
    for p in range(n):
        P_p, c_p = layer_transitions(hands, [probs[p] for probs in per_seat_probs], n, lower_nemesis)
        mask[:] = False
        mask[:, p] = True
        select = sp.diags(mask.ravel().astype(np.float64))
        rows_P.append(select @ P_p)
        rows_c.append(np.where(mask.ravel(), c_p, 0.0))
    P = sp.csr_matrix(sum(rows_P[1:], rows_P[0]))
    c = np.sum(rows_c, axis=0)
    # a player's value is one exit payment at most: a prize now or a seat's value in a smaller layer
    upper = max([float(h.term_prize.max()) for h in hands] + [float(v.max()) for v in lower_nemesis.values() if v.size])
    X, _ = solve_layer(P, c, upper=upper, x0=W_prev.reshape(-1, 1))
    return X.reshape(m, n)


def ex_post(layers: dict[int, tuple[list[CompiledHand], list[np.ndarray], np.ndarray]], tensors: SolverTensors,
            *, tol: float = 1e-9, threads: int | None = None, progress: ProgressFn | None = None,
            checkpoint: Path | None = None,
            checkpoint_every: float = CHECKPOINT_EVERY) -> dict[int, tuple[np.ndarray, list[dict]]]:
    """Nemesis values of every layer, 2 players up.

    ``layers[n] = (hands, strategies, values)`` for n = 2 … players; returns ``{n: (W, log)}``.
    The gain ε = W − values is the profile's tournament exploitability per (state, position).
    ``checkpoint``: a folder for this profile's rounds (see :func:`nemesis_layer`).
    """
    out: dict[int, tuple[np.ndarray, list[dict]]] = {}
    for n in sorted(layers):
        hands, strategies, values = layers[n]
        lower = {k: w for k, (w, _) in out.items()}
        out[n] = nemesis_layer(hands, strategies, values, lower, tensors, tol=tol, threads=threads, progress=progress,
                               checkpoint=checkpoint, checkpoint_every=checkpoint_every)
    return out
