"""The perf symbol map names numba kernels where perf can attribute samples to them."""

import ctypes
import shutil
from collections import Counter

import numba as nb
import numpy as np
import pytest

from engine.perf_map import _readable_end, compiled_functions, dump_code, hot_instructions, write_perf_map


@nb.njit(cache=False)
def _doubled_sum_for_the_perf_map(x):
    s = 0.0
    for v in x:
        s += 2.0 * v
    return s


def test_perf_map_lists_a_freshly_compiled_kernel_with_disjoint_ranges(tmp_path):
    assert _doubled_sum_for_the_perf_map(np.arange(4.0)) == 12.0
    path = tmp_path / "perf.map"
    named = write_perf_map(path)
    entries = [line.split(" ", 2) for line in path.read_text().splitlines()]
    assert named == len(entries) > 0
    assert any("_doubled_sum_for_the_perf_map" in name for _, _, name in entries)
    starts = [int(a, 16) for a, _, _ in entries]
    sizes = [int(s, 16) for _, s, _ in entries]
    assert all(s > 0 for s in sizes)
    # sorted by address, each function's range ends where the next begins at the latest
    assert all(starts[i] + sizes[i] <= starts[i + 1] for i in range(len(starts) - 1))


def test_code_dump_holds_the_kernels_machine_code_and_samples_land_on_its_instructions(tmp_path):
    """The dump is the function's code as compiled (its first bytes are those at its address),
    and ``hot_instructions`` puts every sample on the instruction at its address."""
    assert _doubled_sum_for_the_perf_map(np.arange(3.0)) == 6.0
    saved = dump_code(tmp_path, ("_doubled_sum_for_the_perf_map",))
    dumps = sorted(tmp_path.glob("*.bin"))
    assert saved == len(dumps) > 0
    starts = {a: name for a, name in compiled_functions()}
    for dump in dumps:
        address = int(dump.stem, 16)
        assert "_doubled_sum_for_the_perf_map" in starts[address]
        code = dump.read_bytes()
        # its first bytes are the function's own code (past the function, up to the cap, memory may
        # hold data that changes)
        assert 0 < len(code) <= 1 << 16 and code[:64] == ctypes.string_at(address, min(64, len(code)))
        assert address + len(code) <= _readable_end(address)  # never read past its mapping (that crashes)
    listing = ["   1000:\t48 8b 04 c7          \tmov    (%rdi,%rax,8),%rax",
               "   1004:\t48 89 44 24 08       \tmov    %rax,0x8(%rsp)",
               "   1009:\t48 b9 70 d9 cd b1 a3 \tmovabs $0x7fa3b1cdd970,%rcx",
               "   1010:\t7f 00 00 ",  # a continuation line: more bytes of the instruction above
               "   1013:\tc3                   \tret"]
    rows = hot_instructions(Counter({0x1004: 7, 0x1013: 2, 0x5000: 9}), listing)
    assert rows == [(0x1000, 0, "mov (%rdi,%rax,8),%rax"), (0x1004, 7, "mov %rax,0x8(%rsp)"),
                    (0x1009, 0, "movabs $0x7fa3b1cdd970,%rcx"), (0x1013, 2, "ret")]


def test_a_dump_ends_where_the_readable_memory_does():
    """A mapping's end comes from /proc/self/maps; an address nobody mapped (page 0) ends with its page."""
    import mmap

    page = mmap.mmap(-1, mmap.PAGESIZE)
    address = ctypes.addressof(ctypes.c_char.from_buffer(page))
    end = _readable_end(address + 100)
    assert end >= address + mmap.PAGESIZE and (end - address) % mmap.PAGESIZE == 0
    assert _readable_end(0x10) == 4096


def test_annotate_refuses_bad_arguments_naming_them(tmp_path, capsys):
    from engine.perf_map import main

    data = tmp_path / "perf.data"
    data.write_bytes(b"")
    empty, dumps = tmp_path / "empty", tmp_path / "dumps"
    empty.mkdir()
    dumps.mkdir()
    (dumps / "1000.bin").write_bytes(b"\xc3")
    cases = [(["annotate", str(tmp_path / "none.data"), str(dumps)], "perf_data: no such file"),
             (["annotate", str(data), str(empty)], f"code_folder: {empty} holds no dumps"),
             (["annotate", str(data), str(dumps), "--top", "0"], "--top must be at least 1 (got 0)")]
    if shutil.which("perf"):  # a file perf cannot read: perf's own reason, not a traceback
        cases.append((["annotate", str(data), str(dumps)], "perf script failed: "))
    for argv, needle in cases:
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 2
        assert needle in capsys.readouterr().err


def test_the_last_compiled_function_is_dumped_up_to_the_cap(tmp_path):
    """No next function bounds the last one's code: it is read up to ``max_bytes`` (or its mapping's end)."""
    assert _doubled_sum_for_the_perf_map(np.arange(2.0)) == 2.0
    address, name = compiled_functions()[-1]
    assert dump_code(tmp_path, (name,), max_bytes=256) >= 1
    code = (tmp_path / f"{address:x}.bin").read_bytes()
    assert len(code) == min(256, _readable_end(address) - address)


def test_annotate_prints_each_dumped_functions_share_and_its_hottest_instructions(tmp_path, capsys, monkeypatch):
    """perf's samples (instruction pointers) laid on a dump's disassembly: the function's share of all
    samples, then its hottest instructions in % of its own samples, each with the instructions before
    it; a dump below ``min_share`` is left out. (perf and objdump stand in here as their outputs.)"""
    import subprocess
    import types

    from engine import perf_map

    (tmp_path / "1000.bin").write_bytes(b"\xc3")
    (tmp_path / "9000.bin").write_bytes(b"\xc3")
    listings = {0x1000: ["   1000:\t48 8b 04 c7          \tmov    (%rdi,%rax,8),%rax",
                         "   1004:\t48 89 44 24 08       \tmov    %rax,0x8(%rsp)",
                         "   1009:\t90                   \tnop",
                         "   100a:\t90                   \tnop",
                         "   100b:\tc3                   \tret"],
                0x9000: ["   9000:\tc3                   \tret"]}
    ips = ["1004"] * 6 + ["100b"] * 2 + ["5000"] * 2

    def fake_run(cmd, **kwargs):
        if cmd[0] == "perf":
            return types.SimpleNamespace(stdout="\n".join(f"  {ip}" for ip in ips))
        vma = int(next(a for a in cmd if a.startswith("--adjust-vma=")).split("=")[1], 16)
        return types.SimpleNamespace(stdout="\n".join(listings[vma]))

    monkeypatch.setattr(subprocess, "run", fake_run)
    perf_map.annotate(tmp_path / "perf.data", tmp_path, top=5, context=2)
    assert capsys.readouterr().out.splitlines() == [
        f"10 samples in {tmp_path / 'perf.data'}",
        "",
        "function at 0x1000: 80.0 % of all samples; its hottest instructions, in % of its samples:",
        "  75.00 %  at 0x1004",
        "        0x1000   0.00  mov (%rdi,%rax,8),%rax",
        "      > 0x1004  75.00  mov %rax,0x8(%rsp)",
        "  25.00 %  at 0x100b",
        "        0x1009   0.00  nop",
        "        0x100a   0.00  nop",
        "      > 0x100b  25.00  ret"]
    ips.clear()  # no samples at all: said, and nothing else
    perf_map.annotate(tmp_path / "perf.data", tmp_path)
    assert capsys.readouterr().out.splitlines() == [f"0 samples in {tmp_path / 'perf.data'}"]
