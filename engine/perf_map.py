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

``perf annotate`` cannot read JIT code, so to see *which instructions* of a kernel take the time,
:func:`dump_code` saves the machine code of the kernels whose names match (one ``<address>.bin``
per function) while the process still holds it, and ``annotate`` disassembles those dumps with
``objdump`` and lays perf's samples on their instructions::

    python -m engine.perf_map annotate /tmp/perf.data /tmp/perf-code-<pid> [--top 25]

It prints each dumped function's share of all samples and its hottest instructions with the
lines before them: a sample lands just after the instruction that stalled (the load whose value
the next instruction waits for), so the instruction above a hot one is usually the culprit.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import re
import subprocess
import weakref
from collections import Counter
from pathlib import Path

from numba.core.dispatcher import Dispatcher


def compiled_functions() -> list[tuple[int, str]]:
    """(address, mangled name) of every function numba compiled in this process, sorted by address."""
    found: set[tuple[int, str]] = set()
    for obj in gc.get_objects():
        if isinstance(obj, weakref.ProxyTypes) or not isinstance(obj, Dispatcher):
            continue  # (a proxy whose object is gone raises on isinstance: numba keeps some of a freed kernel)
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


def dump_code(folder: str | Path, contains: tuple[str, ...], max_bytes: int = 1 << 16) -> int:
    """Save the machine code of every compiled function whose name contains one of ``contains``
    to ``folder/<hex address>.bin`` (the bytes up to the next function, at most ``max_bytes``), for
    ``annotate``; returns the number of functions saved. Call it in the profiled process, after
    the kernels ran (its code is gone with the process)."""
    entries = compiled_functions()
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    saved = 0
    spans = _readable_spans()  # (read once: the dumps below map nothing)
    for i, (address, name) in enumerate(entries):
        if not any(c in name for c in contains):
            continue
        gap = entries[i + 1][0] - address if i + 1 < len(entries) else max_bytes
        length = min(gap if gap > 0 else max_bytes, max_bytes, _readable_end(address, spans) - address)
        (target / f"{address:x}.bin").write_bytes(ctypes.string_at(address, length))
        saved += 1
    return saved


def _readable_spans() -> list[tuple[int, int]]:
    """The readable mappings of this process, (start, end) addresses from ``/proc/self/maps``
    (none where it cannot be read)."""
    try:
        maps = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return []
    spans = []
    for line in maps:
        span, perms = line.split()[:2]
        if perms.startswith("r"):
            lo, hi = (int(x, 16) for x in span.split("-"))
            spans.append((lo, hi))
    return spans


def _readable_end(address: int, spans: list[tuple[int, int]] | None = None) -> int:
    """End of the readable mapping that holds ``address`` (of ``spans``, else read now), or of its
    page where that is unknown: the last function of a code mapping is followed by unmapped memory,
    and reading past the mapping kills the process (a test worker did, 2026-11-29)."""
    for lo, hi in _readable_spans() if spans is None else spans:
        if lo <= address < hi:
            return hi
    return (address | 4095) + 1


_OBJDUMP_LINE = re.compile(r"^\s*([0-9a-f]+):\t[0-9a-f ]+\t(.*)$")  # address: bytes <tab> instruction


def hot_instructions(samples: Counter, disassembly: list[str]) -> list[tuple[int, int, str]]:
    """(address, samples, instruction) for every instruction line of an ``objdump`` listing, with
    the samples whose instruction pointer is that address (continuation lines are skipped)."""
    rows = []
    for line in disassembly:
        m = _OBJDUMP_LINE.match(line)
        if m:
            address = int(m.group(1), 16)
            rows.append((address, samples.get(address, 0), " ".join(m.group(2).split())))
    return rows


def annotate(perf_data: str | Path, code_folder: str | Path, top: int = 25, context: int = 3,
             min_share: float = 0.005) -> None:
    """Print where the samples of ``perf_data`` fall in the functions dumped by :func:`dump_code`
    (those holding at least ``min_share`` of all samples), each instruction with the ``context``
    instructions before it."""
    script = subprocess.run(["perf", "script", "-i", str(perf_data), "-F", "ip"], capture_output=True, text=True,
                            check=True).stdout
    samples = Counter(int(tok, 16) for tok in script.split())
    total = sum(samples.values())
    print(f"{total:,} samples in {perf_data}")
    if not total:
        return
    for dump in sorted(Path(code_folder).glob("*.bin")):
        start = int(dump.stem, 16)
        listing = subprocess.run(["objdump", "-D", "-b", "binary", "-m", "i386:x86-64",
                                  f"--adjust-vma={start:#x}", str(dump)], capture_output=True, text=True,
                                 check=True).stdout.splitlines()
        rows = hot_instructions(samples, listing)
        inside = sum(n for _, n, _ in rows)
        if inside < min_share * total:
            continue
        print(f"\nfunction at {start:#x}: {inside / total * 100:.1f} % of all samples; its hottest instructions, "
              f"in % of its samples:")
        index = {a: i for i, (a, _, _) in enumerate(rows)}
        for address, n, _ in sorted(rows, key=lambda r: -r[1])[:top]:
            if not n:
                break
            i = index[address]
            print(f"  {n / inside * 100:5.2f} %  at {address:#x}")
            for a, m, text in rows[max(i - context, 0):i + 1]:
                print(f"      {'>' if a == address else ' '} {a:#x}  {m / inside * 100:5.2f}  {text}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m engine.perf_map", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    ann = sub.add_parser("annotate", help="lay perf's samples on the instructions of dumped kernels")
    ann.add_argument("perf_data")
    ann.add_argument("code_folder")
    ann.add_argument("--top", type=int, default=25, help="hottest instructions shown per function")
    args = parser.parse_args(argv)
    if not Path(args.perf_data).is_file():
        parser.error(f"perf_data: no such file {args.perf_data}")
    if not Path(args.code_folder).is_dir() or not any(Path(args.code_folder).glob("*.bin")):
        parser.error(f"code_folder: {args.code_folder} holds no dumps (<address>.bin from dump_code)")
    if args.top < 1:
        parser.error(f"--top must be at least 1 (got {args.top})")
    try:
        annotate(args.perf_data, args.code_folder, args.top)
    except FileNotFoundError as exc:  # perf or objdump not installed
        parser.error(f"needs {exc.filename} on the PATH (Debian: linux-perf, binutils)")
    except subprocess.CalledProcessError as exc:
        why = (exc.stderr or "").strip().splitlines()
        parser.error(f"{' '.join(exc.cmd[:2])} failed: {why[-1] if why else exc}")


if __name__ == "__main__":
    main()
