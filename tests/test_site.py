"""The built site: every page exists, every number comes from the warehouse, and the charts render in a browser."""

import json
import re
import shutil
import subprocess

import pytest

PAGES = ["index.html", "showdown.html", "equity-models.html", "warehouse.html", "equilibrium.html", "push-fold.html",
         "solve-quality.html", "models.html", "model-ranges.html", "ex-post.html",
         "simulation.html"]


def test_pages_exist_and_link_assets(tiny_build):
    site = tiny_build["site"]
    for page in PAGES:
        html = (site / page).read_text()
        assert "vega-bundle.js" in html, page
    assert (site / "assets" / "vega-bundle.js").stat().st_size > 500_000


def test_the_site_assets_metadata_names_the_built_pages(tiny_build):
    """The UI's view of `results_site`: its path opens the home page, its page count and list are the
    site's pages, as built, with their size (the charts inline their rows) and the largest page, and
    it says the site has no web address of its own."""
    site = tiny_build["site"]
    events = tiny_build["result"].get_asset_materialization_events()
    md = next(e.event_specific_data.materialization.metadata for e in events
              if e.asset_key.to_user_string() == "results_site")
    built = sorted(p.name for p in site.glob("*.html"))
    assert set(PAGES) <= set(built)
    assert md["path"].value == str(site / "index.html") and md["pages"].value == len(built)
    assert md["page_files"].value == ", ".join(built) and md["wall_s"].value >= 0
    sizes = {p.name: p.stat().st_size for p in site.glob("*.html")}
    assert md["pages_mb"].value == pytest.approx(sum(sizes.values()) / 1e6, abs=5e-4)
    largest = max(sizes, key=sizes.get)
    assert md["largest_page"].value == f"{largest} ({sizes[largest] / 1e6:.3f} MB)"
    assert md["site_url"].value.startswith("none (JAMFOLD_SITE_URL unset")
    headline = md["headline"].value.splitlines()  # the home page's headline table, for the UI
    assert headline[0] == ("| model | mapd_pct | mapd_pa_pct | mad | sim_roi_pct | sim_roi_se_pct | "
                           "nemesis_start_roi_pct | nemesis_max_gain |")
    home = (site.parent / "docs" / "index.md").read_text()
    assert [[c.strip() for c in line.strip()[1:-1].split("|")] for line in headline[2:]] == _scorecard_rows(home)
    assert len(headline) == 2 + 7


def test_no_page_prints_a_python_none_or_nan(tiny_build):
    """A page's text is made of f-strings over helper results and DataFrames: a helper that gave back
    None, or a missing number formatted by Python, would print "None" or "nan" (charts' data aside)."""
    docs = tiny_build["site"].parent / "docs"
    pages = sorted(docs.glob("*.md"))
    assert len(pages) >= len(PAGES)
    for page in pages:
        text = re.sub(r"<script\b.*?</script>", "", page.read_text(), flags=re.S)
        assert not re.findall(r"\b(?:None|nan|NaN)\b", text), page.name


def test_home_page_links_every_page(tiny_build):
    """The home page's list of pages names every page of the build (it once stopped at the solver's)."""
    html = (tiny_build["site"] / "index.html").read_text()
    pages = html[html.index('id="pages"'):]
    for page in PAGES[1:]:
        assert f'href="{page}"' in pages, page


def test_home_page_gives_the_config_that_rebuilds_its_game(tiny_build, tmp_path):
    """"Reproduce it" shows the game's config as built, as a TOML file: read back by the build's own
    loader it is the same game (it only said `./lab build`, which builds `quick`, whatever the site
    showed). The site lists the config's fields itself, since it does not import the engine."""
    from dataclasses import fields

    from engine.config import GameConfig, load_config
    from sitegen.pages_home import CONFIG_FIELDS

    assert set(CONFIG_FIELDS) == {f.name for f in fields(GameConfig)}
    page = (tiny_build["site"].parent / "docs" / "index.md").read_text()
    toml = re.search(r"```toml\n(.*?)\n```", page, re.S).group(1)
    (tmp_path / "tiny.toml").write_text(toml)
    assert load_config(tmp_path / "tiny.toml") == load_config(tiny_build["config"])
    assert "./lab build --config tiny.toml" in page


def test_site_of_a_game_solved_but_not_yet_modelled(tiny_build, tmp_path):
    """The equilibrium's pages, the ICM family's comparison and the equilibrium's control tournaments,
    without the pages that need the model sweeps (a `--skip-models` build, or one stopped after the
    solve): no page links to a missing page, which mkdocs --strict would reject. Without any
    simulation there is no Simulation page either."""
    import duckdb

    from sitegen.build import build_site

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    with duckdb.connect(str(warehouse)) as con:
        for table in ("model_nodes", "fgs_values", "model_sweeps", "direct_matches"):
            con.execute(f"DELETE FROM {table} WHERE game = 'tiny'")
        con.execute("DELETE FROM simulation WHERE game = 'tiny' AND model <> 'equilibrium'")
        con.execute("DELETE FROM nemesis_values WHERE game = 'tiny' AND profile <> 'equilibrium'")
    site = build_site("tiny", warehouse, tmp_path / "out")
    assert (site / "solve-quality.html").exists() and (site / "models.html").exists()
    home = (site.parent / "docs" / "index.md").read_text()  # the headline: the ICM family's payoffs only
    rows = {row[0]: row[1:] for row in _scorecard_rows(home)}
    assert list(rows) == ["equilibrium", "harville", "weitzman", "roberts"]
    assert all(cells[:3] == ["", "", ""] and "" not in cells[3:] for cells in [rows["equilibrium"]])
    assert all("" not in cells[:3] and cells[3:] == [""] * 4 for model, cells in rows.items() if model != "equilibrium")
    assert "A blank cell is an analysis this build has not run for that profile (yet)" in home
    assert "In payoffs, " in home and "In play, " not in home and "A nemesis wins" not in home
    assert "Not compared yet: FGS-1, FGS-2, FGS-3." in (site / "models.html").read_text()
    assert "Not simulated yet: harville, weitzman, roberts, FGS-1, FGS-2, FGS-3." in (site / "simulation.html").read_text()
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM simulation WHERE game = 'tiny'")
    site = build_site("tiny", warehouse, tmp_path / "out")
    assert not (site / "simulation.html").exists()
    assert _links_to(site, ("model-ranges", "ex-post", "simulation")) == []
    with duckdb.connect(str(warehouse)) as con:  # its equilibrium gone too: no page of it is left from before
        con.execute("DELETE FROM equilibrium_values WHERE game = 'tiny'")
    site = build_site("tiny", warehouse, tmp_path / "out")
    solved_pages = ("equilibrium", "push-fold", "solve-quality", "models")
    assert "What this build found" not in (site.parent / "docs" / "index.md").read_text()
    assert not [p for p in solved_pages if (site / f"{p}.html").exists() or (site.parent / "docs" / f"{p}.md").exists()]
    assert (site / "index.html").exists() and (site / "warehouse.html").exists()
    assert _links_to(site, solved_pages) == []


def _links_to(site, pages: tuple[str, ...]) -> list[tuple[str, str]]:
    """(page of ``site``, page of ``pages``) where the first links to the second (as .html or a dead .md)."""
    return [(html.name, page) for html in site.glob("*.html") for page in pages if f'href="{page}.' in html.read_text()]


@pytest.mark.parametrize("left_out", [(3,), (2, 3)])
def test_equilibrium_page_says_which_finishing_probabilities_are_still_to_come(tiny_build, tmp_path, left_out):
    """A site built while `finishing_<n>p` has not run for every solved layer (the site
    asset materialized alone in `dagster dev`, or `python -m sitegen.build` during a long build):
    the page names the player counts still to come and charts and tabulates only the others, where
    it drew an empty chart and an empty table."""
    import duckdb

    from sitegen.pages_equilibrium import equilibrium_page

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("DELETE FROM finishing WHERE game = 'tiny' AND players IN (SELECT unnest(?::INTEGER[]))",
                    [list(left_out)])
        page = equilibrium_page(con, "tiny")
    assert f"Not computed yet for {', '.join(map(str, left_out))} players" in page
    kept = [n for n in (2, 3) if n not in left_out]
    assert ("eq-win-vs-proportional" in page) == bool(kept)
    for n in (2, 3):
        assert (f"**{n} players**" in page) == (n in kept)
    if kept:
        win = page.split("## Winning probability")[1].split("## Average")[0]
        rows = [line for line in win.splitlines() if line.startswith("| ") and line[2].isdigit()]
        assert len(rows) == 6 - 2 + 1  # the stacks of a 2-player state of 6 units: 1 … 5

def test_equilibrium_page_tabulates_winning_chances_for_every_player_count(tiny_build):
    """SPEC §7.4 asks for the winning probability and its relative difference from x/units per
    player count: a table per layer (the page showed the largest layer's alone)."""
    import duckdb

    from sitegen.pages_equilibrium import equilibrium_page

    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        page = equilibrium_page(con, "tiny")
    win = page.split("## Winning probability")[1].split("## Average")[0]
    assert win.index("**2 players**") < win.index("**3 players**")
    rows = [[float(x) for x in line.strip("| ").split(" | ")] for line in win.splitlines()
            if line.startswith("| ") and line[2].isdigit()]
    assert [int(r[0]) for r in rows] == [1, 2, 3, 4, 5] + [1, 2, 3, 4]  # the stacks of each layer of 6 units
    for stack, p_win, proportional, relative in rows:  # (the shown p_win and proportional are rounded by 5e-5)
        slack = 0.005 + 100 * 5e-5 * (proportional + p_win) / proportional ** 2
        assert proportional == round(stack / 6, 4)
        assert relative == pytest.approx(100 * (p_win / proportional - 1), abs=slack)


def test_equilibrium_payoff_chart_draws_the_proportional_share_of_the_open_prizes(tiny_build, tmp_path):
    """The payoff chart's proportional line is stack / units × the prizes still open in the layer:
    with a third place paid, $80 heads-up and $100 three-handed, not the whole pool everywhere (the
    tiny game pays two places, so its own pages cannot tell; its payouts are changed in a copy)."""
    import shutil

    import duckdb

    from sitegen.pages_equilibrium import equilibrium_page

    copy = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    with duckdb.connect(str(copy)) as con:
        con.execute("UPDATE games SET payouts = [50.0, 30.0, 20.0] WHERE game = 'tiny'")
        page = equilibrium_page(con, "tiny")
    drawn = [r for r in _chart_rows(page, "eq-payoff-by-stack") if r["series"] == "proportional"]
    layers = [(2, k) for k in range(1, 6)] + [(3, k) for k in range(1, 5)]  # (players, stack) of 6 units
    assert sorted((r["players"], r["stack"]) for r in drawn) == layers
    for r in drawn:
        assert r["value"] == pytest.approx(r["stack"] / 6 * {2: 80.0, 3: 100.0}[r["players"]], rel=1e-12)


def _chart_spec(page: str, chart_id: str) -> dict:
    """A page's chart: its Vega-Lite spec."""
    import json

    return json.loads(re.search(rf'data-target="chart-{chart_id}">(.*?)</script>', page).group(1))


def _chart_rows(page: str, chart_id: str) -> list[dict]:
    """The inline data rows of a page's chart (its Vega-Lite spec)."""
    return next(iter(_chart_spec(page, chart_id)["datasets"].values()))


def _drawn_grid_cells(page: str, chart_id: str) -> list[dict]:
    """The cells a page's push/fold grids chart draws, in drawn order, as Vega renders it (vl-convert),
    whatever shape its inline data has: each rect's ARIA label gives its panel (``panel``: the
    tooltip's first field), hand (``hand``), rank on each axis (``row_rank``, ``col_rank``) and
    P(jam) (``p``, the colour's 3 significant digits). A drop-down's chart is drawn as it opens."""
    import html

    import vl_convert as vlc

    svg = vlc.vegalite_to_svg(_chart_spec(page, chart_id))
    cells = []
    for label in re.findall(r'<path[^>]*aria-label="([^"]*P\(jam\): [^"]*)"', svg):
        fields = dict(part.split(": ", 1) for part in html.unescape(label).split("; "))
        ranks = [fields.pop(k) for k in ("1st rank (offsuit below)", "2nd rank (suited above the diagonal)")]
        p, hand = float(fields.pop("P(jam)")), fields.pop("hand")
        (panel,) = fields.values()
        cells.append({"panel": panel, "hand": hand, "row_rank": ranks[0], "col_rank": ranks[1], "p": p})
    return cells


def _drawn_grid_labels(page: str, chart_id: str) -> list[str]:
    """The hand labels a page's push/fold grids chart writes on its cells, in drawn order (vl-convert)."""
    import html

    import vl_convert as vlc

    svg = vlc.vegalite_to_svg(_chart_spec(page, chart_id))
    return [html.unescape(t) for t in re.findall(r'<text aria-label="[^"]*; label: [^"]*"[^>]*>([^<]*)</text>', svg)]


def test_model_pages_chart_and_tabulate_the_warehouses_numbers(tiny_build):
    """The by-stack deviation charts, the ex post bars and the model ranges' jam shares carry the
    numbers of the tables they are drawn from, recomputed here from the raw rows: the mean signed
    and absolute deviations by stack, the mean and largest nemesis gain per layer, the share of
    the 1,326 hands each decision node of the start state jams, and the grids' jam probabilities:
    the first-in nodes' and, one node at a time, those facing a jam (the page showed first-in
    nodes only)."""
    import duckdb
    import vl_convert as vlc

    from engine.cards import CLASS_COMBO_COUNT

    docs = tiny_build["site"].parent / "docs"
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        values = con.execute("SELECT model, players, stack, payoff - equilibrium AS d FROM model_values "
                             "WHERE game = 'tiny'").df()
        gains = con.execute("SELECT profile, players, gain FROM nemesis_values WHERE game = 'tiny'").df()
        jams = con.execute("""
            SELECT j.model, j.node, e.actor_name, e.jammed_before, j.class_id, h.grid_row, h.grid_col, h.label,
                   j.jam_probability
            FROM (SELECT 'equilibrium' AS model, players, state_id, node, class_id, jam_probability
                  FROM equilibrium_jam WHERE game = 'tiny'
                  UNION ALL SELECT model, players, state_id, node, class_id, jam_probability
                  FROM model_jam WHERE game = 'tiny') j
            JOIN states s ON s.game = 'tiny' AND s.players = j.players AND s.state_id = j.state_id
            JOIN games g ON g.game = 'tiny' AND s.stacks = g.start::SMALLINT[]
            JOIN equilibrium_nodes e ON e.game = 'tiny' AND e.players = j.players AND e.state_id = j.state_id
                                    AND e.node = j.node
            JOIN hand_classes h ON h.class_id = j.class_id""").df()
    models_page = (docs / "models.md").read_text()
    grouped = values.groupby(["model", "players", "stack"])["d"]
    signed, absolute = grouped.mean(), grouped.apply(lambda d: d.abs().mean())
    for chart, truth in (("dev-signed-by-stack", signed), ("dev-abs-by-stack", absolute)):
        rows = _chart_rows(models_page, chart)
        assert len(rows) == len(truth)
        for r in rows:
            expected = truth[(r["series"], r["players"], r["stack"])]
            assert r["value"] == pytest.approx(expected, rel=1e-9, abs=1e-12), chart
    bars = _chart_rows((docs / "ex-post.md").read_text(), "ex-post-bars")
    by_layer = gains.groupby(["profile", "players"])["gain"]
    truth = {"mean": by_layer.mean(), "max": by_layer.max()}
    assert len(bars) == 2 * len(by_layer)
    for r in bars:
        assert r["gain"] == pytest.approx(truth[r["statistic"]][(r["series"], r["players"])], rel=1e-9, abs=1e-12)
    jams["combos"] = CLASS_COMBO_COUNT[jams["class_id"].to_numpy()]
    jams["node_name"] = [actor + (" first in" if len(before) == 0 else f" after {' + '.join(before)} jam")
                         for actor, before in zip(jams["actor_name"], jams["jammed_before"])]
    share = (jams.assign(w=jams["combos"] * jams["jam_probability"]).groupby(["model", "node_name"])["w"].sum()
             * 100 / 1326)
    ranges_page = (docs / "model-ranges.md").read_text()
    table = ranges_page.split("| decision node |")[1].split("\n\n")[0].splitlines()
    models = [c.strip() for c in table[0].strip(" |").split("|")]
    cells = [[c.strip() for c in line.strip("| ").split("|")] for line in table[2:]]
    in_order = jams.drop_duplicates("node").sort_values("node")["node_name"].tolist()
    assert in_order == ["BU first in", "SB first in", "SB after BU jam"]  # the start state 2-2-2's every node
    assert [node for node, *_ in cells] == in_order and sorted(models) == sorted(jams["model"].unique())
    for node, *shown in cells:
        for model, cell in zip(models, shown):
            assert float(cell) == pytest.approx(share[(model, node)], abs=0.005 + 1e-9)
    truth = jams.set_index(["model", "node_name", "grid_row", "grid_col"])["jam_probability"]
    hands = jams.drop_duplicates(["grid_row", "grid_col"]).set_index(["grid_row", "grid_col"])["label"]
    facing_nodes = [n for n in in_order if not n.endswith(" first in")]
    first_in = _drawn_grid_cells(ranges_page, "model-ranges")
    facing = _drawn_grid_cells(ranges_page, "model-ranges-facing")  # one node at a time, a drop-down picks it
    assert len(first_in) == 2 * 169 * len(models) and len(facing) == 169 * len(models)
    assert _drawn_grid_labels(ranges_page, "model-ranges") == [c["hand"] for c in first_in]
    ranks = "AKQJT98765432"
    for cells, model_node in ((first_in, lambda c: c["panel"].split(" · ")),
                              (facing, lambda c: (c["panel"], facing_nodes[0]))):  # (it opens on the first)
        for c in cells:
            model, node = model_node(c)
            at = (ranks.index(c["row_rank"]), ranks.index(c["col_rank"]))
            assert c["hand"] == hands[at]
            assert c["p"] == pytest.approx(truth[(model, node, *at)], rel=5e-3, abs=5e-5)
    # the page inlines every row, so they carry only what the charts draw (and the drop-down
    # filters), a row per grid with its 169 cells' probabilities in a list
    grids = {"first": _chart_rows(ranges_page, "model-ranges"),
             "facing": _chart_rows(ranges_page, "model-ranges-facing")}
    assert {tuple(sorted(r)) for r in grids["first"]} == {("jam_probability", "order", "panel")}
    assert {tuple(sorted(r)) for r in grids["facing"]} == {("jam_probability", "node", "order", "panel")}
    assert len(grids["first"]) == 2 * len(models) and len(grids["facing"]) == len(models)
    assert {len(r["jam_probability"]) for rows in grids.values() for r in rows} == {169}
    # the equilibrium's grids come first, then each model's in the table's order; first-in nodes in order
    assert models[0] == "equilibrium"
    assert list(dict.fromkeys(c["panel"] for c in first_in)) == [
        f"{m} · {n}" for m in models for n in in_order if n.endswith(" first in")]
    assert list(dict.fromkeys(c["panel"] for c in facing)) == models
    # the drop-down offers the nodes facing a jam in the table's order, the first shown first; the
    # tooltip names a panel by its profile
    spec = _chart_spec(ranges_page, "model-ranges-facing")
    (param,) = spec["params"]
    assert param["bind"]["options"] == facing_nodes and param["value"] == facing_nodes[0]
    assert f"Title text 'jam (call) probability: {facing_nodes[0]}'" in vlc.vegalite_to_svg(spec)  # the node drawn
    assert {"title": "profile", "field": "panel", "type": "nominal"} in spec["spec"]["layer"][0]["encoding"]["tooltip"]
    assert "The calling ranges of the node where someone has jammed before" in ranges_page  # one here


def test_a_decision_node_is_named_by_its_actor_and_the_jams_before_it():
    """The push/fold charts and the model ranges name a node in SQL: "BU first in", "SB after CO
    jam", and with two jams before it "BB after BU + SB jam"."""
    import duckdb

    from sitegen.pages import node_name_sql

    rows = [("BU", []), ("SB", ["CO"]), ("BB", ["BU", "SB"]), ("BB", ["HJ", "CO", "BU"])]
    with duckdb.connect() as con:
        names = [con.execute(f"SELECT {node_name_sql('e')} FROM (SELECT ? AS actor_name, ?::VARCHAR[] AS "
                             "jammed_before) e", [actor, before]).fetchone()[0] for actor, before in rows]
    assert names == ["BU first in", "SB after CO jam", "BB after BU + SB jam", "BB after HJ + CO + BU jam"]


def _md_tables(section: str) -> dict[int, list[list[float]]]:
    """The "**n players**" tables of a page section: n -> rows of numbers."""
    out = {}
    for n, body in re.findall(r"\*\*(\d) players\*\*\n\n((?:\|.*\n)+)", section):
        out[int(n)] = [[float(x) for x in line.strip("| ").split(" | ")] for line in body.splitlines()[2:]]
    return out


def test_equilibrium_pages_chart_and_tabulate_the_warehouses_numbers(tiny_build, tmp_path):
    """The equilibrium's payoff chart (its own and Harville's mean by stack), the average finishing
    tables, the push/fold panels' names, the equity models' payoff chart and the solve-quality
    tables carry the warehouse's numbers, recomputed here from the raw rows."""
    import shutil

    import duckdb

    from sitegen.pages_equilibrium import solve_quality_page

    docs = tiny_build["site"].parent / "docs"
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        eq = con.execute("""SELECT v.players, s.stacks[v.position + 1] AS stack, v.value FROM equilibrium_values v
                            JOIN states s USING (game, players, state_id) WHERE v.game = 'tiny'""").df()
        icm = con.execute("""SELECT p.model, p.players, s.stacks[p.position + 1] AS stack, p.payoff
                             FROM model_payoffs p JOIN states s USING (game, players, state_id)
                             WHERE p.game = 'tiny'""").df()
        fin = con.execute("""SELECT f.players, s.stacks[f.position + 1] AS stack, f.place, f.probability
                             FROM finishing f JOIN states s USING (game, players, state_id)
                             WHERE f.game = 'tiny'""").df()
        nodes = con.execute("""SELECT e.actor_name, e.jammed_before FROM equilibrium_nodes e
                               JOIN states s USING (game, players, state_id)
                               WHERE e.game = 'tiny' AND s.stacks = [2, 2, 2]""").fetchall()
    page = (docs / "equilibrium.md").read_text()
    truth = {"equilibrium": eq.groupby(["players", "stack"])["value"].mean(),
             "harville": icm[icm["model"] == "harville"].groupby(["players", "stack"])["payoff"].mean()}
    drawn = [r for r in _chart_rows(page, "eq-payoff-by-stack") if r["series"] != "proportional"]
    assert len(drawn) == 2 * len(truth["equilibrium"])
    for r in drawn:
        assert r["value"] == pytest.approx(truth[r["series"]][(r["players"], r["stack"])], rel=1e-9)
    tables = _md_tables(page.split("## Average finishing")[1].split("## Query it")[0])
    mean_p = fin.groupby(["players", "stack", "place"])["probability"].mean()
    assert sorted(tables) == [2, 3]
    for n, rows in tables.items():
        assert [int(r[0]) for r in rows] == list(range(1, 6 - (n - 1) + 1))  # stacks 1 … units − (n − 1)
        for stack, *ps in rows:
            assert ps == [pytest.approx(mean_p[(n, int(stack), k + 1)], abs=5e-4 + 1e-12) for k in range(n)]
    panels = {r["panel"] for r in _chart_rows((docs / "push-fold.md").read_text(), "pf-2-2-2")}
    assert panels == {actor + (" first in" if not before else f" after {' + '.join(before)} jam")
                      for actor, before in nodes}
    assert len(panels) == len(nodes) == 3  # (the BB's 2 units are his blind, all in: no decision of his)
    by_stack = icm[icm["players"] == 3].groupby(["model", "stack"])["payoff"].mean()
    drawn = [r for r in _chart_rows((docs / "equity-models.md").read_text(), "payoff-vs-stack")
             if r["model"] != "proportional"]
    assert len(drawn) == len(by_stack)
    for r in drawn:
        assert r["payoff"] == pytest.approx(by_stack[(r["model"], r["stack"])], rel=1e-9)
    # solve quality: a state above gamma is counted in its layer; the ex post table names the worst state
    copy = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    with duckdb.connect(str(copy)) as con:
        gamma = con.execute("SELECT gamma FROM games WHERE game = 'tiny'").fetchone()[0]
        con.execute("UPDATE state_quality SET exploitability = 3 * ? WHERE game = 'tiny' AND players = 3 "
                    "AND state_id = 4", [gamma])
        gains = con.execute("""SELECT players, state_id, max(gain) AS gain FROM nemesis_values
                               WHERE game = 'tiny' AND profile = 'equilibrium' GROUP BY ALL""").df()
        quality = solve_quality_page(con, "tiny")
    per_layer = quality.split("## Per layer")[1].split("\n\n")[1].splitlines()
    header = [c.strip().replace("<wbr>", "") for c in per_layer[0].strip("| ").split("|")]
    above = {int(line.split("|")[1]): int(line.strip("| ").split(" | ")[header.index("states_above_gamma")])
             for line in per_layer[2:]}
    assert above == {2: 0, 3: 1}
    ex_post = quality.split("**Per layer**")[1].split("\n\n")[1].splitlines()
    header = [c.strip().replace("<wbr>", "") for c in ex_post[0].strip("| ").split("|")]
    shown = {int(line.split("|")[1]): int(line.strip("| ").split(" | ")[header.index("worst_state_id")])
             for line in ex_post[2:]}
    state_gain = gains.set_index(["players", "state_id"])["gain"]
    assert sorted(shown) == [2, 3]
    assert all(state_gain[(n, sid)] == gains[gains["players"] == n]["gain"].max() for n, sid in shown.items())


def test_simulation_and_fgs_pages_carry_the_warehouses_numbers(tiny_build):
    """The simulation page's ROI cells (ROI ± its standard error per model and hero seat), its control
    table's z, its FGS depth curve (mean ROI ± error, MAPD) and the models page's FGS depth curve
    (MAPD, MAD) carry the numbers of `simulation`, `equilibrium_values` and the raw model values."""
    import duckdb

    docs = tiny_build["site"].parent / "docs"
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        sim = con.execute("SELECT model, hero_seat, roi_pct, roi_se_pct, mean_payoff, standard_error "
                          "FROM simulation WHERE game = 'tiny'").df().set_index(["model", "hero_seat"])
        start_values = dict(con.execute(
            """SELECT s.positions[v.position + 1], v.value FROM equilibrium_values v
               JOIN states s USING (game, players, state_id) JOIN games g ON g.game = s.game
               WHERE v.game = 'tiny' AND s.stacks = g.start::SMALLINT[]""").fetchall())
        values = con.execute("SELECT model, payoff, equilibrium FROM model_values WHERE game = 'tiny'").df()
    page = (docs / "simulation.md").read_text()
    roi = page.split("## Hero ROI (%) by starting seat")[1].split("\n\n")[1].splitlines()
    seats = [c.strip() for c in roi[0].strip("| ").split("|")][2:]
    for line in roi[2:]:
        model, _, *cells = [c.strip() for c in line.strip("| ").split("|")]
        for seat, cell in zip(seats, cells):
            shown, se = (float(x) for x in cell.split(" ± "))
            assert shown == pytest.approx(sim.loc[(model, seat), "roi_pct"], abs=5e-4 + 1e-12)
            assert se == pytest.approx(sim.loc[(model, seat), "roi_se_pct"], abs=5e-4 + 1e-12)
    control = page.split("## The control against the solved values")[1].split("\n\n")[2].splitlines()
    assert len(control) == 2 + 3
    for line in control[2:]:
        seat, *_, z = [c.strip() for c in line.strip("| ").split("|")]
        row = sim.loc[("equilibrium", seat)]
        assert float(z) == pytest.approx((row["mean_payoff"] - start_values[seat]) / row["standard_error"], abs=5e-5)
    values["rel"] = 100 * (values["payoff"] - values["equilibrium"]) / values["equilibrium"]
    values["dev"] = values["payoff"] - values["equilibrium"]
    mapd = values.groupby("model")["rel"].apply(lambda r: r.abs().mean())
    mad = values.groupby("model")["dev"].apply(lambda d: d.abs().mean())
    roi_mean = sim.groupby("model")["roi_pct"].mean()

    def model(depth: int) -> str:
        return "harville" if depth == 0 else f"FGS-{depth}"

    curve = _chart_rows(page, "sim-fgs-depth")
    assert [r["depth"] for r in curve] == [0, 1, 2, 3]
    for r in curve:
        assert r["roi_pct"] == pytest.approx(roi_mean[model(r["depth"])], rel=1e-9)
        assert r["mapd_pct"] == pytest.approx(mapd[model(r["depth"])], rel=1e-9)
    curve = _chart_rows((docs / "models.md").read_text(), "fgs-depth")
    assert [r["depth"] for r in curve] == [0, 1, 2, 3]
    for r in curve:
        assert (r["mapd_pct"], r["mad"]) == (pytest.approx(mapd[model(r["depth"])], rel=1e-9),
                                             pytest.approx(mad[model(r["depth"])], rel=1e-9))


def test_showdown_and_equity_model_pages_tabulate_the_triples_and_the_models(tiny_build):
    """The showdown page's three-way table gives each hand's chance to finish best as the sum of
    the two orders that put it first (the three summing to 1) and the first order as stored; the
    equity models page's example tables are each model's finishing matrix and payoffs for the
    example's stacks, as engine.equity_models computes them (players numbered from 1)."""
    import duckdb

    from engine import equity_models
    from engine.cards import parse_class
    from engine.config import load_config

    docs = tiny_build["site"].parent / "docs"
    section = (docs / "showdown.md").read_text().split("## Three-way all-ins")[1].split("## Query it")[0]
    rows = [line.strip("| ").split(" | ") for line in section.splitlines()
            if line.startswith("| ") and not line.startswith("| a, b, c")]
    assert len(rows) == 4
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        triples, = con.execute("SELECT rollout_triples FROM games WHERE game = 'tiny'").fetchone()
        for labels, weight, *shown in rows:
            a, b, c = (parse_class(label) for label in labels.split(", "))
            assert a <= b <= c
            w, abc, acb, bac, bca, cab, cba = con.execute(
                "SELECT weight, p_abc, p_acb, p_bac, p_bca, p_cab, p_cba FROM rollout_triples "
                "WHERE rollout = ? AND a = ? AND b = ? AND c = ?", [triples, a, b, c]).fetchone()
            assert int(weight) == w
            expected = [abc + acb, bac + bca, cab + cba, abc]
            assert [float(x) for x in shown] == [pytest.approx(x, abs=5e-5 + 1e-12) for x in expected]
            assert sum(float(x) for x in shown[:3]) == pytest.approx(1, abs=2e-4)
    cfg = load_config(tiny_build["config"])
    stacks, payouts = list(cfg.examples[0]), list(cfg.payouts)
    page = (docs / "equity-models.md").read_text().split("## Payoff against stack")[0]
    for model in equity_models.MODELS:
        table = page.split(f"### {model.capitalize()}\n\n")[1].split("\n\n")[0].splitlines()[2:]
        P = equity_models.finishing_matrix(model, stacks)
        pay = equity_models.payoffs(P, payouts)
        assert len(table) == len(stacks)
        for i, line in enumerate(table):
            cells = line.strip("| ").split(" | ")
            assert cells[1] == f"{stacks[i]:g}"  # the stack as the config gives it, not as a 4-decimal number
            player, stack, payoff, *probs = (float(x) for x in cells)
            assert (player, stack) == (i + 1, stacks[i])
            assert payoff == pytest.approx(pay[i], abs=5e-5)
            assert probs == [pytest.approx(p, abs=5e-5) for p in P[i]]


def test_solve_quality_page_says_the_start_states_layer_is_not_checked_yet(tiny_build, tmp_path):
    """A site built while only the smaller layers' ex post checks have run (a long build in its top
    layer's solve): the page shows their figures, says which layers they cover and names the asset
    still to come; with every layer checked it says nothing of the sort."""
    import duckdb

    from sitegen.pages_equilibrium import solve_quality_page

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    with duckdb.connect(str(warehouse)) as con:
        assert "Checked so far" not in solve_quality_page(con, "tiny")
        con.execute("DELETE FROM nemesis_values WHERE game = 'tiny' AND players = 3")
        page = solve_quality_page(con, "tiny")
    assert "Checked so far: the layers of 2 players. The start state's 3-player layer is not checked yet " \
           "(asset `ex_post_3p`" in page
    per_layer = page.split("**Per layer**")[1].split("\n\n<")[0]
    assert [line.split("|")[1].strip() for line in per_layer.splitlines() if line.startswith("| ")
            and line[2].isdigit()] == ["2"]


def test_push_fold_page_names_the_example_states_whose_layer_is_not_solved_yet(tiny_build, tmp_path):
    """Built while the game is still being solved (layer 2 of 3 here), the page charts the heads-up
    example and names the start state as not solved yet, where it left it out without a word."""
    import duckdb

    from sitegen.pages_equilibrium import push_fold_page

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    with duckdb.connect(str(warehouse)) as con:
        full = push_fold_page(con, "tiny")
        for table in ("equilibrium_values", "equilibrium_nodes"):
            con.execute(f"DELETE FROM {table} WHERE game = 'tiny' AND players = 3")
        partial = push_fold_page(con, "tiny")
    assert "Not solved yet" not in full and full.count('class="vchart"') == 3 + 2  # 3 examples, 2 state pickers
    assert "Not solved yet: start state, stacks 2, 2, 2 (3-player layer)." in partial
    assert partial.count('class="vchart"') == 1 + 1 and "## Heads-up, even stacks: stacks 3, 3" in partial
    assert 'id="chart-pf-any-2p"' in partial and "## Any state of the 2-player layer\n" in partial


def test_push_fold_page_charts_a_state_once_when_two_examples_are_the_same_state(tiny_build, tmp_path):
    """A start state that is also the big-blind all-in example (or a heads-up game's even start)
    gets one chart under one heading naming both: two charts with one element id left the second
    heading without its chart."""
    import re

    import duckdb

    from sitegen.pages_equilibrium import push_fold_page

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("UPDATE games SET config_json = json_merge_patch(config_json, '{\"start\": [3, 2, 1]}') "
                    "WHERE game = 'tiny'")
        page = push_fold_page(con, "tiny")
    ids = re.findall(r'id="(chart-[^"]+)"', page)
    examples = [i for i in ids if not i.startswith("chart-pf-any-")]  # (then a state picker per layer)
    assert len(ids) == len(set(ids)) == page.count('class="vchart"') == 2 + 2 and len(examples) == 2
    assert "## Start state (also a big blind all-in for 1 unit): stacks 3, 2, 1" in page
    assert re.findall(r"^## (.*)", page, re.M) == ["Start state (also a big blind all-in for 1 unit): stacks 3, 2, 1",
                                                  "Heads-up, even stacks: stacks 3, 3",
                                                  "Any state of the 2- and 3-player layers", "Query it"]


def test_models_page_says_which_layers_its_statistics_cover_while_the_game_is_solved(tiny_build, tmp_path):
    """The deviation views answer for the layers solved so far (the `thesis` game's layers 2–4 while
    its 5-player layer is solved); a page built then says so instead of "every player count"."""
    import duckdb

    from sitegen.pages_models import deviation_page

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    with duckdb.connect(str(warehouse)) as con:
        assert "compared so far" not in deviation_page(con, "tiny")
        con.execute("DELETE FROM equilibrium_values WHERE game = 'tiny' AND players = 3")
        page = deviation_page(con, "tiny")
    assert "**Layers compared so far: 2 players of 3.**" in page
    assert "the equilibrium of the 3-player layer is not in the warehouse yet" in page
    assert "MAPD % (3 players)" not in page and "MAPD % (2 players)" in page


def test_models_page_shows_mapd_per_player_count_plain_and_position_averaged(tiny_build):
    """SPEC §7.3: the deviation statistics once as is and once position-averaged, each also by
    player count; the page showed only the plain ones by player count."""
    import duckdb

    from sitegen.pages_models import deviation_page

    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        page = deviation_page(con, "tiny")
        rows = con.execute("""SELECT averaging, players, mapd_pct FROM deviation_summary
                              WHERE game = 'tiny' AND model = 'FGS-1' AND players IS NOT NULL""").fetchall()
    plain, averaged = page.split("**MAPD per player count**")[1].split("**MAPD per player count, position-averaged**")
    averaged = averaged.split("## By stack size")[0]
    for how, players, mapd in rows:
        lines = (plain if how == "plain" else averaged).splitlines()
        header = next(line for line in lines if line.startswith("| model |")).split("|")
        row = next(line for line in lines if line.startswith("| FGS-1 |")).split("|")
        assert row[header.index(f" MAPD % ({players} players) ")].strip() == f"{mapd:.4f}", (how, players, row)
    assert {r[0] for r in rows} == {"plain", "position-averaged"} and len(rows) == 4


def test_warehouse_page_lists_every_table(tiny_build):
    from warehouse.schema import TABLES

    html = (tiny_build["site"] / "warehouse.html").read_text()
    for name, table in TABLES.items():
        assert f"<code>{name}</code> ({'view' if table.kind == 'view' else 'table'}, " in html, name
        for col in table.columns:
            assert col.name in html


def test_warehouse_page_example_queries_return_rows_for_the_built_game(tiny_build):
    """The examples name the game's own showdown tables and start state (a sampled game has no
    rows under 'exact'), so each one a reader copies returns rows."""
    import html as html_lib

    import duckdb

    from sitegen.pages import example_queries, game_info

    page = html_lib.unescape(re.sub(r"<[^>]+>", "", (tiny_build["site"] / "warehouse.html").read_text()))
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    game = con.execute("SELECT game FROM games").fetchone()[0]
    queries = example_queries(game, game_info(con, game))
    assert len(queries) == 3
    for title, sql in queries:
        assert title in page
        assert sql.splitlines()[1] in page  # the WHERE line, with this game's names
        assert con.execute(sql).fetchall(), title


def test_equity_page_shows_the_warehouse_numbers(tiny_build):
    import duckdb

    html = (tiny_build["site"] / "equity-models.html").read_text()
    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    rows = con.execute("SELECT DISTINCT model, player, payoff FROM model_examples WHERE example = 0").fetchall()
    assert len(rows) == 15
    for model, player, payoff in rows:
        assert f"{payoff:.4f}" in html, (model, player, payoff)
    # the default example is the SPEC §4 oracle's stacks, paid with this game's payouts (70, 30)
    from engine import equity_models

    for model, player, payoff in rows:
        P = equity_models.finishing_matrix(model, [2.0, 5.0, 8.0, 13.0, 17.0])
        assert payoff == equity_models.payoffs(P, [70, 30])[player]



def test_equity_page_shows_every_example_of_the_config(tiny_build, tmp_path):
    """A config with several example stack vectors gets a section (tables and chart) for each: the
    page had shown only the first, though `model_examples` held them all."""
    import re

    import duckdb
    import pandas as pd

    from engine import equity_models
    from sitegen.pages import equity_models_page

    warehouse = tmp_path / "lab.duckdb"
    shutil.copy(tiny_build["warehouse"], warehouse)
    with duckdb.connect(str(warehouse)) as con:
        con.execute("UPDATE games SET config_json = json_merge_patch(config_json, "
                    "'{\"examples\": [[2, 5, 8, 13, 17], [3, 1]]}') WHERE game = 'tiny'")
        columns = [r[0] for r in con.execute("DESCRIBE model_examples").fetchall()]
        second = []
        for model in ("harville", "weitzman", "roberts"):
            P = equity_models.finishing_matrix(model, [3.0, 1.0])
            v = equity_models.payoffs(P, [70, 30])
            second += [{"game": "tiny", "example": 1, "model": model, "player": i, "stack": [3.0, 1.0][i],
                        "place": k + 1, "probability": P[i, k], "payoff": v[i]} for i in range(2) for k in range(2)]
        frame = pd.DataFrame(second)[columns]  # noqa: F841 (read by the INSERT below)
        con.execute("INSERT INTO model_examples SELECT * FROM frame")
        page = equity_models_page(con, "tiny")
    assert "## Example 1 (the thesis example): stacks 2, 5, 8, 13, 17, prizes 70, 30" in page
    assert "## Example 2: stacks 3, 1, prizes 70, 30" in page
    tail = page.split("## Example 2")[1]
    for row in second:
        assert f"{row['payoff']:.4f}" in tail
    ids = re.findall(r'id="(chart-[^"]+)"', page)
    assert len(ids) == len(set(ids)) and sum(i.startswith("chart-example-bars") for i in ids) == 2


@pytest.mark.parametrize("depth, named", [(0, "Roberts."), (1, "Roberts and FGS-1 (Future"),
                                          (2, "Roberts, FGS-1 and FGS-2 (Future"),
                                          (3, "Roberts and FGS-1 … FGS-3 (Future")])
def test_models_page_names_the_fgs_models_the_config_has(depth, named):
    from sitegen.pages_models import _models_named

    text = "Models: " + _models_named({"fgs_depth": depth}) + "."
    assert text.startswith("Models: Harville (ICM), Weitzman, ") and named in text and "FGS-0" not in text


def test_showdown_page_equity_against_a_random_hand_is_the_engines(tiny_build):
    """The showdown page's equity against a random hand, by its printed query, equals the solver's
    (`engine.showdown`: opponents weighted by their ordered card-disjoint deals). Weighting by the
    matchup weight, which counts both orders, once gave the mirror matchup half its share."""
    import duckdb
    import numpy as np

    from engine.cards import parse_class
    from engine.rollout import build_pair_table
    from engine.showdown import ordered_pair_weights, win2_matrix
    from sitegen.pages import VS_RANDOM_SQL

    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    rollout = con.execute("SELECT rollout_pairs FROM games WHERE game = 'tiny'").fetchone()[0]
    sql = VS_RANDOM_SQL.format(rollout=rollout)
    import html as html_lib

    page = html_lib.unescape(re.sub(r"<[^>]+>", "", (tiny_build["site"] / "showdown.html").read_text()))
    assert "sum(p.deals * p.p_win) / sum(p.deals)" in page  # the query is printed on the page
    got = {label: p for label, p in con.execute(f"SELECT label, p_vs_random FROM ({sql})").fetchall()}
    W = ordered_pair_weights()
    expected = (W * win2_matrix(build_pair_table("sampled", samples=4, seed=3))).sum(axis=1) / W.sum(axis=1)
    assert len(got) == 169
    np.testing.assert_allclose([got[label] for label in got], [expected[parse_class(label)] for label in got],
                               rtol=0, atol=1e-12)


def test_showdown_page_prints_its_heatmaps_query_and_its_matchups_to_four_decimals(tiny_build):
    """The all-against-all heat map draws exactly the rows of a query the page prints (read from the
    cells Vega draws, whose tooltips show four decimals), and the notable matchups' probabilities
    all show four decimals (0.118 once showed as "0.118")."""
    import html

    import duckdb
    import vl_convert as vlc

    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    page = (tiny_build["site"].parent / "docs" / "showdown.md").read_text()
    svg = vlc.vegalite_to_svg(_chart_spec(page, "pair-heatmap"))
    drawn = sorted((hand, versus, float(p)) for hand, versus, p in re.findall(
        r'<path aria-label="[^"]*; hand: ([^;"]*); versus: ([^;"]*); P\(hand wins\): ([0-9.]+)"', html.unescape(svg)))
    grid_sql = re.search(r"```sql\n(SELECT hand, versus, round\(p_win, 5\) AS p_win FROM pair_equities[^\n]*)\n```",
                         page).group(1)
    truth = sorted(con.execute(grid_sql).fetchall())
    assert [(h, v) for h, v, _ in drawn] == [(h, v) for h, v, _ in truth] and len(drawn) == 169 * 169
    assert [p for *_, p in drawn] == pytest.approx([p for *_, p in truth], rel=0, abs=5e-5 + 1e-12)
    assert {len(r["p_win"]) for r in _chart_rows(page, "pair-heatmap")} == {169}  # inline: a list a row hand
    notable = page.split("## Notable matchups")[1].split("##")[0]
    cells = re.findall(r"(?<=\| )\d\.\d+(?= \|)", notable)
    assert len(cells) >= 2 * 8 and all(len(c) == 6 for c in cells), cells


def test_every_query_printed_on_the_site_runs_on_the_warehouse(tiny_build, capsys):
    """Each page ends with the SQL behind its tables and charts; every printed query runs as printed
    on the game's warehouse and returns rows, in DuckDB and through `jamfold sql --csv`, which the
    pages tell readers to use (a query ending in "; -- a note" failed there)."""
    import duckdb
    from conftest import printed_queries

    from jamfold.cli import main

    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:  # (closed before the CLI's own
        printed = [(page, q, len(con.execute(q).fetchall()))                      # connection locks its settings)
                   for page in PAGES for q in printed_queries((tiny_build["site"] / page).read_text())]
    assert {page for page, _, _ in printed} == set(PAGES)
    assert not [(page, q[:80]) for page, q, rows in printed if not rows]
    failed = []
    for page, q, rows in printed:
        try:
            main(["sql", q, "--csv", "--warehouse", str(tiny_build["warehouse"])])
        except SystemExit as exc:
            failed.append((page, q[:80], exc.code))
        if len(capsys.readouterr().out.splitlines()) < rows + 1:  # (a header line, then at least a line a row)
            failed.append((page, q[:80], "rows"))
    assert not failed

def _chromium():
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def _rendered_dom(url: str, *flags: str, file_access: bool = True) -> str:
    """The page's DOM after its scripts ran, from a headless Chromium with a profile folder of its
    own (two test workers may run one each at the same time). ``file_access=False`` leaves out
    ``--allow-file-access-from-files``: a browser as its users run it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="chromium-", ignore_cleanup_errors=True) as profile:
        cmd = [_chromium(), *flags, f"--user-data-dir={profile}", "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-dev-shm-usage", "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--no-first-run", "--disable-quic",
               *(["--allow-file-access-from-files"] if file_access else []),
               "--virtual-time-budget=30000", "--dump-dom", url]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120).stdout


@pytest.mark.browser
@pytest.mark.parametrize("page, charts", [("showdown.html", 2), ("equity-models.html", 2), ("equilibrium.html", 2),
                                          ("push-fold.html", 5), ("solve-quality.html", 3), ("models.html", 3),
                                          ("model-ranges.html", 2), ("ex-post.html", 1), ("simulation.html", 1)])
def test_charts_render_in_headless_chromium(tiny_build, page, charts):
    if not _chromium():
        pytest.skip("chromium is not installed (./lab test installs Debian's chromium when run as root)")
    dom = _probed_page(tiny_build["site"], page)["dom"]
    divs = re.findall(r'<div class="vchart[^"]*" id="(chart-[a-z0-9-]+)"([^>]*)>', dom)
    assert len(divs) == charts, dom[:2000]
    for chart_id, attrs in divs:
        assert 'data-rendered="ok"' in attrs, (chart_id, attrs)
    # vega-embed drew real SVG marks (rects of the heat map, lines/bars of the model charts)
    assert dom.count('class="mark-') >= charts
    assert "Chart failed to render" not in dom


@pytest.mark.browser
def test_the_model_ranges_drop_down_lists_the_nodes_facing_a_jam(tiny_build):
    """The calling ranges are drawn one decision node at a time: vega-embed draws a drop-down of
    the start state's nodes facing a jam (the tiny game's 2-2-2 has one), the first chosen, and
    draws the grids of the chosen node only."""
    if not _chromium():
        pytest.skip("chromium is not installed (./lab test installs Debian's chromium when run as root)")
    dom = _probed_page(tiny_build["site"], "model-ranges.html")["dom"]
    chart = dom.split('id="chart-model-ranges-facing"')[1].split('<div class="vchart')[0]
    assert re.search(r'<span class="vega-bind-name">decision node\s*</span>', chart), chart[:3000]
    select = re.search(r'<select name="node"[^>]*>(.*?)</select>', chart, re.S).group(1)
    assert re.findall(r'<option value="([^"]*)"', select) == ["SB after BU jam"]
    # one 13×13 grid per profile (the equilibrium and each model), drawn for the chosen node only
    page = (tiny_build["site"].parent / "docs" / "model-ranges.md").read_text()
    profiles = len({r["panel"] for r in _chart_rows(page, "model-ranges-facing")})
    cells = sum(group.count("<path") for group in re.findall(r'<g class="mark-rect role-mark[^"]*"[^>]*>(.*?)</g>',
                                                                chart, re.S))
    assert cells == 169 * profiles, cells


@pytest.mark.browser
def test_picking_another_state_draws_its_grids_in_chromium(tiny_build):
    """A state picker redraws its chart for the state chosen: in headless Chromium a script picks
    the 3-player state 1, 1, 4 (the small blind all in by his blind: only the BU and the BB
    decide) and counts the cells drawn, 169 for each of its nodes as the warehouse has them, where
    the chart opened on 2, 2, 2 (the big blind all in by his: three nodes)."""
    import duckdb

    if not _chromium():
        pytest.skip("chromium is not installed (./lab test installs Debian's chromium when run as root)")
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        opening, nodes = (con.execute("""SELECT count(*) FROM equilibrium_nodes e
                                         JOIN states s USING (game, players, state_id)
                                         WHERE e.game = 'tiny' AND s.stacks = ?""", [stacks]).fetchone()[0]
                          for stacks in ([2, 2, 2], [1, 1, 4]))
    probe = """<script>setTimeout(function () {
  var div = document.getElementById("chart-pf-any-3p"), select = div.querySelector('select[name="state"]');
  var before = div.querySelectorAll("g.mark-rect.role-mark path").length;
  select.value = "1, 1, 4";
  select.dispatchEvent(new Event("change"));
  setTimeout(function () {
    var after = div.querySelectorAll("g.mark-rect.role-mark path").length;
    var titles = Array.prototype.map.call(div.querySelectorAll("g.role-title-text text"),
                                          function (t) { return t.textContent; });
    document.body.setAttribute("data-picked", before + "," + after + "," + titles.join("|"));
  }, 3000);
}, 4000);</script></body>"""
    page = tiny_build["site"] / "probe-picker-push-fold.html"
    page.write_text((tiny_build["site"] / "push-fold.html").read_text().replace("</body>", probe, 1))
    try:
        dom = _rendered_dom(page.as_uri(), "--window-size=1400,2000")
    finally:
        page.unlink()
    before, after, titles = re.search(r'data-picked="(\d+),(\d+),([^"]*)"', dom).groups()
    assert (opening, nodes) == (3, 2) and (int(before), int(after)) == (169 * opening, 169 * nodes)
    # the chart's title names the state picked (it opened on 2, 2, 2), the panels' their nodes
    assert sorted(titles.split("|")) == ["BB after BU jam", "BU first in",
                                         "jam probability per decision node, stacks 1, 1, 4"]


_PAGE_PROBE = """<script>setTimeout(function () {
  var charts = [], tables = [];
  document.querySelectorAll(".vchart").forEach(function (div) {
    var svg = div.querySelector("svg.marks"), menu = div.querySelector("summary");
    charts.push([div.id, svg ? svg.getAttribute("width") : -1, svg ? svg.getBoundingClientRect().width : -1,
                 div.clientWidth, div.scrollWidth, menu ? menu.getBoundingClientRect().width : -1].join(","));
  });
  document.querySelectorAll(".md-typeset__scrollwrap").forEach(function (wrap) {
    var th = wrap.querySelector("th");
    tables.push([wrap.clientWidth, wrap.scrollWidth, th ? th.textContent : ""].join(","));
  });
  document.body.setAttribute("data-charts", charts.join(";"));
  document.body.setAttribute("data-tables", tables.join(";"));
  document.body.setAttribute("data-probed", "yes");
}, 4000);</script></body>"""

_PROBED: dict[tuple[str, str], dict] = {}


def _probed_page(site, page: str) -> dict:
    """The page as headless Chromium renders it on a 1400-px window, loaded once per page for
    the browser tests (a Chromium start costs seconds): its DOM after the scripts ran (``dom``),
    its charts (id, spec width, drawn width, box width, scroll width, menu width) and its tables
    (box width, scroll width, first header), measured by a script added at the page's end."""
    key = (str(site), page)
    if key not in _PROBED:
        probe = site / f"probe-{page}"
        probe.write_text((site / page).read_text().replace("</body>", _PAGE_PROBE, 1))
        try:
            dom = _rendered_dom(probe.as_uri(), "--window-size=1400,2000")
        finally:
            probe.unlink()
        assert 'data-probed="yes"' in dom, dom[:2000]

        def rows(attribute: str, fields: int) -> list[list[str]]:
            value = re.search(rf'{attribute}="([^"]*)"', dom).group(1)
            return [row.split(",", fields - 1) for row in value.split(";")] if value else []
        _PROBED[key] = {"dom": dom, "charts": rows("data-charts", 6), "tables": rows("data-tables", 3)}
    return _PROBED[key]


_PAGES = ["index.html", "showdown.html", "equity-models.html", "equilibrium.html", "push-fold.html",
          "solve-quality.html", "models.html", "model-ranges.html", "ex-post.html", "simulation.html"]


@pytest.mark.browser
@pytest.mark.parametrize("page", _PAGES)
def test_charts_are_drawn_at_their_own_size(tiny_build, page):
    """Material shrinks every svg to the text column; the faceted charts' axis labels ended up 4-5 px
    high, and vega-embed's menu was drawn as a wide admonition title past the chart. Charts must keep
    the size of their spec (scrolling sideways when wider than the column) and the menu its button."""
    if not _chromium():
        pytest.skip("chromium is not installed (./lab test installs Debian's chromium when run as root)")
    charts = _probed_page(tiny_build["site"], page)["charts"]
    assert charts or page == "index.html"
    for row in charts:
        chart_id, width, drawn, client, scroll, menu = row
        assert float(drawn) == pytest.approx(float(width), abs=0.5), row  # not scaled down
        assert 0 < float(menu) <= 40, row  # vega-embed's small round menu button
        if float(width) + 40 <= float(client):  # a chart that fits the column does not scroll
            assert int(scroll) <= int(client), row


@pytest.mark.browser
@pytest.mark.parametrize("page", _PAGES)
def test_tables_fit_the_text_column(tiny_build, page):
    """Tables scrolled sideways on a 1400-px window: the models page's 8-column deviation tables with
    Material's cell padding, the ex post summaries under their long column names, the 11-column
    convergence log at Material's 5rem per header. With the lab's compact padding and headers that
    wrap after underscores, every table fits the column."""
    if not _chromium():
        pytest.skip("chromium is not installed (./lab test installs Debian's chromium when run as root)")
    tables = _probed_page(tiny_build["site"], page)["tables"]
    for client, scroll, _ in tables:
        assert int(scroll) <= int(client), tables
    if page == "models.html":
        assert sum(row[2] == "model" for row in tables) >= 2, tables  # the two deviation summaries
    if page in ("solve-quality.html", "ex-post.html"):
        assert any(row[2] == "profile" for row in tables), tables  # the ex post summary


def test_convergence_chart_and_folded_log_tables_carry_the_solve_log(tiny_build):
    """The solve quality page charts every positive max exploitability, max |ΔV| and target of the
    warehouse's solve log (log scale: the zeros left out), one panel per layer, and folds each
    layer's log table under a line with its outer iterations, CFR+ iterations and seconds."""

    import duckdb

    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    log = con.execute("SELECT * FROM solve_log WHERE game = 'tiny' ORDER BY players, outer_iteration").df()
    page = (tiny_build["site"].parent / "docs" / "solve-quality.md").read_text()
    rows = _chart_rows(page, "convergence")
    drawn = sorted((r["players"], r["outer_iteration"], r["column"], r["usd"]) for r in rows)
    expected = sorted((int(r.players), int(r.outer_iteration), c, float(getattr(r, c))) for r in log.itertuples()
                      for c in ("max_exploitability", "max_delta_v", "target") if getattr(r, c) > 0)
    assert drawn == expected and len(expected) > 2 * len(log)
    for n, rows in log.groupby("players"):
        wall = rows["wall_s"].sum()  # whole seconds from 10 s, hundredths below (a tiny layer's 0.3 s is not "0 s")
        summary = (f"<summary>{n} players: {len(rows)} outer iterations, {int(rows['cfr_iterations'].sum()):,} "
                   f"CFR+ iterations, {f'{wall:,.0f}' if wall >= 10 else f'{wall:.2f}'} s</summary>")
        assert summary in page
    assert page.count('<details markdown="1">') == log["players"].nunique()
    # the query printed for these lines gives their numbers, rounded as the lines round them (to the
    # hundredth under 10 s, a whole second from 10 s; within one step of it: DuckDB and Python may
    # round a float that sits on a half differently)
    totals_sql = re.search(r"```sql\n(SELECT players, count\(\*\) AS outer_iterations.*?)\n```", page, re.S).group(1)
    totals = con.execute(totals_sql).fetchall()
    assert len(totals) == log["players"].nunique()
    for n, outer, cfr, wall in totals:
        shown = re.search(rf"<summary>{n} players: {outer} outer iterations, {cfr:,} CFR\+ iterations, "
                          rf"([\d,.]+) s</summary>", page).group(1)
        assert abs(float(shown.replace(",", "")) - wall) <= (1.0 if "." not in shown else 0.01) + 1e-9, (shown, wall)
    html = (tiny_build["site"] / "solve-quality.html").read_text()
    assert html.count("<details>") == log["players"].nunique() and "<table>" in html.split("<details>")[1]


def test_missing_values_are_blank_cells_not_html_tags():
    """pandas prints a missing integer as `<NA>`, which a browser takes for an unknown tag (the exact
    tables' `boards_per_matchup` cell came out empty that way, with the tag in the page)."""
    import pandas as pd

    from warehouse.db import frame_markdown

    table = frame_markdown(pd.DataFrame({"mode": ["exact", "sampled"],
                                         "boards": pd.array([None, 2000], dtype="Int64")}))
    assert "<NA>" not in table and table.splitlines()[2] == "| exact |  |"


def test_table_cells_show_pipes_and_angle_brackets_as_written():
    """Markdown renders a table cell's text whole: a '|' outside a code span used to end the cell (the
    Warehouse page's "mean |model − equilibrium|, $" showed "mean") and '<boards>' was taken for an
    HTML tag ("'sampled--seed'"). Checked through Python-Markdown, which renders the site's pages."""
    import html

    import markdown
    import pandas as pd

    from warehouse.db import frame_markdown
    from warehouse.schema import TABLES

    texts = ["mean |model − equilibrium|, $", "'exact' or 'sampled-<boards>-seed<seed>'", "a & b, `x | y <z>`",
             "an odd ` backtick <b>|c", "`a` and |b| <c> between `d` spans",
             *(c.description for t in TABLES.values() for c in t.columns)]
    page = markdown.markdown(frame_markdown(pd.DataFrame({"meaning": texts})), extensions=["tables"])
    cells = re.findall(r"<td>(.*?)</td>", page, flags=re.S)
    shown = [html.unescape(re.sub(r"</?code>", "`", c)) for c in cells]
    assert shown == texts


def test_the_warehouse_page_says_its_row_counts_are_of_every_game_in_the_file(tiny_build, tmp_path):
    import duckdb

    from sitegen.pages import warehouse_page

    copy = tmp_path / "two.duckdb"
    shutil.copy(tiny_build["warehouse"], copy)
    con = duckdb.connect(str(copy))
    con.execute("INSERT INTO games SELECT * REPLACE ('tiny-other' AS game) FROM games WHERE game = 'tiny'")
    text = warehouse_page(con, "tiny")
    assert "The row counts are of the whole file, which holds 2 games: `tiny` and `tiny-other`." in text
    assert "holds 2 games: `tiny-other` and `tiny`." in warehouse_page(con, "tiny-other")
    con.execute("DELETE FROM games WHERE game = 'tiny-other'")
    assert "The row counts are of the whole file" not in warehouse_page(con, "tiny")  # (one game: no note)


def test_log_summary_sums_the_logged_seconds_not_the_rounded_ones():
    """The folded log's summary line totals the logged wall seconds; the table beside it rounds each
    to 0.01 s. Two iterations of 0.504 s and 0.004 s total 0.508 s, which prints as 0.51 s, while their
    rounded figures (0.50 + 0.00) would print as 0.50 s; under 10 s the line shows hundredths (it
    showed a small layer's 0.3 s as "0 s"), from 10 s whole seconds."""
    import pandas as pd

    from sitegen.pages_equilibrium import _log_tables

    log = pd.DataFrame({"players": [2, 2], "outer_iteration": [1, 2], "cfr_iterations": [3, 4],
                        "wall_s": [0.504, 0.004]})
    text = _log_tables(log)
    assert "<summary>2 players: 2 outer iterations, 7 CFR+ iterations, 0.51 s</summary>" in text
    assert "0.504" not in text and "0.5" in text
    log["wall_s"] = [10.4, 0.2]
    assert "<summary>2 players: 2 outer iterations, 7 CFR+ iterations, 11 s</summary>" in _log_tables(log)
    log["wall_s"] = [9.5, 0.5]  # (10 s exactly: whole seconds)
    assert "<summary>2 players: 2 outer iterations, 7 CFR+ iterations, 10 s</summary>" in _log_tables(log)


def test_table_headers_wrap_after_underscores():
    """Pages' column names may wrap after an underscore, not before a one- or two-letter tail; the
    Dagster previews keep the names as they are."""
    import pandas as pd

    from sitegen.pages import site_table
    from warehouse.db import frame_markdown

    df = pd.DataFrame({"start_mean_roi_pct": [1.0], "wall_s": [2.0], "max_delta_v": [3.0], "players": [2]})
    head = site_table(df).splitlines()[0]
    assert head == "| start_<wbr>mean_<wbr>roi_<wbr>pct | wall_s | max_<wbr>delta_v | players |"
    assert frame_markdown(df).splitlines()[0] == "| start_mean_roi_pct | wall_s | max_delta_v | players |"
    assert list(df.columns) == ["start_mean_roi_pct", "wall_s", "max_delta_v", "players"]


def test_the_pair_heatmap_labels_the_13_pairs_of_its_169_classes():
    """169 class labels in 640 px overlapped into a smear: each axis labels the pairs alone (the
    two-letter labels), the grid's diagonal."""
    import pandas as pd

    from engine.cards import N_CLASSES, class_kind, class_label
    from sitegen.charts import PAIRS_ONLY, pair_equity_heatmap

    labels = [class_label(c) for c in range(N_CLASSES)]
    shown = [x for x in labels if len(x) == 2]  # what PAIRS_ONLY keeps
    assert shown == [class_label(c) for c in range(N_CLASSES) if class_kind(c) == "pair"] and len(shown) == 13
    assert [labels.index(x) for x in shown] == list(range(0, N_CLASSES, 14))  # the grid's diagonal
    spec = pair_equity_heatmap(pd.DataFrame({"hand": ["AA"], "versus": ["KK"], "p_win": [0.8]}), labels).to_dict()
    assert spec["encoding"]["x"]["axis"]["labelExpr"] == spec["encoding"]["y"]["axis"]["labelExpr"] == PAIRS_ONLY


def test_depth_curves_write_the_depths_upright():
    """The FGS depth charts' x axis holds a few small integers (0 = Harville … D): written upright,
    not turned 90° as an ordinal axis is by default."""
    import pandas as pd

    from sitegen.charts import depth_curve, depth_roi_curve

    df = pd.DataFrame({"depth": [0, 1, 2], "mapd_pct": [9.0, 6.0, 4.0], "mad": [1.0, 0.6, 0.4],
                       "roi_pct": [-2.0, -1.0, -0.2], "roi_se_pct": [0.1, 0.1, 0.1]})
    for chart in (depth_curve(df), depth_roi_curve(df)):
        for panel in chart.to_dict()["hconcat"]:
            for layer in panel.get("layer", [panel]):
                x = layer["encoding"]["x"]
                assert x["title"] == "FGS depth d (0 = Harville)" and x["axis"]["labelAngle"] == 0
    roi = depth_roi_curve(df).to_dict()["hconcat"][0]["layer"]  # the simulated ROI with its error bars
    assert roi[0]["encoding"]["y"]["title"] == "hero ROI (%), the others on the equilibrium"
    assert (roi[1]["encoding"]["y"]["field"], roi[1]["encoding"]["y2"]["field"]) == ("roi_low", "roi_high")


def test_push_fold_grid_rows_fit_the_text_column():
    """A 5-player game's model-ranges chart has four first-in nodes in a row: at 190 px a panel it
    was 904 px wide, past the 868-px column of a 1400-px window. Rows of up to three keep 190 px."""
    import pandas as pd

    from sitegen.charts import GRID_ROW_WIDTH, push_fold_grids

    df = pd.DataFrame({"panel": ["a"], "order": [0], "grid_row": [0], "grid_col": [0], "label": ["AA"],
                       "jam_probability": [1.0]})
    assert push_fold_grids(df, "t", columns=3).to_dict()["spec"]["width"] == 190
    for columns in (4, 5, 6):
        width = push_fold_grids(df, "t", columns=columns).to_dict()["spec"]["width"]
        assert columns * width <= GRID_ROW_WIDTH <= 720


def test_exploitability_histograms_carry_bins_not_states():
    """The solve-quality histograms chart counts binned in SQL (the query is on the page): with one
    row per (state, position) the 45-unit 5-player game's nemesis gains (734,657 pairs) made a page
    of some 60 MB. The counts are numpy.histogram's over the same range, per player count; every
    positive gain is counted once; exact zeros, which have no log, are counted beside the bins and
    named in the chart's title (drawn at 1e-12 $, they stretched the axis so far that a tiny game's
    251 other states filled four bars)."""
    import json

    import duckdb
    import numpy as np
    import pandas as pd

    from sitegen.charts import exploitability_histogram
    from sitegen.pages import HISTOGRAM_BINS, log10_histogram, zero_rows

    rng = np.random.default_rng(5)
    gains = pd.DataFrame({"game": "g", "players": rng.choice([2, 3, 4, 5], 200_000, p=[0.01, 0.02, 0.07, 0.9]),
                          "gain": 10 ** rng.uniform(-9, -2, 200_000)})
    gains.loc[:9, "gain"] = 0.0
    con = duckdb.connect()
    con.register("gains_view", gains)
    con.execute("CREATE TABLE gains AS SELECT * FROM gains_view UNION ALL SELECT 'other', 2, 1e3")
    hist, sql = log10_histogram(con, "gains", "gain", "g")
    assert "FROM gains WHERE game = 'g'" in sql
    assert hist["count"].sum() == len(gains) - 10 and len(hist) <= 4 * HISTOGRAM_BINS
    assert zero_rows(con, "gains", "gain", "g") == 10 and zero_rows(con, "gains", "gain", "other") == 0
    positive = gains[gains["gain"] > 0]
    logs = np.log10(positive["gain"])
    edges = np.linspace(logs.min(), logs.max(), HISTOGRAM_BINS + 1)
    assert hist["bin_start"].min() == pytest.approx(logs.min()) and logs.min() > -9.01
    assert hist["bin_end"].max() == pytest.approx(logs.max())
    for n in (2, 3, 4, 5):
        expected, _ = np.histogram(logs[positive["players"] == n], bins=edges)
        rows = hist[hist["players"] == n]
        got = np.zeros(HISTOGRAM_BINS, int)
        got[np.rint((rows["bin_start"] - edges[0]) / (edges[1] - edges[0])).astype(int)] = rows["count"]
        assert (got == expected).all(), n
    np.testing.assert_allclose(hist["bin_end"] - hist["bin_start"], edges[1] - edges[0])
    spec = json.dumps(exploitability_histogram(hist, 1e-4).to_dict())
    assert len(spec) < 30_000 and "at 0 $" not in spec
    assert "10 states at 0 $ (or a rounding below), not drawn" in json.dumps(
        exploitability_histogram(hist, 1e-4, zeros=10).to_dict())
    single, _ = log10_histogram(con, "gains", "gain", "other")
    assert single["count"].tolist() == [1] and single["bin_start"].iloc[0] == pytest.approx(3)
    empty, _ = log10_histogram(con, "gains", "gain", "none")
    assert empty.empty


def test_facet_charts_wrap_to_the_text_column():
    """One panel per player count, two per row: a 5-player game's four panels in a row were twice
    as wide as the text column."""
    import pandas as pd

    from sitegen.charts import FACET_COLUMNS, ex_post_bars, value_by_stack

    lines = pd.DataFrame({"players": [2, 3, 4, 5], "stack": [1, 1, 1, 1], "series": "harville", "value": 0.0})
    bars = pd.DataFrame({"series": "harville", "players": [2, 3, 4, 5], "mean_gain": 0.1, "max_gain": 0.2})
    for spec in (value_by_stack(lines, "$").to_dict(), ex_post_bars(bars, ["harville"]).to_dict()):
        assert spec["columns"] == FACET_COLUMNS == 2
        assert FACET_COLUMNS * spec["spec"]["width"] <= 560


def test_every_facet_panel_has_its_own_x_axis_and_no_axis_hangs_under_empty_space():
    """Three player counts in two columns, ten decision nodes in three: a shared x axis was drawn
    once per column under the last row, so the columns without a panel there showed an axis with
    nothing above it. Rendered by Vega (vl-convert): one x axis per panel, no more, no fewer."""
    import re

    import pandas as pd
    import vl_convert as vlc

    from sitegen.charts import convergence_lines, ex_post_bars, push_fold_grids, value_by_stack

    def x_axes(chart) -> int:
        return len(re.findall(r'aria-label="X-axis', vlc.vegalite_to_svg(chart.to_dict())))

    for players in ([2, 3, 4], [2, 3, 4, 5], [3]):
        lines = pd.DataFrame({"players": players, "stack": 1, "series": "harville", "value": 0.0})
        bars = pd.DataFrame({"series": "harville", "players": players, "mean_gain": 0.1, "max_gain": 0.2})
        assert x_axes(value_by_stack(lines, "$")) == len(players)
        assert x_axes(ex_post_bars(bars, ["harville"])) == len(players)
    grids = pd.DataFrame({"panel": [f"node {i}" for i in range(10)], "order": range(10), "grid_row": 0,
                          "grid_col": 0, "label": "AA", "jam_probability": 1.0})
    assert x_axes(push_fold_grids(grids, "t", columns=3)) == 10
    log = pd.DataFrame({"players": [2, 3, 3, 4], "outer_iteration": [1, 1, 2, 1], "target": 0.01,
                        "max_delta_v": [0.5, 0.2, 0.0, 1.0], "max_exploitability": 0.005})
    assert x_axes(convergence_lines(log)) == 3


def test_model_pages_show_the_warehouse_numbers(tiny_build):
    """The deviation table on the models page and the ex post table carry the views' numbers."""
    import duckdb

    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    mapd = con.execute("""SELECT mapd_pct FROM deviation_summary WHERE game = 'tiny' AND model = 'roberts'
                          AND averaging = 'plain' AND players IS NULL""").fetchone()[0]
    html = (tiny_build["site"] / "models.html").read_text()
    assert f"{mapd:.4f}" in html
    # counts print as whole numbers (sums of integer columns once came back as floats: "1919.000000")
    states, iterations = con.execute("""SELECT sum(states), sum(cfr_iterations) FROM model_sweeps
                                        WHERE game = 'tiny' AND model = 'FGS-2'""").fetchone()
    assert f"<td>{states}</td>" in html and f"<td>{iterations}</td>" in html
    layer_iterations = con.execute("""SELECT sum(cfr_iterations) FROM state_quality
                                      WHERE game = 'tiny' AND players = 3""").fetchone()[0]
    assert f"<td>{layer_iterations}</td>" in (tiny_build["site"] / "solve-quality.html").read_text()
    gain = con.execute("SELECT all_max_gain FROM ex_post WHERE game = 'tiny' AND profile = 'FGS-2'").fetchone()[0]
    assert f"{gain:.5f}" in (tiny_build["site"] / "ex-post.html").read_text()


def test_ex_post_page_tabulates_every_checked_profile(tiny_build):
    """The ex post page opens with the `ex_post` view: a row per checked profile, the equilibrium
    first and then the models in the pages' order, each number as the view has it (5 decimals)."""
    import duckdb

    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    view = {row[0]: row[1:] for row in con.execute(
        """SELECT profile, start_mean_roi_pct, start_max_roi_pct, start_mean_gain, start_max_gain, all_mean_gain,
                  all_max_gain, pairs FROM ex_post WHERE game = 'tiny'""").fetchall()}
    page = (tiny_build["site"].parent / "docs" / "ex-post.md").read_text()
    rows = re.search(r"^\| profile \|.*\n\|[-|]+\n((?:\|.*\n)+)", page, re.M).group(1).splitlines()
    cells = [line.strip("| ").split(" | ") for line in rows]
    assert [c[0] for c in cells] == ["equilibrium", "harville", "weitzman", "roberts", "FGS-1", "FGS-2", "FGS-3"]
    assert set(view) == {c[0] for c in cells}
    for profile, *shown in cells:
        *numbers, pairs = view[profile]
        assert shown == [f"{x:.5f}" for x in numbers] + [str(pairs)], profile


def test_simulation_page_shows_the_warehouse_numbers(tiny_build):
    """The hero's mean ROI over the seats comes with its standard error (the seats are independent
    runs: sqrt(sum se²) / seats), and the direct matches' tournament counts print as whole numbers."""
    import duckdb
    import numpy as np

    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    roi, se = con.execute("""SELECT list(roi_pct), list(roi_se_pct) FROM simulation
                             WHERE game = 'tiny' AND model = 'weitzman'""").fetchone()
    html = (tiny_build["site"] / "simulation.html").read_text()
    assert f"<td>weitzman</td>\n<td>{np.mean(roi):+.3f} ± {np.sqrt(np.sum(np.square(se))) / len(se):.3f}</td>" in html
    matches = con.execute("""SELECT sum(tournaments) FROM direct_matches WHERE game = 'tiny' AND model_a = 'roberts'
                             AND model_b = 'harville'""").fetchone()[0]
    assert f"<td>{matches}</td>" in html and matches == 6 * 5000
    page = (tiny_build["site"].parent / "docs" / "simulation.md").read_text()
    assert "seatings of the\nstart state, 5,000 tournaments a seating" in page  # direct_match_tournaments
    # the views behind the page's means, against numpy over the raw rows
    fin, hands, played = con.execute("""SELECT list(finishing ORDER BY hero_position), list(mean_hands),
                                               list(tournaments) FROM simulation
                                        WHERE game = 'tiny' AND model = 'weitzman'""").fetchone()
    view = con.execute("SELECT mean_roi_pct, mean_roi_se_pct, finishing, seats, mean_hands, tournaments "
                       "FROM simulation_summary WHERE game = 'tiny' AND model = 'weitzman'").fetchone()
    np.testing.assert_allclose(view[:2], [np.mean(roi), np.sqrt(np.sum(np.square(se))) / len(se)], rtol=1e-12)
    np.testing.assert_allclose(view[2], np.mean(fin, axis=0), rtol=1e-12)
    assert view[3] == len(roi) == 3
    assert view[4] == pytest.approx(np.mean(hands), rel=1e-12) and view[5] == sum(played) == 3 * 20000
    a, a_se, b, b_se, k = (np.array(x) for x in con.execute(
        """SELECT list(roi_a_pct), list(roi_a_se_pct), list(roi_b_pct), list(roi_b_se_pct), list(a_players)
           FROM direct_matches WHERE game = 'tiny' AND model_a = 'FGS-1'""").fetchone())
    view = con.execute("""SELECT mean_roi_a_pct, mean_roi_a_se_pct, mean_roi_b_pct, mean_roi_b_se_pct, seatings,
                                 tournaments
                          FROM direct_match_summary WHERE game = 'tiny' AND model_a = 'FGS-1' AND model_b = 'harville'
                       """).fetchone()
    # every seat alike: a seating with k A players counts k times for A and 3 − k for B
    np.testing.assert_allclose(view[:4], [a @ k / k.sum(), np.hypot.reduce(a_se * k) / k.sum(),
                                          b @ (3 - k) / (3 - k).sum(), np.hypot.reduce(b_se * (3 - k)) / (3 - k).sum()],
                               rtol=1e-12)
    assert view[4] == 2 ** 3 - 2 and sorted(k) == [1, 1, 1, 2, 2, 2] and view[5] == 6 * 5000
    sums, = con.execute("""SELECT list(list_sum(finishing_a)) || list(list_sum(finishing_b)) FROM direct_matches
                           WHERE game = 'tiny' AND model_a = 'FGS-1'""").fetchone()
    assert np.allclose(sums, 1.0, atol=1e-12)  # every tournament finished, so:
    assert view[0] == pytest.approx(-view[2], abs=1e-9)  # the sides' ROIs are opposites
    assert f"{view[0]:.4f}" in html
    assert "<code>./lab jamfold simulate</code>" in html  # where to play more of them
    listed = [line.split(" | ")[0].strip("| ") for line in page.split("## Direct matches")[1].splitlines()
              if line.startswith("| ") and " | harville | " in line]
    assert listed == ["weitzman", "roberts", "FGS-1", "FGS-2", "FGS-3"]  # the pages' order (they were by name)


def test_every_model_line_gets_its_own_colour():
    """Charts with all models in one panel: no two models share a colour (the FGS depths once all
    drew in the same purple), and the FGS-d ramp gets darker with depth."""
    from sitegen.charts import MODEL_COLORS, model_colors

    models = ["harville", "weitzman", "roberts", "proportional", "equilibrium"] + [f"FGS-{d}" for d in range(1, 11)]
    colors = model_colors(models)
    assert len(set(colors)) == len(models)
    assert colors[:5] == [MODEL_COLORS[m] for m in models[:5]]

    def luminance(color: str) -> float:
        r, g, b = (int(color[i:i + 2], 16) for i in (1, 3, 5))
        return 0.2126 * r + 0.7152 * g + 0.0722 * b

    ramp = [luminance(c) for c in colors[5:]]
    assert all(a > b for a, b in zip(ramp, ramp[1:]))
    assert len(set(model_colors(["FGS-1", "FGS-2", "FGS-3"]))) == 3
    assert model_colors(["FGS-2"]) == model_colors(["FGS-7"])  # a lone depth: the darkest


_TITLED_CHANNELS = ("x", "y", "color", "size", "shape", "opacity", "row", "column", "facet")


def _untitled_encodings(spec: dict, where: str = "") -> list[str]:
    """Field encodings of a Vega-Lite spec (layers, facets and concatenations walked) whose axis,
    legend or header would fall back to the bare field name: no ``title``, or an empty one, while
    the axis or legend is drawn."""
    missing = []
    encoding = spec.get("encoding", {})
    if isinstance(spec.get("facet"), dict) and "field" in spec["facet"]:
        encoding = {**encoding, "facet": spec["facet"]}
    for channel, enc in encoding.items():
        if channel not in _TITLED_CHANNELS or not isinstance(enc, dict) or "field" not in enc:
            continue
        if enc.get("axis", {}) is None or enc.get("legend", {}) is None or enc.get("header", {}) is None:
            continue  # drawn without axis, legend or header: nothing to title
        if channel == "facet" and "title" in enc and enc["title"] is None and spec.get("title"):
            continue  # no header title (Vega-Lite draws none for null), the chart's own title above instead
        if not str(enc.get("title") or "").strip():
            missing.append(f"{where}{channel}={enc['field']}")
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for i, sub in enumerate(spec.get(key, [])):
            missing += _untitled_encodings(sub, f"{where}{key}[{i}].")
    if isinstance(spec.get("spec"), dict):
        missing += _untitled_encodings(spec["spec"], f"{where}spec.")
    return missing


def test_every_chart_titles_its_axes_and_legends(tiny_build):
    """Issue #4: "Charts have axis titles with units, legends". Every chart on every page of the
    tiny build's site gives each drawn axis, legend and facet header a title of its own (the push/
    fold grids had none: 'col_rank', 'row_rank')."""
    import json

    charts = 0
    for page in sorted(tiny_build["site"].rglob("*.html")):
        text = page.read_text()
        for target, body in re.findall(
                r'<script type="application/vnd.vegalite\+json" data-target="([^"]+)">(.*?)</script>', text, re.S):
            charts += 1
            assert not _untitled_encodings(json.loads(body)), (page.name, target, _untitled_encodings(json.loads(body)))
    assert charts >= 15, charts


def test_a_site_left_between_its_two_renames_comes_back_even_if_the_next_build_fails(tmp_path):
    """A build killed after moving the last site aside (site → site.old) and before moving the new
    one in left no site; the next build puts the last one back first, so a failing build (here:
    no warehouse) still leaves a site to browse."""
    from sitegen.build import build_site

    out = tmp_path / "out"
    (out / "site.old").mkdir(parents=True)
    (out / "site.old" / "index.html").write_text("the last site")
    with pytest.raises(FileNotFoundError):
        build_site("tiny", tmp_path / "missing.duckdb", out)
    assert (out / "site" / "index.html").read_text() == "the last site"


def test_a_site_build_interrupted_in_mkdocs_leaves_the_last_site_and_no_half_built_one(tiny_build, tmp_path,
                                                                                      monkeypatch):
    """Ctrl-C (or a failure) while mkdocs writes the new site: the last site stays as it was and
    the half-written staging folder is removed then, not left until the next build."""
    import types
    from pathlib import Path

    from sitegen import build

    out = tmp_path / "out"
    (out / "site").mkdir(parents=True)
    (out / "site" / "index.html").write_text("the last site")

    def interrupted_mkdocs(cmd, **kw):
        assert "mkdocs" in cmd
        staging = Path(cmd[cmd.index("--site-dir") + 1])
        staging.mkdir(parents=True)
        (staging / "index.html").write_text("half")
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "subprocess", types.SimpleNamespace(run=interrupted_mkdocs))  # (this module's only)
    with pytest.raises(KeyboardInterrupt):
        build.build_site("tiny", tiny_build["warehouse"], out)
    assert (out / "site" / "index.html").read_text() == "the last site"
    assert not (out / "site.new").exists() and not (out / "site.old").exists()


def test_the_vega_bundle_a_killed_build_left_short_is_made_again(tmp_path):
    """The chart library is kept between builds, stamped with vl-convert's version and its length:
    a truncated file (a build killed while writing it, before the atomic write) is remade."""
    import vl_convert as vlc

    from sitegen.embed import write_assets

    write_assets(tmp_path)
    bundle = tmp_path / "assets" / "vega-bundle.js"
    full = bundle.read_text()
    assert len(full) > 100_000 and (tmp_path / "assets" / "vega-bundle.stamp").read_text().split()[0] == vlc.__version__
    bundle.write_text(full[:1000])
    write_assets(tmp_path)
    assert bundle.read_text() == full
    assert not list((tmp_path / "assets").glob("*.tmp"))


def test_the_vega_bundle_is_made_once_a_process(tmp_path, monkeypatch):
    """Two builds into two new folders (the tests' tiny builds) make the 2-second bundle once."""
    import vl_convert as vlc

    from sitegen.embed import write_assets

    write_assets(tmp_path / "a")
    monkeypatch.setattr(vlc, "javascript_bundle", lambda: pytest.fail("the bundle was made again"))
    write_assets(tmp_path / "b")
    made = [(tmp_path / f / "assets" / "vega-bundle.js").read_text() for f in ("a", "b")]
    assert made[0] == made[1] and len(made[0]) > 100_000


def test_the_model_ranges_grids_show_every_model_next_to_the_equilibrium(tiny_build):
    """SPEC §7.7 and issue #4 ask for the push/fold charts of any model next to the equilibrium: the
    grids used to show only the equilibrium, Harville and the deepest FGS (Weitzman, Roberts and
    the shallower FGS depths were in the percentage table alone)."""

    import duckdb

    from sitegen.pages_models import configured_models, model_ranges_page
    from sitegen.pages import game_info

    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        page = model_ranges_page(con, "tiny")
        models = configured_models(game_info(con, "tiny"))
    rows = _chart_rows(page, "model-ranges")
    shown = {r["panel"].split(" · ")[0] for r in rows}
    assert shown == {"equilibrium", *models} and len(models) == 6
    order = sorted({(r["order"], r["panel"].split(" · ")[0]) for r in rows})
    assert order[0][1] == "equilibrium"


def test_printed_queries_list_models_in_the_pages_order():
    """The pages' tables list the equilibrium, the ICM family, then FGS by depth (FGS-10 after
    FGS-2); the queries printed under them sort by the same key (they sorted by MAPD or by gain)."""
    import duckdb

    from sitegen.pages_models import model_order, report_order

    names = ["FGS-10", "roberts", "FGS-2", "equilibrium", "harville", "FGS-1", "weitzman"]
    con = duckdb.connect()
    sql = f"SELECT model FROM (SELECT unnest({names!r}) AS model) ORDER BY {report_order()}"
    assert [m for (m,) in con.execute(sql).fetchall()] == ["equilibrium", *model_order(names[:3] + names[4:])]


def test_a_grid_draws_the_cells_it_has_rows_for_and_only_those():
    """The grids' inline data hold a list of 169 probabilities per grid, None where the table had
    no row: such a cell is left undrawn (not drawn as 0), and a cell off the 13×13 grid is refused."""
    import pandas as pd

    from sitegen.charts import push_fold_grids

    ranks = "AKQJT98765432"
    rows = [{"panel": p, "order": k, "grid_row": r, "grid_col": c, "label": f"{ranks[r]}{ranks[c]}",
             "jam_probability": (r * 13 + c) / 168} for k, p in enumerate(["a", "b"])
            for r in range(13) for c in range(13) if not (p == "b" and r == c)]  # b: no pairs
    page = f'data-target="chart-g">{json.dumps(push_fold_grids(pd.DataFrame(rows), "t").to_dict())}</script>'
    cells = _drawn_grid_cells(page, "g")
    assert [c["panel"] for c in cells] == ["a"] * 169 + ["b"] * 156
    for c in cells:
        r, col = ranks.index(c["row_rank"]), ranks.index(c["col_rank"])
        assert c["hand"] == ranks[r] + ranks[col] and c["p"] == pytest.approx((r * 13 + col) / 168, rel=5e-3, abs=5e-5)
    assert not [c for c in cells if c["panel"] == "b" and c["row_rank"] == c["col_rank"]]
    assert _drawn_grid_labels(page, "g") == [c["hand"] for c in cells]  # no label over an undrawn cell
    with pytest.raises(ValueError, match="grid_row and grid_col"):
        push_fold_grids(pd.DataFrame([{**rows[0], "grid_col": 13}]), "t")


def test_the_grids_by_node_offer_every_node_and_open_on_the_first():
    """``push_fold_grids_by_node`` draws one node at a time: its drop-down lists the nodes in the
    order given and opens on the first (a game's start state has up to dozens of nodes)."""
    import pandas as pd

    from sitegen.charts import push_fold_grids_by_node

    nodes = ["CO after HJ jam", "BU after HJ jam", "SB after HJ + CO jam"]
    df = pd.DataFrame([{"node": n, "panel": p, "order": k, "grid_row": r, "grid_col": c, "label": f"{r}{c}",
                        "jam_probability": 0.5} for n in nodes for k, p in enumerate(["equilibrium", "harville"])
                       for r in range(13) for c in range(13)])
    spec = push_fold_grids_by_node(df, "calls", nodes).to_dict()
    (param,) = spec["params"]
    assert param["bind"]["options"] == nodes and param["value"] == nodes[0]
    # the chosen node's grids first, then their cells spread out (a layer's picker holds thousands of grids)
    assert spec["transform"][0] == {"filter": "(datum.node === node)"}
    assert [t for t in spec["transform"] if "filter" in t] == [{"filter": "(datum.node === node)"},
                                                               {"filter": "isValid(datum.jam_probability)"}]


def test_the_push_fold_page_draws_any_state_of_a_layer_that_fits(tiny_build, monkeypatch):
    """SPEC §7.7 asks for push/fold charts of any state: the page has a state picker per solved
    layer whose grids fit ``ANY_STATE_MAX_CELLS``, listing the states where someone decides in
    the warehouse's order, opening on the most even stacks and drawing that state's every node as
    the warehouse has it; a layer over the limit is named, with the command that prints any state."""
    import duckdb
    import vl_convert as vlc

    from sitegen import pages_equilibrium
    from sitegen.pages_equilibrium import push_fold_page

    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        page = push_fold_page(con, "tiny")
        states = {n: [", ".join(map(str, s)) for (s,) in con.execute(
            "SELECT stacks FROM states s WHERE game = 'tiny' AND players = ? AND state_id IN "
            "(SELECT state_id FROM equilibrium_nodes WHERE game = 'tiny' AND players = ?) ORDER BY state_id",
            [n, n]).fetchall()] for n in (2, 3)}
        jams = con.execute("""SELECT array_to_string(s.stacks, ', ') AS state, j.actor_name, j.jammed_before,
                                     j.label, j.jam_probability
                              FROM equilibrium_jam j JOIN states s USING (game, players, state_id)
                              WHERE j.game = 'tiny'""").df()
        nodes = dict(con.execute("SELECT players, count(*) FROM equilibrium_nodes WHERE game = 'tiny' GROUP BY ALL")
                     .fetchall())
        monkeypatch.setattr(pages_equilibrium, "ANY_STATE_MAX_CELLS", 169 * nodes[2])  # the 2-player layer fits
        small = push_fold_page(con, "tiny")
    assert "## Any state of the 2- and 3-player layers" in page
    assert len(states[2]) == 4 and len(states[3]) == 10  # 6 units: (1, 5) … (4, 2); (1, 1, 4) … (4, 1, 1)
    jams["node"] = [actor + (" first in" if len(before) == 0 else f" after {' + '.join(before)} jam")
                    for actor, before in zip(jams["actor_name"], jams["jammed_before"])]
    truth = jams.set_index(["state", "node", "label"])["jam_probability"]
    for n, first, seats in ((2, "3, 3", "SB, BB"), (3, "2, 2, 2", "BU, SB, BB")):
        (param,) = _chart_spec(page, f"pf-any-{n}p")["params"]
        assert param["bind"]["options"] == states[n] and param["value"] == first
        assert param["bind"]["name"] == f"stacks ({seats}) "
        cells = _drawn_grid_cells(page, f"pf-any-{n}p")  # the state it opens on, named in its title
        svg = vlc.vegalite_to_svg(_chart_spec(page, f"pf-any-{n}p"))
        assert f"Title text 'jam probability per decision node, stacks {first}'" in svg
        at_first = jams.loc[jams["state"] == first, "node"].unique()
        assert len(cells) == 169 * len(at_first) and {c["panel"] for c in cells} == set(at_first)
        for c in cells:
            assert c["p"] == pytest.approx(truth[(first, c["panel"], c["hand"])], rel=5e-3, abs=5e-5)
    # the page prints the query the pickers draw (the last layer's): its rows are the chart's
    (printed,) = [q for q in re.findall(r"```sql\n(.*?)\n```", page, re.S) if "array_to_string(s.stacks" in q]
    with duckdb.connect(str(tiny_build["warehouse"]), read_only=True) as con:
        rows = con.execute(printed).df()
    assert sorted(map(tuple, rows[rows["state"] == "2, 2, 2"][["panel", "label"]].values)) == sorted(
        (c["panel"], c["hand"]) for c in cells) and set(rows["state"]) == set(states[3])
    assert "pf-any-2p" in small and "pf-any-3p" not in small and "## Any state of the 2-player layer\n" in small
    assert f"The {nodes[3]} nodes of the 3-player layer are too many to put on one page" in small
    assert "`./lab jamfold state --stacks …`" in small


def _scorecard_rows(page: str) -> list[list[str]]:
    """The cells of the home page's headline table (markdown source)."""
    rows = re.search(r"^\| model \| mapd_<wbr>pct \|.*\n\|[-|]+\n((?:\|.*\n)+)", page, re.M).group(1).splitlines()
    return [[cell.strip() for cell in line.strip()[1:-1].split("|")] for line in rows]


def test_home_page_opens_with_the_scorecard_of_every_profile_and_its_findings(tiny_build):
    """"What this build found" is `model_scorecard`, whose numbers are recomputed here with numpy
    from the rows behind them (model payoffs against the equilibrium's, the simulated seats, the
    nemesis gains at the start state and everywhere): a row per profile in the pages' order, 4
    decimals, the equilibrium's deviations blank; and its sentences name the models with the
    smallest and the largest of each number."""
    import duckdb
    import numpy as np
    import pandas as pd

    con = duckdb.connect(str(tiny_build["warehouse"]), read_only=True)
    values = con.execute("""SELECT model, payoff, equilibrium, payoff_pa, equilibrium_pa FROM model_values
                            WHERE game = 'tiny'""").df()
    values["rel"] = (values.payoff - values.equilibrium).abs() / values.equilibrium * 100
    values["rel_pa"] = (values.payoff_pa - values.equilibrium_pa).abs() / values.equilibrium_pa * 100
    values["abs"] = (values.payoff - values.equilibrium).abs()
    truth = values.groupby("model")[["rel", "rel_pa", "abs"]].mean()
    seats = con.execute("SELECT model, roi_pct, roi_se_pct FROM simulation WHERE game = 'tiny'").df()
    sim = seats.groupby("model").agg(roi=("roi_pct", "mean"),
                                     se=("roi_se_pct", lambda s: np.sqrt(np.square(s).sum()) / len(s)))
    players, pool, start = con.execute("SELECT players, prize_pool, start FROM games WHERE game = 'tiny'").fetchone()
    gains = con.execute("""SELECT n.profile AS model, n.gain, s.stacks FROM nemesis_values n
                           JOIN states s USING (game, players, state_id) WHERE n.game = 'tiny'""").df()
    start_rows = gains[gains.stacks.map(lambda x: list(x) == list(start))]
    at_start = start_rows.groupby("model").gain.mean() / (pool / players) * 100
    card = con.execute("SELECT * FROM model_scorecard WHERE game = 'tiny'").df().set_index("model")
    assert set(card.index) == set(truth.index) | set(sim.index) | set(at_start.index) | {"equilibrium"}
    assert len(card) == 7 and card.loc["equilibrium", ["mapd_pct", "mapd_pa_pct", "mad"]].isna().all()
    for model in truth.index:
        np.testing.assert_allclose(card.loc[model, ["mapd_pct", "mapd_pa_pct", "mad"]], truth.loc[model], rtol=1e-9)
    for model in card.index:
        np.testing.assert_allclose(card.loc[model, ["sim_roi_pct", "sim_roi_se_pct"]], sim.loc[model], rtol=1e-9)
        assert card.loc[model, "nemesis_start_roi_pct"] == pytest.approx(at_start[model], rel=1e-9)
        assert card.loc[model, "nemesis_max_gain"] == pytest.approx(gains[gains.model == model].gain.max(), rel=1e-12)

    page = (tiny_build["site"].parent / "docs" / "index.md").read_text()
    rows = _scorecard_rows(page)
    assert [r[0] for r in rows] == ["equilibrium", "harville", "weitzman", "roberts", "FGS-1", "FGS-2", "FGS-3"]
    columns = ["mapd_pct", "mapd_pa_pct", "mad", "sim_roi_pct", "sim_roi_se_pct", "nemesis_start_roi_pct",
               "nemesis_max_gain"]
    for model, *shown in rows:
        assert shown == ["" if pd.isna(x) else f"{x:.4f}" for x in card.loc[model, columns]], model
    found = page.split("## What this build found")[1].split("The table says")[0]
    named = {"harville": "Harville", "weitzman": "Weitzman", "roberts": "Roberts"}
    models = card.drop(index="equilibrium")
    low, high = (named.get(m, m) for m in (models.mapd_pct.idxmin(), models.mapd_pct.idxmax()))
    closest = f"{low} is the closest to the equilibrium (MAPD {models.mapd_pct.min():.2f} %) and {high} the farthest"
    assert closest in found
    best, worst = (named.get(m, m) for m in (models.sim_roi_pct.idxmax(), models.sim_roi_pct.idxmin()))
    assert f"a player on {best}'s strategies does best" in found and f"one on {worst}'s worst" in found
    least, most = (named.get(m, m) for m in (models.nemesis_start_roi_pct.idxmin(),
                                             models.nemesis_start_roi_pct.idxmax()))
    assert f"wins least against {least}'s profile" in found and f"most against {most}'s" in found
    assert "A blank cell is an analysis" not in page  # every model has every number here


def test_the_findings_compare_two_models_or_more_and_skip_missing_numbers():
    """A sentence needs two models with the number (one model cannot be both the closest and the
    farthest); the equilibrium's row and blank cells take no part."""
    import numpy as np
    import pandas as pd

    from sitegen.pages_home import scorecard_findings

    nan = np.nan
    card = pd.DataFrame({"model": ["equilibrium", "harville", "FGS-1", "roberts"],
                         "mapd_pct": [nan, 10.0, 2.0, nan], "sim_roi_pct": [-9.0, -1.5, nan, nan],
                         "sim_roi_se_pct": [0.1, 0.2, nan, nan], "nemesis_start_roi_pct": [0.0, 4.0, 1.0, 7.0]})
    assert scorecard_findings(card) == [
        "In payoffs, FGS-1 is the closest to the equilibrium (MAPD 2.00 %) and Harville the farthest (10.00 %).",
        "A nemesis wins least against FGS-1's profile from the start state (1.00 % of a fair share) and most "
        "against Roberts's (7.00 %)."]
    card.loc[2, ["sim_roi_pct", "sim_roi_se_pct"]] = [0.25, 0.05]
    assert scorecard_findings(card)[1] == ("In play, a player on FGS-1's strategies does best against an equilibrium "
                                           "table (ROI +0.25 ± 0.05 %) and one on Harville's worst (-1.50 ± 0.20 %).")
    # 3 standard errors of the difference apart, and just under: a difference the simulation cannot tell
    card.loc[2, "sim_roi_pct"] = -1.5 + 3 * np.hypot(0.2, 0.05)
    assert scorecard_findings(card)[1].startswith("In play, a player on FGS-1's strategies does best")
    card.loc[2, "sim_roi_pct"] = -1.5 + 2.99 * np.hypot(0.2, 0.05)
    assert scorecard_findings(card)[1] == ("In play, the models' simulated ROIs (-1.50 to -0.88 %) differ by less "
                                           "than 3 standard errors of the difference: these tournaments do not tell "
                                           "the models apart.")


_SEARCH_PROBE = """<script>setTimeout(function () {
  document.querySelector("label[for=__search]").click();
  setTimeout(function () {
    var input = document.querySelector("input.md-search__input");
    input.focus();
    input.value = "Harville";
    input.dispatchEvent(new KeyboardEvent("keyup", {bubbles: true, key: "e"}));
    setTimeout(function () {
      var meta = document.querySelector(".md-search-result__meta");
      var hits = Array.prototype.map.call(document.querySelectorAll(".md-search-result__item a"),
                                          function (a) { return a.getAttribute("href"); });
      document.body.setAttribute("data-search", (meta ? meta.textContent.trim() : "none") + "|" + hits.join(" "));
    }, 3000);
  }, 2000);
}, 2000);</script></body>"""


@pytest.mark.browser
def test_the_search_finds_pages_in_a_site_opened_from_disk(tiny_build):
    """The site works from disk with no network, its search too: in headless Chromium, without the
    flag that lets file:// pages read files (a browser as its users run it), opening the search and
    typing "Harville" lists the pages that name him. Browsers refuse a web worker from file://, so
    the search needs mkdocs-material's offline plugin (its index as a script) and iframe-worker's
    shim, which the site carries in its own assets: no page loads a script from the network (the
    plugin's default, unpkg.com)."""
    site = tiny_build["site"]
    for page in site.glob("*.html"):
        assert not re.findall(r'<script[^>]+src="(?:https?:)?//', page.read_text()), page.name
    assert (site / "search" / "search_index.js").exists() and (site / "assets" / "iframe-worker-shim.js").exists()
    if not _chromium():
        pytest.skip("chromium is not installed (./lab test installs Debian's chromium when run as root)")
    probe = site / "probe-search.html"
    probe.write_text((site / "index.html").read_text().replace("</body>", _SEARCH_PROBE, 1))
    try:
        dom = _rendered_dom(probe.as_uri(), "--window-size=1400,2000", file_access=False)
    finally:
        probe.unlink()
    meta, hits = re.search(r'data-search="([^"|]*)\|([^"]*)"', dom).groups()
    assert re.fullmatch(r"\d+ matching documents?", meta.strip()), meta
    pages = {href.split("#")[0].rsplit("/", 1)[-1] for href in hits.split()}
    assert {"equity-models.html", "simulation.html"} <= pages, hits
