"""Kafka's names of error codes, as log lines print them."""

from __future__ import annotations

import pytest

from rackwise.protocol import error_name


@pytest.mark.parametrize(
    ("code", "name"),
    [
        (-1, "UNKNOWN_SERVER_ERROR"),
        (0, "NONE"),
        (7, "REQUEST_TIMED_OUT"),
        (41, "NOT_CONTROLLER"),
        (77, "STALE_BROKER_EPOCH"),
        (101, "DUPLICATE_BROKER_REGISTRATION"),
        (119, "INVALID_REGISTRATION"),
    ],
)
def test_kafkas_names(code: int, name: str) -> None:
    assert error_name(code) == name


def test_a_code_kafka_does_not_define() -> None:
    assert error_name(30_000) == "UNKNOWN_ERROR_CODE"
