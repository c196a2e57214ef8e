"""The session builder keeps Spark's console noise off the user's terminal, errors included
when there are some."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import weakref
from pathlib import Path

import pytest

from rackwise.pipeline.engines.session import (
    LOG_LEVEL_ENV,
    log4j2_file,
    log_level,
    reraise_swallowed_interrupts,
)

_SCRIPT = """
from rackwise.pipeline.engines.session import get_spark
spark = get_spark("local[1]")
print(spark.range(3).count())
try:
    spark.sql("select assert_true(false)").collect()
except Exception:
    print("failed")
spark.stop()
"""


def test_log_level_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOG_LEVEL_ENV, raising=False)
    assert log_level() == "ERROR"
    monkeypatch.setenv(LOG_LEVEL_ENV, " warn ")
    assert log_level() == "WARN"
    monkeypatch.setenv(LOG_LEVEL_ENV, "loud")
    with pytest.raises(ValueError, match=r"RACKWISE_SPARK_LOG_LEVEL must be one of .*'LOUD'"):
        log_level()


def test_log4j2_file_is_written_once_per_level() -> None:
    path = log4j2_file("WARN")
    assert path == log4j2_file("WARN")
    text = path.read_text(encoding="utf-8")
    assert "rootLogger.level = warn" in text
    assert "appender.console.target = SYSTEM_ERR" in text


def test_spark_starts_quietly_and_still_reports_errors(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_LOCAL_IP", LOG_LEVEL_ENV)}
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=True,
    )
    assert done.stdout.split() == ["3", "failed"]
    lines = done.stderr.splitlines()
    # the JVM's own line about Spark's incubator module is all that is left of start-up
    noise = [
        line
        for line in lines
        if "log4j" in line
        or " WARN " in line
        or "Setting default log level" in line
        or "loopback address" in line
        or "native-hadoop" in line
    ]
    assert noise == []
    # a failed task is an error, and errors still reach stderr
    assert any(" ERROR " in line for line in lines)


def test_an_interrupt_lost_in_a_finalizer_is_raised_again_after_it() -> None:
    # py4j releases Java objects from weakref callbacks; a Ctrl-C landing in one is printed
    # as "Exception ignored" and lost, and the command would go on to succeed.
    class Held:
        pass

    def finalizer(_: object) -> None:
        raise KeyboardInterrupt

    previous = sys.unraisablehook
    printed: list[object] = []
    sys.unraisablehook = printed.append
    try:
        reraise_swallowed_interrupts()
        reraise_swallowed_interrupts()  # once is enough: a second call adds nothing
        held = Held()
        watcher = weakref.ref(held, finalizer)
        with pytest.raises(KeyboardInterrupt):
            del held
            for _ in range(1000):
                time.sleep(0.001)  # the SIGINT raised again lands here, outside the finalizer
        assert watcher() is None
        assert printed == []  # and nothing was printed for the lost one
    finally:
        sys.unraisablehook = previous
