"""The whole pipeline as supervised services, started in dependency order and stopped in reverse."""

from __future__ import annotations

from onceflow.core.kafka import TopicSpec
from onceflow.core.kafka import ensure_topics as create_missing
from onceflow.core.logging import get_logger
from onceflow.core.topics import DEAD_LETTER_TOPIC, SINK_TOPIC, SOURCE_TOPIC
from onceflow.demo.components import (
    BrokerComponent,
    Component,
    ConnectComponent,
    ConsumerComponent,
    Context,
    CoordinatorComponent,
    ParticipantComponent,
    SparkComponent,
)
from onceflow.demo.supervisor import RestartPolicy, Supervisor

_log = get_logger(__name__)

#: Topic settings of the demo: nothing expires by time (event times start at the run's creation,
#: and the audit recounts the whole source topic).
TOPIC_CONFIG = {"retention.ms": "-1"}


def ensure_topics(client_config: dict[str, str], source_partitions: int, *, timeout: float = 30.0) -> None:
    """Create ``ip_count_source``, ``ip_count_sink`` and the dead-letter topic unless they exist (idempotent),
    with the default replication: ``min(3, brokers)`` replicas (1 on the embedded broker), min ISR 2 from 3 on."""
    wanted = [
        TopicSpec(SOURCE_TOPIC, source_partitions, TOPIC_CONFIG),
        TopicSpec(SINK_TOPIC, 1, TOPIC_CONFIG),
        TopicSpec(DEAD_LETTER_TOPIC, 1, TOPIC_CONFIG),
    ]
    for topic in create_missing(client_config, wanted, timeout=timeout):
        _log.info("pipeline.topic_created", topic=topic)


class Pipeline:
    """Every service of the demo under one :class:`Supervisor`.

    Start order: the services of a step start together, and the next step waits until each serves.
        1. broker (unless the run uses an existing Kafka, ``--bootstrap-servers``);
        2. the topics (``ip_count_source`` with the run's partitions, ``ip_count_sink``);
        3. coordinator (its transaction log lives in the broker), the consumer (reads
           ``ip_count_sink``, serves the Results API), and the connect worker with the generator or
           the tailer (resumes after its committed position): the input fills the source topic
           while the job warms up;
        4. participant (resolves prepared transactions with the coordinator before serving), and the
           Spark job (registers with the coordinator, retrying while it is unreachable, then resumes
           from its checkpoint; it serves once its first batch ran: JVM, session and that batch take
           10-30 s, by when the participant serves).
    With ``input_after_job`` (a chaos run: the kills should land while the input flows, however
    long the job takes to warm up) the connect worker starts last, once the job serves.
    Stop order is the reverse of the declaration: the producer first, the broker last.
    """

    #: Steps 1, 3 and 4 (a service missing from the run, the broker with ``--bootstrap-servers``, is left out).
    STEPS = (("broker",), ("coordinator", "consumer", "connect"), ("participant", "spark"))
    #: The same with ``input_after_job``.
    STEPS_INPUT_AFTER_JOB = (("broker",), ("coordinator", "consumer"), ("participant", "spark"), ("connect",))

    def __init__(self, context: Context, supervisor: Supervisor, policy: RestartPolicy) -> None:
        self.context = context
        self.supervisor = supervisor
        self.components: dict[str, Component] = {
            component.name: component
            for component in (
                *([BrokerComponent(context)] if context.embedded_broker else []),
                CoordinatorComponent(context),
                ParticipantComponent(context),
                ConsumerComponent(context),
                SparkComponent(context),
                ConnectComponent(context),
            )
        }
        for component in self.components.values():
            supervisor.add(component.supervised(policy))
        for steps in (self.STEPS, self.STEPS_INPUT_AFTER_JOB):
            unstarted = set(self.components) - {name for step in steps for name in step}
            assert not unstarted, f"services in no start step: {unstarted}"

    @property
    def service_names(self) -> list[str]:
        return list(self.components)

    def start(self, timeout: float = 180.0, *, input_after_job: bool = False) -> None:
        """Steps 1-4 of the class docstring; raises ServiceFailedError naming the service that did not come up."""
        self.supervisor.watch()
        if not self.context.embedded_broker:
            self.create_topics()
        for step in self.STEPS_INPUT_AFTER_JOB if input_after_job else self.STEPS:
            names = [name for name in step if name in self.components]
            for name in names:
                self.supervisor.start(name)
            for name in names:
                self.supervisor.wait_ready(name, timeout)
            if "broker" in names:
                self.create_topics()

    def create_topics(self) -> None:
        """Step 2."""
        ensure_topics(self.context.client_config(), self.context.state.source_partitions)

    def stop(self) -> None:
        """Stop every service gracefully, producer first, broker last."""
        self.supervisor.stop(list(reversed(self.components)))
