"""Path-enumeration reference for one jam/fold hand (test helper for ``tests/test_cfr.py``).

An independent evaluator of a strategy profile under the card model of SPEC §2, written
differently from :func:`engine.hand_pass.hand_pass`: instead of a backward recursion over decision
nodes it lists every decision path (root → terminal) of :func:`engine.hand.hand_tree` and
evaluates each path on its own with numpy einsum contractions over the classes of the path's
jammers.

**Path weight.** A path with jammers j_1 … j_m (acting order, m ≤ 3) has, for jammer classes
x = (x_1 … x_m) in deal order,

    W(x) = P(x_1 … x_m) · Π_jammers σ_h(x_i) · Π_folders [1 − Σ_c P(c | x_<f) σ_f(c)]

where x_<f are the classes of the jammers before the folder f (his hand goes back to the deck,
so later hands do not depend on it). The showdown-only hands (blind all-ins, an automatically
calling BB) are dealt after the jammers, so the chance of finishing order o is
Ω_o(x) = Σ_s P(s | x) P(o | x, s).

**Counterfactual values** (joint-probability weighted, as in :mod:`engine.cfr`): for actor k's
decision on a path, W' = W without that decision's factor and V_k(x) = Σ_o Ω_o(x) U[t, o, k];

    jam:  cf_jam[h, c]  += Σ_{x: x_d = c} W'(x) V_k(x)
    fold: cf_fold[h, c] += Σ_{x_<d} P(c | x_<d) Σ_{x_≥d} W'(x) V_k(x)

(d = number of jammers before h.)
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import permutations

import numpy as np

from engine.hand import HandTree
from engine.showdown import ShowdownTensors

NC = 169
AXES = "abc"  # einsum letters of the jammer classes in deal order


@dataclass(frozen=True)
class Decision:
    node: int
    actor: int
    jams: bool
    depth: int  # jammers before the decision


@dataclass(frozen=True)
class Path:
    terminal: int
    decisions: tuple[Decision, ...]
    jammers: tuple[int, ...]  # deal order part 1 (acting order)
    showdown_only: tuple[int, ...]  # deal order part 2 (empty without a showdown)
    orders: tuple[tuple[int, ...], ...]  # player orders (best first) in the kernel's U layout


def enumerate_paths(tree: HandTree) -> list[Path]:
    """Every root-to-terminal decision path of the hand (one per terminal)."""
    out: list[Path] = []

    def walk(ref, decisions: tuple[Decision, ...], jammers: tuple[int, ...]):
        kind, i = ref
        if kind == "terminal":
            term = tree.terminals[i]
            assert term.jammers == jammers, (term.jammers, jammers)
            if len(term.contesting) >= 2:
                show = tuple(p for p in term.contesting if p not in jammers)
                deal = jammers + show
                orders = tuple(tuple(deal[q] for q in perm) for perm in permutations(range(len(deal))))
            else:
                show, orders = (), (tuple(term.contesting),)
            out.append(Path(i, decisions, jammers, show, orders))
            return
        nd = tree.nodes[i]
        assert nd.jammers_before == jammers
        d = len(jammers)
        walk(nd.fold_child, decisions + (Decision(i, nd.actor, False, d),), jammers)
        walk(nd.jam_child, decisions + (Decision(i, nd.actor, True, d),), jammers + (nd.actor,))

    walk(tree.root, (), ())
    assert sorted(p.terminal for p in out) == list(range(len(tree.terminals)))
    return out


class CardModel:
    """Class distributions of the in-pot hands in deal order, and showdown order chances."""

    def __init__(self, t: ShowdownTensors):
        self.p1 = t.p1
        self.joint = {0: np.array(1.0), 1: t.p1, 2: t.joint2, 3: t.joint3}
        # P(next class | classes so far), rebuilt from the joint weights
        with np.errstate(invalid="ignore", divide="ignore"):
            c2 = np.where(t.p1[:, None] > 0, t.joint2 / t.p1[:, None], 0.0)
            c3 = np.where(t.joint2[:, :, None] > 0, t.joint3 / t.joint2[:, :, None], 0.0)
        self.cond = {0: t.p1, 1: c2, 2: c3}  # keyed by the number of classes conditioned on
        self.win2 = t.win2
        self.order3 = t.order3
        self._omega: dict = {}

    def next_class(self, d: int, sigma_row: np.ndarray) -> np.ndarray:
        """Σ_c P(c | x_1..x_d) σ(c) as a tensor over (x_1..x_d)."""
        return np.tensordot(self.cond[d], sigma_row, axes=([d], [0]))

    def omega(self, m: int, s: int) -> np.ndarray:
        """Ω[o, x_1..x_m]: chance of finishing order o (over deal positions, lexicographic
        permutations) given the jammers' classes, with s hands dealt at showdown."""
        key = (m, s)
        if key in self._omega:
            return self._omega[key]
        w = self.win2
        if m + s <= 1:
            om = np.ones((1,) + (NC,) * m)
        elif (m, s) == (0, 2):
            j = self.joint[2]
            om = np.array([(j * w).sum(), (j * (1.0 - w)).sum()])
        elif (m, s) == (1, 1):
            c = self.cond[1]
            om = np.stack([(c * w).sum(axis=1), (c * (1.0 - w)).sum(axis=1)])
        elif (m, s) == (2, 0):
            om = np.stack([w, 1.0 - w])
        elif (m, s) == (1, 2):
            pair_then_third = self.cond[1][:, :, None] * self.cond[2]  # P(s1, s2 | a)
            om = np.einsum("ast,oast->oa", pair_then_third, self.order3, optimize=True)
        elif (m, s) == (2, 1):
            om = np.einsum("abs,oabs->oab", self.cond[2], self.order3, optimize=True)
        elif (m, s) == (3, 0):
            om = self.order3
        else:
            raise AssertionError(f"no showdown with {m} jammers and {s} showdown-only hands")
        self._omega[key] = om
        return om

    def joint_omega(self, m: int, s: int) -> np.ndarray:
        """JΩ[o, x] = P(x_1..x_m) Ω[o, x] (cached)."""
        key = ("joint", m, s)
        if key not in self._omega:
            self._omega[key] = self.joint[m] * self.omega(m, s)
            if m == 3:  # the plain order tensor is not needed again
                self._omega.pop((m, s), None)
        return self._omega[key]


class PathEvaluator:
    """Evaluate a profile sigma[K, 169] with utilities U[T, 6, n] by path enumeration."""

    def __init__(self, tree: HandTree, model: CardModel):
        self.tree = tree
        self.model = model
        self.n = tree.n_players
        self.K = len(tree.nodes)
        self.T = len(tree.terminals)
        self.paths = enumerate_paths(tree)

    # ---------------------------------------------------------------- one path
    def _fold_chances(self, sigma: np.ndarray) -> list:
        """Per node: 1 − Σ_c P(c | classes of the jammers before it) σ_h(c), over those classes."""
        return [1.0 - self.model.next_class(len(nd.jammers_before), sigma[h]) for h, nd in enumerate(self.tree.nodes)]

    def _terms(self, path: Path, sigma: np.ndarray, fold: list) -> list:
        """Per decision of the path, its factor as (jammer axes it depends on, array); a fold
        before any jam is a number (axes '')."""
        out = []
        for dec in path.decisions:
            d = dec.depth
            if dec.jams:
                out.append((AXES[d], sigma[dec.node]))
            else:
                out.append((AXES[:d], float(fold[dec.node]) if d == 0 else fold[dec.node]))
        return out

    @staticmethod
    def _contract(base_axes: str, base: np.ndarray, terms, out_axes: str, skip=(), u=None):
        """Σ over the axes not in ``out_axes`` of base × Π terms (those not in ``skip``),
        optionally contracted with u[o] over the order axis 'o'."""
        const, ops, subs = 1.0, [base], [base_axes]
        for i, (axes, f) in enumerate(terms):
            if i in skip:
                continue
            if axes:
                ops.append(f)
                subs.append(axes)
            else:
                const *= f
        if u is not None:
            ops.append(u)
            subs.append("o")
        return const * np.einsum(",".join(subs) + "->" + out_axes, *ops, optimize="greedy")

    def _joint_omega(self, path: Path) -> np.ndarray:
        """JΩ[o, x] = P(x) Ω_o(x) for the path's showdown."""
        return self.model.joint_omega(len(path.jammers), len(path.showdown_only))

    # ---------------------------------------------------------------- whole profile
    def evaluate(self, sigma: np.ndarray, U: np.ndarray, with_cf: bool = True) -> dict:
        """order_probs [T, 6], root_values [n] and (with_cf) cf_fold, cf_jam [K, 169]."""
        probs = np.zeros((self.T, 6))
        values = np.zeros(self.n)
        cf_fold = np.zeros((self.K, NC))
        cf_jam = np.zeros((self.K, NC))
        cond = self.model.cond
        fold = self._fold_chances(sigma)
        fold_mass: dict = {}  # node -> Σ over paths of the folder's weighted value, over x_<d
        for path in self.paths:
            t, m, no = path.terminal, len(path.jammers), len(path.orders)
            jo = self._joint_omega(path)
            ax = "o" + AXES[:m]
            terms = self._terms(path, sigma, fold)
            # Sum the last jammer's class out first, with the factors that depend on it (his jam
            # and later folds): only decisions whose own factor is among those need the full jo.
            deep = {i for i, (axes, _) in enumerate(terms) if m and AXES[m - 1] in axes}
            H = self._contract(ax, jo, [terms[i] for i in sorted(deep)], ax[:-1]) if m else jo
            hx = ax[:-1] if m else ax
            shallow = [terms[i] if i not in deep else ("", 1.0) for i in range(len(terms))]
            probs[t, :no] = self._contract(hx, H, shallow, "o")
            values += probs[t, :no] @ U[t, :no, :]
            if not with_cf:
                continue
            for i, dec in enumerate(path.decisions):
                d, u = dec.depth, U[t, :no, dec.actor]
                out = AXES[d] if dec.jams else AXES[:d]
                if i in deep:
                    r = self._contract(ax, jo, terms, out, skip=(i,), u=u)
                else:
                    r = self._contract(hx, H, shallow, out, skip=(i,), u=u)
                if dec.jams:
                    cf_jam[dec.node] += r
                else:  # summed over the paths first, then spread over the folder's class
                    fold_mass[dec.node] = fold_mass.get(dec.node, 0.0) + r
        for h, Md in fold_mass.items():
            d = len(self.tree.nodes[h].jammers_before)
            cf_fold[h] = np.tensordot(Md, cond[d], axes=d) if d else Md * self.model.p1
        return {"order_probs": probs, "root_values": values, "cf_fold": cf_fold, "cf_jam": cf_jam}

    def order_probs(self, sigma: np.ndarray) -> np.ndarray:
        """[T, 6] chance of reaching each terminal and ending in each order."""
        return self.evaluate(sigma, np.zeros((self.T, 6, self.n)), with_cf=False)["order_probs"]

    def root_values(self, sigma: np.ndarray, U: np.ndarray) -> np.ndarray:
        return self.evaluate(sigma, U, with_cf=False)["root_values"]

    def counterfactuals(self, sigma: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(cf_fold, cf_jam), each [K, 169], joint-probability weighted $."""
        r = self.evaluate(sigma, U)
        return r["cf_fold"], r["cf_jam"]

    def player_value(self, sigma: np.ndarray, U: np.ndarray, k: int) -> float:
        return float(self.root_values(sigma, U)[k])

    def best_response(self, sigma: np.ndarray, U: np.ndarray, k: int, cf=None) -> np.ndarray:
        """Profile with player k's nodes replaced by his pure best response.

        Player k decides at most once per path and the reach of his nodes does not depend on
        his own play, so his payoff is affine and separable in his σ_h(c); the slope of σ_h(c)
        is cf_jam[h, c] − cf_fold[h, c]."""
        cf_fold, cf_jam = cf if cf is not None else self.counterfactuals(sigma, U)
        br = sigma.copy()
        for h, nd in enumerate(self.tree.nodes):
            if nd.actor == k:
                br[h] = np.where(cf_jam[h] > cf_fold[h], 1.0, 0.0)
        return br

    def best_response_gains(self, sigma: np.ndarray, U: np.ndarray) -> np.ndarray:
        """Per player: value of his best response minus his value under sigma (full evaluations)."""
        r = self.evaluate(sigma, U)
        cf = (r["cf_fold"], r["cf_jam"])
        gains = np.zeros(self.n)
        for k in range(self.n):
            if any(nd.actor == k for nd in self.tree.nodes):
                gains[k] = self.root_values(self.best_response(sigma, U, k, cf), U)[k] - r["root_values"][k]
        return gains


def utilities_from_outcomes(tree: HandTree, paths: list[Path], values: dict, state_index) -> np.ndarray:
    """U[t, o, p] (NaN where order o does not exist) built from the tree's outcomes:
    prize now + value of the seat in the next state (``values[m][state_index(next)]``)."""
    U = np.full((len(tree.terminals), 6, tree.n_players), np.nan)
    for path in paths:
        term = tree.terminals[path.terminal]
        by_order = {o.order: o for o in term.outcomes}
        for o, order in enumerate(path.orders):
            out = by_order[order]
            u = np.array(out.prize, dtype=float)
            if out.next_stacks:
                row = values[len(out.next_stacks)][state_index(out.next_stacks)]
                for p, seat in enumerate(out.new_position):
                    if seat >= 0:
                        u[p] += row[seat]
            U[path.terminal, o] = u
    return U
