"""Rules of one jam/fold hand and where it leads (engine/hand.py, SPEC §2)."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.hand import (
    HandTree,
    Node,
    bb_position,
    button_position,
    decision_node_count,
    hand_tree,
    next_hand,
    resolve_pots,
    sb_position,
)
from engine.states import enumerate_states, n_states, state_index

PAY = (50.0, 30.0, 20.0)


# --------------------------------------------------------------------------------------------
# helpers: independent references
# --------------------------------------------------------------------------------------------


def literal_pots(stacks, contributions, contesting, order):
    """Side pots exactly as SPEC words them: levels of the contesting contributions, pot k takes
    min(c, L_k) - min(c, L_{k-1}) from everybody, goes to the best-placed eligible player;
    everything above the top level goes back to its owner."""
    c = list(contributions)
    final = [s - x for s, x in zip(stacks, c)]
    levels = sorted({c[p] for p in contesting})
    prev = 0
    for L in levels:
        amount = sum(min(x, L) - min(x, prev) for x in c)
        eligible = [p for p in contesting if c[p] >= L]
        winner = next(p for p in order if p in eligible)
        final[winner] += amount
        prev = L
    for j, x in enumerate(c):
        final[j] += max(0, x - levels[-1])
    return tuple(final)


def simulate(stacks, actions):
    """Play one hand by the rules with a fixed wish per decider (True = jam); returns
    (decision points visited as (actor, jammers_before), jammers, contesting, contributions)."""
    n = len(stacks)
    sb, bb = n - 2, n - 1
    posted = [0] * n
    posted[sb] = min(1, stacks[sb])
    posted[bb] = min(2, stacks[bb])
    blind_ai = [p for p in (sb, bb) if posted[p] == stacks[p]]
    jammers, visited = [], []
    bb_in = False
    for k in range(n):
        if k in blind_ai:
            continue
        if len(jammers) + len(blind_ai) >= 3:
            break  # everyone left folds automatically
        if k == bb and not jammers:
            bb_in = True  # walk, or automatic call of a blind all-in SB
            break
        visited.append((k, tuple(jammers)))
        if actions[k]:
            jammers.append(k)
    contesting = sorted(set(jammers) | set(blind_ai) | ({bb} if bb_in else set()))
    contrib = tuple(stacks[i] if i in jammers or i in blind_ai else posted[i] for i in range(n))
    return visited, tuple(jammers), tuple(contesting), contrib


def follow(tree: HandTree, actions):
    ref = tree.root
    while ref[0] == "node":
        node = tree.nodes[ref[1]]
        ref = node.jam_child if actions[node.actor] else node.fold_child
    return tree.terminals[ref[1]]


def terminal_by_jammers(tree: HandTree, jammers):
    found = [t for t in tree.terminals if t.jammers == tuple(jammers)]
    assert len(found) == 1, (jammers, [t.jammers for t in tree.terminals])
    return found[0]


def outcome(terminal, order):
    return next(o for o in terminal.outcomes if o.order == tuple(order))


def open_prizes(m, pay):
    """Prizes of places 1..m (still open for m survivors)."""
    return sum(pay[q - 1] for q in range(1, m + 1) if q <= len(pay))


def check_tree(stacks, pay):
    """Every invariant of a tree; returns it."""
    s = tuple(stacks)
    n = len(s)
    total = sum(s)
    tree = hand_tree(s, pay)
    pool = open_prizes(n, pay)
    generic = s[n - 2] >= 2 and s[n - 1] >= 3
    assert len(tree.nodes) <= decision_node_count(n)
    assert (len(tree.nodes) == decision_node_count(n)) == generic
    assert len(tree.terminals) == len(tree.nodes) + 1
    assert tree.root == (("node", 0) if tree.nodes else ("terminal", 0))
    # the tree is exactly the rules: every action vector reaches the simulated terminal
    seen_nodes = set()
    seen_terms = set()
    for actions in itertools.product((False, True), repeat=n):
        visited, jammers, contesting, contrib = simulate(s, actions)
        seen_nodes.update(visited)
        term = follow(tree, actions)
        assert (term.jammers, term.contesting, term.contributions) == (jammers, contesting, contrib)
        seen_terms.add(jammers)
    assert {(nd.actor, nd.jammers_before) for nd in tree.nodes} == seen_nodes
    assert len(seen_terms) == len(tree.terminals)
    for t in tree.terminals:
        assert 1 <= len(t.contesting) <= 3
        assert set(t.blind_allin) == set(tree.blind_allin) <= set(t.contesting)
        assert [o.order for o in t.outcomes] == list(itertools.permutations(t.contesting))
        for o in t.outcomes:
            f = o.final_stacks
            assert sum(f) == total and min(f) >= 0
            assert f == literal_pots(s, t.contributions, t.contesting, o.order)
            assert f == resolve_pots(s, t.contributions, t.contesting, o.order)
            # players not in the pot only lose what they put in (minus returned excess)
            top = max(t.contributions[p] for p in t.contesting)
            for j in range(n):
                if j not in t.contesting:
                    assert f[j] == s[j] - min(t.contributions[j], top) > 0
            m = sum(1 for x in f if x > 0)
            elim = [j for j in range(n) if f[j] == 0]
            assert math.isclose(sum(o.prize) + (open_prizes(m, pay) if m >= 2 else 0.0), pool,
                                abs_tol=1e-9)
            if m == 1:
                assert o.next_stacks == () and o.new_position == (-1,) * n
                w = next(j for j in range(n) if f[j] > 0)
                assert o.places[w] == 1 and o.prize[w] == (pay[0] if pay else 0.0)
                assert sum(o.places) == pytest.approx(sum(range(1, n + 1)))
            else:
                assert len(o.next_stacks) == m and sum(o.next_stacks) == total
                assert min(o.next_stacks) >= 1
                for j in range(n):
                    if f[j] > 0:
                        assert o.next_stacks[o.new_position[j]] == f[j]
                        assert o.places[j] == 0 and o.prize[j] == 0
                    else:
                        assert o.new_position[j] == -1
                assert sorted(o.new_position[j] for j in range(n) if f[j] > 0) == list(range(m))
                assert 0 <= state_index(o.next_stacks) < n_states(total, m)
                assert sum(o.places) == pytest.approx(sum(range(m + 1, n + 1)))
            for j in elim:
                assert m + 1 <= o.places[j] <= n
                # a bigger starting stack never finishes worse among this hand's busts
                for i in elim:
                    if s[i] > s[j]:
                        assert o.places[i] < o.places[j]
                    if s[i] == s[j]:
                        assert o.places[i] == o.places[j] and o.prize[i] == o.prize[j]
    return tree


# --------------------------------------------------------------------------------------------
# positions and node counts
# --------------------------------------------------------------------------------------------


def test_positions():
    assert (button_position(2), sb_position(2), bb_position(2)) == (0, 0, 1)
    assert (button_position(3), sb_position(3), bb_position(3)) == (0, 1, 2)
    assert (button_position(5), sb_position(5), bb_position(5)) == (2, 3, 4)
    with pytest.raises(ValueError, match="n_players"):
        button_position(7)


def test_generic_node_counts_match_formula():
    assert [decision_node_count(n) for n in range(2, 7)] == [2, 6, 13, 24, 40]
    for n in range(2, 7):
        formula = sum(math.comb(k, 0) + math.comb(k, 1) + math.comb(k, 2) for k in range(n)) - 1
        tree = hand_tree((40,) * n, PAY)
        assert len(tree.nodes) == decision_node_count(n) == formula
        assert len(tree.terminals) == formula + 1
        assert tree.blind_allin == ()
        # the BB never decides when everybody folded to him
        assert all(not (nd.actor == n - 1 and nd.jammers_before == ()) for nd in tree.nodes)
    # 5 players: 24 nodes (24 * 169 = 4,056 information sets)
    assert len(hand_tree((9, 9, 9, 9, 9), PAY).nodes) * 169 == 4056


@pytest.mark.parametrize("n", range(2, 7))
def test_blind_allins_have_fewer_nodes(n):
    big = decision_node_count(n)
    for sb_stack, bb_stack in [(1, 10), (10, 1), (10, 2), (1, 1), (1, 2)]:
        s = (10,) * (n - 2) + (sb_stack, bb_stack)
        tree = hand_tree(s, PAY)
        assert len(tree.nodes) < big, (s, len(tree.nodes))
        assert tree.blind_allin == tuple(p for p, x in ((n - 2, sb_stack), (n - 1, bb_stack))
                                         if x <= (1 if p == n - 2 else 2))
    # stacks 2 (SB) and 3 (BB) are just large enough to decide
    assert len(hand_tree((10,) * (n - 2) + (2, 3), PAY).nodes) == big


def test_three_players_sb_blind_allin_exact_nodes():
    tree = check_tree((10, 1, 10), PAY)
    assert tree.posted == (0, 1, 2) and tree.blind_allin == (1,)
    assert tree.nodes == (
        # BU decides first; if he folds the BB calls the SB's 1 chip automatically (terminal 0)
        Node(actor=0, jammers_before=(), fold_child=("terminal", 0), jam_child=("node", 1)),
        # BB facing BU's jam and the SB's blind all-in
        Node(actor=2, jammers_before=(0,), fold_child=("terminal", 1), jam_child=("terminal", 2)),
    )
    t0, t1, t2 = tree.terminals
    assert (t0.contesting, t0.jammers, t0.blind_allin) == ((1, 2), (), (1,))
    assert (t1.contesting, t1.jammers) == ((0, 1), (0,))
    assert (t2.contesting, t2.jammers) == ((0, 1, 2), (0, 2))
    # automatic call: SB wins 1 chip from the BB (his second posted chip comes back)
    assert outcome(t0, (1, 2)).final_stacks == (10, 2, 9)
    assert outcome(t0, (2, 1)).final_stacks == (10, 0, 11)
    # BB folds to BU's jam: SB can win 1+1+1 (the folded BB's first chip); the BB's second chip
    # is in the side pot only BU can win
    assert t1.contributions == (10, 1, 2)
    assert outcome(t1, (1, 0)).final_stacks == (10, 3, 8)
    assert outcome(t1, (0, 1)).final_stacks == (13, 0, 8)
    # three-way: main pot 3, side pot 18
    assert outcome(t2, (1, 0, 2)).final_stacks == (18, 3, 0)
    assert outcome(t2, (1, 2, 0)).final_stacks == (0, 3, 18)
    assert outcome(t2, (0, 1, 2)).final_stacks == (21, 0, 0)


# --------------------------------------------------------------------------------------------
# walks and blind all-ins
# --------------------------------------------------------------------------------------------


def test_walk_heads_up():
    tree = check_tree((10, 10), PAY)
    assert [(nd.actor, nd.jammers_before) for nd in tree.nodes] == [(0, ()), (1, (0,))]
    walk = tree.terminals[tree.nodes[0].fold_child[1]]
    assert walk.contesting == (1,) and walk.jammers == () and walk.contributions == (1, 2)
    (o,) = walk.outcomes
    assert o.final_stacks == (9, 11)
    # heads-up the button alternates: the old BB is the new SB
    assert o.next_stacks == (11, 9) and o.new_position == (1, 0)


def test_walk_five_players():
    tree = check_tree((9, 9, 9, 9, 9), PAY)
    walk = terminal_by_jammers(tree, ())
    assert walk.contesting == (4,)
    (o,) = walk.outcomes
    assert o.final_stacks == (9, 9, 9, 8, 10)
    assert o.next_stacks == (9, 9, 8, 10, 9)  # old CO acts first, old HJ is the new BB
    assert o.prize == (0.0,) * 5 and o.places == (0.0,) * 5


def test_sb_blind_allin_everyone_folds_is_an_automatic_showdown():
    # heads-up SB with 1 chip: nobody decides at all
    tree = check_tree((1, 44), PAY)
    assert tree.nodes == () and tree.root == ("terminal", 0) and tree.blind_allin == (0,)
    (t,) = tree.terminals
    assert t.contesting == (0, 1) and t.jammers == ()
    assert outcome(t, (0, 1)).final_stacks == (2, 43)
    assert outcome(t, (0, 1)).next_stacks == (43, 2)
    end = outcome(t, (1, 0))
    assert end.final_stacks == (0, 45) and end.next_stacks == ()
    assert end.prize == (30.0, 50.0) and end.places == (2.0, 1.0) and end.new_position == (-1, -1)
    # five players, everyone folds to the BB: automatic SB vs BB
    tree = check_tree((10, 10, 14, 1, 10), PAY)
    t = terminal_by_jammers(tree, ())
    assert t.contesting == (3, 4) and t.blind_allin == (3,)
    assert outcome(t, (3, 4)).final_stacks == (10, 10, 14, 2, 9)
    o = outcome(t, (4, 3))
    assert o.final_stacks == (10, 10, 14, 0, 11)
    assert o.prize[3] == 0.0 and o.places[3] == 5.0  # 5th pays nothing
    assert len(tree.nodes) < decision_node_count(5)


@pytest.mark.parametrize("bb_stack", [1, 2])
def test_bb_blind_allin(bb_stack):
    tree = check_tree((10, 10, bb_stack), PAY)
    assert tree.blind_allin == (2,) and tree.posted == (0, 1, bb_stack)
    assert [(nd.actor, nd.jammers_before) for nd in tree.nodes] == [(0, ()), (1, ()), (1, (0,))]
    # everybody folds: the BB wins the SB's blind without deciding
    t = terminal_by_jammers(tree, ())
    assert t.contesting == (2,)
    assert t.outcomes[0].final_stacks == (10, 9, bb_stack + 1)
    # BU jams, SB folds: main pot of the BB's level, the rest is BU's own
    t = terminal_by_jammers(tree, (0,))
    assert t.contesting == (0, 2) and t.contributions == (10, 1, bb_stack)
    assert outcome(t, (2, 0)).final_stacks == (10 - bb_stack, 9, 2 * bb_stack + 1)
    won = outcome(t, (0, 2))
    assert won.final_stacks == (10 + bb_stack + 1, 9, 0)
    assert won.places == (0.0, 0.0, 3.0) and won.prize == (0.0, 0.0, 20.0)
    # BU and SB jam: three all-in, nobody else to act
    t = terminal_by_jammers(tree, (0, 1))
    assert t.contesting == (0, 1, 2)


def test_both_blinds_allin():
    for s, sb_wins, bb_wins in [((1, 1), (2, 0), (0, 2)), ((1, 2), (2, 1), (0, 3))]:
        tree = check_tree(s, PAY)
        assert tree.nodes == () and tree.root == ("terminal", 0) and tree.blind_allin == (0, 1)
        (t,) = tree.terminals
        assert outcome(t, (0, 1)).final_stacks == sb_wins
        assert outcome(t, (1, 0)).final_stacks == bb_wins
    # five players: two all-in already, so the first jam closes the action
    tree = check_tree((10, 10, 10, 1, 2), PAY)
    assert [(nd.actor, nd.jammers_before) for nd in tree.nodes] == [(0, ()), (1, ()), (2, ())]
    assert sorted(t.contesting for t in tree.terminals) == [
        (0, 3, 4), (1, 3, 4), (2, 3, 4), (3, 4)]


def test_bb_facing_jam_smaller_than_his_blind():
    tree = check_tree((1, 10, 10, 10, 10), PAY)
    nd = next(nd for nd in tree.nodes if nd.actor == 4 and nd.jammers_before == (0,))
    fold = tree.terminals[nd.fold_child[1]]
    assert fold.contesting == (0,) and fold.contributions == (1, 0, 0, 1, 2)
    (o,) = fold.outcomes
    # HJ wins 1 + 1 (SB) + 1 (BB's first chip); the BB's second chip comes back
    assert o.final_stacks == (3, 10, 10, 9, 9)
    call = tree.terminals[nd.jam_child[1]]
    assert call.contesting == (0, 4)
    assert outcome(call, (0, 4)).final_stacks == (3, 10, 10, 9, 9)
    lost = outcome(call, (4, 0))
    assert lost.final_stacks == (0, 10, 10, 9, 12)
    assert lost.places[0] == 5.0 and lost.prize[0] == 0.0
    assert resolve_pots((1, 10, 10, 10, 10), (1, 0, 0, 1, 2), (0,), (0,)) == (3, 10, 10, 9, 9)


# --------------------------------------------------------------------------------------------
# side pots
# --------------------------------------------------------------------------------------------


def test_three_way_side_pots_with_folded_sb():
    # CO 3, BU 7 and BB 12 all-in, SB folds his posted chip
    s = (3, 7, 10, 12)
    tree = check_tree(s, PAY)
    t = terminal_by_jammers(tree, (0, 1, 3))
    assert t.contesting == (0, 1, 3) and t.contributions == (3, 7, 1, 12)
    # main pot 3+3+1+3 = 10 {CO, BU, BB}; side pot 4+4 = 8 {BU, BB}; BB's last 5 uncalled
    expected = {
        (0, 1, 3): (10, 8, 9, 5),
        (0, 3, 1): (10, 0, 9, 13),
        (1, 0, 3): (0, 18, 9, 5),
        (1, 3, 0): (0, 18, 9, 5),
        (3, 0, 1): (0, 0, 9, 23),
        (3, 1, 0): (0, 0, 9, 23),
    }
    assert {o.order: o.final_stacks for o in t.outcomes} == expected
    assert [o.order for o in t.outcomes] == sorted(expected)
    # one bust: BU is 4th (pays 0)
    o = outcome(t, (0, 3, 1))
    assert o.places == (0, 4, 0, 0) and o.prize == (0, 0, 0, 0)
    assert o.next_stacks == (9, 13, 10)  # new BU = old SB, new SB = old BB, new BB = old CO
    # two busts with different starting stacks: BU (7) 3rd, CO (3) 4th
    o = outcome(t, (3, 0, 1))
    assert o.places == (4.0, 3.0, 0.0, 0.0) and o.prize == (0.0, 20.0, 0.0, 0.0)
    assert o.next_stacks == (9, 23) and o.new_position == (-1, -1, 0, 1)
    # BU wins both pots; the BB keeps his uncalled 5 and survives, only CO busts
    o = outcome(t, (1, 0, 3))
    assert o.places == (4.0, 0.0, 0.0, 0.0) and o.prize == (0.0,) * 4
    assert o.next_stacks == (9, 5, 18) and o.new_position == (-1, 2, 0, 1)


def test_uncalled_excess_returned():
    # heads-up: SB jams 10 into BB's 4
    tree = check_tree((10, 4), PAY)
    t = terminal_by_jammers(tree, (0, 1))
    assert outcome(t, (0, 1)).final_stacks == (14, 0)
    assert outcome(t, (1, 0)).final_stacks == (6, 8)
    # a lone jammer takes the blinds and gets his own jam back
    tree = check_tree((20, 5, 5, 5), PAY)
    (o,) = terminal_by_jammers(tree, (0,)).outcomes
    assert o.final_stacks == (23, 5, 4, 3)
    # the biggest of three all-ins gets back what nobody could call
    assert resolve_pots((3, 7, 10, 12), (3, 7, 1, 12), (0, 1, 3), (0, 1, 3)) == (10, 8, 9, 5)
    assert resolve_pots((5, 5, 30), (5, 5, 30), (0, 1, 2), (1, 0, 2)) == (0, 15, 25)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_resolve_pots_matches_literal_side_pots(data):
    n = data.draw(st.integers(2, 6))
    s = data.draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    contesting = data.draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=min(3, n), unique=True))
    c = [data.draw(st.integers(1 if p in contesting else 0, s[p])) for p in range(n)]
    order = data.draw(st.permutations(contesting))
    f = resolve_pots(s, c, contesting, order)
    assert f == literal_pots(s, c, contesting, order)
    assert sum(f) == sum(s)


def test_resolve_pots_validation():
    with pytest.raises(ValueError, match="order"):
        resolve_pots((5, 5), (5, 5), (0, 1), (0,))
    with pytest.raises(ValueError, match="contributions"):
        resolve_pots((5, 5), (6, 5), (0, 1), (0, 1))
    with pytest.raises(ValueError, match="contesting"):
        resolve_pots((5, 5), (5, 5), (0, 2), (0, 2))


# --------------------------------------------------------------------------------------------
# invariants over many states
# --------------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.integers(2, 6).flatmap(lambda n: st.lists(st.integers(1, 12), min_size=n, max_size=n)),
       st.sampled_from([PAY, (65.0, 35.0), (100.0,), (40.0, 25.0, 15.0, 12.0, 8.0), (), (50.0, 30.0, 20.0, 0.0)]))
def test_random_states_all_invariants(stacks, pay):
    check_tree(stacks, pay)


def test_all_small_states_exhaustively():
    for n in range(2, 6):
        for row in enumerate_states(9 if n < 5 else 8, n).tolist():
            check_tree(row, PAY)


# --------------------------------------------------------------------------------------------
# after the hand: places, prizes, button
# --------------------------------------------------------------------------------------------


def test_equal_starting_stacks_share_places():
    # CO and BU (5 chips each) both bust to the BB: 3rd and 4th (20 and 0) shared, 10 each
    tree = check_tree((5, 5, 10, 20), PAY)
    t = terminal_by_jammers(tree, (0, 1, 3))
    o = outcome(t, (3, 0, 1))
    assert o.final_stacks == (0, 0, 9, 31)
    assert o.places == (3.5, 3.5, 0.0, 0.0) and o.prize == (10.0, 10.0, 0.0, 0.0)
    assert next_hand((0, 0, 9, 31), (5, 5, 10, 20), PAY) == ((9, 31), (-1, -1, 0, 1), o.prize, o.places)
    # three equal busts leave the tournament winner: 2nd, 3rd, 4th shared = 50/3 each
    nh = next_hand((0, 0, 0, 20), (5, 5, 5, 5), PAY)
    assert nh[0] == () and nh[1] == (-1,) * 4
    assert nh[2] == pytest.approx((50 / 3, 50 / 3, 50 / 3, 50.0))
    assert nh[3] == (3.0, 3.0, 3.0, 1.0)


def test_two_busts_different_stacks():
    nh = next_hand((0, 27, 0, 8, 10), (4, 9, 6, 12, 14), PAY)
    # BU (6) beats HJ (4): 4th and 5th, both pay 0 with 50/30/20
    assert nh[3] == (5.0, 0.0, 4.0, 0.0, 0.0)
    nh = next_hand((0, 27, 0, 8, 10), (4, 9, 6, 12, 14), (40, 25, 15, 12, 8))
    assert nh[2] == (8.0, 0.0, 12.0, 0.0, 0.0)


def test_button_no_elimination_rotates():
    s = (3, 5, 7, 11, 19)
    nxt, pos, prize, places = next_hand(s, s, PAY)
    # old SB -> BU, old BB -> SB, old HJ -> BB, old CO acts first
    assert nxt == (5, 7, 11, 19, 3) and pos == (4, 0, 1, 2, 3)
    assert prize == (0.0,) * 5 and places == (0.0,) * 5
    assert next_hand((1, 2, 3, 4, 5, 6), (1, 2, 3, 4, 5, 6), PAY)[0] == (2, 3, 4, 5, 6, 1)
    assert next_hand((2, 3, 4), (2, 3, 4), PAY)[0] == (3, 4, 2)
    assert next_hand((4, 6), (4, 6), PAY)[:2] == ((6, 4), (1, 0))  # heads-up alternation


def test_button_with_eliminations():
    old = (10, 10, 10, 10, 10)
    # BU busts: the button passes to the old SB; old CO acts first, old HJ is the new BB
    nxt, pos, _, places = next_hand((12, 13, 0, 12, 13), old, PAY)
    assert pos == (3, 0, -1, 1, 2) and nxt == (13, 12, 13, 12) and places[2] == 5.0
    # SB busts: the button passes over him to the old BB; old BU acts first
    nxt, pos, _, _ = next_hand((12, 13, 12, 0, 13), old, PAY)
    assert pos == (2, 3, 0, -1, 1) and nxt == (12, 13, 12, 13)
    # HJ and CO bust: BU, SB, BB left; the old SB becomes the button
    nxt, pos, _, _ = next_hand((0, 0, 20, 15, 15), old, PAY)
    assert pos == (-1, -1, 2, 0, 1) and nxt == (15, 15, 20)


def test_three_to_two_transition():
    old = (5, 5, 5)
    # BU busts: the first survivor clockwise of the button's seat is the SB -> he is the new SB
    assert next_hand((0, 7, 8), old, PAY)[:2] == ((7, 8), (-1, 0, 1))
    # SB busts: the BB gets the button (= SB heads-up), the old BU is the BB
    assert next_hand((7, 0, 8), old, PAY)[:2] == ((8, 7), (1, -1, 0))
    # BB busts: the old SB is the new button / SB
    assert next_hand((7, 8, 0), old, PAY)[:2] == ((8, 7), (1, 0, -1))
    # third place pays 20 in each case
    assert next_hand((7, 8, 0), old, PAY)[2] == (0.0, 0.0, 20.0)


def test_tournament_end():
    nh = next_hand((0, 12), (6, 6), PAY)
    assert nh == ((), (-1, -1), (30.0, 50.0), (2.0, 1.0))
    nh = next_hand((0, 45, 0, 0, 0), (9, 9, 9, 9, 9), PAY)
    assert nh[2] == pytest.approx((12.5, 50.0, 12.5, 12.5, 12.5))  # 30+20 shared by four
    assert nh[3] == (3.5, 1.0, 3.5, 3.5, 3.5)


def test_next_stacks_index_in_game():
    tree = hand_tree((9, 9, 9, 9, 9), PAY)
    for t in tree.terminals:
        for o in t.outcomes:
            if o.next_stacks:
                assert sum(o.next_stacks) == 45
                assert state_index(o.next_stacks) < n_states(45, len(o.next_stacks))


# --------------------------------------------------------------------------------------------
# validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [(5,), (0, 5), (5, -1), (1, 2, 3, 4, 5, 6, 7), (5.0, 5), (True, 5), "ab"])
def test_bad_stacks_rejected(bad):
    with pytest.raises(ValueError, match="stacks"):
        hand_tree(bad, PAY)


def test_bad_payouts_and_next_hand_rejected():
    with pytest.raises(ValueError, match="payouts"):
        hand_tree((5, 5), (50, -1))
    with pytest.raises(ValueError, match="payouts"):
        hand_tree((5, 5), (float("nan"),))
    with pytest.raises(ValueError, match="stacks_after"):
        next_hand((5, 6), (5, 5), PAY)
    with pytest.raises(ValueError, match="stacks_after"):
        next_hand((10,), (5, 5), PAY)
    with pytest.raises(ValueError, match="old_stacks"):
        next_hand((5, 5), (0, 10), PAY)
    with pytest.raises(ValueError, match="n_players"):
        decision_node_count(1)


def test_structure_is_shared_between_states():
    a, b = hand_tree((9, 9, 9, 9, 9), PAY), hand_tree((2, 30, 5, 4, 4), PAY)
    assert a.nodes is b.nodes
    assert hand_tree((9, 9, 9, 1, 9), PAY).nodes is not a.nodes
