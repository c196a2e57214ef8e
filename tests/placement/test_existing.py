"""Existing replicas stay where they are, for every built-in placer: what ``place --existing``
promises when a topic's replication factor grows."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common import (
    InvalidReplicationFactorException,
    InvalidRequestException,
    JavaRandom,
    TopicPartition,
    UnknownBrokerException,
)
from rackwise.placement import BUILT_IN, BrokerInfo, ClusterView, PlacementSpec, create_placer
from rackwise.placement.admin import _walk_kernel, assign_around_existing
from rackwise.placement.striped import place_striped
from rackwise.topology import RackTree, as_rack_path

REPO = Path(__file__).resolve().parents[2]
KIP36 = REPO / "examples" / "kip36-brokers.json"
PLACERS = sorted(BUILT_IN)
RACKS = ["/a/x", "/a/y", "/b/x", "/b/y/h", "c", "d"]


@st.composite
def topologies(draw: st.DrawFn) -> list[BrokerInfo]:
    """1-12 brokers with sparse ids, all with racks (plain names and paths) or none, some fenced
    (never all)."""
    ids = draw(st.lists(st.integers(0, 200), min_size=1, max_size=12, unique=True))
    with_racks = draw(st.booleans()) or draw(st.booleans())
    brokers = [
        BrokerInfo(
            i,
            draw(st.sampled_from(RACKS)) if with_racks else None,
            draw(st.integers(0, 3)) == 0,
        )
        for i in ids
    ]
    if all(b.fenced for b in brokers):
        brokers[0] = BrokerInfo(brokers[0].id, brokers[0].rack)
    return brokers


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[BrokerInfo], PlacementSpec, dict[int, list[int]]]:
    """A topology, a spec (RF up to the broker count) and random replicas held by some of the
    partitions placed (any brokers, any order, at most RF of them)."""
    brokers = draw(topologies())
    rf = draw(st.integers(1, len(brokers)))
    first = draw(st.integers(0, 12))
    spec = PlacementSpec(draw(st.integers(1, 12)), rf, first, draw(st.integers(-1, 20)), "t")
    ids = [b.id for b in brokers]
    existing: dict[int, list[int]] = {}
    for pid in range(first, first + spec.num_partitions):
        held = draw(st.lists(st.sampled_from(ids), max_size=rf, unique=True))
        if held:
            existing[pid] = held
    return brokers, spec, existing


def _view(brokers: list[BrokerInfo], existing: dict[int, list[int]]) -> ClusterView:
    return ClusterView(brokers, {TopicPartition("t", p): r for p, r in existing.items()})


def _rack_rule_holds(
    name: str, brokers: list[BrokerInfo], row: list[int], kept: int
) -> tuple[bool, str]:
    """Whether each replica added to ``row`` after its ``kept`` ones obeys the placer's own rule
    for racks, given the replicas before it."""
    rack_of = {b.id: b.rack for b in brokers}
    fenced = {b.id for b in brokers if b.fenced}
    for j in range(max(1, kept), len(row)):
        before, broker = row[:j], row[j]
        if name == "rack-aware" and rack_of[broker] is not None:
            racks_before = {rack_of[b] for b in before}
            if len(racks_before) < len(set(rack_of.values())) and rack_of[broker] in racks_before:
                return False, f"slot {j}: rack {rack_of[broker]} repeated while a rack is empty"
        if name == "striped":
            held = Counter(rack_of[b] for b in before)
            open_racks = {rack_of[b.id] for b in brokers if b.id not in before}
            if held[rack_of[broker]] != min(held[r] for r in open_racks):
                return False, f"slot {j}: rack {rack_of[broker]} holds more than another"
            if broker in fenced and any(
                rack_of[b.id] == rack_of[broker] and not b.fenced and b.id not in before
                for b in brokers
            ):
                return False, f"slot {j}: fenced {broker} beside a free unfenced broker"
        if name == "multi-level":
            problem = _multi_level_problem(brokers, before, broker)
            if problem:
                return False, f"slot {j}: {problem}"
    return True, ""


def _multi_level_problem(brokers: list[BrokerInfo], before: list[int], broker: int) -> str:
    """At every node above ``broker``, the child it sits under held the fewest of ``before``
    among the node's children with a broker free."""
    tree = RackTree.build([(b.id, as_rack_path(b.rack), b.fenced) for b in brokers])
    count = np.zeros(tree.num_nodes, dtype=np.int64)
    for b in before:
        for node in tree.path_to_root(tree.leaf_of_broker[b]):
            count[node] += 1
    path = tree.path_to_root(tree.leaf_of_broker[broker])
    for child, node in itertools.pairwise(path):
        start = tree.child_start[node]
        kids = tree.children[start : start + tree.child_count[node]]
        free = [int(k) for k in kids if tree.num_brokers[k] > count[k]]
        if count[child] != min(count[k] for k in free):
            return f"under {tree.paths[node]} it went to a child holding {count[child]}"
    return ""


@settings(max_examples=300, deadline=None)
@given(case=cases(), name=st.sampled_from(PLACERS), seed=st.integers(0, 2**48))
def test_every_placer_keeps_existing_replicas_and_follows_its_rules(
    case: tuple[list[BrokerInfo], PlacementSpec, dict[int, list[int]]], name: str, seed: int
) -> None:
    brokers, spec, existing = case
    placed = create_placer(name, random=JavaRandom(seed)).place(spec, _view(brokers, existing))
    assert placed is not None
    assert len(placed) == spec.num_partitions
    fenced = {b.id for b in brokers if b.fenced}
    # Kafka's striped lists may be left used up by the cycle before a reshuffle (see
    # test_a_list_used_up_before_a_reshuffle_stays_used_up): its rack rule is promised for the
    # first cycle, the partitions before the first reshuffle.
    cycle = len(brokers) - len(fenced)
    for offset, row in enumerate(placed):
        held = existing.get(spec.first_partition + offset, [])
        assert row[: len(held)] == held, (held, row)
        assert len(row) == spec.replication_factor
        assert len(set(row)) == len(row), row
        if not held and name in ("striped", "multi-level"):
            assert row[0] not in fenced
        if name == "striped" and cycle > 1 and offset >= cycle:
            continue
        ok, why = _rack_rule_holds(name, brokers, row, len(held))
        assert ok, (name, held, row, why)


def test_a_list_used_up_before_a_reshuffle_stays_used_up() -> None:
    # Kafka's BrokerList restarts on the first visit in an epoch other than its last one, and
    # the reshuffle after three unfenced brokers' worth of partitions counts epochs from 0
    # again. Rack a's unfenced list last gave broker 2 in epoch 1 (partition 1) and is not
    # visited in epochs 2 and 0, so in the new epoch 1 it counts 2 as given: partition 4 takes
    # fenced 3 from rack a, with unfenced 2 beside it.
    brokers = [BrokerInfo(1, "b"), BrokerInfo(2, "a"), BrokerInfo(3, "a", True), BrokerInfo(4, "c")]
    placed = create_placer("striped", random=JavaRandom(1)).place(
        PlacementSpec(5, 2, topic="t"), ClusterView(brokers)
    )
    assert placed == [[4, 2], [2, 1], [1, 4], [1, 4], [4, 3]]
    assert _rack_rule_holds("striped", brokers, placed[4], 0)[0] is False


@settings(max_examples=150, deadline=None)
@given(case=cases(), name=st.sampled_from(["rack-unaware", "rack-aware", "striped"]))
def test_raising_the_replication_factor_continues_the_placers_own_placement(
    case: tuple[list[BrokerInfo], PlacementSpec, dict[int, list[int]]], name: str
) -> None:
    # Kafka's placers with a fixed start index (and the striped one with the same seed): keep
    # the first r replicas of each partition and ask for r' > r; the answer is placement at r'.
    brokers, spec, _ = case
    wider = PlacementSpec(
        spec.num_partitions,
        spec.replication_factor,
        spec.start_partition_id,
        max(0, spec.start_index),
        "t",
    )
    whole = create_placer(name, random=JavaRandom(5)).place(wider, ClusterView(brokers))
    assert whole is not None
    for kept in range(1, spec.replication_factor):
        existing = {wider.first_partition + i: row[:kept] for i, row in enumerate(whole)}
        grown = create_placer(name, random=JavaRandom(5)).place(wider, _view(brokers, existing))
        assert grown == whole, kept


@pytest.mark.parametrize("name", PLACERS)
def test_the_kip36_example_keeps_0_3_through_the_command(name: str, tmp_path: Path) -> None:
    current = {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [0, 3]}]}
    existing = tmp_path / "existing.json"
    existing.write_text(json.dumps(current))
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "rackwise.cli.main",
            "place",
            "--brokers",
            str(KIP36),
            "--partitions",
            "1",
            "--replication-factor",
            "3",
            "--existing",
            str(existing),
            "--placer",
            name,
            "--seed",
            "1",  # Kafka's own placement from this seed moves [0, 3] (to [5, 3, 1], rack-aware)
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    replicas = json.loads(done.stdout)["partitions"][0]["replicas"]
    assert replicas[:2] == [0, 3]
    assert len(set(replicas)) == 3
    if name != "rack-unaware":  # the one placer without racks
        racks = {b["id"]: b["rack"] for b in json.loads(KIP36.read_text())}
        assert racks[replicas[2]] == "rack3", replicas  # the rack [0, 3] lacks


def test_worked_examples_of_the_docstrings() -> None:
    kip36 = [BrokerInfo(b["id"], b["rack"]) for b in json.loads(KIP36.read_text())]
    spec = PlacementSpec(2, 3, 0, 0, "t")
    aware = create_placer("rack-aware").place(spec, _view(kip36, {0: [0, 5], 1: [3, 1]}))
    assert aware == [[0, 5, 4], [3, 1, 5]]
    unaware = create_placer("rack-unaware").place(spec, _view(kip36, {1: [4]}))
    assert unaware[1] == [4, 5, 0]
    ab = [BrokerInfo(i, "a" if i < 3 else "b") for i in (1, 2, 3, 4)]
    striped = create_placer("striped", random=JavaRandom(1)).place(
        PlacementSpec(4, 3, topic="t"), _view(ab, {2: [1], 3: [3, 4]})
    )
    assert striped == [[2, 3, 1], [4, 1, 3], [1, 3, 2], [3, 4, 1]]
    stretch = [
        BrokerInfo(1, "/dc1/r1"),
        BrokerInfo(2, "/dc1/r2"),
        BrokerInfo(3, "/dc2/r1"),
        BrokerInfo(4, "/dc2/r2"),
    ]
    multi = create_placer("multi-level", random=JavaRandom(7)).place(
        PlacementSpec(1, 3, topic="t"), _view(stretch, {0: [1, 2]})
    )
    assert multi == [[1, 2, 4]]


@pytest.mark.parametrize("name", PLACERS)
def test_existing_replicas_that_cannot_be_kept_are_refused(name: str) -> None:
    brokers = [BrokerInfo(i, f"r{i % 2}") for i in range(4)]
    placer = create_placer(name)
    spec = PlacementSpec(2, 2, topic="t")
    with pytest.raises(InvalidReplicationFactorException, match="Partition 1 already has 3"):
        placer.place(spec, _view(brokers, {1: [0, 1, 2]}))
    with pytest.raises(UnknownBrokerException, match="broker 9, which is not a candidate"):
        placer.place(spec, _view(brokers, {0: [9]}))
    with pytest.raises(UnknownBrokerException, match="broker 3, which is not a candidate"):
        placer.place(spec, _view(brokers, {0: [3]}), broker_ids=[0, 1, 2])


def test_repeated_broker_in_existing_replicas_is_refused() -> None:
    brokers = [BrokerInfo(i, f"r{i % 2}") for i in range(4)]
    view = ClusterView(brokers, {TopicPartition("t", 0): [2, 2]})
    for name in ("rack-unaware", "rack-aware", "striped"):
        with pytest.raises(InvalidRequestException, match="Partition 0 lists broker 2 twice"):
            create_placer(name).place(PlacementSpec(1, 3, topic="t"), view)


def test_a_broker_listed_twice_cannot_take_new_replicas_beside_existing_ones() -> None:
    with pytest.raises(InvalidRequestException, match="listed twice"):
        assign_around_existing(
            PlacementSpec(1, 2, start_index=0), [1, 2, 1], None, {0: [1]}, JavaRandom(0)
        )


def test_plain_rack_names_are_one_level_paths_for_the_multi_level_placer() -> None:
    plain = [BrokerInfo(i, f"rack{i % 3}") for i in range(6)]
    paths = [BrokerInfo(i, f"/rack{i % 3}") for i in range(6)]
    spec = PlacementSpec(9, 3)
    one = create_placer("multi-level", random=JavaRandom(2)).place(spec, ClusterView(plain))
    two = create_placer("multi-level", random=JavaRandom(2)).place(spec, ClusterView(paths))
    assert one == two


@settings(max_examples=40, deadline=None)
@given(case=cases(), seed=st.integers(0, 2**48))
def test_compiled_and_interpreted_kernels_agree_around_existing_replicas(
    case: tuple[list[BrokerInfo], PlacementSpec, dict[int, list[int]]], seed: int
) -> None:
    brokers, spec, existing = case
    rows = {p - spec.first_partition: r for p, r in existing.items()}
    rf = spec.replication_factor
    plain = place_striped(brokers, spec.num_partitions, rf, JavaRandom(seed), existing=rows)
    fast = place_striped(
        brokers, spec.num_partitions, rf, JavaRandom(seed), compiled=True, existing=rows
    )
    assert plain.tolist() == fast.tolist()
    if len(brokers) > 1:
        positions = np.full((spec.num_partitions, rf), -1, dtype=np.int64)
        for row, held in rows.items():
            positions[row, : len(held)] = [[b.id for b in brokers].index(x) for x in held]
        num_racks = min(3, len(brokers))
        rack_at = np.arange(len(brokers), dtype=np.int64) % num_racks
        one, two = positions.copy(), positions.copy()
        args = (rack_at, num_racks, seed % 7, seed % 5, spec.first_partition)
        _walk_kernel.python(*args, one)
        _walk_kernel.compiled()(*args, two)
        assert one.tolist() == two.tolist()
