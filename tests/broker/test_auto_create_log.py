"""What the broker logs when the controller refuses a topic it creates on a client's behalf:
once at WARNING per topic and error, with Kafka's name for the error and the setting behind a
replication factor; the same refusal again at DEBUG."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from rackwise.broker.auto_create import AutoTopicCreator
from rackwise.protocol import ApiKey, make, response_class

REASON = (
    "Unable to replicate the partition 3 time(s): The target replication factor of 3 cannot "
    "be reached because only 1 broker(s) are registered."
)


def _answer(code: int, message: str | None) -> Any:
    return make(
        response_class(ApiKey.CREATE_TOPICS, 7),
        {
            "throttle_time": 0,
            "topics": [
                {
                    "name": "__consumer_offsets",
                    "topic_id": None,
                    "error_code": code,
                    "error_message": message,
                    "topic_config_error_code": 0,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "configs": [],
                }
            ],
        },
    )


def test_a_refusal_is_one_warning_until_it_changes(caplog: pytest.LogCaptureFixture) -> None:
    answers = [_answer(38, REASON)] * 3 + [_answer(0, None), _answer(38, REASON)]

    async def forward(request: Any) -> Any:
        return answers.pop(0)

    async def attempts() -> None:
        creator = AutoTopicCreator(forward)
        for _ in range(5):
            creator.create("__consumer_offsets", 50, 3)
            await asyncio.gather(*creator._pending.values())

    with caplog.at_level(logging.DEBUG, logger="rackwise.broker.auto_create"):
        asyncio.run(attempts())
    refused = (
        "auto-creation of topic '__consumer_offsets' refused: INVALID_REPLICATION_FACTOR "
        "(error 38): Unable to replicate the partition 3 time(s): The target replication "
        "factor of 3 cannot be reached because only 1 broker(s) are registered "
        "(offsets.topic.replication.factor=3); this can be ignored if the cluster is starting "
        "up and not all brokers are up yet"
    )
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", refused),
        ("DEBUG", refused),
        ("DEBUG", refused),
        ("INFO", "topic '__consumer_offsets' auto-created"),
        ("WARNING", refused),
    ]
