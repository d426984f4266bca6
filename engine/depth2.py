"""The depth-2 part of a pass (see :mod:`engine.hand_pass`): nodes whose actor faces two all-in jammers.

A jam there makes a three-way showdown, so these nodes carry the passes' 169³ contractions, and
most of their time. Two kinds of sums are kept between passes and brought up to date by what
changed instead of summed again:

* the jam chances G[a, b, o] = Σ_c σ(c) P(c | a, b) P(o | a, b, c) of the node's actor, by the
  classes whose strategy changed (:func:`_three_way_chances`, from the packed tensor of
  :func:`pack_pairs`); summed anew, from running sums over a fixed class order and the few
  classes where the range is not a top set of it (:func:`prefix_by_class`);
* the actor's counterfactual values, by the jammer pairs whose reach changed
  (:func:`_depth2_counterfactuals`), or by rows of the first jammer's class where the reach
  factors (:func:`_factored_depth2_counterfactuals`); and, per state between outer iterations,
  in outcome space so that new utilities need no showdown reads (:func:`keep_depth2_sums`).
"""

from __future__ import annotations

import numba as nb
import numpy as np

from engine.cards import N_CLASSES as NC
from engine.game_tree import KIND_J2, KIND_J2S1

NPAIRS = NC * (NC + 1) // 2
"""Unordered jammer pairs a ≤ b: the columns of the packed three-way tensor (:func:`pack_pairs`)."""


def pack_pairs(m3c: np.ndarray) -> np.ndarray:
    """The three-way chance tensor m3c[a, b, c, o] for pairs a <= b only, class-major: out[c, pair(a, b), o].

    The depth-2 jam chances sum over the third class c for many pairs at once; with c outermost,
    one class's contribution to every pair is one contiguous 690 KB block, read front to back,
    instead of 48 bytes scattered at 8 KB strides. Pairs b < a follow by :data:`engine.hand_pass.SWAP_FIRST_TWO`.
    """
    out = np.empty((NC, NPAIRS, 6))
    p = 0
    for a in range(NC):
        n = NC - a
        out[:, p:p + n, :] = m3c[a, a:].transpose(1, 0, 2)
        p += n
    return out


PAIR_BLOCK = 256
"""Pairs summed together by :func:`_sum_pairs`: their 6-order sums (12 KB) stay in L1 across classes."""

CLASS_GROUP = 8
"""Classes added to a pair's sums while they sit in registers (:func:`_sum_pairs`)."""


@nb.njit(cache=True, nogil=True)
def _sum_pairs(m3p, pairs, count, classes, weights, nw, acc):
    """acc[j, o] = Σ_i weights[i] · m3p[classes[i], pairs[j], o] for j < count.

    Class-major in blocks of pairs: each class streams its stretch of the packed tensor once per
    block (pairs are listed in increasing order) while the block's sums stay in L1, and a pair's
    sums stay in registers over a group of classes. Each pair's sum is formed from 0 over i in
    the given order, exactly as a per-pair loop would.
    """
    for j0 in range(0, count, PAIR_BLOCK):
        j1 = min(j0 + PAIR_BLOCK, count)
        for j in range(j0, j1):
            for o in range(6):
                acc[j, o] = 0.0
        for i0 in range(0, nw, CLASS_GROUP):
            i1 = min(i0 + CLASS_GROUP, nw)
            for j in range(j0, j1):
                q = np.uint64(pairs[j])  # unsigned: no negative-index wraparound in the inner loop
                g0, g1, g2, g3, g4, g5 = acc[j, 0], acc[j, 1], acc[j, 2], acc[j, 3], acc[j, 4], acc[j, 5]
                for i in range(i0, i1):
                    c = np.uint64(classes[i])
                    w = weights[i]
                    g0 += w * m3p[c, q, 0]
                    g1 += w * m3p[c, q, 1]
                    g2 += w * m3p[c, q, 2]
                    g3 += w * m3p[c, q, 3]
                    g4 += w * m3p[c, q, 4]
                    g5 += w * m3p[c, q, 5]
                acc[j, 0], acc[j, 1], acc[j, 2], acc[j, 3], acc[j, 4], acc[j, 5] = g0, g1, g2, g3, g4, g5


def prefix_by_second_class(m3j: np.ndarray, order: np.ndarray) -> np.ndarray:
    """out[i, a] = Σ_{j ≤ i} m3j[a, order[j]]: the running sums over the second jammer's class that
    :func:`_factored_depth2_counterfactuals` reads for a range of the second jammer (232 MB; summed
    in the reordered copy, so building it holds no second one).

    C-contiguous with the rank i first, so that a row's read m3jq[k − 1, a] is one contiguous
    block and the blocks of one rank lie side by side; and so that the kernels see the same array
    type as the heads-up solvers' empty tensors (one compiled signature of the pass, not two)."""
    out = np.empty((len(order), m3j.shape[0], *m3j.shape[2:]), dtype=m3j.dtype)
    for i, b in enumerate(order):
        out[i] = m3j[:, b]
    return np.cumsum(out, axis=0, out=out)


def prefix_by_class(m3p: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Running sums of the packed tensor over the classes in ``order``: out[i] = Σ_{j ≤ i} m3p[order[j]].

    Ranges are mostly the strongest classes by some measure of strength (:data:`engine.hand_pass.SolverTensors`
    uses the chance to win a three-way all-in against two random hands): a depth-2 strategy
    σ = 1 on the first k classes of that order and 0 elsewhere, but for a few deviating or mixed
    classes, has jam chances out[k − 1] + Σ_dev δ(c) m3p[c] — 1 + (deviations) contiguous 690 KB
    blocks instead of one per class of its support (:func:`_three_way_chances`). 116 MB.
    """
    out = m3p[order]
    return np.cumsum(out, axis=0, out=out)


@nb.njit(cache=True, nogil=True)
def threshold_split(sig, order, classes, weights):
    """σ written as the first k classes of ``order`` plus deviations: returns (k, nd) with
    σ = 1[rank < k] + Σ_{i < nd} weights[i] · 1[c = classes[i]], k chosen for the fewest deviations
    (classes in the first k with σ < 1, weight σ − 1; classes after them with σ > 0, weight σ)."""
    below = 0  # deviations among the first k (σ != 1)
    above = 0  # deviations after them (σ != 0)
    for i in range(NC):
        if sig[order[i]] != 0.0:
            above += 1
    best_k, best = 0, above
    for i in range(NC):
        s = sig[order[i]]
        if s != 1.0:
            below += 1
        if s != 0.0:
            above -= 1
        if below + above < best:
            best_k, best = i + 1, below + above
    nd = 0
    for i in range(NC):
        c = order[i]
        w = sig[c] - 1.0 if i < best_k else sig[c]
        if w != 0.0:
            classes[nd] = c
            weights[nd] = w
            nd += 1
    return best_k, nd


@nb.njit(cache=True, nogil=True)
def _add_prefix(m3q, k, pairs, count, acc):
    """acc[j] += m3q[k − 1, pairs[j]]: the first k classes' share (see :func:`prefix_by_class`)."""
    if k == 0:
        return
    for j in range(count):
        q = pairs[j]
        for o in range(6):
            acc[j, o] += m3q[k - 1, q, o]


@nb.njit(cache=True, nogil=True)
def _store_pairs(Gbuf, off, pa, pb, count, acc, add):
    """G[a, b] = acc (plus the old G when ``add``) for the listed pairs, and the mirrored G[b, a]."""
    for j in range(count):
        a = pa[j]
        b = pb[j]
        g = (off + a * NC + b) * 6
        g0, g1, g2, g3, g4, g5 = acc[j, 0], acc[j, 1], acc[j, 2], acc[j, 3], acc[j, 4], acc[j, 5]
        if add:
            g0 += Gbuf[g]
            g1 += Gbuf[g + 1]
            g2 += Gbuf[g + 2]
            g3 += Gbuf[g + 3]
            g4 += Gbuf[g + 4]
            g5 += Gbuf[g + 5]
        Gbuf[g] = g0
        Gbuf[g + 1] = g1
        Gbuf[g + 2] = g2
        Gbuf[g + 3] = g3
        Gbuf[g + 4] = g4
        Gbuf[g + 5] = g5
        if b != a:  # the mirrored pair: orders permuted (SWAP_FIRST_TWO)
            g = (off + b * NC + a) * 6
            Gbuf[g + 2] = g0
            Gbuf[g + 3] = g1
            Gbuf[g] = g2
            Gbuf[g + 1] = g3
            Gbuf[g + 5] = g4
            Gbuf[g + 4] = g5


@nb.njit(cache=True, nogil=True)
def _changed_classes(sig, gsig, changed, delta):
    """The classes where σ differs from the σ the jam chances were summed with: their number,
    the classes in ``changed`` and the differences in ``delta``."""
    nd = 0
    for c in range(NC):
        dv = sig[c] - gsig[c]
        if dv != 0.0:
            changed[nd] = c
            delta[nd] = dv
            nd += 1
    return nd


@nb.njit(cache=True, nogil=True)
def _three_way_chances(sig, ns, supp, m3p, m3q, order, Gbuf, off, gsig, G_ready, h, changed, delta, need, valid,
                       pairs, acc):
    """Bring G of the depth-2 node h up to date with ``sig`` on the jammer pairs the pass reads.

    G[a, b, o] = Σ_c σ(c) P(c | a, b) P(o | a, b, c). The pass reads G at (a, b) only when the
    first jammer's class a still has reach at the creator node or the creator's actor jams b with
    some probability (the rows :func:`engine.hand_pass.hand_pass` visits backward; elsewhere the reach is 0); by
    symmetry, the pair {a, b} is needed when a or b is in ``need`` (that union of classes). Deep
    stacks jam narrow ranges, so often most pairs are not needed.

    A pair kept up to date last time (a or b in ``valid``) is updated by the change of σ,
    G += Σ_{c changed} Δσ(c) P(c | a, b) P(o | a, b, c): CFR+ iterates change a few classes per
    node after the first iterations. Other needed pairs, and all of them the first time or when
    the change touches more classes than the new support (or than a sum from the running sums
    reads blocks), are summed from scratch over the support (169² · |support| · 6 multiply-adds
    at most), or, when σ is nearly a threshold in the class ``order``, from the running sums m3q
    (:func:`prefix_by_class`) and its few deviations.

    Only pairs a <= b are summed, from the packed class-major tensor m3p[c, pair(a, b), o]
    (:func:`pack_pairs`): swapping the two jammers permutes the showdown orders,
    m3c[b, a, c, o] = m3c[a, b, c, SWAP_FIRST_TWO[o]] (the tensors are built from one row per
    class multiset), so G[b, a] is G[a, b] permuted — the same sums, to the last bit, for half
    the reads. ``pairs`` (4 × NPAIRS ints: the pairs updated, the pairs summed anew, their a and
    b) and ``acc`` (NPAIRS × 6) are work buffers.
    """
    nd = 0
    incremental = G_ready[h] == 1
    if incremental:
        nd = _changed_classes(sig, gsig, changed, delta)
        if nd > ns:
            incremental = False
        elif nd > 2:
            # a sum from scratch over the running sums reads 1 + (deviations) blocks per pair,
            # the update one per changed class: take whichever reads fewer
            k, nk = threshold_split(sig, order, changed, delta)
            if k > 0 and nk + 1 < nd:
                incremental = False
            else:  # the split used the same buffers: list the changes again
                nd = _changed_classes(sig, gsig, changed, delta)
        elif nd == 0:
            fresh = False  # σ unchanged: only pairs that became needed are summed
            for c in range(NC):
                if need[c] and not valid[c]:
                    fresh = True
                    break
            if not fresh:
                return
    # the needed pairs, split into those updated by the change and those summed from scratch
    n_inc = np.int64(0)  # not a literal 0: numba would compile the helpers once more for Literal[int](0)
    n_new = np.int64(0)
    q = 0
    for a in range(NC):
        for b in range(a, NC):
            if need[a] or need[b]:
                if incremental and (valid[a] or valid[b]):
                    if nd > 0:
                        pairs[0, n_inc] = q
                        n_inc += 1
                else:
                    pairs[1, n_new] = q
                    n_new += 1
            q += 1
    if n_inc > 0:
        _sum_pairs(m3p, pairs[0], n_inc, changed, delta, nd, acc)
        _fill_ab(pairs[0], n_inc, pairs[2], pairs[3])
        _store_pairs(Gbuf, off, pairs[2], pairs[3], n_inc, acc, True)
    if n_new > 0:
        k, nk = threshold_split(sig, order, changed, delta)
        if k > 0 and nk + 1 < ns:  # the first k classes' running sum and the deviations
            _sum_pairs(m3p, pairs[1], n_new, changed, delta, nk, acc)
            _add_prefix(m3q, k, pairs[1], n_new, acc)
        else:
            weights = np.empty(ns)
            for i in range(ns):
                weights[i] = sig[supp[i]]
            _sum_pairs(m3p, pairs[1], n_new, supp, weights, ns, acc)
        _fill_ab(pairs[1], n_new, pairs[2], pairs[3])
        _store_pairs(Gbuf, off, pairs[2], pairs[3], n_new, acc, False)
    for c in range(NC):
        gsig[c] = sig[c]
        valid[c] = need[c]
    G_ready[h] = 1


@nb.njit(cache=True, nogil=True)
def _fill_ab(pairs, count, pa, pb):
    """The classes (a, b) of the listed pair numbers (increasing)."""
    a = 0
    first = 0  # pair(a, a)
    for j in range(count):
        q = pairs[j]
        while q >= first + NC - a:
            first += NC - a
            a += 1
        pa[j] = a
        pb[j] = a + q - first


@nb.njit(cache=True, nogil=True)
def _fill_showdown_values(J3, J3_ready, m3j, U, t, k, a, b, row, mirror):
    """J3[row, c] = Σ_o m3j[a, b, c, o] U[t, o, k] for every c, and the mirrored pair's row too.

    Swapping the first two jammers permutes the orders, m3j[b, a, c, o] = m3j[a, b, c,
    SWAP_FIRST_TWO[o]] (checked when the tensors are built), so the 6 numbers read for (a, b)
    also give (b, a)'s row, summed over o in the same order as its own fill would: the same
    values, to the last bit, for half the reads of the 232 MB tensor when both rows are needed.
    """
    u0, u1, u2, u3, u4, u5 = U[t, 0, k], U[t, 1, k], U[t, 2, k], U[t, 3, k], U[t, 4, k], U[t, 5, k]
    both = mirror != row and J3_ready[mirror] == 0
    for c in range(NC):
        x0, x1, x2, x3, x4, x5 = m3j[a, b, c, 0], m3j[a, b, c, 1], m3j[a, b, c, 2], m3j[a, b, c, 3], \
            m3j[a, b, c, 4], m3j[a, b, c, 5]
        J3[row, c] = 0.0 + x0 * u0 + x1 * u1 + x2 * u2 + x3 * u3 + x4 * u4 + x5 * u5
        if both:
            J3[mirror, c] = 0.0 + x2 * u0 + x3 * u1 + x0 * u2 + x1 * u3 + x5 * u4 + x4 * u5
    J3_ready[row] = 1
    if both:
        J3_ready[mirror] = 1


@nb.njit(cache=True, nogil=True, inline="always")
def _fold_terminal(f, term_kind):
    """The fold child's terminal index when it is a two-jammer showdown (its value is linear in U with
    per-(a, b) coefficients, see :func:`keep_depth2_sums`), else -1."""
    if f >= 0:
        return -1
    t = -1 - f
    if term_kind[t] == KIND_J2 or term_kind[t] == KIND_J2S1:
        return t
    return -1


@nb.njit(cache=True, nogil=True)
def _sums_from_kept(h, k, tj, tf, term_kind, U, MJ, MF, C):
    """C[1, h] = MJ[h] · U (the jam showdown tj) and, for a two-jammer fold showdown tf (≥ 0),
    C[0, h] = MF[h] · U: the kept outcome-space sums (:func:`keep_depth2_sums`) in $ of actor k."""
    for c in range(NC):
        s = 0.0
        for o in range(6):
            s += MJ[h, c, o] * U[tj, o, k]
        C[1, h, c] = s
    if tf >= 0:  # the kept fold sums used the same weights with this U's fold values
        nf = 2 if term_kind[tf] == KIND_J2 else 6  # orders of the fold showdown (U is unset beyond)
        for c in range(NC):
            s = 0.0
            for o in range(nf):
                s += MF[h, o, c] * U[tf, o, k]
            C[0, h, c] = s


@nb.njit(cache=True, nogil=True)
def _depth2_counterfactuals(h, k, off, foff, fold_values, R, joint3, m3j, U, tj, tf, term_kind, J3, J3_ready, W, C,
                            C_ready, MW, MJ, MF, M_ready, cf_fold, cf_jam):
    """cf_fold[h] and cf_jam[h] of the depth-2 node h, kept up to date between passes.

    cf_jam[h, c] = Σ_{a, b} r(a, b) J3[(a, b), c] and cf_fold[h, c] = Σ_{a, b} r(a, b) q(a, b)
    P(a, b, c), r the reach of (a, b) and q the actor's value when he folds there. Summed
    directly, these read 2.7 KB per reached pair — most of a pass's time. The sums (C[1, h],
    C[0, h]) and the weights they used (W[0], W[1] at the node's rows) are kept, and a later pass
    with the same U adds only the change of each pair's weight: late CFR+ iterates change a few
    classes, so a few rows of pairs. Where every weight moved (early iterations, or a fold value
    that depends on a later node's strategy) this costs what the direct sum does.

    When U changed (C_ready[h] cleared) and the state kept its sums in outcome space
    (M_ready[h], see :func:`keep_depth2_sums`: MJ[h, c, o] = Σ_ab w(a, b) m3j[a, b, c, o] for the
    reach weights w = MW it was kept with, and MF likewise for a two-jammer fold showdown tf), the
    sums start from MJ · U and MF · U with weights MW, and only pairs whose reach differs from MW
    are read: a re-check of an unchanged profile under new utilities costs no showdown reads.

    Otherwise the first pass after C_ready[h] is cleared sums from zero in the direct order, so its
    result is that of a direct sum to the last bit; updated sums differ from it by rounding only
    (relative 1e-16 per update).
    """
    fresh = C_ready[h] == 0
    if fresh:
        for c in range(NC):
            C[0, h, c] = 0.0
            C[1, h, c] = 0.0
        if M_ready[h] == 1:  # start from the kept sums: their value under this U and the weights MW
            _sums_from_kept(h, k, tj, tf, term_kind, U, MJ, MF, C)
            for i in range(NC * NC):
                w = MW[off + i]
                W[0, off + i] = w
                W[1, off + i] = w * fold_values[k, foff + i] if tf >= 0 and w != 0.0 else 0.0
            fresh = False  # updated from there like any kept sums
    for a in range(NC):
        for b in range(NC):
            i = a * NC + b
            row = off + i
            r = R[row]
            if fresh:
                if r == 0.0:
                    W[0, row] = 0.0
                    W[1, row] = 0.0
                    continue
                rq = r * fold_values[k, foff + i]
                dj = r
                df = rq
            else:
                wj = W[0, row]
                if r == 0.0 and wj == 0.0:
                    continue
                # a pair with reach jams only where the creator's actor does: its fold value is computed
                rq = r * fold_values[k, foff + i] if r != 0.0 else 0.0
                dj = r - wj
                df = rq - W[1, row]
            if dj != 0.0:
                if J3_ready[row] == 0:
                    _fill_showdown_values(J3, J3_ready, m3j, U, tj, k, a, b, row, off + b * NC + a)
                for c in range(NC):
                    C[1, h, c] += dj * J3[row, c]
            if df != 0.0:
                for c in range(NC):
                    C[0, h, c] += df * joint3[a, b, c]
            W[0, row] = r
            W[1, row] = rq
    C_ready[h] = 1
    for c in range(NC):
        cf_fold[h, c] = C[0, h, c]
        cf_jam[h, c] = C[1, h, c]


@nb.njit(cache=True, nogil=True)
def _factored_depth2_counterfactuals(h, k, off, foff, Tbuf, x, y, joint3, m3j, m3jq, order, U, tj, tf, term_kind, J3,
                                     J3_ready, C, C_ready, MJ, MF, M_ready, MXY, P, P_valid, XY, cf_fold, cf_jam):
    """cf_fold[h] and cf_jam[h] of a depth-2 node h whose reach factors, kept up to date by rows.

    When h is the jam child of its creator (the depth-1 node whose jam made two jammers), the
    reach of a jammer pair is a product, r(a, b) = x(a) y(b), with x the creator's reach by the
    first jammer's class and y the creator's jam probabilities; and when h's fold child is a
    two-jammer showdown tf, the fold value q(a, b) depends on U only. Then
    cf_jam(c) = Σ_a x(a) P[a, c] with P[a, c] = Σ_b y(b) J3[(a, b), c], and likewise cf_fold with
    PF[a, c] = Σ_b y(b) q(a, b) P(a, b, c). The pass keeps P and PF by row (P_valid, cleared when
    U changes) with the x, y they were summed with (XY): a change of x costs a 169-vector per row
    and a change of y costs the changed columns of each kept row, where summing pairs (see
    :func:`_depth2_counterfactuals`) reads every pair whose reach moved — and CFR+ iterates move
    the first jammer's range in most classes for many iterations (gs08's first two outer
    iterations: 75–80 % of the pairs read came from changes of x). A row not kept is summed over
    its pairs, from the weights x(a) y(b) of the last pass (XY) to the new ones; where x(a) moved,
    every pair of the row is read anyway, and the row is kept from then on.

    The first pass under a new U starts from the kept outcome-space sums when the state has them
    (M_ready[h], weights MXY: :func:`keep_depth2_sums`), else from zero with x = y = 0, so that it
    sums every reached pair. A row summed from zero (x(a) was 0), when y is nearly a top set of the
    class ``order``, reads the running sums m3jq[k − 1, a] = Σ_{j < k} m3j[a, order[j]] and y's few
    deviations (:func:`threshold_split`) instead of a showdown row per class of y's support:
    P[a, c] = Σ_o U[o] (m3jq[k − 1, a, c, o] + Σ_dev δ(b) m3j[a, b, c, o]); it fills no showdown
    rows (later passes fill the ones they need). The sums differ from a direct sum by rounding only.
    """
    if C_ready[h] == 0:
        for c in range(NC):
            C[0, h, c] = 0.0
            C[1, h, c] = 0.0
            XY[h, 0, c] = 0.0
            XY[h, 1, c] = 0.0
            P_valid[h, c] = 0
        if M_ready[h] == 1:  # the kept sums under this U, for the weights x, y they were kept with
            _sums_from_kept(h, k, tj, tf, term_kind, U, MJ, MF, C)
            for c in range(NC):  # element by element: an array assignment compiles numba's shape-error
                XY[h, 0, c] = MXY[h, 0, c]  # message (string formatting, about 5 s a cold process)
                XY[h, 1, c] = MXY[h, 1, c]
    cols = np.empty(NC, np.int64)
    dys = np.empty(NC)
    nb_ = 0
    for b in range(NC):
        dy = y[b] - XY[h, 1, b]
        if dy != 0.0:
            cols[nb_] = b
            dys[nb_] = dy
            nb_ += 1
    dj_row = np.empty(NC)
    df_row = np.empty(NC)
    split = False  # y as a top set of ``order`` and its deviations, found when a row first needs it
    by_prefix = False
    ky, nyd = 0, 0
    ycls = np.empty(0, np.uint64)
    ywts = np.empty(0)
    Qa = np.empty((0, 6))
    for a in range(NC):
        xa = x[a]
        xo = XY[h, 0, a]
        base = off + a * NC
        if P_valid[h, a] == 1:
            if nb_ == 0 and xa == xo:
                continue
            if xa == 0.0 and xo == 0.0:  # no reach either time; its kept sums would go stale
                P_valid[h, a] = 0
                continue
            for c in range(NC):
                dj_row[c] = 0.0
                df_row[c] = 0.0
            for i in range(nb_):
                b = cols[i]
                dy = dys[i]
                row = base + b
                if J3_ready[row] == 0:
                    _fill_showdown_values(J3, J3_ready, m3j, U, tj, k, a, b, row, off + b * NC + a)
                for c in range(NC):
                    dj_row[c] += dy * J3[row, c]
                dq = dy * Tbuf[k, foff + a * NC + b]
                if dq != 0.0:
                    for c in range(NC):
                        df_row[c] += dq * joint3[a, b, c]
            dx = xa - xo
            for c in range(NC):
                pj = P[1, h, a, c]
                pf = P[0, h, a, c]
                C[1, h, c] += xa * dj_row[c] + dx * pj
                C[0, h, c] += xa * df_row[c] + dx * pf
                P[1, h, a, c] = pj + dj_row[c]
                P[0, h, a, c] = pf + df_row[c]
        else:
            if xa == 0.0 and xo == 0.0:
                continue
            if not split and xo == 0.0:
                split = True
                ycls = np.empty(NC, np.uint64)
                ywts = np.empty(NC)
                ky, nyd = threshold_split(y, order, ycls, ywts)
                ny = 0
                for b in range(NC):
                    if y[b] != 0.0:
                        ny += 1
                by_prefix = ky > 0 and nyd + 1 < ny
                Qa = np.empty((NC, 6))
            if by_prefix and xo == 0.0:  # a row from zero: P[a] from the running sums, kept from now on
                first = m3jq[ky - 1, a]
                for c in range(NC):
                    for o in range(6):
                        Qa[c, o] = first[c, o]
                for i in range(nyd):
                    w = ywts[i]
                    block = m3j[a, ycls[i]]
                    for c in range(NC):
                        for o in range(6):
                            Qa[c, o] += w * block[c, o]
                for c in range(NC):
                    pj = 0.0
                    for o in range(6):
                        pj += Qa[c, o] * U[tj, o, k]
                    P[1, h, a, c] = pj
                    P[0, h, a, c] = 0.0
                    C[1, h, c] += xa * pj
                for b in range(NC):
                    yb = y[b]
                    if yb == 0.0:
                        continue
                    yq = yb * Tbuf[k, foff + a * NC + b]
                    if yq != 0.0:
                        for c in range(NC):
                            P[0, h, a, c] += yq * joint3[a, b, c]
                for c in range(NC):
                    C[0, h, c] += xa * P[0, h, a, c]
                P_valid[h, a] = 1
                continue
            keep = xa != 0.0 and xa != xo  # its every pair is read anyway (otherwise only the columns of y moved)
            if keep:
                for c in range(NC):
                    P[0, h, a, c] = 0.0
                    P[1, h, a, c] = 0.0
            for b in range(NC):
                yb = y[b]
                d = xa * yb - xo * XY[h, 1, b]
                if d == 0.0 and not (keep and yb != 0.0):
                    continue
                row = base + b
                if J3_ready[row] == 0:
                    _fill_showdown_values(J3, J3_ready, m3j, U, tj, k, a, b, row, off + b * NC + a)
                q = Tbuf[k, foff + a * NC + b]
                dq = d * q
                if keep and yb != 0.0:
                    yq = yb * q
                    for c in range(NC):
                        jv = J3[row, c]
                        dv = joint3[a, b, c]
                        C[1, h, c] += d * jv
                        C[0, h, c] += dq * dv
                        P[1, h, a, c] += yb * jv
                        P[0, h, a, c] += yq * dv
                else:
                    for c in range(NC):
                        C[1, h, c] += d * J3[row, c]
                        C[0, h, c] += dq * joint3[a, b, c]
            P_valid[h, a] = 1 if keep else 0
    for c in range(NC):
        XY[h, 0, c] = x[c]
        XY[h, 1, c] = y[c]
    C_ready[h] = 1
    for c in range(NC):
        cf_fold[h, c] = C[0, h, c]
        cf_jam[h, c] = C[1, h, c]


@nb.njit(cache=True, nogil=True)
def keep_depth2_sums(node_depth, node_fold, term_kind, node_off, R, XY, joint3, m3j, win2, or3r, MW, MJ, MF, M_ready,
                     MXY):
    """Bring a state's outcome-space depth-2 sums up to the reach R of the profile last evaluated.

    For each depth-2 node h: MJ[h, c, o] = Σ_ab R(a, b) m3j[a, b, c, o] (P(a, b, c) P(o | a, b, c)),
    so that under any utilities cf_jam[h, c] = Σ_o MJ[h, c, o] U[o, actor]; and when the fold child
    is a two-jammer showdown with order probabilities π(o | a, b), MF[h, o, c] = Σ_ab R(a, b)
    π(o | a, b) P(a, b, c), so cf_fold[h, c] = Σ_o MF[h, o, c] U[o, actor]. MW keeps the R they
    were summed with: the next update (M_ready[h] set) adds only the pairs whose reach changed
    (a re-solve moves a few classes), the first one sums every reached pair (the reads of a pass
    that fills its showdown values from scratch, once). Each pair adds contiguous vectors
    (vectorised): its 169 × 6 block of m3j at once, and P(a, b, ·) once per fold order (so MF is
    laid out [o, c]; a layout of m3j with classes last made the showdown-value fills slower).
    MXY keeps the pass's factors of the reach, XY (see :func:`_factored_depth2_counterfactuals`).
    """
    for h in range(len(node_depth)):
        if node_depth[h] != 2:
            continue
        off = node_off[h]
        tf = _fold_terminal(node_fold[h], term_kind)
        kind = term_kind[tf] if tf >= 0 else -1
        fresh = M_ready[h] == 0
        if fresh:
            MJ[h] = 0.0
            MF[h] = 0.0
        for c in range(NC):  # (element by element, as in _factored_depth2_counterfactuals)
            MXY[h, 0, c] = XY[h, 0, c]
            MXY[h, 1, c] = XY[h, 1, c]
        mj = MJ[h].reshape(NC * 6)
        for a in range(NC):
            for b in range(NC):
                row = off + a * NC + b
                d = R[row] - (0.0 if fresh else MW[row])
                MW[row] = R[row]
                if d == 0.0:
                    continue
                block = m3j[a, b].reshape(NC * 6)
                for q in range(NC * 6):
                    mj[q] += d * block[q]
                deal = joint3[a, b]
                if kind == KIND_J2:
                    w0 = d * win2[a, b]
                    w1 = d * (1.0 - win2[a, b])
                    for c in range(NC):
                        MF[h, 0, c] += w0 * deal[c]
                        MF[h, 1, c] += w1 * deal[c]
                elif kind == KIND_J2S1:
                    for o in range(6):
                        w = d * or3r[a, b, o]
                        for c in range(NC):
                            MF[h, o, c] += w * deal[c]
        M_ready[h] = 1
