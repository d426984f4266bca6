"""Dagster resources: which game to build and where the warehouse lives."""


import os
from collections.abc import Iterable
from pathlib import Path

import dagster as dg
import duckdb

from engine.config import GameConfig, load_config, profile
from warehouse import db

REPO_ROOT = Path(__file__).resolve().parent.parent


class GameResource(dg.ConfigurableResource):
    """The game config every asset of a run is keyed by: a profile name or a TOML config file."""

    profile: str = "quick"
    config_file: str = ""

    def config(self) -> GameConfig:
        return load_config(self.config_file) if self.config_file else profile(self.profile)


ASSET_LOCK_WAIT_S = 60.0
"""Seconds an asset waits for the warehouse while another process reads it (a `jamfold site`, a
query) before it fails with WarehouseBusy: an asset may have hours of work to write, where the
build's own check at its start fails within `db.connect`'s 10 s, before any work."""


class WarehouseResource(dg.ConfigurableResource):
    """The DuckDB warehouse file (fails fast with a clear message when another process holds it)."""

    path: str = str(db.DEFAULT_PATH)

    def connect(self, read_only: bool = False) -> duckdb.DuckDBPyConnection:
        return db.connect(self.path, read_only=read_only, wait_s=ASSET_LOCK_WAIT_S)


def cache_dir(*parts: str) -> Path:
    """Resumable work in progress (checkpoints) lives here: $JAMFOLD_CACHE or .cache/ in the repo."""
    root = Path(os.environ.get("JAMFOLD_CACHE", REPO_ROOT / ".cache"))
    path = root.joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_dir() -> Path:
    """Where the site is generated and built: $JAMFOLD_BUILD_DIR or build/ in the repo."""
    return Path(os.environ.get("JAMFOLD_BUILD_DIR", REPO_ROOT / "build"))


def default_resources() -> dict[str, dg.ConfigurableResource]:
    """Resources as configured by the environment (JAMFOLD_PROFILE, JAMFOLD_CONFIG, JAMFOLD_WAREHOUSE)."""
    return {
        "game": GameResource(profile=os.environ.get("JAMFOLD_PROFILE", "quick"),
                             config_file=os.environ.get("JAMFOLD_CONFIG", "")),
        "warehouse": WarehouseResource(path=str(db.warehouse_path())),
    }


def blocking_checks(asset: str, checks: dict[str, str]) -> list[dg.AssetCheckSpec]:
    """Blocking check specs of ``asset`` from {check name: what it checks, with its tolerance}; the
    Dagster UI shows the description beside each result."""
    return [dg.AssetCheckSpec(name, asset=asset, blocking=True, description=text) for name, text in checks.items()]


def skipped_layer(cfg: GameConfig, checks: Iterable[str]) -> dg.MaterializeResult:
    """What a per-layer asset reports for a layer above the game's player count: skipped, with each
    of its checks passed and saying why."""
    return dg.MaterializeResult(
        metadata={"skipped": f"game '{cfg.name}' has {cfg.players} players"},
        check_results=[dg.AssetCheckResult(check_name=c, passed=True, metadata={"skipped": f"game has {cfg.players} players"})
                       for c in checks])
