"""Apache Kafka's own command-line tools (kafka-tools and kafka_2.13 jars) as child processes, for tests.

Kafka's system tests drive brokers with these tools (``VerifiableProducer``, ``VerifiableConsumer``,
``TransactionalMessageCopier``, ``kafka-transactions``, ``kafka-consumer-groups``, ...); running
them against the embedded broker checks it the way Kafka checks itself. They run from the same
cached jars as :class:`~onceflow.testing.broker.apache_kafka.ApacheKafka`
(:func:`~onceflow.testing.broker.apache_kafka.find_kafka_libs`):
``java -cp 'libs/*' <main class> args``.

Guarantees: :func:`run_tool` returns the finished process with its stdout and stderr, or raises
:class:`subprocess.TimeoutExpired` after killing it; :class:`ToolProcess` is a tool running in the
background whose stdout is collected line by line, and is killed (``kill -9``) at ``close()``.
The tools log WARN and above to stderr. Importing this module costs what importing
:mod:`onceflow.testing.broker.apache_kafka` costs (stdlib and kio).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Self

from onceflow.testing.broker.apache_kafka import (
    CLASS_ARCHIVE,
    FAST_START_JVM_OPTIONS,
    KafkaJarsMissing,
    find_kafka_libs,
)
from onceflow.testing.jars import java_command

__all__ = [
    "ACL_COMMAND",
    "CONFIG_COMMAND",
    "CONSOLE_CONSUMER",
    "CONSUMER_GROUP_COMMAND",
    "PRODUCER_PERFORMANCE",
    "TRANSACTIONAL_MESSAGE_COPIER",
    "TRANSACTIONS_COMMAND",
    "VERIFIABLE_CONSUMER",
    "VERIFIABLE_PRODUCER",
    "ToolProcess",
    "json_lines",
    "run_tool",
    "tool_command",
]

VERIFIABLE_PRODUCER: Final = "org.apache.kafka.tools.VerifiableProducer"
VERIFIABLE_CONSUMER: Final = "org.apache.kafka.tools.VerifiableConsumer"
TRANSACTIONAL_MESSAGE_COPIER: Final = "org.apache.kafka.tools.TransactionalMessageCopier"
TRANSACTIONS_COMMAND: Final = "org.apache.kafka.tools.TransactionsCommand"
CONSUMER_GROUP_COMMAND: Final = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
CONSOLE_CONSUMER: Final = "org.apache.kafka.tools.consumer.ConsoleConsumer"
PRODUCER_PERFORMANCE: Final = "org.apache.kafka.tools.ProducerPerformance"
ACL_COMMAND: Final = "org.apache.kafka.tools.AclCommand"
"""``kafka-acls``."""
CONFIG_COMMAND: Final = "kafka.admin.ConfigCommand"
"""``kafka-configs``: in the ``kafka_2.13`` jar, not in ``kafka-tools``."""

LOG4J2: Final = """status = error
appender.err.type = Console
appender.err.name = err
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = err
"""


def _log4j2_config() -> Path:
    path = Path(tempfile.gettempdir()) / "onceflow-kafka-tools-log4j2.properties"
    if not path.is_file() or path.read_text() != LOG4J2:
        staging = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        staging.write_text(LOG4J2)
        staging.replace(path)
    return path


def tool_command(main_class: str, *args: str, heap: str = "256m", libs: Path | None = None) -> list[str]:
    """The command line running ``main_class`` from the Kafka jars with ``args``.

    Raises :class:`KafkaJarsMissing` when the jars or java are missing.
    """
    return java_command(
        main_class,
        *args,
        libs=libs or find_kafka_libs(),
        heap=heap,
        options=(*FAST_START_JVM_OPTIONS, "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={_log4j2_config()}"),
        title="each Kafka tool",
        missing=KafkaJarsMissing,
        archive=CLASS_ARCHIVE,
    )


def run_tool(main_class: str, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    """Run a tool to completion and return it (any exit code); kills it after ``timeout`` seconds."""
    return subprocess.run(
        tool_command(main_class, *args),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def json_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a tool's output, one a line; other lines (banners, logs) are skipped."""
    found: list[dict[str, Any]] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("{"):
            continue
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found


class ToolProcess:
    """A tool running in the background; its stdout lines are collected as they come.

    ``stderr`` goes to ``stderr_path`` (appended). ``close()`` kills the tool (``kill -9``) if it
    still runs and waits for it.
    """

    def __init__(self, main_class: str, *args: str, stderr_path: Path, heap: str = "256m") -> None:
        self.main_class = main_class
        self.stderr_path = stderr_path
        self.lines: list[str] = []
        self._lock = threading.Lock()
        with stderr_path.open("ab") as stderr:
            self._process = subprocess.Popen(
                tool_command(main_class, *args, heap=heap),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
            )
        self._reader = threading.Thread(target=self._read, name=f"stdout-{main_class}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        stdout = self._process.stdout
        assert stdout is not None
        for line in stdout:
            with self._lock:
                self.lines.append(line.rstrip("\n"))

    @property
    def pid(self) -> int:
        """The tool's process id."""
        return self._process.pid

    def poll(self) -> int | None:
        """The exit code, or None while the tool runs."""
        return self._process.poll()

    def wait(self, timeout: float) -> int:
        """Wait for the tool to exit and for its output to be read; returns the exit code."""
        code = self._process.wait(timeout)
        self._reader.join(timeout)
        return code

    def events(self) -> list[dict[str, Any]]:
        """The JSON lines printed so far."""
        with self._lock:
            return json_lines("\n".join(self.lines))

    def stderr_tail(self, lines: int = 40) -> str:
        """The last lines the tool wrote to stderr, for failure messages."""
        try:
            return "\n".join(self.stderr_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "<no stderr>"

    def close(self) -> None:
        """Kill the tool if it still runs, and reap it."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        self._reader.join(5.0)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
