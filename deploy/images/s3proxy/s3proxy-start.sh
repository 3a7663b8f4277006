#!/usr/bin/env bash
# Starts the onceflow-s3proxy image's server.
#
# 1. Read the access key: S3PROXY_IDENTITY, and the secret key from S3PROXY_CREDENTIAL_FILE (refused
#    when either is missing: no anonymous store).
# 2. Create the buckets of S3PROXY_BUCKETS (a bucket of the filesystem backend is a directory).
# 3. Write the properties (mode 600) and exec S3Proxy on port 8080 of every interface.
set -euo pipefail

# Step 1
: "${S3PROXY_IDENTITY:?set S3PROXY_IDENTITY (the access key id)}"
[ -r "${S3PROXY_CREDENTIAL_FILE:-}" ] || {
  echo "s3proxy-start: S3PROXY_CREDENTIAL_FILE='${S3PROXY_CREDENTIAL_FILE:-}' cannot be read (the secret key)" >&2; exit 2; }
# Step 2
objects=/var/lib/s3proxy/objects
IFS=',' read -r -a buckets <<<"${S3PROXY_BUCKETS:-}"
for bucket in "${buckets[@]}"; do mkdir -p "$objects/$bucket"; done
# Step 3
config=/var/lib/s3proxy/s3proxy.conf
umask 077
cat >"$config" <<PROPERTIES
s3proxy.endpoint=http://0.0.0.0:8080
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$S3PROXY_IDENTITY
s3proxy.credential=$(cat "$S3PROXY_CREDENTIAL_FILE")
jclouds.provider=filesystem
jclouds.filesystem.basedir=$objects
PROPERTIES
exec java "-Xmx$S3PROXY_HEAP" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.logFile=System.out \
  -cp '/opt/s3proxy/libs/*' org.gaul.s3proxy.Main --properties "$config"
