"""DescribeConfigs, IncrementalAlterConfigs and AlterConfigs: the configuration requests, read
into :class:`~rackwise.image.ConfigResource` keys and answered in the request's version
(:mod:`rackwise.controller_node.apis`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from rackwise.common.errors import InvalidRequestException
from rackwise.controller import (
    AlterableConfig,
    AlterConfigOp,
    AlterConfigsResourceResult,
    ApiError,
    DescribeConfigsResult,
)
from rackwise.controller_node.apis import response
from rackwise.image import ConfigResource
from rackwise.protocol import Response

UNKNOWN_CONFIG_TYPE: Final = 0


def describe_configs_args(body: Any) -> dict[ConfigResource, tuple[str, ...] | None]:
    return {
        ConfigResource(int(r.resource_type), str(r.resource_name)): (
            None if r.configuration_keys is None else tuple(str(k) for k in r.configuration_keys)
        )
        for r in body.resources
    }


def describe_configs_response(body: Any, results: Iterable[DescribeConfigsResult]) -> Response:
    return response(
        body,
        {
            "results": [
                {
                    "error_code": r.error.error_code,
                    "error_message": r.error.message,
                    "resource_type": r.resource.resource_type,
                    "resource_name": r.resource.name,
                    "configs": [
                        {
                            "name": e.name,
                            "value": e.value,
                            "read_only": e.is_read_only,
                            "is_default": e.is_default,
                            "config_source": int(e.source),
                            "is_sensitive": e.is_sensitive,
                            "synonyms": [],
                            "config_type": UNKNOWN_CONFIG_TYPE,
                            "documentation": None,
                        }
                        for e in r.entries
                    ],
                }
                for r in results
            ]
        },
    )


def alter_configs_args(body: Any) -> dict[ConfigResource, tuple[AlterableConfig, ...]]:
    """The changes by resource; an unknown operation raises InvalidRequestException."""
    changes = {}
    for r in body.resources:
        configs = []
        for c in r.configs:
            try:
                op = AlterConfigOp(int(c.config_operation))
            except ValueError:
                raise InvalidRequestException(
                    f"Unknown alter config operation {int(c.config_operation)} for {c.name}"
                ) from None
            configs.append(AlterableConfig(str(c.name), op, c.value))
        changes[ConfigResource(int(r.resource_type), str(r.resource_name))] = tuple(configs)
    return changes


def alter_configs_response(body: Any, results: Iterable[AlterConfigsResourceResult]) -> Response:
    return response(
        body,
        {
            "responses": [
                {
                    "error_code": r.error.error_code,
                    "error_message": r.error.message,
                    "resource_type": r.resource.resource_type,
                    "resource_name": r.resource.name,
                }
                for r in results
            ]
        },
    )


def alter_configs_error(body: Any, error: ApiError) -> Response:
    return alter_configs_response(
        body,
        [
            AlterConfigsResourceResult(
                ConfigResource(int(r.resource_type), str(r.resource_name)), error
            )
            for r in body.resources
        ],
    )


def legacy_alter_configs_args(body: Any) -> dict[ConfigResource, dict[str, str]]:
    """AlterConfigs (33) as the controller takes it: each resource's whole new set of keys (a
    key with a null value is left out, so deleted; a broker refuses such a request before)."""
    return {
        ConfigResource(int(r.resource_type), str(r.resource_name)): {
            str(c.name): str(c.value) for c in r.configs if c.value is not None
        }
        for r in body.resources
    }
