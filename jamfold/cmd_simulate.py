"""`jamfold simulate`: Monte Carlo tournaments on a game's solved profiles, with their speed."""

from __future__ import annotations

import argparse
import json
import sys
import time

from jamfold.common import UsageError, config_from_args, game_flag, game_model, require_game, whole_stacks

MAX_CLI_TOURNAMENTS = 10**10
"""The most tournaments `jamfold simulate` plays per seat (the configs' `simulation_tournaments` bound)."""


def cmd_simulate(args: argparse.Namespace) -> None:
    """Monte Carlo tournaments on the warehouse's solved profiles, from the game's start state or
    ``--stacks``: everybody on the equilibrium (its simulated payoffs beside the solved values), or
    one player on a model's strategies at each starting position in turn. Prints what the
    simulation costs too (tournaments a second, hands a tournament, decisions and showdowns a hand):
    the simulation's speed goal (a million tournaments a second from the 45-unit 5-player start)
    measured on the real equilibrium rather than the bench's synthetic profile."""
    from engine.config import MAX_SIMULATION_SEED, position_names

    cfg = config_from_args(args)
    stacks = whole_stacks(args.stacks, cfg) if args.stacks else list(cfg.start)
    n = len(stacks)
    positions = list(position_names(n))
    if args.tournaments is not None and not 1 <= args.tournaments <= MAX_CLI_TOURNAMENTS:
        raise UsageError(f"--tournaments: must be a whole number from 1 to 10^10 (got {args.tournaments})")
    if args.seed is not None and not 0 <= args.seed <= MAX_SIMULATION_SEED:
        raise UsageError(f"--seed: must be from 0 to 10^12 (got {args.seed})")
    game_model(args.model, cfg)
    if args.tournaments is None:
        args.tournaments = cfg.simulation_tournaments
    if args.hero is not None:
        if args.model is None:
            raise UsageError("--hero: needs --model (the hero is the player on the model's strategies)")
        if args.hero not in positions:
            where = f"the state {' '.join(map(str, stacks))}" if args.stacks else f"the {n}-player start"
            raise UsageError(f"--hero: a position of {where}, one of {', '.join(positions)} (got {args.hero!r})")
    from tqdm import tqdm

    from assets.ex_post import read_strategies
    from assets.simulation import model_seed, swept_models
    from assets.solve import equilibrium_tensors
    from assets.paths import packed_games_dir
    from engine.packed_game import default_processes, load_or_pack_game
    from engine.simulation import ShowdownSampler, compact_profile, pack_profile, simulate, simulate_against
    from engine.states import enumerate_states
    from warehouse import db

    if args.seed is None:
        args.seed = model_seed(cfg, args.model or "equilibrium")
    path = db.warehouse_path(args.warehouse)
    with db.session(path, read_only=True) as con:
        require_game(con, args, cfg, path)
        solved = {k for (k,) in con.execute("SELECT DISTINCT players FROM equilibrium_values WHERE game = ?",
                                             [cfg.name]).fetchall()}
        missing = [k for k in range(2, cfg.players + 1) if k not in solved]
        if missing:
            raise UsageError(f"{game_flag(args).split()[0]}: the simulation needs every layer's equilibrium; game "
                             f"'{cfg.name}' has no {missing[0]}-player layer solved yet "
                             f"(materialize solve_{missing[0]}p)")
        if args.model is not None and args.model not in swept_models(con, cfg.name, cfg.players):
            raise UsageError(f"--model: the warehouse holds no {args.model} strategies of game '{cfg.name}' for every "
                             f"layer (its model sweep has not run: ./lab build {game_flag(args)} without "
                             f"--skip-models)")
        # the build's rows this run may play again: a model's, from the start (hero position → (count, seed))
        built = {} if args.model is None or stacks != list(cfg.start) else {
            h: (t, seed) for h, t, seed in con.execute(
                "SELECT hero_position, tournaments, seed FROM simulation WHERE game = ? AND model = ?",
                [cfg.name, args.model]).fetchall()}
        # (states counted only now: a game the warehouse lacks is refused first, not after 63 million states)
        sizes = {k: len(enumerate_states(cfg.units, k)) for k in range(2, cfg.players + 1)}
        values = [v for (v,) in con.execute(
            """SELECT v.value FROM equilibrium_values v JOIN states s USING (game, players, state_id)
               WHERE v.game = ? AND s.players = ? AND s.stacks = ? ORDER BY v.position""",
            [cfg.name, n, stacks]).fetchall()]
        if not args.json:
            print(f"packing the hand trees of game '{cfg.name}' (or reading them from an earlier run) …",
                  file=sys.stderr)
        game, how = load_or_pack_game(packed_games_dir(), cfg.units, cfg.players, cfg.payouts,
                                      processes=default_processes())
        if not args.json:
            print(f"the hand trees: {how}; reading the strategies …", file=sys.stderr)

        def profile_of(model: str | None):  # compact: exact, about a tenth of the float32 rows
            return compact_profile(pack_profile(game, {k: read_strategies(con, cfg.name, k, m, model)
                                                       for k, m in sizes.items()}))

        eq = profile_of(None)
        model = None if args.model is None else profile_of(args.model)
    sampler = ShowdownSampler.from_tensors(equilibrium_tensors(str(path), cfg))
    heroes = [positions.index(args.hero)] if args.hero is not None else list(range(n))
    seats = 1 if model is None else len(heroes)
    simulate(game, [eq], [0] * n, stacks, 1, args.seed, sampler)  # compile (or load) the kernel before the clock
    bar = tqdm(total=args.tournaments * seats, desc="tournaments", unit="t", unit_scale=True, file=sys.stderr,
               disable=args.json)
    t0 = time.perf_counter()
    if model is None:
        results = [simulate(game, [eq], [0] * n, stacks, args.tournaments, args.seed, sampler,
                            progress=lambda done, total: bar.update(done - bar.n))]
    else:
        results = simulate_against(game, model, eq, stacks, args.tournaments, args.seed, sampler, heroes=heroes,
                                   progress=lambda h, done, total: bar.update(
                                       heroes.index(h) * total + done - bar.n))
    bar.close()
    wall = time.perf_counter() - t0
    played = args.tournaments * len(results)
    hands = sum(r.mean_hands for r in results) / len(results)
    events = {k: sum(r.hand_events[k] for r in results) / len(results) for k in results[0].hand_events}
    speed = {"tournaments_per_s": played / wall, "mean_hands": hands, "hand_events": events, "wall_s": wall}
    replays = bool(built) and all(built.get(h) == (args.tournaments, r.seed) for h, r in zip(heroes, results))
    _print_simulation(args, cfg, stacks, positions, values, results, heroes, speed, replays)


def _print_simulation(args: argparse.Namespace, cfg, stacks: list[int], positions: list[str], values: list[float],
                      results: list, heroes: list[int], speed: dict, replays: bool) -> None:
    """`jamfold simulate`'s report: a table per position (the control) or per hero seat (a model).
    ``replays``: a model's run from the start with the tournament count and seeds of its rows in the
    warehouse's `simulation` table, which it played again (said so in the header; JSON key
    ``replays_build``)."""
    n = len(stacks)
    control = args.model is None
    rows = []
    for p, r in ([(p, results[0]) for p in range(n)] if control else zip(heroes, results)):
        row = {"position": positions[p], "stack": stacks[p], "solved_value": values[p],
               "mean_payoff": float(r.mean[p]), "standard_error": float(r.se[p])}
        if control:
            row["z"] = float((r.mean[p] - values[p]) / r.se[p]) if r.se[p] > 0 else 0.0
        row["roi_pct"] = float(r.roi[p])
        if not control:
            row["roi_se_pct"] = float(r.roi_se[p])
        row["finishing"] = r.finishing[p].tolist()
        if not control:
            row["seed"] = r.seed
        rows.append(row)
    unfinished = sum(r.unfinished for r in results)
    if args.json:
        print(json.dumps({"game": cfg.name, "stacks": stacks, "positions": positions, "model": args.model,
                          "tournaments": args.tournaments, "seed": args.seed, "replays_build": replays, "rows": rows,
                          "unfinished": unfinished, **speed}))
        return
    who = "everybody on the equilibrium" if control else \
        f"one player on {args.model}'s strategies (the hero), the others on the equilibrium"
    print(f"game '{cfg.name}': {args.tournaments:,} tournaments{'' if control else ' per hero seat'} from "
          f"{stacks} (units), seed {args.seed}; {who}"
          + ("\n(the build's tournaments and seed for this model: the rows of its `simulation` table, played again)"
             if replays else ""))
    # (header, row key, width, format) of each column before the finishing probabilities
    columns = ([("pos", "position", 4, ""), ("stack", "stack", 6, ""), ("solved $", "solved_value", 10, ".4f"),
                ("simulated $", "mean_payoff", 12, ".4f"), ("± SE", "standard_error", 8, ".4f"),
                ("z", "z", 6, ".2f"), ("ROI %", "roi_pct", 8, ".3f")] if control else
               [("hero", "position", 4, ""), ("stack", "stack", 6, ""), ("eq. value $", "solved_value", 11, ".4f"),
                ("hero $", "mean_payoff", 9, ".4f"), ("± SE", "standard_error", 8, ".4f"),
                ("ROI %", "roi_pct", 8, ".3f"), ("± SE", "roi_se_pct", 7, ".3f")])
    print(" ".join(f"{head:>{width}}" for head, _, width, _ in columns) + " "
          + " ".join(f"{'P' + str(q + 1):>6}" for q in range(n)))
    for r in rows:
        print(" ".join(f"{r[key]:>{width}{fmt}}" for _, key, width, fmt in columns) + " "
              + " ".join(f"{x:6.3f}" for x in r["finishing"]))
    import numba

    from engine.simulation import describe_hand_events

    print(f"speed: {speed['tournaments_per_s']:,.0f} tournaments a second on {numba.get_num_threads()} threads "
          f"({speed['wall_s']:.1f} s); {speed['mean_hands']:.2f} hands a tournament, each with "
          f"{describe_hand_events(speed['hand_events'])}"
          + (f"; {unfinished:,} tournaments stopped at the hand cap" if unfinished else ""))
