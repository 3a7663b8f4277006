#!/usr/bin/env bash
# Starts one Apache Kafka node (KRaft) of the onceflow-kafka image.
#
# 1. Write /var/lib/kafka/server.properties: every KAFKA_<NAME> variable as the property <name>
#    ("_" -> ".", "__" -> "_", "___" -> "-"; KAFKA_HEAP_OPTS and KAFKA_JVM_OPTS are the JVM's), then
#    every /etc/kafka/conf.d/*.properties file (secrets: JAAS logins, passwords) as it is.
# 2. On the first start (no meta.properties in the log dir), format the storage with CLUSTER_ID, and
#    with the SCRAM users of /etc/kafka/conf.d/scram-users (one "SCRAM-SHA-512=[name=U,password=P]"
#    a line), which KRaft stores in its metadata before any broker serves.
# 3. exec the broker: kafka.Kafka with the JVM options (SIGTERM stops it cleanly).
# `kafka-start.sh tool CLASS ARGS...` runs one of Kafka's tools instead (e.g.
# org.apache.kafka.tools.TopicCommand, org.apache.kafka.tools.AclCommand).
set -euo pipefail

LIBS=/opt/kafka/libs
PROPERTIES=/var/lib/kafka/server.properties
java_cmd=(java ${KAFKA_HEAP_OPTS:-} ${KAFKA_JVM_OPTS:-} -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp "$LIBS/*")

if [ "${1:-}" = "tool" ]; then
  shift
  exec java -Xmx256m ${KAFKA_JVM_OPTS:-} -Dlog4j2.configurationFile=/opt/kafka/log4j2.properties -cp "$LIBS/*" "$@"
fi

# Step 1
{
  echo "# written by kafka-start.sh from the environment and /etc/kafka/conf.d"
  while IFS='=' read -r name value; do
    case "$name" in KAFKA_HEAP_OPTS|KAFKA_JVM_OPTS) continue ;; esac
    key=$(printf '%s' "${name#KAFKA_}" | tr '[:upper:]' '[:lower:]' \
      | sed -e 's/___/-/g' -e 's/__/\x01/g' -e 's/_/./g' -e 's/\x01/_/g')
    printf '%s=%s\n' "$key" "$value"
  done < <(env | grep '^KAFKA_[A-Z0-9_]*=' | sort)
  for file in /etc/kafka/conf.d/*.properties; do
    [ -f "$file" ] && { echo "# $file"; cat "$file"; echo; }
  done
} >"$PROPERTIES"
log_dir=$(sed -n 's/^log\.dirs=//p' "$PROPERTIES" | cut -d, -f1)
: "${log_dir:?set KAFKA_LOG_DIRS}"

# Step 2
if [ ! -f "$log_dir/meta.properties" ]; then
  : "${CLUSTER_ID:?set CLUSTER_ID (16 bytes, base64url) to format the storage on the first start}"
  scram=()
  if [ -f /etc/kafka/conf.d/scram-users ]; then
    while read -r line; do [ -n "$line" ] && scram+=(--add-scram "$line"); done </etc/kafka/conf.d/scram-users
  fi
  echo "kafka-start: formatting $log_dir for cluster $CLUSTER_ID (${#scram[@]} SCRAM arguments)"
  "${java_cmd[@]}" kafka.tools.StorageTool format --cluster-id="$CLUSTER_ID" -c "$PROPERTIES" \
    --ignore-formatted "${scram[@]}"
fi

# Step 3
exec "${java_cmd[@]}" kafka.Kafka "$PROPERTIES"
