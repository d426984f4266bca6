"""`jamfold progress`: where a game's build stands, as lines of text, from its checkpoint folders.

In the order a build runs them: the triple table's chunks; per layer, its solve (outer
iterations, the last one's figures, the states of the one in progress kept in block checkpoints),
then, once it is solved, the two long steps the build runs on it: the equilibrium's finishing
probabilities (a hand-outcome pass over the layer's states, then a policy evaluation) and its ex
post check (nemesis rounds, about an hour each on the 45-unit 5-player layer); then the
equilibrium's own simulated tournaments (the control, which a ``--skip-models`` build plays too);
then, per model, its sweep (its layers, and the part checkpoints of the one in progress), its ex
post check and its simulated tournaments. Everything is read from files (:mod:`engine.solve_status`, :func:`assets.resume.kept_record`);
the warehouse is not opened, since the build may be writing it. A finished step's record cannot
be checked against the equilibrium it was made for without the warehouse, so one saved before its
layer (or a smaller one) was last solved is reported as stale: the next build redoes it. (That
test reads the files' modification times: a cache copied without them reads as stale.)
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

from assets.paths import ex_post_unit, finishing_unit, hero_unit, match_parameters, match_unit, simulation_parameters
from assets.resume import game_folder, kept_record, unused_old_folders, work_folders
from engine.checkpoint import DamagedCheckpoint
from engine.config import GameConfig, model_names
from engine.rollout import triple_chunks_saved
from engine.solve_status import BlocksKept, LayerStatus, layer_status, nemesis_status, outcomes_status, sweep_status
from engine.states import n_states
from engine.target_ladder import first_target, inner_target, level_of, target_levels


def when(t: float) -> str:
    """A POSIX time as local date and time, and how long ago."""
    ago = max(time.time() - t, 0.0)
    age = f"{ago:.0f} s" if ago < 120 else f"{ago / 60:.0f} min" if ago < 7200 else f"{ago / 3600:.1f} h"
    return f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(t))}, {age} ago"


def duration(seconds: float) -> str:
    """Seconds as seconds, minutes or hours, whichever reads best."""
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min" if seconds < 7200 else \
        f"{seconds / 3600:.2f} h"


def kept(blocks: BlocksKept, what: str, kind: str = "block") -> str:
    """The work of a step in progress that its ``kind`` checkpoints keep (``what``: e.g. 'of 946
    states done'; a model sweep's are 'part' checkpoints)."""
    if blocks.saved_at is None:
        return f"no {kind} checkpoint of it yet (one is saved every 5 minutes of work)"
    return (f"{blocks.states:,} {what} at its last {kind} checkpoint ({blocks.elapsed_s / 60:.1f} min of work kept, "
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
        if st.cycled:
            return [f"{head} stopped after {st.outer_done} outer iterations, its values cycling instead of "
                    f"settling{worst}; kept as it ended (PI-CFR+ does not settle on this game)"]
        return [f"{head} solved, {st.outer_done} outer iterations{worst}"
                + ("; above gamma: the next build reopens it to retry those states" if above else "")]
    if not st.started:
        return [f"{head} not started"]
    lines = []
    levels = target_levels(gamma, st.players)

    def level(target: float) -> str:
        return f"level {level_of(target, gamma, st.players)} of {len(levels)}"

    if st.last is None:
        lines.append(f"{head} first outer iteration in progress")
    else:
        e = st.last
        lines.append(f"{head} {st.outer_done} outer iterations done; the last at target ${e['target']:.2g} "
                     f"({level(e['target'])}): {e['states_updated']:,} states updated, max |ΔV| "
                     f"${e['max_delta_v']:.4g}, max exploitability ${e['max_exploitability']:.4g}, {e['wall_s']:,.0f} s")
    if st.settled:
        lines.append("  final exact measurement: " + kept(st.current, "states measured"))
        return lines
    target = inner_target(gamma, [] if st.last is None else [st.last], True, st.states, first_target(st.players))
    lines.append(f"  outer iteration {st.outer_done + 1} (target ${target:.2g}, {level(target)}, from ${levels[0]:.2g} "
                 f"down to gamma by √10 steps): " + kept(st.current, f"of {st.states:,} states done"))
    return lines


def _work(folder: Path, unit: str, solved_at: float) -> Path | None:
    """The unit's work folder, unless it is older than the solve it would have to be from (or was
    deleted this moment, its unit done)."""
    current = []
    for path in work_folders(folder, unit):
        try:
            current.append((path.stat().st_mtime, path))
        except FileNotFoundError:
            continue
    return max(current)[1] if current and max(current)[0] >= solved_at else None


def _unit(folder: Path, unit: str, after: float, complete=lambda record: True
          ) -> tuple[tuple[dict, float] | None, bool, Path | None]:
    """(record and when it was saved, whether it is current, work folder) of a
    :class:`assets.resume.UnitCheckpoint` unit in ``folder``: current when saved at or after
    ``after`` (POSIX time) and ``complete``; otherwise its work folder, if one is newer than
    ``after``. Without one the record is read again: a unit finishing meanwhile writes its record,
    then deletes its work folder."""
    def current(record: tuple[dict, float] | None) -> bool:
        return record is not None and record[1] >= after and complete(record[0])

    record = kept_record(folder, unit)
    if current(record):
        return record, True, None
    work = _work(folder, unit, after)
    if work is None:
        record = kept_record(folder, unit) or record
    return record, current(record), work


STALE = "stale: saved {}, before the layers' last solve; the next build redoes it"


def finishing_line(folder: Path, n: int, states: int, solved_at: float) -> str:
    """The equilibrium's finishing probabilities of the n-player layer (``folder``: their checkpoint
    folder; ``solved_at``: when the layers up to n were last solved, POSIX time)."""
    head = "  finishing probabilities:"
    record, done, work = _unit(folder, finishing_unit(n), solved_at)
    if done:
        rows = record[0].get("rows")
        return f"{head} done" + (f", {rows:,} rows" if isinstance(rows, int) else "") + f" (saved {when(record[1])})"
    if work is not None:
        blocks = outcomes_status(work, n)
        if blocks.saved_at is None:
            return f"{head} started; " + kept(blocks, "")
        text = f"{head} hand outcomes of " + kept(blocks, f"of {states:,} states done")
        return text + ("; then a policy evaluation of the layer" if blocks.states == states else "")
    return f"{head} " + (STALE.format(when(record[1])) if record is not None else "not started")


def _money(record: dict, key: str) -> str:
    value = record.get(key)
    return f"${value:.4g}" if isinstance(value, (int, float)) else "?"


def _rounds(count) -> str:
    """"1 nemesis round", "3 nemesis rounds" ("?" where a record lacks the count)."""
    return f"{count} nemesis round{'' if count == 1 else 's'}"


def ex_post_line(folder: Path, n: int, states: int, solved_at: float) -> str:
    """The equilibrium's ex post check of the n-player layer (``folder``: the ex post checkpoint folder)."""
    head = "  ex post check:"
    record, done, work = _unit(folder, ex_post_unit(n), solved_at)
    if done:
        r = record[0]
        return (f"{head} done in {_rounds(r.get('rounds', '?'))}, largest gain {_money(r, 'max_gain')}, "
                f"mean {_money(r, 'mean_gain')} (saved {when(record[1])})")
    if work is None:
        return f"{head} " + (STALE.format(when(record[1])) if record is not None else "not started")
    st = nemesis_status(work, n)
    rounds = len(st.rounds)
    if st.converged:
        return f"{head} converged in {_rounds(rounds)}; its values go to the warehouse next"
    text = f"{head} {_rounds(rounds)} done"
    if st.rounds:
        last = st.rounds[-1]
        text += f" (the last: Bellman residual ${last['bellman_residual']:.3g}, {last['wall_s']:,.0f} s)"
    return text + f"; round {rounds + 1}: " + kept(st.current, f"of {states:,} states done")


def _model_ex_post(folder: Path, model: str, cfg: GameConfig, checked_after: float) -> str:
    """A model's ex post check: done, or where it is (its hand outcomes layer by layer, then its
    nemesis rounds layer by layer; ``folder``: the ex post checkpoint folder)."""
    # (a record from before the convergence checks, without value_error, is checked again)
    record, done, work = _unit(folder, model, checked_after, lambda r: "value_error" in r)
    if done:
        return f"ex post check done (saved {when(record[1])})"
    if work is None:
        return "ex post check stale (from before the last sweep, or an older check): the next build redoes it" \
            if record else "ex post check not started"
    layers = range(2, cfg.players + 1)
    for n in layers:
        outcomes = outcomes_status(work, n)
        if outcomes.states < n_states(cfg.units, n):
            return f"ex post check: the {n}-player layer's hand outcomes, " + \
                kept(outcomes, f"of {n_states(cfg.units, n):,} states done")
    for n in layers:
        st = nemesis_status(work, n)
        if not st.converged:
            return (f"ex post check: the {n}-player layer's nemesis round {len(st.rounds) + 1}, "
                    + kept(st.current, f"of {n_states(cfg.units, n):,} states done"))
    return "ex post check: converged in every layer; its values go to the warehouse next"


def control_line(cfg: GameConfig, cache: Path, solved_at: float) -> str:
    """The equilibrium's own simulated tournaments (the control of the `simulations` asset, which a
    build with ``--skip-models`` plays too), once every layer is solved."""
    found = kept_record(game_folder(cache, "simulations", cfg, adopt=False), hero_unit("equilibrium"),
                        simulation_parameters(cfg))
    head = "the equilibrium's simulated tournaments (the control):"
    if found is None:
        return f"{head} not played yet with this game's tournaments and seed (it follows the solves)"
    record, saved_at = found
    if saved_at < solved_at:
        return f"{head} stale (played before a layer was last solved; the next build plays them again)"
    rows = record.get("rows", [])
    played = sum(int(r.get("tournaments", 0)) for r in rows)
    return (f"{head} played ({played:,} tournaments over {len(rows)} starting seats, largest |z| against the "
            f"solved values {float(record.get('control_z', 0.0)):.2f}; saved {when(saved_at)})")


def model_lines(cfg: GameConfig, cache: Path, solved_at: float) -> Iterator[str]:
    """Each model's sweep, ex post check and simulated tournaments (only once a sweep has
    started: a build with ``--skip-models`` runs none of them)."""
    folder, ex_post, simulated = (game_folder(cache, kind, cfg, adopt=False)
                                  for kind in ("models", "ex_post", "simulations"))
    players = list(range(2, cfg.players + 1))
    sweeps = [sweep_status(folder, model, players) for model in model_names(cfg.fgs_depth)] if folder.is_dir() else []
    if not any(st.saved or st.current.saved_at is not None for st in sweeps):
        yield ("model sweeps: none saved yet (a sweep saves its first part after 5 minutes; `./lab build` without "
               "--skip-models runs them after the equilibrium)")
        return
    yield f"model sweeps (each state's hand solved under the model's values), in {folder}:"
    # what checks a model's profile depends on every sweep (the fingerprint of model_sweeps), and the
    # simulations on the equilibrium too
    swept_at = max([st.saved_at for st in sweeps if st.saved_at is not None], default=0.0)
    earlier_done = True
    for st in sweeps:
        head = f"  {st.label}:"
        if st.in_progress is not None:
            if not st.saved and st.current.saved_at is None:
                # the sweeps run in this order: the first after those done is next, or in its first minutes
                yield f"{head} " + ("next: no part checkpoint of it yet" if earlier_done else "not started")
                earlier_done = False
                continue
            earlier_done = False
            states = n_states(cfg.units, st.in_progress)
            done = f"{len(st.saved)} layer{'s' if len(st.saved) > 1 else ''} saved, " if st.saved else ""
            yield (f"{head} sweep: {done}the {st.in_progress}-player layer: "
                   + kept(st.current, f"of {states:,} states done", "part"))
            continue
        parts = [f"{head} sweep done ({duration(sum(st.saved.values()))} over {len(st.saved)} layers)",
                 _model_ex_post(ex_post, st.label, cfg, swept_at)]
        # its tournaments against the equilibrium, then (but Harville's) its direct match against Harville
        units = [(hero_unit(st.label), simulation_parameters(cfg))]
        if st.label != "harville":
            units.append((match_unit(st.label), match_parameters(cfg)))
        records = [kept_record(simulated, unit, stamped) for unit, stamped in units]
        played = all(r is not None and r[1] >= max(swept_at, solved_at) for r in records)
        parts.append("its tournaments simulated" if played else "not simulated yet")
        yield "; ".join(parts)


def triple_table_line(cfg: GameConfig, cache: Path, solve_started: bool) -> str | None:
    """The triple table's chunks (the first 13–16 minutes of a `thesis` build, exact; about a
    minute sampled), None without chunks once the game's solve has started (the table was built,
    with another cache or before this one), and None for a heads-up game, which builds none."""
    if not cfg.uses_triples:
        return None
    mode = cfg.rollout_triples
    saved, total, last = triple_chunks_saved(cache / "rollout" / cfg.rollout_id("triples"), mode,
                                             cfg.rollout_boards("triples"), cfg.rollout_seed)
    if not saved:
        return None if solve_started else f"{mode} triple table: not started"
    done = "all" if saved == total else f"{saved} of"
    return f"{mode} triple table: {done} {total} chunks computed (the last saved {when(last)})"


def unused_folders_line(cfg: GameConfig, cache: Path) -> str | None:
    """The old-form checkpoint folders of this equilibrium that no build uses any more
    (:func:`assets.resume.unused_old_folders`), with what deleting them frees; None if none."""
    unused = unused_old_folders(cache, cfg)
    if not unused:
        return None
    size = sum(f.stat().st_size for p in unused for f in p.rglob("*") if f.is_file())
    names = ", ".join(str(p.relative_to(cache)) for p in unused)
    return (f"unused: {len(unused)} checkpoint folder{'s' * (len(unused) > 1)} of this equilibrium left from before "
            f"2026-11-29, when folders were named by game ({names} in {cache}; {size / 1e9:.2f} GB): no build reads "
            "them; delete them to free the space")


def report(cfg: GameConfig, solve_folder: Path, cache: Path) -> Iterator[str]:
    """The lines of every layer: its solve, then, once solved, its finishing probabilities and ex
    post check. ``cache``: the checkpoints' root (``JAMFOLD_CACHE``); ``solve_folder``: the game's
    solve checkpoints in it."""
    tables = triple_table_line(cfg, cache, solve_folder.is_dir())
    if tables is not None:
        yield tables
    solved_at = 0.0  # the latest solve of the layers so far: later steps depend on all of them
    for n in range(2, cfg.players + 1):
        states = n_states(cfg.units, n)
        try:
            st = layer_status(solve_folder, n, states, float(sum(cfg.payouts[:n])))
        except DamagedCheckpoint as exc:  # say so and go on with the other layers
            yield f"{n}-player layer: {exc}"
            solved_at = float("inf")
            continue
        yield from layer_lines(st, cfg.gamma)
        if not st.finished or st.current.states:
            solved_at = float("inf")  # nothing after it can be current
            continue
        if solved_at == float("inf"):  # a smaller layer unreadable or being solved again
            yield "  finishing probabilities and ex post check: after the smaller layers' solves"
            continue
        solved_at = max(solved_at, st.saved_at or 0.0)
        for line, kind in ((finishing_line, "finishing"), (ex_post_line, "ex_post")):
            try:
                yield line(game_folder(cache, kind, cfg, adopt=False), n, states, solved_at)
            except DamagedCheckpoint as exc:
                yield f"  {kind.replace('_', ' ')}: {exc}"
    if solved_at != float("inf"):
        yield control_line(cfg, cache, solved_at)
    try:
        yield from model_lines(cfg, cache, solved_at)
    except DamagedCheckpoint as exc:
        yield f"model sweeps: {exc}"
