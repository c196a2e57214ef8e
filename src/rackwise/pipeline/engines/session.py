"""The one place a SparkSession is built.

By default the pipeline runs on local Spark (``local[*]``) with settings that fit one machine:
few shuffle partitions, Arrow for pandas exchange, quiet logs. ``master`` (``--master``) points it
at any cluster; under ``spark-submit`` the master, resources and logging come from the submit
command and are left alone.

Quiet logs. Started from Python, Spark's JVM prints a log4j banner, a WARN that the hostname
resolves to a loopback address and one that the native Hadoop library is missing before any
code can lower its log level. So the driver JVM is started with a log4j2 configuration of our
own (``-Dlog4j2.configurationFile``, through ``spark.driver.extraJavaOptions``): one console
appender on stderr at ``ERROR`` (``RACKWISE_SPARK_LOG_LEVEL`` sets another level, ``WARN`` or
``INFO`` to debug), so real errors still show; and for a local master, where Spark would
otherwise pick the first non-loopback interface, ``SPARK_LOCAL_IP`` is ``127.0.0.1`` unless it is
set. The file is written once per level into the temporary directory. The JVM itself still
says ``WARNING: Using incubator modules: jdk.incubator.vector`` (Spark's launcher adds the
module; the JVM has no switch for that line).

A JVM that outlives its driver. PySpark's JVM leaves when its stdin (a pipe from the driver)
closes, but only once it reads it, and then runs its shutdown hooks, which can wait on a job's
tasks; a JVM that is busy or stuck keeps running, with ``-Xmx8g`` and the driver's stdout and
stderr. So on Linux the JVM is started with ``PR_SET_PDEATHSIG``: the kernel sends it SIGKILL
when the driver's main thread ends, however it ends (``kill -9`` included). The driver's own exit
closes that pipe and waits for the JVM first (:func:`_stop_jvm_at_exit`), so that Spark's hooks
still remove its temporary files.

Signals. SIGINT raises ``KeyboardInterrupt`` in the main thread (:func:`quiet_interrupts`, from
before the JVM starts), and SIGTERM :class:`Terminated` where the command installs
:func:`raise_terminated` (``rackwise pipeline`` does; under ``spark-submit`` it is left alone);
the command prints one line for either and exits 130 or 143. While the SparkContext is built
both are held, then delivered: PySpark's own SIGINT handler and its clean-up of a half-built
context would call into the JVM again from inside the call interrupted.
"""

from __future__ import annotations

import _thread
import atexit
import ctypes
import logging
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from subprocess import Popen, TimeoutExpired
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER: Final = "local[*]"
APP_NAME: Final = "rackwise-pipeline"
LOG_LEVEL_ENV: Final = "RACKWISE_SPARK_LOG_LEVEL"
DEFAULT_LOG_LEVEL: Final = "ERROR"
_LOG_LEVELS: Final = ("OFF", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE", "ALL")
REINTERRUPT_DELAY_S: Final = 0.01
"""How long after a lost interrupt it is raised again (the finalizer has returned by then)."""
_DRIVER_MEMORY: Final = "8g"
_SHUFFLE_PARTITIONS: Final = "8"
_LOCAL_IP: Final = "127.0.0.1"
_PR_SET_PDEATHSIG: Final = 1
JVM_EXIT_WAIT_S: Final = 15.0
"""How long the driver's exit waits for the JVM to run its shutdown hooks."""
_SIGNALS: Final = {signal.SIGINT, signal.SIGTERM}

_LOG4J2: Final = """\
# Written by rackwise.pipeline.engines.session: Spark's driver logs, {level} and above, on stderr.
rootLogger.level = {level}
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{{yy/MM/dd HH:mm:ss}} %p %c{{1}}: %m%n%ex
# The Python gateway counts as a shell: without its own level Spark says it set one.
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = {level}
"""


def under_spark_submit() -> bool:
    """Whether this process is a driver started by ``spark-submit``."""
    return "SPARK_SUBMIT_OPTS" in os.environ or os.environ.get("SPARK_ENV_LOADED") == "1"


def _not_py4j(record: logging.LogRecord) -> bool:
    return f"{os.sep}py4j{os.sep}" not in record.pathname


def quiet_interrupts() -> None:
    """Make Ctrl-C stop the driver with nothing but the command's own line.

    PySpark's SIGINT handler cancels the jobs by calling into the JVM from inside the signal
    handler, which re-enters the py4j call the main thread is waiting in; py4j then logs both
    failures as tracebacks on the root logger (up to 45 lines). Here SIGINT raises
    ``KeyboardInterrupt`` at once (the JVM is stopped by :func:`stop_jvm` instead), and py4j's
    log records are dropped. :func:`get_spark` calls it before the JVM starts and again once the
    session is created (PySpark installs its handler)."""
    logging.getLogger().addFilter(_not_py4j)
    py4j = logging.getLogger("py4j")
    py4j.setLevel(logging.CRITICAL + 1)
    py4j.propagate = False
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        reraise_swallowed_interrupts()


class Terminated(BaseException):
    """SIGTERM arrived. A BaseException, as KeyboardInterrupt is, so that no ``except
    Exception`` on the way swallows it; the command's exit status is 143."""

    signum: Final = signal.SIGTERM


def raise_terminated(signum: int, frame: object) -> None:
    """A SIGTERM handler: raise :class:`Terminated` where the main thread is."""
    raise Terminated("terminated")


def reraise_swallowed_interrupts() -> None:
    """A ``KeyboardInterrupt`` (or :class:`Terminated`) raised while the main thread runs a
    finalizer (py4j releases its Java objects from weakref callbacks) is printed as "Exception
    ignored" and lost: the command would go on and succeed. Such an interrupt is raised again,
    as a new SIGINT (SIGTERM), where it can end the command, and is not printed."""
    previous = sys.unraisablehook
    if getattr(previous, "reraises_interrupts", False):
        return

    def hook(unraisable: Any) -> None:
        kind = unraisable.exc_type
        if kind is not None and issubclass(kind, (KeyboardInterrupt, Terminated)):
            # From another thread, a moment later: in this one the handler would run inside
            # this hook at once (and ``Thread.start`` waits, so the low-level start).
            signum = signal.SIGTERM if issubclass(kind, Terminated) else signal.SIGINT
            _thread.start_new_thread(_interrupt_main_soon, (signum,))
            return
        previous(unraisable)

    hook.reraises_interrupts = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def stop_jvm() -> None:
    """Kill the JVM this process started for Spark, if it did (not one of ``spark-submit``):
    after an interrupt, so that its tasks failing as their workers are interrupted too print
    nothing. The executors of a remote master see the driver go, as at any driver exit."""
    context = sys.modules.get("pyspark.core.context") or sys.modules.get("pyspark.context")
    gateway = getattr(getattr(context, "SparkContext", None), "_gateway", None)
    process = getattr(gateway, "proc", None)
    if process is not None and process.poll() is None:
        process.kill()


def _interrupt_main_soon(signum: signal.Signals) -> None:
    time.sleep(REINTERRUPT_DELAY_S)
    _thread.interrupt_main(signum)


class _DieWithDriver(dict[str, Any]):
    """``Popen`` arguments for PySpark's JVM. PySpark sets its own ``preexec_fn`` (which
    ignores SIGINT in the JVM) over any given; this one runs it and then asks the kernel for
    SIGKILL when the driver's thread ends."""

    def __init__(self) -> None:
        super().__init__()
        self.driver = os.getpid()
        self.prctl = ctypes.CDLL(None, use_errno=True).prctl

    def __setitem__(self, key: str, value: Any) -> None:
        if key == "preexec_fn":
            value = self._preexec(value)
        super().__setitem__(key, value)

    def _preexec(self, theirs: Callable[[], None] | None) -> Callable[[], None]:
        def preexec() -> None:
            if theirs is not None:
                theirs()
            self.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != self.driver:  # the driver was gone before the request
                os._exit(1)

        return preexec


def _launch_jvm(settings: dict[str, str]) -> None:
    """Start the JVM as :func:`get_spark`'s ``getOrCreate`` would, with the same settings,
    but tied to this process (module docstring); nothing if it runs already or is not ours."""
    from pyspark.core.context import SparkContext  # noqa: PLC0415
    from pyspark.java_gateway import launch_gateway  # noqa: PLC0415

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    if not sys.platform.startswith("linux"):
        return
    if threading.current_thread() is not threading.main_thread():
        return  # the kernel's signal follows the thread that started the JVM
    from pyspark import SparkConf  # noqa: PLC0415

    conf = SparkConf().setAll(list(settings.items()))
    gateway = launch_gateway(conf, _DieWithDriver())  # type: ignore[no-untyped-call]
    SparkContext._ensure_initialized(gateway=gateway)
    atexit.register(_stop_jvm_at_exit, gateway.proc)


def _stop_jvm_at_exit(process: Popen[bytes]) -> None:
    """At the driver's exit: close the JVM's stdin (its signal to leave) and wait for it to run
    Spark's shutdown hooks (which remove its temporary directories), so that the kernel's
    SIGKILL finds nothing left to kill."""
    if process.poll() is not None:
        return
    from pyspark.core.context import SparkContext  # noqa: PLC0415

    # The JVM's end of the accumulator connection closes as it leaves, which the driver's
    # accumulator server would print as a traceback: that is expected now.
    server = getattr(SparkContext._active_spark_context, "_accumulatorServer", None)
    if server is not None:
        server.handle_error = _ignore_error
    if process.stdin is not None:
        process.stdin.close()
    try:
        process.wait(JVM_EXIT_WAIT_S)
    except TimeoutExpired:
        process.kill()


def _ignore_error(request: object, address: object) -> None:
    pass


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM (in this thread, and the threads it starts) meanwhile, then let
    them in, to whichever handler is installed by then."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        yield
    finally:
        quiet_interrupts()
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


def log_level() -> str:
    """The driver's log level: ``RACKWISE_SPARK_LOG_LEVEL`` or ``ERROR``."""
    level = os.environ.get(LOG_LEVEL_ENV, DEFAULT_LOG_LEVEL).strip().upper()
    if level not in _LOG_LEVELS:
        raise ValueError(f"{LOG_LEVEL_ENV} must be one of {', '.join(_LOG_LEVELS)}, got {level!r}")
    return level


def log4j2_file(level: str) -> Path:
    """The log4j2 properties file for ``level``, written (atomically) if it is not there yet."""
    text = _LOG4J2.format(level=level.lower())
    path = Path(tempfile.gettempdir()) / f"rackwise-spark-log4j2-{level.lower()}.properties"
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        partial = path.with_name(f"{path.name}.{os.getpid()}")
        partial.write_text(text, encoding="utf-8")
        partial.replace(path)
    return path


def get_spark(master: str | None = None, *, app_name: str = APP_NAME) -> SparkSession:
    """Return the pipeline's SparkSession, creating it on first use.

    Python workers run this interpreter (``PYSPARK_PYTHON``): without it Spark starts the
    system ``python3``, which lacks rackwise, and every grouped pandas function fails.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession  # noqa: PLC0415  (Spark loads only when a job runs)

    ours = master is not None or not under_spark_submit()
    level = log_level()
    settings = {"spark.app.name": app_name}
    if ours:
        chosen = master or DEFAULT_MASTER
        if chosen.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", _LOCAL_IP)
        config = log4j2_file(level).as_uri()
        settings |= {
            "spark.master": chosen,
            "spark.driver.memory": _DRIVER_MEMORY,
            "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={config}",
        }
    settings |= {
        "spark.sql.shuffle.partitions": _SHUFFLE_PARTITIONS,
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.showConsoleProgress": "false",
        "spark.ui.enabled": "false",
        "spark.sql.adaptive.enabled": "true",
    }
    if ours:
        quiet_interrupts()  # an interrupt while the JVM starts logs no py4j traceback
        _launch_jvm(settings)
    builder = SparkSession.builder
    for key, value in settings.items():
        builder = builder.config(key, value)
    with _signals_held():
        spark = builder.getOrCreate()
    if ours:
        spark.sparkContext.setLogLevel(level)
    return spark
