"""Showdown assets: hand classes, and the pair and triple rollout tables (SPEC §3)."""


import time
from datetime import datetime, timezone

import dagster as dg
import duckdb
import numpy as np
import pandas as pd
from pydantic import Field

from assets.paths import cache_dir
from assets.resources import GameResource, WarehouseResource
from engine import rollout
from engine.cards import hand_class_table
from engine.config import GameConfig
from warehouse import db

PAIR_ROWS, TRIPLE_ROWS = 14_365, 818_805
PAIR_WEIGHT_TOTAL = 1326 * 1225
TRIPLE_WEIGHT_TOTAL = 1326 * 1225 * 1128
UNDEALABLE_TRIPLES = 325


class RolloutConfig(dg.Config):
    rebuild: bool = Field(default=False, description="Rebuild even when the warehouse already holds a complete "
                                                     "table with this rollout id (a triple table's chunk "
                                                     "checkpoints in .cache/rollout/ are read back: delete them "
                                                     "to compute it anew).")


def _progress_logger(context: dg.AssetExecutionContext, what: str, saved: int = 0):
    """A build's progress callback that logs every 5 %. ``saved``: rows its checkpoints already
    hold, loaded in an instant, so the time left is reckoned from the rows computed in this run."""
    state = {"last": -1.0, "t0": time.perf_counter()}

    def report(done: int, total: int) -> None:
        pct = 100.0 * done / max(total, 1)
        if pct - state["last"] >= 5.0 or done == total:
            state["last"] = pct
            elapsed = time.perf_counter() - state["t0"]
            computed = done - saved
            if done == total:
                left = "~0 s left"
            elif computed > 0:
                left = f"~{elapsed / computed * (total - done):.0f} s left"
            else:
                left = f"reading back the {saved:,} rows its checkpoints hold"
            context.log.info(f"{what}: {done:,}/{total:,} ({pct:.0f}%), {elapsed:.0f} s elapsed, {left}")

    return report


def _complete_rows(con, kind: str, rollout_id: str, expected: int) -> int | None:
    row = con.execute("SELECT rows FROM rollout_tables WHERE rollout = ? AND kind = ?", [rollout_id, kind]).fetchone()
    table = "rollout_pairs" if kind == "pairs" else "rollout_triples"
    n = con.execute(f"SELECT count(*) FROM {table} WHERE rollout = ?", [rollout_id]).fetchone()[0]
    return n if row and row[0] == n == expected else None


def write_pair_table(con: duckdb.DuckDBPyConnection, rollout_id: str, table: rollout.PairTable) -> None:
    """Replace the rows of ``rollout_id`` in `rollout_pairs` and record the build (one transaction)."""
    frame = pd.DataFrame({"a": table.a, "b": table.b, "weight": table.weight, "p_first_wins": table.p_first_wins})
    db.replace_tables(con, [db.Replacement("rollout_pairs", frame, {"rollout": rollout_id}),
                            _build_record("pairs", rollout_id, table)])


def write_triple_table(con: duckdb.DuckDBPyConnection, rollout_id: str, table: rollout.TripleTable) -> None:
    """Replace the rows of ``rollout_id`` in `rollout_triples` and record the build (one transaction)."""
    frame = pd.DataFrame({"a": table.a, "b": table.b, "c": table.c, "weight": table.weight,
                          **{f"p_{o}": table.p[:, i] for i, o in enumerate(rollout.ORDERS)}})
    db.replace_tables(con, [db.Replacement("rollout_triples", frame, {"rollout": rollout_id}),
                            _build_record("triples", rollout_id, table)])


def _build_record(kind: str, rollout_id: str, table) -> db.Replacement:
    """The table's row of `rollout_tables`: how it was built."""
    return db.Replacement("rollout_tables", pd.DataFrame([{
        "rollout": rollout_id, "kind": kind, "mode": table.mode,
        "boards_per_matchup": table.boards_per_matchup if table.mode == "sampled" else None,
        "seed": table.seed if table.mode == "sampled" else None,
        "precision": float(table.precision), "rows": len(table.a), "wall_s": float(table.wall_s),
        "built_at": datetime.now(timezone.utc).replace(tzinfo=None),
    }]), {"rollout": rollout_id, "kind": kind})


@dg.asset(group_name="showdown", kinds={"duckdb"},
          check_specs=[dg.AssetCheckSpec("combos_total_1326", asset="hand_classes", blocking=True,
                                         description="169 classes holding 1,326 two-card combos")],
          description="The 169 preflop hand classes (13×13 grid, combos per class) → table `hand_classes`.")
def hand_classes(warehouse: WarehouseResource) -> dg.MaterializeResult:
    frame = pd.DataFrame(hand_class_table())
    with warehouse.connect() as con:
        n = db.replace_rows(con, "hand_classes", frame)
        combos = con.execute("SELECT sum(combos) FROM hand_classes").fetchone()[0]
    return dg.MaterializeResult(
        metadata={"rows": n, "dagster/row_count": n, "combos": int(combos),
                  "preview": dg.MetadataValue.md(db.frame_markdown(frame.head(8)))},
        check_results=[dg.AssetCheckResult(check_name="combos_total_1326", passed=bool(combos == 1326 and n == 169),
                                           metadata={"rows": n, "combos": int(combos)})])


def _build_metadata(rollout_id: str, kind: str, reused: bool, con, sql: str) -> dict:
    """The table's build record as it is stored in `rollout_tables` (a reused table shows how it was built)."""
    mode, boards, precision, rows, wall_s = con.execute(
        "SELECT mode, boards_per_matchup, precision, rows, wall_s FROM rollout_tables WHERE rollout = ? AND kind = ?",
        [rollout_id, kind]).fetchone()
    return {
        "rollout": rollout_id,
        "rows": int(rows),
        "dagster/row_count": int(rows),
        "mode": mode,
        "boards_per_matchup": int(boards) if mode == "sampled" else dg.MetadataValue.text("every board (exact)"),
        "precision (max std error)": float(precision),
        "build_wall_s": round(float(wall_s), 2),
        "reused_existing": reused,
        "preview": dg.MetadataValue.md(db.preview_markdown(con, sql, limit=8)),
    }


@dg.asset(group_name="showdown", kinds={"numba", "duckdb"}, deps=[hand_classes],
          check_specs=[dg.AssetCheckSpec("pair_rows_and_weights", asset="rollout_pairs", blocking=True,
                                         description="14,365 rows; deal weights total 1,326·1,225; 0 ≤ p ≤ 1; p = 1/2 for a = b")],
          description="Heads-up all-in probabilities of every class multiset {a ≤ b} (exact: all C(48,5) boards; "
                      "or sampled) → table `rollout_pairs`, build info in `rollout_tables`.")
def rollout_pairs(context: dg.AssetExecutionContext, config: RolloutConfig, game: GameResource,
                  warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    rollout_id = cfg.rollout_id("pairs")
    with warehouse.connect() as con:
        reuse = not config.rebuild and _complete_rows(con, "pairs", rollout_id, PAIR_ROWS)
    table = None
    if not reuse:
        context.log.info(f"building pair table {rollout_id}")
        table = rollout.build_pair_table(cfg.rollout_pairs, samples=cfg.rollout_boards("pairs"),
                                         seed=cfg.rollout_seed, progress=_progress_logger(context, "pair table"))
    with warehouse.connect() as con:
        if table is not None:
            write_pair_table(con, rollout_id, table)
        sql = f"SELECT * FROM pair_equities WHERE rollout = '{rollout_id}' ORDER BY weight DESC"
        meta = _build_metadata(rollout_id, "pairs", bool(reuse), con, sql)
        check = _check_pairs(con, rollout_id)
    return dg.MaterializeResult(metadata=meta, check_results=[check])


def _check_pairs(con, rollout_id: str) -> dg.AssetCheckResult:
    n, wsum, bad_p, bad_sym = con.execute(
        """SELECT count(*), sum(weight), count(*) FILTER (WHERE p_first_wins < 0 OR p_first_wins > 1 OR p_first_wins IS NULL),
                  count(*) FILTER (WHERE a = b AND abs(p_first_wins - 0.5) > 1e-12)
           FROM rollout_pairs WHERE rollout = ?""", [rollout_id]).fetchone()
    passed = n == PAIR_ROWS and wsum == PAIR_WEIGHT_TOTAL and bad_p == 0 and bad_sym == 0
    return dg.AssetCheckResult(check_name="pair_rows_and_weights", passed=bool(passed),
                               metadata={"rows": int(n), "weight_total": int(wsum or 0),
                                         "expected_weight_total": PAIR_WEIGHT_TOTAL,
                                         "p_out_of_range": int(bad_p), "mirror_not_half": int(bad_sym)})


@dg.asset(group_name="showdown", kinds={"numba", "duckdb"}, deps=[hand_classes],
          check_specs=[dg.AssetCheckSpec("triple_rows_and_weights", asset="rollout_triples", blocking=True,
                                         description="818,805 rows; weights total 1,326·1,225·1,128; 325 undealable "
                                                     "rows; every dealable row's six order probabilities sum to 1 "
                                                     "within 1e-9 (a heads-up game reads no triple table: passes "
                                                     "with needed = false)")],
          description="Three-way all-in finishing-order probabilities of every class multiset {a ≤ b ≤ c} → table "
                      "`rollout_triples`, and its build record in `rollout_tables`. Builds checkpoint finished chunks "
                      "under .cache/ (exact and sampled alike) and resume after an interrupt. A heads-up game "
                      "never goes three ways: it builds nothing here.")
def rollout_triples(context: dg.AssetExecutionContext, config: RolloutConfig, game: GameResource,
                    warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    if not cfg.uses_triples:
        reason = "a heads-up game deals no three-way all-in"
        context.log.info(f"{reason}: no triple table to build")
        why = dg.MetadataValue.text(reason)
        check = dg.AssetCheckResult(check_name="triple_rows_and_weights", passed=True,
                                    metadata={"needed": False, "why": why})
        return dg.MaterializeResult(metadata={"needed": False, "players": cfg.players, "why": why},
                                    check_results=[check])
    rollout_id = cfg.rollout_id("triples")
    with warehouse.connect() as con:
        reuse = not config.rebuild and _complete_rows(con, "triples", rollout_id, TRIPLE_ROWS)
    table = None
    if not reuse:
        context.log.info(f"building triple table {rollout_id}")
        samples = cfg.rollout_boards("triples")
        folder = cache_dir("rollout", rollout_id)
        saved = rollout.triple_rows_saved(folder, cfg.rollout_triples, samples, cfg.rollout_seed)
        table = rollout.build_triple_table(cfg.rollout_triples, samples=samples, seed=cfg.rollout_seed,
                                           progress=_progress_logger(context, "triple table", saved),
                                           checkpoint_dir=str(folder))
    with warehouse.connect() as con:
        if table is not None:
            write_triple_table(con, rollout_id, table)
        sql = f"SELECT * FROM rollout_triples WHERE rollout = '{rollout_id}' AND weight > 0 ORDER BY weight DESC"
        meta = _build_metadata(rollout_id, "triples", bool(reuse), con, sql)
        check = _check_triples(con, rollout_id)
    return dg.MaterializeResult(metadata=meta, check_results=[check])


def _check_triples(con, rollout_id: str) -> dg.AssetCheckResult:
    psum = " + ".join(f"p_{o}" for o in rollout.ORDERS)
    n, wsum, undealable, worst = con.execute(
        f"""SELECT count(*), sum(weight), count(*) FILTER (WHERE weight = 0),
                   coalesce(max(abs({psum} - 1)) FILTER (WHERE weight > 0), 0)
            FROM rollout_triples WHERE rollout = ?""", [rollout_id]).fetchone()
    passed = n == TRIPLE_ROWS and wsum == TRIPLE_WEIGHT_TOTAL and undealable == UNDEALABLE_TRIPLES and worst <= 1e-9
    return dg.AssetCheckResult(check_name="triple_rows_and_weights", passed=bool(passed),
                               metadata={"rows": int(n), "weight_total": int(wsum or 0),
                                         "expected_weight_total": TRIPLE_WEIGHT_TOTAL, "undealable": int(undealable),
                                         "max_row_sum_error": float(worst)})



def load_tables(con: duckdb.DuckDBPyConnection, cfg: GameConfig
                ) -> tuple[rollout.PairTable, rollout.TripleTable | None]:
    """The game's pair and triple tables read back from the warehouse (canonical row order); no
    triple table (None) for a heads-up game, which never reads one."""
    pairs_id, triples_id = cfg.rollout_id("pairs"), cfg.rollout_id("triples")
    info = dict(((k, r), (mode, b, seed, prec, w)) for k, r, mode, b, seed, prec, w in con.execute(
        "SELECT kind, rollout, mode, boards_per_matchup, seed, precision, wall_s FROM rollout_tables").fetchall())
    kinds = (("pairs", pairs_id), ("triples", triples_id)) if cfg.uses_triples else (("pairs", pairs_id),)
    for kind, rid in kinds:
        if (kind, rid) not in info:
            raise LookupError(f"the {kind} table '{rid}' is not in the warehouse: materialize rollout_{kind} first")
    p = con.execute("SELECT a, b, weight, p_first_wins FROM rollout_pairs WHERE rollout = ? ORDER BY a, b",
                    [pairs_id]).fetchnumpy()
    mode, b, seed, prec, w = info[("pairs", pairs_id)]
    pairs = rollout.PairTable(p["a"], p["b"], p["weight"], p["p_first_wins"], mode, b, seed, prec, w)
    if not cfg.uses_triples:
        return pairs, None
    cols = ", ".join(f"p_{o}" for o in rollout.ORDERS)
    t = con.execute(f"SELECT a, b, c, weight, {cols} FROM rollout_triples WHERE rollout = ? ORDER BY a, b, c",
                    [triples_id]).fetchnumpy()
    mode, b, seed, prec, w = info[("triples", triples_id)]
    probs = np.stack([np.ma.filled(np.ma.asarray(t[f"p_{o}"], dtype=np.float64), np.nan) for o in rollout.ORDERS], axis=1)
    triples = rollout.TripleTable(t["a"], t["b"], t["c"], t["weight"], probs, mode, b, seed, prec, w)
    return pairs, triples
