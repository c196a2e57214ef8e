"""``rackwise placement``: kafka-python's CreateReplicaPlacement classes, loaded from our
schema, write and read the bytes our protocol layer writes and reads; the answer becomes
Kafka's reassignment JSON; bad input is one line. Against a running cluster: tests/interop."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rackwise.cli.errors import CommandError
from rackwise.cli.placement import parse_broker_ids, reassignment_of
from rackwise.client.admin import (
    AdminError,
    CreateReplicaPlacementRequest,
    CreateReplicaPlacementResponse,
    placement_from_response,
    placement_request,
)
from rackwise.formats.reassignment import format_reassignment
from rackwise.protocol import messages as own
from rackwise.protocol.bodies import read_body, write_body


def test_kafka_pythons_request_is_our_protocols_bytes() -> None:
    request = placement_request(6, 3, force_simple_placement=True, broker_ids=[1, 2, 5])
    sent = bytes(request.encode(version=0, header=False))
    ours = own.CreateReplicaPlacementRequest(
        num_partitions=6,
        replication_factor=3,
        force_simple_placement=True,
        node_id=(1, 2, 5),
        timeout_ms=30000,
    )
    assert sent == write_body(ours)
    assert read_body(own.CreateReplicaPlacementRequest, sent) == (ours, len(sent))
    assert CreateReplicaPlacementRequest.API_KEY == 1000


def _decoded(message: object) -> object:
    return CreateReplicaPlacementResponse.decode(write_body(message), version=0, header=False)


def test_our_response_decodes_in_kafka_python_sorted_by_partition() -> None:
    entry = own.CreateReplicaPlacementResponse.ReplicaPlacement
    response = own.CreateReplicaPlacementResponse(
        replica_placement=(
            entry(partition_id=1, replicas=(2, 3)),
            entry(partition_id=0, replicas=(1, 2)),
        )
    )
    assert placement_from_response(_decoded(response)) == [(0, (1, 2)), (1, (2, 3))]


def test_an_error_in_the_tagged_fields_is_raised_with_the_brokers_words() -> None:
    response = own.CreateReplicaPlacementResponse(
        replica_placement=(),
        error_code=38,
        error_message="Unable to replicate the partition 4 time(s): only 3 usable brokers.",
    )
    with pytest.raises(AdminError, match="only 3 usable brokers") as caught:
        placement_from_response(_decoded(response))
    assert (caught.value.code, caught.value.name) == (38, "INVALID_REPLICATION_FACTOR")
    silent = own.CreateReplicaPlacementResponse(replica_placement=(), error_code=38)
    with pytest.raises(AdminError, match=r"CreateReplicaPlacement: .*INVALID_REPLICATION_FACTOR"):
        placement_from_response(_decoded(silent))


def test_the_answer_as_reassignment_json() -> None:
    text = format_reassignment(reassignment_of("orders", [(0, (1, 2)), (1, (2, 3))]))
    assert json.loads(text) == {
        "version": 1,
        "partitions": [
            {"topic": "orders", "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
            {"topic": "orders", "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "any"]},
        ],
    }


def test_broker_ids() -> None:
    assert parse_broker_ids("1, 2,3") == [1, 2, 3]
    assert parse_broker_ids(None) == []
    with pytest.raises(CommandError, match="'x' is not a broker id"):
        parse_broker_ids("1,x")


def test_bad_input_is_one_line() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "rackwise.cli.main",
            "placement",
            "--bootstrap-server",
            "127.0.0.1:1",
            "--partitions",
            "0",
            "--replication-factor",
            "1",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert (result.returncode, result.stderr) == (
        1,
        "error: --partitions must be at least 1, not 0\n",
    )
