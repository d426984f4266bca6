"""The ladder of targets a layer solve tightens through (PI-CFR+'s inexact policy iteration, SPEC §6).

Each outer iteration solves the states to a target exploitability ($ per hand): a loose one while
the values still move by dollars, tightened by √10 each time an outer iteration leaves the layer
nearly unchanged, down to gamma. Kept apart from :mod:`engine.tournament` (which solves) so that
`jamfold progress` can name a layer's level without loading the solver.
"""

from __future__ import annotations


SETTLED_FRACTION = 0.03
"""A loose target counts as settled, and tightens, once an outer iteration updates at most this
fraction of the layer's states (see :func:`inner_target`)."""


FIRST_TARGET_DEFAULT = 100.0
FIRST_TARGET = {4: 1000.0, 5: 1000.0}
"""Per layer size (players): the first outer iteration's target as a multiple of gamma (missing:
:data:`FIRST_TARGET_DEFAULT`; see :func:`inner_target`).

The first policy evaluation moves a layer's values by dollars (11 $ on the 45-unit 4-player
layer), so most of the first level's outer iterations re-solve nearly every state, with many
classes of each strategy moving per CFR+ iteration (the dearest iterations of the solve: that
level took 45 % of the 45-unit 4-player layer's time at 100·gamma). A looser first level spends
fewer of them there, at the price of one more level opening (a re-solve of nearly every state).
Measured side by side, one thread each: the 20-unit 4-player layer without kept sums took 281.6
and 297.8 s at 1000·gamma against 308.6 and 305.8 s at 100·gamma (87,129 against 91,051 CFR+
iterations in all layers, 49 against 38 outer iterations), and 292.7 against 290.8 s at
10,000·gamma (two more openings); the 16-unit one 3 % less at 1000·gamma in an earlier stop.
gs08's 3-player layer, which keeps its sums and solves with slack, took 69.1 s at 1000·gamma
against 59.4 s (45,992 against 50,214 iterations), so it stays at 100. The 5-player layer of
the 14-unit game without kept sums (715 states; lower layers the same in both) took 222.1 and
213.3 s at 1000·gamma against 237.6 and 230.9 s (6,066 fewer CFR+ iterations, 30 against 25
outer iterations); the 45-unit 4-player layer 2,718 s against 2,914 s (PERFORMANCE.md)."""


def first_target(players: int) -> float:
    """The first outer iteration's target of a layer of ``players``, as a multiple of gamma."""
    return FIRST_TARGET.get(players, FIRST_TARGET_DEFAULT)


def inner_target(gamma: float, log: list[dict], loose: bool, states: int,
                  first: float = FIRST_TARGET_DEFAULT) -> float:
    """Exploitability ($) the states are solved to in the next outer iteration.

    Inexact policy iteration: while the values still move, solving hands far below what the values
    are off by is wasted, so the first outer iteration (ICM successor values) uses ``first``·gamma
    (:data:`FIRST_TARGET`) and the target tightens by √10 each time the current one has settled: an
    outer iteration updated at most :data:`SETTLED_FRACTION` of the ``states`` (a few states left
    behind are caught at the tighter target anyway). The layer still ends only after an outer
    iteration at gamma updates no state (SPEC §6). gs08 (2 cores, sampled tables, otherwise the
    same code): 212 s with the earlier rule max(gamma, min(last target, ΔV/10)), ten times tighter
    after an outer iteration without updates (10 target levels of 1.3–3× steps, each re-solving
    nearly every state); 188 s with fixed 10× steps (20k–45k CFR+ iterations per re-solve at
    $0.0001); 190 s with √10 steps once no state updates; 181 s with √10 steps once at most 3 % do.
    """
    if not loose:
        return gamma
    if not log:
        return first * gamma
    last = log[-1]
    if last["states_updated"] <= SETTLED_FRACTION * states:
        return max(gamma, last["target"] / 10 ** 0.5)
    return last["target"]


def target_levels(gamma: float, players: int) -> list[float]:
    """The targets ($) a layer of ``players`` tightens through, the first outer iteration's first,
    gamma last (the `thesis` 5-player layer: $0.1, $0.032, $0.01, $0.0032, $0.001, $0.00032,
    $0.0001)."""
    levels = [first_target(players) * gamma]
    while levels[-1] > gamma:
        levels.append(max(gamma, levels[-1] / 10 ** 0.5))
    return levels


def level_of(target: float, gamma: float, players: int) -> int:
    """The place (1-based) of ``target`` among :func:`target_levels`: the nearest level, since a
    target read back from a checkpoint went through float32 or JSON."""
    levels = target_levels(gamma, players)
    return 1 + min(range(len(levels)), key=lambda k: abs(levels[k] - target) / levels[k])


CYCLE_WINDOW = 24
"""Outer iterations in a row at one target, each updating states and moving the values by more
than :data:`CYCLE_SHARE` of the layer's prize money: a layer that does that is not settling, and
its solve stops (see :func:`values_cycling`)."""

CYCLE_SHARE = 0.01
"""See :data:`CYCLE_WINDOW`: 1 % of the prizes still open ($1 of a $100 pool)."""


def values_cycling(log: list[dict], open_prizes: float) -> bool:
    """Whether a layer's values are cycling instead of settling: its last :data:`CYCLE_WINDOW` outer
    iterations (``log``, see :func:`engine.tournament.solve_layer`) all ran at one target, each
    updated states and each moved some value by more than :data:`CYCLE_SHARE` of ``open_prizes``
    (the prizes of the places the layer's players still play for, $).

    PI-CFR+ is not sure to converge. With flat top prizes (50/50/0 for 3 players, even 50/49/0) the
    3-player layer's values cycle for ever: each outer iteration's ε-equilibria move other states'
    values by $3–20 of the $100, period after period (6 outer iterations on the 6-unit game), and
    the target never tightens. The rule is relative to the prize money, not to the target, which
    a settling layer's value changes exceed too (the `thesis` 5-player layer moved values by $0.17
    at gamma, $0.0001). Settling layers are far from it: a first level moves values by dollars
    for 3–5 outer iterations (at most $9.48 of $100 in the `thesis` 5-player layer's first, $3.32
    in its second), and a level's later outer iterations by cents or less.
    """
    if len(log) < CYCLE_WINDOW:
        return False
    window = log[-CYCLE_WINDOW:]
    target = window[-1]["target"]
    return all(abs(e["target"] - target) <= 1e-6 * target  # (a target read back went through float32)
               and e["states_updated"] > 0 and e["max_delta_v"] > CYCLE_SHARE * open_prizes for e in window)
