"""Opening the DuckDB warehouse and writing tables atomically.

Rules this module enforces:

* One writer at a time. DuckDB refuses a second process at once; we retry for a few seconds and
  then raise :class:`WarehouseBusy` naming the process that holds the file, instead of hanging.
* Atomic replacement. A materialization replaces the rows of its key (e.g. one game) inside a
  single transaction: readers see the old rows or the new rows, never a half table, and a failure
  or interrupt rolls back to the old rows.
"""

from __future__ import annotations

import hashlib
import html
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from warehouse.schema import TABLES, Table

DEFAULT_PATH = Path(__file__).resolve().parent / "lab.duckdb"


class WarehouseBusy(RuntimeError):
    """Another process holds the warehouse file."""


class WarehouseUnusable(ValueError):
    """The warehouse path names something that is not a DuckDB file, or (read-only) a DuckDB file
    without the lab's tables: a bad ``--warehouse`` or ``JAMFOLD_WAREHOUSE``, not a passing state."""


def warehouse_path(given: str | Path | None = None) -> Path:
    """The warehouse file: ``given`` (a ``--warehouse``), else $JAMFOLD_WAREHOUSE or
    warehouse/lab.duckdb in the repo. A blank ``given`` is refused: ``Path("")`` is the current
    folder, which read as "is a folder"."""
    if given is not None:
        if not str(given).strip():
            raise WarehouseUnusable("warehouse: is empty; give the path of a DuckDB file (--warehouse or "
                                    "JAMFOLD_WAREHOUSE)")
        return Path(given)
    env = os.environ.get("JAMFOLD_WAREHOUSE") or ""
    return Path(env) if env.strip() else DEFAULT_PATH  # (empty or blank: unset)


def connect(path: str | Path | None = None, read_only: bool = False, wait_s: float = 10.0) -> duckdb.DuckDBPyConnection:
    """Open the warehouse (creating schema when writable), retrying a held lock for ``wait_s`` seconds."""
    path = warehouse_path(path)
    if path.is_dir():
        raise WarehouseUnusable(f"warehouse: {path} is a folder; give the path of a DuckDB file "
                                f"(--warehouse or JAMFOLD_WAREHOUSE)")
    if path.exists() and not path.is_file():  # (a named pipe made DuckDB wait forever)
        raise WarehouseUnusable(f"warehouse: {path} is not a regular file; give the path of a DuckDB file "
                                f"(--warehouse or JAMFOLD_WAREHOUSE)")
    if read_only and not path.exists():
        raise FileNotFoundError(f"warehouse: no file at {path.absolute()}: build it first (see README), or give "
                                "another with --warehouse or JAMFOLD_WAREHOUSE")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WarehouseUnusable(f"warehouse: cannot create the folder {path.parent} for {path.name} "
                                f"({exc.strerror or exc}); give a path in a writable folder "
                                f"(--warehouse or JAMFOLD_WAREHOUSE)") from None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            con = duckdb.connect(str(path), read_only=read_only)
            break
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise WarehouseUnusable(f"warehouse: {path} cannot be opened as a DuckDB file "
                                        f"({str(exc).splitlines()[0]})") from None
            if time.monotonic() >= deadline:
                holder = re.search(r"held in (.*?)\(PID (\d+)\)", str(exc))
                who = f"{holder.group(1).strip()} (PID {holder.group(2)})" if holder else "another process"
                raise WarehouseBusy(
                    f"the warehouse {path} is in use by {who}; close that program "
                    f"(e.g. a duckdb shell or dagster dev run) and try again") from None
            time.sleep(0.5)
    if not read_only:
        ensure_schema(con)
    elif con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'games'").fetchone()[0] == 0:
        con.close()
        raise WarehouseUnusable(f"warehouse: {path} is a DuckDB file without the lab's tables; build a game into it "
                                f"first (see README) or give another --warehouse")
    else:
        current_views(con)
    return con


def current_views(con: duckdb.DuckDBPyConnection) -> None:
    """Give a read-only connection this code's views, as temporary views that shadow the file's own:
    a warehouse written by an older version keeps its view definitions until a build writes to it, and
    the site and the CLI read views this version defines (a column such as `pair_equities.deals`,
    a view such as `simulation_summary`). Views hold no data, so nothing is recomputed. A view whose
    tables lack a column this version adds is left as the file has it."""
    if _views_are_current(con):  # the file's own views are this version's: nothing to shadow
        return
    for table in TABLES.values():
        if table.kind == "view":
            with suppress(duckdb.Error):
                con.execute(table.ddl(temp=True))


@contextmanager
def session(path: str | Path | None = None, read_only: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
    """``with session() as con:`` — a connection that is always closed."""
    con = connect(path, read_only=read_only)
    try:
        yield con
    finally:
        con.close()


BULK_MEMORY = "256MB"
"""DuckDB's memory limit while :func:`capped_memory` holds it (see there)."""


@contextmanager
def capped_memory(con: duckdb.DuckDBPyConnection, limit: str = BULK_MEMORY) -> Iterator[None]:
    """Cap DuckDB's memory on ``con`` for a large read or write done in pieces, then reset it to
    DuckDB's default (the warehouse sets no other limit).

    DuckDB's buffer pool keeps the blocks a query reads or writes, up to its limit (80 % of the
    machine), beside the caller's own memory. Measured on synthetic rows the size of the 45-unit
    5-player layer's strategies (3,258,024 node rows, 24 a state, more than its 2,752,863 since a
    blind all-in leaves 3, 9 or 10 nodes; 4.1 GiB as float64, solved-like: a top set of jams and
    a few mixed classes a node), written frame by frame in one transaction: 1.64 GiB
    at the peak with the default limit, 0.79 GiB with this one; the solve writes them while its
    solvers hold about 19 GiB. Each piece's query must fit the limit (DuckDB spills a sort that
    does not).
    """
    con.execute(f"SET memory_limit = '{limit}'")
    try:
        yield
    finally:
        with suppress(duckdb.Error):  # an interrupted connection is closed by its owner anyway
            con.execute("RESET memory_limit")


def ensure_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create missing tables, add columns a newer schema has to existing ones, (re)create views.

    Nothing is run where the file already holds this version's schema (:func:`_schema_is_current`,
    two catalog queries, a few ms): a build opens a connection for every asset, and the 30
    statements took 40–100 ms each time, 5 s of a 30-second tiny build."""
    if _schema_is_current(con):
        return
    tables = [t for t in TABLES.values() if t.kind == "table"]
    views = [t for t in TABLES.values() if t.kind == "view"]  # in TABLES' order: a view after those it reads
    for table in tables:
        con.execute(table.ddl())
    for table, column, type_ in _missing_columns(con):
        con.execute(f"ALTER TABLE {table} ADD COLUMN {column} {type_}")
    for view in views:
        con.execute(view.ddl())
        con.execute(f"COMMENT ON VIEW {view.name} IS '{_view_mark(view)}'")


def _view_mark(view: Table) -> str:
    """The comment a view of the file carries: a digest of the statement that made it. DuckDB keeps a
    view's SQL rewritten, so this is how a connection tells that a view is this version's; a
    version that re-creates the view (an older one, say) leaves it without this comment."""
    return "jamfold view " + hashlib.sha1(view.ddl().encode()).hexdigest()[:16]


def _catalog_rows(con: duckdb.DuckDBPyConnection, function: str, columns: str) -> list[tuple]:
    """Rows of a DuckDB catalog function (``duckdb_columns``, ``duckdb_views``) for the file's own
    schema, without the temporary views of a read-only connection or DuckDB's internal ones."""
    return con.execute(f"SELECT {columns} FROM {function}() WHERE database_name = current_database() "
                       f"AND schema_name = current_schema()").fetchall()


def _views_are_current(con: duckdb.DuckDBPyConnection) -> bool:
    marks = dict(_catalog_rows(con, "duckdb_views", "view_name, comment"))
    return all(marks.get(t.name) == _view_mark(t) for t in TABLES.values() if t.kind == "view")


def _schema_is_current(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether every table has this version's columns and every view carries its mark."""
    return not _missing_columns(con, missing_tables=True) and _views_are_current(con)


def _missing_columns(con: duckdb.DuckDBPyConnection, missing_tables: bool = False) -> list[tuple[str, str, str]]:
    """(table, column, type) of this version's columns that the file's tables lack; with
    ``missing_tables``, also those of the tables it lacks altogether."""
    have = set(_catalog_rows(con, "duckdb_columns", "table_name, column_name"))
    tables = {t for t, _ in have}
    return [(spec.name, col.name, col.type) for spec in TABLES.values()
            if spec.kind == "table" and (missing_tables or spec.name in tables)
            for col in spec.columns if (spec.name, col.name) not in have]


def replace_rows(con: duckdb.DuckDBPyConnection, table: str, frame: pd.DataFrame | Iterable[pd.DataFrame],
                 key: Mapping[str, Any] | None = None, constants: Mapping[str, Any] | None = None) -> int:
    """Atomically replace the rows of ``table`` matching ``key`` (all rows if no key) with ``frame``.

    ``frame`` holds the table's columns (order is taken from the schema); columns in ``constants``
    (and key columns the frame lacks) are filled with one value for every row, which keeps large
    frames free of repeated strings. ``frame`` may also be an iterable of such frames, inserted
    one after the other in the same transaction, so a large table never has to be one frame in
    memory. Returns the number of rows written.
    """
    return replace_tables(con, [Replacement(table, frame, key, constants)])[table]


@dataclass(frozen=True)
class Replacement:
    """One table's part of :func:`replace_tables`: the rows of ``table`` matching ``key`` become
    ``frame`` (a frame or an iterable of frames), ``constants`` filling columns the frames lack."""
    table: str
    frame: pd.DataFrame | Iterable[pd.DataFrame]
    key: Mapping[str, Any] | None = None
    constants: Mapping[str, Any] | None = None


def replace_tables(con: duckdb.DuckDBPyConnection, replacements: Sequence[Replacement]) -> dict[str, int]:
    """:func:`replace_rows` for several tables in one transaction: tables that belong together (a
    layer's values, strategies, exploitability and log; a game and its states) are seen together,
    old or new, and an interrupt or failure leaves every one of them as it was. Returns rows
    written per table."""
    for r in replacements:
        spec = TABLES[r.table]
        for k in [*(r.key or {}), *(r.constants or {})]:
            if k not in spec.column_names:
                raise ValueError(f"{r.table}: column {k!r} is not in the table")
    written: dict[str, int] = {}
    with _transaction(con):
        for r in replacements:
            written[r.table] = written.get(r.table, 0) + _replace_in_transaction(con, r)
    return written


def copy_rows(con: duckdb.DuckDBPyConnection, tables: Sequence[str], source: Mapping[str, Any],
              target: Mapping[str, Any]) -> dict[str, int]:
    """Replace the rows of key ``target`` in each of ``tables`` with a copy of the rows of key
    ``source`` (the same key columns, e.g. ``{"game": "thesis", "players": 5}`` and ``{"game":
    "thesis-1f2e3d", "players": 5}``), all in one transaction as :func:`replace_tables`. For rows
    another game of the same equilibrium holds already: copied inside DuckDB instead of computed,
    handed to Python and written again. Returns rows written per table."""
    if set(source) != set(target) or not source:
        raise ValueError(f"copy_rows: source key {sorted(source)} and target key {sorted(target)} must name the "
                         "same columns")
    written: dict[str, int] = {}
    with _transaction(con):
        for table in tables:
            columns = TABLES[table].column_names
            missing = set(source) - set(columns)
            if missing:
                raise ValueError(f"{table}: columns {sorted(missing)} are not in the table")
            where = " AND ".join(f"{k} = ?" for k in target)
            con.execute(f"DELETE FROM {table} WHERE {where}", list(target.values()))
            select = ", ".join("?" if c in target else c for c in columns)
            written[table], = con.execute(
                f"INSERT INTO {table} ({', '.join(columns)}) SELECT {select} FROM {table} WHERE "
                + " AND ".join(f"{k} = ?" for k in source),
                [target[c] for c in columns if c in target] + list(source.values())).fetchone()  # (rows inserted)
    return written


@contextmanager
def _transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """One transaction, committed at the end or rolled back on any exception (Ctrl-C included)."""
    with capped_memory(con):  # the blocks written need not stay in DuckDB's cache beside the caller's memory
        con.execute("BEGIN TRANSACTION")
        try:
            yield
            con.execute("COMMIT")
        except BaseException:
            with suppress(duckdb.TransactionException):  # DuckDB already rolled back a query Ctrl-C interrupted
                con.execute("ROLLBACK")
            raise


def _replace_in_transaction(con: duckdb.DuckDBPyConnection, r: Replacement) -> int:
    spec = TABLES[r.table]
    key = dict(r.key or {})
    frames = [r.frame] if isinstance(r.frame, pd.DataFrame) else r.frame
    where = " AND ".join(f"{k} = ?" for k in key) or "TRUE"
    con.execute(f"DELETE FROM {r.table} WHERE {where}", list(key.values()))
    written = 0
    for part in frames:
        fixed = {**{k: v for k, v in key.items() if k not in part.columns}, **(r.constants or {})}
        missing = set(spec.column_names) - set(part.columns) - set(fixed)
        if missing:
            raise ValueError(f"{r.table}: frame lacks columns {sorted(missing)}")
        select = ", ".join("?" if c in fixed else c for c in spec.column_names)
        con.register("_incoming", part[[c for c in spec.column_names if c not in fixed]])
        con.execute(f"INSERT INTO {r.table} ({', '.join(spec.column_names)}) SELECT {select} FROM _incoming",
                    [fixed[c] for c in spec.column_names if c in fixed])
        con.unregister("_incoming")
        written += len(part)
    return written


def cell_text(value: Any) -> str:
    """Text as one markdown table cell shows it: outside `code spans` a '|' would end the cell (a
    column doc "mean |model − equilibrium|" showed "mean") and '<…>' would be taken for an HTML
    tag ("'sampled-<boards>-seed<seed>'" showed "'sampled--seed'"), so they are escaped there."""
    parts = str(value).split("`")
    for i, part in enumerate(parts):  # even parts are outside code spans, and so is text after a lone backtick
        if i % 2 == 0 or i == len(parts) - 1:
            parts[i] = html.escape(part, quote=False).replace("|", "\\|")
    return "`".join(parts)


def frame_markdown(df: pd.DataFrame, digits: int = 6, decimals: int | None = None) -> str:
    """Render a small frame as a GitHub markdown table (used for metadata previews and pages).

    Floats get ``digits`` significant digits, or exactly ``decimals`` decimals when given.
    """
    def fmt(v: Any) -> str:
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, np.ndarray):
            v = v.tolist()
        if isinstance(v, float):
            if v != v:  # NaN / missing
                return ""
            return f"{v:.{decimals}f}" if decimals is not None else f"{v:.{digits}g}"
        if isinstance(v, (list, tuple)):
            return ", ".join(str(x) for x in v)
        return "" if v is None or v is pd.NaT or v is pd.NA else str(v)  # (str(pd.NA) is '<NA>': an HTML tag)
    head = "| " + " | ".join(map(str, df.columns)) + " |"  # (as given: pages break long names with <wbr>)
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    rows = ["| " + " | ".join(cell_text(fmt(v)) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *rows])


def preview_markdown(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None, limit: int = 8) -> str:
    """A small markdown table of a query's first rows, for asset metadata."""
    df = con.execute(f"SELECT * FROM ({sql}) LIMIT {int(limit)}", params or []).df()
    return frame_markdown(df)
