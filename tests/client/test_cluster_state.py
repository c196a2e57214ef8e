"""Reading a cluster's state against scripted answers: what is kept of each request's answer,
what is tolerated (a failed directory, a topic deleted meanwhile, a fenced broker an older
Kafka does not list) and the one-line refusals naming the cluster."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from types import SimpleNamespace as A
from typing import Any, ClassVar

import pytest

from rackwise.client import cluster_state
from rackwise.client.cluster_state import ClusterStateError, read_cluster
from rackwise.client.groups import GroupsError, Node
from rackwise.common import TopicPartition
from rackwise.protocol import ApiKey

STORAGE_ERROR, UNKNOWN_TOPIC, CLUSTER_AUTHORIZATION_FAILED = 56, 3, 31
LEADER_NOT_AVAILABLE = 5


def broker(i: int, *, fenced: bool = False) -> A:
    return A(broker_id=i, host="h", port=9000 + i, rack=f"/dc1/r{i}", is_fenced=fenced)


def part(i: int, replicas: tuple[int, ...], isr: tuple[int, ...], leader: int = -1) -> A:
    return A(
        error_code=0,
        partition_index=i,
        leader_id=leader,
        leader_epoch=4,
        replica_nodes=replicas,
        isr_nodes=isr,
        offline_replicas=(),
    )


def log_dir(path: str, error: int, *replicas: tuple[str, int, int, bool]) -> A:
    topics: dict[str, list[A]] = {}
    for topic, p, size, future in replicas:
        topics.setdefault(topic, []).append(
            A(partition_index=p, partition_size=size, offset_lag=0, is_future_key=future)
        )
    return A(
        error_code=error,
        log_dir=path,
        total_bytes=-1 if error else 1000,
        usable_bytes=-1 if error else 400,
        topics=[A(name=n, partitions=ps) for n, ps in topics.items()],
    )


ANSWERS: dict[Any, Any] = {
    ApiKey.DESCRIBE_CLUSTER: A(
        error_code=0,
        error_message=None,
        cluster_id="Xc1",
        controller_id=3000,
        brokers=[broker(1), broker(2), broker(4, fenced=True)],
    ),
    ApiKey.METADATA: A(
        topics=[
            A(name="t", error_code=0, partitions=[part(0, (1, 2, 3), (1, 2), 1)]),
            A(name="gone", error_code=UNKNOWN_TOPIC, partitions=[]),
            A(name="coming", error_code=LEADER_NOT_AVAILABLE, partitions=[]),
            A(name="deleting", error_code=0, partitions=[part(0, (2,), (2,), 2)]),
        ]
    ),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: A(
        error_code=0,
        error_message=None,
        topics=[
            A(
                name="t",
                partitions=[
                    A(
                        partition_index=0,
                        replicas=(1, 2, 3),
                        adding_replicas=(1,),
                        removing_replicas=(3,),
                    )
                ],
            )
        ],
    ),
    ApiKey.DESCRIBE_CONFIGS: A(
        results=[
            A(
                error_code=0,
                resource_name="t",
                configs=[
                    A(name="min.insync.replicas", value="2"),
                    A(name="leader.replication.throttled.replicas", value="0:2"),
                ],
            ),
            A(error_code=UNKNOWN_TOPIC, resource_name="deleting", configs=[]),
        ]
    ),
    (ApiKey.DESCRIBE_LOG_DIRS, 1): A(
        error_code=0,
        results=[
            log_dir("/d/1a", 0, ("t", 0, 50, False)),
            log_dir("/d/1b", STORAGE_ERROR),
        ],
    ),
    (ApiKey.DESCRIBE_LOG_DIRS, 2): A(
        error_code=0,
        results=[log_dir("/d/2a", 0, ("t", 0, 80, False), ("t", 0, 10, True))],
    ),
}


class Scripted:
    """Connections answering from a table; ``sent`` records (api key, node id)."""

    answers: ClassVar[dict[Any, Any]] = ANSWERS
    sent: ClassVar[list[tuple[int, int | None]]] = []
    hanging: ClassVar[int] = 0
    hanging_at_close: ClassVar[int] = 0

    def __init__(self, bootstrap: Any, *, timeout_s: float, client_id: str) -> None:
        self.client_id = client_id

    async def send(
        self, node: Node | None, api_key: int, values: Mapping[str, Any], **_: Any
    ) -> Any:
        Scripted.sent.append((api_key, None if node is None else node.id))
        answer = self.answers.get((api_key, node.id) if node else api_key)
        if answer is None:
            answer = self.answers[api_key]
        if isinstance(answer, Exception):
            raise answer
        if answer == "hang":
            Scripted.hanging += 1
            try:
                await asyncio.sleep(3600)
            finally:
                Scripted.hanging -= 1
        return answer

    async def close(self) -> None:
        Scripted.hanging_at_close = Scripted.hanging


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> type[Scripted]:
    monkeypatch.setattr(cluster_state, "Connections", Scripted)
    Scripted.answers = dict(ANSWERS)
    Scripted.sent = []
    return Scripted


def test_the_snapshot_of_every_answer(scripted: type[Scripted]) -> None:
    taken = read_cluster("h:9001")
    assert (taken.cluster_id, taken.controller_id) == ("Xc1", 3000)
    # broker 3 holds a replica but is not listed (a fenced broker to a Kafka before 4.0)
    assert {b.id: b.fenced for b in taken.brokers.values()} == {1: False, 2: False, 3: True,
                                                                4: True}  # fmt: skip
    assert taken.brokers[3].rack is None
    tp = TopicPartition("t", 0)
    assert list(taken.partitions) == [tp]  # "gone" and "deleting" went, "coming" is on its way
    state = taken.partitions[tp]
    assert (state.replicas, state.leader, state.leader_epoch, state.isr) == ((1, 2, 3), 1, 4,
                                                                             (1, 2))  # fmt: skip
    assert (state.min_insync, state.size_bytes, state.log_dir) == (
        2, {1: 50, 2: 80}, {1: "/d/1a", 2: "/d/2a"}
    )  # fmt: skip
    assert state.future_log_dir == {2: "/d/2a"}
    assert [(d.path, d.is_live, d.total_bytes, d.usable_bytes) for d in taken.log_dirs[1]] == [
        ("/d/1a", True, 1000, 400), ("/d/1b", False, None, None)
    ]  # fmt: skip
    assert taken.log_dirs[1][1].error == STORAGE_ERROR
    assert taken.reassignments[tp].target == (1, 2)
    assert taken.topic_configs["t"]["leader.replication.throttled.replicas"] == "0:2"
    # the fenced broker is not asked for its directories
    asked = sorted(n for k, n in scripted.sent if k == ApiKey.DESCRIBE_LOG_DIRS)
    assert asked == [1, 2] and 4 not in taken.log_dirs


@pytest.mark.parametrize(
    ("key", "answer", "message"),
    [
        (
            ApiKey.DESCRIBE_CLUSTER,
            GroupsError(56, "Connection to h:9001 refused"),
            "cluster h:9001: DescribeCluster failed: Connection to h:9001 refused",
        ),
        (
            ApiKey.LIST_PARTITION_REASSIGNMENTS,
            A(error_code=CLUSTER_AUTHORIZATION_FAILED, error_message="no", topics=[]),
            "cluster h:9001: ListPartitionReassignments failed: CLUSTER_AUTHORIZATION_FAILED: no",
        ),
        (
            (ApiKey.DESCRIBE_LOG_DIRS, 2),
            GroupsError(35, "h:9002 does not support DescribeLogDirs v1 or later"),
            "cluster h:9001: DescribeLogDirs on broker 2 (h:9002) failed: h:9002 does not "
            "support DescribeLogDirs v1 or later",
        ),
    ],
)
def test_a_failed_request_is_one_line_naming_the_cluster(
    scripted: type[Scripted], key: Any, answer: Any, message: str
) -> None:
    scripted.answers[key] = answer
    with pytest.raises(ClusterStateError) as caught:
        read_cluster("h:9001")
    assert str(caught.value) == message


def test_client_properties(scripted: type[Scripted]) -> None:
    # SSL without the TLS context --command-config would have set up; a key no command serves
    refused = r"security.protocol=SSL, sasl.kerberos.service.name \(rackwise reads"
    with pytest.raises(
        ClusterStateError, match=r"^cluster h:1: client config not served: " + refused
    ):
        read_cluster("h:1", {"security.protocol": "ssl", "sasl.kerberos.service.name": "k"})
    with pytest.raises(ClusterStateError, match="bootstrap server 'h': expected HOST:PORT"):
        read_cluster("h")
    read_cluster("h:1", {"client.id": "ops", "request.timeout.ms": "500"})


def test_a_failure_cancels_the_requests_still_out(scripted: type[Scripted]) -> None:
    scripted.answers[(ApiKey.DESCRIBE_LOG_DIRS, 2)] = "hang"
    scripted.answers[ApiKey.METADATA] = GroupsError(7, "request timed out")
    began = time.monotonic()
    with pytest.raises(ClusterStateError, match=r"^cluster h:1: Metadata failed: request timed"):
        read_cluster("h:1", timeout_ms=20_000)
    assert time.monotonic() - began < 5
    assert scripted.hanging_at_close == 0  # no request still out when the connections close


def test_a_read_that_does_not_finish_in_time(scripted: type[Scripted]) -> None:
    scripted.answers[(ApiKey.DESCRIBE_LOG_DIRS, 2)] = "hang"
    with pytest.raises(ClusterStateError) as caught:
        read_cluster("h:1", timeout_ms=200)
    assert str(caught.value) == "cluster h:1: reading the cluster failed: not done within 200 ms"
