"""Rack paths (``/dc/rack/host``) and the failure-domain tree built from them (pure)."""

from rackwise.topology.rackpath import (
    InvalidRackPathException,
    as_rack_path,
    parse_rack_path,
    rack_path_problem,
)
from rackwise.topology.spread import NodeLoad, SpreadViolation, node_loads, spread_violations
from rackwise.topology.tree import ROOT, RackTree

__all__ = [
    "ROOT",
    "InvalidRackPathException",
    "NodeLoad",
    "RackTree",
    "SpreadViolation",
    "as_rack_path",
    "node_loads",
    "parse_rack_path",
    "rack_path_problem",
    "spread_violations",
]
