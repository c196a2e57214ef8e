"""The engines that run the stages: Spark for fleets, the in-process engine for small inputs.

Both run the same stages (:mod:`rackwise.pipeline.ingest`, :mod:`rackwise.pipeline.audit`,
:mod:`rackwise.pipeline.plan`) to the same outputs (:mod:`.outputs`, a test compares them on
random fleets): :mod:`.spark` (the session in :mod:`.session`) and :mod:`.local`.

Goals
    An answer for one cluster in a second or two; a fleet of a hundred million replica rows
    on a Spark cluster. The operator should not have to know which engine fits.
Constraints
    Spark costs five to ten seconds before the first row is read (a JVM, a session, query
    planning per job), then scales out and spills to disk; the in-process engine starts at
    once but holds the input in memory (3.3 GiB at its peak for 10,000,000 replica rows,
    measured with ``bench/pipeline.py``) and plans on one core.
Algorithm
    ``--engine local`` or ``--engine spark`` is obeyed. ``auto`` (the default) picks Spark when
    a Spark master is named (``--master``, or the run is under ``spark-submit``), else by the
    input's size in replica rows (:meth:`rackwise.pipeline.ingest.source.InputSource.replica_rows`,
    read without reading the rows): in process up to :data:`AUTO_LOCAL_MAX_REPLICAS`, Spark
    above. The threshold is where the engines cross on a two-core machine (``BENCHMARKS.md``):
    the audit is faster in process at every size measured (3.9x at 10,000,000 rows), the plan
    crosses between 1,000,000 rows (2.4x faster in process) and 10,000,000 (1.3x faster on
    Spark, which plans clusters on every core); at 5,000,000 the in-process peak stays under
    2 GiB.
Worked example
    ``rackwise pipeline plan --fleet run/fleet`` (96,000 replica rows, no ``--master``): the
    in-process engine, ``engine: local (96,000 replica rows, auto: up to 5,000,000 in
    process)``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

if TYPE_CHECKING:
    from pathlib import Path

    from rackwise.pipeline.audit.rules import DomainRules
    from rackwise.pipeline.engines.outputs import StageCallback
    from rackwise.pipeline.ingest.json_input import JsonColumns
    from rackwise.pipeline.ingest.source import InputSource

EngineName = Literal["local", "spark"]
AUTO_LOCAL_MAX_REPLICAS: Final = 5_000_000
"""``--engine auto`` runs inputs of at most this many replica rows in process."""


class Engine(Protocol):
    """What the command asks of an engine; ``tables`` is the engine's own table type."""

    name: str

    def ingest(self, source: InputSource, columns: JsonColumns | None) -> Any: ...
    def count(self, tables: Any) -> tuple[int, int]: ...
    def write_rejected(self, tables: Any, out: Path) -> int: ...
    def audit(
        self,
        tables: Any,
        out: Path,
        min_insync_replicas: int,
        on_stage: StageCallback,
        rules: DomainRules = ...,
    ) -> dict[str, Any]: ...
    def plan(
        self,
        tables: Any,
        out: Path,
        strategy: str,
        throttle_bytes_per_s: int | None,
        min_insync_replicas: int,
        on_stage: StageCallback,
        rules: DomainRules = ...,
        drain: tuple[str, ...] = (),
    ) -> dict[str, Any]: ...


def choose_engine(requested: str, replica_rows: int, *, has_master: bool) -> tuple[EngineName, str]:
    """The engine to run and why, in a few words for the progress line."""
    rows = f"{replica_rows:,} replica rows"
    if requested == "local":
        return "local", f"{rows}, --engine local"
    if requested == "spark":
        return "spark", f"{rows}, --engine spark"
    if has_master:
        return "spark", f"{rows}, auto: a Spark master is named"
    if replica_rows <= AUTO_LOCAL_MAX_REPLICAS:
        return "local", f"{rows}, auto: up to {AUTO_LOCAL_MAX_REPLICAS:,} in process"
    return "spark", f"{rows}, auto: over {AUTO_LOCAL_MAX_REPLICAS:,} on Spark"
