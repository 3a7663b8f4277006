# onceflow developer entry points. `make demo` and `make test` work on a fresh machine.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
# uv from PATH, else the copy `make setup` installs into the user site of $(PYTHON).
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON := $(shell $(PYTHON) -c 'import sys; print(sys.executable)' 2>/dev/null)
VENV := .venv/bin
PACKAGES := $(sort $(wildcard packages/*))
PYTEST_ARGS ?=
# Test processes (pytest-xdist): three on two cores, which the end-to-end tests' waits left partly idle
# with two (measured in docs/architecture.md). Every test picks free ports and its own temp dirs, so
# any of them can run side by side (end-to-end runs and Spark tests included).
PYTEST_WORKERS ?= 3

.PHONY: help setup setup-env class-archive maven kafka s3proxy hadoop-aws check-python check-java postgres uv sync test lint fmt typecheck pytest proto demo clean flink-env flink-anchor spark-bench

help: ## show the targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

setup: setup-env kafka s3proxy hadoop-aws class-archive ## check prerequisites, get uv, create .venv from uv.lock, fetch the JVM test tools (idempotent)

# Everything but the JVM tools from Maven Central: `make demo` and the linters need no network access to it.
setup-env: check-python check-java postgres uv sync

check-python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' 2>/dev/null || { \
	  echo "onceflow needs Python >= 3.11 as '$(PYTHON)' (found: $$($(PYTHON) --version 2>&1 || echo none))."; \
	  echo "Install it: 'apt-get install python3.11 python3.11-venv' (Debian/Ubuntu), 'brew install python@3.11' (macOS),"; \
	  echo "or 'pyenv install 3.11', then run 'make setup PYTHON=python3.11'."; exit 1; }
	@echo "setup: $$($(PYTHON) --version) ok"

check-java:
	@v=$$(java -version 2>&1 | awk -F'"' '/version/ {print $$2}' | awk -F. '{print ($$1 == "1") ? $$2 : $$1}'); \
	if [ -z "$$v" ] || [ "$$v" -lt 17 ]; then \
	  echo "Spark needs Java 17 or newer (found: $${v:-no java on PATH})."; \
	  echo "Install it: 'apt-get install openjdk-17-jre-headless' (Debian/Ubuntu) or 'brew install openjdk@17' (macOS),"; \
	  echo "or point JAVA_HOME at a JDK 17+ and put \$$JAVA_HOME/bin on PATH."; exit 1; \
	else echo "setup: Java $$v ok"; fi

# The PostgreSQL sink's tests start a real server (initdb + pg_ctl). Installed only when no server binaries exist.
postgres:
	@pgbin=$$(command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1); \
	if [ -n "$$pgbin" ] && [ -x "$$(dirname "$$pgbin")/pg_ctl" -o -n "$$(command -v pg_ctl 2>/dev/null)" ]; then \
	  echo "setup: PostgreSQL server binaries ok ($$(dirname "$$pgbin"))"; \
	else \
	  if [ "$$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi; \
	  echo "setup: no PostgreSQL server binaries (initdb/pg_ctl) on PATH or in /usr/lib/postgresql/*/bin;"; \
	  echo "setup: installing them: $${sudo:+sudo }apt-get update && $${sudo:+sudo }apt-get install -y postgresql"; \
	  $$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y postgresql || { \
	    echo "setup: could not install PostgreSQL. Install the server yourself ('apt-get install postgresql' on"; \
	    echo "Debian/Ubuntu, 'brew install postgresql' on macOS) so that initdb and pg_ctl are on PATH."; exit 1; }; \
	fi

# $(call fetch_jars,WHAT,POM,HOME,WHO NEEDS IT): copy the runtime dependencies POM pins from Maven Central
# into HOME/libs. The stamp HOME/.complete is a copy of the pom, so a changed pom fetches again and an
# unchanged one does nothing.
define fetch_jars
	@stamp=$(3)/.complete; \
	if [ -f "$$stamp" ] && cmp -s $(2) "$$stamp"; then \
	  echo "setup: $(1) ok ($(3)/libs)"; exit 0; fi; \
	echo "setup: fetching $(1) jars from Maven Central into $(3)/libs"; \
	rm -rf $(3); mkdir -p $(3); \
	set -o pipefail; \
	mvn -q -B -f $(2) dependency:copy-dependencies -DincludeScope=runtime \
	  -DoutputDirectory="$(CURDIR)/$(3)/libs" 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$$/d' || { \
	  rm -rf $(3); \
	  echo "setup: Maven could not fetch $(1) (see its errors above). It needs Maven Central:"; \
	  echo "setup: check the network, or set a proxy/mirror in ~/.m2/settings.xml, then run 'make setup' again."; \
	  echo "setup: 'make demo' does not need it; 'make test' does ($(4))."; exit 1; }; \
	cp $(2) "$$stamp"; \
	echo "setup: $(1) ok ($(3)/libs)"
endef

# Apache Kafka jars for the differential tests (docs/testing-on-apache-kafka.md): tools/kafka/pom.xml.
KAFKA_VERSION := $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' tools/kafka/pom.xml)
KAFKA_HOME := .cache/kafka/$(KAFKA_VERSION)

kafka: maven ## fetch the Apache Kafka jars the differential tests run (Maven Central -> .cache/kafka)
	$(call fetch_jars,Apache Kafka $(KAFKA_VERSION),tools/kafka/pom.xml,$(KAFKA_HOME),the differential tests run on it)

# S3Proxy, the S3 API server of the object-store tests (onceflow.testing.s3): tools/s3proxy/pom.xml.
S3PROXY_VERSION := $(shell sed -n 's:.*<s3proxy.version>\(.*\)</s3proxy.version>.*:\1:p' tools/s3proxy/pom.xml)
S3PROXY_HOME := .cache/s3proxy/$(S3PROXY_VERSION)

s3proxy: maven ## fetch S3Proxy for the object-store tests (Maven Central -> .cache/s3proxy)
	$(call fetch_jars,S3Proxy $(S3PROXY_VERSION),tools/s3proxy/pom.xml,$(S3PROXY_HOME),the object-store tests run on it)

# Hadoop's S3A connector for Spark checkpoints on S3 (onceflow.spark.runner.object_store): resolved into the
# local Maven repository (not copied), its classpath written to $(HADOOP_AWS_HOME).
HADOOP_AWS_VERSION := $(shell sed -n 's:.*<hadoop.version>\(.*\)</hadoop.version>.*:\1:p' tools/hadoop-aws/pom.xml)
HADOOP_AWS_HOME := .cache/hadoop-aws/$(HADOOP_AWS_VERSION)

hadoop-aws: maven ## resolve hadoop-aws + the AWS SDK's S3 modules for Spark checkpoints on S3 (-> .cache/hadoop-aws)
	@stamp=$(HADOOP_AWS_HOME)/.complete; \
	if [ -f "$$stamp" ] && cmp -s tools/hadoop-aws/pom.xml "$$stamp" \
	  && tr ':' '\n' < $(HADOOP_AWS_HOME)/classpath.txt | while read -r jar; do [ -f "$$jar" ] || exit 1; done; then \
	  echo "setup: hadoop-aws $(HADOOP_AWS_VERSION) ok ($(HADOOP_AWS_HOME)/classpath.txt)"; exit 0; fi; \
	echo "setup: resolving hadoop-aws $(HADOOP_AWS_VERSION) and the AWS SDK's S3 modules from Maven Central (about 15 MB once)"; \
	rm -rf $(HADOOP_AWS_HOME); mkdir -p $(HADOOP_AWS_HOME); \
	set -o pipefail; \
	mvn -q -B -f tools/hadoop-aws/pom.xml dependency:build-classpath -DincludeScope=runtime \
	  -Dmdep.outputFile="$(CURDIR)/$(HADOOP_AWS_HOME)/classpath.txt" 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g' -e '/^$$/d' || { \
	  rm -rf $(HADOOP_AWS_HOME); \
	  echo "setup: Maven could not resolve hadoop-aws $(HADOOP_AWS_VERSION) (see its errors above). It needs Maven Central:"; \
	  echo "setup: check the network, or set a proxy/mirror in ~/.m2/settings.xml, then run 'make setup' again."; \
	  echo "setup: 'make demo' does not need it; 'make test' does (a Spark checkpoint on S3Proxy)."; exit 1; }; \
	cp tools/hadoop-aws/pom.xml "$$stamp"; \
	echo "setup: hadoop-aws $(HADOOP_AWS_VERSION) ok ($(HADOOP_AWS_HOME)/classpath.txt)"

# JVM class-data-sharing archives (onceflow.core.process.class_archive), ~/.cache/onceflow/jvm, once per JDK and
# jars: a Spark driver (about 170 MB) and Apache Kafka's brokers and tools (about 50 MB) map their classes at every
# start and restart instead of loading them. Without them everything runs, only slower to start.
class-archive: setup-env kafka ## the JVM class archives of the Spark driver and Apache Kafka: faster starts (idempotent)
	@$(VENV)/onceflow job class-archive || \
	  echo "setup: the Spark driver's class archive could not be built (its warm-up's log is above); drivers start without it, only slower"
	@$(VENV)/python -c 'from onceflow.testing.broker.apache_kafka import write_class_archive as w; print(f"class archive: {w()}")' || \
	  echo "setup: Apache Kafka's class archive could not be built (see above); the Kafka tests start it without one, only slower"

uv:
	@command -v uv >/dev/null 2>&1 || $(PYTHON) -m uv --version >/dev/null 2>&1 || { \
	  echo "setup: installing uv with pip (user site)"; \
	  $(PYTHON) -m pip install --quiet --user uv 2>/dev/null || $(PYTHON) -m pip install --quiet uv; }
	@echo "setup: $$($(UV) --version) ok"

sync:
	@$(UV) sync --locked --all-packages
	@echo "setup: .venv is in sync with uv.lock"

lint: setup-env ## ruff lint + format check, and stale gRPC stubs
	$(VENV)/ruff check .
	$(VENV)/ruff format --check .
	$(VENV)/python proto/generate.py --check

fmt: setup-env ## format and auto-fix
	$(VENV)/ruff format .
	$(VENV)/ruff check --fix .

typecheck: setup-env ## mypy --strict, one package at a time (tests share module names across packages)
	@set -e; for p in $(PACKAGES); do echo "mypy $$p"; $(VENV)/mypy $$p/src $$p/tests; done
	$(VENV)/mypy tests conftest.py proto/generate.py $(wildcard bench/*.py)

pytest: setup ## the test suite (slow end-to-end and chaos tests included)
	$(VENV)/pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25 $(PYTEST_ARGS)

test: lint typecheck pytest ## setup, then lint, types and every test

proto: setup-env ## regenerate the gRPC stubs from proto/onceflow/v1
	$(VENV)/python proto/generate.py

DEMO_ARGS ?=
demo: setup-env ## run the whole pipeline embedded, with a live dashboard and the final audit (DEMO_ARGS="--chaos")
	$(VENV)/onceflow demo --postgres $(DEMO_ARGS)

# The Flink anchor (docs/benchmarks.md): Apache Flink 2.3 in a virtualenv of its own (apache-flink from PyPI,
# fastavro for its Python decoder) and its Kafka connector and Avro format jars (tools/flink/pom.xml). Neither is a
# dependency of onceflow; `make setup` and `make test` never build them.
FLINK_VERSION := $(shell sed -n 's:.*<flink.version>\(.*\)</flink.version>.*:\1:p' tools/flink/pom.xml)
FLINK_HOME := .cache/flink/$(FLINK_VERSION)
FLINK_VENV := .cache/flink/venv
FLINK_PIP := apache-flink==$(FLINK_VERSION) fastavro==$(shell sed -n '/^name = "fastavro"$$/{n;s/^version = "\(.*\)"$$/\1/p}' uv.lock)
FLINK_ANCHOR_ARGS ?=
SPARK_BENCH_ARGS ?=

flink-env: maven
	$(call fetch_jars,Flink connectors $(FLINK_VERSION),tools/flink/pom.xml,$(FLINK_HOME),the Flink anchor runs on them)
	@if [ -x $(FLINK_VENV)/bin/python ] && [ "$$(cat $(FLINK_VENV)/.complete 2>/dev/null)" = "$(FLINK_PIP)" ]; then \
	  echo "setup: Flink virtualenv ok ($(FLINK_VENV): $(FLINK_PIP))"; exit 0; fi; \
	echo "setup: building the Flink virtualenv $(FLINK_VENV) ($(FLINK_PIP), about 700 MB)"; \
	rm -rf $(FLINK_VENV) && $(UV) venv -q $(FLINK_VENV) && $(UV) pip install -q --python $(FLINK_VENV)/bin/python $(FLINK_PIP) \
	  && echo "$(FLINK_PIP)" > $(FLINK_VENV)/.complete

flink-anchor: setup flink-env ## onceflow next to Flink 2.3 on the same job, both brokers (FLINK_ANCHOR_ARGS="--events 500000")
	$(VENV)/python bench/flink_anchor.py --flink-python $(FLINK_VENV)/bin/python --flink-jars $(FLINK_HOME)/libs $(FLINK_ANCHOR_ARGS)

spark-bench: setup ## the Spark job to the last result, exactly-once vs at-least-once, and result latency (SPARK_BENCH_ARGS=...)
	$(VENV)/python bench/spark_job.py $(SPARK_BENCH_ARGS)

clean: ## remove the venv and caches
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache .hypothesis

# The deploys: Docker engine, images, the compose deploy test, Helm (make test runs deploy-test too).
include deploy/deploy.mk
