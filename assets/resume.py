"""Finished units of an asset's long work, kept across interrupts and rebuilds.

Some analyses loop over models (the nemesis check of each model's profile, the Monte Carlo
tournaments of each model); on the thesis game each unit is minutes to hours. A
:class:`UnitCheckpoint` keeps a small JSON record per finished unit in `.cache/<kind>/<game>-<key>/`,
stamped with what the results depend on (a fingerprint of the upstream results and the
parameters), so a rerun after an interrupt, or a rebuild of the same game, takes the units that
match and redoes the rest. Delete the folder to redo them all.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.atomic_files import write_text_atomic
from engine.config import GameConfig

if TYPE_CHECKING:  # (`jamfold progress` reads records without DuckDB)
    import duckdb


def game_key(cfg: GameConfig) -> str:
    """Folder name of a game's checkpoints: its name and a digest of what its equilibrium depends on."""
    return f"{cfg.name}-{hashlib.sha1(cfg.solve_key().encode()).hexdigest()[:10]}"


def rows_digest(con: duckdb.DuckDBPyConnection, query: str, params: list) -> str | None:
    """A digest of what ``query`` returns from the warehouse (None when no rows): the fingerprint of
    an upstream result that a unit's record is stamped with."""
    rows = con.execute(query, params).fetchall()
    return hashlib.sha1(repr(rows).encode()).hexdigest() if rows else None


class UnitCheckpoint:
    """Records of finished units in ``folder``, valid while ``stamp`` (JSON-able) is unchanged."""

    def __init__(self, folder: Path, stamp: dict[str, Any]):
        self.folder = folder
        self.stamp = json.loads(json.dumps(stamp))  # as it reads back
        self.usable = all(v is not None for v in stamp.values())  # unknown upstream: keep nothing

    def _path(self, unit: str) -> Path:
        return self.folder / f"{unit}.json"

    def load(self, unit: str) -> dict | None:
        """The record of ``unit`` if it was finished against the same stamp, else None."""
        path = self._path(unit)
        if not self.usable or not path.exists():
            return None
        saved = json.loads(path.read_text())
        return saved["record"] if saved.get("stamp") == self.stamp else None

    def save(self, unit: str, record: dict) -> None:
        """Keep ``record`` for ``unit`` (written to a temporary name and renamed: complete or absent),
        and drop the unit's work folder (:meth:`work_dir`)."""
        if not self.usable:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        path = self._path(unit)
        write_text_atomic(path, json.dumps({"stamp": self.stamp, "record": record}, default=_plain))
        self._drop_work(unit)

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


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as JSON numbers and lists."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"not JSON-serializable: {type(value).__name__}")
