"""`jamfold sql`, `progress` and `state`: reading the warehouse and a build's checkpoints."""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np

from jamfold.common import UsageError, config_from_args, game_flag, game_model, missing_game, whole_stacks


# ---------------------------------------------------------------- sql
def cmd_sql(args: argparse.Namespace) -> None:
    """One SQL query on the warehouse, read-only, its rows printed: every number on the site is a
    table or view there (the site's Warehouse page lists them), and the lab's environment has the
    DuckDB Python package but no DuckDB shell. The connection is the lab's own, so a warehouse an
    older version wrote gets the views added since, for this session; it reads no other file and
    writes none (no ATTACH, COPY … TO, EXPORT or extension: a hard link to the warehouse, attached
    read-write, would have been written)."""
    import duckdb

    from warehouse import db

    query = args.query.strip()
    try:
        query.encode("utf-8")
    except UnicodeEncodeError:  # (bytes the shell passed that are not UTF-8)
        raise UsageError("QUERY: is not UTF-8 text") from None
    if not query:
        raise UsageError('QUERY: give one SQL query, e.g. "SELECT * FROM games"')
    with db.session(args.warehouse, read_only=True) as con:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")  # (so that the query cannot turn it back on)
        try:
            statements = con.extract_statements(query)
            if len(statements) != 1:
                raise UsageError(f"QUERY: give one SQL query; this has {len(statements)} statements")
            text = _without_terminator(statements[0].query)
            if args.csv:
                _print_csv(con, text, statements[0].type)
            else:
                rows = con.sql(text)
                if rows is not None:  # (None: a statement without rows)
                    rows.show()
        except duckdb.Error as exc:  # (a typo, a table the warehouse lacks, a write: one line, no traceback)
            lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
            said = lines[:2] if len(lines) > 1 and lines[0].endswith(":") else lines[:1]
            said += [line for line in lines[1:] if line.startswith("Did you mean")]
            raise UsageError(f"QUERY: {' '.join(said)}") from None


def _print_csv(con, query: str, kind) -> None:
    """Every row of ``query`` (one statement of type ``kind``, its ending semicolons and comments
    stripped: :func:`_without_terminator`) as CSV with a header line, each value as DuckDB writes it (DuckDB
    casts them to text: lists, maps, intervals, timestamps), NULL as an empty field; a SELECT is
    streamed 10,000 rows at a time (a table of millions of rows)."""
    import csv

    import duckdb

    out = csv.writer(sys.stdout, lineterminator="\n")
    rows = con.sql(query)
    if rows is None:
        return
    if kind == duckdb.StatementType.SELECT:  # (run before the header, so an error prints no line)
        result = con.execute(f"SELECT COLUMNS(*)::VARCHAR FROM (\n{query}\n)")
        out.writerow(rows.columns)
        while batch := result.fetchmany(10_000):
            out.writerows(batch)
    else:  # (PRAGMA, CALL, EXPLAIN: small, and not a subquery)
        out.writerow(rows.columns)
        out.writerows(rows.project("COLUMNS(*)::VARCHAR").fetchall())


def _without_terminator(query: str) -> str:
    """``query`` without the semicolons and comments it ends with (DuckDB keeps them in a statement's
    text, and a subquery may not hold a semicolon)."""
    import duckdb

    end = len(query)
    for position, kind in reversed(duckdb.tokenize(query)):
        if kind == duckdb.token_type.comment or (kind == duckdb.token_type.operator and query[position] == ";"):
            end = position
        else:
            break
    return query[:end]


# ---------------------------------------------------------------- progress
def cmd_progress(args: argparse.Namespace) -> None:
    """Where a game's build stands, read from its checkpoints: for a build that runs for a day, run
    beside it or after an interrupt. Reads a few small members of the checkpoint files and takes no
    lock (a build starting meanwhile is not disturbed)."""
    cfg = config_from_args(args)
    from assets.paths import cache_root
    from assets.resume import game_folder, game_key
    from engine.memory import memory_shortfall
    from engine.solve_status import lock_holder

    if cache_root().exists() and not cache_root().is_dir():
        raise UsageError(f"JAMFOLD_CACHE (checkpoints): {cache_root()} is not a folder")
    folder = game_folder(cache_root(), "solve", cfg, adopt=False)
    print(f"game '{cfg.name}': {cfg.players} players, {cfg.units} units, payouts "
          f"${'/'.join(f'{x:g}' for x in cfg.payouts)}, gamma ${cfg.gamma:g}")
    print(f"checkpoints: {folder}")
    build = lock_holder(cache_root() / "builds" / game_key(cfg))
    solve = lock_holder(folder) if folder.is_dir() else None
    if build is not None:
        print(f"running: a build of game '{cfg.name}', or of a game with its equilibrium (process {build})")
    elif solve is not None:
        print(f"running: a solve in this folder (process {solve}; from the Dagster UI?)")
    elif not folder.is_dir() and (why := memory_shortfall(cfg.players, cfg.units)) is not None:
        print(f"no running build found, and no checkpoints: `./lab build {game_flag(args)}` refuses this game here "
              f"({why})")
        return
    elif folder.is_dir() or (cfg.uses_triples and (cache_root() / "rollout" / cfg.rollout_id("triples")).is_dir()):
        print(f"no running build found: `./lab build {game_flag(args)}` with the same flags goes on from here")
    else:
        print(f"no running build found, and no checkpoints: the game's solve has not started with this config "
              f"and JAMFOLD_CACHE (`./lab build {game_flag(args)}` starts it)")
        return
    from jamfold.status_report import report, unused_folders_line

    for line in report(cfg, folder, cache_root()):
        print(line)
    unused = unused_folders_line(cfg, cache_root())
    if unused is not None:
        print(unused)


# ---------------------------------------------------------------- state
def cmd_state(args: argparse.Namespace) -> None:
    from engine.cards import class_label
    from engine.config import position_names
    from warehouse import db

    cfg = config_from_args(args)
    stacks = whole_stacks(args.stacks, cfg)
    model_name = game_model(args.model, cfg)
    n = len(stacks)
    with db.session(args.warehouse, read_only=True) as con:
        row = con.execute("SELECT state_id FROM states WHERE game = ? AND players = ? AND stacks = ?",
                          [cfg.name, n, stacks]).fetchone()
        if row is None:  # (the stacks are valid for the game: the game itself is missing, named by its flag)
            raise missing_game(con, args, cfg, "is not built in the warehouse")
        sid = row[0]
        eq = [v for (v,) in con.execute("SELECT value FROM equilibrium_values WHERE game = ? AND players = ? AND state_id = ? "
                                        "ORDER BY position", [cfg.name, n, sid]).fetchall()]
        if not eq:
            raise UsageError(f"--stacks: the {n}-player layer of game '{cfg.name}' is not solved yet (materialize solve_{n}p)")
        icm = [v for (v,) in con.execute("SELECT payoff FROM model_payoffs WHERE game = ? AND model = 'harville' AND players = ? "
                                         "AND state_id = ? ORDER BY position", [cfg.name, n, sid]).fetchall()]
        icm = icm or None  # not computed yet: a layer solved in the Dagster UI before equity_model_tables
        rows = con.execute("SELECT position, place, probability FROM finishing WHERE game = ? AND players = ? "
                           "AND state_id = ?", [cfg.name, n, sid]).fetchall()
        fin = None  # not computed yet: the layer is solved but finishing_{n}p not materialized
        if rows:
            fin = np.zeros((n, n))
            for p, q, prob in rows:
                fin[p, q - 1] = prob
        expl = con.execute("SELECT exploitability FROM state_quality WHERE game = ? AND players = ? AND state_id = ?",
                           [cfg.name, n, sid]).fetchone()[0]
        nodes = con.execute("SELECT actor_name, jammed_before, jam FROM equilibrium_nodes WHERE game = ? AND players = ? "
                            "AND state_id = ? ORDER BY node", [cfg.name, n, sid]).fetchall()
        model = None if model_name is None else _model_in_state(con, args, cfg, model_name, n, sid)
    positions = list(position_names(n))
    labels = [class_label(c) for c in range(169)]
    node_list = [{"actor": actor, "jammed_before": list(before), "jam": dict(zip(labels, map(float, jam)))}
                 for actor, before, jam in nodes]
    if model is not None:
        model["nodes"] = [{**node, "jam": dict(zip(labels, map(float, jam)))}
                          for node, jam in zip(node_list, model.pop("jams"), strict=True)]
    if args.json:
        print(json.dumps({"game": cfg.name, "stacks": stacks, "positions": positions, "equilibrium": eq, "icm": icm,
                          "finishing": None if fin is None else fin.tolist(), "exploitability": expl,
                          "nodes": node_list, **({} if model is None else {"model": model})}))
        return
    print(f"game '{cfg.name}': stacks {stacks} (units; SB = 1, BB = 2), exploitability of the hand {expl:.2e} $")
    places = "" if fin is None else " " + " ".join(f"{'P' + str(q + 1):>6}" for q in range(n))
    heading = "" if model is None else f" {model_name + ' $':>{MODEL_WIDTH}}"
    print(f"{'pos':>4} {'stack':>6} {'equilibrium $':>14} {'ICM $':>9}{heading}" + places)
    for p in range(n):
        probs = "" if fin is None else " " + " ".join(f"{fin[p, q]:6.3f}" for q in range(n))
        beside = "" if model is None else f" {model['payoff'][p]:>{MODEL_WIDTH}.4f}"
        print(f"{positions[p]:>4} {stacks[p]:>6} {eq[p]:>14.4f} {'' if icm is None else f'{icm[p]:.4f}':>9}{beside}"
              + probs)
    if icm is None:
        print("ICM payoffs: not computed yet (materialize equity_model_tables)")
    if fin is None:
        print(f"finishing probabilities: not computed yet (materialize finishing_{n}p)")
    if model is not None:
        print(_nemesis_line(model_name, model["nemesis_gain"], positions))
    if not node_list:
        print("\nno decision in this hand: the blinds put players all in, and the rest is automatic (SPEC §2)")
    for k, node in enumerate(node_list):
        before = ", ".join(node["jammed_before"]) or "nobody"
        print(f"\n{node['actor']} after {before} jammed: {_range_text(node['jam'])}")
        if model is not None:
            print(f"{'':>4}{model_name}: {_range_text(model['nodes'][k]['jam'])}")


MODEL_WIDTH = 11
"""The width of the model's payoff column in `jamfold state --model` (FGS-10 $ fits)."""


def _range_text(jam: dict[str, float]) -> str:
    """One node's range for a person: the classes it jams (probability ≥ 0.999, as a range string),
    those it mixes with their probabilities, and its share of the 1,326 hands (%)."""
    from engine.cards import CLASS_COMBO_COUNT, range_string

    pure = [c for c, p in enumerate(jam.values()) if p >= 0.999]
    mixed = [(lab, p) for lab, p in jam.items() if 0.001 < p < 0.999]
    share = 100 * sum(p * CLASS_COMBO_COUNT[c] for c, p in enumerate(jam.values())) / 1326
    return (f"jams {range_string(pure) or 'nothing'}" + (f"; mixes {', '.join(f'{lab} {p:.3f}' for lab, p in mixed)}"
                                                         if mixed else "") + f"  ({share:.1f}% of hands)")


def _model_in_state(con, args: argparse.Namespace, cfg, model: str, n: int, sid: int) -> dict:
    """``model``'s payoffs ($ per position), its jam probabilities at each of the state's decision
    nodes (node order, as the equilibrium's) and, where its ex post check has run, the gain ($) of a
    nemesis in each position when everybody else plays the model's strategies from here on.
    Missing payoffs or strategies are an error naming the asset that makes them."""
    payoff = [v for (v,) in con.execute("SELECT payoff FROM model_values WHERE game = ? AND model = ? AND players = ? "
                                        "AND state_id = ? ORDER BY position", [cfg.name, model, n, sid]).fetchall()]
    if not payoff:
        asset = "fgs_strategies" if model.startswith("FGS-") else "equity_model_tables"
        raise UsageError(f"--model: the {model} payoffs of game '{cfg.name}' are not computed yet "
                         f"(materialize {asset})")
    swept, = con.execute("SELECT count(*) FROM model_sweeps WHERE game = ? AND model = ? AND players = ?",
                         [cfg.name, model, n]).fetchone()
    if not swept:
        raise UsageError(f"--model: the warehouse holds no {model} strategies of the {n}-player layer of game "
                         f"'{cfg.name}' (its model sweep has not run: ./lab build {game_flag(args)} without "
                         "--skip-models)")
    jams = [list(j) for (j,) in con.execute("SELECT jam FROM model_nodes WHERE game = ? AND model = ? AND players = ? "
                                            "AND state_id = ? ORDER BY node", [cfg.name, model, n, sid]).fetchall()]
    gain = [g for (g,) in con.execute("SELECT gain FROM nemesis_values WHERE game = ? AND profile = ? AND players = ? "
                                      "AND state_id = ? ORDER BY position", [cfg.name, model, n, sid]).fetchall()]
    return {"name": model, "payoff": payoff, "nemesis_gain": gain or None, "jams": jams}


def _nemesis_line(model: str, gain: list[float] | None, positions: list[str]) -> str:
    """What a nemesis gains against ``model``'s strategies in this state, position by position."""
    if gain is None:
        return f"{model}'s strategies ex post: not computed yet (materialize ex_post_models)"
    return (f"{model}'s strategies ex post (everybody else playing them from here on), a nemesis gains: "
            + ", ".join(f"{pos} {g:.4f} $" for pos, g in zip(positions, gain)))
