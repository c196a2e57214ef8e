"""Pausing Python's cyclic garbage collector around bulk work.

Building or decoding millions of small objects (records, image entries, parsed JSON) makes the
cyclic collector run again and again over objects that will all live; reference counting still
frees everything, so such work runs with the collector paused and restores it as it was.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    """The cyclic collector off for the block, then back as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
