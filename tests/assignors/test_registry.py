"""The assignor registry: names, construction, unknown names, and the on-demand assignor."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rackwise.assignors import ASSIGNOR_NAMES, PartitionAssignor, create_assignor
from rackwise.common import IllegalArgumentException

KAFKA_EXACT = ("range", "sticky", "cooperative-sticky")
LEADER_RACK = ("leader-rack-aware-range", "leader-rack-aware-cooperative-sticky")


def test_the_built_in_names_come_first_in_a_fixed_order() -> None:
    assert ASSIGNOR_NAMES[:5] == (
        "range",
        "sticky",
        "cooperative-sticky",
        "leader-rack-aware-range",
        "leader-rack-aware-cooperative-sticky",
    )


@pytest.mark.parametrize("name", ASSIGNOR_NAMES)
def test_each_name_creates_a_fresh_assignor_of_that_name(name: str) -> None:
    first, second = create_assignor(name), create_assignor(name)
    assert isinstance(first, PartitionAssignor)
    assert first.name == name
    assert first is not second


def test_the_leader_rack_assignors_do_not_reuse_kafkas_names() -> None:
    leader = {create_assignor(n).name for n in LEADER_RACK}
    assert leader.isdisjoint(KAFKA_EXACT)


def test_an_unknown_name_is_refused_with_the_known_ones() -> None:
    with pytest.raises(IllegalArgumentException) as raised:
        create_assignor("roundrobin")
    assert str(raised.value).startswith("Unknown partition assignor 'roundrobin': expected one of ")
    assert "range, sticky, cooperative-sticky" in str(raised.value)


def test_importing_the_package_does_not_import_the_on_demand_assignor() -> None:
    code = "import sys, rackwise.assignors; print('rackwise.assignors.optimal' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"
