"""Broker settings: one validated, immutable model loaded from TOML, environment and command line.

Precedence (highest first): command-line flags, ``ONCEFLOW_BROKER__*`` environment variables, the
``--config`` TOML file, the defaults below. A bad value raises
:class:`onceflow.core.errors.InvalidConfig` naming the setting.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import ClassVar, Final, Literal

from pydantic import Field, field_validator, model_validator

from onceflow.core.exposure import Listener
from onceflow.core.settings import Settings

DAY_MS = 24 * 60 * 60 * 1000


def parse_host_port(value: str) -> tuple[str, int]:
    """Split ``host:port`` (``[v6]:port`` allowed); raises ValueError naming the bad part."""
    host, sep, port = value.strip().rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise ValueError(f"expected host:port, got {value!r}")
    return host.strip("[]"), int(port)


#: The broker's ready file in its data dir, written by the serve loop once the broker serves
#: (:mod:`onceflow.core.service.ready_file`, with the ``advertised`` address besides the port).
READY_FILE: Final = "ready"


class BrokerConfig(Settings):
    """Everything the broker process is configured with. Field names are the TOML keys."""

    env_prefix: ClassVar[str] = "ONCEFLOW_BROKER__"

    data_dir: Path = Path("./data/broker")
    listen: str = "127.0.0.1:9092"
    """Where the broker accepts connections. Port 0 picks a free port."""
    advertised: str | None = None
    """host:port clients are told to connect to; defaults to the listen address (actual port)."""
    fsync: Literal["always", "interval"] = "interval"
    """``always``: fsync before acking every produce; ``interval``: fsync every ``fsync_interval_ms``."""
    fsync_interval_ms: int = Field(default=1000, ge=1)
    auto_create_topics: bool = True
    default_partitions: int = Field(default=1, ge=1)
    log_retention_ms: int = Field(default=7 * DAY_MS, ge=-1)
    log_retention_bytes: int = Field(default=-1, ge=-1)
    log_segment_bytes: int = Field(default=1024 * 1024 * 1024, ge=14)
    message_max_bytes: int = Field(default=1048588, ge=0)
    socket_request_max_bytes: int = Field(default=100 * 1024 * 1024, ge=64)
    """Kafka's ``socket.request.max.bytes``: a frame header announcing more closes the connection
    before anything of the frame is buffered."""
    queued_max_request_bytes: int = Field(default=256 * 1024 * 1024, ge=-1)
    """Kafka's ``queued.max.request.bytes``: bytes of partially received requests the broker holds
    over all connections; the connection that would exceed it is closed. -1: unlimited (Kafka's
    default; here the default bounds memory)."""
    queued_max_request_bytes_per_connection: int = Field(default=1024 * 1024, ge=0)
    """Each connection's own budget: a frame of up to this many bytes is received without drawing on
    ``queued_max_request_bytes``, so other connections' partial frames can never starve a client's
    ordinary requests; only the part of a larger frame beyond it uses the shared budget."""
    sasl_server_max_receive_size: int = Field(default=64 * 1024, ge=64)
    """Kafka's ``sasl.server.max.receive.size``: the largest frame a SASL listener accepts before the
    client has authenticated (ApiVersions, SaslHandshake, SaslAuthenticate are small); a larger one
    closes the connection at its size header. Such frames never draw on the shared budget. (Kafka's
    default is 512 KiB; 64 KiB holds every pre-authentication request.)"""
    request_receive_timeout_ms: int = Field(default=30_000, ge=1)
    """A frame must arrive whole within this time of its size header; a slower one closes its
    connection and frees what it held (slow-loris frames cannot keep budget for long)."""
    connections_max_idle_ms: int = Field(default=600_000, ge=1)
    """Kafka's ``connections.max.idle.ms``: close a connection with no traffic for this long (and no
    request in flight)."""
    max_connections_per_ip: int = Field(default=1000, ge=-1)
    """Kafka's ``max.connections.per.ip``: connections accepted from one client address; the next is
    closed at once. -1: unlimited (Kafka's default)."""
    maintenance_interval_ms: int = Field(default=30_000, ge=100)
    """How often retention and compaction run."""
    snapshot_interval_ms: int = Field(default=60_000, ge=100)
    """How often producer-state snapshots are written (also written on clean shutdown)."""
    group_initial_rebalance_delay_ms: int = Field(default=0, ge=0)
    transaction_max_timeout_ms: int = Field(default=15 * 60 * 1000, ge=1)
    """Kafka's ``transaction.max.timeout.ms``: the largest ``transaction.timeout.ms`` a producer may ask
    for (InitProducerId answers INVALID_TRANSACTION_TIMEOUT above it)."""
    transaction_abort_timed_out_interval_ms: int = Field(default=10_000, ge=1)
    """Kafka's ``transaction.abort.timed.out.transaction.cleanup.interval.ms``: how often the transaction
    coordinator aborts transactions open longer than their timeout."""
    security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    """Kafka's ``security.protocol`` of the listener: SASL_* require SaslHandshake + SaslAuthenticate
    before any other request; SSL/SASL_SSL wrap the connection in TLS (``ssl_certfile``...)."""
    sasl_enabled_mechanisms: list[Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]] = [
        "PLAIN",
        "SCRAM-SHA-256",
        "SCRAM-SHA-512",
    ]
    """Kafka's ``sasl.enabled.mechanisms``; users come from ``onceflow broker users add``."""
    ssl_certfile: Path | None = None
    """PEM certificate chain of the TLS listener (Kafka: ssl.keystore.location)."""
    ssl_keyfile: Path | None = None
    """PEM private key of ``ssl_certfile``."""
    ssl_cafile: Path | None = None
    """PEM CA bundle; when set, clients must present a certificate it signed (ssl.client.auth=required)."""
    authorizer: Literal["auto", "acl", "none"] = "auto"
    """Kafka's ``authorizer.class.name``. ``acl``: every request is checked against the ACLs as Kafka's
    ``StandardAuthorizer`` checks it (CreateAcls/DescribeAcls/DeleteAcls manage them, kept in
    ``data_dir/acls``); ``none``: everything is allowed and the ACL APIs answer SECURITY_DISABLED;
    ``auto``: ``acl`` on a SASL listener (where clients have identities), ``none`` otherwise."""
    super_users: list[str] = []
    """Kafka's ``super.users`` (``User:<name>``): allowed everything, whatever the ACLs say."""
    allow_everyone_if_no_acl_found: bool = True
    """Kafka's ``allow.everyone.if.no.acl.found``: a resource no ACL names is open to every user.
    Never so for protected resources: the Cluster, the internal topics (``_onceflow_*``,
    ``__consumer_offsets``, ``__transaction_state``), the transactional ids of
    ``protected_transactional_id_prefixes`` and the groups of ``protected_group_prefixes``; only super
    users and explicit ACLs reach those."""
    protected_transactional_id_prefixes: list[str] = ["onceflow-coordinator", "onceflow-sink-", "onceflow-src-"]
    """onceflow's transactional ids: the coordinator's decision log, the Kafka sinks' producers and
    the exactly-once source tasks' producers. Whoever can initialise one can fence its owner."""
    protected_group_prefixes: list[str] = ["onceflow-coordinator"]
    """onceflow's consumer groups that only their owner may join: the coordinators' standby election
    (whoever wins it is the active coordinator) and their log replays."""

    @field_validator("listen")
    @classmethod
    def _check_listen(cls, value: str) -> str:
        parse_host_port(value)
        return value

    @field_validator("advertised")
    @classmethod
    def _check_advertised(cls, value: str | None) -> str | None:
        if value is not None:
            host, port = parse_host_port(value)
            if not host or port == 0:
                raise ValueError(f"advertised needs a host and a non-zero port, got {value!r}")
        return value

    @model_validator(mode="after")
    def _check_tls(self) -> BrokerConfig:
        if self.security_protocol in ("SSL", "SASL_SSL") and (self.ssl_certfile is None or self.ssl_keyfile is None):
            raise ValueError(f"security_protocol {self.security_protocol} needs ssl_certfile and ssl_keyfile")
        return self

    @property
    def uses_sasl(self) -> bool:
        """Whether clients must authenticate with SASL on the listener."""
        return self.security_protocol.startswith("SASL_")

    @property
    def authorizes(self) -> bool:
        """Whether requests are checked against ACLs (see ``authorizer``)."""
        if self.authorizer == "auto":
            return self.uses_sasl
        return self.authorizer == "acl"

    @property
    def uses_tls(self) -> bool:
        """Whether the listener speaks TLS."""
        return self.security_protocol in ("SSL", "SASL_SSL")

    def listeners(self, prefix: str) -> list[Listener]:
        """The listener; its clients authenticate with SASL, or with TLS client certificates (``ssl_cafile``).
        Off loopback one of them is required (:mod:`onceflow.core.exposure`)."""
        return [
            Listener(
                f"{prefix}.listen" if prefix else "listen",
                self.listen_host,
                authenticated=self.uses_sasl or (self.uses_tls and self.ssl_cafile is not None),
                remedy="set security_protocol = SASL_SSL or SASL_PLAINTEXT (users: onceflow broker users add), "
                "or SSL with ssl_cafile (client certificates)",
            )
        ]

    @property
    def listen_host(self) -> str:
        """Host part of ``listen``."""
        return parse_host_port(self.listen)[0]

    @property
    def listen_port(self) -> int:
        """Port part of ``listen`` (0 = pick a free one)."""
        return parse_host_port(self.listen)[1]

    @property
    def ready_file(self) -> Path:
        """``data_dir/ready``: where a broker without ``--ready-file`` publishes its readiness."""
        return self.data_dir / READY_FILE

    def advertised_address(self, bound_port: int) -> tuple[str, int]:
        """The (host, port) given to clients in Metadata and FindCoordinator responses."""
        if self.advertised is not None:
            return parse_host_port(self.advertised)
        host = self.listen_host
        if host in ("", "0.0.0.0", "::"):
            host = socket.gethostname()
        return host, bound_port
