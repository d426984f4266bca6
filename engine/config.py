"""Game configurations (SPEC §2 and §8): the parameters every asset and table is keyed by.

A :class:`GameConfig` is immutable and validated on construction, so bad input is rejected
before any heavy work starts, with a :class:`ConfigError` that names the field and the rule.
Chips are in small-blind units (SB = 1, BB = 2); prizes are in $.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Sequence

MIN_PLAYERS, MAX_PLAYERS = 2, 5
MAX_UNITS = 200
ROLLOUT_MODES = ("exact", "sampled")
MIN_GAMMA_SHARE = 1e-10
"""The smallest gamma, as a share of the prize pool: values in $ carry float64 rounding of about
1e-14 of the pool per operation, so a target much below this could not be certified."""
MAX_ROLLOUT_SAMPLES = 1_000_000
"""Boards per matchup a sampled table may take: more than a million approaches the exact tables'
1,370,754 to 1,712,304 boards, which cost about the same and carry no sampling error."""
MAX_SIMULATION_SEED = 10**12
"""A simulation series derives its seeds as seed × 1,000,003 + k, stored as BIGINT: a seed above
this would overflow the column after hours of simulation."""
MODELS = ("harville", "weitzman", "roberts")
"""The ICM family of equity models, in report order (:func:`model_names` adds FGS-1 …)."""


def paid_places(payouts: Sequence[float]) -> list[float]:
    """The prizes ($) without the trailing places that pay nothing (the first place kept): games
    that differ only in such places are the same game."""
    paid = [float(x) for x in payouts]
    while len(paid) > 1 and paid[-1] == 0.0:
        paid.pop()
    return paid


def model_names(fgs_depth: int) -> list[str]:
    """The models a game compares with its equilibrium, in report order: the ICM family, then
    Future Game Simulation FGS-1 … FGS-``fgs_depth`` (the game config's ``fgs_depth``)."""
    return [*MODELS, *(f"FGS-{d}" for d in range(1, fgs_depth + 1))]


MODEL_SEED_STEP = 1000
"""A game's simulations play model k (0 = the equilibrium, then the ICM family and FGS-1 …) with
``simulation_seed`` + MODEL_SEED_STEP · k (:func:`assets.simulation.model_seed`)."""
PRIZE_POOL_RANGE = (1e-6, 1e15)
"""The prize pools ($) a game may pay: values, their sums over a layer's states and the squared
payoffs the simulations sum stay far from float64's underflow and overflow."""
NAME_LENGTH = 40
"""Longest game name: the key of a game's rows in the warehouse and of its folders."""
EXAMPLE_STACK_RANGE = (1e-6, 1e12)
"""Stacks (chips) the equity models take: their sums and products stay far from float64's
underflow and overflow (Roberts squares 1/x) between these bounds."""


def rollout_key(boards: int | None, seed: int) -> str:
    """Key of a showdown table in the warehouse and of its checkpoint folder: 'exact' (``boards``
    None) or 'sampled-<boards>-seed<seed>' (boards per matchup, the sampling seed)."""
    return "exact" if boards is None else f"sampled-{boards}-seed{seed}"


SHOWN_VALUE_CHARACTERS = 100
"""A rejected value longer than this (as Python writes it) is shown cut short in the message."""


class ConfigError(ValueError):
    """A config or argument value that breaks a rule; ``field`` names it, ``rule`` says why."""

    def __init__(self, field_name: str, rule: str, value: Any = None):
        self.field = field_name
        self.rule = rule
        self.value = value
        said = repr(value)
        if len(said) > SHOWN_VALUE_CHARACTERS:  # (a 400-digit TOML integer: its start says enough)
            said = f"{said[:SHOWN_VALUE_CHARACTERS - 20]}… ({len(said):,} characters)"
        shown = "" if value is None else f" (got {said})"
        super().__init__(f"{field_name}: {rule}{shown}")


@dataclass(frozen=True)
class GameConfig:
    """One abstract tournament game and how its tables are built.

    Attributes:
        name: identifier used as the ``game`` key in every warehouse table.
        players: players at the start (2..5).
        units: total chips in small-blind units.
        payouts: prize in $ for 1st, 2nd, …; places beyond the list pay 0.
        gamma: per-hand equilibrium target ε in $.
        start: start stacks in acting order (default: as equal as possible, the remainder spread from the
            first position on, :func:`equal_start`).
        rollout_pairs / rollout_triples: 'exact' or 'sampled' showdown tables.
        rollout_samples: boards per matchup in sampled mode.
        rollout_seed: seed of the sampled tables.
        examples: stack vectors (chips) the equity-model example tables are computed for.
        fgs_depth: deepest Future Game Simulation model (FGS-1 … FGS-depth; 0 = none).
        simulation_tournaments: Monte Carlo tournaments per hero seat (each model against the equilibrium,
            and the all-equilibrium control).
        direct_match_tournaments: Monte Carlo tournaments per seating of a direct match (two models over
            all 2^players − 2 seatings, so a match plays that many times more); 0 = as many as
            ``simulation_tournaments`` (see :attr:`match_tournaments`).
        simulation_seed: seed of the simulations (results depend only on it and the count).
    """

    name: str = "custom"
    players: int = 5
    units: int = 45
    payouts: tuple[float, ...] = (50.0, 30.0, 20.0)
    gamma: float = 1e-4
    start: tuple[int, ...] = ()
    rollout_pairs: str = "exact"
    rollout_triples: str = "exact"
    rollout_samples: int = 2000
    rollout_seed: int = 1
    examples: tuple[tuple[float, ...], ...] = field(default=((2.0, 5.0, 8.0, 13.0, 17.0),))
    fgs_depth: int = 3
    simulation_tournaments: int = 1_000_000
    direct_match_tournaments: int = 0
    simulation_seed: int = 1

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def prize_pool(self) -> float:
        """Sum of all prizes in $."""
        return float(sum(self.payouts))

    @property
    def match_tournaments(self) -> int:
        """Tournaments per seating of a direct match: ``direct_match_tournaments``, or
        ``simulation_tournaments`` where that is 0."""
        return self.direct_match_tournaments or self.simulation_tournaments

    @property
    def uses_triples(self) -> bool:
        """Whether the game's hands can go to a three-way showdown (3 or more players). A heads-up
        game never does, so it needs no triple table (about 80 s to sample, 15 minutes exact) and
        no three-way solver tensors (about 0.7 GB)."""
        return self.players >= 3

    def rollout_id(self, kind: str) -> str:
        """Key of the showdown table this game uses: 'exact' or 'sampled-<boards>-seed<seed>'."""
        return rollout_key(self.rollout_boards(kind), self.rollout_seed)

    def rollout_boards(self, kind: str) -> int | None:
        """Boards per matchup of the showdown table (``kind`` 'pairs' or 'triples') this game uses;
        None for an exact table."""
        mode = self.rollout_pairs if kind == "pairs" else self.rollout_triples
        return None if mode == "exact" else self.rollout_samples

    def solve_key(self, legacy: bool = False, with_triples: bool | None = None) -> str:
        """JSON of the fields the equilibrium depends on (checkpoints are keyed by it).

        The payouts are taken as the prizes they pay: whole numbers written as integers, places
        paying 0 at the end dropped, so ``--payouts 50 30 20`` (floats) and a TOML ``[50, 30, 20, 0]``
        find the solve of ``[50, 30, 20]``. The showdown tables are those the game reads: a heads-up
        game's key leaves out the triple table, which it never reads. ``legacy``: the key as it was
        before 2026-11-30, the payouts as given and both tables; ``with_triples`` True: the triple
        table named for a heads-up game too, as until stop 73 (2026-11-30). Checkpoint folders named
        by those keys are adopted, :func:`assets.resume.game_folder`."""
        keys = ("players", "units", "payouts", "gamma")
        d = {k: v for k, v in self.to_dict().items() if k in keys}
        if not legacy:
            d["payouts"] = [int(x) if x.is_integer() else x for x in paid_places(self.payouts)]
        triples = legacy or (self.uses_triples if with_triples is None else with_triples)
        d["tables"] = [self.rollout_id("pairs")] + ([self.rollout_id("triples")] if triples else [])
        return json.dumps(d, sort_keys=True)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["payouts"] = list(self.payouts)
        d["start"] = list(self.start)
        d["examples"] = [list(e) for e in self.examples]
        return d

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and _finite(x)


def _finite(x: int | float) -> bool:
    """A finite float, or an int a float can hold (TOML integers have no size limit, and
    ``math.isfinite`` raises OverflowError on one past 1.8e308)."""
    try:
        return math.isfinite(x)
    except OverflowError:
        return False


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _validate(cfg: GameConfig) -> None:
    if not isinstance(cfg.name, str) or not re.fullmatch(rf"[a-z0-9][a-z0-9_-]{{0,{NAME_LENGTH - 1}}}", cfg.name):
        raise ConfigError("name", f"must be 1-{NAME_LENGTH} characters of a-z, 0-9, '_' or '-', starting with a letter "
                          "or digit", cfg.name)
    if not _is_int(cfg.players) or not MIN_PLAYERS <= cfg.players <= MAX_PLAYERS:
        raise ConfigError("players", f"must be a whole number from {MIN_PLAYERS} to {MAX_PLAYERS}", cfg.players)
    if not _is_int(cfg.units) or not cfg.players <= cfg.units <= MAX_UNITS:
        raise ConfigError("units", f"must be a whole number from players ({cfg.players}) to {MAX_UNITS}", cfg.units)
    p = cfg.payouts
    if not isinstance(p, tuple) or len(p) == 0 or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                          for x in p):
        raise ConfigError("payouts", "must be a non-empty list of numbers", p)
    if not all(_finite(x) for x in p) or not _finite(sum(p)):
        raise ConfigError("payouts", "must be finite numbers, with a finite sum ($)", list(p))
    if any(x < 0 for x in p):
        raise ConfigError("payouts", "must not be negative", list(p))
    if any(p[i] < p[i + 1] for i in range(len(p) - 1)):
        raise ConfigError("payouts", "must be non-increasing (1st place pays at least as much as 2nd, …)", list(p))
    if len(p) > cfg.players:
        hint = " (leave out the places past the last player: they pay 0 anyway)" if not any(p[cfg.players:]) else ""
        raise ConfigError("payouts", f"lists {len(p)} places but the game has only {cfg.players} players{hint}",
                          list(p))
    if sum(p) <= 0:
        raise ConfigError("payouts", "must pay a positive prize pool", list(p))
    lo, hi = PRIZE_POOL_RANGE
    if not lo <= sum(p) <= hi:
        raise ConfigError("payouts", f"must sum to a prize pool from {lo:g} to {hi:g} $ (where float64 sums of "
                          "values neither overflow nor underflow)", list(p))
    if not _is_number(cfg.gamma) or cfg.gamma <= 0:
        raise ConfigError("gamma", "must be a finite number > 0 ($ of exploitability per hand)", cfg.gamma)
    if cfg.gamma < MIN_GAMMA_SHARE * sum(p):
        raise ConfigError("gamma", f"must be at least {MIN_GAMMA_SHARE:g} × the prize pool ({MIN_GAMMA_SHARE * sum(p):g} $): "
                          "below it, float64 rounding of the values is as large as the target and no solve could "
                          "certify it", cfg.gamma)
    if cfg.gamma >= sum(p):
        raise ConfigError("gamma", f"must be below the prize pool ({sum(p):g} $): no strategy can lose that much, so "
                          "every profile would count as solved", cfg.gamma)
    s = cfg.start
    if not isinstance(s, tuple) or len(s) != cfg.players:
        raise ConfigError("start", f"must list one stack per player ({cfg.players})", list(s) if isinstance(s, tuple) else s)
    if not all(_is_int(x) and x >= 1 for x in s):
        raise ConfigError("start", "stacks must be whole numbers of units ≥ 1", list(s))
    if sum(s) != cfg.units:
        raise ConfigError("start", f"stacks must sum to units ({cfg.units}), they sum to {sum(s)}", list(s))
    for name in ("rollout_pairs", "rollout_triples"):
        if getattr(cfg, name) not in ROLLOUT_MODES:
            raise ConfigError(name, f"must be one of {', '.join(ROLLOUT_MODES)}", getattr(cfg, name))
    if not _is_int(cfg.rollout_samples) or not 1 <= cfg.rollout_samples <= MAX_ROLLOUT_SAMPLES:
        raise ConfigError("rollout_samples", f"must be a whole number from 1 to {MAX_ROLLOUT_SAMPLES:,} (boards per "
                          "matchup; for more, use the exact tables)", cfg.rollout_samples)
    if not _is_int(cfg.rollout_seed) or not 0 <= cfg.rollout_seed < 2**63:
        raise ConfigError("rollout_seed", "must be a whole number from 0 to 2^63 − 1", cfg.rollout_seed)
    if not _is_int(cfg.fgs_depth) or not 0 <= cfg.fgs_depth <= 20:
        raise ConfigError("fgs_depth", "must be a whole number from 0 to 20 (sweeps of FGS)", cfg.fgs_depth)
    if not _is_int(cfg.simulation_tournaments) or not 1000 <= cfg.simulation_tournaments <= 10**10:
        raise ConfigError("simulation_tournaments", "must be a whole number from 1,000 to 10^10", cfg.simulation_tournaments)
    if not _is_int(cfg.direct_match_tournaments) or not (cfg.direct_match_tournaments == 0
                                                         or 1000 <= cfg.direct_match_tournaments <= 10**10):
        raise ConfigError("direct_match_tournaments", "must be 0 (as many as simulation_tournaments) or a whole "
                          "number from 1,000 to 10^10", cfg.direct_match_tournaments)
    if not _is_int(cfg.simulation_seed) or not 0 <= cfg.simulation_seed <= MAX_SIMULATION_SEED:
        raise ConfigError("simulation_seed", "must be a whole number from 0 to 10^12", cfg.simulation_seed)
    top = MAX_SIMULATION_SEED - MODEL_SEED_STEP * len(model_names(cfg.fgs_depth))  # the last model's place
    if cfg.simulation_seed > top:
        raise ConfigError("simulation_seed", f"must be at most {top:,} with fgs_depth {cfg.fgs_depth}: each simulated "
                          f"model plays with simulation_seed + {MODEL_SEED_STEP:,} × its place among the equilibrium "
                          "and the models, and every such seed must stay within 10^12 (what `jamfold simulate "
                          "--seed` accepts)", cfg.simulation_seed)
    if not cfg.examples:
        raise ConfigError("examples", "must list at least one stack vector (the equity models' example tables)", [])
    lo, hi = EXAMPLE_STACK_RANGE
    for i, ex in enumerate(cfg.examples):
        if not 2 <= len(ex) <= 9 or not all(_is_number(x) and lo <= x <= hi for x in ex):
            raise ConfigError(f"examples[{i}]", f"must list 2 to 9 stack sizes, each from {lo:g} to {hi:g} chips",
                              list(ex))


PROFILES: dict[str, dict[str, Any]] = {
    # Small 5-player game (255 states, start 2,2,2,2,2): every layer, the equilibrium and its checks in
    # minutes on 2 cores.
    "quick": dict(players=5, units=10, payouts=(50, 30, 20), gamma=1e-3, fgs_depth=2, simulation_tournaments=200_000,
                  rollout_pairs="exact", rollout_triples="sampled", rollout_samples=2000),
    # Ganzfried & Sandholm 2008: 3 players, 13,500 chips at 300/600.
    "gs08": dict(players=3, units=45, payouts=(50, 30, 20), gamma=1e-4),
    # The 2015 thesis game.
    # Direct matches: 10 million tournaments in each of the 30 seatings, 300 million a match (a model's
    # 5 hero seats play 500 million against the equilibrium): about 2 h for the 12 matches at 0.5-0.6
    # million a second, where 100 million a seating would take 17-21 h.
    "thesis": dict(players=5, units=45, payouts=(50, 30, 20), gamma=1e-4, fgs_depth=10,
                   simulation_tournaments=100_000_000, direct_match_tournaments=10_000_000),
}


def equal_start(players: int, units: int) -> tuple[int, ...]:
    """Equal stacks, the remainder spread from the first position on (9,9,9,9,9 for 5×45)."""
    base, extra = divmod(units, players)
    return tuple(base + (1 if i < extra else 0) for i in range(players))


def make_config(**values: Any) -> GameConfig:
    """Build a validated config from loose values (lists, ints from TOML/CLI) with defaults filled."""
    known = {f.name for f in fields(GameConfig)}
    for key in values:
        if key not in known:
            raise ConfigError(key, f"is not a config field (known: {', '.join(sorted(known))})")
    v = dict(values)
    if "payouts" in v:
        v["payouts"] = _as_tuple("payouts", v["payouts"])
    if "examples" in v:
        if not isinstance(v["examples"], (list, tuple)):
            raise ConfigError("examples", "must be a list of stack lists", v["examples"])
        v["examples"] = tuple(_as_tuple(f"examples[{i}]", e) for i, e in enumerate(v["examples"]))
    if v.get("start") in (None, (), []):
        players, units = v.get("players", GameConfig.players), v.get("units", GameConfig.units)
        fits = _is_int(players) and MIN_PLAYERS <= players <= MAX_PLAYERS  # (10^9 players: no 10^9-long start)
        if not (fits and _is_int(units) and players <= units):
            # let the field checks report the real problem
            v["start"] = (1,) * (players if fits else 1)
        else:
            v["start"] = equal_start(players, units)
    else:
        v["start"] = _as_tuple("start", v["start"])
    return GameConfig(**v)


def _as_tuple(name: str, value: Any) -> tuple:
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise ConfigError(name, "must be a list of numbers", value)
    return tuple(value)


def profile(profile_name: str, /, **overrides: Any) -> GameConfig:
    """A named profile ('quick', 'gs08', 'thesis'), optionally with fields overridden."""
    if not isinstance(profile_name, str) or profile_name not in PROFILES:
        raise ConfigError("profile", f"unknown profile; choose one of {', '.join(PROFILES)} or give a config file",
                          profile_name)
    values = {**PROFILES[profile_name], "name": profile_name, **overrides}
    return make_config(**values)


def game_config(profile_name: str = "quick", config_file: str = "") -> GameConfig:
    """The game a profile name or, when given, a TOML config file describes."""
    return load_config(config_file) if config_file else profile(profile_name)


GAME_FIELDS = ("players", "units", "payouts")
"""The fields a config file without a ``profile`` must set: the game itself."""


def load_config(path: str | Path) -> GameConfig:
    """Read a TOML game config. A ``profile = "…"`` key starts from that profile; without one the
    file must set the :data:`GAME_FIELDS`."""
    p = Path(path)
    if not str(path).strip():
        raise ConfigError("config", "is empty: give the path of a TOML file", str(path))
    if p.is_dir():
        raise ConfigError("config", "is a folder, not a TOML file", str(p))
    if p.exists() and not p.is_file():
        raise ConfigError("config", "is not a regular file (a TOML game config is)", str(p))
    if not p.is_file():
        raise ConfigError("config", "file not found", str(p))
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8-sig"))  # (a byte-order mark, as some editors write: dropped)
    except OSError as exc:
        raise ConfigError("config", f"cannot be read ({exc.strerror or exc})", str(p)) from None
    except UnicodeDecodeError:
        raise ConfigError("config", "is not a UTF-8 text file (a TOML game config is)", str(p)) from None
    except (tomllib.TOMLDecodeError, ValueError) as exc:  # (ValueError: an integer of over 4,300 digits)
        raise ConfigError("config", f"is not valid TOML: {exc}", str(p)) from None
    base = data.pop("profile", None)
    named = "name" in data
    data.setdefault("name", p.stem.lower().replace(" ", "-"))
    try:
        cfg = profile(base, **data) if base is not None else make_config(**data)
    except ConfigError as exc:
        if exc.field == "name" and not named:
            raise ConfigError("name", f"{exc.rule}; it was taken from the file name: set name = \"…\" in the file",
                              exc.value) from None
        raise
    missing = [k for k in GAME_FIELDS if k not in data] if base is None else []
    if missing:  # (the defaults would make a silent 5-player, 45-unit game, hours of solving)
        raise ConfigError("config", f"must set the game's {', '.join(GAME_FIELDS)} (missing: {', '.join(missing)}), "
                          "or start from a profile (profile = \"quick\")", str(p))
    if cfg.name in PROFILES and cfg != profile(cfg.name):
        how = "name" if named else "file name"
        raise ConfigError("name", f"'{cfg.name}' (the config's {how}) is a built-in profile's name, and the config "
                                  f"differs from that profile: its results would replace the profile's in the "
                                  f"warehouse, so give it another name", cfg.name)
    return cfg


def with_overrides(cfg: GameConfig, **overrides: Any) -> GameConfig:
    """Copy of ``cfg`` with the given (non-None) fields replaced and re-validated.

    Changing ``players`` or ``units`` without a new ``start`` resets the start to equal stacks.
    Without a new ``name`` the game is named ``<name>-<6 hex digits of the overrides>``, the name
    cut to 33 characters where it is longer. Overrides that all give their fields the values they
    have change nothing (``--gamma 0.001`` on `quick`, whose gamma it is, named a second game
    `quick-ee204a`); beside a real one they are kept (validated with it, and named as before).
    """
    clean = {k: v for k, v in overrides.items() if v is not None}
    current = cfg.to_dict()
    if all(k in current and _as_list(v) == _as_list(current[k]) for k, v in clean.items()):
        return cfg
    values = {**current, **clean}
    if "name" not in clean:  # (the name cut short to make room for the digest, so that it stays valid)
        digest = hashlib.sha1(json.dumps(clean, sort_keys=True, default=str).encode()).hexdigest()[:6]
        values["name"] = f"{cfg.name[:NAME_LENGTH - len(digest) - 1]}-{digest}"
    if ("players" in clean or "units" in clean) and "start" not in clean:
        values["start"] = None
    return make_config(**values)


def _as_list(value: Any) -> Any:
    """A field's value with tuples as lists (a config's payouts are a tuple, its dict's a list)."""
    return [_as_list(v) for v in value] if isinstance(value, (list, tuple)) else value


def position_names(players: int) -> tuple[str, ...]:
    """Position names in acting order (SPEC §2): heads-up SB, BB; otherwise … BU, SB, BB."""
    if players == 2:
        return ("SB", "BB")
    names = ("UTG", "MP", "HJ", "CO", "BU", "SB", "BB")
    if not 2 <= players <= len(names):
        raise ConfigError("players", f"positions are named for 2 to {len(names)} players", players)
    return names[-players:]
