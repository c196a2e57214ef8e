"""Rack paths (``/dc/rack/host``) and the failure-domain tree built from them (pure)."""

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
from rackwise.topology.spread import NodeLoad, SpreadViolation, node_loads, spread_violations
from rackwise.topology.tree import ROOT, RackTree

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
