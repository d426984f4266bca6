"""Embedding Altair charts in mkdocs pages so they render offline.

Each chart becomes a ``<div class="vchart">`` followed by a JSON script block with its Vega-Lite
spec (data inline). ``assets/charts.js`` renders every such block with vega-embed, which ships in
``assets/vega-bundle.js`` (made by vl-convert: Vega, Vega-Lite and vega-embed in one classic
script, so pages also work when opened from disk).
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import altair as alt
import vl_convert as vlc

CHARTS_JS = """\
// Render every Vega-Lite block on the page (also after Material's instant navigation).
function renderVegaCharts() {
  document.querySelectorAll('script[type="application/vnd.vegalite+json"]').forEach(function (el) {
    if (el.dataset.done) return;
    el.dataset.done = "1";
    var target = document.getElementById(el.dataset.target);
    vegaEmbed(target, JSON.parse(el.textContent), {renderer: "svg", actions: {export: true, source: false, compiled: false, editor: false}})
      .then(function () { target.setAttribute("data-rendered", "ok"); })
      .catch(function (err) { target.setAttribute("data-rendered", "error"); target.textContent = "Chart failed to render: " + err; });
  });
}
if (typeof document$ !== "undefined") { document$.subscribe(renderVegaCharts); }
else { document.addEventListener("DOMContentLoaded", renderVegaCharts); }
"""

CHARTS_CSS = """\
/* Charts keep the size their spec gives them: Material shrinks every svg to the text column
   (max-width: 100%), which scaled the faceted charts' axis labels down to 4-5 px; a chart wider
   than the column scrolls sideways instead, as wide tables do. */
.md-typeset .vchart svg { max-width: none; }
.md-typeset .vchart { overflow-x: auto; max-width: 100%; }
/* vega-embed's "..." menu is a <details>/<summary>, which Material styles as a collapsible
   admonition: a blue rule under every chart and a wide title bar past the chart's right edge.
   Give the menu back vega-embed's own small round button. */
.md-typeset .vega-embed details { margin: 0; padding: 0; border: 0; box-shadow: none; background: none;
  font-size: inherit; overflow: visible; }
.md-typeset .vega-embed summary { margin: 0; padding: 6px; min-height: 0; font-weight: normal;
  border: 1px solid #aaa; border-radius: 999px; background: white; }
.md-typeset .vega-embed summary::before, .md-typeset .vega-embed summary::after { content: none; display: none; }
/* Tables: Material pads each cell 1.25em either side, which pushed the 8-column deviation tables
   past the text column (a sideways scroll bar under each); half that fits them. Its 5rem minimum
   per header set the 11-column convergence log at 1,100 px whatever its contents; headers may
   wrap after underscores instead (the pages put <wbr> there). */
.md-typeset table:not([class]) th, .md-typeset table:not([class]) td { padding: .75em .7em; }
.md-typeset table:not([class]) th { min-width: 0; }
/* A wider page on wide screens, for the 13x13 grids and the wide tables (Material: 61rem). */
.md-grid { max-width: 76rem; }
"""


WORKER_SHIM = Path(__file__).resolve().parents[1] / "vendor" / "iframe-worker" / "shim.js"
"""iframe-worker's shim, which mkdocs-material's offline plugin needs for the search to work from
disk (see site/vendor/iframe-worker/README.md)."""


def write_assets(docs_dir: Path) -> None:
    """Write the vega bundle, the chart renderer, the charts' stylesheet and the search's worker shim
    into ``docs_dir/assets``."""
    target = docs_dir / "assets"
    target.mkdir(parents=True, exist_ok=True)
    # The bundle (0.9 MB, 2 s to make) is kept between builds, stamped with the vl-convert version
    # that made it and its length: a vl-convert upgrade remakes it, and so does a file a killed
    # build left short.
    bundle, stamp = target / "vega-bundle.js", target / "vega-bundle.stamp"
    kept = stamp.read_text().split() if stamp.exists() else []
    if not bundle.exists() or kept != [vlc.__version__, str(bundle.stat().st_size)]:
        write_atomic(bundle, _vega_bundle(vlc.__version__))
        write_atomic(stamp, f"{vlc.__version__} {bundle.stat().st_size}\n")
    write_atomic(target / "charts.js", CHARTS_JS)
    write_atomic(target / "charts.css", CHARTS_CSS)
    write_atomic(target / "iframe-worker-shim.js", WORKER_SHIM.read_text())  # the search from disk (mkdocs.yml)


@functools.cache
def _vega_bundle(version: str) -> str:
    """vl-convert's bundle of Vega, Vega-Lite and vega-embed (``version``: vl-convert's), made once a
    process: a build into a new folder (every test's tiny build) needs it again."""
    return vlc.javascript_bundle()


def write_atomic(path: Path, text: str) -> None:
    """``text`` into ``path`` complete or not at all (a temporary name, then a rename): the site's
    pages and assets, which a killed build must not leave cut short."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def chart_html(chart: alt.TopLevelMixin, chart_id: str, caption: str = "") -> str:
    """Markdown-safe HTML block for one chart (a blank line before and after)."""
    if not re.fullmatch(r"[a-z0-9-]+", chart_id):
        raise ValueError(f"chart id must be lowercase letters, digits and '-': {chart_id!r}")
    with alt.data_transformers.disable_max_rows():  # data is inline by design (offline pages)
        spec = json.dumps(chart.to_dict(), separators=(",", ":")).replace("</", "<\\/")
    cap = f'<p class="chart-caption">{caption}</p>' if caption else ""
    return (f'\n<div class="vchart" id="chart-{chart_id}"></div>\n'
            f'<script type="application/vnd.vegalite+json" data-target="chart-{chart_id}">{spec}</script>\n'
            f"{cap}\n")
