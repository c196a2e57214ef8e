"""Whatever point a crash cuts the log file at, and whatever single bit the disk flips, the log
reopens to a prefix of the acknowledged batches: every batch wholly before the damage, nothing
from the damage on."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.metalog import FileMetadataLog
from rackwise.metalog.segment import segment_name
from rackwise.records import NoOpRecord, check_batch
from tests.metalog.helpers import topic


@st.composite
def histories(draw: st.DrawFn) -> list[list[Any]]:
    sizes = draw(st.lists(st.integers(0, 4), min_size=1, max_size=8))
    return [topic(f"t{i}", size) if size else [NoOpRecord()] for i, size in enumerate(sizes)]


def _acknowledge(directory: Path, batches: list[list[Any]]) -> tuple[bytes, list[int]]:
    """Append every batch; the segment's bytes and where each batch ends."""
    with FileMetadataLog(directory) as log:
        for batch in batches:
            log.append(batch, epoch=1)
    data = (directory / segment_name(0)).read_bytes()
    ends, pos = [], 0
    while pos < len(data):
        pos += check_batch(data, pos).size
        ends.append(pos)
    return data, ends


def _reopened(directory: Path) -> list[list[Any]]:
    with FileMetadataLog(directory) as log:
        batches = [list(batch.records) for batch in log.read_from(0)]
        log.append([NoOpRecord()], epoch=2)  # and the log takes writes again
    return batches


@settings(max_examples=40, deadline=None)
@given(histories(), st.floats(0, 1))
def test_any_truncation_recovers_a_prefix(batches: list[list[Any]], where: float) -> None:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        data, ends = _acknowledge(directory, batches)
        cut = int(where * len(data))
        os.truncate(directory / segment_name(0), cut)
        whole = sum(1 for end in ends if end <= cut)
        assert _reopened(directory) == batches[:whole]


@settings(max_examples=40, deadline=None)
@given(histories(), st.data())
def test_any_flipped_bit_recovers_a_prefix(batches: list[list[Any]], data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        raw, ends = _acknowledge(directory, batches)
        bit = data.draw(st.integers(0, len(raw) * 8 - 1))
        damaged = bytearray(raw)
        damaged[bit // 8] ^= 1 << (bit % 8)
        (directory / segment_name(0)).write_bytes(bytes(damaged))
        intact = sum(1 for end in ends if end <= bit // 8)
        assert _reopened(directory) == batches[:intact]
