"""Readable lines for a layer solve's progress events (see :func:`engine.tournament.solve_layer`).

One wording for every place that shows a solve's progress: the solve assets' Dagster log and
``./lab bench solver --verbose``.
"""

from __future__ import annotations

from engine.tournament import HELD_SLACK


def layer_log_line(event: dict) -> tuple[str, str] | None:
    """(level, message) for the log of a layer solve's progress event (see
    :func:`engine.tournament.solve_layer`); None for events the log leaves out."""
    kind, head = event["event"], f"{event['players']}-player layer"
    if "outer_iteration" in event:
        head += f", outer iteration {event['outer_iteration']}"
    if kind == "outer":
        return "info", (f"{head}: target {event['target']:.1e} $, {event['states_updated']} states updated, "
                        f"{event['states_skipped']} skipped, {event['states_screened']} screened, "
                        f"{event['states_checked']} checked exactly, "
                        f"{event['cfr_iterations']} CFR+ iterations, max |ΔV| {event['max_delta_v']:.2e} $, "
                        f"max exploitability {event['max_exploitability']:.2e} $, {event['wall_s']:.1f} s")
    if kind == "states":
        return "info", f"{head}: {event['done']}/{event['states']} states done, {event['wall_s']:.0f} s"
    if kind == "resumed":
        return "info", head + (" read back solved from its checkpoint" if event["finished"]
                               else f" resumed after outer iteration {event['outer']}")
    if kind == "resumed_states":
        return "info", f"{head}: {event['done']}/{event['states']} states already done before the interrupt"
    if kind == "uncertified":
        return "warning", (f"{head}: the hand at stacks {event['stacks']} is still {event['exploitability']:.2e} $ "
                           f"exploitable after {event['cfr_iterations']} CFR+ iterations (target "
                           f"{event['target']:.1e} $); at this target it is solved again only if it becomes "
                           f"{HELD_SLACK:g} times as exploitable, and the layer's exploitability check reports "
                           f"it if it ends above gamma")
    if kind == "block_saved":
        return "info", (f"{head}: checkpoint of {event['states']} more states ({event['done']} done), "
                        f"{event['wall_s']:.0f} s")
    return None
