"""IncrementalAlterConfigs (44) and AlterConfigs (33) sent to a broker: checked as Kafka's broker
checks them, then forwarded to the controller, which stores them (Kafka's
``ConfigAdminManager`` with ``KafkaApis``' forwarding).

Goals
    Any broker takes a configuration change, as Kafka's does (librdkafka, confluent-kafka and
    aiokafka send these to any broker); a change to a broker's own keys or to the cluster
    default (the BROKER resource "") is refused here when Kafka's broker refuses it, in
    Kafka's words, and reaches every broker through the metadata image otherwise.

Constraints
    * Each resource succeeds or fails on its own; a resource refused here is never forwarded:
      INVALID_REQUEST for a resource named twice ("Each resource must appear at most once."),
      repeated keys, null values, a BROKER resource naming another broker, a key that is not
      dynamic or a value its type refuses (:func:`check_dynamic_change`); INVALID_CONFIG for an
      APPEND or SUBTRACT to a key that is not a LIST. Topic resources are the controller's to
      check. Log levels (BROKER_LOGGER) are not supported: INVALID_REQUEST, as for any other
      resource type the broker does not handle.
    * AlterConfigs replaces the resource's whole set of keys (the controller deletes the keys
      not named), as Kafka does.
    * Pure but for the forwarding callable (:class:`~rackwise.broker.forwarding.Forwarder`),
      which also waits until this broker's image shows the change (:func:`configs_applied`),
      so that the client's next DescribeConfigs to the same broker sees it.

Algorithm
    :func:`preprocess_alter_configs` gives the resources answered here, by index; the others
    go to the controller in one request (the client's, less those resources); the answers are
    put back in the request's order. An IncrementalAlterConfigs resource of a broker is
    checked as the whole dynamic configuration it would leave: the stored one (less what
    Kafka would ignore) with the operations applied.

Worked example
    IncrementalAlterConfigs with BROKER "1" SET ``log.dirs=/x`` and BROKER "" SET
    ``replica.alter.log.dirs.io.max.bytes.per.second=10485760``, sent to broker 1: the first is
    answered INVALID_REQUEST "Cannot update these configs dynamically: Set(log.dirs)"; the
    second is forwarded alone, the controller writes a ConfigRecord for BROKER "", and the
    answer lists both, in that order, once broker 1's image has the record.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Final

from rackwise.broker.metadata_apis import BrokerInfo
from rackwise.common.error_codes import INVALID_REQUEST, NONE, UNKNOWN_SERVER_ERROR
from rackwise.common.errors import (
    InvalidConfigurationException,
    InvalidRequestException,
    RackwiseError,
)
from rackwise.controller.broker_configschema import (
    BROKER_CONFIGS,
    check_dynamic_change,
    is_list_key,
    usable_dynamic_layer,
)
from rackwise.controller.errors import ApiError
from rackwise.controller.messages import AlterConfigOp
from rackwise.image import ConfigResource, MetadataImage
from rackwise.protocol import ApiKey, Response, make, response_class
from rackwise.records.constants import BROKER_RESOURCE, TOPIC_RESOURCE

CLIENT_METRICS_RESOURCE: Final = 16
GROUP_RESOURCE: Final = 32
FORWARDED_RESOURCE_TYPES: Final = frozenset(
    {TOPIC_RESOURCE, CLIENT_METRICS_RESOURCE, GROUP_RESOURCE}
)
"""The resource types a broker forwards unchecked (the controller checks them)."""

Forward = Callable[[Any], Awaitable[Any]]


def _incremental_props(resource: Any, current: Mapping[str, str]) -> dict[str, str]:
    """The broker resource's dynamic configuration once ``resource``'s operations are applied
    to ``current`` (Kafka's ``prepareIncrementalConfigs``)."""
    props = dict(current)
    for config in resource.configs:
        name = str(config.name)
        try:
            op = AlterConfigOp(int(config.config_operation))
        except ValueError:
            raise InvalidRequestException(
                f"Unknown operations type {int(config.config_operation)}"
            ) from None
        if op == AlterConfigOp.SET:
            props[name] = str(config.value)
        elif op == AlterConfigOp.DELETE:
            props.pop(name, None)
        else:
            verb = "append" if op == AlterConfigOp.APPEND else "subtract"
            if not is_list_key(name):
                raise InvalidConfigurationException(
                    f"Config value {verb} is not allowed for config key: {name}"
                )
            spec = BROKER_CONFIGS.get(name)
            old = props.get(name, spec.default if spec is not None else None) or ""
            parts = (
                [p for p in old.split(",") if p] if op == AlterConfigOp.APPEND else old.split(",")
            )
            given = str(config.value).split(",")
            if op == AlterConfigOp.APPEND:
                parts += [v for v in given if v not in parts]
            else:
                parts = [p for p in parts if p not in given]
            props[name] = ",".join(parts)
    return props


def _check_resource(body: Any, resource: Any, image: MetadataImage, info: BrokerInfo) -> None:
    """What Kafka's broker checks of one resource before forwarding it (``ConfigAdminManager
    .preprocess``); raises the resource's error."""
    incremental = int(type(body).__api_key__) == ApiKey.INCREMENTAL_ALTER_CONFIGS
    names = [str(c.name) for c in resource.configs]
    if len(set(names)) != len(names):
        raise InvalidRequestException("Error due to duplicate config keys")
    nulls = [
        str(c.name)
        for c in resource.configs
        if c.value is None and not (incremental and int(c.config_operation) == AlterConfigOp.DELETE)
    ]
    if nulls:
        raise InvalidRequestException(f"Null value not supported for : {', '.join(nulls)}")
    resource_type = int(resource.resource_type)
    name = str(resource.resource_name)
    if resource_type == BROKER_RESOURCE:
        if name:
            _check_node_id(info, name)
        if incremental:
            stored = image.configs.get(ConfigResource(BROKER_RESOURCE, name), {})
            props = _incremental_props(resource, usable_dynamic_layer(stored, bool(name)))
        else:
            props = {str(c.name): str(c.value) for c in resource.configs}
        check_dynamic_change(props, per_broker=bool(name))
    elif resource_type not in FORWARDED_RESOURCE_TYPES:
        raise InvalidRequestException(f"Unknown resource type {resource_type}")


def _check_node_id(info: BrokerInfo, name: str) -> None:
    try:
        node_id = int(name)
    except ValueError:
        raise InvalidRequestException(f"Node id must be an integer, but it is: {name}") from None
    if node_id != info.node_id:
        raise InvalidRequestException(
            f"Unexpected broker id, expected {info.node_id}, but received {name}"
        )


def preprocess_alter_configs(
    body: Any, image: MetadataImage, info: BrokerInfo
) -> dict[int, ApiError]:
    """The resources of an IncrementalAlterConfigs or AlterConfigs request this broker answers
    itself, by index, with their errors (Kafka's ``ConfigAdminManager.preprocess``): a resource
    named twice, duplicate keys, null values, a broker resource for another broker, a change
    to a broker key Kafka does not allow (:func:`check_dynamic_change`), a resource type not
    handled. The others go to the controller."""
    errors: dict[int, ApiError] = {}
    first: dict[tuple[int, str], int] = {}
    for index, resource in enumerate(body.resources):
        key = (int(resource.resource_type), str(resource.resource_name))
        if key in first:
            twice = ApiError(INVALID_REQUEST, "Each resource must appear at most once.")
            errors[first[key]] = errors[index] = twice
        else:
            first[key] = index
    for index, resource in enumerate(body.resources):
        if index in errors:
            continue
        try:
            _check_resource(body, resource, image, info)
        except RackwiseError as e:
            errors[index] = ApiError.of(e)
    return errors


def _alter_response(body: Any, results: Sequence[tuple[Any, ApiError]]) -> Response:
    cls = type(body)
    return make(
        response_class(int(cls.__api_key__), int(cls.__version__)),
        {
            "throttle_time": 0,
            "responses": [
                {
                    "error_code": error.error_code,
                    "error_message": error.message,
                    "resource_type": int(resource.resource_type),
                    "resource_name": str(resource.resource_name),
                }
                for resource, error in results
            ],
        },
    )


async def alter_configs(
    body: Any, image: MetadataImage, info: BrokerInfo, forward: Forward
) -> Response:
    """IncrementalAlterConfigs (44) or AlterConfigs (33) on a broker, as Kafka's broker
    handles them: checked here (:func:`preprocess_alter_configs`), the rest forwarded to the
    controller in one request, the answers put back in the request's order."""
    errors = preprocess_alter_configs(body, image, info)
    remaining = [r for i, r in enumerate(body.resources) if i not in errors]
    answered: dict[tuple[int, str], ApiError] = {}
    if remaining:
        response = await forward(dataclasses.replace(body, resources=tuple(remaining)))
        answered = {
            (int(r.resource_type), str(r.resource_name)): ApiError(
                int(r.error_code), r.error_message
            )
            for r in response.responses
        }
    missing = ApiError(UNKNOWN_SERVER_ERROR, None)
    results = []
    for index, resource in enumerate(body.resources):
        key = (int(resource.resource_type), str(resource.resource_name))
        results.append((resource, errors.get(index) or answered.get(key, missing)))
    return _alter_response(body, results)


def alter_configs_error(request: Any, error_code: int, message: str | None) -> Response:
    """Every resource of an IncrementalAlterConfigs or AlterConfigs ``request`` given the same
    error (a forwarded request that timed out)."""
    error = ApiError(error_code, message)
    return _alter_response(request, [(r, error) for r in request.resources])


def configs_applied(request: Any, response: Any) -> Callable[[MetadataImage], bool] | None:
    """What the image must show once the successful changes of an IncrementalAlterConfigs or
    AlterConfigs ``response`` are applied (keys set to their values, keys deleted gone; for
    AlterConfigs, exactly the keys given), or None when there is nothing to wait for."""
    if getattr(request, "validate_only", False):
        return None
    incremental = int(type(request).__api_key__) == ApiKey.INCREMENTAL_ALTER_CONFIGS
    done = {
        (int(r.resource_type), str(r.resource_name))
        for r in response.responses
        if int(r.error_code) == NONE
    }
    expected: list[tuple[ConfigResource, dict[str, str | None], bool]] = []
    for r in request.resources:
        key = (int(r.resource_type), str(r.resource_name))
        if key not in done:
            continue
        wanted: dict[str, str | None] = {}
        for c in r.configs:
            op = int(c.config_operation) if incremental else AlterConfigOp.SET
            if op == AlterConfigOp.SET:
                wanted[str(c.name)] = c.value
            elif op == AlterConfigOp.DELETE:
                wanted[str(c.name)] = None
        expected.append((ConfigResource(*key), wanted, not incremental))
    if not expected:
        return None

    def shows(image: MetadataImage) -> bool:
        for resource, wanted, whole in expected:
            configs = image.configs.get(resource, {})
            if whole and dict(configs) != wanted:
                return False
            if any(configs.get(name) != value for name, value in wanted.items()):
                return False
        return True

    return shows
