"""A large consumer group's target assignment is computed off the coordinator's event loop: on
a real cluster (three brokers, one rack each), 300 members join a group over 1,000 partitions
with ``rack-local-optimal``, one after another, so that targets are computed again and again
(most of them stale before they are done); meanwhile another group's heartbeats and a Metadata
request to the same broker are timed, and the large group then becomes stable with the
assignment the assignor gives: balanced, each member's assignment its target, and as many
partitions read in the leader's rack as the proven optimum.

The bound: measured at 55 to 85 ms at the 99th percentile on two cores with a load average
near 10 (other processes on the machine); computing the targets on the loop, as before, gave
1.0 to 1.5 s (and 45 s for the 300 joins, against 6 s). The test allows 300 ms."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any, Final

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from rackwise.assignors.model import GroupSpec, Member, PartitionInfo
from rackwise.assignors.optimal import optimal_locality
from rackwise.net import KafkaConnection
from rackwise.protocol import ApiKey
from tests.command_line import rackwise
from tests.processes import run

RACKS: Final = ("/dc1/r1", "/dc2/r1", "/dc3/r1")
PARTITIONS: Final = 1000
MEMBERS: Final = 300
ASSIGNOR: Final = "rack-local-optimal"
BOUND_S: Final = 0.3
RETRIABLE: Final = (14, 15, 16)  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[dict[str, Any]]]:
    directory = tmp_path_factory.mktemp("off-loop")
    up = rackwise(
        "cluster", "up", "--brokers", "3", "--racks", ",".join(RACKS), "--dir", str(directory),
        "--json", "--override", "offsets.topic.num.partitions=1",
        "--override", "offsets.topic.replication.factor=1",
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        yield [n for n in json.loads(up.stdout)["nodes"] if n["role"] == "broker"]
    finally:
        if (directory / "cluster.json").exists():
            down = rackwise("cluster", "down", "--dir", str(directory))
            assert down.returncode == 0, down.stderr


def _create(brokers: list[dict[str, Any]], topic: str) -> None:
    admin = AdminClient(
        {"bootstrap.servers": ",".join(f"{b['host']}:{b['port']}" for b in brokers)}
    )
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(120)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        described = admin.list_topics(topic, timeout=10).topics[topic]
        leaders = [p.leader for p in described.partitions.values()]
        if described.error is None and len(leaders) == PARTITIONS and min(leaders) >= 0:
            return
        time.sleep(0.2)
    raise AssertionError(f"{topic} has no leader for every partition")


class Members:
    """Raw ConsumerGroupHeartbeats of the members of one group over one connection."""

    def __init__(self, conn: KafkaConnection, group: str, topic: str) -> None:
        self.conn, self.group, self.topic = conn, group, topic
        self.epochs: dict[str, int] = {}
        self.owned: dict[str, list[dict[str, Any]]] = {}

    async def heartbeat(self, member: str, rack: str | None = None) -> Any:
        joining = member not in self.epochs
        for _ in range(200):
            response = await self.conn.request(
                ApiKey.CONSUMER_GROUP_HEARTBEAT,
                group_id=self.group, member_id=member, member_epoch=self.epochs.get(member, 0),
                instance_id=None, rack_id=rack, rebalance_timeout=300_000,
                subscribed_topic_names=[self.topic] if joining else None,
                server_assignor=ASSIGNOR if joining else None,
                topic_partitions=self.owned.get(member, []), timeout_s=60,
            )  # fmt: skip
            if int(response.error_code) not in RETRIABLE:
                break
            await asyncio.sleep(0.1)
        assert int(response.error_code) == 0, response
        self.epochs[member] = int(response.member_epoch)
        if response.assignment is not None:
            self.owned[member] = [
                {"topic_id": t.topic_id, "partitions": list(t.partitions)}
                for t in response.assignment.topic_partitions
            ]
        return response


def _p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


async def _probe(
    address: tuple[str, int], topic: str, stop: asyncio.Event
) -> dict[str, list[float]]:
    """Another group's heartbeats and Metadata requests, timed until ``stop``."""
    async with await KafkaConnection.connect(*address) as conn:
        await conn.negotiate_versions()
        small = Members(conn, f"small-{uuid.uuid4().hex[:6]}", topic)
        member = uuid.uuid4().hex
        await small.heartbeat(member)
        times: dict[str, list[float]] = {"heartbeat": [], "metadata": []}
        while not stop.is_set():
            start = time.perf_counter()
            await small.heartbeat(member)
            times["heartbeat"].append(time.perf_counter() - start)
            start = time.perf_counter()
            await conn.request(
                ApiKey.METADATA, topics=[], allow_auto_topic_creation=False,
                include_topic_authorized_operations=False, timeout_s=60,
            )  # fmt: skip
            times["metadata"].append(time.perf_counter() - start)
            await asyncio.sleep(0.02)
        return times


async def _coordinator(brokers: list[dict[str, Any]], group: str) -> tuple[str, int]:
    b = brokers[0]
    async with await KafkaConnection.connect(b["host"], b["port"]) as conn:
        await conn.negotiate_versions()
        for _ in range(300):
            found = await conn.request(
                ApiKey.FIND_COORDINATOR, key_type=0, coordinator_keys=[group]
            )
            (c,) = found.coordinators
            if int(c.error_code) == 0:
                return str(c.host), int(c.port)
            await asyncio.sleep(0.2)
    raise AssertionError(f"no coordinator for {group}")


async def _scenario(brokers: list[dict[str, Any]], topic: str) -> tuple[dict[str, Any], Any]:
    group = f"large-{uuid.uuid4().hex[:6]}"
    address = await _coordinator(brokers, group)
    async with await KafkaConnection.connect(*address) as conn:
        await conn.negotiate_versions()
        stop = asyncio.Event()
        probe = asyncio.create_task(_probe(address, topic, stop))
        large = Members(conn, group, topic)
        racks = {uuid.uuid4().hex: RACKS[i % len(RACKS)] for i in range(MEMBERS)}
        start = time.monotonic()
        for member, rack in racks.items():
            await large.heartbeat(member, rack)
        joined_s = time.monotonic() - start
        described = None
        for _ in range(120):  # members heartbeat until the group is stable, the probe still on
            for member in racks:
                await large.heartbeat(member)
            response = await conn.request(
                ApiKey.CONSUMER_GROUP_DESCRIBE, group_ids=[group],
                include_authorized_operations=False,
            )  # fmt: skip
            (described,) = response.groups
            if described.group_state == "Stable":
                break
            await asyncio.sleep(0.1)
        stop.set()
        times = await probe
        return {"times": times, "joined_s": joined_s, "racks": racks}, described


def _leader_racks(brokers: list[dict[str, Any]], topic: str) -> list[str]:
    rack_of = {int(b["id"]): str(b["rack"]) for b in brokers}
    admin = AdminClient({"bootstrap.servers": f"{brokers[0]['host']}:{brokers[0]['port']}"})
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    return [rack_of[partitions[p].leader] for p in range(PARTITIONS)]


def test_other_requests_are_answered_while_a_large_target_computes(
    cluster: list[dict[str, Any]],
) -> None:
    topic = f"wide-{uuid.uuid4().hex[:6]}"
    _create(cluster, topic)
    outcome, described = run(_scenario(cluster, topic), 240)
    times = outcome["times"]
    assert len(times["heartbeat"]) >= 20, times  # the probe ran until the group was stable
    for kind, samples in times.items():
        worst = [round(x, 3) for x in sorted(samples)[-5:]]
        assert _p99(samples) < BOUND_S, (kind, worst, len(samples), outcome["joined_s"])
    assert described is not None and described.group_state == "Stable", described
    assert described.assignor_name == ASSIGNOR
    assert described.assignment_epoch == described.group_epoch
    counts, local, seen = [], 0, set()
    leader_rack = _leader_racks(cluster, topic)
    for m in described.members:
        mine = [p for t in m.assignment.topic_partitions for p in t.partitions]
        target = [p for t in m.target_assignment.topic_partitions for p in t.partitions]
        assert sorted(mine) == sorted(target), m.member_id
        assert not seen & set(mine)
        seen |= set(mine)
        counts.append(len(mine))
        local += sum(1 for p in mine if leader_rack[p] == m.rack_id)
    assert seen == set(range(PARTITIONS))
    assert max(counts) - min(counts) <= 1
    spec = GroupSpec(
        partitions={topic: [PartitionInfo((r,)) for r in leader_rack]},
        members=tuple(Member(m, (topic,), rack=r) for m, r in outcome["racks"].items()),
    )
    assert local == optimal_locality(spec)
