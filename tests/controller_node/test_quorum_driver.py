"""Three voters on real sockets in one event loop: Kafka's quorum APIs between controllers."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rackwise.controller_node.quorum_driver import QuorumDriver
from rackwise.metalog.replicated import ReplicatedMetadataLog
from rackwise.net import KafkaServer, start_server
from rackwise.protocol import Listener, Request
from rackwise.raft import QuorumConfig
from rackwise.records import TopicRecord
from tests.metalog.helpers import topic
from tests.processes import run

CONFIG = QuorumConfig(election_timeout_ms=300, fetch_timeout_ms=600, request_timeout_ms=1000)


def now_ms() -> int:
    return time.monotonic_ns() // 1_000_000


class Voter:
    def __init__(self, node_id: int, directory: Path) -> None:
        self.node_id = node_id
        self.directory = directory
        self.server: KafkaServer | None = None
        self.driver: QuorumDriver | None = None

    async def listen(self) -> int:
        async def handle(request: Request) -> Any:
            assert self.driver is not None
            return await self.driver.handle(request)

        self.server = await start_server(handle, Listener.CONTROLLER, host="127.0.0.1", port=0)
        return self.server.port

    async def start(self, addresses: dict[int, tuple[str, int]]) -> None:
        log = ReplicatedMetadataLog(
            self.directory,
            self.node_id,
            sorted(addresses),
            CONFIG,
            random=random.Random(self.node_id),
            clock=now_ms,
            send=lambda dest, message: None,
        )
        self.driver = QuorumDriver(
            log, addresses, cluster_id="c1", request_timeout_ms=CONFIG.request_timeout_ms
        )
        await self.driver.start()

    @property
    def log(self) -> ReplicatedMetadataLog:
        assert self.driver is not None
        return self.driver.log

    async def stop(self, *, resign: bool) -> None:
        assert self.server is not None and self.driver is not None
        await self.driver.close(resign=resign)
        await self.server.close()
        self.driver.log.close()
        self.driver = None


async def wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


def leader_of(voters: list[Voter]) -> Voter | None:
    leaders = [v for v in voters if v.driver is not None and v.log.is_leader]
    return max(leaders, key=lambda v: v.log.epoch, default=None)


def topics(voter: Voter) -> list[str]:
    return [r.name for b in voter.log.read_from(0) for r in b.records if isinstance(r, TopicRecord)]


async def quorum_survives_its_leader(tmp_path: Path, resign: bool) -> float:
    """Seconds from the leader's stop to a new leader."""
    voters = [Voter(i, tmp_path / str(i)) for i in (1, 2, 3)]
    try:
        return await survive_the_leader(voters, resign)
    finally:
        for v in voters:
            if v.driver is not None:
                await v.stop(resign=False)


async def survive_the_leader(voters: list[Voter], resign: bool) -> float:
    addresses = {v.node_id: ("127.0.0.1", await v.listen()) for v in voters}
    for v in voters:
        await v.start(addresses)
    await wait_for(lambda: leader_of(voters) is not None)
    first = leader_of(voters)
    assert first is not None
    [last] = first.log.append_batches([topic("before", 1)], 0)
    await wait_for(lambda: all(v.log.high_watermark > last for v in voters))
    first_epoch = first.log.epoch
    stopped = time.monotonic()
    await first.stop(resign=resign)
    rest = [v for v in voters if v is not first]
    await wait_for(lambda: leader_of(rest) is not None)
    handover_s = time.monotonic() - stopped
    second = leader_of(rest)
    assert second is not None and second.log.epoch > first_epoch
    [last] = second.log.append_batches([topic("after", 1)], 0)
    await wait_for(lambda: all(v.log.high_watermark > last for v in rest))
    for v in rest:
        assert topics(v) == ["before", "after"]
    return handover_s


def test_a_quorum_on_real_sockets_survives_the_loss_of_its_leader(tmp_path: Path) -> None:
    handover_s = run(quorum_survives_its_leader(tmp_path, resign=False), 30)
    assert handover_s >= CONFIG.fetch_timeout_ms / 1000 * 0.9  # the followers had to time out


def test_a_resigning_leader_hands_over_before_any_follower_times_out(tmp_path: Path) -> None:
    handover_s = run(quorum_survives_its_leader(tmp_path, resign=True), 30)
    assert handover_s < CONFIG.fetch_timeout_ms / 1000
