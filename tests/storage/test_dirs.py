"""Partition directory names and the log directory a new replica goes to."""

from __future__ import annotations

from pathlib import Path

from rackwise.storage.dirs import choose_log_dir


def test_new_replicas_go_where_the_most_space_is_free() -> None:
    d1, d2 = Path("/d1"), Path("/d2")
    assert choose_log_dir([(d1, 0.10, 10), (d2, 0.60, 300)]) == d2
    assert choose_log_dir([(d1, 0.50, 10), (d2, 0.50, 3)]) == d2
    assert choose_log_dir([(d1, 0.50, 3), (d2, 0.50, 3)]) == d1
