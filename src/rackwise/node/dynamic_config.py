"""A broker's configuration as it is now: its static ``.properties`` under the dynamic values
the controller holds for it and for the whole cluster (Kafka's ``DynamicBrokerConfig``), read
from the metadata image, so that a change takes effect without a restart.

Goals
    * One place that answers "what is this key's value now, and where does it come from" for
      the broker's own code (the log-directory mover's throttle) and for DescribeConfigs.
    * A change made with IncrementalAlterConfigs or AlterConfigs (to this broker, or to the
      cluster default, the resource named "") reaches the code that uses the key: callbacks
      registered with :meth:`DynamicBrokerConfig.on_change` are called with the keys whose
      value changed, once the broker applies the image that carries the change.

Constraints
    * No I/O: the image comes from a callable (the broker's metadata follower), so every read
      reflects the latest image the broker applied; results are cached per image.
    * The layers, most specific first (Kafka's order): the dynamic configuration of this broker
      (BROKER resource named by its id), the cluster-wide dynamic default (BROKER resource ""),
      the static ``.properties``, then Kafka's default. A stored dynamic value Kafka would not
      apply (a read-only key, a value its type refuses, a per-broker key at the cluster level)
      is ignored, as Kafka's broker ignores it (:func:`usable_dynamic_layer`).
    * Callbacks run on the thread that calls :meth:`DynamicBrokerConfig.refresh` (the broker's
      request loop); one that raises is logged and the others still run.

Algorithm
    :meth:`DynamicBrokerConfig.effective` merges the layers as Kafka's ``overrideProps`` does
    (a key set in a higher layer hides its synonyms below); a key's value is the merged one
    as Kafka parses it (:func:`parse_value`), else its default. :meth:`refresh` compares the
    merged dynamic values with those of the last refresh and reports the keys that differ.

Worked example
    Broker 1 started without ``replica.alter.log.dirs.io.max.bytes.per.second``: the property
    is 9223372036854775807 (Kafka's ``Long.MAX_VALUE``, no throttle). ``kafka-configs
    --entity-default --alter --add-config replica.alter.log.dirs.io.max.bytes.per.second=
    10485760`` writes a ConfigRecord for BROKER ""; when broker 1 applies it, the property is
    10485760 and its callbacks get ``{"replica.alter.log.dirs.io.max.bytes.per.second"}``. A
    later per-broker value for ``1`` wins over the default; deleting it brings the default back.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from rackwise.common.errors import InvalidConfigurationException
from rackwise.controller.broker_configschema import (
    broker_key,
    merge_layers,
    parse_value,
    usable_dynamic_layer,
)
from rackwise.image import ConfigResource, MetadataImage
from rackwise.records.constants import BROKER_RESOURCE

LOG: Final = logging.getLogger("rackwise.node.dynamic_config")

CLUSTER_DEFAULT: Final = ""
"""The BROKER resource name of the cluster-wide default configuration."""
BROKER_ID: Final = "broker.id"
NODE_ID: Final = "node.id"
REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND: Final = (
    "replica.alter.log.dirs.io.max.bytes.per.second"
)
LOG_SEGMENT_DELETE_DELAY_MS: Final = "log.segment.delete.delay.ms"
"""The broker-level name of the topic key ``file.delete.delay.ms``."""
FILE_DELETE_DELAY_MS: Final = "file.delete.delay.ms"

ChangeCallback = Callable[[frozenset[str]], None]


def static_layer(properties: Mapping[str, str]) -> dict[str, str]:
    """The static properties as Kafka's broker holds them: ``broker.id`` and ``node.id`` each
    standing for the other when only one is set (Kafka's ``populateSynonyms``)."""
    out = dict(properties)
    if BROKER_ID not in out and NODE_ID in out:
        out[BROKER_ID] = out[NODE_ID]
    elif NODE_ID not in out and BROKER_ID in out:
        out[NODE_ID] = out[BROKER_ID]
    return out


@dataclass(frozen=True, slots=True)
class ConfigLayers:
    """A broker's configuration layers as of one image (see the module docstring)."""

    broker: Mapping[str, str]
    """This broker's usable dynamic values (DYNAMIC_BROKER_CONFIG)."""
    cluster_default: Mapping[str, str]
    """The usable cluster-wide dynamic values (DYNAMIC_DEFAULT_BROKER_CONFIG)."""
    static: Mapping[str, str]
    """The static properties (STATIC_BROKER_CONFIG)."""
    merged: Mapping[str, str]
    """Every layer merged, the most specific winning."""
    merged_dynamic: Mapping[str, str]
    """The two dynamic layers merged: what :meth:`DynamicBrokerConfig.refresh` compares."""


def layers_of(image: MetadataImage, node_id: int, static: Mapping[str, str]) -> ConfigLayers:
    """The configuration layers of broker ``node_id`` in ``image`` (``static`` already passed
    through :func:`static_layer`)."""
    own = image.configs.get(ConfigResource(BROKER_RESOURCE, str(node_id)), {})
    default = image.configs.get(ConfigResource(BROKER_RESOURCE, CLUSTER_DEFAULT), {})
    broker = usable_dynamic_layer(own, per_broker=True)
    cluster_default = usable_dynamic_layer(default, per_broker=False)
    return ConfigLayers(
        broker=MappingProxyType(broker),
        cluster_default=MappingProxyType(cluster_default),
        static=MappingProxyType(dict(static)),
        merged=MappingProxyType(merge_layers(static, cluster_default, broker)),
        merged_dynamic=MappingProxyType(merge_layers(cluster_default, broker)),
    )


def current_value(layers: ConfigLayers, key: str) -> str | None:
    """``key``'s value as the broker holds it: the merged value as Kafka parses it (as given
    when Kafka does not know the key or its type refuses the value), else Kafka's default
    (None for a null default)."""
    value = layers.merged.get(key)
    if value is None:
        spec = broker_key(key)
        return None if spec is None else spec.default
    try:
        return parse_value(key, value)
    except InvalidConfigurationException:
        return value


class DynamicBrokerConfig:
    """The live configuration of broker ``node_id``: ``image()`` is its latest metadata image,
    ``static`` its ``.properties``."""

    def __init__(
        self, node_id: int, static: Mapping[str, str], image: Callable[[], MetadataImage]
    ) -> None:
        self.node_id = node_id
        self.static: Mapping[str, str] = MappingProxyType(static_layer(static))
        self._image = image
        self._cached: tuple[MetadataImage, ConfigLayers] | None = None
        self._callbacks: list[ChangeCallback] = []
        self._seen: Mapping[str, str] = self.layers().merged_dynamic

    # ---- reading ---------------------------------------------------------------------------

    def layers(self) -> ConfigLayers:
        """The layers as of the latest image (computed once per image)."""
        image = self._image()
        cached = self._cached
        if cached is not None and cached[0] is image:
            return cached[1]
        layers = layers_of(image, self.node_id, self.static)
        self._cached = (image, layers)
        return layers

    def value(self, key: str) -> str | None:
        """``key``'s value now (:func:`current_value`)."""
        return current_value(self.layers(), key)

    def int_value(self, key: str) -> int:
        """A numeric key's value now; raises ValueError for a key with a null default that no
        layer sets, or one that is not a number."""
        value = self.value(key)
        if value is None:
            raise ValueError(f"BUG: {key} has no value and no default")
        return int(value)

    @property
    def replica_alter_log_dirs_io_max_bytes_per_second(self) -> int:
        """The throttle on copying replicas between this broker's log directories, in bytes
        per second (Kafka's default, ``Long.MAX_VALUE``, is no throttle)."""
        return self.int_value(REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND)

    @property
    def file_delete_delay_ms(self) -> int:
        """How long a deleted log directory (``-delete``) is kept before its files go, in
        milliseconds: the broker's ``log.segment.delete.delay.ms`` (dynamic, cluster-wide;
        ``file.delete.delay.ms`` in the static properties stands for it when it is not set
        there). A topic's own ``file.delete.delay.ms`` is in its
        :class:`~rackwise.storage.log.LogConfig`."""
        layers = self.layers()
        if LOG_SEGMENT_DELETE_DELAY_MS not in layers.merged and FILE_DELETE_DELAY_MS in self.static:
            return int(parse_value(LOG_SEGMENT_DELETE_DELAY_MS, self.static[FILE_DELETE_DELAY_MS]))
        return self.int_value(LOG_SEGMENT_DELETE_DELAY_MS)

    # ---- changes ---------------------------------------------------------------------------

    def on_change(self, callback: ChangeCallback) -> Callable[[], None]:
        """Call ``callback`` with the keys whose dynamic value changed at each
        :meth:`refresh`; returns the function that unsubscribes it."""
        self._callbacks.append(callback)

        def unsubscribe() -> None:
            if callback in self._callbacks:
                self._callbacks.remove(callback)

        return unsubscribe

    def refresh(self) -> frozenset[str]:
        """Compare the dynamic values of the latest image with the last refresh's; call the
        callbacks with the keys that changed (none when nothing did) and return them."""
        now = self.layers().merged_dynamic
        before = self._seen
        changed = frozenset(key for key in {*now, *before} if now.get(key) != before.get(key))
        self._seen = now
        if not changed:
            return changed
        LOG.info("dynamic broker configuration changed: %s", ", ".join(sorted(changed)))
        for callback in list(self._callbacks):
            try:
                callback(changed)
            except Exception:
                LOG.exception("a dynamic configuration callback failed")
        return changed
