"""A broker's metrics, read at scrape time (:mod:`rackwise.node.metrics` serves them).

Goals
    Kafka's best-known broker metrics under the JMX exporter's names (:data:`BROKER`), and
    rackwise's own traffic between failure domains: record bytes this broker replicated, by
    (its top-level domain, the follower's), record bytes it served to consumers, by (the
    consumer's domain, its own), and the share of those a consumer read in its own domain.

Constraints
    * Everything is read from what the broker already holds: the partitions hosted here (a
      copy of the dict, then their immutable states), the image (immutable), the counters of
      :class:`~rackwise.broker.traffic.Traffic` and of the ISR manager. A scrape costs one walk
      of this broker's partitions, on the scraper's thread.
    * ``min.insync.racks`` and ``min.insync.racks.level`` (topic configs, broker defaults of the
      same names, default 1): a partition led here whose ISR spans fewer domains at that level
      counts in ``rackwise_partitions_under_min_insync_racks``. A broker without a rack is a
      domain of its own.

Worked example
    Broker 1 in ``/dc1/r1`` leads t-0, replicas [1, 2, 4], ISR [1, 4], ``min.insync.replicas=2``:
    ``kafka_server_replicamanager_underreplicatedpartitions 1.0``,
    ``kafka_server_replicamanager_atminisrpartitioncount 1.0``; broker 4 in ``/dc2/r1``
    fetching 300 bytes from it shows as
    ``rackwise_replication_bytes_total{source_domain="/dc1",destination_domain="/dc2"} 300.0``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Final

from prometheus_client.core import Metric

from rackwise.broker.data_apis import DataApis
from rackwise.broker.isr import IsrManager
from rackwise.broker.traffic import Traffic, top_domain
from rackwise.image import MetadataImage
from rackwise.net import KafkaServer
from rackwise.node.config import NodeConfig
from rackwise.node.metrics import (
    COUNTER,
    GAUGE,
    MetricsServer,
    RequestMetrics,
    authentication_collector,
    chain,
    labelled,
    metrics_address,
    serve_metrics,
    specs,
)
from rackwise.replica.manager import ReplicaManager
from rackwise.topology import as_rack_path

BYTES_OUT_REPORT_S: Final = 5.0
"""How often the bytes sent to consumers and followers are logged (when they changed)."""
MIN_INSYNC_RACKS: Final = "min.insync.racks"
MIN_INSYNC_RACKS_LEVEL: Final = "min.insync.racks.level"

_RM = "kafka_server_replicamanager_"
_BT = "kafka_server_brokertopicmetrics_"
BROKER: Final = specs(
    (f"{_RM}partitioncount", GAUGE, (), "Replicas hosted on this broker."),
    (f"{_RM}leadercount", GAUGE, (), "Partitions this broker leads."),
    (
        f"{_RM}underreplicatedpartitions",
        GAUGE,
        (),
        "Partitions led here whose ISR is smaller than their replica set.",
    ),
    (
        f"{_RM}underminisrpartitioncount",
        GAUGE,
        (),
        "Partitions led here whose ISR is below min.insync.replicas.",
    ),
    (
        f"{_RM}atminisrpartitioncount",
        GAUGE,
        (),
        "Partitions led here whose ISR is exactly min.insync.replicas.",
    ),
    (f"{_RM}offlinereplicacount", GAUGE, (), "Replicas here whose log directory is offline."),
    (f"{_RM}isrshrinks", COUNTER, (), "ISR changes this leader made that removed replicas."),
    (f"{_RM}isrexpands", COUNTER, (), "ISR changes this leader made that added replicas."),
    (f"{_BT}bytesin", COUNTER, ("topic",), "Record bytes appended here as leader, by topic."),
    (f"{_BT}bytesout", COUNTER, ("topic",), "Record bytes sent to consumers, by topic."),
    (f"{_BT}replicationbytesout", COUNTER, (), "Record bytes sent to followers."),
    (
        "rackwise_replication_bytes",
        COUNTER,
        ("source_domain", "destination_domain"),
        "Record bytes this leader sent to followers, by (its top-level domain, the follower's).",
    ),
    (
        "rackwise_consumer_bytes",
        COUNTER,
        ("consumer_domain", "replica_domain"),
        "Record bytes sent to consumers, by (the consumer's top-level domain from its "
        'client.rack, "" when it gives none; this replica\'s).',
    ),
    (
        "rackwise_consumer_local_bytes",
        COUNTER,
        (),
        "Record bytes sent to consumers in this broker's own top-level domain.",
    ),
    (
        "rackwise_consumer_local_bytes_ratio",
        GAUGE,
        (),
        "Of the record bytes sent here to consumers that gave a client.rack, the share sent "
        "to consumers in this broker's own top-level domain (1 when none were sent).",
    ),
    (
        "rackwise_partitions_under_min_insync_racks",
        GAUGE,
        (),
        "Partitions led here whose ISR spans fewer domains than min.insync.racks.",
    ),
)
"""What a broker exports besides :data:`rackwise.node.metrics.COMMON`."""


class BrokerMetrics:
    """The collector of one broker's metrics (module docstring)."""

    def __init__(
        self,
        broker_id: int,
        rack: str | None,
        properties: Mapping[str, str],
        replicas: ReplicaManager,
        image: Callable[[], MetadataImage],
        traffic: Traffic,
        bytes_out: Callable[[], Mapping[str, int]],
        isr: IsrManager,
    ) -> None:
        self.broker_id = broker_id
        self.domain = top_domain(rack)
        self.properties = properties
        self.replicas = replicas
        self.image = image
        self.traffic = traffic
        self.bytes_out = bytes_out
        self.isr = isr

    def collect(self) -> Iterator[Metric]:
        yield from self._partitions()
        yield self._counter(f"{_RM}isrshrinks", self.isr.shrinks)
        yield self._counter(f"{_RM}isrexpands", self.isr.expands)
        traffic = self.traffic
        bytes_in = sorted(traffic.bytes_in.copy().items())
        yield labelled(BROKER[f"{_BT}bytesin"].family(), (((t,), n) for t, n in bytes_in))
        bytes_out = sorted(dict(self.bytes_out()).items())
        yield labelled(BROKER[f"{_BT}bytesout"].family(), (((t,), n) for t, n in bytes_out))
        by_follower = traffic.replicated_to.copy()
        yield self._counter(f"{_BT}replicationbytesout", sum(by_follower.values()))
        brokers = self.image().brokers
        by_domain: dict[str, int] = {}
        for follower, size in by_follower.items():
            registration = brokers.get(follower)
            domain = top_domain(None if registration is None else registration.rack)
            by_domain[domain] = by_domain.get(domain, 0) + size
        yield labelled(
            BROKER["rackwise_replication_bytes"].family(),
            (((self.domain, d), n) for d, n in sorted(by_domain.items())),
        )
        consumers = traffic.consumer_bytes.copy()
        yield labelled(
            BROKER["rackwise_consumer_bytes"].family(),
            (((d, self.domain), n) for d, n in sorted(consumers.items())),
        )
        local = consumers.get(self.domain, 0) if self.domain else 0
        placed = sum(n for d, n in consumers.items() if d)
        yield self._counter("rackwise_consumer_local_bytes", local)
        ratio = BROKER["rackwise_consumer_local_bytes_ratio"].family()
        ratio.add_metric([], local / placed if placed else 1.0)  # type: ignore[attr-defined]
        yield ratio

    def _counter(self, name: str, value: float) -> Metric:
        family = BROKER[name].family()
        family.add_metric([], value)  # type: ignore[attr-defined]
        return family

    def _partitions(self) -> Iterator[Metric]:
        """The gauges from the partitions hosted here."""
        hosted = list(self.replicas.partitions.values())
        settings = self.replicas.topic_settings.copy()
        image = self.image()
        leaders = under = under_min = at_min = under_racks = 0
        racks: dict[int, tuple[str, ...]] = {}
        for partition in hosted:
            state = partition.state
            if state.leader != self.broker_id:
                continue
            leaders += 1
            isr = state.isr
            if len(isr) < len(state.replicas):
                under += 1
            topic = settings.get(partition.topic)
            min_isr = 1 if topic is None else topic.min_insync_replicas
            if len(isr) < min_isr:
                under_min += 1
            elif len(isr) == min_isr:
                at_min += 1
            configs = image.topic_configs(partition.topic)
            need = _setting(configs, self.properties, MIN_INSYNC_RACKS)
            if need > 1:
                level = _setting(configs, self.properties, MIN_INSYNC_RACKS_LEVEL)
                domains = {_domain(image, racks, b, level) for b in isr}
                if len(domains) < need:
                    under_racks += 1
        for name, value in (
            (f"{_RM}partitioncount", len(hosted)),
            (f"{_RM}leadercount", leaders),
            (f"{_RM}underreplicatedpartitions", under),
            (f"{_RM}underminisrpartitioncount", under_min),
            (f"{_RM}atminisrpartitioncount", at_min),
            (f"{_RM}offlinereplicacount", len(self.replicas.offline.copy())),
            ("rackwise_partitions_under_min_insync_racks", under_racks),
        ):
            yield self._counter(name, value)


def _domain(
    image: MetadataImage, cache: dict[int, tuple[str, ...]], broker: int, level: int
) -> tuple[str, ...]:
    """Broker ``broker``'s failure domain ``level`` levels down (its own, without a rack: no
    rack path has an empty component)."""
    path = cache.get(broker)
    if path is None:
        registration = image.brokers.get(broker)
        rack = as_rack_path(None if registration is None else registration.rack)
        path = tuple(rack[1:].split("/")) if rack else ()
        cache[broker] = path
    return path[:level] if path else ("", str(broker))


def _setting(configs: Mapping[str, str], defaults: Mapping[str, str], key: str) -> int:
    """A topic's integer setting, else the broker's default of the same name, else 1."""
    try:
        return int(configs.get(key, defaults.get(key, "1")))
    except ValueError:
        return 1


def serve_broker_metrics(
    config: NodeConfig,
    data_apis: DataApis,
    isr: IsrManager,
    requests: RequestMetrics,
    servers: Callable[[], Iterable[KafkaServer]],
) -> MetricsServer | None:
    """Serve a broker's metrics if ``metrics.http.port`` is set (None otherwise)."""
    properties = config.properties
    if metrics_address(properties) is None:
        return None
    replicas = data_apis.replicas
    collector = BrokerMetrics(
        config.node_id,
        config.rack,
        properties,
        replicas,
        lambda: replicas.image,
        data_apis.traffic,
        data_apis.bytes_served.copy,
        isr,
    )
    authentications = authentication_collector(servers)
    return serve_metrics(properties, chain(requests.collect, authentications, collector.collect))


async def report_bytes_out(data_apis: DataApis) -> None:
    """Log the bytes sent to consumers and followers every :data:`BYTES_OUT_REPORT_S`, when
    they changed, until cancelled."""
    while True:
        await asyncio.sleep(BYTES_OUT_REPORT_S)
        data_apis.report_bytes_out()
