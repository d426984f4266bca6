"""Where a game's work lives on disk: the checkpoint folders under `.cache/` (``JAMFOLD_CACHE``),
the site's build folder (``JAMFOLD_BUILD_DIR``), and the names of the units that the long assets
keep in their folders (:class:`assets.resume.UnitCheckpoint`).

No Dagster, DuckDB or pandas here: `jamfold progress` reads these folders beside a running build
and should answer in a second or two, and the assets and the report must agree on the names.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.config import GameConfig

REPO_ROOT = Path(__file__).resolve().parent.parent

EQUILIBRIUM = "equilibrium"
"""The equilibrium's name where it stands beside the models (ex post checks, simulations)."""


def cache_root() -> Path:
    """Resumable work in progress (checkpoints) lives here: $JAMFOLD_CACHE or .cache/ in the repo
    (an empty variable counts as unset, not as the current folder)."""
    return Path(os.environ.get("JAMFOLD_CACHE") or REPO_ROOT / ".cache")


def packed_games_dir() -> Path:
    """Where :func:`engine.packed_game.load_or_pack_game` keeps the packed games of `simulate` and
    `simulations` (not made here: it is made when a pack is saved)."""
    return cache_root() / "packed"


def cache_dir(*parts: str) -> Path:
    """The folder ``parts`` under :func:`cache_root`, made if missing."""
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_dir() -> Path:
    """Where the site is generated and built: $JAMFOLD_BUILD_DIR or build/ in the repo (an empty
    variable counts as unset)."""
    return Path(os.environ.get("JAMFOLD_BUILD_DIR") or REPO_ROOT / "build")


def finishing_unit(n: int) -> str:
    """The n-player layer's finishing probabilities in ``.cache/finishing/<game key>/``: their
    record ``layer{n}.json``, and their work folder of hand-outcome blocks while they run."""
    return f"layer{n}"


def ex_post_unit(n: int) -> str:
    """The equilibrium's ex post check of the n-player layer in ``.cache/ex_post/<game key>/``
    (a model's whole check is the unit named by the model)."""
    return f"{EQUILIBRIUM}.layer{n}"


def hero_unit(profile: str) -> str:
    """One player on ``profile``'s strategies against the equilibrium, in ``.cache/simulations/``."""
    return f"hero-{profile}"


def match_unit(model: str) -> str:
    """``model`` against Harville over every seating, in ``.cache/simulations/``."""
    return f"match-{model}"


def simulation_parameters(cfg: GameConfig) -> dict:
    """What the simulated units in ``.cache/simulations/`` are stamped with besides the fingerprints
    of the strategies they play: tournaments per hero seat, the series' seed and the start state."""
    return {"tournaments": cfg.simulation_tournaments, "seed": cfg.simulation_seed, "start": list(cfg.start)}


def match_parameters(cfg: GameConfig) -> dict:
    """The same for the direct matches' units, stamped with the tournaments per seating of a match
    (:attr:`GameConfig.match_tournaments`; the hero seats' count where the config sets none)."""
    return {**simulation_parameters(cfg), "tournaments": cfg.match_tournaments}
