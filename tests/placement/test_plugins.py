"""Choosing placers by name and refusing bad plug-in answers."""

from __future__ import annotations

import pytest

from rackwise.common import InvalidRequestException, JavaRandom, PlacerPluginException
from rackwise.placement import (
    DEFAULT_REPLICA_PLACER,
    REPLICA_PLACER_CONFIG,
    BrokerInfo,
    ClusterView,
    PlacementSpec,
    create_placer,
)
from tests.placement import sample_plugins

BROKERS = ClusterView([BrokerInfo(i, f"/dc{i % 2}/r{i}") for i in range(4)])
SPEC = PlacementSpec(3, 2, start_index=0)


def test_config_key_and_default() -> None:
    assert REPLICA_PLACER_CONFIG == "broker.replica.placer"
    assert DEFAULT_REPLICA_PLACER == "striped"
    assert create_placer(DEFAULT_REPLICA_PLACER).name == "striped"


def test_deferring_plugin_falls_back_to_rack_unaware() -> None:
    placer = create_placer("tests.placement.sample_plugins:DeferringPlacer", random=JavaRandom(1))
    expected = create_placer("rack-unaware", random=JavaRandom(1)).place(SPEC, BROKERS)
    assert placer.place(SPEC, BROKERS) == expected == [[0, 1], [1, 2], [2, 3]]


def test_plugin_gets_the_random_source() -> None:
    rng = JavaRandom(3)
    placer = create_placer("tests.placement.sample_plugins:SeededPlacer", random=rng)
    assert placer.plugin.random is rng  # type: ignore[attr-defined]
    assert placer.place(SPEC, BROKERS) == [[0, 1]] * 3


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ([[0, 1]], "returned 1 partitions, expected 3"),
        ([[0, 1], [1, 2], [2]], "partition 2 has 1 replicas [2], expected 2"),
        ([[0, 1], [1, 9], [2, 3]], "partition 1 uses broker 9, which is not a candidate broker"),
        ([[0, 1], [1, 1], [2, 3]], "partition 1 places broker 1 twice in [1, 1]"),
    ],
)
def test_bad_answers_are_refused(answer: list[list[int]], message: str) -> None:
    sample_plugins.FixedPlacer.answer = answer
    placer = create_placer("tests.placement.sample_plugins:FixedPlacer")
    with pytest.raises(PlacerPluginException) as caught:
        placer.place(SPEC, BROKERS)
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no.such.module:Placer", "cannot be imported: ModuleNotFoundError"),
        ("tests.placement.sample_plugins:Missing", "has no class 'Missing'"),
        ("round-robin", "Unknown replica placer 'round-robin'"),
    ],
)
def test_unloadable_plugins(path: str, message: str) -> None:
    with pytest.raises(PlacerPluginException, match=message):
        create_placer(path)


def test_broker_ids_limit_and_validate() -> None:
    placer = create_placer("rack-unaware", random=JavaRandom(1))
    assert placer.place(SPEC, BROKERS, broker_ids=[3, 1]) == [[3, 1], [1, 3], [3, 1]]
    with pytest.raises(InvalidRequestException, match="Broker id 7 in broker_ids"):
        placer.place(SPEC, BROKERS, broker_ids=[1, 7])
    with pytest.raises(InvalidRequestException, match="Broker id 1 is repeated"):
        placer.place(SPEC, BROKERS, broker_ids=[1, 1])
