#!/usr/bin/env bash
# Creates the compose deploy's secrets once, in deploy/compose/secrets/ (`make deploy-secrets`; never
# committed). An existing file is kept: the Kafka brokers store their SCRAM users and PostgreSQL its
# password in their volumes on the first start, so new passwords would lock the services out (after
# `docker compose down -v` any may be replaced).
#
# 1. grpc-token: the bearer token of every gRPC service's mutating RPCs (compose secret grpc_token).
# 2. postgres-password, and postgres.env (PGPASSWORD) for the services that log in to PostgreSQL.
# 3. Kafka: one SCRAM-SHA-512 principal per service (admin, coordinator, participant, connect, spark,
#    consumer) and the brokers' own; kafka-<principal>.properties holds a client's login (its config's
#    kafka.properties_file), kafka/ what the brokers read (scram-users at format time, the JAAS logins
#    of the inter-broker and controller listeners).
# 4. s3-secret-key: the staging store's secret key (S3Proxy), and s3.env, the login of its clients
#    (the drivers, the coordinators, the participants) as the AWS variables, with the checksum
#    switches S3Proxy needs (docs/cluster.md, "Staging on an object store").
# The directory is the host user's alone (0700); the files are readable by the containers' users.
set -euo pipefail

cd "$(dirname "$0")"
DIR=secrets
PRINCIPALS=(admin coordinator participant connect spark consumer)
umask 022
mkdir -p "$DIR/kafka"
chmod 700 "$DIR"

random() { head -c 24 /dev/urandom | base64 | tr -d '/+=\n'; }
# keep FILE: true when FILE exists (then it is left as it is)
keep() { [ -s "$1" ]; }

# Step 1
keep "$DIR/grpc-token" || random >"$DIR/grpc-token"
# Step 2
keep "$DIR/postgres-password" || random >"$DIR/postgres-password"
printf 'PGPASSWORD=%s\n' "$(cat "$DIR/postgres-password")" >"$DIR/postgres.env"
# Step 3
keep "$DIR/kafka-broker.password" || random >"$DIR/kafka-broker.password"
broker=$(cat "$DIR/kafka-broker.password")
scram=("SCRAM-SHA-512=[name=broker,password=$broker]")
for principal in "${PRINCIPALS[@]}"; do
  file=$DIR/kafka-$principal.properties
  if ! keep "$file"; then
    printf 'sasl.username=%s\nsasl.password=%s\n' "$principal" "$(random)" >"$file"
  fi
  scram+=("SCRAM-SHA-512=[name=$principal,password=$(sed -n 's/^sasl.password=//p' "$file")]")
done
printf '%s\n' "${scram[@]}" >"$DIR/kafka/scram-users"
cat >"$DIR/kafka/jaas.properties" <<JAAS
listener.name.client.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="broker" password="$broker";
listener.name.controller.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" password="$broker" user_broker="$broker";
JAAS
# Step 4
keep "$DIR/s3-secret-key" || random >"$DIR/s3-secret-key"
cat >"$DIR/s3.env" <<ENV
AWS_ACCESS_KEY_ID=onceflow-staging
AWS_SECRET_ACCESS_KEY=$(cat "$DIR/s3-secret-key")
AWS_REQUEST_CHECKSUM_CALCULATION=when_required
AWS_RESPONSE_CHECKSUM_VALIDATION=when_required
ENV
echo "deploy-secrets: ok ($(cd "$DIR" && ls | tr '\n' ' '))"
