"""The plan: a target assignment per cluster and the moves to reach it.

A cluster is the unit: :mod:`.group` turns one cluster's rows into the balance package's input,
plans it with :func:`rackwise.balance.plan_cluster` and returns its rows (the target replicas,
the load before and after, the report, the reassignment JSON), whichever engine calls it: Spark
once per cluster in a cogrouped Arrow call (:mod:`.spark`), the in-process engine in a loop
(:mod:`.local`). :mod:`.summary` builds ``plan_summary.json`` and the target state's figures
from those rows and the audit's tables.

Outputs under ``OUT`` (written by :mod:`rackwise.pipeline.engines`):

``OUT/<cluster_id>/reassignment.json``
    What ``kafka-reassign-partitions --execute --reassignment-json-file`` takes: the partitions
    the plan changes, with ``log_dirs`` (an absolute path for every replica the plan places,
    ``"any"`` for one that stays where it is or whose broker's directories are not known).
    Written only for a cluster the plan changes (Kafka refuses an empty reassignment); the
    summary's ``reassignment_file`` names it, or is null. A cluster id is used as a directory
    name with every character but letters, digits, ``-``, ``_`` and ``.`` percent-encoded.
``OUT/plan_summary.json``
    See :mod:`.summary`.
``OUT/plan/rows/kind=*``
    The plan as Parquet (:data:`.group.PLAN_ROWS_DDL`): ``kind=replica`` the target replicas
    (the replicas schema plus ``moved``), ``kind=broker`` and ``kind=log_dir`` the load before
    and after (a broker row with the balance goals' targets for it), ``kind=summary`` and
    ``kind=reassignment`` the payloads.
``OUT/report.html``, ``OUT/summary.json``, ``OUT/audit/``
    The report of the plan and of the current state, and the audit of the current state, as
    ``rackwise pipeline audit`` writes it (run once).
"""

from __future__ import annotations

from typing import Final
from urllib.parse import quote

SUMMARY_FILE: Final = "plan_summary.json"
REASSIGNMENT_FILE: Final = "reassignment.json"
ROWS_DIR: Final = "plan/rows"


def cluster_dir_name(cluster_id: str) -> str:
    """A cluster id made safe as one directory name."""
    name = quote(cluster_id, safe="-_.")
    if name in (".", ".."):
        return name.replace(".", "%2E")
    return name or "%00"
