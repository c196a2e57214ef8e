"""confluent-kafka (librdkafka) for the perf tools: its ``Producer`` and ``Consumer`` behind the
narrow interfaces :mod:`rackwise.client.producer_perf` and :mod:`rackwise.client.consumer_perf`
drive (so that their tests drive in-memory fakes instead), its failures as one-line errors,
and its log lines each printed once.

Constraints
    confluent-kafka is imported only when a client is made, so the rest of the command line
    never pays for it and its absence is one error line. librdkafka raises ``KafkaException``
    from ``produce``, ``poll``, ``flush`` and ``consume`` after a fatal error, and from
    ``subscribe`` for a subscription it refuses; here that is a :class:`PerfTestError` naming
    librdkafka's error. ``BufferError`` (a full local queue) passes through: the producer's
    loop waits it out.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Final, TextIO

from rackwise.common import RackwiseError

LIBRDKAFKA_LOGGER: Final = "rackwise.client.librdkafka"


class PerfTestError(RackwiseError):
    """A run that did not complete as asked: records not delivered, or a fatal client error."""


class _OncePerMessage(logging.Filter):
    """Pass each distinct log line once (numbers aside: librdkafka repeats a failing
    connection's line with new timings)."""

    def __init__(self) -> None:
        super().__init__()
        self._seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = re.sub(r"\d+", "#", record.getMessage())
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


def librdkafka_logger(err: TextIO) -> logging.Logger:
    """The logger given to librdkafka (its ``logger`` setting): warnings and errors on
    ``err``, each distinct line once, instead of librdkafka's own line per retry."""
    logger = logging.getLogger(LIBRDKAFKA_LOGGER)
    logger.propagate = False
    logger.setLevel(logging.WARNING)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
    handler = logging.StreamHandler(err)
    handler.setFormatter(logging.Formatter("librdkafka: %(message)s"))
    handler.addFilter(_OncePerMessage())
    logger.addHandler(handler)
    return logger


def import_confluent_kafka() -> Any:
    """The ``confluent_kafka`` module (imported only when a run starts)."""
    try:
        import confluent_kafka  # noqa: PLC0415
    except ImportError:
        raise PerfTestError(
            "confluent-kafka is not installed: pip install 'confluent-kafka>=2.5'"
        ) from None
    return confluent_kafka


def client_failure(kind: str, error: Exception) -> PerfTestError:
    """A ``KafkaException`` (librdkafka's fatal errors raise one) as one line."""
    cause = error.args[0] if error.args else error
    if hasattr(cause, "name") and hasattr(cause, "str"):
        return PerfTestError(f"the {kind} failed: {cause.name()}: {cause.str()}")
    return PerfTestError(f"the {kind} failed: {cause}")


class ConfluentProducer:
    """confluent-kafka's ``Producer`` behind
    :class:`~rackwise.client.producer_perf.ProducerClient`; its ``KafkaException`` becomes a
    :class:`PerfTestError` (``BufferError`` passes)."""

    def __init__(self, config: dict[str, Any]) -> None:
        kafka = import_confluent_kafka()
        self._failure: type[Exception] = kafka.KafkaException
        try:
            self._producer = kafka.Producer(config)
        except Exception as e:  # librdkafka refuses a setting: KafkaException, ValueError
            raise PerfTestError(f"librdkafka refused the producer settings: {e}") from None

    def produce(self, topic: str, value: bytes) -> None:
        try:
            self._producer.produce(topic, value)
        except self._failure as e:
            raise client_failure("producer", e) from None

    def poll(self, timeout: float) -> int:
        try:
            return int(self._producer.poll(timeout))
        except self._failure as e:
            raise client_failure("producer", e) from None

    def flush(self, timeout: float) -> int:
        try:
            return int(self._producer.flush(timeout))
        except self._failure as e:
            raise client_failure("producer", e) from None


class ConfluentConsumer:
    """confluent-kafka's ``Consumer`` behind
    :class:`~rackwise.client.consumer_perf.ConsumerClient`; its ``KafkaException`` becomes a
    :class:`PerfTestError`."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._kafka = import_confluent_kafka()
        try:
            self._consumer = self._kafka.Consumer(config)
        except Exception as e:  # librdkafka refuses a setting: KafkaException, ValueError
            raise PerfTestError(f"librdkafka refused the consumer settings: {e}") from None

    def subscribe(
        self,
        topic: str,
        on_assign: Callable[[list[tuple[str, int]]], None],
        on_revoke: Callable[[list[tuple[str, int]]], None],
    ) -> None:
        """Join ``--group`` for ``topic``; each rebalance calls ``on_assign`` / ``on_revoke``
        (from within :meth:`consume` or :meth:`serve`) with its partitions as (topic,
        partition). confluent-kafka assigns them itself after ``on_assign`` returns, and calls
        ``on_revoke`` for partitions lost too, as the Java consumer's default
        ``onPartitionsLost`` does."""

        def assigned(_: Any, partitions: list[Any]) -> None:
            on_assign([(p.topic, p.partition) for p in partitions])

        def revoked(_: Any, partitions: list[Any]) -> None:
            on_revoke([(p.topic, p.partition) for p in partitions])

        try:
            self._consumer.subscribe([topic], on_assign=assigned, on_revoke=revoked)
        except self._kafka.KafkaException as e:
            raise client_failure("consumer", e) from None

    def consume(self, num_messages: int, timeout_s: float) -> list[Any]:
        try:
            return list(self._consumer.consume(num_messages, timeout_s))
        except self._kafka.KafkaException as e:
            raise client_failure("consumer", e) from None

    def serve(self, timeout_s: float) -> None:
        try:
            self._consumer.poll(timeout_s)
        except self._kafka.KafkaException as e:
            raise client_failure("consumer", e) from None

    def close(self) -> None:
        self._consumer.close()
