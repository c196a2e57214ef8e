"""The quorum's files: quorum-state, a follower's truncation and snapshot replacement, and three
replicated logs in real directories passing messages in memory."""

from __future__ import annotations

import json
import random
import threading
from collections import deque
from pathlib import Path
from typing import Any

import pytest

from rackwise.metalog.api import MetadataLogError
from rackwise.metalog.quorum_state import FileQuorumStateStore, QuorumStateException
from rackwise.metalog.raft_file_log import RaftFileLog
from rackwise.metalog.replicated import NotControllerException, ReplicatedMetadataLog
from rackwise.raft import QuorumConfig
from rackwise.raft.messages import ElectionState, Message
from rackwise.records import NoOpRecord, TopicRecord
from tests.metalog.helpers import topic

# --- quorum-state --------------------------------------------------------------------------


def test_quorum_state_is_kafkas_line_of_json(tmp_path: Path) -> None:
    store = FileQuorumStateStore(tmp_path)
    assert store.read() == ElectionState(0)
    store.write(ElectionState(4, 1, -1), [3, 1, 2])
    assert (tmp_path / "quorum-state").read_text() == (
        '{"clusterId":"","leaderId":-1,"leaderEpoch":4,"votedId":1,"appliedOffset":0,'
        '"currentVoters":[{"voterId":1},{"voterId":2},{"voterId":3}],"data_version":0}'
    )
    assert FileQuorumStateStore(tmp_path).read() == ElectionState(4, 1, -1)


@pytest.mark.parametrize("point", ["after-tmp-write", "after-rename"])
def test_a_crash_while_writing_leaves_the_old_or_the_new_state(tmp_path: Path, point: str) -> None:
    store = FileQuorumStateStore(tmp_path)
    store.write(ElectionState(1, 2, 2), [1, 2, 3])

    def crash(at: str) -> None:
        if at == point:
            raise SystemExit(at)

    store.crash_hook = crash
    with pytest.raises(SystemExit):
        store.write(ElectionState(2, 3, -1), [1, 2, 3])
    expected = ElectionState(1, 2, 2) if point == "after-tmp-write" else ElectionState(2, 3, -1)
    assert FileQuorumStateStore(tmp_path).read() == expected


def test_an_unreadable_quorum_state_is_refused(tmp_path: Path) -> None:
    (tmp_path / "quorum-state").write_text(json.dumps({"leaderEpoch": 1, "data_version": 7}))
    with pytest.raises(QuorumStateException, match=r"data_version \(7\) is not within"):
        FileQuorumStateStore(tmp_path).read()
    (tmp_path / "quorum-state").write_text("{not json")
    with pytest.raises(QuorumStateException, match="Error while reading the Quorum status"):
        FileQuorumStateStore(tmp_path).read()


# --- a follower's file log -------------------------------------------------------------------


def test_truncation_cuts_at_a_batch_and_survives_reopening(tmp_path: Path) -> None:
    with RaftFileLog(tmp_path, segment_bytes=300) as log:
        log.append_batches([topic("a", 2), topic("b", 1)], 1)
        log.append_batches([topic("c", 1), topic("d", 3)], 2)
        assert len(log._segments) > 1
        cut = 3 + 2  # the batch of "c" starts after a (3 records) and b (2 records)
        log.truncate_to(cut)
        assert (log.end_offset, log.latest_epoch) == (cut, 1)
        with pytest.raises(ValueError, match="BUG: truncation to 1, inside a batch"):
            log.truncate_to(1)
        log.append_batches([[NoOpRecord()]], 3)
    with RaftFileLog(tmp_path) as log:
        assert [b.epoch for b in log.read_from(0)] == [1, 1, 3]
        assert log.end_offset == cut + 1
        assert log.recovery_events == ()


@pytest.mark.parametrize("point", [None, "snapshot-renamed", "segments-deleted"])
def test_a_snapshot_from_the_leader_replaces_the_log(tmp_path: Path, point: str | None) -> None:
    leader_dir, follower_dir = tmp_path / "leader", tmp_path / "follower"
    with RaftFileLog(leader_dir) as leader:
        leader.append_batches([topic("a", 2), topic("b", 2)], 1)
        sid = leader.write_snapshot(topic("a", 2) + topic("b", 2), 6)
        data = leader.snapshot_bytes(sid)
    follower = RaftFileLog(follower_dir)
    follower.append_batches([topic("x", 1)], 1)

    def crash(at: str) -> None:
        if at == point:
            raise SystemExit(at)

    follower.crash_hook = crash
    if point is None:
        follower.replace_with_snapshot(sid, data)
        assert (follower.start_offset, follower.end_offset, follower.latest_epoch) == (6, 6, 1)
        follower.append_batches([[NoOpRecord()]], 2)
    else:
        with pytest.raises(SystemExit):
            follower.replace_with_snapshot(sid, data)
    follower.close()
    with RaftFileLog(follower_dir) as reopened:
        assert reopened.latest_snapshot_id() == sid
        assert reopened.start_offset == 6
        reader = reopened.read_snapshot()
        assert reader is not None and reader.record_count == 6


def test_a_damaged_snapshot_from_the_leader_is_refused(tmp_path: Path) -> None:
    with RaftFileLog(tmp_path / "leader") as leader:
        leader.append_batches([topic("a", 2)], 1)
        sid = leader.write_snapshot(topic("a", 2), 3)
        data = bytearray(leader.snapshot_bytes(sid))
    data[50] ^= 0xFF
    with RaftFileLog(tmp_path / "follower") as follower, pytest.raises(Exception, match="CRC32C"):
        follower.replace_with_snapshot(sid, bytes(data))


# --- three replicated logs ---------------------------------------------------------------------


class Quorum:
    """Three voters in ``tmp_path``, a clock, and a queue of messages delivered in order."""

    def __init__(self, tmp_path: Path) -> None:
        self.now = 0
        self.queue: deque[tuple[int, int, Message]] = deque()
        self.tmp_path = tmp_path
        self.down: set[int] = set()
        self.logs = {i: self.open(i) for i in (1, 2, 3)}
        for log in self.logs.values():
            log.start()

    def open(self, node_id: int) -> ReplicatedMetadataLog:
        def send(dest: int, message: Message) -> None:
            self.queue.append((node_id, dest, message))

        return ReplicatedMetadataLog(
            self.tmp_path / str(node_id),
            node_id,
            [1, 2, 3],
            QuorumConfig(),
            random=random.Random(node_id),
            clock=lambda: self.now,
            send=send,
        )

    def run(self, ms: int, until: Any = None) -> None:
        end = self.now + ms
        while self.now < end and not (until and until()):
            while self.queue:
                source, dest, message = self.queue.popleft()
                if dest not in self.down and source not in self.down:
                    self.logs[dest].handle_message(source, message)
            self.now += 10
            for node_id, log in self.logs.items():
                deadline = log.next_deadline_ms()
                if node_id not in self.down and deadline is not None and deadline <= self.now:
                    log.tick()

    def leader(self) -> ReplicatedMetadataLog | None:
        leaders = [log for i, log in self.logs.items() if i not in self.down and log.is_leader]
        return max(leaders, key=lambda log: log.epoch, default=None)


def test_three_replicated_logs_elect_replicate_and_commit(tmp_path: Path) -> None:
    quorum = Quorum(tmp_path)
    quorum.run(5000, lambda: quorum.leader() is not None)
    leader = quorum.leader()
    assert leader is not None
    follower = next(log for log in quorum.logs.values() if log is not leader)
    with pytest.raises(NotControllerException, match="is not the active controller") as err:
        follower.append_batches([topic("t", 1)], 0)
    assert (err.value.error_code, err.value.leader_id) == (41, leader.raft.node_id)
    [last] = leader.append_batches([topic("t", 2)], 0)
    assert leader.high_watermark <= last  # durable here, not yet on a majority
    assert len(leader.read_raw(0, 1 << 20)) < len(leader.file.read_raw(0, 1 << 20))
    quorum.run(2000, lambda: all(log.high_watermark > last for log in quorum.logs.values()))
    for log in quorum.logs.values():
        records = [r for b in log.read_from(0) for r in b.records]
        assert records[-3:] == topic("t", 2)
        assert log.read_raw(0, 1 << 20) == log.file.read_raw(0, 1 << 20)
    states = {i: FileQuorumStateStore(tmp_path / str(i)).read() for i in (1, 2, 3)}
    assert {s.leader_id for s in states.values()} == {leader.raft.node_id}


def test_a_new_leader_after_the_old_one_stops_holds_every_committed_record(
    tmp_path: Path,
) -> None:
    quorum = Quorum(tmp_path)
    quorum.run(5000, lambda: quorum.leader() is not None)
    old = quorum.leader()
    assert old is not None
    [last] = old.append_batches([topic("kept", 1)], 0)
    quorum.run(2000, lambda: old.high_watermark > last)
    old_id = old.raft.node_id
    quorum.down.add(old_id)
    quorum.run(10_000, lambda: quorum.leader() is not None)
    new = quorum.leader()
    assert new is not None and new.raft.node_id != old_id and new.epoch > old.epoch
    [next_last] = new.append_batches([topic("after", 1)], 0)
    quorum.run(3000, lambda: new.high_watermark > next_last)
    names = [r.name for b in new.read_from(0) for r in b.records if isinstance(r, TopicRecord)]
    assert names == ["kept", "after"]
    for log in quorum.logs.values():
        log.close()
    reopened = ReplicatedMetadataLog(
        tmp_path / str(new.raft.node_id),
        new.raft.node_id,
        [1, 2, 3],
        QuorumConfig(),
        random=random.Random(0),
        clock=lambda: 0,
        send=lambda dest, message: None,
    )
    assert reopened.raft.election.epoch == new.epoch
    assert reopened.end_offset == new.end_offset
    reopened.close()


def test_a_snapshot_waits_for_its_records_to_commit_and_is_refused_in_a_later_epoch(
    tmp_path: Path,
) -> None:
    quorum = Quorum(tmp_path)
    quorum.run(5000, lambda: quorum.leader() is not None)
    leader = quorum.leader()
    assert leader is not None
    [last] = leader.append_batches([topic("t", 1)], 0)
    leader.snapshot_epoch = leader.epoch
    outcome: list[object] = []

    def write() -> None:
        try:
            outcome.append(leader.write_snapshot(topic("t", 1), last + 1))
        except Exception as e:
            outcome.append(e)

    writer = threading.Thread(target=write)
    writer.start()
    quorum.run(2000, lambda: bool(outcome))
    writer.join(5)
    assert outcome and outcome[0] == leader.latest_snapshot_id()  # written once committed
    [last] = leader.append_batches([topic("u", 1)], 0)
    leader.snapshot_epoch = leader.epoch
    outcome.clear()
    writer = threading.Thread(target=write)
    writer.start()
    old_id = leader.raft.node_id
    quorum.down.add(old_id)  # cut off before "u" reaches anyone: the others elect a leader
    quorum.run(10_000, lambda: quorum.leader() is not None)
    quorum.down.clear()  # back: it follows the new epoch's leader and cuts "u"
    quorum.run(10_000, lambda: bool(outcome))
    writer.join(5)
    assert isinstance(outcome[0], MetadataLogError)
    assert "not committed in that epoch" in str(outcome[0])
    assert "u" not in [getattr(r, "name", None) for b in leader.read_from(0) for r in b.records]
