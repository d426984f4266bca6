"""numba's on-disk kernel cache shared by several processes (engine/kernel_cache.py)."""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from numba.core import caching

ROOT = Path(__file__).resolve().parents[1]
SAVES = 400

# One process saving SAVES signatures of one function into a shared cache folder, each with data
# that names its own key; it starts once the test creates the file "go", so that two overlap.
SAVER = textwrap.dedent("""
    import os, sys, time
    from numba.core import caching
    from engine.kernel_cache import guard_kernel_cache
    folder, tag, saves = sys.argv[1], sys.argv[2], int(sys.argv[3])
    assert guard_kernel_cache()
    cache_file = caching.IndexDataCacheFile(folder, "kernel-1.py311", ("source stamp", 1))
    open(os.path.join(folder, "ready-" + tag), "w").close()
    while not os.path.exists(os.path.join(folder, "go")):
        time.sleep(0.001)
    for i in range(saves):
        cache_file.save((tag, i), (tag, i))
""")


def test_two_processes_saving_signatures_of_one_function_keep_each_with_its_own_data(tmp_path):
    # Unguarded, the same run lost about 300 of the 800 entries and mapped about 130 to another
    # signature's data (numba's read-modify-write of the index); guarded, none.
    savers = [subprocess.Popen([sys.executable, "-c", SAVER, str(tmp_path), tag, str(SAVES)], cwd=ROOT)
              for tag in "ab"]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"ready-{tag}").exists() for tag in "ab"):
        assert time.monotonic() < deadline and all(s.poll() is None for s in savers), "a saver did not start"
        time.sleep(0.01)
    (tmp_path / "go").touch()
    assert [s.wait(timeout=120) for s in savers] == [0, 0]
    cache_file = caching.IndexDataCacheFile(str(tmp_path), "kernel-1.py311", ("source stamp", 1))
    loaded = {(tag, i): cache_file.load((tag, i)) for tag in "ab" for i in range(SAVES)}
    assert [key for key, data in loaded.items() if data != key] == []
    assert len(list(tmp_path.glob("*.nbc"))) == 2 * SAVES


def test_the_guard_is_on_before_a_process_first_compiles(tmp_path):
    # numba runs the `numba_extensions` entry point of pyproject.toml before any compile or cache
    # load, in any process: the engine's kernels need no import order to be safe.
    script = tmp_path / "first_compile.py"
    script.write_text(textwrap.dedent("""
        import numba
        from numba.core import caching
        before = getattr(caching.IndexDataCacheFile, "_jamfold_guarded", False)

        @numba.njit(cache=True)
        def add_one(x):
            return x + 1

        add_one(1)
        print(before, getattr(caching.IndexDataCacheFile, "_jamfold_guarded", False))
        print(sum(add_one.stats.cache_hits.values()))
    """))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "0"]
    assert list((tmp_path / "cache").rglob("*.nbi.lock"))  # the load and the save took the lock
    again = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, check=True)
    assert again.stdout.split() == ["False", "True", "1"]  # the guarded load gives back what the save kept


def test_the_guard_passes_over_what_it_cannot_lock(tmp_path, monkeypatch):
    """A load from a folder that does not exist finds nothing, as unguarded (no lock file can be
    made there); an OS without ``fcntl`` keeps numba's cache as it is."""
    from engine import kernel_cache

    assert kernel_cache.guard_kernel_cache()
    missing = caching.IndexDataCacheFile(str(tmp_path / "missing"), "kernel-1.py311", ("source stamp", 1))
    assert missing.load(("a", 0)) is None and not (tmp_path / "missing").exists()
    monkeypatch.setattr(kernel_cache, "fcntl", None)
    assert kernel_cache.guard_kernel_cache() is False
