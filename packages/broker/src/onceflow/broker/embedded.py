"""Run a broker as a child process, for tests and single-machine runs.

``BrokerProcess`` is a :class:`onceflow.core.process.ServiceProcess` on a data dir (start, readiness
wait, stop, ``kill -9``, restart on the same data dir and port) with the address a Kafka client
needs; ``EmbeddedBroker`` fills it in for onceflow's own broker and
``onceflow.testing.broker.apache_kafka.ApacheKafka`` for a real Apache Kafka.

``EmbeddedBroker`` guarantees:
- ``start()`` returns only once the child accepts connections (or raises with the tail of its log);
- the child is a real process (``python -m onceflow.broker``), so ``kill()`` is a real ``kill -9``;
- ``start()`` after ``stop()``/``kill()`` reuses the same data dir and the same port;
- child stderr is appended to ``data_dir/broker.log``;
- importing this module is cheap (stdlib and onceflow.core only).
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Mapping
from pathlib import Path

from onceflow.broker.config import READY_FILE
from onceflow.core.process import ServiceProcess
from onceflow.core.service import Readiness, read_ready_file

LOG_FILE = "broker.log"
CONFIG_FILE = "embedded-broker.toml"


class BrokerProcess(ServiceProcess):
    """A Kafka-protocol broker as a child process on ``data_dir``, listening on ``host``.

    Subclasses name the command (:meth:`command`) and say when it serves (:meth:`probe_ready`).
    """

    NAME = "broker"
    LOG_FILE = LOG_FILE
    READY_FILE: str | None = None

    def __init__(
        self,
        data_dir: Path,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
    ) -> None:
        super().__init__(data_dir, port=port, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        self.host = host

    @property
    def data_dir(self) -> Path:
        """The broker's data dir (also holds its config, ready file and log)."""
        return self.work_dir

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` for client configs."""
        return f"{self.host}:{self.port}"

    def _accepts(self, port: int) -> bool:
        try:
            with socket.create_connection((self.host, port), timeout=1.0):
                return True
        except OSError:
            return False


class EmbeddedBroker(BrokerProcess):
    """A broker child process on ``data_dir``; ``options`` are :class:`BrokerConfig` field names.

    Example: ``EmbeddedBroker(tmp_path, auto_create_topics=False, default_partitions=3)``.
    """

    CONFIG_FILE = CONFIG_FILE
    READY_FILE = READY_FILE
    STDOUT_TO_LOG = False

    def __init__(
        self,
        data_dir: Path,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        startup_timeout: float = 30.0,
        stop_timeout: float = 10.0,
        **options: object,
    ) -> None:
        super().__init__(data_dir, port, host=host, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        self._options = options

    def config_settings(self) -> Mapping[str, object]:
        return self._options

    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "onceflow.broker",
            "--config",
            str(self.config_path),
            "--data-dir",
            str(self.data_dir),
            "--listen",
            f"{self.host}:{self._port}",
        ]

    def probe_ready(self, pid: int) -> Readiness | None:
        """The broker's ready file (``data_dir/ready``) names ``pid`` and the port accepts."""
        info = read_ready_file(self.data_dir / READY_FILE, pid)
        return info if info is not None and self._accepts(info.port) else None
