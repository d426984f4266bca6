"""The Dagster instance config that ``./lab`` and ``jamfold build`` write into DAGSTER_HOME."""

from __future__ import annotations

from pathlib import Path

DAGSTER_YAML = """telemetry:
  enabled: false
compute_logs:
  module: dagster._core.storage.noop_compute_log_manager
  class: NoOpComputeLogManager
"""
"""The instance config written into a new DAGSTER_HOME (``./lab`` writes the same). No telemetry
(and no welcome banner in the log). No compute-log capture: the default manager copies the build's
stdout and stderr into files and back through ``tail`` processes, which printed two tracebacks on
Ctrl-C and lost the last lines before it; the assets' messages are in the event log anyway."""

OLD_DAGSTER_YAML = "telemetry:\n  enabled: false\n"
"""What earlier builds wrote: replaced by :data:`DAGSTER_YAML` (a user's own config is left alone)."""


def write_instance_config(home: Path) -> None:
    """Write :data:`DAGSTER_YAML` into DAGSTER_HOME ``home`` unless it holds a config of its own."""
    path = home / "dagster.yaml"
    if not path.exists() or path.read_text() == OLD_DAGSTER_YAML:
        from engine.atomic_files import write_text_atomic

        write_text_atomic(path, DAGSTER_YAML)  # a truncated one would pass for the user's own
