"""Topic names from docs/design.md. Internal topics start with ``_onceflow_``."""

from __future__ import annotations

from typing import Final

INTERNAL_TOPIC_PREFIX: Final = "_onceflow_"

#: Access-log events, written by the log producer (value: AccessEvent).
SOURCE_TOPIC: Final = "ip_count_source"
#: Per-window IP counts, written by the Kafka sink participant (value: IpCount).
SINK_TOPIC: Final = "ip_count_sink"
#: Malformed input lines and undecodable records, with the reason in headers.
DEAD_LETTER_TOPIC: Final = "ip_count_dlq"

#: Connect worker state (compacted).
CONNECT_CONFIGS_TOPIC: Final = INTERNAL_TOPIC_PREFIX + "connect_configs"
CONNECT_OFFSETS_TOPIC: Final = INTERNAL_TOPIC_PREFIX + "connect_offsets"
CONNECT_STATUS_TOPIC: Final = INTERNAL_TOPIC_PREFIX + "connect_status"
#: The 2PC coordinator's decision log (compacted).
COORDINATOR_LOG_TOPIC: Final = INTERNAL_TOPIC_PREFIX + "coordinator_log"
#: Commit markers of the Kafka sink participant (compacted).
SINK_COMMITS_TOPIC: Final = INTERNAL_TOPIC_PREFIX + "sink_commits"
#: Avro writer schemas of the Kafka sinks' topics, keyed by fingerprint (compacted).
SCHEMAS_TOPIC: Final = INTERNAL_TOPIC_PREFIX + "schemas"


def is_internal(topic: str) -> bool:
    """True for onceflow's own state topics (and Kafka's double-underscore ones)."""
    return topic.startswith(INTERNAL_TOPIC_PREFIX) or topic.startswith("__")
