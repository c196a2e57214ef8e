"""Rack paths (``/dc/rack/host``) and the failure-domain tree built from them (pure)."""

from rackwise.topology.rackpath import InvalidRackPathException, as_rack_path, parse_rack_path
from rackwise.topology.tree import ROOT, RackTree

__all__ = ["ROOT", "InvalidRackPathException", "RackTree", "as_rack_path", "parse_rack_path"]
