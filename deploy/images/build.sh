#!/usr/bin/env bash
# Builds every image of the deploys (`make images`), tagged IMAGE_TAG (default local), and reports how
# long each took and how big it is (also in .cache/images/report.txt).
#
# 1. The base: BASE_IMAGE if it can be had, else Debian bookworm built by debootstrap (base.sh).
# 2. The onceflow images: one per target of services/Dockerfile (onceflow-<service>; they share every
#    layer but their last few). The wheelhouse must exist (make wheelhouse), and the Spark image takes
#    the S3A connector's jars (make hadoop-aws), copied into .cache/images/hadoop-aws.
#    The build stage (the virtual environment) is tagged onceflow-build, so the engine keeps it as the
#    cache of the next run.
# 3. The dependencies on the same base: Apache Kafka and S3Proxy from the jars in .cache (make kafka,
#    make s3proxy), PostgreSQL and Prometheus from Debian's packages.
# 4. The images a rebuild replaced are removed: every image built here carries the label
#    dev.onceflow.images, and an untagged one with it is an old version (only those: another project's
#    images and dangling layers are left alone). Without this, each rebuild after a lock change leaves
#    gigabytes behind.
# The engine's layer cache makes a second run take seconds; only what changed is rebuilt.
set -euo pipefail

cd "$(dirname "$0")/../.."
TAG=${IMAGE_TAG:-local}
REPORT=.cache/images/report.txt
SERVICES=(coordinator participant consumer connect-worker spark-worker broker)
LABEL=dev.onceflow.images
export DOCKER_BUILDKIT=${DOCKER_BUILDKIT:-0}

say() { echo "images: $*"; }
# The free space where the engine keeps its layers (a build that runs out of it fails in the middle).
disk_free() {
  local root
  root=$(docker info -f '{{.DockerRootDir}}' 2>/dev/null || echo /var/lib/docker)
  echo "$(df -h --output=avail "$root" | tail -n 1 | tr -d ' ') free in $root"
}
mkdir -p .cache/images
[ -f .cache/wheelhouse/requirements.txt ] || { say "no wheelhouse: run 'make wheelhouse' first"; exit 1; }
pom_version() { sed -n "s:.*<$2>\(.*\)</$2>.*:\1:p" "$1" | head -n 1; }
KAFKA_VERSION=$(pom_version tools/kafka/pom.xml kafka.version)
[ -f ".cache/kafka/$KAFKA_VERSION/.complete" ] || { say "no Kafka $KAFKA_VERSION jars: run 'make kafka' first"; exit 1; }

HADOOP_AWS_VERSION=$(pom_version tools/hadoop-aws/pom.xml hadoop.version)
HADOOP_AWS_JARS=.cache/hadoop-aws/$HADOOP_AWS_VERSION/classpath.txt
[ -s "$HADOOP_AWS_JARS" ] || { say "no hadoop-aws $HADOOP_AWS_VERSION classpath: run 'make hadoop-aws' first"; exit 1; }

start_all=$(date +%s)
say "building into an engine with $(disk_free)"
rows=()
# build NAME DOCKERFILE [ARGS...]: docker build, its log in .cache/images/NAME.log, timed
build() {
  local name=$1 dockerfile=$2 start log
  shift 2
  log=.cache/images/$name.log
  start=$(date +%s)
  if ! docker build --build-arg "BASE_IMAGE=$BASE" --label "$LABEL=$TAG" -f "$dockerfile" -t "onceflow-$name:$TAG" "$@" . >"$log" 2>&1; then
    say "building onceflow-$name failed ($(disk_free); the end of $log:)"; tail -n 25 "$log" | sed 's/^/  /'; exit 1
  fi
  rows+=("$name $(( $(date +%s) - start ))")
  say "onceflow-$name:$TAG built in $(( $(date +%s) - start ))s"
}

# Step 1
start=$(date +%s)
BASE=$(bash deploy/images/base.sh | tail -n 1)
rows+=("base($BASE) $(( $(date +%s) - start ))")

# Step 2
# The S3A jars, copied where the build context reaches them (only what changed), and their paths in
# the Spark image.
mkdir -p .cache/images/hadoop-aws
IFS=":" read -r -a jars <"$HADOOP_AWS_JARS" || [ "${#jars[@]}" -gt 0 ]  # one line, maybe without its newline
image_classpath=()
for jar in "${jars[@]}"; do
  [ -f "$jar" ] || { say "$jar (in $HADOOP_AWS_JARS) is missing: run 'make hadoop-aws' again"; exit 1; }
  cp -u "$jar" .cache/images/hadoop-aws/
  image_classpath+=("/opt/hadoop-aws/$(basename "$jar")")
done
for staged in .cache/images/hadoop-aws/*.jar; do
  [[ " ${image_classpath[*]} " == *" /opt/hadoop-aws/$(basename "$staged") "* ]] || rm -f "$staged"
done
classpath=$(IFS=':'; echo "${image_classpath[*]}")
build build services/Dockerfile --target build
for service in "${SERVICES[@]}"; do
  if [ "$service" = spark-worker ]; then
    build "$service" services/Dockerfile --target "$service" --build-arg "HADOOP_AWS_CLASSPATH=$classpath"
  else
    build "$service" services/Dockerfile --target "$service"
  fi
done

# Step 3
build kafka deploy/images/kafka/Dockerfile --build-arg "KAFKA_VERSION=$KAFKA_VERSION"
build postgres deploy/images/postgres/Dockerfile
build prometheus deploy/images/prometheus/Dockerfile
if [ -f tools/s3proxy/pom.xml ]; then
  S3PROXY_VERSION=$(pom_version tools/s3proxy/pom.xml s3proxy.version)
  [ -f ".cache/s3proxy/$S3PROXY_VERSION/.complete" ] || { say "no S3Proxy $S3PROXY_VERSION jars: run 'make s3proxy' first"; exit 1; }
  build s3proxy deploy/images/s3proxy/Dockerfile --build-arg "S3PROXY_VERSION=$S3PROXY_VERSION"
fi

# Step 4
removed=$(docker image prune -f --filter "label=$LABEL" | sed -n 's/^Total reclaimed space: //p')
say "removed the images this build replaced (${removed:-0B}); $(disk_free)"

{
  echo "# make images: seconds to build (layer cache as it was) and image sizes; $(date -u +%FT%TZ)"
  printf '%-24s %8s %10s\n' image seconds size
  for row in "${rows[@]}"; do
    read -r name seconds <<<"$row"
    size=-
    case "$name" in base*) ref=$BASE ;; *) ref=onceflow-$name:$TAG ;; esac
    size=$(docker image inspect -f '{{.Size}}' "$ref" | numfmt --to=iec --format='%.1f')
    printf '%-24s %8s %10s\n' "$name" "$seconds" "$size"
  done
  echo "total: $(( $(date +%s) - start_all ))s; layers on disk: $(docker system df --format '{{.Type}} {{.Size}}' | awk '$1 == "Images" {print $2}')"
} | tee "$REPORT"
