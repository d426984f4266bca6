"""Dagster resources: which game to build and where the warehouse lives."""


import os
from collections.abc import Iterable

import dagster as dg
import duckdb
from pydantic import Field

from engine.config import GameConfig, game_config
from engine.states import n_states
from warehouse import db
from warehouse.schema import TABLES


class GameResource(dg.ConfigurableResource):
    """The game config every asset of a run is keyed by: a profile name or a TOML config file."""

    profile: str = Field(default="quick", description="A built-in game profile: quick, gs08 or thesis "
                                                       "(not read when config_file is set).")
    config_file: str = Field(default="", description="Path of a TOML game config (README, \"Game configs\"); when "
                                                     "set it decides the game, starting from its own `profile = …` "
                                                     "key if it has one.")

    def config(self) -> GameConfig:
        return game_config(self.profile, self.config_file)


ASSET_LOCK_WAIT_S = 60.0
"""Seconds an asset waits for the warehouse while another process reads it (a `jamfold site`, a
query) before it fails with WarehouseBusy: an asset may have hours of work to write, where the
build's own check at its start fails within `db.connect`'s 10 s, before any work."""


class WarehouseResource(dg.ConfigurableResource):
    """The DuckDB warehouse file (fails fast with a clear message when another process holds it)."""

    path: str = Field(default=str(db.DEFAULT_PATH), description="Path of the DuckDB warehouse file, created with its "
                                                               "schema if missing.")

    def connect(self, read_only: bool = False) -> duckdb.DuckDBPyConnection:
        return db.connect(self.path, read_only=read_only, wait_s=ASSET_LOCK_WAIT_S)


def default_resources() -> dict[str, dg.ConfigurableResource]:
    """Resources as configured by the environment (JAMFOLD_PROFILE, JAMFOLD_CONFIG, JAMFOLD_WAREHOUSE).
    Not loaded here: `jamfold build` imports these definitions with a game of its own, whatever the
    environment says (`./lab dagster` checks the environment's game first, see
    :func:`jamfold.cli.check_dagster_env`)."""
    return {
        "game": GameResource(profile=os.environ.get("JAMFOLD_PROFILE", "quick"),
                             config_file=os.environ.get("JAMFOLD_CONFIG", "")),
        "warehouse": WarehouseResource(path=str(db.warehouse_path())),
    }


def column_schema(table: str) -> dg.TableSchema:
    """A warehouse table's columns, DuckDB types and documentation (:mod:`warehouse.schema`), as the
    ``dagster/column_schema`` the UI shows on an asset's Columns tab."""
    return dg.TableSchema(columns=[dg.TableColumn(c.name, c.type, c.description) for c in TABLES[table].columns])


def blocking_checks(asset: str, checks: dict[str, str]) -> list[dg.AssetCheckSpec]:
    """Blocking check specs of ``asset`` from {check name: what it checks, with its tolerance}; the
    Dagster UI shows the description beside each result."""
    return [dg.AssetCheckSpec(name, asset=asset, blocking=True, description=text) for name, text in checks.items()]


def open_prize_sums(con: duckdb.DuckDBPyConnection, table: str, column: str, cfg: GameConfig,
                    by: tuple[str, ...] = (), players: int | None = None) -> tuple[float, int]:
    """For the check "a state's values sum to the prizes of the places still open": (the largest
    |Σ over positions of ``column`` − open prizes| in $, the groups complete) over ``table``'s rows
    of game ``cfg``, grouped by ``by`` + (players, state_id), in the layer ``players`` or every
    layer. A group is complete when its state exists and it has a non-NULL value for each of its
    players: the sums alone cover only the rows present."""
    layers = [players] if players is not None else list(range(2, cfg.players + 1))
    keys = ", ".join((*by, "players", "state_id"))
    err, complete = con.execute(
        f"""SELECT coalesce(max(abs(t.s - o.open_prize)), 0),
                   count(*) FILTER (WHERE t.c = t.players AND t.state_id < o.states)
            FROM (SELECT players, state_id, sum({column}) AS s, count({column}) AS c FROM {table}
                  WHERE game = ? AND list_contains(?, players) GROUP BY {keys}) t
            JOIN (SELECT unnest(?::INTEGER[]) AS players, unnest(?::DOUBLE[]) AS open_prize,
                         unnest(?::BIGINT[]) AS states) o USING (players)""",
        [cfg.name, layers, layers, [float(sum(cfg.payouts[:n])) for n in layers],
         [n_states(cfg.units, n) for n in layers]]).fetchone()
    return float(err), int(complete)


def skipped_layer(cfg: GameConfig, checks: Iterable[str]) -> dg.MaterializeResult:
    """What a per-layer asset reports for a layer above the game's player count: skipped, with each
    of its checks passed and saying why."""
    return dg.MaterializeResult(
        metadata={"skipped": f"game '{cfg.name}' has {cfg.players} players"},
        check_results=[dg.AssetCheckResult(check_name=c, passed=True,
                                           metadata={"skipped": f"game has {cfg.players} players"},
                                           description=f"not applicable: no such layer in a {cfg.players}-player game")
                       for c in checks])
