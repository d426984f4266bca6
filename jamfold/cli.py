"""`jamfold` — the command line of the tournament equity lab.

Human-readable output by default, ``--json`` for machines. User errors print one line naming the
argument and the rule and exit with status 2 (no traceback).
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import re
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine.config import EXAMPLE_STACK_RANGE, PRIZE_POOL_RANGE, ConfigError, GameConfig
from engine.cores import configured_threads

EXIT_USAGE = 2
REPO = Path(__file__).resolve().parent.parent


class UsageError(Exception):
    """Bad user input: ``str(exc)`` names the argument and the rule."""


def _fail(message: str) -> None:
    print(f"jamfold: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


# ---------------------------------------------------------------- equity
def _positive_numbers(name: str, values: Sequence[str], allow_zero: bool = False) -> list[float]:
    out = []
    for v in values:
        if not v.isascii() or "_" in v:  # (Python's float() also reads '٣' and '1_000')
            raise UsageError(f"{name}: {v!r} is not a number")
        try:
            x = float(v) + 0.0  # (+ 0.0: no '-0' in the output)
        except ValueError:
            raise UsageError(f"{name}: {v!r} is not a number") from None
        if not math.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
            raise UsageError(f"{name}: every value must be a finite number {'≥' if allow_zero else '>'} 0 (got {v})")
        out.append(x)
    return out


def cmd_equity(args: argparse.Namespace) -> None:
    from engine import equity_models

    limit = 9 if args.model == "roberts" else 20
    stacks = _positive_numbers("--stacks", args.stacks)
    lo, hi = EXAMPLE_STACK_RANGE
    if not all(lo <= x <= hi for x in stacks):
        raise UsageError(f"--stacks: every stack must be from {lo:g} to {hi:g} chips (the models only see their "
                         f"ratios; got {' '.join(args.stacks)})")
    if not 2 <= len(stacks) <= limit:
        raise UsageError(f"--stacks: the {args.model} model takes 2 to {limit} stacks (got {len(stacks)})")
    payouts = _positive_numbers("--payouts", args.payouts, allow_zero=True)
    if any(payouts[i] < payouts[i + 1] for i in range(len(payouts) - 1)):
        raise UsageError(f"--payouts: must be non-increasing (got {' '.join(args.payouts)})")
    if len(payouts) > len(stacks):
        raise UsageError(f"--payouts: pays {len(payouts)} places but there are only {len(stacks)} players")
    if sum(payouts) <= 0:
        raise UsageError(f"--payouts: must pay a positive prize pool (got {' '.join(args.payouts)})")
    lo, hi = PRIZE_POOL_RANGE  # (as a game config's: 1e308 printed a 300-digit payoff, 1e-320 a denormal one)
    if not lo <= sum(payouts) <= hi:
        raise UsageError(f"--payouts: must sum to a prize pool from {lo:g} to {hi:g} $ (got {' '.join(args.payouts)})")
    P = equity_models.finishing_matrix(args.model, stacks)
    v = equity_models.payoffs(P, payouts)
    if args.json:
        print(json.dumps({"model": args.model, "stacks": stacks, "payouts": payouts,
                          "finishing": P.tolist(), "payoffs": v.tolist()}))
        return
    n = len(stacks)
    print(f"{args.model} finishing matrix (rows = players, columns = places), payouts {', '.join(f'{p:g}' for p in payouts)}")
    print(f"{'player':>6} {'stack':>8} " + " ".join(f"{'P' + str(k + 1):>7}" for k in range(n)) + f" {'payoff $':>9}")
    for i in range(n):
        print(f"{i + 1:>6} {stacks[i]:>8g} " + " ".join(f"{P[i, k]:7.4f}" for k in range(n)) + f" {v[i]:9.4f}")


# ---------------------------------------------------------------- showdown
def cmd_showdown(args: argparse.Namespace) -> None:
    from engine import rollout
    from engine.cards import can_be_dealt_together, class_label, parse_class

    if not 2 <= len(args.hands) <= 3:
        raise UsageError(f"hands: give 2 or 3 hand classes (got {len(args.hands)})")
    try:
        ids = [parse_class(h) for h in args.hands]
    except ValueError as exc:
        raise UsageError(f"hands: {exc}") from None
    labels = [class_label(i) for i in ids]
    if not can_be_dealt_together(ids):  # refused before the rollout (a triple's takes seconds)
        raise UsageError(f"hands: {' '.join(labels)} cannot be dealt together (not enough cards of a rank)")
    t0 = time.perf_counter()
    if len(ids) == 2:
        weight, p = rollout.pair_matchup(*ids)
        if args.json:
            print(json.dumps({"hands": labels, "weight": int(weight), "p_first_wins": float(p)}))
            return
        print(f"{labels[0]} vs {labels[1]}: exact over every deal and all C(48,5) boards, ties split evenly")
        print(f"  deal weight          {weight:,} card-disjoint combo deals of {{{labels[0]}, {labels[1]}}} (either order)")
        print(f"  P({labels[0]} wins) {'':<{max(0, 8 - len(labels[0]))}}{p:.6f}")
        print(f"  P({labels[1]} wins) {'':<{max(0, 8 - len(labels[1]))}}{1 - p:.6f}")
    else:
        weight, p = rollout.triple_matchup(*ids)
        if args.json:
            print(json.dumps({"hands": labels, "weight": int(weight), "orders": list(rollout.ORDERS),
                              "p": [float(x) for x in p]}))
            return
        letters = dict(zip("abc", labels))
        print(f"{' vs '.join(labels)}: exact over every deal and all C(46,5) boards, ties broken at random")
        print(f"  deal weight {weight:,} card-disjoint combo deals of this multiset (any order)")
        for order, prob in zip(rollout.ORDERS, p):
            print(f"  {order}  {' > '.join(letters[c] for c in order):<18} {prob:.6f}")
        best = [p[0] + p[1], p[2] + p[3], p[4] + p[5]]
        print("  P(best): " + ", ".join(f"{lab} {b:.6f}" for lab, b in zip(labels, best)))
    if not args.json:
        print(f"  ({time.perf_counter() - t0:.2f} s)")


# ---------------------------------------------------------------- rollout
def cmd_rollout(args: argparse.Namespace) -> None:
    if args.exact == (args.samples is not None):  # checked before the imports below (seconds)
        raise UsageError("rollout: give exactly one of --exact or --samples N")
    from engine.config import MAX_ROLLOUT_SAMPLES

    if args.samples is not None and not 1 <= args.samples <= MAX_ROLLOUT_SAMPLES:
        raise UsageError(f"--samples: must be a whole number from 1 to {MAX_ROLLOUT_SAMPLES:,} (boards per matchup; "
                         f"for more, use --exact) (got {args.samples})")
    if not 0 <= args.seed < 2**63:
        raise UsageError(f"--seed: must be from 0 to 2^63 − 1 (got {args.seed})")
    from tqdm import tqdm

    from assets.paths import cache_dir, cache_root
    from assets.rollout import write_pair_table, write_triple_table
    from engine import rollout
    from warehouse import db

    mode = "exact" if args.exact else "sampled"
    rollout_id = "exact" if args.exact else f"sampled-{args.samples}-seed{args.seed}"
    kinds = ["pairs", "triples"] if args.kind == "all" else [args.kind]
    db.connect(args.warehouse).close()  # fail now, not after an hour, if the warehouse is locked
    if args.exact:
        _usable_folder("JAMFOLD_CACHE (checkpoints of the exact triples)", cache_root() / "rollout")
    for kind in kinds:
        bar = tqdm(total=1, desc=f"{kind} table ({rollout_id})", unit="matchup", unit_scale=True, file=sys.stderr)

        def progress(done: int, total: int, bar=bar) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        if kind == "pairs":
            table = rollout.build_pair_table(mode, samples=args.samples, seed=args.seed, progress=progress)
        else:
            table = rollout.build_triple_table(mode, samples=args.samples, seed=args.seed, progress=progress,
                                               checkpoint_dir=str(cache_dir("rollout", rollout_id)) if args.exact else None)
        bar.close()
        with db.session(args.warehouse) as con:
            (write_pair_table if kind == "pairs" else write_triple_table)(con, rollout_id, table)
        print(f"{kind}: {len(table.a):,} rows, mode {table.mode}, precision {table.precision:.2e}, "
              f"{table.wall_s:.1f} s → {db.warehouse_path(args.warehouse)} (rollout '{rollout_id}')")


def _game_config(args: argparse.Namespace):
    """The game the command names: its --config file, else its --profile."""
    from engine.config import load_config, profile

    return load_config(args.config) if args.config is not None else profile(args.profile)


def _game_flag(args: argparse.Namespace) -> str:
    """How the command named its game (`--config FILE` or `--profile NAME`, then any field it
    overrode, e.g. `--gamma 0.002`: another game), for messages."""
    flags = [f"--config {args.config}" if args.config is not None else f"--profile {args.profile}"]
    for key in _OVERRIDES:
        value = getattr(args, key, None)
        if value is not None:
            shown = " ".join(map(str, value)) if isinstance(value, list) else str(value)
            flags.append(f"--{key.replace('_', '-')} {shown}")
    return " ".join(flags)


# ---------------------------------------------------------------- site
def _missing_game(con, args: argparse.Namespace, cfg, what: str) -> UsageError:
    """The error for a game the warehouse lacks, naming the games it has: a game built from flags
    (`./lab build --players 3 …`) is named after its profile and settings, and the commands that
    read it take the config file its build wrote (given here where it exists)."""
    how = _game_flag(args)
    folder = _configs_folder(REPO)
    games = []
    for (game,) in con.execute("SELECT game FROM games WHERE game <> ? ORDER BY game", [cfg.name]).fetchall():
        written = folder / f"{game}.toml"
        games.append(f"{game} (--config {written})" if written.is_file() else game)
    others = f"; the warehouse holds {', '.join(games)}" if games else ""
    return UsageError(f"{how.split()[0]}: game '{cfg.name}' {what} (build it first: ./lab build {how}){others}")


def _require_game(con, args: argparse.Namespace, cfg, path: Path) -> None:
    """Refuse a game the warehouse at ``path`` does not hold (see :func:`_missing_game`)."""
    if con.execute("SELECT count(*) FROM games WHERE game = ?", [cfg.name]).fetchone()[0] == 0:
        raise _missing_game(con, args, cfg, f"is not in the warehouse {path}")


def cmd_site(args: argparse.Namespace) -> None:
    """Rebuild a game's site from the warehouse as it is now, materializing nothing: the layers solved
    so far while a long build runs, or what `dagster dev` materialized."""
    cfg = _game_config(args)  # before the imports below
    from assets.paths import build_dir
    from sitegen.build import build_site
    from warehouse import db

    path = db.warehouse_path(args.warehouse)
    _usable_folder("JAMFOLD_BUILD_DIR (the site)", build_dir())  # (before the warehouse is read)
    with db.session(path, read_only=True) as con:
        _require_game(con, args, cfg, path)
    site = build_site(cfg.name, path, build_dir())
    print(f"site of '{cfg.name}' built from the warehouse as it is now: {site / 'index.html'}")


# ---------------------------------------------------------------- build
def _usable_folder(name: str, path: Path) -> None:
    """A folder a build writes to (checkpoints, the site, Dagster's home), made now, before any
    work, so that a bad one fails here and not in the last asset hours later."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{name}: cannot create the folder {path} ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK):
        raise UsageError(f"{name}: the folder {path} is not writable")


def _fits_in_memory(cfg: GameConfig) -> None:
    """Refuse a game whose largest layer's solve would not fit this machine's memory (projected
    from the `thesis` build's measured 6.2 KiB per state and decision node)."""
    from engine.memory import memory_shortfall

    why = memory_shortfall(cfg.players, cfg.units)
    if why is not None:
        raise UsageError(why)


def cmd_build(args: argparse.Namespace) -> None:
    cfg = _config_from_args(args)
    if not args.skip_solve:
        _fits_in_memory(cfg)
    from warehouse import db

    repo = REPO
    if not os.environ.get("DAGSTER_HOME"):  # (unset or empty)
        os.environ["DAGSTER_HOME"] = str(repo / ".dagster_home")
    home = Path(os.environ["DAGSTER_HOME"])
    _usable_folder("DAGSTER_HOME", home)
    from assets.paths import build_dir, cache_root
    from engine.checkpoint import folder_lock

    _usable_folder("JAMFOLD_CACHE (checkpoints)", cache_root())
    _usable_folder("JAMFOLD_BUILD_DIR (the site)", build_dir())
    # a bad or busy warehouse fails now, before Dagster loads (and after the folders: a build refused
    # for one of them leaves no new warehouse file behind)
    db.connect(args.warehouse).close()
    # one build of a game at a time (two would write the same checkpoints), held from before the
    # build writes anything: a running build's assets read the config copy it writes; games with the
    # same equilibrium share their checkpoints (assets.resume.game_key), so they share the lock
    from assets.resume import game_key

    with folder_lock(cache_root() / "builds" / game_key(cfg),
                     f"a build of game '{cfg.name}', or of a game with its equilibrium (they share checkpoints),"):
        _run_build(args, cfg, repo, home)


def _run_build(args: argparse.Namespace, cfg: GameConfig, repo: Path, home: Path) -> None:
    """Materialize the game's assets in this process, with the build's progress on stderr."""
    from jamfold.instance import write_instance_config

    write_instance_config(home)  # as ./lab does
    import dagster as dg

    from assets.definitions import ALL_ASSETS
    from assets.deviation import deviation_statistics
    from assets.ex_post import EX_POST_ASSETS
    from assets.fgs import fgs_strategies
    from assets.finishing import FINISHING_ASSETS
    from assets.model_analysis import model_strategies
    from assets.model_ex_post import ex_post_models
    from assets.paths import build_dir
    from assets.resources import GameResource, WarehouseResource
    from assets.simulation import simulations
    from assets.solve import LAYER_ASSETS
    from warehouse import db

    cfg_file = ""
    if _needs_config_file(args, cfg):
        cfg_file = str(_write_config(cfg, repo))
    resources = {"game": GameResource(profile=args.profile, config_file=cfg_file),
                 "warehouse": WarehouseResource(path=str(db.warehouse_path(args.warehouse)))}
    print(f"building game '{cfg.name}': {cfg.players} players, {cfg.units} units, payouts {list(cfg.payouts)}", file=sys.stderr)
    t0 = time.perf_counter()
    sweeps = [model_strategies, fgs_strategies, ex_post_models]
    left_out = [*LAYER_ASSETS, *FINISHING_ASSETS, *EX_POST_ASSETS, deviation_statistics, *sweeps, simulations] \
        if args.skip_solve else sweeps if args.skip_models else []
    selection = [a for a in ALL_ASSETS if a not in left_out]
    if args.skip_solve:
        print("(equilibrium skipped: --skip-solve)", file=sys.stderr)
    elif args.skip_models:
        print("(model sweeps skipped: --skip-models; Harville, Weitzman and Roberts are compared with the equilibrium "
              "and the equilibrium's tournaments are simulated, the same command without the flag goes on with the "
              "sweeps)", file=sys.stderr)
    from jamfold.interrupts import SigintWatch, numba_compile_shield
    from jamfold.progress import BuildProgress, build_logger, quiet_interrupted_closes

    quiet_interrupted_closes()
    run_config: dict = {"loggers": {"build": {}}}
    if args.skip_models:  # the deviation statistics and the simulations take the models that need no sweep
        run_config["ops"] = {op: {"config": {"sweeps_left_out": True}} for op in ("deviation_statistics", "simulations")}
    with SigintWatch() as sigints, numba_compile_shield():
        progress = BuildProgress(total=len(selection), sigints=sigints)
        defs = dg.Definitions(assets=selection, resources=resources, loggers={"build": build_logger(progress)},
                              jobs=[dg.define_asset_job("jamfold_build", tags={"game": cfg.name})])
        try:
            result = defs.resolve_job_def("jamfold_build").execute_in_process(
                instance=dg.DagsterInstance.get(), raise_on_error=False, run_config=run_config)
        finally:
            progress.finish()
    if progress.interrupted or sigints.received:  # a SIGINT that ended no step still ends the build
        print("jamfold: interrupted; finished work is kept, run the same command again to resume", file=sys.stderr)
        raise SystemExit(130)
    if not result.success:
        if progress.remedies and not progress.reasons:  # a failed check that says what to do: its words
            print(f"jamfold: build failed: {progress.remedies[0]}; finished assets are kept", file=sys.stderr)
            raise SystemExit(1)
        why = "".join(f": {reason}" for reason in progress.reasons[:1])
        print(f"jamfold: build failed{why}; finished assets are kept, run the same command again to resume",
              file=sys.stderr)
        raise SystemExit(1)
    print(f"built '{cfg.name}' in {time.perf_counter() - t0:.0f} s; site: {build_dir() / 'site' / 'index.html'}")
    if cfg_file:  # the game's fields as a config file: `jamfold state --config` and `dagster dev` read it
        print(f"its config: {cfg_file}")


def _needs_config_file(args: argparse.Namespace, cfg: GameConfig) -> bool:
    """Whether the build's game is not a profile as it stands: a --config file's, or a profile the
    flags changed (flags that give fields the values they have leave the profile as it is)."""
    return args.config is not None or cfg.to_dict() != _game_config(args).to_dict()


_OVERRIDES = ("players", "units", "payouts", "gamma", "start", "fgs_depth", "simulation_tournaments",
              "direct_match_tournaments", "simulation_seed")


def _config_from_args(args: argparse.Namespace):
    from engine.config import with_overrides

    return with_overrides(_game_config(args), **{k: getattr(args, k) for k in _OVERRIDES})


def _configs_folder(repo: Path) -> Path:
    """Where a build keeps the config files of games made from flags (under the Dagster home)."""
    return Path(os.environ.get("DAGSTER_HOME") or repo / ".dagster_home") / "configs"


def _write_config(cfg, repo: Path) -> Path:
    """Persist an ad-hoc config so Dagster (and a later `dagster dev`) can reload exactly it."""
    path = _configs_folder(repo) / f"{cfg.name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for k, v in cfg.to_dict().items():
        lines.append(f"{k} = {json.dumps(v)}")
    from engine.atomic_files import write_text_atomic

    write_text_atomic(path, "\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------- sql
def cmd_sql(args: argparse.Namespace) -> None:
    """One SQL query on the warehouse, read-only, its rows printed: every number on the site is a
    table or view there (the site's Warehouse page lists them), and the lab's environment has the
    DuckDB Python package but no DuckDB shell. The connection is the lab's own, so a warehouse an
    older version wrote gets the views added since, for this session; it reads no other file and
    writes none (no ATTACH, COPY … TO, EXPORT or extension: a hard link to the warehouse, attached
    read-write, would have been written)."""
    import duckdb

    from warehouse import db

    query = args.query.strip()
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:  # (bytes the shell passed that are not UTF-8)
        raise UsageError("QUERY: is not UTF-8 text") from None
    if not query:
        raise UsageError('QUERY: give one SQL query, e.g. "SELECT * FROM games"')
    with db.session(args.warehouse, read_only=True) as con:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")  # (so that the query cannot turn it back on)
        try:
            statements = con.extract_statements(query)
            if len(statements) != 1:
                raise UsageError(f"QUERY: give one SQL query; this has {len(statements)} statements")
            if args.csv:
                _print_csv(con, statements[0])
            else:
                rows = con.sql(query)
                if rows is not None:  # (None: a statement without rows)
                    rows.show()
        except duckdb.Error as exc:  # (a typo, a table the warehouse lacks, a write: one line, no traceback)
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            said = lines[:2] if len(lines) > 1 and lines[0].endswith(":") else lines[:1]
            said += [line for line in lines[1:] if line.startswith("Did you mean")]
            raise UsageError(f"QUERY: {' '.join(said)}") from None


def _print_csv(con, statement) -> None:
    """Every row of ``statement`` as CSV with a header line, each value as DuckDB writes it (DuckDB
    casts them to text: lists, maps, intervals, timestamps), NULL as an empty field; a SELECT is
    streamed 10,000 rows at a time (a table of millions of rows)."""
    import csv

    import duckdb

    out = csv.writer(sys.stdout, lineterminator="\n")
    rows = con.sql(statement.query)
    if rows is None:
        return
    out.writerow(rows.columns)
    if statement.type == duckdb.StatementType.SELECT:
        result = con.execute(f"SELECT COLUMNS(*)::VARCHAR FROM ({statement.query})")
        while batch := result.fetchmany(10_000):
            out.writerows(batch)
    else:  # (PRAGMA, CALL, EXPLAIN: small, and not a subquery)
        out.writerows(rows.project("COLUMNS(*)::VARCHAR").fetchall())


# ---------------------------------------------------------------- progress
def cmd_progress(args: argparse.Namespace) -> None:
    """Where a game's build stands, read from its checkpoints: for a build that runs for a day, run
    beside it or after an interrupt. Reads a few small members of the checkpoint files and takes no
    lock (a build starting meanwhile is not disturbed)."""
    cfg = _config_from_args(args)
    from assets.paths import cache_root
    from assets.resume import game_folder, game_key
    from engine.solve_status import lock_holder

    if cache_root().exists() and not cache_root().is_dir():
        raise UsageError(f"JAMFOLD_CACHE (checkpoints): {cache_root()} is not a folder")
    folder = game_folder(cache_root(), "solve", cfg, adopt=False)
    print(f"game '{cfg.name}': {cfg.players} players, {cfg.units} units, payouts "
          f"${'/'.join(f'{x:g}' for x in cfg.payouts)}, gamma ${cfg.gamma:g}")
    print(f"checkpoints: {folder}")
    build = lock_holder(cache_root() / "builds" / game_key(cfg))
    solve = lock_holder(folder) if folder.is_dir() else None
    if build is not None:
        print(f"running: a build of game '{cfg.name}', or of a game with its equilibrium (process {build})")
    elif solve is not None:
        print(f"running: a solve in this folder (process {solve}; from the Dagster UI?)")
    elif folder.is_dir() or (cache_root() / "rollout" / cfg.rollout_id("triples")).is_dir():
        print(f"no running build found: `./lab build {_game_flag(args)}` with the same flags goes on from here")
    else:
        print(f"no running build found, and no checkpoints: the game's solve has not started with this config "
              f"and JAMFOLD_CACHE (`./lab build {_game_flag(args)}` starts it)")
        return
    from jamfold.status_report import report, unused_folders_line

    for line in report(cfg, folder, cache_root()):
        print(line)
    unused = unused_folders_line(cfg, cache_root())
    if unused is not None:
        print(unused)


# ---------------------------------------------------------------- state
def cmd_state(args: argparse.Namespace) -> None:
    from engine.cards import CLASS_COMBO_COUNT, class_label, range_string
    from engine.config import position_names
    from warehouse import db

    cfg = _game_config(args)
    stacks = _whole_stacks(args.stacks, cfg)
    n = len(stacks)
    with db.session(args.warehouse, read_only=True) as con:
        row = con.execute("SELECT state_id FROM states WHERE game = ? AND players = ? AND stacks = ?",
                          [cfg.name, n, stacks]).fetchone()
        if row is None:  # (the stacks are valid for the game: the game itself is missing, named by its flag)
            raise _missing_game(con, args, cfg, "is not built in the warehouse")
        sid = row[0]
        eq = [v for (v,) in con.execute("SELECT value FROM equilibrium_values WHERE game = ? AND players = ? AND state_id = ? "
                                        "ORDER BY position", [cfg.name, n, sid]).fetchall()]
        if not eq:
            raise UsageError(f"--stacks: the {n}-player layer of game '{cfg.name}' is not solved yet (materialize solve_{n}p)")
        icm = [v for (v,) in con.execute("SELECT payoff FROM model_payoffs WHERE game = ? AND model = 'harville' AND players = ? "
                                         "AND state_id = ? ORDER BY position", [cfg.name, n, sid]).fetchall()]
        icm = icm or None  # not computed yet: a layer solved in the Dagster UI before equity_model_tables
        rows = con.execute("SELECT position, place, probability FROM finishing WHERE game = ? AND players = ? "
                           "AND state_id = ?", [cfg.name, n, sid]).fetchall()
        fin = None  # not computed yet: the layer is solved but finishing_{n}p not materialized
        if rows:
            fin = np.zeros((n, n))
            for p, q, prob in rows:
                fin[p, q - 1] = prob
        expl = con.execute("SELECT exploitability FROM state_quality WHERE game = ? AND players = ? AND state_id = ?",
                           [cfg.name, n, sid]).fetchone()[0]
        nodes = con.execute("SELECT actor_name, jammed_before, jam FROM equilibrium_nodes WHERE game = ? AND players = ? "
                            "AND state_id = ? ORDER BY node", [cfg.name, n, sid]).fetchall()
    positions = list(position_names(n))
    node_list = [{"actor": actor, "jammed_before": list(before), "jam": {class_label(c): float(p) for c, p in enumerate(jam)}}
                 for actor, before, jam in nodes]
    if args.json:
        print(json.dumps({"game": cfg.name, "stacks": stacks, "positions": positions, "equilibrium": eq, "icm": icm,
                          "finishing": None if fin is None else fin.tolist(), "exploitability": expl,
                          "nodes": node_list}))
        return
    print(f"game '{cfg.name}': stacks {stacks} (units; SB = 1, BB = 2), exploitability of the hand {expl:.2e} $")
    places = "" if fin is None else " " + " ".join(f"{'P' + str(q + 1):>6}" for q in range(n))
    print(f"{'pos':>4} {'stack':>6} {'equilibrium $':>14} {'ICM $':>9}" + places)
    for p in range(n):
        probs = "" if fin is None else " " + " ".join(f"{fin[p, q]:6.3f}" for q in range(n))
        print(f"{positions[p]:>4} {stacks[p]:>6} {eq[p]:>14.4f} {'' if icm is None else f'{icm[p]:.4f}':>9}" + probs)
    if icm is None:
        print("ICM payoffs: not computed yet (materialize equity_model_tables)")
    if fin is None:
        print(f"finishing probabilities: not computed yet (materialize finishing_{n}p)")
    if not node_list:
        print("\nno decision in this hand: the blinds put players all in, and the rest is automatic (SPEC §2)")
    for node in node_list:
        before = ", ".join(node["jammed_before"]) or "nobody"
        pure = [c for c, (lab, p) in enumerate(node["jam"].items()) if p >= 0.999]
        mixed = [(lab, p) for lab, p in node["jam"].items() if 0.001 < p < 0.999]
        share = 100 * sum(p * CLASS_COMBO_COUNT[c] for c, p in enumerate(node["jam"].values())) / 1326
        print(f"\n{node['actor']} after {before} jammed: jams {range_string(pure) or 'nothing'}"
              + (f"; mixes {', '.join(f'{lab} {p:.3f}' for lab, p in mixed)}" if mixed else "")
              + f"  ({share:.1f}% of hands)")


# ---------------------------------------------------------------- simulate
MAX_CLI_TOURNAMENTS = 10**10
"""The most tournaments `jamfold simulate` plays per seat (the configs' `simulation_tournaments` bound)."""


def cmd_simulate(args: argparse.Namespace) -> None:
    """Monte Carlo tournaments on the warehouse's solved profiles, from the game's start state or
    ``--stacks``: everybody on the equilibrium (its simulated payoffs beside the solved values), or
    one player on a model's strategies at each starting position in turn. Prints what the
    simulation costs too (tournaments a second, hands a tournament, decisions and showdowns a hand):
    the simulation's speed goal (a million tournaments a second from the 45-unit 5-player start)
    measured on the real equilibrium rather than the bench's synthetic profile."""
    from engine.config import MAX_SIMULATION_SEED, position_names
    from engine.equity_models import model_names

    cfg = _game_config(args)
    stacks = _whole_stacks(args.stacks, cfg) if args.stacks else list(cfg.start)
    n = len(stacks)
    positions = list(position_names(n))
    if not 1 <= args.tournaments <= MAX_CLI_TOURNAMENTS:
        raise UsageError(f"--tournaments: must be a whole number from 1 to 10^10 (got {args.tournaments})")
    if not 0 <= args.seed <= MAX_SIMULATION_SEED:
        raise UsageError(f"--seed: must be from 0 to 10^12 (got {args.seed})")
    models = model_names(cfg.fgs_depth)
    if args.model is not None and args.model not in models:
        raise UsageError(f"--model: game '{cfg.name}' has the models {', '.join(models)} (got {args.model!r})")
    if args.hero is not None:
        if args.model is None:
            raise UsageError("--hero: needs --model (the hero is the player on the model's strategies)")
        if args.hero not in positions:
            where = f"the state {' '.join(map(str, stacks))}" if args.stacks else f"the {n}-player start"
            raise UsageError(f"--hero: a position of {where}, one of {', '.join(positions)} (got {args.hero!r})")
    from tqdm import tqdm

    from assets.ex_post import read_strategies
    from assets.simulation import swept_models
    from assets.solve import equilibrium_tensors
    from engine.simulation import (ShowdownSampler, compact_profile, default_processes, pack_game, pack_profile,
                                   simulate, simulate_against)
    from engine.states import enumerate_states
    from warehouse import db

    path = db.warehouse_path(args.warehouse)
    sizes = {k: len(enumerate_states(cfg.units, k)) for k in range(2, cfg.players + 1)}
    with db.session(path, read_only=True) as con:
        _require_game(con, args, cfg, path)
        solved = {k for (k,) in con.execute("SELECT DISTINCT players FROM equilibrium_values WHERE game = ?",
                                             [cfg.name]).fetchall()}
        missing = [k for k in sizes if k not in solved]
        if missing:
            raise UsageError(f"{_game_flag(args).split()[0]}: the simulation needs every layer's equilibrium; game "
                             f"'{cfg.name}' has no {missing[0]}-player layer solved yet "
                             f"(materialize solve_{missing[0]}p)")
        if args.model is not None and args.model not in swept_models(con, cfg.name, cfg.players):
            raise UsageError(f"--model: the warehouse holds no {args.model} strategies of game '{cfg.name}' for every "
                             f"layer (its model sweep has not run: ./lab build {_game_flag(args)} without "
                             f"--skip-models)")
        values = [v for (v,) in con.execute(
            """SELECT v.value FROM equilibrium_values v JOIN states s USING (game, players, state_id)
               WHERE v.game = ? AND s.players = ? AND s.stacks = ? ORDER BY v.position""",
            [cfg.name, n, stacks]).fetchall()]
        if not args.json:
            print(f"packing the hand trees of game '{cfg.name}' and reading its strategies …", file=sys.stderr)
        game = pack_game(cfg.units, cfg.players, cfg.payouts, processes=default_processes())

        def profile_of(model: str | None):  # compact: exact, about a tenth of the float32 rows
            return compact_profile(pack_profile(game, {k: read_strategies(con, cfg.name, k, m, model)
                                                       for k, m in sizes.items()}))

        eq = profile_of(None)
        model = None if args.model is None else profile_of(args.model)
    sampler = ShowdownSampler.from_tensors(equilibrium_tensors(str(path), cfg))
    heroes = [positions.index(args.hero)] if args.hero is not None else list(range(n))
    seats = 1 if model is None else len(heroes)
    simulate(game, [eq], [0] * n, stacks, 1, args.seed, sampler)  # compile (or load) the kernel before the clock
    bar = tqdm(total=args.tournaments * seats, desc="tournaments", unit="t", unit_scale=True, file=sys.stderr,
               disable=args.json)
    t0 = time.perf_counter()
    if model is None:
        results = [simulate(game, [eq], [0] * n, stacks, args.tournaments, args.seed, sampler,
                            progress=lambda done, total: bar.update(done - bar.n))]
    else:
        results = simulate_against(game, model, eq, stacks, args.tournaments, args.seed, sampler, heroes=heroes,
                                   progress=lambda h, done, total: bar.update(
                                       heroes.index(h) * total + done - bar.n))
    bar.close()
    wall = time.perf_counter() - t0
    played = args.tournaments * len(results)
    hands = sum(r.mean_hands for r in results) / len(results)
    events = {k: sum(r.hand_events[k] for r in results) / len(results) for k in results[0].hand_events}
    speed = {"tournaments_per_s": played / wall, "mean_hands": hands, "hand_events": events, "wall_s": wall}
    _print_simulation(args, cfg, stacks, positions, values, results, heroes, speed)


def _print_simulation(args: argparse.Namespace, cfg, stacks: list[int], positions: list[str], values: list[float],
                      results: list, heroes: list[int], speed: dict) -> None:
    """`jamfold simulate`'s report: a table per position (the control) or per hero seat (a model)."""
    n = len(stacks)
    control = args.model is None
    rows = []
    for p, r in ([(p, results[0]) for p in range(n)] if control else zip(heroes, results)):
        row = {"position": positions[p], "stack": stacks[p], "solved_value": values[p],
               "mean_payoff": float(r.mean[p]), "standard_error": float(r.se[p])}
        if control:
            row["z"] = float((r.mean[p] - values[p]) / r.se[p]) if r.se[p] > 0 else 0.0
        row["roi_pct"] = float(r.roi[p])
        if not control:
            row["roi_se_pct"] = float(r.roi_se[p])
        row["finishing"] = r.finishing[p].tolist()
        if not control:
            row["seed"] = r.seed
        rows.append(row)
    unfinished = sum(r.unfinished for r in results)
    if args.json:
        print(json.dumps({"game": cfg.name, "stacks": stacks, "positions": positions, "model": args.model,
                          "tournaments": args.tournaments, "seed": args.seed, "rows": rows,
                          "unfinished": unfinished, **speed}))
        return
    who = "everybody on the equilibrium" if control else \
        f"one player on {args.model}'s strategies (the hero), the others on the equilibrium"
    print(f"game '{cfg.name}': {args.tournaments:,} tournaments{'' if control else ' per hero seat'} from "
          f"{stacks} (units), seed {args.seed}; {who}")
    # (header, row key, width, format) of each column before the finishing probabilities
    columns = ([("pos", "position", 4, ""), ("stack", "stack", 6, ""), ("solved $", "solved_value", 10, ".4f"),
                ("simulated $", "mean_payoff", 12, ".4f"), ("± SE", "standard_error", 8, ".4f"),
                ("z", "z", 6, ".2f"), ("ROI %", "roi_pct", 8, ".3f")] if control else
               [("hero", "position", 4, ""), ("stack", "stack", 6, ""), ("eq. value $", "solved_value", 11, ".4f"),
                ("hero $", "mean_payoff", 9, ".4f"), ("± SE", "standard_error", 8, ".4f"),
                ("ROI %", "roi_pct", 8, ".3f"), ("± SE", "roi_se_pct", 7, ".3f")])
    print(" ".join(f"{head:>{width}}" for head, _, width, _ in columns) + " "
          + " ".join(f"{'P' + str(q + 1):>6}" for q in range(n)))
    for r in rows:
        print(" ".join(f"{r[key]:>{width}{fmt}}" for _, key, width, fmt in columns) + " "
              + " ".join(f"{x:6.3f}" for x in r["finishing"]))
    import numba

    ev = speed["hand_events"]
    print(f"speed: {speed['tournaments_per_s']:,.0f} tournaments a second on {numba.get_num_threads()} threads "
          f"({speed['wall_s']:.1f} s); {speed['mean_hands']:.2f} hands a tournament, each with "
          f"{ev['decisions']:.2f} decisions, {ev['two_way']:.3f} two-way and {ev['three_way']:.3f} three-way showdowns"
          + (f"; {unfinished:,} tournaments stopped at the hand cap" if unfinished else ""))


def _whole_stacks(values: list[str], cfg) -> list[int]:
    out = []
    for v in values:
        if not re.fullmatch(r"[ \t]*[+-]?[0-9]{1,12}[ \t]*", v):  # (ASCII: int() also reads '٣' and '1_0')
            shown = v if len(v) <= 20 else f"{v[:12]}… ({len(v)} characters)"
            raise UsageError(f"--stacks: {shown!r} is not a whole number of units (at most 12 digits)")
        x = int(v)
        if x < 1:
            raise UsageError(f"--stacks: every stack must be ≥ 1 unit (got {v})")
        out.append(x)
    if not 2 <= len(out) <= cfg.players:
        counts = "2 players" if cfg.players == 2 else f"2 to {cfg.players} players"
        raise UsageError(f"--stacks: game '{cfg.name}' has states of {counts} (got {len(out)} stacks)")
    if sum(out) != cfg.units:
        raise UsageError(f"--stacks: stacks must sum to the game's units ({cfg.units}), they sum to {sum(out)}")
    return out


# ---------------------------------------------------------------- parser
WAREHOUSE_HELP = "DuckDB file (default warehouse/lab.duckdb)"


NEGATIVE_NUMBER = re.compile(r"^-(\d|\.\d|inf$|infinity$|nan$)", re.IGNORECASE)
"""What a command line value that argparse must not read as an option starts with."""


class _OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose errors (an unknown choice, a missing argument, a value that is not a
    number) are one line, like the CLI's own (argparse prints its usage block first), exit code 2."""

    def error(self, message: str):
        _fail(f"{self.prog}: {message} (see {self.prog} --help)")


class _Subcommands:
    """Adds subcommands whose one-line help (the `jamfold --help` listing) is also their own
    `jamfold COMMAND --help` description, so neither page is left without it."""

    def __init__(self, action: argparse._SubParsersAction) -> None:
        self._action = action

    def add_parser(self, name: str, *, help: str) -> argparse.ArgumentParser:
        parser = self._action.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".")
        # argparse takes '-1e-3' and '-inf' for options (it knows only '-1' and '-0.5' as numbers), so
        # `--gamma -1e-3` would say "expected one argument" instead of the rule that value breaks. No
        # option here starts with a digit, '.' or "inf"/"nan", so all of these are values.
        parser._negative_number_matcher = NEGATIVE_NUMBER
        return parser


def _add_game_flags(parser: argparse.ArgumentParser) -> None:
    """The flags that name a game and override its fields (`build`'s, and `progress`'s, which must
    name the same game as the build it reports on)."""
    g = parser.add_mutually_exclusive_group()
    g.add_argument("--profile", default="quick", help="quick (default), gs08 or thesis")
    g.add_argument("--config", help="TOML game config file")
    parser.add_argument("--players", type=int, help="players at the start (2–5)")
    parser.add_argument("--units", type=int, help="chips in play, in units of the small blind")
    parser.add_argument("--payouts", type=float, nargs="+", metavar="USD",
                        help="prizes for 1st, 2nd, … (non-increasing)")
    parser.add_argument("--gamma", type=float, metavar="USD", help="target exploitability of every state, $")
    parser.add_argument("--start", type=int, nargs="+", metavar="UNITS",
                        help="stacks of the start state, in acting order")
    parser.add_argument("--fgs-depth", type=int, help="deepest FGS model (FGS-1 … FGS-D)")
    parser.add_argument("--simulation-tournaments", type=int,
                        help="Monte Carlo tournaments per hero seat (a model against the equilibrium)")
    parser.add_argument("--direct-match-tournaments", type=int,
                        help="Monte Carlo tournaments per seating of a direct match (0: as --simulation-tournaments)")
    parser.add_argument("--simulation-seed", type=int, help="random seed of the simulations")


def build_parser() -> argparse.ArgumentParser:
    p = _OneLineParser(prog="jamfold",
                       description="Tournament equity lab: jam/fold endgames, showdown tables, equity models.")
    sub = _Subcommands(p.add_subparsers(dest="command", required=True, metavar="COMMAND"))

    e = sub.add_parser("equity", help="finishing matrix and payoffs of an equity model")
    e.add_argument("--model", required=True, choices=("harville", "weitzman", "roberts"), help="equity model")
    e.add_argument("--stacks", required=True, nargs="+", metavar="CHIPS",
                   help="2 to 20 stacks (roberts: 2 to 9), each from {:g} to {:g} chips: only their ratios "
                        "matter".format(*EXAMPLE_STACK_RANGE))
    e.add_argument("--payouts", required=True, nargs="+", metavar="USD",
                   help="prizes for 1st, 2nd, … (non-increasing, ≥ 0, at most one a player, summing to "
                        "{:g} … {:g} $)".format(*PRIZE_POOL_RANGE))
    e.add_argument("--json", action="store_true", help="print JSON (keys: model, stacks, payouts, finishing, payoffs)")
    e.set_defaults(func=cmd_equity)

    s = sub.add_parser("showdown", help="exact all-in probabilities of 2 or 3 hand classes (e.g. AA KK QQ, AKs 72o)")
    s.add_argument("hands", nargs="+", metavar="HAND", help="hand class: a pair (AA), suited (AKs) or offsuit (AKo)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.set_defaults(func=cmd_showdown)

    r = sub.add_parser("rollout", help="build the pair and triple tables into the warehouse, with a progress bar")
    r.add_argument("--exact", action="store_true",
                   help="enumerate every board (the triple table takes about 10–16 minutes on 2 cores)")
    r.add_argument("--samples", type=int, metavar="N", help="boards per matchup, sampled")
    r.add_argument("--seed", type=int, default=1, help="random seed of the sampled boards (default 1)")
    r.add_argument("--kind", choices=("pairs", "triples", "all"), default="all", help="which table (default all)")
    r.add_argument("--warehouse", default=None, help=WAREHOUSE_HELP)
    r.set_defaults(func=cmd_rollout)

    st = sub.add_parser("state", help="equilibrium of one state: payoffs, ICM, finishing probabilities, push/fold ranges")
    g2 = st.add_mutually_exclusive_group()
    g2.add_argument("--profile", default="quick", help="quick (default), gs08 or thesis")
    g2.add_argument("--config", help="TOML game config file")
    st.add_argument("--stacks", required=True, nargs="+", metavar="UNITS",
                    help="stacks in acting order, summing to the game's units: e.g. 4 3 3 (quick), "
                         "1 41 3 (--profile gs08)")
    st.add_argument("--warehouse", default=None, help=WAREHOUSE_HELP)
    st.add_argument("--json", action="store_true",
                    help="keys: game, stacks, positions, equilibrium and icm ($ per position), finishing (positions × "
                         "places; null until the layer's finishing_<n>p is materialized), exploitability ($), nodes")
    st.set_defaults(func=cmd_state)

    sm = sub.add_parser("simulate", help="Monte Carlo tournaments on the warehouse's solved profiles: the equilibrium "
                                         "against its solved values, or a model's player at each seat; with the "
                                         "simulation's speed")
    g4 = sm.add_mutually_exclusive_group()
    g4.add_argument("--profile", default="quick", help="quick (default), gs08 or thesis")
    g4.add_argument("--config", help="TOML game config file")
    sm.add_argument("--stacks", nargs="+", metavar="UNITS",
                    help="start stacks in acting order (default: the game's start)")
    sm.add_argument("--model", help="the hero's strategies: harville, weitzman, roberts or FGS-1 … FGS-D "
                                    "(default: everybody on the equilibrium)")
    sm.add_argument("--hero", metavar="POSITION", help="with --model: only this starting position (e.g. BU); "
                                                       "default every position in turn")
    sm.add_argument("--tournaments", type=int, default=1_000_000, help="tournaments per seat (default 1,000,000)")
    sm.add_argument("--seed", type=int, default=1, help="random seed (default 1); a hero seat h plays the stream of "
                                                        "the seed's h-th sub-seed")
    sm.add_argument("--warehouse", default=None, help=WAREHOUSE_HELP)
    sm.add_argument("--json", action="store_true",
                    help="keys: game, stacks, positions, model, tournaments, seed, rows (per position or hero seat: "
                         "solved_value and mean_payoff $, standard_error, roi_pct, finishing), unfinished, "
                         "tournaments_per_s, mean_hands, hand_events, wall_s")
    sm.set_defaults(func=cmd_simulate)

    w = sub.add_parser("site", help="rebuild a game's site from the warehouse as it is now (no asset is "
                                    "materialized): e.g. the layers solved so far while a long build runs")
    g3 = w.add_mutually_exclusive_group()
    g3.add_argument("--profile", default="quick", help="quick (default), gs08 or thesis")
    g3.add_argument("--config", help="TOML game config file")
    w.add_argument("--warehouse", default=None, help=WAREHOUSE_HELP)
    w.set_defaults(func=cmd_site)

    q = sub.add_parser("sql", help="run one SQL query on the warehouse, read-only, and print its rows (every table "
                                   "and view is on the site's Warehouse page)")
    q.add_argument("query", metavar="QUERY", help='e.g. "SELECT * FROM deviation_summary WHERE players IS NULL"')
    q.add_argument("--csv", action="store_true",
                   help="every row as CSV, with a header line (without it: DuckDB's table, long results cut to "
                        "their first and last rows)")
    q.add_argument("--warehouse", default=None, help=WAREHOUSE_HELP)
    q.set_defaults(func=cmd_sql)

    b = sub.add_parser("build", help="materialize every asset of a game (Dagster, in-process) and build the site")
    _add_game_flags(b)
    b.add_argument("--warehouse", default=None, help=WAREHOUSE_HELP)
    skip = b.add_mutually_exclusive_group()
    skip.add_argument("--skip-solve", action="store_true",
                      help="leave out the equilibrium and everything measured against it (solves, ex post, model "
                           "strategies); the full games' solves take hours")
    skip.add_argument("--skip-models", action="store_true",
                      help="build the equilibrium and its pages (solves, finishing probabilities, its ex post check, "
                           "its simulated tournaments) and compare Harville, Weitzman and Roberts with it, but leave "
                           "out the model sweeps (the models' strategies, FGS, their ex post checks and simulations), "
                           "which take most of a full game's time")
    b.set_defaults(func=cmd_build)

    pr = sub.add_parser("progress", help="where a game's build stands, from its checkpoints (safe beside the "
                                         "running build): layers solved, the outer iteration in progress")
    _add_game_flags(pr)
    pr.set_defaults(func=cmd_progress)
    return p


def check_dagster_env() -> None:
    """`./lab dagster`'s check before it starts the UI: the game that JAMFOLD_CONFIG or
    JAMFOLD_PROFILE names must load, or exit 2 naming the variable, the field and the rule (the UI
    would otherwise show it only when an asset runs)."""
    from engine.config import game_config

    cfg_file = os.environ.get("JAMFOLD_CONFIG", "")
    try:
        cfg = game_config(os.environ.get("JAMFOLD_PROFILE", "quick"), cfg_file)
    except ConfigError as exc:
        _fail(f"{'JAMFOLD_CONFIG' if cfg_file else 'JAMFOLD_PROFILE'}: {exc}")
    from engine.memory import memory_shortfall

    try:
        configured_threads()
    except ConfigError as exc:
        _fail(str(exc))
    why = memory_shortfall(cfg.players, cfg.units)
    if why is not None:  # the UI still serves the warehouse's tables; its layer assets will refuse the solve
        print(f"jamfold: warning: {why}; the solve assets will refuse to run", file=sys.stderr)


def _interrupted() -> None:
    print("jamfold: interrupted; finished work is kept", file=sys.stderr)
    raise SystemExit(130) from None


def main(argv: Sequence[str] | None = None) -> None:
    args = build_parser().parse_args(argv)
    try:
        configured_threads()  # a bad NUMBA_NUM_THREADS fails now, not in a layer's solve
        args.func(args)
        if sys.stdout is not None:  # (None: started with stdout closed, `>&-`; print() then writes nothing)
            sys.stdout.flush()  # (here, so that a reader gone early is caught below, not at the exit's flush)
    except (UsageError, ConfigError, FileNotFoundError) as exc:
        _fail(str(exc))
    except KeyboardInterrupt:
        _interrupted()
    except BrokenPipeError:  # (output piped into `head` & co., which stopped reading): no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (Python flushes stdout at exit)
        raise SystemExit(1) from None
    except Exception as exc:  # friendly one-liners for environment problems
        from warehouse.db import WarehouseBusy, WarehouseUnusable
        if isinstance(exc, WarehouseUnusable):  # a bad --warehouse / JAMFOLD_WAREHOUSE: usage
            _fail(str(exc))
        from engine.checkpoint import FolderBusy
        if isinstance(exc, (WarehouseBusy, FolderBusy)):
            print(f"jamfold: error: {exc}", file=sys.stderr)
            raise SystemExit(1) from None
        if isinstance(exc, RuntimeError) and str(exc).startswith("Query interrupted"):
            _interrupted()  # (Ctrl-C inside a DuckDB query, which DuckDB reports as its own error)
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:  # (a full disk, or output to /dev/full)
            where = f": {exc.filename}" if exc.filename else " (writing the output?)"
            print(f"jamfold: error: no space left on the device{where}", file=sys.stderr)
            if sys.stdout is not None:  # (Python flushes stdout at exit: nothing left to fail there)
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise SystemExit(1) from None
        raise


if __name__ == "__main__":
    main()
