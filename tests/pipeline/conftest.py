"""One local SparkSession for the whole pipeline suite."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    from rackwise.pipeline.engines.session import get_spark

    session = get_spark("local[2]")
    yield session
    session.stop()
