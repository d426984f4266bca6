"""Finished units of an asset's long work, kept across interrupts and rebuilds.

Some analyses loop over models (the nemesis check of each model's profile, the Monte Carlo
tournaments of each model); on the thesis game each unit is minutes to hours. A
:class:`UnitCheckpoint` keeps a small JSON record per finished unit (and the rows it wrote) in
`.cache/<kind>/<game_key>/`, stamped with what the results depend on (a fingerprint of the upstream
results and the parameters), so a rerun after an interrupt, a rebuild of the same game, or a build
of another game with the same equilibrium takes the units that match and redoes the rest. Delete
the folder to redo them all.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from assets.paths import cache_root
from engine.atomic_files import atomic_path, drop_dead_temporaries, write_text_atomic
from engine.config import GameConfig, make_config
from warehouse.schema import TABLES

if TYPE_CHECKING:  # (`jamfold progress` reads records without DuckDB)
    import duckdb


def game_key(cfg: GameConfig) -> str:
    """Folder name of a game's checkpoints (under `.cache/<kind>/`): its player count, units and a
    digest of what its equilibrium depends on (:meth:`GameConfig.solve_key`), e.g. `5p45u-3f4a7bf881`.

    Not its name: a profile run with an analysis flag (``--simulation-tournaments``, ``--fgs-depth``
    …) is a game of another name with the same equilibrium, and must not solve it again (about 20 h
    for `thesis`). What the analyses' kept units depend on beyond the equilibrium is in their stamps
    (:class:`UnitCheckpoint`), as it must be already for a config file edited under the same name."""
    return f"{cfg.players}p{cfg.units}u-{_solve_digest(cfg)}"


def _solve_digest(cfg: GameConfig, legacy: bool = False, with_triples: bool | None = None) -> str:
    return hashlib.sha1(cfg.solve_key(legacy, with_triples).encode()).hexdigest()[:10]


def _old_digests(cfg: GameConfig) -> list[str]:
    """The digests old folders of ``cfg``'s equilibrium may end with: today's, that of the key
    before 2026-11-30 (the payouts as given), and, for a heads-up game, that of the key naming the
    triple table it never reads (until stop 73, 2026-11-30), where they differ."""
    return sorted({_solve_digest(cfg), _solve_digest(cfg, legacy=True), _solve_digest(cfg, with_triples=True)})


def game_folder(root: Path, kind: str, cfg: GameConfig, adopt: bool = True) -> Path:
    """The game's folder of ``kind`` checkpoints under ``root`` (the cache root), not made here.

    Until 2026-11-29 the folders were named `<game name>-<digest>`. Where the new folder is absent
    and such a folder of the same digest is there (the game's own name first, else the latest
    written), ``adopt`` renames it to the new name, so no finished work is lost; without ``adopt``
    (`jamfold progress`, which changes nothing beside a running build) the old folder is returned
    as it is. Other old folders of the same digest are left alone (`jamfold progress` names them:
    :func:`unused_old_folders`). Folders named by the digest of the key before 2026-11-30 (payouts
    as given, e.g. `[50.0, 30.0, 20.0]` from `--payouts`: :meth:`GameConfig.solve_key`), and a
    heads-up game's folders named by the key with its (unread) triple table, are adopted the same
    way."""
    folder = root / kind / game_key(cfg)
    if folder.exists():
        return folder
    digests = _old_digests(cfg)
    old = [p for d in digests for p in (root / kind).glob(f"*-{d}") if p.is_dir() and p != folder]
    if not old:
        return folder
    own = [p for p in old if p.name in {f"{cfg.name}-{d}" for d in digests}]
    found = own[0] if own else max(old, key=lambda p: p.stat().st_mtime)
    if not adopt:
        return found
    found.rename(folder)
    return folder


CHECKPOINT_KINDS = ("solve", "models", "finishing", "ex_post", "simulations")
"""The cache folders (under the cache root) that hold a folder per equilibrium (:func:`game_folder`)."""


def unused_old_folders(root: Path, cfg: GameConfig) -> list[Path]:
    """Folders of the old `<game name>-<digest>` form with ``cfg``'s equilibrium that no build will
    use: another game's of the same equilibrium, once the game's own (or the latest) was renamed
    by :func:`game_folder`. Checkpoints of the same equilibrium, so safe to delete (the `thesis`
    solve's holds 15 GB); `jamfold progress` lists them."""
    digests = _old_digests(cfg)
    unused = []
    for kind in CHECKPOINT_KINDS:
        used = game_folder(root, kind, cfg, adopt=False)
        unused += sorted(p for d in digests for p in (root / kind).glob(f"*-{d}") if p.is_dir() and p != used)
    return unused


def game_cache_dir(kind: str, cfg: GameConfig) -> Path:
    """The game's folder of ``kind`` checkpoints in the cache (:func:`game_folder`), made if missing."""
    folder = game_folder(cache_root(), kind, cfg)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def games_with_equilibrium(con: duckdb.DuckDBPyConnection, cfg: GameConfig) -> list[str]:
    """The other games in the warehouse with ``cfg``'s equilibrium (the same
    :meth:`GameConfig.solve_key`, read from their stored configs), by name: those that share its
    checkpoints (:func:`game_key`), and whose rows of a unit those checkpoints hold can be copied
    instead of read back from them and written again. A stored config this version cannot read
    (from an older lab) matches nothing."""
    key = cfg.solve_key()
    same = []
    for game, config_json in con.execute("SELECT game, config_json FROM games WHERE game <> ? ORDER BY game",
                                         [cfg.name]).fetchall():
        try:
            if make_config(**json.loads(config_json)).solve_key() == key:
                same.append(game)
        except (TypeError, ValueError):  # (ConfigError is a ValueError)
            continue
    return same


def rows_digest(con: duckdb.DuckDBPyConnection, query: str, params: list) -> str | None:
    """A digest of what ``query`` returns from the warehouse (None when no rows): the fingerprint of
    an upstream result that a unit's record is stamped with."""
    rows = con.execute(query, params).fetchall()
    return hashlib.sha1(repr(rows).encode()).hexdigest() if rows else None


def warehouse_rows_digest(con: duckdb.DuckDBPyConnection, table: str, key: dict[str, Any]) -> str:
    """A digest of the rows ``table`` holds under ``key``: their count and the sum of a hash of each
    row's other columns (in any order). A unit's record keeps the digest of the rows it wrote
    (``rows_digest``), so that as many rows written by another run (a game sharing the checkpoints
    whose equilibrium was solved again since) are not taken for them (:func:`rows_of_kept_unit`)."""
    columns = [c for c in TABLES[table].column_names if c not in key]
    where = " AND ".join(f"{column} = ?" for column in key)
    count, total = con.execute(f"SELECT count(*), sum(hash({', '.join(columns)})::HUGEINT) FROM {table} "
                               f"WHERE {where}", list(key.values())).fetchone()
    return f"{count}:{total}"


_ROWS_STAMP = "__stamp__"
"""The member of a unit's rows file that holds the stamp they were saved with."""


class UnitCheckpoint:
    """Records of finished units in ``folder``, valid while ``stamp`` (JSON-able) is unchanged."""

    def __init__(self, folder: Path, stamp: dict[str, Any]):
        self.folder = folder
        self.stamp = json.loads(json.dumps(stamp))  # as it reads back
        self.usable = all(v is not None for v in stamp.values())  # unknown upstream: keep nothing
        if folder.is_dir():  # what writers killed outright left (row files, blocks: up to tens of MB each)
            for place in [folder, *(p for p in folder.glob("*.work-*") if p.is_dir())]:
                drop_dead_temporaries(place)

    def _path(self, unit: str) -> Path:
        return self.folder / f"{unit}.json"

    def load(self, unit: str) -> dict | None:
        """The record of ``unit`` if it was finished against the same stamp, else None."""
        path = self._path(unit)
        if not self.usable or not path.exists():
            return None
        saved = json.loads(path.read_text())
        if saved.get("stamp") != self.stamp:
            return None
        self._drop_work(unit)  # (left where a kill fell between the record's save and this)
        return saved["record"]

    def save(self, unit: str, record: dict, rows: Mapping[str, Any] | None = None) -> None:
        """Keep ``record`` for ``unit`` (written to a temporary name and renamed: complete or absent),
        and drop the unit's work folder (:meth:`work_dir`).

        ``rows`` (a DataFrame, or columns by name): the unit's table rows, kept beside the record for
        a game of another name with the same equilibrium (they share this folder, :func:`game_key`),
        whose warehouse lacks them: :func:`rows_from_checkpoint` writes them there instead of the
        unit's work being done again. Written before the record and stamped like it, so a record
        never lacks them and never takes those of another stamp (a save cut between the two)."""
        if not self.usable:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        if rows is not None:
            with atomic_path(self._rows_path(unit)) as tmp, open(tmp, "wb") as f:
                np.savez(f, **{name: _compact(np.asarray(column)) for name, column in rows.items()},
                         **{_ROWS_STAMP: np.array(json.dumps(self.stamp, sort_keys=True))})
        else:
            self._rows_path(unit).unlink(missing_ok=True)  # (none of an earlier record's)
        path = self._path(unit)
        write_text_atomic(path, json.dumps({"stamp": self.stamp, "record": record}, default=_plain))
        self._drop_work(unit)

    def load_rows(self, unit: str) -> dict[str, np.ndarray] | None:
        """The rows :meth:`save` kept with ``unit``'s record, by column, while that record is valid
        (:meth:`load`); None without them (a record saved before 2026-11-29, or a damaged file)."""
        return self._read_rows(unit, columns=True)

    def has_rows(self, unit: str) -> bool:
        """Whether :meth:`load_rows` has rows to give (reads only their stamp)."""
        return self._read_rows(unit, columns=False) is not None

    def _read_rows(self, unit: str, columns: bool) -> dict[str, np.ndarray] | None:
        path = self._rows_path(unit)
        if self.load(unit) is None or not zipfile.is_zipfile(path):  # (absent, or bytes numpy reads as a lone array)
            return None
        try:
            with np.load(path) as data:
                if _ROWS_STAMP not in data.files or str(data[_ROWS_STAMP]) != json.dumps(self.stamp, sort_keys=True):
                    return None
                return {name: data[name] for name in data.files if name != _ROWS_STAMP and columns}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            return None

    def _rows_path(self, unit: str) -> Path:
        return self.folder / f"{unit}.rows.npz"

    def work_dir(self, unit: str) -> Path | None:
        """A folder for the checkpoints of ``unit`` while it is being worked on (e.g. the nemesis
        rounds of one profile), named by the stamp so that work against other upstream results is
        never resumed (such folders are deleted here); None when nothing can be kept."""
        if not self.usable:
            return None
        digest = hashlib.sha1(json.dumps(self.stamp, sort_keys=True).encode()).hexdigest()[:12]
        current = self.folder / f"{unit}.work-{digest}"
        self._drop_work(unit, keep=current)
        current.mkdir(parents=True, exist_ok=True)
        return current

    def _drop_work(self, unit: str, keep: Path | None = None) -> None:
        for folder in work_folders(self.folder, unit):
            if folder != keep:
                shutil.rmtree(folder, ignore_errors=True)


def keep_rows_of(con: duckdb.DuckDBPyConnection, done: UnitCheckpoint, unit: str, record: dict, table: str,
                 key: dict[str, Any]) -> None:
    """Keep with ``unit``'s valid ``record`` the rows the warehouse holds under ``key`` where the
    record has none (a unit finished before 2026-11-29), so that a game of another name with the
    same equilibrium can take them (:func:`rows_from_checkpoint`) instead of redoing the unit."""
    if done.has_rows(unit):
        return
    where = " AND ".join(f"{column} = ?" for column in key)
    frame = con.execute(f"SELECT * EXCLUDE ({', '.join(key)}) FROM {table} WHERE {where}", list(key.values())).df()
    done.save(unit, record, rows=frame)


def rows_from_checkpoint(con: duckdb.DuckDBPyConnection, done: UnitCheckpoint, unit: str, table: str,
                         key: dict[str, Any], expected: int) -> bool:
    """Write into ``table``, under ``key`` (the game's name …), the ``expected`` rows ``done`` keeps
    with ``unit``'s valid record (:meth:`UnitCheckpoint.save`): the unit was finished for a game of
    another name with the same equilibrium and stamp, and this game's warehouse lacks its rows.
    True when written; False (nothing written) without such rows, and the unit is to be done."""
    import pandas as pd

    from warehouse import db

    columns = done.load_rows(unit)
    if columns is None or any(len(c) != expected for c in columns.values()):
        return False
    db.replace_rows(con, table, pd.DataFrame(columns), key)
    return True


def rows_of_kept_unit(con: duckdb.DuckDBPyConnection, done: UnitCheckpoint, unit: str, record: dict, table: str,
                      key: dict[str, Any], expected: int, held: int) -> str | None:
    """Where a kept unit's ``expected`` rows are, for its valid ``record``, given that the warehouse
    holds ``held`` rows under ``key``: "held" (the warehouse has them, the same rows by their digest
    where the record has one, :func:`warehouse_rows_digest`; kept beside the record too,
    :func:`keep_rows_of`), "restored" (taken from the checkpoint: the unit was done for a game of
    another name with the same equilibrium, :func:`rows_from_checkpoint`), or None (neither: the
    unit is to be done again)."""
    digest = record.get("rows_digest")  # (records before 2026-11-30 have none: the count alone)
    if held == expected and (digest is None or digest == warehouse_rows_digest(con, table, key)):
        keep_rows_of(con, done, unit, record, table, key)
        return "held"
    return "restored" if rows_from_checkpoint(con, done, unit, table, key, expected) else None


KEPT_UNIT_COMPUTED = {"held": "in an earlier run (the warehouse holds them)",
                      "restored": "for a game with the same equilibrium, taken from its checkpoint"}
"""The `computed` metadata of a unit that :func:`rows_of_kept_unit` found, by where it found its rows
(a unit done in this run says "in this run")."""


def kept_record(folder: Path, unit: str, stamped: dict[str, Any] | None = None) -> tuple[dict, float] | None:
    """The record a :class:`UnitCheckpoint` in ``folder`` keeps for ``unit``, and when it was saved
    (POSIX time), whatever its stamp's fingerprints; None when there is none, or when its stamp
    differs from ``stamped`` in a field that names (parameters such as tournaments and seed). For
    `jamfold progress`, which cannot fingerprint the upstream results (the warehouse may be in use
    by the build): a record older than the results it depends on is stale, and the next build
    redoes its unit."""
    path = folder / f"{unit}.json"
    try:
        saved_at = path.stat().st_mtime
        saved = json.loads(path.read_text())
        record, stamp = saved["record"], saved.get("stamp", {})
    except (OSError, ValueError, KeyError, TypeError):  # absent, or not a record
        return None
    if not isinstance(record, dict) or not isinstance(stamp, dict):
        return None
    expected = json.loads(json.dumps(stamped or {}))  # as a stamp reads back
    return (record, saved_at) if all(stamp.get(k) == v for k, v in expected.items()) else None


def work_folders(folder: Path, unit: str) -> list[Path]:
    """The work folders of ``unit`` (:meth:`UnitCheckpoint.work_dir`), any stamp: one, or none, but
    where deleting an old one was cut short (its remains kept their stamp's name)."""
    return sorted(p for p in folder.glob(f"{unit}.work-*") if p.is_dir())


def _compact(column: np.ndarray) -> np.ndarray:
    """An integer column in the smallest integer type that holds it (state ids, positions, places:
    a third of the bytes of the 45-unit 5-player layer's finishing rows); others as they are."""
    if column.dtype.kind not in "iu" or column.size == 0:
        return column
    low, high = column.min(), column.max()
    for kind in (np.uint8, np.int8, np.uint16, np.int16, np.uint32, np.int32):
        if np.iinfo(kind).min <= low and high <= np.iinfo(kind).max:
            return column.astype(kind)
    return column


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as JSON numbers and lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")
