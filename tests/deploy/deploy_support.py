"""What tests/deploy reads: the compose file, the Helm chart and the services' settings classes.

The deploys are checked as files here (`make deploy-test` runs the compose deploy). The compose file
is YAML with ``${VAR:-default}`` interpolation (done with the defaults of ``.env.example``). The
chart is rendered by Helm itself (helm_support.py); its templates are also read as text here, for
the values they refer to.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, get_args, get_origin

import yaml
from pydantic import BaseModel

from onceflow.consumer.settings import ConsumerSettings
from onceflow.coordinator.settings import CoordinatorSettings
from onceflow.core.settings import Settings, load_settings
from onceflow.runtime.config.worker_settings import WorkerSettings
from onceflow.sinks.server.settings import ParticipantSettings
from onceflow.spark.job.settings import SparkJobSettings

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_DIR = ROOT / "deploy" / "compose"
COMPOSE_FILE = COMPOSE_DIR / "docker-compose.yml"
CHART = ROOT / "deploy" / "helm" / "onceflow"

#: Each onceflow service of the deploys (services/<name>/, compose service, chart component) and the
#: settings class its process loads.
SETTINGS: dict[str, type[Settings]] = {
    "coordinator": CoordinatorSettings,
    "participant": ParticipantSettings,
    "connect-worker": WorkerSettings,
    "spark-worker": SparkJobSettings,
    "consumer": ConsumerSettings,
}

#: A name that looks like a setting override: ONCEFLOW_<SERVICE>__<KEY>[__<KEY>...].
SETTING_NAME = re.compile(r"\bONCEFLOW_[A-Z][A-Z0-9_]*?__[A-Z0-9_]*[A-Z0-9]\b")

# --- settings ---------------------------------------------------------------------------------


def service_of(env_name: str) -> str:
    """The service whose settings prefix ``env_name`` carries; fails when no service reads it."""
    for service, model in SETTINGS.items():
        if env_name.startswith(model.env_prefix):
            return service
    prefixes = ", ".join(model.env_prefix for model in SETTINGS.values())
    raise AssertionError(f"{env_name}: no onceflow service reads this prefix (known: {prefixes})")


def assert_setting_exists(env_name: str) -> None:
    """``env_name`` names a setting of its service (the same walk as the loader, without a value)."""
    model = SETTINGS[service_of(env_name)]
    path = [part.lower() for part in env_name[len(model.env_prefix) :].split("__")]
    current: Any = model
    for depth, key in enumerate(path):
        fields = getattr(current, "model_fields", None) if isinstance(current, type) else None
        if fields is None:
            last = depth == len(path) - 1
            assert last and get_origin(current) is dict, f"{env_name}: {'.'.join(path)} is no setting"
            return
        assert key in fields, f"{env_name}: no setting {'.'.join(path[: depth + 1])} in {model.__name__}"
        current = fields[key].annotation
        args = [a for a in get_args(current) if isinstance(a, type) and issubclass(a, BaseModel)]
        if get_origin(current) is not dict and len(args) == 1:
            current = args[0]


def load_service_settings(service: str, config: Path, env: Mapping[str, str]) -> Settings:
    """The settings the service's process would load from ``config`` plus ``env`` (InvalidConfig if bad)."""
    return load_settings(SETTINGS[service], config, env=dict(env))


S = TypeVar("S", bound=Settings)


def _expect(settings: Settings, model: type[S]) -> S:
    assert isinstance(settings, model)
    return settings


@dataclass(frozen=True)
class Deploy:
    """The settings every onceflow service of one deploy loads."""

    coordinator: CoordinatorSettings
    participant: ParticipantSettings
    connect: WorkerSettings
    spark: SparkJobSettings
    consumer: ConsumerSettings

    @classmethod
    def load(cls, load: Callable[[str], Settings]) -> Deploy:
        """``load(service)`` for each service (see :data:`SETTINGS`)."""
        return cls(
            _expect(load("coordinator"), CoordinatorSettings),
            _expect(load("participant"), ParticipantSettings),
            _expect(load("connect-worker"), WorkerSettings),
            _expect(load("spark-worker"), SparkJobSettings),
            _expect(load("consumer"), ConsumerSettings),
        )


def metrics_port(settings: Settings) -> int:
    """The port of a service's Prometheus endpoint."""
    metrics = getattr(settings, "metrics", None)
    assert metrics is not None, f"{type(settings).__name__} has no metrics endpoint"
    return int(metrics.port)


def served_ports(settings: Settings) -> set[int]:
    """The ports a service listens on: its gRPC server (if any) and its metrics endpoint."""
    sections = (getattr(settings, "metrics", None), getattr(settings, "server", None))
    return {section.port for section in sections if section is not None}


def bootstrap_servers(settings: Settings) -> set[str]:
    """Where a service's Kafka clients connect (the participant's: those of its Kafka sinks)."""
    if isinstance(settings, ParticipantSettings):
        return {sink.options.kafka.bootstrap_servers for sink in settings.sinks if sink.kind == "kafka"}
    kafka = getattr(settings, "kafka", None)
    assert kafka is not None, f"{type(settings).__name__} has no Kafka settings"
    return {kafka.bootstrap_servers}


# --- compose ----------------------------------------------------------------------------------

_INTERPOLATION = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::?-([^}]*))?\}")


def load_compose() -> dict[str, Any]:
    with COMPOSE_FILE.open() as fh:
        doc = yaml.safe_load(fh)
    assert isinstance(doc, dict)
    return doc


def env_example() -> dict[str, str]:
    """The variables of ``.env.example`` (KEY=VALUE lines)."""
    variables = {}
    for line in (COMPOSE_DIR / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, sep, value = line.partition("=")
            assert sep, f".env.example: expected KEY=VALUE, got {line!r}"
            variables[key.strip()] = value.strip()
    return variables


def compose_variables() -> dict[str, str | None]:
    """Every ``${VAR}`` of the compose file with its default (None when it has none)."""
    return {m.group(1): m.group(2) for m in _INTERPOLATION.finditer(COMPOSE_FILE.read_text())}


def interpolate(value: object, variables: Mapping[str, str]) -> str:
    """``value`` as docker compose passes it: ``${VAR:-default}`` replaced (a variable without
    a value and without a default fails)."""

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if variables.get(name):
            return variables[name]
        assert default is not None, f"${{{name}}} has no value and no default"
        return default

    text = str(value).lower() if isinstance(value, bool) else str(value)
    return _INTERPOLATION.sub(substitute, text)


def host_path(service: dict[str, Any], container_path: str) -> Path:
    """The file of the repository that a bind mount of ``service`` shows at ``container_path``."""
    for volume in service.get("volumes", []):
        source, _, rest = str(volume).partition(":")
        target = rest.split(":")[0]
        if source.startswith(".") and (container_path == target or container_path.startswith(target + "/")):
            return (COMPOSE_DIR / source / container_path[len(target) :].lstrip("/")).resolve()
    raise AssertionError(f"{container_path} is not on a bind mount of the service")


# --- Helm -------------------------------------------------------------------------------------

#: What the test puts in the Secret with the PostgreSQL DSN.
SAMPLE_DSN = "host=db.example port=5432 user=onceflow password=secret dbname=onceflow"

_VALUES_REF = re.compile(r"\.Values((?:\.[A-Za-z_][A-Za-z0-9_]*)+)")


def load_yaml(path: Path) -> dict[str, Any]:
    with path.open() as fh:
        doc = yaml.safe_load(fh)
    assert isinstance(doc, dict), f"{path} is not a YAML mapping"
    return doc


def templates() -> dict[str, str]:
    """Every template of the chart (name -> text), helpers and NOTES.txt included."""
    return {p.name: p.read_text() for p in sorted((CHART / "templates").iterdir()) if p.is_file()}


def values_references(text: str) -> set[str]:
    """The dotted paths of every ``.Values.x.y`` in ``text``."""
    return {m.group(1).lstrip(".") for m in _VALUES_REF.finditer(text)}


def lookup(values: Mapping[str, Any], dotted: str) -> Any:
    node: Any = values
    for key in dotted.split("."):
        assert isinstance(node, Mapping) and key in node, f".Values.{dotted} is not in values.yaml"
        node = node[key]
    return node
