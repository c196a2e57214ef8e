"""ApiVersions responses, built from the table of :mod:`rackwise.protocol.apis`, with Kafka's
rules:

* the response lists every API the listener serves, sorted by api key, with its range (Produce
  from 0, as Kafka 4.1 lists it, though versions 0-2 are refused: KAFKA-18659);
* from v3 it carries the features (``metadata.version`` and the like): the levels this node
  supports and the cluster's finalized levels with their epoch. In v0-v3 a supported feature
  whose lowest level is 0 is left out (KAFKA-17492: older clients fail on it), in v4 it stays;
  a feature finalized at level 0 (off) is never listed;
* an ApiVersions request of a version we do not support gets UNSUPPORTED_VERSION (35) in a v0
  response whose list holds only ApiVersions' own range, so the client retries with the highest
  version both support (KIP-511; Kafka's ``ApiVersionsRequest.getErrorResponse``);
* a v3+ request whose ``client_software_name`` or ``client_software_version`` is not of the
  form ``[a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?`` gets INVALID_REQUEST (42), in the
  request's version, with an empty list.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from rackwise.common.error_codes import INVALID_REQUEST, NONE, UNSUPPORTED_VERSION
from rackwise.protocol.apis import SUPPORTED, ApiKey, Listener, apis_for
from rackwise.protocol.outcomes import Response
from rackwise.protocol.values import make

NO_FEATURES_EPOCH: Final = -1
"""``finalized_features_epoch`` when the finalized features are not known."""
SOFTWARE_NAME_VERSION: Final = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")
"""What ApiVersions v3+ requires of ``client_software_name`` and ``_version`` (KIP-511)."""
FIRST_FEATURE_FILTER_FREE_VERSION: Final = 4
"""From this version, supported features with a lowest level of 0 are listed."""


@dataclass(frozen=True, slots=True)
class SupportedFeature:
    """A feature's levels this node's software supports (``metadata.version`` 1-27)."""

    name: str
    min_version: int
    max_version: int


@dataclass(frozen=True, slots=True)
class FinalizedFeature:
    """A feature's level finalized for the whole cluster."""

    name: str
    level: int


def is_valid_software_id(text: str) -> bool:
    """Whether a client software name or version passes KIP-511's pattern."""
    return SOFTWARE_NAME_VERSION.fullmatch(text) is not None


def api_versions_response(
    version: int,
    listener: Listener,
    *,
    supported_features: Iterable[SupportedFeature] = (),
    finalized_features: Iterable[FinalizedFeature] = (),
    finalized_features_epoch: int = NO_FEATURES_EPOCH,
    throttle_time_ms: int = 0,
) -> Response:
    """The successful ApiVersions response of ``version`` (which must be supported) for a
    connection to ``listener``."""
    cls = SUPPORTED[ApiKey.API_VERSIONS].response_class(version)
    keep_level_zero = version >= FIRST_FEATURE_FILTER_FREE_VERSION
    supported = [
        {"name": f.name, "min_version": f.min_version, "max_version": f.max_version}
        for f in sorted(supported_features, key=lambda f: f.name)
        if keep_level_zero or f.min_version != 0
    ]
    finalized = [
        {"name": f.name, "max_version_level": f.level, "min_version_level": f.level}
        for f in sorted(finalized_features, key=lambda f: f.name)
        if f.level != 0
    ]
    return make(
        cls,
        error_code=NONE,
        api_keys=api_version_entries(listener),
        throttle_time=throttle_time_ms,
        supported_features=supported,
        finalized_features_epoch=finalized_features_epoch,
        finalized_features=finalized,
    )


def api_version_entries(listener: Listener) -> list[dict[str, int]]:
    """The ``api_keys`` list of a listener's ApiVersions response, sorted by api key."""
    entries = []
    for spec in sorted(apis_for(listener).values(), key=lambda spec: spec.api_key):
        low, high = spec.advertised_range
        entries.append({"api_key": spec.api_key, "min_version": low, "max_version": high})
    return entries


def unsupported_version_response() -> Any:
    """The v0 response to an ApiVersions request of a version we do not support."""
    spec = SUPPORTED[ApiKey.API_VERSIONS]
    own = {
        "api_key": spec.api_key,
        "min_version": spec.min_version,
        "max_version": spec.max_version,
    }
    return make(spec.response_class(0), error_code=UNSUPPORTED_VERSION, api_keys=[own])


def invalid_request_response(version: int) -> Any:
    """The response to a v3+ ApiVersions request with a malformed client software id."""
    cls = SUPPORTED[ApiKey.API_VERSIONS].response_class(version)
    return make(cls, error_code=INVALID_REQUEST, api_keys=[], throttle_time=0)


def advertised_versions(response: Any) -> Mapping[int, tuple[int, int]]:
    """A peer's ApiVersions response as api key -> (min version, max version)."""
    return {
        int(entry.api_key): (int(entry.min_version), int(entry.max_version))
        for entry in response.api_keys
    }
