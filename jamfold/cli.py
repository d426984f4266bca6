"""`jamfold` — the command line of the tournament equity lab: its parser and entry point.

Human-readable output by default, ``--json`` for machines. User errors print one line naming the
argument and the rule and exit with status 2 (no traceback). The commands live beside this module:
:mod:`jamfold.cmd_tables` (equity, showdown, rollout), :mod:`jamfold.cmd_build` (build, site),
:mod:`jamfold.cmd_read` (sql, progress, state) and :mod:`jamfold.cmd_simulate`; what they share
is in :mod:`jamfold.common`.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
import sys
from collections.abc import Sequence

from engine.bench_cli import detach_stdout
from engine.config import EXAMPLE_STACK_RANGE, PRIZE_POOL_RANGE, ConfigError
from engine.cores import configured_threads, exit_on_bad_threads
from jamfold.cmd_build import cmd_build, cmd_site
from jamfold.cmd_read import cmd_progress, cmd_sql, cmd_state
from jamfold.cmd_simulate import cmd_simulate
from jamfold.cmd_tables import cmd_equity, cmd_rollout, cmd_showdown
from jamfold.common import UsageError, fail, require_site_url


# ---------------------------------------------------------------- parser
WAREHOUSE_HELP = "DuckDB file (default warehouse/lab.duckdb)"


NEGATIVE_NUMBER = re.compile(r"^-(\d|\.\d|inf$|infinity$|nan$)", re.IGNORECASE)
"""What a command line value that argparse must not read as an option starts with."""


class _StoreOnce(argparse._StoreAction):
    """An option's value(s), refused when the option is given twice: argparse keeps the last one
    silently, so `--stacks 2 5 --stacks 3 4` answered for 3 4 alone."""

    def __call__(self, parser, namespace, values, option_string=None):
        given = namespace.__dict__.setdefault("_options_given", set())
        if option_string is not None:
            if self.dest in given:
                parser.error(f"{'/'.join(self.option_strings)}: given twice; give it once")
            given.add(self.dest)
        super().__call__(parser, namespace, values, option_string)


class _OneLineParser(argparse.ArgumentParser):
    """An argparse parser whose errors (an unknown choice, a missing argument, a value that is not a
    number) are one line, like the CLI's own (argparse prints its usage block first), exit code 2;
    an option that takes a value may be given once."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", None, _StoreOnce)
        self.register("action", "store", _StoreOnce)

    def error(self, message: str):
        fail(f"{self.prog}: {message} (see {self.prog} --help)")


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


READ_GAME_FLAGS = ("the flags its build took, which name it (`--profile quick --units 25` names the game that "
                   "`./lab build --profile quick --units 25` made): they say which game's rows to read, and are "
                   "not this command's own options")


def _add_game_flags(parser: argparse.ArgumentParser, reading: bool = False) -> None:
    """The flags that name a game and override its fields: `build`'s, and those of every command
    that reads a built game (`progress`, `state`, `simulate`, `site`; ``reading``), which take the
    same flags to name the same game, grouped under a heading that says so."""
    if reading:
        parser = parser.add_argument_group("the game", READ_GAME_FLAGS)
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
    _add_game_flags(st, reading=True)
    st.add_argument("--stacks", required=True, nargs="+", metavar="UNITS",
                    help="stacks in acting order, summing to the game's units: e.g. 4 3 3 (quick), "
                         "1 41 3 (--profile gs08)")
    st.add_argument("--model", help="also this model's payoffs, its ranges at every node and what a nemesis gains "
                                    "against them: harville, weitzman, roberts or FGS-1 … FGS-D")
    st.add_argument("--warehouse", default=None, help=WAREHOUSE_HELP)
    st.add_argument("--json", action="store_true",
                    help="keys: game, stacks, positions, equilibrium and icm ($ per position), finishing (positions × "
                         "places; null until the layer's finishing_<n>p is materialized), exploitability ($), nodes; "
                         "with --model, model: name, payoff, nemesis_gain ($ per position; null until ex_post_models "
                         "is materialized) and nodes")
    st.set_defaults(func=cmd_state)

    sm = sub.add_parser("simulate", help="Monte Carlo tournaments on the warehouse's solved profiles: the equilibrium "
                                         "against its solved values, or a model's player at each seat; with the "
                                         "simulation's speed")
    _add_game_flags(sm, reading=True)
    sm.add_argument("--stacks", nargs="+", metavar="UNITS",
                    help="the state the tournaments start from, stacks in acting order (default: the game's start)")
    sm.add_argument("--model", help="the hero's strategies: harville, weitzman, roberts or FGS-1 … FGS-D "
                                    "(default: everybody on the equilibrium)")
    sm.add_argument("--hero", metavar="POSITION", help="with --model: only this starting position (e.g. BU); "
                                                       "default every position in turn")
    sm.add_argument("--tournaments", type=int, help="tournaments per hero seat, or in all without --model "
                                                    "(default: the game's simulation_tournaments, as the build "
                                                    "played; `thesis`: 100 million)")
    sm.add_argument("--seed", type=int, help="random seed; a hero seat h plays the stream of the seed's h-th "
                                             "sub-seed (default: the seed the build played --model's tournaments "
                                             "with; without --model, the control's, simulation_seed). With the "
                                             "default --tournaments too, a model's run from the game's start "
                                             "replays its rows of the `simulation` table")
    sm.add_argument("--warehouse", default=None, help=WAREHOUSE_HELP)
    sm.add_argument("--json", action="store_true",
                    help="keys: game, stacks, positions, model, tournaments, seed, replays_build, rows (per "
                         "position or hero seat: solved_value and mean_payoff $, standard_error, roi_pct, finishing), "
                         "unfinished, tournaments_per_s, mean_hands, hand_events (per hand: decisions, two_way and "
                         "three_way showdowns, the shares heads_up and three_handed), wall_s")
    sm.set_defaults(func=cmd_simulate)

    w = sub.add_parser("site", help="rebuild a game's site from the warehouse as it is now (no asset is "
                                    "materialized): e.g. the layers solved so far while a long build runs")
    _add_game_flags(w, reading=True)
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
    _add_game_flags(pr, reading=True)
    pr.set_defaults(func=cmd_progress)
    return p


def check_dagster_env() -> None:
    """`./lab dagster`'s check before it starts the UI: the game that JAMFOLD_CONFIG or
    JAMFOLD_PROFILE names must load, and JAMFOLD_SITE_URL be a web address if set, or exit 2 naming
    the variable, the field and the rule (the UI would otherwise show it only when an asset runs)."""
    from engine.config import game_config

    cfg_file = os.environ.get("JAMFOLD_CONFIG", "")
    try:
        cfg = game_config(os.environ.get("JAMFOLD_PROFILE", "quick"), cfg_file)
    except ConfigError as exc:
        fail(f"{'JAMFOLD_CONFIG' if cfg_file else 'JAMFOLD_PROFILE'}: {exc}")
    from engine.memory import memory_shortfall

    exit_on_bad_threads("jamfold")
    try:
        require_site_url()
    except UsageError as exc:
        fail(str(exc))
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
        fail(str(exc))
    except KeyboardInterrupt:
        _interrupted()
    except BrokenPipeError:  # (output piped into `head` & co., which stopped reading): no traceback
        detach_stdout()  # (Python flushes stdout at exit)
        raise SystemExit(1) from None
    except Exception as exc:  # friendly one-liners for environment problems
        from warehouse.db import WarehouseBusy, WarehouseUnusable
        if isinstance(exc, WarehouseUnusable):  # a bad --warehouse / JAMFOLD_WAREHOUSE: usage
            fail(str(exc))
        from engine.checkpoint import FolderBusy
        if isinstance(exc, (WarehouseBusy, FolderBusy)):
            print(f"jamfold: error: {exc}", file=sys.stderr)
            raise SystemExit(1) from None
        if isinstance(exc, RuntimeError) and str(exc).startswith("Query interrupted"):
            _interrupted()  # (Ctrl-C inside a DuckDB query, which DuckDB reports as its own error)
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:  # (a full disk, or output to /dev/full)
            where = f": {exc.filename}" if exc.filename else " (writing the output?)"
            print(f"jamfold: error: no space left on the device{where}", file=sys.stderr)
            detach_stdout()  # (Python flushes stdout at exit: nothing left to fail there)
            raise SystemExit(1) from None
        raise


if __name__ == "__main__":
    main()
