"""A partition's leader and followers on real logs, replicating by hand: the high watermark is
never above any in-sync replica's log end, acks=all completes only when it passes the records,
NOT_ENOUGH_REPLICAS refuses before appending, and the ISR plan drops laggards and adds
caught-up followers."""

from __future__ import annotations

import random
import uuid
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rackwise.common.errors import FencedLeaderEpochException
from rackwise.replica.errors import (
    NotEnoughReplicasException,
    NotLeaderOrFollowerException,
    UnknownLeaderEpochException,
)
from rackwise.replica.partition import Partition, PartitionState, RackRequirement
from rackwise.storage.batch import build_batch
from rackwise.storage.config import LogConfig
from rackwise.storage.files import FileCache
from rackwise.storage.log import PartitionLog

TOPIC_ID = uuid.UUID(int=12345)
LAG_MS = 10_000


def open_log(directory: Path, files: FileCache) -> PartitionLog:
    return PartitionLog.open(
        directory,
        LogConfig(),
        topic_id=TOPIC_ID,
        recovery_point=0,
        log_start_offset=0,
        had_clean_shutdown=True,
        files=files,
        clock=lambda: 0,
        rng=random.Random(1),
    )


def state(leader: int, isr: tuple[int, ...], epoch: int = 1) -> PartitionState:
    return PartitionState(TOPIC_ID, (1, 2, 3), isr, leader, epoch, epoch)


def batch(n: int) -> bytes:
    return build_batch([(None, f"v{i}".encode(), ()) for i in range(n)], timestamp_ms=1000)


class Trio:
    """Broker 1 leads t-0; 2 and 3 follow by reading from the leader's log."""

    def __init__(self, root: Path) -> None:
        files = FileCache(32)
        self.replicas = {
            b: Partition("t", 0, b, open_log(root / f"b{b}" / "t-0", files), state(1, ()))
            for b in (1, 2, 3)
        }
        for p in self.replicas.values():
            p.apply_registration(state(1, (1, 2, 3)), now_ms=0)

    @property
    def leader(self) -> Partition:
        return self.replicas[1]

    def fetch(self, follower: int, now_ms: int) -> None:
        """One follower fetch: report its log end, copy what the leader has, take the HW."""
        replica = self.replicas[follower]
        offset = replica.log_end_offset
        self.leader.update_follower(
            follower,
            fetch_offset=offset,
            log_start_offset=replica.log.log_start_offset,
            now_ms=now_ms,
            lag_max_ms=LAG_MS,
        )
        chunk = self.leader.log.read(
            offset,
            max_bytes=1 << 20,
            max_offset=self.leader.log_end_offset,
            min_one_batch=True,
        )
        if chunk.records:
            replica.log.append_as_follower(chunk.records)
        replica.log.update_high_watermark(min(self.leader.high_watermark, replica.log_end_offset))


def test_worked_example_high_watermark_waits_for_the_whole_isr(tmp_path: Path) -> None:
    trio = Trio(tmp_path)
    info = trio.leader.append_as_leader(
        batch(10), required_acks=-1, min_insync_replicas=2, now_ms=1
    )
    assert (info.first_offset, info.last_offset) == (0, 9)
    assert trio.leader.high_watermark == 0
    assert trio.leader.acks_all_outcome(10, 2) is None
    trio.fetch(2, 2)  # copies 0-9
    trio.fetch(2, 3)  # reports 10
    assert trio.leader.high_watermark == 0  # broker 3 has nothing yet
    trio.fetch(3, 4)
    trio.fetch(3, 5)
    assert trio.leader.high_watermark == 10
    assert trio.leader.acks_all_outcome(10, 2) == 0
    trio.fetch(2, 6)
    assert trio.replicas[2].high_watermark == 10


def test_isr_plan_drops_a_laggard_and_takes_it_back(tmp_path: Path) -> None:
    trio = Trio(tmp_path)
    trio.leader.append_as_leader(batch(5), required_acks=1, min_insync_replicas=1, now_ms=0)
    trio.fetch(2, 100)
    trio.fetch(2, 200)
    # Broker 3 never fetches: out after replica.lag.time.max.ms.
    assert trio.leader.isr_plan(LAG_MS - 1, LAG_MS, (1, 2, 3)) == (1, 2, 3)
    assert trio.leader.isr_plan(LAG_MS + 1, LAG_MS, (1, 2, 3)) == (1, 2)
    trio.leader.apply_registration(state(1, (1, 2)), now_ms=LAG_MS + 1)
    assert not trio.leader.has_joiner()
    trio.fetch(3, LAG_MS + 2)
    trio.fetch(3, LAG_MS + 3)
    assert trio.leader.has_joiner()
    assert trio.leader.isr_plan(LAG_MS + 3, LAG_MS, (1, 2, 3)) == (1, 2, 3)
    # A fenced broker (not eligible) does not join.
    assert trio.leader.isr_plan(LAG_MS + 3, LAG_MS, (1, 2)) == (1, 2)


def test_a_follower_put_out_of_the_isr_rejoins_only_on_a_new_fetch(tmp_path: Path) -> None:
    """Idle partition, every follower at the log end; the controller takes broker 3 out of the
    ISR (its directory failed, so it stopped fetching): its last report, at the high
    watermark, does not take it back; a fetch after the change does."""
    trio = Trio(tmp_path)
    trio.leader.append_as_leader(batch(5), required_acks=1, min_insync_replicas=1, now_ms=0)
    for now in (100, 200):
        trio.fetch(2, now)
        trio.fetch(3, now)
    assert trio.leader.high_watermark == 5
    shrunk = PartitionState(TOPIC_ID, (1, 2, 3), (1, 2), 1, 1, 2)  # same leader epoch
    trio.leader.apply_registration(shrunk, now_ms=300)
    assert not trio.leader.has_joiner()
    assert trio.leader.isr_plan(400, LAG_MS, (1, 2, 3)) == (1, 2)
    trio.fetch(2, 500)  # another follower's fetch changes nothing for broker 3
    assert trio.leader.isr_plan(500, LAG_MS, (1, 2, 3)) == (1, 2)
    trio.fetch(3, 600)
    assert trio.leader.has_joiner()
    assert trio.leader.isr_plan(600, LAG_MS, (1, 2, 3)) == (1, 2, 3)


def test_not_enough_replicas_refuses_before_the_append(tmp_path: Path) -> None:
    trio = Trio(tmp_path)
    trio.leader.apply_registration(state(1, (1,)), now_ms=0)
    with pytest.raises(NotEnoughReplicasException, match=r"min\.isr requirement of 2"):
        trio.leader.append_as_leader(batch(3), required_acks=-1, min_insync_replicas=2, now_ms=0)
    assert trio.leader.log_end_offset == 0
    trio.leader.append_as_leader(batch(3), required_acks=1, min_insync_replicas=2, now_ms=0)
    assert trio.leader.log_end_offset == 3


def test_after_append_the_isr_shrinking_gives_not_enough_replicas_after_append(
    tmp_path: Path,
) -> None:
    trio = Trio(tmp_path)
    trio.leader.append_as_leader(batch(3), required_acks=-1, min_insync_replicas=2, now_ms=0)
    trio.leader.apply_registration(state(1, (1,)), now_ms=1)  # both followers dropped
    assert trio.leader.high_watermark == 3
    assert trio.leader.acks_all_outcome(3, 2) == 20


def test_min_insync_racks_refuses_before_and_after_the_append(tmp_path: Path) -> None:
    trio = Trio(tmp_path)
    one = RackRequirement(required=2, level=1, domains=1)
    with pytest.raises(NotEnoughReplicasException, match=r"spans 1 failure domain\(s\) at level 1"):
        trio.leader.append_as_leader(
            batch(3), required_acks=-1, min_insync_replicas=1, now_ms=0, racks=one
        )
    assert trio.leader.log_end_offset == 0
    trio.leader.append_as_leader(
        batch(3), required_acks=1, min_insync_replicas=1, now_ms=0, racks=one
    )
    two = RackRequirement(required=2, level=1, domains=2)
    trio.leader.append_as_leader(
        batch(3), required_acks=-1, min_insync_replicas=1, now_ms=0, racks=two
    )
    for follower in (2, 3, 2, 3):
        trio.fetch(follower, 1)
    assert trio.leader.high_watermark == 6
    assert trio.leader.acks_all_outcome(6, 1, two) == 0
    assert trio.leader.acks_all_outcome(6, 1, one) == 20  # the ISR left a domain meanwhile


def test_epochs_and_leadership_are_checked(tmp_path: Path) -> None:
    trio = Trio(tmp_path)
    follower = trio.replicas[2]
    with pytest.raises(NotLeaderOrFollowerException):
        follower.append_as_leader(batch(1), required_acks=1, min_insync_replicas=1, now_ms=0)
    with pytest.raises(FencedLeaderEpochException):
        trio.leader.check_leader_epoch(0)
    with pytest.raises(UnknownLeaderEpochException):
        trio.leader.check_leader_epoch(2)
    trio.leader.check_leader_epoch(1)
    trio.leader.check_leader_epoch(-1)


def test_a_new_leader_starts_its_epoch_at_its_log_end(tmp_path: Path) -> None:
    trio = Trio(tmp_path)
    trio.leader.append_as_leader(batch(4), required_acks=1, min_insync_replicas=1, now_ms=0)
    trio.fetch(2, 1)
    new_leader = trio.replicas[2]
    assert new_leader.apply_registration(state(2, (2, 3), epoch=2), now_ms=2)
    assert new_leader.log.epochs.epoch_entries[-1] == (2, 4)
    info = new_leader.append_as_leader(batch(1), required_acks=1, min_insync_replicas=1, now_ms=3)
    assert info.first_offset == 4


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["append", "f2", "f3"]), st.integers(1, 5)), max_size=30
    )
)
def test_high_watermark_never_passes_an_isr_member(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, int]]
) -> None:
    trio = Trio(tmp_path_factory.mktemp("hw"))
    for now, (action, n) in enumerate(steps, start=1):
        if action == "append":
            trio.leader.append_as_leader(
                batch(n), required_acks=1, min_insync_replicas=1, now_ms=now
            )
        else:
            trio.fetch(int(action[1]), now)
        hw = trio.leader.high_watermark
        reported = [trio.leader.followers[b].log_end_offset for b in (2, 3)]
        assert hw <= trio.leader.log_end_offset
        assert all(hw <= max(r, 0) for r in reported)
        for b in (2, 3):
            assert trio.replicas[b].high_watermark <= hw
            # Below the high watermark every replica holds the leader's bytes.
            common = trio.replicas[b].high_watermark
            if common:
                mine = trio.replicas[b].log.read(
                    0, max_bytes=1 << 20, max_offset=common, min_one_batch=True
                )
                theirs = trio.leader.log.read(
                    0, max_bytes=1 << 20, max_offset=common, min_one_batch=True
                )
                assert mine.records == theirs.records
