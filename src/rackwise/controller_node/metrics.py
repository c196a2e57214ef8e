"""A controller's metrics, read at scrape time (:mod:`rackwise.node.metrics` serves them):
Kafka's ``kafka.controller:type=KafkaController`` gauges under the JMX exporter's names.

Constraints
    Only the active controller holds a controller; on the others every gauge but
    ``activecontrollercount`` (0 there) is 0, as Kafka's standby controllers report. The
    figures are read from the controller's image (immutable), walked once per scrape on the
    scraper's thread.

Worked example
    The active controller of a cluster with one fenced broker of three and a partition whose
    only replica sits on it: ``kafka_controller_kafkacontroller_activecontrollercount 1.0``,
    ``..._fencedbrokercount 1.0``, ``..._activebrokercount 2.0``,
    ``..._offlinepartitionscount 1.0``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

from prometheus_client.core import Metric

from rackwise.controller import Controller
from rackwise.node.metrics import GAUGE, specs
from rackwise.records.constants import NO_LEADER

_KC = "kafka_controller_kafkacontroller_"
CONTROLLER: Final = specs(
    (f"{_KC}activecontrollercount", GAUGE, (), "1 on the active controller, 0 on the others."),
    (
        f"{_KC}offlinepartitionscount",
        GAUGE,
        (),
        "Partitions without a leader (on the active controller).",
    ),
    (
        f"{_KC}preferredreplicaimbalancecount",
        GAUGE,
        (),
        "Partitions whose leader is not their first replica (on the active controller).",
    ),
    (f"{_KC}globaltopiccount", GAUGE, (), "Topics in the cluster (on the active controller)."),
    (
        f"{_KC}globalpartitioncount",
        GAUGE,
        (),
        "Partitions in the cluster (on the active controller).",
    ),
    (f"{_KC}activebrokercount", GAUGE, (), "Registered brokers not fenced."),
    (f"{_KC}fencedbrokercount", GAUGE, (), "Registered brokers fenced."),
)
"""What a controller exports besides :data:`rackwise.node.metrics.COMMON`."""


def controller_collector(active: Callable[[], Controller | None]) -> Callable[[], Iterator[Metric]]:
    """The collector of a controller node whose active controller ``active`` returns."""

    def collect() -> Iterator[Metric]:
        controller = active()
        values = dict.fromkeys(CONTROLLER, 0)
        if controller is not None:
            image = controller.image
            values[f"{_KC}activecontrollercount"] = 1
            values[f"{_KC}globaltopiccount"] = len(image.topics_by_id)
            fenced = sum(1 for b in image.brokers.values() if b.fenced)
            values[f"{_KC}fencedbrokercount"] = fenced
            values[f"{_KC}activebrokercount"] = len(image.brokers) - fenced
            partitions = offline = imbalanced = 0
            for _topic, partition in image.iter_partitions():
                partitions += 1
                if partition.leader == NO_LEADER:
                    offline += 1
                elif partition.replicas and partition.leader != partition.replicas[0]:
                    imbalanced += 1
            values[f"{_KC}globalpartitioncount"] = partitions
            values[f"{_KC}offlinepartitionscount"] = offline
            values[f"{_KC}preferredreplicaimbalancecount"] = imbalanced
        for name, value in values.items():
            family = CONTROLLER[name].family()
            family.add_metric([], value)  # type: ignore[attr-defined]
            yield family

    return collect
