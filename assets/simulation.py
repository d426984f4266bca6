"""Monte Carlo tournaments (SPEC §7.6): each model against the equilibrium, and direct matches.

One player plays a model's strategies for the whole tournament, the others the equilibrium, once
per starting position; the equilibrium against itself is simulated too, as a control whose mean
payoffs must agree with the policy-evaluated values (asset check). Direct matches put every other
model against Harville (ICM) over all 2^players − 2 seatings. A build that leaves the model sweeps
out (`--skip-models`, config ``sweeps_left_out``) plays the control and the models whose sweeps the
warehouse already holds: the `thesis` game's equilibrium gets its Monte Carlo check without the
140–175 h of sweeps. Tables `simulation` and
`direct_matches`; seeds and tournament counts are in every row. Each model's tournaments are kept
(:mod:`assets.resume`, in `.cache/simulations/`): a rerun after an interrupt, or a rebuild, plays
only the models not finished against the same strategies, counts and seeds, so the tables are
those of a run never interrupted.
"""

import time
from collections.abc import Callable
from functools import cached_property

import dagster as dg
import numpy as np
import pandas as pd
from pydantic import Field

from assets.ex_post import equilibrium_fingerprint, read_strategies
from assets.model_analysis import strategies_fingerprint
from assets.fgs import fgs_strategies
from assets.model_analysis import model_strategies as model_strategies_asset
from assets.paths import hero_unit, match_parameters, match_unit, packed_games_dir, simulation_parameters
from assets.resources import GameResource, WarehouseResource, blocking_checks
from assets.resume import UnitCheckpoint, game_cache_dir
from assets.solve import LAYER_ASSETS, equilibrium_tensors, require_strategies
from engine.config import MODEL_SEED_STEP, GameConfig, model_names, position_names
from engine.memory import release_free_memory
from engine.packed_game import load_or_pack_game
from engine.simulation import (ShowdownSampler, compact_profile, describe_hand_events, direct_match, pack_profile,
                               simulate, simulate_against)
from engine.states import enumerate_states
from warehouse import db
from warehouse.schema import TABLES

CHECKS = {
    "equilibrium_matches_its_values": "the all-equilibrium table's simulated mean payoff is within 4 standard errors "
                                      "of the policy-evaluated start value, every position",
    "every_tournament_finished": "every simulated tournament of the hero table ended (none stopped at the engine's "
                                 "hand cap): each row's finishing distribution sums to 1 within 1e-9",
    "direct_match_payoffs_sum_to_prize_pool": "in every seating of every direct match the two sides' ROIs, weighted "
                                              "by their seats, sum to 0 (within 1e-6 %): the payoffs sum to the "
                                              "prize pool",
}


class SimulationConfig(dg.Config):
    sweeps_left_out: bool = Field(default=False, description=(
        "The build leaves the model sweeps out (`--skip-models`): simulate the equilibrium (the control) and only "
        "the models whose sweeps the warehouse holds for every layer, instead of every configured model."))


def swept_models(con, game: str, layers: int) -> set[str]:
    """The models whose strategies the warehouse holds for every layer (a `model_sweeps` row for
    each of the 2..``layers``-player layers)."""
    return {m for (m,) in con.execute("SELECT model FROM model_sweeps WHERE game = ? GROUP BY model "
                                      "HAVING count(DISTINCT players) = ?", [game, layers - 1]).fetchall()}


def simulated_models(configured: list[str], swept: set[str], sweeps_left_out: bool) -> list[str]:
    """The models to simulate against the equilibrium: every configured one, or, when the sweeps are
    left out, those of them already swept (in the configured order)."""
    return [m for m in configured if not sweeps_left_out or m in swept]


def model_seed(cfg: GameConfig, model: str) -> int:
    """The seed the `simulations` asset plays ``model`` against the equilibrium with ("equilibrium":
    the control): the game's ``simulation_seed`` + MODEL_SEED_STEP (1000) × the model's place among
    the equilibrium and the configured models, so a model plays the same tournaments whichever
    others are simulated with it, and `jamfold simulate --model M` replays them by default. The
    config's rule on ``simulation_seed`` keeps every such seed within what ``--seed`` accepts."""
    return cfg.simulation_seed + MODEL_SEED_STEP * ["equilibrium", *model_names(cfg.fgs_depth)].index(model)


def _match_frame(matches: list[dict]) -> pd.DataFrame:
    """The `direct_matches` rows (a seating kept from a run before 2026-11-30 has no payoffs and
    finishing lists: NULL); none (Harville not swept) as an empty frame of the table's columns."""
    columns = [c for c in TABLES["direct_matches"].column_names if c != "game"]
    return pd.DataFrame([{**dict.fromkeys(columns), **m} for m in matches], columns=columns)


PROGRESS_EVERY_S = 60.0
"""Seconds between two progress lines within one hero seat's tournaments (the `thesis` game plays
100 million a seat, about 2.5 minutes on 2 cores)."""


def tournament_progress(log: Callable[[str], None], what: str, every_s: float = PROGRESS_EVERY_S,
                        clock: Callable[[], float] = time.perf_counter) -> Callable[[int, int], None]:
    """A ``progress(done, total)`` for :func:`engine.simulation.simulate` that logs ``what``'s
    tournaments done, of all, with the time so far and the time left at that rate, at most every
    ``every_s`` seconds and never for the last chunk (the seat's result line follows it). The clock
    starts at the call with ``done`` 0, which ``simulate`` makes before its first tournament."""
    t0 = [clock()]
    last = [t0[0]]

    def report(done: int, total: int) -> None:
        now = clock()
        if done == 0:
            t0[0] = last[0] = now
        elif done < total and now - last[0] >= every_s:
            last[0] = now
            left = (now - t0[0]) / done * (total - done)
            log(f"{what}: {done:,} of {total:,} tournaments ({100 * done / total:.0f} %), {now - t0[0]:.0f} s so far, "
                f"about {left:.0f} s left")

    return report


def _speed(played: list[float], kept: list[float]) -> dict:
    """The hero tables' median speed (tournaments a second) as asset metadata: of this run's play, or,
    when every model was kept from an earlier run, of that run's (named so)."""
    if played:
        return {"tournaments_per_s": round(float(np.median(played)))}
    return {"tournaments_per_s_earlier_run": round(float(np.median(kept)))} if kept else {}


class _Table:
    """What a simulation plays: the packed game, its showdown sampler and the compact profiles, each
    made once a unit needs it. A rebuild or a resume that keeps every unit reads none of them (the
    `thesis` game's 14 profiles take about 28 s each)."""

    def __init__(self, context: dg.AssetExecutionContext, cfg: GameConfig, warehouse: WarehouseResource):
        self.context, self.cfg, self.warehouse = context, cfg, warehouse
        self.sizes = {n: len(enumerate_states(cfg.units, n)) for n in range(2, cfg.players + 1)}
        self.names = position_names(cfg.players)
        self._profiles: dict[str, object] = {}

    @cached_property
    def game(self) -> tuple:
        """(the packed game, the showdown sampler)."""
        packed, how = load_or_pack_game(packed_games_dir(), self.cfg.units, self.cfg.players, self.cfg.payouts)
        self.context.log.info(f"the game's {packed.total_nodes} decision nodes of {sum(self.sizes.values())} states: "
                              f"{how}")
        return packed, ShowdownSampler.from_tensors(equilibrium_tensors(self.warehouse.path, self.cfg))

    def profile(self, model: str):
        """The compact form of the equilibrium's (``model`` "equilibrium") or a model's strategies (exact,
        ~10x smaller than float32: the thesis game's profiles stay in memory together), read once."""
        if model not in self._profiles:
            packed, _ = self.game
            which = [] if model == "equilibrium" else [model]
            with self.warehouse.connect() as con:
                strategies = {n: read_strategies(con, self.cfg.name, n, k, *which) for n, k in self.sizes.items()}
            self._profiles[model] = compact_profile(pack_profile(packed, strategies))
        return self._profiles[model]


def _play_hero_unit(table: _Table, model: str, seed: int, start_values: np.ndarray, compile_first: bool) -> dict:
    """``model``'s strategies for one player against the equilibrium for the others, every hero seat in
    turn (``cfg.simulation_tournaments`` each): the unit's `simulation` rows, its speeds (tournaments a
    second) and, for the equilibrium itself (the control), the largest |z| of a seat's mean payoff
    against the policy-evaluated ``start_values`` ($). ``compile_first``: the first seat this run
    plays compiles (or loads) the kernel before its clock starts."""
    cfg, log, names = table.cfg, table.context.log, table.names
    T = cfg.simulation_tournaments
    (packed, tensors), eq, prof = table.game, table.profile("equilibrium"), table.profile(model)
    unit = {"rows": [], "speeds": [], "control_z": 0.0}
    if compile_first:
        simulate(packed, [eq], [0] * cfg.players, cfg.start, 1, cfg.simulation_seed, tensors)

    def hero_done(h: int, res) -> None:
        log.info(f"{model} vs equilibrium, hero {names[h]}: {T:,} tournaments in {res.wall_s:.1f} s, "
                 f"ROI {res.roi[h]:+.3f}±{res.roi_se[h]:.3f} %; {res.mean_hands:.2f} hands a "
                 f"tournament, {res.mean_hands * T / max(res.wall_s, 1e-9) / 1e6:.1f} million hands a "
                 f"second, each with {describe_hand_events(res.hand_events)}")

    clocks = {h: tournament_progress(log.info, f"{model} vs equilibrium, hero {names[h]}") for h in range(cfg.players)}
    for h, res in enumerate(simulate_against(packed, prof, eq, cfg.start, T, seed, tensors, on_result=hero_done,
                                             progress=lambda h, done, total: clocks[h](done, total))):
        unit["rows"].append({"model": model, "hero_position": h, "hero_seat": names[h],
                             "mean_payoff": res.mean[h], "standard_error": res.se[h], "roi_pct": res.roi[h],
                             "roi_se_pct": res.roi_se[h], "finishing": list(res.finishing[h]),
                             "mean_hands": res.mean_hands, "tournaments": T, "seed": res.seed})
        unit["speeds"].append(T / max(res.wall_s, 1e-9))
        if model == "equilibrium":
            unit["control_z"] = max(unit["control_z"], float(np.max(
                np.abs(res.mean - start_values) / np.maximum(res.se, 1e-12))))
    return unit


def _play_match_unit(table: _Table, model: str, seed: int) -> dict:
    """``model`` against Harville over every seating (``cfg.match_tournaments`` each): the unit's
    `direct_matches` rows and the largest |seat-weighted ROI sum| (%) of a seating."""
    cfg, log, names = table.cfg, table.context.log, table.names
    packed, tensors = table.game
    unit = {"matches": [], "sum_err": 0.0}

    def seating_done(seating) -> None:  # seatings in mask order
        mask = sum(1 << i for i in seating.a_seats)
        log.info(f"{model} vs harville: seating {mask} of {2 ** cfg.players - 2} "
                 f"({model} at {', '.join(names[i] for i in seating.a_seats)}) in {seating.result.wall_s:.1f} s")

    for seating in direct_match(packed, table.profile(model), table.profile("harville"), cfg.start,
                                cfg.match_tournaments, seed, tensors, on_seating=seating_done):
        a, n = len(seating.a_seats), cfg.players
        unit["sum_err"] = max(unit["sum_err"], abs(a * seating.roi_a + (n - a) * seating.roi_b))
        (payoff_a, payoff_b), (finishing_a, finishing_b) = seating.payoffs, seating.finishing
        unit["matches"].append({"model_a": model, "model_b": "harville",
                                "a_positions": [names[i] for i in seating.a_seats], "a_players": a,
                                "roi_a_pct": seating.roi_a, "roi_a_se_pct": seating.roi_a_se,
                                "roi_b_pct": seating.roi_b, "roi_b_se_pct": seating.roi_b_se,
                                "tournaments": cfg.match_tournaments, "seed": seating.result.seed,
                                "payoff_a": payoff_a, "payoff_b": payoff_b,
                                "finishing_a": finishing_a.tolist(), "finishing_b": finishing_b.tolist()})
    return unit


def _checks(control_z: float, rows: list[dict], sum_err: float, matches: list[dict]) -> list[dg.AssetCheckResult]:
    """The asset's checks (:data:`CHECKS`) on what it played."""
    finish_err = float(max((abs(sum(r["finishing"]) - 1.0) for r in rows), default=1.0))
    return [
        dg.AssetCheckResult(check_name="equilibrium_matches_its_values", passed=bool(control_z <= 4.0),
                            metadata={"max_abs_z": control_z,
                                      "rule": "simulated mean payoff of the all-equilibrium table within 4 standard "
                                              "errors of the policy-evaluated start values, every position"}),
        dg.AssetCheckResult(check_name="every_tournament_finished", passed=bool(finish_err <= 1e-9),
                            metadata={"max_abs_finishing_sum_error": finish_err,
                                      "rule": "a tournament stopped at the hand cap gives its players no place, so "
                                              "the row's finishing distribution sums to less than 1"}),
        dg.AssetCheckResult(check_name="direct_match_payoffs_sum_to_prize_pool", passed=bool(sum_err <= 1e-6),
                            metadata={"max_abs_seat_weighted_roi_sum_pct": sum_err, "seatings_played": len(matches)},
                            description=None if matches else "nothing to check yet: no direct match played (a "
                                                             "match needs Harville's and another model's sweeps)"),
    ]


@dg.asset(group_name="analysis", kinds={"numba", "duckdb"}, deps=[*LAYER_ASSETS, model_strategies_asset, fgs_strategies],
          check_specs=blocking_checks("simulations", CHECKS),
          description="Monte Carlo tournaments from the start state (SPEC §7.6): one player on a model's strategies, "
                      "the others on the equilibrium, per starting position (table `simulation`, with the equilibrium "
                      "itself as the control), and every model against Harville over all seatings (`direct_matches`).")
def simulations(context: dg.AssetExecutionContext, config: SimulationConfig, game: GameResource,
                warehouse: WarehouseResource) -> dg.MaterializeResult:
    cfg = game.config()
    t0 = time.perf_counter()
    release_free_memory()  # what the steps before (a layer's ex post check) freed, before the strategies are read
    table = _Table(context, cfg, warehouse)
    configured = model_names(cfg.fgs_depth)
    with warehouse.connect() as con:
        models = simulated_models(configured, swept_models(con, cfg.name, cfg.players), config.sweeps_left_out)
        require_strategies(con, cfg, "simulations", profiles=[None, *models])
        start_values = np.array(con.execute(
            """SELECT list(v.value ORDER BY v.position) FROM equilibrium_values v JOIN states s USING (game, players, state_id)
               WHERE v.game = ? AND s.stacks = ?""", [cfg.name, list(cfg.start)]).fetchone()[0])
        equilibrium = equilibrium_fingerprint(con, cfg.name)
        swept = strategies_fingerprint(con, cfg)
    pending = [m for m in configured if m not in models]
    if pending:
        context.log.info("not simulated yet (their strategies need the model sweeps, left out): " + ", ".join(pending))

    T, M, seed = cfg.simulation_tournaments, cfg.match_tournaments, cfg.simulation_seed
    # each model's tournaments are a unit kept across an interrupt (same strategies, the equilibrium
    # the others play included, counts and seeds); the control's depend on the equilibrium alone, so
    # a `--skip-models` build (no sweep stored) keeps them, and the sweeps after it do not replay them;
    # a direct match's unit is stamped with its own tournament count
    played_on = {"equilibrium": equilibrium, **simulation_parameters(cfg)}
    folder = game_cache_dir("simulations", cfg)
    control, done = UnitCheckpoint(folder, played_on), UnitCheckpoint(folder, {"model_strategies": swept, **played_on})
    matched = UnitCheckpoint(folder, {"model_strategies": swept, "equilibrium": equilibrium, **match_parameters(cfg)})
    rows, speeds, kept_speeds = [], [], []
    control_z = 0.0
    for model in ["equilibrium", *configured]:
        if model != "equilibrium" and model not in models:
            continue
        units = control if model == "equilibrium" else done
        unit = units.load(hero_unit(model))
        kept = unit is not None
        if unit is None:
            unit = _play_hero_unit(table, model, model_seed(cfg, model), start_values, compile_first=not speeds)
            units.save(hero_unit(model), unit)
        rows += unit["rows"]
        (kept_speeds if kept else speeds).extend(unit["speeds"])
        control_z = max(control_z, unit["control_z"])
        context.log.info(f"{model} vs equilibrium: ROI by hero seat " +
                         ", ".join(f"{r['hero_seat']} {r['roi_pct']:+.3f}±{r['roi_se_pct']:.3f} %" for r in unit["rows"]) +
                         (" (played earlier with the same strategies and seeds)" if kept else ""))
    matches = []
    sum_err = 0.0
    # every other model against Harville, once Harville's strategies are there
    for k, model in enumerate(m for m in configured if m != "harville"):
        if model not in models or "harville" not in models:
            continue
        unit = matched.load(match_unit(model))
        if unit is None:
            unit = _play_match_unit(table, model, seed + 77_000 + MODEL_SEED_STEP * k)
            matched.save(match_unit(model), unit)
        matches += unit["matches"]
        sum_err = max(sum_err, unit["sum_err"])
    with warehouse.connect() as con:
        written = db.replace_tables(con, [db.Replacement("simulation", pd.DataFrame(rows), {"game": cfg.name}),
                                          db.Replacement("direct_matches", _match_frame(matches), {"game": cfg.name})])
        n_sim, n_match = written["simulation"], written["direct_matches"]
        # (with the standard errors, which say whether two models' ROIs differ at all)
        summary = con.execute("""
            SELECT s.model, round(s.mean_roi_pct, 4) AS mean_roi_pct, round(s.mean_roi_se_pct, 4) AS mean_roi_se_pct,
                   round(r.low, 4) AS min_seat_roi_pct, round(r.high, 4) AS max_seat_roi_pct
            FROM simulation_summary s
            JOIN (SELECT model, min(roi_pct) AS low, max(roi_pct) AS high FROM simulation WHERE game = $1
                  GROUP BY model) r USING (model)
            WHERE s.game = $1 ORDER BY s.mean_roi_pct""", [cfg.name]).df()
        match_summary = con.execute("""
            SELECT model_a, model_b, round(mean_roi_a_pct, 4) AS mean_roi_a_pct,
                   round(mean_roi_a_se_pct, 4) AS mean_roi_a_se_pct, seatings, tournaments
            FROM direct_match_summary WHERE game = ? ORDER BY mean_roi_a_pct DESC""", [cfg.name]).df()
    return dg.MaterializeResult(
        metadata={"game": cfg.name, "tournaments_per_hero_seat": T, "tournaments_per_match_seating": M, "seed": seed,
                  "rows_simulation": n_sim, "dagster/row_count": n_sim, "rows_direct_matches": n_match,
                  "models_not_simulated": pending,
                  **_speed(speeds, kept_speeds),
                  "wall_s": round(time.perf_counter() - t0, 2),
                  "summary": dg.MetadataValue.md(db.frame_markdown(summary)),
                  "direct_matches": dg.MetadataValue.md(db.frame_markdown(match_summary))},
        check_results=_checks(control_z, rows, sum_err, matches))
