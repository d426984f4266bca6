"""Altair chart builders. Each takes a DataFrame read from the warehouse and returns an Altair chart.

Charts are embedded in pages as Vega-Lite specs with inline data and rendered in the browser by a
local copy of vega-embed (no network needed); see :mod:`sitegen.embed`.
"""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd

MODEL_COLORS = {"harville": "#1f77b4", "weitzman": "#ff7f0e", "roberts": "#2ca02c",
                "proportional": "#7f7f7f", "equilibrium": "#d62728"}


FGS_LIGHTEST, FGS_DARKEST = (0xc0, 0x8f, 0xd8), (0x3f, 0x00, 0x7d)
"""Ends of the purple ramp of the FGS-d lines: FGS-1 lightest, the deepest FGS in a chart darkest."""
OTHER_COLOR = "#8c564b"

ICM_FAMILY = ("harville", "weitzman", "roberts")
"""The equity models without a sweep, in the order every page lists them (then FGS by depth)."""

FACET_COLUMNS = 2
"""Panels per row of the charts with one panel per player count: two fit the text column at full
size, where four in a row had to be shrunk to half (unreadable axis labels)."""

GRID_ROW_WIDTH = 700
"""Pixels a row of push/fold grids may take (the panels, not their axes and legend): with about
145 px of axis labels, gaps and legend, a row then fits Material's text column (about 870 px on
a 1,400-px window)."""


def wrapped_facet(panel: alt.Chart, facet: alt.Facet, columns: int) -> alt.FacetChart:
    """``panel`` repeated per value of ``facet``, ``columns`` panels a row, each with its own x axis.

    With a shared x axis Vega-Lite draws one axis per column under the last row, also where that
    row has no panel in the column (3 player counts in 2 columns, 10 decision nodes in 3): an axis
    under empty space. The scales stay shared; only the axes are drawn per panel.
    """
    return panel.facet(facet=facet, columns=columns).resolve_axis(x="independent")


def _fgs_depth(model: str) -> int | None:
    head, _, depth = model.partition("-")
    return int(depth) if head == "FGS" and depth.isdigit() else None


def model_colors(models: list[str]) -> list[str]:
    """One colour per model: the base models and the references their own, FGS-1 … FGS-D a ramp
    from light to dark purple (darker = deeper), so every FGS line of a chart is told apart."""
    depths = [d for d in map(_fgs_depth, models) if d is not None]
    deepest = max(depths, default=1)
    colors = []
    for m in models:
        d = _fgs_depth(m)
        if d is None:
            colors.append(MODEL_COLORS.get(m, OTHER_COLOR))
            continue
        t = (d - 1) / (deepest - 1) if deepest > 1 else 1.0
        rgb = (round(a + t * (b - a)) for a, b in zip(FGS_LIGHTEST, FGS_DARKEST))
        colors.append("#" + "".join(f"{c:02x}" for c in rgb))
    return colors


def model_color_scale(models: list[str]) -> alt.Scale:
    return alt.Scale(domain=models, range=model_colors(models))


PAIRS_ONLY = "length(datum.value) == 2 ? datum.value : ''"
"""Vega label expression of the 169-class axes: the 13 pairs (two-letter labels) only, the grid's
diagonal, every 14th class in grid order (169 labels in 640 px were an unreadable smear; the
tooltip names every cell)."""


def pair_equity_heatmap(df: pd.DataFrame, labels_in_grid_order: list[str]) -> alt.Chart:
    """169×169 heat map: cell (row hand, column hand) = P(row hand beats column hand) heads-up.

    ``df`` columns: hand, versus, p_win. The chart inlines a row per hand, its P(win) against each
    column hand in a list (None where ``df`` has no row; 28,561 rows of their own were 1.3 MB of
    the page), which Vega-Lite spreads back into cells.
    """
    position = {label: i for i, label in enumerate(labels_in_grid_order)}
    unknown = sorted(set(df["versus"]) - set(position))
    if unknown:
        raise ValueError(f"versus hands not in labels_in_grid_order: {unknown[:5]}")
    hands = pd.unique(df["hand"])  # (the rows in the order of their hands' first rows)
    p_win = np.full((len(hands), len(labels_in_grid_order)), np.nan)
    p_win[pd.Index(hands).get_indexer(df["hand"]), df["versus"].map(position).to_numpy()] = df["p_win"].to_numpy()
    return (
        alt.Chart(pd.DataFrame({"hand": hands, "p_win": inline_lists(p_win)}),
                  title="Heads-up all-in equity of the row hand against the column hand")
        .transform_calculate(column=f"sequence({len(labels_in_grid_order)})")
        .transform_flatten(["column", "p_win"])
        .transform_filter("isValid(datum.p_win)")
        .transform_calculate(versus=f"{json.dumps(labels_in_grid_order)}[datum.column]")
        .mark_rect()
        .encode(
            x=alt.X("versus:N", sort=labels_in_grid_order,
                    title="opponent's hand class (grid order AA, AKs, … 22; the pairs labelled)",
                    axis=alt.Axis(labelExpr=PAIRS_ONLY, labelAngle=0, ticks=False)),
            y=alt.Y("hand:N", sort=labels_in_grid_order, title="hand class (the pairs labelled)",
                    axis=alt.Axis(labelExpr=PAIRS_ONLY, ticks=False)),
            color=alt.Color("p_win:Q", title="P(win)", scale=alt.Scale(scheme="redblue", domain=[0, 1], domainMid=0.5)),
            tooltip=[alt.Tooltip("hand:N", title="hand"), alt.Tooltip("versus:N", title="versus"),
                     alt.Tooltip("p_win:Q", title="P(hand wins)", format=".4f")],
        )
        .properties(width=640, height=640)
    )


def hand_strength_grid(df: pd.DataFrame, value: str, title: str, legend: str) -> alt.Chart:
    """13×13 grid (rows/columns A…2) of one value per class; ``df`` has grid_row, grid_col, label, value."""
    ranks = list("AKQJT98765432")
    base = alt.Chart(df, title=title).encode(
        x=alt.X("col_rank:N", sort=ranks, title="second rank (suited above the diagonal)"),
        y=alt.Y("row_rank:N", sort=ranks, title="first rank (offsuit below the diagonal)"),
    ).transform_calculate(
        col_rank=f"{ranks!r}[datum.grid_col]", row_rank=f"{ranks!r}[datum.grid_row]")
    rect = base.mark_rect().encode(
        color=alt.Color(f"{value}:Q", title=legend, scale=alt.Scale(scheme="redblue", domain=[0, 1], domainMid=0.5)),
        tooltip=[alt.Tooltip("label:N", title="hand"), alt.Tooltip(f"{value}:Q", title=legend, format=".4f")])
    text = base.mark_text(fontSize=9).encode(text="label:N")
    return (rect + text).properties(width=420, height=420)


def payoff_vs_stack(df: pd.DataFrame) -> alt.Chart:
    """Mean payoff ($) by stack (units) per model, with the chip-proportional line stack/units × pool.

    ``df`` columns: model, stack, payoff (already averaged over states and positions) and
    proportional (the same for every model of a stack).
    """
    prop = df.drop_duplicates("stack")[["stack", "proportional"]].rename(columns={"proportional": "payoff"})
    prop["model"] = "proportional"
    data = pd.concat([df[["model", "stack", "payoff"]], prop], ignore_index=True)
    models = [m for m in (*ICM_FAMILY, "proportional") if m in set(data["model"])]
    return (
        alt.Chart(data, title="Mean payoff by stack size")
        .mark_line(point=True)
        .encode(
            x=alt.X("stack:Q", title="stack (small-blind units)", axis=alt.Axis(tickMinStep=1, format="d")),
            y=alt.Y("payoff:Q", title="mean expected prize ($)"),
            color=alt.Color("model:N", title="model", scale=model_color_scale(models)),
            strokeDash=alt.condition(alt.datum.model == "proportional", alt.value([4, 4]), alt.value([1, 0])),
            tooltip=["model:N", alt.Tooltip("stack:Q", title="stack (units)"),
                     alt.Tooltip("payoff:Q", title="payoff ($)", format=".3f")],
        )
        .properties(width=640, height=360)
    )


def example_finishing_bars(df: pd.DataFrame, models: list[str]) -> alt.Chart:
    """Stacked bars: each player's finishing distribution under each model, a row per model in the
    order of ``models`` (the tables' above). ``df``: model, player_label, place, probability."""
    return (
        alt.Chart(df, title="Finishing probabilities on the example stacks")
        .mark_bar()
        .encode(
            x=alt.X("probability:Q", title="probability", stack="zero", scale=alt.Scale(domain=[0, 1])),
            y=alt.Y("player_label:N", title="player (stack)", sort=None),
            color=alt.Color("place:O", title="place", scale=alt.Scale(scheme="viridis")),
            row=alt.Row("model:N", title="model", sort=models),
            tooltip=["model:N", "player_label:N", "place:O", alt.Tooltip("probability:Q", format=".4f")],
        )
        .properties(width=520, height=110)
    )


GRID_CELLS = 169
"""Cells of a 13×13 hand-class grid: cell ``13 · grid_row + grid_col``."""

GRID_DECIMALS = 4
"""Decimals a grid's inline jam probabilities keep: the tooltip shows three, the colour scale
tells no finer difference, and every page prints the query that gives them whole."""


def grid_rows(df: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``df``'s cells (columns grid_row, grid_col, label, jam_probability and the grid's keys) as one
    row per grid: its keys and ``jam_probability``, a list of its 169 cells' probabilities in grid
    order (None where ``df`` has no row), rounded to ``GRID_DECIMALS``; and the 169 cells' labels.

    A page inlines every row of its charts: a 5-player start state's grids, with FGS-1…10, are
    about 57,000 cells, over 110 bytes each as a row of their own (the keys and the labels spelled
    out in every cell), against 2–7 bytes each in a grid's list.
    """
    rows, cols = df["grid_row"].to_numpy(), df["grid_col"].to_numpy()
    if not (np.isin(rows, range(13)).all() and np.isin(cols, range(13)).all()):
        raise ValueError("grid_row and grid_col must lie in 0..12")
    cells = (rows * 13 + cols).astype(np.int64)
    labels = [""] * GRID_CELLS
    for cell, label in zip(*np.unique(cells, return_index=True)):
        labels[cell] = df["label"].iloc[label]
    keys = [c for c in df.columns if c not in ("grid_row", "grid_col", "label", "jam_probability")]
    grid_keys = df[keys].drop_duplicates()
    which = pd.MultiIndex.from_frame(grid_keys).get_indexer(pd.MultiIndex.from_frame(df[keys]))  # each row's grid
    values = np.full((len(grid_keys), GRID_CELLS), np.nan)
    values[which, cells] = df["jam_probability"].to_numpy(dtype=np.float64).round(GRID_DECIMALS)
    return grid_keys.reset_index(drop=True).assign(jam_probability=inline_lists(values)), labels


def inline_lists(values: np.ndarray) -> list[list[float | int | None]]:
    """The rows of a 2-D array as the lists a chart inlines: NaN (no row in the table) as None
    (JSON null, which the chart's filter drops), whole numbers as ints ("0" and "1", most cells of
    a solved range, rather than "0.0" and "1.0")."""
    return [[None if v != v else int(v) if v.is_integer() else v for v in row] for row in values.tolist()]


def push_fold_grids(df: pd.DataFrame, title: str, columns: int = 3, panel_title: str = "node",
                    pick: alt.Parameter | None = None) -> alt.FacetChart:
    """13×13 jam-probability grids, one panel per decision node, ``columns`` in a row: 190 px
    square, smaller where that many would not fit ``GRID_ROW_WIDTH``.

    ``df`` columns: panel (node description; the tooltip names it ``panel_title``), order (the
    panels' order), grid_row, grid_col, label, jam_probability, and the column ``pick`` is named
    after if given: then only the rows whose value there is the parameter's are drawn (see
    :func:`push_fold_grids_picked`). The chart inlines them as :func:`grid_rows` does, a row per
    grid, and Vega-Lite spreads each grid's list back into cells (after the pick, so that a chart
    of thousands of grids spreads only those it draws).
    """
    ranks = list("AKQJT98765432")
    grids, labels = grid_rows(df)
    base = alt.Chart(grids).encode(
        x=alt.X("col_rank:N", sort=ranks, title="2nd rank (suited above the diagonal)",
                axis=alt.Axis(labelFontSize=8, titleFontSize=8, titleFontWeight="normal")),
        y=alt.Y("row_rank:N", sort=ranks, title="1st rank (offsuit below)",
                axis=alt.Axis(labelFontSize=8, titleFontSize=8, titleFontWeight="normal")),
    )
    rect = base.mark_rect().encode(
        color=alt.Color("jam_probability:Q", title="P(jam)", scale=alt.Scale(scheme="greens", domain=[0, 1])),
        tooltip=[alt.Tooltip("panel:N", title=panel_title), alt.Tooltip("label:N", title="hand"),
                 alt.Tooltip("jam_probability:Q", title="P(jam)", format=".3f")])
    # labels white on the dark cells (black on dark green was unreadable)
    text = base.mark_text(fontSize=6).encode(
        text="label:N", color=alt.condition(alt.datum.jam_probability > 0.55, alt.value("white"), alt.value("black")))
    size = min(190, GRID_ROW_WIDTH // columns)
    chart = wrapped_facet((rect + text).properties(width=size, height=size),
                          alt.Facet("panel:N", title=title if pick is None else None, sort=alt.SortField("order")),
                          columns)
    if pick is not None:  # the title ends with the value picked ("…, stacks 15, 15, 15")
        chart = (chart.add_params(pick).transform_filter(getattr(alt.datum, pick.name) == pick)
                 .properties(title=alt.TitleParams(text=alt.ExprRef(expr=f"{json.dumps(title)} + {pick.name}"),
                                                   anchor="middle")))
    return chart.transform_calculate(
        cell=f"sequence({GRID_CELLS})"
    ).transform_flatten(
        ["cell", "jam_probability"]
    ).transform_filter(
        "isValid(datum.jam_probability)"
    ).transform_calculate(
        label=f"{json.dumps(labels)}[datum.cell]",
        col_rank=f"{json.dumps(ranks)}[datum.cell % 13]", row_rank=f"{json.dumps(ranks)}[floor(datum.cell / 13)]")


def push_fold_grids_picked(df: pd.DataFrame, title: str, column: str, options: list[str], label: str,
                           first: str | None = None, columns: int = 3, panel_title: str = "node") -> alt.FacetChart:
    """The grids of :func:`push_fold_grids` for one value of ``df[column]`` at a time: a drop-down
    under the chart, named ``label``, picks it among ``options`` (in that order; ``first``, or the
    first option, is drawn first), and the chart's title is ``title`` followed by it. A start
    state's nodes for up to 14 profiles, or every state of a layer: all of them at once would be
    hundreds or thousands of grids."""
    if not options:
        raise ValueError(f"no {column} to pick from")
    pick = alt.param(name=column, value=options[0] if first is None else first,
                     bind=alt.binding_select(options=options, name=label))
    return push_fold_grids(df, title, columns, panel_title=panel_title, pick=pick)


def push_fold_grids_by_node(df: pd.DataFrame, title: str, nodes: list[str], columns: int = 3) -> alt.FacetChart:
    """The grids of :func:`push_fold_grids`, one panel per model, for one decision node at a time:
    a drop-down under the chart picks the node (``nodes``, the first shown first). A state has up
    to dozens of nodes and a game up to 14 profiles: every grid at once would be hundreds.

    ``df`` columns: node (one of ``nodes``), panel (the profile), order, grid_row, grid_col, label,
    jam_probability.
    """
    return push_fold_grids_picked(df, title, "node", nodes, "decision node ", columns=columns, panel_title="profile")


def value_by_stack(df: pd.DataFrame, title: str, legend: str = "model") -> alt.Chart:
    """Lines of a $ value by stack, one colour per series (``legend`` titles them), one panel per
    player count (two per row).

    ``df`` columns: players, stack, series, value.
    """
    series = list(dict.fromkeys(df["series"]))
    lines = (
        alt.Chart(df).mark_line(point=alt.OverlayMarkDef(size=18)).encode(
            x=alt.X("stack:Q", title="stack (small-blind units)", axis=alt.Axis(tickMinStep=1, format="d")),
            y=alt.Y("value:Q", title=title),
            color=alt.Color("series:N", title=legend, scale=model_color_scale(series), sort=series),
            strokeDash=alt.condition(alt.datum.series == "proportional", alt.value([4, 4]), alt.value([1, 0])),
            tooltip=["players:O", "series:N", alt.Tooltip("stack:Q", title="stack"),
                     alt.Tooltip("value:Q", format=".4f")],
        ).properties(width=255, height=200)
    )
    return wrapped_facet(lines, alt.Facet("players:O", title="players in the state"), FACET_COLUMNS)


PLAYER_COLOURS = ["#4c78a8", "#f58518", "#54a24b", "#b279a2", "#9d755d"]
"""Bar colours of the 2-, 3-, 4-, 5- (and 6-) player layers: neither red nor black (gamma's dashed rule was red, like
the 4-player bars of the default scheme)."""


def exploitability_histogram(bins: pd.DataFrame, gamma: float, title: str = "exploitability of the state's hand ($)",
                             count_title: str = "states", zeros: int = 0) -> alt.Chart:
    """Distribution of gains (log10 $), stacked by player count, from counts already binned
    (:func:`sitegen.pages.log10_histogram`: players, bin_start, bin_end, count); ``zeros``, the
    rows at 0 $ (or a rounding below) that a log axis cannot show, are counted in the title. The player counts'
    colours avoid red and black, and gamma is a black dashed rule."""
    bars = alt.Chart(bins).mark_bar(opacity=0.8).encode(
        x=alt.X("bin_start:Q", bin="binned", title=f"log10 {title}"),
        x2="bin_end:Q",
        y=alt.Y("count:Q", title=count_title, stack=True),
        color=alt.Color("players:N", title="players", scale=alt.Scale(range=PLAYER_COLOURS)),
        tooltip=[alt.Tooltip("players:N"), alt.Tooltip("bin_start:Q", format=".2f", title="from log10 $"),
                 alt.Tooltip("bin_end:Q", format=".2f", title="to log10 $"), alt.Tooltip("count:Q", title=count_title)],
    )
    rule = alt.Chart(pd.DataFrame({"g": [np.log10(gamma)]})).mark_rule(color="black", strokeDash=[4, 4]).encode(
        x=alt.X("g:Q", title=f"log10 {title}"), tooltip=[alt.Tooltip("g:Q", title="log10 gamma")])
    left_out = f"; {zeros:,} {count_title} at 0 $ (or a rounding below), not drawn" if zeros else ""
    return (bars + rule).properties(width=600, height=260, title=f"Distribution: {title} (dashed: gamma{left_out})")


CONVERGENCE_SERIES = {"max_exploitability": ("max exploitability", "#d62728"),
                      "max_delta_v": ("max |ΔV|", "#1f77b4"), "target": ("target", "#7f7f7f")}
"""The solve log's columns a convergence chart draws: (legend label, colour)."""


def convergence_lines(log: pd.DataFrame) -> alt.Chart:
    """Per outer iteration of each layer (one panel per player count), the largest exploitability
    and the largest change of a value (both in $, log scale) against the target of the iteration
    (dashed): how PI-CFR+ tightened the target level by level. ``log``: rows of ``solve_log``.
    Zeros (no value moved) have no place on a log scale and are left out."""
    long = log.melt(id_vars=["players", "outer_iteration"], value_vars=list(CONVERGENCE_SERIES),
                    var_name="column", value_name="usd")
    long = long[long["usd"] > 0].assign(series=lambda d: d["column"].map(lambda c: CONVERGENCE_SERIES[c][0]))
    labels = [label for label, _ in CONVERGENCE_SERIES.values()]
    lines = alt.Chart(long).mark_line(point=alt.OverlayMarkDef(size=12)).encode(
        x=alt.X("outer_iteration:Q", title="outer iteration", axis=alt.Axis(tickMinStep=1)),
        y=alt.Y("usd:Q", title="$ (log scale)", scale=alt.Scale(type="log")),
        color=alt.Color("series:N", title="per outer iteration ($)", sort=labels,
                        scale=alt.Scale(domain=labels, range=[c for _, c in CONVERGENCE_SERIES.values()])),
        strokeDash=alt.condition(alt.datum.series == "target", alt.value([4, 4]), alt.value([1, 0])),
        tooltip=["players:O", "outer_iteration:Q", "series:N", alt.Tooltip("usd:Q", title="$", format=".2e")],
    ).properties(width=255, height=200)
    # each layer over its own outer iterations (2 players: about 10, 4 or 5 players: 70 or more)
    return wrapped_facet(lines, alt.Facet("players:O", title="players in the layer"),
                         FACET_COLUMNS).resolve_scale(x="independent")


def _fgs_depth_x() -> alt.X:
    """The x axis of the FGS depth charts: the depths as categories, their labels upright."""
    return alt.X("depth:O", title="FGS depth d (0 = Harville)", axis=alt.Axis(labelAngle=0))


def depth_curve(df: pd.DataFrame) -> alt.Chart:
    """MAPD (%) and MAD ($) of FGS-d against the depth d; ``df`` columns: depth, mapd_pct, mad."""
    base = alt.Chart(df).encode(x=_fgs_depth_x())
    mapd = base.mark_line(point=alt.OverlayMarkDef(color="#d62728"), color="#d62728").encode(
        y=alt.Y("mapd_pct:Q", title="MAPD (%)"), tooltip=["depth:O", alt.Tooltip("mapd_pct:Q", format=".4f")])
    mad = base.mark_line(point=alt.OverlayMarkDef(color="#1f77b4"), color="#1f77b4").encode(
        y=alt.Y("mad:Q", title="MAD ($)"), tooltip=["depth:O", alt.Tooltip("mad:Q", format=".5f")])
    return alt.hconcat(mapd.properties(width=280, height=200, title="MAPD (%) against the equilibrium"),
                       mad.properties(width=280, height=200, title="MAD ($) against the equilibrium"))


def ex_post_bars(df: pd.DataFrame, profiles: list[str]) -> alt.Chart:
    """Mean and max nemesis gain ($) per profile, one panel per player count; ``df``: series, players, mean_gain, max_gain."""
    long = df.melt(id_vars=["series", "players"], value_vars=["mean_gain", "max_gain"], var_name="statistic",
                   value_name="gain").replace({"statistic": {"mean_gain": "mean", "max_gain": "max"}})
    order = [p for p in profiles if p in set(long["series"])]
    bars = alt.Chart(long).mark_bar().encode(
        y=alt.Y("series:N", sort=order, title="profile"),
        x=alt.X("gain:Q", title="nemesis gain ($)"),
        color=alt.Color("statistic:N", title="over the layer's (state, seat) pairs",
                        scale=alt.Scale(domain=["mean", "max"], range=["#1f77b4", "#ff7f0e"])),
        yOffset="statistic:N",
        tooltip=["series:N", "players:O", "statistic:N", alt.Tooltip("gain:Q", format=".5f")],
    ).properties(width=240, height=24 * len(order))
    return wrapped_facet(bars, alt.Facet("players:O", title="players in the state"), FACET_COLUMNS)


def depth_roi_curve(df: pd.DataFrame) -> alt.Chart:
    """Hero ROI (%, against the fair share, ± one standard error) and MAPD (%) of FGS-d against the
    depth d; ``df`` columns: depth, roi_pct, roi_se_pct, mapd_pct."""
    df = df.assign(roi_low=df["roi_pct"] - df["roi_se_pct"], roi_high=df["roi_pct"] + df["roi_se_pct"])
    base = alt.Chart(df).encode(x=_fgs_depth_x())
    y_title = "hero ROI (%), the others on the equilibrium"
    line = base.mark_line(point=alt.OverlayMarkDef(color="#2ca02c"), color="#2ca02c").encode(
        y=alt.Y("roi_pct:Q", title=y_title),
        tooltip=["depth:O", alt.Tooltip("roi_pct:Q", format=".4f"), alt.Tooltip("roi_se_pct:Q", format=".4f",
                                                                               title="standard error")])
    roi = line + base.mark_rule(color="#2ca02c").encode(y=alt.Y("roi_low:Q", title=y_title), y2="roi_high:Q")
    mapd = base.mark_line(point=alt.OverlayMarkDef(color="#d62728"), color="#d62728").encode(
        y=alt.Y("mapd_pct:Q", title="MAPD (%)"), tooltip=["depth:O", alt.Tooltip("mapd_pct:Q", format=".4f")])
    return alt.hconcat(roi.properties(width=280, height=200, title="simulated ROI of the FGS-d player"),
                       mapd.properties(width=280, height=200, title="MAPD of FGS-d payoffs"))
