"""Faults of the controller process, for real: ``kill -9`` in the middle of a burst of
CreateTopics loses nothing acknowledged and leaves nothing half-applied; a torn or bit-flipped
log tail is reported and truncated at restart; a corrupt newest snapshot falls back to the
previous one plus the log."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

from rackwise.image import MetadataImage
from rackwise.metalog import FileMetadataLog, load_image
from tests.processes import (
    ControllerProcess,
    create_topics,
    register_unfenced,
    run,
    topic,
)


def image_of(directory: Path) -> MetadataImage:
    with FileMetadataLog(directory, read_only=True) as log:
        return load_image(log).image


def partitions_by_topic(image: MetadataImage) -> dict[str, int]:
    return {t.name: len(t.partitions) for t in image.topics_by_id.values()}


def wanted_partitions(name: str) -> int:
    """Topics of the burst say how many partitions they asked for: ``burst-<i>-p<n>``."""
    match = re.fullmatch(r".*-p(\d+)", name)
    assert match is not None, name
    return int(match.group(1))


def test_kill_9_during_a_burst_of_create_topics(controller_factory: Any) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()
    acknowledged: set[str] = set()

    async def burst() -> None:
        async with await controller.connect() as conn:
            await register_unfenced(conn, range(2, 6))

        async def writer(w: int) -> None:
            conn = await controller.connect()
            try:
                for i in range(10_000):
                    name = f"burst-{w}-{i}-p{1 + (i * 7 + w) % 9}"
                    response = await create_topics(
                        conn, topic(name, wanted_partitions(name), 1 + i % 3)
                    )
                    for result in response.topics:
                        if int(result.error_code) == 0:
                            acknowledged.add(str(result.name))
            except Exception:
                return  # the controller died under us: expected
            finally:
                await conn.close()

        writers = [asyncio.ensure_future(writer(w)) for w in range(6)]
        while len(acknowledged) < 150:
            await asyncio.sleep(0.02)
        controller.kill()  # SIGKILL while the writers keep sending
        await asyncio.gather(*writers)

    run(burst(), deadline_s=120)
    assert len(acknowledged) >= 150
    controller.start()  # recovers
    controller.stop()
    found = partitions_by_topic(image_of(controller.metadata_dir))
    missing = acknowledged - set(found)
    assert not missing, f"acknowledged but lost: {sorted(missing)[:5]}"
    half_applied = {n: c for n, c in found.items() if c != wanted_partitions(n)}
    assert not half_applied


def write_topics(controller: ControllerProcess, names: list[str]) -> None:
    async def scenario() -> None:
        async with await controller.connect() as conn:
            await register_unfenced(conn, range(2, 4))
            for name in names:
                response = await create_topics(conn, topic(name, 2, 2))
                assert int(response.topics[0].error_code) == 0

    run(scenario())


def last_segment(directory: Path) -> Path:
    return sorted(directory.glob("*.log"))[-1]


def test_a_torn_tail_is_reported_and_truncated(controller_factory: Any) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()
    write_topics(controller, [f"t{i}-p2" for i in range(5)])
    controller.kill()
    segment = last_segment(controller.metadata_dir)
    size = segment.stat().st_size
    with segment.open("r+b") as f:
        f.truncate(size - 10)  # the last batch (t4's records) is cut short

    controller.start()
    write_topics(controller, ["after-p2"])  # the log goes on after the truncation point
    controller.stop()
    truncated = re.findall(
        r"WARNING .*metadata log recovery: truncated .*\.log at offset \d+", controller.stderr()
    )
    assert len(truncated) == 1, controller.stderr()  # logged once, by the log
    assert set(partitions_by_topic(image_of(controller.metadata_dir))) == {
        "t0-p2",
        "t1-p2",
        "t2-p2",
        "t3-p2",
        "after-p2",
    }


def test_a_bit_flip_in_the_tail_is_reported_and_truncated(controller_factory: Any) -> None:
    controller: ControllerProcess = controller_factory()
    controller.start()
    write_topics(controller, [f"t{i}-p2" for i in range(5)])
    controller.stop()
    segment = last_segment(controller.metadata_dir)
    data = bytearray(segment.read_bytes())
    data[-5] ^= 0x10  # inside the last batch's records: its CRC no longer matches
    segment.write_bytes(bytes(data))

    controller.start()
    controller.stop()
    assert re.search(
        r"metadata log recovery: truncated .*\.log at offset \d+: ", (controller.stderr())
    )
    found = partitions_by_topic(image_of(controller.metadata_dir))
    assert set(found) == {"t0-p2", "t1-p2", "t2-p2", "t3-p2"}
    assert set(found.values()) == {2}


def test_a_corrupt_newest_snapshot_falls_back_to_the_previous_one(
    controller_factory: Any,
) -> None:
    controller: ControllerProcess = controller_factory(
        metadata_log_max_record_bytes_between_snapshots=3000,
        metadata_log_segment_bytes=4096,
    )
    controller.start()
    names = [f"t{i}-p2" for i in range(40)]
    write_topics(controller, names)
    controller.stop()
    snapshots = sorted(controller.metadata_dir.glob("*.checkpoint"))
    assert len(snapshots) >= 2
    newest = snapshots[-1]
    data = bytearray(newest.read_bytes())
    data[len(data) // 2] ^= 0xFF
    newest.write_bytes(bytes(data))

    controller.start()
    controller.stop()
    set_aside = re.findall(
        r"WARNING .*metadata log recovery: set aside .*corrupt snapshot", controller.stderr()
    )
    assert len(set_aside) == 1, controller.stderr()  # logged once, by the log
    assert re.search(
        rf"snapshot ending at offset {int(snapshots[-2].name.split('-')[0])} ", controller.stderr()
    )
    found = partitions_by_topic(image_of(controller.metadata_dir))
    assert set(found) == set(names)
    assert set(found.values()) == {2}
