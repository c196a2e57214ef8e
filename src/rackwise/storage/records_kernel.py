"""The record walk of :func:`rackwise.storage.batch_records.walk_records`, compiled (numba) for
large batches.

Goals
    A leader checks every record of every uncompressed batch it appends, as Kafka's
    ``LogValidator`` does; interpreted, that walk was a quarter of a broker's time under a
    producer sending 64 records per batch. Compiled, a batch of 64 records costs a few
    microseconds.

Constraints
    * The kernel only ever *agrees*: it answers :data:`SCAN_OK` with the batch's smallest and
      largest timestamps and whether a key is null, or :data:`SCAN_UNSURE` for anything it
      does not follow to the end: a broken record, a varlong of 10 bytes, a varint read past
      the batch. The caller then walks the batch in Python, which names what is wrong in
      Kafka's words (or accepts the rare valid batch the kernel left alone). So the compiled
      form decides nothing alone, and its error messages need not exist.
    * Integers stay inside int64: a timestamp delta read as at most 9 varint bytes is below
      2**62 in size, and the caller passes only base timestamps below 2**62 in size, so their
      sum cannot wrap. Positions only grow, so a record whose fields run past its end cannot
      end exactly at it.
    * Loading it (numba and the cached code) takes about half a second of a core and 33 MiB,
      on a thread of its own; until it is ready batches are walked in Python. A broker starts
      loading it as it starts (:func:`load_in_background`), before it serves clients: loaded
      at the first large batch instead, the loading thread held the interpreter in turns
      with the request loop and a client producing at 10 MB/s saw answers take up to 90 ms
      for that second. Any other process loads it at its first batch of
      :data:`COMPILED_MIN_RECORDS` records or more. ``python -m rackwise.storage.warmup``
      compiles it at install time (the compiled code is cached on disk).

Algorithm
    For each record: its length varint, the attributes byte, the timestamp delta (varlong),
    the offset delta (must be the record's index), the key and value lengths (negative:
    null, nothing to skip), the header count and each header's key and value; the record must
    end where its length said, and the last record at the batch's end. The record layout is
    in :mod:`rackwise.storage.batch_records`.

Worked example
    ``scan_records()(as_array(b"\\x10\\x00\\x00\\x00\\x02k\\x02v\\x00"), 0, 9, 1, 1000)`` is
    ``(SCAN_OK, 1000, 1000, False)``: one record with key ``k`` and value ``v`` at the base
    timestamp.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Final

import numpy as np

from rackwise.common.jit import inline_kernel, kernel

SCAN_OK: Final = 0
SCAN_UNSURE: Final = 1
COMPILED_MIN_RECORDS: Final = 16
"""Batches with at least this many records use the compiled walk once it is loaded: below it,
the call into compiled code costs about what the interpreted walk does."""
MAX_BASE_TIMESTAMP: Final = 1 << 62
"""Base timestamps at least this large (in size) are walked in Python (Constraints)."""

_NO_TIMESTAMP: Final = -1
LOG = logging.getLogger(__name__)


@kernel
def _scan_records(a: Any, pos: int, end: int, count: int, base_timestamp: int) -> Any:
    """``(status, min_timestamp, max_timestamp, has_null_key)`` of the ``count`` records in
    ``a[pos:end]`` (module docstring)."""
    unsure = (SCAN_UNSURE, _NO_TIMESTAMP, _NO_TIMESTAMP, False)
    lo = _NO_TIMESTAMP
    hi = _NO_TIMESTAMP
    null_key = False
    p = pos
    for index in range(count):
        # Each varint below: (value, position after it, ok); limit 5 bytes (10 for the
        # timestamp in Kafka, 9 here: see Constraints).
        raw, p, ok = _varint(a, p, end, 5)
        if not ok:
            return unsure
        size = (raw >> 1) ^ -(raw & 1)
        body_end = p + size
        if size < 0 or body_end > end:
            return unsure
        p += 1  # the attributes
        raw, p, ok = _varint(a, p, end, 9)
        if not ok:
            return unsure
        timestamp = base_timestamp + ((raw >> 1) ^ -(raw & 1))
        if timestamp != _NO_TIMESTAMP:
            if lo == _NO_TIMESTAMP or timestamp < lo:
                lo = timestamp
            if timestamp > hi:  # noqa: PLR1730 (compiled: the same either way)
                hi = timestamp
        raw, p, ok = _varint(a, p, end, 5)
        if not ok or raw != index << 1:
            return unsure
        raw, p, ok = _varint(a, p, end, 5)  # key length
        if not ok:
            return unsure
        if raw & 1:
            null_key = True
        else:
            p += raw >> 1
        raw, p, ok = _varint(a, p, end, 5)  # value length
        if not ok:
            return unsure
        if not raw & 1:
            p += raw >> 1
        raw, p, ok = _varint(a, p, end, 5)  # header count
        if not ok or raw & 1 or (raw >> 1) > body_end - p:
            return unsure
        for _ in range(raw >> 1):
            raw, p, ok = _varint(a, p, end, 5)  # header key length
            if not ok or raw & 1:
                return unsure
            p += raw >> 1
            raw, p, ok = _varint(a, p, end, 5)  # header value length
            if not ok:
                return unsure
            if not raw & 1:
                p += raw >> 1
            if p > body_end:
                return unsure
        if p != body_end:
            return unsure
    if p != end:
        return unsure
    return (SCAN_OK, lo, hi, null_key)


@inline_kernel
def _varint(a: Any, p: int, end: int, limit: int) -> Any:
    """The raw (zig-zag encoded) varint at ``p`` of at most ``limit`` bytes, all before
    ``end``: ``(raw, position after it, True)``, or ``(0, p, False)``."""
    raw = 0
    for i in range(limit):
        if p + i >= end:
            return 0, p, False
        b = int(a[p + i])
        raw |= (b & 0x7F) << (7 * i)
        if b < 0x80:
            return raw, p + i + 1, True
    return 0, p, False


Scan = Callable[[Any, int, int, int, int], tuple[int, int, int, bool]]

_compiled: list[Scan] = []
_loading = threading.Lock()
_started = False


def scan_records() -> Scan:
    """The compiled kernel, loaded (or compiled) now: for the warm-up and the tests."""
    if not _compiled:
        with _loading:
            if not _compiled:
                scan = _scan_records.compiled()
                scan(as_array(b""), 0, 0, 0, 0)  # loads the cached code, or compiles it
                _compiled.append(scan)
    return _compiled[0]


def load_in_background() -> None:
    """Start loading the compiled kernel on a thread of its own (once per process)."""
    global _started  # noqa: PLW0603 - one loader per process
    if not _started:
        _started = True
        threading.Thread(target=_load, name="record walk compiler", daemon=True).start()


def compiled_scan_if_loaded() -> Scan | None:
    """The compiled kernel if it is loaded; otherwise start loading it (if no one has) and
    answer None."""
    if _compiled:
        return _compiled[0]
    load_in_background()
    return None


def _load() -> None:
    try:
        scan_records()
    except Exception as e:  # the interpreted walk goes on serving: slower, never wrong
        LOG.warning(
            "the compiled record walk did not load, records are checked in Python: %s: %s",
            type(e).__name__,
            " ".join(str(e).split()),
        )


def as_array(buf: bytes | bytearray | memoryview) -> Any:
    """``buf`` as the read-only uint8 array the kernel takes (no copy)."""
    return np.frombuffer(memoryview(buf).toreadonly(), dtype=np.uint8)
