"""Build the static results site for one game from the warehouse: pages → build/docs, mkdocs → build/site."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from sitegen import pages, pages_equilibrium, pages_home, pages_models
from sitegen.embed import write_assets, write_atomic
from warehouse import db

REPO_ROOT = Path(__file__).resolve().parents[2]
NAV = [("Home", "index.md"), ("Showdown tables", "showdown.md"), ("Equity models", "equity-models.md"),
       ("Equilibrium", "equilibrium.md"), ("Push/fold charts", "push-fold.md"), ("Solve quality", "solve-quality.md"),
       ("Models vs equilibrium", "models.md"), ("Model ranges", "model-ranges.md"), ("Ex post", "ex-post.md"),
       ("Simulation", "simulation.md"), ("Warehouse", "warehouse.md")]
EQUILIBRIUM_PAGES = {"equilibrium.md", "push-fold.md", "solve-quality.md"}
COMPARISON_PAGES = {"models.md"}  # the equilibrium and the ICM family's payoffs, no model sweep needed
MODEL_PAGES = {"model-ranges.md", "ex-post.md"}
SIMULATION_PAGES = {"simulation.md"}  # the equilibrium's control needs no model sweep
PAGES = {
    "index.md": pages_home.home_page,
    "showdown.md": pages.showdown_page,
    "equity-models.md": pages.equity_models_page,
    "equilibrium.md": pages_equilibrium.equilibrium_page,
    "push-fold.md": pages_equilibrium.push_fold_page,
    "solve-quality.md": pages_equilibrium.solve_quality_page,
    "models.md": pages_models.deviation_page,
    "model-ranges.md": pages_models.model_ranges_page,
    "ex-post.md": pages_models.ex_post_page,
    "simulation.md": pages_models.simulation_page,
    "warehouse.md": pages.warehouse_page,
}


SITE_URL_VARIABLE = "JAMFOLD_SITE_URL"


def site_url() -> str | None:
    """The web address the site will be served from ($JAMFOLD_SITE_URL; blank or unset: none), as
    mkdocs' ``site_url``. Without one the site works from disk and from a server's root; with one
    the 404 page's links (which must be absolute: a server shows it at any depth), the canonical
    links and the sitemap point there, so the site can also be hosted under a sub-path.

    Raises ValueError naming the variable and the rule for anything but an http(s) address with a
    host, so that a build refuses it before any work rather than in its last asset.
    """
    value = os.environ.get(SITE_URL_VARIABLE, "").strip()
    if not value:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ValueError(f"{SITE_URL_VARIABLE}: {value!r} is not a web address to serve the site from: it "
                         "must be http:// or https://, a host, and a path if any, with no query or fragment "
                         "(e.g. https://example.org/lab/)")
    return value if value.endswith("/") else value + "/"


def write_pages(game: str, docs_dir: Path, warehouse: str | Path | None = None) -> list[Path]:
    """Render every page of ``game`` from the warehouse (read-only) into ``docs_dir``."""
    docs_dir.mkdir(parents=True, exist_ok=True)
    write_assets(docs_dir)
    written = []
    with db.session(warehouse, read_only=True) as con:
        solved, compared = pages.is_solved(con, game), pages.is_compared(con, game)
        modelled, simulated = pages.is_modelled(con, game), pages.is_simulated(con, game)
        for stale in EQUILIBRIUM_PAGES | COMPARISON_PAGES | MODEL_PAGES | SIMULATION_PAGES:
            (docs_dir / stale).unlink(missing_ok=True)
        for name, render in PAGES.items():
            if ((name in EQUILIBRIUM_PAGES and not solved) or (name in COMPARISON_PAGES and not compared)
                    or (name in MODEL_PAGES and not modelled) or (name in SIMULATION_PAGES and not simulated)):
                continue  # no page until the game has the data behind it
            path = docs_dir / name
            write_atomic(path, render(con, game))
            written.append(path)
    return written


def build_site(game: str, warehouse: str | Path | None = None, out: Path | None = None) -> Path:
    """Pages + mkdocs build; the finished site replaces ``out/site`` only once it is complete."""
    out = out or REPO_ROOT / "build"
    url = site_url()  # (a bad one fails before the pages are written)
    fresh, final, old = out / "site.new", out / "site", out / "site.old"
    if not final.exists() and old.exists():  # a build killed between its two renames: the last site back
        old.rename(final)
    write_pages(game, out / "docs", warehouse)
    shutil.rmtree(fresh, ignore_errors=True)
    env = {**os.environ, "JAMFOLD_DOCS_DIR": str(out / "docs")}
    config = _write_config(out, [(title, page) for title, page in NAV if (out / "docs" / page).exists()], url)
    try:
        # No -q: mkdocs' quiet mode drops the warnings before --strict counts them (a dead link passed).
        proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                               "--site-dir", str(fresh)], env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"mkdocs build failed:\n{proc.stdout}\n{proc.stderr}")
    except BaseException:  # failed or interrupted (Ctrl-C, SIGTERM): no half-built site left beside the last one
        shutil.rmtree(fresh, ignore_errors=True)
        raise
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    fresh.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def _write_config(out: Path, nav: list[tuple[str, str]], url: str | None = None) -> Path:
    """mkdocs config for this build: the repo's mkdocs.yml plus a nav of the pages that exist, and
    the site's web address if it has one (:func:`site_url`)."""
    path = out / "mkdocs.yml"
    lines = [f"INHERIT: {REPO_ROOT / 'mkdocs.yml'}"] + ([f"site_url: {json.dumps(url)}"] if url else [])
    lines += ["nav:"] + [f'  - "{t}": {p}' for t, p in nav]
    path.write_text("\n".join(lines) + "\n")
    return path


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--game", default="quick")
    parser.add_argument("--warehouse", default=None)
    args = parser.parse_args(argv)
    print(build_site(args.game, args.warehouse))


if __name__ == "__main__":
    main()
