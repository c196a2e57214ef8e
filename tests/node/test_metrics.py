"""The metrics' pure parts: the settings, the request counters, the traffic counters, the
dashboard's expressions and the docs page, each checked against the one list of metric families
(:data:`rackwise.node.metrics.COMMON` and the roles' tables). The figures a running cluster
reports are ``tests/broker/test_metrics.py``'s."""

from __future__ import annotations

import asyncio
import json
import re
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from rackwise.broker.metrics import BROKER
from rackwise.broker.traffic import MAX_CONSUMER_DOMAINS, OTHER_DOMAIN, Traffic, top_domain
from rackwise.controller_node.metrics import CONTROLLER
from rackwise.node.config import NodeConfig
from rackwise.node.metrics import (
    COMMON,
    MetricsServer,
    RequestMetrics,
    metrics_address,
    process_sample_names,
)
from rackwise.node.properties_file import ConfigException
from rackwise.protocol import ApiKey

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "dashboards" / "rackwise.json"
EVERY = {**COMMON, **BROKER, **CONTROLLER}
PROMQL_WORDS = frozenset(
    {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
     "bool", "offset"}
)  # fmt: skip


def test_metrics_are_off_unless_a_port_is_given() -> None:
    assert metrics_address({}) is None
    assert metrics_address({"metrics.http.port": "9404"}) == ("127.0.0.1", 9404)
    address = metrics_address({"metrics.http.port": "0", "metrics.http.host": "0.0.0.0"})
    assert address == ("0.0.0.0", 0)
    for bad, reason in (("x", "not a number"), ("70000", "between 0 and 65535")):
        with pytest.raises(ConfigException, match=rf"Invalid value {bad} for configuration "
                           rf"metrics.http.port: .*{reason}"):  # fmt: skip
            metrics_address({"metrics.http.port": bad})


def test_both_roles_accept_the_metrics_keys() -> None:
    common = {
        "node.id": "1",
        "controller.listener.names": "CONTROLLER",
        "controller.quorum.voters": "1@127.0.0.1:9093",
        "metrics.http.port": "9404",
        "metrics.http.host": "127.0.0.1",
    }
    controller = NodeConfig.from_properties(
        {**common, "process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:9093",
         "metadata.log.dir": "/tmp/unused"}
    )  # fmt: skip
    broker = NodeConfig.from_properties(
        {**common, "node.id": "2", "process.roles": "broker",
         "listeners": "PLAINTEXT://127.0.0.1:9092", "log.dirs": "/tmp/unused"}
    )  # fmt: skip
    assert controller.properties["metrics.http.port"] == broker.properties["metrics.http.port"]
    with pytest.raises(ConfigException, match=r"-1 for configuration metrics\.http\.port"):
        NodeConfig.from_properties({**dict(broker.properties), "metrics.http.port": "-1"})


def _request(api_key: int, version: int, **body: Any) -> Any:
    return SimpleNamespace(
        header=SimpleNamespace(api_key=api_key, api_version=version),
        body=SimpleNamespace(**body),
    )


def test_requests_are_counted_and_timed_by_kafka_names() -> None:
    metrics = RequestMetrics()

    async def answer(request: Any) -> str:
        await asyncio.sleep(0)
        return "done"

    counted = metrics.wrap(answer)

    async def run() -> None:
        for request in (
            _request(ApiKey.PRODUCE, 9),
            _request(ApiKey.PRODUCE, 9),
            _request(ApiKey.FETCH, 12, replica_id=-1),
            _request(ApiKey.FETCH, 12, replica_id=3),
        ):
            assert await counted(request) == "done"

    asyncio.run(run())
    assert metrics.counts == {
        ("Produce", 9): 2,
        ("Fetch", 12): 2,
        ("FetchConsumer", 12): 1,
        ("FetchFollower", 12): 1,
    }
    assert {name: count for name, (count, _) in metrics.time_ms.items()} == {
        "Produce": 2,
        "Fetch": 2,
        "FetchConsumer": 1,
        "FetchFollower": 1,
    }


def test_a_server_serves_what_its_collector_reads_at_scrape_time() -> None:
    metrics = RequestMetrics()
    server = MetricsServer("127.0.0.1", 0, metrics.collect)
    try:
        metrics.observe(_request(ApiKey.METADATA, 12), 1.5)
        url = f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(url, timeout=10) as response:
            text = response.read().decode()
        line = 'kafka_network_requestmetrics_requests_total{request="Metadata",version="12"} 1.0'
        assert line in text
        assert 'kafka_network_requestmetrics_totaltimems_sum{request="Metadata"} 1.5' in text
        assert "process_cpu_seconds_total" in text
        with pytest.raises(
            ConfigException, match=rf"cannot serve metrics on 127.0.0.1:{server.port}"
        ):
            MetricsServer("127.0.0.1", server.port, metrics.collect)
    finally:
        server.close()


def test_traffic_counts_consumers_by_their_top_level_domain() -> None:
    assert [top_domain(r) for r in ("/dc1/r2", "dc2", "/dc3", "", None)] == [
        "/dc1", "/dc2", "/dc3", "", ""
    ]  # fmt: skip
    traffic = Traffic()
    traffic.served("/dc2/r1", 300)
    traffic.served("dc2", 100)
    traffic.served("", 50)
    traffic.served("/dc9/x", 0)  # nothing sent, nothing counted
    traffic.replicated(4, 300)
    traffic.appended("t", 10)
    traffic.appended("t", 5)
    assert traffic.consumer_bytes == {"/dc2": 400, "": 50}
    assert traffic.replicated_to == {4: 300}
    assert traffic.bytes_in == {"t": 15}
    for i in range(2 * MAX_CONSUMER_DOMAINS):  # clients choose their rack ids
        traffic.served(f"/made-up-{i}", 1)
    assert len(traffic.consumer_bytes) <= MAX_CONSUMER_DOMAINS + 1
    assert traffic.consumer_bytes[OTHER_DOMAIN] > 0


def _metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # strings
    expr = re.sub(r"\{[^}]*\}", "", expr)  # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    expr = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", expr)  # grouping labels
    names = set()
    for match in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        rest = expr[match.end() :].lstrip()
        if rest.startswith("(") or match.group() in PROMQL_WORDS:
            continue  # a function or an aggregation
        names.add(match.group())
    return names


def _targets(panels: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for panel in panels:
        out += [(panel["title"], t["expr"]) for t in panel.get("targets", [])]
        out += _targets(panel.get("panels", []))
    return out


def test_every_dashboard_expression_names_metrics_the_nodes_export() -> None:
    dashboard = json.loads(DASHBOARD.read_text("utf-8"))
    exported = {name for spec in EVERY.values() for name in spec.sample_names}
    exported |= process_sample_names()
    targets = _targets(dashboard["panels"])
    assert targets
    used: set[str] = set()
    for title, expr in targets:
        names = _metric_names(expr)
        assert names, (title, expr)
        assert names <= exported, (title, names - exported)
        used |= names
    ids = [p["id"] for p in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    assert all("gridPos" in p for p in dashboard["panels"])
    # A panel for each of the figures the dashboard is for.
    wanted = {
        "kafka_server_replicamanager_underreplicatedpartitions",
        "kafka_server_replicamanager_underminisrpartitioncount",
        "kafka_controller_kafkacontroller_offlinepartitionscount",
        "kafka_controller_kafkacontroller_activecontrollercount",
        "kafka_server_replicamanager_isrshrinks_total",
        "kafka_server_replicamanager_isrexpands_total",
        "kafka_network_requestmetrics_requests_total",
        "kafka_network_requestmetrics_totaltimems_sum",
        "kafka_server_brokertopicmetrics_bytesin_total",
        "kafka_server_brokertopicmetrics_bytesout_total",
        "rackwise_replication_bytes_total",
        "rackwise_consumer_bytes_total",
        "rackwise_consumer_local_bytes_total",
        "rackwise_partitions_under_min_insync_racks",
    }
    assert wanted <= used, wanted - used


def test_the_expression_reader_finds_names_and_skips_functions() -> None:
    expr = 'sum by (request) (rate(a_total{x="y(z)"}[5m])) / sum(rate(b_count[1m])) > bool 0'
    assert _metric_names(expr) == {"a_total", "b_count"}


def test_the_docs_page_lists_every_metric() -> None:
    page = (ROOT / "docs" / "metrics.md").read_text("utf-8")
    for spec in EVERY.values():
        assert f"`{spec.sample_names[0]}`" in page, spec.name
    assert "docs/metrics.md" in (ROOT / "README.md").read_text("utf-8")
