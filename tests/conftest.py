"""Shared fixtures: a tiny game built end to end through the real Dagster graph."""

import os

import pytest

# a user's own site address must not reach the tests' builds (tests that need one set it)
os.environ.pop("JAMFOLD_SITE_URL", None)

TINY_TOML = """
name = "tiny"
players = 3
units = 6
payouts = [70, 30]
gamma = 0.001
rollout_pairs = "sampled"
rollout_triples = "sampled"
rollout_samples = 4
rollout_seed = 3
simulation_tournaments = 20000
direct_match_tournaments = 5000
"""


@pytest.fixture(scope="session")
def tiny_build(tmp_path_factory):
    """Materialize every asset for a 3-player, 6-unit game with tiny sampled tables; returns paths and the result."""
    import dagster as dg

    from assets.definitions import ALL_ASSETS
    from assets.resources import GameResource, WarehouseResource

    root = tmp_path_factory.mktemp("tiny")
    config = root / "tiny.toml"
    config.write_text(TINY_TOML)
    warehouse = root / "lab.duckdb"
    old = {k: os.environ.get(k) for k in ("JAMFOLD_BUILD_DIR", "JAMFOLD_CACHE")}
    os.environ["JAMFOLD_BUILD_DIR"] = str(root / "build")
    os.environ["JAMFOLD_CACHE"] = str(root / "cache")
    try:
        result = dg.materialize(ALL_ASSETS, resources={
            "game": GameResource(config_file=str(config)), "warehouse": WarehouseResource(path=str(warehouse))})
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return {"result": result, "warehouse": warehouse, "site": root / "build" / "site", "config": config, "root": root}


def printed_queries(page_html: str) -> list[str]:
    """The SQL queries a built site page prints in its code blocks, as a reader would copy them."""
    import html
    import re

    blocks = re.findall(r'<div class="highlight"><pre><span></span><code>(.*?)</code></pre></div>', page_html, re.S)
    return [q for q in (html.unescape(re.sub(r"<[^>]+>", "", b)).strip() for b in blocks)
            if q.upper().startswith(("SELECT", "WITH"))]


def tiny_pair_table():
    """The pair table of :func:`tiny_tables` (64 boards per matchup, seed 5); a plain function too,
    for a test that runs its body in a fresh process."""
    from engine.rollout import build_pair_table

    return build_pair_table("sampled", samples=64, seed=5)


@pytest.fixture(scope="session")
def tiny_tables():
    """Quickly sampled pair and triple tables (64 and 8 boards per matchup, exact deal weights),
    made once per test process and shared by the solver's tests.

    Any consistent tables exercise the solver's algebra; the exact tables are tested in test_rollout.
    """
    from engine.rollout import build_triple_table

    return tiny_pair_table(), build_triple_table("sampled", samples=8, seed=5)


@pytest.fixture(scope="session")
def tiny_showdown(tiny_tables):
    """The showdown tensors of :func:`tiny_tables`, made once per test process."""
    from engine.showdown import showdown_tensors

    return showdown_tensors(*tiny_tables)


@pytest.fixture(scope="session")
def tiny_tensors(tiny_showdown):
    """The solver's tensors of :func:`tiny_showdown`, made once per test process."""
    from engine.hand_pass import SolverTensors

    return SolverTensors(tiny_showdown)


@pytest.fixture
def bench_tensors_released():
    """For a test that runs benchmarks in the test process: their cached sampled tensors (about
    0.7 GB, engine.bench_tables) are dropped after it instead of held until the worker ends."""
    yield
    from engine import bench_tables

    bench_tables.release()
