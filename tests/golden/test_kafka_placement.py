"""Every placement case taken from Kafka's own code, through the library and (a sample) through
the ``rackwise place`` command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from rackwise.common import JavaRandom, MockRandom, RackwiseError
from rackwise.placement import BrokerInfo, ClusterView, PlacementSpec, create_placer

CASES = [
    json.loads(line)
    for line in (Path(__file__).parent / "kafka_placement.jsonl").read_text().splitlines()
]
PLACER = {"rack_unaware": "rack-unaware", "rack_aware": "rack-aware", "striped": "striped"}


def _random(case: dict[str, Any]) -> JavaRandom:
    if "random" in case:
        make = MockRandom if case["random"]["class"] == "MockRandom" else JavaRandom
        return make(case["random"]["seed"])
    return JavaRandom(case.get("admin_rand_seed", 0))


def _expected(case: dict[str, Any]) -> tuple[Any, ...]:
    if "expected" in case:
        return ("ok", case["expected"])
    return ("error", case["error"]["type"].rsplit(".", 1)[-1], case["error"]["message"])


def _place(case: dict[str, Any], placer_name: str) -> tuple[Any, ...]:
    brokers = [BrokerInfo(b["id"], b.get("rack"), b.get("fenced", False)) for b in case["brokers"]]
    start_index = case["fixed_start_index"]
    spec = PlacementSpec(
        case["partitions"],
        case["rf"],
        case["start_partition_id"] or 0,
        -1 if start_index is None else start_index,
    )
    try:
        placed = create_placer(placer_name, random=_random(case)).place(spec, ClusterView(brokers))
    except RackwiseError as e:
        return ("error", type(e).__name__, str(e))
    assert placed is not None
    # Kafka's striped placer has no start partition: its cases number partitions from 0.
    first = 0 if placer_name == "striped" else spec.first_partition
    return ("ok", {str(first + i): r for i, r in enumerate(placed)})


@pytest.mark.parametrize("case", CASES, ids=[c["case_id"] for c in CASES])
def test_golden_case(case: dict[str, Any]) -> None:
    assert _place(case, PLACER[case["algo"]]) == _expected(case)


RACK_UNAWARE = [c for c in CASES if c["algo"] == "rack_unaware"]


@pytest.mark.parametrize("case", RACK_UNAWARE, ids=[c["case_id"] for c in RACK_UNAWARE])
def test_rack_unaware_cases_through_the_rack_unaware_placer(case: dict[str, Any]) -> None:
    assert _place(case, "rack-unaware") == _expected(case)


def _cli_sample() -> list[dict[str, Any]]:
    """Cases the command can express: unique broker ids, a fixed start index or a seed."""
    sample = []
    for case in CASES:
        ids = [b["id"] for b in case["brokers"]]
        if case["algo"] == "striped" or len(set(ids)) != len(ids) or not ids:
            continue
        if case["fixed_start_index"] == -1 and "admin_rand_seed" not in case:
            continue
        sample.append(case)
    return sample[::20] + [c for c in sample if c["case_id"].startswith("kip36")]


@pytest.mark.parametrize("case", _cli_sample(), ids=lambda c: c["case_id"])
def test_golden_case_through_the_command(case: dict[str, Any], tmp_path: Path) -> None:
    brokers = tmp_path / "brokers.json"
    brokers.write_text(json.dumps([{"id": b["id"], "rack": b["rack"]} for b in case["brokers"]]))
    argv = [
        sys.executable,
        "-m",
        "rackwise.cli.main",
        "place",
        "--brokers",
        str(brokers),
        "--partitions",
        str(case["partitions"]),
        "--replication-factor",
        str(case["rf"]),
        "--start-index",
        str(case["fixed_start_index"]),
        "--start-partition",
        str(case["start_partition_id"]),
        "--seed",
        str(case.get("admin_rand_seed", 0)),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if "expected" in case:
        assert done.returncode == 0, done.stderr
        got = json.loads(done.stdout)
        assert got["version"] == 1
        assert {str(p["partition"]): p["replicas"] for p in got["partitions"]} == case["expected"]
        assert [p["partition"] for p in got["partitions"]] == sorted(
            int(k) for k in case["expected"]
        )
    else:
        assert done.returncode == 1
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1
        assert case["error"]["message"] in done.stderr
