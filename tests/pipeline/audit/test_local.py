"""The in-process audit on the hand-worked fleet (the figures the Spark tests expect) and, on
random fleets, against the pure reference computed by brute force."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rackwise.common import IllegalArgumentException
from rackwise.pipeline.audit import RESULT_TABLES
from rackwise.pipeline.audit.local import SCHEMAS, audit_tables
from rackwise.pipeline.audit.summary import summary_from_frames
from tests.pipeline.audit.cases import (
    BROKERS,
    LOG_DIRS,
    REPLICAS,
    local_tables,
    random_fleet,
    reference_exposure,
    reference_spread,
)


@pytest.fixture(scope="module")
def hand() -> dict[str, pa.Table]:
    return audit_tables(local_tables(BROKERS, LOG_DIRS, REPLICAS), 2)


def _rows(table: pa.Table, *columns: str, where: Any = None) -> list[tuple[Any, ...]]:
    """The rows (``where`` holds) as tuples of ``columns``, in a fixed order."""
    rows = [r for r in table.to_pylist() if where is None or where(r)]
    return sorted((tuple(r[c] for c in columns) for r in rows), key=repr)


def test_tables_have_the_spark_jobs_schemas(hand: dict[str, pa.Table]) -> None:
    assert list(hand) == list(RESULT_TABLES)
    for name, table in hand.items():
        assert table.schema.equals(SCHEMAS[name]), name


def test_spread_violations_by_hand(hand: dict[str, pa.Table]) -> None:
    assert _rows(hand["spread_violations"], *SCHEMAS["spread_violations"].names) == sorted(
        [
            ("c1", "t", 0, 0, "cluster", "/", 3, 2, 0),
            ("c1", "t", 0, 1, "dc", "/dc1", 2, 2, 0),
            ("c3", "v", 0, 0, "cluster", "/", 2, 2, 0),
        ],
        key=repr,
    )


def test_exposure_by_hand(hand: dict[str, pa.Table]) -> None:
    exposed = _rows(
        hand["exposure"],
        *SCHEMAS["exposure"].names,
        where=lambda r: r["offline_if_lost"] or r["under_min_isr_if_lost"],
    )
    assert exposed == sorted(
        [
            ("c1", "dc", "/dc1", None, None, 1, 0, 1, 0, 0),
            ("c1", "rack", "/dc1/r1", None, None, 1, 0, 1, 0, 0),
            ("c1", "dc", "/dc3", None, None, 1, 1, 0, 0, 0),
            ("c1", "broker", "5", 5, None, 1, 1, 0, 0, 0),
            ("c1", "log_dir", "5:/d1", 5, "/d1", 1, 1, 0, 0, 0),
            ("c2", "broker", "1", 1, None, 1, 0, 1, 0, 0),
            ("c2", "broker", "2", 2, None, 1, 0, 1, 0, 0),
            ("c2", "log_dir", "1:/d1", 1, "/d1", 1, 0, 1, 0, 0),
            ("c3", "rack", "/rack1", None, None, 1, 1, 0, 0, 0),
            ("c3", "broker", "1", 1, None, 1, 0, 1, 0, 0),
            ("c3", "broker", "2", 2, None, 1, 0, 1, 0, 0),
            ("c3", "log_dir", "1:/d", 1, "/d", 1, 0, 1, 0, 0),
            ("c3", "log_dir", "2:/d", 2, "/d", 1, 0, 1, 0, 0),
        ],
        key=repr,
    )
    clusters = hand["exposure"].column("cluster_id").to_pylist()
    assert [clusters.count(c) for c in ("c1", "c2", "c3", "idle")] == [24, 3, 11, 6]


def test_load_by_hand(hand: dict[str, pa.Table]) -> None:
    load = hand["load"]
    columns = ("cluster_id", "domain", "replicas", "leaders", "bytes", "total_bytes")
    brokers = _rows(
        load,
        *columns,
        "utilisation",
        where=lambda r: r["level"] == "broker" and r["cluster_id"] != "idle",
    )
    assert brokers == sorted(
        [
            ("c1", "1", 1, 1, 10, 200, 0.05),
            ("c1", "2", 1, 0, 10, 200, 0.05),
            ("c1", "3", 0, 0, 0, 200, 0.0),
            ("c1", "4", 2, 1, 15, 200, 0.075),
            ("c1", "5", 1, 0, 5, 200, 0.025),
            ("c1", "6", 0, 0, 0, 200, 0.0),
            ("c2", "1", 1, 1, 7, None, None),
            ("c2", "2", 1, 0, 7, None, None),
            ("c3", "1", 1, 1, 3, 100, 0.03),
            ("c3", "2", 1, 0, 3, 100, 0.03),
            ("c3", "3", 0, 0, 0, 100, 0.0),
            ("c3", "4", 0, 0, 0, 100, 0.0),
        ],
        key=repr,
    )
    racks = _rows(
        load,
        *columns[1:],
        where=lambda r: r["level"] in ("dc", "rack") and r["cluster_id"] != "idle",
    )
    assert racks == sorted(
        [
            ("/dc1", 2, 1, 20, 600),
            ("/dc2", 2, 1, 15, 200),
            ("/dc3", 1, 0, 5, 200),
            ("/dc1/r1", 2, 1, 20, 400),
            ("/dc1/r2", 0, 0, 0, 200),
            ("/dc2/r1", 2, 1, 15, 200),
            ("/rack1", 2, 1, 6, 200),
            ("/rack2", 0, 0, 0, 100),
            ("/rack3", 0, 0, 0, 100),
        ],
        key=repr,
    )
    dead = _rows(load, "domain", "replicas", where=lambda r: r["is_live"] is False)
    assert dead == [("4:/d1", 1)]


def test_skew_and_clusters_by_hand(hand: dict[str, pa.Table]) -> None:
    row = _rows(
        hand["skew"],
        *SCHEMAS["skew"].names,
        where=lambda r: (r["cluster_id"], r["level"], r["metric"]) == ("c1", "broker", "replicas"),
    )
    assert row == [("c1", "broker", "replicas", 6, 0.0, 2.0, pytest.approx(5 / 6), 2.4)]
    assert {r["level"] for r in hand["skew"].to_pylist() if r["cluster_id"] == "c2"} == {
        "broker",
        "log_dir",
    }
    clusters = {r.pop("cluster_id"): r for r in hand["clusters"].to_pylist()}
    assert list(clusters) == ["c1", "c2", "c3", "idle"]
    expected = {
        "c1": (["dc", "rack"], 6, 1, 12, 1, 2, 5, 0, 1, 1, 2, {"cluster": 1, "dc": 1}, 0, 0),
        "c2": ([], 2, 2, 1, 0, 1, 2, 0, 0, 0, 0, {}, 0, 0),
        "c3": (["rack"], 4, 0, 4, 0, 1, 2, 0, 0, 1, 1, {"cluster": 1}, 0, 0),
        "idle": (["rack"], 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, {}, 0, 0),
    }
    for cid, figures in clusters.items():
        figures["spread_violations_by_level"] = dict(figures["spread_violations_by_level"])
        assert tuple(figures.values()) == expected[cid], cid


def test_summary_from_the_local_tables(hand: dict[str, pa.Table]) -> None:
    summary = summary_from_frames(
        hand["clusters"].to_pandas(), hand["exposure"].to_pandas(), hand["skew"].to_pandas(), 2
    )
    c1 = summary["clusters"]["c1"]
    assert c1["offline_if_lost"] == {
        "dc": {"/dc3": 1},
        "rack": {},
        "broker": {"5": 1},
        "log_dir": {"5:/d1": 1},
    }
    assert c1["skew"]["dc"]["bytes"] == {"min": 5, "max": 20, "mean": 13.3333, "max_over_mean": 1.5}
    assert summary["fleet"]["worst_clusters"] == ["c1", "c3", "c2", "idle"]


def test_min_insync_replicas_must_be_positive() -> None:
    with pytest.raises(IllegalArgumentException, match="at least 1, got 0"):
        audit_tables(local_tables(BROKERS, LOG_DIRS, REPLICAS), 0)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), min_isr=st.integers(1, 4))
def test_random_fleets_match_the_pure_reference(seed: int, min_isr: int) -> None:
    fleet = random_fleet(seed, num_clusters=12)
    got = audit_tables(local_tables(*fleet), min_isr)
    assert len(got["clusters"]) == len({b[0] for b in fleet[0]})
    spread = {
        (r["cluster_id"], r["partition"], r["depth"], r["node"], r["max_child_replicas"])
        for r in got["spread_violations"].to_pylist()
    }
    assert spread == reference_spread(fleet[0], fleet[2])
    exposure = {
        (
            r["cluster_id"],
            r["domain"],
            r["partitions"],
            r["offline_if_lost"],
            r["under_min_isr_if_lost"],
        )
        for r in got["exposure"].to_pylist()
        if r["partitions"] > 0
    }
    assert exposure == reference_exposure(fleet, min_isr)
    load = {
        (r["cluster_id"], r["domain"]): (r["replicas"], r["leaders"], r["bytes"])
        for r in got["load"].to_pylist()
        if r["level"] == "broker"
    }
    expected = {(c, str(b)): (0, 0, 0) for c, b, _ in fleet[0]}
    for c, _, _, index, b, _, size in fleet[2]:
        n, lead, total = expected[(c, str(b))]
        expected[(c, str(b))] = (n + 1, lead + (index == 0), total + size)
    assert load == expected
