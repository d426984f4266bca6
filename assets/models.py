"""Game and equity-model assets: the game's states and the ICM-family finishing matrices (SPEC §2, §4)."""


import time

import dagster as dg
import numpy as np
import pandas as pd

from assets.resources import GameResource, WarehouseResource, open_prize_sums
from engine import equity_models, states
from engine.config import GameConfig, position_names
from warehouse import db


def _prizes(cfg: GameConfig, players: int) -> np.ndarray:
    """Prize of places 1..players in $ (zeros past the paid places)."""
    r = np.zeros(players)
    paid = min(players, len(cfg.payouts))
    r[:paid] = cfg.payouts[:paid]
    return r


@dg.asset(group_name="game", kinds={"duckdb"},
          check_specs=[dg.AssetCheckSpec("state_counts", asset="game_states", blocking=True,
                                         description="C(units−1, n−1) states per player count n; stacks ≥ 1 and sum to units")],
          description="The game config (table `games`) and every state of it: stack vectors in acting order for "
                      "2..players players (table `states`).")
def game_states(game: GameResource, warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    frames = []
    for n in range(2, cfg.players + 1):
        stacks = states.enumerate_states(cfg.units, n)
        frames.append(pd.DataFrame({
            "state_id": np.arange(len(stacks), dtype=np.int32), "players": np.int16(n),
            "stacks": list(stacks.astype(np.int16)), "positions": [list(position_names(n))] * len(stacks)}))
    frame = pd.concat(frames, ignore_index=True)
    games_row = pd.DataFrame([{
        "players": cfg.players, "units": cfg.units, "payouts": [float(x) for x in cfg.payouts],
        "prize_pool": cfg.prize_pool, "gamma": cfg.gamma, "start": list(cfg.start),
        "rollout_pairs": cfg.rollout_id("pairs"),
        "rollout_triples": cfg.rollout_id("triples") if cfg.uses_triples else None,  # heads-up: none
        "config_json": cfg.to_json()}])
    with warehouse.connect() as con:
        rows = db.replace_tables(con, [db.Replacement("games", games_row, {"game": cfg.name}),
                                       db.Replacement("states", frame, {"game": cfg.name})])["states"]
        counts = dict(con.execute(
            """SELECT players, count(*) FROM states WHERE game = ?
               AND list_sum(stacks) = ? AND list_min(stacks) >= 1 GROUP BY players""",
            [cfg.name, cfg.units]).fetchall())
        preview = db.preview_markdown(con, "SELECT * FROM states WHERE game = ? ORDER BY players DESC, state_id", [cfg.name])
    expected = {n: states.n_states(cfg.units, n) for n in range(2, cfg.players + 1)}
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "rows": rows, "dagster/row_count": rows,
                  **{f"states_{n}p": c for n, c in expected.items()},
                  "config": dg.MetadataValue.json(cfg.to_dict()), "preview": dg.MetadataValue.md(preview)},
        check_results=[dg.AssetCheckResult(
            check_name="state_counts", passed=counts == expected,
            metadata={"expected": dg.MetadataValue.json({str(n): c for n, c in expected.items()}),
                      "found": dg.MetadataValue.json({str(n): c for n, c in counts.items()})})])


@dg.asset(group_name="models", kinds={"numba", "duckdb"}, deps=[game_states],
          check_specs=[
              dg.AssetCheckSpec("finishing_rows_and_columns_sum_to_1", asset="equity_model_tables", blocking=True,
                                description="for every state and model: each position's place probabilities and each "
                                            "place's position probabilities sum to 1 (within 1e-9), every (model, "
                                            "state, position, place) present"),
              dg.AssetCheckSpec("payoffs_sum_to_open_prizes", asset="equity_model_tables", blocking=True,
                                description="every model has a payoff for every (state, position), and a state's "
                                            "payoffs sum to the prizes of the places still open (within 1e-9 $); so "
                                            "do the example tables' (every model on every example)"),
          ],
          description="Harville (ICM), Malmuth-Weitzman and Roberts finishing matrices and payoffs for every state of "
                      "the game (tables `model_finishing`, `model_payoffs`) and for the config's example stacks "
                      "(`model_examples`).")
def equity_model_tables(context: dg.AssetExecutionContext, game: GameResource,
                        warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    finishing, payoffs, timings = [], [], {}
    for model in equity_models.MODELS:
        t0 = time.perf_counter()
        for n in range(2, cfg.players + 1):
            stacks = states.enumerate_states(cfg.units, n)
            mats = equity_models.finishing_matrices(model, stacks.astype(np.float64))  # (m, n, n)
            m = len(stacks)
            sid, pos, place = np.meshgrid(np.arange(m), np.arange(n), np.arange(n), indexing="ij")
            finishing.append(pd.DataFrame({
                "model": model, "players": np.int16(n), "state_id": sid.ravel().astype(np.int32),
                "position": pos.ravel().astype(np.int16), "place": (place.ravel() + 1).astype(np.int16),
                "probability": mats.ravel()}))
            pay = mats @ _prizes(cfg, n)
            sid2, pos2 = np.meshgrid(np.arange(m), np.arange(n), indexing="ij")
            payoffs.append(pd.DataFrame({
                "model": model, "players": np.int16(n), "state_id": sid2.ravel().astype(np.int32),
                "position": pos2.ravel().astype(np.int16), "stack": stacks.ravel().astype(np.int16),
                "payoff": pay.ravel()}))
        timings[f"{model}_s"] = round(time.perf_counter() - t0, 3)
        context.log.info(f"{model}: all states in {timings[f'{model}_s']} s")
    examples = []
    for k, ex in enumerate(cfg.examples):
        x = np.asarray(ex, dtype=np.float64)
        for model in equity_models.MODELS:
            if len(x) > 9 and model == "roberts":
                continue
            mat = equity_models.finishing_matrix(model, x)
            pay = mat @ _prizes(cfg, len(x))
            n = len(x)
            pl, place = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
            examples.append(pd.DataFrame({
                "model": model, "example": np.int16(k), "player": pl.ravel().astype(np.int16),
                "stack": x[pl.ravel()], "place": (place.ravel() + 1).astype(np.int16),
                "probability": mat.ravel(), "payoff": pay[pl.ravel()]}))
    with warehouse.connect() as con:
        key = {"game": cfg.name}
        written = db.replace_tables(con, [
            db.Replacement("model_finishing", pd.concat(finishing, ignore_index=True), key),
            db.Replacement("model_payoffs", pd.concat(payoffs, ignore_index=True), key),
            db.Replacement("model_examples", pd.concat(examples, ignore_index=True), key)])
        n_fin, n_pay, n_ex = written["model_finishing"], written["model_payoffs"], written["model_examples"]
        checks = _check_models(con, cfg)
        preview = example_payoffs_preview(con, cfg.name, rows=sum(len(x) for x in cfg.examples))
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "finishing_rows": n_fin, "payoff_rows": n_pay, "example_rows": n_ex,
                  "dagster/row_count": n_pay,  # (the payoffs: the model values the analyses read)
                  **timings, "example_payoffs": dg.MetadataValue.md(preview)},
        check_results=checks)


def example_payoffs_preview(con, game: str, rows: int) -> str:
    """The asset's preview of `model_examples`: one row per example and player (its stack in chips),
    one column per model (its payoff, $), so every example of the config shows, not only the first
    (``rows``: the examples' players in all)."""
    by_model = ", ".join(f"round(any_value(payoff) FILTER (WHERE model = '{m}'), 2) AS {m}"
                         for m in equity_models.MODELS)
    return db.preview_markdown(
        con, f"""SELECT example, player, any_value(stack) AS stack, {by_model}
                 FROM model_examples WHERE game = ? GROUP BY example, player ORDER BY example, player""",
        [game], limit=rows)


def _check_models(con, cfg: GameConfig) -> list[dg.AssetCheckResult]:
    row_err, col_err = con.execute(
        """WITH r AS (SELECT abs(sum(probability) - 1) e FROM model_finishing WHERE game = ? GROUP BY model, players, state_id, position),
                c AS (SELECT abs(sum(probability) - 1) e FROM model_finishing WHERE game = ? GROUP BY model, players, state_id, place)
           SELECT (SELECT coalesce(max(e), 0) FROM r), (SELECT coalesce(max(e), 0) FROM c)""",
        [cfg.name, cfg.name]).fetchone()
    open_prizes = {n: float(_prizes(cfg, n).sum()) for n in range(2, cfg.players + 1)}
    pay_err, complete = open_prize_sums(con, "model_payoffs", "payoff", cfg, by=("model",))
    # every model, state and position has its payoff and its n places: the sums above cover only the rows present
    models = len(equity_models.MODELS)
    expected = models * sum(states.n_states(cfg.units, n) for n in open_prizes)
    finishing_rows, = con.execute("SELECT count(*) FROM model_finishing WHERE game = ?", [cfg.name]).fetchone()
    expected_rows = models * sum(states.n_states(cfg.units, n) * n * n for n in open_prizes)
    # the example tables too: a model's payoffs of an example's k stacks sum to the first k prizes
    example_sums = con.execute("""SELECT model, example, sum(payoff) FROM (SELECT model, example, player,
                                      any_value(payoff) AS payoff FROM model_examples WHERE game = ? GROUP BY ALL)
                                  GROUP BY ALL""", [cfg.name]).fetchall()
    example_err = max((abs(total - sum(cfg.payouts[:len(cfg.examples[k])])) for _, k, total in example_sums),
                      default=0.0)
    examples_complete = len(example_sums) == models * len(cfg.examples)
    return [
        dg.AssetCheckResult(check_name="finishing_rows_and_columns_sum_to_1",
                            passed=bool(max(row_err, col_err) <= 1e-9 and finishing_rows == expected_rows),
                            metadata={"max_row_error": float(row_err), "max_column_error": float(col_err),
                                      "rows": int(finishing_rows), "expected_rows": expected_rows}),
        dg.AssetCheckResult(check_name="payoffs_sum_to_open_prizes",
                            passed=bool(max(pay_err, example_err) <= 1e-9 and complete == expected
                                        and examples_complete),
                            metadata={"max_error_usd": float(pay_err),
                                      "open_prizes": dg.MetadataValue.json({str(n): v for n, v in open_prizes.items()}),
                                      "model_states_complete": int(complete), "expected": expected,
                                      "examples_max_error_usd": float(example_err),
                                      "examples_complete": examples_complete}),
    ]
