"""The striped placer against Kafka's own outputs, a plain step-by-step port, and its promises."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common import JavaRandom, MockRandom, errors
from rackwise.common.java import java_hashmap_order, java_string_hash, java_string_key
from rackwise.placement.model import BrokerInfo, ClusterView, PlacementSpec
from rackwise.placement.striped import StripedReplicaPlacer, place_striped

GOLDEN = Path(__file__).parent.parent / "golden" / "kafka_placement.jsonl"
STRIPED = [
    case
    for case in (json.loads(line) for line in GOLDEN.read_text().splitlines() if line.strip())
    if case["algo"] == "striped"
]


def _generator(spec: dict[str, Any]) -> JavaRandom:
    return MockRandom(spec["seed"]) if spec["class"] == "MockRandom" else JavaRandom(spec["seed"])


def _brokers(case: dict[str, Any]) -> list[BrokerInfo]:
    return [BrokerInfo(b["id"], b["rack"], b.get("fenced", False)) for b in case["brokers"]]


# --- A direct port, one object per Kafka class and one nextInt at a time -------------------------


class _Stuck(Exception):
    """Kafka's loop would never end."""


class _List:
    def __init__(self) -> None:
        self.brokers: list[int] = []
        self.index = self.offset = self.epoch = 0

    def next(self, epoch: int) -> int:
        if not self.brokers:
            return -1
        if self.epoch != epoch:
            self.epoch, self.index = epoch, 0
            self.offset = (self.offset + 1) % len(self.brokers)
        if self.index >= len(self.brokers):
            return -1
        self.index += 1
        return self.brokers[(self.index - 1 + self.offset) % len(self.brokers)]

    def shuffle(self, rng: JavaRandom) -> None:
        for i in range(len(self.brokers), 1, -1):
            j = rng.next_int(i)
            self.brokers[i - 1], self.brokers[j] = self.brokers[j], self.brokers[i - 1]


def _reference(brokers: list[BrokerInfo], partitions: int, rf: int, rng: JavaRandom) -> Any:
    racks: dict[str | None, tuple[_List, _List]] = {}
    for b in brokers:
        racks.setdefault(b.rack, (_List(), _List()))[0 if b.fenced else 1].brokers.append(b.id)
    order = java_hashmap_order(list(racks), lambda r: 0 if r is None else java_string_hash(r))
    for name in order:
        for part in racks[name]:
            if part.brokers:
                part.brokers.sort()
                part.offset = rng.next_int(len(part.brokers))
    names = sorted(racks, key=lambda r: (0, b"") if r is None else (1, java_string_key(r)))
    offset = rng.next_int(len(names)) if names else 0
    unfenced = sum(1 for b in brokers if not b.fenced)
    if rf <= 0 or unfenced == 0 or rf > len(brokers) or partitions < 0:
        return "error"
    epoch, result = 0, []
    for _ in range(partitions):
        if epoch == unfenced > 1:
            for i in range(len(names), 1, -1):
                j = rng.next_int(i)
                names[i - 1], names[j] = names[j], names[i - 1]
            for name in order:
                racks[name][0].shuffle(rng)
                racks[name][1].shuffle(rng)
            epoch = 0
        offset %= len(names)
        first, spins = offset, 0
        replicas = [racks[names[first]][1].next(epoch)]
        while replicas[0] < 0:
            first = (first + 1) % len(names)
            replicas[0] = racks[names[first]][1].next(epoch)
            spins += 1
            if spins > 10_000:
                raise _Stuck
        rack = offset
        while len(replicas) < rf:
            got = -1
            if rack == first:
                first = -1
            else:
                fenced, free = racks[names[rack]]
                got = free.next(epoch)
                got = got if got >= 0 else fenced.next(epoch)
            rack = (rack + 1) % len(names)
            if got >= 0:
                replicas.append(got)
            spins += 1
            if spins > 10_000:
                raise _Stuck
        result.append(replicas)
        epoch, offset = epoch + 1, offset + 1
    return result


# --- Kafka's own outputs ------------------------------------------------------------------------


@pytest.mark.parametrize("case", STRIPED, ids=[c["case_id"] for c in STRIPED])
def test_golden_case(case: dict[str, Any]) -> None:
    placer = StripedReplicaPlacer(_generator(case["random"]))
    spec = PlacementSpec(case["partitions"], case["rf"], case["start_partition_id"])
    cluster = ClusterView(_brokers(case))
    if "error" in case:
        expected_type = getattr(errors, case["error"]["type"].rsplit(".", 1)[-1])
        with pytest.raises(expected_type) as raised:
            placer.place(spec, cluster)
        assert type(raised.value) is expected_type
        assert str(raised.value) == case["error"]["message"]
    else:
        expected = [case["expected"][str(p)] for p in range(len(case["expected"]))]
        assert placer.place(spec, cluster) == expected
        assert len(expected) == case["partitions"]


@pytest.mark.parametrize("compiled", [False, True])
def test_golden_cases_through_both_kernels(compiled: bool) -> None:
    for case in STRIPED:
        if "error" not in case:
            got = place_striped(
                _brokers(case),
                case["partitions"],
                case["rf"],
                _generator(case["random"]),
                compiled=compiled,
            )
            assert got.tolist() == [case["expected"][str(p)] for p in range(case["partitions"])]


def test_worked_example_of_the_docstring() -> None:
    brokers = [BrokerInfo(i, "a" if i < 3 else "b") for i in (1, 2, 3, 4)]
    rows = place_striped(brokers, 4, 2, JavaRandom(1)).tolist()
    assert rows == [[2, 3], [4, 1], [2, 3], [4, 1]]


# --- The same answers as the step-by-step port --------------------------------------------------

racks_st = st.one_of(st.none(), st.sampled_from(["", "a", "b", "r10", "r2", "Aa", "BB", "z"]))


@st.composite
def topologies(draw: st.DrawFn, *, negative_ids: bool = False) -> list[BrokerInfo]:
    low = -3 if negative_ids else 0
    ids = draw(st.lists(st.integers(low, 60), min_size=1, max_size=14, unique=True))
    return [BrokerInfo(i, draw(racks_st), draw(st.integers(0, 3)) == 0) for i in ids]


@settings(max_examples=150, deadline=None)
@given(
    brokers=topologies(negative_ids=True),
    partitions=st.integers(-1, 40),
    rf=st.integers(-1, 5),
    seed=st.integers(-(2**63), 2**63 - 1),
    mock=st.booleans(),
)
def test_matches_step_by_step_port(
    brokers: list[BrokerInfo], partitions: int, rf: int, seed: int, mock: bool
) -> None:
    make = MockRandom if mock else JavaRandom
    fast, slow = make(seed), make(seed)
    try:
        expected = _reference(brokers, partitions, rf, slow)
    except _Stuck:
        with pytest.raises(errors.InvalidRequestException):
            place_striped(brokers, partitions, rf, fast)
        return
    if expected == "error":
        with pytest.raises(
            (errors.InvalidReplicationFactorException, errors.IllegalArgumentException)
        ):
            place_striped(brokers, partitions, rf, fast)
    else:
        assert place_striped(brokers, partitions, rf, fast).tolist() == expected
    # Both generators are left in the same place, errors included (draws come first).
    assert fast.next_int(1 << 20) == slow.next_int(1 << 20)


@settings(max_examples=25, deadline=None)
@given(brokers=topologies(), calls=st.lists(st.integers(0, 30), min_size=2, max_size=4))
def test_placer_continues_its_random_stream(brokers: list[BrokerInfo], calls: list[int]) -> None:
    if all(b.fenced for b in brokers):
        brokers = [BrokerInfo(brokers[0].id, brokers[0].rack), *brokers[1:]]
    placer, slow = StripedReplicaPlacer(JavaRandom(7)), JavaRandom(7)
    for partitions in calls:
        got = placer.place(PlacementSpec(partitions, 1), ClusterView(brokers))
        assert got == _reference(brokers, partitions, 1, slow)


def test_long_placement_runs_in_several_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    from rackwise.placement import striped

    brokers = [BrokerInfo(i, f"r{i % 3}", fenced=i % 4 == 0) for i in range(11)]
    whole = place_striped(brokers, 300, 3, JavaRandom(3))
    monkeypatch.setattr(striped, "DRAW_CHUNK", 5)
    assert place_striped(brokers, 300, 3, JavaRandom(3)).tolist() == whole.tolist()
    assert whole.tolist() == _reference(brokers, 300, 3, JavaRandom(3))


# --- Promises that hold for every topology ------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(brokers=topologies(), partitions=st.integers(0, 60), data=st.data())
def test_placement_properties(brokers: list[BrokerInfo], partitions: int, data: Any) -> None:
    unfenced = [b for b in brokers if not b.fenced]
    if not unfenced:
        brokers = [BrokerInfo(brokers[0].id, brokers[0].rack), *brokers[1:]]
    rf = data.draw(st.integers(1, len(brokers)))
    seed = data.draw(st.integers(0, 2**48))
    rows = place_striped(brokers, partitions, rf, JavaRandom(seed))
    assert rows.shape == (partitions, rf)
    rack_of = {b.id: b.rack for b in brokers}
    fenced = {b.id for b in brokers if b.fenced}
    num_racks = len(set(rack_of.values()))
    for row in rows.tolist():
        assert len(set(row)) == rf
        assert row[0] not in fenced
        counts = Counter(rack_of[b] for b in row)
        assert len(counts) == min(rf, num_racks), (row, counts)


@settings(max_examples=30, deadline=None)
@given(brokers=topologies(), partitions=st.integers(0, 40), seed=st.integers(0, 2**48))
def test_compiled_and_interpreted_kernels_agree(
    brokers: list[BrokerInfo], partitions: int, seed: int
) -> None:
    brokers = [BrokerInfo(brokers[0].id, brokers[0].rack), *brokers[1:]]
    rf = min(3, len(brokers))
    plain = place_striped(brokers, partitions, rf, JavaRandom(seed), compiled=False)
    fast = place_striped(brokers, partitions, rf, JavaRandom(seed), compiled=True)
    assert plain.tolist() == fast.tolist()


# --- Edges --------------------------------------------------------------------------------------


def test_broker_ids_choose_and_order_the_candidates() -> None:
    cluster = ClusterView([BrokerInfo(i, f"r{i % 2}") for i in range(6)])
    placer = StripedReplicaPlacer(JavaRandom(1))
    rows = placer.place(PlacementSpec(4, 2), cluster, broker_ids=[5, 2, 3])
    assert {b for row in rows for b in row} <= {2, 3, 5}
    assert rows == _reference([BrokerInfo(i, f"r{i % 2}") for i in (5, 2, 3)], 4, 2, JavaRandom(1))


def test_start_fields_are_ignored_and_python_random_is_accepted() -> None:
    brokers = ClusterView([BrokerInfo(i, f"r{i % 3}") for i in range(9)])
    one = StripedReplicaPlacer(JavaRandom(4)).place(PlacementSpec(5, 3), brokers)
    other = StripedReplicaPlacer(JavaRandom(4)).place(PlacementSpec(5, 3, 17, 2), brokers)
    assert one == other
    rows = StripedReplicaPlacer(random.Random(4)).place_array(PlacementSpec(50, 3), brokers)
    assert rows.dtype == np.int64
    assert all(len(set(row)) == 3 for row in rows.tolist())


def test_all_negative_ids_raise_instead_of_spinning() -> None:
    with pytest.raises(errors.InvalidRequestException, match="never finish"):
        place_striped([BrokerInfo(-2), BrokerInfo(-3)], 2, 1, JavaRandom(1))
