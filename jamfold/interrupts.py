"""Knowing that Ctrl-C (SIGINT) reached a build, wherever in the build it landed.

Dagster turns SIGINT into a ``DagsterExecutionInterruptedError`` raised wherever the main thread
is, and that error is not always what ends the step:

- DuckDB checks for signals while a query runs; one that arrives then interrupts the query, and
  the step fails with DuckDB's ``RuntimeError: Query interrupted`` (a user-code error: Dagster
  goes on with the steps that do not depend on it, and the build said "build failed" with a
  traceback). Measured: 4 of 18 SIGINTs sent 0–6 s after a tiny build's first layer logged.
- Python drops an exception raised where it cannot propagate (a finalizer, a callback), and the
  step, then the build, went on to the end and exited 0 (seen twice in a row in one test run).

The watch below does not depend on where the handler's exception goes: the C-level signal handler
writes the signal's number to a "wakeup" file descriptor before any Python handler runs
(:func:`signal.set_wakeup_fd`), so the build reads every SIGINT from a pipe. Python prints an
exception it drops that way with its traceback (``sys.unraisablehook``), seen when the interrupt
landed in llvmlite's finalizer of a numba object: while the watch has had a SIGINT, it keeps such
an interrupt off the screen (anything else dropped is printed as before).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import TracebackType

import numba.core.event as numba_events


class SigintWatch:
    """A context manager (main thread only) that records the SIGINTs that arrive inside it, and the
    SIGTERMs (``timeout``, ``kill``): Dagster maps SIGTERM to its SIGINT handler, and one whose
    interrupt Python dropped in a garbage-collection callback had let a build run on for minutes.

    ``poll()`` reads what arrived since the last poll; ``received`` says whether any did, and
    ``terminated`` whether one was a SIGTERM (the build then exits 143, as a process ended by it).
    """

    def __init__(self) -> None:
        self.received = False
        self.terminated = False
        self._read = self._write = -1
        self._previous = -1
        self._previous_hook = sys.unraisablehook

    def __enter__(self) -> SigintWatch:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)  # set_wakeup_fd requires it: a signal handler never blocks
        self._previous = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous_hook, sys.unraisablehook = sys.unraisablehook, self._unraisable
        return self

    def _unraisable(self, unraisable) -> None:
        """An exception Python had to drop: the interrupt (an exception outside ``Exception``, such as
        Dagster's ``DagsterExecutionInterruptedError`` or ``KeyboardInterrupt``) once a SIGINT has
        arrived is kept quiet, since the watch stops the build for it; anything else goes to the
        previous hook."""
        error = unraisable.exc_value
        if isinstance(error, BaseException) and not isinstance(error, Exception) and (self.poll() or self.received):
            return
        self._previous_hook(unraisable)

    def poll(self) -> bool:
        """True when a SIGINT arrived since the last poll (a full pipe drops bytes, never a first one)."""
        arrived = False
        while self._read >= 0:
            try:
                data = os.read(self._read, 512)
            except BlockingIOError:
                break
            if not data:
                break
            arrived = arrived or signal.SIGINT in data or signal.SIGTERM in data  # (Dagster treats both alike)
            self.terminated = self.terminated or signal.SIGTERM in data
        self.received = self.received or arrived
        return arrived

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.poll()
        signal.set_wakeup_fd(self._previous)
        sys.unraisablehook = self._previous_hook
        os.close(self._read)
        os.close(self._write)
        self._read = self._write = -1


def redeliver_sigint() -> None:
    """Raise SIGINT again in this process, for a handler that will act on it.

    Called between steps (at a step's start event), where Dagster's handler only notes the signal
    and raises its interrupt as the step's code begins: the build then stops the way a SIGINT that
    reached the step's code stops it.
    """
    signal.raise_signal(signal.SIGINT)


@contextmanager
def numba_compile_shield() -> Iterator[None]:
    """Within it, a SIGINT or SIGTERM that arrives while the main thread holds numba's compiler lock
    (compiling a kernel, or loading it from the on-disk cache) is held back and raised again once
    the lock is released.

    Why: Dagster raises its interrupt wherever the main thread is, for either signal. Inside numba's
    compiler or llvmlite it can land between an LLVM call and the Python bookkeeping of the object
    that call made or freed (who owns it, whether it is closed); the object is freed twice later
    and the build dies of SIGSEGV instead of saying it was interrupted: seen twice on 2026-11-29, a
    test's build interrupted as it loaded its first layer's kernels (exit status -11, not 130).
    """
    shield = CompileShield()
    numba_events.register("numba:compiler_lock", shield)
    try:
        yield
    finally:
        numba_events.unregister("numba:compiler_lock", shield)
        shield.release()


HELD_MESSAGE = ("jamfold: Ctrl-C: stopping once numba has compiled the kernel it is compiling (up to a minute on "
                "a first run); Ctrl-C again to stop at once")
HELD_SIGTERM_MESSAGE = ("jamfold: SIGTERM: stopping once numba has compiled the kernel it is compiling (up to a "
                        "minute on a first run); a second SIGTERM or Ctrl-C stops it at once")
HELD_SIGNALS = (signal.SIGINT, signal.SIGTERM)
"""The signals :class:`CompileShield` holds back: those Dagster turns into its interrupt."""


class CompileShield(numba_events.Listener):
    """A listener of numba's "numba:compiler_lock" events (see :func:`numba_compile_shield`): holds
    SIGINT and SIGTERM back from the first acquisition of the lock in the main thread to its last
    release, then raises the first one held again (SIGTERM if one was: the build then says it was
    terminated).

    A cold compile of a layer's kernels holds the lock for half a minute or more, so the first
    signal held says so on stderr; a second one is not held: the user asked twice, and gets the
    interrupt at once (inside the compile, as without the shield), the shield off from then on."""

    def __init__(self) -> None:
        self.depth = 0  # the lock is re-entrant: nested acquisitions
        self.previous: dict = {}  # signal -> the handler the shield replaced
        self.pending: list[int] = []  # the signals held, in order of arrival
        self.forced = False

    def on_start(self, event) -> None:
        if threading.current_thread() is not threading.main_thread() or self.forced:
            return  # (only the main thread gets the interrupt)
        self.depth += 1
        if self.depth == 1:
            for sig in HELD_SIGNALS:
                previous = signal.getsignal(sig)
                if previous is not None:  # (None: set outside Python, left alone)
                    self.previous[sig] = previous
                    signal.signal(sig, self._hold)

    def on_end(self, event) -> None:
        if threading.current_thread() is threading.main_thread() and self.depth > 0:
            self.depth -= 1
            if self.depth == 0:
                self.release()

    def _hold(self, signum: int, frame) -> None:
        self.pending.append(signum)
        if len(self.pending) > 1:  # the second: at once
            self.forced = True
            self.release()
            return
        from tqdm import tqdm  # (a build's progress bar, if any, is drawn again below the line)

        tqdm.write(HELD_SIGTERM_MESSAGE if signum == signal.SIGTERM else HELD_MESSAGE, file=sys.stderr)

    def release(self) -> None:
        """Put the previous handlers back and give them the signal held meanwhile (one: the first
        SIGTERM held, else the SIGINT)."""
        for sig, previous in self.previous.items():
            if signal.getsignal(sig) == self._hold:
                signal.signal(sig, previous)
        self.previous, self.depth = {}, 0
        held, self.pending = self.pending, []
        if held:
            signal.raise_signal(signal.SIGTERM if signal.SIGTERM in held else held[0])
