"""IncrementalAlterConfigs and AlterConfigs on a broker: what it refuses itself, in Kafka's
words, what it forwards, and how the answers come back together."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rackwise.broker.alter_configs import (
    alter_configs,
    configs_applied,
    preprocess_alter_configs,
)
from rackwise.broker.forwarding import applied_predicate, error_response
from rackwise.broker.metadata_apis import BrokerInfo
from rackwise.controller_node.apis.configs import legacy_alter_configs_args
from rackwise.image import ConfigResource, MetadataImage, replay
from rackwise.protocol import make, request_class, response_class
from rackwise.records import ConfigRecord

THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
INFO = BrokerInfo(node_id=1, cluster_id="c", static_config={"node.id": "1"})
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8


def incremental(*resources: tuple[int, str, list[tuple[str, int, str | None]]]) -> Any:
    return make(
        request_class(44, 1),
        {
            "resources": [
                {
                    "resource_type": kind,
                    "resource_name": name,
                    "configs": [
                        {"name": k, "config_operation": op, "value": v} for k, op, v in configs
                    ],
                }
                for kind, name, configs in resources
            ],
            "validate_only": False,
        },
    )


def legacy(*resources: tuple[int, str, dict[str, str | None]], version: int = 2) -> Any:
    return make(
        request_class(33, version),
        {
            "resources": [
                {
                    "resource_type": kind,
                    "resource_name": name,
                    "configs": [{"name": k, "value": v} for k, v in configs.items()],
                }
                for kind, name, configs in resources
            ],
            "validate_only": False,
        },
    )


def errors_of(body: Any, image: MetadataImage | None = None) -> dict[int, tuple[int, str | None]]:
    found = preprocess_alter_configs(body, image or replay([]), INFO)
    return {i: (e.error_code, e.message) for i, e in found.items()}


@pytest.mark.parametrize(
    ("resource", "error"),
    [
        (
            (BROKER, "1", [("log.dirs", SET, "/x")]),
            (42, "Cannot update these configs dynamically: Set(log.dirs)"),
        ),
        (
            (BROKER, "2", [(THROTTLE, SET, "1")]),
            (42, "Unexpected broker id, expected 1, but received 2"),
        ),
        ((BROKER, "x", [(THROTTLE, SET, "1")]), (42, "Node id must be an integer, but it is: x")),
        (
            (BROKER, "", [(THROTTLE, SET, "-5")]),
            (42, f"Invalid value -5 for configuration {THROTTLE}: Value must be at least 0"),
        ),
        (
            (BROKER, "1", [(THROTTLE, APPEND, "5")]),
            (40, f"Config value append is not allowed for config key: {THROTTLE}"),
        ),
        (
            (BROKER, "1", [("metric.reporters", SUBTRACT, "a"), ("metric.reporters", SET, "")]),
            (42, "Error due to duplicate config keys"),
        ),
        (
            (TOPIC, "u", [("retention.ms", SET, None), ("segment.ms", SET, None)]),
            (42, "Null value not supported for : retention.ms, segment.ms"),
        ),
        ((BROKER_LOGGER, "1", [("kafka", SET, "DEBUG")]), (42, "Unknown resource type 8")),
        ((BROKER, "1", [(THROTTLE, 9, "1")]), (42, "Unknown operations type 9")),
    ],
)
def test_the_broker_answers_what_kafkas_broker_refuses(
    resource: tuple[int, str, list[tuple[str, int, str | None]]], error: tuple[int, str]
) -> None:
    assert errors_of(incremental(resource)) == {0: error}


def test_what_kafkas_broker_accepts_is_left_for_the_controller() -> None:
    body = incremental(
        (BROKER, "", [(THROTTLE, SET, "10"), ("x.y", DELETE, None)]),
        (BROKER, "1", [(THROTTLE, SET, "10"), ("ssl.keystore.password", DELETE, None)]),
        (TOPIC, "v", [("retention.ms", SET, "not checked here")]),
    )
    assert errors_of(body) == {}


def test_a_resource_named_twice_fails_both_times() -> None:
    body = legacy((BROKER, "", {THROTTLE: "1"}), (TOPIC, "t", {}), (BROKER, "", {THROTTLE: "2"}))
    assert errors_of(body) == {
        0: (42, "Each resource must appear at most once."),
        2: (42, "Each resource must appear at most once."),
    }


def test_an_incremental_change_is_checked_as_the_configuration_it_leaves() -> None:
    stored = replay(
        [ConfigRecord(resource_type=4, resource_name="1", name="metric.reporters", value="a")]
    )
    ok = incremental((BROKER, "1", [("metric.reporters", APPEND, "b")]))
    assert errors_of(ok, stored) == {}
    bad = incremental((BROKER, "", [("log.cleanup.policy", APPEND, "shred")]))
    assert errors_of(bad) == {
        0: (
            42,
            "Invalid value delete,shred for configuration log.cleanup.policy: "
            "String must be one of: compact, delete",
        )
    }


def test_legacy_alter_configs_checks_the_whole_new_set() -> None:
    body = legacy(
        (BROKER, "1", {THROTTLE: "1", "num.io.threads": "0"}),
        (BROKER, "", {"sasl.enabled.mechanisms": "PLAIN"}),
        (TOPIC, "t", {"retention.ms": None}),
        version=0,
    )
    assert errors_of(body) == {
        0: (42, "Invalid value 0 for configuration num.io.threads: Value must be at least 1"),
        1: (
            42,
            "Cannot update these configs at default cluster level, broker id must be "
            "specified: Set(sasl.enabled.mechanisms)",
        ),
        2: (42, "Null value not supported for : retention.ms"),
    }


def answer(request: Any, codes: dict[str, int]) -> Any:
    cls = type(request)
    return make(
        response_class(int(cls.__api_key__), int(cls.__version__)),
        {
            "throttle_time": 0,
            "responses": [
                {
                    "error_code": codes.get(str(r.resource_name), 0),
                    "error_message": "from the controller" if codes.get(r.resource_name) else None,
                    "resource_type": int(r.resource_type),
                    "resource_name": str(r.resource_name),
                }
                for r in request.resources
            ],
        },
    )


def test_the_rest_is_forwarded_and_answers_come_back_in_order() -> None:
    forwarded: list[Any] = []

    async def forward(request: Any) -> Any:
        forwarded.append(request)
        return answer(request, {"t": 3})

    body = incremental(
        (TOPIC, "t", [("retention.ms", SET, "1")]),
        (BROKER, "1", [("log.dirs", SET, "/x")]),
        (BROKER, "", [(THROTTLE, SET, "10")]),
    )
    response = asyncio.run(alter_configs(body, replay([]), INFO, forward))
    (sent,) = forwarded
    assert type(sent) is type(body)
    assert [(r.resource_type, r.resource_name) for r in sent.resources] == [(2, "t"), (4, "")]
    assert [(r.resource_name, int(r.error_code), r.error_message) for r in response.responses] == [
        ("t", 3, "from the controller"),
        ("1", 42, "Cannot update these configs dynamically: Set(log.dirs)"),
        ("", 0, None),
    ]


def test_nothing_is_forwarded_when_every_resource_is_refused() -> None:
    async def forward(_request: Any) -> Any:
        raise AssertionError("nothing to forward")

    body = legacy((BROKER, "1", {"log.dirs": "/x"}))
    response = asyncio.run(alter_configs(body, replay([]), INFO, forward))
    assert [int(r.error_code) for r in response.responses] == [42]


def test_a_resource_the_controller_does_not_answer_is_an_unknown_server_error() -> None:
    async def forward(request: Any) -> Any:
        return make(response_class(44, 1), {"throttle_time": 0, "responses": []})

    body = incremental((TOPIC, "t", [("retention.ms", SET, "1")]))
    response = asyncio.run(alter_configs(body, replay([]), INFO, forward))
    assert [int(r.error_code) for r in response.responses] == [-1]


@pytest.mark.parametrize("api_key", [33, 44])
def test_a_forwarding_failure_answers_every_resource(api_key: int) -> None:
    body = (
        legacy((BROKER, "", {THROTTLE: "1"}), (TOPIC, "t", {}))
        if api_key == 33
        else incremental((BROKER, "", [(THROTTLE, SET, "1")]), (TOPIC, "t", []))
    )
    response = error_response(body, 7, "timed out")
    assert [(r.resource_name, int(r.error_code), r.error_message) for r in response.responses] == [
        ("", 7, "timed out"),
        ("t", 7, "timed out"),
    ]


def test_the_broker_waits_until_its_image_shows_the_change() -> None:
    body = incremental(
        (BROKER, "", [(THROTTLE, SET, "10"), ("x.y", DELETE, None), ("m.r", APPEND, "a")]),
        (TOPIC, "t", [("retention.ms", SET, "1")]),
    )
    predicate = applied_predicate(body, answer(body, {"t": 40}))
    assert predicate is not None
    default = ConfigResource(4, "")
    assert not predicate(replay([]))
    written = [ConfigRecord(resource_type=4, resource_name="", name=THROTTLE, value="10")]
    assert predicate(replay(written))
    stale = [*written, ConfigRecord(resource_type=4, resource_name="", name="x.y", value="1")]
    assert not predicate(replay(stale))
    assert replay(written).configs[default] == {THROTTLE: "10"}
    assert applied_predicate(body, answer(body, {"": 42, "t": 40})) is None


def test_legacy_waits_for_exactly_the_set_given() -> None:
    body = legacy((BROKER, "1", {THROTTLE: "10"}))
    predicate = configs_applied(body, answer(body, {}))
    assert predicate is not None
    one = ConfigRecord(resource_type=4, resource_name="1", name=THROTTLE, value="10")
    other = ConfigRecord(resource_type=4, resource_name="1", name="x.y", value="1")
    assert predicate(replay([one]))
    assert not predicate(replay([one, other]))


def test_the_controller_takes_legacy_alter_configs_as_whole_sets() -> None:
    body = legacy((BROKER, "1", {THROTTLE: "10", "x.y": None}), (TOPIC, "t", {}))
    assert legacy_alter_configs_args(body) == {
        ConfigResource(4, "1"): {THROTTLE: "10"},
        ConfigResource(2, "t"): {},
    }
