"""``rackwise metadata-quorum``: Kafka's MetadataQuorumCommand option errors."""

from __future__ import annotations

import argparse

import pytest

from rackwise.cli.errors import CommandError
from rackwise.cli.metadata_quorum import run


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        ({"status": True, "replication": True}, "Only one of --status or --replication"),
        ({}, "One of --status or --replication must be specified"),
        ({"status": True, "human_readable": True}, "--human-readable is only supported along"),
    ],
)
def test_option_errors_are_kafkas(flags: dict[str, bool], message: str) -> None:
    args = argparse.Namespace(
        bootstrap_server="127.0.0.1:1",
        status=flags.get("status", False),
        replication=flags.get("replication", False),
        human_readable=flags.get("human_readable", False),
    )
    with pytest.raises(CommandError, match=message):
        run(args)
