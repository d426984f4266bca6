"""numba's on-disk kernel cache, made safe for several processes compiling into one folder.

Every kernel of the engine is compiled with ``cache=True`` into one folder (``./lab`` keys it by
the engine's source). numba keeps one index file per function, mapping each compiled signature to
a numbered data file, and saves a new signature by reading the index, picking the first number it
does not list, writing the index and then the data file. Two processes that save two signatures
of one function at once (two test workers, a build beside the tests, two Dagster runs) both pick
the same number: one index entry is lost, and the other may name a data file that holds the other
process's machine code, which a later run loads for the wrong signature (numba issues #4807 and
#10128). A reader between a saver's index and data writes can likewise load a stale data file.

:func:`guard_kernel_cache` makes each save hold an exclusive lock on a file beside the function's
index (``<index>.lock``, ``fcntl.flock``) and each load a shared one, so the index and its data
files change together. numba calls it in every process before the first compile or cache load:
it is the ``init`` of the ``numba_extensions`` entry point in ``pyproject.toml``, so no import
order can leave a kernel unguarded (a process that defines its kernels first included).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

try:
    import fcntl
except ImportError:  # (not on Windows: there numba's cache stays as it is)
    fcntl = None

from numba.core import caching


@contextlib.contextmanager
def _index_lock(index_path: str, mode: int) -> Iterator[None]:
    """Hold ``mode`` (LOCK_EX or LOCK_SH) on ``<index_path>.lock``; nothing where it cannot be made
    (a read-only or missing folder: a load finds no index there, and numba makes the folder before
    a save)."""
    try:
        fd = os.open(index_path + ".lock", os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        yield
        return
    try:
        fcntl.flock(fd, mode)
        yield
    finally:
        os.close(fd)  # (closing the descriptor releases the lock)


def guard_kernel_cache() -> bool:
    """Lock numba's cache index files around every save and load (see the module docstring).

    Idempotent; returns whether the guard is on (False where ``fcntl`` is missing)."""
    cache_file = caching.IndexDataCacheFile
    if fcntl is None:
        return False
    if getattr(cache_file, "_jamfold_guarded", False):
        return True
    save, load = cache_file.save, cache_file.load

    def locked_save(self, key, data):
        with _index_lock(self._index_path, fcntl.LOCK_EX):
            return save(self, key, data)

    def locked_load(self, key):
        with _index_lock(self._index_path, fcntl.LOCK_SH):
            return load(self, key)

    cache_file.save, cache_file.load = locked_save, locked_load
    cache_file._jamfold_guarded = True
    return True
