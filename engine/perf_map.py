"""Name the compiled numba functions for Linux ``perf``: where a pass's time goes, kernel by kernel.

``perf record`` samples the instruction pointer, but numba's machine code lives in anonymous
memory, so ``perf report`` shows bare addresses. perf reads symbols for such code from
``/tmp/perf-<pid>.map`` (one "START SIZE NAME" line per function, hexadecimal). This writes that
file for every numba function compiled in this process, from each overload's code library.

A library loaded from numba's on-disk cache holds only object code, not the module that lists its
functions, so profile with a fresh cache folder (everything compiles once, which perf also samples
and ``--sort symbol`` keeps apart)::

    NUMBA_CACHE_DIR=$(mktemp -d) NUMBA_NUM_THREADS=1 perf record -F 999 -o /tmp/perf.data \\
        .venv/bin/python -m engine.bench_layer --players 4 --samples 8 --perf-map
    perf report -i /tmp/perf.data --no-children --sort symbol

Sizes are the distance to the next function's start (the last one gets 4 KiB), which is what
perf needs to attribute a sample to the function it falls in.
"""

from __future__ import annotations

import gc
import os
from pathlib import Path

from numba.core.dispatcher import Dispatcher


def compiled_functions() -> list[tuple[int, str]]:
    """(address, mangled name) of every function numba compiled in this process, sorted by address."""
    found: set[tuple[int, str]] = set()
    for obj in gc.get_objects():
        if not isinstance(obj, Dispatcher):
            continue
        for result in obj.overloads.values():
            library = result.library
            module = getattr(library, "_final_module", None)
            if module is None:  # loaded from the on-disk cache: no module to list
                continue
            for fn in module.functions:
                if fn.is_declaration:
                    continue
                address = library.get_pointer_to_function(fn.name)
                if address:
                    found.add((int(address), fn.name))
    return sorted(found)


def write_perf_map(path: str | Path | None = None) -> int:
    """Write perf's symbol map for this process (default ``/tmp/perf-<pid>.map``); returns the
    number of functions named (0 when every kernel came from the on-disk cache)."""
    entries = compiled_functions()
    target = Path(path) if path is not None else Path(f"/tmp/perf-{os.getpid()}.map")
    lines = []
    for i, (address, name) in enumerate(entries):
        gap = entries[i + 1][0] - address if i + 1 < len(entries) else 0
        size = gap if 0 < gap < 1 << 20 else 4096
        lines.append(f"{address:x} {size:x} {name}\n")
    target.write_text("".join(lines))
    return len(entries)
