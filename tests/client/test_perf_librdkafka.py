"""librdkafka for the perf tools: its exceptions as one line, its log lines once each, and a
setting it refuses named before any record is sent."""

from __future__ import annotations

import io

import pytest
from confluent_kafka import KafkaError, KafkaException

from rackwise.client.perf_librdkafka import (
    ConfluentConsumer,
    ConfluentProducer,
    PerfTestError,
    client_failure,
    librdkafka_logger,
)


def test_a_kafka_exception_becomes_one_line_naming_librdkafkas_error() -> None:
    fatal = KafkaException(KafkaError(KafkaError._FATAL, "Fatal error: boom", fatal=True))
    assert str(client_failure("producer", fatal)) == (
        "the producer failed: _FATAL: Fatal error: boom"
    )
    assert str(client_failure("consumer", KafkaException("odd"))) == "the consumer failed: odd"


def test_log_lines_are_printed_once_whatever_their_numbers() -> None:
    err = io.StringIO()
    logger = librdkafka_logger(err)
    logger.error("FAIL [c#producer-1] Connect failed (after 0ms in state CONNECT)")
    logger.error("FAIL [c#producer-1] Connect failed (after 12ms in state CONNECT)")
    logger.warning("CONFWARN [c#producer-1] something else")
    logger.info("not shown: below warnings")
    assert err.getvalue().splitlines() == [
        "librdkafka: FAIL [c#producer-1] Connect failed (after 0ms in state CONNECT)",
        "librdkafka: CONFWARN [c#producer-1] something else",
    ]
    again = io.StringIO()
    librdkafka_logger(again).error("FAIL [c#producer-1] Connect failed (after 0ms)")
    assert again.getvalue() != "" and err.getvalue().count("\n") == 2  # a new run, a new filter


def test_settings_librdkafka_refuses_are_one_error() -> None:
    with pytest.raises(PerfTestError, match=r"^librdkafka refused the producer settings: "):
        ConfluentProducer({"bootstrap.servers": "127.0.0.1:1", "acks": "sometimes"})
    with pytest.raises(PerfTestError, match=r"^librdkafka refused the consumer settings: "):
        ConfluentConsumer({"bootstrap.servers": "127.0.0.1:1"})  # no group.id
