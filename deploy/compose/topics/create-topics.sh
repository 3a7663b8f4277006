#!/usr/bin/env bash
# Creates every topic onceflow uses, once, before the services start: the topic-init service runs
# it in the apache/kafka image. Idempotent (--if-not-exists), so `docker compose up` may run it again.
# The services would create most of these themselves, but only with one partition and replication
# factor 1; creating them here states partitions, replication and retention in one place.
set -euo pipefail

BOOTSTRAP="${BOOTSTRAP_SERVERS:-kafka:9092}"
REPLICATION="${REPLICATION_FACTOR:-1}"

# create NAME PARTITIONS [CONFIG=VALUE ...]
create() {
  local name=$1 partitions=$2
  shift 2
  local configs=()
  for config in "$@"; do
    configs+=(--config "$config")
  done
  /opt/kafka/bin/kafka-topics.sh --bootstrap-server "$BOOTSTRAP" --create --if-not-exists \
    --topic "$name" --partitions "$partitions" --replication-factor "$REPLICATION" "${configs[@]}"
}

# Data topics. Record timestamps are event times, and the generator's event time starts at
# 2026-01-01 (event.time.start.ms), so time-based retention would delete records at once: keep them.
create ip_count_source "${SOURCE_PARTITIONS:-3}" retention.ms=-1
create ip_count_sink "${SINK_PARTITIONS:-1}" retention.ms=-1
create ip_count_dlq 1 retention.ms=-1

# The coordinator's decision log and the Kafka sink's commit markers (compacted, one partition). The
# coordinator refuses a log whose retention is bounded (docs/cluster.md, "A lost decision log").
create _onceflow_coordinator_log 1 cleanup.policy=compact retention.ms=-1 retention.bytes=-1
create _onceflow_sink_commits 1 cleanup.policy=compact

# Connect worker state: offsets (every mode), configs and statuses (distributed mode), compacted;
# partitions as in connect-worker.toml [topics]. The assignment topic has one partition per task
# slot (task_slots, 16) and never holds a record.
create _onceflow_connect_offsets 5 cleanup.policy=compact
create _onceflow_connect_configs 1 cleanup.policy=compact
create _onceflow_connect_status 5 cleanup.policy=compact
create _onceflow_connect_assignment 16 cleanup.policy=delete

/opt/kafka/bin/kafka-topics.sh --bootstrap-server "$BOOTSTRAP" --list
