"""What `jamfold build` prints while Dagster materializes the assets: the assets' own log lines
(progress of the long ones: rollout chunks, outer iterations, sweeps) and, on a terminal, a bar of
the assets done with the one running.

Dagster's default console logger also prints a dozen framework events per asset (step started,
output handled, input loaded, …: 113 lines for the quick game against 52 of the assets' own); the
build logger below keeps only INFO and above, writes them through tqdm so that the bar stays
below them, and counts the finished steps. Off a terminal (a log file, CI) the bar is left out.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

import dagster as dg
from tqdm import tqdm

from jamfold.interrupts import SigintWatch, redeliver_sigint

EVENT = dg.DagsterEventType

INTERRUPTED = "DagsterExecutionInterruptedError"
"""The error class of a step that Ctrl-C (SIGINT) interrupted."""

SELF_EXPLAINING_ERRORS = ("WarehouseBusy",)
"""Error classes whose message says all a user needs (what holds the warehouse, what to do): a
step failing with one, anywhere in its chain of causes, prints that message instead of Dagster's
traceback, and the build's last line repeats it."""


def self_explaining_message(error: BaseException) -> str | None:
    """The message of the first error of a self-explaining class in ``error``'s chain of causes
    (Dagster's ``SerializableErrorInfo``: the step's error wraps the asset's), without its class."""
    while error is not None:
        if getattr(error, "cls_name", None) in SELF_EXPLAINING_ERRORS:
            return error.message.split(": ", 1)[-1].strip()
        error = getattr(error, "cause", None)
    return None


class BuildProgress(logging.Handler):
    """A logging handler for a Dagster run of ``total`` steps (one per asset)."""

    def __init__(self, total: int, stream: TextIO | None = None, bar: bool | None = None,
                 sigints: SigintWatch | None = None):
        super().__init__(logging.DEBUG)
        self.sigints = sigints  # every SIGINT of the run, wherever Dagster's interrupt error went
        self.stream = stream or sys.stderr
        # disable=None: tqdm shows the bar only on a terminal
        self.bar = tqdm(total=total, desc="assets", unit="asset", file=self.stream,
                        disable=None if bar is None else not bar, bar_format="{desc}: {n}/{total} {bar} "
                        "[{elapsed}{postfix}]", dynamic_ncols=True, leave=True)
        self.failed: list[str] = []
        self.reasons: list[str] = []  # the self-explaining messages of the failed steps, each once
        self.remedies: list[str] = []  # the failed checks that say what to do (their `remedy` metadata)
        self.interrupted = False  # Ctrl-C or SIGINT: Dagster records the running step as interrupted
        self._stopping = False  # a step failed with Dagster's interrupt error: the run stops after it

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        event = meta.get("dagster_event")
        step = (event.step_key if event is not None else None) or meta.get("op_name") or ""
        kind = event.event_type_value if event is not None else None
        if self.sigints is not None:
            self.sigints.poll()
            if self.sigints.received:
                self.interrupted = True  # a step failing now failed by it (e.g. "RuntimeError: Query interrupted")
                if kind == EVENT.STEP_START.value and not self._stopping:  # the SIGINT did not stop the run:
                    redeliver_sigint()  # Dagster raises it as this step's code starts, and the run stops
        if kind == EVENT.STEP_START.value:
            self.bar.set_postfix_str(step)
        elif kind == EVENT.STEP_SUCCESS.value:
            self.bar.update(1)
        elif kind == EVENT.STEP_FAILURE.value:
            self.failed.append(step)
        data = getattr(event, "event_specific_data", None)
        level, message = record.levelno, meta.get("orig_message") or record.getMessage()
        error = getattr(data, "error", None)
        dagster_interrupt = error is not None and error.cls_name == INTERRUPTED
        if kind == EVENT.STEP_FAILURE.value and (self.interrupted or dagster_interrupt):
            self.interrupted = True
            self._stopping = self._stopping or dagster_interrupt
            level, message = logging.INFO, "interrupted"
        elif self.interrupted and (kind == EVENT.RUN_FAILURE.value or message.startswith("Dependencies for step")):
            return  # "… interrupted unexpectedly", the steps left out: the build says it in its own words
        elif kind == EVENT.STEP_FAILURE.value and error is not None:
            reason = self_explaining_message(error)
            if reason is None:
                message = f"{message}\n{error.to_string().rstrip()}"  # what failed, and where
            else:
                message = f"{message.rstrip('.')}: {reason}"
                self.reasons += [reason] if reason not in self.reasons else []
        elif kind == EVENT.ASSET_CHECK_EVALUATION.value and getattr(data, "passed", True) is False:
            shown = ", ".join(f"{k} = {getattr(v, 'value', v)}" for k, v in (data.metadata or {}).items())
            level, message = logging.WARNING, f"asset check '{data.check_name}' failed" + (f" ({shown})" if shown else "")
            remedy = (data.metadata or {}).get("remedy")
            if remedy is not None:
                self.remedies.append(f"{step}'s check {data.check_name} failed: {getattr(remedy, 'value', remedy)}")
        if level >= logging.INFO:
            stamp = time.strftime("%H:%M:%S", time.localtime(record.created))
            prefix = "" if level == logging.INFO else f"{logging.getLevelName(level)}: "
            tqdm.write(f"{stamp} {step}{' - ' if step else ''}{prefix}{message}", file=self.stream)

    def finish(self) -> None:
        """Close the bar (not :meth:`close`: Dagster closes its loggers' handlers while the run goes on)."""
        self.bar.close()


class _InterruptedClose(logging.Filter):
    """Drops the records that carry an interrupt (Ctrl-C) as their exception."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, KeyboardInterrupt) and type(error).__name__ != INTERRUPTED


def quiet_interrupted_closes() -> None:
    """Keep Ctrl-C from printing a traceback of Dagster's own storage.

    Dagster turns SIGINT into a ``DagsterExecutionInterruptedError`` raised wherever the main
    thread is. Caught closing one of the instance's SQLite connections, SQLAlchemy's pool logs
    "Exception closing connection" with the traceback (Python's last-resort handler prints it on
    stderr) before the build says it was interrupted: seen once in a test run on a busy machine.
    The pool's other warnings and errors still reach stderr.
    """
    pool = logging.getLogger("sqlalchemy.pool")
    if any(isinstance(f, _InterruptedClose) for h in pool.handlers for f in h.filters):
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.addFilter(_InterruptedClose())
    pool.addHandler(handler)
    pool.propagate = False


def build_logger(progress: BuildProgress) -> dg.LoggerDefinition:
    """A Dagster logger that hands every record of the run to ``progress``."""

    @dg.logger(description="jamfold build: the assets' log lines and a bar of the assets done")
    def _build_logger(init_context) -> logging.Logger:
        logger = logging.Logger("jamfold.build", level=logging.DEBUG)
        logger.addHandler(progress)
        return logger

    return _build_logger
