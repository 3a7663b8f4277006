"""The least-privilege ACLs of every onceflow service, derived from a :class:`Topology`.

Each service gets only what its own code does with Kafka (ALLOW ACLs; what no ACL grants is denied
on a broker with ``allow.everyone.if.no.acl.found=false``, and onceflow's internal topics and
transactional ids are never open on the embedded broker):

- **coordinator**: alone writes (and replays) its decision log, owns its transactional id and, with
  standbys, its election group;
- **connect**: alone writes its internal topics (configs, offsets, status, assignment), owns the
  source tasks' transactional-id prefix, writes the connectors' output topics, reads its worker group;
- **participant**: owns each Kafka sink's transactional-id prefix, writes the sink topic, its commit
  markers and the Avro schemas topic;
- **consumer**: reads the topics it stores, the schemas topic, and its group; and what its audit
  (RunAudit, ``onceflow audit --config``) reads: the Kafka sinks it compares, the source and the
  dead-letter topic (the topic truth's defaults);
- **spark**: reads its source topic and its groups, writes the dead-letter topic.

Describe is never granted on its own: Kafka's READ, WRITE, DELETE and ALTER imply it. CREATE on a
service's own topics lets it create them on first start (``ensure_topics``); DESCRIBE_CONFIGS lets
the coordinator check its log's ``cleanup.policy``. No service may delete or reconfigure a topic,
manage ACLs or write markers: that stays with the operator's super user.

Throw-away readers (``assign()`` consumers that never commit) still name a group, and librdkafka
looks up its coordinator, which Kafka authorizes with DESCRIBE on the group: each service gets READ
on the group-name prefix its readers use (:data:`READER_GROUPS`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from onceflow.acls.topology import SERVICES, Topology
from onceflow.broker.acl import AclOperation, PatternType, ResourceType
from onceflow.core.topics import DEAD_LETTER_TOPIC, SOURCE_TOPIC

READ, WRITE, CREATE = AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP, TXN = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID

READER_GROUPS: Mapping[str, tuple[str, ...]] = {
    # the coordinator's log replay
    "coordinator": ("onceflow-coordinator-replay-",),
    # the Kafka-backed config/offset/status stores
    "connect": ("onceflow-log-reader-",),
    # onceflow.core.kafka.read_committed: commit markers, the schemas topic
    "participant": ("onceflow-read-",),
    "consumer": ("onceflow-read-",),
    # the source's probes, readers and end-of-input waits, and its lag-monitoring group
    "spark": ("onceflow-spark-",),
}
"""Group-name prefixes of the read-only consumers each service opens (see module docs)."""


@dataclass(frozen=True, order=True)
class Grant:
    """One ALLOW ACL a service needs, and why."""

    service: str
    resource_type: ResourceType
    pattern_type: PatternType
    name: str
    operation: AclOperation
    why: str

    def line(self, principal: str) -> str:
        """One readable line: ``principal ALLOW operation on TYPE:pattern:name  # why``."""
        resource = f"{self.resource_type.name}:{self.pattern_type.name}:{self.name}"
        return f"{principal:<22} ALLOW {self.operation.name:<16} {resource:<60} # {self.why}"


def _grants(
    service: str,
    resource_type: ResourceType,
    names: Iterable[str],
    operations: Iterable[AclOperation],
    why: str,
    *,
    pattern_type: PatternType = LITERAL,
) -> list[Grant]:
    return [
        Grant(service, resource_type, pattern_type, name, operation, why)
        for name in dict.fromkeys(names)
        if name
        for operation in operations
    ]


def plan(topology: Topology) -> list[Grant]:
    """Every service's grants (see module docs), in service order."""
    coordinator, connect, consumer = topology.coordinator, topology.connect, topology.consumer
    jobs = topology.spark_jobs
    log = coordinator.transaction_log
    schemas = topology.schemas_topic()
    internal = [connect.topics.configs, connect.topics.offsets, connect.topics.status, connect.topics.assignment]
    stored = [consumer.consumer.topic, *(table.topic for table in consumer.tables)]
    sinks = topology.participant_sinks
    # what RunAudit reads: the Kafka sinks of [[audit.sinks]], and its topic truth's defaults
    audited = [*(sink.topic for sink in consumer.audit.sinks if sink.kind == "kafka"), SOURCE_TOPIC, DEAD_LETTER_TOPIC]
    grants = [
        *_grants("coordinator", TOPIC, [log.topic], [READ, WRITE, CREATE, AclOperation.DESCRIBE_CONFIGS],
                 "its decision log: only the coordinator writes it"),
        *_grants("coordinator", TXN, [log.transactional_id], [WRITE],
                 "the decision log's producer: only the coordinator may fence it"),
        *_grants("coordinator", GROUP, [coordinator.standby.group_id] if coordinator.standby.enabled else [], [READ],
                 "the standby election: whoever owns its partition is the active coordinator"),
        *_grants("connect", TOPIC, internal, [READ, WRITE, CREATE], "Connect's internal topics"),
        *_grants("connect", TOPIC, topology.connector_output_topics(), [WRITE], "the source connectors' output"),
        *_grants("connect", TXN, [topology.source_transactional_id_prefix()], [WRITE],
                 "the exactly-once source tasks' producers", pattern_type=PREFIXED),
        *_grants("connect", GROUP, [connect.group_id], [READ], "the workers' group (distributed mode)"),
        *_grants("participant", TOPIC, [sink.topic for sink in sinks], [WRITE, CREATE], "the sink topic"),
        *_grants("participant", TOPIC, [sink.commits_topic for sink in sinks], [READ, WRITE, CREATE],
                 "the Kafka sink's commit markers"),
        *_grants("participant", TOPIC, [schemas] if sinks else [], [READ, WRITE, CREATE], "Avro writer schemas"),
        *_grants("participant", TXN, [sink.transactional_id_prefix for sink in sinks], [WRITE],
                 "the Kafka sink's producers, one per job (and shard)", pattern_type=PREFIXED),
        *_grants("consumer", TOPIC, stored, [READ], "the topics it stores"),
        *_grants("consumer", TOPIC, audited, [READ], "its audit (RunAudit, onceflow audit --config): sinks and truth"),
        *_grants("consumer", TOPIC, [schemas], [READ], "Avro writer schemas of the stored topics"),
        *_grants("consumer", GROUP, [consumer.consumer.group_id], [READ], "its consumer group"),
        *_grants("spark", TOPIC, [job.source.topic for job in jobs], [READ], "the job's source"),
        *_grants("spark", TOPIC, [job.dead_letter_topic for job in jobs], [WRITE],
                 "undecodable records (dead letters)"),
    ]  # fmt: skip
    for service, prefixes in READER_GROUPS.items():
        grants += _grants(service, GROUP, prefixes, [READ], "its read-only consumers", pattern_type=PREFIXED)
    # one grant per ACL of a service (a topic it stores may also be one its audit reads): the first reason
    unique: dict[tuple[object, ...], Grant] = {}
    for g in grants:
        unique.setdefault((g.service, g.resource_type, g.pattern_type, g.name, g.operation), g)
    order = {service: index for index, service in enumerate(SERVICES)}
    return sorted(unique.values(), key=lambda g: (order[g.service], g))
