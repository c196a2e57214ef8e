"""Every node's metrics over HTTP, in Prometheus's exposition format (``prometheus_client``).

Goals
    * ``metrics.http.port`` (off by default; 0 takes a free port) serves ``/metrics`` on
      ``metrics.http.host`` (default 127.0.0.1); the node logs the address it bound.
    * The names are those the Prometheus JMX exporter's example Kafka configuration gives
      Kafka's MBeans (``lowercaseOutputName``: ``kafka.server:type=ReplicaManager,
      name=UnderReplicatedPartitions`` is ``kafka_server_replicamanager_underreplicatedpartitions``,
      a ``...PerSec`` meter is a ``_total`` counter), and rackwise's own under ``rackwise_``;
      ``docs/metrics.md`` lists each. :data:`COMMON` and the roles' tables name every family,
      its type and its help text, so the docs and the dashboard are checked against one list.

Constraints
    * Serving never runs on the node's event loop: prometheus_client's HTTP server has a thread
      of its own and one per connection, so a slow or stuck scraper holds only its thread.
    * Collectors read the node's state at scrape time: immutable metadata images, and plain
      counters the event loop adds to (a dict ``get`` and store per request, no lock). A dict
      is copied (one C call, atomic under the GIL) before it is walked, so the loop changing it
      meanwhile cannot break the walk.

Worked example
    ``metrics.http.port=9404``: ``curl -s 127.0.0.1:9404/metrics | grep requests_total`` shows
    ``kafka_network_requestmetrics_requests_total{request="Produce",version="9"} 12.0``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, TypeVar

from prometheus_client import CollectorRegistry, ProcessCollector, start_http_server
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    Metric,
    SummaryMetricFamily,
)

from rackwise.node.properties_file import ConfigException, invalid_config
from rackwise.protocol import ApiKey, Request, api_name

if TYPE_CHECKING:
    from rackwise.net import KafkaServer

LOG: Final = logging.getLogger("rackwise.node.metrics")

METRICS_HTTP_PORT: Final = "metrics.http.port"
METRICS_HTTP_HOST: Final = "metrics.http.host"
DEFAULT_METRICS_HTTP_HOST: Final = "127.0.0.1"
METRICS_KEYS: Final = frozenset({METRICS_HTTP_PORT, METRICS_HTTP_HOST})
"""The keys both roles accept for their metrics."""

_FETCH: Final = int(ApiKey.FETCH)
_SOCKET_SERVER: Final = "kafka_server_socket_server_metrics_"
COUNTER: Final = "counter"
GAUGE: Final = "gauge"
SUMMARY: Final = "summary"


@dataclass(frozen=True, slots=True)
class MetricSpec:
    """One metric family: its name (a counter's without ``_total``), type, labels, help."""

    name: str
    type: str
    labels: tuple[str, ...]
    help: str

    @property
    def sample_names(self) -> tuple[str, ...]:
        """The series names a scrape shows for this family."""
        if self.type == COUNTER:
            return (f"{self.name}_total",)
        if self.type == SUMMARY:
            return (f"{self.name}_count", f"{self.name}_sum")
        return (self.name,)

    def family(self) -> Metric:
        """An empty family of this metric, for the collector to fill."""
        labels = list(self.labels)
        if self.type == COUNTER:
            return CounterMetricFamily(self.name, self.help, labels=labels)
        if self.type == SUMMARY:
            return SummaryMetricFamily(self.name, self.help, labels=labels)
        return GaugeMetricFamily(self.name, self.help, labels=labels)


def specs(*rows: tuple[str, str, tuple[str, ...], str]) -> Mapping[str, MetricSpec]:
    return {name: MetricSpec(name, kind, labels, text) for name, kind, labels, text in rows}


COMMON: Final = specs(
    (
        "kafka_network_requestmetrics_requests",
        COUNTER,
        ("request", "version"),
        "Requests answered, by Kafka's request name (Fetch also as FetchConsumer or "
        "FetchFollower) and version.",
    ),
    (
        "kafka_network_requestmetrics_totaltimems",
        SUMMARY,
        ("request",),
        "Time from a request's arrival at its handler to its answer, milliseconds.",
    ),
    (
        f"{_SOCKET_SERVER}successful_authentication",
        COUNTER,
        ("listener",),
        "Connections authenticated, by listener: PLAINTEXT ones when accepted, SSL ones at "
        "their handshake, SASL ones at their first login.",
    ),
    (
        f"{_SOCKET_SERVER}failed_authentication",
        COUNTER,
        ("listener",),
        "Failed authentications, by listener: refused or stalled TLS handshakes, TLS peers no "
        "principal mapping rule names, failed SASL logins.",
    ),
    (
        f"{_SOCKET_SERVER}successful_reauthentication",
        COUNTER,
        ("listener",),
        "SASL sessions renewed within connections.max.reauth.ms, by listener.",
    ),
)
"""What every node exports (besides prometheus_client's ``process_*``)."""


def process_sample_names() -> frozenset[str]:
    """The ``process_*`` series prometheus_client's process collector exports."""
    registry = CollectorRegistry(auto_describe=False)
    ProcessCollector(registry=registry)
    return frozenset(s.name for m in registry.collect() for s in m.samples)


def metrics_address(props: Mapping[str, str]) -> tuple[str, int] | None:
    """``(host, port)`` to serve metrics on, or None (``metrics.http.port`` unset)."""
    raw = props.get(METRICS_HTTP_PORT)
    if raw is None or raw.strip() == "":
        return None
    try:
        port = int(raw.strip())
    except ValueError:
        raise invalid_config(METRICS_HTTP_PORT, raw, "not a number") from None
    if not 0 <= port <= 65535:
        raise invalid_config(METRICS_HTTP_PORT, raw, "must be between 0 and 65535")
    host = props.get(METRICS_HTTP_HOST, DEFAULT_METRICS_HTTP_HOST).strip()
    if not host:
        raise invalid_config(METRICS_HTTP_HOST, host, "names no host")
    return host, port


# ---- requests --------------------------------------------------------------------------------

R = TypeVar("R")


class RequestMetrics:
    """Requests answered and their time, by Kafka's request name (Kafka's ``RequestMetrics``:
    a Fetch counts under ``Fetch`` and under ``FetchConsumer`` or ``FetchFollower``)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, int], int] = {}
        self.time_ms: dict[str, tuple[int, float]] = {}
        self._names: dict[int, str] = {}  # api_name builds its name: once per API key

    def wrap(self, handler: Callable[[Request], Awaitable[R]]) -> Callable[[Request], Awaitable[R]]:
        """``handler``, counting and timing each request it answers (or fails)."""

        async def counted(request: Request) -> R:
            started = time.perf_counter()
            try:
                return await handler(request)
            finally:
                self.observe(request, (time.perf_counter() - started) * 1000.0)

        return counted

    def observe(self, request: Request, elapsed_ms: float) -> None:
        header = request.header
        name = self._names.get(header.api_key)
        if name is None:
            name = self._names[header.api_key] = api_name(header.api_key)
        self._add(name, header.api_version, elapsed_ms)
        if header.api_key == _FETCH:
            follower = getattr(request.body, "replica_id", -1) >= 0
            self._add(
                "FetchFollower" if follower else "FetchConsumer", header.api_version, elapsed_ms
            )

    def _add(self, name: str, version: int, elapsed_ms: float) -> None:
        counts = self.counts
        key = (name, version)
        counts[key] = counts.get(key, 0) + 1
        count, total = self.time_ms.get(name, (0, 0.0))
        self.time_ms[name] = (count + 1, total + elapsed_ms)

    def collect(self) -> Iterator[Metric]:
        counts = sorted(self.counts.copy().items())
        yield labelled(COMMON["kafka_network_requestmetrics_requests"].family(), counts)
        times = COMMON["kafka_network_requestmetrics_totaltimems"].family()
        assert isinstance(times, SummaryMetricFamily)
        for name, (count, total) in sorted(self.time_ms.copy().items()):
            times.add_metric([name], count_value=count, sum_value=total)
        yield times


def authentication_collector(
    servers: Callable[[], Iterable[KafkaServer]],
) -> Callable[[], Iterator[Metric]]:
    """The authentication counters of each listener ``servers`` gives at scrape time (Kafka's
    ``socket-server-metrics``, by listener name)."""

    def collect() -> Iterator[Metric]:
        counts = [(s.security.listener_name, s.authentications) for s in servers()]
        names = ("successful_authentication", "failed_authentication",
                 "successful_reauthentication")  # fmt: skip
        for i, name in enumerate(names):
            rows = (((listener,), n[i]) for listener, n in counts)
            yield labelled(COMMON[f"{_SOCKET_SERVER}{name}"].family(), rows)

    return collect


# ---- serving ---------------------------------------------------------------------------------


class _Collector:
    """prometheus_client's collector protocol over a function; a failing collection is logged
    and the scrape shows what came before it."""

    def __init__(self, collect: Callable[[], Iterable[Metric]]) -> None:
        self._collect = collect

    def describe(self) -> list[Metric]:
        return []  # nothing collected at registration

    def collect(self) -> Iterator[Metric]:
        try:
            yield from self._collect()
        except Exception:  # a bug in a collector must not take the node down
            LOG.exception("collecting metrics failed")


class MetricsServer:
    """``/metrics`` over HTTP on threads of its own (module docstring)."""

    def __init__(self, host: str, port: int, collect: Callable[[], Iterable[Metric]]) -> None:
        registry = CollectorRegistry(auto_describe=False)
        ProcessCollector(registry=registry)
        registry.register(_Collector(collect))
        try:
            self._server, self._thread = start_http_server(port, host, registry)
        except OSError as e:
            raise ConfigException(
                f"Invalid value {port} for configuration {METRICS_HTTP_PORT}: cannot serve "
                f"metrics on {host}:{port}: {e.strerror or e}"
            ) from None
        self.host = host
        self.port = int(self._server.server_port)
        LOG.info("metrics served on http://%s:%d/metrics", host, self.port)

    def close(self) -> None:
        """Stop serving (waits for the server's thread, not for scrapes in progress)."""
        closer = threading.Thread(target=self._server.shutdown, daemon=True)
        closer.start()
        closer.join(2.0)
        self._server.server_close()


def serve_metrics(
    props: Mapping[str, str], collect: Callable[[], Iterable[Metric]]
) -> MetricsServer | None:
    """A :class:`MetricsServer` if ``metrics.http.port`` is set, else None."""
    address = metrics_address(props)
    if address is None:
        return None
    return MetricsServer(address[0], address[1], collect)


def chain(*collects: Callable[[], Iterable[Metric]]) -> Callable[[], Iterator[Metric]]:
    """One collection of several."""

    def collect() -> Iterator[Metric]:
        for one in collects:
            yield from one()

    return collect


def labelled(family: Metric, rows: Iterable[tuple[Iterable[Any], float]]) -> Metric:
    """``family`` with one sample per ``(label values, value)``."""
    for labels, value in rows:
        family.add_metric([str(v) for v in labels], value)  # type: ignore[attr-defined]
    return family
