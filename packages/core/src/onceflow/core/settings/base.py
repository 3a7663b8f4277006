"""Typed settings models shared by every service.

A service defines its settings as a subclass of :class:`Settings`, composed of the sections
below, and loads them with :func:`onceflow.core.settings.load_settings`. Unknown keys are
errors, values are validated, and models are immutable once loaded.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from onceflow.core import defaults
from onceflow.core.exposure import Listener


class Section(BaseModel):
    """A group of settings. Unknown keys are rejected, so typos never pass silently."""

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


class LoggingSettings(Section):
    """Structured logging of a service."""

    level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    format: Literal["kv", "json"] = "kv"


class MetricsSettings(Section):
    """Prometheus exposition endpoint. Port 0 disables it."""

    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)


class Settings(Section):
    """Root settings of one service: its own sections plus ``[log]``, which the serve loop applies.

    ``env_prefix`` scopes the environment overrides: ``ONCEFLOW_BROKER__LOG__LEVEL=DEBUG``
    sets ``log.level`` of a model whose prefix is ``ONCEFLOW_BROKER__``.
    """

    env_prefix: ClassVar[str] = "ONCEFLOW__"

    log: LoggingSettings = LoggingSettings()


class MeteredSettings(Settings):
    """Root settings of a service that exposes Prometheus metrics: ``[metrics]`` besides ``[log]``."""

    metrics: MetricsSettings = MetricsSettings()


class TlsSettings(Section):
    """gRPC transport security. Empty paths mean plaintext; ``client_ca`` on a server enables mTLS.

    ``token_file`` is for clients: the bearer token sent with every call (see
    :mod:`onceflow.core.grpc.auth`); a server's own rule is :class:`GrpcAuthSettings`.
    """

    cert: str = ""
    key: str = ""
    ca: str = ""
    require_client_auth: bool = False
    token_file: str = ""


class GrpcAuthSettings(Section):
    """Who may call the mutating RPCs (:mod:`onceflow.core.grpc.auth`); both empty: anyone who connects."""

    #: A file holding the bearer token that mutating calls must send.
    token_file: str = ""
    #: Client-certificate identities (common name or subject alternative name) allowed without a token.
    allowed_identities: list[str] = Field(default_factory=list)

    @property
    def enabled(self) -> bool:
        return bool(self.token_file or self.allowed_identities)


class GrpcLimitsSettings(Section):
    """Bounds on the calls that hold a server thread while they last (:mod:`onceflow.core.grpc.limits`)."""

    #: Open streaming calls (WatchResults, WatchRows, ...) of one client address.
    max_streams_per_client: int = Field(default=4, ge=1)
    #: Open streaming calls in total; 0 = half of the server's worker threads. The other threads stay
    #: for the unary calls, so reads cannot starve writes.
    max_streams: int = Field(default=0, ge=0)


class GrpcServerSettings(Section):
    """Where a gRPC service listens, over which transport, who may change state through it, and the
    bounds of its long-lived calls."""

    host: str = "127.0.0.1"
    port: int = Field(default=0, ge=0, le=65535)
    tls: TlsSettings = TlsSettings()
    auth: GrpcAuthSettings = GrpcAuthSettings()
    limits: GrpcLimitsSettings = GrpcLimitsSettings()

    def listeners(self, prefix: str) -> list[Listener]:
        """The server's address; its clients authenticate with a token or a client certificate
        (:mod:`onceflow.core.exposure`: off loopback, one of them is required)."""
        return [
            Listener(
                f"{prefix}.host",
                self.host,
                authenticated=self.auth.enabled or self.tls.require_client_auth,
                remedy=f"set {prefix}.auth.token_file (a bearer token for the mutating RPCs) or "
                f"{prefix}.tls.require_client_auth with {prefix}.tls.cert, key and ca (mTLS)",
            )
        ]


class KafkaSettings(Section):
    """How to reach Kafka (the embedded broker or Apache Kafka).

    ``properties`` are passed through to librdkafka unchanged, with librdkafka's own names
    (``security.protocol``, ``sasl.mechanisms``, ``ssl.ca.location``, ...). ``properties_file`` names a
    file of more of them (``name=value`` lines; ``#`` comments), read once at load and merged over
    ``properties``: credentials such as ``sasl.password`` stay out of the config file and the
    environment (a mounted secret, as Kafka's ``--command-config`` file).

    ``replication_factor`` and ``min_insync_replicas`` are those of the topics the service creates
    (onceflow's internal ``_onceflow_*`` topics, a Kafka sink's topics): unset, the factor is
    ``min(3, brokers in the cluster)`` and the min ISR 2 from 3 replicas on, else 1
    (:mod:`onceflow.core.kafka.topics`). A topic that exists is never changed.
    """

    bootstrap_servers: str = defaults.BOOTSTRAP_SERVERS
    properties: dict[str, str] = Field(default_factory=dict)
    replication_factor: int | None = Field(default=None, ge=1)
    min_insync_replicas: int | None = Field(default=None, ge=1)
    properties_file: str = ""

    @field_validator("bootstrap_servers")
    @classmethod
    def _check_bootstrap(cls, value: str) -> str:
        for server in value.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"expected host:port[,host:port...], got {server.strip()!r}")
        return value

    @field_validator("properties")
    @classmethod
    def _check_properties(cls, value: dict[str, str]) -> dict[str, str]:
        if "bootstrap.servers" in value:
            raise ValueError("set bootstrap_servers, not properties.bootstrap.servers")
        return value

    @field_validator("properties_file")
    @classmethod
    def _check_properties_file(cls, value: str) -> str:
        if value:
            read_properties_file(value)
        return value

    @model_validator(mode="after")
    def _merge_properties_file(self) -> Self:
        if self.properties_file:
            # The model is frozen; its properties dict is filled once, here, while it is validated.
            self.properties.update(read_properties_file(self.properties_file))
            self._check_properties(self.properties)
        return self

    def client_config(self, **overrides: object) -> dict[str, object]:
        """librdkafka configuration: bootstrap servers, passthrough properties, then ``overrides``."""
        config: dict[str, object] = {"bootstrap.servers": self.bootstrap_servers, **self.properties}
        config.update(overrides)
        return config


def read_properties_file(path: str) -> dict[str, str]:
    """The ``name=value`` lines of a librdkafka properties file (``#`` and ``!`` lines are comments).

    Raises ValueError naming the file when it cannot be read or a line has no ``=``; the values are
    never in the message (they are credentials).
    """
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ValueError(f"cannot read {path}: {exc.strerror or exc}") from None
    properties: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        name, sep, value = stripped.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"{path} line {number}: expected name=value")
        properties[name.strip()] = value.strip()
    return properties
