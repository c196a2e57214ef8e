"""The next producer id block's start in the image: replayed from ProducerIdsRecords, written
out by a snapshot as Kafka's ProducerIdsImage writes it, and read back to the same image."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.image import MetadataDelta, MetadataImage, ReplayError, replay
from rackwise.records import (
    FeatureLevelRecord,
    ProducerIdsRecord,
    TopicRecord,
    encode_batch,
    encode_frames,
    iter_batches,
)
from rackwise.records.constants import NO_NEXT_PRODUCER_ID


def block(next_producer_id: int, broker_id: int = 1, broker_epoch: int = 10) -> ProducerIdsRecord:
    return ProducerIdsRecord(
        broker_id=broker_id, broker_epoch=broker_epoch, next_producer_id=next_producer_id
    )


def test_no_block_handed_out_yet_and_no_record_in_the_snapshot() -> None:
    image = replay([FeatureLevelRecord(name="metadata.version", feature_level=23)])
    assert image.next_producer_id == NO_NEXT_PRODUCER_ID == -1
    assert not any(isinstance(r, ProducerIdsRecord) for r in image.to_records())


def test_each_block_moves_the_next_start_on() -> None:
    image = replay([block(1000), block(2000, broker_id=2), block(3000)])
    assert image.next_producer_id == 3000


def test_the_snapshot_keeps_only_the_next_start_last_and_of_no_broker() -> None:
    topic = TopicRecord(name="t", topic_id=uuid.UUID(int=5))
    image = replay([block(1000), topic, block(2000, broker_id=2, broker_epoch=44)])
    records = image.to_records()
    assert records == [
        topic,
        ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=2000),
    ]
    assert replay(records) == image


@pytest.mark.parametrize("next_producer_id", [1000, 999, -5], ids=["same", "lower", "negative"])
def test_a_start_that_does_not_grow_is_refused_loudly(next_producer_id: int) -> None:
    delta = MetadataDelta(replay([block(1000)]))
    with pytest.raises(ReplayError) as caught:
        delta.replay(block(next_producer_id))
    assert str(caught.value).startswith("BUG: unable to replay ProducerIdsRecord")
    assert "above the current one (1000) and not negative" in str(caught.value)


def test_a_negative_start_is_refused_on_an_empty_image_too() -> None:
    with pytest.raises(ReplayError, match=r"current one \(-1\)"):
        replay([block(-2)])


def test_the_delta_goes_on_from_the_applied_image() -> None:
    delta = MetadataDelta(MetadataImage())
    delta.replay(block(1000))
    first = delta.apply()
    delta.replay(block(2000))
    assert (first.next_producer_id, delta.apply().next_producer_id) == (1000, 2000)


@settings(max_examples=50, deadline=None)
@given(
    steps=st.lists(st.integers(1, 5_000), max_size=12),
    cut=st.integers(0, 12),
)
def test_any_growing_sequence_survives_a_snapshot_through_bytes(steps: list[int], cut: int) -> None:
    """The image of the first ``cut`` blocks as a snapshot, encoded and decoded, then the
    rest replayed: the same image as replaying them all."""
    starts = [sum(steps[: i + 1]) for i in range(len(steps))]
    records = [block(start, broker_id=i % 3) for i, start in enumerate(starts)]
    whole = replay(records)
    assert whole.next_producer_id == (starts[-1] if starts else NO_NEXT_PRODUCER_ID)
    snapshot = replay(records[:cut]).to_records()
    data = encode_batch(0, 1, 0, encode_frames(snapshot)) if snapshot else b""
    decoded = [r for batch in iter_batches(data) for r in batch.records]
    assert decoded == snapshot
    assert replay(records[cut:], replay(decoded)) == whole
