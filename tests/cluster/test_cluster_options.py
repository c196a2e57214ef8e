"""``cluster up`` checks every option before it writes anything: a typo leaves no directory,
no file and no process behind, so the corrected command runs as if the first never had."""

from __future__ import annotations

from pathlib import Path

import pytest

from rackwise.cluster.local import up
from rackwise.cluster.plan import ClusterError, check_up_options

BAD_OPTIONS = [
    (
        {"num_brokers": 2, "placer": "multilevel"},
        "--placer multilevel: Unknown replica placer 'multilevel': expected one of multi-level,",
    ),
    (
        {"num_brokers": 2, "overrides": {"broker.replica.placer": "stripe"}},
        "--override broker.replica.placer=stripe: Unknown replica placer 'stripe'",
    ),
    (
        {"num_brokers": 2, "placer": "no.such.module:Placer"},
        "--placer no.such.module:Placer: Replica placer plug-in 'no.such.module:Placer' cannot "
        "be imported",
    ),
    (
        {"num_brokers": 2, "racks": ["/dc1/r1", "dc1//r1"]},
        "--racks: broker 2's rack 'dc1//r1' is not a path: empty component",
    ),
    (
        {"num_brokers": 2, "racks": ["/dc1/r1", "/dc1/r1/"]},
        "--racks: broker 2's rack '/dc1/r1/' is not a path: empty component",
    ),
    ({"num_brokers": 3, "racks": ["/a", "/b"]}, "--racks names 2 racks but --brokers is 3"),
    ({"num_brokers": 0}, "--brokers must be from 1 to 2999 (the controller is node 3000), not 0"),
    ({"num_brokers": 3000}, "--brokers must be from 1 to 2999"),
    ({"num_brokers": 1, "timeout_s": 0.0}, "--timeout must be more than 0 seconds, not 0"),
]


@pytest.mark.parametrize(("options", "message"), BAD_OPTIONS)
def test_a_bad_option_is_refused_before_anything_is_written(
    tmp_path: Path, options: dict[str, object], message: str
) -> None:
    directory = tmp_path / "cluster"
    with pytest.raises(ClusterError) as raised:
        up(directory, **options)  # type: ignore[arg-type]
    assert str(raised.value).startswith(message), str(raised.value)
    assert not directory.exists()


def test_good_options_pass_plain_rack_names_and_plug_ins_included() -> None:
    check_up_options(
        3,
        ["/dc1/r1", "r2", "dc2/r1"],  # plain names are one-level paths, as everywhere
        "tests.placement.sample_plugins:SeededPlacer",
        {"broker.replica.placer": "multi-level"},
        60.0,
    )
    check_up_options(None, None, None, {}, 1.0)  # a restart names nothing new
