"""`jamfold build` (every asset of a game, materialized in this process) and `jamfold site` (the
site rebuilt from the warehouse as it is)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from engine.config import GameConfig
from jamfold.common import (REPO, UsageError, config_from_args, configs_folder, named_config, require_game,
                            require_site_url, usable_folder)


def _fits_in_memory(cfg: GameConfig) -> None:
    """Refuse a game whose largest layer's solve would not fit this machine's memory (projected
    from the `thesis` build's measured 6.2 KiB per state and decision node)."""
    from engine.memory import memory_shortfall

    why = memory_shortfall(cfg.players, cfg.units)
    if why is not None:
        raise UsageError(why)


def cmd_build(args: argparse.Namespace) -> None:
    cfg = config_from_args(args)
    require_site_url()
    if not args.skip_solve:
        _fits_in_memory(cfg)
    from warehouse import db

    repo = REPO
    if not os.environ.get("DAGSTER_HOME"):  # (unset or empty)
        os.environ["DAGSTER_HOME"] = str(repo / ".dagster_home")
    home = Path(os.environ["DAGSTER_HOME"])
    usable_folder("DAGSTER_HOME", home)
    from assets.paths import build_dir, cache_root
    from engine.checkpoint import folder_lock

    usable_folder("JAMFOLD_CACHE (checkpoints)", cache_root())
    usable_folder("JAMFOLD_BUILD_DIR (the site)", build_dir())
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
    if needs_config_file(args, cfg):
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
    sigints = SigintWatch()
    try:
        with sigints, numba_compile_shield():
            progress = BuildProgress(total=len(selection), sigints=sigints)
            defs = dg.Definitions(assets=selection, resources=resources, loggers={"build": build_logger(progress)},
                                  jobs=[dg.define_asset_job("jamfold_build", tags={"game": cfg.name})])
            try:
                result = defs.resolve_job_def("jamfold_build").execute_in_process(
                    instance=dg.DagsterInstance.get(), raise_on_error=False, run_config=run_config)
            finally:
                progress.finish()
    except KeyboardInterrupt:  # (a signal after Dagster's handlers, as the run closes: Python's own handler)
        _stopped_by_signal(sigints)
    if progress.interrupted or sigints.received:  # a SIGINT that ended no step still ends the build
        _stopped_by_signal(sigints)
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


def _stopped_by_signal(sigints) -> None:
    """End the build for the signal it received, keeping the finished work: exit status 128 + the
    signal's number, as for a process that signal ended (130 for Ctrl-C, 143 for SIGTERM)."""
    what, status = ("terminated (SIGTERM)", 143) if sigints.terminated else ("interrupted", 130)
    print(f"jamfold: {what}; finished work is kept, run the same command again to resume", file=sys.stderr)
    raise SystemExit(status)


def needs_config_file(args: argparse.Namespace, cfg: GameConfig) -> bool:
    """Whether the build's game is not a profile as it stands: a --config file's, or a profile the
    flags changed (flags that give fields the values they have leave the profile as it is)."""
    return args.config is not None or cfg.to_dict() != named_config(args).to_dict()


def _write_config(cfg, repo: Path) -> Path:
    """Persist an ad-hoc config so Dagster (and a later `dagster dev`) can reload exactly it."""
    path = configs_folder(repo) / f"{cfg.name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = []
    for k, v in cfg.to_dict().items():
        lines.append(f"{k} = {json.dumps(v)}")
    from engine.atomic_files import write_text_atomic

    write_text_atomic(path, "\n".join(lines) + "\n")
    return path


def cmd_site(args: argparse.Namespace) -> None:
    """Rebuild a game's site from the warehouse as it is now, materializing nothing: the layers solved
    so far while a long build runs, or what `dagster dev` materialized."""
    cfg = config_from_args(args)  # before the imports below
    require_site_url()
    from assets.paths import build_dir
    from sitegen.build import build_site
    from warehouse import db

    path = db.warehouse_path(args.warehouse)
    usable_folder("JAMFOLD_BUILD_DIR (the site)", build_dir())  # (before the warehouse is read)
    with db.session(path, read_only=True) as con:
        require_game(con, args, cfg, path)
    site = build_site(cfg.name, path, build_dir())
    print(f"site of '{cfg.name}' built from the warehouse as it is now: {site / 'index.html'}")
