"""What the CLI's commands share: the usage error, the game a command names, and the checks of
its arguments that several commands make (see :mod:`jamfold.cli`)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

EXIT_USAGE = 2
REPO = Path(__file__).resolve().parent.parent


class UsageError(Exception):
    """Bad user input: ``str(exc)`` names the argument and the rule."""


def fail(message: str) -> None:
    """Print a usage error's one line and exit with status 2 (no traceback)."""
    print(f"jamfold: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def require_site_url() -> None:
    """Refuse a bad JAMFOLD_SITE_URL before any work (the site is a build's last asset, and the
    Dagster UI would show it only when that asset runs): a :class:`UsageError` naming the rule."""
    from sitegen.build import site_url

    try:
        site_url()
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def named_config(args: argparse.Namespace):
    """The game the command names: its --config file, else its --profile."""
    from engine.config import load_config, profile

    return load_config(args.config) if args.config is not None else profile(args.profile)


def game_flag(args: argparse.Namespace) -> str:
    """How the command named its game (`--config FILE` or `--profile NAME`, then any field it
    overrode, e.g. `--gamma 0.002`: another game), for messages."""
    flags = [f"--config {args.config}" if args.config is not None else f"--profile {args.profile}"]
    for key in OVERRIDES:
        value = getattr(args, key, None)
        if value is not None:
            shown = " ".join(map(str, value)) if isinstance(value, list) else str(value)
            flags.append(f"--{key.replace('_', '-')} {shown}")
    return " ".join(flags)


OVERRIDES = ("players", "units", "payouts", "gamma", "start", "fgs_depth", "simulation_tournaments",
             "direct_match_tournaments", "simulation_seed")
"""The game fields a command's flags may override (`build`, and `progress`, `state`, `simulate` and `site`,
which name the game its build did: `--players`, `--gamma`, …)."""


def config_from_args(args: argparse.Namespace):
    """The named game with the fields its flags override (validated: a bad value raises ConfigError)."""
    from engine.config import with_overrides

    return with_overrides(named_config(args), **{k: getattr(args, k) for k in OVERRIDES})


def configs_folder(repo: Path) -> Path:
    """Where a build keeps the config files of games made from flags (under the Dagster home)."""
    return Path(os.environ.get("DAGSTER_HOME") or repo / ".dagster_home") / "configs"


def missing_game(con, args: argparse.Namespace, cfg, what: str) -> UsageError:
    """The error for a game the warehouse lacks, naming the games it has: a game built from flags
    (`./lab build --players 3 …`) is named after its profile and settings, and the commands that
    read it take the config file its build wrote (given here where it exists)."""
    how = game_flag(args)
    folder = configs_folder(REPO)
    games = []
    for (game,) in con.execute("SELECT game FROM games WHERE game <> ? ORDER BY game", [cfg.name]).fetchall():
        written = folder / f"{game}.toml"
        games.append(f"{game} (--config {written})" if written.is_file() else game)
    others = f"; the warehouse holds {', '.join(games)}" if games else ""
    return UsageError(f"{how.split()[0]}: game '{cfg.name}' {what} (build it first: ./lab build {how}){others}")


def require_game(con, args: argparse.Namespace, cfg, path: Path) -> None:
    """Refuse a game the warehouse at ``path`` does not hold (see :func:`missing_game`)."""
    if con.execute("SELECT count(*) FROM games WHERE game = ?", [cfg.name]).fetchone()[0] == 0:
        raise missing_game(con, args, cfg, f"is not in the warehouse {path}")


def game_model(name: str | None, cfg) -> str | None:
    """``--model`` as one of the game's models (the ICM family, then FGS-1 … its fgs_depth), or None."""
    from engine.config import model_names

    models = model_names(cfg.fgs_depth)
    if name is not None and name not in models:
        raise UsageError(f"--model: game '{cfg.name}' has the models {', '.join(models)} (got {name!r})")
    return name


def whole_stacks(values: list[str], cfg) -> list[int]:
    """`--stacks` as a state of the game: whole units, each ≥ 1, 2 to the game's players, summing to its units."""
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


def usable_folder(name: str, path: Path) -> None:
    """A folder a build writes to (checkpoints, the site, Dagster's home), made now, before any
    work, so that a bad one fails here and not in the last asset hours later."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{name}: cannot create the folder {path} ({exc.strerror or exc})") from None
    if not os.access(path, os.W_OK):
        raise UsageError(f"{name}: the folder {path} is not writable")
