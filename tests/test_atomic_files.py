"""Checkpoint files are complete or absent: written to a temporary name, forced to disk, renamed."""

import os

import pytest

from engine import atomic_files


def test_an_atomic_write_replaces_the_file_whole_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "record.json"
    atomic_files.write_text_atomic(path, "old")
    atomic_files.write_text_atomic(path, "new ✓")
    assert path.read_text(encoding="utf-8") == "new ✓"
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


def test_a_write_that_fails_midway_keeps_the_old_file(tmp_path, monkeypatch):
    """The old file stays until the new one is complete on disk: a failure while forcing the new
    data to disk (as a kill or a full disk would cut the write short) leaves the old file as it was."""
    path = tmp_path / "record.json"
    atomic_files.write_text_atomic(path, "old")

    def no_disk(fd):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "fsync", no_disk)
    with pytest.raises(OSError):
        atomic_files.write_text_atomic(path, "new")
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["record.json"]


def test_a_checkpoint_save_interrupted_midway_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    """A kill (Ctrl-C) while write_npz streams a checkpoint's arrays: the old checkpoint is
    untouched and the half-written temporary (a 5-player layer's is up to 15 GB) is deleted."""
    import numpy as np

    from engine.checkpoint import write_npz

    path = tmp_path / "layer3.npz"
    write_npz(path, {"V": np.zeros(3)}, {})

    def rows():
        yield np.ones((2, 4))
        raise KeyboardInterrupt

    class Pieces(list):  # the rows of a stream: counted for its header, then cut short while written
        passes = 0

        def __iter__(self):
            Pieces.passes += 1
            return super().__iter__() if Pieces.passes == 1 else rows()

    with pytest.raises(KeyboardInterrupt):
        write_npz(path, {"V": np.ones(3)}, {"R": (np.float64, 4, Pieces([np.ones((2, 4)), np.ones((2, 4))]))})
    assert Pieces.passes == 2  # (the interrupt came while the rows were being written)
    with np.load(path) as kept:
        assert kept["V"].tolist() == [0.0, 0.0, 0.0] and kept.files == ["V"]
    assert [p.name for p in tmp_path.iterdir()] == ["layer3.npz"]


def test_temporaries_of_processes_killed_outright_are_dropped_and_live_ones_kept(tmp_path):
    """A save killed by SIGKILL leaves its temporary, named by its process: the next start of the
    work deletes it, but never the temporary of a process still running (it may be writing it)."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    gone = tmp_path / f"FGS-1.layer5.solvers.npz.tmp{int(dead.stdout)}"
    live = tmp_path / f"FGS-2.layer5.npz.tmp{os.getpid()}"
    other = tmp_path / "notes.tmp"  # not one of ours
    impossible = tmp_path / f"FGS-3.layer5.npz.tmp{2 ** 70}"  # no process has such a number
    for path in (gone, live, other, impossible):
        path.write_bytes(b"PK")
    assert sorted(atomic_files.drop_dead_temporaries(tmp_path)) == sorted([gone, impossible])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, other.name])


def test_a_checkpoint_is_forced_to_disk_before_its_rename(tmp_path, monkeypatch):
    """write_npz syncs its temporary file before renaming it over the checkpoint (a power loss
    could otherwise keep the rename and lose the data), then the folder."""
    import numpy as np

    from engine.checkpoint import write_npz

    events = []
    real_fsync, real_replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: (events.append("fsync"), real_fsync(fd))[1])
    monkeypatch.setattr(os, "replace", lambda a, b: (events.append("replace"), real_replace(a, b))[1])
    path = tmp_path / "layer3.npz"
    write_npz(path, {"V": np.arange(6.0)}, {"R": (np.float32, 2, [np.ones((3, 2))])})
    assert events == ["fsync", "replace", "fsync"]
    with np.load(path) as saved:
        assert saved["V"].tolist() == list(range(6)) and saved["R"].shape == (3, 2)


@pytest.mark.parametrize("damage", ["empty", "cut short", "one byte changed", "other bytes", "a .npy file"])
def test_a_damaged_checkpoint_is_named_with_what_to_do(tmp_path, damage):
    """A checkpoint the disk lost bytes of (empty or cut short, as a power loss before the data
    reached the disk left files before they were synced) or changed a byte of (the zip's CRC of
    the member catches it), or bytes of something else in its place (numpy would take them for a
    pickle or an array, not a zip archive): the resume says which file and that deleting it redoes
    its work, instead of a zip or numpy traceback at every restart, or values that are silently wrong."""
    import numpy as np

    from engine.checkpoint import DamagedCheckpoint, load_measure_blocks, save_measure_block

    bound = np.linspace(0, 1, 10)
    save_measure_block(tmp_path, 4, 7, [1, 3, 5], bound, elapsed=12.0)
    [path] = list(tmp_path.glob("*.npz"))
    fresh = np.zeros(10)
    assert load_measure_blocks(tmp_path, 4, 7, fresh)[0] == [1, 3, 5]  # intact, it reads back
    data = path.read_bytes()
    if damage == "one byte changed":  # a byte of the stored exploitabilities, not of a header
        at = data.index(bound[[1, 3, 5]].tobytes()) + 5
        path.write_bytes(data[:at] + bytes([data[at] ^ 0x10]) + data[at + 1:])
    elif damage == "other bytes":
        path.write_bytes(b"x" * 1000)
    elif damage == "a .npy file":
        np.save(path.with_suffix(".tmp.npy"), bound)
        path.with_suffix(".tmp.npy").replace(path)
    else:
        path.write_bytes(b"" if damage == "empty" else data[: len(data) // 2])
    with pytest.raises(DamagedCheckpoint, match=f"checkpoint {path} cannot be read back .*delete it to redo") as raised:
        load_measure_blocks(tmp_path, 4, 7, np.zeros(10))
    assert ("(not a zip archive)" in str(raised.value)) == (damage in ("other bytes", "a .npy file"))


def test_a_checkpoint_folder_is_held_by_one_process_at_a_time(tmp_path):
    """Two solves writing the same checkpoints would overwrite each other's temporary files and
    block numbers: the second is refused, naming the process that holds the folder; once released
    the folder is free again."""
    from engine.checkpoint import FolderBusy, folder_lock

    with folder_lock(tmp_path, "the 4-player layer's solve"):
        with pytest.raises(FolderBusy, match=rf"the 4-player layer's solve is already running in .* \(process {os.getpid()}\)"):
            with folder_lock(tmp_path, "the 4-player layer's solve"):
                pass
    with folder_lock(tmp_path, "the 4-player layer's solve"):
        pass


def test_a_layer_solve_into_a_folder_another_holds_is_refused_and_a_free_one_drops_cut_saves(tmp_path, tiny_tensors):
    from engine.checkpoint import FolderBusy, folder_lock
    from engine.tournament import solve_layer

    with folder_lock(tmp_path, "a test"), pytest.raises(FolderBusy, match="2-player layer's solve is already running"):
        solve_layer(6, 2, (70.0, 30.0), 1e-3, tiny_tensors, {}, threads=1, checkpoint=tmp_path)
    # free, it solves, dropping the temporary file a killed save left (never read, up to 15 GB)
    (tmp_path / "layer2.npz.tmp").write_bytes(b"PK half a file")
    solve_layer(6, 2, (70.0, 30.0), 1e-3, tiny_tensors, {}, threads=1, checkpoint=tmp_path)
    assert (tmp_path / "layer2.npz").exists() and not list(tmp_path.glob("*.tmp*"))


def test_a_temporary_of_another_users_live_process_is_kept(tmp_path, monkeypatch):
    """A process that signal 0 may not reach (another user's: EPERM) is running, so its temporary
    stays; one that does not exist (ESRCH), or a number no process can have, is not."""
    def kill(pid: int, signal: int) -> None:
        assert signal == 0
        raise {101: PermissionError, 102: ProcessLookupError}[pid]()

    for pid in (101, 102):
        (tmp_path / f"layer5.npz.tmp{pid}").write_bytes(b"half")
    monkeypatch.setattr(atomic_files.os, "kill", kill)
    assert atomic_files.drop_dead_temporaries(tmp_path) == [tmp_path / "layer5.npz.tmp102"]
    assert [p.name for p in tmp_path.iterdir()] == ["layer5.npz.tmp101"]
    monkeypatch.undo()
    assert not atomic_files.process_running(2**80)
