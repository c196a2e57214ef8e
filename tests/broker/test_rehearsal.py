"""A data centre lost on a real cluster: ``scripts/rehearse.py`` (the ``make run`` step) starts
6 brokers over three data centres with a controller in each, reads the audit's per-partition
prediction for ``/dc3`` from the running cluster (and ``rackwise pipeline audit``'s counts),
kills every ``/dc3`` process under an acks=all producer and a group consumer, and reports what
clients then see. The audit's prediction must be what the clients see, partition for
partition, and both must be the outcomes worked out by hand from the script's placements (so
an audit and an observation wrong the same way fail)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow  # nine processes, three of them killed

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "rehearse.py"
# brokers 1, 2 in /dc1; 3, 4 in /dc2; 5, 6 in /dc3; min.insync.replicas=2
BY_HAND = {
    "offline": [["rf2", 0], ["rf2", 4]],  # both replicas in /dc3
    "under_min_isr": [["rf2", 1], ["rf2", 2], ["rf3-racks2", 3]],  # one replica left
    # two replicas left (min ISR met) in one data centre, min.insync.racks=2; or in two, =3
    "refusing_writes": [["rf3-racks2", 1], ["rf3-racks2", 2], ["rf3-racks3", 0],
                        ["rf3-racks3", 1]],
}  # fmt: skip


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("rehearsal") / "cluster"
    env = {**os.environ, "PYTHONPATH": str(SCRIPT.parents[1] / "src")}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--json", "--dir", str(directory)],
        capture_output=True, text=True, timeout=240, env=env, check=False,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_audit_predicts_what_the_clients_see(rehearsal: dict[str, Any]) -> None:
    disagree = [r for r in rehearsal["partitions"] if not r["agree"]]
    assert disagree == []
    assert rehearsal["observed"] == rehearsal["predicted"]
    assert rehearsal["predicted"] == BY_HAND
    # `rackwise pipeline audit --bootstrap-server`'s exposure row for /dc3, its topics' own
    # min.insync.racks read from the cluster (no --min-insync-racks given)
    assert rehearsal["audit_counts"] == {k: len(v) for k, v in BY_HAND.items()}
    assert rehearsal["agree"] is True


def test_the_clients_saw_each_outcome_as_kafka_answers_it(rehearsal: dict[str, Any]) -> None:
    rows = {(r["topic"], r["partition"]): r for r in rehearsal["partitions"]}
    assert len(rows) == 13
    for topic, partition in BY_HAND["offline"]:
        row = rows.pop((topic, partition))
        assert row["leader"] == -1 and not row["consumer_read"]
    for outcome in ("under_min_isr", "refusing_writes"):
        for topic, partition in BY_HAND[outcome]:
            row = rows.pop((topic, partition))
            assert row["write"] in ("NotEnoughReplicasError", "NotEnoughReplicasAfterAppendError")
            assert row["consumer_read"], row  # a leader: the group consumer reads on
            assert (len(row["isr"]) < 2) == (outcome == "under_min_isr"), row
            names_racks = "min.insync.racks requirement" in row["message"]
            assert names_racks == (outcome == "refusing_writes"), row
    assert all(r["write"] == "ok" and r["consumer_read"] for r in rows.values())
    assert all(5 not in r["isr"] and 6 not in r["isr"] for r in rows.values())


def _running(pid: int) -> bool:
    """Alive and not a zombie (a process that has exited, waiting for init to reap it)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def test_the_cluster_is_torn_down(rehearsal: dict[str, Any]) -> None:
    assert len(rehearsal["pids"]) == 9
    assert [pid for pid in rehearsal["pids"] if _running(pid)] == []
