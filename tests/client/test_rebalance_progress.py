"""``rackwise rebalance``'s line per batch: the batch's rate over all brokers, and the busiest
broker's against ``--throttle``, which Kafka applies to each broker on its own."""

from __future__ import annotations

from rackwise.client.rebalance_run import _Progress
from rackwise.common import TopicPartition
from rackwise.rebalance.model import Move, PartitionState, Target

MB = 1_000_000


def move(partition: int, replicas: tuple[int, ...], target: tuple[int, ...], size: int) -> Move:
    source = PartitionState(replicas, (None,) * len(replicas), replicas, replicas[0], 1, size)
    return Move(TopicPartition("t", partition), source, Target(target))


def lines_of(moves: tuple[Move, ...], throttle: int, took_s: float) -> list[str]:
    now = [100.0]
    lines: list[str] = []
    progress = _Progress(lines.append, throttle, clock=lambda: now[0])
    progress.begin(1, moves)
    now[0] += took_s
    progress.end(0)
    return lines


def test_a_batch_into_three_brokers_copies_at_three_times_the_per_broker_throttle() -> None:
    # 10 MB into each of brokers 4, 5 and 6 in 1 s: 30 MB/s over all, 10 MB/s into each
    moves = tuple(move(p, (1, 2), (2, b), 10 * MB) for p, b in enumerate((4, 5, 6)))
    assert lines_of(moves, 10 * MB, 1.0) == [
        "batch 1: started 3 moves, 30,000,000 bytes to copy",
        "batch 1: done, 30,000,000 bytes in 1.0 s (30,000,000 B/s; into broker 4 at"
        " 10,000,000 B/s of 10,000,000 per broker); 30,000,000 bytes done, 0 batches left,"
        " about 0 s",
    ]


def test_the_busiest_broker_is_named_and_without_a_throttle_nothing_is_compared() -> None:
    moves = (move(0, (1, 2), (3, 4), 4 * MB), move(1, (1, 2), (2, 4), 2 * MB))
    [_, done] = lines_of(moves, -1, 2.0)
    # broker 4 takes 6 MB in 2 s; broker 3 only 4 MB
    assert "(5,000,000 B/s; into broker 4 at 3,000,000 B/s);" in done


def test_a_leader_move_copies_nothing_and_names_no_broker() -> None:
    [_, done] = lines_of((move(0, (1, 2), (2, 1), 5 * MB),), 10 * MB, 1.0)
    assert "0 bytes in 1.0 s (0 B/s);" in done
