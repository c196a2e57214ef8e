"""Rack paths (``/dc/rack/host``) and the failure-domain tree built from them (pure).

The rack paths are plain strings and load at once; the tree and its spread counts are numpy
arrays, loaded on the first use of one of their names, so that a command that only checks a
rack path (``rackwise assign``, a cluster plan) does not pay for numpy at start-up:
``from rackwise.topology import parse_rack_path`` imports no numpy, ``from rackwise.topology
import RackTree`` does.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Final

from rackwise.topology.domains import (
    NO_PREFERENCE,
    InvalidLeadersPreferenceException,
    LeadersPreference,
    count_domains,
    domain_at,
    domains_of,
    parse_leaders_preference,
)
from rackwise.topology.rackpath import (
    InvalidRackPathException,
    as_rack_path,
    parse_rack_path,
    rack_path_problem,
)

if TYPE_CHECKING:
    from rackwise.topology.spread import NodeLoad, SpreadViolation, node_loads, spread_violations
    from rackwise.topology.tree import ROOT, RackTree

_ON_FIRST_USE: Final = {
    "NodeLoad": "rackwise.topology.spread",
    "SpreadViolation": "rackwise.topology.spread",
    "node_loads": "rackwise.topology.spread",
    "spread_violations": "rackwise.topology.spread",
    "ROOT": "rackwise.topology.tree",
    "RackTree": "rackwise.topology.tree",
}


def __getattr__(name: str) -> object:
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "NO_PREFERENCE",
    "ROOT",
    "InvalidLeadersPreferenceException",
    "InvalidRackPathException",
    "LeadersPreference",
    "NodeLoad",
    "RackTree",
    "SpreadViolation",
    "as_rack_path",
    "count_domains",
    "domain_at",
    "domains_of",
    "node_loads",
    "parse_leaders_preference",
    "parse_rack_path",
    "rack_path_problem",
    "spread_violations",
]
