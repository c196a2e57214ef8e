"""The one place a SparkSession is built.

By default the pipeline runs on local Spark (``local[*]``) with settings that fit one machine:
few shuffle partitions, Arrow for pandas exchange, quiet logs. ``master`` (``--master``) points it
at any cluster; under ``spark-submit`` the master and resources come from the submit command and
are left alone.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER: Final = "local[*]"
APP_NAME: Final = "rackwise-pipeline"
_DRIVER_MEMORY: Final = "8g"
_SHUFFLE_PARTITIONS: Final = "8"


def _under_spark_submit() -> bool:
    return "SPARK_SUBMIT_OPTS" in os.environ or os.environ.get("SPARK_ENV_LOADED") == "1"


def get_spark(master: str | None = None, *, app_name: str = APP_NAME) -> SparkSession:
    """Return the pipeline's SparkSession, creating it on first use.

    Python workers run this interpreter (``PYSPARK_PYTHON``): without it Spark starts the
    system ``python3``, which lacks rackwise, and every grouped pandas function fails.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession  # noqa: PLC0415  (Spark loads only when a job runs)

    builder = SparkSession.builder.appName(app_name)
    if master is not None or not _under_spark_submit():
        builder = builder.master(master or DEFAULT_MASTER)
        builder = builder.config("spark.driver.memory", _DRIVER_MEMORY)
    builder = (
        builder.config("spark.sql.shuffle.partitions", _SHUFFLE_PARTITIONS)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.adaptive.enabled", "true")
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
