"""Fixtures every test package may use: controller processes started for real."""

from tests.processes import controller_factory

__all__ = ["controller_factory"]
