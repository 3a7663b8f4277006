"""A real Apache Kafka node (KRaft, broker and controller in one JVM) as a child process.

It runs from the jars ``make setup`` (``make kafka``) copies from Maven Central into
``.cache/kafka/<version>/libs`` (see ``tools/kafka/pom.xml`` and docs/testing-on-apache-kafka.md).
:class:`ApacheKafka` is a :class:`~onceflow.broker.embedded.BrokerProcess` (a
:class:`~onceflow.core.process.ServiceProcess`), so it starts, stops, ``kill -9``s and restarts exactly
like :class:`~onceflow.broker.embedded.EmbeddedBroker`: the same data dir, the same broker and
controller ports across restarts.

With ``sasl_users`` (user -> password) every listener, the controller's too, is SASL_PLAINTEXT with
PLAIN: those users log in, and so does the broker itself as :data:`BROKER_USER` (a super user with a
password of its own); pass ``settings={"authorizer.class.name": STANDARD_AUTHORIZER, "super.users":
..., "allow.everyone.if.no.acl.found": ...}`` to enforce ACLs as a secured deploy does.

Alone, it is a one-node cluster. :class:`~onceflow.testing.broker.apache_kafka_cluster.ApacheKafkaCluster`
runs several as one cluster: each gets its ``node_id``, the cluster's id and the controller quorum.

``start()`` steps:
    1. On the first start: pick free ports for the broker and controller listeners, write
       ``server.properties`` and ``log4j2.properties``, and format the storage
       (``kafka.tools.StorageTool format``) with the cluster id (a fresh one when none is given).
    2. Spawn ``java -cp 'libs/*' kafka.Kafka server.properties``.
    3. Wait until a Metadata request on the broker listener lists the broker.

Importing this module is cheap (stdlib and kio only).
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import tempfile
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from kio.schema.metadata.v12.request import MetadataRequest

from onceflow.broker.admin.connection import KafkaConnection
from onceflow.broker.embedded import BrokerProcess
from onceflow.broker.protocol.shapes import build_entity
from onceflow.core.process import free_port
from onceflow.core.service import Readiness
from onceflow.testing.jars import (
    FAST_START_JVM_OPTIONS,
    JarsMissing,
    fetched_libs,
    java_command,
    pom_property,
    repo_root,
    tool_archive,
)

__all__ = [
    "BROKER_USER",
    "DEFAULT_SETTINGS",
    "FAST_START_JVM_OPTIONS",
    "KAFKA_HOME_ENV",
    "NODE_ID",
    "STANDARD_AUTHORIZER",
    "ApacheKafka",
    "KafkaJarsMissing",
    "find_kafka_libs",
    "free_port",
    "kafka_version",
    "new_cluster_id",
]

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
"""Kafka's KRaft ACL authorizer (``authorizer.class.name``)."""
BROKER_USER = "broker"
"""The SASL user the broker and controller log in as with ``sasl_users`` (always a super user)."""
_BROKER_PASSWORD_FILE = "sasl-broker-password"
KAFKA_HOME_ENV = "ONCEFLOW_KAFKA_HOME"
"""Environment variable naming a folder whose ``libs/`` holds the Kafka jars (overrides the cache)."""
POM = Path("tools/kafka/pom.xml")
NODE_ID = 1
"""The node id of a one-node Kafka."""

DEFAULT_SETTINGS: Mapping[str, object] = {
    "num.partitions": 1,
    "auto.create.topics.enable": True,
    "offsets.topic.replication.factor": 1,
    "offsets.topic.num.partitions": 1,
    "transaction.state.log.replication.factor": 1,
    "transaction.state.log.min.isr": 1,
    "transaction.state.log.num.partitions": 1,
    "group.initial.rebalance.delay.ms": 0,
    # The embedded broker's transaction_max_timeout_ms default (and Kafka's): 15 minutes.
    "transaction.max.timeout.ms": 15 * 60 * 1000,
    # Tests wait for timed-out transactions to be aborted: sweep every half second, not every 10 s.
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": 500,
    # After a kill -9 the restarted broker may register only once its old session expired (9 s by default).
    "broker.session.timeout.ms": 2000,
    "broker.heartbeat.interval.ms": 500,
    "share.coordinator.state.topic.replication.factor": 1,
    "share.coordinator.state.topic.min.isr": 1,
}
"""``server.properties`` settings besides listeners and paths; ``ApacheKafka(settings=...)`` overrides them."""

#: The class archive of Kafka's jars that the brokers and the Kafka tools map (:func:`write_class_archive`).
CLASS_ARCHIVE = "kafka"

LOG4J2 = """status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.state.name = state.change.logger
logger.state.level = WARN
"""


class KafkaJarsMissing(JarsMissing):
    """The Apache Kafka jars are not where ``make setup`` puts them."""


def kafka_version(root: Path | None = None) -> str:
    """The Kafka version ``tools/kafka/pom.xml`` pins (the repository is found from the cwd upwards)."""
    root = root or repo_root(POM, KafkaJarsMissing)
    return pom_property(root / POM, "kafka.version", KafkaJarsMissing)


def find_kafka_libs() -> Path:
    """The folder of Kafka jars: ``$ONCEFLOW_KAFKA_HOME/libs``, else ``.cache/kafka/<version>/libs``.

    Raises :class:`KafkaJarsMissing` saying to run ``make setup`` when they are not there.
    """
    home = os.environ.get(KAFKA_HOME_ENV)
    if home:
        libs = Path(home) / "libs"
        if not any(libs.glob("kafka_2.13-*.jar")):
            raise KafkaJarsMissing(f"${KAFKA_HOME_ENV}={home}, but {libs} holds no kafka_2.13 jar")
        return libs
    return fetched_libs("kafka", title="Apache Kafka", version_property="kafka.version", missing=KafkaJarsMissing)


def new_cluster_id() -> str:
    """A fresh KRaft cluster id (a base64url UUID, as ``kafka-storage random-uuid`` prints)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


class ApacheKafka(BrokerProcess):
    """Apache Kafka in KRaft combined mode on ``data_dir``, listening on ``host`` only.

    ``settings`` override :data:`DEFAULT_SETTINGS` (``server.properties`` keys). ``node_id`` is the
    broker's and controller's id (1 for a one-node Kafka); ``quorum_voters``
    (``id@host:port,...``) names the cluster's controllers (default: this node alone) and
    ``cluster_id`` the id its storage is formatted with (default: a fresh one). ``controller_port``
    is fixed at the first start like ``port``. Raises :class:`KafkaJarsMissing` from ``start()``
    when the jars are not fetched.
    """

    LOG_FILE = "kafka.log"
    NAME = "Apache Kafka"

    def __init__(
        self,
        data_dir: Path,
        port: int = 0,
        *,
        host: str = "127.0.0.1",
        controller_port: int = 0,
        settings: Mapping[str, object] | None = None,
        heap: str = "512m",
        jvm_options: Sequence[str] = FAST_START_JVM_OPTIONS,
        libs: Path | None = None,
        sasl_users: Mapping[str, str] | None = None,
        node_id: int = NODE_ID,
        cluster_id: str | None = None,
        quorum_voters: str | None = None,
        startup_timeout: float = 60.0,
        stop_timeout: float = 30.0,
    ) -> None:
        super().__init__(data_dir, port, host=host, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        self.controller_port = controller_port
        self._node_id = node_id
        self._cluster_id = cluster_id
        self._quorum_voters = quorum_voters
        self.settings = {**DEFAULT_SETTINGS, **(settings or {})}
        self._heap = heap
        self._jvm_options = tuple(jvm_options)
        self._libs = libs
        self.sasl_users = dict(sasl_users) if sasl_users is not None else None

    @property
    def listener(self) -> str:
        """The client listener's name and security protocol: PLAINTEXT, or SASL_PLAINTEXT with ``sasl_users``."""
        return "PLAINTEXT" if self.sasl_users is None else "SASL_PLAINTEXT"

    def _broker_password(self) -> str:
        path = self.data_dir / _BROKER_PASSWORD_FILE
        if not path.is_file():
            path.write_text(uuid.uuid4().hex)
        return path.read_text().strip()

    def _sasl_settings(self) -> dict[str, object]:
        """Step 1 with ``sasl_users``: PLAIN on both listeners, the broker's own login, its super user."""
        if self.sasl_users is None:
            return {}
        password = self._broker_password()
        users = {BROKER_USER: password, **self.sasl_users}
        entries = " ".join(f'user_{name}="{secret}"' for name, secret in users.items())
        jaas = (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{BROKER_USER}" password="{password}" {entries};'
        )
        super_users = ";".join([f"User:{BROKER_USER}", *str(self.settings.get("super.users", "")).split(";")])
        return {
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
            "listener.name.controller.plain.sasl.jaas.config": jaas,
            "super.users": super_users.strip(";"),
        }

    @property
    def node_id(self) -> int:
        """The broker's (and controller's) node id."""
        return self._node_id

    @property
    def properties_path(self) -> Path:
        """The ``server.properties`` the broker runs with."""
        return self.data_dir / "server.properties"

    def _java(self, main: str, *args: str) -> list[str]:
        return java_command(
            main,
            *args,
            libs=self._libs or find_kafka_libs(),
            heap=self._heap,
            options=(
                "-Xms64m",
                *self._jvm_options,
                "-Djava.awt.headless=true",
                f"-Dlog4j2.configurationFile={self.data_dir / 'log4j2.properties'}",
            ),
            title="Apache Kafka",
            missing=KafkaJarsMissing,
            archive=CLASS_ARCHIVE,
        )

    def command(self) -> Sequence[str]:
        # Step 1
        if not self.properties_path.is_file():
            self._format()
        elif self._port == 0 or self.controller_port == 0:
            self._load_ports()
        # Step 2
        return self._java("kafka.Kafka", str(self.properties_path))

    def _format(self) -> None:
        if self._port == 0:
            self._port = free_port(self.host)
        if self.controller_port == 0:
            self.controller_port = free_port(self.host)
        (self.data_dir / "log4j2.properties").write_text(LOG4J2.format(log=self.log_path))
        client = self.listener
        listeners = {
            "process.roles": "broker,controller",
            "node.id": self._node_id,
            "listeners": f"{client}://{self.host}:{self._port},CONTROLLER://{self.host}:{self.controller_port}",
            "advertised.listeners": f"{client}://{self.host}:{self._port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": client,
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.quorum.voters": self._quorum_voters or f"{self._node_id}@{self.host}:{self.controller_port}",
            "log.dirs": str(self.data_dir / "logs"),
        }
        merged = {**listeners, **self.settings, **self._sasl_settings()}
        lines = [f"{key}={_property(value)}" for key, value in merged.items()]
        staging = self.properties_path.with_suffix(".tmp")
        staging.write_text("\n".join(lines) + "\n")
        command = self._java(
            # "--cluster-id=ID": a random id may start with "-", which a separate argument would read as an option
            "kafka.tools.StorageTool",
            "format",
            f"--cluster-id={self._cluster_id or new_cluster_id()}",
            "-c",
            str(staging),
            "--ignore-formatted",
        )
        result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed ({result.returncode}):\n{result.stdout}{result.stderr}")
        staging.replace(self.properties_path)

    def _load_ports(self) -> None:
        """Take the ports of an earlier instance on this data dir from its ``server.properties``."""
        properties = dict(line.split("=", 1) for line in self.properties_path.read_text().splitlines() if "=" in line)
        found = dict(re.findall(r"(SASL_PLAINTEXT|PLAINTEXT|CONTROLLER)://[^:,]+:(\d+)", properties["listeners"]))
        self._port = int(found[self.listener])
        self.controller_port = int(found["CONTROLLER"])

    def probe_ready(self, pid: int) -> Readiness | None:
        # Step 3
        request = build_entity(MetadataRequest, {"topics": [], "allow_auto_topic_creation": False})
        try:
            with KafkaConnection(f"{self.host}:{self._port}", "onceflow-readiness", timeout=2.0) as connection:
                if self.sasl_users is not None:
                    connection.login_plain(BROKER_USER, self._broker_password())
                answer = connection.request(request)
        except (OSError, ConnectionError):
            return None
        return Readiness(port=self._port) if any(int(b.node_id) == self._node_id for b in answer.brokers) else None


def _property(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_class_archive(libs: Path | None = None) -> Path:
    """Write the class archive of Kafka's jars unless it exists (``make setup``): a broker started and
    stopped cleanly with the dump option; every broker and Kafka tool started afterwards maps it, and
    starts in about 0.6 of the time (docs/benchmarks.md). Raises KafkaJarsMissing without jars or java."""
    archive = tool_archive(CLASS_ARCHIVE, libs or find_kafka_libs(), title="Apache Kafka", missing=KafkaJarsMissing)

    def warm_up(dump_option: str) -> None:
        with tempfile.TemporaryDirectory(prefix="onceflow-kafka-archive-") as work:
            broker = ApacheKafka(Path(work), libs=libs, jvm_options=(*FAST_START_JVM_OPTIONS, dump_option)).start()
            code = broker.stop(60)  # SIGTERM: the JVM exits cleanly, writing the archive as it does
            if code == -9:
                raise RuntimeError(f"the warm-up broker did not stop within 60 s; see {broker.log_path}")

    return archive.write(warm_up)
