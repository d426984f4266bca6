"""Files that are complete or absent, even after a power loss.

A checkpoint is written to a temporary name and renamed over its final one, so a killed process
leaves either the old file or the new one. A rename alone is not enough after a power loss: the
file system may keep the rename (and the deletions of the blocks it replaced) but not the new
file's contents, which come back empty. So the temporary file's data is forced to disk before the
rename, and the folder's entry after it. A write that fails, or is interrupted in Python
(Ctrl-C), deletes its temporary file (a 5-player layer's checkpoint is 15 GB, too much to leave
behind); one killed outright (SIGKILL, a power loss) leaves it, named by its process, and
:func:`drop_dead_temporaries` deletes those at the next start of the work.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
import re
from contextlib import contextmanager
from pathlib import Path


def fsync_file(path: Path) -> None:
    """Force ``path``'s data to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_folder(folder: Path) -> None:
    """Force ``folder``'s entries (a rename into it) to disk; a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # some file systems refuse fsync on a folder
        pass
    finally:
        os.close(fd)


def replace_durably(tmp: Path, path: Path) -> None:
    """Move the finished ``tmp`` over ``path``: its data on disk first, then the rename."""
    fsync_file(tmp)
    os.replace(tmp, path)
    fsync_folder(path.parent)


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A temporary name for the new contents of ``path`` (unique to this process), moved over
    ``path`` with :func:`replace_durably` when the block ends and deleted if it fails: write the
    whole file there, by any writer (``np.save`` to an open file, a ``ZipFile``)."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    try:
        yield tmp
        replace_durably(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)  # (gone once renamed; a failed write leaves no temporary behind)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` complete or not at all."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def write_text_atomic(path: Path, text: str) -> None:
    """:func:`write_bytes_atomic` of ``text`` in UTF-8."""
    write_bytes_atomic(path, text.encode("utf-8"))


def drop_dead_temporaries(folder: Path) -> list[Path]:
    """Delete the temporary files in ``folder`` that :func:`atomic_path` left for processes no
    longer running (killed outright mid-write); a live process's are left alone, since it may be
    writing them now. Returns the files deleted. (Processes are those of this host's process
    namespace: a cache shared with another container would need its writers stopped first.)"""
    dropped = []
    for tmp in Path(folder).glob("*.tmp*"):
        match = re.fullmatch(r".+\.tmp(\d+)", tmp.name)
        if match and not process_running(int(match[1])):
            tmp.unlink(missing_ok=True)
            dropped.append(tmp)
    return dropped


def process_running(pid: int) -> bool:
    """Whether process ``pid`` exists (someone else's included)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # (a number no process can have)
        return False
    except PermissionError:  # someone else's process
        return True
    return True
