"""One exact pass over a jam/fold hand: a strategy profile's values, reaches and counterfactual values.

:func:`hand_pass` evaluates a strategy profile of one state's hand exactly under the
card model. Each player decides at most once per hand, holding one of 169 classes; a decision
node h at depth d has jammers J = (j1[, j2]) already in the pot, whose classes h_J were dealt in
that order. Two tensors over h_J (169^d entries) carry everything:

* reach r_h(h_J): product of the jammers' jam probabilities and of the fold probabilities of the
  players who folded (each averaged over *his* class given the in-pot classes at his turn: a
  folded hand goes back to the deck, so it only depends on what was in the pot then);
* value Q_h^p(h_J): player p's expected payoff ($) from h on, given h_J.

With S_h(h_J) = Σ_c P(c | h_J) σ_h(c) the chance that the actor jams:

    fold child reach  r_h (1 − S_h);     jam child reach  r_h(h_J) σ_h(c)
    Q_h^p(h_J) = (1 − S_h) Q_fold^p(h_J) + Σ_c P(c | h_J) σ_h(c) Q_jam^p(h_J, c)

and the actor k's counterfactual values, weighted by the joint deal probability (so that sums
over nodes and classes are $ of expected payoff):

    cf_fold(c) = Σ_{h_J} P(h_J, c) r_h(h_J) Q_fold^k(h_J)
    cf_jam(c)  = Σ_{h_J} P(h_J, c) r_h(h_J) Q_jam^k(h_J, c)

A jam at depth 2 makes three all-in players, so its child is always a three-way showdown; those
contractions over 169³ class triples skip classes with zero jam probability or zero reach,
which is where sparsity pays. Their kernels, and the sums they keep between passes, are in
:mod:`engine.depth2`.

The CFR+ solver that runs these passes is :mod:`engine.cfr`; :class:`Workspace` holds one thread's
scratch buffers and caches, :class:`SolverTensors` the showdown tensors in the layouts the passes read.
"""

from __future__ import annotations

import numba as nb
import numpy as np

from engine.depth2 import (NC, NPAIRS, _depth2_counterfactuals, _factored_depth2_counterfactuals, _fold_terminal,
                           _three_way_chances, pack_pairs, prefix_by_class, prefix_by_second_class)
from engine.game_tree import (KIND_J1S1, KIND_J1S2, KIND_J2, KIND_J2S1, KIND_NONE, KIND_S2,
                              CompiledHand)
from engine.showdown import ShowdownTensors

SWAP_FIRST_TWO = np.array([2, 3, 0, 1, 5, 4])
"""Outcome index of order o (lexicographic permutations of the deal positions, best first) when
the first two dealt hands swap places: m3c[b, a, c, o] = m3c[a, b, c, SWAP_FIRST_TWO[o]]."""


class SolverTensors:
    """Showdown tensors laid out for the kernels (order index last, contiguous)."""

    def __init__(self, t: ShowdownTensors):
        self.p1 = np.ascontiguousarray(t.p1)
        self.joint2 = np.ascontiguousarray(t.joint2)
        self.cond2 = np.ascontiguousarray(t.cond2)
        self.win2 = np.ascontiguousarray(t.win2)
        self.wr1 = np.ascontiguousarray(t.win2_vs_random)
        self.or3r = np.ascontiguousarray(np.moveaxis(t.order3_vs_random, 0, -1))  # [a, b, o]
        self.or3rr = np.ascontiguousarray(np.moveaxis(t.order3_vs_two_random, 0, -1))  # [a, o]
        self.joint3 = np.ascontiguousarray(t.joint3)
        self.three_way = t.three_way
        if not self.three_way:  # heads-up hands only: empty three-way tensors, nothing to read
            self.m3j = self.m3jq = np.zeros((0, 0, 0, 6))
            self.m3p = self.m3q = np.zeros((0, 0, 6))
            self.class_order = np.arange(NC, dtype=np.int64)
            return
        order3 = np.moveaxis(t.order3, 0, -1)  # [a, b, c, o]
        m3c = np.ascontiguousarray(t.cond3[..., None] * order3)  # P(c | a, b) P(o | a, b, c)
        self.m3j = np.ascontiguousarray(t.joint3[..., None] * order3)  # P(a, b, c) P(o | a, b, c)
        if not (_swap_symmetric(m3c, SWAP_FIRST_TWO) and _swap_symmetric(self.m3j, SWAP_FIRST_TWO)):
            raise ValueError("three-way showdown tensors must be symmetric under swapping the first two hands "
                             "(build them with engine.showdown.showdown_tensors)")
        self.m3p = pack_pairs(m3c)  # [c, pair(a <= b), o], 116 MB
        del m3c
        # classes by their chance to win a three-way all-in against two random hands (orders 0
        # and 1 put the first hand first): ranges are mostly a top set of this order, so the
        # jam chances of a range are read from running sums in it (prefix_by_class), 116 MB
        self.class_order = np.argsort(-(self.or3rr[:, 0] + self.or3rr[:, 1]), kind="stable").astype(np.int64)
        self.m3q = prefix_by_class(self.m3p, self.class_order)
        self.m3jq = prefix_by_second_class(self.m3j, self.class_order)  # [i, a, c, o], 232 MB

    def args(self) -> tuple:
        return (self.p1, self.joint2, self.cond2, self.win2, self.wr1, self.or3r, self.or3rr,
                self.joint3, self.m3p, self.m3q, self.class_order, self.m3j, self.m3jq)


@nb.njit(cache=True)
def _swap_symmetric(m3c, swap):
    """m3c[b, a, c, o] == m3c[a, b, c, swap[o]] everywhere (what :func:`_three_way_chances` relies on)."""
    for a in range(NC):
        for b in range(a + 1, NC):
            for c in range(NC):
                for o in range(6):
                    if m3c[b, a, c, o] != m3c[a, b, c, swap[o]]:
                        return False
    return True


@nb.njit(cache=True)
def _size(d):
    return 1 if d == 0 else (NC if d == 1 else NC * NC)


@nb.njit(cache=True, nogil=True)
def _support(row, out):
    """Indices of the positive entries of ``row`` written to ``out``; returns how many."""
    k = 0
    for c in range(NC):
        if row[c] > 0.0:
            out[k] = c
            k += 1
    return k


@nb.njit(cache=True)
def layout(node_depth, term_depth):
    """Offsets of each node's and each terminal's tensor in the flat work buffers."""
    K, T = len(node_depth), len(term_depth)
    node_off = np.zeros(K + 1, np.int64)
    for h in range(K):
        node_off[h + 1] = node_off[h] + _size(node_depth[h])
    term_off = np.zeros(T + 1, np.int64)
    for t in range(T):
        d = term_depth[t]
        term_off[t + 1] = term_off[t] + (_size(d) if d <= 2 else 0)
    return node_off, term_off


@nb.njit(cache=True)
def _terminal_values(t, kind, d, U, n, wr1, win2, or3r, or3rr, Tbuf, term_off):
    """Tbuf[p, term_off[t] + i] = Q^p of terminal t given its jammers' classes (depth ≤ 2)."""
    off = term_off[t]
    for p in range(n):
        if kind == KIND_NONE:
            for i in range(_size(d)):
                Tbuf[p, off + i] = U[t, 0, p]
        elif kind == KIND_S2:
            Tbuf[p, off] = 0.5 * U[t, 0, p] + 0.5 * U[t, 1, p]
        elif kind == KIND_J1S1:
            for a in range(NC):
                Tbuf[p, off + a] = wr1[a] * U[t, 0, p] + (1.0 - wr1[a]) * U[t, 1, p]
        elif kind == KIND_J1S2:
            for a in range(NC):
                s = 0.0
                for o in range(6):
                    s += or3rr[a, o] * U[t, o, p]
                Tbuf[p, off + a] = s
        elif kind == KIND_J2:
            for a in range(NC):
                for b in range(NC):
                    w = win2[a, b]
                    Tbuf[p, off + a * NC + b] = w * U[t, 0, p] + (1.0 - w) * U[t, 1, p]
        elif kind == KIND_J2S1:
            for a in range(NC):
                for b in range(NC):
                    s = 0.0
                    for o in range(6):
                        s += or3r[a, b, o] * U[t, o, p]
                    Tbuf[p, off + a * NC + b] = s


@nb.njit(cache=True)
def _terminal_order_probs(t, kind, d, rt, off, p1, joint2, win2, wr1, or3r, or3rr, out):
    """out[t, o] = probability of reaching terminal t and its showdown ending in order o."""
    if kind == KIND_NONE or kind == KIND_S2:
        tot = 0.0
        if d == 0:
            tot = rt[off]
        elif d == 1:
            for a in range(NC):
                tot += p1[a] * rt[off + a]
        else:
            for a in range(NC):
                for b in range(NC):
                    tot += joint2[a, b] * rt[off + a * NC + b]
        if kind == KIND_NONE:
            out[t, 0] += tot
        else:
            out[t, 0] += 0.5 * tot
            out[t, 1] += 0.5 * tot
    elif kind == KIND_J1S1:
        for a in range(NC):
            w = p1[a] * rt[off + a]
            out[t, 0] += w * wr1[a]
            out[t, 1] += w * (1.0 - wr1[a])
    elif kind == KIND_J1S2:
        for a in range(NC):
            w = p1[a] * rt[off + a]
            for o in range(6):
                out[t, o] += w * or3rr[a, o]
    elif kind == KIND_J2:
        for a in range(NC):
            for b in range(NC):
                w = joint2[a, b] * rt[off + a * NC + b]
                out[t, 0] += w * win2[a, b]
                out[t, 1] += w * (1.0 - win2[a, b])
    elif kind == KIND_J2S1:
        for a in range(NC):
            for b in range(NC):
                w = joint2[a, b] * rt[off + a * NC + b]
                if w != 0.0:
                    for o in range(6):
                        out[t, o] += w * or3r[a, b, o]


@nb.njit(cache=True, nogil=True, inline="always")
def _depth2_values(Q, fold_values, S, Gbuf, U, t, p, qoff, foff, count):
    """Q[p, qoff + i] for i < count at a depth-2 node: fold (1 − S) or see the three-way showdown t.

    A whole row (count > 1) goes through views starting at its offsets, so the loop indexes from 0
    and compiles without negative-index checks (see :func:`hand_pass`)."""
    u0, u1, u2, u3, u4, u5 = U[t, 0, p], U[t, 1, p], U[t, 2, p], U[t, 3, p], U[t, 4, p], U[t, 5, p]
    if count == 1:
        g = qoff * 6
        Q[p, qoff] = ((1.0 - S[qoff]) * fold_values[p, foff] + Gbuf[g] * u0 + Gbuf[g + 1] * u1
                      + Gbuf[g + 2] * u2 + Gbuf[g + 3] * u3 + Gbuf[g + 4] * u4 + Gbuf[g + 5] * u5)
        return
    Qv = Q[p, qoff:qoff + count]
    Fv = fold_values[p, foff:foff + count]
    Sv = S[qoff:qoff + count]
    Gv = Gbuf[qoff * 6:(qoff + count) * 6]
    for i in range(count):
        g = i * 6
        Qv[i] = ((1.0 - Sv[i]) * Fv[i] + Gv[g] * u0 + Gv[g + 1] * u1 + Gv[g + 2] * u2 + Gv[g + 3] * u3
                 + Gv[g + 4] * u4 + Gv[g + 5] * u5)


@nb.njit(cache=True, nogil=True)
def hand_pass(n, node_actor, node_depth, node_fold, node_jam, node_creator, root, term_kind, term_depth, U, sigma,
              p1, joint2, cond2, win2, wr1, or3r, or3rr, joint3, m3p, m3q, class_order, m3j, m3jq,
              node_off, term_off, R, S, Gbuf, Q, Tbuf, RT, cf_fold, cf_jam, root_values,
              J3, J3_ready, Gsig, G_ready, Gvalid, pairs, pair_sums, W, C, C_ready, P, P_valid, XY,
              MW, MJ, MF, M_ready, MXY):
    """One exact evaluation of the profile ``sigma`` (K × 169 jam probabilities).

    Fills cf_fold / cf_jam (K × 169, joint-probability weighted $) and root_values (n, $). R, S,
    Q, Tbuf, RT are work buffers sized by :func:`layout`; the reaches R and RT and the jam chances
    Gbuf are left as computed, so :func:`outcome_probs` can read the profile's terminal outcome
    probabilities from them afterwards (CFR+ iterations need them only for the certified iterate).

    J3[node_off[h] + a·169 + b, c] caches, for a depth-2 node h, the actor's three-way showdown
    value Σ_o P(a, b, c) P(o | a, b, c) U[o, actor] ($ × deal probability); J3_ready marks the
    rows filled, and its last entry the terminal values in Tbuf. They depend only on U, so the
    caller clears J3_ready when U or the hand changes and every later pass with the same U reads
    1 number per class instead of 6 and skips the terminal values.

    Gbuf holds, for every depth-2 node h and the (a, b) the pass reads (a or b in Gvalid[h]), the
    actor's jam chance split by showdown order, G[o] = Σ_c σ_h(c) P(c | a, b) P(o | a, b, c), for
    the strategy Gsig[h] it was computed with (G_ready[h] = 1). It depends on the hand, not on U,
    so consecutive passes of one hand update it by the classes whose σ_h changed (see
    :func:`_three_way_chances`); the caller clears G_ready when the hand changes. ``pairs`` and
    ``pair_sums`` are its work buffers (4 × NPAIRS ints, NPAIRS × 6), kept by the caller so a pass
    allocates nothing large.

    C, W and C_ready keep the depth-2 counterfactual sums between passes with the same U (see
    :func:`_depth2_counterfactuals`); the caller clears C_ready with J3_ready. Depth-2 nodes whose
    reach factors keep them by rows instead, in P, P_valid and XY (see
    :func:`_factored_depth2_counterfactuals`). MW, MJ, MF, M_ready and MXY are the state's own
    depth-2 sums in outcome space (:func:`keep_depth2_sums`), read when C_ready is clear; M_ready
    all 0 when it keeps none.
    """
    K = len(node_actor)
    T = len(term_kind)
    # terminal values for depth ≤ 2: they depend on U only, so they are kept while U is (J3_ready[-1])
    if J3_ready[-1] == 0:
        for t in range(T):
            if term_depth[t] <= 2:
                _terminal_values(t, term_kind[t], term_depth[t], U, n, wr1, win2, or3r, or3rr, Tbuf, term_off)
        J3_ready[-1] = 1
    if root < 0:
        t = -1 - root
        for p in range(n):
            root_values[p] = Tbuf[p, term_off[t]]
        return
    # ---------------- forward: reach and jam chance
    # The hot loops index views that start at a node's offset, and class lists are unsigned
    # (supp): numba then emits no negative-index wraparound, and the row loops vectorise.
    R[node_off[root]] = 1.0
    supp = np.empty(NC, np.uint64)
    cols = np.empty(NC, np.int64)
    changed = np.empty(NC, np.uint64)
    delta = np.empty(NC)
    need = np.empty(NC, np.bool_)
    for h in range(K):
        d = node_depth[h]
        off = node_off[h]
        sig = sigma[h]
        ns = _support(sig, supp)
        size = _size(d)
        Sv = S[off:off + size]
        if d == 0:
            s = 0.0
            for c in range(NC):
                s += p1[c] * sig[c]
            Sv[0] = s
        elif d == 1:
            for a in range(NC):
                row = cond2[a]
                s = 0.0
                for i in range(ns):
                    c = supp[i]
                    s += row[c] * sig[c]
                Sv[a] = s
        else:
            cr = node_creator[h]
            Rcr = R[node_off[cr]:node_off[cr] + NC]
            scr = sigma[cr]
            for a in range(NC):
                need[a] = Rcr[a] > 0.0 or scr[a] > 0.0
            _three_way_chances(sig, ns, supp, m3p, m3q, class_order, Gbuf, off, Gsig[h], G_ready, h, changed,
                               delta, need, Gvalid[h], pairs, pair_sums)
            Gv = Gbuf[off * 6:(off + size) * 6]
            for i in range(size):
                g = i * 6
                Sv[i] = Gv[g] + Gv[g + 1] + Gv[g + 2] + Gv[g + 3] + Gv[g + 4] + Gv[g + 5]
        Rv = R[off:off + size]
        f = node_fold[h]
        if f >= 0:
            dst = R[node_off[f]:node_off[f] + size]
        else:
            dst = RT[term_off[-1 - f]:term_off[-1 - f] + size]
        for i in range(size):
            dst[i] = Rv[i] * (1.0 - Sv[i])
        j = node_jam[h]
        if d < 2:
            if j >= 0:
                dst = R[node_off[j]:node_off[j] + size * NC]
            else:
                dst = RT[term_off[-1 - j]:term_off[-1 - j] + size * NC]
            for i in range(size):
                r = Rv[i]
                base = i * NC
                for c in range(NC):
                    dst[base + c] = r * sig[c]
    # ---------------- backward: values and counterfactual values
    for h in range(K - 1, -1, -1):
        d = node_depth[h]
        k = node_actor[h]
        off = node_off[h]
        size = _size(d)
        f = node_fold[h]
        j = node_jam[h]
        for c in range(NC):
            cf_fold[h, c] = 0.0
            cf_jam[h, c] = 0.0
        fold_values = Q if f >= 0 else Tbuf  # the fold child's values: a node's, or a terminal's
        foff = node_off[f] if f >= 0 else term_off[-1 - f]
        if d < 2:
            sig = sigma[h]
            ns = _support(sig, supp)
            jam_src = Q if j >= 0 else Tbuf
            jb = node_off[j] if j >= 0 else term_off[-1 - j]
            Sv = S[off:off + size]
            for p in range(n):
                Fp = fold_values[p, foff:foff + size]
                Jp = jam_src[p, jb:jb + size * NC]
                Qp = Q[p, off:off + size]
                for i in range(size):
                    acc = (1.0 - Sv[i]) * Fp[i]
                    w = p1 if d == 0 else cond2[i]
                    base = np.uint64(i * NC)
                    for ii in range(ns):
                        c = supp[ii]
                        acc += w[c] * sig[c] * Jp[base + c]
                    Qp[i] = acc
            # counterfactual values of the actor
            Rv = R[off:off + size]
            Fk = fold_values[k, foff:foff + size]
            cff = cf_fold[h]
            cfj = cf_jam[h]
            for i in range(size):
                r = Rv[i]
                if r == 0.0:
                    continue
                qf = Fk[i]
                Jk = jam_src[k, jb + i * NC:jb + (i + 1) * NC]
                wrow = p1 if d == 0 else joint2[i]
                for c in range(NC):
                    w = wrow[c] * r
                    if w == 0.0:
                        continue
                    cff[c] += w * qf
                    cfj[c] += w * Jk[c]
        else:
            # depth 2: the jam child is a three-way showdown (terminal -1 - j, kind J3). The pass
            # reads this node's values at (a, b) for every player where the creator's actor jams b,
            # elsewhere only his own (for his counterfactual jam value): the others are skipped.
            tj = -1 - j
            cr = node_creator[h]
            k_cr = node_actor[cr]
            ncol = _support(sigma[cr], cols)
            for a in range(NC):
                row_a = a * NC
                creator_reached = R[node_off[cr] + a] > 0.0
                if creator_reached:  # the creator's actor's value at every b
                    _depth2_values(Q, fold_values, S, Gbuf, U, tj, k_cr, off + row_a, foff + row_a, NC)
                for bi in range(ncol):  # every player's value where the creator's actor jams b
                    b = cols[bi]
                    i = row_a + b
                    for p in range(n):
                        if p != k_cr or not creator_reached:
                            _depth2_values(Q, fold_values, S, Gbuf, U, tj, p, off + i, foff + i, 1)
            tf = _fold_terminal(f, term_kind)
            if tf >= 0 and node_jam[cr] == h:  # r(a, b) = x(a) y(b) and q(a, b) depends on U only
                cro = node_off[cr]
                _factored_depth2_counterfactuals(h, k, off, foff, Tbuf, R[cro:cro + NC], sigma[cr], joint3, m3j, m3jq,
                                                 class_order, U, tj, tf, term_kind, J3, J3_ready, C, C_ready, MJ, MF,
                                                 M_ready, MXY, P, P_valid, XY, cf_fold, cf_jam)
            else:
                _depth2_counterfactuals(h, k, off, foff, fold_values, R, joint3, m3j, U, tj, tf, term_kind, J3,
                                        J3_ready, W, C, C_ready, MW, MJ, MF, M_ready, cf_fold, cf_jam)
    for p in range(n):
        root_values[p] = Q[p, node_off[root]]


@nb.njit(cache=True, nogil=True)
def decision_reach(node_depth, p1, joint2, joint3, node_off, R, out):
    """out[h, c] = P(the hand reaches node h and its actor holds class c) for the profile
    :func:`hand_pass` last evaluated in these buffers: the weight of class c in h's counterfactual
    values, Σ_{h_J} P(h_J, c) r_h(h_J). Sums over the pairs with positive reach at depth 2.
    """
    for h in range(len(node_depth)):
        d = node_depth[h]
        off = node_off[h]
        for c in range(NC):
            out[h, c] = 0.0
        if d == 0:
            for c in range(NC):
                out[h, c] = p1[c] * R[off]
        elif d == 1:
            for a in range(NC):
                r = R[off + a]
                if r != 0.0:
                    for c in range(NC):
                        out[h, c] += r * joint2[a, c]
        else:
            for a in range(NC):
                for b in range(NC):
                    r = R[off + a * NC + b]
                    if r != 0.0:
                        for c in range(NC):
                            out[h, c] += r * joint3[a, b, c]


@nb.njit(cache=True, nogil=True)
def outcome_probs(node_depth, node_jam, root, term_kind, term_depth, p1, joint2, win2, wr1, or3r, or3rr,
                  node_off, term_off, R, RT, Gbuf, order_probs):
    """order_probs[t, o] = P(the hand ends at terminal t with showdown order o) for the profile
    :func:`hand_pass` last evaluated in these buffers (its reaches R, RT and jam chances Gbuf).

    A depth-2 node's jam child is a three-way showdown: Σ_c r σ(c) P(a, b, c) P(o | a, b, c) =
    r P(a, b) G[a, b, o], read from the jam chances the pass kept (valid wherever the reach is
    positive), so this costs one read of the node's reach and no 169³ work.
    """
    order_probs[:, :] = 0.0
    if root < 0:
        t = -1 - root
        if term_kind[t] == KIND_S2:
            order_probs[t, 0] = 0.5
            order_probs[t, 1] = 0.5
        elif term_kind[t] == KIND_NONE:
            order_probs[t, 0] = 1.0
        return
    for t in range(len(term_kind)):
        if term_depth[t] <= 2:
            _terminal_order_probs(t, term_kind[t], term_depth[t], RT, term_off[t], p1, joint2, win2, wr1,
                                  or3r, or3rr, order_probs)
    for h in range(len(node_depth)):
        if node_depth[h] != 2:
            continue
        tj = -1 - node_jam[h]
        off = node_off[h]
        for a in range(NC):
            for b in range(NC):
                r = R[off + a * NC + b]
                if r == 0.0:
                    continue
                rj = r * joint2[a, b]
                g = (off + a * NC + b) * 6
                for o in range(6):
                    order_probs[tj, o] += rj * Gbuf[g + o]


class Workspace:
    """Scratch buffers for :func:`hand_pass`, sized for any hand of up to ``n`` players.

    One per thread; the per-state solver keeps only its regrets and average strategy. The
    workspace also holds the cache of three-way showdown values (``J3``) of the hand and
    utilities it last evaluated; :meth:`bind` invalidates it when either changes.
    """

    def __init__(self, n: int, max_nodes: int = 64, max_terminals: int = 96):
        # depth-2 nodes/terminals dominate: at most C(n, 2)·n of each, 169² entries apiece
        self._allocate(n, max_nodes * NC * NC, max_terminals * NC * NC, max_nodes, max_terminals)

    def _allocate(self, n: int, node_size: int, term_size: int, max_nodes: int, max_terminals: int) -> None:
        self.n = n
        self.R = np.zeros(node_size)
        self.S = np.zeros(node_size)
        self.G = np.zeros(node_size * 6)
        self.Q = np.zeros((n, node_size))
        self.Tbuf = np.zeros((n, term_size))
        self.RT = np.zeros(term_size)
        self.cf_fold = np.zeros((max_nodes, NC))
        self.cf_jam = np.zeros((max_nodes, NC))
        self.root_values = np.zeros(n)
        self.order_probs = np.zeros((max_terminals, 6))
        self.J3 = np.zeros((0, NC))
        self.J3_ready = np.zeros(node_size, np.uint8)
        self.Gsig = np.zeros((max_nodes, NC))
        self.G_ready = np.zeros(max_nodes, np.uint8)
        self.Gvalid = np.zeros((max_nodes, NC), np.bool_)
        self.pairs = np.zeros((4, NPAIRS), np.int64)  # work buffers of _three_way_chances (1.1 MB together)
        self.pair_sums = np.zeros((NPAIRS, 6))
        self.W = np.zeros((2, node_size))  # depth-2 counterfactual sums, their weights (_depth2_counterfactuals)
        self.C = np.zeros((2, max_nodes, NC))
        self.C_ready = np.zeros(max_nodes, np.uint8)
        self.P = np.zeros((2, max_nodes, NC, NC))  # their rows where the reach factors (_factored_depth2_counterfactuals)
        self.P_valid = np.zeros((max_nodes, NC), np.uint8)
        self.XY = np.zeros((max_nodes, 2, NC))
        self.no_depth2_sums = (np.zeros(1), np.zeros((1, NC, 6)), np.zeros((1, 6, NC)), np.zeros(max_nodes, np.uint8),
                               np.zeros((1, 2, NC)))
        self._bound: tuple | None = None

    @classmethod
    def for_hand(cls, hand: CompiledHand) -> "Workspace":
        node_off, term_off = layout(hand.node_depth, hand.term_depth)
        ws = cls.__new__(cls)
        K, T = len(hand.node_actor), len(hand.term_kind)
        ws._allocate(hand.n_players, int(node_off[-1]) + 1, int(term_off[-1]) + 1, max(K, 1), max(T, 1))
        return ws

    def forget(self) -> None:
        """Drop every cache, so the next pass computes as if this workspace were new (the same
        results, to the last bit, whichever hands it evaluated before)."""
        self._bound = None

    def bind(self, hand: CompiledHand, U: np.ndarray, rows: int) -> bool:
        """Make the J3 cache valid for (hand, U): cleared unless both are the ones last bound.
        True when ``hand`` is not the one last bound (its jam chances were dropped too).

        The cache grows to ``rows`` (the hand's node tensor size) on first use: 169 float64 per
        row, about 39 MB per depth-2 node.
        """
        same_hand = self._bound is not None and self._bound[0] is hand
        if same_hand and np.array_equal(self._bound[1], U, equal_nan=True):
            return False
        if not same_hand:
            self.G_ready[:] = 0
        if self.J3.shape[0] < rows:
            self.J3 = np.empty((rows, NC))
        if self.J3_ready.shape[0] < rows + 1:
            self.J3_ready = np.zeros(rows + 1, np.uint8)  # the last entry flags the terminal values
        self.J3_ready[:] = 0
        self.C_ready[:] = 0  # the depth-2 counterfactual sums use J3
        self._bound = (hand, U.copy())
        return not same_hand
