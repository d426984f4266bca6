"""The hand pass (engine/hand_pass.py) and the CFR+ solver (engine/cfr.py) against an independent
path-enumeration reference.

The reference (:mod:`brute_hand`) lists every decision path of :func:`engine.hand.hand_tree` and
evaluates each one with numpy broadcasting over the jammers' classes; the kernel recurses over
nodes with reach/value tensors. They must agree on root values, terminal order probabilities and
counterfactual values of every node and class, on real states with blind all-ins, sparse and
dense profiles. Exploitability is checked against a best response found and evaluated by the
reference, and CFR+ must solve a heads-up hand.

Tables: sampled rollout tables with 2 boards per matchup. The check is about the kernel's algebra,
so any consistent tables do; the deal weights (joint class probabilities) are exact anyway.
"""

from __future__ import annotations

import dataclasses
from itertools import permutations

import numpy as np
import pytest

from brute_hand import CardModel, PathEvaluator, utilities_from_outcomes
from engine.cfr import HandSolver
from engine.equity_models import finishing_matrices, payoffs
from engine.game_tree import compile_hand, utilities
from engine.hand import hand_tree
from engine.hand_pass import SolverTensors, Workspace
from engine.rollout import ORDERS, build_pair_table, build_triple_table
from engine.showdown import showdown_tensors
from engine.states import enumerate_states, state_index

NC = 169
PAY = (50.0, 30.0, 20.0)
RTOL = 1e-10


@pytest.fixture(scope="module")
def tables():
    return build_pair_table("sampled", samples=2, seed=5), build_triple_table("sampled", samples=2, seed=5)


@pytest.fixture(scope="module")
def tensors(tables):
    sd = showdown_tensors(*tables)
    return SolverTensors(sd), CardModel(sd), sd


def make_case(stacks, tensors, payouts=PAY):
    solver_tensors, model, _ = tensors
    tree = hand_tree(stacks, payouts)
    hand = compile_hand(stacks, payouts, state_index, tree)
    return tree, hand, HandSolver(hand, solver_tensors), PathEvaluator(tree, model)


# --------------------------------------------------------------------------------------------
# profiles and utilities
# --------------------------------------------------------------------------------------------


def sparse_profile(rng, K, zero_rows=True):
    """Range-like rows: pure jams on a random top set, a few mixed classes, exact zeros elsewhere;
    some rows never jam (zero reach below them) and some always jam."""
    sigma = np.zeros((K, NC))
    for h in range(K):
        u = rng.random()
        if zero_rows and u < 0.12:
            continue
        if u > 0.92:
            sigma[h] = 1.0
            continue
        rank = rng.permutation(NC)
        top = int(rng.integers(1, 70))
        sigma[h, rank[:top]] = 1.0
        mixed = rank[top:top + int(rng.integers(0, 8))]
        sigma[h, mixed] = rng.uniform(0.05, 0.95, len(mixed))
    return sigma


def dense_profile(rng, K):
    return rng.uniform(0.02, 0.98, (K, NC))


def random_utilities(rng, tree, paths):
    """U[t, o, p] > 0 on the orders that exist, NaN elsewhere (the kernel must not read those)."""
    U = np.full((len(tree.terminals), 6, tree.n_players), np.nan)
    for path in paths:
        U[path.terminal, : len(path.orders)] = rng.uniform(1.0, 100.0, (len(path.orders), tree.n_players))
    return U


def harville_values(units, max_players, payouts):
    """values[m] (states, m) = Harville expected prizes of every m-player state of ``units``."""
    out = {}
    for m in range(2, max_players + 1):
        X = enumerate_states(units, m).astype(np.float64)
        out[m] = payoffs(finishing_matrices("harville", X), payouts[:m])
    return out


# --------------------------------------------------------------------------------------------
# comparison
# --------------------------------------------------------------------------------------------


def assert_pass_matches(solver, ev, sigma, U, label=""):
    """Kernel pass == path enumeration: order probabilities, root values, counterfactual values."""
    solver.evaluate(sigma, U)
    ref = ev.evaluate(sigma, U)
    scale = float(np.nanmax(np.abs(U)))
    np.testing.assert_allclose(solver.order_probs, ref["order_probs"], rtol=RTOL, atol=1e-13,
                               err_msg=f"order_probs {label}")
    np.testing.assert_allclose(solver.root_values, ref["root_values"], rtol=RTOL, atol=1e-13 * scale,
                               err_msg=f"root values {label}")
    for name in ("cf_fold", "cf_jam"):
        np.testing.assert_allclose(getattr(solver, name), ref[name], rtol=RTOL, atol=1e-14 * scale,
                                   err_msg=f"{name} {label}")
    return ref["root_values"]


# (stacks, profiles evaluated one after the other on the same solver: buffers are reused)
PASS_CASES = [
    ((20, 25), "sdSz"),
    ((1, 44), "s"),  # SB blind all-in: no decision, BB calls automatically
    ((1, 1), "s"),  # both blinds all-in
    ((44, 1), "sdz"),  # BB blind all-in (1 chip)
    ((43, 2), "sdz"),  # BB blind all-in (2 chips)
    ((10, 15, 20), "sdSz"),
    ((20, 1, 24), "sdz"),  # SB blind all-in
    ((20, 23, 2), "sdz"),  # BB blind all-in
    ((30, 1, 2), "sdz"),  # both blinds all-in
    ((10, 12, 11, 12), "sdS"),
    ((10, 15, 1, 19), "sdz"),  # SB blind all-in
    ((9, 9, 9, 9, 9), "d"),  # a sparse 5-player profile runs in the shared-workspace test
    ((10, 10, 10, 14, 1), "sd"),  # BB blind all-in
]


def make_profile(kind, rng, K):
    """s: sparse with never-jamming rows, S: sparse, d: dense, z: pure random 0/1."""
    if kind == "s":
        return sparse_profile(rng, K)
    if kind == "S":
        return sparse_profile(rng, K, zero_rows=False)
    if kind == "d":
        return dense_profile(rng, K)
    return np.where(rng.random((K, NC)) < 0.5, 0.0, 1.0)


@pytest.mark.parametrize("stacks,kinds", PASS_CASES, ids=[str(c[0]) for c in PASS_CASES])
def test_pass_matches_path_enumeration(tensors, stacks, kinds):
    tree, hand, solver, ev = make_case(stacks, tensors)
    rng = np.random.default_rng(sum(stacks) * 1000 + len(stacks))
    U = random_utilities(rng, tree, ev.paths)
    for i, kind in enumerate(kinds):
        if i == len(kinds) - 1 and i > 0:
            U = random_utilities(rng, tree, ev.paths)  # new utilities too, same solver
        sigma = make_profile(kind, rng, ev.K)
        assert_pass_matches(solver, ev, sigma, U, f"{stacks} profile {i} ({kind})")
        # order probabilities form a distribution over the terminals' outcomes
        assert solver.order_probs.sum() == pytest.approx(1.0, abs=1e-12)


def threshold_profile(rng, K, order):
    """Rows that jam a top set of ``order`` (the solver's class order) but for a few classes
    flipped either way and a few mixed: what real ranges look like, and what the jam chances
    read from running sums (engine.depth2.prefix_by_class)."""
    sigma = np.zeros((K, NC))
    for h in range(K):
        top = int(rng.integers(1, 120))
        sigma[h, order[:top]] = 1.0
        flipped = rng.choice(NC, int(rng.integers(0, 5)), replace=False)
        sigma[h, flipped] = 1.0 - sigma[h, flipped]
        mixed = rng.choice(NC, int(rng.integers(0, 4)), replace=False)
        sigma[h, mixed] = rng.uniform(0.05, 0.95, len(mixed))
    return sigma


def test_threshold_split_rebuilds_the_strategy_with_the_fewest_deviations(tensors):
    from engine.depth2 import threshold_split

    order = tensors[0].class_order
    rng = np.random.default_rng(3)
    classes, weights = np.empty(NC, np.uint64), np.empty(NC)  # the pass's types (one compiled signature)
    for row in list(threshold_profile(rng, 40, order)) + [np.zeros(NC), np.ones(NC), rng.random(NC)]:
        k, nd = threshold_split(row, order, classes, weights)
        rebuilt = np.zeros(NC)
        rebuilt[order[:k]] = 1.0
        np.add.at(rebuilt, classes[:nd], weights[:nd])
        np.testing.assert_allclose(rebuilt, row, rtol=0, atol=1e-15)  # 1 + (σ − 1) rounds
        x = row[order]
        fewest = min(int((x[:j] != 1.0).sum() + (x[j:] != 0.0).sum()) for j in range(NC + 1))
        assert nd == fewest


@pytest.mark.parametrize("stacks", [(10, 15, 20), (20, 23, 2), (10, 12, 11, 12)])
def test_jam_chances_of_threshold_ranges_match_path_enumeration(tensors, stacks):
    """Ranges close to a top set of the class order have their depth-2 jam chances summed from the
    running sums plus their deviations (engine.depth2._three_way_chances), and so have the depth-2
    counterfactual sums over a second jammer's range where the reach factors
    (engine.depth2._factored_depth2_counterfactuals); a fresh solver's pass (every such sum from
    scratch that way) must match the path-enumeration reference, and so must the next passes, which
    move a few classes and read the showdown rows the first one did not fill."""
    from engine.depth2 import threshold_split

    tree, hand, _, ev = make_case(stacks, tensors)
    order = tensors[0].class_order
    rng = np.random.default_rng(sum(stacks))
    U = random_utilities(rng, tree, ev.paths)
    classes, weights = np.empty(NC, np.uint64), np.empty(NC)  # the pass's types (one compiled signature)
    for i in range(3):
        sigma = threshold_profile(rng, ev.K, order)
        for h in np.flatnonzero(hand.node_depth == 2):  # the running sums are what the pass reads
            for row in (sigma[h], sigma[hand.node_creator[h]]):  # jam chances; the second jammer's range
                k, nd = threshold_split(row, order, classes, weights)
                assert k > 0 and nd + 1 < (row > 0).sum()
        solver = HandSolver(hand, tensors[0])
        assert_pass_matches(solver, ev, sigma, U, f"{stacks} threshold profile {i}")
        for step in range(2):  # CFR+-like moves of a few classes in every row, same utilities
            for h in range(ev.K):
                cls = rng.choice(NC, 3, replace=False)
                sigma[h, cls] = rng.random(3) * (rng.random(3) < 0.6)
            assert_pass_matches(solver, ev, sigma, U, f"{stacks} threshold profile {i} step {step}")


def test_shared_workspace_across_hands(tensors):
    """A layer solve evaluates many hands in one per-thread Workspace: leftovers of a bigger or
    denser hand must not leak into the next one (the kernel skips unreachable depth-2 entries)."""
    from engine.hand_pass import Workspace

    ws = Workspace(5)
    rng = np.random.default_rng(99)
    for stacks, kind in [((10, 12, 11, 12), "d"), ((9, 9, 9, 9, 9), "s"), ((10, 15, 20), "s"),
                         ((10, 10, 10, 14, 1), "z"), ((20, 25), "d"), ((1, 44), "s"), ((30, 1, 2), "s"),
                         ((10, 12, 11, 12), "s")]:
        tree, hand, solver, ev = make_case(stacks, tensors)
        U = random_utilities(rng, tree, ev.paths)
        sigma = make_profile(kind, rng, ev.K)
        values, cf_fold, cf_jam, order_probs = solver.evaluate(sigma, U, ws)
        ref = ev.evaluate(sigma, U)
        scale = float(np.nanmax(np.abs(U)))
        np.testing.assert_allclose(order_probs, ref["order_probs"], rtol=RTOL, atol=1e-13, err_msg=str(stacks))
        np.testing.assert_allclose(values, ref["root_values"], rtol=RTOL, atol=1e-13 * scale, err_msg=str(stacks))
        np.testing.assert_allclose(cf_fold, ref["cf_fold"], rtol=RTOL, atol=1e-14 * scale, err_msg=str(stacks))
        np.testing.assert_allclose(cf_jam, ref["cf_jam"], rtol=RTOL, atol=1e-14 * scale, err_msg=str(stacks))


def test_tensors_are_consistent_deal_probabilities(tensors):
    """The reference relies on the joint class probabilities being exact and consistent."""
    _, model, sd = tensors
    assert sd.p1.sum() == pytest.approx(1.0, abs=1e-14)
    np.testing.assert_allclose(sd.joint2.sum(axis=1), sd.p1, rtol=1e-13)
    np.testing.assert_allclose(sd.joint3.sum(axis=2), sd.joint2, rtol=1e-12)
    np.testing.assert_allclose(sd.joint2, sd.joint2.T, rtol=0, atol=0)
    np.testing.assert_allclose(sd.win2 + sd.win2.T, 1.0, atol=1e-15)
    assert list(ORDERS) == ["".join(p) for p in permutations("abc")]  # the U / order3 layout
    dealt = sd.joint3 > 0
    np.testing.assert_allclose(sd.order3.sum(axis=0)[dealt], 1.0, atol=1e-12)



def test_tensors_say_what_the_tables_say(tables, tensors):
    """The tensors every solver, the reference and the simulator read are the rollout tables laid
    out in deal order: win2 and order3 against the tables' own lookups (whose permutation rule and
    probabilities test_rollout checks against brute force and an independent evaluator), in both
    orders of every pair and in every order of sampled triples; the joint deal probabilities
    against counts of card-disjoint combos. (Symmetries alone would pass a transposed win2 or a
    permuted order3. These tables, 2 boards a matchup, are too coarse for poker sense: AA against 72o
    may well read 0.5 here.)"""
    from engine.cards import class_combos, parse_class
    from engine.rollout import pair_lookup, triple_lookup
    from engine.showdown import PAIR_DEALS, TRIPLE_DEALS

    pairs, triples = tables
    _, _, sd = tensors
    expected = np.array([[pair_lookup(pairs, a, b)[1] if a != b else 0.5 for b in range(NC)] for a in range(NC)])
    np.testing.assert_array_equal(sd.win2, expected)
    aa, kk = parse_class("AA"), parse_class("72o")
    rng = np.random.default_rng(3)
    for x, y, z in [*rng.integers(0, NC, size=(300, 3)), (aa, aa, kk), (kk, aa, kk)]:
        weight, p = triple_lookup(triples, x, y, z)
        if weight == 0:
            assert sd.joint3[x, y, z] == 0
            continue
        np.testing.assert_array_equal(sd.order3[:, x, y, z], p)

    def disjoint(*combos) -> bool:
        cards = [int(c) for combo in combos for c in combo]
        return len(set(cards)) == len(cards)

    for x, y, z in [(aa, aa, kk), (aa, kk, parse_class("AKs")), (parse_class("T9s"), parse_class("T9o"), aa),
                    *rng.integers(0, NC, size=(20, 3))]:
        X, Y, Z = class_combos(x), class_combos(y), class_combos(z)
        assert sd.joint2[x, y] * PAIR_DEALS == pytest.approx(sum(disjoint(a, b) for a in X for b in Y), abs=1e-6)
        assert sd.joint3[x, y, z] * TRIPLE_DEALS == pytest.approx(
            sum(disjoint(a, b, c) for a in X for b in Y for c in Z), abs=1e-6)

def test_reference_counterfactuals_are_slopes_of_its_values(tensors):
    """Self-check of the reference: a player's value is affine in each σ_h(c) with slope
    cf_jam − cf_fold, and sums to Σ_h Σ_c [σ cf_jam + (1 − σ) cf_fold] + (paths he never acts on)."""
    tree, hand, solver, ev = make_case((10, 12, 11, 12), tensors)
    rng = np.random.default_rng(7)
    U = random_utilities(rng, tree, ev.paths)
    sigma = dense_profile(rng, ev.K)
    cf_fold, cf_jam = ev.counterfactuals(sigma, U)
    for _ in range(6):
        h = int(rng.integers(ev.K))
        c = int(rng.integers(NC))
        k = tree.nodes[h].actor
        s1, s0 = sigma.copy(), sigma.copy()
        s1[h, c], s0[h, c] = 1.0, 0.0
        slope = ev.player_value(s1, U, k) - ev.player_value(s0, U, k)
        assert slope == pytest.approx(cf_jam[h, c] - cf_fold[h, c], rel=1e-9, abs=1e-12)
    # with every node of player k set to fold, his value is the constant part plus Σ cf_fold
    k = 1
    mine = [h for h, nd in enumerate(tree.nodes) if nd.actor == k]
    s_fold = sigma.copy()
    s_fold[mine] = 0.0
    lhs = ev.player_value(sigma, U, k) - ev.player_value(s_fold, U, k)
    rhs = sum((sigma[h] * (cf_jam[h] - cf_fold[h])).sum() for h in mine)
    assert lhs == pytest.approx(rhs, rel=1e-10)


BR_CASES = [(20, 25), (43, 2), (10, 15, 20), (20, 1, 24), (30, 1, 2), (10, 12, 11, 12), (10, 10, 10, 14, 1)]


@pytest.mark.parametrize("stacks", BR_CASES, ids=[str(s) for s in BR_CASES])
def test_exploitability_matches_brute_force_best_response(tensors, stacks):
    tree, hand, solver, ev = make_case(stacks, tensors)
    rng = np.random.default_rng(len(stacks) * 100 + stacks[-1])
    U = random_utilities(rng, tree, ev.paths)
    sigma = sparse_profile(rng, ev.K) if len(stacks) > 3 else dense_profile(rng, ev.K)
    gains = ev.best_response_gains(sigma, U)
    worst, kernel_gains = solver.exploitability(U, sigma)
    np.testing.assert_allclose(kernel_gains, gains, rtol=1e-9, atol=1e-12)
    assert worst == pytest.approx(gains.max(), rel=1e-9, abs=1e-12)
    assert gains.max() > 0.01  # a random profile is exploitable
    # a best response cannot be improved by changing any single information set
    k = int(np.argmax(gains))
    br = ev.best_response(sigma, U, k)
    v_br = ev.player_value(br, U, k)
    for h in [h for h, nd in enumerate(tree.nodes) if nd.actor == k][:3]:
        for c in rng.choice(NC, 3, replace=False):
            flip = br.copy()
            flip[h, c] = 1.0 - flip[h, c]
            assert ev.player_value(flip, U, k) <= v_br + 1e-12


def test_utilities_match_tree_outcomes(tensors):
    """U from compile_hand/utilities equals prize + next-state value read off the outcomes."""
    payouts = PAY
    for stacks in [(4, 3, 2, 5, 3), (3, 1, 5, 2), (2, 4, 1), (5, 2), (1, 6)]:
        units = sum(stacks)
        values = harville_values(units, len(stacks), payouts)
        tree, hand, solver, ev = make_case(stacks, tensors, payouts)
        mine = utilities_from_outcomes(tree, ev.paths, values, state_index)
        U = utilities(hand, values)
        ok = ~np.isnan(mine)
        np.testing.assert_allclose(U[ok], mine[ok], rtol=1e-14, atol=1e-12)
        # prizes still open are handed out exactly: every outcome's U sums to them
        open_prizes = sum(payouts[: len(stacks)])
        np.testing.assert_allclose(np.nansum(mine, axis=2)[ok[..., 0]], open_prizes, rtol=1e-12)
        # and the kernel agrees with the reference on these real utilities too
        rng = np.random.default_rng(units)
        sigma = sparse_profile(rng, ev.K)
        values_root = assert_pass_matches(solver, ev, sigma, U, f"{stacks} harville")
        assert values_root.sum() == pytest.approx(open_prizes, rel=1e-12)


def test_cfr_plus_solves_heads_up_hand(tensors):
    """CFR+ drives a heads-up hand (10, 10) to exploitability ≤ 1e-4 $, and the exploitability it
    reports equals the brute-force best-response gain of its average strategy."""
    payouts = (50.0, 30.0)
    stacks = (10, 10)
    tree, hand, solver, ev = make_case(stacks, tensors, payouts)
    U = utilities(hand, harville_values(sum(stacks), 2, payouts))
    solver.iterate(U, 400)
    worst, gains = solver.exploitability(U)
    sigma = solver.average_strategy()
    assert worst <= 1e-4
    ref = ev.best_response_gains(sigma, U)
    np.testing.assert_allclose(gains, ref, rtol=1e-8, atol=1e-12)
    # a zero-sum-like check: the two players share the 80 $ still open
    assert solver.root_values.sum() == pytest.approx(80.0, rel=1e-12)


def test_incremental_three_way_chances_match_a_fresh_pass(tensors):
    """Consecutive passes of one hand update the depth-2 jam chances by the classes that changed;
    every pass must equal a from-scratch pass (fresh workspace) and the brute-force reference."""
    from engine.hand_pass import Workspace

    stacks = (10, 15, 20)
    tree, hand, solver, ev = make_case(stacks, tensors)
    assert (hand.node_depth == 2).any()
    rng = np.random.default_rng(7)
    U = random_utilities(rng, tree, ev.paths)
    ws = Workspace.for_hand(hand)
    sigma = dense_profile(rng, ev.K)
    for step in range(5):
        if step:  # change a few classes of every node, as CFR+ iterates do
            for h in range(ev.K):
                cls = rng.choice(NC, 5, replace=False)
                sigma[h, cls] = rng.random(5) * (rng.random(5) < 0.7)
        _, gains = solver.exploitability(U, sigma, ws=ws)
        _, fresh = HandSolver(hand, solver.tensors).exploitability(U, sigma, ws=Workspace.for_hand(hand))
        np.testing.assert_allclose(gains, fresh, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(gains, ev.best_response_gains(sigma, U), rtol=1e-9, atol=1e-12)


def test_a_moved_threshold_is_summed_from_the_running_sums(tensors):
    """When a depth-2 range moves by more classes than it deviates from a top set of the class
    order, its jam chances are summed anew from the running sums instead of updated class by class
    (engine.depth2._three_way_chances): each pass must still equal a fresh pass and brute force."""
    from engine.depth2 import threshold_split
    from engine.hand_pass import Workspace

    stacks = (10, 15, 20)
    tree, hand, solver, ev = make_case(stacks, tensors)
    depth2 = np.flatnonzero(hand.node_depth == 2)
    assert len(depth2)
    order = solver.tensors.class_order
    rng = np.random.default_rng(11)
    U = random_utilities(rng, tree, ev.paths)
    ws = Workspace.for_hand(hand)
    sigma = dense_profile(rng, ev.K)
    before = None
    for k in (30, 36, 45, 41):  # the top k classes jam, one more mixes
        for h in depth2:
            sigma[h] = 0.0
            sigma[h, order[:k]] = 1.0
            sigma[h, order[k]] = 0.4
        if before is not None:  # more classes moved than the running sums' 1 + deviations
            changed = int((sigma[depth2[0]] != before).sum())
            _, deviations = threshold_split(sigma[depth2[0]].copy(), order, np.empty(NC, np.uint64), np.empty(NC))
            assert deviations + 1 < changed
        before = sigma[depth2[0]].copy()
        _, gains = solver.exploitability(U, sigma, ws=ws)
        _, fresh = HandSolver(hand, solver.tensors).exploitability(U, sigma, ws=Workspace.for_hand(hand))
        np.testing.assert_allclose(gains, fresh, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(gains, ev.best_response_gains(sigma, U), rtol=1e-9, atol=1e-12)


def test_kept_depth2_counterfactual_sums_follow_a_cfr_run(tensors):
    """The depth-2 counterfactual sums are updated pass to pass while U stays (engine.depth2.
    _depth2_counterfactuals): along 60 CFR+ iterates in one workspace — early ones moving every
    class, late ones a few — and after U changes, they must equal a from-scratch pass."""
    from engine.hand_pass import Workspace

    stacks = (10, 12, 11, 12)
    tree, hand, solver, ev = make_case(stacks, tensors)
    rng = np.random.default_rng(5)
    U = random_utilities(rng, tree, ev.paths)
    tol = 1e-13 * float(np.nanmax(np.abs(U)))  # $: sums near 0 keep the rounding of their parts
    ws = Workspace.for_hand(hand)
    for it in range(60):
        solver.iterate(U, 1, ws=ws)
        if it in (0, 1, 5, 20, 59):
            sigma = solver.current_strategy()
            _, cf_fold, cf_jam, _ = solver.evaluate(sigma, U, ws, orders=False)
            kept = cf_fold.copy(), cf_jam.copy()
            _, f_ref, j_ref, _ = HandSolver(hand, solver.tensors).evaluate(sigma, U, Workspace.for_hand(hand))
            np.testing.assert_allclose(kept[0], f_ref, rtol=1e-11, atol=tol, err_msg=f"cf_fold after {it + 1}")
            np.testing.assert_allclose(kept[1], j_ref, rtol=1e-11, atol=tol, err_msg=f"cf_jam after {it + 1}")
    U2 = U * 1.5 + 1.0  # new utilities: the kept sums must not be reused
    _, f_new, j_new, _ = solver.evaluate(sigma, U2, ws, orders=False)
    _, f_ref, j_ref, _ = HandSolver(hand, solver.tensors).evaluate(sigma, U2, Workspace.for_hand(hand))
    np.testing.assert_allclose(f_new, f_ref, rtol=1e-11, atol=tol)
    np.testing.assert_allclose(j_new, j_ref, rtol=1e-11, atol=tol)


def test_factored_depth2_sums_follow_either_jammer_range(tensors):
    """A depth-2 node that is its creator's jam child has the reach x(a) y(b) and keeps its sums by
    rows of a (engine.depth2._factored_depth2_counterfactuals): changes of the first jammer's range
    x cost a vector per row, changes of the creator's range y the changed columns of each kept row.
    Through changes of x alone, y alone, rows leaving and re-entering the range, and a restart
    from kept outcome-space sums under new utilities, every pass must equal a from-scratch one."""
    from engine.hand_pass import Workspace

    tree, hand, solver, ev = make_case((10, 15, 20), tensors)
    h = int(np.flatnonzero(hand.node_depth == 2)[0])
    creator = int(hand.node_creator[h])
    assert hand.node_jam[creator] == h and hand.node_fold[h] < 0  # the factored kind
    first = int(np.flatnonzero(hand.node_jam == creator)[0])  # the first jammer's node: x = his range
    rng = np.random.default_rng(11)
    U = random_utilities(rng, tree, ev.paths)
    ws = Workspace.for_hand(hand)

    def check(sigma, U):
        got = [x.copy() for x in solver.evaluate(sigma, U, ws, orders=False)[:3]]
        ref = HandSolver(hand, solver.tensors).evaluate(sigma, U, Workspace.for_hand(hand), orders=False)[:3]
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13 * float(np.nanmax(np.abs(U))))

    sigma = dense_profile(rng, ev.K)
    check(sigma, U)
    gone = rng.choice(NC, 20, replace=False)
    steps = [(first, rng.choice(NC, 100, replace=False)), (creator, rng.choice(NC, 30, replace=False)),
             (first, gone), (creator, gone), (first, gone), (first, np.arange(NC)), (creator, np.arange(NC))]
    for i, (node, cls) in enumerate(steps):
        sigma = sigma.copy()
        sigma[node, cls] = 0.0 if i in (2, 3) else rng.uniform(0.0, 1.0, len(cls))
        check(sigma, U)
    solver.keep_depth2_sums(ws)
    U2 = random_utilities(rng, tree, ev.paths)
    check(sigma, U2)  # starts from the kept sums: no row kept yet
    for node in (first, creator, first):
        sigma = sigma.copy()
        sigma[node, rng.choice(NC, 25, replace=False)] = rng.uniform(0.0, 1.0, 25)
        check(sigma, U2)


def test_a_neighbours_kept_sums_seed_a_hand_of_the_same_tree(tensors):
    """A never-solved state warm-started from a neighbour (engine.warm_starts.start_from_neighbour)
    starts from its kept jam chances and depth-2 sums too (HandSolver.copy_kept_sums): they depend
    on the profile only, so its evaluations must equal from-scratch ones, and keeping its own must
    leave the neighbour's untouched. A hand of another tree is refused."""
    from engine.hand_pass import Workspace

    tree, hand, solver, ev = make_case((10, 15, 20), tensors)
    n_tree, n_hand, neighbour, _ = make_case((11, 14, 20), tensors)
    rng = np.random.default_rng(12)
    ws = Workspace.for_hand(hand)
    sigma = dense_profile(rng, ev.K)
    neighbour.evaluate(sigma, random_utilities(rng, n_tree, make_case((11, 14, 20), tensors)[3].paths), ws)
    neighbour.keep_jam_chances(ws)
    neighbour.keep_depth2_sums(ws)
    before = [x.copy() for x in neighbour.jam_chances + neighbour.depth2_sums]
    solver.copy_kept_sums(neighbour)
    for step in range(3):
        moved = sigma.copy()
        moved[:, rng.choice(NC, 10, replace=False)] = rng.uniform(0.0, 1.0, (ev.K, 10))
        U = random_utilities(rng, tree, ev.paths)
        got = [x.copy() for x in solver.evaluate(moved, U, ws)]
        ref = HandSolver(hand, solver.tensors).evaluate(moved, U, Workspace.for_hand(hand))
        for a, b in zip(got, ref):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13 * float(np.nanmax(np.abs(U))))
        solver.keep_jam_chances(ws)
        solver.keep_depth2_sums(ws)
        ws.forget()
    for a, b in zip(before, neighbour.jam_chances + neighbour.depth2_sums):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="same tree"):
        make_case((20, 23, 2), tensors)[2].copy_kept_sums(neighbour)


def test_kept_jam_chances_serve_the_next_evaluation_of_the_hand(tensors):
    """A layer solve keeps each state's depth-2 jam chances (HandSolver.keep_jam_chances) and the
    next evaluation of that hand in a workspace another hand has used starts from them: it must
    equal a from-scratch evaluation — and it must really read them (corrupted ones show)."""
    from engine.hand_pass import Workspace

    tree, hand, solver, ev = make_case((10, 15, 20), tensors)
    other_tree, other_hand, other, other_ev = make_case((12, 9, 24), tensors)
    rng = np.random.default_rng(3)
    U = random_utilities(rng, tree, ev.paths)
    ws = Workspace.for_hand(hand)
    solver.iterate(U, 30, ws=ws)
    sigma_kept = solver.current_strategy()
    solver.evaluate(sigma_kept, U, ws)
    solver.keep_jam_chances(ws)
    assert solver.jam_chances is not None and solver.jam_chance_bytes() > 0
    # the layer's memory budget (JAM_CHANCE_BUDGET) counts what is really kept
    assert solver.jam_chance_bytes() == sum(x.nbytes for x in solver.jam_chances)
    solver.iterate(U, 5, ws=Workspace.for_hand(hand))  # the profile moves on elsewhere

    def evaluate_after_another_hand(sigma, U2):
        other.evaluate(dense_profile(rng, other_ev.K), random_utilities(rng, other_tree, other_ev.paths), ws)
        return [x.copy() for x in solver.evaluate(sigma, U2, ws)]

    U2 = random_utilities(rng, tree, ev.paths)
    for sigma in (sigma_kept, solver.current_strategy()):  # the same profile; one CFR+ moved on from
        kept = evaluate_after_another_hand(sigma, U2)
        fresh = HandSolver(hand, solver.tensors).evaluate(sigma, U2, Workspace.for_hand(hand))
        for a, b in zip(kept, fresh):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13 * float(np.nanmax(np.abs(U2))))
    solver.jam_chances[0][:] *= 1.01
    corrupted = evaluate_after_another_hand(sigma_kept, U2)
    fresh = HandSolver(hand, solver.tensors).evaluate(sigma_kept, U2, Workspace.for_hand(hand))
    assert not np.allclose(corrupted[2], fresh[2], rtol=1e-6)  # the jam values of the depth-1 nodes
    assert HandSolver(other_hand, solver.tensors).jam_chance_bytes() > 0
    heads_up = make_case((20, 25), tensors)[2]
    assert heads_up.jam_chance_bytes() == 0  # no three-way showdowns: nothing to keep


def test_three_way_tensors_are_swap_symmetric_and_asymmetric_ones_are_refused(tensors):
    """The depth-2 jam chances sum only pairs a <= b and mirror the rest (engine.depth2._three_way_chances):
    that needs m3c[b, a, c, o] == m3c[a, b, c, SWAP_FIRST_TWO[o]] exactly."""
    from engine.hand_pass import SWAP_FIRST_TWO, _swap_symmetric
    sd = tensors[2]
    m3c = sd.cond3[..., None] * np.moveaxis(sd.order3, 0, -1)
    assert np.array_equal(m3c.transpose(1, 0, 2, 3)[..., SWAP_FIRST_TWO], m3c)
    bad = m3c.copy()
    bad[3, 7, 11, 0] += 1e-12
    assert _swap_symmetric(m3c, SWAP_FIRST_TWO) and not _swap_symmetric(bad, SWAP_FIRST_TWO)
    with pytest.raises(ValueError, match="symmetric"):
        SolverTensors(dataclasses.replace(sd, cond3=np.where(np.arange(NC)[:, None, None] == 3, sd.cond3 * 1.5,
                                                             sd.cond3)))


def test_packed_pairs_hold_every_unordered_pair_class_major(tensors):
    """m3p[c, pair(a, b), o] == m3c[a, b, c, o] for a <= b, pairs numbered a-major (engine.depth2.pack_pairs)."""
    from engine.depth2 import NPAIRS, _fill_ab
    sd = tensors[2]
    m3c = sd.cond3[..., None] * np.moveaxis(sd.order3, 0, -1)
    a, b = np.triu_indices(NC)  # a-major, b increasing: the pair numbering
    assert len(a) == NPAIRS
    np.testing.assert_array_equal(tensors[0].m3p, m3c[a, b].transpose(1, 0, 2))
    some = np.array([0, 1, 168, 169, 5000, NPAIRS - 2, NPAIRS - 1])
    pa, pb = np.empty(len(some), np.int64), np.empty(len(some), np.int64)
    _fill_ab(some, len(some), pa, pb)
    np.testing.assert_array_equal(pa, a[some])
    np.testing.assert_array_equal(pb, b[some])


def test_three_way_chances_follow_the_pairs_the_pass_reads(tensors):
    """Sparse ranges: the depth-2 jam chances are kept only for jammer pairs the pass reads (the
    first jammer's class still has reach, or the creator's actor jams the second class). Ranges
    that grow, shrink or move — with the depth-2 strategy itself unchanged, changed, or both —
    must give the from-scratch pass and the brute-force reference every time."""
    from engine.hand_pass import Workspace

    stacks = (10, 15, 20)
    tree, hand, solver, ev = make_case(stacks, tensors)
    depth = hand.node_depth
    assert (depth == 2).any() and (depth == 1).any()
    rng = np.random.default_rng(11)
    U = random_utilities(rng, tree, ev.paths)
    ws = Workspace.for_hand(hand)

    def sparse_rows(rows, share):
        for h in rows:
            sigma[h] = rng.random(NC) * (rng.random(NC) < share)

    sigma = np.zeros((ev.K, NC))
    sparse_rows(range(ev.K), 0.15)
    steps = [
        lambda: sparse_rows(np.flatnonzero(depth == 1), 0.4),   # creators widen: new pairs, depth-2 σ unchanged
        lambda: sparse_rows(np.flatnonzero(depth == 0), 0.05),  # first jammers narrow: pairs dropped
        lambda: sparse_rows(np.flatnonzero(depth == 0), 0.5),   # … and widen again: dropped pairs come back
        lambda: sparse_rows(np.flatnonzero(depth == 2), 0.3),   # depth-2 strategies change, ranges kept
        lambda: sparse_rows(range(ev.K), 0.2),                  # everything moves
        lambda: None,                                           # nothing changes
    ]
    for step in [lambda: None] + steps:
        step()
        _, gains = solver.exploitability(U, sigma, ws=ws)
        _, fresh = HandSolver(hand, solver.tensors).exploitability(U, sigma, ws=Workspace.for_hand(hand))
        np.testing.assert_allclose(gains, fresh, rtol=1e-10, atol=1e-13)
        np.testing.assert_allclose(gains, ev.best_response_gains(sigma, U), rtol=1e-9, atol=1e-12)


def test_a_finished_solve_keeps_its_certified_profile_and_frees_the_average(tensors):
    """Between solves a solver holds regrets and its certified profile only; a later solve averages anew."""
    payouts = (50.0, 30.0)
    tree, hand, solver, ev = make_case((10, 10), tensors, payouts)
    U = utilities(hand, harville_values(20, 2, payouts))
    e, spent = solver.solve(U, 1e-3)
    assert e <= 1e-3 and spent > 0 and solver.avg_num is None and solver.avg_start == solver.iterations
    np.testing.assert_array_equal(solver.strategy(), solver.solution)
    worst, _ = solver.exploitability(U)
    assert worst == pytest.approx(e, abs=1e-15)
    e2, _ = solver.solve(U, 1e-4)
    assert e2 <= 1e-4 and solver.avg_num is None


@pytest.mark.parametrize("stacks", [(12, 14, 19), (20, 5, 20)])
def test_a_solve_leaves_its_certified_profile_evaluated(tensors, stacks):
    """solve() reports the certified profile's gains and outcome probabilities without a separate pass.

    When an iterate is certified, its own CFR+ evaluation is kept; it must equal a fresh exact
    evaluation of the same profile (and the brute-force outcome probabilities of the hand).
    """
    payouts = (50.0, 30.0, 20.0)
    tree, hand, solver, ev = make_case(stacks, tensors, payouts)
    U = utilities(hand, harville_values(sum(stacks), 3, payouts))
    e, _ = solver.solve(U, 1e-3, ws=Workspace.for_hand(hand))
    probs = solver.order_probs.copy()
    fresh = HandSolver(hand, solver.tensors)
    e_fresh, gains_fresh = fresh.exploitability(U, solver.solution, ws=Workspace.for_hand(hand))
    assert e == pytest.approx(e_fresh, abs=1e-13) and e <= 1e-3
    np.testing.assert_allclose(solver.gains, gains_fresh, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(probs, fresh.order_probs, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(probs, ev.order_probs(solver.solution), rtol=RTOL, atol=1e-13)


@pytest.mark.parametrize("stacks, cap, better", [((12, 14, 19), 24, "last"), ((12, 14, 19), 16, "average"),
                                                  ((10, 12, 11, 12), 40, "last"), ((20, 5, 20), 40, "average"),
                                                  # caps at an average check: that check's evaluation is reused
                                                  ((10, 12, 11, 12), 32, "last"), ((20, 5, 20), 32, "average")])
def test_a_solve_at_its_cap_keeps_the_less_exploitable_of_the_last_iterate_and_the_average(tensors, stacks, cap,
                                                                                           better):
    """A solve that reaches max_iterations above its target returns whichever of its last iterate and
    its average is less exploitable (a loose target level caps re-solves, LOOSE_MAX_ITERATIONS), with
    that profile's gains and outcome probabilities. A twin solver run the same iterations without
    solve() gives the two candidates; the cases cover both winners."""
    payouts = (50.0, 30.0, 20.0)
    tree, hand, solver, ev = make_case(stacks, tensors, payouts)
    U = utilities(hand, harville_values(sum(stacks), len(stacks), payouts))
    twin = HandSolver(hand, solver.tensors)
    twin.iterate(U, cap, ws=Workspace.for_hand(hand), target=1e-12)
    last = twin._last_iterate[0]
    e_last, _ = HandSolver(hand, solver.tensors).exploitability(U, last, ws=Workspace.for_hand(hand))
    average = twin.average_strategy()
    e_average, _ = HandSolver(hand, solver.tensors).exploitability(U, average, ws=Workspace.for_hand(hand))
    assert (e_last < e_average) == (better == "last")  # the case exercises the branch it names

    e, spent = solver.solve(U, 1e-12, ws=Workspace.for_hand(hand), max_iterations=cap)
    assert spent == cap and e == pytest.approx(min(e_last, e_average), rel=1e-12)
    np.testing.assert_array_equal(solver.solution, last if better == "last" else average)
    probs = solver.order_probs.copy()
    fresh = HandSolver(hand, solver.tensors)
    _, gains = fresh.exploitability(U, solver.solution, ws=Workspace.for_hand(hand))
    np.testing.assert_allclose(solver.gains, gains, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(probs, fresh.order_probs, rtol=1e-10, atol=1e-14)
    assert solver._last_iterate is None  # nothing of the solve kept beyond its profile


@pytest.mark.parametrize("stacks", [(10, 15, 20), (20, 23, 2), (10, 12, 11, 12), (9, 9, 9, 9, 9)])
def test_kept_margins_are_advantages_and_reach_masses(tensors, stacks):
    """keep_margins: cf_jam − cf_fold of the evaluated profile, and each decision's reach mass — what
    path enumeration gives as counterfactual values when every outcome pays 1 $."""
    tree, hand, solver, ev = make_case(stacks, tensors)
    rng = np.random.default_rng(len(stacks) * 100 + stacks[0])
    sigma = sparse_profile(rng, ev.K, zero_rows=False)
    U = random_utilities(rng, tree, ev.paths)
    ws = Workspace.for_hand(hand)
    solver.evaluate(sigma, U, ws)
    solver.keep_margins(ws)
    advantage, mass = solver.margins
    ref = ev.evaluate(sigma, U)
    # float32 margins: rounding of about 6e-8 of the largest counterfactual value
    np.testing.assert_allclose(advantage, ref["cf_jam"] - ref["cf_fold"], rtol=1e-6,
                               atol=3e-7 * np.nanmax(np.abs(ref["cf_jam"] - ref["cf_fold"])))
    ones = np.where(np.isnan(U), np.nan, 1.0)
    reach = ev.evaluate(sigma, ones)
    np.testing.assert_allclose(mass, reach["cf_fold"], rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(mass, reach["cf_jam"], rtol=1e-6, atol=1e-12)
    assert mass.max() > 0


@pytest.mark.parametrize("discounted_until", [None, 3])
def test_regrets_are_discounted_linearly(tensors, discounted_until):
    """Iteration t multiplies the regrets by t/(t + 1) before adding its own (floored at zero), t counted by
    the regret weight; with ``discounted=False`` (a stalled solve, see STALL_ITERATIONS), here after
    three discounted iterations, it adds them to the sum as it is while the weight still counts.
    Replayed in plain numpy from the pass's counterfactual values."""
    payouts = (50.0, 30.0, 20.0)
    tree, hand, solver, ev = make_case((12, 14, 19), tensors, payouts)
    U = utilities(hand, harville_values(45, 3, payouts))
    R = np.zeros((2,) + solver.regret_jam.shape)
    for t in range(1, 8):
        discounted = discounted_until is None or t <= discounted_until
        sigma = solver.current_strategy()
        _, cf_fold, cf_jam, _ = HandSolver(hand, solver.tensors).evaluate(sigma, U)
        diff = cf_jam - cf_fold
        R = np.maximum(R * (t / (t + 1) if discounted else 1.0) + np.stack([(1 - sigma) * diff, -sigma * diff]), 0.0)
        solver.iterate(U, 1, discounted=discounted)
        assert solver.regret_weight == t
        np.testing.assert_allclose(solver.regret_jam, R[0], rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(solver.regret_fold, R[1], rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("stacks", [(12, 14, 19), (10, 12, 11, 12)])
def test_a_checked_profile_continues_as_the_next_cfr_iterate(tensors, stacks):
    """A layer re-solves a state after its exact check by counting the checked profile as the next
    CFR+ iterate (continue_from_check): the regrets, discounted as iteration t + 1 would be, gain the
    profile's instantaneous regrets under the new utilities, which become the prediction, and the
    average starts from it. Replayed in numpy from a fresh solver's evaluation of the same profile."""
    payouts = (50.0, 30.0, 20.0)
    tree, hand, solver, ev = make_case(stacks, tensors, payouts)
    units, n = sum(stacks), len(stacks)
    solver.solve(utilities(hand, harville_values(units, n, payouts)), 1e-3)
    moved = {k: 1.02 * v for k, v in harville_values(units, n, payouts).items()}  # the values moved
    U = utilities(hand, moved)
    sigma = solver.solution.copy()
    R = np.stack([solver.regret_jam, solver.regret_fold]).astype(np.float64)
    t, its = solver.regret_weight, solver.iterations
    solver.restart_average()
    solver.exploitability(U, ws=Workspace.for_hand(hand))
    solver.continue_from_check()

    _, cf_fold, cf_jam, _ = HandSolver(hand, solver.tensors).evaluate(sigma, U)
    diff = cf_jam - cf_fold
    inst = np.stack([(1 - sigma) * diff, -sigma * diff])
    np.testing.assert_allclose(np.stack([solver.regret_jam, solver.regret_fold]),
                               np.maximum(R * (t + 1) / (t + 2) + inst, 0.0), rtol=1e-5, atol=1e-9)
    np.testing.assert_allclose(np.stack([solver.pred_jam, solver.pred_fold]), inst, rtol=1e-5, atol=1e-9)
    assert solver.regret_weight == t + 1 and solver.iterations == its + 1
    np.testing.assert_allclose(solver.average_strategy(), sigma, rtol=1e-12)
    assert np.abs(inst).max() > 0  # the moved values give the profile regrets to learn from


def solve_stalled_hand(data: str, stacks: tuple[int, ...], target: float, cap: int) -> tuple[float, int]:
    """Solve a hand that stalled in a 45-unit layer run, cold, at the successor values it stalled at
    (tests/data/<data>.npy, $ per terminal, order and seat) with the sampled tables that run used;
    (exploitability, iterations), the certified profile confirmed by a fresh evaluation."""
    from pathlib import Path

    U = np.load(Path(__file__).parent / "data" / f"{data}.npy")
    sd = showdown_tensors(build_pair_table("sampled", samples=16, seed=1),
                          build_triple_table("sampled", samples=4, seed=1))
    hand = compile_hand(stacks, (50.0, 30.0, 20.0), state_index)
    assert U.shape == (len(hand.term_kind), 6, len(stacks))
    solver = HandSolver(hand, SolverTensors(sd))
    e, its = solver.solve(U, target, delay=2, max_iterations=cap)
    check, _ = HandSolver(hand, solver.tensors).exploitability(U, sigma=solver.solution)
    assert check == pytest.approx(e, rel=1e-9)
    return e, its


def test_a_stalled_solve_drops_the_discount_and_is_certified():
    """The 45-unit state (4, 17, 19, 5) at the successor values of a layer solve's 23rd outer
    iteration: with the discounted regrets alone its average stays near $0.0009 and its iterate
    cycles near $0.0035 up to the 20,000-iteration cap, so the layer could never end. After
    STALL_ITERATIONS it goes on undiscounted and gets within $0.00032 in about 1,100 iterations."""
    from engine.cfr import STALL_ITERATIONS

    e, its = solve_stalled_hand("stalled_hand_utilities", (4, 17, 19, 5), 3.16e-4, 1_500)
    assert e <= 3.16e-4 and STALL_ITERATIONS < its <= 1_500


def test_a_solve_still_stalled_after_its_first_restart_restarts_discounted_and_is_certified():
    """The 45-unit state (14, 9, 4, 18) at the successor values of a layer solve's 27th outer
    iteration, target gamma = $0.0001: undiscounted after STALL_ITERATIONS, its iterate stays near
    $0.0002 to the 20,000-iteration cap (the layer held it and ended above gamma). The restart at
    STALL_RESTART_EVERY × STALL_ITERATIONS switches the discount back on and certifies it a
    hundred-odd iterations later."""
    from engine.cfr import STALL_ITERATIONS, STALL_RESTART_EVERY

    e, its = solve_stalled_hand("stalled_hand_utilities_gamma", (14, 9, 4, 18), 1e-4, 2_500)
    assert e <= 1e-4 and STALL_RESTART_EVERY * STALL_ITERATIONS < its <= 2_500


@pytest.mark.parametrize("stacks", [(10, 15, 20), (10, 12, 11, 12)])
def test_kept_depth2_sums_serve_the_next_evaluation_under_new_utilities(tensors, stacks):
    """A layer solve keeps each state's depth-2 counterfactual sums in outcome space
    (HandSolver.keep_depth2_sums) so that its next evaluation under new utilities — the kept
    profile re-checked, or one CFR+ moved on from — starts from them: it must equal a
    from-scratch evaluation, also after the sums were brought up to a later profile, and it must
    really read them (corrupted ones show). Three players: the fold child of the depth-2 node is a
    two-jammer showdown (fold sums kept too); four: depth-2 nodes folding to another node."""
    from engine.hand_pass import Workspace

    tree, hand, solver, ev = make_case(stacks, tensors)
    other_tree, other_hand, other, other_ev = make_case((12, 9, 24), tensors)
    rng = np.random.default_rng(8)
    U = random_utilities(rng, tree, ev.paths)
    ws = Workspace.for_hand(hand)
    sigma_kept = dense_profile(rng, ev.K)  # every depth-2 pair reached (CFR+ iterates of these hands reach few)
    solver.evaluate(sigma_kept, U, ws)
    solver.keep_depth2_sums(ws)
    assert solver.depth2_sums is not None and solver.depth2_sum_bytes() > 0
    # the layer's memory budget (DEPTH2_SUM_BUDGET) counts what is really kept
    assert solver.depth2_sum_bytes() == sum(x.nbytes for x in solver.depth2_sums)
    assert solver.depth2_sums[3][ev.K - 1] == 1 and np.abs(solver.depth2_sums[1]).max() > 0

    def evaluate_after_another_hand(sigma, U2):
        other.evaluate(dense_profile(rng, other_ev.K), random_utilities(rng, other_tree, other_ev.paths), ws)
        return [x.copy() for x in solver.evaluate(sigma, U2, ws)]

    def check(sigma, U2):
        kept = evaluate_after_another_hand(sigma, U2)
        fresh = HandSolver(hand, solver.tensors).evaluate(sigma, U2, Workspace.for_hand(hand))
        for a, b in zip(kept, fresh):
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-13 * float(np.nanmax(np.abs(U2))))

    moved_on = sigma_kept.copy()
    moved_on[:, rng.choice(NC, 5, replace=False)] = rng.uniform(0.0, 1.0, (ev.K, 5))  # a few classes move
    moved_on[0, :3] = 0.0
    for sigma in (sigma_kept, moved_on, dense_profile(rng, ev.K)):
        check(sigma, random_utilities(rng, tree, ev.paths))
    solver.evaluate(moved_on, U, ws)
    solver.keep_depth2_sums(ws)  # updated by the pairs whose reach changed
    for sigma in (moved_on, sigma_kept):
        check(sigma, random_utilities(rng, tree, ev.paths))
    U2 = random_utilities(rng, tree, ev.paths)
    before = evaluate_after_another_hand(moved_on, U2)
    solver.depth2_sums[1][:] *= 1.01
    corrupted = evaluate_after_another_hand(moved_on, U2)
    depth2 = hand.node_depth == 2
    assert not np.allclose(corrupted[2][depth2], before[2][depth2], rtol=1e-6)
    heads_up = make_case((20, 25), tensors)[2]
    assert heads_up.depth2_sum_bytes() == 0


def test_forgetting_the_profile_keeps_only_the_regrets(tensors):
    """forget_profile (a model sweep taking over the previous sweep's solvers) drops the certified
    profile and everything kept from its evaluation, whose memory a 5-player layer cannot hold
    twice, and leaves the regrets as they were: the solver then holds what a fresh one given
    these regrets (copy_regrets) would."""
    from engine.cfr import REGRET_ARRAYS

    payouts = (50.0, 30.0, 20.0)
    _, hand, solver, _ = make_case((10, 15, 20), tensors, payouts)
    U = utilities(hand, harville_values(45, 3, payouts))
    ws = Workspace.for_hand(hand)
    solver.solve(U, 1e-3, ws=ws)
    solver.keep_jam_chances(ws)
    solver.keep_depth2_sums(ws)
    solver.keep_margins(ws)
    assert all(x is not None for x in (solver.solution, solver.gains, solver.margins, solver.jam_chances,
                                       solver.depth2_sums))
    regrets = {name: getattr(solver, name).copy() for name in REGRET_ARRAYS}
    solver.forget_profile()
    fresh = HandSolver(hand, solver.tensors)
    fresh.copy_regrets(solver)
    for name in ("solution", "gains", "margins", "jam_chances", "depth2_sums", "borrowed_jam_chances"):
        assert getattr(solver, name) == getattr(fresh, name), name
    for name in REGRET_ARRAYS:
        np.testing.assert_array_equal(getattr(solver, name), regrets[name])
    assert solver.regret_weight == fresh.regret_weight > 0


def test_a_warm_solver_counts_its_stall_from_the_solves_start(tensors):
    """STALL_ITERATIONS counts a solve's own iterations. A solver warm from more than that many
    earlier iterations (a state in a later outer iteration, or a model sweep's) must not take its
    re-solve for stalled at the first check of its average: without a stall restart, its regret
    weight grows by exactly the iterations the re-solve spends (a restart would rescale it to
    STALL_RESTART_WEIGHT)."""
    from engine.cfr import STALL_ITERATIONS

    payouts = (50.0, 30.0, 20.0)
    _, hand, solver, _ = make_case((12, 14, 19), tensors, payouts)
    ws = Workspace.for_hand(hand)
    solver.iterate(utilities(hand, harville_values(45, 3, payouts)), STALL_ITERATIONS + 8, ws=ws)
    weight = solver.regret_weight
    assert weight == STALL_ITERATIONS + 8
    U = utilities(hand, harville_values(45, 3, (65.0, 25.0, 10.0)))  # the successor values moved
    e, spent = solver.solve(U, 1e-12, ws=ws, max_iterations=64)  # past two checks of the average
    assert spent == 64 and e > 1e-12
    assert solver.regret_weight == weight + 64


@pytest.mark.parametrize("stacks", [(12, 14, 19), (9, 11, 13, 12)])
def test_compiled_iterations_match_the_step_by_step_update(tensors, stacks):
    """:meth:`HandSolver.iterate` runs its iterations in one compiled call; composed step by step
    from the building blocks (regret matching, an exact evaluation, the CFR+ update, the t²
    average), the same iterations must give the same regrets, average, clock and certified
    iterate, to the bit."""
    from engine.cfr import cfr_plus_update, current_strategy, exploitability_from_cf

    payouts = (50.0, 30.0, 20.0)
    _, hand, solver, _ = make_case(stacks, tensors, payouts)
    U = utilities(hand, harville_values(sum(stacks), len(stacks), payouts))
    reference = HandSolver(hand, solver.tensors)
    ws, ws_ref = Workspace.for_hand(hand), Workspace.for_hand(hand)
    delay, target = 2, 2e-3

    def reference_iterate(count: int, target: float = target) -> float:
        e = np.inf
        for _ in range(count):
            r = reference
            sigma = current_strategy(r.regret_jam, r.regret_fold, r.pred_jam, r.pred_fold)
            _, cf_fold, cf_jam, _ = r.evaluate(sigma, U, ws_ref, orders=False)
            gains = exploitability_from_cf(sigma, cf_fold, cf_jam, hand.node_actor, hand.n_players)
            e = float(gains.max())
            cfr_plus_update(sigma, cf_fold, cf_jam, r.regret_jam, r.regret_fold, r.pred_jam, r.pred_fold,
                            (r.regret_weight + 1.0) / (r.regret_weight + 2.0))
            r.iterations += 1
            r.regret_weight += 1.0
            since = r.iterations - r.avg_start
            if since > delay:
                w = float(since - delay) ** 2
                r.avg_num = np.zeros_like(sigma) if r.avg_num is None else r.avg_num
                r.avg_num += w * sigma
                r.avg_den += w
            if e <= target:
                r.solution, r.gains = sigma, gains
                break
        return e

    for count in (1, 2, 7, 400):  # the last runs until an iterate is certified
        e = solver.iterate(U, count, delay=delay, ws=ws, target=target)
        e_ref = reference_iterate(count)
        assert e == e_ref and solver.iterations == reference.iterations
        assert solver.regret_weight == reference.regret_weight and solver.avg_den == reference.avg_den
        for name in ("regret_jam", "regret_fold", "pred_jam", "pred_fold"):
            np.testing.assert_array_equal(getattr(solver, name), getattr(reference, name))
        if reference.avg_num is None:
            assert solver.avg_num is None
        else:
            np.testing.assert_array_equal(solver.avg_num, reference.avg_num)
    assert reference.solution is not None and solver.iterations < 400 + 10
    np.testing.assert_array_equal(solver.solution, reference.solution)
    np.testing.assert_array_equal(solver.gains, reference.gains)
    np.testing.assert_array_equal(solver.cf_jam, reference.cf_jam)
    # the certified iterate is left evaluated: its outcome probabilities are those of a fresh pass
    _, _, _, probs = HandSolver(hand, solver.tensors).evaluate(solver.solution, U, Workspace.for_hand(hand))
    np.testing.assert_allclose(solver.order_probs, probs, rtol=1e-12, atol=1e-15)
    # after restart_average (new successor values) the t² weights and the delay count from the restart
    solver.restart_average()
    reference.restart_average()
    assert solver.avg_start == solver.iterations > 0
    solver.iterate(U, 6, delay=delay, ws=ws)
    reference_iterate(6, target=-np.inf)
    assert solver.avg_den == reference.avg_den == sum(w * w for w in range(1, 6 - delay + 1))
    np.testing.assert_array_equal(solver.avg_num, reference.avg_num)


def test_utilities_gather_every_surviving_seat(tensors):
    """U[t, o, p] = prize now + the value of p's seat in the next state, checked outcome by outcome."""
    payouts = (50.0, 30.0, 20.0)
    stacks = (7, 1, 9, 3)
    _, hand, _, _ = make_case(stacks, tensors, payouts)
    rng = np.random.default_rng(3)
    values = {m: rng.uniform(0, 50, (len(enumerate_states(sum(stacks), m)), m)) for m in range(2, 5)}
    U = utilities(hand, values)
    T, O, n = hand.term_seat.shape
    expected = hand.term_prize.copy()
    for t in range(T):
        for o in range(O):
            m = hand.term_next_players[t, o]
            for p in range(n):
                if m > 0 and hand.term_seat[t, o, p] >= 0:
                    expected[t, o, p] += values[m][hand.term_next[t, o], hand.term_seat[t, o, p]]
    np.testing.assert_array_equal(U, expected)
    assert (hand.term_next_players > 0).any() and not np.array_equal(U, hand.term_prize)
    # the plan kept on the hand (every state's, all through a solve) holds 9 bytes per seat gathered
    seats = ((hand.term_next_players > 0)[..., None] & (hand.term_seat >= 0)).sum()
    assert sum(len(p) for _, p, _, _ in hand.utility_plan) == seats
    assert sum(p.nbytes + q.nbytes + r.nbytes for _, p, q, r in hand.utility_plan) == 9 * seats
