"""The partition log on disk: Kafka's segments, indexes, checkpoints, recovery and retention.

A partition lives in ``<log dir>/<topic>-<partition>/`` exactly as Kafka lays it out, so that
``kafka-dump-log`` reads its segments. :mod:`rackwise.storage.log` is one partition's log,
:mod:`rackwise.storage.manager` the broker's log directories; record batches travel as bytes
(:mod:`rackwise.storage.batch`). Files yes, sockets no, no asyncio.
"""
