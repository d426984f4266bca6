"""`jamfold progress`: where a game's build stands, as lines of text, from its checkpoint folders.

Per layer: its solve (outer iterations, the last one's figures, the states of the one in progress
kept in block checkpoints), then, once it is solved, the two long steps the build runs on it: the
equilibrium's finishing probabilities (a hand-outcome pass over the layer's states, then a policy
evaluation) and its ex post check (nemesis rounds, about an hour each on the 45-unit 5-player
layer). Everything is read from files (:mod:`engine.solve_status`, :func:`assets.resume.kept_record`);
the warehouse is not opened, since the build may be writing it. A finished step's record cannot
be checked against the equilibrium it was made for without the warehouse, so one saved before its
layer (or a smaller one) was last solved is reported as stale: the next build redoes it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from engine.config import GameConfig
from engine.solve_status import BlocksKept, LayerStatus


def when(t: float) -> str:
    """A POSIX time as local date and time, and how long ago."""
    ago = max(time.time() - t, 0.0)
    age = f"{ago:.0f} s" if ago < 120 else f"{ago / 60:.0f} min" if ago < 7200 else f"{ago / 3600:.1f} h"
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(t))}, {age} ago"


def kept(blocks: BlocksKept, what: str) -> str:
    """The work of a step in progress that its block checkpoints keep (``what``: e.g. 'of 946 states done')."""
    if blocks.saved_at is None:
        return "no block checkpoint of it yet (one is saved every 5 minutes of work)"
    return (f"{blocks.states:,} {what} at its last block checkpoint ({blocks.elapsed_s / 60:.1f} min of work kept, "
            f"saved {when(blocks.saved_at)})")


def layer_lines(st: LayerStatus, gamma: float) -> list[str]:
    """What one layer's solve checkpoints say."""
    head = f"{st.players}-player layer ({st.states:,} states):"
    if st.finished:
        worst = "" if st.max_exploitability is None else \
            f"; max exploitability ${st.max_exploitability:.4g} (gamma ${gamma:g})"
        above = st.max_exploitability is not None and st.max_exploitability > gamma
        if st.current.states:  # reopened by a build to retry its states above gamma
            return [f"{head} solved above gamma in {st.outer_done} outer iterations{worst}; reopened",
                    f"  outer iteration {st.outer_done + 1}: " + kept(st.current, f"of {st.states:,} states done")]
        return [f"{head} solved, {st.outer_done} outer iterations{worst}"
                + ("; above gamma: the next build reopens it to retry those states" if above else "")]
    if not st.started:
        return [f"{head} not started"]
    lines = []
    if st.last is None:
        lines.append(f"{head} first outer iteration in progress")
    else:
        e = st.last
        lines.append(f"{head} {st.outer_done} outer iterations done; the last at target ${e['target']:.2g}: "
                     f"{e['states_updated']:,} states updated, max |ΔV| ${e['max_delta_v']:.4g}, max exploitability "
                     f"${e['max_exploitability']:.4g}, {e['wall_s']:,.0f} s")
    if st.settled:
        lines.append("  final exact measurement: " + kept(st.current, "states measured"))
    else:
        lines.append(f"  outer iteration {st.outer_done + 1}: " + kept(st.current, f"of {st.states:,} states done"))
    return lines


def _work(folder: Path, unit: str, solved_at: float) -> Path | None:
    """The unit's work folder, unless it is older than the solve it would have to be from."""
    from assets.resume import work_folders

    current = [p for p in work_folders(folder, unit) if p.stat().st_mtime >= solved_at]
    return max(current, key=lambda p: p.stat().st_mtime) if current else None


def finishing_line(folder: Path, n: int, states: int, solved_at: float) -> str:
    """The equilibrium's finishing probabilities of the n-player layer (``folder``: their checkpoint
    folder; ``solved_at``: when the layers up to n were last solved, POSIX time)."""
    from assets.finishing import layer_unit
    from assets.resume import kept_record
    from engine.solve_status import outcomes_status

    head = "  finishing probabilities:"
    record = kept_record(folder, layer_unit(n))
    if record is not None and record[1] >= solved_at:
        return f"{head} done, {record[0].get('rows', 0):,} rows (saved {when(record[1])})"
    work = _work(folder, layer_unit(n), solved_at)
    blocks = outcomes_status(work, n) if work is not None else BlocksKept()
    if work is not None and blocks.saved_at is None:
        return f"{head} started; " + kept(blocks, "")
    if work is not None:
        text = f"{head} hand outcomes of " + kept(blocks, f"of {states:,} states done")
        return text + ("; then a policy evaluation of the layer" if blocks.states == states else "")
    if record is not None:
        return f"{head} stale: saved {when(record[1])}, before the layers' last solve; the next build redoes it"
    return f"{head} not started"


def ex_post_line(folder: Path, n: int, states: int, solved_at: float) -> str:
    """The equilibrium's ex post check of the n-player layer (``folder``: the ex post checkpoint folder)."""
    from assets.ex_post import layer_unit
    from assets.resume import kept_record
    from engine.solve_status import nemesis_status

    head = "  ex post check:"
    record = kept_record(folder, layer_unit(n))
    if record is not None and record[1] >= solved_at:
        r = record[0]
        return (f"{head} done in {r.get('rounds', 0)} nemesis rounds, largest gain ${r.get('max_gain', 0.0):.4g}, "
                f"mean ${r.get('mean_gain', 0.0):.4g} (saved {when(record[1])})")
    work = _work(folder, layer_unit(n), solved_at)
    if work is None:
        if record is not None:
            return f"{head} stale: saved {when(record[1])}, before the layers' last solve; the next build redoes it"
        return f"{head} not started"
    st = nemesis_status(work, n)
    rounds = len(st.rounds)
    if st.converged:
        return f"{head} converged in {rounds} nemesis rounds; its values are being written to the warehouse"
    text = f"{head} {rounds} nemesis round{'s' if rounds != 1 else ''} done"
    if st.rounds:
        last = st.rounds[-1]
        text += f" (the last: Bellman residual ${last['bellman_residual']:.3g}, {last['wall_s']:,.0f} s)"
    return text + f"; round {rounds + 1}: " + kept(st.current, f"of {states:,} states done")


def report(cfg: GameConfig, solve_folder: Path, cache: Path) -> Iterator[str]:
    """The lines of every layer: its solve, then, once solved, its finishing probabilities and ex
    post check. ``cache``: the checkpoints' root (``JAMFOLD_CACHE``); ``solve_folder``: the game's
    solve checkpoints in it."""
    from assets.resume import game_key
    from engine.checkpoint import DamagedCheckpoint
    from engine.solve_status import layer_status
    from engine.states import n_states

    solved_at = 0.0  # the latest solve of the layers so far: later steps depend on all of them
    for n in range(2, cfg.players + 1):
        states = n_states(cfg.units, n)
        try:
            st = layer_status(solve_folder, n, states)
        except DamagedCheckpoint as exc:  # say so and go on with the other layers
            yield f"{n}-player layer: {exc}"
            solved_at = float("inf")
            continue
        yield from layer_lines(st, cfg.gamma)
        if not st.finished or st.current.states:
            solved_at = float("inf")  # nothing after it can be current
            continue
        solved_at = max(solved_at, st.saved_at or 0.0)
        for line, kind in ((finishing_line, "finishing"), (ex_post_line, "ex_post")):
            try:
                yield line(cache / kind / game_key(cfg), n, states, solved_at)
            except DamagedCheckpoint as exc:
                yield f"  {kind.replace('_', ' ')}: {exc}"
