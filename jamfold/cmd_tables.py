"""`jamfold equity`, `showdown` and `rollout`: the equity models, one showdown and the showdown
tables, from the command line (no game needed)."""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence

from engine.config import EXAMPLE_STACK_RANGE, PRIZE_POOL_RANGE
from jamfold.common import UsageError, usable_folder


# ---------------------------------------------------------------- equity
def _positive_numbers(name: str, values: Sequence[str], allow_zero: bool = False) -> list[float]:
    out = []
    for v in values:
        if not v.isascii() or "_" in v:  # (Python's float() also reads '٣' and '1_000')
            raise UsageError(f"{name}: {v!r} is not a number")
        try:
            x = float(v) + 0.0  # (+ 0.0: no '-0' in the output)
        except ValueError:
            raise UsageError(f"{name}: {v!r} is not a number") from None
        if not math.isfinite(x) or x < 0 or (x == 0 and not allow_zero):
            raise UsageError(f"{name}: every value must be a finite number {'≥' if allow_zero else '>'} 0 (got {v})")
        out.append(x)
    return out


def cmd_equity(args: argparse.Namespace) -> None:
    from engine import equity_models

    limit = 9 if args.model == "roberts" else 20
    stacks = _positive_numbers("--stacks", args.stacks)
    lo, hi = EXAMPLE_STACK_RANGE
    if not all(lo <= x <= hi for x in stacks):
        raise UsageError(f"--stacks: every stack must be from {lo:g} to {hi:g} chips (the models only see their "
                         f"ratios; got {' '.join(args.stacks)})")
    if not 2 <= len(stacks) <= limit:
        raise UsageError(f"--stacks: the {args.model} model takes 2 to {limit} stacks (got {len(stacks)})")
    payouts = _positive_numbers("--payouts", args.payouts, allow_zero=True)
    if any(payouts[i] < payouts[i + 1] for i in range(len(payouts) - 1)):
        raise UsageError(f"--payouts: must be non-increasing (got {' '.join(args.payouts)})")
    if len(payouts) > len(stacks):
        raise UsageError(f"--payouts: pays {len(payouts)} places but there are only {len(stacks)} players")
    if sum(payouts) <= 0:
        raise UsageError(f"--payouts: must pay a positive prize pool (got {' '.join(args.payouts)})")
    lo, hi = PRIZE_POOL_RANGE  # (as a game config's: 1e308 printed a 300-digit payoff, 1e-320 a denormal one)
    if not lo <= sum(payouts) <= hi:
        raise UsageError(f"--payouts: must sum to a prize pool from {lo:g} to {hi:g} $ (got {' '.join(args.payouts)})")
    P = equity_models.finishing_matrix(args.model, stacks)
    v = equity_models.payoffs(P, payouts)
    if args.json:
        print(json.dumps({"model": args.model, "stacks": stacks, "payouts": payouts,
                          "finishing": P.tolist(), "payoffs": v.tolist()}))
        return
    n = len(stacks)
    print(f"{args.model} finishing matrix (rows = players, columns = places), payouts {', '.join(f'{p:g}' for p in payouts)}")
    print(f"{'player':>6} {'stack':>8} " + " ".join(f"{'P' + str(k + 1):>7}" for k in range(n)) + f" {'payoff $':>9}")
    for i in range(n):
        print(f"{i + 1:>6} {stacks[i]:>8g} " + " ".join(f"{P[i, k]:7.4f}" for k in range(n)) + f" {v[i]:9.4f}")


# ---------------------------------------------------------------- showdown
def cmd_showdown(args: argparse.Namespace) -> None:
    from engine import rollout
    from engine.cards import can_be_dealt_together, class_label, parse_class

    if not 2 <= len(args.hands) <= 3:
        raise UsageError(f"hands: give 2 or 3 hand classes (got {len(args.hands)})")
    try:
        ids = [parse_class(h) for h in args.hands]
    except ValueError as exc:
        raise UsageError(f"hands: {exc}") from None
    labels = [class_label(i) for i in ids]
    if not can_be_dealt_together(ids):  # refused before the rollout (a triple's takes seconds)
        raise UsageError(f"hands: {' '.join(labels)} cannot be dealt together (not enough cards of a rank)")
    t0 = time.perf_counter()
    if len(ids) == 2:
        weight, p = rollout.pair_matchup(*ids)
        if args.json:
            print(json.dumps({"hands": labels, "weight": int(weight), "p_first_wins": float(p)}))
            return
        print(f"{labels[0]} vs {labels[1]}: exact over every deal and all C(48,5) boards, ties split evenly")
        print(f"  deal weight          {weight:,} card-disjoint combo deals of {{{labels[0]}, {labels[1]}}} (either order)")
        print(f"  P({labels[0]} wins) {'':<{max(0, 8 - len(labels[0]))}}{p:.6f}")
        print(f"  P({labels[1]} wins) {'':<{max(0, 8 - len(labels[1]))}}{1 - p:.6f}")
    else:
        weight, p = rollout.triple_matchup(*ids)
        if args.json:
            print(json.dumps({"hands": labels, "weight": int(weight), "orders": list(rollout.ORDERS),
                              "p": [float(x) for x in p]}))
            return
        letters = dict(zip("abc", labels))
        print(f"{' vs '.join(labels)}: exact over every deal and all C(46,5) boards, ties broken at random")
        print(f"  deal weight {weight:,} card-disjoint combo deals of this multiset (any order)")
        for order, prob in zip(rollout.ORDERS, p):
            print(f"  {order}  {' > '.join(letters[c] for c in order):<18} {prob:.6f}")
        best = [p[0] + p[1], p[2] + p[3], p[4] + p[5]]
        print("  P(best): " + ", ".join(f"{lab} {b:.6f}" for lab, b in zip(labels, best)))
    if not args.json:
        print(f"  ({time.perf_counter() - t0:.2f} s)")


# ---------------------------------------------------------------- rollout
def cmd_rollout(args: argparse.Namespace) -> None:
    if args.exact == (args.samples is not None):  # checked before the imports below (seconds)
        raise UsageError("rollout: give exactly one of --exact or --samples N")
    from engine.config import MAX_ROLLOUT_SAMPLES, rollout_key

    if args.samples is not None and not 1 <= args.samples <= MAX_ROLLOUT_SAMPLES:
        raise UsageError(f"--samples: must be a whole number from 1 to {MAX_ROLLOUT_SAMPLES:,} (boards per matchup; "
                         f"for more, use --exact) (got {args.samples})")
    if not 0 <= args.seed < 2**63:
        raise UsageError(f"--seed: must be from 0 to 2^63 − 1 (got {args.seed})")
    from tqdm import tqdm

    from assets.paths import cache_dir, cache_root
    from assets.rollout import write_pair_table, write_triple_table
    from engine import rollout
    from warehouse import db

    mode = "exact" if args.exact else "sampled"
    rollout_id = rollout_key(None if args.exact else args.samples, args.seed)
    kinds = ["pairs", "triples"] if args.kind == "all" else [args.kind]
    db.connect(args.warehouse).close()  # fail now, not after an hour, if the warehouse is locked
    if "triples" in kinds:
        usable_folder("JAMFOLD_CACHE (checkpoints of the triple table)", cache_root() / "rollout")
    for kind in kinds:
        bar = tqdm(total=1, desc=f"{kind} table ({rollout_id})", unit="matchup", unit_scale=True, file=sys.stderr)

        def progress(done: int, total: int, bar=bar) -> None:
            bar.total = total
            bar.n = done
            bar.refresh()

        if kind == "pairs":
            table = rollout.build_pair_table(mode, samples=args.samples, seed=args.seed, progress=progress)
        else:
            table = rollout.build_triple_table(mode, samples=args.samples, seed=args.seed, progress=progress,
                                               checkpoint_dir=str(cache_dir("rollout", rollout_id)))
        bar.close()
        with db.session(args.warehouse) as con:
            (write_pair_table if kind == "pairs" else write_triple_table)(con, rollout_id, table)
        print(f"{kind}: {len(table.a):,} rows, mode {table.mode}, precision {table.precision:.2e}, "
              f"{table.wall_s:.1f} s → {db.warehouse_path(args.warehouse)} (rollout '{rollout_id}')")
